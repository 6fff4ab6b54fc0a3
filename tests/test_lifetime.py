# SPDX-License-Identifier: BSD-3-Clause
"""SA lifetimes (RFC 4301 4.4.2.1): a soft limit raises an event dpvpnd logs,
a hard limit stops the SA (its packets counted as sa-expired), by packets and
by bytes, with small limits.  Soft-then-hard needs time between the two (the
dataplane checks soft limits ten times a second), so it runs in the lab with
pings; single transitions run from pcap files."""
import time

import pytest
from scapy.all import Ether

import lab
import pcapgw
from pcapgw import MAC_HOST_A, MAC_IN, inner, out_sa

pytestmark = pytest.mark.esp


def wait_log(gw, text, timeout=5):
    lab.wait_for(lambda: text in gw.dpvpnd.output(), timeout, f"dpvpnd to log '{text}'")


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
    def settle(gw):
        lab.wait_for(lambda: out_sa(gw)["life"]["state"] != "ok", 5, "the lifetime tick")
        time.sleep(1.5)                     # dpvpnd polls events once a second

    state = pcapgw.run(str(tmp_path), [Ether(src=MAC_HOST_A, dst=MAC_IN) / inner(i, 100)
                                       for i in range(n)], [], tunnel_extra=limits,
                       settle=settle)
    state["sa"] = [s for s in state["sas"] if s["dir"] == "out"][0]
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
