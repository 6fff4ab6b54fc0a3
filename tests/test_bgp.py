# SPDX-License-Identifier: BSD-3-Clause
"""BGP with FRR over route-based tunnels ([deploy] issue 17 requirement 3,
deploy/NEXT-DESIGN.md C.3; marker `frr`: `scripts/test -m frr` or
`pytest -m frr tests/test_bgp.py`).

    host A == [gw A] ==== t1: 198.19.0.1 <-> 198.19.0.2   ==== [gw B] == host B
    198.18.1.2        ==== t2: 198.19.0.1 <-> 198.19.0.130 ====        198.18.2.2
                vti-t1 169.254.10.1/30     vti-t1 169.254.10.2/30
                vti-t2 169.254.20.1/30     vti-t2 169.254.20.2/30
                zebra bfdd bgpd AS 65001   zebra bfdd bgpd AS 65002
                (ns_gw: A's Linux host)    (ns_gwb: B's)

Two route tunnels with static keys, each with its twin (host-interface) and
inside addresses; no [routes]: the routes come from BGP.  bgpd on each
gateway's host peers over both tunnels' inside addresses (timers 1 3,
maximum-paths 2, BFD); A announces 198.18.1.0/24, B 198.18.2.0/24.  zebra puts
what bgpd learns in the kernel via the twins; dpvpnd mirrors that into the
dataplane.

- learnt: both sessions Established, A's dataplane routes 198.18.2.0/24
  into t1 and t2 (ECMP), B's 198.18.1.0/24 into its two; pings host A <->
  host B pass;
- IPv6: a third session over t1's IPv6 inside addresses (fd00:10::/126,
  IPv6 unicast only, BFD): each side's /48 reaches the other's dataplane
  as a route into t1, and leaves it when withdrawn;
- withdrawn: B stops announcing 198.18.2.0/24: gone from A's dataplane,
  pings from host A counted no-route; announced again: forwarded again;
- failover: dpvpnctl tunnel t1 down on A takes vti-t1's link down, zebra
  drops t1's path at once: A routes into t2 alone; B, once BFD (bfdd, profile
  100 ms x 3, every session) finds t1 silent and ends its session over it
  (Cease / BFD Down; without BFD it waits for the 3 s hold time), too; pings
  pass; t1 up: both again.
"""
import pytest

import frr
import lab
from test_route_tunnel import KEY1, KEY2, KEY3, KEY4, policy_tunnel, route_tunnel

pytestmark = [pytest.mark.deploy, pytest.mark.frr]

ZEBRA = "hostname {ns}\nno zebra nexthop kernel enable\n"


def tunnels(side):
    if side == "a":
        return (route_tunnel("t1", "198.19.0.1", "198.19.0.2", "0x1001", KEY1, "0x2001", KEY2) +
                "host-interface = vti-t1\ninside-address = 169.254.10.1/30, fd00:10::1/126\n" +
                route_tunnel("t2", "198.19.0.1", "198.19.0.130", "0x1002", KEY3, "0x2002",
                             KEY4) +
                "host-interface = vti-t2\ninside-address = 169.254.20.1/30\n")
    return (route_tunnel("t1", "198.19.0.2", "198.19.0.1", "0x2001", KEY2, "0x1001", KEY1) +
            "host-interface = vti-t1\ninside-address = 169.254.10.2/30, fd00:10::2/126\n" +
            route_tunnel("t2", "198.19.0.130", "198.19.0.1", "0x2002", KEY4, "0x1002", KEY3) +
            "host-interface = vti-t2\ninside-address = 169.254.20.2/30\n")


PEERS_A = ("169.254.10.2", "169.254.20.2")
PEERS_B = ("169.254.10.1", "169.254.20.1")
PEER6_A, PEER6_B = "fd00:10::2", "fd00:10::1"          # over t1's IPv6 inside addresses
NET6_A, NET6_B = "2001:db8:aaa1::/48", "2001:db8:bbb2::/48"


@pytest.fixture(scope="module")
def bgp():
    if not frr.available():
        pytest.skip("FRR not installed (scripts/packages.txt @frr)")
    extra = ("address = 198.19.0.2/24\n",
             "address = 198.19.0.2/24\nextra-addresses = 198.19.0.128/25\n")
    with lab.Lab(split=True, replace_a=((policy_tunnel("lab-a.conf"), tunnels("a")),),
                 replace_b=((policy_tunnel("lab-b.conf"), tunnels("b")), extra)) as n:
        with frr.Frr(n.ns_gw, frr.bgpd_conf(65001, 65002, "10.255.0.1", PEERS_A,
                                        "198.18.1.0/24", bfd="fast", peers6=(PEER6_A,),
                                        prefix6=NET6_A),
                     zebra=ZEBRA.format(ns="gwa"), bfdd=frr.BFD_FAST) as fa, \
             frr.Frr(n.ns_gwb, frr.bgpd_conf(65002, 65001, "10.255.0.2", PEERS_B,
                                         "198.18.2.0/24", bfd="fast", peers6=(PEER6_B,),
                                         prefix6=NET6_B),
                     zebra=ZEBRA.format(ns="gwb"), bfdd=frr.BFD_FAST) as fb:
            yield {"net": n, "fa": fa, "fb": fb}


def routes(gw):
    return {r["dst"]: r["tunnels"] for r in gw.ctl("show", "routes")["routes"]}


def tunnels_of(gw, prefix):
    t = routes(gw).get(prefix)
    return sorted(t) if t else t


def ping_ok(n, count=5):
    r = n.ping(count=count)
    return r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout


def established(bgp, timeout=30):
    for peer in PEERS_A:
        bgp["fa"].wait_established(peer, timeout)
    for peer in PEERS_B:
        bgp["fb"].wait_established(peer, timeout)


def bfd_up(bgp, timeout=15):
    """Every session's BFD up (its packets, UDP 3784 with TTL 255, go through
    the twins and the tunnels like BGP's)."""
    for fr, peers in ((bgp["fa"], PEERS_A), (bgp["fb"], PEERS_B)):
        for peer in peers:
            lab.wait_for(lambda: fr.bfd_peer(peer).get("status") == "up", timeout,
                         f"BFD {fr.ns} -> {peer} up", interval=0.3)


def test_bgp_learns_and_forwards(bgp):
    n = bgp["net"]
    established(bgp)
    lab.wait_for(lambda: tunnels_of(n.a, "198.18.2.0/24") == ["t1", "t2"], 15,
                 "A's dataplane routes 198.18.2.0/24 into t1 and t2")
    lab.wait_for(lambda: tunnels_of(n.b, "198.18.1.0/24") == ["t1", "t2"], 15,
                 "B's dataplane routes 198.18.1.0/24 into t1 and t2")
    ok, out = ping_ok(n)
    assert ok, out


def test_bgp_over_ipv6_inside_addresses(bgp):
    """A session over t1's IPv6 inside addresses (IPv6 unicast only, BFD
    too): each side's IPv6 prefix reaches the other's dataplane as a route
    into t1, and leaves it when withdrawn."""
    n, fa, fb = bgp["net"], bgp["fa"], bgp["fb"]
    fa.wait_established(PEER6_A, 30, afi="ipv6Unicast")
    fb.wait_established(PEER6_B, 30, afi="ipv6Unicast")
    lab.wait_for(lambda: fa.bfd_peer(PEER6_A).get("status") == "up", 15, "BFD over IPv6")
    lab.wait_for(lambda: tunnels_of(n.a, NET6_B) == ["t1"], 15,
                 f"A's dataplane routes {NET6_B} into t1")
    lab.wait_for(lambda: tunnels_of(n.b, NET6_A) == ["t1"], 15,
                 f"B's dataplane routes {NET6_A} into t1")
    fb.configure("router bgp 65002", "address-family ipv6 unicast", f"no network {NET6_B}")
    try:
        lab.wait_for(lambda: NET6_B not in routes(n.a), 10, f"{NET6_B} gone from A")
    finally:
        fb.configure("router bgp 65002", "address-family ipv6 unicast", f"network {NET6_B}")
    lab.wait_for(lambda: tunnels_of(n.a, NET6_B) == ["t1"], 15, "announced again")
    # the IPv4 sessions are untouched: still ECMP over both tunnels
    assert tunnels_of(n.a, "198.18.2.0/24") == ["t1", "t2"]


def test_bgp_withdraw(bgp):
    n, fb = bgp["net"], bgp["fb"]
    established(bgp)
    lab.wait_for(lambda: tunnels_of(n.a, "198.18.2.0/24") == ["t1", "t2"], 15, "learnt")
    fb.configure("router bgp 65002", "address-family ipv4 unicast",
                 "no network 198.18.2.0/24")
    try:
        lab.wait_for(lambda: "198.18.2.0/24" not in routes(n.a), 10,
                     "198.18.2.0/24 gone from A's dataplane")
        before = n.a.ctl("show", "counters")["drops"]["no-route"]
        n.ns(n.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "1", "198.18.2.2", check=False,
             timeout=10)
        assert n.a.ctl("show", "counters")["drops"]["no-route"] - before >= 3
    finally:
        fb.configure("router bgp 65002", "address-family ipv4 unicast",
                     "network 198.18.2.0/24")
    lab.wait_for(lambda: tunnels_of(n.a, "198.18.2.0/24") == ["t1", "t2"], 15,
                 "announced again")
    ok, out = ping_ok(n, count=3)
    assert ok, out


def test_bgp_failover(bgp):
    n, fb = bgp["net"], bgp["fb"]
    established(bgp)
    bfd_up(bgp)
    lab.wait_for(lambda: tunnels_of(n.a, "198.18.2.0/24") == ["t1", "t2"], 15, "learnt")
    n.a.ctl("tunnel", "t1", "down")
    try:
        lab.wait_for(lambda: tunnels_of(n.a, "198.18.2.0/24") == ["t2"], 10,
                     "A routes into t2 alone")
        # B learns it from BFD (3 x 100 ms without A's packets over t1), not
        # from BGP's hold time (3 s): bgpd says why it ended the session
        lab.wait_for(lambda: tunnels_of(n.b, "198.18.1.0/24") == ["t2"], 10,
                     "B routes into t2 alone")
        assert fb.bfd_peer(PEERS_B[0]).get("status") == "down", fb.bfd_peer(PEERS_B[0])
        why = fb.json(f"show bgp neighbors {PEERS_B[0]} json")[PEERS_B[0]]
        # B ended it with a Notification: Cease (6), subcode 10 "BFD Down" (RFC 9384)
        assert why.get("lastErrorCodeSubcode") == "060A", {
            k: v for k, v in why.items() if k.startswith("last")}
        ok, out = ping_ok(n, count=5)
        assert ok, out
    finally:
        n.a.ctl("tunnel", "t1", "up")
    bgp["fa"].wait_established(PEERS_A[0], 30)
    bfd_up(bgp)
    lab.wait_for(lambda: tunnels_of(n.a, "198.18.2.0/24") == ["t1", "t2"], 15,
                 "both again")
    ok, out = ping_ok(n, count=3)
    assert ok, out
