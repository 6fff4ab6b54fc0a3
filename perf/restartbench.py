#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""restartbench: a dpvpnd restart under traffic over many IKE tunnels
([scale] issue 28, requirement 3).

    sudo perf/restartbench.py --tunnels 10000 --rate 200 --setup-slack 90 --pps 20000 --seconds 8 --at 2

The tester's lab (tests/testerlab.py: dpvpn-dataplane --tester and a dpvpn
DUT over two veth pairs in a namespace of its own): the tester's dpvpnd
initiates every tunnel (IKEv2, PSK) at --rate a second while traffic flows,
each tunnel's set-up timed by its first packet both ways; then a trial of
--seconds at --pps each way over every tunnel, and --at seconds into it the
DUT's dpvpnd is killed (-9) and a new one started against the running
dataplane, as systemd would.  Reported: the loss both ways and the tunnels
that lost any (the tester's per-tunnel counters), the longest gap of any
stream, how long the new dpvpnd took to be ready, the IKE SAs it took up
(its log), whether the DUT's SAs are the same ones after (SPIs), and the
CHILD_SAs the tester made again (its log).  Figures, never a pass/fail:
the test with 40 tunnels is tests/test_tester.py
test_dpvpnd_restart_under_load_loses_nothing.
"""
import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import testerlab  # noqa: E402
from testerlab import T  # noqa: E402

TAKEN_RE = re.compile(r"IKE: (\d+) of (\d+) IKE SAs taken up again")


def run(a):
    with testerlab.Pair(a.tunnels, ike=True, start_tester=False, paced=True,
                        dut_args=["--max-sa", str(2 * a.tunnels + 64),
                                  "--ike-rate", "200000"]) as p:
        up = T.setup_rate(p.tester, a.tunnels, seconds=a.tunnels / a.rate + a.setup_slack,
                          per_tunnel_pps=a.setup_pps, rate=a.rate)
        setup = {k: up[k] for k in ("up", "rate_per_s", "first_packet_s") if k in up}
        setup["failed"] = len(up.get("failed", []))
        # the tunnels that carried traffic both ways in the set-up trial
        # (dpvpnctl show tunnels would say too, but takes tens of seconds
        # at 10 000 tunnels: that listing is not made for this many yet)
        only = set(range(a.tunnels)) - set(up.get("failed", []))
        setup["up_before_restart"] = len(only)
        if not only:
            return {"error": "no tunnel up", "setup": setup}
        before = p.dut.sa_ids()
        ups = p.tester.gw.dpvpnd.output().count("IKE CHILD_SA up")
        x = T.restart_under_load(p.tester, lambda: p.dut.restart_dpvpnd("restarted", timeout=300),
                                 a.pps, a.seconds, at=a.at, only=only)
        x.pop("stats")
        time.sleep(a.watch)
        m = TAKEN_RE.search(p.dut.dpvpnd.output())
        after = p.dut.sa_ids()
        return {"tunnels": a.tunnels, "setup": setup, "restart": x,
                "dpvpnd_ready_s": x["restart_s"],
                "ike_sas_taken_up": [int(m.group(1)), int(m.group(2))] if m else None,
                "dut_sas": len(before), "dut_sas_same": before == after,
                "child_sas_made_again": p.tester.gw.dpvpnd.output().count("IKE CHILD_SA up")
                - ups, "watched_s": a.watch, "machine": T.machine()}


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
