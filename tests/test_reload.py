# SPDX-License-Identifier: BSD-3-Clause
"""Live reload under traffic: a ping flood crosses tunnel to-b while gateway
A's config gains a tunnel (dpvpnctl reload), then a broken config is refused
whole with its file:line and the running state kept, then the extra tunnel
goes again (SIGHUP).  The unchanged tunnel loses nothing: the flood sees no
loss and its SAs are never re-created (their sequence numbers run on).  A
client of the read-only group may look but not reload."""
import os
import signal
import time

import pytest

import lab

pytestmark = pytest.mark.control

EXTRA = """
[tunnel extra]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 198.18.7.0/24
cipher = aes256-gcm
out-spi = 0x1005
out-key = 0x{k}
in-spi = 0x2005
in-key = 0x{k}
""".format(k="ab" * 36)


def out_seq(gw):
    return next(s for s in gw.ctl("show", "sa")["sas"]
                if s["name"] == "to-b" and s["dir"] == "out")["seq"]


@pytest.fixture(scope="module")
def net():
    with lab.Lab(replace_a=(("[control]\n", "[control]\ngroup = nogroup\n"),)) as n:
        n.ping(count=3)
        yield n


def test_reload_under_traffic(net):
    conf = net.a.config
    original = open(conf).read()
    # -c with -w: ping ends when every reply is in (-w alone ends at the
    # deadline and counts the request still in flight as lost)
    flood = net.bg("ping-reload", net.ns_a, "ping", "-i", "0.005", "-c", "1600", "-w", "20", "-q",
                   "198.18.2.2")
    time.sleep(1)
    seq0 = out_seq(net.a)
    with open(conf, "a") as f:
        f.write(EXTRA)
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False)
    assert r.returncode == 0, r.stderr
    assert "1 tunnels added, 0 removed, 0 changed, 1 unchanged" in r.stdout, r.stdout
    assert len(net.a.ctl("show", "sa")["sas"]) == 4
    assert len(net.a.ctl("show", "policies")["policies"]) == 2

    with open(conf, "a") as f:
        f.write("\nthis is not a key\n")
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False)
    assert r.returncode != 0 and "refused, running config kept" in r.stderr
    assert f"{conf}:" in r.stderr and "expected 'key = value'" in r.stderr, r.stderr
    assert len(net.a.ctl("show", "sa")["sas"]) == 4

    with open(conf, "w") as f:
        f.write(original)
    os.kill(net.a.dpvpnd.p.pid, signal.SIGHUP)
    lab.wait_for(lambda: "0 added, 1 removed" in net.a.dpvpnd.output().replace(
        "tunnels added", "added"), 10, "the SIGHUP reload")
    assert len(net.a.ctl("show", "sa")["sas"]) == 2

    flood.p.wait(25)
    out = flood.output()
    assert " 0% packet loss" in out, out
    assert out_seq(net.a) > seq0     # the same SA all along: its numbers ran on


def test_group_may_look_but_not_reload(net):
    for d in (net.workdir, net.a.dir):     # let nobody reach the socket (0660, nogroup)
        os.chmod(d, 0o711)
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    r = lab.sh(*as_nobody, lab.DPVPNCTL, "-s", net.a.ctl_sock, "show", "sa", check=False)
    assert r.returncode == 0, r.stderr
    r = lab.sh(*as_nobody, lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False)
    assert r.returncode != 0 and "reload is for root only" in r.stderr, r.stderr


def test_reload_under_iperf3(net):
    """The same with TCP: iperf3 (paced to 300 Mbit/s) runs through to-b
    while a tunnel is added and removed again; nothing sent through to-b is
    lost to it: every ESP packet A encrypted, B decrypted."""
    import json
    conf = net.a.config
    original = open(conf).read()
    srv = net.bg("iperf3-reload-s", net.ns_b, "iperf3", "-s", "-1", "-B", "198.18.2.2")
    lab.wait_for(lambda: ":5201" in net.ns(net.ns_b, "ss", "-ltn", check=False).stdout, 10,
                 "iperf3 server")
    a0, b0 = net.a.ctl("show", "counters"), net.b.ctl("show", "counters")
    # paced: at full speed the lab's veths drop in the kernel where neither
    # gateway can count it, and a loss there would not be the reload's
    cli = net.bg("iperf3-reload-c", net.ns_a, "iperf3", "-c", "198.18.2.2", "-t", "5", "-J",
                 "-b", "300M")
    time.sleep(1.5)
    with open(conf, "a") as f:
        f.write(EXTRA)
    assert lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False).returncode == 0
    time.sleep(1.5)
    with open(conf, "w") as f:
        f.write(original)
    assert lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False).returncode == 0
    cli.p.wait(30)
    srv.stop()
    out = cli.output()
    rep = json.loads(out[out.index("{"):])
    assert rep["end"]["sum_received"]["bytes"] > 1_000_000, rep["end"]
    time.sleep(1)
    a1, b1 = net.a.ctl("show", "counters"), net.b.ctl("show", "counters")
    for k in ("replay", "bad-icv", "sa-gone", "no-policy"):
        assert a1["drops"][k] == a0["drops"][k] and b1["drops"][k] == b0["drops"][k], k
    # what A encrypted but its full TX queue did not take (counted at A: the
    # lab's veth socket rings at full TCP speed), and what B's ring dropped
    missed = sum(p["rx_missed"] for p in net.b.ctl("show", "ports")["ports"])
    unsent = sum(a1["drops"][k] - a0["drops"][k] for k in ("tx-full", "no-neighbour",
                                                              "neigh-timeout"))
    lost = (a1["encrypted"] - a0["encrypted"]) - (b1["decrypted"] - b0["decrypted"])
    assert 0 <= lost <= missed + unsent, (lost, missed, unsent)


def test_reload_routes_neighbours_addresses(net):
    conf = net.a.config
    original = open(conf).read()
    changed = original.replace("address = 198.18.1.1/24\n",
                               "address = 198.18.1.1/24, 2001:db8:77::1/64\n") + """
[route far]
dst = 203.0.113.0/24
port = outside
via = 198.19.0.2

[neighbor n9]
port = outside
address = 198.19.0.77
mac = 02:00:00:00:00:77
"""
    assert changed != original
    with open(conf, "w") as f:
        f.write(changed)
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False)
    assert r.returncode == 0 and "3 port, neighbour and route changes" in r.stdout, \
        r.stdout + r.stderr
    routes = net.a.ctl("show", "routes")["routes"]
    assert {"dst": "203.0.113.0/24", "port": 1, "via": "198.19.0.2", "tunnels": None} in routes
    assert any(x["dst"] == "2001:db8:77::/64" for x in routes)
    inside = next(p for p in net.a.ctl("show", "ports")["ports"] if p["role"] == "inside")
    assert inside["address6"] == "2001:db8:77::1/64"
    assert {"port": 1, "address": "198.19.0.77", "mac": "02:00:00:00:00:77", "static": True} \
        in net.a.ctl("show", "neighbours")["neighbours"]
    assert net.ping(count=2).returncode == 0                    # the tunnel untouched

    with open(conf, "w") as f:
        f.write(original)
    r = lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "reload", check=False)
    assert r.returncode == 0, r.stderr
    routes = net.a.ctl("show", "routes")["routes"]
    assert all(x["dst"] not in ("203.0.113.0/24", "2001:db8:77::/64") for x in routes)
    n9 = next(n for n in net.a.ctl("show", "neighbours")["neighbours"]
              if n["address"] == "198.19.0.77")
    assert n9["mac"] is None and not n9["static"]
