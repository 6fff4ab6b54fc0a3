# SPDX-License-Identifier: BSD-3-Clause
"""Live interop with strongSwan 5.9 (charon + kernel-libipsec, ESP in UDP 4500).

    host S == [charon #1] == outer link == [charon #2, then dpvpn] == host D

Charon #1 negotiates a CHILD_SA with charon #2 (PSK, IKEv2); the SPIs and
keys come from charon's `chd = 4` log and are proven on a strongSwan to
strongSwan ping (tshark decrypts it with them).  Charon #1 then rekeys, charon
#2 is killed with SIGKILL, and dpvpn takes the peer's place with the new
CHILD_SA's keys as static SAs: ping and iperf3 both ways between S and D,
and only ESP in UDP 4500 on the outer link.  See tests/helpers/swan.py."""
import time

import pytest

import lab
import swan

pytestmark = pytest.mark.strongswan

CIPHERS = {"aes128gcm16": "aes128-gcm", "aes256-sha256": "aes256-cbc-sha256"}
IPERF_SECONDS = 3


@pytest.fixture(scope="module")
def strongswan():
    why = swan.ensure_installed()
    if why:
        pytest.skip(f"strongSwan interop: {why}")


def ping_ok(sw, side):
    sw.ping(side, count=2)                  # dpvpn resolves its neighbours (ARP)
    r = sw.ping(side, count=5)
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("proposal", list(CIPHERS))
def test_dpvpn_takes_over_from_charon(strongswan, proposal):
    with swan.SwanLab(proposal) as sw:
        sa = sw.negotiate()
        assert sa.cipher == CIPHERS[proposal], sa
        assert sw.verified["esp"], "phase 1: tshark decoded no ESP"
        sw.release_peer()
        sw.start_dpvpn()

        cap, pcap = sw.capture(sw.ns_sw, "sw-out", "phase2-ping")
        for side in ("s", "d"):
            ping_ok(sw, side)
        time.sleep(0.3)
        cap.stop(timeout=5)
        rows = swan.tshark_esp(pcap, sa)
        # 7 requests and 7 replies each way, fewer if dpvpn's ARP cost one
        assert len(rows) >= 24, rows
        assert {x["spi"] for x in rows} == {sa.spi_in, sa.spi_out}, rows
        assert all(x["icv_good"] == "1" for x in rows), rows
        assert lab.frames(pcap, "not esp and not arp") == 0

        for client in ("s", "d"):
            rep = sw.iperf(client, IPERF_SECONDS)
            got = rep["end"]["sum_received"]
            print(f"iperf3 {proposal} from {client.upper()}: {got['bits_per_second'] / 1e6:.0f} "
                  f"Mbit/s, {got['bytes']} bytes")
            assert got["bytes"] > 1_000_000 and got["bits_per_second"] > 5e6, (client, got)

        sas = {s["dir"]: s for s in sw.gw.ctl("show", "sa")["sas"]}
        for d, spi in (("in", sa.spi_in), ("out", sa.spi_out)):
            assert sas[d]["packets"] > 1000 and int(sas[d]["spi"], 16) == spi, sas[d]
            assert sas[d]["cipher"] == sa.cipher, sas[d]
        assert sas["in"]["drops"]["replay"] == 0 and sas["in"]["drops"]["bad-icv"] == 0, \
            sas["in"]
        # charon #1 saw the same SA, and did not tear it down
        listed = swan.parse_list_sas(sw.swan.swanctl("--list-sas"))
        assert listed[sa.uid][0] == "INSTALLED", listed
