# SPDX-License-Identifier: BSD-3-Clause
"""Tunnel twins ([deploy] issue 17 requirement 3, deploy/NEXT-DESIGN.md C.1):
host-interface on a route-based tunnel makes a TUN interface on the
gateway's Linux host, with the tunnel's inside address, that a routing
daemon peers over.

    host A ==== [gw A] ====== t1 (route, static keys) ====== [gw B] ==== host B
                vti-t1 169.254.10.1/30          vti-t1 169.254.10.2/30
                       fd00:10::1/126                  fd00:10::2/126
                (netns ns_gw: A's Linux host)   (netns ns_gwb: B's)

- dpvpnd addresses the twin, gives it the MTU and takes its link up while
  the tunnel has an outbound SA (keep_addr_on_down set);
- A's host pings B's inside address: through both twins and the tunnel's
  SAs, counted host_in / host_out; with TTL 1 too (eBGP's); the same over
  the IPv6 inside addresses, both ways.
- dpvpnctl tunnel t1 down: the twin's link goes down (its address stays),
  what the host writes into it meanwhile is not sent; up: pings again;
- a kernel route via the twin (what FRR's zebra installs) becomes a route
  into the tunnel in the dataplane, and goes with it; a kernel route for a
  prefix the config routes changes nothing (the config's wins), nor one
  for a prefix dpvpnctl routes until dpvpnctl deletes it;
- kill -9 of A's dpvpnd: the dataplane keeps forwarding on the mirrored
  routes; a kernel route deleted and one added meanwhile are found by the
  new dpvpnd (the kernel is the source of truth: the deleted one leaves the
  dataplane, the added one enters it);
- kill -9 of A's dataplane (net_tun ignores persist: the twin dies with
  it): dpvpnd makes and addresses it again, pings pass again, kernel
  routes via the new twin are mirrored into the new dataplane.
"""
import json

import pytest

import lab
from test_route_tunnel import KEY1, KEY2, policy_tunnel, route_tunnel

pytestmark = pytest.mark.deploy

IN_A, IN_B = "169.254.10.1", "169.254.10.2"
IN6_A, IN6_B = "fd00:10::1", "fd00:10::2"
MAX_ROUTES = 32768          # A's --max-routes (the default is 4096)
MANY = 20000                # kernel routes test_many_kernel_routes mirrors


def tunnel(side):
    if side == "a":
        t = route_tunnel("t1", "198.19.0.1", "198.19.0.2", "0x1001", KEY1, "0x2001", KEY2)
        return (t + f"host-interface = vti-t1\ninside-address = {IN_A}/30, {IN6_A}/126\n"
                "\n[routes]\nroute = 198.18.2.0/24 via tunnel t1\n")
    t = route_tunnel("t1", "198.19.0.2", "198.19.0.1", "0x2001", KEY2, "0x1001", KEY1)
    return (t + f"host-interface = vti-t1\ninside-address = {IN_B}/30, {IN6_B}/126\n"
            "\n[routes]\nroute = 198.18.1.0/24 via tunnel t1\n")


@pytest.fixture(scope="module")
def net():
    with lab.Lab(split=True, replace_a=((policy_tunnel("lab-a.conf"), tunnel("a")),),
                 replace_b=((policy_tunnel("lab-b.conf"), tunnel("b")),),
                 dp_args_a=("--max-routes", str(MAX_ROUTES))) as n:
        yield n


def link(net, ns):
    return json.loads(net.ns(ns, "ip", "-j", "addr", "show", "vti-t1").stdout)[0]


def v4(info):
    return [(a["local"], a["prefixlen"]) for a in info["addr_info"] if a["family"] == "inet"]


def v6(info):
    return [(a["local"], a["prefixlen"]) for a in info["addr_info"]
            if a["family"] == "inet6" and not a["local"].startswith("fe80")]


def ping(net, ns, dst, *args, count=3):
    r = net.ns(ns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", *args, dst, check=False)
    return r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


def sa_packets(gw, spi, direction):
    return next(s["packets"] for s in gw.ctl("show", "sa")["sas"]
                if s["spi"] == spi and s["dir"] == direction)


def test_twin_addressed(net):
    for ns, addr in ((net.ns_gw, IN_A), (net.ns_gwb, IN_B)):
        info = link(net, ns)
        assert v4(info) == [(addr, 30)], info
        assert "UP" in info["flags"] and info["mtu"] == 1400, info
        assert info.get("link_type") == "none", info        # TUN: raw IP, no MAC
        assert v6(info) == [(IN6_A if addr == IN_A else IN6_B, 126)], info
        # the namespace's default turns IPv6 off: the twin's is on (it has an address)
        keep = net.ns(ns, "cat", "/proc/sys/net/ipv6/conf/vti-t1/keep_addr_on_down").stdout
        assert keep.strip() == "1", keep


def test_ping_inside_address(net):
    a, b = net.a, net.b
    before = a.ctl("show", "counters"), b.ctl("show", "counters")
    out_a, in_a = sa_packets(a, "0x00001001", "out"), sa_packets(a, "0x00002001", "in")
    ok, text = ping(net, net.ns_gw, IN_B, count=5)
    assert ok, text
    # eBGP sends with TTL 1: the host originates it, the dataplane does not forward it
    ok, text = ping(net, net.ns_gw, IN_B, "-t", "1", count=2)
    assert ok, text
    ok, text = ping(net, net.ns_gw, IN6_B, count=3)               # IPv6 inside addresses
    assert ok, text
    ok, text = ping(net, net.ns_gwb, IN6_A, "-t", "1", count=2)
    assert ok, text
    assert sa_packets(a, "0x00001001", "out") - out_a >= 12
    assert sa_packets(a, "0x00002001", "in") - in_a >= 12
    for gw, was in zip((a, b), before):
        now = gw.ctl("show", "counters")
        assert now["host_in"] - was["host_in"] >= 7         # into the twin
        assert now["host_out"] - was["host_out"] >= 7       # written by the host
        for reason in ("host-limit", "host-full", "host-down", "rpf", "no-route"):
            assert now["drops"][reason] == was["drops"][reason], reason


def test_show_tunnels_interface(net):
    """show tunnels: a route tunnel's interface, its counters and its twin."""
    a = net.a
    t1 = a.ctl("show", "tunnels")["tunnels"][0]["interface"]
    ok, text = ping(net, net.ns_a, "198.18.2.2", count=3)      # routed into t1
    assert ok, text
    now = a.ctl("show", "tunnels")["tunnels"][0]["interface"]
    assert now["up"] is True and now["host_interface"] == "vti-t1", now
    assert now["packets_out"] - t1["packets_out"] >= 3, (t1, now)
    assert now["packets_in"] - t1["packets_in"] >= 3, (t1, now)
    assert now["down_drops"] == t1["down_drops"]
    assert "twin vti-t1" in a.ctl_text("show", "tunnels")


def test_down_takes_link_down(net):
    a = net.a
    a.ctl("tunnel", "t1", "down")
    try:
        lab.wait_for(lambda: "UP" not in link(net, net.ns_gw)["flags"], 5, "twin link down")
        assert v4(link(net, net.ns_gw)) == [(IN_A, 30)]     # the addresses stay
        assert v6(link(net, net.ns_gw)) == [(IN6_A, 126)]   # (keep_addr_on_down)
        ok, _ = ping(net, net.ns_gw, IN_B, count=1)
        assert not ok
    finally:
        a.ctl("tunnel", "t1", "up")
    lab.wait_for(lambda: "UP" in link(net, net.ns_gw)["flags"], 5, "twin link up")
    lab.wait_for(lambda: ping(net, net.ns_gw, IN_B, count=1)[0], 10, "pings after up")


def routes(gw):
    return {r["dst"]: r["tunnels"] for r in gw.ctl("show", "routes")["routes"]}


def test_kernel_route_mirrored(net):
    """A kernel route via the twin (what FRR's zebra installs) reaches the
    dataplane as a route into the tunnel, and leaves with it; the kernel's
    route for a prefix the config routes changes nothing (static wins)."""
    a = net.a
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.2.2/32", "dev", "vti-t1")
    lab.wait_for(lambda: routes(a).get("198.18.2.2/32") == ["t1"], 5, "route mirrored")
    ok, text = ping(net, net.ns_a, "198.18.2.2", count=2)
    assert ok, text
    net.ns(net.ns_gw, "ip", "route", "del", "198.18.2.2/32", "dev", "vti-t1")
    lab.wait_for(lambda: "198.18.2.2/32" not in routes(a), 5, "mirrored route gone")
    # the config's own prefix: a kernel route for it comes and goes, the config's stays
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.2.0/24", "dev", "vti-t1")
    net.ns(net.ns_gw, "ip", "route", "del", "198.18.2.0/24", "dev", "vti-t1")
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.3.0/24", "dev", "vti-t1")  # a marker
    lab.wait_for(lambda: "198.18.3.0/24" in routes(a), 5, "marker route mirrored")
    assert routes(a).get("198.18.2.0/24") == ["t1"]
    ok, text = ping(net, net.ns_a, "198.18.2.2", count=2)
    assert ok, text


def test_ctl_route_wins(net):
    """dpvpnctl's route for a prefix wins over the kernel's; deleted, the
    kernel's (via the twin) is mirrored again."""
    a = net.a
    a.ctl("route", "add", "198.18.5.0/24", "1", "198.19.0.254")
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.5.0/24", "dev", "vti-t1")
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.6.0/24", "dev", "vti-t1")  # a marker
    lab.wait_for(lambda: "198.18.6.0/24" in routes(a), 5, "marker route mirrored")
    assert routes(a)["198.18.5.0/24"] is None          # still dpvpnctl's, out port 1
    a.ctl("route", "del", "198.18.5.0/24")
    lab.wait_for(lambda: routes(a).get("198.18.5.0/24") == ["t1"], 5, "kernel's again")
    net.ns(net.ns_gw, "ip", "route", "del", "198.18.5.0/24", "dev", "vti-t1")
    lab.wait_for(lambda: "198.18.5.0/24" not in routes(a), 5, "kernel's gone")


def prefixes(n):
    """n distinct /24s from 10.100.0.0 on."""
    return [f"10.{100 + i // 256}.{i % 256}.0/24" for i in range(n)]


def kernel_routes(net, ns, op, pfx):
    """ip route OP (add / del) of every prefix in pfx via vti-t1 on ns's
    host, in one `ip -batch`; a del goes on past errors (-force)."""
    force = ("-force",) if op == "del" else ()
    net.ns(ns, "ip", *force, "-batch", "-",
           input="".join(f"route {op} {p} dev vti-t1\n" for p in pfx), timeout=60,
           check=op != "del")


def test_many_kernel_routes(net):
    """A table past the default 4096 (what a BGP customer table is): MANY
    kernel routes via the twin, added in one `ip -batch`, are all mirrored
    into A's dataplane (--max-routes 32768) and forwarded on; deleted, they
    all leave."""
    a = net.a
    pfx = prefixes(MANY)
    kernel_routes(net, net.ns_gw, "add", pfx)
    try:
        lab.wait_for(lambda: len(a.ctl("show", "routes")["routes"]) >= MANY, 120,
                     f"{MANY} kernel routes mirrored", interval=1)
        got = routes(a)
        assert all(got.get(p) == ["t1"] for p in pfx), \
            [p for p in pfx if got.get(p) != ["t1"]][:5]
        ok, text = ping(net, net.ns_a, "198.18.2.2", count=2)
        assert ok, text
    finally:
        kernel_routes(net, net.ns_gw, "del", pfx)
    lab.wait_for(lambda: "10.100.0.0/24" not in routes(a) and
                 len(a.ctl("show", "routes")["routes"]) < 100, 120, "all gone", interval=1)
    assert "dpvpnd: kernel route" not in a.dpvpnd.output()      # no install failed


def test_route_table_full_said(net):
    """Past B's default --max-routes (4096 a family), what does not fit is
    refused and dpvpnd names the limit; B keeps forwarding; the routes
    that did fit leave with the kernel's."""
    b = net.b
    pfx = prefixes(4200)
    kernel_routes(net, net.ns_gwb, "add", pfx)
    try:
        lab.wait_for(lambda: "table full (--max-routes 4096 a family)" in b.dpvpnd.output(),
                     60, "dpvpnd to say the table is full", interval=0.5)
        n4 = sum(":" not in r["dst"] for r in b.ctl("show", "routes")["routes"])
        assert 4000 < n4 <= 4096, n4
        ok, text = ping(net, net.ns_a, "198.18.2.2", count=2)
        assert ok, text
    finally:
        kernel_routes(net, net.ns_gwb, "del", pfx)
    lab.wait_for(lambda: len(b.ctl("show", "routes")["routes"]) < 100, 60, "all gone",
                 interval=0.5)


def test_dpvpnd_restart_follows_kernel(net):
    """dpvpnd restarted against its forwarding dataplane: routes mirrored
    before stay; what the kernel lost or gained meanwhile is applied."""
    a = net.a
    for pfx in ("198.18.7.0/24", "198.18.8.0/24"):
        net.ns(net.ns_gw, "ip", "route", "add", pfx, "dev", "vti-t1")
    lab.wait_for(lambda: routes(a).get("198.18.8.0/24") == ["t1"] and
                 routes(a).get("198.18.7.0/24") == ["t1"], 5, "routes mirrored")
    a.dpvpnd.kill9()
    # the dataplane forwards on, and the kernel changes while nobody mirrors
    ok, text = ping(net, net.ns_a, "198.18.2.2", count=2)
    assert ok, text
    net.ns(net.ns_gw, "ip", "route", "del", "198.18.7.0/24", "dev", "vti-t1")
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.9.0/24", "dev", "vti-t1")
    a.dpvpnd = lab.Proc("a-dpvpnd-restarted", [lab.DPVPND, "-c", a.config, "-D", a.dp_sock,
                                                "-s", a.ctl_sock], a.dir, a.dpvpnd_netns)
    lab.wait_for(lambda: "already forwarding" in a.dpvpnd.output() or not a.dpvpnd.alive(),
                 30, "the new dpvpnd")
    assert a.dpvpnd.alive(), a.dpvpnd.output()
    lab.wait_for(lambda: routes(a).get("198.18.9.0/24") == ["t1"], 5, "the new route")
    got = routes(a)
    assert "198.18.7.0/24" not in got, (got, a.dpvpnd.output())
    assert got.get("198.18.8.0/24") == ["t1"], got
    assert got.get("198.18.2.0/24") == ["t1"], got          # the config's stays
    assert "198.18.7.0/24" in a.dpvpnd.output()             # said so, once
    assert v4(link(net, net.ns_gw)) == [(IN_A, 30)]
    ok, text = ping(net, net.ns_gw, IN_B, count=2)
    assert ok, text
    for pfx in ("198.18.8.0/24", "198.18.9.0/24"):
        net.ns(net.ns_gw, "ip", "route", "del", pfx, "dev", "vti-t1")
    lab.wait_for(lambda: "198.18.9.0/24" not in routes(a), 5, "routes gone")


def test_dataplane_restart_remakes_twin(net):
    """net_tun ignores persist: the twin dies with the dataplane; dpvpnd makes
    and addresses it again once the new one is up."""
    a = net.a
    a.crash_dataplane()         # returns once dpvpnd has installed everything again
    lab.wait_for(lambda: net.ns(net.ns_gw, "ip", "link", "show", "vti-t1",
                                check=False).returncode == 0 and
                 v4(link(net, net.ns_gw)) == [(IN_A, 30)] and
                 "UP" in link(net, net.ns_gw)["flags"], 10, "twin made again")
    lab.wait_for(lambda: ping(net, net.ns_gw, IN_B, count=1)[0], 10, "pings after restart")
    # the kernel's routes via the new twin: dumped and mirrored into the new dataplane
    # (198.18.3.0/24 went with the old twin; add one again)
    net.ns(net.ns_gw, "ip", "route", "add", "198.18.4.0/24", "dev", "vti-t1")
    lab.wait_for(lambda: routes(a).get("198.18.4.0/24") == ["t1"], 5, "mirrored after restart")
