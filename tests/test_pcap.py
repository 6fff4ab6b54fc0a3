# SPDX-License-Identifier: BSD-3-Clause
"""pcap-driven ESP tests: scapy is the independent ESP implementation.

scapy writes cleartext and ESP packets into pcap files; the real
dpvpn-dataplane, configured by the real dpvpnd from configs/lab-a.conf, reads
them through net_pcap ports and writes what it sends into other pcap files;
scapy then decrypts every ESP packet it sent with the configured keys and
compares every packet with the original.  Hostile packets must show up in
the right dpvpnctl counters.
"""
import pytest
from scapy.all import ICMP, IP, UDP, Ether, Raw
from scapy.layers.ipsec import ESP

import pcapgw
from pcapgw import (GW_A, GW_B, HOST_A, HOST_B, KEY_AB, KEY_BA, MAC_GW_B, MAC_HOST_A, MAC_IN,
                    MAC_OUT, forwarded, inner, sa)

pytestmark = pytest.mark.tunnel

SIZES = [28, 29, 30, 31, 60, 100, 333, 512, 1000, 1400]


def build_inputs():
    """Returns (clear, back, inside frames, outside frames, expected drops)."""
    clear = [inner(i, SIZES[i % len(SIZES)]) for i in range(20)]
    inside = [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in clear]
    no_policy = Ether(src=MAC_HOST_A, dst=MAC_IN) / inner(99, 60, dst="203.0.113.5")
    bad_sum = Ether(src=MAC_HOST_A, dst=MAC_IN) / IP(bytes(inner(98, 60)))
    bad_sum[IP].chksum ^= 0x5555
    to_self = Ether(src=MAC_HOST_A, dst=MAC_IN) / inner(97, 60, dst="198.18.1.1")
    last_hop = Ether(src=MAC_HOST_A, dst=MAC_IN) / inner(96, 60)
    last_hop[IP].ttl = 1
    inside += [no_policy, bad_sum, to_self, Ether(bytes(last_hop))]

    peer = sa(0x2001, KEY_BA, GW_B, GW_A)
    back = [inner(i, SIZES[-1 - i % len(SIZES)], src=HOST_B, dst=HOST_A) for i in range(15)]
    esp = [peer.encrypt(p, seq_num=i + 1) for i, p in enumerate(back)]
    outside = [Ether(src=MAC_GW_B, dst=MAC_OUT) / e for e in esp]
    tampered = IP(bytes(peer.encrypt(inner(50, 200, HOST_B, HOST_A), seq_num=100)))
    raw = bytearray(bytes(tampered))
    raw[-1] ^= 0x01                                   # flip an ICV bit
    replayed = esp[3]                                 # seq 4 again
    unknown = sa(0x3003, KEY_BA, GW_B, GW_A).encrypt(inner(51, 100, HOST_B, HOST_A), seq_num=1)
    trunc = IP(bytes(peer.encrypt(inner(52, 300, HOST_B, HOST_A), seq_num=101)))
    short = IP(src=GW_B, dst=GW_A, proto=50) / Raw(bytes(trunc[IP].payload)[:20])
    not_esp = IP(src=GW_B, dst=GW_A) / UDP(sport=1, dport=2) / Raw(b"x" * 20)
    outside += [Ether(src=MAC_GW_B, dst=MAC_OUT) / p for p in
                (IP(bytes(raw)), replayed, unknown, short, not_esp)]
    expect = {"bad-icv": 1, "replay": 1, "unknown-spi": 1, "short": 1, "not-esp": 1,
              "no-policy": 1, "bad-ipv4": 1, "to-self": 1, "ttl-expired": 1}
    return clear, back, inside, outside, expect


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    clear, back, inside, outside, expect = build_inputs()
    state = pcapgw.run(str(tmp_path_factory.mktemp("pcap")), inside, outside)
    state.update(clear=clear, back=back, expect=expect)
    return state


def test_port_macs_as_assumed(run):
    assert [p["mac"] for p in run["ports"]] == [MAC_IN, MAC_OUT]


def test_every_esp_packet_decrypts_to_the_original(run):
    ours = sa(0x1001, KEY_AB, GW_A, GW_B)
    out = [p for p in run["out1"] if p.haslayer(ESP)]
    assert len(out) == len(run["clear"]) == len(run["out1"])
    for n, (pkt, orig) in enumerate(zip(out, run["clear"]), start=1):
        assert pkt[Ether].dst == MAC_GW_B and pkt[Ether].src == MAC_OUT
        assert pkt[IP].src == GW_A and pkt[IP].dst == GW_B and pkt[IP].proto == 50
        assert pkt[ESP].spi == 0x1001 and pkt[ESP].seq == n
        plain = ours.decrypt(IP(bytes(pkt[IP])))     # raises on a bad ICV
        assert bytes(plain) == forwarded(orig)


def test_scapy_esp_decrypted_by_dpvpn(run):
    # the last-hop packet's ICMP Time Exceeded goes back out of the inside port too
    errors = [p for p in run["out0"] if p.haslayer(ICMP)]
    assert [(p[ICMP].type, p[IP].src) for p in errors] == [(11, "198.18.1.1")]
    out = [p for p in run["out0"] if not p.haslayer(ICMP)]
    assert len(out) == len(run["back"])
    for pkt, orig in zip(out, run["back"]):
        assert pkt[Ether].dst == MAC_HOST_A and pkt[Ether].src == MAC_IN
        assert bytes(pkt[IP]) == forwarded(orig)


def test_hostile_packets_counted_by_reason(run):
    c = run["counters"]
    assert c["rx_packets"] == run["total"]
    assert c["encrypted"] == len(run["clear"])
    assert c["decrypted"] == len(run["back"])
    for reason, n in run["expect"].items():
        assert c["drops"][reason] == n, reason
    others = {k: v for k, v in c["drops"].items() if k not in run["expect"] and v}
    assert not others
    # received = sent + counted drops (sent: the ICMP errors the gateway made too)
    assert c["icmp_out"] == 1
    assert c["rx_packets"] == c["tx_packets"] - c["icmp_out"] + sum(c["drops"].values())


def test_sa_counters(run):
    by = {(s["dir"], s["spi"]): s for s in run["sas"]}
    out, inn = by[("out", "0x00001001")], by[("in", "0x00002001")]
    assert out["packets"] == len(run["clear"]) and out["seq"] == len(run["clear"])
    assert out["bytes"] == sum(len(p) for p in run["clear"])
    assert inn["packets"] == len(run["back"])
    assert inn["drops"]["bad-icv"] == 1 and inn["drops"]["replay"] == 1
    assert inn["seq"] == len(run["back"])
