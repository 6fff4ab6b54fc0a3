#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""secgw_bench: DPDK's ipsec-secgw on dpbench's harness, one worker lcore.

The same captures as dpbench (its make_pcap and keys: same packets, same
sizes, AES-GCM), replayed forever by net_pcap into ipsec-secgw, whose
output goes to net_null (discard):

  encap:  cleartext -> [port 0 net_pcap, protected]   secgw [port 1 net_null] -> ESP, dropped
  decap:  ESP       -> [port 1 net_pcap, unprotected] secgw [port 0 net_null] -> cleartext, dropped

Throughput is the change of the output port's `opackets` (ethdev stats, read
over secgw's DPDK telemetry socket) over a timed window after a warm-up:
packets that secgw encrypted or decrypted and handed to the port.  The
input port's `ipackets` over the same window is kept, so a run where secgw
took packets in and did not send them out is reported, not hidden.

ipsec-secgw is built from Debian's dpdk-doc sources of the installed DPDK
with one patch (compare.d/secgw-no-rxcsum.patch): it insists on RX checksum
offload, which net_pcap and net_null do not offer, and its poll-mode path
never reads the RX checksum flags, so the patch asks for that offload only
on ports that have it.  Nothing else changes: same per-packet work.

Anti-replay: secgw's replay window is its default, 0 (`-w 0`, passed
explicitly): librte_ipsec (-l) then does no replay check, and the default
(legacy) path has none at all.  So the repeated sequence numbers of the
replayed ESP capture are all decrypted, as in dpbench (replay-window = 0).

`--verify` runs each direction once over the 64 packets of the capture (no
replay) into a pcap file and checks every output packet with scapy.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import dpbench  # noqa: E402
from probe import Telemetry  # noqa: E402
from dpbench import lab  # noqa: E402

SECGW_SRC = "/usr/share/dpdk/examples/ipsec-secgw"     # Debian dpdk-doc
# Outside the checkout (nothing to git-ignore), apart from perf/compare's
# unpatched build in /var/tmp/dpvpn-compare.
CACHE = os.environ.get("DPVPN_SECGW_CACHE", "/var/tmp/dpvpn-secgw-bench")
BIN = os.path.join(CACHE, "ipsec-secgw")
PATCH = os.path.join(HERE, "compare.d", "secgw-no-rxcsum.patch")
TEMPLATE = os.path.join(HERE, "compare.d", "ipsec-secgw.cfg.in")
RUN_DIR = "/var/run/dpdk"

# secgw's software code paths (all with the crypto_aesni_mb vdev):
#   legacy      the default: secgw's own ESP code, crypto via cryptodev enqueue/dequeue
#   lib         -l: librte_ipsec, crypto via cryptodev enqueue/dequeue
#   cpu-crypto  -l and `type cpu-crypto` SAs: librte_ipsec, synchronous crypto calls
MODES = {"legacy": ([], ""), "lib": (["-l"], ""), "cpu-crypto": (["-l"], " type cpu-crypto")}
DEFAULT_MODE = "legacy"
AEAD = {"aes128-gcm": "aes-128-gcm", "aes256-gcm": "aes-256-gcm"}
SPI_OUT, SPI_IN = 0x1001, 0x2001                # dpbench's tunnel
HOST_MAC, PEER_MAC = "02:00:00:00:0a:02", "02:00:00:00:0b:01"
START_TIMEOUT_S = 30
# in - out over a window: packets in flight (RX burst, crypto queue, TX
# buffer) make it a few thousand either way; more than this share is a loss.
LOSS_SHARE = 0.001


def log(msg):
    print(f"secgw_bench: {msg}", file=sys.stderr, flush=True)


# --- build ---------------------------------------------------------------------

def dpdk_version():
    r = subprocess.run(["pkg-config", "--modversion", "libdpdk"], capture_output=True,
                       text=True, check=False)
    return r.stdout.strip() or "?"


def stamp_text():
    with open(PATCH, "rb") as f:
        patch_sha = hashlib.sha256(f.read()).hexdigest()[:16]
    return f"dpdk {dpdk_version()} patch {patch_sha}\n"


def build():
    """The patched ipsec-secgw, built once per installed DPDK and patch;
    returns a description of the build for the result rows."""
    stamp = os.path.join(CACHE, "stamp")
    want = stamp_text()
    have = open(stamp).read() if os.path.exists(stamp) else ""
    if not (os.access(BIN, os.X_OK) and have == want):
        if not os.path.isdir(SECGW_SRC):
            raise RuntimeError(f"{SECGW_SRC} missing: apt-get install dpdk-doc libdpdk-dev make")
        log(f"building patched ipsec-secgw ({want.strip()}) in {CACHE}")
        src = os.path.join(CACHE, "src")
        shutil.rmtree(src, ignore_errors=True)
        shutil.copytree(SECGW_SRC, src)
        with open(PATCH) as f:
            r = subprocess.run(["patch", "-p1", "-d", src], stdin=f, capture_output=True,
                               text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"{PATCH} does not apply:\n{r.stdout}{r.stderr}")
        r = subprocess.run(["make", "-C", src, f"-j{os.cpu_count() or 1}"],
                           capture_output=True, text=True, check=False, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"make ipsec-secgw failed:\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
        shutil.copy2(os.path.join(src, "build", "ipsec-secgw-shared"), BIN)
        with open(stamp, "w") as f:
            f.write(want)
    return {"binary": BIN, "source": SECGW_SRC + " (Debian dpdk-doc)",
            "dpdk": dpdk_version(), "cflags": "the example's Makefile: -O3 + pkg-config libdpdk",
            "patch": os.path.relpath(PATCH, ROOT),
            "patch_effect": "RX checksum offload requested only where the port offers it "
                            "(net_pcap/net_null do not; the poll path never reads the flags)"}


# --- one run ---------------------------------------------------------------------

def config(cipher, mode):
    """perf/compare's gateway-A template, filled with dpbench's tunnel."""
    out_key, in_key = dpbench.KEYS[cipher]
    with open(TEMPLATE) as f:
        text = f.read().format(
            spi_out=SPI_OUT, spi_in=SPI_IN,
            local_net="198.18.1.0/24", remote_net="198.18.2.0/24",
            local_outer="198.19.0.1", remote_outer="198.19.0.2",
            key_out=":".join(re.findall("..", out_key)),
            key_in=":".join(re.findall("..", in_key)),
            host_mac=HOST_MAC, peer_mac=PEER_MAC)
    text = text.replace("aes-128-gcm", AEAD[cipher])
    # `type` goes at the end of each SA (after the continued line)
    return re.sub(r"^(mode ipv4-tunnel .*)$", r"\1" + MODES[mode][1], text, flags=re.M)


def worker_cpu():
    """dpbench's first worker CPU (main lcore on CPU 0, worker on CPU 1)."""
    return 1 if (os.cpu_count() or 1) > 1 else 0


def argv(prefix, cfg, direction, rx, tx, mode):
    """One lcore, which is secgw's main lcore and runs its poll loop; EAL's
    control threads (telemetry, alarms) stay off its CPU.  It polls both
    ports, as a dpvpn worker does (the net_null one never has packets)."""
    cpu = worker_cpu()
    ports = [rx, tx] if direction == "encap" else [tx, rx]
    in_port = 0 if direction == "encap" else 1
    eal = ["--no-pci", *lab.eal_mem_args(), "--file-prefix", prefix,
           "--lcores", f"{cpu}@{cpu}", "--log-level", "lib.eal:error",
           *os.environ.get("DPVPN_EAL_EXTRA", "").split()]
    for v in ports + ["crypto_aesni_mb0"]:
        eal += ["--vdev", v]
    return [BIN, *eal, "--", "-p", "0x3", "-u", "0x2", "-f", cfg, "-w", "0",
            "--config", f"(0,0,{cpu}),(1,0,{cpu})", *MODES[mode][0]], in_port


def sample(tel, in_port):
    out_port = 1 - in_port
    t = time.monotonic()
    return t, tel.port(in_port), tel.port(out_port)


class Secgw:
    """One ipsec-secgw process in a fresh directory; stop() always cleans up."""

    def __init__(self, cipher, direction, mode, rx, tx, workdir):
        self.prefix = f"dpvpn-sgb-{os.getpid()}-{os.path.basename(workdir)}"
        cfg = os.path.join(workdir, "secgw.cfg")
        with open(cfg, "w") as f:
            f.write(config(cipher, mode))
        os.chmod(cfg, 0o600)
        self.argv, self.in_port = argv(self.prefix, cfg, direction, rx, tx, mode)
        self.dir = workdir
        self.proc = None

    def start(self):
        self.proc = lab.Proc("secgw", self.argv, self.dir)
        sock = os.path.join(RUN_DIR, self.prefix, "dpdk_telemetry.v2")
        lab.wait_for(lambda: ("entering main loop" in self.proc.output() and
                              os.path.exists(sock)) or not self.proc.alive(),
                     START_TIMEOUT_S, "ipsec-secgw main loop")
        if not self.proc.alive():
            raise RuntimeError(f"ipsec-secgw exited:\n{self.proc.output()[-3000:]}")

    def stop(self):
        code = self.proc.stop() if self.proc else None
        shutil.rmtree(os.path.join(RUN_DIR, self.prefix), ignore_errors=True)
        return code


def run_case(cipher, direction, size, seconds=3.0, warmup=1.0, mode=DEFAULT_MODE,
             workdir=None):
    """One measurement; a row in perf/run's dataplane-row shape plus secgw's details."""
    d = tempfile.mkdtemp(prefix="secgw-bench-", dir=workdir)
    pcap = os.path.join(d, "in.pcap")
    dpbench.make_pcap(pcap, cipher, direction, size)
    gw = Secgw(cipher, direction, mode, f"net_pcap0,rx_pcap={pcap},infinite_rx=1",
               "net_null0,no-rx=1", d)
    try:
        gw.start()
        time.sleep(warmup)
        tel = Telemetry(gw.prefix)
        try:
            t0, i0, o0 = sample(tel, gw.in_port)
            time.sleep(seconds)
            t1, i1, o1 = sample(tel, gw.in_port)
        finally:
            tel.close()
        if not gw.proc.alive():
            raise RuntimeError(f"ipsec-secgw died:\n{gw.proc.output()[-3000:]}")
    finally:
        code = gw.stop()
    dt = t1 - t0
    pkts_in, pkts_out = i1["ipackets"] - i0["ipackets"], o1["opackets"] - o0["opackets"]
    if code not in (0, None):
        log(f"ipsec-secgw exited with {code} (log in {d})")
    elif pkts_out:
        shutil.rmtree(d, ignore_errors=True)
    drops = {k: v for k, v in (("rx_imissed", i1["imissed"] - i0["imissed"]),
                               ("rx_nombuf", i1["rx_nombuf"] - i0["rx_nombuf"]),
                               ("tx_oerrors", o1["oerrors"] - o0["oerrors"])) if v}
    if pkts_in - pkts_out > LOSS_SHARE * pkts_in:
        drops["in_not_out"] = pkts_in - pkts_out
    if pkts_out == 0:
        raise RuntimeError(f"ipsec-secgw {mode} {direction} {size} B sent nothing "
                           f"({pkts_in} packets in): see {d}")
    pps = pkts_out / dt
    return {"impl": "ipsec-secgw", "cipher": cipher, "direction": direction, "size": size,
            "workers": 1, "mpps": pps / 1e6, "gbps": pps * size * 8 / 1e9, "seconds": dt,
            "rx_mpps": pkts_in / dt / 1e6, "drops": drops, "mode": mode}


def median(runs):
    """The median run by Mpps, with the spread kept (as perf/run's rows)."""
    mpps = [r["mpps"] for r in runs]
    med = dict(sorted(runs, key=lambda r: r["mpps"])[len(runs) // 2])
    med.update(mpps_min=min(mpps), mpps_max=max(mpps), reps=len(runs))
    return med


def measure(cipher, direction, size, seconds=3.0, reps=3, mode=DEFAULT_MODE, warmup=1.0):
    """Median of reps runs, each a fresh process."""
    return median([run_case(cipher, direction, size, seconds, warmup, mode)
                   for _ in range(reps)])


# --- correctness check ---------------------------------------------------------------

def verify(cipher="aes128-gcm", size=1420, mode=DEFAULT_MODE, workdir=None):
    """Each direction once over the capture (no replay) into a pcap file; every
    output packet checked with scapy.  Returns {direction: packets checked}."""
    from scapy.all import IP, UDP, raw, rdpcap  # noqa: F401
    from scapy.layers.ipsec import ESP, SecurityAssociation

    def same_inner(before, after):
        """Byte for byte, but for the TTL: the legacy path decrements the
        inner TTL (and fixes the checksum), librte_ipsec leaves it."""
        b, a = IP(raw(before)), IP(raw(after))
        if a.ttl not in (b.ttl, b.ttl - 1):
            return False
        b.ttl = a.ttl
        del b.chksum
        return raw(IP(raw(b))) == raw(a)

    def checksum_ok(ip):
        c = IP(raw(ip))
        del c.chksum
        return IP(raw(c)).chksum == ip.chksum

    def sa(direction):
        spi, key, src, dst = ((SPI_OUT, 0, "198.19.0.1", "198.19.0.2") if direction == "encap"
                              else (SPI_IN, 1, "198.19.0.2", "198.19.0.1"))
        return SecurityAssociation(ESP, spi=spi, crypt_algo="AES-GCM",
                                   crypt_key=bytes.fromhex(dpbench.KEYS[cipher][key]),
                                   auth_algo="NULL", tunnel_header=IP(src=src, dst=dst))

    checked = {}
    for direction in ("encap", "decap"):
        d = tempfile.mkdtemp(prefix="secgw-verify-", dir=workdir)
        pin, pout = os.path.join(d, "in.pcap"), os.path.join(d, "out.pcap")
        dpbench.make_pcap(pin, cipher, direction, size)
        gw = Secgw(cipher, direction, mode, f"net_pcap0,rx_pcap={pin}",
                   f"net_pcap1,tx_pcap={pout}", d)
        n_in = len(rdpcap(pin))
        try:
            gw.start()
            tel = Telemetry(gw.prefix)
            try:    # the pcap file is complete once secgw has exited
                lab.wait_for(lambda: tel.port(1 - gw.in_port)["opackets"] >= n_in
                             or not gw.proc.alive(), 10, f"{direction}: {n_in} packets out")
            finally:
                tel.close()
        finally:
            gw.stop()
        ins, outs, s = rdpcap(pin), rdpcap(pout), sa(direction)
        assert len(outs) == len(ins), (direction, len(ins), len(outs))
        for a, b in zip(ins, outs):
            ip = b[IP]
            assert checksum_ok(ip), (direction, ip.summary())
            if direction == "encap":
                assert (ip.src, ip.dst, ip.proto, ip[ESP].spi) == \
                    ("198.19.0.1", "198.19.0.2", 50, SPI_OUT), ip.summary()
                assert same_inner(a[IP], s.decrypt(IP(raw(ip)))), "encap payload"
            else:
                assert same_inner(s.decrypt(IP(raw(a[IP]))), ip), "decap payload"
        checked[direction] = len(outs)
        shutil.rmtree(d, ignore_errors=True)
    return checked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cipher", default="aes128-gcm")
    ap.add_argument("--dir", default="encap,decap")
    ap.add_argument("--size", default="64,1420")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3, help="repetitions; the median is kept")
    ap.add_argument("--mode", default=DEFAULT_MODE,
                    help="secgw code path(s): " + ", ".join(MODES))
    ap.add_argument("--verify", action="store_true",
                    help="only check the output packets with scapy")
    a = ap.parse_args()
    info = build()
    if a.verify:
        for mode in a.mode.split(","):
            for cipher in a.cipher.split(","):
                for size in map(int, a.size.split(",")):
                    n = verify(cipher, size, mode)
                    print(f"verify {mode} {cipher} {size} B: {n} packets, all correct")
        return
    rows = []
    for mode in a.mode.split(","):
        for cipher in a.cipher.split(","):
            for direction in a.dir.split(","):
                for size in map(int, a.size.split(",")):
                    r = measure(cipher, direction, size, a.seconds, a.reps, mode, a.warmup)
                    print(f"ipsec-secgw {mode:10} {cipher:11} {direction:5} {size:5} B: "
                          f"{r['mpps']:7.3f} Mpps {r['gbps']:7.2f} Gbit/s "
                          f"(min {r['mpps_min']:.3f} max {r['mpps_max']:.3f}) "
                          f"drops {r['drops']}", file=sys.stderr)
                    rows.append(r)
    json.dump({"secgw": info, "rows": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
