# SPDX-License-Identifier: BSD-3-Clause
"""The TTL / hop-limit step, once per forwarded packet (issue 29 req. 3): TTL
and hop limit 1 and 2, IPv4 and IPv6, every way a packet crosses the
gateway, in one run of the real dataplane on net_pcap ports (pcapgw), scapy
as both peers:

    host A 198.18.1.2     [0 inside  gw A  outside 1]     gw B 198.19.0.2
    2001:db8:18:1::2       198.18.1.1       198.19.0.1    (policy tunnels p4, p6;
                           2001:db8:18:1::1               route tunnels t1, t2 to B, C)

- inbound (p4, p6: from B's side to host A): 2 leaves with 1; 1 is not
  forwarded, ICMP Time Exceeded goes back into the tunnel from the inside
  address;
- outbound (host A into p4, p6): 2 is encrypted with 1; 1 is answered with
  Time Exceeded out of the inside port;
- transit (t1 to t2, a hub): 2 leaves in t2 with 1; 1 is answered into t1;
- to the gateway itself (an echo request to its inside address, through
  the tunnel and from host A): answered whatever its TTL, 1 included: the
  gateway is its destination, not a hop (RFC 1812 5.3.1 steps what is
  forwarded).
The tunnel-twin host path with TTL 1 is test_tun_twin's.
"""
import zlib

import pytest
from scapy.all import ICMP, IP, UDP, Ether, IPerror, Raw
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6TimeExceeded, IPv6
from scapy.layers.ipsec import ESP

import pcapgw
from pcapgw import GW_A, GW_B, HOST_A, MAC_GW_B, MAC_HOST_A, MAC_IN, MAC_OUT
from test_route_tunnel import route_tunnel

pytestmark = pytest.mark.house

IN4, IN6 = "198.18.1.1", "2001:db8:18:1::1"     # the inside port's addresses
HOST_A6 = "2001:db8:18:1::2"
FAR4, FAR6 = "198.18.2.2", "2001:db8:18:2::2"   # behind B, policy tunnels p4 and p6
SRC4, SRC6 = "10.66.0.5", "2001:db8:66::5"      # behind B, route tunnel t1
DST4, DST6 = "10.77.0.5", "2001:db8:77::5"      # behind C, route tunnel t2
GW_C, MAC_GW_C = "198.19.0.3", "02:00:00:00:0c:01"

# (SPI, key) of each SA, named from gateway A's side
SAS = {
    "p4-out": (0x4101, "0x" + "41" * 16 + "01020304"), "p4-in": (0x4201, "0x" + "42" * 16 + "05060708"),
    "p6-out": (0x4102, "0x" + "43" * 16 + "090a0b0c"), "p6-in": (0x4202, "0x" + "44" * 16 + "0d0e0f10"),
    "t1-out": (0x4103, "0x" + "45" * 16 + "11121314"), "t1-in": (0x4203, "0x" + "46" * 16 + "15161718"),
    "t2-out": (0x4104, "0x" + "47" * 16 + "191a1b1c"), "t2-in": (0x4204, "0x" + "48" * 16 + "1d1e1f20"),
}


def policy(name, local_ts, remote_ts):
    o, i = SAS[f"{name}-out"], SAS[f"{name}-in"]
    return (f"\n[tunnel {name}]\nlocal = {GW_A}\nremote = {GW_B}\nlocal-ts = {local_ts}\n"
            f"remote-ts = {remote_ts}\ncipher = aes128-gcm\nout-spi = {o[0]:#x}\n"
            f"out-key = {o[1]}\nin-spi = {i[0]:#x}\nin-key = {i[1]}\nreplay-window = 1024\n")


def route(name, remote):
    o, i = SAS[f"{name}-out"], SAS[f"{name}-in"]
    return route_tunnel(name, GW_A, remote, f"{o[0]:#x}", o[1], f"{i[0]:#x}", i[1])


CONF = pcapgw.ports_conf(f"{IN4}/24, {IN6}/64") + \
    policy("p4", "198.18.1.0/24", "198.18.2.0/24") + \
    policy("p6", "2001:db8:18:1::/64", "2001:db8:18:2::/64") + \
    route("t1", GW_B) + route("t2", GW_C) + """
[routes]
route = 10.66.0.0/24 via tunnel t1
route = 2001:db8:66::/64 via tunnel t1
route = 10.77.0.0/24 via tunnel t2
route = 2001:db8:77::/64 via tunnel t2
"""

NEIGHBOURS = pcapgw.NEIGHBOURS + f"""
[neighbor host-a6]
port = inside
address = {HOST_A6}
mac = {MAC_HOST_A}

[neighbor gw-c]
port = outside
address = {GW_C}
mac = {MAC_GW_C}
"""


def scapy_sa(name, src, dst):
    spi, key = SAS[name]
    return pcapgw.sa(spi, bytes.fromhex(key[2:]), src, dst)


def ident(tag):
    """An IPv4 probe's id from its tag: an ICMP error quotes its header and 8
    bytes, not the tag."""
    return zlib.crc32(tag) & 0xffff


def udp(v6, src, dst, hops, tag):
    """A UDP probe whose payload names the case (tag)."""
    if v6:
        return IPv6(src=src, dst=dst, hlim=hops) / UDP(sport=4000, dport=4001) / Raw(tag)
    return IP(src=src, dst=dst, ttl=hops, id=ident(tag)) / UDP(sport=4000, dport=4001) / Raw(tag)


def echo(v6, src, dst, hops, tag):
    if v6:
        return IPv6(src=src, dst=dst, hlim=hops) / ICMPv6EchoRequest(id=7, seq=hops, data=tag)
    return IP(src=src, dst=dst, ttl=hops) / ICMP(id=7, seq=hops) / Raw(tag)


def cases():
    """(way, family, hops) -> the packet, and where it enters: 'in' or 'out' with its SA."""
    c = {}
    for v6 in (False, True):
        fam = 6 if v6 else 4
        far, host, src, dst, gw = ((FAR6, HOST_A6, SRC6, DST6, IN6) if v6 else
                                   (FAR4, HOST_A, SRC4, DST4, IN4))
        for hops in (1, 2):
            tag = f"{fam}-{hops}".encode()
            c[("inbound", fam, hops)] = (f"p{fam}-in", udp(v6, far, host, hops, b"in" + tag))
            c[("outbound", fam, hops)] = (None, udp(v6, host, far, hops, b"out" + tag))
            c[("transit", fam, hops)] = ("t1-in", udp(v6, src, dst, hops, b"tr" + tag))
            c[("gateway-tunnel", fam, hops)] = (f"p{fam}-in", echo(v6, far, gw, hops, b"gt" + tag))
            c[("gateway-inside", fam, hops)] = (None, echo(v6, host, gw, hops, b"gi" + tag))
    return c


@pytest.fixture(scope="module")
def ttl(tmp_path_factory):
    cs = cases()
    inside, outside, seq = [], [], {}
    for (way, fam, hops), (sa, pkt) in cs.items():
        if sa is None:
            inside.append(Ether(src=MAC_HOST_A, dst=MAC_IN) / pkt)
        else:
            seq[sa] = seq.get(sa, 0) + 1
            enc = scapy_sa(sa, GW_B, GW_A).encrypt(pkt, seq_num=seq[sa])
            outside.append(Ether(src=MAC_GW_B, dst=MAC_OUT) / enc)
    d = str(tmp_path_factory.mktemp("ttl"))
    state = pcapgw.run(d, inside, outside, conf=CONF, neighbours=NEIGHBOURS)
    # what left by the outside port, decrypted, by the SA it left in
    state["esp"] = {}
    for f in state["out1"]:
        if ESP not in f:
            continue
        name = next(n for n, (spi, _) in SAS.items() if spi == f[ESP].spi)
        inner = scapy_sa(name, GW_A, GW_B).decrypt(f[IP])
        state["esp"].setdefault(name, []).append(inner if inner.version == 4 else IPv6(bytes(inner)))
    state["cases"] = cs
    return state


def udp_with(pkts, tag):
    return [p for p in pkts if UDP in p and bytes(p[UDP].payload) == tag and
            not p.haslayer(IPerror) and not p.haslayer(ICMPv6TimeExceeded)]


def hops_of(p):
    return p[IPv6].hlim if IPv6 in p else p[IP].ttl


def exceeded(pkts, tag):
    """The Time Exceeded errors among pkts that quote the probe tagged tag."""
    out = []
    for p in pkts:
        if p.haslayer(ICMPv6TimeExceeded) and tag in bytes(p[ICMPv6TimeExceeded].payload):
            out.append(p)
        elif ICMP in p and p[ICMP].type == 11 and IPerror in p and p[IPerror].id == ident(tag):
            out.append(p)
    return out


@pytest.mark.parametrize("fam", (4, 6))
def test_inbound(ttl, fam):
    """From the tunnel to host A: 2 leaves with 1; 1 comes back into the
    tunnel as Time Exceeded from the inside address, and is not forwarded."""
    out0 = [p.payload for p in ttl["out0"]]
    fwd = udp_with(out0, f"in{fam}-2".encode())
    assert len(fwd) == 1 and hops_of(fwd[0]) == 1, [p.summary() for p in ttl["out0"]]
    assert not udp_with(out0, f"in{fam}-1".encode())
    err = exceeded(ttl["esp"].get(f"p{fam}-out", []), f"in{fam}-1".encode())
    assert len(err) == 1, ttl["esp"]
    assert (err[0][IPv6].src if fam == 6 else err[0][IP].src) == (IN6 if fam == 6 else IN4)


@pytest.mark.parametrize("fam", (4, 6))
def test_outbound(ttl, fam):
    """From host A into the tunnel: 2 is encrypted with 1; 1 is answered with
    Time Exceeded out of the inside port, and not encrypted."""
    sent = ttl["esp"].get(f"p{fam}-out", [])
    enc = udp_with(sent, f"out{fam}-2".encode())
    assert len(enc) == 1 and hops_of(enc[0]) == 1, ttl["esp"]
    assert not udp_with(sent, f"out{fam}-1".encode())
    err = exceeded([p.payload for p in ttl["out0"]], f"out{fam}-1".encode())
    assert len(err) == 1, [p.summary() for p in ttl["out0"]]


@pytest.mark.parametrize("fam", (4, 6))
def test_transit(ttl, fam):
    """t1 to t2: 2 leaves in t2 with 1; 1 is answered into t1 and not forwarded."""
    fwd = udp_with(ttl["esp"].get("t2-out", []), f"tr{fam}-2".encode())
    assert len(fwd) == 1 and hops_of(fwd[0]) == 1, ttl["esp"]
    assert not udp_with(ttl["esp"].get("t2-out", []), f"tr{fam}-1".encode())
    err = exceeded(ttl["esp"].get("t1-out", []), f"tr{fam}-1".encode())
    assert len(err) == 1, ttl["esp"]


def replies(pkts, tag):
    out = []
    for p in pkts:
        if p.haslayer(ICMPv6EchoReply) and bytes(p[ICMPv6EchoReply].data) == tag:
            out.append(p)
        elif ICMP in p and p[ICMP].type == 0 and bytes(p[ICMP].payload) == tag:
            out.append(p)
    return out


@pytest.mark.parametrize("fam", (4, 6))
@pytest.mark.parametrize("hops", (1, 2))
def test_to_the_gateway(ttl, fam, hops):
    """An echo request for the gateway's own address is delivered, not
    forwarded: answered with its TTL 1 or 2, through the tunnel and from
    the inside alike."""
    back = replies(ttl["esp"].get(f"p{fam}-out", []), f"gt{fam}-{hops}".encode())
    assert len(back) == 1, ttl["esp"]
    inside = replies([p.payload for p in ttl["out0"]], f"gi{fam}-{hops}".encode())
    assert len(inside) == 1, [p.summary() for p in ttl["out0"]]


def test_every_expired_packet_counted(ttl):
    """Six probes with TTL 1 are forwarding's (inbound, outbound, transit, two
    families): each a ttl-expired drop and one ICMP error, nothing else."""
    c = ttl["counters"]
    assert {k: v for k, v in c["drops"].items() if v} == {"ttl-expired": 6}
    assert c["icmp_out"] == 6
