# SPDX-License-Identifier: BSD-3-Clause
"""Extended sequence numbers (RFC 4303 2.2.1, RFC 4106 5) against scapy: the
inbound SA infers the high half across the 2^32 boundary, replays and wrong
high halves are refused, and the outbound SA's ICV covers the high half.
Same set-up as test_pcap.py, with `esn = yes` on the tunnel."""
import os

import pytest
from scapy.all import IP, UDP, Ether, rdpcap, wrpcap
from scapy.layers.ipsec import ESP, SecurityAssociation

import lab
from test_pcap import (GW_A, GW_B, HOST_A, HOST_B, KEY_AB, KEY_BA, MAC_GW_B, MAC_HOST_A,
                       MAC_IN, MAC_OUT, NEIGHBOURS, forwarded, inner)

pytestmark = pytest.mark.esp

# (high, low) halves of what the peer sends: a jump to 2^31 first (a fresh
# window can only move forward: 0xfffffffd as a first packet would read as
# "before the start"), then up to and across 2^32.  No low half of 0: scapy
# takes seq_num=0 as "not given" and uses its own counter.
ACROSS = [(0, 0x80000000), (0, 0xfffffffd), (0, 0xfffffffe), (0, 0xffffffff), (1, 1), (1, 2),
          (1, 3)]


def esn_sa(spi, key, src, dst):
    return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM", crypt_key=key,
                               auth_algo="NULL", tunnel_header=IP(src=src, dst=dst),
                               esn_en=True, esn=0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("esn"))
    peer = esn_sa(0x2001, KEY_BA, GW_B, GW_A)
    back = [inner(i, 80 + 10 * i, src=HOST_B, dst=HOST_A) for i in range(len(ACROSS))]
    esp = [peer.encrypt(p, seq_num=lo, esn_en=True, esn=hi)
           for p, (hi, lo) in zip(back, ACROSS)]
    replayed = esp[2]
    wrong_high = peer.encrypt(inner(50, 90, HOST_B, HOST_A), seq_num=5, esn_en=True, esn=7)
    clear = [inner(i, 120) for i in range(3)]
    wrpcap(f"{d}/in0.pcap", [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in clear])
    # The high half is inferred from the window as it stood before the burst
    # (it moves only after ICVs check out), so the jump to 2^31 must come in a
    # burst of its own: net_pcap hands out 32 packets per burst (DP_BURST),
    # and 31 non-ESP fillers (counted as not-esp) close the first one.
    fillers = [IP(src=GW_B, dst=GW_A) / UDP(sport=9, dport=9) for _ in range(31)]
    wrpcap(f"{d}/in1.pcap", [Ether(src=MAC_GW_B, dst=MAC_OUT) / IP(bytes(p))
                             for p in esp[:1] + fillers + esp[1:] + [replayed, wrong_high]])
    with open(os.path.join(lab.CONFIGS, "lab-a.conf")) as f:
        conf = f.read().replace("replay-window = 1024", "replay-window = 1024\nesn = yes")
    cfg = os.path.join(d, "esn.conf")
    with open(cfg, "w") as f:
        f.write(conf + NEIGHBOURS)
    vdevs = [f"net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap",
             f"net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap"]
    gw = lab.Gateway("esn", cfg, vdevs, d, ["-l", "0-1"])
    total = len(clear) + len(esp) + len(fillers) + 2
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


def test_inbound_across_2_32(run):
    assert [bytes(p[IP]) for p in run["out0"]] == [forwarded(p) for p in run["back"]]
    inbound = [s for s in run["sas"] if s["dir"] == "in"][0]
    assert inbound["seq"] == (1 << 32) + 3 and inbound["esn"] is True


def test_replay_and_wrong_high_half_refused(run):
    drops = run["counters"]["drops"]
    assert drops["replay"] == 1 and drops["bad-icv"] == 1
    assert drops["not-esp"] == 31 and sum(drops.values()) == 33


def test_outbound_icv_covers_the_high_half(run):
    assert len(run["out1"]) == len(run["clear"])
    for pkt, orig in zip(run["out1"], run["clear"]):
        ip = IP(bytes(pkt[IP]))
        assert bytes(esn_sa(0x1001, KEY_AB, GW_A, GW_B).decrypt(ip)) == forwarded(orig)
        plain = SecurityAssociation(ESP, spi=0x1001, crypt_algo="AES-GCM", crypt_key=KEY_AB,
                                    auth_algo="NULL", tunnel_header=IP(src=GW_A, dst=GW_B))
        with pytest.raises(Exception):      # the 8-byte AAD of a non-ESN SA fails
            plain.decrypt(IP(bytes(pkt[IP])))
