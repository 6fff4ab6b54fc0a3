# SPDX-License-Identifier: BSD-3-Clause
"""IPv6 Neighbour Discovery (RFC 4861) on the real dataplane, scapy as the
other node (net_pcap ports, as test_pcap.py): a solicitation for the
gateway's address is answered as a router would (R, S, O flags, target
link-layer address, valid checksum), duplicate address detection is answered
to all-nodes, a next hop that is not known yet is solicited on its
solicited-node group, and malformed or foreign ND is counted as bad-nd."""
import pytest
from scapy.all import Ether, Raw, UDP
from scapy.layers.inet6 import (ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6ND_RS, ICMPv6NDOptDstLLAddr,
                                ICMPv6NDOptSrcLLAddr, IPv6)

import pcapgw
from pcapgw import MAC_HOST_A, MAC_IN, MAC_OUT

pytestmark = pytest.mark.esp

GW_IN6, HOST6 = "2001:db8:18:1::1", "2001:db8:18:1::2"
GW_A6, GW_B6 = "2001:db8:19::1", "2001:db8:19::2"
SNM_GW = "ff02::1:ff00:1"           # solicited-node group of ...::1

CONF = pcapgw.ports_conf(f"198.18.1.1/24, {GW_IN6}/64", f"198.19.0.1/24, {GW_A6}/64") + f"""
[tunnel six]
local = {GW_A6}
remote = {GW_B6}
local-ts = {GW_IN6[:-1]}/64
remote-ts = 2001:db8:18:2::/64
cipher = aes128-gcm
out-spi = 0x1001
out-key = 0x{pcapgw.KEY_AB.hex()}
in-spi = 0x2001
in-key = 0x{pcapgw.KEY_BA.hex()}
"""


def ns(src=HOST6, dst=SNM_GW, target=GW_IN6, hlim=255, opts=True):
    p = IPv6(src=src, dst=dst, hlim=hlim) / ICMPv6ND_NS(tgt=target)
    if opts:
        p /= ICMPv6NDOptSrcLLAddr(lladdr=MAC_HOST_A)
    return p


def frame(p, dst="33:33:ff:00:00:01"):
    return Ether(src=MAC_HOST_A, dst=dst) / p


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    bad_sum = ns()
    bad_sum[ICMPv6ND_NS].cksum = 0x1234
    zero_opt = IPv6(src=HOST6, dst=SNM_GW, hlim=255) / ICMPv6ND_NS(tgt=GW_IN6) / \
        Raw(bytes([1, 0, 0, 0, 0, 0, 0, 0]))             # option length 0
    inside = [
        frame(ns()),                                        # answered
        frame(ns(src="::", dst=SNM_GW, opts=False)),        # DAD: answered to ff02::1
        frame(ns(hlim=64)),                                 # not from the link
        frame(bad_sum),
        frame(ns(target="2001:db8:18:1::99")),              # not ours
        frame(zero_opt),
        frame(IPv6(src=HOST6, dst="ff02::2") / ICMPv6ND_RS(), dst="33:33:00:00:00:02"),
        # to the tunnel: the peer gateway's MAC is not known yet
        Ether(src=MAC_HOST_A, dst=MAC_IN) /
        IPv6(src=HOST6, dst="2001:db8:18:2::2", hlim=64) / UDP(sport=1, dport=2) / Raw(b"x" * 30),
    ]
    state = pcapgw.run(str(tmp_path_factory.mktemp("nd")), inside,
                       [Ether(src="02:00:00:00:0b:01", dst=MAC_OUT) / IPv6(src=GW_B6, dst=GW_A6) /
                        UDP(sport=9, dport=9)], conf=CONF,
                       settle=lambda gw: pcapgw.lab.wait_for(
                           lambda: gw.ctl("show", "counters")["arp_out"] >= 3, 10,
                           "the answers and the solicitation"))
    return state


def advertisements(run):
    return [p for p in run["out0"] if ICMPv6ND_NA in p]


def test_solicitation_answered_as_a_router(run):
    na = [p for p in advertisements(run) if p[IPv6].dst == HOST6]
    assert len(na) == 1
    p = na[0]
    assert p[Ether].src == MAC_IN and p[Ether].dst == MAC_HOST_A
    assert p[IPv6].src == GW_IN6 and p[IPv6].hlim == 255
    assert p[ICMPv6ND_NA].tgt == GW_IN6
    assert (p[ICMPv6ND_NA].R, p[ICMPv6ND_NA].S, p[ICMPv6ND_NA].O) == (1, 1, 1)
    assert p[ICMPv6NDOptDstLLAddr].lladdr == MAC_IN
    want = p[ICMPv6ND_NA].cksum
    del p[ICMPv6ND_NA].cksum
    assert Ether(bytes(p))[ICMPv6ND_NA].cksum == want       # scapy recomputes it


def test_dad_answered_to_all_nodes(run):
    na = [p for p in advertisements(run) if p[IPv6].dst == "ff02::1"]
    assert len(na) == 1 and na[0][Ether].dst == "33:33:00:00:00:01"
    assert na[0][ICMPv6ND_NA].S == 0


def test_next_hop_solicited(run):
    sol = [p for p in run["out1"] if ICMPv6ND_NS in p]
    assert len(sol) == 1
    p = sol[0]
    assert p[Ether].dst == "33:33:ff:00:00:02" and p[IPv6].dst == "ff02::1:ff00:2"
    assert p[IPv6].src == GW_A6 and p[ICMPv6ND_NS].tgt == GW_B6
    assert p[ICMPv6NDOptSrcLLAddr].lladdr == MAC_OUT


def test_bad_nd_counted(run):
    drops = {k: v for k, v in run["counters"]["drops"].items() if v}
    # hop limit, checksum, foreign target, zero-length option; the RS is not
    # forwarded; the UDP to us.  The tunnel packet is held while its
    # neighbour is solicited (before the queue: dropped as no-neighbour).
    assert drops == {"bad-nd": 4, "to-self": 1, "not-esp": 1}, drops
    assert run["counters"]["neigh_held"] == 1 and run["counters"]["neigh_queued"] == 1
