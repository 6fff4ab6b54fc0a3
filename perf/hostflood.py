#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""hostflood: does a flood toward the gateway's host slow the tunnel?
([deploy] issue 17 requirement 1; doc/host-path.md.)

The split lab of tests/test_host.py (lab.py, split=True: each gateway's
Linux host in its own namespace, port twins dpvpn-out / dpvpn-in on A,
--host-rate 5000).  iperf3 TCP host A -> host B through the tunnel for
--seconds, in three conditions, interleaved --reps times so that drift of a
shared machine falls on all three alike:

  none     no flood
  host     UDP frames at A's outside address (198.19.0.1:9) from B's side
           of the wire, as fast as tests/helpers/flood.py sends them: the host
           path's traffic (bucket, ring; most counted host-limit)
  other    the same frames and rate, but for 198.19.0.77 (no such address:
           the worker drops them `not-local`, the host path never sees
           them): the cost of receiving a flood at all, so that host/other
           isolates what the host path adds (bucket, ring, the main lcore's
           writes into the twin and the host kernel's receive)

Prints one JSON object: per condition the median Gbit/s received and the
flood frames sent a second, and the ratios host/none, other/none and
host/other.  A figure, never a pass/fail: on a 2-vCPU VM the flooder,
iperf3 and both dataplanes share two CPUs, so "none" has CPU the others
lack; host/other is the figure that speaks of the host path, and in the
lab A's main lcore (which writes into the twin) shares a CPU with B's
worker, so it still counts CPU the host path takes from the tunnel's
workers on a box that has no core to spare.

    perf/hostflood.py [--seconds 3] [--reps 3]
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "helpers"))
import lab  # noqa: E402
from scapy.all import IP, UDP, Ether  # noqa: E402
from test_host import host_lab  # noqa: E402

FLOOD = os.path.join(os.path.dirname(HERE), "tests", "helpers", "flood.py")

def frames(net, dst):
    mac_a = {p["id"]: p for p in net.a.ctl("show", "ports")["ports"]}[1]["mac"]
    mac_b = {p["id"]: p for p in net.b.ctl("show", "ports")["ports"]}[1]["mac"]
    frame = bytes(Ether(dst=mac_a, src=mac_b) / IP(src="198.19.0.2", dst=dst) /
                  UDP(sport=40000, dport=9) / (b"f" * 64))
    path = os.path.join(net.workdir, f"flood-{dst}.json")
    with open(path, "w") as f:
        json.dump({"udp": [frame.hex()]}, f)
    return path


def one(net, seconds, flood_file):
    flood = None
    if flood_file:
        flood = net.bg("flood", net.ns_gwb, sys.executable, FLOOD, flood_file, "gwb-out",
                       str(seconds + 2), "1000000000")
        time.sleep(0.5)                 # the flood is on before iperf3 starts
    rep = net.iperf(seconds=seconds)
    sent = 0
    if flood:
        lab.wait_for(lambda: not flood.alive(), seconds + 20, "the flood")
        sent = json.loads(flood.output())["udp"] / (seconds + 2)
    return rep["end"]["sum_received"]["bits_per_second"] / 1e9, sent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    res = {c: {"gbps": [], "flood_fps": []} for c in ("none", "host", "other")}
    with host_lab() as net:
        files = {"none": None, "host": frames(net, "198.19.0.1"),
                 "other": frames(net, "198.19.0.77")}
        before = net.a.ctl("show", "counters")
        for _ in range(a.reps):
            for c in ("none", "host", "other"):
                g, fps = one(net, a.seconds, files[c])
                res[c]["gbps"].append(round(g, 3))
                res[c]["flood_fps"].append(round(fps))
        after = net.a.ctl("show", "counters")
    drops = {k: after["drops"][k] - before["drops"][k] for k in after["drops"]
             if after["drops"][k] != before["drops"][k]}
    med = {c: statistics.median(v["gbps"]) for c, v in res.items()}
    out = {"cpu": lab_cpu(), "seconds": a.seconds, "reps": a.reps, "runs": res,
           "median_gbps": med,
           "host_over_none": round(med["host"] / med["none"], 3),
           "other_over_none": round(med["other"] / med["none"], 3),
           "host_over_other": round(med["host"] / med["other"], 3),
           "gw_a_drops": drops, "host_in": after["host_in"] - before["host_in"]}
    print(json.dumps(out, indent=1))


def lab_cpu():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} CPUs"
    return "?"


if __name__ == "__main__":
    main()
