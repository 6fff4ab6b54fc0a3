# SPDX-License-Identifier: BSD-3-Clause
"""The two-gateway lab (see lab.py): ping and iperf3 through the tunnel, and
tshark, given the SA keys, finds only ESP with correct ICVs on the wire."""
import pytest

import lab

pytestmark = pytest.mark.tunnel

@pytest.fixture(scope="module")
def net():
    with lab.Lab() as the_lab:
        the_lab.ping(count=3)   # resolve ARP all along the path
        yield the_lab


def test_ping(net):
    r = net.ping(count=10)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0% packet loss" in r.stdout, r.stdout


def test_iperf3(net):
    rep = net.iperf(seconds=3)
    received = rep["end"]["sum_received"]["bytes"]
    assert received > 1_000_000, rep["end"]
    print(f"iperf3: {rep['end']['sum_received']['bits_per_second'] / 1e9:.2f} Gbit/s")
    sas = {(s["dir"], s["spi"]): s for s in net.a.ctl("show", "sa")["sas"]}
    # every TCP byte went through gateway A's outbound SA
    assert sas[("out", "0x00001001")]["bytes"] > received


def test_wire_is_esp_with_good_icvs(net):
    cap, pcap = net.capture("gwa-out")
    r = net.ping(count=5)
    net.stop_capture(cap)
    assert r.returncode == 0
    rows = lab.tshark_esp(pcap)
    assert len(rows) >= 10          # 5 requests + 5 replies
    assert {r["spi"] for r in rows} == {"0x00001001", "0x00002001"}
    assert all(r["icv_good"] == "1" for r in rows), rows
    assert lab.frames(pcap, "ip and not esp") == 0


def test_counters_balance(net):
    for gw in net.gws:
        c = gw.ctl("show", "counters")
        ins, outs = lab.counters_balance(c)
        assert ins == outs and c["rx_packets"] > 0, (gw.name, c)
