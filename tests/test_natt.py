# SPDX-License-Identifier: BSD-3-Clause
"""NAT traversal (RFC 3948) against scapy: ESP in UDP 4500 both ways, and the
non-ESP packets a NAT-T port also receives (keepalives, IKE) counted, not
decrypted.  Same set-up as test_pcap.py, with `encap = udp` on the tunnel."""
import os

import pytest
from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap
from scapy.layers.ipsec import ESP, SecurityAssociation

import lab
from test_pcap import (GW_A, GW_B, HOST_A, HOST_B, KEY_AB, KEY_BA, MAC_GW_B, MAC_HOST_A,
                       MAC_IN, MAC_OUT, NEIGHBOURS, forwarded, inner)

pytestmark = pytest.mark.esp


def natt_sa(spi, key, src, dst):
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=key,
                               auth_algo="NULL", tunnel_header=IP(src=src, dst=dst),
                               nat_t_header=UDP(sport=4500, dport=4500))


def udp_fixed(p):
    """scapy 2.5 leaves the NAT-T UDP length at 8: write the real one (the
    UDP checksum is 0, so nothing else changes)."""
    raw = bytearray(bytes(p))
    ihl = (raw[0] & 0x0f) * 4
    raw[ihl + 4:ihl + 6] = (len(raw) - ihl).to_bytes(2, "big")
    return IP(bytes(raw))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("natt"))
    clear = [inner(i, 100 + 37 * i) for i in range(8)]
    peer = natt_sa(0x2001, KEY_BA, GW_B, GW_A)
    back = [inner(i, 60 + 50 * i, src=HOST_B, dst=HOST_A) for i in range(6)]
    esp = [udp_fixed(peer.encrypt(p, seq_num=i + 1)) for i, p in enumerate(back)]
    plain_sa = SecurityAssociation(ESP, spi=0x2001, crypt_algo="AES-GCM", crypt_key=KEY_BA,
                                   auth_algo="NULL", tunnel_header=IP(src=GW_B, dst=GW_A))
    hostile = [
        IP(src=GW_B, dst=GW_A) / UDP(sport=4500, dport=4500) / Raw(b"\xff"),   # keepalive
        IP(src=GW_B, dst=GW_A) / UDP(sport=4500, dport=4500) / Raw(bytes(4) + b"IKE..." * 8),
        plain_sa.encrypt(inner(40, 80, HOST_B, HOST_A), seq_num=50),        # not in UDP
        IP(src=GW_B, dst=GW_A) / UDP(sport=4500, dport=5555) / Raw(b"x" * 40),  # other port
    ]
    wrpcap(f"{d}/in0.pcap", [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in clear])
    wrpcap(f"{d}/in1.pcap", [Ether(src=MAC_GW_B, dst=MAC_OUT) / IP(bytes(p))
                             for p in esp + hostile])
    with open(os.path.join(lab.CONFIGS, "lab-a.conf")) as f:
        conf = f.read().replace("replay-window = 1024", "replay-window = 1024\nencap = udp")
    cfg = os.path.join(d, "natt.conf")
    with open(cfg, "w") as f:
        f.write(conf + NEIGHBOURS)
    vdevs = [f"net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap",
             f"net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap"]
    gw = lab.Gateway("natt", cfg, vdevs, d, ["-l", "0-1"])
    total = len(clear) + len(esp) + len(hostile)
    try:
        gw.start()
        lab.wait_for(lambda: gw.ctl("show", "counters")["rx_packets"] >= total, 20,
                     "every input packet")
        state = {"counters": gw.ctl("show", "counters"), "sas": gw.ctl("show", "sa")["sas"]}
    finally:
        assert gw.stop()["dataplane"] == 0
    state.update(clear=clear, back=back, out0=rdpcap(f"{d}/out0.pcap"),
                 out1=rdpcap(f"{d}/out1.pcap"))
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
