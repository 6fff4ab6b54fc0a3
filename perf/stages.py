#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""stages: where a worker's cycles go, stage by stage (issue 14, requirement 3).

    perf/stages.py                       # AES-128-GCM, encap and decap, 64 and 1420 B
    perf/stages.py --size 64 --dir encap --reps 5 --label before

A second build of the real dataplane, `build-stages` (meson option
stage_cycles=true, made here if missing), reads the TSC at the edges of each
fast-path stage of the worker, once per burst (dataplane/dp.h DP_STAGES), and
adds the cycles up per worker; DPDK telemetry serves them (/dpvpn/stages,ID).
The runs are dpbench's: net_pcap replaying a capture into the dataplane,
net_null discarding what it sends; decap with anti-replay on, over the first
pass of a long capture.  Each row gives TSC cycles per packet per stage and
"other" (busy cycles no stage claimed: calls and the loop), their sum, and the
cycles per packet of the ordinary build in the same invocation (the
instrumented build pays ~2 rdtsc per stage and burst, about 10 cycles per
packet at 64 B).  `rx` and `tx` are mostly the harness's: net_pcap copies each
packet into a fresh mbuf, net_null frees what it is given.

Method and the committed tables: perf/README.md, "Where the cycles go".
"""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAGE_BUILD = os.environ.get("DPVPN_STAGE_BUILD", os.path.join(ROOT, "build-stages"))
PLAIN_BUILD = os.environ.get("DPVPN_BUILD", os.path.join(ROOT, "build"))
ORDER = ["rx", "classify", "spd", "sa", "seq-replay", "header", "crypto", "counters",
         "route", "tx", "other"]


def ensure_stage_build():
    if not os.path.exists(os.path.join(STAGE_BUILD, "build.ninja")):
        subprocess.run(["meson", "setup", STAGE_BUILD, "--buildtype=release",
                        "-Dstage_cycles=true"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", STAGE_BUILD], check=True, stdout=subprocess.DEVNULL)


def load_dpbench(build):
    """dpbench (and lab) bound to one build: lab reads DPVPN_BUILD at import."""
    os.environ["DPVPN_BUILD"] = build
    for name in ("dpbench", "lab", "espgen", "probe"):
        sys.modules.pop(name, None)
    sys.path.insert(0, HERE)
    import dpbench  # noqa: E402
    return dpbench


def median_row(rows, key):
    return sorted(rows, key=lambda r: r[key])[len(rows) // 2]


def measure(cipher, direction, size, reps, seconds, anti_replay=True, sas=1):
    """reps runs of each build, alternating: the instrumented one's stage
    split (median by total) and the ordinary one's cycles per packet."""
    staged, plain = [], []
    for _ in range(reps):
        db = load_dpbench(STAGE_BUILD)
        db.STAGES = True
        r = db.run_case(cipher, direction, size, 1, seconds, sas=sas, anti_replay=anti_replay)
        r["stage_total"] = sum(r["stages"].values())
        staged.append(r)
        db = load_dpbench(PLAIN_BUILD)
        db.STAGES = False
        plain.append(db.run_case(cipher, direction, size, 1, seconds, sas=sas,
                                 anti_replay=anti_replay))
    s = median_row(staged, "stage_total")
    return {"cipher": cipher, "direction": direction, "size": size, "sas": sas,
            "stages": s["stages"], "stage_total": s["stage_total"],
            "stage_mpps": s["mpps"], "stage_reps": [r["stage_total"] for r in staged],
            "plain_cycles_per_packet": statistics.median(
                r["busy_cycles_per_packet"] for r in plain),
            "plain_mpps": statistics.median(r["mpps"] for r in plain),
            "anti_replay": s.get("anti_replay"), "method": s.get("method"),
            "sched": s.get("sched")}


def table(rows):
    head = f"{'stage':12}" + "".join(f"{r['direction'] + ' ' + str(r['size']):>12}"
                                     for r in rows)
    lines = [head]
    for st in ORDER:
        lines.append(f"{st:12}" + "".join(f"{r['stages'].get(st, 0):12.1f}" for r in rows))
    lines.append(f"{'= total':12}" + "".join(f"{r['stage_total']:12.1f}" for r in rows))
    lines.append(f"{'plain build':12}" + "".join(f"{r['plain_cycles_per_packet']:12.1f}"
                                                 for r in rows))
    lines.append(f"{'plain Mpps':12}" + "".join(f"{r['plain_mpps']:12.2f}" for r in rows))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cipher", default="aes128-gcm")
    ap.add_argument("--dir", default="encap,decap")
    ap.add_argument("--size", default="64,1420")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--label", default="now", help="results/stages-LABEL.json")
    ap.add_argument("--sas", type=int, default=1, help="tunnels (dpbench --sas)")
    ap.add_argument("--no-anti-replay", action="store_true",
                    help="decap over 64 packets replayed with replay-window = 0 (a cheap "
                         "harness; the window check left out)")
    a = ap.parse_args()
    ensure_stage_build()
    loader = importlib.machinery.SourceFileLoader("perf_run", os.path.join(HERE, "run"))
    perf_run = importlib.util.module_from_spec(importlib.util.spec_from_loader("perf_run",
                                                                              loader))
    loader.exec_module(perf_run)     # for machine()
    rows = [measure(a.cipher, d, s, a.reps, a.seconds, not a.no_anti_replay, a.sas)
            for d in a.dir.split(",") for s in map(int, a.size.split(","))]
    print(table(rows))
    line, mach = perf_run.machine()
    doc = {"command": "perf/stages.py " + " ".join(sys.argv[1:]), "machine": line,
           "machine_detail": mach, "tsc_hz": load_dpbench(PLAIN_BUILD).tsc_hz(),
           "rows": rows}
    path = os.path.join(HERE, "results", f"stages-{a.label}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"perf/stages.py: wrote {path} ({line})")


if __name__ == "__main__":
    main()
