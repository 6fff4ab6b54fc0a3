# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, items 12 and 13: what an independent ESP peer may send, and a
router's manners.  One run of the real dataplane on net_pcap ports (gateway
A, configured by the real dpvpnd), scapy as the peer (tests/helpers/esp_oracle.py):

    scapy --in0.pcap--> [0 inside  dpvpn A  outside 1] <--in1.pcap-- scapy
          <-out0.pcap--                                 --out1.pcap->

- TFC padding (RFC 4303 2.7): the peer seals inner packet + N extra bytes
  for every cipher, IPv4 and IPv6 inner, plain ESP and NAT-T; exactly the
  inner packet must come out of the inside port.  An inner length larger
  than the payload is still bad-inner.
- ESP dummy packets (next header 59, RFC 4303 2.6): counted as esp-dummy,
  not as an error.
- Time Exceeded (RFC 1812 5.3.1, RFC 4443 3.3): TTL / hop limit 1 from the
  inside host comes back as ICMP(v6) Time Exceeded from the inside port's
  address; from the tunnel it goes back into the tunnel, to the inner source.
- A non-ESN SA whose sequence numbers ran out shows 2^32 - 1 as its last
  number, and its drops per SA as seq-exhausted, as the global counter does.

And traceroute through the dual-stack lab (lab.py, ipv6=True), scapy probing
from host A: gateway A, gateway B (answering into the tunnel), host B.
"""
import json

import pytest
from scapy.all import ICMP, IP, UDP, Ether, IPerror, Raw
from scapy.layers.inet6 import ICMPv6TimeExceeded, IPv6
from scapy.layers.ipsec import ESP

import lab
import pcapgw
from esp_oracle import CIPHERS, SA, tunnel_conf
from pcapgw import GW_A, GW_B, HOST_A, MAC_GW_B, MAC_HOST_A, MAC_IN, MAC_OUT, inner
from test_matrix import BASE, GW_A6, GW_B6, HOST_A6, Tunnel, forwarded_any, inner6

pytestmark = pytest.mark.operator

IN4, IN6 = "198.18.1.1", "2001:db8:18:1::1"     # the inside port's addresses
FAR4, FAR6 = "198.18.2.2", "2001:db8:18:2::2"   # a host behind the peer
TFC = (1, 37, 200)                              # extra bytes after each inner packet
NEAR = 0xfffffffe                               # two numbers before the end of 2^32


def seal_raw(sa, plain, nh, seq):
    """Any plaintext (bytes) as the ESP payload with next header nh (no ESN)."""
    p = sa._scapy().encrypt(IP(src="192.0.2.1", dst="192.0.2.2", proto=nh) / Raw(plain),
                            seq_num=seq)
    return sa.outer(bytes(p[ESP]))


def ttl_tunnels():
    """Tunnels whose local selector holds the inside port's address."""
    v4 = (SA("aes128-gcm", 0x31001, GW_A, GW_B), SA("aes128-gcm", 0x32001, GW_B, GW_A))
    v6 = (SA("aes256-cbc-sha256", 0x31002, GW_A6, GW_B6),
          SA("aes256-cbc-sha256", 0x32002, GW_B6, GW_A6))
    conf = (tunnel_conf("ttl4", *v4, "198.18.1.0/24", "198.18.2.0/24") +
            tunnel_conf("ttl6", *v6, "2001:db8:18:1::/64", "2001:db8:18:2::/64"))
    return v4, v6, conf


def build():
    tfc = []
    k = 1
    for fam in ((4, 4), (6, 6)):
        for cipher in CIPHERS:
            for udp in (False, True):
                tfc.append(Tunnel(k, cipher, udp, False, 0, fam))
                k += 1
    exhaust = Tunnel(k, "aes128-gcm", False, False, NEAR)
    v4, v6, ttl_conf = ttl_tunnels()
    conf = BASE + "".join(t.conf() for t in tfc + [exhaust]) + ttl_conf

    outside, want_in = [], []
    for t in tfc:
        for n, extra in enumerate(TFC):
            pkt = t.back(n)
            pad = bytes((0xa5 + i) & 0xff for i in range(extra))
            outside.append(seal_raw(t.inb, bytes(pkt) + pad, 4 if t.fam[0] == 4 else 41, n + 1))
            want_in.append(forwarded_any(pkt))
    # an inner length larger than the payload: still bad-inner
    for t, n in ((tfc[0], 10), (tfc[len(CIPHERS) * 2 + 3], 10)):
        whole = bytes(t.back(n))
        outside.append(seal_raw(t.inb, whole[:-5], 4 if t.fam[0] == 4 else 41, n + 1))
    # ESP dummy packets (RFC 4303 2.6), valid ICV: one AEAD, one CBC+HMAC, one NAT-T
    for t in (tfc[0], tfc[4], tfc[3]):
        outside.append(seal_raw(t.inb, bytes(range(40)), 59, 20))
    # from the tunnel, TTL / hop limit 1: Time Exceeded back into the tunnel
    last4 = IP(src=FAR4, dst=HOST_A, ttl=1, id=77) / UDP(sport=33434, dport=33435) / Raw(b"x" * 12)
    last6 = IPv6(src=FAR6, dst=HOST_A6, hlim=1) / UDP(sport=33434, dport=33436) / Raw(b"y" * 12)
    outside += [v4[1].seal(last4, 1), v6[1].seal(last6, 1)]

    # from the inside host, TTL / hop limit 1: Time Exceeded out of the inside port
    first4 = IP(src=HOST_A, dst=FAR4, ttl=1, id=78) / UDP(sport=33434, dport=33437)
    first6 = IPv6(src=HOST_A6, dst=FAR6, hlim=1) / UDP(sport=33434, dport=33438)
    clear = [exhaust.clear(i) for i in range(3)] + [first4, first6]
    return dict(conf=conf, tfc=tfc, exhaust=exhaust, v4=v4, v6=v6, want_in=want_in,
                outside=outside, clear=clear, last4=last4, last6=last6, first4=first4,
                first6=first6)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    b = build()
    state = pcapgw.run(str(tmp_path_factory.mktemp("op-esp")),
                       [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in b["clear"]],
                       [Ether(src=MAC_GW_B, dst=MAC_OUT) / (IP(p) if p[0] >> 4 == 4 else IPv6(p))
                        for p in b["outside"]],
                       conf=b["conf"])
    state.update(b)
    return state


def test_tfc_padding_trimmed_for_every_cipher(run):
    """Every TFC-padded packet comes out as exactly its inner packet."""
    got = [bytes(p.payload) for p in run["out0"]]
    missing = [f"{t.label()} tfc={extra}" for t in run["tfc"] for n, extra in enumerate(TFC)
               if forwarded_any(t.back(n)) not in got]
    assert not missing, missing
    per_sa = {s["spi"]: s for s in run["sas"] if s["dir"] == "in"}
    for t in run["tfc"]:
        s = per_sa[f"{t.inb.spi:#010x}"]
        # packets and bytes of the inner packets, the padding not counted
        assert s["packets"] == len(TFC), t.label()
        assert s["bytes"] == sum(len(t.back(n)) for n in range(len(TFC))), t.label()


def test_counters_name_every_drop(run):
    c = run["counters"]
    drops = {k: v for k, v in c["drops"].items() if v}
    assert drops == {"bad-inner": 2, "esp-dummy": 3, "ttl-expired": 4, "seq-exhausted": 2}
    # and the two TTL-1 probes from the tunnel: decrypted, then not forwarded
    assert c["decrypted"] == len(run["want_in"]) + 2
    assert c["icmp_out"] == 4 and c["icmp_limited"] == 0
    assert c["rx_packets"] == run["total"]


def test_dummy_packets_are_no_sa_error(run):
    """Dummies are not counted as any SA's drops; the two bad-inner packets are."""
    tfc = run["tfc"]
    bad = {tfc[0].inb.spi, tfc[len(CIPHERS) * 2 + 3].inb.spi}
    per_sa = {s["spi"]: s for s in run["sas"] if s["dir"] == "in"}
    for t in tfc:
        s = per_sa[f"{t.inb.spi:#010x}"]
        assert s["drops"]["other"] == (t.inb.spi in bad), s


def test_time_exceeded_from_inside(run):
    """traceroute's first hop: the gateway's inside address answers."""
    icmp = [p for p in run["out0"] if p.haslayer(ICMP) or p.haslayer(ICMPv6TimeExceeded)]
    assert len(icmp) == 2, [p.summary() for p in run["out0"]]
    by_v = {p[Ether].type: p for p in icmp}
    p4 = by_v[0x0800]
    assert p4[Ether].dst == MAC_HOST_A and p4[Ether].src == MAC_IN
    assert p4[IP].src == IN4 and p4[IP].dst == HOST_A
    assert p4[ICMP].type == 11 and p4[ICMP].code == 0
    q = p4[IPerror]
    assert q.src == HOST_A and q.dst == FAR4 and q.id == 78 and q.ttl == 1
    p6 = by_v[0x86dd]
    assert p6[IPv6].src == IN6 and p6[IPv6].dst == HOST_A6
    assert p6[ICMPv6TimeExceeded].type == 3 and p6[ICMPv6TimeExceeded].code == 0
    assert bytes(p6[ICMPv6TimeExceeded].payload) == bytes(run["first6"])


def test_time_exceeded_into_the_tunnel(run):
    """Expired after decryption: the error goes back through the tunnel."""
    got = {}
    for p in run["out1"]:
        raw = bytes(p.payload)
        for name, out in (("v4", run["v4"][0]), ("v6", run["v6"][0])):
            try:
                got[name] = out.open(raw, 1)
            except (AssertionError, ValueError):
                pass
    assert set(got) == {"v4", "v6"}, [p.summary() for p in run["out1"]]
    e4 = IP(got["v4"])
    assert e4.src == IN4 and e4.dst == FAR4 and e4[ICMP].type == 11 and e4[ICMP].code == 0
    assert e4[IPerror].src == FAR4 and e4[IPerror].id == 77 and e4[IPerror].ttl == 1
    e6 = IPv6(got["v6"])
    assert e6.src == IN6 and e6.dst == FAR6
    assert e6[ICMPv6TimeExceeded].type == 3 and e6[ICMPv6TimeExceeded].code == 0
    assert bytes(e6[ICMPv6TimeExceeded].payload) == bytes(run["last6"])


def test_exhausted_sequence_shown_honestly(run):
    s = next(s for s in run["sas"] if s["spi"] == f"{run['exhaust'].out.spi:#010x}")
    assert s["seq"] == 0xffffffff                   # the last number sent
    assert s["packets"] == 1
    assert s["drops"]["seq-exhausted"] == 2 and s["drops"]["other"] == 0


# traceroute from host A, scapy in its namespace: one JSON line per probe
TRACE = r"""
import json
from scapy.all import IP, UDP, IPv6, conf, sr1
conf.verb = 0
for dst in ("198.18.2.2", "2001:db8:18:2::2"):
    for hop in (1, 2, 3):
        l3 = IPv6(dst=dst, hlim=hop) if ":" in dst else IP(dst=dst, ttl=hop)
        r = sr1(l3 / UDP(sport=41000 + hop, dport=33434 + hop), timeout=2, retry=2)
        icmp = r.payload if r is not None else None
        quote = icmp.payload if icmp is not None else None
        print(json.dumps({"dst": dst, "hop": hop, "src": r.src if r else None,
                          "type": icmp.type if icmp else None,
                          "code": icmp.code if icmp else None,
                          "quoted": bytes(quote)[:48].hex() if quote else None}))
"""


@pytest.fixture(scope="module")
def lab6():
    with lab.Lab(ipv6=True) as net:
        net.ping(count=2)                               # resolve all along the path
        net.ping(count=2, dst=FAR6)
        yield net


def test_traceroute_through_the_tunnel(lab6):
    r = lab6.ns(lab6.ns_a, "/usr/bin/python3", "-c", TRACE, timeout=90)
    hops = [json.loads(line) for line in r.stdout.splitlines()]
    got = {(h["dst"], h["hop"]): (h["src"], h["type"], h["code"]) for h in hops}
    assert got == {
        (FAR4, 1): (IN4, 11, 0), (FAR4, 2): ("198.18.2.1", 11, 0), (FAR4, 3): (FAR4, 3, 3),
        (FAR6, 1): (IN6, 3, 0), (FAR6, 2): ("2001:db8:18:2::1", 3, 0), (FAR6, 3): (FAR6, 1, 4),
    }, hops
    for h in hops:      # each error quotes the probe: to host B, its own UDP ports
        q = bytes.fromhex(h["quoted"])
        if ":" in h["dst"]:
            assert IPv6(q).dst == FAR6 and IPv6(q)[UDP].dport == 33434 + h["hop"]
        else:
            assert IP(q).dst == FAR4 and IP(q)[UDP].dport == 33434 + h["hop"]
    for gw in lab6.gws:
        c = gw.ctl("show", "counters")
        assert c["drops"]["ttl-expired"] == 2 and c["icmp_out"] == 2, c
