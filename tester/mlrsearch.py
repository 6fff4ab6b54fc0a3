"""MLRsearch throughput search controller (RFC 9971, Multiple Loss Ratio Search).

This module is the Controller of RFC 9971's Manager / Controller / Measurer
split.  The caller (the Manager) builds a `Config` holding Search Goals and
load limits, and passes a `measure(load_pps, duration_s)` callable (the
Measurer) to `search()`.  `search()` picks trial loads and durations, logs
every trial, and returns one Goal Result per Search Goal: relevant lower and
upper bound, conditional throughput and an irregular flag.

The formulas that define the results (Load Classification, Relevant Bounds,
Conditional Throughput) follow RFC 9971 Appendices A and B exactly.  The load
selection heuristics (which load to measure next, for how long) are this
module's own, in the spirit of FD.io CSIT's implementation: coarse preceding
targets with shorter durations and wider widths, refining the previous
target's bounds, geometric external search, bisection.

Pure Python 3.11 standard library; the clock is injectable so simulated
searches run in milliseconds.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

UPPER = "upper"
LOWER = "lower"
UNDECIDED = "undecided"

HARD_MAX_TRIALS = 100_000
"""No Config may allow more trials than this, whatever max_trials says."""

STOP_COMPLETE = "complete"
STOP_DURATION = "search_duration_max"
STOP_TRIALS = "max_trials"

_WIDTH_SLACK = 1e-9
"""Relative slack when comparing a width with a goal width (float noise)."""


# --------------------------------------------------------------------------
# Inputs


def _fail(owner: str, name: str, message: str, value) -> None:
    """Raise ValueError naming the offending field and its value."""
    raise ValueError(f"{owner}{name}: {message} (got {value!r})")


def _check_number(owner: str, name: str, value) -> float:
    """Return value as float, or raise ValueError if it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(owner, name, "must be a number", value)
    if not math.isfinite(value):
        _fail(owner, name, "must be finite", value)
    return float(value)


@dataclass(frozen=True)
class Goal:
    """One Search Goal (RFC 9971 section "Search Goal").

    name: label used in results and logs (e.g. "NDR", "PDR").
    loss_ratio: Goal Loss Ratio; a trial with a higher Trial Loss Ratio is
        a high-loss trial.  0 <= loss_ratio < 1.
    exceed_ratio: Goal Exceed Ratio; the share of the duration sum that may
        be high-loss at a Lower Bound.  0 <= exceed_ratio < 1.
    relative_width: Goal Width, relative to the upper bound: the search for
        this goal is done when (upper - lower) <= relative_width * upper.
    initial_trial_duration: Goal Initial Trial Duration [s], the shortest
        trial the controller picks for this goal (used by coarse targets).
    final_trial_duration: Goal Final Trial Duration [s]; only trials at least
        this long can make a load a Lower Bound.
    duration_sum: Goal Duration Sum [s] of trial effective durations that
        decides a load's classification.
    preceding_targets: how many coarser intermediate targets (each twice as
        wide, shorter trials, one trial per load) precede the final one.
    """

    name: str
    loss_ratio: float
    exceed_ratio: float = 0.5
    relative_width: float = 0.005
    initial_trial_duration: float = 1.0
    final_trial_duration: float = 1.0
    duration_sum: float = 21.0
    preceding_targets: int = 2

    def __post_init__(self) -> None:
        """Validate every field; raise ValueError naming the bad one."""
        if not isinstance(self.name, str) or not self.name.strip():
            _fail("Goal.", "name", "must be a non-empty string", self.name)
        owner = f"Goal {self.name!r}: "
        loss = _check_number(owner, "loss_ratio", self.loss_ratio)
        if not 0.0 <= loss < 1.0:
            _fail(owner, "loss_ratio", "must be in [0, 1)", self.loss_ratio)
        exceed = _check_number(owner, "exceed_ratio", self.exceed_ratio)
        if not 0.0 <= exceed < 1.0:
            _fail(owner, "exceed_ratio", "must be in [0, 1)", self.exceed_ratio)
        width = _check_number(owner, "relative_width", self.relative_width)
        if not 0.0 < width < 1.0:
            _fail(owner, "relative_width", "must be in (0, 1)",
                  self.relative_width)
        for name in ("initial_trial_duration", "final_trial_duration",
                     "duration_sum"):
            if _check_number(owner, name, getattr(self, name)) <= 0.0:
                _fail(owner, name, "must be positive", getattr(self, name))
        if self.initial_trial_duration > self.final_trial_duration:
            _fail(owner, "initial_trial_duration",
                  "must not exceed final_trial_duration",
                  self.initial_trial_duration)
        if (isinstance(self.preceding_targets, bool)
                or not isinstance(self.preceding_targets, int)
                or not 0 <= self.preceding_targets <= 10):
            _fail(owner, "preceding_targets", "must be an int in [0, 10]",
                  self.preceding_targets)


@dataclass(frozen=True)
class Config:
    """Controller Input (RFC 9971 section "Controller Input").

    goals: the Search Goals (required by RFC 9971), unique names.
    min_load, max_load: Min Load and Max Load [pps]; no trial goes outside.
    search_duration_max: the search stops (irregular results for unfinished
        goals) rather than start a trial that would end after this many
        seconds from the start, by the controller's clock.
    warmup_duration: if positive, one trial of this length at max_load is
        run first; it is logged but never used for classification.
    max_trials: hard cap on trials (warmup included), at most HARD_MAX_TRIALS.
    expansion_coefficient: external search (extending below an upper bound
        or above a lower bound) multiplies its step by this each time.
    """

    goals: tuple
    min_load: float
    max_load: float
    search_duration_max: float = 1800.0
    warmup_duration: float = 0.0
    max_trials: int = 1000
    expansion_coefficient: float = 2.0

    def __post_init__(self) -> None:
        """Validate every field; raise ValueError naming the bad one."""
        goals = tuple(self.goals) if isinstance(self.goals, (list, tuple)) \
            else None
        if not goals:
            _fail("Config.", "goals", "must be a non-empty list of Goal",
                  self.goals)
        object.__setattr__(self, "goals", goals)
        names = set()
        for goal in goals:
            if not isinstance(goal, Goal):
                _fail("Config.", "goals", "items must be Goal instances", goal)
            if goal.name in names:
                _fail("Config.", "goals", "goal name must be unique",
                      goal.name)
            names.add(goal.name)
        if _check_number("Config.", "min_load", self.min_load) <= 0.0:
            _fail("Config.", "min_load", "must be positive", self.min_load)
        _check_number("Config.", "max_load", self.max_load)
        if self.min_load >= self.max_load:
            _fail("Config.", "min_load", "must be smaller than max_load "
                  f"({self.max_load!r})", self.min_load)
        duration = _check_number("Config.", "search_duration_max",
                                 self.search_duration_max)
        if duration <= 0.0:
            _fail("Config.", "search_duration_max", "must be positive",
                  self.search_duration_max)
        if _check_number("Config.", "warmup_duration",
                         self.warmup_duration) < 0.0:
            _fail("Config.", "warmup_duration", "must not be negative",
                  self.warmup_duration)
        if (isinstance(self.max_trials, bool)
                or not isinstance(self.max_trials, int)
                or not 1 <= self.max_trials <= HARD_MAX_TRIALS):
            _fail("Config.", "max_trials",
                  f"must be an int in [1, {HARD_MAX_TRIALS}]", self.max_trials)
        if _check_number("Config.", "expansion_coefficient",
                         self.expansion_coefficient) <= 1.0:
            _fail("Config.", "expansion_coefficient", "must be above 1",
                  self.expansion_coefficient)


def csit(min_load: float, max_load: float, **overrides) -> Config:
    """The `csit` preset: NDR and PDR as FD.io CSIT searches them by default.

    Both goals: exceed ratio 0.5, relative width 0.005, 1 s trials
    (initial = final), duration sum 21 s, two preceding targets.
    NDR has loss ratio 0, PDR 0.005.  Keyword overrides go to Config.
    """
    common = dict(exceed_ratio=0.5, relative_width=0.005,
                  initial_trial_duration=1.0, final_trial_duration=1.0,
                  duration_sum=21.0, preceding_targets=2)
    goals = (Goal("NDR", 0.0, **common), Goal("PDR", 0.005, **common))
    kwargs = dict(goals=goals, min_load=min_load, max_load=max_load,
                  search_duration_max=1800.0)
    kwargs.update(overrides)
    return Config(**kwargs)


def rfc2544(min_load: float, max_load: float, **overrides) -> Config:
    """The `rfc2544` preset: every trial 60 s, exceed ratio 0.

    One 60 s trial decides a load (duration sum 60 s, exceed ratio 0), as in
    RFC 2544's binary search; NDR loss 0 and PDR loss 0.005, width 0.005.
    Keyword overrides go to Config.
    """
    common = dict(exceed_ratio=0.0, relative_width=0.005,
                  initial_trial_duration=60.0, final_trial_duration=60.0,
                  duration_sum=60.0, preceding_targets=2)
    goals = (Goal("NDR", 0.0, **common), Goal("PDR", 0.005, **common))
    kwargs = dict(goals=goals, min_load=min_load, max_load=max_load,
                  search_duration_max=7200.0)
    kwargs.update(overrides)
    return Config(**kwargs)


PRESETS = {"csit": csit, "rfc2544": rfc2544}


# --------------------------------------------------------------------------
# Trials


@dataclass(frozen=True)
class TrialResult:
    """What `measure(load_pps, duration_s)` returns (RFC 9971 Trial Output).

    intended_load: the load the controller asked for [pps].
    duration: the trial duration the controller asked for [s].
    loss_ratio: Trial Loss Ratio, 0..1 (1 - forwarded / expected).
    offered_load: what the generator really sent [pps]; None: intended_load.
    forwarding_rate: Trial Forwarding Rate [pps]; None: load * (1 - loss).
    effective_duration: Trial Effective Duration [s] used for the sums;
        None: duration.
    extras: anything else the measurer wants logged (counters, latency...).
    """

    intended_load: float
    duration: float
    loss_ratio: float
    offered_load: Optional[float] = None
    forwarding_rate: Optional[float] = None
    effective_duration: Optional[float] = None
    extras: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TrialRecord:
    """One logged trial: what was asked, by whom, what came back, and when.

    goal is "*" and level -1 for the warmup and initial trials, which no
    single goal asked for.  started_s / ended_s are seconds since the search
    started, by the controller's clock.
    """

    index: int
    phase: str
    goal: str
    level: int
    load: float
    duration: float
    loss_ratio: float
    offered_load: float
    forwarding_rate: float
    effective_duration: float
    started_s: float
    ended_s: float
    extras: dict = field(default_factory=dict)


def _record(index: int, phase: str, goal: str, level: int, load: float,
            duration: float, result: TrialResult, started: float,
            ended: float) -> TrialRecord:
    """Check a measurer's TrialResult and turn it into a TrialRecord."""
    if not isinstance(result, TrialResult):
        raise TypeError(f"measure() must return TrialResult, got {result!r}")
    owner = "TrialResult."
    loss = _check_number(owner, "loss_ratio", result.loss_ratio)
    if not 0.0 <= loss <= 1.0:
        _fail(owner, "loss_ratio", "must be in [0, 1]", result.loss_ratio)
    effective = result.effective_duration
    effective = duration if effective is None else _check_number(
        owner, "effective_duration", effective)
    if effective <= 0.0:
        _fail(owner, "effective_duration", "must be positive", effective)
    offered = load if result.offered_load is None else _check_number(
        owner, "offered_load", result.offered_load)
    forwarding = load * (1.0 - loss) if result.forwarding_rate is None \
        else _check_number(owner, "forwarding_rate", result.forwarding_rate)
    return TrialRecord(index=index, phase=phase, goal=goal, level=level,
                       load=load, duration=duration, loss_ratio=loss,
                       offered_load=offered, forwarding_rate=forwarding,
                       effective_duration=effective, started_s=started,
                       ended_s=ended, extras=dict(result.extras))


# --------------------------------------------------------------------------
# RFC 9971 formulas


@dataclass(frozen=True)
class Target:
    """What one classification pass compares trials against.

    The final target of a goal is the goal itself; preceding targets are
    coarser: wider, shorter trials, one trial's worth of duration sum.
    trial_duration plays the role of the Goal Final Trial Duration.
    """

    level: int
    loss_ratio: float
    exceed_ratio: float
    width: float
    trial_duration: float
    duration_sum: float


def goal_targets(goal: Goal) -> list:
    """Return the goal's targets, coarsest first, the goal itself last.

    Level i of k preceding targets has trial duration interpolated
    geometrically from the initial to the final trial duration, width
    relative_width * 2**(k - i) (at most 0.5), and a duration sum of one
    such trial.
    """
    count = goal.preceding_targets
    targets = []
    for level in range(count + 1):
        fraction = level / count if count else 1.0
        duration = goal.initial_trial_duration * (
            goal.final_trial_duration / goal.initial_trial_duration) ** fraction
        final = level == count
        if final:
            duration = goal.final_trial_duration
        width = min(0.5, goal.relative_width * 2 ** (count - level))
        targets.append(Target(
            level=level, loss_ratio=goal.loss_ratio,
            exceed_ratio=goal.exceed_ratio,
            width=goal.relative_width if final else max(width,
                                                        goal.relative_width),
            trial_duration=duration,
            duration_sum=goal.duration_sum if final else min(
                duration, goal.duration_sum)))
    return targets


def final_target(goal: Goal) -> Target:
    """Return the target equal to the goal itself."""
    return goal_targets(goal)[-1]


def duration_sums(target: Target, trials) -> tuple:
    """Return (full_low, full_high, short_low, short_high) effective sums.

    A trial is full-length if its duration is at least the target's trial
    duration, high-loss if its loss ratio exceeds the target's loss ratio.
    """
    full_low = full_high = short_low = short_high = 0.0
    for trial in trials:
        high = trial.loss_ratio > target.loss_ratio
        if trial.duration >= target.trial_duration:
            if high:
                full_high += trial.effective_duration
            else:
                full_low += trial.effective_duration
        elif high:
            short_high += trial.effective_duration
        else:
            short_low += trial.effective_duration
    return full_low, full_high, short_low, short_high


def classification_sums(target: Target, trials) -> dict:
    """Return RFC 9971 Appendix A's intermediate values for one load.

    Keys follow the RFC's names: effect_high_loss_s, effect_whole_s,
    quantile_duration_s, pessimistic_high_loss_s, plus both exceed ratios
    (the high-loss sums divided by the whole sum) as the RFC's Appendix C
    tables show them.
    """
    full_low, full_high, short_low, short_high = duration_sums(target, trials)
    exceed = target.exceed_ratio
    balancing = short_low * exceed / (1.0 - exceed)
    effect_high = full_high + max(0.0, short_high - balancing)
    effect_full = full_low + effect_high
    effect_whole = max(effect_full, target.duration_sum)
    pessimistic_high = effect_whole - full_low
    return {
        "full_length_low_loss_s": full_low,
        "full_length_high_loss_s": full_high,
        "short_low_loss_s": short_low,
        "short_high_loss_s": short_high,
        "balancing_s": balancing,
        "effect_high_loss_s": effect_high,
        "effect_whole_s": effect_whole,
        "quantile_duration_s": effect_whole * exceed,
        "pessimistic_high_loss_s": pessimistic_high,
        "optimistic_exceed_ratio": effect_high / effect_whole,
        "pessimistic_exceed_ratio": pessimistic_high / effect_whole,
    }


def classify(target: Target, trials) -> str:
    """Classify one load from all its trials: UPPER, LOWER or UNDECIDED.

    This is RFC 9971 Appendix A ("Load Classification Code"): lower when
    both the optimistic and the pessimistic view are lower, upper when
    neither is, undecided otherwise.
    """
    sums = classification_sums(target, trials)
    quantile = sums["quantile_duration_s"]
    pessimistic_is_lower = sums["pessimistic_high_loss_s"] <= quantile
    optimistic_is_lower = sums["effect_high_loss_s"] <= quantile
    if pessimistic_is_lower and optimistic_is_lower:
        return LOWER
    if not pessimistic_is_lower and not optimistic_is_lower:
        return UPPER
    return UNDECIDED


def conditional_throughput(target: Target, load: float, trials):
    """Return the Conditional Throughput at load, or None without trials.

    RFC 9971 Appendix B: the (1 - exceed ratio) quantile of full-length
    trial loss ratios, missing duration counting as loss 1.0, turned into a
    forwarding rate at the intended load.
    """
    full = sorted((t for t in trials if t.duration >= target.trial_duration),
                  key=lambda t: t.loss_ratio)
    if not full:
        return None
    full_length = sum(t.effective_duration for t in full)
    remaining = max(target.duration_sum, full_length) * (
        1.0 - target.exceed_ratio)
    quantile = None
    for trial in full:
        if quantile is not None and remaining <= 0.0:
            break
        quantile = trial.loss_ratio
        remaining -= trial.effective_duration
    else:
        if remaining > 0.0:
            quantile = 1.0
    return load * (1.0 - quantile)


def classify_all(target: Target, by_load: dict) -> dict:
    """Classify every measured load against one target."""
    return {load: classify(target, trials) for load, trials in by_load.items()}


def relevant_bounds(classes: dict) -> tuple:
    """Return (relevant_lower, relevant_upper, loss_inversion) from classes.

    Relevant upper: the smallest Upper Bound.  Relevant lower: the largest
    Lower Bound below it (any Lower Bound if there is no upper; RFC 9971
    calls that an "effective" lower bound of an irregular result).
    loss_inversion: some Lower Bound lies above the relevant upper bound
    (RFC 9971 "Loss Inversion"; the RFC trusts the upper bound).
    """
    uppers = [load for load, cls in classes.items() if cls == UPPER]
    upper = min(uppers) if uppers else None
    lowers = [load for load, cls in classes.items() if cls == LOWER]
    below = [load for load in lowers if upper is None or load < upper]
    lower = max(below) if below else None
    inversion = upper is not None and any(load > upper for load in lowers)
    return lower, upper, inversion


def relative_gap(lower: float, upper: float) -> float:
    """Width of [lower, upper] relative to upper, as the goal width is."""
    return (upper - lower) / upper


def width_reached(lower, upper, width: float) -> bool:
    """Whether both bounds exist and are at most width apart (relative)."""
    if lower is None or upper is None:
        return False
    return relative_gap(lower, upper) <= width * (1.0 + _WIDTH_SLACK)


# --------------------------------------------------------------------------
# Load selection


@dataclass(frozen=True)
class Candidate:
    """A trial one goal asks for: where, how long, and why."""

    load: float
    duration: float
    goal: str
    level: int
    phase: str


def _pick_undecided(classes: dict, lower, upper):
    """Return the undecided load inside (lower, upper) worth refining, or None.

    With only an upper bound: the highest undecided load below it (the best
    chance of a close lower bound); otherwise the lowest (RFC 9971 advises
    measuring smaller loads first).
    """
    inside = [load for load, cls in classes.items() if cls == UNDECIDED
              and (lower is None or load > lower)
              and (upper is None or load < upper)]
    if not inside:
        return None
    if upper is not None and lower is None:
        return max(inside)
    if lower is None and upper is None:
        return max(inside)
    return min(inside)


def _bisect_load(lower: float, upper: float, width: float) -> float:
    """Next load between the bounds.

    Within twice the width: the load one width below the upper bound, so a
    lower result there ends the target at once; otherwise the geometric mean.
    """
    if relative_gap(lower, upper) <= 2.0 * width:
        load = upper * (1.0 - width)
        if lower < load < upper:
            return load
    return math.sqrt(lower * upper)


class _GoalState:
    """Per-goal controller state: current target level, extension streak."""

    def __init__(self, goal: Goal) -> None:
        """Start at the coarsest target with no extension streak."""
        self.goal = goal
        self.targets = goal_targets(goal)
        self.level = 0
        self.streak_phase = ""
        self.streak = 0

    def extension_step(self, phase: str, width: float,
                       coefficient: float) -> float:
        """Relative step of the next extension: width times coefficient**streak."""
        streak = self.streak if phase == self.streak_phase else 0
        return min(0.5, width * coefficient ** streak)

    def executed(self, phase: str) -> None:
        """Note that a trial this goal asked for ran (tracks extension streaks)."""
        if phase in ("extend_lo", "extend_hi"):
            self.streak = self.streak + 1 if phase == self.streak_phase else 1
            self.streak_phase = phase
        else:
            self.streak_phase, self.streak = "", 0


def _target_candidate(state: _GoalState, level: int, by_load: dict,
                      config: Config):
    """Return the Candidate this goal wants at this target level, or None.

    None means the target is done: bounds within width, or the search
    cannot go further (max_load is a lower bound, min_load an upper bound).
    Order: refine the previous target's lower then upper bound, refine an
    undecided load between the bounds, extend down or up, bisect.
    """
    target = state.targets[level]
    classes = classify_all(target, by_load)
    lower, upper, _ = relevant_bounds(classes)
    if width_reached(lower, upper, target.width):
        return None

    def candidate(load: float, phase: str) -> Candidate:
        return Candidate(load, target.trial_duration, state.goal.name,
                         level, phase)

    def inside(load) -> bool:
        return (load is not None and (lower is None or load > lower)
                and (upper is None or load < upper))

    if level > 0:
        prev_lower, prev_upper, _ = relevant_bounds(
            classify_all(state.targets[level - 1], by_load))
        for load, phase in ((prev_lower, "refine_lo"),
                            (prev_upper, "refine_hi")):
            if inside(load) and classes[load] == UNDECIDED:
                return candidate(load, phase)
    load = _pick_undecided(classes, lower, upper)
    if load is not None:
        return candidate(load, "refine")
    coefficient = config.expansion_coefficient
    if upper is not None and lower is None:
        if upper <= config.min_load:
            return None
        step = state.extension_step("extend_lo", target.width, coefficient)
        return candidate(max(config.min_load, upper * (1.0 - step)),
                         "extend_lo")
    if lower is not None and upper is None:
        if lower >= config.max_load:
            return None
        step = state.extension_step("extend_hi", target.width, coefficient)
        return candidate(min(config.max_load, lower / (1.0 - step)),
                         "extend_hi")
    if lower is None and upper is None:
        return candidate(config.max_load, "start")
    return candidate(_bisect_load(lower, upper, target.width), "bisect")


def _goal_candidate(state: _GoalState, by_load: dict, config: Config):
    """Return the goal's next Candidate, moving to finer targets when done."""
    while True:
        found = _target_candidate(state, state.level, by_load, config)
        if found is not None or state.level == len(state.targets) - 1:
            return found
        state.level += 1


# --------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class GoalResult:
    """RFC 9971 Goal Result for one goal, regular or irregular.

    relevant_lower_bound / relevant_upper_bound: loads [pps] or None.
    When there is no upper bound, relevant_lower_bound holds RFC 9971's
    "effective" lower bound (the largest Lower Bound), still irregular.
    conditional_throughput: forwarding rate [pps] at the lower bound.
    irregular: not a Regular Goal Result (a bound missing, or bounds wider
    than the goal width); reasons says why.
    loss_inversion: some Lower Bound lies above the relevant upper bound
    (RFC 9971 "Loss Inversion", from inconsistent trial results);
    informational, it does not make a result irregular by itself.
    """

    goal: Goal
    relevant_lower_bound: Optional[float]
    relevant_upper_bound: Optional[float]
    conditional_throughput: Optional[float]
    irregular: bool
    loss_inversion: bool
    reasons: tuple
    relative_width: Optional[float]
    lower_bound_trials: int


@dataclass(frozen=True)
class SearchResult:
    """Controller Output: Goal Results in goal order, plus the trial log."""

    config: Config
    goals: dict
    trials: tuple
    stop_reason: str
    search_duration_s: float


def goal_result(goal: Goal, by_load: dict, config: Config,
                stop_reason: str = STOP_COMPLETE) -> GoalResult:
    """Compute one goal's result from all trials (grouped by load)."""
    target = final_target(goal)
    lower, upper, inversion = relevant_bounds(classify_all(target, by_load))
    reasons = []
    if upper is None:
        if lower is not None and lower >= config.max_load:
            reasons.append("no relevant upper bound: max_load is a lower bound")
        else:
            reasons.append("no relevant upper bound")
    if lower is None:
        if upper is not None and upper <= config.min_load:
            reasons.append("no relevant lower bound: min_load is an upper bound")
        else:
            reasons.append("no relevant lower bound")
    if lower is not None and upper is not None and not width_reached(
            lower, upper, goal.relative_width):
        reasons.append("bounds wider than relative_width")
    if reasons and stop_reason != STOP_COMPLETE:
        reasons.append(f"search stopped early: {stop_reason}")
    if inversion:
        reasons.append("loss inversion: a lower bound lies above the "
                       "relevant upper bound")
    throughput = None if lower is None else conditional_throughput(
        target, lower, by_load[lower])
    width = None if lower is None or upper is None else relative_gap(
        lower, upper)
    irregular = not width_reached(lower, upper, goal.relative_width)
    return GoalResult(
        goal=goal, relevant_lower_bound=lower, relevant_upper_bound=upper,
        conditional_throughput=throughput, irregular=irregular,
        loss_inversion=inversion, reasons=tuple(reasons),
        relative_width=width,
        lower_bound_trials=0 if lower is None else len(by_load[lower]))


# --------------------------------------------------------------------------
# The search


class _Stop(Exception):
    """Raised inside the search when a budget (time, trials) is spent."""

    def __init__(self, reason: str) -> None:
        """Remember which budget stopped the search."""
        super().__init__(reason)
        self.reason = reason


class _Runner:
    """Runs and logs trials, enforcing the time and trial budgets."""

    def __init__(self, config: Config, measure: Callable,
                 clock: Callable) -> None:
        """Start the search clock."""
        self.config = config
        self.measure = measure
        self.clock = clock
        self.start = clock()
        self.trials = []
        self.by_load = {}

    def elapsed(self) -> float:
        """Seconds since the search started, by the injected clock."""
        return self.clock() - self.start

    def run(self, load: float, duration: float, phase: str, goal: str,
            level: int) -> TrialRecord:
        """Measure one trial, log it and (unless warmup) index it by load."""
        if len(self.trials) >= self.config.max_trials:
            raise _Stop(STOP_TRIALS)
        if self.elapsed() + duration > self.config.search_duration_max:
            raise _Stop(STOP_DURATION)
        load = min(self.config.max_load, max(self.config.min_load, load))
        started = self.elapsed()
        result = self.measure(load, duration)
        record = _record(len(self.trials), phase, goal, level, load, duration,
                         result, started, self.elapsed())
        self.trials.append(record)
        if phase != "warmup":
            self.by_load.setdefault(load, []).append(record)
        return record


def _initial_trials(runner: _Runner, config: Config) -> None:
    """Warmup (if configured), then max_load, then up to two forwarding rates.

    Like CSIT (and RFC 9971's FRMOL hint): if max_load loses more than the
    smallest goal loss ratio, the next load is the forwarding rate seen there.
    """
    if config.warmup_duration > 0.0:
        runner.run(config.max_load, config.warmup_duration, "warmup", "*", -1)
    duration = min(goal.initial_trial_duration for goal in config.goals)
    min_loss = min(goal.loss_ratio for goal in config.goals)
    min_width = min(goal.relative_width for goal in config.goals)
    load = config.max_load
    record = runner.run(load, duration, "init", "*", -1)
    for _ in range(2):
        if record.loss_ratio <= min_loss:
            return
        next_load = max(config.min_load,
                        min(config.max_load, record.forwarding_rate))
        if next_load >= load * (1.0 - min_width):
            return
        load = next_load
        record = runner.run(load, duration, "init", "*", -1)


def _next_candidate(states: list, by_load: dict, config: Config):
    """Ask every goal for a candidate; return the smallest load (first goal on ties)."""
    best = None
    for state in states:
        found = _goal_candidate(state, by_load, config)
        if found is not None and (best is None or found.load < best.load):
            best = found
    return best


def search(config: Config, measure: Callable, clock: Callable = None
           ) -> SearchResult:
    """Run MLRsearch; return a SearchResult with per-goal results and trial log.

    measure(load_pps, duration_s) -> TrialResult performs one trial.
    clock() -> seconds (default time.monotonic) is the search clock used for
    search_duration_max and the trial timestamps; tests inject a simulated
    one.  The search ends when every goal's final target is done, or
    (irregularly) when max_trials or search_duration_max would be exceeded.
    """
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {config!r}")
    if not callable(measure):
        raise TypeError("measure must be callable")
    runner = _Runner(config, measure, clock or time.monotonic)
    states = [_GoalState(goal) for goal in config.goals]
    stop_reason = STOP_COMPLETE
    try:
        _initial_trials(runner, config)
        for _ in range(HARD_MAX_TRIALS):
            found = _next_candidate(states, runner.by_load, config)
            if found is None:
                break
            runner.run(found.load, found.duration, found.phase, found.goal,
                       found.level)
            for state in states:
                if state.goal.name == found.goal:
                    state.executed(found.phase)
    except _Stop as stop:
        stop_reason = stop.reason
    results = {goal.name: goal_result(goal, runner.by_load, config,
                                      stop_reason)
               for goal in config.goals}
    return SearchResult(config=config, goals=results,
                        trials=tuple(runner.trials), stop_reason=stop_reason,
                        search_duration_s=runner.elapsed())


# --------------------------------------------------------------------------
# Reporting


def to_dict(result: SearchResult) -> dict:
    """Plain-data view of a SearchResult (JSON-ready)."""
    goals = {}
    for name, res in result.goals.items():
        item = asdict(res)
        item["goal"] = asdict(res.goal)
        item["reasons"] = list(res.reasons)
        goals[name] = item
    config = asdict(result.config)
    config["goals"] = [asdict(goal) for goal in result.config.goals]
    return {
        "algorithm": "MLRsearch (RFC 9971)",
        "config": config,
        "stop_reason": result.stop_reason,
        "search_duration_s": result.search_duration_s,
        "trial_count": len(result.trials),
        "goals": goals,
        "trials": [asdict(trial) for trial in result.trials],
    }


def to_json(result: SearchResult, indent: int = 2) -> str:
    """Serialize a SearchResult to JSON (goal results, config, every trial)."""
    return json.dumps(to_dict(result), indent=indent, default=str)


def _fmt(value, digits: int = 0) -> str:
    """Format an optional number for the markdown tables."""
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def report_markdown(result: SearchResult) -> str:
    """Render a SearchResult as Markdown: a goal table, then the trial log."""
    lines = [
        "# MLRsearch result (RFC 9971)",
        "",
        f"Stop reason: {result.stop_reason}; {len(result.trials)} trials; "
        f"search duration {result.search_duration_s:.1f} s.",
        "",
        "| goal | loss ratio | exceed ratio | width | relevant lower [pps] "
        "| relevant upper [pps] | conditional throughput [pps] | irregular "
        "| notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, res in result.goals.items():
        goal = res.goal
        lines.append(
            f"| {name} | {goal.loss_ratio:g} | {goal.exceed_ratio:g} "
            f"| {goal.relative_width:g} | {_fmt(res.relevant_lower_bound)} "
            f"| {_fmt(res.relevant_upper_bound)} "
            f"| {_fmt(res.conditional_throughput)} "
            f"| {'yes' if res.irregular else 'no'} "
            f"| {'; '.join(res.reasons) or '-'} |")
    lines += [
        "",
        "## Trials",
        "",
        "| # | phase | goal | level | load [pps] | duration [s] | loss ratio "
        "| forwarding rate [pps] | start [s] | end [s] |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for trial in result.trials:
        lines.append(
            f"| {trial.index} | {trial.phase} | {trial.goal} | {trial.level} "
            f"| {_fmt(trial.load)} | {trial.duration:g} "
            f"| {trial.loss_ratio:.6g} | {_fmt(trial.forwarding_rate)} "
            f"| {trial.started_s:.3f} | {trial.ended_s:.3f} |")
    return "\n".join(lines) + "\n"
