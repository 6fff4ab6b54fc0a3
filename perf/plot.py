#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""plot.py RESULTS.json: PNG plots of a perf/run result, next to it.

  <name>-size.png     inner Gbit/s vs size per cipher: encap, decap, and the
                      crypto ceiling (ipsec-mb, burst) measured in the same run
  <name>-workers.png  Mpps vs workers (when the run swept workers)
  <name>-sas.png      Mpps vs number of tunnels (when the run swept them)
  <name>-latency.png  latency CDF through two gateways (perf/twogw.py rows):
                      the CDF, and 1 - CDF on a log scale for the tail
"""
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def style(ax, xlabel, ylabel, title, log=False):
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def save(fig, doc, path):
    """Every plot says where its figures come from."""
    fig.suptitle(doc["machine"], fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def by_size(doc, base):
    rows = [r for r in doc["rows"] if r["workers"] == 1 and r.get("sas", 1) == 1
            and r["direction"] in ("encap", "decap") and "ceiling_gbps" in r]
    ciphers = sorted({r["cipher"] for r in rows})  # none: dpbench.py rows alone
    if not ciphers:
        return
    fig, axes = plt.subplots(1, len(ciphers), figsize=(6 * len(ciphers), 4.5), squeeze=False)
    for ax, c in zip(axes[0], ciphers):
        for d, fmt in (("encap", "o-"), ("decap", "s-")):
            pts = sorted((r["size"], r["gbps"], r["ceiling_gbps"]) for r in rows
                         if r["cipher"] == c and r["direction"] == d)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], fmt, label=f"dpvpn {d}")
            ax.plot([p[0] for p in pts], [p[2] for p in pts], fmt[0] + "--", alpha=0.5,
                    label=f"crypto ceiling ({'encrypt' if d == 'encap' else 'decrypt'})")
        style(ax, "inner packet size (bytes)", "Gbit/s (inner), one worker", c, log=True)
    save(fig, doc, base + "-size.png")


def mpps_vs(doc, base, key, xlabel, title, log=False):
    """Mpps against workers or tunnels (key), the other one held at 1."""
    other = "sas" if key == "workers" else "workers"
    rows = [r for r in doc["rows"] if r["cipher"] == "aes128-gcm"
            and r["direction"] in ("encap", "decap") and r.get(other, 1) == 1]
    if len({r.get(key, 1) for r in rows}) < 2:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mixes = sorted({r.get("mix", "uniform") for r in rows}) if key == "sas" else [None]
    for d in ("encap", "decap"):
        for s in sorted({r["size"] for r in rows if r.get(key, 1) > 1}):
            for mix in mixes:       # tunnels: one series per traffic mix, from 1 tunnel
                pts = sorted((r.get(key, 1), r["mpps"]) for r in rows
                             if r["direction"] == d and r["size"] == s and
                             (mix is None or r.get(key, 1) == 1 or
                              r.get("mix", "uniform") == mix))
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
                        label=f"{d} {s} B" + (f" {mix}" if mix and len(mixes) > 1 else ""))
    style(ax, xlabel, "Mpps", title, log)
    save(fig, doc, f"{base}-{key}.png")


def by_latency(doc, base):
    """The CDF points each two-gateway row stores ([ns, fraction <= ns])."""
    rows = [r for r in doc["rows"] if r["direction"] == "two-gateways" and r.get("cdf")]
    if not rows:
        return
    fig, (ax, tail) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in sorted(rows, key=lambda r: (r["cipher"], r["size"])):
        us = [p[0] / 1e3 for p in r["cdf"]]
        frac = [p[1] for p in r["cdf"]]
        label = f"{r['cipher']} {r['size']} B @ {r['latency_rate']}"
        ax.step(us, frac, where="post", label=label)
        # 1 - CDF: the last point (fraction 1) has no place on a log scale
        tail.step(us[:-1], [1 - f for f in frac[:-1]], where="post", label=label)
    for a, ylabel in ((ax, "fraction of packets <= latency"), (tail, "fraction > latency")):
        a.set_xscale("log")
        a.set_xlabel("one-way latency, pktgen TX to RX through A and B (us)")
        a.set_ylabel(ylabel)
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    tail.set_yscale("log")
    ax.set_title(f"two gateways, {rows[0].get('links', '')} links", fontsize=9)
    tail.set_title("the tail", fontsize=9)
    fig.suptitle(doc["machine"] + "\n" + rows[0].get("cpus", ""), fontsize=8)
    fig.tight_layout()
    fig.savefig(base + "-latency.png", dpi=100)


def main():
    path = sys.argv[1]
    with open(path) as f:
        doc = json.load(f)
    base = os.path.splitext(path)[0]
    by_size(doc, base)
    mpps_vs(doc, base, "workers", "workers", "aes128-gcm, one SA")
    mpps_vs(doc, base, "sas", "tunnels (SA pairs + policies)", "aes128-gcm, one worker",
            log=True)
    by_latency(doc, base)
    print(f"plot.py: wrote {base}-*.png")


if __name__ == "__main__":
    main()
