# SPDX-License-Identifier: BSD-3-Clause
"""The dual-stack lab (lab.py with ipv6=True, configs/lab6-*.conf): the two
gateways talk IPv6 on the outside, IPv4 hosts reach each other 4o6 and IPv6
hosts 6o6 (AES-256-CBC + HMAC-SHA-256 in UDP).  Neighbour Discovery all along:
the hosts resolve the gateways' inside addresses, the gateways resolve the
hosts and each other's outside address; nothing is configured statically."""
import pytest
from scapy.all import rdpcap
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6

import lab

pytestmark = pytest.mark.esp

HOST_B6 = "2001:db8:18:2::2"


@pytest.fixture(scope="module")
def net():
    with lab.Lab(ipv6=True) as the_lab:
        the_lab.ping(count=3)                   # resolve all along the path
        the_lab.ping(count=3, dst=HOST_B6)
        yield the_lab


def test_ping_4o6(net):
    r = net.ping(count=10)
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


def test_ping_6o6_both_ways(net):
    r = net.ping(count=10, dst=HOST_B6)
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr
    r = net.ping(count=5, dst="2001:db8:18:1::2", ns=net.ns_b)
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


def test_iperf3_6o6(net):
    rep = net.iperf(seconds=3, dst=HOST_B6)
    received = rep["end"]["sum_received"]["bytes"]
    assert received > 1_000_000, rep["end"]
    print(f"iperf3 6o6: {rep['end']['sum_received']['bits_per_second'] / 1e9:.2f} Gbit/s")


def test_wire_is_esp_over_ipv6(net):
    cap, pcap = net.capture("gwa-out")
    net.ping(count=3)
    net.ping(count=3, dst=HOST_B6)
    net.stop_capture(cap)
    esp = udp = 0
    for p in rdpcap(pcap):
        if IPv6 not in p or p[IPv6].nh == 58:    # ND between the gateways
            continue
        assert p[IPv6].src in ("2001:db8:19::1", "2001:db8:19::2")
        if p[IPv6].nh == 50:
            esp += 1
        else:
            assert p[IPv6].nh == 17 and p[UDP].dport == 4500
            udp += 1
    assert esp >= 6 and udp >= 6, (esp, udp)


def test_neighbours_were_discovered(net):
    c = net.a.ctl("show", "counters")
    assert c["arp_in"] > 0 and c["arp_out"] > 0    # NS/NA handled and sent
    assert c["drops"]["bad-nd"] == 0
    assert c["drops"]["no-neighbour"] <= 4          # first packets while resolving
