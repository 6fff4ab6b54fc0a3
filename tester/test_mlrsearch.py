"""Tests for tester/mlrsearch.py against simulated, deterministic DUTs.

Every DUT here is a pure function of the load (plus a seeded random.Random
where it is noisy); time is simulated: the measure callable advances a fake
clock by the trial duration instead of sleeping, so each search takes
milliseconds.
"""

import importlib.util
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest

_PATH = Path(__file__).resolve().with_name("mlrsearch.py")
_SPEC = importlib.util.spec_from_file_location("tester_mlrsearch", _PATH)
mlr = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = mlr
_SPEC.loader.exec_module(mlr)

MIN_LOAD = 1e5
MAX_LOAD = 10e6
WIDTH = 0.005


class FakeClock:
    """A clock that only moves when a simulated trial runs."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class SimulatedTester:
    """A measure() callable over a loss function; logs every call."""

    def __init__(self, loss_at, clock, overhead=0.0):
        self.loss_at = loss_at
        self.clock = clock
        self.overhead = overhead
        self.calls = []

    def __call__(self, load, duration):
        self.calls.append((load, duration))
        self.clock.now += duration + self.overhead
        loss = self.loss_at(load)
        return mlr.TrialResult(
            intended_load=load, duration=duration, loss_ratio=loss,
            offered_load=load, forwarding_rate=load * (1.0 - loss),
            extras={"call": len(self.calls)})


def run_search(config, loss_at, overhead=0.0):
    """Search a simulated DUT; return (result, tester)."""
    clock = FakeClock()
    tester = SimulatedTester(loss_at, clock, overhead)
    return mlr.search(config, tester, clock=clock), tester


def cliff(threshold):
    """DUT forwarding everything up to threshold; above, 0.98 * threshold."""
    def loss_at(load):
        return 0.0 if load <= threshold else 1.0 - 0.98 * threshold / load
    return loss_at


def soft(knee, slope=0.1):
    """DUT lossless up to knee, then loss growing linearly with the load."""
    def loss_at(load):
        return 0.0 if load <= knee else min(1.0, slope * (load - knee) / knee)
    return loss_at


def noisy(threshold, seed, probability=0.2, spike=0.002):
    """Cliff DUT plus rare small random losses (below PDR's 0.5 %)."""
    rng = random.Random(seed)
    base = cliff(threshold)

    def loss_at(load):
        extra = spike if rng.random() < probability else 0.0
        return max(base(load), extra)
    return loss_at


def per_load_durations(result):
    """Sum of trial durations per load (warmup excluded)."""
    sums = defaultdict(float)
    for trial in result.trials:
        if trial.phase != "warmup":
            sums[trial.load] += trial.duration
    return sums


def assert_within_width(goal_result, true_value, width=WIDTH):
    """The goal found true_value: lower <= true < upper, width respected."""
    lower = goal_result.relevant_lower_bound
    upper = goal_result.relevant_upper_bound
    assert not goal_result.irregular, goal_result.reasons
    assert true_value * (1.0 - width) <= lower <= true_value
    assert upper > true_value
    assert (upper - lower) <= width * upper * (1 + 1e-9)


# --------------------------------------------------------------------------
# RFC 9971 formulas, checked against the RFC's own worked example


def _rfc_goal(name, final, duration_sum, loss, exceed):
    return mlr.Goal(name, loss, exceed_ratio=exceed,
                    initial_trial_duration=final, final_trial_duration=final,
                    duration_sum=duration_sum)


RFC_GOALS = [
    _rfc_goal("RFC2544", 60.0, 60.0, 0.0, 0.0),
    _rfc_goal("TST009", 60.0, 120.0, 0.0, 0.5),
    _rfc_goal("1s final", 1.0, 120.0, 0.005, 0.5),
    _rfc_goal("20% exceed", 60.0, 60.0, 0.005, 0.2),
]


def _trials(*groups):
    """Build trials from (count, duration, loss) groups."""
    out = []
    for count, duration, loss in groups:
        out += [SimpleNamespace(duration=duration, loss_ratio=loss,
                                effective_duration=duration)] * count
    return out


U, L, D = mlr.UPPER, mlr.LOWER, mlr.UNDECIDED
# Expected classes per RFC 9971 Appendix A's (normative) code.  The
# Appendix C tables print "Lower Bound" for the "20% exceed" goal at points
# 5 and 6, although the same tables list pessimistic exceed ratios of
# 42.857 % and 27.273 %, above that goal's 20 %, which the Appendix A code
# classifies as Upper Bound; we follow the code (see tester/README.md).
RFC_POINTS = [
    (_trials((59, 1, 0.0)), [D, D, D, D]),
    (_trials((59, 1, 0.0), (1, 1, 0.01)), [U, D, D, D]),
    (_trials((59, 1, 0.0), (60, 1, 0.01)), [U, D, D, U]),
    (_trials((60, 1, 0.0), (60, 1, 0.01)), [U, D, L, U]),
    (_trials((60, 1, 0.0), (60, 1, 0.01), (1, 60, 0.001)), [U, D, L, U]),
    (_trials((60, 1, 0.0), (60, 1, 0.01), (1, 60, 0.001), (1, 60, 0.0)),
     [U, L, L, U]),
]
# (effective high-loss sum, effective whole sum, optimistic and pessimistic
# exceed ratios) per goal, copied from RFC 9971 Appendix C; keys index
# RFC_POINTS (0-based: the RFC's points 2, 5 and 6).
RFC_TABLES = {
    1: [(1, 60, 1 / 60, 1.0), (0, 120, 0.0, 1.0), (1, 120, 1 / 120, 61 / 120),
        (0, 60, 0.0, 1.0)],
    4: [(120, 120, 1.0, 1.0), (60, 120, 0.5, 1.0), (60, 180, 1 / 3, 1 / 3),
        (45, 105, 0.42857, 0.42857)],
    5: [(120, 180, 0.66667, 0.66667), (60, 120, 0.5, 0.5),
        (60, 240, 0.25, 0.25), (45, 165, 0.27273, 0.27273)],
}


@pytest.mark.parametrize("point", range(len(RFC_POINTS)))
def test_classification_matches_rfc9971_example(point):
    """Points 1-6 of RFC 9971 Appendix C, all four example goals."""
    trials, expected = RFC_POINTS[point]
    got = [mlr.classify(mlr.final_target(goal), trials) for goal in RFC_GOALS]
    assert got == expected


@pytest.mark.parametrize("point", sorted(RFC_TABLES))
def test_classification_sums_match_rfc9971_tables(point):
    """Appendix C's intermediate sums and exceed ratios (points 2, 5, 6)."""
    trials = RFC_POINTS[point][0]
    for goal, row in zip(RFC_GOALS, RFC_TABLES[point]):
        sums = mlr.classification_sums(mlr.final_target(goal), trials)
        got = (sums["effect_high_loss_s"], sums["effect_whole_s"],
               sums["optimistic_exceed_ratio"],
               sums["pessimistic_exceed_ratio"])
        assert got == pytest.approx(row, abs=1e-5), goal.name


def test_conditional_throughput_matches_rfc9971_example():
    """RFC 9971 Appendix C: goals 2-4 at point 6, load 1 Mfps."""
    trials = RFC_POINTS[-1][0]
    got = [mlr.conditional_throughput(mlr.final_target(goal), 1e6, trials)
           for goal in RFC_GOALS[1:]]
    assert got == pytest.approx([1e6, 1e6, 999000.0])


def test_relevant_bounds_and_loss_inversion():
    """Smallest upper; largest lower below it; a lower above it is flagged."""
    classes = {1e6: L, 2e6: U, 3e6: L, 2.5e6: U, 0.5e6: L, 1.5e6: D}
    assert mlr.relevant_bounds(classes) == (1e6, 2e6, True)
    assert mlr.relevant_bounds({1e6: L, 2e6: U}) == (1e6, 2e6, False)
    assert mlr.relevant_bounds({1e6: L}) == (1e6, None, False)
    assert mlr.relevant_bounds({1e6: U, 2e6: D}) == (None, 1e6, False)


def test_goal_result_regular_despite_loss_inversion():
    """A lower bound above the upper bound is reported, the result stays regular."""
    goal = _rfc_goal("NDR", 60.0, 60.0, 0.0, 0.0)
    config = mlr.Config((goal,), MIN_LOAD, MAX_LOAD)
    by_load = {5e6: _trials((1, 60, 0.0)), 4e6: _trials((1, 60, 0.01)),
               3.99e6: _trials((1, 60, 0.0))}
    res = mlr.goal_result(goal, by_load, config)
    assert (res.relevant_lower_bound, res.relevant_upper_bound) == (3.99e6,
                                                                    4e6)
    assert res.loss_inversion and not res.irregular
    assert res.conditional_throughput == pytest.approx(3.99e6)


# --------------------------------------------------------------------------
# Whole searches on simulated DUTs


@pytest.mark.parametrize("preset", ["csit", "rfc2544"])
def test_cliff_dut_ndr_and_pdr_converge_on_threshold(preset):
    """Lossless below X, >= 2 % loss above: NDR and PDR both within width of X."""
    threshold = 7.3e6
    result, _ = run_search(mlr.PRESETS[preset](MIN_LOAD, MAX_LOAD),
                           cliff(threshold))
    assert result.stop_reason == mlr.STOP_COMPLETE
    for name in ("NDR", "PDR"):
        goal = result.goals[name]
        assert_within_width(goal, threshold)
        # Every full-length trial at the lower bound was lossless.
        assert goal.conditional_throughput == pytest.approx(
            goal.relevant_lower_bound)
        assert not goal.loss_inversion


def test_soft_loss_curve_pdr_above_ndr():
    """Loss rising 10 % per knee above the knee: PDR at 1.05 knee, NDR at knee."""
    knee = 5e6
    loss_at = soft(knee, slope=0.1)
    result, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD), loss_at)
    ndr, pdr = result.goals["NDR"], result.goals["PDR"]
    assert_within_width(ndr, knee)
    pdr_true = knee * 1.05  # loss_at(pdr_true) == 0.005
    assert_within_width(pdr, pdr_true)
    assert pdr.relevant_lower_bound > ndr.relevant_lower_bound * 1.04
    lower = pdr.relevant_lower_bound
    assert pdr.conditional_throughput == pytest.approx(
        lower * (1.0 - loss_at(lower)))
    assert pdr.conditional_throughput < lower


def test_noisy_dut_exceed_ratio_keeps_results_robust():
    """Rare 0.2 % loss spikes (20 % of trials), ten seeds.

    csit (exceed ratio 0.5): NDR and PDR stay within width of X.
    rfc2544 (exceed ratio 0): PDR still within width (spikes are under
    0.5 %), but one unlucky 60 s trial makes a load an upper bound, so NDR
    is never higher and often clearly lower, with loss inversion flagged.
    """
    threshold = 7.3e6
    csit_ndr, rfc_ndr, rfc_inversions = [], [], 0
    for seed in range(10):
        csit_res, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD),
                                 noisy(threshold, seed))
        rfc_res, _ = run_search(mlr.rfc2544(MIN_LOAD, MAX_LOAD),
                                noisy(threshold, seed))
        for res in (csit_res, rfc_res):
            assert_within_width(res.goals["PDR"], threshold)
        assert_within_width(csit_res.goals["NDR"], threshold)
        csit_ndr.append(csit_res.goals["NDR"].relevant_lower_bound)
        rfc_ndr.append(rfc_res.goals["NDR"].relevant_lower_bound)
        rfc_inversions += rfc_res.goals["NDR"].loss_inversion
    assert all(r <= c for r, c in zip(rfc_ndr, csit_ndr))
    clearly_lower = [r for r in rfc_ndr if r < threshold * (1.0 - WIDTH)]
    assert len(clearly_lower) >= 4
    assert sum(rfc_ndr) / 10 < sum(csit_ndr) / 10 * 0.99
    assert rfc_inversions >= 4


def test_irregular_dut_losing_at_low_loads_only_is_flagged():
    """Loss only below 3 Mpps: max_load is a lower bound, no upper bound."""
    result, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD),
                           lambda load: 0.3 if load < 3e6 else 0.0)
    assert result.stop_reason == mlr.STOP_COMPLETE
    # One trial per coarse target, then 11 of the 21 s sum: nothing more.
    assert [t.load for t in result.trials] == [MAX_LOAD] * 11
    for goal in result.goals.values():
        assert goal.irregular
        assert goal.relevant_upper_bound is None
        assert goal.relevant_lower_bound == MAX_LOAD  # "effective" lower
        assert goal.conditional_throughput == pytest.approx(MAX_LOAD)
        assert any("max_load is a lower bound" in r for r in goal.reasons)


def test_dut_losing_everywhere_ends_at_min_load():
    """Loss at every load: min_load becomes the upper bound, no lower bound."""
    result, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD), lambda load: 0.5)
    assert result.stop_reason == mlr.STOP_COMPLETE
    for goal in result.goals.values():
        assert goal.irregular
        assert goal.relevant_lower_bound is None
        assert goal.conditional_throughput is None
        assert goal.relevant_upper_bound == MIN_LOAD
        assert any("min_load is an upper bound" in r for r in goal.reasons)


def test_csit_preset_durations():
    """csit: 1 s trials; per load at most 21 s; bounds backed by >= 11 s."""
    result, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD), noisy(7.3e6, seed=4))
    assert {trial.duration for trial in result.trials} == {1.0}
    sums = per_load_durations(result)
    assert max(sums.values()) <= 21.0
    for name, goal in result.goals.items():
        loss = goal.goal.loss_ratio
        at_lower = [t for t in result.trials
                    if t.load == goal.relevant_lower_bound]
        at_upper = [t for t in result.trials
                    if t.load == goal.relevant_upper_bound]
        assert sum(t.duration for t in at_lower if t.loss_ratio <= loss) >= 11
        assert sum(t.duration for t in at_upper if t.loss_ratio > loss) >= 11


def test_rfc2544_preset_uses_60s_trials_in_simulated_time():
    """rfc2544: every trial 60 s, one per load; simulated time, real ms."""
    started = time.monotonic()
    result, tester = run_search(mlr.rfc2544(MIN_LOAD, MAX_LOAD),
                                cliff(7.3e6))
    assert time.monotonic() - started < 2.0
    assert {duration for _, duration in tester.calls} == {60.0}
    assert set(per_load_durations(result).values()) == {60.0}
    assert result.search_duration_s == pytest.approx(60.0 * len(tester.calls))
    assert len(tester.calls) >= 5
    for goal in result.goals.values():
        assert goal.goal.exceed_ratio == 0.0
        assert goal.goal.final_trial_duration == 60.0


def test_every_trial_is_logged_in_order():
    """The log mirrors the measure() calls, with phases, goals and times."""
    result, tester = run_search(mlr.csit(MIN_LOAD, MAX_LOAD), soft(5e6),
                                overhead=0.25)
    assert [(t.load, t.duration) for t in result.trials] == tester.calls
    assert [t.index for t in result.trials] == list(range(len(tester.calls)))
    assert [t.extras["call"] for t in result.trials] == list(
        range(1, len(tester.calls) + 1))
    phases = {"init", "refine", "refine_lo", "refine_hi", "extend_lo",
              "extend_hi", "bisect", "start"}
    previous_end = 0.0
    for trial in result.trials:
        assert trial.phase in phases
        assert trial.goal in ("*", "NDR", "PDR")
        assert (trial.goal == "*") == (trial.phase == "init")
        assert MIN_LOAD <= trial.load <= MAX_LOAD
        assert trial.started_s >= previous_end
        assert trial.ended_s == pytest.approx(trial.started_s + 1.25)
        previous_end = trial.ended_s
    assert result.trials[0].load == MAX_LOAD
    assert result.trials[0].phase == "init"
    assert {"bisect", "refine_lo", "refine_hi"} <= {
        t.phase for t in result.trials}


def test_warmup_is_logged_but_not_classified():
    """A warmup trial that loses everything at max_load changes no result."""
    plain, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD), lambda load: 0.0)
    calls = []

    def first_call_loses(load):
        calls.append(load)
        return 1.0 if len(calls) == 1 else 0.0
    warm, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD, warmup_duration=2.0),
                         first_call_loses)
    first = warm.trials[0]
    assert (first.phase, first.duration, first.load, first.loss_ratio) == (
        "warmup", 2.0, MAX_LOAD, 1.0)
    assert len(warm.trials) == len(plain.trials) + 1
    for name in ("NDR", "PDR"):
        assert warm.goals[name] == plain.goals[name]
        assert warm.goals[name].relevant_lower_bound == MAX_LOAD


def test_search_duration_max_stops_the_search():
    """15 s budget with 1 s trials + 0.5 s overhead: stops, irregular results."""
    config = mlr.csit(MIN_LOAD, MAX_LOAD, search_duration_max=15.0)
    result, tester = run_search(config, cliff(7.3e6), overhead=0.5)
    assert result.stop_reason == mlr.STOP_DURATION
    assert len(tester.calls) == 10
    assert result.search_duration_s <= 15.0
    for goal in result.goals.values():
        assert goal.irregular
        assert any("search stopped early" in r for r in goal.reasons)


def test_max_trials_caps_the_search():
    """max_trials=5: exactly five trials, then an irregular stop."""
    config = mlr.csit(MIN_LOAD, MAX_LOAD, max_trials=5)
    result, tester = run_search(config, soft(5e6))
    assert result.stop_reason == mlr.STOP_TRIALS
    assert len(tester.calls) == len(result.trials) == 5
    assert all(goal.irregular for goal in result.goals.values())


GOOD = dict(loss_ratio=0.0)


@pytest.mark.parametrize("build, field", [
    (lambda: mlr.Goal("NDR", -0.1), "loss_ratio"),
    (lambda: mlr.Goal("NDR", 1.0), "loss_ratio"),
    (lambda: mlr.Goal("NDR", float("nan")), "loss_ratio"),
    (lambda: mlr.Goal("NDR", 0.0, relative_width=0.0), "relative_width"),
    (lambda: mlr.Goal("NDR", 0.0, relative_width=-0.01), "relative_width"),
    (lambda: mlr.Goal("NDR", 0.0, exceed_ratio=1.0), "exceed_ratio"),
    (lambda: mlr.Goal("NDR", 0.0, exceed_ratio=-0.5), "exceed_ratio"),
    (lambda: mlr.Goal("NDR", 0.0, initial_trial_duration=5.0,
                      final_trial_duration=1.0), "initial_trial_duration"),
    (lambda: mlr.Goal("NDR", 0.0, final_trial_duration=0.0),
     "final_trial_duration"),
    (lambda: mlr.Goal("NDR", 0.0, duration_sum=0.0), "duration_sum"),
    (lambda: mlr.Goal("NDR", 0.0, preceding_targets=-1), "preceding_targets"),
    (lambda: mlr.Goal("", 0.0), "name"),
    (lambda: mlr.Config((), MIN_LOAD, MAX_LOAD), "goals"),
    (lambda: mlr.Config((mlr.Goal("A", 0.0), mlr.Goal("A", 0.01)),
                        MIN_LOAD, MAX_LOAD), "goals"),
    (lambda: mlr.Config((mlr.Goal("A", 0.0),), 0.0, MAX_LOAD), "min_load"),
    (lambda: mlr.csit(MAX_LOAD, MIN_LOAD), "min_load"),
    (lambda: mlr.csit(MIN_LOAD, "fast"), "max_load"),
    (lambda: mlr.csit(MIN_LOAD, MAX_LOAD, search_duration_max=0.0),
     "search_duration_max"),
    (lambda: mlr.csit(MIN_LOAD, MAX_LOAD, warmup_duration=-1.0),
     "warmup_duration"),
    (lambda: mlr.csit(MIN_LOAD, MAX_LOAD, max_trials=0), "max_trials"),
    (lambda: mlr.csit(MIN_LOAD, MAX_LOAD,
                      max_trials=mlr.HARD_MAX_TRIALS + 1), "max_trials"),
    (lambda: mlr.csit(MIN_LOAD, MAX_LOAD, expansion_coefficient=1.0),
     "expansion_coefficient"),
])
def test_bad_config_raises_naming_the_field(build, field):
    """Each bad value raises ValueError whose message names the field."""
    with pytest.raises(ValueError, match=field):
        build()


def test_bad_trial_result_raises_naming_the_field():
    """A measurer reporting a loss ratio above 1 is rejected by name."""
    with pytest.raises(ValueError, match="loss_ratio"):
        run_search(mlr.csit(MIN_LOAD, MAX_LOAD), lambda load: 1.5)


def test_reports_json_and_markdown():
    """JSON round-trips results and every trial; markdown shows both."""
    result, _ = run_search(mlr.csit(MIN_LOAD, MAX_LOAD), soft(5e6))
    data = json.loads(mlr.to_json(result))
    assert data["trial_count"] == len(data["trials"]) == len(result.trials)
    assert data["stop_reason"] == mlr.STOP_COMPLETE
    for name, goal in result.goals.items():
        item = data["goals"][name]
        assert item["relevant_lower_bound"] == goal.relevant_lower_bound
        assert item["relevant_upper_bound"] == goal.relevant_upper_bound
        assert item["conditional_throughput"] == goal.conditional_throughput
        assert item["irregular"] is False
        assert item["goal"]["duration_sum"] == 21.0
    assert data["trials"][0]["phase"] == "init"
    text = mlr.report_markdown(result)
    ndr = result.goals["NDR"].relevant_lower_bound
    assert f"| NDR | 0 | 0.5 | 0.005 | {ndr:,.0f} |" in text
    rows = [line for line in text.splitlines()
            if line[:3].strip("| ").isdigit()]
    assert len(rows) == len(result.trials)
