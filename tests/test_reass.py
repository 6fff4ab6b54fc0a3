# SPDX-License-Identifier: BSD-3-Clause
"""Outer fragment reassembly against scapy (net_pcap ports, as test_pcap.py):
ESP and ESP-in-UDP packets over IPv4, and ESP over IPv6, that scapy
fragmented on the way (out of order) are reassembled and decrypted; a flood of first fragments that never
complete stays within the table's bound (256 packets per worker), every one
of them is given up and counted (reass_dropped) once it times out, and a
whole packet after the flood still gets through."""
import random

import pytest
from scapy.all import IP, UDP, Ether, Raw, fragment
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment, fragment6

import lab
import pcapgw
from esp_oracle import SA, tunnel_conf
from pcapgw import (GW_A, GW_B, HOST_A, HOST_B, MAC_GW_B, MAC_HOST_A, MAC_IN, MAC_OUT, forwarded,
                    ports_conf)

pytestmark = pytest.mark.scale

FLOOD = 600                 # first fragments that never complete
TABLE = 256                 # REASS_MAX_ENTRIES


def udp(i, size, src=HOST_B, dst=HOST_A):
    return IP(src=src, dst=dst, id=i, ttl=64) / UDP(sport=2000 + i, dport=9) / \
        Raw(bytes((i * 7 + k) & 0xff for k in range(size - 28)))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    plain_in = SA("aes128-gcm", 0x2001, GW_B, GW_A)
    udp_in = SA("aes128-gcm", 0x2002, GW_B, GW_A, udp=True)
    plain_out = SA("aes128-gcm", 0x1001, GW_A, GW_B)
    udp_out = SA("aes128-gcm", 0x1002, GW_A, GW_B, udp=True)
    six_in = SA("aes128-gcm", 0x2003, "2001:db8:19::2", "2001:db8:19::1")
    six_out = SA("aes128-gcm", 0x1003, "2001:db8:19::1", "2001:db8:19::2")
    conf = (ports_conf(outside=f"{GW_A}/24, 2001:db8:19::1/64") +
            tunnel_conf("plain", plain_out, plain_in, "198.18.1.0/24", "198.18.2.0/24") +
            tunnel_conf("natt", udp_out, udp_in, "198.18.1.0/24", "198.18.3.0/24") +
            tunnel_conf("six", six_out, six_in, "198.18.1.0/24", "198.18.4.0/24"))
    rng = random.Random(7)
    back = [udp(1, 1400), udp(2, 1000, src="198.18.3.2"), udp(4, 1200, src="198.18.4.2")]
    esp = [IP(plain_in.seal(back[0], 1)), IP(udp_in.seal(back[1], 1))]
    frags = []
    for p in esp:
        f = fragment(p, fragsize=512)
        assert len(f) >= 2
        rng.shuffle(f)
        frags += f
    six = IPv6(six_in.seal(back[2], 1))
    f6 = fragment6(IPv6(src=six.src, dst=six.dst, hlim=64) / IPv6ExtHdrFragment(nh=50) /
                   Raw(bytes(six.payload)), 600)
    assert len(f6) >= 2
    rng.shuffle(f6)
    frags += f6
    # the flood: first fragments of packets whose rest never comes
    flood = [IP(src=GW_B, dst=GW_A, id=10000 + i, flags="MF", proto=50) / Raw(b"f" * 64)
             for i in range(FLOOD)]
    late = udp(3, 300)
    outside = frags + flood + [IP(plain_in.seal(late, 2))]
    outside = [p if p.version == 4 else IPv6(bytes(p)) for p in outside]

    held = {}

    def expire(gw):     # entries live REASS_TIMEOUT_MS (0.5 s)
        held["during"] = gw.ctl("show", "counters")["mbufs_in_use"]
        lab.wait_for(lambda: gw.ctl("show", "counters")["reass_dropped"] >= FLOOD, 10,
                     "the flood's entries to time out")
        held["after"] = gw.ctl("show", "counters")["mbufs_in_use"]

    state = pcapgw.run(str(tmp_path_factory.mktemp("reass")), [],
                       [Ether(src=MAC_GW_B, dst=MAC_OUT) / p for p in outside],
                       conf=conf, settle=expire)
    state.update(back=back, late=late, nfrags=len(frags), held=held)
    return state


def test_fragmented_esp_decrypted(run):
    got = [bytes(p[IP]) for p in run["out0"]]
    assert forwarded(run["back"][0]) in got       # plain ESP
    assert forwarded(run["back"][1]) in got       # ESP in UDP
    assert forwarded(run["back"][2]) in got       # ESP over IPv6


def test_flood_bounded_and_counted(run):
    c = run["counters"]
    assert c["frag_in"] == run["nfrags"] + FLOOD
    assert c["reassembled"] == 3
    # all of the flood given up: past the table's room at once, the rest on timeout
    assert c["reass_dropped"] == FLOOD


def test_flood_memory_bound(run):
    """While the flood sat in the table it held at most one mbuf per entry
    (each was a lone first fragment): the table's bound, not the flood's size."""
    held = run["held"]["during"] - run["held"]["after"]
    assert 0 < held <= TABLE + 32, run["held"]


def test_whole_packet_after_the_flood(run):
    assert forwarded(run["late"]) in [bytes(p[IP]) for p in run["out0"]]
    assert len(run["out0"]) == 4
