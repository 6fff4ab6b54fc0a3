# SPDX-License-Identifier: BSD-3-Clause
"""Tests for tester/report.py: hand-made report documents with known
numbers, and one from a real (simulated, fake-clock) MLRsearch search."""
import copy
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mlrsearch as mlr  # noqa: E402
import report  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def stats(trial=3, sent=(5000, 5000), received=(5000, 5000), p99=(90000, 90000)):
    """A /dpvpn/tester/stats dict: both directions' counters and latency."""
    s = {"trial": trial, "tunnels": 4, "adopted": 1, "running": 1, "window_ns": 10**9,
         "late": 0, "foreign": 0, "no_mbuf": 0, "behind": 0}
    for n, d in enumerate(report.DIRS):
        s[d] = {"sent": sent[n], "sent_bytes": 64 * sent[n], "received": received[n],
                "received_bytes": 64 * received[n], "lost": 0, "duplicated": 0,
                "reordered": 0, "lat_min_ns": 21000, "lat_p50_ns": 40000,
                "lat_p90_ns": 60000, "lat_p99_ns": p99[n], "lat_p999_ns": 120000,
                "lat_max_ns": 150000}
    return s


def goal(lo, up, irregular=False):
    """A goal result as mlrsearch.to_dict() has it (the fields read)."""
    return {"relevant_lower_bound": lo, "relevant_upper_bound": up,
            "conditional_throughput": lo, "irregular": irregular}


def result(sizes, ndr, pdr, dirs=("dut_encap", "dut_decap"), **extra):
    """One result: NDR and PDR (lower, upper[, irregular]), two trials."""
    trials = [{"index": 0, "load": 2e6, "loss_ratio": 0.1},
              {"index": 1, "load": 1e6, "loss_ratio": 0.0}]
    return {"sizes": list(sizes), "dirs": list(dirs), **extra,
            "search": {"stop_reason": "complete", "trial_count": len(trials),
                       "goals": {"NDR": goal(*ndr), "PDR": goal(*pdr)},
                       "trials": trials}}


def doc(results, calibration=None):
    """A report document, with calibration {label: pps} if given."""
    d = {"machine": {"cpu": "Test CPU", "cpus": 2, "kernel": "6.1", "time": "now"},
         "results": results}
    if calibration is not None:
        d["calibration"] = {"sizes": [[64], report.IMIX], "pps": calibration}
    return d


def row(md, *first):
    """The cells of the Markdown table row that starts with these cells."""
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[:len(first)] == list(first):
            return cells
    raise AssertionError(f"no row {first} in\n{md}")


def test_constants_match_tester():
    tester = pytest.importorskip("tester")
    assert report.IMIX == tester.IMIX
    assert report.ETH_WIRE_EXTRA == tester.ETH_WIRE_EXTRA
    assert report.DIRS == tester.DIRS


def test_labels_and_gbps():
    assert report.label(report.IMIX) == "IMIX"
    assert report.label([64]) == "64"
    assert report.label([64, 1400]) == "64/1400"
    assert report.gbps(1e6, [64]) == pytest.approx(0.512)
    assert report.gbps(1e6, [64], wire=True) == pytest.approx(0.704)
    # IMIX: mean 4266 / 12 = 355.5 B
    assert report.gbps(1e6, report.IMIX) == pytest.approx(2.844)
    assert report.gbps(1e6, report.IMIX, wire=True) == pytest.approx(3.036)
    assert report.gbps(None, [64]) == 0.0


def test_progress_line_rates_loss_latency():
    prev = stats(sent=(1000, 2000), received=(1000, 1900))
    now = stats(sent=(1_501_000, 2_002_000), received=(1_500_000, 1_001_900),
                p99=(90_000, 123_400))
    line = report.progress_line(prev, now, 0.5)
    assert line == ("trial 3  encap 3.000/2.998 Mpps loss 1000 (0.067%) p99 90us | "
                    "decap 4.000/2.000 Mpps loss 1000100 (49.955%) p99 123us")


def test_progress_line_from_trial_start():
    now = stats(trial=4, sent=(1000, 0), received=(990, 0))
    for prev in (None, stats(trial=3)):      # none, or another trial's
        line = report.progress_line(prev, now, 0.1)
        assert line.startswith("trial 4  encap 0.010/0.010 Mpps loss 10 (1.000%)")
        assert "decap 0.000/0.000 Mpps loss 0 (0.000%)" in line


def test_progress_line_bad_input():
    with pytest.raises(ValueError, match="dt_s"):
        report.progress_line(stats(), stats(), 0)
    bad = stats()
    del bad["dut_decap"]["lat_p99_ns"]
    with pytest.raises(KeyError, match="stats.dut_decap: missing 'lat_p99_ns'"):
        report.progress_line(None, bad, 1.0)


def test_markdown_throughput_rows():
    d = doc([result([64], (1e6, 1.005e6), (1.2e6, 1.206e6)),
             result(report.IMIX, (5e5, None), (6e5, 6.03e5), dirs=["dut_encap"]),
             result([64, 1400], (1e5, 1.1e5, True), (1e5, 1.1e5, True))])
    md = report.markdown(d)
    assert "Test CPU, 2 CPUs, kernel 6.1" in md
    r = row(md, "64", "dut_encap+dut_decap", "NDR")
    assert r[3:] == ["1,000,000", "1,005,000", "1,000,000", "0.512", "0.704", "no", "?"]
    r = row(md, "IMIX", "dut_encap", "NDR")
    assert r[3:5] == ["500,000", "-"]
    assert r[6:8] == ["1.422", "1.518"]
    r = row(md, "64/1400", "dut_encap+dut_decap", "PDR")
    assert r[6:9] == [f"{1e5 * 8 * 732 / 1e9:.3f}", f"{1e5 * 8 * 756 / 1e9:.3f}", "yes"]
    assert "not calibrated" in md
    assert row(md, "64", "dut_encap+dut_decap", "2")[3] == "complete"


def test_markdown_tester_limited():
    d = doc([result([64], (1e6, 1.01e6), (1.4e6, 1.41e6)),
             result(report.IMIX, (1e6, 1.01e6), (1e6, 1.01e6)),
             result([128], (1e6, 1.01e6), (1e6, 1.01e6))],
            calibration={"64": 2.0e6, "imix": 1.4e6})
    md = report.markdown(d)
    assert "64: 2.000 Mpps, imix: 1.400 Mpps" in md
    # 2.0e6 >= 1.5 x 1.0e6, < 1.5 x 1.4e6
    assert row(md, "64", "dut_encap+dut_decap", "NDR")[-1] == "no"
    assert row(md, "64", "dut_encap+dut_decap", "PDR")[-1] == "yes"
    assert row(md, "IMIX", "dut_encap+dut_decap", "NDR")[-1] == "yes"   # label case-blind
    assert row(md, "128", "dut_encap+dut_decap", "NDR")[-1] == "?"      # no figure
    assert report.tester_limited(d, "64", 2e6 / 1.5) == "no"           # the edge


def test_markdown_latency_table():
    lat = {"90": stats(p99=(95000, 99000)), "10": stats(), "50": stats(), "5": stats()}
    md = report.markdown(doc([result([64], (1e6, 1.01e6), (1e6, 1.01e6), latency=lat)]))
    assert "## Latency" in md
    assert row(md, "64", "dut_encap+dut_decap", "90", "dut_decap")[4:] == \
        ["21.0", "40.0", "99.0", "120.0", "150.0"]
    pcts = [ln.split("|")[3].strip() for ln in md.splitlines() if "| dut_encap |" in ln]
    assert pcts == ["5", "10", "50", "90"]      # by number, not by string
    assert "## Latency" not in report.markdown(doc([result([64], (1, 2), (1, 2))]))


def test_compare_ratio_and_only_in():
    a = doc([result([64], (1e6, 1.01e6), (1.2e6, 1.21e6)),
             result([1400], (4e5, 4.1e5), (4e5, 4.1e5))])
    b = doc([result([64], (1.1e6, 1.11e6), (1.2e6, 1.21e6)),
             result(report.IMIX, (7e5, 7.1e5), (8e5, 8.1e5))])
    md = report.compare(a, b)
    assert row(md, "64", "dut_encap+dut_decap", "NDR")[3:] == ["1,000,000", "1,100,000", "1.100"]
    assert row(md, "64", "dut_encap+dut_decap", "PDR")[5] == "1.000"
    assert row(md, "1400", "dut_encap+dut_decap", "NDR")[3:] == ["400,000", "-", "only in A"]
    assert row(md, "IMIX", "dut_encap+dut_decap", "PDR")[3:] == ["-", "800,000", "only in B"]
    assert len([ln for ln in md.splitlines() if ln.startswith("| ")]) == 7


def test_compare_dirs_and_missing_bound():
    a = doc([result([64], (None, 1e4), (1e6, 1.1e6), dirs=["dut_encap"])])
    b = doc([result([64], (1e6, 1.1e6), (1e6, 1.1e6))])
    md = report.compare(a, b)
    assert row(md, "64", "dut_encap", "NDR")[5] == "only in A"
    assert row(md, "64", "dut_encap+dut_decap", "NDR")[5] == "only in B"
    md = report.compare(a, a)
    assert row(md, "64", "dut_encap", "NDR")[3:] == ["-", "-", "-"]


def test_malformed_input():
    good = doc([result([64], (1, 2), (1, 2))])
    with pytest.raises(KeyError, match="B: missing 'results'"):
        report.compare(good, {"machine": {}})
    with pytest.raises(KeyError, match="A: missing 'results'"):
        report.compare({}, good)
    with pytest.raises(ValueError, match="A: expected an object"):
        report.compare([], good)
    bad = copy.deepcopy(good)
    del bad["results"][0]["search"]
    with pytest.raises(KeyError, match=r"results\[0\]: missing 'search'"):
        report.markdown(bad)
    bad = copy.deepcopy(good)
    del bad["results"][0]["search"]["goals"]["NDR"]["relevant_lower_bound"]
    with pytest.raises(KeyError, match="goals.NDR: missing 'relevant_lower_bound'"):
        report.compare(good, bad)
    bad = copy.deepcopy(good)
    bad["results"][0]["latency"] = {"50": {"trial": 1}}
    with pytest.raises(KeyError, match=r"latency.50: missing 'dut_encap'"):
        report.markdown(bad)


def simulated_doc():
    """A report doc from a real search of a DUT that loses above 1.23 Mpps."""
    clock = [0.0]

    def measure(load, duration):
        clock[0] += duration
        loss = 0.0 if load <= 1.23e6 else 0.02
        return mlr.TrialResult(intended_load=load, duration=duration, loss_ratio=loss)
    res = mlr.search(mlr.csit(1e4, 2e6), measure, clock=lambda: clock[0])
    lat = {p: stats() for p in ("10", "50", "90")}
    return doc([{"sizes": [64], "dirs": list(report.DIRS), "search": mlr.to_dict(res),
                 "latency": lat}], calibration={"64": 1.6e6})


def test_markdown_of_a_real_search():
    d = simulated_doc()
    md = report.markdown(d)
    r = row(md, "64", "dut_encap+dut_decap", "NDR")
    lo = float(r[3].replace(",", ""))
    assert 1.22e6 <= lo <= 1.23e6
    assert r[-1] == "yes"        # 1.6e6 < 1.5 x ~1.23e6
    n = d["results"][0]["search"]["trial_count"]
    assert row(md, "64", "dut_encap+dut_decap", str(n))[3] == "complete"


def test_plots(tmp_path):
    d = simulated_doc()
    d["results"].append(result([64, 1400], (1e6, 1.01e6), (1e6, 1.01e6)))
    paths = report.plots(d, str(tmp_path / "plots"))
    names = sorted(Path(p).name for p in paths)
    assert names == ["result0-64-dut_encap+dut_decap-latency.png",
                     "result0-64-dut_encap+dut_decap-search.png",
                     "result1-64-1400-dut_encap+dut_decap-search.png"]
    for p in paths:
        data = Path(p).read_bytes()
        assert data.startswith(PNG) and len(data) > 1000, p


def sa(seq, packets, icv=0, spi="0x10000000"):
    return {"spi": spi, "seq": seq, "packets": packets, "icv": icv}


def test_esp_check_places_the_loss():
    """esp_gap: sequence numbers used minus packets accepted in the window;
    an SA that changed (new SPI, counters back) is not checked."""
    before = {("t", 0): sa(100, 100), ("t", 1): sa(50, 40, 2), ("t", 2): sa(10, 10),
              ("t", 3): sa(500, 500), ("u", 0): sa(7, 7)}
    after = {("t", 0): sa(1100, 980), ("t", 1): sa(250, 240, 5),
             ("t", 2): sa(20, 20, spi="0x10000002"), ("t", 3): sa(400, 400),
             ("t", 4): sa(9, 9)}
    c = report.esp_check(before, after)
    assert c[("t", 0)] == {"esp_gap": 120, "icv_failures": 0}
    assert c[("t", 1)] == {"esp_gap": 0, "icv_failures": 3}
    assert c[("t", 2)] == {"esp_gap": None, "icv_failures": None}     # rekeyed
    assert c[("t", 3)] == {"esp_gap": None, "icv_failures": None}     # went back
    assert set(c) == {("t", 0), ("t", 1), ("t", 2), ("t", 3)}           # in both only


def tunnel(i, sent, received, p99, k="e", esp_gap=None):
    t = {f"{k}_sent": sent, f"{k}_received": received, f"{k}_lat_min_ns": 1000,
         f"{k}_lat_p50_ns": 2000, f"{k}_lat_p99_ns": p99, f"{k}_lat_p999_ns": p99,
         f"{k}_lat_max_ns": p99 + 1, f"{k}_gap_max_ns": 300_000_000}
    if esp_gap is not None:
        t[f"{k}_esp_gap"] = esp_gap
    return t


def test_worst_tunnels_by_p99():
    """The worst p99 first, nothing received counts as the worst, streams
    not sent are left out, n rows at most."""
    per = {0: {**tunnel(0, 100, 100, 5000), **tunnel(0, 100, 90, 9000, "d")},
           1: tunnel(1, 100, 0, 0, esp_gap=100),
           2: tunnel(2, 100, 100, 7000, esp_gap=0),
           3: tunnel(3, 0, 0, 0)}
    rows = report.worst_tunnels(per, n=3)
    assert [(r["tunnel"], r["dir"]) for r in rows] == \
        [(1, "dut_encap"), (0, "dut_decap"), (2, "dut_encap")]
    assert rows[0]["lost"] == 100 and rows[0]["esp_gap"] == 100
    assert rows[1]["lost"] == 10 and rows[1]["esp_gap"] is None
    assert rows[2]["lat_p99_ns"] == 7000 and rows[2]["gap_max_ns"] == 300_000_000
    assert len(report.worst_tunnels(per)) == 4


def test_markdown_tunnel_table():
    """The per-tunnel table: a row per kept tunnel of each latency trial,
    loss next to the ESP gap, µs; none without per-tunnel rows."""
    st = stats()
    st["worst_tunnels"] = report.worst_tunnels({7: tunnel(7, 1000, 880, 45000, esp_gap=120)})
    md = report.markdown(doc([result([64], (1e6, 1.1e6), (1.2e6, 1.3e6),
                                     latency={"90": st})]))
    assert row(md, "64", "90", "7") == ["64", "90", "7", "dut_encap", "1,000", "120", "120",
                                        "1.0", "2.0", "45.0", "45.0", "45.0", "300,000.0"], md
    st["worst_tunnels"][0]["esp_gap"] = None
    md = report.markdown(doc([result([64], (1e6, 1.1e6), (1.2e6, 1.3e6),
                                     latency={"90": st})]))
    assert row(md, "64", "90", "7")[6] == "-", md
    plain = report.markdown(doc([result([64], (1e6, 1.1e6), (1.2e6, 1.3e6),
                                        latency={"90": stats()})]))
    assert "Per tunnel" not in plain
