#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpbench: single-gateway dataplane benchmarks on the real binaries.

The real dpvpn-dataplane, configured by the real dpvpnd, is fed by a net_pcap
port that replays a capture (infinite_rx=1: the PMD loads it into mbufs and
copies each into a fresh mbuf as it hands it over) and sends into a net_null
port that discards (no-rx=1):

  encap:  cleartext  -> [pcap, inside]  dpvpn  [null, outside] -> ESP, dropped
  decap:  ESP        -> [pcap, outside] dpvpn  [null, inside]  -> cleartext, dropped

No special code path: the same poll loop, tables and crypto as in production.

Encap replays 64 packets forever; throughput is the change of the
dataplane's own `encrypted` counter over a timed window after a warm-up.

Decap runs with anti-replay on (replay-window = 1024, dpvpnd's default): the
capture is long (2^18 packets, made by espgen.py), each tunnel's sequence
numbers count up from 1, and the figure is taken over a window inside the
first pass only, where every packet is new to the window check.  The pass is
short (tens of ms), so it is read from DPDK telemetry: each worker's packet
counters and the TSC cycles of its polls (busy + idle, i.e. the worker's own
clock), sampled as fast as the socket answers; throughput = packets
decrypted in the window / its TSC duration.  The warm-up is the first
eighth of the pass.  After the pass the capture starts again and every
packet is dropped as a replay (`replayed_after_pass`: the check is on).
`anti_replay=False` gives the old method (64 packets forever,
replay-window = 0) for comparisons with gateways that check no replay.

Every other counter is checked so that a run which dropped packets is
reported, not hidden, and every thread's scheduler accounting is read over
the window (probe.py): a worker that had to wait for its CPU is reported
(`sched`), and perf/run discards such repetitions.

The pcap PMD copies each replayed packet into a fresh mbuf: that RX cost,
which a NIC would not charge to the CPU, is inside the figures; perf/run
measures it alone (harness.py) and gives the figures net of it beside them.
"""
import argparse
import atexit
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "helpers"))
sys.path.insert(0, HERE)
import lab  # noqa: E402
import probe  # noqa: E402
from esp_oracle import CIPHERS  # noqa: E402

CRYPTOBENCH = os.path.join(lab.BUILD, "perf", "dpvpn-cryptobench")


def keys(cipher, direction):
    """Benchmark keys (public, fixed): (key [+ salt], auth key) as hex, '' when
    the cipher has none; AES-GCM keeps the lab's keys."""
    if cipher == "aes128-gcm":
        return (("0123456789abcdef0123456789abcdef01020304" if direction == "out" else
                 "fedcba9876543210fedcba987654321005060708"), "")
    _, klen, slen, _, alen, _, _ = CIPHERS[cipher]
    seed = hashlib.sha512(f"dpvpn bench {cipher} {direction}".encode()).digest()
    return seed[:klen + slen].hex(), seed[32:32 + alen].hex()


# key + salt per direction (out, in), for the AES-GCM-only tools (secgw_bench)
KEYS = {c: (keys(c, "out")[0], keys(c, "in")[0]) for c in ("aes128-gcm", "aes256-gcm")}


def key_lines(cipher):
    text = ""
    for d in ("out", "in"):
        key, auth = keys(cipher, d)
        text += f"{d}-key = 0x{key}\n" if key else ""
        text += f"{d}-auth-key = 0x{auth}\n" if auth else ""
    return text
PCAP_MAC = "02:70:63:61:70:00"      # the first net_pcap device's MAC
PEER_MAC = "02:00:00:00:0b:01"      # [neighbor peer]
FLOWS = 64                          # distinct packets in the replayed capture
MANY_FLOWS = 1024                   # ... at least, when there are many tunnels
MIXES = ("uniform", "skewed")       # how many tunnels' packets are mixed (capture_order)
SKEW_HOT, SKEW_SHARE = 0.10, 0.90   # skewed: 10 % of the tunnels carry 90 % of the packets
DECAP_WINDOW = 1024                 # dpvpnd's default replay-window
FIRST_PASS_BYTES = 64 << 20         # decap: what the long capture's packets touch, about
WARMUP_SHARE = 1 / 8                # decap: the window starts after this share of the pass
BURST = 32                          # the dataplane's RX burst (dp.h DP_BURST)
SAMPLE_GAP_S = 0.0002               # decap: between telemetry samples of the pass


def first_pass_packets(size):
    """The decap capture's length (over all queues): 2^15..2^18 packets, as
    many as keep what they touch (frame + mbuf header, ~size + 192 bytes each)
    within FIRST_PASS_BYTES, so that they can stay in a server's last-level
    cache: 2^17 at 64 B, 2^15 at 1420 B (a pass of 9 ms at 15 Mpps, 8 ms at
    4 Mpps: hundreds of telemetry samples).  The harness's copy of each
    packet still costs more than from the 64-packet capture, whose source
    stays in L1 (harness.py measures it over the same capture)."""
    n = 1 << 15
    while n < 1 << 18 and 2 * n * (size + 192) < FIRST_PASS_BYTES:
        n *= 2
    return n


def flows_for(sas):
    """Packets in the capture: 64 for one tunnel; with many, one per
    installed tunnel at least (issue 28: traffic on every one), MANY_FLOWS
    at least."""
    return FLOWS if sas == 1 else max(MANY_FLOWS, sas)


def capture_order(sas, mix="uniform", seed=28, n=None):
    """The tunnel of each packet of the capture, n (flows_for(sas)) of them.
    uniform: every tunnel, in a random order (a permutation, repeated where
    the capture is longer); skewed: each packet on a random 10 % of the
    tunnels with probability 0.9, else on one of the rest (uniform within
    each group), so the hot tunnels carry 90 % of the packets.  Random but
    the same every run (seed)."""
    import random
    if mix not in MIXES:
        raise ValueError(f"mix {mix!r}: not one of {', '.join(MIXES)}")
    n = n or flows_for(sas)
    if sas == 1:
        return [0] * n
    rnd = random.Random(seed)
    if mix == "uniform":
        perm = list(range(sas))
        rnd.shuffle(perm)
        return [perm[i % sas] for i in range(n)]
    tunnels = list(range(sas))
    rnd.shuffle(tunnels)
    k = max(1, int(sas * SKEW_HOT))
    hot, cold = tunnels[:k], tunnels[k:] or tunnels[:k]
    return [rnd.choice(hot) if rnd.random() < SKEW_SHARE else rnd.choice(cold)
            for _ in range(n)]


TUNNEL = """
[tunnel {name}]
local = 198.19.0.1
remote = 198.19.0.2
local-ts = 198.18.1.0/24
remote-ts = {remote_ts}
cipher = {cipher}
out-spi = {out_spi:#x}
in-spi = {in_spi:#x}
replay-window = {window}
"""


def tunnel_params(i, sas):
    """Tunnel i of sas: one tunnel keeps the lab's selectors and SPIs; many
    get a /32 each in 100.64.0.0/10 and their own SPIs (packets to those
    addresses never leave the process: net_pcap in, net_null out)."""
    if sas == 1:
        return "198.18.2.0/24", "198.18.2.2", 0x1001, 0x2001
    a = (100 << 24) | (64 << 16) | i
    dst = f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}"
    return dst + "/32", dst, 0x100000 + i, 0x200000 + i


def config(cipher, direction, sas=1, window=None):
    """window: the inbound SAs' replay-window (default: DECAP_WINDOW, 0 for
    decap over the 64 replayed packets)."""
    if window is None:
        window = 0 if direction == "decap" else DECAP_WINDOW
    head = """
[port inside]
id = 0
role = inside
address = 198.18.1.1/24

[port outside]
id = 1
role = outside
address = 198.19.0.1/24

[neighbor peer]
port = outside
address = 198.19.0.2
mac = 02:00:00:00:0b:01

[neighbor host]
port = inside
address = 198.18.1.2
mac = 02:00:00:00:0a:02
"""
    parts = [head]
    for i in range(sas):
        ts, _, out_spi, in_spi = tunnel_params(i, sas)
        parts.append(TUNNEL.format(name="bench" if sas == 1 else f"t{i}", remote_ts=ts,
                                   cipher=cipher, out_spi=out_spi, in_spi=in_spi,
                                   window=window) + key_lines(cipher))
    return "".join(parts)


def inner(i, size, src, dst):
    from scapy.all import IP, UDP, Raw
    return IP(src=src, dst=dst, id=i & 0xffff) / UDP(sport=1024 + i % 60000, dport=9) / \
        Raw(_payload(i & 0xff, size - 28))


_payloads = {}


def _payload(first, n):
    """Bytes first, first + 1, ... (mod 256), n of them (made once a kind)."""
    if (first, n) not in _payloads:
        _payloads[(first, n)] = bytes((first + k) & 0xff for k in range(n))
    return _payloads[(first, n)]


def make_pcap(path, cipher, direction, size, sas=1, mix="uniform", n=None):
    """The capture to replay: n (flows_for(sas)) packets over the tunnels as
    capture_order(sas, mix) has them.  DPVPN_PCAP_CACHE names a folder of
    ready-made ones (a rig without scapy gets them carried there:
    perf/device-pack)."""
    cache = os.environ.get("DPVPN_PCAP_CACHE")
    name = f"{cipher}-{direction}-{size}" + (f"-{sas}sa" if sas > 1 else "") + \
        (f"-{mix}" if sas > 1 and mix != "uniform" else "") + (f"-{n}" if n else "") + ".pcap"
    if cache and os.path.exists(os.path.join(cache, name)):
        shutil.copy(os.path.join(cache, name), path)
        return
    from scapy.all import IP, Ether, wrpcap
    from scapy.layers.ipsec import ESP, SecurityAssociation

    tunnels = [tunnel_params(t, sas) for t in capture_order(sas, mix, n=n)]
    if direction == "encap":
        pkts = [Ether(dst=PCAP_MAC, src="02:00:00:00:0a:02") /
                inner(i, size, "198.18.1.2", t[1]) for i, t in enumerate(tunnels)]
    else:
        pkts = []
        crypt, _, _, auth, _, _, _ = CIPHERS[cipher]
        key, auth_key = keys(cipher, "in")
        for i, (_, host, _, in_spi) in enumerate(tunnels):
            sa = SecurityAssociation(ESP, spi=in_spi, crypt_algo=crypt,
                                     crypt_key=bytes.fromhex(key) or None,
                                     auth_algo=auth, auth_key=bytes.fromhex(auth_key) or None,
                                     tunnel_header=IP(src="198.19.0.2", dst="198.19.0.1"))
            pkts.append(Ether(dst=PCAP_MAC, src=PEER_MAC) /
                        sa.encrypt(inner(i, size, host, "198.18.1.2"), seq_num=i + 1))
    wrpcap(path, pkts)
    if cache:
        os.makedirs(cache, exist_ok=True)
        shutil.copy(path, os.path.join(cache, name))


_first_pass_dir = None


def _captures_dir():
    """Where the long decap captures live for this process: tmpfs, removed at exit."""
    global _first_pass_dir
    if _first_pass_dir is None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        _first_pass_dir = tempfile.mkdtemp(prefix="dpvpn-bench-", dir=base)
        atexit.register(shutil.rmtree, _first_pass_dir, True)
    return _first_pass_dir


def make_first_pass_pcaps(cipher, size, sas, queues, packets, mix="uniform"):
    """The decap captures for anti-replay on: `packets` ESP frames over all
    queues, in capture_order(sas, mix) (repeated), each tunnel's sequence
    numbers rising from 1; tunnel i's packets all go to queue i % queues
    (as RSS would keep one tunnel on one queue).  Made once per process and
    case, then reused; returns the paths."""
    import espgen
    order = capture_order(sas, mix)
    key, auth_key = (bytes.fromhex(x) for x in keys(cipher, "in"))
    eth = bytes.fromhex(PCAP_MAC.replace(":", "") + PEER_MAC.replace(":", "") + "0800")
    paths = []
    for q in range(queues):
        path = os.path.join(_captures_dir(),
                            f"{cipher}-{size}-{sas}sa-{mix}-{packets}-q{q}of{queues}.pcap")
        paths.append(path)
        if os.path.exists(path):
            continue
        mine = [(t[3], bytes(inner(i, size, t[1], "198.18.1.2")))
                for i, t in ((i, tunnel_params(n, sas)) for i, n in enumerate(order))
                if order[i] % queues == q]
        frames = espgen.esp_frames(cipher, key, auth_key, mine, eth, "198.19.0.2",
                                   "198.19.0.1")
        espgen.write(path + ".tmp", frames, packets // queues)
        os.replace(path + ".tmp", path)
    return paths


def lcore_args(workers):
    """Main lcore on CPU 0, workers spread over the CPUs that exist."""
    return ["--lcores", ",".join(["0@0"] + [f"{w}@{c}" for w, c in
                                            enumerate(worker_cpus(workers), 1)])]


def worker_cpus(workers):
    """A CPU each while the main lcore can keep one to itself (CPUs 1..);
    more workers than that: spread over every CPU, the first beside the
    main lcore, which sleeps in poll() (was: all of them on CPUs 1.., so on
    a 2-vCPU machine two workers shared CPU 1 and every repetition was
    flagged disturbed: [scale] issue 28, requirement 5)."""
    ncpu = os.cpu_count() or 1
    if ncpu == 1:
        return [0] * workers
    if workers < ncpu:
        return list(range(1, workers + 1))
    return [w % ncpu for w in range(workers)]


@contextlib.contextmanager
def off_cpus(cpus):
    """This thread (and what it starts) off the workers' CPUs while it samples."""
    old = os.sched_getaffinity(0)
    rest = old - set(cpus)
    if rest:
        os.sched_setaffinity(0, rest)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


_tsc_hz = None


def tsc_hz():
    """The TSC frequency, as dpvpn-cryptobench calibrates it (perf/run passes
    its own run's figure with set_tsc_hz)."""
    global _tsc_hz
    if _tsc_hz is None:
        r = subprocess.run([CRYPTOBENCH, "--alg", "aes128-gcm", "--size", "64", "--dir",
                            "encrypt", "--engine", "ipsec-mb-burst", "--ms", "1", "--reps",
                            "1", "--json"], capture_output=True, text=True, timeout=60,
                           check=True)
        _tsc_hz = json.loads(r.stdout)["tsc_hz"]
    return _tsc_hz


def set_tsc_hz(hz):
    global _tsc_hz
    _tsc_hz = hz


def sched_summary(use, workers_tids):
    """The workers' scheduler accounting over the window: the worst of them."""
    ws = [use[t] for t in workers_tids if t in use]
    if not ws:
        return {}
    return {"rq_wait_share": max(w["rq_wait_share"] for w in ws),
            "rq_wait_ms": max(w["rq_wait_ms"] for w in ws),
            "ivcs": sum(w["ivcs"] for w in ws), "vcs": sum(w["vcs"] for w in ws),
            "cpu_share": min(w["cpu_share"] for w in ws), "window_s": ws[0]["window_s"]}


# perf/stages.py sets this: each lcore sample also holds its TSC cycles per
# fast-path stage (/dpvpn/stages,ID; a -Dstage_cycles=true build counts them).
STAGES = False


def lcore_stats(tel, lcores):
    out = [tel.cmd(f"/dpvpn/lcore,{lc}") for lc in lcores]
    if STAGES:
        for o, lc in zip(out, lcores):
            o["stages"] = tel.cmd(f"/dpvpn/stages,{lc}")
    return out


def stage_split(l0, l1, packets):
    """TSC cycles per packet in each stage between two lcore samples (workers
    summed), and "other": the busy cycles no stage claimed (calls, the loop)."""
    if not packets or any(not x["stages"]["counted"] for x in l1):
        raise RuntimeError("stage cycles: not a -Dstage_cycles=true build")
    skip = {"counted", "rx_packets", "encrypted", "decrypted", "busy_cycles"}
    out, claimed = {}, 0
    for key in l1[0]["stages"]:
        if key in skip:
            continue
        d = sum(y["stages"][key] - x["stages"][key] for x, y in zip(l0, l1))
        claimed += d
        out[key.replace("_", "-")] = d / packets
    busy = sum(y["busy_cycles"] - x["busy_cycles"] for x, y in zip(l0, l1))
    out["other"] = (busy - claimed) / packets
    return out


def row_base(cipher, direction, size, workers, sas):
    return {"cipher": cipher, "size": size, "direction": direction, "workers": workers,
            "sas": sas}


def first_pass_note(direction, anti_replay, workers, sas):
    """None when the case runs over the first pass of a long capture (decap
    with anti-replay); else why it does not, for decap asked with anti-replay."""
    if direction != "decap" or not anti_replay:
        return None
    if sas < workers:
        return (f"{workers} workers, {sas} tunnel(s): one tunnel's sequence numbers "
                f"cannot be split over queues, so this row replays {flows_for(sas)} "
                "packets with replay-window = 0")
    try:
        import espgen  # noqa: F401  (needs python3-cryptography)
    except ImportError as e:
        return f"no long capture ({e}): {flows_for(sas)} packets with replay-window = 0"
    return None


def capture(cipher, direction, size, workers, sas, anti_replay, packets, mix="uniform"):
    """The files net_pcap replays for a case (one per queue, made once per
    process) and how many packets they hold together.  The decap capture
    holds a packet per tunnel at least, so that its first pass reaches
    every tunnel."""
    if direction == "decap" and anti_replay and \
            first_pass_note(direction, anti_replay, workers, sas) is None:
        # each queue's pass as long as one worker's (workers that share the
        # sampler's CPUs leave it fewer samples of a shorter pass)
        packets = packets or max(first_pass_packets(size) * workers,
                                 flows_for(sas) if sas > 1 else 0)
        return make_first_pass_pcaps(cipher, size, sas, workers, packets, mix), packets
    n = packets or flows_for(sas)
    path = os.path.join(_captures_dir(), f"{cipher}-{direction}-{size}-{sas}sa-{mix}-{n}.pcap")
    if not os.path.exists(path):
        make_pcap(path + ".tmp", cipher, direction, size, sas, mix, packets)
        os.replace(path + ".tmp", path)
    return [path] * workers, n * workers


def run_case(cipher, direction, size, workers=1, seconds=3.0, warmup=1.0, workdir=None,
             sas=1, anti_replay=True, packets=None, mix="uniform"):
    """One measurement over sas tunnels; returns a row dict (perf/README.md).
    packets: the decap capture's length (default first_pass_packets(size),
    or a packet per tunnel if more).  mix: capture_order's, with many tunnels.
    Decap with anti_replay (the default) needs a tunnel per worker at least
    (each tunnel's packets on one queue); else it runs as anti_replay=False
    and says why."""
    d = tempfile.mkdtemp(prefix="dpbench-", dir=workdir)
    note = first_pass_note(direction, anti_replay, workers, sas)
    paths, n = capture(cipher, direction, size, workers, sas, anti_replay, packets, mix)
    try:
        if direction == "decap" and anti_replay and note is None:
            r = first_pass(cipher, size, workers, sas, paths, n, d)
        else:
            r = steady(cipher, direction, size, workers, seconds, warmup, sas, paths, d,
                       n // workers)
            if note:
                r["anti_replay_note"] = note
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if sas > 1:
        r["mix"] = mix
    return r


def gateway(cfg_text, vdevs, d, workers, sas, extra_args=()):
    cfg = os.path.join(d, "bench.conf")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    return lab.Gateway("bench", cfg, vdevs, d, lcore_args(workers),
                       dp_args=["--idle-sleep-us", "0", "--max-sa", str(2 * sas + 16),
                                *extra_args])


def steady(cipher, direction, size, workers, seconds, warmup, sas, paths, d, flows=None):
    """A capture of flows (flows_for(sas)) packets replayed forever; a timed window."""
    flows = flows or flows_for(sas)
    rx = "net_pcap0," + ",".join(f"rx_pcap={p}" for p in paths) + ",infinite_rx=1"
    null = "net_null0,no-rx=1"
    vdevs = [rx, null] if direction == "encap" else [null, rx]
    # the PMD keeps the whole capture in mbufs of the dataplane's pool
    n = flows * workers
    gw = gateway(config(cipher, direction, sas), vdevs, d, workers, sas,
                 ["--mbufs", str(n + 65536 + 8192 * workers)] if n > 16384 else ())
    key = "encrypted" if direction == "encap" else "decrypted"
    try:
        gw.start(timeout=30 + sas / 1000)    # installing 100k tunnels takes a while
        time.sleep(warmup)
        pid, tel = gw.dataplane.p.pid, probe.Telemetry(gw.file_prefix)
        try:
            lcores = tel.cmd("/dpvpn/lcores")[1:]
            with off_cpus(worker_cpus(workers)):
                th0, l0, (t0, n0, c0) = probe.threads(pid), lcore_stats(tel, lcores), \
                    sample(gw, key)
                time.sleep(seconds)
                t1, n1, c1 = sample(gw, key)
                l1, th1 = lcore_stats(tel, lcores), probe.threads(pid)
        finally:
            tel.close()
    finally:
        gw.stop()
    pps = (n1 - n0) / (t1 - t0)
    drops = {k: v - c0["drops"][k] for k, v in c1["drops"].items() if v != c0["drops"][k]}
    use = probe.usage(th0, th1)
    busy = sum(b["busy_cycles"] - a["busy_cycles"] for a, b in zip(l0, l1))
    r = row_base(cipher, direction, size, workers, sas)
    r.update({"mpps": pps / 1e6, "gbps": pps * size * 8 / 1e9, "seconds": t1 - t0,
              "drops": drops,
              "method": f"steady: {flows}-packet capture replayed, timed window",
              "busy_cycles_per_packet": busy / (n1 - n0) if n1 > n0 else None,
              "sched": sched_summary(use, probe.lcore_threads(th1)),
              "threads": probe.by_name(use)})
    if direction == "decap":
        r.update(anti_replay=False, replay_window=0)
    if STAGES:
        r["stages"] = stage_split(l0, l1, n1 - n0)
    return r


def first_pass(cipher, size, workers, sas, paths, packets, d):
    """Decap with anti-replay on over the first pass of a long capture."""
    per_queue = packets // workers
    rx = "net_pcap0," + ",".join(f"rx_pcap={p}" for p in paths) + ",infinite_rx=1"
    # the PMD keeps the whole capture in mbufs of the dataplane's pool
    mbufs = packets + 65536 + 8192 * workers
    gw = gateway(config(cipher, "decap", sas, DECAP_WINDOW), ["net_null0,no-rx=1", rx], d,
                 workers, sas, ["--mbufs", str(mbufs)])
    timeout = 30 + sas / 1000
    try:
        gw.start_dataplane(timeout)
        pid, tel = gw.dataplane.p.pid, probe.Telemetry(gw.file_prefix)
        try:
            lcores = tel.cmd("/dpvpn/lcores")[1:]
            with off_cpus(worker_cpus(workers)):
                samples = [pass_sample(tel, lcores, pid, None)]
                gw.start_dpvpnd(wait=False)
                samples += sample_pass(gw, tel, lcores, pid, per_queue, timeout)
                after = tel.cmd("/dpvpn/counters")
        finally:
            tel.close()
        gw.wait_dpvpnd(timeout)
    finally:
        gw.stop()
    r = row_base(cipher, "decap", size, workers, sas)
    r.update(window_of(samples, per_queue, workers))
    r["gbps"] = r["mpps"] * size * 8 / 1e3
    r.update({"anti_replay": True, "replay_window": DECAP_WINDOW, "capture_packets": packets,
              "replayed_after_pass": after["drop_replay"],
              "method": "first pass of a long capture (rising sequence numbers), "
                        "telemetry window"})
    return r


def pass_sample(tel, lcores, pid, tids):
    """Every worker's lcore stats; then either every thread of pid (tids None)
    or the run-queue wait of the given threads only (quick to read)."""
    s = {"ls": lcore_stats(tel, lcores)}
    if tids is None:
        s["threads"] = probe.threads(pid)
        s["wait"] = [s["threads"][t]["wait_ns"] for t in probe.lcore_threads(s["threads"])]
    else:
        s["wait"] = [sched_ns(pid, t) for t in tids]
    return s


def sample_pass(gw, tel, lcores, pid, per_queue, timeout):
    """Samples as fast as telemetry answers, from the first packet until every
    queue is through its capture once (the first and last with every thread)."""
    samples, end = [], time.monotonic() + timeout
    tids = probe.lcore_threads(probe.threads(pid))
    while time.monotonic() < end:
        s = pass_sample(tel, lcores, pid, None if not samples else tids)
        if all(x["rx_packets"] == 0 for x in s["ls"]):
            if not gw.dpvpnd.alive():
                raise RuntimeError(f"dpvpnd failed:\n{gw.dpvpnd.output()}")
            time.sleep(0.001)
            continue
        samples.append(s)
        if all(x["rx_packets"] >= per_queue for x in s["ls"]):
            samples.append(pass_sample(tel, lcores, pid, None))
            return samples
        # Not flat out: a sampler that kept its CPU (and the telemetry
        # thread's) busy would push other tasks onto the workers' CPUs.
        time.sleep(SAMPLE_GAP_S)
    raise TimeoutError(f"decap pass not through after {timeout} s")


def sched_ns(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[1])     # ns waiting in the run queue
    except OSError:
        return 0


def window_of(samples, per_queue, workers):
    """The figures over the part of the pass after the warm-up share and before
    any queue reaches its end (every packet there is new to its SA)."""
    total = per_queue * workers
    dec = [sum(x["decrypted"] for x in s["ls"]) for s in samples]
    inside = [i for i, s in enumerate(samples)
              if 0 < i < len(samples) - 1 and
              all(x["rx_packets"] <= per_queue - 2 * BURST for x in s["ls"])]
    first = next((i for i in inside if dec[i] >= WARMUP_SHARE * total), None)
    if first is None or inside[-1] <= first or dec[inside[-1]] - dec[first] < total / 4:
        raise RuntimeError(f"decap: the first pass ({total} packets) went by in "
                           f"{len(samples)} samples, too few to take a window inside it")
    a, b = samples[first], samples[inside[-1]]
    cyc = max((y["busy_cycles"] + y["idle_cycles"]) - (x["busy_cycles"] + x["idle_cycles"])
              for x, y in zip(a["ls"], b["ls"]))
    busy = sum(y["busy_cycles"] - x["busy_cycles"] for x, y in zip(a["ls"], b["ls"]))
    drops = sum(y["drops"] - x["drops"] for x, y in zip(a["ls"], b["ls"]))
    n = dec[inside[-1]] - dec[first]
    hz = tsc_hz()
    window_s = cyc / hz
    use = probe.usage(samples[1]["threads"], samples[-1]["threads"])
    sched = sched_summary(use, probe.lcore_threads(samples[-1]["threads"]))
    wait_ms = max(y - x for x, y in zip(a["wait"], b["wait"])) / 1e6
    sched.update(rq_wait_ms=wait_ms, rq_wait_share=wait_ms / 1e3 / window_s,
                 window_s=window_s)
    r = {"mpps": n / window_s / 1e6, "seconds": window_s, "window_packets": n,
         "drops": {"in-window": drops} if drops else {},
         "busy_cycles_per_packet": busy / n, "tsc_hz": hz, "sched": sched,
         "threads": probe.by_name(use)}
    if STAGES:
        r["stages"] = stage_split(a["ls"], b["ls"], n)
    return r


def sample(gw, key):
    c = gw.ctl("show", "counters")
    return time.monotonic(), c[key], c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cipher", default="aes128-gcm")
    ap.add_argument("--dir", default="encap,decap")
    ap.add_argument("--size", default="64,1420")
    ap.add_argument("--workers", default="1")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--sas", default="1", help="tunnels (each an SA pair and a policy)")
    ap.add_argument("--no-anti-replay", action="store_true",
                    help="decap: 64 packets replayed with replay-window = 0")
    ap.add_argument("--packets", type=int,
                    help="the capture's length (default: 64 for one tunnel, a packet a "
                    "tunnel with many; decap with anti-replay: first_pass_packets)")
    ap.add_argument("--mix", default="uniform",
                    help="with many tunnels, comma-separated: " + ", ".join(MIXES) +
                    " (capture_order)")
    a = ap.parse_args()
    rows = []
    for cipher in a.cipher.split(","):
        for direction in a.dir.split(","):
            for size in map(int, a.size.split(",")):
                for w, n, mix in ((w, n, m) for w in map(int, a.workers.split(","))
                                  for n in map(int, a.sas.split(","))
                                  for m in (a.mix.split(",") if n > 1 else ["uniform"])):
                    r = run_case(cipher, direction, size, w, a.seconds, sas=n,
                                 anti_replay=not a.no_anti_replay, mix=mix,
                                 packets=a.packets)
                    print(f"{cipher:11} {direction:5} {size:5} B  {w} worker(s) {n} SA(s) "
                          f"{mix if n > 1 else ''}: "
                          f"{r['mpps']:7.3f} Mpps {r['gbps']:7.2f} Gbit/s  drops {r['drops']}",
                          file=sys.stderr)
                    rows.append(r)
    json.dump({"rows": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
