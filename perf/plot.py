#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""plot.py RESULTS.json: PNG plots of a perf/run result, next to it.

  <name>-size.png     inner Gbit/s vs size per cipher: encap, decap, and the
                      crypto ceiling (ipsec-mb, burst) measured in the same run
  <name>-workers.png  Mpps vs workers (when the run swept workers)
  <name>-sas.png      Mpps vs number of tunnels (when the run swept SAs)
"""
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def by_size(doc, base):
    rows = [r for r in doc["rows"] if r["workers"] == 1 and r.get("sas", 1) == 1]
    ciphers = sorted({r["cipher"] for r in rows})
    fig, axes = plt.subplots(1, len(ciphers), figsize=(6 * len(ciphers), 4.5), squeeze=False)
    for ax, c in zip(axes[0], ciphers):
        for d, style in (("encap", "o-"), ("decap", "s-")):
            pts = sorted((r["size"], r["gbps"], r["ceiling_gbps"]) for r in rows
                         if r["cipher"] == c and r["direction"] == d)
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"dpvpn {d}")
            ax.plot([p[0] for p in pts], [p[2] for p in pts], style[0] + "--", alpha=0.5,
                    label=f"crypto ceiling ({'encrypt' if d == 'encap' else 'decrypt'})")
        ax.set_xscale("log")
        ax.set_xlabel("inner packet size (bytes)")
        ax.set_ylabel("Gbit/s (inner), one worker")
        ax.set_title(c)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(doc["machine"], fontsize=8)
    fig.tight_layout()
    fig.savefig(base + "-size.png", dpi=100)


def by_workers(doc, base):
    rows = [r for r in doc["rows"] if r["cipher"] == "aes128-gcm" and r.get("sas", 1) == 1]
    if max((r["workers"] for r in rows), default=1) < 2:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for d in ("encap", "decap"):
        for s in sorted({r["size"] for r in rows if r["workers"] > 1}):
            pts = sorted((r["workers"], r["mpps"]) for r in rows
                         if r["direction"] == d and r["size"] == s)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{d} {s} B")
    ax.set_xlabel("workers")
    ax.set_ylabel("Mpps")
    ax.set_title("aes128-gcm, one SA")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(doc["machine"], fontsize=8)
    fig.tight_layout()
    fig.savefig(base + "-workers.png", dpi=100)


def by_sas(doc, base):
    rows = [r for r in doc["rows"] if r["workers"] == 1 and r["cipher"] == "aes128-gcm"]
    counts = sorted({r.get("sas", 1) for r in rows})
    if len(counts) < 2:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for d in ("encap", "decap"):
        for s in sorted({r["size"] for r in rows if r.get("sas", 1) > 1}):
            pts = sorted((r.get("sas", 1), r["mpps"]) for r in rows
                         if r["direction"] == d and r["size"] == s)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{d} {s} B")
    ax.set_xscale("log")
    ax.set_xlabel("tunnels (SA pairs + policies)")
    ax.set_ylabel("Mpps, one worker")
    ax.set_title("aes128-gcm")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(doc["machine"], fontsize=8)
    fig.tight_layout()
    fig.savefig(base + "-sas.png", dpi=100)


def main():
    path = sys.argv[1]
    with open(path) as f:
        doc = json.load(f)
    base = os.path.splitext(path)[0]
    by_size(doc, base)
    by_workers(doc, base)
    by_sas(doc, base)
    print(f"plot.py: wrote {base}-*.png")


if __name__ == "__main__":
    main()
