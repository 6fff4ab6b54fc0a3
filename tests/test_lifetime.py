# SPDX-License-Identifier: BSD-3-Clause
"""SA lifetimes (RFC 4301 4.4.2.1): a soft limit raises an event dpvpnd logs,
a hard limit stops the SA (its packets counted as sa-expired), by packets and
by bytes, with small limits.  Soft-then-hard needs time between the two (the
dataplane checks soft limits ten times a second), so it runs in the lab with
pings; single transitions run from pcap files."""
import os
import time

import pytest
from scapy.all import Ether, rdpcap, wrpcap

import lab
from test_pcap import MAC_HOST_A, MAC_IN, NEIGHBOURS, inner

pytestmark = pytest.mark.esp


def wait_log(gw, text, timeout=5):
    lab.wait_for(lambda: text in gw.dpvpnd.output(), timeout, f"dpvpnd to log '{text}'")


def out_sa(gw):
    return [s for s in gw.ctl("show", "sa")["sas"] if s["dir"] == "out"][0]


def test_soft_then_hard_in_the_lab():
    # soft after 3 packets, hard once the inner bytes pass 700 (84-byte pings)
    with lab.Lab(extra_a="soft-packets = 3\nhard-bytes = 700\n") as net:
        net.ping(count=4)
        wait_log(net.a, "outbound SA 0x00001001: soft lifetime reached (rekey due)")
        assert out_sa(net.a)["life"]["state"] == "soft"
        assert "hard lifetime" not in net.a.dpvpnd.output()
        net.ping(count=8)                   # some replies, then none
        wait_log(net.a, "outbound SA 0x00001001: hard lifetime reached (SA stopped)")
        sa = out_sa(net.a)
        # stopped by the first ping that no longer fitted: less than one is left
        assert sa["life"]["state"] == "hard" and sa["life"]["hard_left"]["bytes"] < 84
        assert sa["bytes"] <= 700
        assert net.a.ctl("show", "counters")["drops"]["sa-expired"] >= 1
        assert net.ping(count=2).returncode != 0        # the tunnel carries nothing now


def pcap_run(tmp_path, limits, n):
    d = str(tmp_path)
    wrpcap(f"{d}/in0.pcap", [Ether(src=MAC_HOST_A, dst=MAC_IN) / inner(i, 100)
                             for i in range(n)])
    wrpcap(f"{d}/in1.pcap", [])
    with open(os.path.join(lab.CONFIGS, "lab-a.conf")) as f:
        conf = f.read() + limits
    cfg = os.path.join(d, "life.conf")
    with open(cfg, "w") as f:
        f.write(conf + NEIGHBOURS)
    vdevs = [f"net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap",
             f"net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap"]
    gw = lab.Gateway("life", cfg, vdevs, d, ["-l", "0-1"])
    try:
        gw.start()
        lab.wait_for(lambda: gw.ctl("show", "counters")["rx_packets"] >= n, 20, "the input")
        lab.wait_for(lambda: out_sa(gw)["life"]["state"] != "ok", 5, "the lifetime tick")
        time.sleep(1.5)                     # dpvpnd polls events once a second
        state = {"sa": out_sa(gw), "counters": gw.ctl("show", "counters"),
                 "log": gw.dpvpnd.output()}
    finally:
        gw.stop()
    state["out1"] = rdpcap(f"{d}/out1.pcap")
    return state


def test_soft_by_bytes(tmp_path):
    s = pcap_run(tmp_path, "soft-bytes = 250\n", 8)
    assert len(s["out1"]) == 8                          # soft stops nothing
    assert s["sa"]["life"]["state"] == "soft"
    assert "outbound SA 0x00001001: soft lifetime reached (rekey due)" in s["log"]


def test_hard_by_packets(tmp_path):
    s = pcap_run(tmp_path, "hard-packets = 5\n", 8)
    assert len(s["out1"]) == 5                          # exactly the limit
    assert s["counters"]["drops"]["sa-expired"] == 3
    assert s["sa"]["life"]["state"] == "hard" and s["sa"]["life"]["hard_left"]["packets"] == 0
    assert "outbound SA 0x00001001: hard lifetime reached (SA stopped)" in s["log"]
