"""Batched evaluation (issue 20): the threads of one parallel level (a GPU kernel, a CPU parmap,
a reduction level, an iota's elements) evaluated together, over arrays, path by path.

The explicit evaluator (`graphs.semantics.explicit`) runs a level's threads one after another,
each through the judgement of Figs. 5, 6 and 9: at nbody's n = 512 that is 5 million evaluation
steps and 4 million path edges, about 4 µs a step. Threads that take one control path build
costs of one shape (GPU paths that differ only in their addresses, CPU sub-graphs that differ
only in their numbering and where a region grows) and heaps that differ only in their values.
This module evaluates such threads once for all: a value is a numpy array over the threads (or
one Python value where every thread has the same); on 𝔾 a thread's path is one template of edges
whose addresses are arrays (`graphs.devicebox.TemplateThreads`), on ℂ its sub-graph is built once
in a scratch `CostGraph` and copied per thread; and what thread t allocates in region ρ goes
where the explicit evaluator puts it, after the words of the threads before it.

Threads that diverge (a branch they do not agree on, iotas of different counts, vectors of
different lengths, recursion to different depths) raise `Diverge` with the key that tells their
paths apart; the level is evaluated again for each part, one batch per path (at most
MAX_GROUPS), as the symbolic evaluator splits its cases, and the parts are put back in thread
order when the level commits.

The result is exactly the explicit evaluator's, node for node, edge for edge, word for word: the
same graph, paths (the same `PathEdge`s in the same order), heap (the same values at the same
offsets, inserted in the same order), step count, region growth and graph-size checkpoints.
Nothing is committed until the whole level has been evaluated; anything outside the supported
forms, and every error (an index out of bounds, a division by zero, an integer overflow, a limit
reached), abandons the level (`Unbatchable`), and the explicit evaluator runs it thread by thread
from the untouched state, so that its result, or its error with its source location, is what it
always was.

Supported in a thread's body: variables, integer, float and boolean literals, arithmetic and
comparisons, `let`, `if`, `e1[e2]`, `fst`/`snd`, pairs, vector literals, `length`, nested `iota`,
`parmap` and `reduce` (functions written in place), functions, region functions and `fix`, and
calls of them, whether made before the level or by its threads (recursive ones included), and
`profile`. Not: `||`, `on`, `letregion`. Hetprof's calibrated rules only (under the paper's, Fig. 6's per-branch
tables make threads see different heaps, and ap moves by |v| + 1).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import partial
from itertools import chain, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from graphs.costgraph import NUMBER_DTYPE, EdgeKind, NodeKind, Sub
from graphs.devicebox import PathEdge, Phase, TemplateThreads

# The operators as the explicit evaluator applies them (it imports this module only when it
# first evaluates a parallel level, so the import goes one way at run time).
from graphs.semantics.explicit import _ARITHMETIC, _COMPARISONS
from graphs.semantics.options import GRAPH_CHECK_EVERY
from models.base import AccessKind, Space
from profiler.regions import (
    Closure,
    FloatV,
    HeapValue,
    IntV,
    Loc,
    PairV,
    RegionClosure,
    VecV,
    slots_maker,
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
    Pair,
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

if TYPE_CHECKING:
    from graphs.semantics.explicit import Evaluator


class Unbatchable(Exception):
    """The level cannot be evaluated as a batch: the explicit evaluator runs it thread by thread."""


# -- batched values ----------------------------------------------------------------------------------
# A per-thread quantity is a numpy array over the threads, or a Python scalar when all threads
# hold the same (`_uniform`).


def _uniform(x: Any) -> bool:
    return not isinstance(x, np.ndarray)


@dataclass(slots=True)
class BLoc:
    """A location per thread: region `region` (one for all threads), at `offset`. An `inside`
    location was allocated by the batch: its offset is relative to the thread's own start in
    the region (the same for every thread on one path), made absolute when the batch commits."""

    region: int
    offset: Any  # int | np.ndarray
    inside: bool


@dataclass(slots=True)
class BBool:
    value: Any  # bool | np.ndarray of bool


BValue = BLoc | BBool


@dataclass(slots=True)
class BNumber:
    """An integer or float heap value per thread."""

    real: bool  # a FloatV (else an IntV)
    value: Any  # int | float | np.ndarray


@dataclass(slots=True)
class BPair:
    first: BValue
    second: BValue


@dataclass(slots=True)
class BVec:
    """A vector allocated by the batch: the same length in every thread."""

    items: list[BValue]


@dataclass(slots=True)
class OutsideVec:
    """A vector allocated before the batch and read by every thread (one VecV)."""

    vec: VecV


@dataclass(slots=True)
class GatheredVecs:
    """Vectors allocated before the batch, one per thread, all of one length (threads that
    read vectors of different lengths are split by length: `Diverge`)."""

    vecs: list[VecV]


@dataclass(slots=True)
class OutsideClosure:
    """A function (or region function) allocated before the batch, the same in every thread."""

    closure: Closure | RegionClosure


@dataclass(slots=True)
class BClosure:
    """A function a batch's threads make (a `lambda`, a region `lambda`, a `fix`): one body and
    parameter for all, its environment holding batched values."""

    region_function: bool  # a RegionClosure (else a Closure)
    param: str
    body: Expr
    env: dict
    regions: dict


BHeap = BNumber | BPair | BVec | OutsideVec | GatheredVecs | OutsideClosure | BClosure

# A template edge: (kind, weight, access kind or None, location or None, span, centres, words,
# bookkeeping); a cost is a flat list of them (a thread's path, nested parallel forms flattened
# as `graphs.devicebox.flatten` does), or None for ∅.
TEdge = tuple
TCost = list | None

_READ, _WRITE = AccessKind.READ, AccessKind.WRITE
_READ_EDGE, _WRITE_EDGE, _SEQ_EDGE = EdgeKind.READ, EdgeKind.WRITE, EdgeKind.SEQ
_OP_EDGE, _MERGE_EDGE = EdgeKind.OP, EdgeKind.MERGE
_LOCAL, _GLOBAL = Space.LOCAL, Space.GLOBAL
_READ_NODE, _WRITE_NODE, _POINT_NODE = NodeKind.READ, NodeKind.WRITE, NodeKind.POINT
_EXPAND_EDGE = EdgeKind.EXPAND
_new_sub = partial(tuple.__new__, Sub)

# The committed values are made by the million: without their dataclass __init__.
_new_loc, _new_int, _new_float = slots_maker(Loc), slots_maker(IntV), slots_maker(FloatV)
_new_pair, _new_vec = slots_maker(PairV), slots_maker(VecV)
_SAFE = 2.0**30  # integer operands below this in magnitude cannot overflow 64 bits in + - *
_INT_LIMIT = 2**63


@dataclass(slots=True)
class _Allocation:
    region: int
    offset: int  # relative to the thread's start in the region
    words: int
    value: BHeap
    edge: int = -1  # on ℂ: its write edge in the thread's sub-graph


class _GpuCosts:
    """Costs on 𝔾 as templates: a thread's path as a flat list of template edges (nested
    parallel forms flattened, as `graphs.devicebox.flatten` does), None for ∅. The rules are
    `Evaluator._mem`, `_seq`, `_op`, `_op_into`, `_read_into` and `_par` on 𝔾."""

    def __init__(self, batch: Batch):
        # A proxy: the batch holds its costs, and a cycle would keep both (and the evaluator the
        # batch holds) alive while the cyclic collector is paused (`cyclic_gc_paused`).
        self.batch = weakref.proxy(batch)
        self.op_weight = batch.ev.gpu_op
        self.merge_weight = batch.ev.gpu_op

    def edge(self, before: TCost, kind: EdgeKind, weight: float, access: AccessKind | None,
             location: BLoc | None, span: Span, words: int = 0) -> list:
        batch = self.batch
        edge = (kind, weight, access, location, span, batch.centres, words, batch.bookkeeping)
        if before is None:
            return [edge]
        before.append(edge)
        return before

    def read(self, before: TCost, location: BLoc, span: Span) -> list:
        return self.edge(before, _READ_EDGE, 0.0, _READ, location, span)

    def write(self, before: TCost, location: BLoc, words: int, span: Span) -> list:
        return self.edge(before, _WRITE_EDGE, 0.0, _WRITE, location, span, words)

    def op(self, before: TCost, span: Span, kind: EdgeKind = _OP_EDGE,
           weight: float | None = None) -> list:
        return self.edge(before, kind, self.op_weight if weight is None else weight, None, None,
                         span)

    def seq(self, first: TCost, second: TCost, span: Span) -> TCost:
        """first ⊕ second (`PathBuilder.seq`: its step edge is never bookkeeping)."""
        if first is None:
            return second
        if second is None:
            return first
        first.append((_SEQ_EDGE, self.op_weight, None, None, span, self.batch.centres, 0, False))
        first.extend(second)
        return first

    @staticmethod
    def then(first: TCost, second: TCost) -> TCost:
        if first is None:
            return second
        if second is None:
            return first
        first.extend(second)
        return first

    def op_into(self, before: TCost, after: TCost, span: Span) -> TCost:
        return self.then(self.op(before, span), after)

    def read_into(self, before: TCost, location: BLoc, target: TCost, span: Span) -> TCost:
        return self.then(self.read(before, location, span), target)

    @staticmethod
    def par(branches: list[TCost], span: Span) -> TCost:
        """⊗ inside a thread: one parallel phase, flattened into the thread's path."""
        if not branches:
            return None
        path: list = []
        for branch in branches:
            if branch:
                path.extend(branch)
        return path

    @staticmethod
    def point(span: Span) -> TCost:
        return []


class _CpuCosts:
    """Costs on ℂ: one thread's sub-graph, built in a scratch `CostGraph` by the rules the
    explicit evaluator builds it with (`Evaluator._mem`, `_seq`, `_op`, `_op_into`,
    `_read_into`, `_par` on ℂ), its nodes numbered from 0; `_commit` copies it once per thread.
    A write's edge is recorded with its allocation: where the region grows (ExpandW, Fig. 9)
    is decided when the batch commits, by the thread the word falls in."""

    def __init__(self, batch: Batch):
        from graphs.costgraph import CostGraph

        ev = batch.ev
        self.batch = weakref.proxy(batch)  # as `_GpuCosts.batch`
        self.graph = CostGraph()
        self.read_weight, self.write_weight, self.op_weight = ev.cpu_read, ev.cpu_write, ev.cpu_op
        self.fork = ev.cpu_fork
        self.merge_weight = ev.cpu.merge(True)  # a form inside a parallel form's thread
        self.spaces = ev.cpu_space

    def read(self, before, location: BLoc, span: Span, weight: float | None = None):
        return self.graph.step(before, self.read_weight if weight is None else weight,
                               _READ_EDGE, _READ_NODE, span, self.batch.centres)

    def write(self, before, location: BLoc, words: int, span: Span):
        space = self.spaces.get(words)
        if space is None:
            space = self.spaces[words] = ((World.CPU, words),)
        sub = self.graph.step(before, self.write_weight, _WRITE_EDGE, _WRITE_NODE, span,
                              self.batch.centres, space)
        self.batch.allocations[-1].edge = len(self.graph.edge_source) - 1
        return sub

    def op(self, before, span: Span, kind: EdgeKind = _OP_EDGE, weight: float | None = None):
        return self.graph.step(before, self.op_weight if weight is None else weight, kind,
                               _POINT_NODE, span, self.batch.centres)

    def seq(self, first, second, span: Span):
        return self.graph.seq(first, second, self.op_weight, _SEQ_EDGE, span, self.batch.centres)

    def op_into(self, before, after, span: Span):
        if after is None:
            return self.op(before, span)
        start = before if before is not None else self.point(span)
        self.graph.edge(start.sink, after.source, self.op_weight, _OP_EDGE, span,
                        self.batch.centres)
        return _new_sub((start.source, after.sink))

    def read_into(self, before, location: BLoc, target, span: Span):
        if target is None:
            return self.read(before, location, span)
        start = before if before is not None else self.point(span)
        self.graph.edge(start.sink, target.source, self.read_weight, _READ_EDGE, span,
                        self.batch.centres)
        return _new_sub((start.source, target.sink))

    def par(self, branches: list, span: Span):
        return self.graph.par_all(branches, self.fork, span, self.batch.centres)

    def point(self, span: Span):
        return self.graph.node(_POINT_NODE, span, self.batch.centres)


class Batch:
    """One parallel level's `threads` threads on `world`, evaluated together (the module doc)."""

    def __init__(self, evaluator: Evaluator, threads: int, world: World):
        self.ev = evaluator
        self.threads = threads
        self.world = world
        self.stack = evaluator.gpu_stack if world is World.GPU else evaluator.cpu_stack
        self.heap: dict[tuple[int, int], BHeap] = {}
        self.next_offset: dict[int, int] = {}
        self.allocations: list[_Allocation] = []
        self.steps = 0  # evaluation steps of one thread
        self.depth = evaluator.depth
        self.deepest = evaluator.depth
        self.centres = evaluator.centres
        self.bookkeeping = evaluator.bookkeeping
        self.outside_cache: dict[tuple[int, int], BHeap] = {}
        self.costs: Any = _GpuCosts(self) if world is World.GPU else _CpuCosts(self)
        # slot reads priced by their access pattern, on ℂ (the explicit evaluator's)
        self.slot_reads = evaluator.slot_reads if world is World.CPU else {}

    # -- the heap ------------------------------------------------------------------------------
    def _alloc(self, before: TCost, regions: dict, name: str | None, value: BHeap, words: int,
               span: Span) -> tuple[BLoc, list]:
        assert name is not None
        rid = regions[name]
        if rid not in self.stack:
            raise Unbatchable("a region not on the running world's region stack")
        offset = self.next_offset.get(rid, 0)
        self.next_offset[rid] = offset + words
        self.allocations.append(_Allocation(rid, offset, words, value))
        location = BLoc(rid, offset, True)
        self.heap[(rid, offset)] = value
        return location, self.costs.write(before, location, words, span)

    def _read(self, before: TCost, location: BValue, span: Span,
              weight: float | None = None) -> tuple[BHeap, list]:
        """A read; on ℂ at `weight` where given (`Evaluator._read`)."""
        if not isinstance(location, BLoc):
            raise Unbatchable("a read of a boolean")
        if weight is not None:
            return self._peek(location), self.costs.read(before, location, span, weight)
        return self._peek(location), self.costs.read(before, location, span)

    def _peek(self, location: BLoc) -> BHeap:
        if location.inside:
            if not _uniform(location.offset):
                raise Unbatchable("a read of the batch's own words at offsets that differ")
            value = self.heap.get((location.region, location.offset))
            if value is None:
                raise Unbatchable("a read of an unallocated word")
            return value
        region = self.stack.get(location.region)
        if region is None:
            raise Unbatchable("a read of a region not on the running world's region stack")
        offset = location.offset
        if _uniform(offset):
            key = (location.region, offset)
            cached = self.outside_cache.get(key)
            if cached is None:
                heap_value = region.values.get(offset)
                if heap_value is None or offset >= region.ap:
                    raise Unbatchable("a read of an unallocated word")
                cached = self.outside_cache[key] = _from_heap(heap_value)
            return cached
        offsets = offset.tolist()
        if max(offsets) >= region.ap:
            raise Unbatchable("a read of an unallocated word")
        values = list(map(region.values.get, offsets))
        return _gather(values)

    # -- the judgement, over the threads ---------------------------------------------------------
    def eval(self, e: Expr, env: dict, regions: dict) -> tuple[BValue, TCost]:
        self.steps += 1
        self.depth += 1
        if self.depth > self.deepest:
            self.deepest = self.depth
        try:
            return self._eval(e, env, regions)
        finally:
            self.depth -= 1

    def _eval(self, e: Expr, env: dict, regions: dict) -> tuple[BValue, TCost]:
        match e:
            case Var():
                value = env[e.name]
                if isinstance(value, Loc):  # bound outside the batch: the same in every thread
                    return BLoc(value.region, value.offset, False), None
                if isinstance(value, bool):
                    return BBool(value), None
                return value, None
            case IntLit():
                literal = e.value
                number = self.ev.params[literal] if isinstance(literal, str) else literal
                return self._alloc(None, regions, e.region, BNumber(False, number), 1, e.span)
            case BinOp():
                return self._binop(e, env, regions)
            case FloatLit():
                return self._alloc(None, regions, e.region, BNumber(True, e.value), 1, e.span)
            case BoolLit():
                return BBool(e.value), self.costs.point(e.span)
            case Let():
                v1, c1 = self.eval(e.bound, env, regions)
                v2, c2 = self.eval(e.body, {**env, e.name: v1}, regions)
                return v2, self.costs.seq(c1, c2, e.span)
            case If():
                test, c1 = self.eval(e.cond, env, regions)
                if not isinstance(test, BBool):
                    raise Unbatchable("a branch on a value that is not a boolean")
                taken = test.value
                if not _uniform(taken):
                    if not (taken.all() or not taken.any()):
                        raise Diverge(taken)  # split the threads by the branch they take
                    taken = bool(taken[0])
                value, c2 = self.eval(e.then if taken else e.orelse, env, regions)
                return value, self.costs.op_into(c1, c2, e.span)
            case Index():
                return self._index(e, env, regions)
            case Fst() | Snd():
                loc, c1 = self.eval(e.expr, env, regions)
                pair, c = self._read(c1, loc, e.span)
                if not isinstance(pair, BPair):
                    raise Unbatchable("fst or snd of a value that is not a pair")
                return (pair.first if isinstance(e, Fst) else pair.second), c
            case Pair():
                v1, c1 = self.eval(e.first, env, regions)
                v2, c2 = self.eval(e.second, env, regions)
                return self._alloc(self.costs.seq(c1, c2, e.span), regions, e.region, BPair(v1, v2), 2,
                                   e.span)
            case VecLit():
                items: list[BValue] = []
                costs: list[TCost] = []
                for element in e.elements:
                    v, c_element = self.eval(element, env, regions)
                    items.append(v)
                    costs.append(c_element)
                joined: TCost = None
                for part in costs:
                    joined = self.costs.seq(joined, part, e.span)
                return self._alloc(joined, regions, e.region, BVec(items), max(1, len(items)),
                                   e.span)
            case Length():
                loc, c1 = self.eval(e.expr, env, regions)
                vec, c = self._read(c1, loc, e.span)
                length = _length(vec)
                return self._alloc(c, regions, e.region, BNumber(False, length), 1, e.span)
            case Iota():
                return self._iota(e, env, regions)
            case ParMap():
                return self._parmap(e, env, regions)
            case Reduce():
                return self._reduce(e, env, regions)
            case Lambda():
                return self._alloc(None, regions, e.region,
                                   BClosure(False, e.param, e.body, env, regions), 2, e.span)
            case RegionLambda():
                return self._alloc(None, regions, e.region,
                                   BClosure(True, e.param, e.body, env, regions), 2, e.span)
            case Fix():
                return self._fix(e, env, regions)
            case App():
                # The application rule (Fig. 5), in the explicit evaluator's order: the function,
                # the argument, the body, then the read of the closure and the ⊕.
                f_loc, c1 = self.eval(e.func, env, regions)
                closure = self._closure(f_loc, Closure)
                a_loc, c2 = self.eval(e.arg, env, regions)
                value, c3 = self.eval(closure.body, {**closure.env, closure.param: a_loc},
                                      closure.regions)
                c = self.costs.read_into(c1, f_loc, c2, e.span)
                return value, self.costs.seq(c, c3, e.span)
            case RegionApp():
                loc, c1 = self.eval(e.expr, env, regions)
                region_closure = self._closure(loc, RegionClosure)
                _, c1 = self._read(c1, loc, e.span)
                inner_regions = {**region_closure.regions, region_closure.param: regions[e.region]}
                value, c2 = self.eval(region_closure.body, region_closure.env, inner_regions)
                return value, self.costs.seq(c1, c2, e.span)
            case Profile() if self.world is World.GPU or not e.name.startswith("__offload"):
                # (an offload's centre on ℂ is observed thread by thread: not batched)
                saved = self.centres
                self.centres = saved + (e.name,)
                try:
                    return self.eval(e.expr, env, regions)
                finally:
                    self.centres = saved
        raise Unbatchable(f"{type(e).__name__} is not batched")

    def _closure(self, location: BValue, kind: type) -> Any:
        """The function every thread calls: one closure allocated before the batch, or one the
        threads made (`BClosure`), read as a closure with `param`, `body`, `env`, `regions`."""
        if not isinstance(location, BLoc):
            raise Unbatchable("a call of a boolean")
        value = self._peek(location)
        if isinstance(value, BClosure) and value.region_function == (kind is RegionClosure):
            return value
        if not isinstance(value, OutsideClosure) or not isinstance(value.closure, kind):
            raise Unbatchable("a call of different functions")
        return value.closure

    def _fix(self, e: Fix, env: dict, regions: dict) -> tuple[BValue, TCost]:
        """fix f: τ. u (`Evaluator._fix`, hetprof's rules): u's closure, with f naming its own
        location, in one write."""
        body = e.body
        if not isinstance(body, (Lambda, RegionLambda)) or body.region is None:
            raise Unbatchable("a fix of something that is not a function")
        rid = regions[body.region]
        placeholder = BLoc(rid, self.next_offset.get(rid, 0), True)
        closure = BClosure(isinstance(body, RegionLambda), body.param, body.body,
                           {**env, e.name: placeholder}, regions)
        location, cost = self._alloc(None, regions, body.region, closure, 2, e.span)
        assert location.offset == placeholder.offset
        return location, cost

    def _binop(self, e: BinOp, env: dict, regions: dict) -> tuple[BValue, TCost]:
        span = e.span
        left, c1 = self.eval(e.left, env, regions)
        right, c2 = self.eval(e.right, env, regions)
        a, c = self._read(self.costs.seq(c1, c2, span), left, span)
        b, c = self._read(c, right, span)
        if not isinstance(a, BNumber) or not isinstance(b, BNumber):
            raise Unbatchable("arithmetic on a value that is not a number")
        x, y = a.value, b.value
        comparison = _COMPARISONS.get(e.op)
        if comparison is not None:
            if _uniform(x) and _uniform(y):
                return BBool(comparison(x, y)), c
            return BBool(comparison(np.asarray(x), np.asarray(y))), c
        result = _arithmetic(e.op, a.real, x, y)
        return self._alloc(c, regions, e.region, BNumber(a.real, result), 1, span)

    def _index(self, e: Index, env: dict, regions: dict) -> tuple[BValue, TCost]:
        span = e.span
        vec_loc, c1 = self.eval(e.vector, env, regions)
        idx_loc, c2 = self.eval(e.index, env, regions)
        idx, c = self._read(self.costs.seq(c1, c2, span), idx_loc, span)
        vec, c = self._read(c, vec_loc, span, self.slot_reads.get(span))
        if not isinstance(idx, BNumber) or idx.real:
            raise Unbatchable("an index that is not an integer")
        length = _length(vec)
        index = idx.value
        if _uniform(index):
            if not 0 <= index < length:
                raise Unbatchable("an index out of bounds")
            return _item(vec, index), c
        if length == 0 or index.min() < 0 or index.max() >= length:
            raise Unbatchable("an index out of bounds")
        if isinstance(vec, OutsideVec):
            return _gather_values([vec.vec.items[i] for i in index.tolist()]), c
        if isinstance(vec, GatheredVecs):
            return _gather_values([v.items[i] for v, i in zip(vec.vecs, index.tolist(),
                                                              strict=True)]), c
        raise Unbatchable("an index that differs between threads into the batch's own vector")

    def _iota(self, e: Iota, env: dict, regions: dict) -> tuple[BValue, TCost]:
        span = e.span
        count_loc, c = self.eval(e.count, env, regions)
        if not isinstance(count_loc, BLoc):
            raise Unbatchable("iota of a boolean")
        number = self._peek(count_loc)
        if not isinstance(number, BNumber) or number.real:
            raise Unbatchable("iota of a value that is not an integer")
        count = number.value
        if not _uniform(count):
            if (count == count[0]).all():
                count = int(count[0])
            else:
                raise Diverge(count)  # split the threads by their count
        if count < 0 or count > self.ev.options.max_steps:
            raise Unbatchable("iota of a negative or excessive count")
        items: list[BValue] = []
        writes: list[TCost] = []
        for i in range(count):
            self.steps += 1  # the explicit evaluator's _tick per element
            loc, w = self._alloc(None, regions, e.region, BNumber(False, i), 1, span)
            items.append(loc)
            writes.append(w)
        return self._gathered(c, count_loc, writes, items, regions, e.region, span)

    def _gathered(self, before: TCost, read: BLoc, threads: list[TCost], items: list[BValue],
                  regions: dict, region: str | None, span: Span) -> tuple[BValue, TCost]:
        """A parallel form's own bookkeeping after its threads (`Evaluator._parmap_rule`,
        `_iota`): before ⊕δr (⊗ threads) ⊕δm [u] ⊕δa [the result vector]."""
        c_par = self.costs.par(threads, span)
        saved, self.bookkeeping = self.bookkeeping, True
        try:
            c = self.costs.read_into(before, read, c_par, span)
            c = self.costs.op(c, span, _MERGE_EDGE, self.costs.merge_weight)
            return self._alloc(c, regions, region, BVec(items), max(1, len(items)), span)
        finally:
            self.bookkeeping = saved

    def _function(self, func: Expr, env: dict, regions: dict) -> tuple[str, Expr, dict, dict]:
        if not isinstance(func, Lambda):
            raise Unbatchable("a parallel form's function that is not written in place")
        return func.param, func.body, env, regions

    def _parmap(self, e: ParMap, env: dict, regions: dict) -> tuple[BValue, TCost]:
        span = e.span
        param, body, f_env, f_regions = self._function(e.func, env, regions)
        vec_loc, c_v = self.eval(e.vector, env, regions)
        if not isinstance(vec_loc, BLoc):
            raise Unbatchable("parmap over a boolean")
        vec = self._peek(vec_loc)
        items: list[BValue] = []
        threads: list[TCost] = []
        for k in range(_length(vec)):
            v, c = self.eval(body, {**f_env, param: _item(vec, k)}, f_regions)
            items.append(v)
            threads.append(c)
        return self._gathered(c_v, vec_loc, threads, items, regions, e.region, span)

    def _reduce(self, e: Reduce, env: dict, regions: dict) -> tuple[BValue, TCost]:
        span = e.span
        param, body, f_env, f_regions = self._function(e.func, env, regions)
        z_loc, c_z = self.eval(e.zero, env, regions)
        vec_loc, c_v = self.eval(e.vector, env, regions)
        saved, self.bookkeeping = self.bookkeeping, True
        try:
            vec, read = self._read(self.costs.seq(c_z, c_v, span), vec_loc, span)
        finally:
            self.bookkeeping = saved
        cost: TCost = read
        length = _length(vec)
        if not length:
            return z_loc, cost
        items = [_item(vec, k) for k in range(length)]
        while len(items) > 1:
            combined, branches = [], []
            for i in range(0, len(items) - 1, 2):
                pair, c_pair = self._alloc(None, regions, e.region, BPair(items[i], items[i + 1]),
                                           2, span)
                value, c_body = self.eval(body, {**f_env, param: pair}, f_regions)
                combined.append(value)
                branches.append(self.costs.seq(c_pair, c_body, span))
            if len(items) % 2:
                combined.append(items[-1])
            saved, self.bookkeeping = self.bookkeeping, True
            try:
                level = self.costs.op(self.costs.par(branches, span), span, _MERGE_EDGE,
                                      self.costs.merge_weight)
            finally:
                self.bookkeeping = saved
            cost = self.costs.seq(cost, level, span)
            items = combined
        return items[0], cost


# -- helpers over batched values ------------------------------------------------------------------
def _from_heap(value: HeapValue) -> BHeap:
    """One heap value every thread reads."""
    if isinstance(value, IntV):
        return BNumber(False, value.value)
    if isinstance(value, FloatV):
        return BNumber(True, value.value)
    if isinstance(value, PairV):
        return BPair(_from_value(value.first), _from_value(value.second))
    if isinstance(value, VecV):
        return OutsideVec(value)
    return OutsideClosure(value)


def _from_value(value: Any) -> BValue:
    if isinstance(value, Loc):
        return BLoc(value.region, value.offset, False)
    return BBool(value)


_value_of, _first_of, _second_of = attrgetter("value"), attrgetter("first"), attrgetter("second")
_region_of, _offset_of = attrgetter("region"), attrgetter("offset")


def _gather(values: list) -> BHeap:
    """Heap values, one per thread, into one batched value (all of one kind)."""
    first = values[0]
    kinds = set(map(type, values))  # in C, as the attributes below are read (map, attrgetter)
    if type(None) in kinds:
        raise Unbatchable("a read of an unallocated word")
    if len(kinds) != 1:
        raise Unbatchable("threads read values of different kinds")
    kind = type(first)
    if kind is IntV:
        try:
            return BNumber(False, np.array(list(map(_value_of, values)), dtype=np.int64))
        except OverflowError:
            raise Unbatchable("an integer beyond 64 bits") from None
    if kind is FloatV:
        return BNumber(True, np.array(list(map(_value_of, values)), dtype=np.float64))
    if kind is PairV:
        return BPair(_gather_values(list(map(_first_of, values))),
                     _gather_values(list(map(_second_of, values))))
    if kind is VecV:
        if all(v is first for v in values):
            return OutsideVec(first)
        lengths = [len(v.items) for v in values]
        if lengths.count(lengths[0]) != len(lengths):
            raise Diverge(np.array(lengths, dtype=np.int64))  # split the threads by length
        return GatheredVecs(values)
    if all(v is first for v in values):
        return OutsideClosure(first)
    raise Unbatchable("threads call different closures")


def _gather_values(values: list) -> BValue:
    """Values (locations or booleans), one per thread, into one batched value."""
    first = values[0]
    if isinstance(first, Loc):
        # Types and regions read in C (map, set): at dot n = 10^5, 600 000 values a level.
        if (not all(issubclass(kind, Loc) for kind in set(map(type, values)))
                or len(set(map(_region_of, values))) != 1):
            raise Unbatchable("threads hold locations in different regions")
        return BLoc(first.region, np.array(list(map(_offset_of, values)), dtype=np.int64), False)
    if any(not isinstance(v, bool) for v in values):
        raise Unbatchable("threads hold values of different kinds")
    return BBool(np.array(values, dtype=bool))


def _length(vec: BHeap) -> int:
    if isinstance(vec, OutsideVec):
        return len(vec.vec.items)
    if isinstance(vec, BVec):
        return len(vec.items)
    if isinstance(vec, GatheredVecs):
        return len(vec.vecs[0].items)
    raise Unbatchable("a vector operation on a value that is not a vector")


def _item(vec: BHeap, k: int) -> BValue:
    if isinstance(vec, OutsideVec):
        return _from_value(vec.vec.items[k])
    if isinstance(vec, GatheredVecs):
        return _gather_values([v.items[k] for v in vec.vecs])
    assert isinstance(vec, BVec)
    return vec.items[k]


def _arithmetic(op: BinaryOperator, real: bool, x: Any, y: Any) -> Any:
    """x op y for every thread, as the explicit evaluator's `_binop` computes it: floats in IEEE
    double, integers exactly, with C's truncating division; a division by zero or an integer
    beyond 64 bits abandons the batch (the explicit evaluator reports it where it happens)."""
    if _uniform(x) and _uniform(y):
        return _scalar_arithmetic(op, real, x, y)
    if op is BinaryOperator.DIV:
        if np.any(np.asarray(y) == 0):
            raise Unbatchable("a division by zero")
        if real:
            return np.asarray(x, dtype=np.float64) / y
        xs, ys = np.asarray(x, dtype=np.int64), np.asarray(y, dtype=np.int64)
        if np.any(xs == -_INT_LIMIT) or np.any(ys == -_INT_LIMIT):
            raise Unbatchable("an integer division at the edge of 64 bits")
        quotient = np.abs(xs) // np.abs(ys)
        return np.where((xs >= 0) == (ys >= 0), quotient, -quotient)
    function = _ARITHMETIC[op]
    if real:
        return function(np.asarray(x, dtype=np.float64), y)
    xs, ys = np.asarray(x, dtype=np.int64), np.asarray(y, dtype=np.int64)
    if np.abs(xs.astype(np.float64)).max() >= _SAFE or np.abs(ys.astype(np.float64)).max() >= _SAFE:
        exact = [function(a, b) for a, b in zip(np.broadcast_to(xs, np.broadcast(xs, ys).shape)
                                                .tolist(),
                                                np.broadcast_to(ys, np.broadcast(xs, ys).shape)
                                                .tolist(), strict=True)]
        if any(not -_INT_LIMIT <= v < _INT_LIMIT for v in exact):
            raise Unbatchable("an integer overflow")
        return np.array(exact, dtype=np.int64)
    return function(xs, ys)


def _scalar_arithmetic(op: BinaryOperator, real: bool, x: Any, y: Any) -> Any:
    if op is BinaryOperator.DIV:
        if y == 0:
            raise Unbatchable("a division by zero")
        if real:
            return x / y
        result = abs(x) // abs(y)
        return result if (x >= 0) == (y >= 0) else -result
    result = _ARITHMETIC[op](x, y)
    if real:
        return float(result)
    if not -_INT_LIMIT <= result < _INT_LIMIT:
        raise Unbatchable("an integer overflow")
    return result


# -- committing ------------------------------------------------------------------------------------
def _column(x: Any, threads: int) -> list:
    """A per-thread quantity as a list of Python values, one per thread."""
    if _uniform(x):
        return [x] * threads
    return x.tolist()


class _Committer:
    """Turns one finished batch (one group of threads on one path) into what the explicit
    evaluator would have built for them: `base[ρ]` is each of the group's threads' first offset
    in region ρ."""

    def __init__(self, batch: Batch, base: dict[int, Any]):
        self.batch = batch
        self.threads = batch.threads
        self.base = base
        self.locs: dict[tuple[int, int], list] = {}
        self.offset_lists: dict[tuple[int, int], list[int]] = {}

    def offsets(self, location: BLoc) -> Any:
        """The absolute offsets of a location, per thread (or one for all)."""
        if not location.inside:
            return location.offset
        return self.base[location.region] + location.offset

    def offset_list(self, region: int, offset: int) -> list[int]:
        """The absolute offsets of the location (region, offset) inside the batch, one Python
        int per thread, made once: the heap's keys for the words allocated there and the
        offsets of the locations pointing at them are then the same int objects (at dot
        n = 10^5, 600 000 ints of 28 bytes made twice before; 2026-11-27)."""
        key = (region, offset)
        made = self.offset_lists.get(key)
        if made is None:
            made = self.offset_lists[key] = (self.base[region] + offset).tolist()
        return made

    def values(self, value: BValue) -> list:
        """A batched value as the explicit evaluator's values, one per thread."""
        if isinstance(value, BBool):
            return _column(value.value, self.threads)
        if value.inside and _uniform(value.offset):
            key = (value.region, value.offset)
            cached = self.locs.get(key)
            if cached is None:
                cached = self.locs[key] = list(map(_new_loc, repeat(value.region, self.threads),
                                                   self.offset_list(value.region, value.offset)))
            return cached
        offsets = self.offsets(value)
        if _uniform(offsets):
            return [Loc(value.region, offsets)] * self.threads
        return list(map(_new_loc, repeat(value.region, self.threads), offsets.tolist()))

    def heap_values(self, value: BHeap) -> list:
        if isinstance(value, BNumber):
            make = _new_float if value.real else _new_int
            if _uniform(value.value):
                return [make(value.value)] * self.threads
            return list(map(make, value.value.tolist()))
        if isinstance(value, BPair):
            return list(map(_new_pair, self.values(value.first), self.values(value.second)))
        if isinstance(value, BVec):
            columns = [self.values(item) for item in value.items]
            if not columns:
                return [VecV(())] * self.threads
            return list(map(_new_vec, zip(*columns, strict=True)))
        if isinstance(value, BClosure):
            per_thread = {name: (self.values(v) if isinstance(v, (BLoc, BBool)) else None)
                          for name, v in value.env.items()}
            make = RegionClosure if value.region_function else Closure
            closures = []
            for t in range(self.threads):
                env = {name: (column[t] if column is not None else value.env[name])
                       for name, column in per_thread.items()}
                closures.append(make(value.param, value.body, env, value.regions))
            return closures
        raise AssertionError(value)  # an OutsideVec is never allocated

    def access(self, location: BLoc, staged: dict[int, int], local: bool,
               paper: bool) -> tuple[Any, Any]:
        """A template memory edge's address and whether it is in local memory, per thread
        (each one Python value where all threads share it)."""
        offsets = self.offsets(location)
        addresses = (location.region << 32) + offsets
        limit = staged.get(location.region, 0)
        if not local:
            return addresses, False
        if paper:
            return addresses, True
        if _uniform(offsets):
            return addresses, bool(offsets < limit)
        return addresses, offsets < limit


class Diverge(Exception):
    """The threads of a batch do not take one path: `key` (an array over them) tells which
    path each takes (a branch's test, an iota's count), to evaluate each part as its own
    batch."""

    def __init__(self, key: Any):
        super().__init__("threads diverge")
        self.key = key


MAX_GROUPS = 64  # paths a level's threads may split into before it is left to the explicit rules
# Levels of fewer threads run thread by thread: numpy's cost per operation (about a microsecond)
# and a batch's commit outweigh what a few threads save (kmeans' inner levels of 4 threads, one
# per thread of a kernel that is not batched, ran 15% slower batched).
MIN_THREADS = 16
STRICT = False  # let an unexpected error in a batch through (tests), rather than fall back


@dataclass(slots=True)
class _Group:
    """The threads of a level that take one path (their indices, in order) and their batch."""

    ids: Any  # np.ndarray of thread indices
    batch: Batch
    value: BValue
    cost: Any


def run_batch(evaluator: Evaluator, world: World, param: str, body: Expr, env: dict,
              regions: dict, items: tuple | list, pair_region: str | None,
              span: Span) -> tuple[list, Any] | None:
    """Evaluate a parallel level's threads on `world` in batches, or return None (the explicit
    evaluator then runs them one by one; nothing has changed).

    The level is a parmap's (`items`, the vector's elements: thread t binds `param` to
    items[t]) or a reduction level's (`items`, the values it combines: thread t allocates the
    pair (items[2t], items[2t+1]) in `pair_region` and binds `param` to it). Threads that
    diverge (a branch they do not agree on, iotas of different counts) are split by path, each
    part one batch, as the symbolic evaluator splits its cases; a level that splits into more
    than MAX_GROUPS paths is left to the explicit rules. Returns the threads' values and their
    costs: on 𝔾 the threads' paths (a `TemplateThreads` where all take one path), on ℂ each
    thread's sub-graph of the evaluation's cost graph (a `Sub`, or None for ∅)."""
    reduction = pair_region is not None
    threads = len(items) // 2 if reduction else len(items)
    if threads < MIN_THREADS:
        return None
    if reduction:
        firsts, seconds = list(items[0:2 * threads:2]), list(items[1:2 * threads:2])
    groups: list[_Group] = []
    pending = [np.arange(threads, dtype=np.int64)]
    try:
        while pending:
            ids = pending.pop(0)
            batch = Batch(evaluator, len(ids), world)
            chosen = ids.tolist()
            try:
                if reduction:
                    pair, c_pair = batch._alloc(
                        None, regions, pair_region,
                        BPair(_gather_values([firsts[i] for i in chosen]),
                              _gather_values([seconds[i] for i in chosen])), 2, span)
                    value, c_body = batch.eval(body, {**env, param: pair}, regions)
                    cost = batch.costs.seq(c_pair, c_body, span)
                else:
                    argument = _gather_values([items[i] for i in chosen])
                    value, cost = batch.eval(body, {**env, param: argument}, regions)
            except Diverge as diverge:
                key = np.asarray(diverge.key)
                _, first = np.unique(key, return_index=True)
                for position in sorted(first.tolist()):  # the parts in their first thread's order
                    pending.append(ids[key == key[position]])
                if len(groups) + len(pending) > MAX_GROUPS:
                    return None
                continue
            groups.append(_Group(ids, batch, value, cost))
    except Unbatchable:
        return None
    except Exception:
        # Nothing is committed before the level has been evaluated: where batching itself
        # fails, the explicit rules, which it only speeds up, give the answer. Tests run STRICT.
        if STRICT:
            raise
        return None
    return _commit(evaluator, groups, threads)


def run_iota_batch(evaluator: Evaluator, world: World, count: int, regions: dict,
                   region: str | None, span: Span) -> tuple[list, Any] | None:
    """`iota count at ρ`'s threads as one batch (`run_batch`): thread i allocates i; each
    counts one evaluation step (`Evaluator._tick`)."""
    if count < MIN_THREADS:
        return None
    try:
        batch = Batch(evaluator, count, world)
        ids = np.arange(count, dtype=np.int64)
        value, cost = batch._alloc(None, regions, region, BNumber(False, ids.copy()), 1, span)
        batch.steps = 1
    except Unbatchable:
        return None
    return _commit(evaluator, [_Group(ids, batch, value, cost)], count)


def _commit(ev: Evaluator, groups: list[_Group], threads: int) -> tuple[list, Any] | None:
    """Make the batches the evaluation's, or return None (nothing changed) where the explicit
    evaluator must run the level thread by thread to report what it meets: the depth or step
    limit, the graph's size limit, a GPU region that may not grow (NoExpandWE).

    Thread t's words in region ρ start where thread t - 1's end (the explicit evaluator runs
    them one after another): at ρ's ap plus the words of the threads before it, each as many as
    its path allocates."""
    options = ev.options
    world = groups[0].batch.world
    gpu = world is World.GPU
    if max(g.batch.deepest for g in groups) > ev.max_depth:
        return None
    built = 0
    for g in groups:
        size = ((len(g.cost) if g.cost else 0) if gpu
                else g.batch.costs.graph.number_of_nodes())
        built += size * g.batch.threads
    steps = ev.steps + sum(g.batch.threads * g.batch.steps for g in groups)
    if steps > ev.max_steps:
        return None
    if ev.graph.number_of_nodes() + ev.paths.edges + built > options.max_graph:
        return None
    stack = groups[0].batch.stack
    regions_used = list(dict.fromkeys(rid for g in groups for rid in g.batch.next_offset))
    starts = {rid: stack[rid].ap for rid in regions_used}
    # Each thread's first offset in each region: the words of the threads before it.
    base: dict[int, Any] = {}
    total: dict[int, int] = {}
    for rid in regions_used:
        width = np.zeros(threads, dtype=np.int64)
        for g in groups:
            width[g.ids] = g.batch.next_offset.get(rid, 0)
        ends = np.cumsum(width)
        base[rid] = ends - width + starts[rid]
        total[rid] = int(ends[-1])
    committers = [_Committer(g.batch, {rid: base[rid][g.ids] for rid in regions_used})
                  for g in groups]
    growth: dict[int, int] = {}
    expansions: list[tuple[int, int, int]] = []  # on ℂ: (thread, its write edge, words)
    for rid in regions_used:
        region = stack[rid]
        end = region.ap + total[rid]
        if gpu:
            if end > region.size:
                if not options.grow_gpu_regions:
                    return None  # NoExpandWE: the explicit evaluator reports it where it happens
                growth[rid] = end - region.size
        else:
            growth[rid] = _cpu_growth(region.size, rid, groups, base[rid], ev.bsize, expansions)
    # The heap: each region's new words in the order the explicit evaluator allocates them
    # (thread after thread, each thread's words in order), which is the order of their offsets.
    for rid in regions_used:
        region = stack[rid]
        words = _heap_words(rid, groups, committers, threads)
        region.values.update(words)
        region.ap = starts[rid] + total[rid]
        if gpu and region.ap > region.size:
            region.size = region.ap
        elif not gpu:
            region.size += growth[rid]
    if gpu:
        for rid, words_grown in growth.items():
            ev.gpu_growth[rid] = ev.gpu_growth.get(rid, 0) + words_grown
        result: Any = _gpu_paths(ev, groups, committers, threads, starts)
        ev.paths.edges += built
    else:
        result = _copy_subgraphs(ev, groups, threads, expansions)
    # The checkpoints the explicit evaluator would have passed inside the level (each when the
    # step count first exceeds `check_at`, all within the limits checked above), so that the
    # next one falls where it would have.
    ev.steps = steps
    while ev.steps > ev.check_at:
        ev.check_at = min(ev.max_steps, ev.check_at + 1 + GRAPH_CHECK_EVERY)
    values: list = [None] * threads
    for g, committer in zip(groups, committers, strict=True):
        for i, v in zip(g.ids.tolist(), committer.values(g.value), strict=True):
            values[i] = v
    return values, result


def _by_thread(groups: list[_Group], rows: list[list], threads: int) -> list:
    """Each group's per-thread rows put back in thread order."""
    if len(groups) == 1:
        return rows[0]
    ordered: list = [None] * threads
    for g, group_rows in zip(groups, rows, strict=True):
        for i, row in zip(g.ids.tolist(), group_rows, strict=True):
            ordered[i] = row
    return ordered


def _heap_words(rid: int, groups: list[_Group], committers: list[_Committer],
                threads: int) -> Any:
    """The (offset, value) pairs the level allocates in region `rid`, in thread order."""
    rows: list[list[Any]] = []
    for g, committer in zip(groups, committers, strict=True):
        allocations = [a for a in g.batch.allocations if a.region == rid]
        if not allocations:
            rows.append([()] * g.batch.threads)
            continue
        keys = [committer.offset_list(rid, a.offset) for a in allocations]
        values = [committer.heap_values(a.value) for a in allocations]
        rows.append([tuple(zip(k, v, strict=True)) for k, v in
                     zip(zip(*keys, strict=True), zip(*values, strict=True), strict=True)]
                    if len(groups) > 1 else
                    [zip(chain.from_iterable(zip(*keys, strict=True)),
                         chain.from_iterable(zip(*values, strict=True)), strict=True)])
    if len(groups) == 1:
        return rows[0][0]
    return chain.from_iterable(_by_thread(groups, rows, threads))


def _cpu_growth(size: int, rid: int, groups: list[_Group], base: Any, bsize: int,
                expansions: list[tuple[int, int, int]]) -> int:
    """Where a CPU region grows as the level's threads allocate in it, thread after thread
    (`profiler.regions.allocate`: a write that does not fit grows the region by
    max(BSIZE, what is missing), ExpandW of Fig. 9): each growth is appended to `expansions`
    as (thread, its write edge, words); returns the words the region grew by."""
    ends_list, threads_list, edges_list = [], [], []
    for g in groups:
        allocations = [a for a in g.batch.allocations if a.region == rid]
        if not allocations:
            continue
        in_thread = np.array([a.offset + a.words for a in allocations], dtype=np.int64)
        edge = np.array([a.edge for a in allocations], dtype=np.int64)
        ends_list.append((base[g.ids][:, None] + in_thread[None, :]).ravel())
        threads_list.append(np.repeat(g.ids, len(allocations)))
        edges_list.append(np.tile(edge, len(g.ids)))
    ends = np.concatenate(ends_list)
    owners = np.concatenate(threads_list)
    edges = np.concatenate(edges_list)
    if len(groups) > 1:  # thread after thread; a thread's words in order
        order = np.argsort(ends, kind="stable")
        ends, owners, edges = ends[order], owners[order], edges[order]
    grown = 0
    position = int(np.searchsorted(ends, size, side="right"))
    while position < len(ends):
        words = max(bsize, int(ends[position]) - size)
        size += words
        grown += words
        expansions.append((int(owners[position]), int(edges[position]), words))
        position = int(np.searchsorted(ends, size, side="right"))
    return grown


def _copy_subgraphs(ev: Evaluator, groups: list[_Group], threads: int,
                    expansions: list[tuple[int, int, int]]) -> list:
    """Copy each thread's sub-graph (built in its group's scratch graph, nodes from 0) into the
    evaluation's cost graph, numbered as the explicit evaluator numbers them: thread t's nodes
    and edges after thread t - 1's. The writes that grow a region become ExpandW edges
    (`Evaluator._mem`). Returns each thread's `Sub` (or None for ∅)."""
    graph = ev.graph
    scratches = [g.batch.costs.graph for g in groups]
    for scratch in scratches:
        if scratch.node_extra or scratch.edge_extra:
            raise AssertionError("a batched thread's graph carries no extras")
    node_count = np.zeros(threads, dtype=np.int64)
    edge_count = np.zeros(threads, dtype=np.int64)
    for g, scratch in zip(groups, scratches, strict=True):
        node_count[g.ids] = scratch.number_of_nodes()
        edge_count[g.ids] = scratch.number_of_edges()
    node_base0, edge_base0 = graph.number_of_nodes(), graph.number_of_edges()
    node_base = np.cumsum(node_count) - node_count + node_base0
    edge_base = np.cumsum(edge_count) - edge_count
    total_edges = int(edge_count.sum())
    # The nodes' and the edges' records (`InternedRecords`) are copied for every thread in
    # bulk: one thread's codes translated into the graph's, repeated, or, where the groups
    # differ, chained in thread order. The growth writes are patched in place afterwards.
    which = np.zeros(threads, dtype=np.int64)
    for index, g in enumerate(groups):
        which[g.ids] = index
    order = which.tolist() if len(groups) > 1 else []
    for name in ("node_records", "edge_records"):
        table = getattr(graph, name)
        copies = [table.codes_of(getattr(scratch, name)) for scratch in scratches]
        if len(groups) == 1:
            table.codes.extend(copies[0] * threads)  # one typecode: nothing added in between
        else:
            table.codes.extend(chain.from_iterable(map(copies.__getitem__, order)))
    for end_name, local_name in (("edge_source", "edge_source"), ("edge_target", "edge_target")):
        ends = np.empty(total_edges, dtype=NUMBER_DTYPE)
        for g, scratch in zip(groups, scratches, strict=True):
            local = np.frombuffer(getattr(scratch, local_name), dtype=NUMBER_DTYPE)
            if not len(local):
                continue
            positions = (edge_base[g.ids][:, None] + np.arange(len(local))[None, :]).ravel()
            ends[positions] = (node_base[g.ids][:, None] + local[None, :]).ravel()
        getattr(graph, end_name).frombytes(ends.data.cast("B"))
    for thread, edge, words in expansions:
        index = edge_base0 + int(edge_base[thread]) + edge
        graph.edge_weight[index] = ev._growth(words)
        graph.edge_kind[index] = _EXPAND_EDGE
        graph.edge_extra[index] = {"expanded": words}
    if len(groups) == 1 and groups[0].cost is not None:
        graph.replicas.append((node_base0, scratches[0].number_of_nodes(), groups[0].cost.source,
                               threads, frozenset(thread for thread, _, _ in expansions)))
    subs: list = [None] * threads
    for g in groups:
        if g.cost is None:
            continue
        bases = node_base[g.ids]
        made = map(_new_sub, zip((bases + g.cost.source).tolist(),
                                 (bases + g.cost.sink).tolist(), strict=True))
        if len(groups) == 1:  # every thread, in order
            return list(made)
        for i, sub in zip(g.ids.tolist(), made, strict=True):
            subs[i] = sub
    return subs


def _gpu_paths(ev: Evaluator, groups: list[_Group], committers: list[_Committer], threads: int,
               starts: dict[int, int]) -> Any:
    """The threads' paths on 𝔾: one `TemplateThreads` where all take one path; else each
    group's template made into its threads' paths, in thread order."""
    templates = [_template_threads(ev, c, g.cost, starts, len(groups) == 1)
                 for g, c in zip(groups, committers, strict=True)]
    if len(groups) == 1:
        return templates[0]
    rows = [[[Phase([path], False)] for path in template] for template in templates]
    return _by_thread(groups, rows, threads)


def _template_threads(ev: Evaluator, committer: _Committer, cost: list | None,
                      starts: dict[int, int], affine: bool) -> TemplateThreads:
    """A group's paths on 𝔾: the template, with each memory edge's addresses over its threads.
    Where the group is the whole level (`affine`), thread t's words in region ρ start at
    ap + t·W, which the device box's layout and pricing use (`TemplateThreads.writes`)."""
    staged, paper = ev.stage_limit, ev.paper
    template_edges: list[PathEdge] = []
    kinds: list[AccessKind | None] = []
    addresses: list[Any] = []
    local: list[Any] = []
    writes: list[tuple[int, int, int, int]] = []
    inside: list[tuple[int, int, int] | None] = []
    widths = committer.batch.next_offset
    for j, (kind, weight, access, location, span, centres, words, bookkeeping) in enumerate(
            cost or ()):
        template_edges.append(PathEdge(kind, weight, None, span, centres, words, bookkeeping))
        kinds.append(access)
        if access is None:
            addresses.append(None)
            local.append(None)
            inside.append(None)
            continue
        first = (location.region << 32) + starts[location.region]
        inside.append((first, widths[location.region], location.offset)
                      if location.inside and affine else None)
        region = ev.gpu_stack[location.region]
        address, in_local = committer.access(location, staged, region.local, paper)
        addresses.append(int(address) if _uniform(address) else address)
        local.append(bool(in_local) if _uniform(in_local) else in_local)
        if access is _WRITE and affine:
            assert location.inside
            writes.append((j, first, widths[location.region], location.offset))
    return TemplateThreads(committer.threads, template_edges, kinds, addresses, local, writes,
                           inside)
