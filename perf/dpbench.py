#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""dpbench: single-gateway dataplane benchmarks on the real binaries.

The real dpvpn-dataplane, configured by the real dpvpnd, is fed by a net_pcap
port that replays a small capture forever (infinite_rx=1) and sends into a
net_null port that discards (no-rx=1):

  encap:  cleartext  -> [pcap, inside]  dpvpn  [null, outside] -> ESP, dropped
  decap:  ESP        -> [pcap, outside] dpvpn  [null, inside]  -> cleartext, dropped

No special code path: the same poll loop, tables and crypto as in production.
Throughput is the change of the dataplane's own `encrypted`/`decrypted`
counters over a timed window after a warm-up; every other counter is checked
so that a run which dropped packets is reported, not hidden.  Decap replays
the same ESP packets, so its inbound SA runs with `replay-window = 0`
(anti-replay off): the replay check, O(1) per packet, is not in the figure.

The pcap PMD copies each replayed packet into a fresh mbuf: that RX cost,
which a NIC would not charge to the CPU, is inside the figures.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import lab  # noqa: E402
from esp_oracle import CIPHERS  # noqa: E402


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
FLOWS = 64                          # distinct packets in the replayed capture
MANY_FLOWS = 1024                   # ... when there are many tunnels to spread over


def flows_for(sas):
    return FLOWS if sas == 1 else min(MANY_FLOWS, sas)


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


def config(cipher, direction, sas=1):
    window = 0 if direction == "decap" else 1024
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


def make_pcap(path, cipher, direction, size, sas=1):
    """The capture to replay: FLOWS packets, spread evenly over the tunnels.
    DPVPN_PCAP_CACHE names a folder of ready-made ones (a rig without scapy
    gets them carried there: perf/device-pack)."""
    cache = os.environ.get("DPVPN_PCAP_CACHE")
    name = f"{cipher}-{direction}-{size}" + (f"-{sas}sa" if sas > 1 else "") + ".pcap"
    if cache and os.path.exists(os.path.join(cache, name)):
        shutil.copy(os.path.join(cache, name), path)
        return
    from scapy.all import IP, UDP, Ether, Raw, wrpcap
    from scapy.layers.ipsec import ESP, SecurityAssociation

    def inner(i, size, src, dst):
        return IP(src=src, dst=dst, id=i) / UDP(sport=1024 + i, dport=9) / \
            Raw(bytes((i + k) & 0xff for k in range(size - 28)))

    flows = flows_for(sas)
    tunnels = [tunnel_params(i * sas // flows, sas) for i in range(flows)]
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
            pkts.append(Ether(dst=PCAP_MAC, src="02:00:00:00:0b:01") /
                        sa.encrypt(inner(i, size, host, "198.18.1.2"), seq_num=i + 1))
    wrpcap(path, pkts)
    if cache:
        os.makedirs(cache, exist_ok=True)
        shutil.copy(path, os.path.join(cache, name))


def lcore_args(workers):
    """Main lcore on CPU 0, workers spread over the CPUs that exist."""
    ncpu = os.cpu_count() or 1
    maps = ["0@0"] + [f"{w}@{(w % (ncpu - 1)) + 1 if ncpu > 1 else 0}"
                      for w in range(1, workers + 1)]
    return ["--lcores", ",".join(maps)]


def sample(gw, key):
    c = gw.ctl("show", "counters")
    return time.monotonic(), c[key], c


def run_case(cipher, direction, size, workers=1, seconds=3.0, warmup=1.0, workdir=None,
             sas=1):
    """One measurement over sas tunnels; returns a row dict (perf/README.md)."""
    d = tempfile.mkdtemp(prefix="dpbench-", dir=workdir)
    pcap = os.path.join(d, "in.pcap")
    make_pcap(pcap, cipher, direction, size, sas)
    rx = "net_pcap0," + ",".join([f"rx_pcap={pcap}"] * workers) + ",infinite_rx=1"
    null = "net_null0,no-rx=1"
    vdevs = [rx, null] if direction == "encap" else [null, rx]
    cfg = os.path.join(d, "bench.conf")
    with open(cfg, "w") as f:
        f.write(config(cipher, direction, sas))
    gw = lab.Gateway("bench", cfg, vdevs, d, lcore_args(workers),
                     dp_args=["--idle-sleep-us", "0", "--max-sa", str(2 * sas + 16)])
    key = "encrypted" if direction == "encap" else "decrypted"
    try:
        gw.start(timeout=30 + sas / 1000)    # installing 100k tunnels takes a while
        time.sleep(warmup)
        t0, n0, c0 = sample(gw, key)
        time.sleep(seconds)
        t1, n1, c1 = sample(gw, key)
    finally:
        gw.stop()
    pps = (n1 - n0) / (t1 - t0)
    drops = {k: v - c0["drops"][k] for k, v in c1["drops"].items() if v != c0["drops"][k]}
    return {"cipher": cipher, "size": size, "direction": direction, "workers": workers,
            "sas": sas, "mpps": pps / 1e6, "gbps": pps * size * 8 / 1e9, "seconds": t1 - t0,
            "drops": drops}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cipher", default="aes128-gcm")
    ap.add_argument("--dir", default="encap,decap")
    ap.add_argument("--size", default="64,1420")
    ap.add_argument("--workers", default="1")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--sas", default="1", help="tunnels (each an SA pair and a policy)")
    a = ap.parse_args()
    rows = []
    for cipher in a.cipher.split(","):
        for direction in a.dir.split(","):
            for size in map(int, a.size.split(",")):
                for w, n in ((w, n) for w in map(int, a.workers.split(","))
                             for n in map(int, a.sas.split(","))):
                    r = run_case(cipher, direction, size, w, a.seconds, sas=n)
                    print(f"{cipher:11} {direction:5} {size:5} B  {w} worker(s) {n} SA(s): "
                          f"{r['mpps']:7.3f} Mpps {r['gbps']:7.2f} Gbit/s  drops {r['drops']}",
                          file=sys.stderr)
                    rows.append(r)
    json.dump({"rows": rows}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
