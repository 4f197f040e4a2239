"""Batched evaluation of a GPU kernel's threads (issue 20): the threads of one parallel level
evaluated together, over arrays, when they take the same control path.

The explicit evaluator (`graphs.semantics.explicit`) runs a kernel's threads one after another,
each through the judgement of Figs. 5, 6 and 9: at nbody's n = 512 that is 5 million evaluation
steps and 4 million path edges, about 4 µs a step. Threads of a `parmap` or of a reduction level
whose bodies are straight-line code (no data-dependent branch, every vector of one length in all
of them) build paths of one shape that differ only in their addresses, and heaps that differ only
in their values. This module evaluates such a body once for all threads: a value is a numpy array
over the threads (or one Python value where every thread has the same), a path is one template of
edges whose addresses are arrays, and what thread t allocates in region ρ goes where the explicit
evaluator puts it: thread t starts at ap + t·W, W the words one thread allocates in ρ (every
thread allocates the same, which is why the path must be one).

The result is exactly the explicit evaluator's, edge for edge and word for word: the same paths
(the same `PathEdge`s in the same order), the same heap (the same values at the same offsets,
inserted in the same order), the same step count and region growth. Nothing is committed until
the whole level has been evaluated; anything outside the supported forms, a branch whose test
differs between threads, and every error (an index out of bounds, a division by zero, an integer
overflow, a limit reached) abandons the batch (`Unbatchable`), and the explicit evaluator runs
the level thread by thread from the untouched state, so that its result, or its error with its
source location, is what it always was.

Supported in a thread's body: variables, integer, float and boolean literals, arithmetic and
comparisons, `let`, `if` with a test all threads agree on, `e1[e2]`, `fst`/`snd`, pairs, vector
literals, `length`, and nested `iota`, `parmap` and `reduce` (functions written in place) whose
sizes all threads agree on, and `profile`. Hetprof's calibrated rules only (under the paper's,
Fig. 6's per-branch tables make threads see different heaps).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from graphs.costgraph import EdgeKind, NodeKind, Sub
from graphs.devicebox import PathEdge, TemplateThreads
from graphs.semantics.options import GRAPH_CHECK_EVERY
from models.base import AccessKind, Space
from profiler.regions import (
    FloatV,
    HeapValue,
    IntV,
    Loc,
    PairV,
    VecV,
    slots_maker,
)
from profiler.syntax import (
    BinaryOperator,
    BinOp,
    BoolLit,
    Expr,
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


BHeap = BNumber | BPair | BVec | OutsideVec

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

_COMPARISONS = {BinaryOperator.LT: operator.lt, BinaryOperator.LE: operator.le,
                BinaryOperator.GT: operator.gt, BinaryOperator.GE: operator.ge,
                BinaryOperator.EQ: operator.eq, BinaryOperator.NE: operator.ne}
_ARITHMETIC = {BinaryOperator.ADD: operator.add, BinaryOperator.SUB: operator.sub,
               BinaryOperator.MUL: operator.mul}
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
        self.batch = batch
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
        self.batch = batch
        self.graph = CostGraph()
        self.read_weight, self.write_weight, self.op_weight = ev.cpu_read, ev.cpu_write, ev.cpu_op
        self.fork = ev.cpu_fork
        self.merge_weight = ev.cpu.merge(True)  # a form inside a parallel form's thread
        self.spaces = ev.cpu_space

    def read(self, before, location: BLoc, span: Span):
        return self.graph.step(before, self.read_weight, _READ_EDGE, _READ_NODE, span,
                               self.batch.centres)

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

    def _read(self, before: TCost, location: BValue, span: Span) -> tuple[BHeap, list]:
        if not isinstance(location, BLoc):
            raise Unbatchable("a read of a boolean")
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
                        raise Unbatchable("a branch the threads do not agree on")
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
            case Profile() if self.world is World.GPU or not e.name.startswith("__offload"):
                # (an offload's centre on ℂ is observed thread by thread: not batched)
                saved = self.centres
                self.centres = saved + (e.name,)
                try:
                    return self.eval(e.expr, env, regions)
                finally:
                    self.centres = saved
        raise Unbatchable(f"{type(e).__name__} is not batched")

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
        vec, c = self._read(c, vec_loc, span)
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
        raise Unbatchable("an index that differs between threads into the batch's own vector")

    def _iota(self, e: Iota, env: dict, regions: dict) -> tuple[BValue, TCost]:
        span = e.span
        count_loc, c = self.eval(e.count, env, regions)
        if not isinstance(count_loc, BLoc):
            raise Unbatchable("iota of a boolean")
        number = self._peek(count_loc)
        if not isinstance(number, BNumber) or number.real or not _uniform(number.value):
            raise Unbatchable("iota of counts that differ between threads")
        count = number.value
        if count < 0 or count > self.ev.options.max_steps:
            raise Unbatchable("iota of a negative or excessive count")
        items: list[BValue] = []
        writes: list[TCost] = []
        for i in range(count):
            self.steps += 1  # the explicit evaluator's _tick per element
            loc, w = self._alloc(None, regions, e.region, BNumber(False, i), 1, span)
            items.append(loc)
            writes.append(w)
        c_par = self.costs.par(writes, span)
        saved, self.bookkeeping = self.bookkeeping, True
        try:
            c = self.costs.read_into(c, count_loc, c_par, span)
            c = self.costs.op(c, span, _MERGE_EDGE, self.costs.merge_weight)
            return self._alloc(c, regions, e.region, BVec(items), max(1, count), span)
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
        items, threads = [], []
        for k in range(_length(vec)):
            v, c = self.eval(body, {**f_env, param: _item(vec, k)}, f_regions)
            items.append(v)
            threads.append(c)
        c_par = self.costs.par(threads, span)
        saved, self.bookkeeping = self.bookkeeping, True
        try:
            c = self.costs.read_into(c_v, vec_loc, c_par, span)
            c = self.costs.op(c, span, _MERGE_EDGE, self.costs.merge_weight)
            return self._alloc(c, regions, e.region, BVec(items), max(1, len(items)), span)
        finally:
            self.bookkeeping = saved

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
    raise Unbatchable("a read of a closure")


def _from_value(value: Any) -> BValue:
    if isinstance(value, Loc):
        return BLoc(value.region, value.offset, False)
    return BBool(value)


def _gather(values: list) -> BHeap:
    """Heap values, one per thread, into one batched value (all of one kind)."""
    first = values[0]
    if first is None or None in values:
        raise Unbatchable("a read of an unallocated word")
    kind = type(first)
    if any(type(v) is not kind for v in values):
        raise Unbatchable("threads read values of different kinds")
    if kind is IntV:
        try:
            return BNumber(False, np.array([v.value for v in values], dtype=np.int64))
        except OverflowError:
            raise Unbatchable("an integer beyond 64 bits") from None
    if kind is FloatV:
        return BNumber(True, np.array([v.value for v in values], dtype=np.float64))
    if kind is PairV:
        return BPair(_gather_values([v.first for v in values]),
                     _gather_values([v.second for v in values]))
    if kind is VecV and all(v is first for v in values):
        return OutsideVec(first)
    raise Unbatchable("threads read different vectors or closures")


def _gather_values(values: list) -> BValue:
    """Values (locations or booleans), one per thread, into one batched value."""
    first = values[0]
    if isinstance(first, Loc):
        region = first.region
        if any(not isinstance(v, Loc) or v.region != region for v in values):
            raise Unbatchable("threads hold locations in different regions")
        return BLoc(region, np.array([v.offset for v in values], dtype=np.int64), False)
    if any(not isinstance(v, bool) for v in values):
        raise Unbatchable("threads hold values of different kinds")
    return BBool(np.array(values, dtype=bool))


def _length(vec: BHeap) -> int:
    if isinstance(vec, OutsideVec):
        return len(vec.vec.items)
    if isinstance(vec, BVec):
        return len(vec.items)
    raise Unbatchable("a vector operation on a value that is not a vector")


def _item(vec: BHeap, k: int) -> BValue:
    if isinstance(vec, OutsideVec):
        return _from_value(vec.vec.items[k])
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
    """Turns a finished batch into what the explicit evaluator would have built."""

    def __init__(self, batch: Batch, starts: dict[int, int], widths: dict[int, int]):
        self.batch = batch
        self.threads = batch.threads
        self.starts = starts  # region -> ap when the level started
        self.widths = widths  # region -> words one thread allocates
        self.base = {rid: np.arange(self.threads, dtype=np.int64) * widths[rid] + starts[rid]
                     for rid in widths}
        self.locs: dict[tuple[int, int], list] = {}

    def offsets(self, location: BLoc) -> Any:
        """The absolute offsets of a location, per thread (or one for all)."""
        if not location.inside:
            return location.offset
        return self.base[location.region] + location.offset

    def values(self, value: BValue) -> list:
        """A batched value as the explicit evaluator's values, one per thread."""
        if isinstance(value, BBool):
            return _column(value.value, self.threads)
        if value.inside and _uniform(value.offset):
            key = (value.region, value.offset)
            cached = self.locs.get(key)
            if cached is None:
                cached = self.locs[key] = list(map(_new_loc, repeat(value.region, self.threads),
                                                   self.offsets(value).tolist()))
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


def run_batch(evaluator: Evaluator, world: World, param: str, body: Expr, env: dict,
              regions: dict, items: tuple | list, pair_region: str | None,
              span: Span) -> tuple[list, Any] | None:
    """Evaluate a parallel level's threads on `world` as one batch, or return None (the explicit
    evaluator then runs them one by one; nothing has changed).

    The level is a parmap's (`items`, the vector's elements: thread t binds `param` to
    items[t]) or a reduction level's (`items`, the values it combines: thread t allocates the
    pair (items[2t], items[2t+1]) in `pair_region` and binds `param` to it). Returns the
    threads' values and their costs: on 𝔾 a `TemplateThreads` (the threads' paths), on ℂ each
    thread's sub-graph of the evaluation's cost graph (a `Sub`, or None for ∅)."""
    reduction = pair_region is not None
    threads = len(items) // 2 if reduction else len(items)
    if threads < 2:
        return None
    try:
        batch = Batch(evaluator, threads, world)
        if reduction:
            firsts = _gather_values(list(items[0:2 * threads:2]))
            seconds = _gather_values(list(items[1:2 * threads:2]))
            pair, c_pair = batch._alloc(None, regions, pair_region, BPair(firsts, seconds), 2,
                                        span)
            value, c_body = batch.eval(body, {**env, param: pair}, regions)
            cost = batch.costs.seq(c_pair, c_body, span)
        else:
            argument = _gather_values(list(items))
            value, cost = batch.eval(body, {**env, param: argument}, regions)
        return _commit(evaluator, batch, value, cost)
    except Unbatchable:
        return None


def run_iota_batch(evaluator: Evaluator, world: World, count: int, regions: dict,
                   region: str | None, span: Span) -> tuple[list, Any] | None:
    """`iota count at ρ`'s threads as one batch (`run_batch`): thread i allocates i; each
    counts one evaluation step (`Evaluator._tick`)."""
    if count < 2:
        return None
    import numpy as np

    try:
        batch = Batch(evaluator, count, world)
        value, cost = batch._alloc(None, regions, region,
                                   BNumber(False, np.arange(count, dtype=np.int64)), 1, span)
        batch.steps = 1
        return _commit(evaluator, batch, value, cost)
    except Unbatchable:
        return None


def _commit(ev: Evaluator, batch: Batch, value: BValue, cost: Any) -> tuple[list, Any] | None:
    """Make the batch the evaluation's, or return None (nothing changed) where the explicit
    evaluator must run it thread by thread to report what it meets: the depth or step limit,
    the graph's size limit, a GPU region that may not grow (NoExpandWE)."""
    threads = batch.threads
    options = ev.options
    gpu = batch.world is World.GPU
    if batch.deepest > ev.max_depth:
        return None
    if gpu:
        built = len(cost) if cost else 0
    else:
        built = batch.costs.graph.number_of_nodes()
    steps = ev.steps + threads * batch.steps
    if steps > ev.max_steps:
        return None
    if ev.graph.number_of_nodes() + ev.paths.edges + threads * built > options.max_graph:
        return None
    stack = batch.stack
    widths = dict(batch.next_offset)
    starts = {rid: stack[rid].ap for rid in widths}
    by_region: dict[int, list[_Allocation]] = {}
    for allocation in batch.allocations:
        by_region.setdefault(allocation.region, []).append(allocation)
    growth: dict[int, int] = {}
    expansions: list[tuple[int, _Allocation, int]] = []  # on ℂ: (thread, allocation, words)
    for rid, width in widths.items():
        region = stack[rid]
        end = region.ap + threads * width
        if gpu:
            if end > region.size:
                if not options.grow_gpu_regions:
                    return None  # NoExpandWE: the explicit evaluator reports it where it happens
                growth[rid] = end - region.size
        else:
            growth[rid] = _cpu_growth(region.ap, region.size, width, threads, by_region[rid],
                                      ev.bsize, expansions)
    committer = _Committer(batch, starts, widths)
    # The heap: each region's new words in the order the explicit evaluator allocates them
    # (thread after thread, each thread's words in order), which is the order of their offsets.
    for rid, allocations in by_region.items():
        region = stack[rid]
        keys = [committer.offsets(BLoc(rid, a.offset, True)).tolist() for a in allocations]
        values = [committer.heap_values(a.value) for a in allocations]
        region.values.update(zip(chain.from_iterable(zip(*keys, strict=True)),
                                 chain.from_iterable(zip(*values, strict=True)), strict=True))
        region.ap = starts[rid] + threads * widths[rid]
        if gpu and region.ap > region.size:
            region.size = region.ap
        elif not gpu:
            region.size += growth[rid]
    if gpu:
        for rid, words in growth.items():
            ev.gpu_growth[rid] = ev.gpu_growth.get(rid, 0) + words
        result: Any = _template_threads(ev, committer, cost, starts, widths)
        ev.paths.edges += threads * built
    else:
        result = _copy_subgraphs(ev, batch, cost, expansions)
    # The checkpoints the explicit evaluator would have passed inside the level (each when the
    # step count first exceeds `check_at`, all within the limits checked above), so that the
    # next one falls where it would have.
    ev.steps = steps
    while ev.steps > ev.check_at:
        ev.check_at = min(ev.max_steps, ev.check_at + 1 + GRAPH_CHECK_EVERY)
    return committer.values(value), result


def _cpu_growth(ap: int, size: int, width: int, threads: int, allocations: list[_Allocation],
                bsize: int, expansions: list[tuple[int, _Allocation, int]]) -> int:
    """Where a CPU region grows as the batch's threads allocate in it, thread after thread
    (`profiler.regions.allocate`: a write that does not fit grows the region by
    max(BSIZE, what is missing), ExpandW of Fig. 9): each growth is appended to `expansions`
    as (thread, allocation, words); returns the words the region grew by."""
    import numpy as np

    ends_in_thread = np.array([a.offset + a.words for a in allocations], dtype=np.int64)
    ends = (ap + np.arange(threads, dtype=np.int64)[:, None] * width
            + ends_in_thread[None, :]).ravel()
    grown = 0
    position = int(np.searchsorted(ends, size, side="right"))
    while position < len(ends):
        thread, k = divmod(position, len(allocations))
        words = max(bsize, int(ends[position]) - size)
        size += words
        grown += words
        expansions.append((thread, allocations[k], words))
        position = int(np.searchsorted(ends, size, side="right"))
    return grown


def _copy_subgraphs(ev: Evaluator, batch: Batch, cost: Sub | None,
                    expansions: list[tuple[int, _Allocation, int]]) -> list:
    """Copy the thread's sub-graph (built in the scratch graph, nodes from 0) into the
    evaluation's cost graph once per thread, numbered as the explicit evaluator numbers them:
    thread t's K nodes and E edges after thread t - 1's. The writes that grow a region become
    ExpandW edges (`Evaluator._mem`). Returns each thread's `Sub` (or None for ∅)."""
    import numpy as np

    scratch = batch.costs.graph
    graph = ev.graph
    threads = batch.threads
    if scratch.node_extra or scratch.edge_extra:
        raise AssertionError("a batched thread's graph carries no extras")
    nodes, edges = scratch.number_of_nodes(), scratch.number_of_edges()
    node_base, edge_base = graph.number_of_nodes(), graph.number_of_edges()
    graph.node_kind.extend(scratch.node_kind * threads)
    graph.node_span.extend(scratch.node_span * threads)
    graph.node_centres.extend(scratch.node_centres * threads)
    graph.node_space.extend(scratch.node_space * threads)
    offsets = np.repeat(np.arange(threads, dtype=np.int64) * nodes + node_base, edges)
    for target, local in ((graph.edge_source, scratch.edge_source),
                          (graph.edge_target, scratch.edge_target)):
        ends = np.tile(np.frombuffer(local, dtype=np.int64), threads) + offsets
        target.frombytes(ends.astype(np.int64).tobytes())
    weights = scratch.edge_weight * threads
    kinds = scratch.edge_kind * threads
    for thread, allocation, words in expansions:
        index = thread * edges + allocation.edge
        weights[index] = ev._growth(words)
        kinds[index] = _EXPAND_EDGE
        graph.edge_extra[edge_base + index] = {"expanded": words}
    graph.edge_weight.extend(weights)
    graph.edge_kind.extend(kinds)
    graph.edge_span.extend(scratch.edge_span * threads)
    graph.edge_centres.extend(scratch.edge_centres * threads)
    if cost is None:
        return [None] * threads
    return [_new_sub((node_base + t * nodes + cost.source, node_base + t * nodes + cost.sink))
            for t in range(threads)]


def _template_threads(ev: Evaluator, committer: _Committer, cost: list | None,
                      starts: dict[int, int], widths: dict[int, int]) -> TemplateThreads:
    """The threads' paths on 𝔾: the template, with each memory edge's addresses over the
    threads."""
    staged, paper = ev.stage_limit, ev.paper
    template_edges: list[PathEdge] = []
    kinds: list[AccessKind | None] = []
    addresses: list[Any] = []
    local: list[Any] = []
    writes: list[tuple[int, int, int, int]] = []
    inside: list[tuple[int, int, int] | None] = []
    for j, (kind, weight, access, location, span, centres, words, bookkeeping) in enumerate(
            cost or ()):
        template_edges.append(PathEdge(kind, weight, None, span, centres, words, bookkeeping))
        kinds.append(access)
        if access is None:
            addresses.append(None)
            local.append(None)
            inside.append(None)
            continue
        inside.append(((location.region << 32) + starts[location.region],
                       widths[location.region], location.offset) if location.inside else None)
        region = ev.gpu_stack[location.region]
        address, in_local = committer.access(location, staged, region.local, paper)
        addresses.append(int(address) if _uniform(address) else address)
        local.append(bool(in_local) if _uniform(in_local) else in_local)
        if access is _WRITE:
            assert location.inside
            writes.append((j, (location.region << 32) + starts[location.region],
                           widths[location.region], location.offset))
    return TemplateThreads(committer.threads, template_edges, kinds, addresses, local, writes,
                           inside)
