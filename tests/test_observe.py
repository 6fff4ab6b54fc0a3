# SPDX-License-Identifier: BSD-3-Clause
"""Observability: dpvpnd's Prometheus endpoint ([control] metrics, loopback
only) and the dataplane's DPDK telemetry commands under /dpvpn, read while
the lab carries pings.  The exposition text is checked line by line against
the format (comments, name{labels} value); the values against dpvpnctl."""
import json
import os
import re
import socket
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
