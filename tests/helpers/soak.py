# SPDX-License-Identifier: BSD-3-Clause
"""Soak: the two-worker lab under mixed traffic, with reloads and SA churn
every few seconds, for a while (10 minutes by default; tests/test_soak.py
runs 60 s in CI).

    /usr/bin/python3 tests/helpers/soak.py [--seconds 600] [--seed N] [--rss-bound-mib 4]

Traffic, each a bounded process restarted when it ends: iperf3 TCP (MSS
clamping), iperf3 UDP at a modest rate with a datagram size drawn from
64..1372 bytes each round, pings of random sizes with DF (over the tunnel
MTU: ICMP "fragmentation needed") and without DF (pre-fragmented by the
gateway, or by host A), a ping flood the other way.  Every 2-4 s one of:
a reload that adds or removes one of three extra tunnels on both gateways
(SA add/delete), a rekey of the live tunnel on both gateways (its SAs
deleted and added with new SPIs and keys, the two gateways a moment apart,
so packets meet an unknown SPI on the way), or a reload that changes nothing.

At the end, traffic stopped and the dataplanes idle, on each gateway: every
process still runs; the packet pool's in-use count is what it was before the
first packet; each process's RSS is at most --rss-bound-mib above what it
was after the first round (warm-up); and the counters balance:
    received + made = sent + counted drops + consumed
(lab.counters_balance).  Prints one JSON line of figures; exits non-zero,
naming what failed, otherwise.
"""
import argparse
import json
import random
import secrets
import sys
import time

import lab

EXTRA = """
[tunnel soak{i}]
local = {local}
remote = {remote}
local-ts = {lts}
remote-ts = {rts}
cipher = {cipher}
out-spi = {out_spi:#x}
out-key = 0x{out_key}
in-spi = {in_spi:#x}
in-key = 0x{in_key}
"""
KEY_AB = "0123456789abcdef0123456789abcdef01020304"     # configs/lab-*.conf
KEY_BA = "fedcba9876543210fedcba987654321005060708"
CIPHERS = (("aes128-gcm", 20), ("aes256-gcm", 36), ("chacha20-poly1305", 36))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


class Soak:
    def __init__(self, net, rng):
        self.net, self.rng = net, rng
        # tunnel MTU 1200 both ways: pre-fragmentation, ICMP and MSS clamping
        # get work from hosts whose MTU is 1400
        self.base = {gw.name: open(gw.config).read() + "mtu = 1200\n" for gw in net.gws}
        self.extra = {}     # i -> (text for A, text for B)
        self.live = None    # to-b's (spi A->B, key, spi B->A, key), None: the config's
        self.stats = {"reloads": 0, "sa_added": 0, "sa_removed": 0, "rekeys": 0,
                      "extra_added": 0, "extra_removed": 0, "rounds": 0}
        self.traffic = {}
        self.bag = []
        self.df_over = False   # ping-df alternates under/over the tunnel MTU

    # --- configuration churn --------------------------------------------
    def _config(self, gw):
        text = self.base[gw.name]
        if self.live is not None:      # to-b / to-a with new SPIs and keys
            ab, kab, ba, kba = self.live
            if gw is self.net.a:
                edits = {"out-spi = 0x00001001": f"out-spi = {ab:#x}",
                         "in-spi = 0x00002001": f"in-spi = {ba:#x}",
                         f"out-key = 0x{KEY_AB}": f"out-key = 0x{kab}",
                         f"in-key = 0x{KEY_BA}": f"in-key = 0x{kba}"}
            else:
                edits = {"out-spi = 0x00002001": f"out-spi = {ba:#x}",
                         "in-spi = 0x00001001": f"in-spi = {ab:#x}",
                         f"out-key = 0x{KEY_BA}": f"out-key = 0x{kba}",
                         f"in-key = 0x{KEY_AB}": f"in-key = 0x{kab}"}
            for old, new in edits.items():
                assert old in text, old
                text = text.replace(old, new)
        for i in sorted(self.extra):
            text += self.extra[i][0 if gw is self.net.a else 1]
        return text

    def _reload(self, gw):
        with open(gw.config, "w") as f:
            f.write(self._config(gw))
        r = lab.sh(lab.DPVPNCTL, "-s", gw.ctl_sock, "reload", check=False)
        if r.returncode != 0:
            raise RuntimeError(f"{gw.name} reload refused: {r.stderr.strip()}")
        self.stats["reloads"] += 1
        # "N tunnels added, M removed, K changed, U unchanged": 2 SAs a tunnel
        words = r.stdout.replace(",", "").split()
        n = {words[i + 1 if words[i + 1] != "tunnels" else i + 2]: int(words[i])
             for i in range(len(words) - 1) if words[i].isdigit()}
        self.stats["sa_added"] += 2 * (n.get("added", 0) + n.get("changed", 0))
        self.stats["sa_removed"] += 2 * (n.get("removed", 0) + n.get("changed", 0))

    def _both(self):
        gws = list(self.net.gws)
        self.rng.shuffle(gws)
        for gw in gws:
            self._reload(gw)
            time.sleep(self.rng.uniform(0, 0.3))

    def churn(self):
        # drawn from a shuffled bag rather than independently, so every kind
        # comes at least once in any four rounds (a 30 s run has about nine:
        # independent draws missed every rekey in 7.5 % of them)
        if not self.bag:
            self.bag = ["extra", "extra", "rekey", "same"]
            self.rng.shuffle(self.bag)
        what = self.bag.pop()
        if what == "extra":
            i = self.rng.randrange(3)
            if i in self.extra:
                del self.extra[i]
                self.stats["extra_removed"] += 1
            else:
                cipher, klen = self.rng.choice(CIPHERS)
                k1, k2 = secrets.token_hex(klen), secrets.token_hex(klen)
                spi_ab, spi_ba = 0x3000 + 0x10 * i + self.rng.randrange(16), 0x4000 + i
                net = f"198.18.{20 + i}.0/24"
                self.extra[i] = tuple(EXTRA.format(
                    i=i, cipher=cipher, local=loc, remote=rem, lts=lts, rts=rts,
                    out_spi=os_, out_key=ok, in_spi=is_, in_key=ik)
                    for loc, rem, lts, rts, os_, ok, is_, ik in (
                        ("198.19.0.1", "198.19.0.2", "198.18.1.0/24", net,
                         spi_ab, k1, spi_ba, k2),
                        ("198.19.0.2", "198.19.0.1", net, "198.18.1.0/24",
                         spi_ba, k2, spi_ab, k1)))
                self.stats["extra_added"] += 1
        elif what == "rekey":
            gen = self.stats["rekeys"] + 1
            self.live = (0x10000 + gen, secrets.token_hex(20),
                         0x20000 + gen, secrets.token_hex(20))
            self.stats["rekeys"] += 1
        self._both()

    # --- traffic ------------------------------------------------------------
    def _start(self, name):
        n, r = self.net, self.rng
        if name == "tcp":
            srv = n.bg("soak-tcp-srv", n.ns_b, "iperf3", "-s", "-1", "-p", "5301")
            time.sleep(0.3)
            return [srv, n.bg("soak-tcp", n.ns_a, "iperf3", "-c", "198.18.2.2", "-p", "5301",
                              "-t", "4", "-b", "20M", "--connect-timeout", "2000")]
        if name == "udp":
            srv = n.bg("soak-udp-srv", n.ns_b, "iperf3", "-s", "-1", "-p", "5302")
            time.sleep(0.3)
            return [srv, n.bg("soak-udp", n.ns_a, "iperf3", "-c", "198.18.2.2", "-p", "5302",
                              "-u", "-t", "4", "-b", "10M", "-l", str(r.randint(64, 1372)),
                              "--connect-timeout", "2000")]
        if name == "ping-df":     # under, then over the tunnel MTU: ICMP frag-needed
            self.df_over = not self.df_over
            size = r.randint(1173, 1372) if self.df_over else r.randint(16, 1172)
            return [n.bg("soak-ping-df", n.ns_a, "ping", "-q", "-i", "0.02", "-w", "4",
                         "-M", "do", "-s", str(size), "198.18.2.2")]
        if name == "ping-frag":   # no DF, over the tunnel MTU: pre-fragmented
            return [n.bg("soak-ping-frag", n.ns_a, "ping", "-q", "-i", "0.05", "-w", "4",
                         "-M", "dont", "-s", str(r.randint(1180, 1372)), "198.18.2.2")]
        if name == "ping-back":
            return [n.bg("soak-ping-back", n.ns_b, "ping", "-q", "-i", "0.01", "-w", "4",
                         "-M", "dont", "-s", str(r.randint(16, 1372)), "198.18.1.2")]
        raise ValueError(name)

    def pump(self):
        """(Re)start every traffic source that is not running."""
        for name in ("tcp", "udp", "ping-df", "ping-frag", "ping-back"):
            procs = self.traffic.get(name)
            if procs and procs[-1].alive():
                continue
            for p in procs or ():
                p.stop(timeout=2)
            self.traffic[name] = self._start(name)

    def quiet(self):
        for procs in self.traffic.values():
            for p in procs:
                p.stop(timeout=5)
        self.traffic = {}


def processes(net):
    return {f"{gw.name}-{what}": proc.p.pid
            for gw in net.gws for what, proc in (("dataplane", gw.dataplane),
                                                 ("dpvpnd", gw.dpvpnd))}


def settle(net, want, timeout=10):
    """Counters once nothing moves (reassembly timeouts passed): {gw: counters}."""
    end = time.monotonic() + timeout
    last = None
    while True:
        time.sleep(1)
        now = {gw.name: gw.ctl("show", "counters") for gw in net.gws}
        if now == last and all(now[g]["mbufs_in_use"] == want[g] for g in now):
            return now
        if time.monotonic() > end:
            return now
        last = now


def run(seconds=600, seed=None, rss_bound_mib=4, workers=2, out=sys.stdout):
    """The soak; returns (failures, figures)."""
    seed = random.randrange(1 << 32) if seed is None else seed
    rng = random.Random(seed)
    failures = []
    with lab.Lab(workers=workers) as net:
        lab.wait_for(lambda: net.ping(count=1).returncode == 0, 20, "the tunnel")
        net.ns(net.ns_b, "ping", "-c", "1", "-W", "2", "198.18.1.2", check=False)
        soak = Soak(net, rng)
        soak._both()
        time.sleep(1)
        mbufs0 = {gw.name: gw.ctl("show", "counters")["mbufs_in_use"] for gw in net.gws}
        t0 = time.monotonic()
        rss0 = None
        while time.monotonic() - t0 < seconds:
            soak.pump()
            time.sleep(rng.uniform(2, 4))
            soak.churn()
            soak.stats["rounds"] += 1
            if rss0 is None:            # after the first round: warmed up
                rss0 = {k: rss_kib(p) for k, p in processes(net).items()}
            dead = [gw.name for gw in net.gws
                    if not gw.dataplane.alive() or not gw.dpvpnd.alive()]
            if dead:
                failures.append(f"process died: {dead}")
                break
        soak.quiet()
        elapsed = time.monotonic() - t0
        counters = settle(net, mbufs0)
        rss1 = {k: rss_kib(p) for k, p in processes(net).items()} if not failures else {}
        for gw in net.gws:
            c = counters[gw.name]
            if c["mbufs_in_use"] != mbufs0[gw.name]:
                failures.append(f"{gw.name}: {c['mbufs_in_use']} mbufs in use at the end, "
                                f"{mbufs0[gw.name]} at the start")
            ins, outs = lab.counters_balance(c)
            if ins != outs:
                failures.append(f"{gw.name}: counters do not balance: received + made "
                                f"{ins} != sent + dropped + consumed {outs}: {c}")
        for k, v in rss1.items():
            if v - rss0[k] > rss_bound_mib * 1024:
                failures.append(f"{k}: RSS grew {v - rss0[k]} KiB (bound "
                                f"{rss_bound_mib} MiB): {rss0[k]} -> {v} KiB")
        # a soak that carried nothing would prove nothing
        a = counters[net.a.name]
        if a["encrypted"] < 1000 or a["decrypted"] < 1000 or a["fragmented"] == 0 \
                or a["icmp_out"] == 0 or a["mss_clamped"] == 0 or soak.stats["rekeys"] == 0 \
                or soak.stats["sa_removed"] == 0:
            failures.append(f"too little happened: {a} {soak.stats}")
        figures = {
            "seed": seed, "seconds": round(elapsed, 1), **soak.stats,
            "rss_kib_after_warmup": rss0, "rss_kib_end": rss1,
            "mbufs_in_use": {g: [mbufs0[g], counters[g]["mbufs_in_use"]] for g in mbufs0},
            "gateways": {g: {k: counters[g][k] for k in (
                "rx_packets", "tx_packets", "encrypted", "decrypted", "fragments",
                "fragmented", "icmp_out", "frag_in", "reassembled", "mss_clamped")}
                | {"drops": {r: n for r, n in counters[g]["drops"].items() if n}}
                for g in counters},
        }
        print(json.dumps(figures), file=out)
    return failures, figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--rss-bound-mib", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    failures, _ = run(a.seconds, a.seed, a.rss_bound_mib, a.workers)
    for f in failures:
        print("soak: FAIL:", f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
