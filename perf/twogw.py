#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""twogw: throughput and latency through two dpvpn gateways, on one machine.

  dpvpn-pktgen                 gateway A                    gateway B                 dpvpn-pktgen
  port 0 (TX) ==link 0== [0 inside] dpvpn [1 outside] ==link 1== [1 outside] dpvpn [0 inside] ==link 2== port 1 (RX)
  198.18.1.2             198.18.1.1        198.19.0.1            198.19.0.2        198.18.2.1   198.18.2.2

The real dpvpn-dataplane + dpvpnd twice (configs/lab-a.conf and lab-b.conf,
cipher and keys swapped in for aes256-gcm, static [neighbor] entries added
because pktgen answers no ARP and a first packet must not wait for one), fed
and drained by one dpvpn-pktgen process: every packet is encrypted by A and
decrypted by B, and pktgen's sequence numbers and TSC stamps give loss,
reordering and one-way latency over the whole path.

Links (--link):
  memif      net_memif pairs (default): shared-memory rings, several Mpps.
             Each gateway is the memif server of the links it shares with
             pktgen and A is the server of link 1; the sockets live in the
             work dir.  DPDK 22.11's memif server can crash when its client
             goes away: every figure is read before anything is stopped, a
             crash at shutdown is recorded ("shutdown") and tolerated.
  af_packet  veth pairs in a network namespace of our own (dpvpn-2gw-*),
             driven with net_af_packet: robust, about 0.5 Mpps at most.

Per case: (1) throughput: pktgen at --rate max for --seconds; Mpps and inner
Gbit/s as received at the far end, loss; (2) latency: pktgen at a low fixed
rate (--lat-rate, no loss expected) with the latency histogram; p50, p99,
p99.9, max, and CDF points.  Sizes are inner IPv4 lengths as in dpbench;
pktgen's L2 frame is 14 bytes more.

CPU placement (placement()): main lcores on CPU 0; pktgen's TX and RX lcores
and the two gateways' workers each get a CPU of their own when the machine
has them.  With fewer CPUs the busy pollers share: on 2 vCPUs pktgen (TX and
RX on one lcore) and gateway A share one CPU and gateway B has the other, and
every row says so ("shared_cpus"); the latency figures then contain the
kernel's time slicing between busy pollers (milliseconds).
"""
import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "helpers"))
import lab  # noqa: E402

PKTGEN = os.path.join(lab.BUILD, "perf", "pktgen", "dpvpn-pktgen")
KEYS = {  # key + salt per direction (A->B, B->A), as in configs/lab-*.conf
    "aes128-gcm": ("0123456789abcdef0123456789abcdef01020304",
                   "fedcba9876543210fedcba987654321005060708"),
    "aes256-gcm": ("0123456789abcdef0123456789abcdef" * 2 + "01020304",
                   "fedcba9876543210fedcba9876543210" * 2 + "05060708"),
}
MAC = {  # set on every port so that the static neighbours can name them
    "pg0": "02:00:00:00:0a:02", "a-in": "02:00:00:00:0a:01",
    "a-out": "02:00:00:00:0b:01", "b-out": "02:00:00:00:0b:02",
    "b-in": "02:00:00:00:0c:01", "pg1": "02:00:00:00:0c:02",
}
# net_af_packet names a port's fanout group (getpid() ^ ifindex) & 0xffff, and
# groups are shared within a namespace: with small neighbouring ifindices, two
# processes of the run (close pids) collide often.  Interface numbers whose
# top bits differ per process make that need pids 4096 apart or more.
IFINDEX = {"pg0": 0x5001, "pg1": 0x5002, "a-in": 0xa001, "a-out": 0xa002,
           "b-in": 0xf001, "b-out": 0xf002}
SRC, DST = "198.18.1.2", "198.18.2.2"     # host A and host B of the lab
L2_HDR = 14                               # pktgen --size is inner length + this
NS_PREFIX = "dpvpn-2gw-"
# memif rings of 2^14 slots (the PMD's largest; 2^10 by default): where two
# busy pollers share a CPU, each one's time slice must not outlast the ring
# that links them, or the ring size, not dpvpn, sets the rate.
MEMIF_LOG2_RING = 14
# pktgen sends only once both of its links are up: a memif link is up when
# its peer has connected, and B would drop what A sent before that.
LINK_WAIT_MS = 5000
CDF_POINTS = 200                          # at most this many [ns, fraction] pairs


def gateway_config(side, cipher):
    """configs/lab-<side>.conf with the cipher's keys, plus static neighbours."""
    with open(os.path.join(lab.CONFIGS, f"lab-{side}.conf")) as f:
        text = f.read()
    text = text.replace("cipher = aes128-gcm", f"cipher = {cipher}")
    for old, new in zip(KEYS["aes128-gcm"], KEYS[cipher]):
        text = text.replace("0x" + old, "0x" + new)
    if side == "a":
        neigh = [("host", "inside", SRC, MAC["pg0"]), ("peer", "outside", "198.19.0.2", MAC["b-out"])]
    else:
        neigh = [("host", "inside", DST, MAC["pg1"]), ("peer", "outside", "198.19.0.1", MAC["a-out"])]
    for name, port, addr, mac in neigh:
        text += f"\n[neighbor {name}]\nport = {port}\naddress = {addr}\nmac = {mac}\n"
    return text


def placement(ncpu=None):
    """CPUs of the busy lcores; main lcores (which sleep) go on CPU 0.

    Returns {"pktgen": [cpu] or [tx cpu, rx cpu], "gw-a": cpu, "gw-b": cpu,
    "shared_cpus": bool}."""
    ncpu = ncpu or os.cpu_count() or 1
    split = ncpu >= 5                       # pktgen TX and RX on lcores of their own
    busy = 4 if split else 3
    cpus = list(range(1, ncpu)) if ncpu - 1 >= busy else list(range(ncpu))
    pick = [cpus[i % len(cpus)] for i in range(busy)]
    # Short of CPUs, A shares pktgen's: pktgen -> A stalls are back-pressure
    # on the link (memif), not loss, while B, which must keep up, runs alone.
    return {"pktgen": pick[:busy - 2], "gw-b": pick[-2], "gw-a": pick[-1],
            "shared_cpus": busy > len(cpus)}


def describe(place):
    pg = place["pktgen"]
    pg = f"pktgen TX {pg[0]} RX {pg[1]}" if len(pg) == 2 else f"pktgen TX+RX {pg[0]}"
    s = f"CPUs: {pg}, gw-a worker {place['gw-a']}, gw-b worker {place['gw-b']}"
    return s + ("; the busy pollers SHARE CPUs: figures are for the whole chain "
                "on this machine, not per gateway" if place["shared_cpus"] else "")


class Links:
    """The three links and the vdev arguments of each process's ports."""

    def __init__(self, kind, workdir):
        self.kind, self.dir, self.ns = kind, workdir, None
        self.socks = [os.path.join(workdir, f"link{i}.sock") for i in range(3)]

    def up(self):
        if self.kind == "memif":
            self._remove_socks()
            return
        self.ns = NS_PREFIX + secrets.token_hex(3)
        lab.sh("ip", "netns", "add", self.ns)
        for a, b in (("pg0", "a-in"), ("a-out", "b-out"), ("b-in", "pg1")):
            lab.sh("ip", "-n", self.ns, "link", "add", a, "index", str(IFINDEX[a]), "type",
                   "veth", "peer", "name", b, "index", str(IFINDEX[b]))
        for dev in MAC:
            lab.sh("ip", "netns", "exec", self.ns, "ethtool", "-K", dev, "tx", "off", "tso",
                   "off", "gso", "off", "gro", "off", check=False)
            lab.sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
                   f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
            lab.sh("ip", "-n", self.ns, "link", "set", dev, "address", MAC[dev], "up")

    def down(self):
        if self.ns:
            lab.sh("ip", "netns", "del", self.ns, check=False)
            self.ns = None
        if self.kind == "memif":
            self._remove_socks()

    def _remove_socks(self):
        for s in self.socks:
            if os.path.lexists(s):
                os.unlink(s)

    def _memif(self, i, port, link, role):
        return (f"net_memif{i},role={role},id=0,socket={self.socks[link]},"
                f"socket-abstract=no,mac={MAC[port]},rsize={MEMIF_LOG2_RING}")

    def vdevs(self, who):
        """[port 0, port 1] of who: "a", "b" or "pg"."""
        ports = {"a": ("a-in", "a-out"), "b": ("b-in", "b-out"), "pg": ("pg0", "pg1")}[who]
        if self.kind == "af_packet":
            return [f"net_af_packet{i},iface={p}" for i, p in enumerate(ports)]
        links = {"a": (0, 1), "b": (2, 1), "pg": (0, 2)}[who]
        roles = {"a": ("server", "server"), "b": ("server", "client"),
                 "pg": ("client", "client")}[who]
        return [self._memif(i, p, ln, r) for i, (p, ln, r) in enumerate(zip(ports, links, roles))]


def pktgen_argv(links, place, size, rate, seconds, count=None, hist=False):
    lcores = ["0@0"] + [f"{i + 1}@{c}" for i, c in enumerate(place["pktgen"])]
    eal = ["--no-pci", "--file-prefix", f"dpvpn-2gw-pg-{os.getpid()}", "--log-level",
           "lib.eal:error", "--lcores", ",".join(lcores), *lab.eal_mem_args()]
    for v in links.vdevs("pg"):
        eal += ["--vdev", v]
    opts = ["--tx-port", "0", "--rx-port", "1", "--src", SRC, "--dst", DST,
            "--dst-mac", MAC["a-in"], "--size", str(size + L2_HDR), "--rate", rate,
            "--duration", str(seconds), "--link-wait-ms", str(LINK_WAIT_MS), "--json"]
    if count:
        opts += ["--count", str(count)]
    if hist:
        opts += ["--hist"]
    argv = [PKTGEN, *eal, "--", *opts]
    return ["ip", "netns", "exec", links.ns, *argv] if links.ns else argv


def start(gw):
    """gw.start(), again if net_af_packet's fanout group collided (the
    dataplane then runs with a port missing and dpvpnd refuses its config)."""
    for attempt in range(3):
        try:
            gw.start()
            return
        except RuntimeError:
            collided = gw.dataplane is not None and "PACKET_FANOUT" in gw.dataplane.output()
            gw.stop()
            if not collided or attempt == 2:
                raise


def pktgen(workdir, argv, timeout):
    """Run pktgen to its end; returns a function that gives its JSON or raises
    (so that the caller reads the gateways first, whatever happened)."""
    log_path = os.path.join(workdir, "pktgen.log")
    for attempt in range(3):
        with open(log_path, "w") as log:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log, text=True,
                               timeout=timeout)
        with open(log_path) as f:
            log_text = f.read()
        # net_af_packet's fanout group is pid ^ ifindex, which can collide
        # with a gateway's (see lab.Gateway.start): a new process, a new pid.
        if p.returncode == 0 or "PACKET_FANOUT" not in log_text:
            break

    def result():
        if p.returncode != 0:
            raise RuntimeError(f"dpvpn-pktgen exited {p.returncode}:\n{log_text[-3000:]}")
        return json.loads(p.stdout)
    return result


def counters(gws):
    """Each gateway's counters, or the error that stopped us reading them."""
    out = {}
    for gw in gws:
        try:
            out[gw.name] = gw.ctl("show", "counters")
        except (RuntimeError, subprocess.SubprocessError, ValueError) as e:
            out[gw.name] = {"error": str(e)}
    return out


def counter_delta(c0, c1):
    """Non-zero changes of the gateways' drop counters, plus their packet counts."""
    out = {}
    for name in c1:
        a, b = c0.get(name, {}), c1[name]
        if "error" in a or "error" in b:
            out[name] = {"error": a.get("error") or b.get("error")}
            continue
        d = {k: b[k] - a.get(k, 0) for k in ("encrypted", "decrypted") if k in b}
        d["drops"] = {k: v - a["drops"].get(k, 0) for k, v in b.get("drops", {}).items()
                      if v != a["drops"].get(k, 0)}
        out[name] = d
    return out


def run_chain(cipher, size, links_kind, rate, seconds, count=None, hist=False,
              workdir=None, idle_sleep_us=0):
    """Bring up A and B, run one pktgen, read everything, tear down.

    Returns (pktgen JSON, gateway counter changes, shutdown notes)."""
    d = tempfile.mkdtemp(prefix="twogw-", dir=workdir)
    place = placement()
    links = Links(links_kind, d)
    gws, notes = [], {}
    try:
        links.up()
        for side in ("a", "b"):     # A first: it is the memif server of link 1
            cfg = os.path.join(d, f"lab-{side}.conf")
            with open(cfg, "w") as f:
                f.write(gateway_config(side, cipher))
            gw = lab.Gateway(f"gw-{side}", cfg, links.vdevs(side), d,
                             ["--lcores", f"0@0,1@{place['gw-' + side]}"], links.ns,
                             dp_args=["--idle-sleep-us", str(idle_sleep_us)])
            gws.append(gw)
            start(gw)
        c0 = counters(gws)
        pg = pktgen(d, pktgen_argv(links, place, size, rate, seconds, count, hist),
                    seconds + 60)
        # Read the gateways before anything else goes away (memif: a server
        # may already have crashed when pktgen, its client, left).
        c1 = counters(gws)
        pg = pg()
    finally:
        for gw in gws:
            crashed = gw.dataplane is not None and not gw.dataplane.alive()
            codes = gw.stop()
            if crashed or codes.get("dataplane", 0) != 0:
                notes[gw.name] = f"dataplane exit {codes.get('dataplane')}"
        links.down()
        if not os.environ.get("DPVPN_KEEP_LAB"):
            shutil.rmtree(d, ignore_errors=True)
    return pg, counter_delta(c0, c1), notes


def cdf_points(pg):
    """[[ns, fraction <= ns], ...] from pktgen's histogram (bucket upper
    bounds, at most CDF_POINTS of them), else from its percentiles."""
    lat = pg["latency_ns"]
    hist = pg.get("latency_hist")
    if hist:
        total = sum(c for _, _, c in hist)
        pts, seen = [], 0
        for lo, hi, c in hist:
            seen += c
            pts.append([min(hi, lat["max"]), seen / total])
        step = max(1, len(pts) // CDF_POINTS)
        keep = pts[step - 1::step]
        if keep[-1] != pts[-1]:
            keep.append(pts[-1])
        return [[lat["min"], 0.0]] + keep
    return [[lat["min"], 0.0], [lat["p50"], 0.5], [lat["p99"], 0.99],
            [lat["p999"], 0.999], [lat["max"], 1.0]]


def throughput(cipher, size, links, seconds, workdir=None):
    """One run at --rate max: (pktgen JSON, gateways, shutdown notes, RX pps)."""
    pg, gws, notes = run_chain(cipher, size, links, "max", seconds, workdir=workdir)
    pps = pg["rx"]["packets"] / pg["duration_s"] if pg["duration_s"] else 0.0
    return pg, gws, notes, pps


def run_case(cipher, size, links="memif", seconds=3.0, reps=1, lat_rate="20kpps",
             lat_count=20000, workdir=None):
    """Throughput (median of reps runs, each with fresh processes) and latency
    (one run) of one cipher and inner size; returns a row."""
    runs = sorted((throughput(cipher, size, links, seconds, workdir) for _ in range(reps)),
                  key=lambda r: r[3])
    tp, tp_gw, tp_notes, rx_pps = runs[len(runs) // 2]
    lt, lt_gw, lt_notes = run_chain(cipher, size, links, lat_rate, lat_count / 1000 + 30,
                                    count=lat_count, hist=True, workdir=workdir)
    place = placement()
    return {
        "cipher": cipher, "size": size, "direction": "two-gateways", "workers": 1,
        "mpps": rx_pps / 1e6, "gbps": rx_pps * size * 8 / 1e9,
        "mpps_min": runs[0][3] / 1e6, "mpps_max": runs[-1][3] / 1e6, "reps": reps,
        "tx_mpps": tp["tx"]["pps"] / 1e6, "rx_mpps": rx_pps / 1e6,
        "loss_ratio": tp["loss"]["ratio"], "seconds": tp["duration_s"],
        "reordered": tp["reordered"],
        "latency_rate": lat_rate, "latency_loss_ratio": lt["loss"]["ratio"],
        "latency_ns": dict(lt["latency_ns"]), "cdf": cdf_points(lt),
        "links": links, "cpus": describe(place), "shared_cpus": place["shared_cpus"],
        "gateways": {"throughput": tp_gw, "latency": lt_gw},
        "shutdown": {**{f"throughput {k}": v for k, v in tp_notes.items()},
                     **{f"latency {k}": v for k, v in lt_notes.items()}},
    }


def summary(r):
    lat = r["latency_ns"]
    return (f"{r['cipher']:11} {r['size']:5} B  {r['mpps']:7.3f} Mpps {r['gbps']:7.2f} Gbit/s "
            f"loss {r['loss_ratio'] * 100:.2f} %  latency @{r['latency_rate']}: "
            f"p50 {lat['p50']} p99 {lat['p99']} p99.9 {lat['p999']} max {lat['max']} ns "
            f"(loss {r['latency_loss_ratio'] * 100:.2f} %)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cipher", default="aes128-gcm,aes256-gcm")
    ap.add_argument("--size", default="64,512,1420", help="inner IPv4 lengths")
    ap.add_argument("--links", choices=["memif", "af_packet"], default="memif")
    ap.add_argument("--seconds", type=float, default=3.0, help="throughput run")
    ap.add_argument("--reps", type=int, default=1, help="throughput runs; the median is kept")
    ap.add_argument("--lat-rate", default="20kpps", help="latency run's pktgen --rate")
    ap.add_argument("--lat-count", type=int, default=20000, help="latency run's packets")
    a = ap.parse_args()
    print(f"twogw: {describe(placement())}", file=sys.stderr)
    rows = []
    for cipher in a.cipher.split(","):
        for size in map(int, a.size.split(",")):
            r = run_case(cipher, size, a.links, a.seconds, a.reps, a.lat_rate, a.lat_count)
            print(summary(r), file=sys.stderr)
            rows.append(r)
    json.dump({"rows": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
