"""Symbolic, size-independent profiles: formulas in the size parameters, and their values at any
size in time independent of it.

`symbolic_profile` runs `graphs.semantics.symbolic` (the compressed cost graph) and prices its device boxes:
a kernel of T threads is one thread template, so its time is that of a representative full work
group, `rounds` of them, plus the last group (graphs.devicebox's rule, eq. "Σ over rounds of the
slowest group"), each group priced by the real GPU model (`group_time`) on concrete addresses.
Kernel group times depend on addresses modulo the banks, so a kernel's formula holds for the
residue class of the size it was made at; `SymbolicProfile.at` re-prices at every size asked.

What is exact (tests/test_symbolic.py checks it against the explicit evaluator at n = 1..64):
work, span, node and edge counts, space per world, words and bytes moved, each device box's parts,
and time on one processor (= work, for every greedy schedule).

Time on P > 1 processors (`time_bounds`): the graph's top level is a row of serial edges and
parallel stretches between cut vertices (`graphs.semantics.symbolic.Block`); every schedule runs each
stretch alone, so times add up. Serial edges cost their weight under every schedule. A stretch of
work W, span S and width w takes exactly S when w ≤ P (no task ever waits), and otherwise, under
any greedy schedule (1DF, BF and work stealing all are), between max(W/P, S) and
W/P + (1 - 1/P)·S (Graham's bound, Graham 1969: the time is a path's weight plus intervals in
which all P processors are busy). Between those bounds the exact 1DF and BF times are not a closed
form in n: they depend on n's binary digits (the balanced ⊗ trees split ⌊n/2⌋ : ⌈n/2⌉ and the
policies interleave their fork edges with the threads); `benchmarks/schedule_idle.py` prints them.
Their exact values come from the explicit schedule (`--symbolic` prints it where the size allows).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import sympy as sp

from graphs.devicebox import (
    PathEdge,
    Phase,
    PhaseCost,
    box_model,
    box_walk,
    group_time,
    phase_cost,
    staging_items,
    staging_time,
    step_key,
    writeback_time,
)
from graphs.formulas import piece_marker
from graphs.kernel_counts import gpu_bound, phase_counts
from graphs.semantics.exact import (
    Inexact,
    Number,
    by_identity,
    exact_function,
    exact_integer,
    exact_value,
)
from graphs.semantics.irregular import NotRegular, OutsideAssumptions
from graphs.semantics.options import EvaluationOptions
from graphs.semantics.symbolic import (
    CostSummary,
    ReduceOperands,
    SPhase,
    SPhaseLoop,
    SymbolicEvaluation,
    SymbolicEvaluator,
    TAccess,
    TEdge,
    TLoop,
    size_symbol,
)
from models.base import AccessKind, MemoryAccess, Space, StepCost
from models.gpu import gpu_model
from models.gpu_cache import Traffic
from models.roofline import KernelCounts
from profiler.checker import CheckedProgram, bind_parameters
from profiler.errors import EvaluationError

MAX_INSTANTIATED_EDGES = 4_000_000  # what `_path_length` says of a path it cannot count


@dataclass(frozen=True, slots=True)
class KernelPrice:
    """One device box priced at concrete sizes."""

    time: float
    conflicts: int
    threads: int
    work_groups: int
    rounds: int
    max_conflict_degree: int
    walk: float = 0.0  # the cache mode's page walks after the heap's copy, in `time`


class SymbolicProfile:
    """The formulas of a program's costs, and their values at concrete sizes."""

    def __init__(self, checked: CheckedProgram, evaluation: SymbolicEvaluation,
                 options: EvaluationOptions, reference: dict[str, int]):
        self.checked = checked
        self.evaluation = evaluation
        self.options = options
        self.reference = reference
        self.model = gpu_model(options.profile, options.gpu_mode)
        self._priced: dict[tuple, Any] = {}
        self.gpu = options.profile.gpu
        # Kernel prices shared with other profiles (`share_prices`), and each template's key
        # there, by id (the templates live as long as the profile).
        self._shared: dict[tuple, PhaseCost] | None = None
        self._shapes: dict[int, tuple | None] = {}
        # Lock-step steps of work groups priced under the (stateless) model: by their pattern
        # (`_group_step`), and each warp's by its graphs.devicebox.step_key.
        self._steps: dict[tuple, tuple[float, int, int, int, int]] = {}
        self._warp_steps: dict[tuple, StepCost] = {}
        self._fixed_at: dict[tuple[tuple[str, int], ...], dict[Any, Any]] = {}  # `_fixed`'s

    def share_prices(self, prices: dict[tuple, PhaseCost]) -> None:
        """Price kernels through `prices`, a dict shared with other profiles under the same
        device profile and GPU model (the programs a rewrite or a placement compares share most
        of their kernels): a kernel is priced once for all of them at the same values of its
        own sizes (`_shared_key`)."""
        self._shared = prices

    @property
    def symbols(self) -> dict[str, sp.Symbol]:
        return self.evaluation.params

    # -- values at concrete sizes ---------------------------------------------------------------
    def check_sizes(self, values: dict[str, int]) -> None:
        """Raise OutsideAssumptions where the formulas do not hold at `values`: a size parameter
        below 1, or a count or recursion size of the program (`SymbolicEvaluation.assumptions`)
        below 1 there (the caller evaluates explicitly instead)."""
        declared = {p.name: p.span for p in self.checked.program.params}
        for name in self.symbols:
            if name in values and values[name] < 1:
                raise OutsideAssumptions(
                    f"the formulas assume every size parameter is at least 1, and {name} = "
                    f"{values[name]}", declared.get(name))
        subs = {self.symbols[k]: v for k, v in values.items() if k in self.symbols}
        for assumption in self.evaluation.assumptions:
            size = _given(assumption.size, subs)
            if size.is_number and size < 1:
                raise OutsideAssumptions(
                    f"the formulas assume {assumption.what} is at least 1, and here it is "
                    f"{formula_text(assumption.size)} = {size}", assumption.span)

    def substitution(self, values: dict[str, int]) -> dict:
        """Sympy substitutions for concrete sizes: the parameters, the region sizes and each
        device box's kernel time."""
        self.check_sizes(values)
        subs = self._sizes(values)
        for box in self.evaluation.boxes:
            for label, words in box.overflow:
                if _value(words, subs) > 0:
                    raise EvaluationError(
                        f"region {label} is full on the GPU and regions cannot grow there (the "
                        f"`on` needs {_value(words, subs)} words more)", box.span,
                        "Fig. 9, NoExpandWE")
        for symbol, box in zip(self.evaluation.box_symbols, self.evaluation.boxes, strict=True):
            subs[symbol] = self.kernel(box, subs).time
        return subs

    def _sizes(self, values: dict[str, int]) -> dict:
        """Sympy substitutions for the parameters and the region sizes at concrete sizes."""
        subs: dict[Any, Any] = {self.symbols[k]: v for k, v in values.items()
                                if k in self.symbols}
        subs.update(self.evaluation.sizes.values(subs))
        return subs

    def heaps(self, values: dict[str, int]) -> list[int]:
        """Each device box's heap in words at concrete sizes (`heap_words`), no kernel priced."""
        subs = self._sizes(values)
        return [self.heap_words(box, subs) for box in self.evaluation.boxes]

    def at(self, values: dict[str, int]) -> dict[str, Any]:
        """Every quantity of the profile at concrete sizes: work, span, nodes, edges, space, the
        device boxes' parts and the words moved."""
        subs = self.substitution(values)
        ev = self.evaluation
        result: dict[str, Any] = {
            "work": _value(ev.shape.work, subs),
            "span": _value(ev.shape.span, subs),
            "nodes": int(_value(ev.shape.nodes, subs)),
            "edges": int(_value(ev.shape.edges, subs)),
            "space": {"cpu": int(_value(ev.space_cpu, subs)),
                      "gpu": int(_value(ev.space_gpu, subs)),
                      "peak": int(_value(ev.space_peak, subs))},
            "regions": {k: int(_value(v, subs)) for k, v in ev.regions.items()},
            "on": [],
        }
        for box, symbol, total in zip(ev.boxes, ev.box_symbols, ev.box_totals, strict=True):
            parts = {name: _value(expr, subs) for name, expr in box.parts.items()}
            parts["kernel"] = subs[symbol] * self.options.profile.unit_scales()[1]
            parts["total"] = _value(total, subs)
            parts["pushed_words"] = self.pushed_words(box, subs)
            parts["gpu_words"] = int(sum(_value(w, subs) for _, w in box.returned))
            walk = self.kernel(box, subs).walk
            if walk:  # a profile that measured them (the cache mode): part of the kernel
                parts["page_walks"] = walk * self.options.profile.unit_scales()[1]
            result["on"].append(parts)
        return result

    # -- device boxes ---------------------------------------------------------------------------
    def kernel(self, box, subs: dict) -> KernelPrice:
        """The device box's time (graphs.devicebox.build_device_box) at concrete sizes."""
        total = 0.0
        conflicts = threads = groups = rounds = 0
        degree = 1
        model = self._box_model(box, subs)
        costs = [cost for _, _, cost in self._priced_phases(box, subs, model)]
        for cost in costs:
            total += cost.time
            conflicts += cost.conflicts
            threads = max(threads, cost.threads)
            groups += cost.work_groups
            rounds += cost.rounds
            degree = max(degree, cost.conflict_degree_max)
        walk = box_walk(costs, model)  # with the first kernel, as build_device_box adds it
        return KernelPrice(total + walk, conflicts, threads, groups, rounds, degree, walk)

    def _box_model(self, box, subs: dict):
        """The GPU model for one device box at concrete sizes (graphs.devicebox.box_model: the
        cache mode needs the box's heap, the words it pushes and allocates)."""
        if not self.model.stateful:
            return self.model
        return box_model(self.model, self.heap_words(box, subs), self.pushed_words(box, subs))

    def heap_words(self, box, subs: dict) -> int:
        """A device box's heap at concrete sizes: the words it pushes and returns."""
        return int(sum((_value(w, subs) for _, w in (*box.pushed, *box.returned)), 0.0))

    def _priced_phases(self, box, subs: dict, model, symbolic: bool = False):
        """(template, its loop levels' values, PhaseCost) for each phase of a device box in
        order. Under a stateful model consecutive serial phases are priced as one path, as the
        explicit evaluator concatenates them (graphs.devicebox.concat_phases): its cache state
        runs on from one to the next."""
        run: list[tuple[SPhase, dict]] = []
        for template, local in _phases(box.paths or [], subs, symbolic):
            if model.stateful and not template.parallel:
                run.append((template, local))
                continue
            if run:
                yield *run[-1], self._serial_run(run, subs, model)
                run = []
            yield template, local, self._phase((template, local), subs, model)
        if run:
            yield *run[-1], self._serial_run(run, subs, model)

    def _serial_run(self, run: list[tuple[SPhase, dict]], subs: dict, model) -> PhaseCost:
        """Consecutive serial phases priced as one path (`_priced_phases`)."""
        if len(run) == 1:
            return self._phase(run[0], subs, model)
        path: list[PathEdge] = []
        for template, local in run:
            path.extend(_compile(template.path, {**subs, **local})({}))
        return phase_cost(Phase([path], False), model, self.gpu)

    def _phase(self, phase: tuple[SPhase, dict], subs: dict, model=None) -> PhaseCost:
        """A kernel (or serial stretch) priced at concrete sizes, under `model` (default: the
        profile's); kept, since the formulas and the values at the same sizes price the same
        kernels."""
        template, local_subs = phase
        model = model or self.model
        heap = getattr(model, "heap_bytes", 0)  # the cache mode's box heap (L2 or DRAM)
        # Kept by the template itself and the values of its own symbols, and (`share_prices`)
        # by its content among the profiles that share prices. This assumes a kernel's price
        # depends on its template, the values of its symbols, the device profile, the GPU model
        # and (cache mode) its box's heap only, as `_price` does (`_shared_key`).
        values = {**subs, **local_subs}
        shared = self._shared_key(template, values)
        if shared is not None:
            key: tuple = (id(template), heap, shared[-1])
            shared = (*shared, heap)
        else:
            key = (id(template), heap,
                   tuple(sorted((_name(k), v) for k, v in values.items()
                                if not isinstance(v, sp.Basic) or v.is_Number)))
        if key not in self._priced:
            if shared is not None and self._shared is not None and shared in self._shared:
                self._priced[key] = self._shared[shared]
            else:
                self._priced[key] = self._price(template, values, model)
                if shared is not None and self._shared is not None:
                    self._shared[shared] = self._priced[key]
        return self._priced[key]

    def _shared_key(self, template: SPhase, values: dict) -> tuple | None:
        """A kernel's key among profiles that share prices: its template's content up to the
        names of its symbols (two programs build the same kernel with fresh thread and loop
        symbols of their own: `_canonical`), the device profile and GPU model, and the values of
        the template's symbols, the only values `_price` reads. None where the template or the
        profile cannot be hashed."""
        if id(template) not in self._shapes:
            shape = (template.parallel, tuple(template.path), template.count, template.var,
                     template.fresh_base, template.writes, template.reduce, template.staged,
                     template.writeback)
            try:
                symbols = _symbols_in(shape)
                canonical = _canonical(shape, symbols)
                hash((canonical, self.options.profile))
                self._shapes[id(template)] = (canonical, tuple(symbols))
            except TypeError:
                self._shapes[id(template)] = None
        known = self._shapes[id(template)]
        if known is None:
            return None
        canonical, symbols = known
        given = tuple((i, type(values[symbol]).__name__, values[symbol])
                      for i, symbol in enumerate(symbols) if symbol in values)
        return (type(self.model).__name__, self.options.profile, self.options.gpu_mode,
                canonical, given)

    def _price(self, template: SPhase, values: dict, model=None) -> PhaseCost:
        p = self.gpu
        model = model or self.model
        if not template.parallel:
            path = _compile(template.path, values)({})
            return phase_cost(Phase([path], False), model, p)
        staged = int(_value(template.staged, values))
        count = int(_value(template.count, values))
        width, size = p.warp_width, p.work_group_size
        groups = math.ceil(count / size)
        cost = PhaseCost(count, math.ceil(count / width), groups, 0, 0, 0.0, 0.0, parallel=True)
        if count == 0:
            return cost
        shift = _shift_invariant(template, values, p)
        # a period longer than one group only serves a kernel priced group by group (below)
        longest = LOCKSTEP_PERIODS if groups <= MOST_GROUPS_APART else 1
        period = None if shift else _lockstep_period(template, values, p, count, longest,
                                                      _shift_quantum(p, model))
        regular = shift or period == 1
        full = count // size
        by_period = 0  # > 1: full groups this many apart step alike, priced once a period
        priced: dict[int, tuple[float, PhaseCost]] = {}
        build: list[_CompiledPath] = []  # the template compiled at these sizes, once

        def own(t: int) -> dict:
            return _own(template, values, t)

        def group(g: int) -> tuple[float, PhaseCost]:
            if by_period and g < full:
                g %= by_period  # full groups a period apart step alike (`_lockstep_period`)
            if g not in priced:
                ids = range(g * size, min(count, (g + 1) * size))
                if not build:
                    build.append(_compile(template.path, values))
                priced[g] = self._price_group(template, values, ids, staged, groups, model,
                                              build[0])
            return priced[g]

        resident = max(1, p.threads_at_once // size)
        cost.rounds = math.ceil(groups / resident)
        runs = _runs(template, values, p, count, groups) if regular else None
        if runs is None:
            if groups > MOST_GROUPS_APART:
                raise NotRegular("a kernel whose work groups access memory differently (not "
                                 "affine in the thread index)")
            runs = [(g, g + 1) for g in range(groups)]
            if period is not None and not any(a.local for a in _accesses(template.path)):
                by_period = period  # each group priced as its period's first: the same time
        times = []
        if model.stateful:
            cost.traffic = Traffic()
        for first, end in runs:
            time, local = group(first)
            times.append(time)
            if first == 0 and count >= size:
                self._priced[self._full_key(template, values)] = time
            cost.conflicts += local.conflicts * (end - first)
            cost.conflict_degree_max = max(cost.conflict_degree_max, local.conflict_degree_max)
            cost.steps = max(cost.steps, local.steps)
            if cost.traffic is not None and local.traffic is not None:
                cost.traffic.add(local.traffic, end - first)
        total = _rounds_time(runs, times, groups, resident)
        if template.writeback:
            total += writeback_time(groups, p)
        if cost.traffic is not None:
            kernel = model.kernel_time(total, cost.traffic)  # type: ignore[attr-defined]
            total, cost.bound = kernel.time, kernel.bound
            cost.latency = kernel.latency
        total += p.launch
        if p.atomic and not model.stateful:
            total += p.atomic * _writes(template.path, {**values, **own(0)}) * count
        cost.time = total
        return cost

    def with_options(self, options: EvaluationOptions) -> SymbolicProfile:
        """The same evaluation priced under other options' device profile and GPU model (e.g.
        the other GPU mode's calibration): the kernel templates do not depend on them."""
        return SymbolicProfile(self.checked, self.evaluation, options, self.reference)

    def centre_at(self, name: str, subs: dict) -> tuple[float, float] | None:
        """A cost centre's work and span at concrete sizes (`substitution`); None where the
        program has no centre of that name."""
        centre = self.evaluation.centres.get(name)
        if centre is None:
            return None
        return _value(centre.work, subs), _value(centre.span, subs)

    def box_counts(self, box, subs: dict) -> list[KernelCounts] | None:
        """graphs.kernel_counts for a device box at concrete sizes (`substitution`): each
        kernel's global words read and written and operations, counted on its first thread's
        path and scaled by its threads (a regular kernel's threads take the same path); None
        where a thread's path is too long to build."""
        out = []
        gpu = self.gpu
        for template, local_subs in _phases(box.paths or [], subs):
            values = {**subs, **local_subs}
            if _path_length(template.path, values) > MAX_INSTANTIATED_EDGES:
                return None
            count = int(_value(template.count, values)) if template.parallel else 1
            if count == 0:
                continue
            build = _compile(template.path, values)
            if template.parallel:  # counted on thread 0's path without building it
                read, written, operations, allocations = build.counts(_own(template, values, 0))
                launches = 1
            else:  # a serial stretch: whether it launches is read off its edges
                one = phase_counts(Phase([build({})], False, staged=0), gpu)
                read, written, operations, allocations, launches = (
                    one.words_read, one.words_written, one.operations, one.allocations,
                    one.launches)
            staged = int(_value(template.staged, values))
            groups = math.ceil(count / gpu.work_group_size) if template.parallel else 0
            out.append(KernelCounts(
                read * count + staged * groups,
                written * count + (groups if template.writeback else 0),
                operations * count, launches, count, allocations * count))
        return out

    # -- formulas -------------------------------------------------------------------------------
    def formulas(self, values: dict[str, int] | None = None) -> dict[str, sp.Expr]:
        """The profile's formulas in the size parameters. Region sizes (BSIZE blocks) are taken at
        `values`; each kernel's group times too, with rounds as ceilings (`kernel_formula`)."""
        values = values or self.reference
        ev = self.evaluation
        fixed = self._fixed(values)
        scale = self.gpu.seconds_per_unit if self.options.profile.units == "seconds" else None
        words = self.options.profile.region.word_bytes
        out = {
            "work": ev.shape.work,
            "span": ev.shape.span,
            "nodes": ev.shape.nodes,
            "edges": ev.shape.edges,
            "time_1": ev.shape.work,
            "space_cpu": ev.space_cpu,
            "space_gpu": ev.space_gpu,
            "space_peak": ev.space_peak,
            "bytes_to_device": words * sum((w for b in ev.boxes for _, w in b.pushed),
                                           sp.Integer(0)),
            "bytes_to_host": words * sum((w for b in ev.boxes for _, w in b.returned),
                                         sp.Integer(0)),
        }
        for i, box in enumerate(ev.boxes):
            out[f"on{i}.kernel"] = fixed[ev.box_symbols[i]] * (scale or 1)
            for name, expr in box.parts.items():
                out[f"on{i}.{name}"] = expr
        return {k: _tidy(sp.sympify(v).subs(fixed)) for k, v in out.items()}

    def _fixed(self, values: dict[str, int]) -> dict[Any, Any]:
        """What the formulas take at `values`: the region-size quantities, and each device box's
        kernel time as a formula (`kernel_formula`). Made once per values (a report asks for
        the formulas and the time's at the same sizes); not to be changed."""
        self.check_sizes(values)
        key = tuple(sorted(values.items()))
        fixed = self._fixed_at.get(key)
        if fixed is None:
            subs = {self.symbols[k]: v for k, v in values.items() if k in self.symbols}
            fixed = dict(self.evaluation.sizes.values(subs))
            for symbol, box in zip(self.evaluation.box_symbols, self.evaluation.boxes,
                                   strict=True):
                fixed[symbol] = self.kernel_formula(box, values)
            self._fixed_at[key] = fixed
        return fixed

    def kernel_formula(self, box, values: dict[str, int]) -> sp.Expr:
        """A device box's time as a formula: per kernel, rounds (a ceiling in the sizes) times a
        full work group's time, and the last group, with group times priced at `values`."""
        subs = {self.symbols[k]: v for k, v in values.items() if k in self.symbols}
        subs.update(self.evaluation.sizes.values(subs))
        total = sp.Integer(0)
        p = self.gpu
        size = p.work_group_size
        resident = max(1, p.threads_at_once // size)
        model = self._box_model(box, subs)
        priced = list(self._priced_phases(box, subs, model, True))
        # The page walks after the heap's copy (build_device_box), at `values`' heap, as the
        # cache mode's choice of L2 or DRAM is made at `values`.
        total += _tidy_number(box_walk([cost for _, _, cost in priced], model))
        for template, local_subs, cost in priced:
            count = _given(template.count, local_subs) if local_subs else sp.sympify(template.count)
            if not template.parallel or not count.free_symbols:
                total += _tidy_number(cost.time)
                continue
            groups = sp.ceiling(count / size)
            rounds = sp.ceiling(groups / resident)
            concrete = int(_value(template.count, {**subs, **local_subs}))
            if cost.traffic is not None:
                total += self._stateful_formula(template, local_subs, subs, cost, count,
                                                rounds, concrete, model)
                continue
            # The paper's §7.1.2 write-back, l per work group, outside the rounds.
            extra = p.launch + (writeback_time(cost.work_groups, p) if template.writeback else 0)
            if template.writeback:
                total += groups * _tidy_number(p.global_latency)
            if concrete % size == 0 and cost.rounds:
                per_round = (cost.time - extra) / cost.rounds
                total += rounds * _tidy_number(per_round) + _tidy_number(p.launch)
            else:
                # Rounds of full groups, then the last round: priced at `values`' residue.
                # With no full group at `values`, the one group stands for them.
                full_round = (self._full_group_time(template, local_subs, subs)
                              if concrete >= size else cost.time - extra)
                last = cost.time - extra - (cost.rounds - 1) * full_round
                total += ((rounds - 1) * _tidy_number(full_round) + _tidy_number(last)
                          + _tidy_number(p.launch))
        return total

    def _stateful_formula(self, template: SPhase, local_subs: dict, subs: dict,
                          cost: PhaseCost, count: sp.Expr, rounds: sp.Expr,
                          concrete: int, model) -> sp.Expr:
        """A kernel's time under a stateful model (the cache mode) as a formula: the launch plus
        the largest of its latency (rounds of full groups, and the last round, as
        `kernel_formula` prices them) and its bandwidth and atomic terms, which grow with the
        threads (each thread's traffic as at `subs`)."""
        p = self.gpu
        assert cost.traffic is not None
        if concrete % p.work_group_size == 0 and cost.rounds:
            latency = rounds * _tidy_number(cost.latency / cost.rounds)
        else:
            full = (self._full_group_time(template, local_subs, subs, model)
                    if concrete >= p.work_group_size else cost.latency)
            last = cost.latency - (cost.rounds - 1) * full
            latency = (rounds - 1) * _tidy_number(full) + _tidy_number(last)
        share = count / concrete
        ceiling = model.kernel_time(0.0, cost.traffic)
        # The allocation queue scales with the threads; its last allocation's wait does not.
        terms = [latency + share * _tidy_number(ceiling.burst)] + [
            share * _tidy_number(t) for t in (ceiling.dram, ceiling.l2) if t] + (
            [share * _tidy_number(ceiling.atomics) + _tidy_number(ceiling.tail)]
            if ceiling.atomics else [])
        return sp.Max(*terms) + _tidy_number(p.launch)

    def _price_group(self, template: SPhase, values: dict, ids: range,
                     staged: int, groups: int = 1, model=None,
                     build: _CompiledPath | None = None) -> tuple[float, PhaseCost]:
        """One work group of a kernel (threads `ids`, of `groups` groups): graphs.devicebox.
        group_time on their concrete paths, or, for threads with long loops, period by period.
        Under a stateful model (the cache mode) the group's traffic is in the result's
        `traffic`."""
        p = self.gpu
        model = model or self.model
        # The work items that stage: a whole group's, or the kernel's where it is one group of
        # fewer (graphs.devicebox.staging_items).
        stagers = (p.work_group_size if groups > 1
                   else staging_items(len(ids), p.work_group_size, model))
        local = PhaseCost(0, 0, 0, 0, 0, 0.0, 0.0)
        state = None
        if model.stateful:
            local.traffic = Traffic()
            state = model.new_group(groups)  # type: ignore[attr-defined]
        if _path_length(template.path, values) > STRUCTURED_STEPS:
            operands = (_Operands(template.reduce, values) if template.reduce is not None
                        else None)
            threads = _Threads({template.var: _Lanes(ids.start, 1, len(ids))}, len(ids))
            if operands is not None:
                level = values[operands.spec.level]
                threads.own.update(operands.operands(level, threads.own[template.var], values))
            # One cache of compiled addresses (and, stateless, warp steps) for the kernel's
            # groups at these sizes.
            cache = build.structured if build is not None else {}
            summed = _structured_group(template.path, values, threads, model, p, cache, state)
            time, local.steps = summed.time, summed.steps
            if state is not None and local.traffic is not None:
                local.traffic.add(state.traffic)
            local.conflicts, local.conflict_degree_max = summed.conflicts, summed.degree
            return time + staging_time(stagers, model, p, staged), local
        stepped = None
        if model is self.model and not model.stateful:
            stepped = self._lockstep_group(template, values, ids, local, build)
        if stepped is None:
            thread = _threads(template, values)
            members = [thread(t) for t in ids]
            stepped = group_time(members, model, p, local, {}, groups=groups)
        time, local.steps = stepped
        return time + staging_time(stagers, model, p, staged), local

    def _lockstep_group(self, template: SPhase, values: dict, ids: range, local: PhaseCost,
                        build: _CompiledPath | None = None) -> tuple[float, int] | None:
        """graphs.devicebox.group_time for the work group of threads `ids` under a stateless
        model, walked from the template for all its threads at once (`_CompiledPath.lockstep`)
        instead of building each thread's path: the same warp steps, priced by the model on the
        same addresses, added up in the same order. A step's cost depends on its addresses
        relative to the first one's bank row (graphs.devicebox.step_key), so a step whose
        addresses are affine in the thread index is priced once for every group and size with
        the same first bank, stride and threads (`_group_step`). None where the threads' paths
        differ in length (the caller builds them)."""
        count = len(ids)
        own: dict[Any, Any] = {template.var: _Lanes(ids.start, 1, count)}
        build = build or _compile(template.path, values)
        if template.reduce is not None:
            operands = build.operands(template.reduce)
            own.update(operands.operands(values[template.reduce.level], own[template.var],
                                         values))
        time = 0.0
        steps = conflicts = broadcasts = multicasts = 0
        degree = local.conflict_degree_max
        try:
            for step in build.lockstep(own):
                weight, step_conflicts, step_degree, step_broadcasts, step_multicasts = (
                    self._group_step(step, count))
                time += weight
                steps += 1
                conflicts += step_conflicts
                degree = max(degree, step_degree)
                broadcasts += step_broadcasts
                multicasts += step_multicasts
        except _NotLockstep:
            return None
        local.conflicts += conflicts
        local.conflict_degree_max = degree
        local.broadcasts += broadcasts
        local.multicasts += multicasts
        return time, steps

    def _group_step(self, step: tuple, count: int) -> tuple[float, int, int, int, int]:
        """One lock-step step of a work group of `count` threads (a step of
        `_CompiledPath.lockstep`) priced as graphs.devicebox.group_time prices it: each warp's
        step by the model (`warp_step`, looked up by its `step_key`), the group's by
        `group_step`; (weight, conflicts, largest conflict degree, broadcasts, multicasts)."""
        p, model = self.gpu, self.model
        if step[0] == "other":
            key: tuple = (step, count)
        else:
            kind, address, local = step
            address = _lanes(address, count)
            if local is not None and not isinstance(local, tuple):
                local = (local,) * count
            if local is not None and not any(local):
                local = None
            step = (kind, address, local)
            key = ((kind, address.start % p.banks, address.step, count, local)
                   if address.listed is None else ())
        found = self._steps.get(key) if key else None
        if found is not None:
            return found
        width = p.warp_width
        warp_steps = []
        for first in range(0, count, width):
            lanes = range(first, min(count, first + width))
            if step[0] == "other":
                accesses, others = [], [step[1]] * len(lanes)
            else:
                spaces = ([Space.GLOBAL] * len(lanes) if local is None
                          else [Space.LOCAL if local[lane] else Space.GLOBAL for lane in lanes])
                accesses = [MemoryAccess(kind, address.at(lane), space)
                            for lane, space in zip(lanes, spaces, strict=True)]
                others = []
            warp_key = step_key(accesses, others, p)
            cost = self._warp_steps.get(warp_key)
            if cost is None:
                cost = self._warp_steps[warp_key] = model.warp_step(accesses, others)
            warp_steps.append(cost)
        priced = (model.group_step(warp_steps), sum(s.conflicts for s in warp_steps),
                  max((s.degree for s in warp_steps), default=1),
                  sum(s.broadcasts for s in warp_steps), sum(s.multicasts for s in warp_steps))
        if key:
            self._steps[key] = priced
        return priced

    @staticmethod
    def _full_key(template: SPhase, values: dict) -> tuple:
        return ("full", id(template), tuple(sorted(
            (_name(k), v) for k, v in values.items() if not isinstance(v, sp.Basic) or v.is_Number)))

    def _full_group_time(self, template: SPhase, local_subs: dict, subs: dict,
                         model=None) -> float:
        p = self.gpu
        values = {**subs, **local_subs}
        key = self._full_key(template, values)
        if key in self._priced:
            return self._priced[key]
        time, _ = self._price_group(template, values, range(p.work_group_size),
                                    int(_value(template.staged, values)), model=model)
        self._priced[key] = time
        return time

    # -- time on P processors -------------------------------------------------------------------
    def time_formulas(self, procs: int, values: dict[str, int] | None = None,
                      ) -> tuple[sp.Expr, sp.Expr]:
        """The lower and upper bounds of the time of every greedy schedule on `procs` processors,
        as formulas (`time_bounds`), priced as `formulas` prices the rest."""
        fixed = self._fixed(values or self.reference)
        lower, upper = time_bounds(self.evaluation.shape, procs)
        return (_tidy(sp.sympify(lower).subs(fixed)), _tidy(sp.sympify(upper).subs(fixed)))

    def lower_time_formula(self, procs: int, values: dict[str, int] | None = None) -> sp.Expr:
        """The lower bound of `time_formulas` alone (`lower_time_bound`): what a placement is
        compared by, without the upper bound's Piecewise built and simplified for nothing."""
        fixed = self._fixed(values or self.reference)
        return _tidy(_replaced(lower_time_bound(self.evaluation.shape, procs), fixed))

    def time_at(self, values: dict[str, int], procs: int) -> tuple[float, float]:
        """The bounds of `time_formulas` at concrete sizes; equal where the time is exact."""
        return shape_time(self.evaluation.shape, self.substitution(values), procs)

    def pushed_words(self, box, subs: dict) -> int:
        """The words a device box's `on` pushes to the GPU, at concrete sizes (`substitution`)."""
        return int(sum(_value(w, subs) for _, w in box.pushed))

    def on_bound(self, span, values: dict[str, int]) -> str | None:
        """What bounds the `on` at `span` on the GPU at these sizes (graphs.kernel_counts'
        `gpu_bound`: transfer, launch, memory or compute); None where no device box has that
        span."""
        boxes = self.evaluation.boxes
        index = next((k for k, box in enumerate(boxes) if box.span == span), None)
        if index is None:
            return None
        subs = self.substitution(values)
        box = boxes[index]
        transfer = sum(_value(expr, subs) for expr in box.parts.values())
        kernel = subs[self.evaluation.box_symbols[index]] * self.options.profile.unit_scales()[1]
        return gpu_bound(transfer, kernel, self.box_counts(box, subs), self.options.profile)

    def box_total(self, index: int, subs: dict) -> float:
        """The edge of the `index`-th device box at concrete sizes (`substitution`), in the CPU
        graph's units: its region growth, transfers in, kernel, transfers out and merge (Fig. 6,
        rule for `on`)."""
        return _value(self.evaluation.box_totals[index], subs)

    def kernel_threads(self, box, subs: dict) -> int:
        """The most threads any kernel of a device box runs, at concrete sizes (`substitution`):
        the widest of its parallel phases (a reduction's first level); 1 for serial code."""
        most = 1
        for item in box.paths or []:
            phases = ([(item, subs)] if isinstance(item, SPhase)
                      else [(phase, {**subs, item.var: 0}) for phase in item.phases
                            if isinstance(phase, SPhase)])
            for phase, here in phases:
                if phase.parallel:
                    most = max(most, int(_value(phase.count, here)))
        return most

    def centre_time_at(self, name: str, subs: dict, procs: int) -> tuple[float, float] | None:
        """A cost centre's time on `procs` processors at concrete sizes (`substitution`), as
        `time_at` bounds the whole program's: its serial edges plus each of its parallel
        stretches' bounds; None where the program has no centre of that name."""
        centre = self.evaluation.centres.get(name)
        if centre is None:
            return None
        return shape_time(centre, subs, procs)


def shape_time(shape: CostSummary, subs: dict, procs: int) -> tuple[float, float]:
    """`time_bounds` of a shape, in numbers at a substitution."""
    if procs == 1:
        work = _value(shape.work, subs)
        return work, work
    lower = upper = _value(shape.serial, subs)
    for block in shape.blocks:
        count = int(_value(block.count, subs))
        for level in range(count):
            here = subs if block.level is None else {**subs, block.level: level}
            work, span = _value(block.work, here), _value(block.span, here)
            low, high = _stretch_time(work, span, _value(block.width, here), procs)
            lower += low
            upper += high
    return lower, upper


def time_bounds(shape: CostSummary, procs: int) -> tuple[sp.Expr, sp.Expr]:
    """The time of every greedy schedule of a graph of this shape on `procs` processors lies
    between the two formulas: its serial edges' weight plus each parallel stretch's bounds (see
    the module's docstring). On one processor both are the work."""
    if procs == 1:
        return shape.work, shape.work
    p = sp.Integer(procs)
    upper = sp.sympify(shape.serial)
    for block in shape.blocks:
        high = sp.Piecewise((block.span, block.width <= p),
                            (block.work / p + (p - 1) / p * block.span, True))
        if block.level is not None:
            high = sp.Sum(high, (block.level, 0, block.count - 1))
        upper += high
    return lower_time_bound(shape, procs), upper


def lower_time_bound(shape: CostSummary, procs: int) -> sp.Expr:
    """The lower of `time_bounds` alone: serial edges plus max(work/P, span) of each parallel
    stretch (Brent); on one processor, the work."""
    if procs == 1:
        return shape.work
    p = sp.Integer(procs)
    lower = sp.sympify(shape.serial)
    for block in shape.blocks:
        low = sp.Max(block.work / p, block.span)
        if block.level is not None:
            low = sp.Sum(low, (block.level, 0, block.count - 1))
        lower += low
    return lower


def _stretch_time(work: float, span: float, width: float, procs: int) -> tuple[float, float]:
    """time_bounds of one parallel stretch, in numbers."""
    if width <= procs:
        return span, span
    return max(work / procs, span), work / procs + (procs - 1) / procs * span


def symbolic_profile(checked: CheckedProgram, options: EvaluationOptions | None = None,
                     values: dict[str, int] | None = None,
                     symbolic: list[str] | None = None) -> SymbolicProfile:
    """Profile a program symbolically: the parameters in `symbolic` (default: all) are sympy
    symbols; the others take `values` or their defaults. Raises NotRegular where the program is
    not regular (the caller falls back to the explicit evaluator)."""
    options = options or EvaluationOptions()
    reference = bind_parameters(checked, values or {})
    names = list(reference) if symbolic is None else symbolic
    params: dict[str, Any] = {k: (size_symbol(k) if k in names else v)
                              for k, v in reference.items()}
    evaluation = SymbolicEvaluator(checked, params, options.profile, options.gpu_mode,
                                   options.paper).run()
    return SymbolicProfile(checked, evaluation, options, reference)


def explicit_nodes(checked: CheckedProgram, options: EvaluationOptions,
                   values: dict[str, int]) -> int | None:
    """How many nodes the explicit evaluator's cost graph of the program has at `values` (the
    symbolic profile's exact node count), found without building it; None where the program is
    not regular (or the sizes are outside the formulas' assumptions)."""
    try:
        profile = symbolic_profile(checked, options, values)
        return profile.at(values)["nodes"]
    except NotRegular:
        return None


# -- helpers ---------------------------------------------------------------------------------------


def _given(expr, values: dict) -> sp.Expr:
    """expr with the values of its free symbols put in (xreplace: much faster than subs)."""
    expr = sp.sympify(expr)
    mapping = {symbol: sp.sympify(values[symbol]) for symbol in expr.free_symbols
               if symbol in values}
    return expr.xreplace(mapping) if mapping else expr


def _replaced(expr, mapping: dict) -> sp.Expr:
    """expr.subs(mapping) for a mapping of symbols, by xreplace (no pattern matching), again
    while a replacement brings in a symbol the mapping gives, as subs's one-by-one replacement
    does."""
    expr = sp.sympify(expr)
    while True:
        given = {symbol: mapping[symbol] for symbol in expr.free_symbols if symbol in mapping}
        if not given:
            return expr
        expr = expr.xreplace({symbol: sp.sympify(value) for symbol, value in given.items()})


def _value(expr, subs: dict) -> float:
    if type(expr) is int:
        return expr
    exact = exact_function(expr) if isinstance(expr, sp.Basic) else None
    if exact is not None:
        try:
            found = exact(subs)
        except (Inexact, KeyError, ZeroDivisionError):
            pass  # sympy says what is wrong, or evaluates what is not exact arithmetic
        else:
            return found if isinstance(found, int) else (
                int(found) if found.denominator == 1 else float(found))
    value = _given(expr, subs)
    if isinstance(value, sp.Sum) or value.has(sp.Sum):
        value = value.doit()
    value = sp.sympify(value)
    if value.free_symbols:
        raise NotRegular(f"a quantity that depends on {sorted(map(str, value.free_symbols))} "
                         "after the sizes are given")
    if not (value.is_extended_real and value.is_finite):  # check_sizes should have said why
        raise OutsideAssumptions(f"a quantity is {value} at these sizes: the formulas do not hold "
                                 "there")
    return int(value) if value.is_Integer else float(value)


def _name(symbol: Any) -> str:
    """str(symbol), without sympy's printer for a plain symbol (kernel keys are made often)."""
    return symbol.name if type(symbol) is sp.Symbol else str(symbol)


def _tidy_number(x: float) -> sp.Expr:
    return sp.Integer(int(x)) if float(x).is_integer() else sp.Float(x)


def _tidy(expr: sp.Expr) -> sp.Expr:
    """Simplify a formula a little (log(n)/log(2) stays ⌈log2 n⌉'s exact form)."""
    try:
        return sp.piecewise_fold(sp.expand(expr))
    except (TypeError, ValueError):  # pragma: no cover - sympy's corner cases
        return expr


def _phases(paths: list, subs: dict, symbolic: bool = False):
    """The phases of a device box in order, each with the substitutions of its loop levels."""
    for phase in paths:
        if isinstance(phase, SPhaseLoop):
            count = int(_value(phase.count, subs))
            operands = _Operands(phase.reduce, subs) if phase.reduce is not None else None
            for level in range(count):
                here = ({phase.var: level} if operands is None
                        else operands.level_values(level))
                for inner, local in _phases(phase.phases, {**subs, **here}, symbolic):
                    yield inner, {**here, **local}
        else:
            yield phase, {}


def _own(template: SPhase, values: dict, t: int) -> dict:
    """Thread t's own values: its index, and a reduction level's operands."""
    if template.reduce is None:
        return {template.var: t}
    operands = _Operands(template.reduce, values)
    level = values[template.reduce.level]
    return {template.var: t, **operands.operands(level, t, values)}


def _threads(template: SPhase, values: dict):
    """thread(t): the concrete path of thread t of a kernel template (with a reduction level's
    operands)."""
    build = _compile(template.path, values)
    if template.reduce is None:
        return lambda t: build({template.var: t})
    operands = _Operands(template.reduce, values)
    level = values[template.reduce.level]
    return lambda t: build({template.var: t, **operands.operands(level, t, values)})


def _symbols_in(item, found: dict | None = None) -> list[sp.Symbol]:
    """Every symbol in a kernel template's parts (dataclasses, tuples and sympy expressions),
    bound ones (a sum's index) included, in the order they are first met."""
    found = {} if found is None else found
    if isinstance(item, sp.Basic):
        for part in sp.preorder_traversal(item):
            if isinstance(part, sp.Symbol):
                found.setdefault(part, None)
    elif isinstance(item, tuple | list):
        for part in item:
            _symbols_in(part, found)
    elif hasattr(item, "__dataclass_fields__"):
        for name in item.__dataclass_fields__:
            _symbols_in(getattr(item, name), found)
    return list(found)


def _canonical(shape: tuple, symbols: list[sp.Symbol]) -> tuple:
    """A kernel template's parts with its symbols renamed by the order they are first met (the
    name's letters kept: a loop over a reduction's levels is told by its `k`), so that two
    templates that differ only in their symbols' names are equal."""
    names = {symbol: sp.Symbol(f"{symbol.name.rstrip('0123456789')}_{i}",
                               **symbol.assumptions0)
             for i, symbol in enumerate(symbols)}

    def renamed(item):
        if isinstance(item, sp.Basic):
            return item.xreplace(names)
        if isinstance(item, tuple | list):
            return tuple(renamed(part) for part in item)
        if hasattr(item, "__dataclass_fields__"):
            return type(item)(**{name: renamed(getattr(item, name))
                                 for name in item.__dataclass_fields__})
        return item

    return renamed(shape)


def _done(expr: sp.Expr) -> sp.Expr:
    """expr with every sum whose bounds are known added up (a lock-step base after a reduction
    is a sum over its levels)."""
    if not expr.has(sp.Sum):
        return expr
    return expr.replace(lambda e: isinstance(e, sp.Sum) and not e.free_symbols,
                        lambda e: e.doit())


class _Affine:
    """An integer expression affine in a few loop variables, evaluated with Python integers (its
    other symbols already given); anything else is evaluated by sympy."""

    def __init__(self, expr: sp.Expr, fixed: dict):
        self._compiled: Any = None  # `_other`'s function: None not tried yet, False sympy's
        self.coefficients: list[tuple[sp.Symbol, int]] | None = None
        self.constant = 0
        linear = _linear_form(expr)
        if linear is not None and all(isinstance(fixed.get(v, 0), int | sp.Integer)
                                      for v, _ in linear[0]):
            # Affine in every symbol: the sizes go into the constant, in Python integers (the
            # same coefficients sympy's Poly finds below, without sympy at each size).
            self.expr = expr
            self.constant = linear[1]
            self.coefficients = []
            for variable, coefficient in linear[0]:
                if variable in fixed:
                    self.constant += coefficient * int(fixed[variable])
                else:
                    self.coefficients.append((variable, coefficient))
            self.variables = [v for v, _ in self.coefficients]
            return
        if self._given_exactly(expr, fixed):
            return
        self.expr = _done(_given(expr, fixed))
        self.variables = sorted(self.expr.free_symbols, key=str)
        try:
            poly = sp.Poly(self.expr, *self.variables) if self.variables else None
        except sp.PolynomialError:
            return
        if poly is None:
            if self.expr.is_Integer:
                self.coefficients, self.constant = [], int(self.expr)
            return
        if poly.total_degree() > 1:
            return
        coefficients = [(v, poly.coeff_monomial(v)) for v in self.variables]
        constant = poly.coeff_monomial(1)
        if all(c.is_Integer for _, c in coefficients) and constant.is_Integer:
            self.coefficients = [(v, int(c)) for v, c in coefficients]
            self.constant = int(constant)

    def _given_exactly(self, expr: sp.Expr, fixed: dict) -> bool:
        """The integer coefficients and constant that sympy's Poly finds below, where expr is
        linear in its symbols that `fixed` does not give, with coefficients in those it gives
        (`_split_linear`): each coefficient evaluated exactly (graphs.semantics.exact), not by substituting
        and expanding with sympy at every size. False where that does not apply (the caller
        asks sympy)."""
        split = _split_linear(expr, frozenset(s for s in _free_symbols(expr) if s not in fixed))
        if split is None:
            return False
        terms, constant = split
        try:
            values = [(variable, exact_integer(coefficient, fixed))
                      for variable, coefficient in terms]
            whole = exact_integer(constant, fixed)
        except (Inexact, KeyError, ZeroDivisionError):
            return False
        self.expr = expr
        self.coefficients = [(v, c) for v, c in values if c != 0]
        self.constant = whole
        self.variables = [v for v, _ in self.coefficients]
        return True

    def __call__(self, values: dict) -> Any:
        """The value at `values` (an int; `_Lanes` where a value given is)."""
        if self.coefficients is None:
            lanes = [v for v in self.variables if isinstance(values.get(v), _Lanes)]
            if lanes:  # not affine: thread by thread
                count = values[lanes[0]].count
                return _Lanes.of([self._other(_lane_values(values, lane))
                                  for lane in range(count)])
            return self._other(values)
        # start + step·lane summed directly where the lanes are affine (the lock-step walk's
        # common case), without a `_Lanes` for every term.
        start, step, count = self.constant, 0, None
        for variable, coefficient in self.coefficients:
            value = values[variable]
            if type(value) is int:
                start += coefficient * value
            elif type(value) is _Lanes and value.listed is None:
                start += coefficient * value.start
                step += coefficient * value.step
                count = value.count if count is None else count
            else:
                return self._summed(values)
        return start if count is None else _Lanes(start, step, count)

    def _summed(self, values: dict) -> Any:
        """The affine value term by term (`_Lanes` arithmetic, listed lanes included)."""
        assert self.coefficients is not None  # called for affine expressions only
        total = self.constant
        for variable, coefficient in self.coefficients:
            total += coefficient * values[variable]
        return total

    def _other(self, values: dict) -> int:
        """A value of an expression that is not affine (a row t / n, a level's ceiling): by a
        function compiled once (sympy's lambdify over Python's math, floor and ceiling of exact
        integer quotients), checked against sympy on its first use; by sympy where it cannot
        be compiled or disagreed."""
        compiled = self._compiled
        if compiled is None:
            compiled = False
            if not self.expr.has(sp.Sum) and all(v in values for v in self.variables):
                try:
                    function = sp.lambdify(self.variables, self.expr, modules=[
                        {"floor": math.floor, "ceiling": math.ceil}, "math"])
                    got = function(*(values[v] for v in self.variables))
                    exact = not isinstance(got, float) or abs(got) < 2**52
                    if exact and round(got) == int(_value(self.expr, values)):
                        compiled = function
                except (TypeError, ValueError, NameError, OverflowError, ZeroDivisionError):
                    compiled = False
            self._compiled = compiled
        if compiled is False or not all(v in values for v in self.variables):
            return int(_value(self.expr, values))
        return int(round(compiled(*(values[v] for v in self.variables))))


_AFFINE_MADE: dict[tuple, tuple[_Affine, Any]] = {}


def _affine(expr: sp.Expr, fixed: dict) -> _Affine:
    """_Affine(expr, fixed), made once per expression and values of its symbols where those are
    Python ints (a kernel's addresses are compiled again for every group, loop and size that
    prices them, mostly at the same values). Kept by the expression's identity, with it (see
    graphs.semantics.exact.by_identity); the values of symbols it does not have do not count."""
    if not isinstance(expr, sp.Basic):
        return _Affine(expr, fixed)
    given = tuple(fixed.get(symbol) for symbol in _free_symbol_order(expr))
    if any(value is not None and type(value) is not int for value in given):
        return _Affine(expr, fixed)
    key = (id(expr), given)
    found = _AFFINE_MADE.get(key)
    if found is None:
        found = _AFFINE_MADE[key] = (_Affine(expr, fixed), expr)
    return found[0]


@by_identity
def _free_symbol_order(expr) -> tuple:
    """expr's free symbols in one fixed order (`_affine`'s key)."""
    return tuple(sorted(sp.sympify(expr).free_symbols, key=str))


@by_identity
def _free_symbols(expr) -> frozenset:
    return frozenset(sp.sympify(expr).free_symbols)


@by_identity
def _split_linear(expr, variables: frozenset):
    """expr as Σ coefficient·variable + constant over `variables` (sorted by name, as `_Affine`
    orders them), each coefficient and the constant an expression free of them; None where
    expr is not linear in them (a product of two, one inside a ceiling) or exact arithmetic
    cannot evaluate its parts (graphs.semantics.exact). Kept per expression and set of variables."""
    expr = sp.sympify(expr)
    if any(total.free_symbols & variables for total in expr.atoms(sp.Sum)):
        return None  # a Sum over the thread's own values: sympy's Poly decides
    coefficients: dict[sp.Symbol, sp.Expr] = {}
    constant = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(expr)):
        independent, dependent = term.as_independent(*variables, as_Add=False)
        if dependent == 1:
            constant += independent
        elif dependent in variables:
            coefficients[dependent] = coefficients.get(dependent, sp.Integer(0)) + independent
        else:
            return None
    terms = tuple((v, coefficients[v]) for v in sorted(coefficients, key=str))
    if any(exact_function(part) is None for part in (constant, *(c for _, c in terms))):
        return None
    return terms, constant


@by_identity
def _linear_form(expr) -> tuple[tuple[tuple[sp.Symbol, int], ...], int] | None:
    """expr as Σ coefficient·symbol + constant with integer coefficients, over every free symbol
    (sorted by name, as `_Affine` orders its variables); None where it is not (kept per
    expression: a kernel template's addresses are met again at every size)."""
    expr = sp.sympify(expr)
    found: tuple[tuple[tuple[sp.Symbol, int], ...], int] | None = None
    variables = sorted(expr.free_symbols, key=str)
    if not expr.has(sp.Sum):
        try:
            poly = sp.Poly(expr, *variables) if variables else None
        except sp.PolynomialError:
            poly = None
        if poly is None and expr.is_Integer:
            found = ((), int(expr))
        elif poly is not None and poly.total_degree() <= 1:
            coefficients = [(v, poly.coeff_monomial(v)) for v in variables]
            constant = poly.coeff_monomial(1)
            if all(c.is_Integer for _, c in coefficients) and constant.is_Integer:
                found = (tuple((v, int(c)) for v, c in coefficients if c != 0), int(constant))
    return found


def _limit(access: TAccess, values: dict) -> int:
    """How many words of the access's region the running kernel staged in local memory."""
    return int(_value(access.limit, values))


def _compile(path: list, fixed: dict) -> _CompiledPath:
    """The thread template `path` with the sizes `fixed`, as a function of the thread and loop
    indices that builds the concrete path quickly (integer arithmetic for affine addresses)."""
    return _CompiledPath(path, fixed)


class _CompiledPath:
    """A thread template with the sizes given: called with a thread's own values (its index, its
    loop indices, a reduction's operands) it builds that thread's concrete path; `lockstep`
    walks the same path for every thread of a work group at once (`_Lanes`). Each expression is
    compiled (`_Affine`) when it is first needed: the lock-step walk needs no words, and only a
    staged region's accesses need their offsets."""

    def __init__(self, path: list, fixed: dict):
        self.fixed = fixed
        # (loop, its count, its body), or (edge, None or its access's address, None)
        self.parts: list[tuple[TLoop | TEdge, Any, Any]] = []
        for edge in path:
            if isinstance(edge, TLoop):
                self.parts.append((edge, _affine(edge.count, fixed), _LoopBody(edge, fixed)))
            elif edge.access is None:
                self.parts.append((edge, None, None))
            else:
                self.parts.append((edge, _affine(edge.access.address, fixed), None))
        self._compiled: dict[tuple[int, str], _Affine] = {}
        self._operands: _Operands | None = None
        self.structured: dict = {}  # `_structured_group`'s cache for the template's groups

    def operands(self, spec: ReduceOperands) -> _Operands:
        """A reduction level's operands (`_Operands`) at these sizes, made once."""
        if self._operands is None:
            self._operands = _Operands(spec, self.fixed)
        return self._operands

    def _part(self, index: int, what: str) -> _Affine:
        """Edge `index`'s words, or its access's offset or limit, compiled once."""
        key = (index, what)
        found = self._compiled.get(key)
        if found is None:
            edge = self.parts[index][0]
            assert isinstance(edge, TEdge)
            expr = edge.words if what == "words" else getattr(edge.access, what)
            found = self._compiled[key] = _affine(expr, self.fixed)
        return found

    def __call__(self, values: dict) -> list[PathEdge]:
        out: list[PathEdge] = []
        for index, (edge, first, second) in enumerate(self.parts):
            if isinstance(edge, TLoop):
                for j in range(first(values)):
                    out.extend(second(j, values))
                continue
            access = None
            if first is not None:
                a = edge.access
                assert a is not None  # `first` is set for the edges with an access
                space = (Space.LOCAL if a.local and self._part(index, "offset")(values)
                         < self._part(index, "limit")(values) else Space.GLOBAL)
                access = MemoryAccess(a.kind, first(values), space)
            out.append(PathEdge(edge.kind, edge.weight, access, None, (),
                                self._part(index, "words")(values), edge.bookkeeping))
        return out

    def counts(self, values: dict) -> tuple[int, int, int, int]:
        """What graphs.devicebox.count_phase counts on the path `self(values)` builds (its
        global words read and written, operations and allocations), without building it: a
        loop whose body counts the same in every iteration (`_LoopBody.uniform`) is counted
        once and multiplied."""
        read = written = operations = allocations = 0
        for index, (edge, first, second) in enumerate(self.parts):
            if isinstance(edge, TLoop):
                count = first(values)
                if count <= 0:
                    continue
                if second.uniform:
                    r, w, o, a = second.counts(0, values)
                    read, written = read + count * r, written + count * w
                    operations, allocations = operations + count * o, allocations + count * a
                    continue
                for j in range(count):
                    r, w, o, a = second.counts(j, values)
                    read, written, operations, allocations = (
                        read + r, written + w, operations + o, allocations + a)
                continue
            if first is None:
                operations += not edge.bookkeeping
                continue
            a = edge.access
            assert a is not None  # `first` is set for the edges with an access
            if a.local and (self._part(index, "offset")(values)
                            < self._part(index, "limit")(values)):
                continue
            if a.kind is AccessKind.READ:
                read += 1
            else:
                written += max(1, self._part(index, "words")(values))
                allocations += 1
        return read, written, operations, allocations

    def lockstep(self, values: dict):
        """The path of every thread of a work group, step by step, where the threads' own values
        are `_Lanes` (one value per thread): per step, ("other", weight) for an edge without
        an access, or (kind, address lanes, local lanes) for a memory edge: its kind, each
        thread's address, and which threads' accesses go to local memory (None: none do). Raises _NotLockstep
        where the threads' paths differ in length (a loop count that differs between them)."""
        for index, (edge, first, second) in enumerate(self.parts):
            if isinstance(edge, TLoop):
                count = first(values)
                if isinstance(count, _Lanes):
                    count = count.uniform()
                for j in range(count):
                    yield from second.lockstep(j, values)
                continue
            if first is None:
                yield "other", edge.weight
                continue
            a = edge.access
            assert a is not None  # `first` is set for the edges with an access
            local = None
            if a.local:
                local = _below(self._part(index, "offset")(values),
                               self._part(index, "limit")(values))
            yield a.kind, first(values), local


class _NotLockstep(Exception):
    """The threads of a work group take paths of different lengths: `_CompiledPath.lockstep`
    cannot walk them together (the caller builds each thread's path instead)."""


class _Lanes:
    """The values one integer takes in the threads of a work group, thread by thread: `start +
    step·lane` for lanes 0 .. count - 1, or the values listed (`listed`, where they are not
    affine in the lane: a reduction's carried element). `_Affine` evaluates on it as on an int
    (sums and integer multiples), so a work group's addresses cost O(1) per edge, not O(threads)."""

    __slots__ = ("start", "step", "count", "listed")

    def __init__(self, start: int, step: int, count: int, listed: tuple[int, ...] | None = None):
        self.start, self.step, self.count, self.listed = start, step, count, listed

    @staticmethod
    def of(values: list[int]) -> _Lanes:
        """Lanes holding `values`, in the affine form where they are affine."""
        if len(values) > 1:
            step = values[1] - values[0]
            if all(b - a == step for a, b in zip(values, values[1:], strict=False)):
                return _Lanes(values[0], step, len(values))
        elif values:
            return _Lanes(values[0], 0, 1)
        return _Lanes(0, 0, len(values), tuple(values))

    def values(self) -> list[int]:
        if self.listed is not None:
            return list(self.listed)
        return [self.start + self.step * lane for lane in range(self.count)]

    def low(self) -> int:
        return min(self.listed) if self.listed is not None else min(
            self.start, self.start + self.step * (self.count - 1))

    def high(self) -> int:
        return max(self.listed) if self.listed is not None else max(
            self.start, self.start + self.step * (self.count - 1))

    def at(self, lane: int) -> int:
        if self.listed is not None:
            return self.listed[lane]
        return self.start + self.step * lane

    def uniform(self) -> int:
        """The one value every lane holds; _NotLockstep where they differ."""
        values = set(self.values()) if self.listed is not None or self.step else {self.start}
        if len(values) != 1:
            raise _NotLockstep
        return values.pop()

    def __add__(self, other: _Lanes | int) -> _Lanes:
        if isinstance(other, _Lanes):
            if self.listed is None and other.listed is None:
                return _Lanes(self.start + other.start, self.step + other.step, self.count)
            return _Lanes.of([a + b for a, b in zip(self.values(), other.values(), strict=True)])
        if self.listed is None:
            return _Lanes(self.start + other, self.step, self.count)
        return _Lanes(0, 0, self.count, tuple(a + other for a in self.listed))

    __radd__ = __add__

    def __mul__(self, factor: int) -> _Lanes:
        if self.listed is None:
            return _Lanes(self.start * factor, self.step * factor, self.count)
        return _Lanes(0, 0, self.count, tuple(a * factor for a in self.listed))

    __rmul__ = __mul__


def _lanes(value: _Lanes | int, count: int) -> _Lanes:
    """`value` in every one of `count` lanes (a plain int is the same in all)."""
    return value if isinstance(value, _Lanes) else _Lanes(value, 0, count)


def _lane_values(values: dict, lane: int) -> dict:
    """One thread's own values out of a work group's (`_Lanes`)."""
    return {k: v.at(lane) if isinstance(v, _Lanes) else v for k, v in values.items()}


def _below(offset: _Lanes | int, limit: _Lanes | int) -> tuple[bool, ...] | bool:
    """offset < limit, lane by lane where either is `_Lanes` (a staged region's words in local
    memory: graphs.devicebox's rule)."""
    if not isinstance(offset, _Lanes) and not isinstance(limit, _Lanes):
        return offset < limit
    if isinstance(offset, _Lanes) and offset.listed is None and not isinstance(limit, _Lanes):
        # start + step·lane < limit holds on a run of lanes at one end
        count, start, step = offset.count, offset.start, offset.step
        if step == 0:
            return (start < limit,) * count
        if step > 0:
            below = min(count, max(0, -(-(limit - start) // step)))
            return (True,) * below + (False,) * (count - below)
        above = min(count, max(0, (start - limit) // -step + 1))
        return (False,) * above + (True,) * (count - above)
    count = offset.count if isinstance(offset, _Lanes) else limit.count  # type: ignore[union-attr]
    return tuple(o < m for o, m in zip(_lanes(offset, count).values(),
                                       _lanes(limit, count).values(), strict=True))


class _LoopBody:
    """The body of a loop inside a thread, compiled once, or once per iteration where the loop's
    index enters non-affinely (a reduction's level k: ⌈n/2^k⌉); a reduction level's iterations
    also get their operands' addresses."""

    def __init__(self, loop: TLoop, fixed: dict):
        self.loop, self.fixed = loop, fixed
        self.per_iteration = loop.var.name.startswith("k")
        self.compiled: dict[int | None, _CompiledPath] = {}
        self.operands = (_Operands(loop.reduce, fixed) if loop.reduce is not None else None)

    def _body(self, j: int, values: dict) -> tuple[_CompiledPath, dict]:
        """Iteration j's compiled body and the values it is built with."""
        key = j if self.per_iteration else None
        build = self.compiled.get(key)
        if build is None:
            fixed = {**self.fixed, self.loop.var: j} if self.per_iteration else self.fixed
            build = self.compiled[key] = _compile(list(self.loop.body), fixed)
        here = {**values, self.loop.var: j}
        if self.operands is not None:
            level = values[self.operands.spec.level]
            here.update(self.operands.operands(level, j, here))
        return build, here

    def __call__(self, j: int, values: dict) -> list[PathEdge]:
        build, here = self._body(j, values)
        return build(here)

    def counts(self, j: int, values: dict) -> tuple[int, int, int, int]:
        """Iteration j's `_CompiledPath.counts`."""
        build, here = self._body(j, values)
        return build.counts(here)

    @functools.cached_property
    def uniform(self) -> bool:
        """Whether every iteration counts the same: the body is compiled once, and the loop's
        index enters none of what counting reads (a nested loop's count, an edge's words, a
        staged access's offset and limit), only addresses of global memory."""
        if self.per_iteration or self.operands is not None:
            return False
        var = self.loop.var

        def free(items) -> bool:
            for item in items:
                if isinstance(item, TLoop):
                    if _mentions(item.count, var) or not free(item.body):
                        return False
                elif _mentions(item.words, var) or (
                        item.access is not None and item.access.local
                        and (_mentions(item.access.offset, var)
                             or _mentions(item.access.limit, var))):
                    return False
            return True

        return free(self.loop.body)

    def lockstep(self, j: int, values: dict):
        """Iteration j for every thread of a work group (`_CompiledPath.lockstep`)."""
        build, here = self._body(j, values)
        return build.lockstep(here)


class _Operands:
    """graphs' side of graphs.semantics.symbolic.ReduceOperands: the levels' sizes and lock-step bases,
    and each thread's operand addresses, at concrete sizes (integers)."""

    def __init__(self, spec: ReduceOperands, fixed: dict):
        self.spec = spec
        outer = {k: v for k, v in fixed.items() if k not in (spec.level, spec.local)}
        self.fixed = outer
        n = int(_value(spec.n, outer))
        self.m, self.pairs = [], []
        size = n
        while size > 1:
            self.m.append(size)
            self.pairs.append(size // 2)
            size = (size + 1) // 2
        self.bases = []
        if spec.base is not None:
            base = int(_value(spec.fresh, outer))
            writes = int(_value(spec.writes, outer))
            for pairs in self.pairs:
                self.bases.append(base)
                base += writes * spec.width * -(-pairs // spec.width)
        self.element = (_affine(spec.element_address, outer), _affine(spec.element_offset, outer))
        self.results: dict[int, tuple[_Affine, _Affine]] = {}

    def level_values(self, k: int) -> dict:
        values = {self.spec.level: k}
        if self.spec.count is not None:
            values[self.spec.count] = self.pairs[k]
            values[self.spec.base] = self.bases[k]
        return values

    def _result(self, k: int) -> tuple[_Affine, _Affine]:
        if k not in self.results:
            fixed = {**self.fixed, **self.level_values(k)}
            self.results[k] = (_affine(self.spec.result_address, fixed),
                               _affine(self.spec.result_offset, fixed))
        return self.results[k]

    def element_at(self, k: int, j: int, values: dict) -> tuple[int, int]:
        """(address, offset) of element j of level k; with j `_Lanes` (a work group's threads),
        each thread's."""
        while True:
            if k == 0:
                here = {**values, self.spec.index: j}
                return self.element[0](here), self.element[1](here)
            if isinstance(j, _Lanes) and j.low() < self.pairs[k - 1] <= j.high():
                # Some threads read what level k - 1 returned, others the carried element.
                found = [self.element_at(k, element, _lane_values(values, lane))
                         for lane, element in enumerate(j.values())]
                return (_Lanes.of([a for a, _ in found]), _Lanes.of([o for _, o in found]))
            if (j.high() if isinstance(j, _Lanes) else j) < self.pairs[k - 1]:
                address, offset = self._result(k - 1)
                here = {**values, self.spec.local: j}
                return address(here), offset(here)
            k, j = k - 1, self.m[k - 1] - 1  # the odd last element, carried

    def operands(self, k: int, t: int, values: dict) -> dict:
        a_address, b_address, a_offset, b_offset = self.spec.operands
        a = self.element_at(k, 2 * t, values)
        b = self.element_at(k, 2 * t + 1, values)
        return {a_address: a[0], b_address: b[0], a_offset: a[1], b_offset: b[1]}


def _mentions(expr, symbol: sp.Symbol) -> bool:
    """Whether a template's expression (sympy, or a plain number) has `symbol` in it."""
    return isinstance(expr, sp.Basic) and symbol in expr.free_symbols


def _path_length(path: list, values: dict) -> int:
    """How many edges one thread's concrete path has (loops unrolled), without building it."""
    total = 0
    for edge in path:
        if isinstance(edge, TLoop):
            count = _loop_count(edge.count, values)
            if count is None:  # a bound set by an outer loop's index: count it as long
                return MAX_INSTANTIATED_EDGES
            if edge.var.name.startswith("k"):
                total += sum(_path_length(list(edge.body), {**values, edge.var: j})
                             for j in range(int(count)))
            else:
                total += int(count) * _path_length(list(edge.body), values)
        else:
            total += 1
    return total


def _loop_count(count: sp.Expr, values: dict) -> sp.Expr | int | None:
    """A thread loop's count at `values` (what `int` of it gives is the count); None where it
    still depends on a symbol `values` does not give. In exact arithmetic where it applies
    (graphs.semantics.exact), else by sympy's substitution."""
    exact = exact_function(count) if isinstance(count, sp.Basic) else None
    if exact is not None:
        try:
            return exact(values)
        except (Inexact, ZeroDivisionError):
            pass
        except KeyError:
            if all(isinstance(v, int | sp.Integer) for v in values.values()):
                return None  # a symbol not given, which sympy would leave free
    found = sp.sympify(count).subs(values)
    return None if found.free_symbols else found


def _writes(path: list, values: dict) -> int:
    """How many write requests one thread's path makes (loops counted, not unrolled)."""
    total = 0
    for edge in path:
        if isinstance(edge, TLoop):
            count = int(_value(edge.count, values))
            if edge.var.name.startswith("k"):
                total += sum(_writes(list(edge.body), {**values, edge.var: j})
                             for j in range(count))
            else:
                total += count * _writes(list(edge.body), values)
        elif edge.access is not None and edge.access.kind is AccessKind.WRITE:
            total += 1
    return total


def _accesses(path: list):
    for edge in path:
        if isinstance(edge, TLoop):
            yield from _accesses(list(edge.body))
        elif isinstance(edge, TEdge) and edge.access is not None:
            yield edge.access


def _shift_invariant(template: SPhase, values: dict, p) -> bool:
    """Whether every full work group of the kernel steps like the first: each address affine in
    the thread index with a coefficient that moves a whole group by a multiple of the banks."""
    var = template.var
    for access in _accesses(template.path):
        symbols = _free_symbols(access.address)
        if var not in symbols and var not in values and not any(
                isinstance(values.get(s), sp.Basic) and var in values[s].free_symbols
                for s in symbols):
            continue  # the substitution below leaves the thread index out: the same address
        coefficient = _thread_coefficient(access.address, var)
        if coefficient is not None and var not in values and all(
                isinstance(values.get(s), int | sp.Integer) for s in symbols - {var}):
            # Already linear in the thread index with an integer coefficient, and every other
            # symbol given an integer: the substitution below would find the same coefficient.
            if coefficient and (coefficient * p.work_group_size) % p.banks:
                return False
            continue
        coefficient = _given_coefficient(access.address, var, values)
        if coefficient is False:
            return False
        if coefficient is not None:
            # The same coefficient, read once from the address (`_coefficient_of`) and
            # evaluated exactly.
            if not isinstance(coefficient, int) or (coefficient * p.work_group_size) % p.banks:
                return False
            continue
        address = sp.expand(sp.sympify(access.address).subs(values))
        if var not in address.free_symbols:
            continue
        try:
            poly = sp.Poly(address, var)
        except sp.PolynomialError:
            return False
        if poly.degree() > 1:
            return False
        coefficient = poly.coeff_monomial(var)
        if not coefficient.is_Integer or (int(coefficient) * p.work_group_size) % p.banks:
            return False
    return True


def _given_coefficient(address: sp.Expr, var: sp.Symbol, values: dict) -> Number | bool | None:
    """The coefficient of `var` in the address with `values` put in, where the address is linear
    in var (`_coefficient_of`) and the coefficient is exact arithmetic in what `values` gives
    (an int, or a Fraction: not whole); False where the coefficient still depends on a symbol
    `values` does not give (sympy's would not be an integer); None where this does not decide
    (the caller asks sympy)."""
    if var in values:
        return None
    coefficient = _coefficient_of(address, var)
    if coefficient is None:
        return None
    try:
        return exact_value(coefficient, values)
    except KeyError:
        if all(isinstance(v, int | sp.Integer) for v in values.values()):
            return False  # a loop index, which the substitution leaves in the coefficient
        return None
    except (Inexact, ZeroDivisionError):
        return None


@by_identity
def _coefficient_of(address: sp.Expr, var: sp.Symbol) -> sp.Expr | None:
    """c where the address, expanded, is c·var plus terms free of var, c free of var; None where
    var appears otherwise (inside a ceiling, squared). Kept per address."""
    coefficient = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(sp.sympify(address))):
        if var not in term.free_symbols:
            continue
        factor = sp.expand(term / var)
        if var in factor.free_symbols:
            return None
        coefficient += factor
    return coefficient


@by_identity
def _thread_coefficient(address, var) -> int | None:
    """c where the address, expanded, is c·var plus terms free of var (c may be 0); None where
    var appears otherwise (inside a ceiling, times another symbol). Kept per address: a kernel
    template's addresses are met again at every size."""
    expanded = sp.expand(sp.sympify(address))
    coefficient = 0
    for term in sp.Add.make_args(expanded):
        if var not in term.free_symbols:
            continue
        factor = term / var
        if not factor.is_Integer:
            return None
        coefficient += int(factor)
    return coefficient


LOCKSTEP_CHECK_THREADS = 2**23
"""The most threads `_lockstep_period` evaluates (a few int64 arrays of this length); a larger
kernel with addresses that are not polynomials in the thread index stays not regular (a
break-even ladder asks for sizes up to 10^12)."""

MOST_GROUPS_APART = 64
"""The most work groups a kernel priced group by group may have (its groups not all alike): a
larger one is not regular."""

LOCKSTEP_PERIODS = 16
"""The longest period of work groups `_lockstep_period` looks for: a matrix kernel whose rows of
n threads break groups apart repeats every n / gcd(n, group size) groups (3 for n = 3 · 2^k, the
sizes a break-even ladder asks for between its powers of two)."""


def _shift_quantum(p, model) -> int:
    """The shift in words that keeps a group's cost under `model`: a multiple of the banks
    (models.dmm's address groups and banks), and under the cache mode also of a line, so that
    its sectors and lines keep their alignment (models/gpu_cache.py)."""
    if not model.stateful:
        return p.banks
    return math.lcm(p.banks, _line_words(p, model))


def _lockstep_period(template: SPhase, values: dict, p, count: int,
                     longest: int, quantum: int) -> int | None:
    """The fewest groups P (1 to `longest`, and fewer than the full groups) after which every
    full work group steps like the one P before it, decided by evaluating the thread template
    over all `count` thread indices (numpy) where `_shift_invariant` cannot decide it
    symbolically: addresses that are not polynomials in the thread index, such as a matrix
    kernel's row t / n and column t mod n. P = 1: every full group steps like the first. Full
    group g is alike group g - P when, lane by lane, each address is that group's plus one
    constant shift that is a multiple of the banks (so global address groups and local banks
    fall alike: models.dmm; `quantum`, `_shift_quantum`), whatever the loop indices, and each
    loop count and allocation size is that group's. A term mixing the thread index with loop
    indices must be a product whose thread part repeats with the same period; any other mix is
    not decided (None: the caller prices group by group), and so is a kernel of more than
    LOCKSTEP_CHECK_THREADS threads.

    Alike by translation is alike in cost: each model prices a group's addresses relative to
    one another (models.dmm's address groups and banks are residues of a multiple of the banks;
    models/gpu_cache.py's L1 share is fully associative, its sectors and lines keep their
    alignment under a shift of a multiple of a line, and its DRAM and L2 terms count distinct
    sectors)."""
    var, size = template.var, p.work_group_size
    groups = count // size
    if template.reduce is not None or groups < 2 or groups * size > LOCKSTEP_CHECK_THREADS:
        return None
    import numpy as np

    lanes = np.arange(groups * size, dtype=np.int64)
    width = p.warp_width

    def parts(expr) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """The thread-index part of expr, one row per full group, lane by lane, and the same of
        each thread part of a product with loop indices (those must repeat); None where a term
        mixes the thread index with loop indices otherwise than as such a product."""
        own, mixed = sp.Integer(0), []
        for term in sp.Add.make_args(sp.expand(_done(_given(expr, values)))):
            symbols = term.free_symbols
            if var not in symbols:
                continue
            if symbols == {var}:
                own += term
                continue
            _, thread_part = term.as_independent(var, as_Add=False)
            inner = parts(thread_part) if thread_part.free_symbols == {var} else None
            if inner is None:
                return None
            mixed += [inner[0], *inner[1]]
        if own == 0:
            return np.zeros((groups, 1), dtype=np.int64), mixed
        function = sp.lambdify(var, own, modules="numpy")
        with np.errstate(all="ignore"):
            rows = np.broadcast_to(np.asarray(function(lanes)), lanes.shape)
        if not np.all(np.isfinite(rows)):
            return None
        return np.rint(rows).astype(np.int64).reshape(groups, size), mixed

    def repeats(table: np.ndarray, period: int) -> bool:
        return not (table[period:] - table[:-period]).any()

    def same(found, period: int) -> bool:
        return all(repeats(t, period) for t in (found[0], *found[1]))

    def aligned(found, period: int, local: bool) -> bool:
        """Each warp of each group at the addresses of the group `period` before plus one
        shift, which keeps its cost: any shift for local memory (banks are a residue: a common
        shift permutes them); for global memory a multiple of the banks (address groups are
        address // banks), or any shift where each warp's distinct addresses lie at least the
        banks apart (every one its own address group whatever the shift: a broadcast, a strided
        or transposed read)."""
        table, mixed = found
        if not all(repeats(t, period) for t in mixed):
            return False
        moved = table[period:] - table[:-period]
        if table.shape[1] > 1:
            if size % width:
                return False
            by_warp = moved.reshape(moved.shape[0], size // width, width)
            if (by_warp != by_warp[:, :, :1]).any():
                return False
        if local or not (moved % quantum).any():
            return True
        if mixed or size % width:
            return False
        for warp in table[:period].reshape(-1, width):
            spread = np.diff(np.unique(warp))
            if spread.size and spread.min() < quantum:
                return False
        return True

    def checks():
        """(expression, None: must repeat, else: an address, whether local), edge by edge."""
        for edge in _edges(template.path):
            if isinstance(edge, TLoop):
                spec = edge.reduce
                yield edge.count, None
                if spec is not None:
                    yield from ((spec.n, None), (spec.element_address, False),
                                (spec.result_address, False))
            else:
                yield edge.words, None
                if edge.access is not None:
                    yield edge.access.address, bool(edge.access.local)

    # One expression's table at a time (a few arrays of every thread), each narrowing the
    # periods still possible; none left: not decided.
    periods = list(range(1, min(longest, groups - 1) + 1))
    for expr, local in checks():
        found = parts(expr)
        if found is None:
            return None
        periods = [period for period in periods
                   if (same(found, period) if local is None else aligned(found, period, local))]
        if not periods:
            return None
    return periods[0] if periods else None


def _edges(path: list):
    """Every edge and loop of a thread template, loops before their bodies."""
    for edge in path:
        yield edge
        if isinstance(edge, TLoop):
            yield from _edges(list(edge.body))


def _runs(template: SPhase, values: dict, p, count: int,
          groups: int) -> list[tuple[int, int]] | None:
    """The kernel's work groups as runs [first, end) of groups that step alike: every full group
    of a shift-invariant kernel does, except where a local region's words stop fitting in local
    memory (the group of that thread stands alone) and the last group (partial, or a
    reduction's, whose last thread may read a carried element). None: not affine."""
    size = p.work_group_size
    cuts = {0, groups, max(0, groups - 1)}
    for access in _accesses(template.path):
        if not access.local:
            continue
        offset = _affine(access.offset, values)
        if offset.coefficients is None:
            return None
        slope = dict(offset.coefficients).get(template.var, 0)
        if slope and any(v != template.var for v, _ in offset.coefficients):
            return None  # an offset that moves with the thread and within its loop
        if slope > 0:
            first_global = -(-(_limit(access, values) - offset.constant) // slope)
            if 0 < first_global < count:
                cuts.update({first_global // size, first_global // size + 1})
    edges = sorted(c for c in cuts if 0 <= c <= groups)
    return [(a, b) for a, b in zip(edges, edges[1:], strict=False) if a < b]


def _rounds_time(runs: list[tuple[int, int]], times: list[float], groups: int,
                 resident: int) -> float:
    """Σ over rounds of `resident` groups of the slowest group in the round (graphs.devicebox),
    the groups given as runs of equal times: the rounds a run boundary falls in are priced one
    by one, the rounds inside a run in one product (O(runs), not O(rounds))."""
    special = sorted({a // resident for a, _ in runs} | {(b - 1) // resident for _, b in runs})
    total = 0.0
    for r in special:
        start, end = r * resident, min(groups, (r + 1) * resident)
        total += max(t for (a, b), t in zip(runs, times, strict=True) if a < end and b > start)
    for (a, b), t in zip(runs, times, strict=True):
        first, last = -(-a // resident), b // resident - 1  # rounds wholly inside [a, b)
        if last < first:
            continue
        inside = last - first + 1 - sum(1 for r in special if first <= r <= last)
        total += t * inside
    return total


def formula_text(expr: sp.Expr) -> str:
    """A formula as a string sympy parses back (`sympy.sympify`): ⌈log2 n⌉ is written
    ceiling(log(n)/log(2)), a kernel's rounds ceiling(...)."""
    return sp.sstr(expr)


def parse_formula(text: str, names: list[str]) -> sp.Expr:
    """A formula string of a report, back to sympy, its size parameters positive integers."""
    return sp.sympify(text, locals={name: size_symbol(name) for name in names})


SHOWN_PIECES = 4
"""A formula piecewise in more pieces than this is shown in text by the piece that holds at the
sizes given (`report`'s `pieces`): gemm's work at n = 64 has 324, 123 501 characters, since the
transfers' bandwidth steps with their size and sympy folds the steps into every term."""


def piece_at(expr: sp.Expr, subs: dict) -> dict | None:
    """Where `expr` is piecewise at the top in more than `SHOWN_PIECES` pieces: the piece that
    holds at `subs` (its formula's text, its number counted from 1, and how many there are);
    else None, and also where no condition can be decided at `subs`."""
    if not isinstance(expr, sp.Piecewise) or len(expr.args) <= SHOWN_PIECES:
        return None
    for k, (piece, condition) in enumerate(expr.args):
        held = condition.subs(subs)
        if held is sp.true:
            return {"formula": formula_text(piece), "piece": k + 1, "pieces": len(expr.args)}
        if held is not sp.false:
            return None
    return None


def formula_at(expr: sp.Expr, subs: dict) -> str:
    """A formula's text for a report people read: the whole formula, or where it has more than
    `SHOWN_PIECES` pieces the one that holds at `subs`, marked as such (`piece_at`)."""
    piece = piece_at(expr, subs)
    return formula_text(expr) if piece is None else piece["formula"] + piece_marker(piece)


def report(profile: SymbolicProfile, values: dict[str, int], procs: int,
           whole: bool = True) -> dict[str, Any]:
    """The symbolic report: formulas (strings sympy parses back) and their values at `values`,
    under the numeric report's keys (work, span, time, space, on[i].kernel, ...). `pieces`
    holds, for each formula piecewise in more than `SHOWN_PIECES` pieces (under its key, a path
    such as "on.0.transfer_out"), the piece that holds at `values` (`piece_at`), which the text
    report shows in its place. `whole` False (a report for the text, which shows those
    formulas by their piece): such a formula's entry is its piece's text too, and the whole
    is not written out (gemm's work at n = 64: 123 501 characters, a fifth of the command's
    time)."""
    formulas = profile.formulas(values)
    numbers = profile.at(values)
    work, span = formulas["work"], formulas["span"]
    time_lower, time_upper = profile.time_formulas(procs, values)
    lower, upper = profile.time_at(values, procs)
    subs = {profile.symbols[k]: v for k, v in values.items() if k in profile.symbols}
    pieces: dict[str, dict] = {}

    def text(key: str, expr: sp.Expr) -> str:
        found = piece_at(expr, subs)
        if found is not None:
            pieces[key] = found
        return formula_text(expr) if whole or found is None else found["formula"]

    parts = ("grow", "transfer_in", "kernel", "transfer_out", "merge")
    # Bounds that differ at these sizes are not the same formula: the expansion that decides it
    # is left for bounds that agree here.
    same = lower == upper and sp.expand(time_upper - time_lower) == 0
    out_formulas: dict[str, Any] = {
        "work": text("work", work),
        "span": text("span", span),
        "time": text("time", time_lower) if same else None,
        "time_bounds": [text("time_bounds.0", time_lower), text("time_bounds.1", time_upper)],
        "space": {"cpu": text("space.cpu", formulas["space_cpu"]),
                  "gpu": text("space.gpu", formulas["space_gpu"]),
                  "peak": text("space.peak", formulas["space_peak"])},
        "bytes_to_device": text("bytes_to_device", formulas["bytes_to_device"]),
        "bytes_to_host": text("bytes_to_host", formulas["bytes_to_host"]),
        "nodes": text("nodes", formulas["nodes"]),
        "edges": formula_text(formulas["edges"]),
        "on": [],
        "cost_centres": {name: {"work": formula_text(_tidy(shape.work)),
                                "span": formula_text(_tidy(shape.span))}
                         for name, shape in profile.evaluation.centres.items()},
    }
    for i, box in enumerate(profile.evaluation.boxes):
        out_formulas["on"].append({part: text(f"on.{i}.{part}", formulas[f"on{i}.{part}"])
                                   for part in parts})
        if profile.options.paper:
            # §7.1.2's own quantities: the `on`'s whole cost δ*(r0) + δ†(r0) + the kernel, and
            # the words the GPU allocated (what δ† copies back, and what both copies hold).
            out_formulas["on"][i]["total"] = formula_text(_tidy(sum(
                (formulas[f"on{i}.{part}"] for part in parts), sp.Integer(0))))
            out_formulas["on"][i]["gpu_words"] = formula_text(_tidy(sum(
                (w for _, w in box.returned), sp.Integer(0))))
    centre_values = {name: {"work": _value(shape.work, subs), "span": _value(shape.span, subs)}
                     for name, shape in profile.evaluation.centres.items()}
    words = profile.options.profile.region.word_bytes
    moved = numbers["on"]
    return {
        "symbolic": True,
        "params": dict(values),
        "symbols": sorted(profile.symbols),
        "fixed": profile.evaluation.fixed,
        "procs": procs,
        "assumptions": ["every size parameter is at least 1",
                        *(f"{formula_text(a.size)} ({a.what}) is at least 1"
                          for a in profile.evaluation.assumptions),
                        "region sizes (BSIZE blocks) and kernels' work-group times are those of "
                        "the sizes given (`params`); rounds and counts are exact formulas"],
        "formulas": out_formulas,
        "pieces": pieces,
        "values": {
            "work": numbers["work"], "span": numbers["span"],
            "parallelism": numbers["work"] / numbers["span"] if numbers["span"] else None,
            "time": lower if lower == upper else None,
            "time_bounds": [lower, upper],
            "space": numbers["space"], "nodes": numbers["nodes"], "edges": numbers["edges"],
            "bytes_to_device": words * sum(o["pushed_words"] for o in moved),
            "bytes_to_host": words * sum(o["gpu_words"] for o in moved),
            "on": moved, "regions": numbers["regions"], "cost_centres": centre_values,
        },
    }


# -- the time a placement is compared by -------------------------------------------------------


PLACEMENT_TIME = ("the lower bound of every greedy schedule's time: serial edges, plus "
                  "max(work/P, span) of each parallel stretch (Brent); on P = 1, the work")


def placement_time(profile: SymbolicProfile, procs: int) -> sp.Expr:
    """The time a placement is compared by (PLACEMENT_TIME): the lower bound of `time_bounds`,
    which on one processor is the time of every schedule."""
    return profile.lower_time_formula(procs)


class TimeCurve:
    """A program's placement time (PLACEMENT_TIME) as one size parameter varies: its symbolic
    profile and formula made once, and its time at each size priced once (`hetprof place` and
    `hetprof rewrite` share one curve between every row that compares against the program)."""

    def __init__(self, checked: CheckedProgram, options: EvaluationOptions,
                 params: dict[str, int], parameter: str, procs: int,
                 prices: dict | None = None):
        self.profile = symbolic_profile(checked, options, params, [parameter])
        if prices is not None:  # kernel prices shared with the other curves compared with it
            self.profile.share_prices(prices)
        self.params, self.parameter, self.procs = params, parameter, procs
        self._formula: sp.Expr | None = None
        self._times: dict[int, float] = {}

    @property
    def formula(self) -> sp.Expr:
        """The time as a formula in the parameter (`placement_time`)."""
        if self._formula is None:
            self._formula = placement_time(self.profile, self.procs)
        return self._formula

    def __call__(self, n: int) -> float:
        """The time at parameter = n (the other parameters at their given values)."""
        if n not in self._times:
            self._times[n] = self.profile.time_at({**self.params, self.parameter: n},
                                                  self.procs)[0]
        return self._times[n]


# -- long loops inside kernel threads ----------------------------------------------------------------

STRUCTURED_STEPS = 4096  # a thread path longer than this is priced loop by loop (periodically)


@dataclass
class _GroupCost:
    """A work group's lock-step time and counters (graphs.devicebox.group_time's), summed."""

    time: float = 0.0
    steps: int = 0
    conflicts: int = 0
    degree: int = 1

    def add(self, other: _GroupCost, times: int = 1) -> None:
        self.time += other.time * times
        self.steps += other.steps * times
        self.conflicts += other.conflicts * times
        self.degree = max(self.degree, other.degree)


@dataclass(frozen=True, slots=True)
class _Threads:
    """A work group's threads for `_structured_group`: their own values (the thread index, a
    reduction's operands, loop indices), each `_Lanes` where it differs between them, and how
    many there are."""

    own: dict
    count: int

    def first(self) -> dict:
        """The first thread's own values."""
        return _lane_values(self.own, 0)

    def with_values(self, values: dict) -> _Threads:
        return _Threads({**self.own, **values}, self.count)


def _structured_group(path: list, values: dict, threads: _Threads, model, p,
                      cache: dict, state=None) -> _GroupCost:
    """graphs.devicebox.group_time for threads whose paths have one shape, without unrolling
    long loops: a loop's iterations cost the same whenever their addresses differ by a multiple
    of the banks, so a loop of C iterations with period π costs ⌊C/π⌋ periods plus the rest.
    `threads` gives the threads' own values (their index, a reduction's operands). With `state`
    (a stateful model's group state, models.gpu_cache) every warp step is priced in order on
    it, and a loop's steady period (`_stateful_loop`) stands for the periods after it."""
    total = _GroupCost()
    width = p.warp_width
    levels = None  # the reduction levels' values: with the edge, what its addresses are kept by
    for item in path:
        if isinstance(item, TLoop):
            total.add(_structured_loop(item, values, threads, model, p, cache, state))
            continue
        warp_steps = []
        compiled = None
        addresses = spaces = None
        if item.access is not None:
            if levels is None:
                levels = tuple(sorted((_name(k), v) for k, v in values.items()
                                      if isinstance(k, sp.Symbol) and k.name.startswith("k")))
            key = (id(item), levels)
            compiled = cache.get(key)
            if compiled is None:
                compiled = cache[key] = (_affine(item.access.address, values),
                                         _affine(item.access.offset, values),
                                         _affine(item.words, values),
                                         _limit(item.access, values))
            # Every thread's address and space at once (`_Lanes`), as each thread's own would be.
            address, offset_of, _, limit = compiled
            addresses = _lanes(address(threads.own), threads.count)
            if item.access.local:
                offsets = _lanes(offset_of(threads.own), threads.count)
                spaces = tuple(Space.LOCAL if offset < limit else Space.GLOBAL
                               for offset in offsets.values())

        def warp(start: int, item=item, addresses=addresses, spaces=spaces,
                 ) -> tuple[tuple, StepCost]:
            lanes = range(start, min(threads.count, start + width))
            if addresses is None:
                key: tuple = ((), None, (item.weight,) * len(lanes))
                accesses: list[MemoryAccess] = []
                others = [item.weight] * len(lanes)
            else:
                key = _step_key(addresses, spaces, lanes, p)
                accesses, others = [], []
            if state is not None or key not in cache:
                if addresses is not None:
                    assert item.access is not None  # `addresses` is set for memory edges
                    kind = item.access.kind
                    accesses = [MemoryAccess(kind, addresses.at(lane),
                                             spaces[lane] if spaces else Space.GLOBAL)
                                for lane in lanes]
                if state is not None:
                    return (), model.warp_step_in(state, start // width, accesses, others)
                cache[key] = model.warp_step(accesses, others)
            return key, cache[key]

        starts = list(range(0, threads.count, width))
        priced = None
        if state is None and len(starts) >= 3 and _warps_alike(item, compiled, threads, p):
            # Affine addresses: the middle warps step like the first (their addresses move by
            # multiples of the banks); the last may be partial or read a carried element.
            first, second = warp(starts[0]), warp(starts[1])
            if first[0] == second[0]:
                last = warp(starts[-1])
                priced = [first] * (len(starts) - 1) + [last]
        if priced is None:
            priced = [warp(start) for start in starts]
        for _, step in priced:
            warp_steps.append(step)
            total.conflicts += step.conflicts
            total.degree = max(total.degree, step.degree)
        total.time += model.group_step(warp_steps)
        total.steps += 1
    return total


def _step_key(addresses: _Lanes, spaces: tuple[Space, ...] | None, lanes: range, p) -> tuple:
    """graphs.devicebox.step_key of the accesses of threads `lanes` at `addresses` (in `spaces`,
    None: all global), without making the accesses."""
    first = addresses.at(lanes.start)
    base = first - first % p.banks
    if addresses.listed is None and addresses.step:
        step = addresses.step
        relative = tuple(range(first - base, first - base + step * len(lanes), step))
    elif addresses.listed is None:
        relative = (first - base,) * len(lanes)
    else:
        relative = tuple(addresses.listed[lane] - base for lane in lanes)
    local = None
    if spaces is not None:
        here = spaces[lanes.start:lanes.stop]
        if here.count(Space.GLOBAL) != len(here):
            local = tuple(space is Space.LOCAL for space in here)
    return (relative, local, ())


def _warps_alike(item, compiled, threads: _Threads, p) -> bool:
    """Whether a step's warps differ only by a shift of their addresses (affine in the thread's
    values), with a local region's words on one side of local memory's end for the whole group."""
    if compiled is None:
        return True
    address, offset, _, limit = compiled
    if address.coefficients is None:
        return False
    if item.access.local:
        if offset.coefficients is None:
            return False
        offsets = _lanes(offset(threads.own), threads.count)
        ends = (offsets.at(0) < limit, offsets.at(threads.count - 1) < limit)
        return ends[0] == ends[1]
    return True


def _structured_loop(loop: TLoop, values: dict, threads: _Threads, model, p,
                     cache: dict, state=None) -> _GroupCost:
    count = int(_value(loop.count, {**values, **threads.first()}))
    # The operands' places depend on each thread's own values: they stay free here.
    operands = _Operands(loop.reduce, values) if loop.reduce else None

    shared = loop.var.name.startswith("k")  # a reduction's level: the same in every thread

    def iteration(j: int) -> _GroupCost:
        inner = {**values, loop.var: j} if shared else values
        here = threads if shared else threads.with_values({loop.var: j})
        if operands is not None:
            everything = {**inner, **here.own}
            level = everything[operands.spec.level]
            here = here.with_values(operands.operands(level, j, everything))
        return _structured_group(list(loop.body), inner, here, model, p, cache, state)

    period = _period(loop, values, threads.first(), p,
                     _line_words(p, model) if state is not None else p.banks)
    if state is not None:
        return _stateful_loop(iteration, count, period, state)
    total = _GroupCost()
    # A reduction level's last thread may read a carried element: priced on its own.
    regular_end = count - 1 if loop.reduce is not None else count
    if period is None:
        for j in range(count):
            total.add(iteration(j))
        return total
    # Where a staged region's words stop fitting in local memory the steps change: the
    # iterations on each side are periodic by themselves.
    cuts = sorted({0, regular_end, *(c for c in _local_ends(loop, values, threads, p)
                                      if 0 < c < regular_end)})
    for start, end in zip(cuts, cuts[1:], strict=False):
        # Iteration j costs what iteration j - period did (its addresses moved by a multiple
        # of the banks), so each of the first period's is walked once and its cost reused.
        first = [iteration(j) for j in range(start, min(end, start + period))]
        if end - start <= 2 * period:
            for j in range(start, end):
                total.add(first[(j - start) % period])
            continue
        once = _GroupCost()
        for cost in first:
            once.add(cost)
        total.add(once, (end - start) // period)
        for j in range(end - (end - start) % period, end):
            total.add(first[(j - start) % period])
    for j in range(regular_end, count):
        total.add(iteration(j))
    return total


def _stateful_loop(iteration, count: int, period: int | None, state) -> _GroupCost:
    """A loop of `count` iterations priced on a stateful model's group `state`: the first period
    warms the cache, the second is priced as every later whole period costs (its time, steps
    and traffic repeated), and the iterations after the last whole period are priced one by one.
    Without a period every iteration is priced."""
    total = _GroupCost()
    if period is None or count <= 3 * period:
        for j in range(count):
            total.add(iteration(j))
        return total
    for j in range(period):
        total.add(iteration(j))
    before = Traffic()
    before.add(state.traffic)
    once = _GroupCost()
    for j in range(period, 2 * period):
        once.add(iteration(j))
    repeats = (count - period) // period
    total.add(once, repeats)
    delta = Traffic()
    delta.add(state.traffic)
    delta.add(before, -1)
    state.traffic.add(delta, repeats - 1)
    for j in range(period + repeats * period, count):
        total.add(iteration(j))
    return total


def _local_ends(loop: TLoop, values: dict, threads: _Threads, p) -> list[int]:
    """The iterations at which a local access of the loop body leaves local memory (its offset
    reaches the local words), for offsets that move with the loop index alone."""
    here = {k: v for k, v in {**values, **threads.first()}.items() if k != loop.var}
    ends = []
    for access in _accesses(list(loop.body)):
        if not access.local:
            continue
        offset = _affine(access.offset, here)
        slope = dict(offset.coefficients or []).get(loop.var, 0)
        if slope > 0:
            ends.append(-(-(_limit(access, here) - offset(here | {loop.var: 0})) // slope))
    return ends


def _line_words(p, model) -> int:
    """Words in a line of the cache mode (models/gpu_cache.py), a multiple of its sectors'."""
    return max(1, p.line_bytes // getattr(model, "word_bytes", 8))


def _period(loop: TLoop, values: dict, thread: dict, p, quantum: int | None = None,
            ) -> int | None:
    """How many iterations until every address in the loop body has moved by a multiple of the
    banks (None where an address is not affine in the loop index, or a local region's offset
    moves with it: then every iteration is priced). With `quantum`, a global access need only
    move by a multiple of it: under the cache mode a line's words, since there a global step's
    cost depends on its sectors, its lines and which words it stores, never on banks (local
    accesses keep the banks)."""
    period = 1
    here = {k: v for k, v in {**values, **thread}.items() if k != loop.var}
    for access in _accesses(list(loop.body)):
        address = _affine(access.address, here)
        if address.coefficients is None:
            if loop.var in sp.sympify(access.address).free_symbols:
                return None
            continue
        slope = dict(address.coefficients).get(loop.var, 0)
        if access.local:
            # An offset moving with the loop index alone leaves local memory at one iteration
            # (`_local_ends`); one that moves with the threads too changes per thread.
            shared = {k: v for k, v in values.items() if k != loop.var}
            offset = _affine(access.offset, shared)
            if offset.coefficients is None:
                return None
            moves = dict(offset.coefficients)
            if moves.get(loop.var, 0) and any(v != loop.var and v in thread for v in moves):
                return None
        shift = p.banks if access.local or quantum is None else quantum
        step = shift // math.gcd(slope, shift) if slope else 1
        period = period * step // math.gcd(period, step)
    return period
