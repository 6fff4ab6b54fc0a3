# SPDX-License-Identifier: BSD-3-Clause
"""Issue 17, requirement 1: the host exception path (doc/host-path.md).

The split lab (lab.py, split=True): each gateway in a namespace of its own,
which is that box's Linux host, with dpvpnd beside its dataplane:

    host A ==== [inside  gw A  outside] ==== [outside  gw B  inside] ==== host B
    198.18.1.2   dpvpn-in      dpvpn-out       dpvpn-out                  198.18.2.2
                 198.18.1.1    198.19.0.1      198.19.0.2
                 (netns ns_gw: A's Linux host)  (netns ns_gwb: B's Linux host)

dpvpn-in / dpvpn-out are the ports' twins (host-interface =, net_tap):
what is addressed to a port's address and not ESP, IKE or ARP / ND goes to
its twin; what the host sends through the twin leaves by the port.

- TCP from B's host to a stdlib echo server on A's host (198.19.0.1), while
  ESP flows host A -> host B: every line echoed; host_in / host_out count.
- ping from B's host to A's outside address, and from host A to A's inside
  address: the kernel answers (the dataplane's icmp_echo stays put).
- dnsmasq on A's inside twin leases host A's link an address (DISCOVER /
  OFFER / REQUEST / ACK, scapy as the client).
- cleartext from the tunnel for A's inside address never reaches dpvpn-in:
  counted to-self, nothing at a socket on A's host.
- A's host routes host B's subnet out of its twin: the policy selects it,
  so it leaves encrypted, never in clear.
- host-access = yes on A's tunnel: host B reaches A's host at A's inside
  address through the tunnel (ping, TCP), the host's replies encrypted.
- (slow) a UDP flood at 198.19.0.1 stays within --host-rate, the rest
  host-limit, a trickle to TCP 179 (control class) all arrives, and 100
  pings through the tunnel during the flood all come back (the throughput
  ratio with and without a flood: perf/hostflood.py).
- (slow) kill -9 of A's dataplane: the twin keeps its address (persist), the
  new dataplane re-attaches, a TCP connection opened before carries on.
"""
import json
import os
import re
import sys
import time

import pytest
from scapy.all import ICMP, IP, UDP, Ether, rdpcap

import lab

pytestmark = pytest.mark.deploy

OUT_A, OUT_B, IN_A = "198.19.0.1", "198.19.0.2", "198.18.1.1"
HOST_RATE = 5000                # A's --host-rate (a second, one worker): the echo's
                                # lock-step exchange makes ~2000 a second
HOST_DEPTH = 64                 # dataplane/host.h: the bucket's depth (10 ms of 5000)
ECHO_PORT = 7777

# A line-echo server (stdlib): python3 -c ECHO ADDR PORT; prints "ready".
ECHO = """
import socket, socketserver, sys
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    address_family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = S((sys.argv[1], int(sys.argv[2])), H)
print("ready", flush=True)
s.serve_forever()
"""

# Send N lines to ADDR:PORT and read them back: prints how many came back.
CLIENT = """
import socket, sys
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection((addr, port), timeout=10)
f = s.makefile("rwb")
good = 0
for i in range(n):
    line = b"line %d of the host path\\n" % i
    f.write(line)
    f.flush()
    good += f.readline() == line
print(good, flush=True)
"""

# Count UDP datagrams at ADDR:PORT for SECONDS: prints the count.
UDP_COUNT = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(0.2)
print("ready", flush=True)
n, end = 0, time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    try:
        s.recv(2048)
        n += 1
    except socket.timeout:
        pass
print("got", n, flush=True)
"""


def host_lab():
    """The split lab with port twins on A (both ports) and B (outside), A at
    --host-rate HOST_RATE (perf/hostflood.py uses it too)."""
    twin_a = ("role = outside\naddress = 198.19.0.1/24\n",
              "role = outside\naddress = 198.19.0.1/24\nhost-interface = dpvpn-out\n")
    twin_a_in = ("role = inside\naddress = 198.18.1.1/24\n",
                 "role = inside\naddress = 198.18.1.1/24\nhost-interface = dpvpn-in\n")
    twin_b = ("role = outside\naddress = 198.19.0.2/24\n",
              "role = outside\naddress = 198.19.0.2/24\nhost-interface = dpvpn-out\n")
    return lab.Lab(split=True, replace_a=(twin_a, twin_a_in), replace_b=(twin_b,),
                   dp_args_a=("--host-rate", str(HOST_RATE)))


@pytest.fixture(scope="module")
def net():
    with host_lab() as n:
        yield n


def counters(gw):
    return gw.ctl("show", "counters")


def server(net, name, ns, script, *args):
    p = net.bg(name, ns, sys.executable, "-c", script, *map(str, args))
    lab.wait_for(lambda: "ready" in p.output() or not p.alive(), 10, name)
    assert p.alive(), p.output()
    return p


def test_twins_exist(net):
    """dpvpnd gave each twin the port's MAC, address, and link up."""
    ports = {p["id"]: p for p in net.a.ctl("show", "ports")["ports"]}
    link = net.ns(net.ns_gw, "ip", "-j", "addr", "show", "dpvpn-out").stdout
    info = json.loads(link)[0]
    assert info["address"] == ports[1]["mac"].lower()
    assert "UP" in info["flags"]
    assert [a["local"] for a in info["addr_info"] if a["family"] == "inet"] == [OUT_A]
    assert (ports[1]["host_interface"], ports[1]["host_link"]) == ("dpvpn-out", "up")
    assert (ports[0]["host_interface"], ports[0]["host_link"]) == ("dpvpn-in", "up")
    assert "dpvpn-out" in net.a.ctl_text("-w", "show", "ports")
    link_b = json.loads(net.ns(net.ns_gwb, "ip", "-j", "addr", "show", "dpvpn-out").stdout)[0]
    assert [a["local"] for a in link_b["addr_info"] if a["family"] == "inet"] == [OUT_B]


def test_tcp_to_gateway_while_esp_flows(net):
    before_a, before_b = counters(net.a), counters(net.b)
    srv = server(net, "echo-a", net.ns_gw, ECHO, OUT_A, ECHO_PORT)
    pings = net.bg("ping-tunnel", net.ns_a, "ping", "-c", "15", "-i", "0.1", "198.18.2.2")
    r = net.ns(net.ns_gwb, sys.executable, "-c", CLIENT, OUT_A, str(ECHO_PORT), "200", timeout=30)
    lab.wait_for(lambda: not pings.alive(), 10, "pings through the tunnel")
    srv.stop()
    assert r.stdout.split() == ["200"], r.stdout + r.stderr
    assert " 0% packet loss" in pings.output(), pings.output()
    a, b = counters(net.a), counters(net.b)
    assert a["encrypted"] - before_a["encrypted"] >= 15     # ESP flowed meanwhile
    assert b["decrypted"] - before_b["decrypted"] >= 15
    # 200 lines each way plus the handshake: through both twins, both ways
    port_a = {p["id"]: p for p in net.a.ctl("show", "ports")["ports"]}[1]
    assert port_a["host_in"] >= 200 and port_a["host_out"] >= 200
    for now, was in ((a, before_a), (b, before_b)):
        assert now["host_in"] - was["host_in"] >= 200
        assert now["host_out"] - was["host_out"] >= 200
    for reason in ("host-limit", "host-full", "host-down"):
        assert a["drops"][reason] == before_a["drops"][reason]


def out_port(gw):
    """gw's outside port (id 1) as show ports has it."""
    return {p["id"]: p for p in gw.ctl("show", "ports")["ports"]}[1]


def test_host_ping(net):
    """The kernel behind the twin answers: the dataplane's echo replies stay put."""
    before = counters(net.a)
    r = net.ns(net.ns_gwb, "ping", "-c", "3", "-i", "0.2", "-W", "2", OUT_A, check=False)
    assert "3 received" in r.stdout, r.stdout
    r = net.ns(net.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "2", IN_A, check=False)
    assert "3 received" in r.stdout, r.stdout
    # and A's host pings out through its twin
    r = net.ns(net.ns_gw, "ping", "-c", "2", "-i", "0.2", "-W", "2", OUT_B, check=False)
    assert "2 received" in r.stdout, r.stdout
    after = counters(net.a)
    assert after["icmp_echo"] == before["icmp_echo"]
    assert after["host_in"] - before["host_in"] >= 8


# A DHCP client on host A's link (scapy, broadcast flag): DISCOVER, REQUEST;
# prints the OFFER's and the ACK's yiaddr and server id.
DHCP_CLIENT = """
import sys
from scapy.all import BOOTP, DHCP, IP, UDP, Ether, conf, get_if_hwaddr, srp1
conf.checkIPaddr = False
mac = get_if_hwaddr("eth0")
def ask(kind, extra=()):
    p = (Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / IP(src="0.0.0.0", dst="255.255.255.255") /
         UDP(sport=68, dport=67) / BOOTP(chaddr=bytes.fromhex(mac.replace(":", "")), xid=0x1707,
                                         flags=0x8000) /
         DHCP(options=[("message-type", kind), *extra, "end"]))
    r = srp1(p, iface="eth0", timeout=5, verbose=0)
    if r is None or DHCP not in r:
        sys.exit(f"no answer to {kind}")
    opts = dict(o for o in r[DHCP].options if isinstance(o, tuple))
    print(kind, r[BOOTP].yiaddr, opts.get("server_id"), opts.get("message-type"), flush=True)
    return r[BOOTP].yiaddr, opts.get("server_id")
addr, sid = ask("discover")
ask("request", (("requested_addr", addr), ("server_id", sid)))
"""


def test_dhcp_server_on_the_host(net, tmp_path):
    """A DHCP server on A's host (dnsmasq on the inside twin, as a small
    site's gateway runs one) leases host A's link an address: the client's
    broadcasts reach the twin, the server's answers leave by the port."""
    if not os.access("/usr/sbin/dnsmasq", os.X_OK):
        pytest.skip("dnsmasq not installed (scripts/packages.txt: dnsmasq-base)")
    leases = tmp_path / "leases"
    srv = net.bg("dnsmasq", net.ns_gw, "/usr/sbin/dnsmasq", "--no-daemon", "--conf-file=/dev/null",
                 "--port=0", "--interface=dpvpn-in", "--bind-interfaces", "--user=root",
                 "--dhcp-range=198.18.1.100,198.18.1.150,255.255.255.0,1h",
                 f"--dhcp-leasefile={leases}", "--pid-file=", "--log-dhcp")
    try:
        lab.wait_for(lambda: "DHCP, IP range" in srv.output() or not srv.alive(), 10,
                     "dnsmasq ready")
        assert srv.alive(), srv.output()
        before = counters(net.a)["host_in"]
        r = net.ns(net.ns_a, sys.executable, "-c", DHCP_CLIENT, check=False, timeout=30)
        assert r.returncode == 0, (r.stdout, r.stderr, srv.output())
        lines = [l.split() for l in r.stdout.splitlines()]
        assert [l[0] for l in lines] == ["discover", "request"], r.stdout
        offered, acked = lines[0], lines[1]
        assert offered[1].startswith("198.18.1.1") and offered[2] == IN_A, offered
        assert acked[1] == offered[1] and acked[3] == "5", acked      # 5: DHCPACK
        lab.wait_for(lambda: leases.exists() and offered[1] in leases.read_text(), 5,
                     "the lease written")
        assert counters(net.a)["host_in"] - before >= 2
    finally:
        srv.stop()


def test_no_cleartext_from_tunnel_to_host(net):
    """UDP from host B through the tunnel to A's inside address: to-self, not the twin."""
    srv = server(net, "udp-a", net.ns_gw, UDP_COUNT, "0.0.0.0", 9999, 1.5)
    before = counters(net.a)
    for _ in range(5):
        net.ns(net.ns_b, sys.executable, "-c",
               "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
               f".sendto(b'x', ('{IN_A}', 9999))")
    lab.wait_for(lambda: counters(net.a)["drops"]["to-self"] - before["drops"]["to-self"] >= 5,
                 5, "to-self drops")
    lab.wait_for(lambda: not srv.alive(), 10, "the UDP counter")
    assert "got 0" in srv.output(), srv.output()
    assert counters(net.a)["decrypted"] - before["decrypted"] >= 5


def test_host_traffic_for_a_tunnel_is_encrypted(net):
    """A's host routes host B's subnet out of its twin, from A's inside address:
    the policy selects it, so it is encrypted (as XFRM encrypts a host's own
    packets), never sent in clear; host B's replies come back decrypted and
    stop at A as to-self (no cleartext from a tunnel reaches a twin)."""
    # ARP from the twin's own address (the dataplane answers and learns only
    # ARP for its port's addresses; doc/host-path.md)
    net.ns(net.ns_gw, "sysctl", "-qw", "net.ipv4.conf.dpvpn-out.arp_announce=2")
    net.ns(net.ns_gw, "ip", "route", "replace", "198.18.2.0/24", "via", OUT_B,
           "dev", "dpvpn-out", "src", IN_A)
    cap, pcap = net.capture("gwa-out", name="host-esp")
    before_a, before_b = counters(net.a), counters(net.b)
    r = net.ns(net.ns_gw, "ping", "-c", "3", "-i", "0.2", "-W", "1", "198.18.2.2", check=False)
    lab.wait_for(lambda: counters(net.a)["drops"]["to-self"] - before_a["drops"]["to-self"]
                 >= 3, 5, "host B's replies, dropped to-self at A")
    net.stop_capture(cap)
    net.ns(net.ns_gw, "ip", "route", "del", "198.18.2.0/24")
    assert " 0 received" in r.stdout, r.stdout
    a, b = counters(net.a), counters(net.b)
    for gw, now, was in (("A", a, before_a), ("B", b, before_b)):   # requests, replies
        assert now["encrypted"] - was["encrypted"] >= 3, gw
        assert now["decrypted"] - was["decrypted"] >= 3, gw
    clear = [p for p in rdpcap(pcap) if ICMP in p]
    assert clear == [], clear


def reload(gw, text):
    with open(gw.config, "w") as f:
        f.write(text)
    r = lab.sh(lab.DPVPNCTL, "-s", gw.ctl_sock, "reload", check=False)
    assert r.returncode == 0, r.stdout + r.stderr + gw.dpvpnd.output()[-2000:]
    time.sleep(0.1)     # a new twin's link state, read 50 times a second (host.c)


def twin_addrs(net, ns, dev):
    r = net.ns(ns, "ip", "-j", "addr", "show", dev, check=False)
    if r.returncode != 0:
        return None
    return [f"{a['local']}/{a['prefixlen']}" for a in json.loads(r.stdout)[0]["addr_info"]
            if a["family"] == "inet"]


def test_reload_twin(net):
    """Reload: a changed address replaces the old one on the twin; a port that
    no longer names its twin gets it deleted (persist kept it) and the
    dataplane answers its ping again; named again, the twin comes back."""
    original = open(net.a.config).read()
    inside = "address = 198.18.1.1/24\nhost-interface = dpvpn-in\n"
    assert inside in original
    try:
        reload(net.a, original.replace(inside, "address = 198.18.1.1/25\n"
                                       "host-interface = dpvpn-in\n"))
        assert twin_addrs(net, net.ns_gw, "dpvpn-in") == ["198.18.1.1/25"]
        reload(net.a, original.replace(inside, "address = 198.18.1.1/24\n"))
        assert twin_addrs(net, net.ns_gw, "dpvpn-in") is None
        before = counters(net.a)["icmp_echo"]
        r = net.ns(net.ns_a, "ping", "-c", "2", "-i", "0.2", "-W", "2", IN_A, check=False)
        assert "2 received" in r.stdout, r.stdout
        assert counters(net.a)["icmp_echo"] - before == 2
    finally:
        reload(net.a, original)
    assert twin_addrs(net, net.ns_gw, "dpvpn-in") == ["198.18.1.1/24"]
    before = counters(net.a)["icmp_echo"]
    r = net.ns(net.ns_a, "ping", "-c", "2", "-i", "0.2", "-W", "2", IN_A, check=False)
    assert "2 received" in r.stdout, r.stdout
    assert counters(net.a)["icmp_echo"] == before


def test_host_access(net):
    """host-access = yes on A's tunnel: what host B sends through it to A's
    inside address goes to A's host (the inside port's twin): the kernel
    answers pings, a TCP echo server there is reached, and the host's replies
    are encrypted back (the policy selects them); without it, to-self again."""
    original = open(net.a.config).read()
    head = original[original.index("[tunnel "):].split("\n", 1)[0] + "\n"
    net.ns(net.ns_gw, "sysctl", "-qw", "net.ipv4.conf.dpvpn-out.arp_announce=2")
    net.ns(net.ns_gw, "ip", "route", "replace", "198.18.2.0/24", "via", OUT_B,
           "dev", "dpvpn-out", "src", IN_A)
    srv = server(net, "echo-in-a", net.ns_gw, ECHO, IN_A, ECHO_PORT)
    try:
        reload(net.a, original.replace(head, head + "host-access = yes\n", 1))
        before = counters(net.a)
        r = net.ns(net.ns_b, "ping", "-c", "3", "-i", "0.2", "-W", "2", IN_A, check=False)
        assert "3 received" in r.stdout, r.stdout + net.a.dpvpnd.output()[-1000:]
        r = net.ns(net.ns_b, sys.executable, "-c", CLIENT, IN_A, str(ECHO_PORT), "50",
                   timeout=30)
        assert r.stdout.split() == ["50"], r.stdout + r.stderr
        after = counters(net.a)
        assert after["icmp_echo"] == before["icmp_echo"]          # the kernel answered
        assert after["drops"]["to-self"] == before["drops"]["to-self"]
        assert after["host_in"] - before["host_in"] >= 53
        assert after["encrypted"] - before["encrypted"] >= 53     # the host's replies
        assert [t["host_access"] for t in net.a.ctl("show", "tunnels")["tunnels"]] == [True]
        assert "host-access" in net.a.ctl_text("show", "tunnels")
    finally:
        reload(net.a, original)
        srv.stop()
        net.ns(net.ns_gw, "ip", "route", "del", "198.18.2.0/24")
    before = counters(net.a)
    r = net.ns(net.ns_b, "ping", "-c", "2", "-i", "0.2", "-W", "2", IN_A, check=False)
    assert "2 received" in r.stdout, r.stdout                    # the dataplane's again
    assert counters(net.a)["icmp_echo"] - before["icmp_echo"] == 2


@pytest.mark.slow
def test_host_flood_limited(net):
    """A UDP flood at A's outside address from the wire: the twin gets at most
    --host-rate a second (plus the bucket), the rest is host-limit; a TCP
    exchange on port 179 (control class, a bucket of its own) all arrives."""
    mac_a = {p["id"]: p for p in net.a.ctl("show", "ports")["ports"]}[1]["mac"]
    mac_b = {p["id"]: p for p in net.b.ctl("show", "ports")["ports"]}[1]["mac"]
    frame = bytes(Ether(dst=mac_a, src=mac_b) / IP(src=OUT_B, dst=OUT_A) /
                  UDP(sport=40000, dport=9) / (b"f" * 64))
    frames = os.path.join(net.workdir, "flood.json")
    with open(frames, "w") as f:
        json.dump({"udp": [frame.hex()]}, f)
    seconds = 4
    udp = server(net, "udp-flood", net.ns_gw, UDP_COUNT, OUT_A, 9, seconds + 2)
    bgp = server(net, "echo-179", net.ns_gw, ECHO, OUT_A, 179)
    before = counters(net.a)
    missed0 = out_port(net.a)["rx_missed"]
    t0 = time.monotonic()
    flood = net.bg("flood", net.ns_gwb, sys.executable,
                   os.path.join(os.path.dirname(__file__), "helpers", "flood.py"), frames, "gwb-out",
                   str(seconds), "100000000")
    # the tunnel meanwhile: host A -> host B through the SAs, every ping back
    # (the workers never wait for the host path: a full ring or an empty
    # bucket is a counted drop of the host's frame, never of the tunnel's)
    pings = net.bg("tunnel-pings", net.ns_a, "ping", "-c", "100", "-i", "0.02", "-W", "2",
                   "198.18.2.2")
    r = net.ns(net.ns_gwb, sys.executable, "-c", CLIENT, OUT_A, "179", "50", timeout=30)
    lab.wait_for(lambda: not pings.alive(), 15, "the tunnel's pings")
    lab.wait_for(lambda: not flood.alive(), seconds + 10, "the flood")
    elapsed = time.monotonic() - t0
    lab.wait_for(lambda: not udp.alive(), seconds + 10, "the UDP counter")
    bgp.stop()
    sent = json.loads(flood.output())["udp"]
    got = int(udp.output().split("got")[1])
    after = counters(net.a)
    limited = after["drops"]["host-limit"] - before["drops"]["host-limit"]
    print(f"flood: {sent} sent in {elapsed:.1f} s, {got} reached the host, {limited} host-limit")
    assert r.stdout.split() == ["50"], r.stdout + r.stderr
    # every ping back, but for one the Linux link took and the dataplane never
    # saw (the flood overran the veth's af_packet ring: rx_missed, below the
    # dataplane; seen once in 2 CI runs on 2 vCPUs): none lost in dpvpn
    lost = 100 - int(re.search(r"(\d+) received", pings.output()).group(1))
    missed = out_port(net.a)["rx_missed"] - missed0
    assert lost == 0 or lost <= missed, (pings.output(), missed)
    assert sent > 3 * HOST_RATE * seconds        # a flood, well over the rate
    assert got <= HOST_RATE * (elapsed + 1) + HOST_DEPTH
    assert limited > sent / 3


# Connect, echo one line, wait for GO (a file) to exist, echo another: prints
# "first second" with 1 for each line that came back.
CLIENT_HOLD = """
import os, socket, sys, time
addr, port, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((addr, port), timeout=20)
f = s.makefile("rwb")
res = []
for i in range(2):
    if i == 1:
        print("waiting", flush=True)
        while not os.path.exists(go):
            time.sleep(0.05)
    line = b"line %d\\n" % i
    f.write(line)
    f.flush()
    res.append(int(f.readline() == line))
print("result", *res, flush=True)
"""


@pytest.mark.slow
def test_twin_survives_dataplane_restart(net):
    """kill -9 of A's dataplane: the twin (persist) keeps its address and the
    host its sockets; the new dataplane re-attaches to it by name, and a TCP
    connection opened before carries on."""
    srv = server(net, "echo-restart", net.ns_gw, ECHO, OUT_A, ECHO_PORT + 1)
    go = os.path.join(net.workdir, "go")
    cli = net.bg("client-restart", net.ns_gwb, sys.executable, "-c", CLIENT_HOLD, OUT_A,
                 str(ECHO_PORT + 1), go)
    lab.wait_for(lambda: "waiting" in cli.output() or not cli.alive(), 10, "first line")
    net.a.dataplane.kill9()
    link = json.loads(net.ns(net.ns_gw, "ip", "-j", "addr", "show", "dpvpn-out").stdout)[0]
    assert [a["local"] for a in link["addr_info"] if a["family"] == "inet"] == [OUT_A]
    if os.path.exists(net.a.dp_sock):
        os.unlink(net.a.dp_sock)
    backs = net.a.dpvpnd.output().count("dataplane back")
    net.a.start_dataplane(log_suffix="-restart")
    lab.wait_for(lambda: net.a.dpvpnd.output().count("dataplane back") > backs, 30,
                 "dpvpnd to reinstall")
    open(go, "w").close()
    lab.wait_for(lambda: not cli.alive(), 20, "the second line")
    srv.stop()
    assert "result 1 1" in cli.output(), cli.output()
    assert "host interface dpvpn-out" in net.a.dataplane.output()
