# SPDX-License-Identifier: BSD-3-Clause
"""Transit between route-based tunnels: a hub ([deploy] issue 17, "transit
between tunnels" of deploy/NEXT-DESIGN.md B.3; doc/route-based.md).

Gateway A on two net_pcap ports (pcapgw), scapy as two spokes behind the
outside port:

    spoke B 198.19.0.2 == t1 ==\\                     /== t2 == spoke C 198.19.0.3
      10.66.0.0/24, 2001:db8:66::/64   [outside gw A]   10.77.0.0/24, 2001:db8:77::/64

A decrypts what spoke B sends into t1 for 10.77.0.5 / 2001:db8:77::5 and,
since its route for them leads into t2, encrypts it again into t2 to spoke
C, as Linux forwards between two XFRM interfaces: one TTL step in all, the
packet otherwise unchanged (checked by decrypting t2's ESP with scapy).  A
TTL-1 packet is answered with ICMP time exceeded back into t1; a packet
routed into t3, whose outer destination is itself routed into t1
(recursion), is dropped no-route; the interfaces count in and out.
"""
import pytest
from scapy.all import ICMP, IP, UDP, Ether, Raw
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP

import pcapgw
from pcapgw import GW_A, GW_B, MAC_GW_B, MAC_OUT
from test_route_tunnel import KEY1, KEY2, KEY3, KEY4, route_tunnel

pytestmark = pytest.mark.deploy

GW_C, MAC_GW_C = "198.19.0.3", "02:00:00:00:0c:01"
SRC, DST = "10.66.0.5", "10.77.0.5"
SRC6, DST6 = "2001:db8:66::5", "2001:db8:77::5"
N4, N6 = 8, 4

CONF = pcapgw.ports_conf() + \
    route_tunnel("t1", GW_A, GW_B, "0x1001", KEY1, "0x2001", KEY2) + \
    route_tunnel("t2", GW_A, GW_C, "0x1002", KEY3, "0x2002", KEY4) + \
    route_tunnel("t3", GW_A, "198.19.5.1", "0x1003", KEY3, "0x2003", KEY4) + """
[routes]
route = 10.66.0.0/24 via tunnel t1
route = 2001:db8:66::/64 via tunnel t1
route = 10.77.0.0/24 via tunnel t2
route = 2001:db8:77::/64 via tunnel t2
route = 10.88.0.0/24 via tunnel t3
route = 198.19.5.0/24 via tunnel t1
"""

NEIGHBOURS = pcapgw.NEIGHBOURS + f"""
[neighbor gw-c]
port = outside
address = {GW_C}
mac = {MAC_GW_C}
"""


def key(k):
    return bytes.fromhex(k[2:])


def from_b(i, pkt):
    sa = pcapgw.sa(0x2001, key(KEY2), GW_B, GW_A)
    return Ether(src=MAC_GW_B, dst=MAC_OUT) / sa.encrypt(pkt, seq_num=i + 1)


def v4(i, ttl=64, dst=DST):
    return IP(src=SRC, dst=dst, id=i, ttl=ttl) / UDP(sport=2000 + i, dport=7) / \
        Raw(bytes(range(i, i + 40)))


def v6(i):
    return IPv6(src=SRC6, dst=DST6, hlim=64) / UDP(sport=3000 + i, dport=7) / \
        Raw(bytes(range(i, i + 40)))


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    sent4 = [v4(i) for i in range(N4)]
    sent6 = [v6(i) for i in range(N6)]
    pkts = sent4 + sent6 + [v4(100, ttl=1), v4(101, dst="10.88.0.1")]
    outside = [from_b(i, p) for i, p in enumerate(pkts)]
    extra = {}

    def settle(gw):
        extra["tunnels"] = {t["name"]: t for t in gw.ctl("show", "tunnels")["tunnels"]}

    d = str(tmp_path_factory.mktemp("transit"))
    state = pcapgw.run(d, [], outside, conf=CONF, neighbours=NEIGHBOURS, settle=settle)
    state.update(extra, sent4=sent4, sent6=sent6)
    return state


def esp_of(frames, spi):
    return [f for f in frames if ESP in f and f[ESP].spi == spi]


def test_transit_into_the_other_tunnel(hub):
    """What t1 brought for t2's prefixes leaves in t2's ESP to spoke C, one
    TTL / hop-limit step less and otherwise as spoke B sent it."""
    out = esp_of(hub["out1"], 0x1002)
    assert len(out) == N4 + N6, [f.summary() for f in hub["out1"]]
    assert all(f[IP].dst == GW_C and f[Ether].dst == MAC_GW_C for f in out)
    sa = pcapgw.sa(0x1002, key(KEY3), GW_A, GW_C)
    inner = [sa.decrypt(f[IP]) for f in out]
    got4 = [p for p in inner if p.version == 4]
    got6 = [IPv6(bytes(p)) for p in inner if p.version == 6]
    assert [bytes(p) for p in got4] == [pcapgw.forwarded(p) for p in hub["sent4"]]
    assert [(p.hlim, bytes(p[UDP])) for p in got6] == \
        [(63, bytes(IPv6(bytes(p))[UDP])) for p in hub["sent6"]]
    assert hub["counters"]["drops"]["no-route"] == 1          # the recursion below


def test_transit_ttl_expired_answered_into_t1(hub):
    """TTL 1 is not forwarded: ICMP time exceeded goes back to the sender
    through the tunnel it came from."""
    assert hub["counters"]["drops"]["ttl-expired"] == 1
    back = esp_of(hub["out1"], 0x1001)
    sa = pcapgw.sa(0x1001, key(KEY1), GW_A, GW_B)
    icmp = [p for p in (sa.decrypt(f[IP]) for f in back) if ICMP in p]
    assert len(icmp) == 1 and icmp[0][ICMP].type == 11 and icmp[0][IP].dst == SRC, \
        [p.summary() for p in icmp]


def test_transit_recursion_dropped(hub):
    """t3's outer destination routes into t1: never sent, counted no-route;
    and the interfaces count what came in and went out."""
    assert not esp_of(hub["out1"], 0x1003)
    t = hub["tunnels"]
    # the TTL-1 packet came in by t1 (counted) and was not forwarded
    assert t["t1"]["interface"]["packets_in"] == N4 + N6 + 2
    assert t["t1"]["interface"]["packets_out"] == 1          # the ICMP
    assert t["t2"]["interface"]["packets_out"] == N4 + N6
