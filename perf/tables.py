#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""tables.py: Markdown tables from perf/results/*.json, for doc/performance.md
(and README.md's one table); they are printed, to paste in.

  tables.py quick.json      the headline rows and the targets
  tables.py headline.json   per core: dpvpn next to OpenVPN, cores for 10 GbE (the
                            first table of doc/performance.md and README.md's), then the rows
  tables.py full.json       (or ciphers.json) crypto ceiling per cipher/size/engine, and the
                            FreeS/WAN-style "cycles per byte -> link capacity
                            per GHz" table (8 bits / cycles-per-byte)
  tables.py compare.json    dpvpn next to OpenVPN and ipsec-secgw, incl. the
                            seeds' OpenVPN MTU sweep
  tables.py ike-setup.json  IKE set-up, one core: perf/ikebench.py's rows (a list)
"""
import json
import sys

SIZES = [64, 512, 1420, 9000]


def pct(x):
    return f"{x * 100:.0f} %" if x is not None else "–"


def headline(doc, machine=True):
    if machine:
        print(f"Machine: {doc['machine']}; command: `{doc['command']}`\n")
    print("| cipher | dir | size | workers | tunnels | Mpps | Gbit/s | ceiling Gbit/s (engine) "
          "| efficiency | net of harness | cycles/pkt | harness cycles/pkt |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in doc["rows"]:
        d = r["direction"] + (" (anti-replay)" if r.get("anti_replay") else "")
        line = (f"| {r['cipher']} | {d} | {r['size']} | {r['workers']} | "
                f"{r.get('sas', 1)}{' ' + r['mix'] if r.get('mix') else ''} | "
                f"{r['mpps']:.2f} | {r['gbps']:.1f} | ")
        if r.get("ceiling_gbps") is None:       # two-gateway rows: no ceiling
            print(line + "– | – | – | – | – |")
            continue
        h = r.get("harness_cycles_per_packet")
        print(line + f"{r['ceiling_gbps']:.1f} ({r.get('ceiling_engine', 'ipsec-mb-burst')}) | "
              f"{pct(r['efficiency'])} | {pct(r.get('efficiency_net'))} | "
              f"{r['cycles_per_packet']:.0f} | " + (f"{h:.0f} |" if h else "– |"))
    disturbed = sum(r.get("disturbed_reps", 0) for r in doc["rows"])
    discarded = sum(len(r.get("discarded", [])) for r in doc["rows"])
    if disturbed or discarded:
        print(f"\n{discarded} repetition(s) discarded and {disturbed} used although "
              "disturbed (their worker waited for its CPU; `discarded` and `disturbed` "
              "in the JSON).")
    two_gateways(doc)
    if doc.get("targets"):
        print("\n| target | value | met? |\n|---|---:|---|")
        for t in doc["targets"]:
            print(f"| {t['target']} | {t['value']:.3g} | {'met' if t['met'] else 'not met'} |")


def per_core(doc):
    """perf/run headline: doc/performance.md's first table, and README.md's."""
    h, o = doc["headline"], doc.get("openvpn") or {}
    sizes = list(h)
    print(f"Machine: {doc['machine']}; command: `{doc['command']}`\n")
    print("| per core (one CPU) | " + " | ".join(f"{s} B" for s in sizes) +
          " | cores for 10 GbE line rate (" + " / ".join(f"{s} B" for s in sizes) + ") |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for d, what in (("encap", "dpvpn encap, one worker"),
                    ("decap", "dpvpn decap (anti-replay on), one worker")):
        cells = [f"{h[s][d]['gbps']:.1f} Gbit/s ({h[s][d]['mpps']:.2f} Mpps)" for s in sizes]
        cores = " / ".join(f"{h[s][d]['cores_10g']:.2f}" for s in sizes)
        print(f"| {what} | " + " | ".join(cells) + f" | {cores} |")
    cells = [f"{h[s]['both_ends_gbps_per_cpu_s']:.2f}" for s in sizes]
    cores = " / ".join(f"{h[s]['both_ends_cores_10g']:.1f}" for s in sizes)
    print("| dpvpn, both ends: Gbit/s per CPU-second (encap + decap workers) | " +
          " | ".join(cells) + f" | {cores} |")
    if o.get("error"):
        print(f"| OpenVPN: {o['error']} | " + " | ".join("" for _ in sizes) + " | |")
    elif o:
        cells = ["–" if s != "1420" else f"{o['gbps_per_cpu_s']:.2f} (TCP, ~1400-B packets)"
                 for s in sizes]
        cores = " / ".join("–" if s != "1420" else f"{o['cores_10g']:.1f}" for s in sizes)
        print("| OpenVPN 2.6 AES-128-GCM, both ends: Gbit/s per CPU-second (its two "
              "processes) | " + " | ".join(cells) + f" | {cores} |")
        print(f"\nOpenVPN: {o['setting']}; {o['source']}.")
    line = [f"{h[s]['line_rate_mpps']:.2f} Mpps at {s} B" for s in sizes]
    print("10 GbE line rate: " + ", ".join(line) + " (packets counted as frames, plus "
          "20 B of preamble and gap).")


def two_gateways(doc):
    rows = [r for r in doc["rows"] if r["direction"] == "two-gateways"]
    if not rows:
        return
    print(f"\nThrough two gateways ({rows[0]['links']} links; {rows[0]['cpus']}): "
          "throughput at pktgen's maximum rate, latency at a low rate:\n")
    print("| cipher | size | Mpps | Gbit/s | loss | latency rate | p50 µs | p99 µs "
          "| p99.9 µs | max µs |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for r in rows:
        lat = r["latency_ns"]
        print(f"| {r['cipher']} | {r['size']} | {r['mpps']:.3f} | {r['gbps']:.2f} | "
              f"{r['loss_ratio'] * 100:.1f} % | {r['latency_rate']} | " +
              " | ".join(f"{lat[k] / 1e3:.1f}" for k in ("p50", "p99", "p999", "max")) + " |")


def crypto(doc):
    cb = doc["crypto"]
    print(f"Crypto ceiling, {cb['cpu']}, intel-ipsec-mb {cb['ipsec_mb']} ({cb['arch']}), "
          f"{cb['openssl']}; Gbit/s, encrypt / decrypt:\n")
    sizes = [s for s in SIZES if any(r["size"] == s for r in cb["rows"])]
    print("| cipher | engine | " + " | ".join(f"{s} B" for s in sizes) + " |")
    print("|---|---|" + "---:|" * len(sizes))
    algs = list(dict.fromkeys(r["alg"] for r in cb["rows"]))
    engines = list(dict.fromkeys(r["engine"] for r in cb["rows"]))
    get = {(r["alg"], r["engine"], r["size"], r["dir"]): r for r in cb["rows"]}
    for a in algs:
        for e in engines:
            cells = []
            for s in sizes:
                enc, dec = get.get((a, e, s, "encrypt")), get.get((a, e, s, "decrypt"))
                cells.append(f"{enc['gbps']:.1f} / {dec['gbps']:.1f}" if enc and dec else "")
            print(f"| {a} | {e} | " + " | ".join(cells) + " |")
    print("\nCycles per byte and link capacity per GHz of one core "
          "(8 / cycles-per-byte, Gbit/s per GHz), ipsec-mb burst, encrypt, 1420 B:\n")
    print("| cipher | cycles/byte | Gbit/s per GHz | 1 core at 3 GHz |")
    print("|---|---:|---:|---:|")
    for a in algs:
        r = get.get((a, "ipsec-mb-burst", 1420, "encrypt"))
        if r:
            cap = 8 / r["cycles_per_byte"]
            print(f"| {a} | {r['cycles_per_byte']:.2f} | {cap:.1f} | {3 * cap:.0f} Gbit/s |")


def compare(doc):
    m = doc.get("machine", {})
    print(f"Machine: {m.get('cpu', '?')}, {m.get('nproc', '?')} vCPUs; iperf3 "
          f"{doc.get('seconds')} s per row; `perf/compare --mtu-sweep`\n")
    print("| VPN | cipher | MTU | Gbit/s | CPU-s | MB per CPU-s |")
    print("|---|---|---|---:|---:|---:|")
    for r in doc["rows"]:
        if r.get("error"):
            print(f"| {r['vpn']} | {r.get('cipher', '')} | | error: {r['error']} | | |")
            continue
        mtu = r.get("mtu") or f"tun-mtu {r.get('tun_mtu')}" + \
            (" mssfix 0" if r.get("mssfix") == 0 else "")
        print(f"| {r['vpn']} | {r['cipher']} | {mtu} | {r['gbps']:.2f} | {r['cpu_s']:.2f} | "
              f"{r['bytes_per_cpu_s'] / 1e6:.0f} |")


def secgw(doc):
    """perf/run's compare_secgw part: dpvpn and ipsec-secgw Mpps, one core each."""
    sec = doc.get("compare_secgw") or {}
    if sec.get("error"):
        print(f"\ndpvpn vs ipsec-secgw: {sec['error']}")
    if not sec.get("ratios"):
        return
    modes = sec["secgw_modes"]
    print(f"\ndpvpn vs DPDK ipsec-secgw {sec['secgw']['dpdk']} (patched: "
          f"`{sec['secgw']['patch']}`), same harness, one core each, AES-128-GCM, Mpps:\n")
    print("| dir | size | dpvpn | " + " | ".join(f"secgw {m}" for m in modes) +
          " | dpvpn / best secgw |")
    print("|---|---:|---:|" + "---:|" * len(modes) + "---:|")
    for r in sec["ratios"]:
        print(f"| {r['direction']} | {r['size']} | {r['dpvpn_mpps']:.2f} | " +
              " | ".join(f"{r['secgw_mpps'][m]:.2f}" for m in modes) +
              f" | {r['ratio']:.2f} × ({r['against']}) |")


def ike_setup(rows):
    """perf/ikebench.py's rows: doc/performance.md's "IKE set-up, one core"."""
    print("| DUT | auth | clients up / offered | held after hold | set-up rate /s | "
          "SAs per DUT CPU-second | p50 / p99 set-up | DUT RSS | generator CPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = r["fill"]
        p = f["setup_s"]
        print(f"| {r['dut']} | {r['auth']} | {f['up']} / {f['offered']} | "
              f"{f['held_after_hold']} ({f['hold_s']:g} s) | {f['rate']} | "
              f"{f['sas_per_cpu_s']} | {p['p50']} / {p['p99']} s | {f['dut_rss_mb']} MB | "
              f"{f['generator_cpu_pct']} %{' (bound)' if r.get('generator_bound') else ''} |")
    for m in dict.fromkeys((r["machine"]["cpu"], r["machine"]["cpus"], r["machine"]["kernel"])
                           for r in rows):
        when = sorted(r["machine"]["time"] for r in rows)
        print(f"\nMachine: {m[0]}, {m[1]} CPUs, Linux {m[2]}; {when[0]} .. {when[-1]}; "
              f"commit {', '.join(dict.fromkeys(r['commit'] for r in rows))}. Commands:\n")
    for c in dict.fromkeys(r["command"] for r in rows):
        print(f"`{c}`  ")


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    if isinstance(doc, list) and doc and "fill" in doc[0]:     # perf/ikebench.py's
        ike_setup(doc)
        return
    if doc.get("note"):
        print(f"**{doc['note']}**\n")
    if "vpn" in (doc.get("rows") or [{}])[0]:      # perf/compare's rows have a "vpn" key
        compare(doc)
    elif doc.get("command") == "perf/run headline":
        per_core(doc)
        print()
        headline(doc, machine=False)
    elif doc.get("command") in ("perf/run full", "perf/run ciphers"):
        headline(doc)
        print()
        crypto(doc)
    else:
        headline(doc)
    secgw(doc)


if __name__ == "__main__":
    main()
