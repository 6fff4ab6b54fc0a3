# SPDX-License-Identifier: BSD-3-Clause
"""Extended sequence numbers (RFC 4303 2.2.1, RFC 4106 5) against scapy: the
inbound SA infers the high half across the 2^32 boundary, replays and wrong
high halves are refused, and the outbound SA's ICV covers the high half.
Same set-up as test_pcap.py, with `esn = yes` on the tunnel."""
import pytest
from scapy.all import IP, UDP, Ether

import pcapgw
from pcapgw import (GW_A, GW_B, HOST_A, HOST_B, KEY_AB, KEY_BA, MAC_GW_B, MAC_HOST_A, MAC_IN,
                    MAC_OUT, forwarded, inner, sa)

pytestmark = pytest.mark.esp

# (high, low) halves of what the peer sends: a jump to 2^31 first (a fresh
# window can only move forward: 0xfffffffd as a first packet would read as
# "before the start"), then up to and across 2^32.  No low half of 0: scapy
# takes seq_num=0 as "not given" and uses its own counter.
ACROSS = [(0, 0x80000000), (0, 0xfffffffd), (0, 0xfffffffe), (0, 0xffffffff), (1, 1), (1, 2),
          (1, 3)]


def esn_sa(spi, key, src, dst):
    return sa(spi, key, src, dst, esn_en=True, esn=0)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    peer = esn_sa(0x2001, KEY_BA, GW_B, GW_A)
    back = [inner(i, 80 + 10 * i, src=HOST_B, dst=HOST_A) for i in range(len(ACROSS))]
    esp = [peer.encrypt(p, seq_num=lo, esn_en=True, esn=hi)
           for p, (hi, lo) in zip(back, ACROSS)]
    replayed = esp[2]
    wrong_high = peer.encrypt(inner(50, 90, HOST_B, HOST_A), seq_num=5, esn_en=True, esn=7)
    clear = [inner(i, 120) for i in range(3)]
    # The high half is inferred from the window as it stood before the burst
    # (it moves only after ICVs check out), so the jump to 2^31 must come in a
    # burst of its own: net_pcap hands out 32 packets per burst (DP_BURST),
    # and 31 non-ESP fillers (counted as not-esp) close the first one.
    fillers = [IP(src=GW_B, dst=GW_A) / UDP(sport=9, dport=9) for _ in range(31)]
    outside = esp[:1] + fillers + esp[1:] + [replayed, wrong_high]
    state = pcapgw.run(str(tmp_path_factory.mktemp("esn")),
                       [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in clear],
                       [Ether(src=MAC_GW_B, dst=MAC_OUT) / IP(bytes(p)) for p in outside],
                       tunnel_extra="esn = yes\n")
    state.update(clear=clear, back=back)
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
        with pytest.raises(Exception):      # the 8-byte AAD of a non-ESN SA fails
            sa(0x1001, KEY_AB, GW_A, GW_B).decrypt(IP(bytes(pkt[IP])))
