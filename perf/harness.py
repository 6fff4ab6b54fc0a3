#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""harness: what dpbench's harness costs alone, per packet.

dpbench's figures hold the harness's work as well as the dataplane's: the
net_pcap PMD copying each replayed packet into a fresh mbuf, and net_null
freeing what is sent.  This measures that work alone with DPDK's own
dpdk-testpmd (Debian package dpdk) in io forwarding, which receives a burst
and sends it on untouched: the same capture file, the same vdevs in the same
order (net_pcap with infinite_rx=1 -> net_null), one forwarding lcore on the
worker's CPU (main lcore on CPU 0), bursts of 32.

  harness cycles per packet = TSC cycles testpmd spent in bursts that found
  packets (--record-core-cycles) / packets forwarded, over a window after a
  warm-up (two `show fwd stats all`, 1 s apart or more, differenced).

testpmd counts only bursts that received something, as dpvpn's busy cycles
do; polling the empty net_null port is in both.  What it does not do: read
or write the packets (io mode), so the copy's effect on the caches a real
dataplane then reads is not in it.  perf/run subtracts it from the
dataplane's cycles per packet: the figure net of the harness.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dpbench  # noqa: E402
import probe  # noqa: E402
from dpbench import lab  # noqa: E402

TESTPMD = os.environ.get("DPVPN_TESTPMD", "/usr/bin/dpdk-testpmd")
CYCLES = re.compile(r"total cycles=(\d+) / total io packets=(\d+)")
START_TIMEOUT_S = 60


def available():
    return os.access(TESTPMD, os.X_OK)


def eal_extra():
    """DPVPN_EAL_EXTRA without its -d PMD loads: testpmd is linked with the
    drivers already, and loading one twice panics (perf/device-run)."""
    out, words = [], os.environ.get("DPVPN_EAL_EXTRA", "").split()
    while words:
        w = words.pop(0)
        if w == "-d" and words:
            words.pop(0)
        else:
            out.append(w)
    return out


def argv(prefix, vdevs, cpu, mbufs):
    eal = ["--no-pci", *lab.eal_mem_args(), "--file-prefix", prefix,
           "--lcores", f"0@0,1@{cpu}", "--log-level", "lib.eal:error", *eal_extra()]
    for v in vdevs:
        eal += ["--vdev", v]
    return [TESTPMD, *eal, "--", "-i", "--forward-mode=io", "--record-core-cycles",
            "--nb-cores=1", "--no-flush-rx", "--burst=32", f"--total-num-mbufs={mbufs}"]


def run_case(cipher, direction, size, seconds=2.0, warmup=1.0, sas=1, anti_replay=True,
             packets=None, workdir=None):
    """testpmd over the capture dpbench.run_case would replay for the same
    arguments (one worker); returns {"cycles_per_packet", "mpps", "sched", ...}."""
    d = tempfile.mkdtemp(prefix="harness-", dir=workdir)
    paths, infinite_n = dpbench.capture(cipher, direction, size, 1, sas, anti_replay, packets)
    rx = "net_pcap0," + ",".join(f"rx_pcap={p}" for p in paths) + ",infinite_rx=1"
    vdevs = [rx, "net_null0,no-rx=1"] if direction == "encap" else \
        ["net_null0,no-rx=1", rx]
    cpu = dpbench.worker_cpus(1)[0]
    prefix = f"dpvpn-harness-{os.getpid()}-{os.path.basename(d)}"
    log = os.path.join(d, "testpmd.log")
    with open(log, "w") as out:
        p = subprocess.Popen(argv(prefix, vdevs, cpu, infinite_n + 65536), stdin=subprocess.PIPE,
                             stdout=out, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        lab.wait_for(lambda: "testpmd>" in read(log) or p.poll() is not None,
                     START_TIMEOUT_S, "testpmd prompt")
        if p.poll() is not None:
            raise RuntimeError(f"dpdk-testpmd exited:\n{read(log)[-3000:]}")
        with dpbench.off_cpus([cpu]):
            send(p, "start")
            time.sleep(warmup)
            th0, t0 = probe.threads(p.pid), time.monotonic()
            send(p, "show fwd stats all")
            time.sleep(seconds)
            send(p, "show fwd stats all")
            t1, th1 = time.monotonic(), probe.threads(p.pid)
        send(p, "stop")
        send(p, "quit")
        p.stdin.close()
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        shutil.rmtree(os.path.join(probe.RUN_DIR, prefix), ignore_errors=True)
    shows = [tuple(map(int, m)) for m in CYCLES.findall(read(log))]
    if len(shows) < 2:
        raise RuntimeError(f"dpdk-testpmd: no cycle counts in its output:\n{read(log)[-3000:]}")
    (c0, n0), (c1, n1) = shows[0], shows[1]
    if n1 <= n0:
        raise RuntimeError(f"dpdk-testpmd forwarded nothing in the window (log {log})")
    use = probe.usage(th0, th1)
    shutil.rmtree(d, ignore_errors=True)    # kept (with testpmd.log) when it failed
    return {"tool": "dpdk-testpmd io", "cipher": cipher, "direction": direction, "size": size,
            "capture_packets": infinite_n, "cycles_per_packet": (c1 - c0) / (n1 - n0),
            "mpps": (n1 - n0) / (t1 - t0) / 1e6, "seconds": t1 - t0, "cpu": cpu,
            "sched": dpbench.sched_summary(use, probe.lcore_threads(th1)),
            "threads": probe.by_name(use)}


def send(p, line):
    p.stdin.write(line + "\n")
    p.stdin.flush()


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cipher", default="aes128-gcm")
    ap.add_argument("--dir", default="encap,decap")
    ap.add_argument("--size", default="64,1420")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--no-anti-replay", action="store_true",
                    help="decap: the 64-packet capture, as dpbench --no-anti-replay")
    a = ap.parse_args()
    rows = [run_case(c, d, s, a.seconds, anti_replay=not a.no_anti_replay)
            for c in a.cipher.split(",") for d in a.dir.split(",")
            for s in map(int, a.size.split(","))]
    for r in rows:
        print(f"{r['cipher']:11} {r['direction']:5} {r['size']:5} B: "
              f"{r['cycles_per_packet']:7.1f} cycles/packet ({r['mpps']:.2f} Mpps)",
              file=sys.stderr)
    json.dump({"rows": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
