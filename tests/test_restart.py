# SPDX-License-Identifier: BSD-3-Clause
"""Restart safety: gateway A's dataplane is killed with SIGKILL under traffic
and started again; dpvpnd notices, waits, and installs the config again.
Outbound sequence numbers are reserved in blocks persisted before use
(control/seqstate.h), so the new SA continues above every number the old one
might have used: over everything captured on the gateway link, no (SPI,
sequence number) pair repeats, and gateway B's anti-replay window takes the
new packets (no replay drop, pings pass again).  Then dpvpnd itself is
killed with SIGKILL and started again: the dataplane forwards on meanwhile
and the new dpvpnd leaves it as it is."""
import struct
import time

import pytest
from scapy.all import IP, rdpcap

import lab

pytestmark = pytest.mark.control


@pytest.fixture(scope="module")
def net():
    with lab.Lab() as the_lab:
        the_lab.ping(count=3)
        yield the_lab


def esp_numbers(pcap):
    """(SPI, sequence number) of every ESP packet captured."""
    out = []
    for p in rdpcap(pcap):
        if IP in p and p[IP].proto == 50:
            spi, seq = struct.unpack("!LL", bytes(p[IP].payload)[:8])
            out.append((spi, seq))
    return out


def test_dataplane_crash_no_sequence_reuse(net):
    cap, pcap = net.capture("gwa-out")
    flood = net.bg("ping-flood", net.ns_a, "ping", "-i", "0.002", "-w", "12", "198.18.2.2")
    time.sleep(2)
    state = open(net.a.config + ".state").read()
    net.a.crash_dataplane()
    lab.wait_for(lambda: net.ping(count=1).returncode == 0, 15, "traffic through the new dataplane")
    time.sleep(1)
    flood.stop()
    net.stop_capture(cap)
    seen = esp_numbers(pcap)
    a_out = [s for spi, s in seen if spi == 0x1001]
    assert len(a_out) > 500, len(a_out)
    assert len(set(seen)) == len(seen), "an (SPI, sequence number) pair repeats"
    # the old SA stayed within the block reserved on disk; the new one starts
    # above it, and nothing of the old one follows the first of the new one
    limit = max(int(rec.split()[2]) for rec in state.splitlines()
                if int(rec.split()[1], 16) == 0x1001)   # one record a reservation
    old = [i for i, s in enumerate(a_out) if s <= limit]
    new = [i for i, s in enumerate(a_out) if s > limit]
    assert old and new and max(old) < min(new), (limit, a_out[:3], a_out[-3:])
    # (the first few new numbers went on packets dropped while ARP resolved)
    assert limit < a_out[min(new)] <= limit + 200
    b = net.b.ctl("show", "counters")
    assert b["drops"]["replay"] == 0, b["drops"]
    assert "dataplane back" in net.a.dpvpnd.output()


EXTRA = """
[tunnel extra]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = 198.18.6.0/24
cipher = aes128-gcm
out-spi = 0x1006
out-key = 0x{k}
in-spi = 0x2006
in-key = 0x{k}
""".format(k="cd" * 20)


def test_dpvpnd_crash_forwarding_goes_on(net):
    net.a.dpvpnd.kill9()
    r = net.ping(count=5)
    assert r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout   # without dpvpnd
    seq = next(s for s in net.b.ctl("show", "sa")["sas"] if s["dir"] == "in")["seq"]
    # the config gained a tunnel while dpvpnd was away: the new one reconciles
    with open(net.a.config, "a") as f:
        f.write(EXTRA)
    net.a.dpvpnd = lab.Proc("gw-a-dpvpnd-2", [lab.DPVPND, "-c", net.a.config, "-D",
                                              net.a.dp_sock, "-s", net.a.ctl_sock], net.a.dir)
    lab.wait_for(lambda: "already forwarding" in net.a.dpvpnd.output(), 15, "dpvpnd back")
    assert "1 tunnels kept, 1 installed, 0 stale SAs removed" in net.a.dpvpnd.output()
    assert net.ping(count=3).returncode == 0
    sas = net.a.ctl("show", "sa")["sas"]
    assert len(sas) == 4
    # to-b was not re-installed: the peer sees its numbers run on from where they were
    after = next(s for s in net.b.ctl("show", "sa")["sas"] if s["dir"] == "in")["seq"]
    assert seq < after < seq + 100


def test_reservations_granted_in_blocks():
    """With blocks of 1024 numbers, a ping flood needs a new reservation every
    second or so: dpvpnd writes each one to disk before it grants it, the
    dataplane asks when half is left, and no packet waits for one."""
    with lab.Lab(seq_block=1024) as small:
        small.ping(count=3)
        cap, pcap = small.capture("gwa-out")
        r = small.ns(small.ns_a, "ping", "-i", "0.002", "-c", "3000", "-q", "198.18.2.2",
                     check=False, timeout=60)
        small.stop_capture(cap)
        assert r.returncode == 0, r.stdout
        # one record a reservation (seqstate.h): the SA's highest is its limit
        limit = max(int(rec.split()[2]) for rec in open(small.a.config + ".state")
                    if int(rec.split()[1], 16) == 0x1001)
        a_out = [s for spi, s in esp_numbers(pcap) if spi == 0x1001]
        assert len(a_out) >= 3000 and max(a_out) <= limit
        assert limit >= 3 * 1024                    # at least two grants after the first block
        c = small.a.ctl("show", "counters")
        assert c["drops"]["seq-unreserved"] == 0, c["drops"]
