"""The cost semantics of λG (Figs. 5, 6 and 9): E; σ; 𝒯; ω; e ⇓ ℓ; σ'; 𝒯'; c.

`Evaluator.eval` is the judgement, one `match` over the elaborated AST. It returns the location (or
unboxed boolean) and the cost graph c, built on the CPU world into one `CostGraph` and on the GPU
world into cost paths (`graphs.devicebox.PathBuilder`). Read and write costs come from the world's
machine model (Fig. 9): PRAM on the CPU; on the GPU every memory edge carries its access (address,
local or global) and the warp's lock-step step prices it with the request state Σ, which is where
the paper threads σ. Allocation and transfer costs come from the primitive cost providers (§6.6).

The graph each rule builds, in the paper's notation (δr, δw: read and write costs; ∅ is the unit of
⊕ and unit-weight ⊕ edges next to ∅ vanish, but a memory edge never does):
- `i at ρ`, closures: [u1] ⊕δw [u2]. `True`: [u]. `x`: ∅.
- `fst e`/`snd e`: c ⊕δr [u]. `(e1, e2) at ρ`: c1 ⊕ c2 ⊕δw [u].
- `e1 e2`: c1 ⊕δr c2 ⊕ c3 (δr reads the closure).  `if`: c1 ⊕op c2 (a branch, one PRAM step;
  booleans are unboxed in Fig. 1, so where Fig. 5 reads the condition hetprof charges the branch).
- `e1 op e2 at ρ` (extension): c1 ⊕ c2 ⊕δr [u1] ⊕δr [u2] ⊕δw [u3]; comparisons stop after the
  reads. This is the count of §7.1: `fst p * snd p` costs 5 memory edges + 1 ⊕ edge, 6 on the CPU
  and 5l + 1 on the GPU.
- `e1 || e2 at ρ`: (c1 ⊗ c2) ⊕δ [u1] ⊕δa [u2] (δ merges the configuration tables).
- `[e1..en] at ρ`: (⊕ c_i) ⊕δa [u].
- `parmap f v at ρ`: c_v ⊕δr (⊗_i c_i) ⊕δm [u1] ⊕δa [u2]. The δr edge reads the vector and ends at
  the ⊗'s fork. When f is a lambda written in place, each thread runs its body directly (the f e_i
  of Fig. 6 and of §7.1, whose Fig. 10 counts only the body); otherwise f is evaluated once and its
  closure read once (⊕δr). Each c_i is the body's graph with x bound to element i.
- `letregion ρ in e`: [u1] ⊕Δa(R) [u2 push] ⊕ c ⊕ [u3 pop].
- `on e at ρ`: [u1] —dvb(𝒟, {R_i}, δ*, δ†)→ [u2]: push frv(e), the device box of e's paths on 𝔾,
  copy back and merge (Def. 4.3).
- `e1[e2]` (extension): c1 ⊕ c2 ⊕δr [u1] ⊕δr [u2] (read the index, read the vector).
- `iota e at ρ`: c ⊕δr (⊗_i [u] ⊕δw [u']) ⊕δm [u1] ⊕δa [u2].
- `reduce f z v at ρ`: c ⊕δr then ⌈log2 n⌉ levels (⊗_i ([u] ⊕δw [pair] ⊕ c_f(pair))) ⊕δm [u] in
  sequence: each level is a parallel map of combinations, merged like a parmap's.
- `profile "name" e`: c, with every node and edge of c charged to the cost centre.

Under the paper's rules (`EvaluationOptions.paper`, graphs/semantics/options.py) ap moves by
|v| + 1, `fix` writes two closures (`_fix`), parmap is f e_i per element (`_parmap_paper`),
parallel branches start from one configuration table (`_branches`), and an `on` pushes its
branch's table, merges with a conflict check and prices §7.1.2's local memory (`_on`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from graphs.costgraph import (
    CostGraph,
    DeviceBoxInfo,
    EdgeKind,
    NodeKind,
    Sub,
    cyclic_gc_paused,
)
from graphs.devicebox import DeviceBox, GSub, PathBuilder, box_model, build_device_box
from graphs.numbers import amount
from graphs.semantics.options import GRAPH_CHECK_EVERY, EvaluationOptions
from models.base import AccessKind, CpuModel, GpuModel, MemoryAccess, Space
from models.cpu import cpu_model, slot_read_weights
from models.gpu import gpu_model
from models.providers import CostProviders, providers_for
from profiler.checker import CheckedProgram, bind_parameters
from profiler.errors import EvaluationError
from profiler.regions import (
    Closure,
    FloatV,
    HeapValue,
    IntV,
    Loc,
    PairV,
    Region,
    RegionClosure,
    Value,
    VecV,
    allocate,
    merge,
    read,
)
from profiler.syntax import (
    App,
    BinaryOperator,
    BinOp,
    BoolLit,
    Expr,
    Fix,
    FloatLit,
    Fst,
    If,
    Index,
    IntLit,
    Iota,
    Lambda,
    Length,
    Let,
    LetRegion,
    On,
    Pair,
    Par,
    ParMap,
    Profile,
    Reduce,
    RegionApp,
    RegionLambda,
    Snd,
    Span,
    Var,
    VecLit,
    World,
)
from profiler.transform import has_on

if TYPE_CHECKING:
    from graphs.semantics.inputs import RegionImage

# What a rule's cost graph is: on the CPU world a `Sub` of the one `CostGraph`, on the GPU world
# cost paths (`GSub`), and None for ∅. Which of the two follows from the rule's `world`.
Cost = Sub | GSub | None

OFFLOAD_CENTRE = "__offload"  # cost centres of this prefix mark work to run on an OpenCL device

# Enum members the rules use once or more per cost-graph node, as globals: Python 3.11 looks up an
# Enum member as a class attribute (`World.CPU`) about ten times slower than a global name.
_CPU, _GPU = World.CPU, World.GPU
_READ, _WRITE = AccessKind.READ, AccessKind.WRITE
_READ_EDGE, _WRITE_EDGE, _SEQ_EDGE = EdgeKind.READ, EdgeKind.WRITE, EdgeKind.SEQ
_READ_NODE, _WRITE_NODE, _POINT = NodeKind.READ, NodeKind.WRITE, NodeKind.POINT
_LOCAL, _GLOBAL = Space.LOCAL, Space.GLOBAL
# MemoryAccess(...) runs the named tuple's Python-level __new__; _new_access((...)) makes the same
# access in C, once per memory edge on the GPU.
_new_access = partial(tuple.__new__, MemoryAccess)

# The operators other than division, by a dict lookup rather than a `match` over ten dotted names
# (which `_binop` would test one after another, each an Enum lookup as above).
_COMPARISONS = {BinaryOperator.LT: operator.lt, BinaryOperator.LE: operator.le,
                BinaryOperator.GT: operator.gt, BinaryOperator.GE: operator.ge,
                BinaryOperator.EQ: operator.eq, BinaryOperator.NE: operator.ne}
_ARITHMETIC = {BinaryOperator.ADD: operator.add, BinaryOperator.SUB: operator.sub,
               BinaryOperator.MUL: operator.mul}


def _no_branch(k: int) -> None:
    """`Evaluator._branches` where the branches share one configuration table."""


@dataclass(frozen=True, slots=True)
class Offload:
    """One piece of work the OpenCL backend can run on a device: an `on` body (world 𝔾), or, in
    a program without `on`, an outermost CPU `parmap` (to run on an OpenCL CPU device). It holds
    what that work starts from and what the interpreter computed, to compare against.

    graphs.semantics.inputs makes offloads without the interpreter: their inputs are
    `RegionImage`s, their value None (not computed), their heap empty and `on` None."""

    node: Expr  # the On, or the ParMap
    body: Expr  # what runs on the device
    env: dict
    regions: dict  # region variable -> region name
    inputs: Mapping[int, Region | RegionImage]  # the CPU regions as they were before the work
    value: Value | None  # the interpreter's result
    heap: dict[int, Region]  # every region after the work, to read `value`
    on: OnRecord | None  # the device box, for an `on`
    cpu_graph: tuple[int, int] | None  # source and sink of the work in the CPU graph (parmaps)


class OffloadObserver:
    """Receives every `Offload` of an evaluation (see models/opencl/runner.py)."""

    def offloaded(self, offload: Offload) -> None:  # pragma: no cover - an interface
        raise NotImplementedError


class OffloadCollector(OffloadObserver):
    """Keeps every offload of an evaluation, to run them on a device afterwards."""

    def __init__(self) -> None:
        self.offloads: list[Offload] = []

    def offloaded(self, offload: Offload) -> None:
        self.offloads.append(offload)


@dataclass(slots=True)
class OnRecord:
    """What one evaluated `on` cost, for the report."""

    span: Span
    info: DeviceBoxInfo
    box: DeviceBox
    pushed_words: int
    gpu_words: int
    grown: dict[str, int]
    centres: tuple[str, ...]
    paths: GSub | None = None  # the body's GPU cost paths, to price them under other models


@dataclass(slots=True)
class Evaluation:
    """The result of running a program: its value and its cost graph."""

    value: Value
    graph: CostGraph
    regions: dict[int, Region]  # the program's outermost regions, as they were at their pop
    ons: list[OnRecord]
    gpu_mode: str
    steps: int
    _heap_lookup: dict[int, Region] = field(default_factory=dict)

    def render_value(self, limit: int = 20) -> str:
        return render_value(self.value, self._heap_lookup, limit)

    def without_heap(self, limit: int = 20) -> Evaluation:
        """This evaluation with only the heap values that `render_value(limit)` reads (the
        regions' sizes and every other field kept). A profile's analysis reads the cost graph,
        the `on`s and the regions' sizes, never the program's heap, which at dot n = 10^5 is a
        million values, about 180 MiB (2026-11-27): `hetprof profile` analyses this copy, and
        the heap goes with the evaluation before the analysis starts."""
        read: dict[int, dict[int, HeapValue]] = {}
        render_value(self.value, self._heap_lookup, limit, read=read)
        emptied: dict[int, Region] = {}  # by id: a region may be in both tables

        def empty(region: Region) -> Region:
            kept = emptied.get(id(region))
            if kept is None:
                kept = emptied[id(region)] = replace(region, values=read.get(region.name, {}))
            return kept

        return Evaluation(self.value, self.graph,
                          {name: empty(region) for name, region in self.regions.items()},
                          self.ons, self.gpu_mode, self.steps,
                          {name: empty(region) for name, region in self._heap_lookup.items()})


def render_value(value: Value, regions: dict[int, Region], limit: int = 20, depth: int = 0,
                 read: dict[int, dict[int, HeapValue]] | None = None) -> str:
    """A value as λG would print it, reading through locations (vectors cut at `limit`). Where
    `read` is given, each heap value read is put there, by region and offset."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if depth > 50:
        return "..."
    region = regions.get(value.region)
    heap = region.values.get(value.offset) if region else None
    if read is not None and heap is not None:
        read.setdefault(value.region, {})[value.offset] = heap
    match heap:
        case IntV(v):
            return str(v)
        case FloatV(v):
            return repr(v)
        case PairV(a, b):
            return (f"({render_value(a, regions, limit, depth + 1, read)}, "
                    f"{render_value(b, regions, limit, depth + 1, read)})")
        case VecV(items):
            shown = [render_value(i, regions, limit, depth + 1, read) for i in items[:limit]]
            more = f", ... ({len(items)} elements)" if len(items) > limit else ""
            return "[" + ", ".join(shown) + more + "]"
        case Closure(param=param):
            return f"<function of {param}>"
        case RegionClosure(param=param):
            return f"<region function of {param}>"
    return f"<location ({value.region}, {value.offset})>"


def _batch(evaluator: Evaluator, *arguments):
    """graphs.semantics.batched.run_batch, imported where a GPU level is first evaluated (it
    brings numpy: issue 19's start-up time)."""
    from graphs.semantics.batched import run_batch

    return run_batch(evaluator, *arguments)


def _iota_batch(evaluator: Evaluator, *arguments):
    """graphs.semantics.batched.run_iota_batch, imported as `_batch` imports its module."""
    from graphs.semantics.batched import run_iota_batch

    return run_iota_batch(evaluator, *arguments)


def evaluate(checked: CheckedProgram, params: dict[str, int] | None = None,
             options: EvaluationOptions = EvaluationOptions()) -> Evaluation:
    """Run a checked program under the cost semantics."""
    return Evaluator(checked, bind_parameters(checked, params or {}), options).run()


class Evaluator:
    """One evaluation: the configuration table, the cost graph under construction, the limits."""

    def __init__(self, checked: CheckedProgram, params: dict[str, int],
                 options: EvaluationOptions):
        self.checked = checked
        self.params = params
        self.options = options
        self.profile = options.profile
        self.cpu_scale, self.gpu_scale = self.profile.unit_scales()
        # The CPU model (models/cpu.py: the PRAM, or by operation class) prices every read,
        # write, step and ⊗ edge alike: asked once here, not once per node; outside every
        # parallel form's threads (serial code) times its `serial_scale` (`_cpu_weights`).
        self.cpu: CpuModel = cpu_model(self.profile)
        self.serial_scale = self.cpu.serial_scale()
        self.cpu_fork = self.cpu.fork()
        # the read of a vector's slot at an indexing site inside a loop, where the model prices
        # it apart by the site's access pattern (models/cpu.py)
        self.slot_reads = slot_read_weights(checked.program, self.cpu, params)
        self.threads = 0  # CPU parallel forms whose threads we are inside (`_merge_cost`)
        self._cpu_weights()
        self.cpu_space: dict[int, tuple[tuple[World, int], ...]] = {}  # words -> a write's space
        self.gpu: GpuModel = gpu_model(self.profile, options.gpu_mode)
        self.gpu_op = self.profile.gpu.op  # the weight of a GPU step, once per GPU edge
        self.providers: CostProviders = providers_for(self.profile)
        self.graph = CostGraph()
        self.paths = PathBuilder()
        self.stacks: dict[World, dict[int, Region]] = {World.CPU: {}, World.GPU: {}}
        # The same two stacks, for the hot paths (`_region`, `_peek`): an Enum hashes in Python.
        self.cpu_stack, self.gpu_stack = self.stacks[World.CPU], self.stacks[World.GPU]
        self.all_regions: dict[int, Region] = {}
        self.outermost: dict[int, Region] = {}
        self.next_region = 1
        self.centres: tuple[str, ...] = ()
        self.steps = 0
        self.depth = 0
        self.ons: list[OnRecord] = []
        self.gpu_growth: dict[int, int] = {}
        self.bsize = self.profile.region.bsize
        self.parmap_depth = 0
        # Local staging (`on local [ρ]`): each kernel copies the staged regions' words as they are
        # when it starts, up to its share of local memory (`stage_limit`, region -> words).
        self.kernel_depth = 0
        self.local_share = 0
        self.stage_limit: dict[int, int] = {}
        self.bookkeeping = False  # building a parmap's own read, merge and result vector
        self.has_on = has_on(checked.body)
        self.max_steps, self.max_depth = options.max_steps, options.max_depth
        # The paper's rules (graphs.semantics.options): ap moves by |v| + 1 (Fig. 3), and the
        # words a parallel branch cannot see, region id -> (start, end) ranges its earlier
        # siblings allocated since their fork (`_branches`).
        self.paper = options.paper
        self.gap = 1 if self.paper else 0
        self.hidden: dict[int, tuple[tuple[int, int], ...]] = {}
        # The step count at which `_checkpoint` next checks the limits (the step limit and the
        # graph's size), so that `eval` compares one number per step.
        self.check_at = min(self.max_steps, GRAPH_CHECK_EVERY)

    # -- entry --------------------------------------------------------------------------------------
    def run(self) -> Evaluation:
        body = self.checked.body
        with cyclic_gc_paused():
            value, cost = self.eval(body, {}, {}, World.CPU, outermost=True)
        assert not isinstance(cost, list)  # the CPU world's: a Sub of self.graph, or ∅
        self.graph.finish(cost)
        lookup = dict(self.all_regions)
        lookup.update(self.outermost)
        return Evaluation(value, self.graph, dict(self.outermost), self.ons, self.gpu.name,
                          self.steps, lookup)

    # -- building blocks ----------------------------------------------------------------------------
    def _region(self, regions: dict, name: str, world: World, span: Span) -> Region:
        rid = regions[name]
        region = (self.cpu_stack if world is _CPU else self.gpu_stack).get(rid)
        if region is None:  # the type system rules this out (Theorem 4.2)
            raise EvaluationError(f"region {name} is not on the {world} region stack", span,
                                  "Theorem 4.2")
        return region

    def _mem(self, before, world: World, kind: AccessKind, region: Region, offset: int,
             span: Span, words: int = 0, expanded: int = 0):
        """before ⊕δ [u] for one memory operation, priced on `world` (Fig. 9)."""
        if world is _CPU:
            if kind is _READ:
                return self.graph.step(before, self.cpu_read, _READ_EDGE, _READ_NODE, span,
                                       self.centres)
            space = self.cpu_space.get(words) if words else ()
            if space is None:  # one tuple per size, shared by every write of that size
                space = self.cpu_space[words] = ((_CPU, words),)
            if expanded:
                return self.graph.step(before, self._growth(expanded),
                                       EdgeKind.EXPAND, _WRITE_NODE, span, self.centres, space,
                                       expanded=expanded)
            return self.graph.step(before, self.cpu_write, _WRITE_EDGE, _WRITE_NODE, span,
                                   self.centres, space)
        address = (region.name << 32) + offset
        # A region staged in local memory is there as far as the running kernel copied it (see
        # `_kernel`); the rest of it, and what the kernel allocates, is in global memory.
        # Under the paper's rules the whole region is in local memory (§7.1.2).
        local = region.local and (self.paper or offset < self.stage_limit.get(region.name, 0))
        return self.paths.step(before, 0.0, _READ_EDGE if kind is _READ else _WRITE_EDGE, span,
                               self.centres, _new_access((kind, address,
                                                          _LOCAL if local else _GLOBAL)),
                               words, self.bookkeeping)

    def _seq(self, world: World, first, second, span: Span):
        """first ⊕ second: a unit edge (one PRAM step, or one GPU step)."""
        if world is _CPU:
            return self.graph.seq(first, second, self.cpu_op, _SEQ_EDGE, span, self.centres)
        return self.paths.seq(first, second, self.gpu_op, span, self.centres)

    def _seq_all(self, world: World, parts: list, span: Span):
        result = None
        for part in parts:
            result = self._seq(world, result, part, span)
        return result

    def _op(self, world: World, before, span: Span, kind: EdgeKind = EdgeKind.OP,
            weight: float | None = None):
        """before ⊕op [u]: one PRAM step (a branch, a table merge)."""
        if world is _CPU:
            w = self.cpu_op if weight is None else weight
            return self.graph.step(before, w, kind, _POINT, span, self.centres)
        w = self.gpu_op if weight is None else weight
        return self.paths.step(before, w, kind, span, self.centres, bookkeeping=self.bookkeeping)

    def _op_into(self, world: World, before, after, span: Span):
        """before ⊕op after: one PRAM step between them, kept even when either side is ∅."""
        if after is None:
            return self._op(world, before, span)
        if world is _GPU:
            return self.paths.then(self._op(world, before, span), after)
        start = before if before is not None else self.graph.node(_POINT, span, self.centres)
        self.graph.edge(start.sink, after.source, self.cpu_op, EdgeKind.OP, span, self.centres)
        return Sub(start.source, after.sink)

    def _par(self, world: World, branches: list, span: Span, staged: int = 0):
        if world is _CPU:
            return self.graph.par_all(branches, self.cpu_fork, span, self.centres)
        # §7.1.2 under the paper's rules: a kernel of an `on local` body writes each work
        # group's results back to global memory (graphs.devicebox.phase_cost).
        writeback = self.paper and any(r.local for r in self.gpu_stack.values())
        return self.paths.par_all(branches, span, staged, writeback)

    def _cpu_weights(self) -> None:
        """The CPU read, write and step weights in the current context: the model's inside a
        parallel form's threads, times its `serial_scale` outside them (models/cpu.py)."""
        scale = 1.0 if self.threads else self.serial_scale
        read, write, op = self.cpu.read(), self.cpu.write(), self.cpu.op()
        if scale != 1.0:
            read, write, op = read * scale, write * scale, op * scale
        self.cpu_read, self.cpu_write, self.cpu_op = read, write, op

    def _growth(self, words: int) -> float:
        """A CPU region's growth by `words` (Δa), scaled as a write is (`_cpu_weights`)."""
        cost = self.providers.allocation(words)
        return cost if self.threads or self.serial_scale == 1.0 else cost * self.serial_scale

    @contextmanager
    def _kernel(self, world: World, stages: bool = True):
        """The threads of a parallel form; on 𝔾 at the top of an `on` body, a kernel. A kernel
        that `stages` (a parmap, a reduction level) first copies each region staged in local
        memory as it is then, up to its share of local memory, cooperatively in every work group
        (§7.1.2's local variant, as models.opencl.codegen's kernels do); its reads of those words
        are local, all others global. Yields the words it staged."""
        if world is _CPU or self.kernel_depth:
            self.kernel_depth += world is _GPU
            self.threads += 1
            if self.threads == 1:
                self._cpu_weights()
            try:
                yield 0
            finally:
                self.kernel_depth -= world is _GPU
                self.threads -= 1
                if self.threads == 0:
                    self._cpu_weights()
            return
        # The paper's local memory holds the whole region and stages nothing (§7.1.2).
        limits = ({rid: min(r.ap, self.local_share) for rid, r in self.gpu_stack.items()
                   if r.local} if stages and not self.paper else {})
        self.kernel_depth, self.stage_limit = 1, limits
        try:
            yield sum(limits.values())
        finally:
            self.kernel_depth, self.stage_limit = 0, {}

    @contextmanager
    def _branches(self, world: World):
        """Parallel branches (`||`, the threads of a parmap or of a reduction level), evaluated one
        after another. Yields `branch(k)`, to call before the k-th branch (k >= 1) starts.

        Under hetprof's calibrated rules the branches share one heap, and `branch` does nothing.
        Under the paper's rules (Fig. 6: each branch is evaluated from the same configuration
        table 𝒯, and their tables are merged, Def. 4.3) a branch sees the words allocated before
        the fork and its own, not what its earlier siblings allocated since the fork: those
        become `hidden`. The words still go where one bump pointer puts them (Def. 4.1: a
        region's ap is atomic, and §4.1: the memory of a region is shared between threads), so
        same-world branches never collide; what a branch's own table changes is what an `on` in
        it pushes (see `_on`). Nothing else reads `hidden`: a well-typed branch holds no location
        of a sibling's words. Only the CPU world forks tables that an `on` can read, and only a
        program with an `on` needs them."""
        if not self.paper or world is _GPU or not self.has_on:
            yield _no_branch
            return
        saved = self.hidden
        fork = {rid: region.ap for rid, region in self.cpu_stack.items()}

        def branch(k: int) -> None:
            hidden = dict(saved)
            for rid, start in fork.items():
                region = self.cpu_stack.get(rid)
                if region is not None and region.ap > start:
                    hidden[rid] = (*saved.get(rid, ()), (start, region.ap))
            self.hidden = hidden

        try:
            yield branch
        finally:
            self.hidden = saved

    def _view(self, region: Region) -> tuple[int, int, dict[int, HeapValue]]:
        """A CPU region as the running branch's configuration table holds it (`_branches`): its
        ap (the end of its last visible word), its visible words and their values."""
        hidden = self.hidden.get(region.name)
        if not hidden:
            return region.ap, region.ap, region.values
        ap = region.ap
        for start, end in reversed(hidden):
            if end >= ap > start:
                ap = start
        words = ap - sum(min(end, ap) - start for start, end in hidden if start < ap)
        values = {offset: value for offset, value in region.values.items()
                  if offset < ap and not any(start <= offset < end for start, end in hidden)}
        return ap, words, values

    def _point(self, world: World, span: Span):
        if world is _CPU:
            return self.graph.node(_POINT, span, self.centres)
        return self.paths.node()

    def _alloc(self, before, world: World, regions: dict, region_name: str | None,
               value: HeapValue, span: Span) -> tuple[Loc, Cost]:
        assert region_name is not None  # the checker elaborates every allocation's region
        region = self._region(regions, region_name, world, span)
        expanded_before = region.size
        location, words, expanded = allocate(region, value, self.bsize if world is _CPU else 0,
                                             self.gap)
        if expanded and world is _GPU:
            if not self.options.grow_gpu_regions:
                raise EvaluationError(
                    f"region {region.label} is full on the GPU ({expanded_before} words) and "
                    "regions cannot grow there", span, "Fig. 9, NoExpandWE")
            self.gpu_growth[region.name] = self.gpu_growth.get(region.name, 0) + expanded
            expanded = 0
        return location, self._mem(before, world, _WRITE, region, location.offset, span, words,
                                   expanded)

    def _read(self, before, world: World, location: Loc, span: Span,
              weight: float | None = None) -> tuple[HeapValue, Cost]:
        """before ⊕δr [u]: 𝒮; σ; ℓ ↑δ v; σ' (Fig. 9); on ℂ at `weight` where given (a slot
        read priced by its access pattern) instead of the model's read."""
        region, value = self._peek(world, location, span)
        if weight is not None:
            return value, self.graph.step(before, weight, _READ_EDGE, _READ_NODE, span,
                                          self.centres)
        return value, self._mem(before, world, _READ, region, location.offset, span)

    def _tick(self, span: Span) -> None:
        self.steps += 1
        if self.steps > self.check_at:
            self._checkpoint(span)

    def _checkpoint(self, span: Span) -> None:
        """The step limit, and every GRAPH_CHECK_EVERY steps the size of what the evaluation
        built (cost-graph nodes and GPU path edges, which hold nearly all its memory) against
        `max_graph`: a clear error at `span` rather than running out of memory."""
        if self.steps > self.max_steps:
            raise EvaluationError(
                f"the program ran for more than {self.options.max_steps} evaluation steps; it may "
                "not terminate (raise the limit with --max-steps)", span, "step limit")
        built = self.graph.number_of_nodes() + self.paths.edges
        if built > self.options.max_graph:
            raise EvaluationError(
                f"the explicit cost graph grew past --max-graph-size ({self.options.max_graph:,} "
                f"nodes and GPU steps; {built:,} here): profile it with --symbolic, which does "
                "not build it, or raise --max-graph-size if the memory is there",
                span, "memory budget")
        self.check_at = min(self.max_steps, self.steps + GRAPH_CHECK_EVERY)

    # -- the judgement ------------------------------------------------------------------------------
    def eval(self, e: Expr, env: dict, regions: dict, world: World,
             outermost: bool = False) -> tuple[Value, Cost]:
        # _tick(e.span), written out: eval runs once per node of the program's evaluation.
        self.steps += 1
        if self.steps > self.check_at:
            self._checkpoint(e.span)
        self.depth += 1
        if self.depth > self.max_depth:
            self.depth = 0
            raise EvaluationError(
                f"evaluation nested deeper than {self.options.max_depth} (a recursion that does not "
                "end, or a very deeply nested expression); raise the limit with --max-depth",
                e.span, "depth limit")
        try:
            # The commonest rules come first, as a `match` tries its cases in order, and read
            # their fields as attributes: a positional class pattern (`Var(name, span)`) looks
            # each field up through __match_args__, which costs more than the rule's own work.
            match e:
                case Var():
                    return env[e.name], None

                case IntLit():
                    literal = e.value
                    number = self.params[literal] if isinstance(literal, str) else literal
                    assert e.region is not None  # the checker's elaboration writes every region
                    return self._alloc(None, world, regions, e.region, IntV(number), e.span)

                case BinOp():
                    return self._binop(e, env, regions, world)

                case App():
                    span = e.span
                    f_loc, c1 = self.eval(e.func, env, regions, world)
                    assert isinstance(f_loc, Loc)
                    _, closure = self._peek(world, f_loc, span)
                    a_loc, c2 = self.eval(e.arg, env, regions, world)
                    assert isinstance(closure, Closure)
                    value, c3 = self.eval(closure.body, {**closure.env, closure.param: a_loc},
                                          closure.regions, world)
                    c = self._read_into(world, c1, f_loc, c2, span)
                    return value, self._seq(world, c, c3, span)

                case Fst() | Snd():
                    loc, c1 = self.eval(e.expr, env, regions, world)
                    assert isinstance(loc, Loc)
                    pair, c = self._read(c1, world, loc, e.span)
                    assert isinstance(pair, PairV)
                    return (pair.first if isinstance(e, Fst) else pair.second), c

                case Pair():
                    span = e.span
                    v1, c1 = self.eval(e.first, env, regions, world)
                    v2, c2 = self.eval(e.second, env, regions, world)
                    assert e.region is not None
                    return self._alloc(self._seq(world, c1, c2, span), world, regions, e.region,
                                       PairV(v1, v2), span)

                case Let():
                    v1, c1 = self.eval(e.bound, env, regions, world)
                    v2, c2 = self.eval(e.body, {**env, e.name: v1}, regions, world, outermost)
                    return v2, self._seq(world, c1, c2, e.span)

                case If():
                    test, c1 = self.eval(e.cond, env, regions, world)
                    value, c2 = self.eval(e.then if test else e.orelse, env, regions, world)
                    return value, self._op_into(world, c1, c2, e.span)

                case FloatLit(real, region, span):
                    return self._alloc(None, world, regions, region, FloatV(real), span)

                case BoolLit(value, span):
                    return value, self._point(world, span)

                case Lambda(param, _, _, body, region, span):
                    return self._alloc(None, world, regions, region,
                                       Closure(param, body, env, regions), span)

                case LetRegion(name, body, span):
                    return self._letregion(name, body, span, env, regions, world, outermost)

                case Fix(name, _, body, span):
                    return self._fix(name, body, span, env, regions, world)

                case Par(left, right, region, span):
                    with self._branches(world) as branch:
                        v1, c1 = self.eval(left, env, regions, world)
                        branch(1)
                        v2, c2 = self.eval(right, env, regions, world)
                    c = self._par(world, [c1, c2], span)
                    c = self._op(world, c, span, EdgeKind.MERGE, self._merge_cost(world, True))
                    return self._alloc(c, world, regions, region, PairV(v1, v2), span)

                case VecLit(elements, region, span):
                    items, costs = [], []
                    for element in elements:
                        v, c = self.eval(element, env, regions, world)
                        items.append(v)
                        costs.append(c)
                    c = self._seq_all(world, costs, span)
                    return self._alloc(c, world, regions, region, VecV(tuple(items)), span)

                case ParMap(func, vector, region, span):
                    return self._parmap(e, func, vector, region, span, env, regions, world)

                case On():
                    return self._on(e, env, regions, world)

                case RegionLambda(param, _, _, body, region, span):
                    return self._alloc(None, world, regions, region,
                                       RegionClosure(param, body, env, regions), span)

                case RegionApp(inner, region, span):
                    loc, c1 = self.eval(inner, env, regions, world)
                    assert isinstance(loc, Loc)
                    closure, c1 = self._read(c1, world, loc, span)
                    assert isinstance(closure, RegionClosure)
                    inner_regions = {**closure.regions, closure.param: regions[region]}
                    value, c2 = self.eval(closure.body, closure.env, inner_regions, world)
                    return value, self._seq(world, c1, c2, span)

                case Index(vector, index, span):
                    vec_loc, c1 = self.eval(vector, env, regions, world)
                    idx_loc, c2 = self.eval(index, env, regions, world)
                    assert isinstance(vec_loc, Loc) and isinstance(idx_loc, Loc)
                    idx, c = self._read(self._seq(world, c1, c2, span), world, idx_loc, span)
                    vec, c = self._read(c, world, vec_loc, span,
                                        self.slot_reads.get(span) if world is _CPU else None)
                    assert isinstance(idx, IntV) and isinstance(vec, VecV)
                    if not 0 <= idx.value < len(vec.items):
                        raise EvaluationError(f"index {idx.value} is out of bounds for a vector of "
                                              f"{len(vec.items)} elements", span, "indexing")
                    return vec.items[idx.value], c

                case Length(inner, region, span):
                    loc, c1 = self.eval(inner, env, regions, world)
                    assert isinstance(loc, Loc)
                    vec, c = self._read(c1, world, loc, span)
                    assert isinstance(vec, VecV) and region is not None
                    return self._alloc(c, world, regions, region, IntV(len(vec.items)), span)

                case Iota(count, region, span):
                    return self._iota(count, region, span, env, regions, world)

                case Reduce(func, zero, vector, region, span):
                    return self._reduce(func, zero, vector, region, span, env, regions, world)

                case Profile(name, inner, span):
                    observed = (self.options.observer is not None
                                and name.startswith(OFFLOAD_CENTRE) and world is World.CPU)
                    snapshot = ({rid: r.copy_to(World.CPU)
                                 for rid, r in self.stacks[World.CPU].items()} if observed else {})
                    saved = self.centres
                    self.centres = saved + (name,)
                    try:
                        value, cost = self.eval(inner, env, regions, world)
                    finally:
                        self.centres = saved
                    if observed:
                        assert self.options.observer is not None
                        self.options.observer.offloaded(Offload(
                            e, inner, env, regions, snapshot, value, dict(self.all_regions), None,
                            None))
                    return value, cost
            raise AssertionError(f"unknown node {e!r}")
        except RecursionError:
            # Python's stack ran out before --max-depth (each level takes a few of its frames):
            # the innermost eval that can still build the error says where.
            raise self._too_deep(e.span) from None
        finally:
            self.depth -= 1

    def _too_deep(self, span: Span) -> EvaluationError:
        return EvaluationError(
            f"evaluation nested {self.depth} deep, as deep as the interpreter's stack holds, "
            f"before the depth limit ({self.options.max_depth}) was reached (a recursion that "
            "does not end, or a very deeply nested expression)", span, "depth limit")

    # -- rules with more to them ------------------------------------------------------------------
    def _binop(self, e: BinOp, env: dict, regions: dict, world: World) -> tuple[Value, Cost]:
        span = e.span
        l_loc, c1 = self.eval(e.left, env, regions, world)
        r_loc, c2 = self.eval(e.right, env, regions, world)
        assert isinstance(l_loc, Loc) and isinstance(r_loc, Loc)
        a, c = self._read(self._seq(world, c1, c2, span), world, l_loc, span)
        b, c = self._read(c, world, r_loc, span)
        assert isinstance(a, (IntV, FloatV)) and isinstance(b, (IntV, FloatV))
        x, y = a.value, b.value
        op = e.op
        comparison = _COMPARISONS.get(op)
        if comparison is not None:
            return comparison(x, y), c
        if op is BinaryOperator.DIV:
            if y == 0:
                raise EvaluationError("division by zero", span, "arithmetic")
            if isinstance(a, IntV):
                # C's division, as OpenCL computes it: integers truncate toward zero.
                result = abs(x) // abs(y)
                result = result if (x >= 0) == (y >= 0) else -result
            else:
                result = x / y
        else:
            result = _ARITHMETIC[op](x, y)
        value: IntV | FloatV
        if isinstance(a, IntV):
            assert isinstance(result, int)  # the checker gives both operands one type (Fig. 14)
            value = IntV(result)
        else:
            value = FloatV(float(result))
        if isinstance(value, IntV) and not -(2**63) <= value.value < 2**63:
            raise EvaluationError(f"integer overflow: {value.value} does not fit in 64 bits", span,
                                  "arithmetic")
        assert e.region is not None
        return self._alloc(c, world, regions, e.region, value, span)

    def _merge_cost(self, world: World, in_thread: bool = False) -> float:
        """δm after a parallel form: on the CPU, the model's for a form inside a parallel form's
        thread or not (a `||` is never a kernel of its own: the backend runs both sides in one
        thread, models/opencl/codegen.py)."""
        if world is World.CPU:
            return self.cpu.merge(in_thread or self.threads > 0)
        return self.profile.gpu.op

    def _letregion(self, name: str, body: Expr, span: Span, env: dict, regions: dict,
                   world: World, outermost: bool) -> tuple[Value, Cost]:
        rid = self.next_region
        self.next_region += 1
        # No name here for the region: an `on` replaces it by its merge with the GPU copy, and a
        # name would keep the old table alive (dot n = 10^5: 20 MiB at the evaluation's peak).
        self.stacks[World.CPU][rid] = self.all_regions[rid] = Region(rid, name, 0, self.bsize, 1,
                                                                     {}, World.CPU)
        start = self.graph.node(NodeKind.POINT, span, self.centres)
        pushed = self.graph.step(start, self.providers.allocation(self.bsize),
                                 EdgeKind.ALLOC_REGION, NodeKind.PUSH, span, self.centres,
                                 region=name)
        value, c = self.eval(body, env, {**regions, name: rid}, world, outermost)
        assert not isinstance(c, list)  # letregion is typed on ℂ only (Fig. 2): a Sub, or ∅
        final = self.stacks[World.CPU].pop(rid)
        pop = self.graph.node(NodeKind.POP, span, self.centres, ((World.CPU, -final.ap),),
                              region=name)
        op = self.cpu_op
        whole = self.graph.seq(self.graph.seq(pushed, c, op, span=span, centres=self.centres),
                               pop, op, span=span, centres=self.centres)
        if outermost:
            self.outermost[rid] = final
        return value, whole

    def _fix(self, name: str, body: Expr, span: Span, env: dict, regions: dict,
             world: World) -> tuple[Value, Cost]:
        """fix f: τ. u (Fig. 5). Reconstructed: the paper stores clos(f, u, E[f ↦ (r, o)]) at
        (r, o) and then evaluates u, which would make a call of f apply a closure whose parameter
        is f. hetprof allocates u's own closure at (r, o) with f ↦ (r, o) in its environment, so
        that f names the recursive function itself: one write, [u1] ⊕δw [u2].

        Under the paper's rules the cost is the literal rule's, [u1] ⊕δ c with c u's graph: the
        closure clos(f, u, E[f ↦ (r, o)]) is written at (r, o) (|clos| + 1 words) and then u's
        closure after it, two writes; f names u's closure, as above, so that calls mean what
        they do under the calibrated rules."""
        assert isinstance(body, (Lambda, RegionLambda)) and body.region is not None
        region = self._region(regions, body.region, world, span)
        c: Cost = None
        if self.paper:
            fix_env = {**env, name: Loc(region.name, region.ap)}
            _, c = self._alloc(None, world, regions, body.region,
                               Closure(name, body, fix_env, regions), span)
        placeholder = Loc(region.name, region.ap)
        rec_env = {**env, name: placeholder}
        heap: HeapValue
        if isinstance(body, Lambda):
            heap = Closure(body.param, body.body, rec_env, regions)
        else:
            heap = RegionClosure(body.param, body.body, rec_env, regions)
        loc, c = self._alloc(c, world, regions, body.region, heap, span)
        assert loc == placeholder
        return loc, c

    def _function(self, func: Expr, env: dict, regions: dict, world: World,
                  span: Span) -> tuple[Closure, Cost]:
        """The function of a parmap/reduce: a lambda written in place is used directly (f e_i of
        Fig. 6); any other expression is evaluated once and its closure read once."""
        if isinstance(func, Lambda):
            return Closure(func.param, func.body, env, regions), None
        loc, c = self.eval(func, env, regions, world)
        assert isinstance(loc, Loc)
        closure, c = self._read(c, world, loc, span)
        assert isinstance(closure, Closure)
        return closure, c

    def _parmap(self, node: ParMap, func: Expr, vector: Expr, region: str | None, span: Span,
                env: dict, regions: dict, world: World) -> tuple[Value, Cost]:
        observed = (self.options.observer is not None and world is World.CPU
                    and self.parmap_depth == 0 and not self.has_on)
        snapshot = ({rid: r.copy_to(World.CPU) for rid, r in self.stacks[World.CPU].items()}
                    if observed else {})
        self.parmap_depth += 1
        try:
            value, cost = self._parmap_rule(func, vector, region, span, env, regions, world)
        finally:
            self.parmap_depth -= 1
        if observed:
            assert self.options.observer is not None and isinstance(cost, Sub)
            self.options.observer.offloaded(Offload(
                node, node, env, regions, snapshot, value, dict(self.all_regions), None,
                (cost.source, cost.sink)))
        return value, cost

    def _parmap_rule(self, func: Expr, vector: Expr, region: str | None, span: Span, env: dict,
                     regions: dict, world: World) -> tuple[Value, Cost]:
        if self.paper:
            return self._parmap_paper(func, vector, region, span, env, regions, world)
        closure, c_f = self._function(func, env, regions, world, span)
        vec_loc, c_v = self.eval(vector, env, regions, world)
        assert isinstance(vec_loc, Loc)
        _, vec = self._peek(world, vec_loc, span)
        assert isinstance(vec, VecV) and region is not None
        items, threads = [], []
        with self._kernel(world) as staged:
            batched = _batch(self, world, closure.param, closure.body, closure.env,
                             closure.regions, vec.items, None, span)
            if batched is not None:
                items, threads = batched
            else:
                for item in vec.items:
                    v, c = self.eval(closure.body, {**closure.env, closure.param: item},
                                     closure.regions, world)
                    items.append(v)
                    threads.append(c)
        c_par = self._par(world, threads, span, staged)
        with self._bookkeeping():
            c = self._read_into(world, self._seq(world, c_f, c_v, span), vec_loc, c_par, span)
            c = self._op(world, c, span, EdgeKind.MERGE, self._merge_cost(world))
            return self._alloc(c, world, regions, region, VecV(tuple(items)), span)

    def _parmap_paper(self, func: Expr, vector: Expr, region: str | None, span: Span, env: dict,
                      regions: dict, world: World) -> tuple[Value, Cost]:
        """parmap f [e1, ..., en] at ρ as Fig. 6 writes it, for the paper's rules: thread i is the
        application f e_i, evaluated by the application rule (Fig. 5) from the configuration
        the parmap starts with (`_branches`): c_i = c_f ⊕δr c_ei ⊕ c_body, where c_f writes the
        closure when f is a lambda (a variable costs ∅) and δr reads it. A literal's elements
        are evaluated in their threads, so the literal itself is never allocated. Then
        (⊗_i c_i) ⊕δm [u1] ⊕δa [u2]: the tables' merge and the result vector.

        The rule is given for a literal only. A vector that is not one (a variable, an iota) is
        evaluated first and read once, its read edge ending at the fork (c_v ⊕δr ⊗_i c_i), as
        under the calibrated rules: the elements are values, so each e_i costs ∅ (§7.1 assumes
        as much of `arrs`)."""
        assert region is not None
        literal = isinstance(vector, VecLit)
        vec_loc: Loc | None = None
        c_v: Cost = None
        if isinstance(vector, VecLit):
            elements: tuple = vector.elements
        else:
            vec_value, c_v = self.eval(vector, env, regions, world)
            assert isinstance(vec_value, Loc)
            vec_loc = vec_value
            _, vec = self._peek(world, vec_loc, span)
            assert isinstance(vec, VecV)
            elements = vec.items
        items, threads = [], []
        with self._kernel(world) as staged, self._branches(world) as branch:
            for i, element in enumerate(elements):
                if i:
                    branch(i)
                f_loc, c1 = self.eval(func, env, regions, world)
                assert isinstance(f_loc, Loc)
                _, closure = self._peek(world, f_loc, span)
                assert isinstance(closure, Closure)
                if literal:
                    argument, c2 = self.eval(element, env, regions, world)
                else:
                    argument, c2 = element, None
                value, c3 = self.eval(closure.body, {**closure.env, closure.param: argument},
                                      closure.regions, world)
                c = self._read_into(world, c1, f_loc, c2, span)
                items.append(value)
                threads.append(self._seq(world, c, c3, span))
        c_par = self._par(world, threads, span, staged)
        with self._bookkeeping():
            if vec_loc is not None:
                c_par = self._read_into(world, c_v, vec_loc, c_par, span)
            c = self._op(world, c_par, span, EdgeKind.MERGE, self._merge_cost(world))
            return self._alloc(c, world, regions, region, VecV(tuple(items)), span)

    @contextmanager
    def _bookkeeping(self):
        """Mark the edges built inside as a parallel form's own bookkeeping (see
        graphs.devicebox.launches_kernel): on the GPU they need no kernel launch of their own."""
        saved, self.bookkeeping = self.bookkeeping, True
        try:
            yield
        finally:
            self.bookkeeping = saved

    def _peek(self, world: World, location: Loc, span: Span) -> tuple[Region, HeapValue]:
        region = (self.cpu_stack if world is _CPU else self.gpu_stack).get(location.region)
        if region is None:
            raise EvaluationError("read of a location whose region is not on the "
                                  f"{world} region stack", span, "Theorem 4.2")
        return region, read(region, location, span)

    def _read_into(self, world: World, before, location: Loc, target, span: Span):
        """before ⊕δr target: a read whose edge ends at target's source (the ⊗'s fork)."""
        region, _ = self._peek(world, location, span)
        if target is None:
            return self._mem(before, world, _READ, region, location.offset, span)
        if world is _GPU:
            read_only = self._mem(before, world, _READ, region, location.offset, span)
            return self.paths.then(read_only, target)
        start = before if before is not None else self.graph.node(NodeKind.POINT, span,
                                                                  self.centres)
        self.graph.edge(start.sink, target.source, self.cpu_read, EdgeKind.READ, span,
                        self.centres)
        return Sub(start.source, target.sink)

    def _iota(self, count: Expr, region: str | None, span: Span, env: dict, regions: dict,
              world: World) -> tuple[Value, Cost]:
        count_loc, c = self.eval(count, env, regions, world)
        assert isinstance(count_loc, Loc)
        _, number = self._peek(world, count_loc, span)
        assert isinstance(number, IntV) and region is not None
        if number.value < 0:
            raise EvaluationError(f"iota of a negative count ({number.value})", span, "iota")
        if number.value > self.options.max_steps:
            raise EvaluationError(f"iota of {number.value} elements is beyond the step limit "
                                  f"({self.options.max_steps}); raise --max-steps", span,
                                  "step limit")
        items, writes = [], []
        with self._kernel(world, stages=False):
            batched = (_iota_batch(self, world, number.value, regions, region, span)
                       if not self.paper else None)
            if batched is not None:
                items, writes = batched
            for i in range(number.value if batched is None else 0):
                self._tick(span)
                loc, w = self._alloc(None, world, regions, region, IntV(i), span)
                items.append(loc)
                writes.append(w)
        c_par = self._par(world, writes, span)
        with self._bookkeeping():
            c = self._read_into(world, c, count_loc, c_par, span)
            c = self._op(world, c, span, EdgeKind.MERGE, self._merge_cost(world))
            return self._alloc(c, world, regions, region, VecV(tuple(items)), span)

    def _reduce(self, func: Expr, zero: Expr, vector: Expr, region: str | None, span: Span,
                env: dict, regions: dict, world: World) -> tuple[Value, Cost]:
        """reduce f z v at ρ: ⌈log2 n⌉ levels; level k pairs up neighbours in parallel,
        (⊗_i ([u] ⊕δw [pair] ⊕ c_f(pair))) ⊕δm [u], and the levels run one after another. On 𝔾
        each level is a kernel. f must be associative; z is the result for an empty vector."""
        closure, c_f = self._function(func, env, regions, world, span)
        z_loc, c_z = self.eval(zero, env, regions, world)
        vec_loc, c_v = self.eval(vector, env, regions, world)
        assert isinstance(vec_loc, Loc)
        with self._bookkeeping():
            vec, cost = self._read(self._seq_all(world, [c_f, c_z, c_v], span), world, vec_loc,
                                   span)
        assert isinstance(vec, VecV) and region is not None
        if not vec.items:
            return z_loc, cost
        items = list(vec.items)
        while len(items) > 1:
            combined, branches = [], []
            with self._kernel(world) as staged, self._branches(world) as branch:
                batched = (_batch(self, world, closure.param, closure.body, closure.env,
                                  closure.regions, items[:len(items) - len(items) % 2], region,
                                  span)
                           if not self.paper else None)
                if batched is not None:
                    combined, branches = batched
                for i in range(0, len(items) - 1 if batched is None else 0, 2):
                    if i:
                        branch(i // 2)
                    pair, c_pair = self._alloc(None, world, regions, region,
                                               PairV(items[i], items[i + 1]), span)
                    value, c_body = self.eval(closure.body, {**closure.env, closure.param: pair},
                                              closure.regions, world)
                    combined.append(value)
                    branches.append(self._seq(world, c_pair, c_body, span))
            if len(items) % 2:
                combined.append(items[-1])
            with self._bookkeeping():
                level = self._op(world, self._par(world, branches, span, staged), span,
                                 EdgeKind.MERGE, self._merge_cost(world))
            cost = self._seq(world, cost, level, span)
            items = combined
        return items[0], cost

    # -- on -----------------------------------------------------------------------------------------
    def _on(self, e: On, env: dict, regions: dict, world: World) -> tuple[Value, Cost]:
        """on e at ρ (Fig. 6): push frv(e) to 𝔾, build the device box, copy back and merge.

        Under the paper's rules: what is pushed is each region as the running branch's table
        holds it (`_view`; the whole region outside parallel branches), and the merge starts
        from the ap it was pushed with, so that a sibling's words after it collide with the
        GPU's (profiler.regions.merge, Theorem 4.4); δ† is the merges' cost, ω†β of what the
        GPU added, with no separate merge step (Fig. 6: δ† = Σ_i δ_i); and an `on local [ρ]`
        holds a third copy of ρ while it runs, in local memory (§7.1.2: "the local version will
        replicate the local memory state to global memory at the end", 9n)."""
        span = e.span
        assert world is World.CPU and e.region is not None
        names = sorted(set(e.uses) | {e.region})
        pushed: list[Region] = []
        start_ap: dict[int, int] = {}
        start_words: dict[int, int] = {}
        for name in names:
            cpu_region = self._region(regions, name, World.CPU, span)
            if cpu_region.name in self.stacks[World.GPU]:
                continue
            # Under hetprof's rules nothing on the CPU reads or allocates in a pushed region
            # until its merge, which takes the copy's table (v1 ∪ v1', v1 its prefix): the copy
            # shares the CPU region's table. The paper's rules copy it (a sibling branch's words
            # may be hidden from it, `_view`, and the merge checks both sides).
            copy = cpu_region.copy_to(World.GPU, local=name in e.local, shared=not self.paper)
            if self.paper:
                copy.ap, start_words[copy.name], values = self._view(cpu_region)
                if values is not cpu_region.values:
                    copy.values = values
            else:
                start_words[copy.name] = copy.ap
            start_ap[copy.name] = copy.ap
            self.stacks[World.GPU][copy.name] = copy
            pushed.append(copy)
        # The CPU regions are replaced by their merges below: a name left pointing at one would
        # keep its table (dot n = 10^5: 600 000 values, 20 MiB) alive while the device box is
        # priced, the evaluation's peak of memory. `names` always holds e.region.
        del cpu_region
        snapshot = ({r.name: self.stacks[World.CPU][r.name].copy_to(World.CPU) for r in pushed}
                    if self.options.observer is not None else {})
        saved_growth = self.gpu_growth
        self.gpu_growth = {}
        self.local_share = (self.profile.gpu.local_words
                            // max(1, sum(1 for r in pushed if r.local)))
        try:
            value, body_paths = self.eval(e.body, env, regions, World.GPU)
        finally:
            growth, self.gpu_growth = self.gpu_growth, saved_growth
            gpu_copies = {r.name: self.stacks[World.GPU].pop(r.name) for r in pushed}
        assert not isinstance(body_paths, Sub)  # the GPU world's: cost paths, or ∅
        pushed_words = sum(start_words.values())
        transfer_in = sum(self.providers.host_to_device(start_words[r.name]) for r in pushed)
        transfer_out = 0.0
        merge_cost = 0.0
        gpu_words = 0
        local_words = 0  # the paper's local copies (§7.1.2), pushed and added
        for rid, copy in gpu_copies.items():
            result = merge(self.stacks[World.CPU][rid], copy, span,
                           start_ap[rid] if self.paper else None)
            self._replace_region(rid, result.region)
            transfer_out += self.providers.device_to_host(result.new_words)
            if not self.paper:
                merge_cost += self.cpu_op  # updating ap and s of the CPU region (Def. 4.3)
            gpu_words += result.new_words
            if self.paper and copy.local:
                local_words += start_words[rid] + result.new_words
        model = box_model(self.gpu, pushed_words + gpu_words, pushed_words)
        box = build_device_box(body_paths, model, self.profile.gpu)
        # Harlan's retry: a region that filled up on the GPU is grown on the CPU before the push.
        grow_cost = sum(self.providers.allocation(words) for words in growth.values())
        notes = []
        grown_labels = {self.all_regions[rid].label: words for rid, words in growth.items()}
        if grown_labels:
            notes.append("grown before the push (regions cannot grow on the GPU): "
                         + ", ".join(f"{k} by {v:,} words" for k, v in sorted(grown_labels.items())))
        memory = box.memory_note(self.profile.gpu.sector_bytes)
        if memory:
            notes.append(memory)
        divergence = box.divergence_note(self.profile.gpu.lockstep)
        if divergence:
            notes.append(divergence)
        drawn = box.allocation_note(self.profile.gpu,
                                    lambda t: amount(t * self.gpu_scale, self.profile.units))
        if drawn:
            notes.append(drawn)
        walk = sum(phase.walk for phase in box.phases)
        if walk:
            stepped = getattr(model, "copied", False) and self.profile.gpu.copy_step > 0
            notes.append(f"page walks after the copy of the heap "
                         f"({self.profile.region.word_bytes * (pushed_words + gpu_words):,} "
                         "bytes)" + (" and the first kernel's step after data copied in"
                                     if stepped else "") + ": "
                         f"{amount(walk * self.gpu_scale, self.profile.units)}, in the first kernel")
        info = DeviceBoxInfo(transfer_in, box.time * self.gpu_scale, transfer_out, merge_cost,
                             tuple(r.label for r in pushed), box, span, tuple(notes), grow_cost)
        local_start = (sum(start_words[rid] for rid, c in gpu_copies.items() if c.local)
                       if self.paper else 0)
        space_start = ((World.GPU, pushed_words + local_start),)
        space_end = ((World.GPU, gpu_words + local_words - local_start), (World.CPU, gpu_words))
        cost = self.graph.device_box(
            None, info, self.centres,
            space_start=space_start,
            space_end=space_end,
            space_after=((World.GPU, -(pushed_words + gpu_words + local_words)),),
        )
        record = OnRecord(span, info, box, pushed_words, gpu_words, grown_labels, self.centres,
                          body_paths if self.options.observer is not None else None)
        self.ons.append(record)
        if self.options.observer is not None:
            self.options.observer.offloaded(Offload(
                e, e.body, env, regions, snapshot, value, dict(self.all_regions), record, None))
        return value, cost

    def _replace_region(self, rid: int, region: Region) -> None:
        self.stacks[World.CPU][rid] = region
        self.all_regions[rid] = region
