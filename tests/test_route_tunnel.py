# SPDX-License-Identifier: BSD-3-Clause
"""Route-based tunnels with static keys ([deploy] issue 17 requirement 2,
deploy/NEXT-DESIGN.md B.7 1-3, doc/route-based.md).

    host A ==== [inside gw A outside] ======== [outside gw B inside] ==== host B
    198.18.1.2    198.18.1.1  198.19.0.1         198.19.0.2            198.18.2.2
                                                 198.19.0.130 (extra-addresses)

gw A: two route tunnels (mode = route, no selectors), t1 to 198.19.0.2 and t2
to 198.19.0.130, gw B's mirror of each (its t2 from its extra address, so
two peers by address and two SA pairs); no policy tunnel on either side.
gw A routes 198.18.2.0/24 via tunnel t1 ([routes]); gw B routes
198.18.1.0/24 via tunnel t2 only, so the return path never depends on A's
t1 (what the ECMP test takes down).

- a static route over a tunnel: ping and a short iperf3, A's t1 SA carries
  them, show routes / show tunnels say so;
- dpvpnctl route del / add DST tunnel t1: no-route counted while the route
  is gone, pings pass again after;
- ECMP over t1 and t2: 16 UDP flows spread over both outbound SAs; dpvpnctl
  tunnel t1 down moves every flow to t2 with no tunnel-down drop; up again:
  both carry again.
"""
import pytest

import lab

pytestmark = pytest.mark.deploy

KEY1 = "0x0123456789abcdef0123456789abcdef01020304"
KEY2 = "0xfedcba9876543210fedcba987654321005060708"
KEY3 = "0x00112233445566778899aabbccddeeff0a0b0c0d"
KEY4 = "0xffeeddccbbaa99887766554433221100d0c0b0a0"


def route_tunnel(name, local, remote, out_spi, out_key, in_spi, in_key):
    return (f"[tunnel {name}]\nmode = route\nlocal = {local}\nremote = {remote}\n"
            f"cipher = aes128-gcm\nout-spi = {out_spi}\nout-key = {out_key}\n"
            f"in-spi = {in_spi}\nin-key = {in_key}\nreplay-window = 1024\n")


def tunnels(side):
    """gw A's or gw B's [tunnel t1] and [tunnel t2] (lab-*.conf's to-b / to-a go)."""
    if side == "a":
        return (route_tunnel("t1", "198.19.0.1", "198.19.0.2", "0x1001", KEY1, "0x2001", KEY2) +
                route_tunnel("t2", "198.19.0.1", "198.19.0.130", "0x1002", KEY3, "0x2002",
                             KEY4) +
                "\n[routes]\nroute = 198.18.2.0/24 via tunnel t1\n")
    return (route_tunnel("t1", "198.19.0.2", "198.19.0.1", "0x2001", KEY2, "0x1001", KEY1) +
            route_tunnel("t2", "198.19.0.130", "198.19.0.1", "0x2002", KEY4, "0x1002", KEY3) +
            "\n[routes]\nroute = 198.18.1.0/24 via tunnel t2\n")


def policy_tunnel(conf):
    """The [tunnel ...] section of configs/CONF, to the end of the file."""
    with open(f"{lab.CONFIGS}/{conf}") as f:
        text = f.read()
    return text[text.index("[tunnel "):]


@pytest.fixture(scope="module")
def rlab():
    extra = ("address = 198.19.0.2/24\n",
             "address = 198.19.0.2/24\nextra-addresses = 198.19.0.128/25\n")
    with lab.Lab(replace_a=((policy_tunnel("lab-a.conf"), tunnels("a")),),
                 replace_b=((policy_tunnel("lab-b.conf"), tunnels("b")), extra)) as lb:
        yield lb


def sa_packets(gw, spi, direction="out"):
    for s in gw.ctl("show", "sa")["sas"]:
        if s["spi"] == spi and s["dir"] == direction:
            return s["packets"]
    return None


def drops(gw, reason):
    return gw.ctl("show", "counters")["drops"][reason]


def pings_pass(lb, count=5):
    r = lb.ping(count=count)
    return r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout


# 16 UDP flows (source ports 40000..40015) to host B, n datagrams each
UDP_FLOWS = """
import socket, sys
n = int(sys.argv[1])
for port in range(40000, 40016):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("198.18.1.2", port))
    for _ in range(n):
        s.sendto(b"x" * 64, ("198.18.2.2", 9))
    s.close()
"""


def send_flows(lb, n=4):
    """16 flows of n datagrams from host A; returns how many each outbound SA
    of gw A (t1, t2: None while down) took, once all 16 * n are counted."""
    a = lb.a
    t1, t2 = sa_packets(a, "0x00001001") or 0, sa_packets(a, "0x00001002") or 0
    lb.ns(lb.ns_a, "python3", "-c", UDP_FLOWS, str(n), timeout=20)
    delta = []

    def counted():
        delta[:] = [(sa_packets(a, "0x00001001") or 0) - t1,
                    (sa_packets(a, "0x00001002") or 0) - t2]
        return sum(delta) >= 16 * n
    lab.wait_for(counted, 5, "gw A to encrypt every datagram")
    assert sum(delta) == 16 * n, delta
    return delta


def test_static_route_over_tunnel(rlab):
    a = rlab.a
    before = sa_packets(a, "0x00001001")
    ok, out = pings_pass(rlab)
    assert ok, out
    rep = rlab.iperf(seconds=1)
    assert rep["end"]["sum_received"]["bytes"] > 0, rep["end"]
    assert sa_packets(a, "0x00001001") >= before + 5 + 100
    assert sa_packets(a, "0x00001002") == 0     # not routed there
    routes = {r["dst"]: r for r in a.ctl("show", "routes")["routes"]}
    assert routes["198.18.2.0/24"]["tunnels"] == ["t1"], routes
    assert routes["198.18.2.0/24"]["port"] is None
    t = {x["name"]: x for x in a.ctl("show", "tunnels")["tunnels"]}
    assert t["t1"]["mode"] == "route" and t["t1"]["state"] == "up", t["t1"]
    assert t["t1"]["rpf"] == "loose" and t["t1"]["local_ts"] is None, t["t1"]
    assert "t1" in a.ctl_text("show", "routes")


def test_ctl_route_del_add(rlab):
    a = rlab.a
    a.ctl("route", "del", "198.18.2.0/24")
    before = drops(a, "no-route")
    rlab.ns(rlab.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "1", "198.18.2.2", check=False,
            timeout=10)                         # unanswered: the last waits 1 s
    assert drops(a, "no-route") >= before + 3
    r = lab.sh(lab.DPVPNCTL, "-s", a.ctl_sock, "route", "add", "198.18.2.0/24", "tunnel",
               check=False)
    assert r.returncode == 2, r.stdout + r.stderr      # no names: not port "tunnel"
    r = lab.sh(lab.DPVPNCTL, "-s", a.ctl_sock, "route", "add", "198.18.2.0/24", "tunnel",
               "t1", "nosuch", check=False)
    assert r.returncode != 0 and "nosuch is not a route-based tunnel" in r.stderr, r.stderr
    assert all(x["dst"] != "198.18.2.0/24" for x in a.ctl("show", "routes")["routes"])
    a.ctl("route", "add", "198.18.2.0/24", "tunnel", "t1")
    before = drops(a, "no-route")
    ok, out = pings_pass(rlab, count=3)
    assert ok, out
    assert drops(a, "no-route") == before


def test_ecmp_two_tunnels(rlab):
    a, b = rlab.a, rlab.b
    a.ctl("route", "add", "198.18.2.0/24", "tunnel", "t1", "t2")
    routes = {r["dst"]: r for r in a.ctl("show", "routes")["routes"]}
    assert routes["198.18.2.0/24"]["tunnels"] == ["t1", "t2"], routes
    d1, d2 = send_flows(rlab)
    assert d1 > 0 and d2 > 0, (d1, d2)          # both members carry flows
    # t1 down: its SAs go, every flow on t2, nothing dropped for it
    down = drops(a, "tunnel-down")
    b_in = sa_packets(b, "0x00001002", "in")
    a.ctl("tunnel", "t1", "down")
    assert sa_packets(a, "0x00001001") is None
    d1, d2 = send_flows(rlab)
    assert d1 == 0 and d2 == 64, (d1, d2)
    assert drops(a, "tunnel-down") == down
    lab.wait_for(lambda: sa_packets(b, "0x00001002", "in") - b_in >= 64, 5,
                 "gw B to decrypt them on t2")
    # up again: both carry
    a.ctl("tunnel", "t1", "up")
    d1, d2 = send_flows(rlab)
    assert d1 > 0 and d2 > 0, (d1, d2)
    assert drops(a, "tunnel-down") == down


def test_reload_and_dpvpnd_restart(rlab):
    """A reload turns the config's route into ECMP and changes t2's rpf (t2
    reinstalled, t1 untouched); a dpvpnd killed and started again keeps the
    dataplane's interfaces and routes (read back by id), and takes a tunnel
    down and up on the right interface."""
    a = rlab.a
    with open(a.config) as f:
        text = f.read()
    text = text.replace("route = 198.18.2.0/24 via tunnel t1\n",
                        "route = 198.18.2.0/24 via tunnel t1\n"
                        "route = 198.18.2.0/24 via tunnel t2\n")
    text = text.replace("remote = 198.19.0.130\n", "remote = 198.19.0.130\nrpf = off\n")
    with open(a.config, "w") as f:
        f.write(text)
    r = lab.sh(lab.DPVPNCTL, "-s", a.ctl_sock, "reload", check=False)
    assert r.returncode == 0 and "1 changed, 1 unchanged" in r.stdout, r.stdout + r.stderr
    t = {x["name"]: x for x in a.ctl("show", "tunnels")["tunnels"]}
    assert (t["t1"]["rpf"], t["t2"]["rpf"]) == ("loose", "off"), t
    routes = {x["dst"]: x for x in a.ctl("show", "routes")["routes"]}
    assert routes["198.18.2.0/24"]["tunnels"] == ["t1", "t2"], routes
    d1, d2 = send_flows(rlab)
    assert d1 > 0 and d2 > 0, (d1, d2)
    # dpvpnd restarted against the forwarding dataplane
    a.dpvpnd.kill9()
    a.dpvpnd = lab.Proc("gw-a-dpvpnd-2", [lab.DPVPND, "-c", a.config, "-D", a.dp_sock,
                                          "-s", a.ctl_sock], a.dir)
    lab.wait_for(lambda: "already forwarding" in a.dpvpnd.output(), 15, "dpvpnd back")
    assert "2 tunnels kept, 0 installed, 0 stale SAs removed" in a.dpvpnd.output()
    assert "repaired" not in a.dpvpnd.output()
    d1, d2 = send_flows(rlab)                   # both interfaces untouched
    assert d1 > 0 and d2 > 0, (d1, d2)
    a.ctl("tunnel", "t1", "down")
    d1, d2 = send_flows(rlab)
    assert (d1, d2) == (0, 64)
    a.ctl("tunnel", "t1", "up")
    routes = {x["dst"]: x for x in a.ctl("show", "routes")["routes"]}
    assert routes["198.18.2.0/24"]["tunnels"] == ["t1", "t2"], routes
    assert "interface removal" not in a.dpvpnd.output()    # its routes keep it
    d1, d2 = send_flows(rlab)
    assert d1 > 0 and d2 > 0, (d1, d2)
    ok, out = pings_pass(rlab, count=3)
    assert ok, out
