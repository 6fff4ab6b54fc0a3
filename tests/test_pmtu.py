# SPDX-License-Identifier: BSD-3-Clause
"""Packets too big for the tunnel, and MSS clamping, against scapy (net_pcap
ports, as test_pcap.py).  The outside port's MTU is 1500, so an AES-128-GCM
tunnel in IPv4 carries inner packets of at most 1446 bytes (20 outer + 8 ESP
+ 8 IV + 1446 + 2 trailer + 16 ICV = 1500):

  - IPv4 with DF set over that: ICMP "fragmentation needed", MTU 1446,
    quoting the packet, from the inside port's address; rate-limited;
  - IPv6 over that: ICMPv6 "packet too big", MTU 1446;
  - IPv4 without DF: fragmented before encryption (RFC 4459), each fragment
    its own ESP packet, scapy reassembles the original;
  - a tunnel with `fragment = outer`: encrypted whole, the outer packet is
    fragmented; scapy reassembles it, then decrypts;
  - TCP SYNs either way get MSS 1406 (1446 - 40), checksum still right.
"""
import pytest
from scapy.all import (IP, TCP, UDP, Ether, ICMP, Raw, defragment, rdpcap)
from scapy.layers.inet6 import IPv6, ICMPv6PacketTooBig

import pcapgw
from esp_oracle import SA, esp_of, tunnel_conf
from pcapgw import (GW_A, GW_B, HOST_A, HOST_B, MAC_GW_B, MAC_HOST_A, MAC_IN, MAC_OUT, forwarded,
                    ports_conf)

pytestmark = pytest.mark.scale

MTU = 1446
HOST_A6, HOST_B6 = "2001:db8:18:1::2", "2001:db8:18:2::2"
FAR = "198.18.3.2"          # behind the outer-fragmenting tunnel


def tunnels():
    t = {"v4": (SA("aes128-gcm", 0x1001, GW_A, GW_B), SA("aes128-gcm", 0x2001, GW_B, GW_A)),
         "v6": (SA("aes128-gcm", 0x1002, GW_A, GW_B), SA("aes128-gcm", 0x2002, GW_B, GW_A)),
         "outer": (SA("aes128-gcm", 0x1003, GW_A, GW_B), SA("aes128-gcm", 0x2003, GW_B, GW_A))}
    ts = {"v4": ("198.18.1.0/24", "198.18.2.0/24"), "v6": ("2001:db8:18:1::/64",
                                                          "2001:db8:18:2::/64"),
          "outer": ("198.18.1.0/24", "198.18.3.0/24")}
    conf = ports_conf(inside="198.18.1.1/24, 2001:db8:18:1::1/64") + f"""
[neighbor host-a6]
port = inside
address = {HOST_A6}
mac = {MAC_HOST_A}
"""
    for name, (out, inb) in t.items():
        conf += tunnel_conf(name, out, inb, *ts[name],
                            "fragment = outer\n" if name == "outer" else "")
    return t, conf


def udp4(i, size, dst=HOST_B, df=True):
    return IP(src=HOST_A, dst=dst, id=100 + i, flags="DF" if df else 0, ttl=64) / \
        UDP(sport=1000 + i, dport=9) / Raw(bytes((i + k) & 0xff for k in range(size - 28)))


def syn(src, dst, mss, flags="S"):
    return IP(src=src, dst=dst, ttl=64) / TCP(sport=40000, dport=80, flags=flags,
                                              options=[("MSS", mss), ("NOP", None),
                                                       ("WScale", 7)])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    t, conf = tunnels()
    big_df = udp4(0, 1460)                         # DF set, over 1446
    small_df = udp4(1, 1446)                       # exactly fits
    big_nodf = udp4(2, 1480, df=False)             # pre-fragmented
    big_outer = udp4(3, 1480, dst=FAR, df=False)   # outer fragments
    flood = [udp4(10 + i, 1460) for i in range(15)]  # rate limit
    big6 = IPv6(src=HOST_A6, dst=HOST_B6, hlim=64) / UDP(sport=5, dport=9) / Raw(b"6" * 1432)
    syn_out = syn(HOST_A, HOST_B, 1460)
    inside = [big_df, small_df, big_nodf, big_outer, big6, syn_out] + flood
    synack_in = syn(HOST_B, HOST_A, 1460, flags="SA")
    outside = [t["v4"][1].seal(synack_in, 1)]
    state = pcapgw.run(str(tmp_path_factory.mktemp("pmtu")),
                       [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in inside],
                       [Ether(src=MAC_GW_B, dst=MAC_OUT) / IP(p) for p in outside], conf=conf)
    state.update(t=t, big_df=big_df, small_df=small_df, big_nodf=big_nodf,
                 big_outer=big_outer, big6=big6, syn_out=syn_out, synack_in=synack_in,
                 flood=flood)
    return state


def esp_by_spi(run, spi):
    out = []
    for p in run["out1"]:
        raw = bytes(p[IP])
        if IP(raw).flags.MF or IP(raw).frag:
            continue
        if int.from_bytes(esp_of(raw)[:4], "big") == spi:
            out.append(raw)
    return out


def test_icmp_fragmentation_needed(run):
    icmps = [p for p in run["out0"] if ICMP in p and p[ICMP].type == 3]
    assert icmps, "no ICMP"
    p = icmps[0]
    assert p[IP].src == "198.18.1.1" and p[IP].dst == HOST_A
    assert p[ICMP].code == 4 and p[ICMP].nexthopmtu == MTU
    want = p[ICMP].chksum
    del p[ICMP].chksum
    assert IP(bytes(p[IP]))[ICMP].chksum == want
    quoted = bytes(p[ICMP].payload)
    assert quoted == bytes(run["big_df"])[:28]       # header + 8 bytes


def test_icmp_rate_limited(run):
    c = run["counters"]
    icmps = [p for p in run["out0"] if ICMP in p and p[ICMP].type == 3]
    assert len(icmps) == c["icmp_out"] - 1          # one is the ICMPv6 below
    assert c["icmp_out"] + c["icmp_limited"] == 17  # 16 IPv4 + 1 IPv6 too big
    assert c["icmp_limited"] >= 5 and c["drops"]["pmtu"] == 17


def test_icmpv6_packet_too_big(run):
    ptb = [p for p in run["out0"] if ICMPv6PacketTooBig in p]
    assert len(ptb) == 1
    p = ptb[0]
    assert p[IPv6].src == "2001:db8:18:1::1" and p[IPv6].dst == HOST_A6
    assert p[ICMPv6PacketTooBig].mtu == MTU
    assert len(p[IPv6]) == 1280                     # as much as fits the minimum MTU
    want = p[ICMPv6PacketTooBig].cksum
    del p[ICMPv6PacketTooBig].cksum
    assert IPv6(bytes(p[IPv6]))[ICMPv6PacketTooBig].cksum == want


def test_the_packet_that_fits_goes_whole(run):
    out, _ = run["t"]["v4"]
    opened = [out.open(r, n + 1) for n, r in enumerate(esp_by_spi(run, out.spi))]
    assert forwarded(run["small_df"]) in opened
    assert max(len(r) for r in esp_by_spi(run, out.spi)) == 1500


def test_prefragmented_before_encryption(run):
    out, _ = run["t"]["v4"]
    frags = [IP(out.open(r, n + 1)) for n, r in enumerate(esp_by_spi(run, out.spi))]
    frags = [f for f in frags if f.id == run["big_nodf"][IP].id]
    assert len(frags) == 2 and all(len(f) <= MTU for f in frags)
    whole = defragment(frags)[0]
    assert bytes(whole[IP].payload) == bytes(run["big_nodf"][IP].payload)
    assert whole[IP].ttl == 63
    assert run["counters"]["fragments"] >= 2


def test_outer_fragmented(run):
    out, _ = run["t"]["outer"]
    frags = [IP(bytes(p[IP])) for p in run["out1"]
             if IP(bytes(p[IP])).flags.MF or IP(bytes(p[IP])).frag]
    assert len(frags) == 2 and all(len(f) <= 1500 for f in frags)
    whole = bytes(defragment(frags)[0])
    assert out.open(whole, 1) == forwarded(run["big_outer"])


def tcp_mss(p):
    return dict(p[TCP].options)["MSS"]


def test_mss_clamped_both_ways(run):
    out, _ = run["t"]["v4"]
    syns = [IP(out.open(r, n + 1)) for n, r in enumerate(esp_by_spi(run, out.spi))]
    syns = [s for s in syns if TCP in s]
    assert len(syns) == 1 and tcp_mss(syns[0]) == MTU - 40
    s = syns[0]
    want = s[TCP].chksum
    del s[TCP].chksum
    assert IP(bytes(s))[TCP].chksum == want
    back = [p for p in run["out0"] if TCP in p]
    assert len(back) == 1 and tcp_mss(back[0]) == MTU - 40
    b = back[0][IP]
    want = b[TCP].chksum
    del b[TCP].chksum
    assert IP(bytes(b))[TCP].chksum == want
    assert run["counters"]["mss_clamped"] == 2
