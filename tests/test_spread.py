# SPDX-License-Identifier: BSD-3-Clause
"""UDP source-port spread for NAT-T (`local-ports = 16`): one tunnel's ESP in
UDP leaves from 16 source ports, picked by inner flow, so that a receiver
hashing on UDP ports (RSS) spreads even a single peer's tunnel over its
queues; one flow keeps one port (no reordering inside a flow), and every
packet still decrypts (scapy; the receiver keys on SPI, not on ports)."""
import pytest
from scapy.all import IP, UDP, Ether, Raw

import pcapgw
from esp_oracle import SA, tunnel_conf
from pcapgw import GW_A, GW_B, HOST_A, HOST_B, MAC_HOST_A, MAC_IN, forwarded, ports_conf

pytestmark = pytest.mark.scale

FLOWS, PER_FLOW = 40, 3


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = SA("aes128-gcm", 0x1001, GW_A, GW_B, udp=True)
    inb = SA("aes128-gcm", 0x2001, GW_B, GW_A, udp=True)
    conf = ports_conf() + tunnel_conf("spread", out, inb, "198.18.1.0/24", "198.18.2.0/24",
                                      "local-ports = 16\n")
    clear = [IP(src=HOST_A, dst=HOST_B, ttl=64) / UDP(sport=10000 + f, dport=53) /
             Raw(bytes([f, r]) * 20) for r in range(PER_FLOW) for f in range(FLOWS)]
    state = pcapgw.run(str(tmp_path_factory.mktemp("spread")),
                       [Ether(src=MAC_HOST_A, dst=MAC_IN) / p for p in clear], [], conf=conf)
    state.update(out=out, clear=clear)
    return state


def test_ports_spread_per_flow(run):
    assert len(run["out1"]) == len(run["clear"])
    by_flow = {}
    for n, (pkt, orig) in enumerate(zip(run["out1"], run["clear"])):
        ip = pkt[IP]
        assert ip.proto == 17 and ip[UDP].dport == 4500
        assert 4500 <= ip[UDP].sport < 4516
        assert run["out"].open(bytes(ip), n + 1) == forwarded(orig)
        by_flow.setdefault(orig[UDP].sport, set()).add(ip[UDP].sport)
    assert all(len(ports) == 1 for ports in by_flow.values())      # a flow keeps its port
    used = set().union(*by_flow.values())
    assert len(used) >= 8, used                                    # 40 flows over 16 ports
