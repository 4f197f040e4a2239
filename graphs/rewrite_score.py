"""Scoring rewrites (profiler.rewrite) under the cost semantics: the scoring functions of §7.2
("such a profiling framework could be used to create scoring functions for guiding other
optimizations throughout the compilation process").

A subject is scored by the ordinary pipeline, `evaluate` then `graphs.analysis.analyse`: its
time under the schedule (eq. 5; P processors and the policy from the options), its peak space
(eq. 9), and the parts of its device boxes (transfers, kernels, launches, bank conflicts). A
rewrite is assessed by scoring the subject before and after it: the speedup (time before / time
after), the cost term that moved most, and the size from which it pays (`break_even`).

`break_even` finds that size numerically: both programs are evaluated on a geometric ladder of
sizes of one size parameter (1, 2, 4, ...), while their evaluations stay within a budget of
work (LADDER_STEPS), and the first change of sign of time(before) - time(after) is bisected to
the exact integer. It takes a `solver` argument so that a symbolic
solver (formulas in n) can be plugged in: one that answers is used, one that returns None falls
back to the ladder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from graphs.analysis import analyse
from graphs.crossings import BreakEven, crossings, ladder_break_even, resolved_upper
from graphs.kernel_counts import kernel_side
from graphs.schedule import Policy
from graphs.semantics.explicit import Evaluation, evaluate
from graphs.semantics.options import EvaluationOptions
from graphs.semantics.symbolic import NotRegular
from graphs.symbolic_profile import TimeCurve
from models.device_profile import DeviceProfile
from profiler.errors import HetprofError
from profiler.rewrite import Rewrite, Subject, offered

LADDER_STEPS = 250_000
"""The ladder of explicit evaluations stops before a size whose two evaluations are predicted to
take more than this many evaluator steps (`Evaluation.steps`; about a second of this machine's
time), and after one that took more (graphs.crossings.ladder_break_even): a budget of work, so
that the answer does not depend on the machine's speed or load."""

TIME_TERMS = ("transfer", "kernel", "launch", "cpu")
"""The parts of the predicted time a rewrite can move (`Score`)."""


@dataclass(frozen=True, slots=True)
class Score:
    """A subject's predicted costs in the profile's units: `time` (schedule time, eq. 5) and
    `space` (peak words on both worlds, eq. 9); `transfer` (δ* + δ† + merges + growth), `kernel`
    (device-box time without launches), `launch`, `cpu` (the rest of the time) and the count of
    bank-conflicting steps; `kernel_side`, whether its kernels are bound by memory or compute
    (graphs.kernel_counts.kernel_side)."""

    time: float
    space: int
    work: float
    transfer: float
    kernel: float
    launch: float
    cpu: float
    bank_conflicts: int
    value: str = field(default="", compare=False)
    kernel_side: str = field(default="kernel", compare=False)  # memory or compute (kernel_side)

    def term(self, name: str) -> float:
        """A term by its name in `moved_term`'s answers."""
        return {"transfer": self.transfer, "kernel": self.kernel, "launch": self.launch,
                "cpu": self.cpu, "bank conflicts": self.bank_conflicts,
                "space": self.space}[name]


DISAGREES = "the schedule's times at the profiled size disagree"
"""Marks a symbolic break-even (on the lower bound of the time, graphs.symbolic_profile.PLACEMENT_TIME)
that the 1DF or BF schedule time at the profiled size contradicts: near a break-even the two
measures of time can differ."""


Solver = Callable[[Subject, Subject, str], BreakEven | None]
"""A break-even solver (e.g. symbolic): before, after, parameter -> BreakEven, or None."""


@dataclass(frozen=True, slots=True)
class Assessment:
    """One rewrite scored: before and after, speedup, the term that moved, where it pays."""

    key: str
    rule: str
    where: str
    detail: str
    before: Score
    after: Score
    speedup: float
    moved: str
    break_even: BreakEven | None = None

    def to_json(self) -> dict[str, Any]:
        """A dict for `--format json`, with the change of every term (`delta`)."""
        data = asdict(self)
        for side in ("before", "after"):
            data[side].pop("value", None)
        data["delta"] = {term: self.after.term(term) - self.before.term(term)
                         for term in (*TIME_TERMS, "bank conflicts", "space")}
        data["delta"]["time"] = self.after.time - self.before.time
        data["pays"] = self.break_even.describe() if self.break_even else None
        data["searched"] = self.break_even.searched() if self.break_even else None
        return data


@dataclass
class Scorer:
    """Scores subjects at fixed parameters and options, remembering what it has evaluated."""

    params: dict[str, int]
    options: EvaluationOptions = field(default_factory=EvaluationOptions)
    procs: int = 2
    policy: Policy | str = Policy.DEPTH_FIRST
    _cache: dict = field(default_factory=dict, repr=False)
    _steps: dict = field(default_factory=dict, repr=False)

    def initial_settings(self) -> dict[str, int]:
        """The settings a subject starts from: the profile's work-group size and warp width."""
        gpu = self.options.profile.gpu
        return {"work_group_size": gpu.work_group_size, "warp_width": gpu.warp_width}

    def options_for(self, subject: Subject) -> EvaluationOptions:
        """The evaluation options with the subject's settings (the work-group size) applied."""
        size = subject.setting("work_group_size")
        profile = self.options.profile
        if size is None or size == profile.gpu.work_group_size:
            return self.options
        return replace(self.options, profile=profile.with_gpu(work_group_size=size))

    def score(self, subject: Subject, params: dict[str, int] | None = None) -> Score:
        """Evaluate and analyse the subject (at `params` over the scorer's own)."""
        values = {**self.params, **(params or {})}
        key = (subject.key(), tuple(sorted(values.items())))
        if key not in self._cache:
            options = self.options_for(subject)
            evaluation = evaluate(subject.checked, values, options)
            self._cache[key] = _score(evaluation, self.procs, self.policy, options.profile)
            self._steps[key] = evaluation.steps
        return self._cache[key]

    def steps(self, subject: Subject, params: dict[str, int] | None = None) -> int:
        """The explicit evaluator's steps for the subject (`score`'s evaluation, made if it was
        not): the work its score took, as the break-even ladder budgets it."""
        self.score(subject, params)
        values = {**self.params, **(params or {})}
        return self._steps[(subject.key(), tuple(sorted(values.items())))]

    def assess(self, rewrite: Rewrite, parameter: str | None = None, ladder_max: int = 1024,
               solver: Solver | None = None) -> Assessment:
        """Score a rewrite; with a size `parameter`, also find where it pays."""
        before, after = self.score(rewrite.before), self.score(rewrite.after)
        found = None
        if parameter is not None:
            found = break_even(self, rewrite.before, rewrite.after, parameter, ladder_max,
                               solver)
            size = self.params.get(parameter)
            if (size is not None and found.method.startswith("symbolic")
                    and found.pays_at(size) != (after.time < before.time)):
                found = replace(found, method=f"{found.method}; {DISAGREES} ({parameter} = "
                                              f"{size})")
        return Assessment(rewrite.key, rewrite.site.rule, rewrite.site.where, rewrite.site.detail,
                          before, after, speedup(before, after), moved_term(before, after), found)


def _score(evaluation: Evaluation, procs: int, policy: Policy | str,
           profile: DeviceProfile) -> Score:
    result = analyse(evaluation, procs, policy, pictures=False)
    transfer = sum(o.grow + o.transfer_in + o.transfer_out + o.merge for o in result.on)
    launch = 0.0
    for record in evaluation.ons:
        box_time = record.box.time
        scale = record.info.kernel / box_time if box_time else 1.0
        launch += sum(phase.launch for phase in record.box.phases) * scale
    kernel = sum(o.kernel for o in result.on) - launch
    on_total = sum(o.total for o in result.on)
    return Score(time=result.time, space=result.space["peak"], work=result.work,
                 transfer=transfer, kernel=kernel, launch=launch, cpu=result.time - on_total,
                 bank_conflicts=sum(o.bank_conflicts for o in result.on),
                 value=evaluation.render_value(10**6),
                 kernel_side=kernel_side([phase.counts for record in evaluation.ons
                                          for phase in record.box.phases
                                          if phase.counts is not None], profile))


def speedup(before: Score, after: Score) -> float:
    """time before / time after (> 1: the rewrite is faster)."""
    if after.time <= 0:
        return float("inf") if before.time > 0 else 1.0
    return before.time / after.time


def moved_term(before: Score, after: Score) -> str:
    """The cost term that moved most: the time term (transfer, kernel, launch, cpu) with the
    largest change in the direction the time moved (the schedule overlaps terms, so a faster
    program may still have one term grown: `remove-on` moves work onto the CPU, and its time
    falls because the transfers fell more), named "bank conflicts" when it is the kernel and
    the conflicts moved the same way; "space" when no time term moved but the space did;
    "nothing" otherwise."""
    changes = {term: after.term(term) - before.term(term) for term in TIME_TERMS}
    direction = after.time - before.time
    if direction:
        along = {t: c for t, c in changes.items() if c * direction > 1e-9}
        if along:
            changes = along
    term = max(changes, key=lambda t: abs(changes[t]))
    if abs(changes[term]) > 1e-9:
        conflicts = after.bank_conflicts - before.bank_conflicts
        kernel = after.kernel - before.kernel
        if term == "kernel" and conflicts and (conflicts > 0) == (kernel > 0):
            return "bank conflicts"
        return term
    if after.space != before.space:
        return "space"
    if after.bank_conflicts != before.bank_conflicts:
        return "bank conflicts"
    return "nothing"


def bound_term(score: Score) -> str:
    """What bounds a program's predicted time (as Intel Advisor's offload report says): the
    largest of its transfer, launch, kernel and CPU terms, a kernel named by what bounds it
    (memory or compute: `Score.kernel_side`), or "bank conflicts" where it has some."""
    terms = {"transfer": score.transfer, "launch": score.launch, "kernel": score.kernel,
             "CPU": score.cpu}
    term = max(terms, key=lambda t: terms[t])
    if term != "kernel":
        return term
    return "bank conflicts" if score.bank_conflicts else score.kernel_side


def break_even(scorer: Scorer, before: Subject, after: Subject, parameter: str,
               ladder_max: int = 1024, solver: Solver | None = None) -> BreakEven:
    """Where `after` starts (or stops) being faster than `before` as `parameter` grows.

    A `solver` is asked first (see the module docstring); otherwise the sizes 1, 2, 4, ...,
    ladder_max are evaluated, and the first change of sign of time(before) - time(after) is
    bisected to the exact integer (assuming one crossing between two rungs). Sizes at which a
    program fails (an index out of range at a tiny size, say) are skipped, and the ladder stops
    before a size whose two evaluations are predicted to take more than LADDER_STEPS steps
    (`largest` says where)."""
    if solver is not None:
        found = solver(before, after, parameter)
        if found is not None:
            return found
    def pays(n: int) -> bool | None:
        try:
            return scorer.score(after, {parameter: n}).time < scorer.score(
                before, {parameter: n}).time
        except HetprofError:
            return None

    def steps(n: int) -> int:
        return scorer.steps(before, {parameter: n}) + scorer.steps(after, {parameter: n})

    return ladder_break_even(pays, parameter, ladder_max, steps, LADDER_STEPS)


def symbolic_solver(scorer: Scorer, upper: int = 10**12) -> SymbolicSolver:
    """A break-even solver for graphs.rewrite_score.break_even (`SymbolicSolver`)."""
    return SymbolicSolver(scorer, upper)


class SymbolicSolver:
    """A break-even solver for graphs.rewrite_score.break_even: both programs profiled
    symbolically in the size parameter, their times (PLACEMENT_TIME) compared for every n up
    to `upper` in O(log upper) evaluations (`crossings`). None where a program is not regular
    (the ladder of explicit evaluations answers then)."""

    def __init__(self, scorer: Scorer, upper: int = 10**12):
        self.scorer, self.upper = scorer, upper
        self.curves: dict = {}  # a subject's TimeCurve (None: not regular), shared by every rewrite
        self.prices: dict = {}  # kernel prices, shared by every curve (most kernels are in all)

    def curve_of(self, subject: Subject, parameter: str) -> TimeCurve | None:
        """The subject's time curve in `parameter`, made once; None where it is not regular."""
        key = (subject.key(), parameter)
        if key not in self.curves:
            scorer = self.scorer
            try:
                self.curves[key] = TimeCurve(subject.checked, scorer.options_for(subject),
                                             scorer.params, parameter, scorer.procs, self.prices)
            except NotRegular:
                self.curves[key] = None
        return self.curves[key]

    def __call__(self, before: Subject, after: Subject, parameter: str) -> BreakEven | None:
        first, second = (self.curve_of(s, parameter) for s in (before, after))
        if first is None or second is None:
            return None
        upper = self.upper
        try:
            largest = resolved_upper(first, second, parameter, first.formula, second.formula,
                                     upper)
            found = crossings(first, second, parameter, first.formula, second.formula, largest,
                              ("before", "after"))
            pays_at_1 = second(1) < first(1)
        except NotRegular:
            return None
        method = "symbolic (time's lower bound)" if self.scorer.procs > 1 else "symbolic (work)"
        if largest < upper:
            method += (f"; above {parameter} = {largest} the two times differ by less than "
                       "their floating-point resolution")
        if not found:
            return BreakEven(parameter, "always" if pays_at_1 else "never", 1 if pays_at_1
                             else None, method, largest)
        last = found[-1]
        if len(found) > 1:
            method += f"; {len(found)} crossings, the last one shown"
        return BreakEven(parameter, "from" if last.cheaper == "after" else "below", last.n,
                         method, largest)


# --------------------------------------------------------------------------------------------------
# Search


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The best subject a search found, the rewrites that lead there, and both scores."""

    strategy: str
    steps: tuple[str, ...]
    best: Subject
    before: Score
    after: Score
    explored: int

    @property
    def gain(self) -> float:
        """The predicted speedup of the best subject over the start."""
        return speedup(self.before, self.after)

    def to_json(self) -> dict[str, Any]:
        """A dict for `--format json` (the program is added by the CLI)."""
        return {"strategy": self.strategy, "steps": list(self.steps),
                "before": _score_json(self.before), "after": _score_json(self.after),
                "speedup": self.gain, "explored": self.explored,
                "settings": dict(self.best.settings)}


def _score_json(score: Score) -> dict[str, Any]:
    data = asdict(score)
    data.pop("value", None)
    return data


def search(scorer: Scorer, subject: Subject, beam: int = 1, depth: int = 4,
           progress: Callable[[int, int], None] | None = None) -> SearchResult:
    """Sequences of rewrites under the cost model: a beam search keeping the `beam` fastest
    subjects at each depth (beam = 1 is greedy: take the best rewrite while it improves), up to
    `depth` rewrites; the best subject met is returned. A rewrite whose result was already met
    is not explored again. `progress`, if given, is told after each program scored the depth
    being searched (1 ...) and how many programs have been scored (a wide beam scores every
    program within `depth` rewrites: minutes, for the CLI's progress bar)."""
    start_score = scorer.score(subject)
    best: tuple[Score, tuple[str, ...], Subject] = (start_score, (), subject)
    frontier: list[tuple[Score, tuple[str, ...], Subject]] = [best]
    seen = {subject.key()}
    explored = 0
    for level in range(1, depth + 1):
        candidates = []
        for score, steps, current in frontier:
            for rewrite in offered(current):
                key = rewrite.after.key()
                if key in seen:
                    continue
                seen.add(key)
                try:
                    new_score = scorer.score(rewrite.after)
                except HetprofError:
                    continue
                explored += 1
                if progress is not None:
                    progress(level, explored)
                if new_score.time < score.time or beam > 1:
                    candidates.append((new_score, (*steps, rewrite.key), rewrite.after))
        if not candidates:
            break
        candidates.sort(key=lambda c: (c[0].time, c[0].space, len(c[1])))
        frontier = candidates[:beam]
        if frontier[0][0].time < best[0].time:
            best = frontier[0]
        elif beam == 1:
            break
    strategy = "greedy" if beam == 1 else f"beam {beam}"
    return SearchResult(strategy, best[1], best[2], start_score, best[0], explored)
