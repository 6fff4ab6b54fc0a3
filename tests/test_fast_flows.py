# SPDX-License-Identifier: BSD-3-Clause
"""Issue 14: the fast path's caches follow what they cache.

    host A eth0 ==veth== gwa-in [gw A] gwa-out ==veth== gwb-out [gw B] gwb-in ==veth== host B
                        13 policies                     1 policy

With more than 8 policies gateway A classifies through rte_acl behind each
worker's flow cache (dataplane/spd.h: source, destination -> SA slot, valid
for the classifier generation that answered).  A tunnel taken down and up
again must be seen at once: while it is down its packets find no policy
(no-policy), never the SA slot the cache remembered (sa-gone); once it is up
they go out under its SA again.  The last destination's route and Ethernet
header, cached per burst (worker.c), follow a neighbour's new MAC.
"""
import time

import pytest

import lab

pytestmark = pytest.mark.fastpath

EXTRA = "".join(f"""
[tunnel extra{i}]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 100.64.{i}.0/24
cipher = aes128-gcm
out-spi = {0x7000 + i:#x}
out-key = 0x{i:02x}23456789abcdef0123456789abcdef01020304
in-spi = {0x7100 + i:#x}
in-key = 0x{i:02x}dcba9876543210fedcba987654321005060708
""" for i in range(12))


@pytest.fixture(scope="module")
def net():
    with lab.Lab(extra_a=EXTRA) as n:
        assert len(n.a.ctl("show", "policies")["policies"]) == 13
        assert n.ping(count=3).returncode == 0
        yield n


def drops(gw):
    return gw.ctl("show", "counters")["drops"]


def out_packets(gw, name):
    return sum(s["packets"] for s in gw.ctl("show", "sa")["sas"]
               if s["name"] == name and s["dir"] == "out")


def test_tunnel_down_and_up_seen_through_the_flow_cache(net):
    before = drops(net.a)
    r = net.ping(count=20, timeout=20)
    assert " 0% packet loss" in r.stdout, r.stdout     # the flow is in the cache now
    lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "tunnel", "to-b", "down")
    r = net.ping(count=5, timeout=10)
    assert "100% packet loss" in r.stdout, r.stdout
    after = drops(net.a)
    assert after["no-policy"] - before["no-policy"] >= 5, after
    assert after["sa-gone"] == before["sa-gone"], after      # no stale slot
    lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "tunnel", "to-b", "up")
    sent = out_packets(net.a, "to-b")
    r = net.ping(count=20, timeout=20)
    assert " 0% packet loss" in r.stdout, r.stdout
    assert out_packets(net.a, "to-b") - sent >= 20
    assert drops(net.a)["sa-gone"] == before["sa-gone"]


def test_new_neighbour_mac_followed(net):
    """Gateway B's MAC changes (its port given another one): A learns it by
    ARP and every burst after that goes to the new MAC (the per-burst
    destination cache holds nothing across bursts)."""
    ns = net.ns_gw
    old = net.ns(ns, "cat", "/sys/class/net/gwb-out/address").stdout.strip()
    new = "02:00:00:00:0b:77"
    assert net.ping(count=3).returncode == 0
    net.b.stop()
    try:
        net.ns(ns, "ip", "link", "set", "gwb-out", "address", new)
        net.b.start()
        # A still has the old MAC: B drops those frames (wrong-mac) until
        # A's neighbour entry is refreshed; force it as an operator would
        lab.sh(lab.DPVPNCTL, "-s", net.a.ctl_sock, "neighbour", "del", "1", "198.19.0.2")
        time.sleep(0.5)
        r = net.ping(count=20, timeout=20)
        assert " 0% packet loss" in r.stdout, r.stdout
        neighs = net.a.ctl("show", "neighbours")["neighbours"]
        assert any(n["address"] == "198.19.0.2" and n["mac"] == new for n in neighs), neighs
    finally:
        net.b.stop()
        net.ns(ns, "ip", "link", "set", "gwb-out", "address", old)
        net.b.start()
