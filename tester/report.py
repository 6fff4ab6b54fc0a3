# SPDX-License-Identifier: BSD-3-Clause
"""dpvpn-tester's reports: a progress line during a trial, the Markdown
report of a run, a before/after comparison of two runs, and plots.

The input is the JSON document tester.report() writes:

  {"machine": {...}, "calibration": {"sizes": [...], "pps": {"64": 2.1e6}},
   "results": [{"sizes": [64], "dirs": ["dut_encap", "dut_decap"],
                "search": mlrsearch.to_dict(result),
                "latency": {"10": stats, "50": stats, "90": stats}}]}

"calibration" (the tester's own back-to-back capacity, per frame label)
and "latency" (stats of trials at 10/50/90 % of the PDR) are optional; a
latency trial's stats may hold "worst_tunnels": worst_tunnels() of its per-tunnel
counters (the report's per-tunnel table).
Standard library only; matplotlib is imported by plots() alone.
"""
import os

# copied from tester.py (test_report.py checks they still agree)
IMIX = [64, 576, 64, 576, 64, 1514, 64, 576, 64, 576, 64, 64]
ETH_WIRE_EXTRA = 4 + 20         # FCS, preamble + inter-frame gap, per frame
DIRS = ("dut_encap", "dut_decap")
TESTER_MARGIN = 1.5             # tester-limited below this x the lower bound
PERCENTILES = (("min", "lat_min_ns"), ("p50", "lat_p50_ns"), ("p90", "lat_p90_ns"),
               ("p99", "lat_p99_ns"), ("p99.9", "lat_p999_ns"), ("max", "lat_max_ns"))
TABLE_PCTS = ("min", "p50", "p99", "p99.9", "max")
# per tunnel and direction (/dpvpn/tester/tunnels' e_* and d_*, tester.py's tunnels())
TUNNEL_PCTS = (("min", "lat_min_ns"), ("p50", "lat_p50_ns"), ("p99", "lat_p99_ns"),
               ("p99.9", "lat_p999_ns"), ("max", "lat_max_ns"))
PREFIX = {"dut_encap": "e", "dut_decap": "d"}
WORST_TUNNELS = 10              # per-tunnel table: this many, the worst p99 first


# --------------------------------------------------------------------------
# Helpers


def need(obj, key, where):
    """obj[key]; ValueError if obj is not a dict, KeyError naming where and
    key if it is missing."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise KeyError(f"{where}: missing '{key}'")
    return obj[key]


def results_of(doc, name="report"):
    """The doc's result list, each result checked for sizes, dirs, search."""
    res = need(doc, "results", name)
    if not isinstance(res, list):
        raise ValueError(f"{name}: 'results' is not a list")
    for i, r in enumerate(res):
        for key in ("sizes", "dirs", "search"):
            need(r, key, f"{name}: results[{i}]")
        need(r["search"], "goals", f"{name}: results[{i}].search")
        if not r["sizes"]:
            raise ValueError(f"{name}: results[{i}].sizes is empty")
    return res


def label(sizes):
    """The frame label: "IMIX", "64" or "64/1400"."""
    return "IMIX" if list(sizes) == IMIX else "/".join(str(s) for s in sizes)


def dirs_label(dirs):
    """"dut_encap+dut_decap"."""
    return "+".join(dirs)


def gbps(pps, sizes, wire=False):
    """Gbit/s of pps frames of the mean of sizes: the clear frame, or on
    the wire (+ETH_WIRE_EXTRA bytes a frame)."""
    mean = sum(sizes) / len(sizes)
    return (pps or 0.0) * 8 * (mean + (ETH_WIRE_EXTRA if wire else 0)) / 1e9


def fmt(value, spec=",.0f"):
    """A number, or "-" for None."""
    return "-" if value is None else format(value, spec)


def goal_rows(doc, name="report"):
    """[(result index, result, goal name, goal dict)] in report order."""
    rows = []
    for i, r in enumerate(results_of(doc, name)):
        for gname, g in r["search"]["goals"].items():
            for key in ("relevant_lower_bound", "relevant_upper_bound"):
                need(g, key, f"{name}: results[{i}].search.goals.{gname}")
            rows.append((i, r, gname, g))
    return rows


def capacity(doc, frame):
    """The tester's back-to-back pps for a frame label, or None."""
    pps = (doc.get("calibration") or {}).get("pps") or {}
    return next((v for k, v in pps.items() if str(k).lower() == frame.lower()), None)


def tester_limited(doc, frame, lower):
    """"yes" if the tester's capacity for this frame label is below
    TESTER_MARGIN x the lower bound, "no" if not, "?" if unknown."""
    cap = capacity(doc, frame)
    if cap is None:
        return "?"
    return "yes" if cap < TESTER_MARGIN * (lower or 0.0) else "no"


# --------------------------------------------------------------------------
# Per tunnel


def esp_check(before, after):
    """The ESP cross-check of one trial from two snapshots of the tester's
    inbound SAs, {key: {"spi", "seq", "packets", "icv"}} (seq: the highest
    sequence number accepted; packets: packets accepted; icv: ICV failures),
    taken before the trial and after its drain.  Per key of both:
    {"esp_gap": the sequence numbers the far end used in the trial minus
    the packets the SA accepted (ESP packets lost on the way to the tester,
    or refused by it; and the previous trial's tail: packets lost after the
    last one it accepted raise no sequence number until this trial's first
    arrives), "icv_failures": ICV failures in the trial}; both None
    where the SA changed (another SPI: a rekey) or its counters went back."""
    out = {}
    for key in set(before) & set(after):
        a, b = before[key], after[key]
        ds, dp, di = (b[k] - a[k] for k in ("seq", "packets", "icv"))
        ok = a["spi"] == b["spi"] and ds >= 0 and dp >= 0 and di >= 0 and ds >= dp
        out[key] = {"esp_gap": ds - dp if ok else None, "icv_failures": di if ok else None}
    return out


def worst_tunnels(per, n=WORST_TUNNELS):
    """The n tunnel directions with the highest p99 among per ({tunnel:
    tester.py tunnels() dict}), worst first, as rows {"tunnel", "dir",
    "sent", "lost", "esp_gap" (None: not checked), "lat_*_ns", "gap_max_ns"};
    directions with nothing received come first (p99 unknown: the worst)."""
    rows = []
    for i, t in per.items():
        for d, k in PREFIX.items():
            if not t.get(f"{k}_sent"):
                continue
            row = {"tunnel": int(i), "dir": d, "sent": t[f"{k}_sent"],
                   "lost": t[f"{k}_sent"] - t[f"{k}_received"],
                   "received": t[f"{k}_received"], "esp_gap": t.get(f"{k}_esp_gap"),
                   "gap_max_ns": t.get(f"{k}_gap_max_ns", 0)}
            row.update({key: t.get(f"{k}_{key}", 0) for _, key in TUNNEL_PCTS})
            rows.append(row)
    rows.sort(key=lambda r: (r["received"] == 0, r["lat_p99_ns"], r["tunnel"]), reverse=True)
    return rows[:n]


def tunnel_table(doc):
    """Per result with latency trials that hold "worst_tunnels": their rows
    (worst p99 first) with loss, the ESP check and latency in µs.  No lines
    if there are none."""
    rows = []
    for i, r in enumerate(results_of(doc)):
        lat = r.get("latency") or {}
        for pct in sorted(lat, key=float):
            for t in lat[pct].get("worst_tunnels") or ():
                cells = " | ".join(f"{t[key] / 1e3:,.1f}" for _, key in TUNNEL_PCTS)
                rows.append(f"| {label(r['sizes'])} | {pct} | {t['tunnel']} | {t['dir']} | "
                            f"{t['sent']:,} | {t['lost']:,} | {fmt(t['esp_gap'], ',')} | "
                            f"{cells} | {t['gap_max_ns'] / 1e3:,.1f} |")
    if not rows:
        return []
    return [f"## Per tunnel (the {WORST_TUNNELS} worst p99 of each latency trial; µs)", "",
            "lost: sent - received; ESP gap: of those, the ones whose ESP sequence numbers "
            "never reached the tester (the DUT encrypted them; - : not checked); "
            "gap: the longest wait between two packets of the stream.", "",
            "| frame | load (% of PDR) | tunnel | direction | sent | lost | ESP gap | "
            + " | ".join(name for name, _ in TUNNEL_PCTS) + " | gap |",
            "|---|---:|---:|---|---:|---:|---:|" + "---:|" * (len(TUNNEL_PCTS) + 1)] + rows + [""]


# --------------------------------------------------------------------------
# Progress


def progress_line(prev, now, dt_s):
    """One line from two stats dicts dt_s seconds apart during a trial: per
    direction sent/received Mpps over the interval, the loss so far (sent -
    received now, also as % of sent) and p99 latency.  prev None, or of
    another trial, counts from zero (the trial's start)."""
    if not dt_s or dt_s <= 0:
        raise ValueError(f"progress_line: dt_s must be positive, got {dt_s!r}")
    trial = need(now, "trial", "stats")
    if prev is None or prev.get("trial") != trial:
        prev = {}
    parts = []
    for d in DIRS:
        cur = need(now, d, "stats")
        old = prev.get(d) or {"sent": 0, "received": 0}
        tx = (need(cur, "sent", f"stats.{d}") - old["sent"]) / dt_s
        rx = (need(cur, "received", f"stats.{d}") - old["received"]) / dt_s
        lost = cur["sent"] - cur["received"]
        pct = 100.0 * lost / cur["sent"] if cur["sent"] else 0.0
        p99 = need(cur, "lat_p99_ns", f"stats.{d}") / 1e3
        parts.append(f"{d[4:]} {tx / 1e6:.3f}/{rx / 1e6:.3f} Mpps "
                     f"loss {lost} ({pct:.3f}%) p99 {p99:.0f}us")
    return f"trial {trial}  " + " | ".join(parts)


# --------------------------------------------------------------------------
# The report


def header(doc):
    """The title, the machine and the tester's own capacity (if calibrated)."""
    m = doc.get("machine") or {}
    lines = ["# dpvpn-tester report", "",
             f"Machine: {m.get('cpu') or '?'}, {m.get('cpus', '?')} CPUs, "
             f"kernel {m.get('kernel', '?')}, {m.get('time', '?')}.", ""]
    cal = doc.get("calibration")
    if cal:
        caps = ", ".join(f"{k}: {v / 1e6:.3f} Mpps"
                         for k, v in need(cal, "pps", "calibration").items())
        lines += [f"Tester capacity (back to back): {caps or 'none'}.", ""]
    else:
        lines += ["Tester capacity: not calibrated (tester-limited: ?).", ""]
    return lines


def throughput_table(doc):
    """One row per result per goal: bounds, Gbit/s, irregular, tester-limited."""
    lines = ["## Throughput", "",
             "| frame | directions | goal | lower bound (pps) | upper bound | "
             "conditional throughput | Gbit/s clear frame | Gbit/s on the wire | "
             "irregular | tester-limited |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for _, r, gname, g in goal_rows(doc):
        lo, frame = g["relevant_lower_bound"], label(r["sizes"])
        lines.append(
            f"| {frame} | {dirs_label(r['dirs'])} | {gname} | {fmt(lo)} | "
            f"{fmt(g['relevant_upper_bound'])} | {fmt(g.get('conditional_throughput'))} | "
            f"{gbps(lo, r['sizes']):.3f} | {gbps(lo, r['sizes'], True):.3f} | "
            f"{'yes' if g.get('irregular') else 'no'} | {tester_limited(doc, frame, lo)} |")
    return lines + [""]


def latency_us(stats, where):
    """{percentile name: µs} of one direction's stats."""
    return {name: need(stats, key, where) / 1e3 for name, key in PERCENTILES}


def latency_table(doc):
    """Per result with "latency", per load % and direction: min / p50 /
    p99 / p99.9 / max in µs.  No lines if no result has latency."""
    rows = []
    for i, r in enumerate(results_of(doc)):
        lat = r.get("latency") or {}
        for pct in sorted(lat, key=float):
            for d in DIRS:
                where = f"results[{i}].latency.{pct}"
                us = latency_us(need(lat[pct], d, where), f"{where}.{d}")
                cells = " | ".join(f"{us[name]:,.1f}" for name in TABLE_PCTS)
                rows.append(f"| {label(r['sizes'])} | {dirs_label(r['dirs'])} | {pct} | "
                            f"{d} | {cells} |")
    if not rows:
        return []
    return ["## Latency (µs)", "",
            "| frame | directions | load (% of PDR) | direction | "
            + " | ".join(TABLE_PCTS) + " |",
            "|---|---|---:|---|" + "---:|" * len(TABLE_PCTS)] + rows + [""]


def searches_table(doc):
    """Per search: its trial count and why it stopped."""
    lines = ["## Searches", "", "| frame | directions | trials | stop reason |",
             "|---|---|---:|---|"]
    for r in results_of(doc):
        s = r["search"]
        n = s.get("trial_count", len(s.get("trials", ())))
        lines.append(f"| {label(r['sizes'])} | {dirs_label(r['dirs'])} | {n} | "
                     f"{s.get('stop_reason', '?')} |")
    return lines + [""]


def ike_tables(doc):
    """The IKE parts, where the run had them: the set-up rate search (its
    trials), the capacity, the rekeys under load.  No lines without them."""
    lines = []
    st = doc.get("setup")
    if st:
        rate, up = st.get("rate_per_s"), st.get("upper_bound_per_s")
        fp = st.get("first_packet_s") or {}
        lines += ["## IKE set-up rate", "",
                  f"{st['tunnels']} tunnels a trial, each initiated from none up; a tunnel "
                  f"counts when traffic crossed it both ways within {st['deadline_s']} s; "
                  f"at most {st['failure_ratio_max']:.1%} may fail.", "",
                  f"Set-up rate: **{fmt(rate, ',.1f')}** tunnels/s "
                  f"(upper bound {fmt(up, ',.1f')}); time to first packet at that rate: "
                  f"p50 {fmt(fp.get('p50'), '.3f')} s, max {fmt(fp.get('max'), '.3f')} s.", "",
                  "| rate asked (/s) | achieved (/s) | set up | failed | first packet p50 (s) "
                  "| p99 (s) | result |", "|---:|---:|---:|---:|---:|---:|---|"]
        for t in st.get("trials", ()):
            f = t.get("first_packet_s") or {}
            lines.append(f"| {t['rate']:,.1f} | {t['achieved_rate']:,.1f} | {t['set_up']} | "
                         f"{t['failed']} | {fmt(f.get('p50'), '.3f')} | "
                         f"{fmt(f.get('p99'), '.3f')} | {'pass' if t['passed'] else 'fail'} |")
        lines.append("")
    cap = doc.get("capacity")
    if cap:
        lines += ["## Tunnel capacity", "",
                  f"Held at once, traffic crossing each both ways: **{cap['held']}** of "
                  f"{cap['offered']} offered"
                  + (" (the DUT holds at least that many: the tester offered no more)."
                     if cap.get("at_least") else "."), ""]
    rk = doc.get("rekey")
    if rk:
        lines += ["## Rekeys under load", "",
                  "| load (% of NDR) | load (pps) | rekeys | refused | lost | lost per rekey "
                  "| largest gap (µs) |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for pct in sorted(rk["points"], key=float):
            r = rk["points"][pct]
            lines.append(f"| {pct} | {fmt(r['load_pps'])} | {r['rekeys']} | {r['refused']} | "
                         f"{r['lost']} | {fmt(r['lost_per_rekey'], ',.2f')} | "
                         f"{fmt(r.get('gap_max_us'), ',.1f')} |")
        lines += ["", f"NDR used: {fmt(rk['ndr_pps'])} pps ({rk['frame']}), "
                  f"{rk['rekeys_per_s']} CHILD_SA rekeys a second, round robin over the tunnels.",
                  ""]
    return lines


def markdown(doc):
    """The full Markdown report of a tester.report() JSON document."""
    results_of(doc)
    lines = (header(doc) + throughput_table(doc) + latency_table(doc) + tunnel_table(doc)
             + searches_table(doc) + ike_tables(doc))
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Before / after


def lower_bounds(doc, name):
    """{(frame, directions, goal): relevant lower bound} of a doc."""
    return {(label(r["sizes"]), dirs_label(r["dirs"]), gname): g["relevant_lower_bound"]
            for _, r, gname, g in goal_rows(doc, name)}


def compare(a, b):
    """A Markdown before/after table of two report documents: per frame,
    directions and goal, A's and B's lower bound and B/A ("only in A" or
    "only in B" where the other has no such row)."""
    la, lb = lower_bounds(a, "A"), lower_bounds(b, "B")
    lines = ["| frame | directions | goal | A lower bound (pps) | B lower bound (pps) | B/A |",
             "|---|---|---|---:|---:|---:|"]
    for key in list(la) + [k for k in lb if k not in la]:
        va, vb = la.get(key), lb.get(key)
        if key not in lb:
            ratio = "only in A"
        elif key not in la:
            ratio = "only in B"
        else:
            ratio = f"{vb / va:.3f}" if va and vb is not None else "-"
        lines.append(f"| {' | '.join(key)} | {fmt(va)} | {fmt(vb)} | {ratio} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Plots


def plot_name(i, r, kind):
    """A file name for result i's plot: result0-64-dut_encap+dut_decap-search.png."""
    return f"result{i}-{label(r['sizes']).replace('/', '-')}-{dirs_label(r['dirs'])}-{kind}.png"


def plot_search(fig, r):
    """Search convergence: trial index vs load, marked by loss, and each
    goal's relevant lower bound."""
    ax = fig.add_subplot()
    trials = r["search"].get("trials") or []
    for lossy, mark, color, name in ((False, "o", "tab:green", "loss 0"),
                                     (True, "x", "tab:red", "loss > 0")):
        pts = [(t["index"], t["load"]) for t in trials if (t["loss_ratio"] > 0) == lossy]
        if pts:
            ax.scatter(*zip(*pts), marker=mark, color=color, label=name)
    for n, (gname, g) in enumerate(r["search"]["goals"].items()):
        if g["relevant_lower_bound"]:
            ax.axhline(g["relevant_lower_bound"], color=f"C{n}", linestyle="--",
                       label=f"{gname} {g['relevant_lower_bound']:,.0f} pps")
    ax.set(xlabel="trial", ylabel="load (pps)",
           title=f"{label(r['sizes'])} {dirs_label(r['dirs'])}: search")
    ax.legend(fontsize="small")


def plot_latency(fig, r):
    """Latency percentiles (log x, µs) per direction, one line per load %."""
    lat = r["latency"]
    names = [name for name, _ in PERCENTILES]
    for n, d in enumerate(DIRS):
        ax = fig.add_subplot(1, len(DIRS), n + 1)
        for pct in sorted(lat, key=float):
            us = latency_us(need(lat[pct], d, f"latency.{pct}"), f"latency.{pct}.{d}")
            pts = [(us[k], y) for y, k in enumerate(names) if us[k] > 0]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=f"{pct} % of PDR")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter("{x:g}")
        ax.xaxis.set_minor_formatter("{x:g}")
        ax.set_yticks(range(len(names)), names)
        ax.set(xlabel="latency (µs)", title=f"{label(r['sizes'])} {d}")
        ax.legend(fontsize="small")


def plots(doc, outdir):
    """PNGs of each result's search convergence and (if it has "latency")
    latency percentiles, into outdir; returns the paths written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for i, r in enumerate(results_of(doc)):
        todo = [("search", plot_search, (8, 5))]
        if r.get("latency"):
            todo.append(("latency", plot_latency, (12, 5)))
        for kind, draw, size in todo:
            fig = Figure(figsize=size, layout="tight")
            FigureCanvasAgg(fig)
            draw(fig, r)
            path = os.path.join(outdir, plot_name(i, r, kind))
            fig.savefig(path, dpi=100)
            paths.append(path)
    return paths
