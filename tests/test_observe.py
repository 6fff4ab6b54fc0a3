# SPDX-License-Identifier: BSD-3-Clause
"""Observability: dpvpnd's Prometheus endpoint ([control] metrics, loopback
only) and the dataplane's DPDK telemetry commands under /dpvpn, read while
the lab carries pings.  The exposition text is checked line by line against
the format (comments, name{labels} value); the values against dpvpnctl."""
import json
import os
import re
import socket
import time
import urllib.request

import pytest

import lab

pytestmark = pytest.mark.control

LINE = re.compile(r'^[a-z_]+(\{([a-z_]+="[^"]*",?)+\})? [0-9.e+-]+$')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def net():
    port = free_port()
    with lab.Lab(replace_a=(("[control]\n", f"[control]\nmetrics = 127.0.0.1:{port}\n"),)) as n:
        n.ping(count=5)
        n.metrics_port = port
        yield n


def scrape(net):
    with urllib.request.urlopen(f"http://127.0.0.1:{net.metrics_port}/metrics", timeout=5) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
        return r.read().decode()


def test_prometheus_text(net):
    text = scrape(net)
    samples = {}
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        assert LINE.match(line), line
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    sa = net.a.ctl("show", "sa")["sas"]
    out = next(s for s in sa if s["dir"] == "out")
    key = 'dpvpn_sa_packets_total{tunnel="to-b",spi="0x00001001",dir="out"}'
    assert 0 < samples[key] <= out["packets"]
    assert samples['dpvpn_drops_total{reason="replay"}'] == 0
    busy = [v for k, v in samples.items() if k.startswith("dpvpn_lcore_busy_ratio")]
    assert len(busy) == 2 and all(0 <= v <= 1 for v in busy)   # main + one worker
    assert samples["dpvpn_encrypted_total"] >= 5


def test_metrics_only_on_loopback(tmp_path):
    conf = tmp_path / "m.conf"
    with open(os.path.join(lab.CONFIGS, "lab-a.conf")) as f:
        conf.write_text(f.read().replace("[control]\n", "[control]\nmetrics = 10.0.0.1:9477\n"))
    conf.chmod(0o600)
    r = lab.sh(lab.DPVPND, "-c", str(conf), "-w", "0", "-D", str(tmp_path / "none.sock"),
               check=False)
    assert r.returncode != 0


def telemetry(net, cmd):
    path = f"/var/run/dpdk/{net.a.file_prefix}/dpdk_telemetry.v2"
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(5)
        s.connect(path)
        json.loads(s.recv(16384))              # the greeting
        s.send(cmd.encode())
        return json.loads(s.recv(65536))


def test_dpdk_telemetry(net):
    c = telemetry(net, "/dpvpn/counters")["/dpvpn/counters"]
    assert c["encrypted"] >= 5 and c["drop_replay"] == 0 and "drop_seq_unreserved" in c
    ids = telemetry(net, "/dpvpn/lcores")["/dpvpn/lcores"]
    assert len(ids) == 2
    one = telemetry(net, f"/dpvpn/lcore,{ids[1]}")[f"/dpvpn/lcore"]
    assert one["role"] == "worker" and 0 <= one["busy_percent"] <= 100
    assert one["busy_cycles"] > 0


def test_scrapers_that_idle_or_never_read_do_not_hold_dpvpnd(net):
    """Regression (hardening): dpvpnd served each scrape inline, giving a
    connection up to 1 s to send its request and writing the answer with
    blocking writes, on the loop that also serves the operator's socket and
    the dataplane's events: every idle local connection cost every other
    client a second.  Now scrapes are non-blocking, 16 at a time (a 17th
    closes the oldest), 5 s for each whole exchange."""
    idle = []
    try:
        for _ in range(16):
            idle.append(socket.create_connection(("127.0.0.1", net.metrics_port), timeout=10))
        # one that asks and never reads, its receive buffer as small as Linux allows
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        stalled.connect(("127.0.0.1", net.metrics_port))
        stalled.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        idle.append(stalled)
        t0 = time.monotonic()
        for _ in range(5):
            net.a.ctl("show", "counters")
        took = time.monotonic() - t0
        print(f"test_observe: 5 requests with 16 idle and 1 stalled scraper: {took:.3f} s")
        assert took < 2.5, took     # blocking: about a second each
        assert "dpvpn_encrypted_total" in scrape(net)   # the oldest idle one makes room
        # dpvpnd ends what ran out of time itself
        t0 = time.monotonic()
        for s in idle[1:16]:
            s.settimeout(max(0.1, 10 - (time.monotonic() - t0)))
            assert s.recv(1) == b"", "an idle scraper got an answer"
        assert time.monotonic() - t0 < 9
    finally:
        for s in idle:
            s.close()
    assert "dpvpn_encrypted_total" in scrape(net)
