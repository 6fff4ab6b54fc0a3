# SPDX-License-Identifier: BSD-3-Clause
"""probe: what the benchmarks read from a running process, from outside it.

  Telemetry   a DPDK process's telemetry socket (v2: one JSON reply per
              command): dpvpn's /dpvpn/lcore,ID (packets, busy and idle TSC
              cycles per lcore), ethdev stats of ipsec-secgw.
  threads()   every thread of a process, from /proc/PID/task/TID: name, the
              CPU it last ran on, and the scheduler's own accounting
              (schedstat: ns on the CPU, ns runnable but waiting in the run
              queue, time slices; status: voluntary and involuntary context
              switches).
  usage()     two threads() snapshots -> per thread: share of the window on a
              CPU, share spent waiting for one, context switches.

A busy-polling worker that has its CPU to itself runs ~100 % of the window,
waits ~0 % and never switches voluntarily; time it spent waiting in the run
queue is time another task held its CPU (perf/run then discards the
repetition, see perf/README.md).
"""
import json
import os
import socket
import time

RUN_DIR = "/var/run/dpdk"


class Telemetry:
    """DPDK's telemetry socket of the process started with --file-prefix prefix."""

    def __init__(self, prefix):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.connect(os.path.join(RUN_DIR, prefix, "dpdk_telemetry.v2"))
        self.max = json.loads(self.s.recv(65536))["max_output_len"]

    def cmd(self, command):
        self.s.send(command.encode())
        return json.loads(self.s.recv(self.max + 1024))[command.split(",")[0]]

    def port(self, port):
        return self.cmd(f"/ethdev/stats,{port}")

    def close(self):
        self.s.close()


def _read(path):
    with open(path) as f:
        return f.read()


def threads(pid):
    """{tid: {...}} for every thread of pid (threads that exit meanwhile are skipped)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        p = f"/proc/{pid}/task/{tid}/"
        try:
            stat = _read(p + "stat")
            run_ns, wait_ns, slices = map(int, _read(p + "schedstat").split())
            status = dict(ln.split(":", 1) for ln in _read(p + "status").splitlines()
                          if ":" in ln)
        except (OSError, ValueError):
            continue
        f = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = {"comm": _read(p + "comm").strip(), "cpu": int(f[36]),
                         "ticks": int(f[11]) + int(f[12]),      # utime + stime
                         "run_ns": run_ns, "wait_ns": wait_ns, "slices": slices,
                         "vcs": int(status["voluntary_ctxt_switches"]),
                         "ivcs": int(status["nonvoluntary_ctxt_switches"]),
                         "t": time.monotonic()}
    return out


def usage(before, after):
    """Per thread present in both snapshots: {"comm", "cpu", "cpu_share" (of the
    window on a CPU), "rq_wait_share" (runnable, waiting for a CPU), "rq_wait_ms",
    "vcs", "ivcs", "window_s"}."""
    out = {}
    for tid, b in after.items():
        a = before.get(tid)
        if a is None:
            continue
        dt = b["t"] - a["t"]
        out[tid] = {"comm": b["comm"], "cpu": b["cpu"], "window_s": dt,
                    "cpu_share": (b["run_ns"] - a["run_ns"]) / 1e9 / dt if dt else 0.0,
                    "rq_wait_share": (b["wait_ns"] - a["wait_ns"]) / 1e9 / dt if dt else 0.0,
                    "rq_wait_ms": (b["wait_ns"] - a["wait_ns"]) / 1e6,
                    "vcs": b["vcs"] - a["vcs"], "ivcs": b["ivcs"] - a["ivcs"]}
    return out


def by_name(use):
    """{thread name: CPU share}, names made unique with the tid where repeated."""
    names = [u["comm"] for u in use.values()]
    return {(u["comm"] if names.count(u["comm"]) == 1 else f"{u['comm']}/{tid}"):
            round(u["cpu_share"], 4) for tid, u in sorted(use.items())}


def lcore_threads(snap):
    """The tids of DPDK's lcore threads other than the main one (EAL names
    them rte-worker-N in 22.11, lcore-worker-N later)."""
    return sorted(tid for tid, t in snap.items()
                  if t["comm"].startswith(("rte-worker-", "lcore-worker-")))
