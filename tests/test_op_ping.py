# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, item 8: the first packets after a start are not lost while ARP /
Neighbour Discovery resolve their next hop.

The dual-stack lab (lab.py, ipv6=True: no static neighbours, every next hop
is learned), fresh for this module:

    host A ==== [inside gw A outside] ==== [outside gw B inside] ==== host B
    198.18.1.2   198.18.1.1  198.19.0.1     198.19.0.2  198.18.2.1   198.18.2.2
    ...:1::2     ...:1::1    ...:19::1      ...:19::2   ...:2::1     ...:2::2

- The very first `ping -c 3` from host A to host B after the start, IPv4
  and IPv6, gets 3 replies of 3: gateway A holds the first echo while it
  solicits gateway B, gateway B holds the next while it resolves host B
  (before: each dropped one as no-neighbour, and ping got 1 of 3).
"""
import pytest

import lab

pytestmark = pytest.mark.operator

FAR4, FAR6 = "198.18.2.2", "2001:db8:18:2::2"       # host B


def ping(net, ns, dst, count=3):
    """ping -c count; returns (replies, ttls seen)."""
    r = net.ns(ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", dst, check=False,
               timeout=30)
    ttls = [int(w[4:]) for w in r.stdout.split() if w.startswith("ttl=")]
    return len(ttls), ttls


@pytest.fixture(scope="module")
def net():
    with lab.Lab(ipv6=True) as n:
        # before anything else crossed the lab: every next hop still unknown
        n.first = {dst: ping(n, n.ns_a, dst) for dst in (FAR4, FAR6)}
        n.first_counters = {gw.name: gw.ctl("show", "counters") for gw in n.gws}
        yield n


def test_first_pings_after_start_all_answered(net):
    for dst, (got, _) in net.first.items():
        assert got == 3, f"the first ping -c 3 to {dst}: {got} replies"
    for name, c in net.first_counters.items():
        assert c["drops"]["no-neighbour"] == 0, (name, c["drops"])
        assert c["neigh_queued"] >= 1, (name, c)     # each held at least one


def test_counters_balance(net):
    for gw in net.gws:
        lab.wait_for(lambda: gw.ctl("show", "counters")["neigh_held"] == 0, 5, "nothing held")
        got, gone = lab.counters_balance(gw.ctl("show", "counters"))
        assert got == gone, gw.name
