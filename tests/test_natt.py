# SPDX-License-Identifier: BSD-3-Clause
"""NAT traversal (RFC 3948) against scapy: ESP in UDP 4500 both ways, and the
non-ESP packets a NAT-T port also receives (keepalives, IKE) counted, not
decrypted.  Same set-up as test_pcap.py, with `encap = udp` on the tunnel."""
import pytest
from scapy.all import IP, UDP, Ether, Raw
from scapy.layers.ipsec import ESP

import pcapgw
from pcapgw import (GW_A, GW_B, HOST_A, HOST_B, KEY_AB, KEY_BA, MAC_GW_B, MAC_HOST_A, MAC_IN,
                    MAC_OUT, forwarded, inner, sa)

pytestmark = pytest.mark.esp


def natt_sa(spi, key, src, dst):
    return sa(spi, key, src, dst, nat_t_header=UDP(sport=4500, dport=4500))


def udp_fixed(p):
    """scapy 2.5 leaves the NAT-T UDP length at 8: write the real one (the
    UDP checksum is 0, so nothing else changes)."""
    raw = bytearray(bytes(p))
    ihl = (raw[0] & 0x0f) * 4
    raw[ihl + 4:ihl + 6] = (len(raw) - ihl).to_bytes(2, "big")
    return IP(bytes(raw))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    clear = [inner(i, 100 + 37 * i) for i in range(8)]
    peer = natt_sa(0x2001, KEY_BA, GW_B, GW_A)
    back = [inner(i, 60 + 50 * i, src=HOST_B, dst=HOST_A) for i in range(6)]
    esp = [udp_fixed(peer.encrypt(p, seq_num=i + 1)) for i, p in enumerate(back)]
    hostile = [
        IP(src=GW_B, dst=GW_A) / UDP(sport=4500, dport=4500) / Raw(b"\xff"),   # keepalive
        IP(src=GW_B, dst=GW_A) / UDP(sport=4500, dport=4500) / Raw(bytes(4) + b"IKE..." * 8),
        sa(0x2001, KEY_BA, GW_B, GW_A).encrypt(inner(40, 80, HOST_B, HOST_A), seq_num=50),
        IP(src=GW_B, dst=GW_A) / UDP(sport=4500, dport=5555) / Raw(b"x" * 40),  # other port
    ]
    state = pcapgw.run(str(tmp_path_factory.mktemp("natt")),
                       [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in clear],
                       [Ether(src=MAC_GW_B, dst=MAC_OUT) / IP(bytes(p)) for p in esp + hostile],
                       tunnel_extra="encap = udp\n")
    state.update(clear=clear, back=back)
    return state


def test_outbound_is_esp_in_udp_4500(run):
    ours = natt_sa(0x1001, KEY_AB, GW_A, GW_B)
    assert len(run["out1"]) == len(run["clear"])
    for n, (pkt, orig) in enumerate(zip(run["out1"], run["clear"]), start=1):
        ip = pkt[IP]
        assert ip.proto == 17 and ip[UDP].sport == 4500 and ip[UDP].dport == 4500
        assert ip[UDP].len == ip.len - 20 and ip[UDP].chksum == 0
        esp = ESP(bytes(ip[UDP].payload))
        assert esp.spi == 0x1001 and esp.seq == n
        assert bytes(ours.decrypt(IP(bytes(ip)))) == forwarded(orig)


def test_inbound_esp_in_udp_decrypted(run):
    assert [bytes(p[IP]) for p in run["out0"]] == [forwarded(p) for p in run["back"]]


def test_non_esp_on_the_port_counted(run):
    drops = run["counters"]["drops"]
    assert drops["natt-keepalive"] == 1
    assert drops["ike"] == 1
    assert drops["encap-mismatch"] == 1
    assert drops["not-esp"] == 1
    assert sum(drops.values()) == 4


def test_show_sa_says_udp(run):
    assert {s["encap"] for s in run["sas"]} == {"udp 4500->4500"}
