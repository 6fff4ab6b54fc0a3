#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""restartbench: a dpvpnd restart, or the whole gateway's, under traffic over
many IKE tunnels ([scale] issue 28, requirement 3).

    sudo perf/restartbench.py --tunnels 10000 --rate 200 --setup-slack 90 --pps 20000 --seconds 8 --at 2
    sudo perf/restartbench.py --whole --tunnels 10000 --pps 20000 --seconds 40 --at 2

The tester's lab (tests/helpers/testerlab.py: dpvpn-dataplane --tester and a dpvpn
DUT over two veth pairs in a namespace of its own): the tester's dpvpnd
initiates every tunnel (IKEv2, PSK) at --rate a second while traffic flows,
each tunnel's set-up timed by its first packet both ways; then a trial of
--seconds at --pps each way over every tunnel, and --at seconds into it the
DUT's dpvpnd is killed (-9) and a new one started against the running
dataplane, as systemd would.  Reported: the loss both ways and the tunnels
that lost any (the tester's per-tunnel counters), the longest gap of any
stream, how long the new dpvpnd took to be ready, the IKE SAs it took up
(its log), whether the DUT's SAs are the same ones after (SPIs), and the
CHILD_SAs the tester made again (its log).

--whole: the DUT's dpvpnd initiates every tunnel (start = yes; the tester's
responds) and, --at seconds into the trial, both DUT processes are killed
(-9) and started again with nothing kept, as after a power cut.  The new
dpvpnd initiates every tunnel anew with INITIAL_CONTACT, which ends the
tester's IKE SAs of before.  Reported per tunnel (the tester's counters):
whether it carried traffic both ways after the kill, and its outage (the
longest gap of its two streams, from its last packet before the kill to
its first after: at most the time to first packet plus one packet
interval, tunnels / pps), p50/p99/max; the IKE SAs the tester ended on
INITIAL_CONTACT and the CHILD_SAs the new DUT dpvpnd made (their logs).

Figures, never a pass/fail: the tests with 40 tunnels are
tests/test_tester.py test_dpvpnd_restart_under_load_loses_nothing and
test_whole_restart_under_load_comes_back.
"""
import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "helpers"))
import testerlab  # noqa: E402
from testerlab import T  # noqa: E402

TAKEN_RE = re.compile(r"IKE: (\d+) of (\d+) IKE SAs taken up again")


def counters(g):
    """A gateway's drop counters that are not zero, and its ports' rx_missed
    (frames the NIC, here af_packet's ring, had no room for)."""
    out = {k: v for k, v in g.ctl("show", "counters")["drops"].items() if v}
    for i, pt in enumerate(g.ctl("show", "ports")["ports"]):
        out[f"rx_missed:{pt['role']}{i}"] = pt["rx_missed"]
    return out


def grown(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(set(before) | set(after))
            if after.get(k, 0) != before.get(k, 0)}


def run_whole(a):
    with testerlab.Pair(a.tunnels, ike=True, dut_initiates=True,
                        dut_args=["--max-sa", str(2 * a.tunnels + 64),
                                  "--ike-rate", "200000"]) as p:
        took = p.all_up(max(a.tunnels * a.setup_pps, 1000), a.setup_slack)
        if took is None:
            return {"error": "not every tunnel up", "tunnels": a.tunnels}
        ended = p.tester.gw.dpvpnd.output().count("INITIAL_CONTACT")
        tc = counters(p.tester.gw)
        x = T.restart_under_load(p.tester, lambda: p.dut.restart_whole("restarted",
                                                                        timeout=300),
                                 a.pps, a.seconds, at=a.at)
        x.pop("stats")
        return {"tunnels": a.tunnels, "whole": True, "set_up_s": took, "restart": x,
                "dut_ready_s": x["restart_s"],
                "tester_ike_sas_ended_by_initial_contact":
                    p.tester.gw.dpvpnd.output().count("INITIAL_CONTACT") - ended,
                "dut_child_sas_made": p.dut.dpvpnd.output().count("IKE CHILD_SA up"),
                "tester_counters_grown": grown(tc, counters(p.tester.gw)),
                "machine": T.machine()}


def run(a):
    if a.whole:
        return run_whole(a)
    with testerlab.Pair(a.tunnels, ike=True, start_tester=False, paced=True,
                        dut_args=["--max-sa", str(2 * a.tunnels + 64),
                                  "--ike-rate", "200000"]) as p:
        up = T.setup_rate(p.tester, a.tunnels, seconds=a.tunnels / a.rate + a.setup_slack,
                          per_tunnel_pps=a.setup_pps, rate=a.rate)
        setup = {k: up[k] for k in ("up", "rate_per_s", "first_packet_s") if k in up}
        setup["failed"] = len(up.get("failed", []))
        # the tunnels that carried traffic both ways in the set-up trial
        # (dpvpnctl show tunnels would say too, but asks dpvpnd and the
        # dataplane for every tunnel's state and SAs)
        only = set(range(a.tunnels)) - set(up.get("failed", []))
        setup["up_before_restart"] = len(only)
        if not only:
            return {"error": "no tunnel up", "setup": setup}
        before = p.dut.sa_ids()
        ups = p.tester.gw.dpvpnd.output().count("IKE CHILD_SA up")
        dc, tc = counters(p.dut), counters(p.tester.gw)
        nice = ["nice", "-n", str(a.nice)] if a.nice else []
        x = T.restart_under_load(p.tester, lambda: p.dut.restart_dpvpnd("restarted", timeout=300,
                                                                        prefix=nice),
                                 a.pps, a.seconds, at=a.at, only=only)
        x.pop("stats")
        time.sleep(a.watch)
        m = TAKEN_RE.search(p.dut.dpvpnd.output())
        after = p.dut.sa_ids()
        return {"tunnels": a.tunnels, "setup": setup, "restart": x,
                "dpvpnd_ready_s": x["restart_s"], "dpvpnd_nice": a.nice,
                "ike_sas_taken_up": [int(m.group(1)), int(m.group(2))] if m else None,
                "dut_sas": len(before), "dut_sas_same": before == after,
                "child_sas_made_again": p.tester.gw.dpvpnd.output().count("IKE CHILD_SA up")
                - ups, "watched_s": a.watch,
                # where packets went: the DUT's and the tester's drops and missed frames
                "dut_counters_grown": grown(dc, counters(p.dut)),
                "tester_counters_grown": grown(tc, counters(p.tester.gw)),
                "machine": T.machine()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tunnels", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=500.0, help="set-up, tunnels/s")
    ap.add_argument("--setup-slack", type=float, default=30.0,
                    help="seconds the set-up may run past tunnels/rate")
    ap.add_argument("--setup-pps", type=int, default=2,
                    help="per tunnel each way while the tunnels are set up")
    ap.add_argument("--pps", type=int, default=20000, help="each way, over every tunnel")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--at", type=float, default=2.0, help="the kill, into the trial")
    ap.add_argument("--watch", type=float, default=5.0,
                    help="seconds after the trial before the SAs are compared")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the new dpvpnd at this niceness (here it shares the CPUs "
                         "with the dataplanes' workers)")
    ap.add_argument("--whole", action="store_true",
                    help="restart both DUT processes, nothing kept (the DUT initiates)")
    ap.add_argument("--json", help="write the result here too")
    a = ap.parse_args()
    r = run(a)
    text = json.dumps(r, indent=1, default=str)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    return 0 if "error" not in r else 1


if __name__ == "__main__":
    sys.exit(main())
