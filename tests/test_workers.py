# SPDX-License-Identifier: BSD-3-Clause
"""Two workers per gateway (lab.py with workers=2: every port has a queue pair
per worker, the lcores share the two CPUs): many flows and one flow through
one SA pair.  Outbound, workers reserve sequence numbers per burst with one
atomic add; inbound, each outside burst is handed round the workers, so one
tunnel's ESP is decrypted on both, out of order, against one lock-free replay
window.  No packet may be lost to that: no replay drop, and every ESP packet
one gateway sent was decrypted by the other.

Here four pollers, iperf3 and the kernel share two vCPUs: a worker can be
descheduled for a whole time slice while holding a burst, and its packets
then arrive milliseconds late, beyond any window at full speed (such packets
are rightly dropped as replays, left of the window: counted as replay_late
too).  So the window is 4096 and iperf3 is paced (-b) so that a time slice
stays well inside it.  A replay drop that is not late (a number accepted, or
refused, twice) is always a false one and fails the test; a late one is
allowed and printed, and its packet is counted as lost: once in about twenty
CI runs a worker here was held past the 4096 packets (about 120 ms at the
pace).  On cores of their own workers never wait that long."""
import os
import time

import pytest

import lab

pytestmark = pytest.mark.scale


@pytest.fixture(scope="module")
def net():
    with lab.Lab(workers=2, replay_window=4096) as the_lab:
        the_lab.ping(count=3)
        yield the_lab


def settled(net):
    """Both gateways' counters once nothing is in flight."""
    last = None
    for _ in range(50):
        now = [gw.ctl("show", "counters") for gw in net.gws]
        if last and [c["rx_packets"] for c in now] == [c["rx_packets"] for c in last]:
            return now
        last = now
        time.sleep(0.2)
    return last


def missed(gw):
    """What the outside port's kernel socket ring dropped before DPDK saw it."""
    return sum(p["rx_missed"] for p in gw.ctl("show", "ports")["ports"] if p["role"] == "outside")


def check_no_loss(net):
    a, b = settled(net)
    for c in (a, b):
        assert c["drops"]["replay"] == c["replay_late"], (c["replay_late"], c["drops"])
        assert c["drops"]["bad-icv"] == 0, c["drops"]
        if c["replay_late"]:
            print(f"{c['replay_late']} packets arrived late, beyond the 4096-packet window "
                  "(a worker descheduled with a burst)")
    # every ESP packet sent was decrypted, but for what the veth's socket ring
    # dropped (the lab's kernel path, not dpvpn: counted as rx_missed), and
    # for what the sender encrypted but could not send (first packets while
    # ARP resolves, a full TX queue: both counted by the sender), and for the
    # late ones above
    for src, dst, gw in ((a, b, net.b), (b, a, net.a)):
        lost = src["encrypted"] - dst["decrypted"]
        unsent = sum(src["drops"][r] for r in ("no-neighbour", "neigh-timeout", "tx-full",
                                               "no-route"))
        assert 0 <= lost <= missed(gw) + unsent + dst["replay_late"], \
            (lost, missed(gw), unsent, dst["replay_late"])
    return a, b


# Under ASan (scripts/sanitize) every poller is 2-3 times slower and a stall
# lasts as much longer: the same window then needs a slower pace (a clean
# CI run once saw replay drops there at 400 Mbit/s, none in the normal pass).
RATE_MBIT = 150 if os.environ.get("DPVPN_SANITIZER_LOGS") else 400


@pytest.mark.parametrize("streams", [4, 1])
def test_iperf3_two_workers(net, streams):
    before = [gw.ctl("show", "counters")["handoff"] for gw in net.gws]
    rep = net.iperf(seconds=3, streams=streams, rate=f"{RATE_MBIT // streams}M")
    assert rep["end"]["sum_received"]["bytes"] > 1_000_000, rep["end"]
    print(f"iperf3 -P {streams}, 2 workers per gateway: "
          f"{rep['end']['sum_received']['bits_per_second'] / 1e9:.2f} Gbit/s")
    a, b = check_no_loss(net)
    # both gateways spread their inbound ESP over both workers
    assert a["handoff"] > before[0] and b["handoff"] > before[1], (a["handoff"], b["handoff"])


def test_one_sa_pair_carried_it_all(net):
    sas = net.a.ctl("show", "sa")["sas"]
    late = net.a.ctl("show", "counters")["replay_late"]
    assert len(sas) == 2 and sum(s["drops"]["replay"] for s in sas) == late
