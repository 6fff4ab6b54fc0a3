# SPDX-License-Identifier: BSD-3-Clause
"""Issue 13, items 12 and 13: what an independent ESP peer may send.  One run of the
real dataplane on net_pcap ports (gateway A, configured by the real dpvpnd),
scapy as the peer (tests/esp_oracle.py):

    scapy --in0.pcap--> [0 inside  dpvpn A  outside 1] <--in1.pcap-- scapy
          <-out0.pcap--                                 --out1.pcap->

- TFC padding (RFC 4303 2.7): the peer seals inner packet + N extra bytes
  for every cipher, IPv4 and IPv6 inner, plain ESP and NAT-T; exactly the
  inner packet must come out of the inside port.  An inner length larger
  than the payload is still bad-inner.
- ESP dummy packets (next header 59, RFC 4303 2.6): counted as esp-dummy,
  not as an error.
- A non-ESN SA whose sequence numbers ran out shows 2^32 - 1 as its last
  number, and its drops per SA as seq-exhausted, as the global counter does.
"""
import pytest
from scapy.all import IP, Ether, Raw
from scapy.layers.inet6 import IPv6
from scapy.layers.ipsec import ESP

import pcapgw
from esp_oracle import CIPHERS
from pcapgw import MAC_GW_B, MAC_HOST_A, MAC_IN, MAC_OUT
from test_matrix import BASE, Tunnel, forwarded_any

pytestmark = pytest.mark.operator

TFC = (1, 37, 200)                              # extra bytes after each inner packet
NEAR = 0xfffffffe                               # two numbers before the end of 2^32


def seal_raw(sa, plain, nh, seq):
    """Any plaintext (bytes) as the ESP payload with next header nh (no ESN)."""
    p = sa._scapy().encrypt(IP(src="192.0.2.1", dst="192.0.2.2", proto=nh) / Raw(plain),
                            seq_num=seq)
    return sa.outer(bytes(p[ESP]))


def build():
    tfc = []
    k = 1
    for fam in ((4, 4), (6, 6)):
        for cipher in CIPHERS:
            for udp in (False, True):
                tfc.append(Tunnel(k, cipher, udp, False, 0, fam))
                k += 1
    exhaust = Tunnel(k, "aes128-gcm", False, False, NEAR)
    conf = BASE + "".join(t.conf() for t in tfc + [exhaust])

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
    clear = [exhaust.clear(i) for i in range(3)]
    return dict(conf=conf, tfc=tfc, exhaust=exhaust, want_in=want_in, outside=outside,
                clear=clear)


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
    assert drops == {"bad-inner": 2, "esp-dummy": 3, "seq-exhausted": 2}
    assert c["decrypted"] == len(run["want_in"])
    assert c["rx_packets"] == run["total"]


def test_dummy_packets_are_no_sa_error(run):
    """Dummies are not counted as any SA's drops; the two bad-inner packets are."""
    tfc = run["tfc"]
    bad = {tfc[0].inb.spi, tfc[len(CIPHERS) * 2 + 3].inb.spi}
    per_sa = {s["spi"]: s for s in run["sas"] if s["dir"] == "in"}
    for t in tfc:
        s = per_sa[f"{t.inb.spi:#010x}"]
        assert s["drops"]["other"] == (t.inb.spi in bad), s


def test_exhausted_sequence_shown_honestly(run):
    s = next(s for s in run["sas"] if s["spi"] == f"{run['exhaust'].out.spi:#010x}")
    assert s["seq"] == 0xffffffff                   # the last number sent
    assert s["packets"] == 1
    assert s["drops"]["seq-exhausted"] == 2 and s["drops"]["other"] == 0
