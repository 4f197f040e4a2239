"""The inputs of a program's `on`, without the cost semantics: a values-only evaluation of the CPU
part of a program up to the entry of its top-level `on`, vectorised with numpy.

`hetprof validate` runs each `on` body on a real device, starting from the regions the explicit
evaluator (graphs/semantics/explicit.py) holds when it reaches the `on`. That evaluator builds a
cost-graph node per memory operation, about 200k a second, which is far too slow for the inputs
people run (vectors of 2^22 elements, matrices of 1024²). `offload_inputs` computes the same
`Offload` (the same environment, region names, region contents and allocation pointers) for the
programs whose CPU part is a chain of

    letregion ρ in  let x = [literals] at ρ in  let y = parmap (lambda t. body) (iota e) at ρ in ...

ending in `on e at ρ` (or, in validate's CPU placement, `profile "__offload0" e`), where every
parmap body is straight-line code over scalars: arithmetic, comparisons, `let`, `if`, pairs,
`length` and indexing into vectors built before the parmap. Each such body is evaluated once for
all its threads, every scalar a numpy array over the thread index, with λG's semantics (Figs. 3,
5 and 6 and hetprof's arithmetic): integers are 64-bit and truncate toward zero in division,
an overflow, a division by zero or an index out of bounds is the interpreter's EvaluationError.
Allocation is Fig. 3's bump allocation in the interpreter's order (the iota's integers, its
vector, then thread 0's words, thread 1's, ..., then the result vector), so every location is
the one the interpreter would give.

The regions come back as `RegionImage`s: numpy columns (offsets and contents) rather than one
Python object per word, which the OpenCL runner lays out and copies to the device directly
(models/opencl/runner.py); `RegionImage.to_region` builds the interpreter's `Region` for small
sizes and for tests. The `on`'s own value is not computed (`Offload.value` is None): the runner
reports it unchecked, and validate compares the GPU's value with the OpenCL CPU device's.

Anything else (functions as values, `fix`, nested parallelism in the CPU part, an `on` that is
not at the top of the program, the paper's rules) raises `NotVectorised` with the construct's
span and the reason; validate then falls back to the explicit evaluator.

Where two threads would fail differently, the interpreter reports the first thread's error and
this evaluation the error of the first failing construct in the body (of its first failing
thread): the same kinds of error, perhaps from another thread.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from graphs.semantics.explicit import OFFLOAD_CENTRE, Offload, OffloadCollector, evaluate
from graphs.semantics.options import EvaluationOptions
from profiler.checker import CheckedProgram, bind_parameters
from profiler.errors import EvaluationError, HetprofError
from profiler.regions import FloatV, HeapValue, IntV, Loc, PairV, Region, Value, VecV
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
    LetRegion,
    On,
    Pair,
    ParMap,
    Profile,
    Snd,
    Span,
    Var,
    VecLit,
    World,
    children,
)

INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class NotVectorised(HetprofError):
    """The program's CPU part is not one `offload_inputs` can evaluate without the interpreter."""

    kind = "not vectorised"


# ---------------------------------------------------------------------------------------------------
# Region images: a region's words as numpy columns


@dataclass(frozen=True, slots=True)
class Refs:
    """Locations (or unboxed booleans), one per element. Region -1 marks a boolean, its offset 0
    or 1. While a parmap runs, an offset -(o + 1) is o words into the allocations of the
    element's own thread (resolved when the parmap ends, when every thread's start is known)."""

    region: np.ndarray  # int64
    offset: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.offset)


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """Values of one kind at `offsets`: "int" and "float" (`data` = (values,)), "pair" (`data` =
    the first and second components' Refs), "vector" (one vector: `data` = its items' Refs)."""

    kind: str
    offsets: np.ndarray  # int64
    data: tuple


@dataclass(slots=True)
class RegionImage:
    """A CPU region R = (ap, s, refcnt, v) (Definition 4.1) whose values v are numpy columns."""

    name: int
    label: str
    ap: int = 0
    size: int = 0
    refcnt: int = 1
    blocks: list[ImageBlock] = field(default_factory=list)
    world: World = World.CPU
    bsize: int = 64  # BSIZE, by which a full region grows (ExpandW, Fig. 3)

    def copy(self) -> RegionImage:
        return RegionImage(self.name, self.label, self.ap, self.size, self.refcnt,
                           list(self.blocks), self.world, self.bsize)

    def _allocate(self, words: int) -> int:
        """Fig. 3's bump allocation of one value of `words` words; its offset."""
        offset = self.ap
        if words + offset > self.size:
            self.size += max(self.bsize, words + offset - self.size)
        self.ap = offset + words
        return offset

    def _grow_to(self, end: int) -> None:
        """ap = end after many allocations of at most BSIZE words each: every one that does not
        fit grows the region by BSIZE (ExpandW), so s ends at the first s + k·BSIZE >= end."""
        if end > self.size:
            self.size += -(-(end - self.size) // self.bsize) * self.bsize
        self.ap = end

    def scalars(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each block of ints or floats: its offsets and its words (a float's 64 bits as an
        int)."""
        return [(block.offsets, block.data[0].view(np.int64)) for block in self.blocks
                if block.kind in ("int", "float")]

    def pairs(self) -> list[ImageBlock]:
        return [b for b in self.blocks if b.kind == "pair"]

    def vectors(self) -> list[tuple[int, Refs]]:
        """Each vector's offset and items."""
        return [(int(b.offsets[0]), b.data[0]) for b in self.blocks if b.kind == "vector"]

    def digest(self) -> str:
        """A digest of the region's name, ap and contents (for `offload_key`)."""
        h = hashlib.sha256(repr((self.name, self.ap)).encode())
        for block in self.blocks:
            h.update(block.kind.encode())
            h.update(np.ascontiguousarray(block.offsets).tobytes())
            for part in block.data:
                arrays = (part.region, part.offset) if isinstance(part, Refs) else (part,)
                for array in arrays:
                    h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()

    def to_region(self) -> Region:
        """The interpreter's `Region`: one Python object per value (small sizes, tests)."""
        values: dict[int, HeapValue] = {}
        for block in self.blocks:
            offsets = block.offsets.tolist()
            match block.kind:
                case "int":
                    values.update(zip(offsets, map(IntV, block.data[0].tolist()), strict=True))
                case "float":
                    values.update(zip(offsets, map(FloatV, block.data[0].tolist()), strict=True))
                case "pair":
                    first, second = (_values_of(r) for r in block.data)
                    values.update((o, PairV(a, b))
                                  for o, a, b in zip(offsets, first, second, strict=True))
                case "vector":
                    values[offsets[0]] = VecV(tuple(_values_of(block.data[0])))
        return Region(self.name, self.label, self.ap, self.size, self.refcnt,
                      dict(sorted(values.items())), self.world)


def _values_of(refs: Refs) -> list[Value]:
    return [Loc(r, o) if r >= 0 else bool(o)
            for r, o in zip(refs.region.tolist(), refs.offset.tolist(), strict=True)]


def _new_image(rid: int, label: str, bsize: int) -> RegionImage:
    return RegionImage(rid, label, 0, bsize, 1, [], World.CPU, bsize)


# ---------------------------------------------------------------------------------------------------
# Values over threads: each array holds one element per thread of the running parmap


@dataclass(frozen=True, slots=True)
class _Scalar:
    refs: Refs
    value: np.ndarray  # int64 or float64
    floating: bool


@dataclass(frozen=True, slots=True)
class _Bools:
    value: np.ndarray  # bool


@dataclass(frozen=True, slots=True)
class _Pair:
    refs: Refs
    first: _Value
    second: _Value


@dataclass(frozen=True, slots=True)
class _Vector:
    """A vector built before the running parmap: one location, the same for every thread."""

    region: int
    offset: int
    items: _Value  # one element per item
    length: int


_Value = _Scalar | _Bools | _Pair | _Vector


@dataclass(frozen=True, slots=True)
class _Const:
    """A value bound outside the running parmap: one element, shared by every thread."""

    value: _Value


def _refs_of(v: _Value, m: int) -> Refs:
    match v:
        case _Scalar(refs) | _Pair(refs):
            return refs
        case _Bools(value):
            return Refs(_same_region(-1, m), value.astype(np.int64))
        case _Vector(region, offset):
            return Refs(_same_region(region, m), _same_region(offset, m))
    raise AssertionError(v)


def _same_region(rid: int, m: int) -> np.ndarray:
    """m copies of one number, as a read-only view of it (no memory per element)."""
    return np.broadcast_to(np.int64(rid), (m,))


def _take_refs(r: Refs, at: np.ndarray) -> Refs:
    return Refs(r.region[at], r.offset[at])


def _take(v: _Value, at: np.ndarray) -> _Value:
    """The elements `at` (positions, or a broadcast of one element to len(at))."""
    match v:
        case _Scalar(refs, value, floating):
            return _Scalar(_take_refs(refs, at), value[at], floating)
        case _Bools(value):
            return _Bools(value[at])
        case _Pair(refs, first, second):
            return _Pair(_take_refs(refs, at), _take(first, at), _take(second, at))
    return v  # a _Vector is one value for every thread


def _merge(span: Span, m: int, a: _Value, at_a: np.ndarray, b: _Value,
           at_b: np.ndarray) -> _Value:
    """The result of an `if`: a's elements at positions at_a, b's at at_b."""

    def scatter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        out = np.empty(m, np.result_type(x, y))
        out[at_a] = x
        out[at_b] = y
        return out

    def refs(x: Refs, y: Refs) -> Refs:
        return Refs(scatter(x.region, y.region), scatter(x.offset, y.offset))

    match a, b:
        case _Scalar(), _Scalar() if a.floating == b.floating:
            return _Scalar(refs(a.refs, b.refs), scatter(a.value, b.value), a.floating)
        case _Bools(), _Bools():
            return _Bools(scatter(a.value, b.value))
        case _Pair(), _Pair():
            return _Pair(refs(a.refs, b.refs), _merge(span, m, a.first, at_a, b.first, at_b),
                         _merge(span, m, a.second, at_a, b.second, at_b))
        case _Vector(), _Vector() if (a.region, a.offset) == (b.region, b.offset):
            return a
    raise NotVectorised("the branches of this `if` give values of different shapes (two "
                        "different vectors)", span)


# ---------------------------------------------------------------------------------------------------
# Threads: where each thread's allocations go


class _Threads:
    """The threads of one evaluation: the top level (one thread, allocating at the regions' ap)
    or a parmap's (each allocating from 0 in its own numbering, placed when the parmap ends)."""

    def __init__(self, count: int, images: dict[int, RegionImage] | None):
        self.count = count
        self.images = images  # the top level allocates straight into the images
        self.cursor: dict[int, np.ndarray] = {}  # region -> words each thread allocated there
        self.blocks: list[tuple[int, np.ndarray, ImageBlock]] = []  # region, threads, block

    def allocate(self, rid: int, threads: np.ndarray, words: int) -> np.ndarray:
        """The offsets of one `words`-word allocation by each of `threads`."""
        if self.images is not None:
            return np.full(len(threads), self.images[rid]._allocate(words), np.int64)
        cursor = self.cursor.get(rid)
        if cursor is None:
            cursor = self.cursor[rid] = np.zeros(self.count, np.int64)
        if len(threads) == self.count:  # every thread (`threads` is sorted and distinct)
            start = -(cursor + 1)
            cursor += words
            return start
        start = cursor[threads]
        cursor[threads] = start + words
        return -(start + 1)

    def record(self, rid: int, threads: np.ndarray, block: ImageBlock) -> None:
        if self.images is not None:
            self.images[rid].blocks.append(block)
        else:
            self.blocks.append((rid, threads, block))


def _resolve(refs: Refs, threads: np.ndarray, starts: dict[int, np.ndarray]) -> Refs:
    """Thread-relative offsets (negative) made absolute, given each thread's start per region."""
    relative = refs.offset < 0
    if not relative.any():
        return refs
    regions = refs.region[relative]
    if regions.min() == regions.max() and relative.all():  # the common case, done whole
        return Refs(refs.region, starts[int(regions[0])][threads] - refs.offset - 1)
    offset = refs.offset.copy()
    for rid in np.unique(regions).tolist():
        chosen = relative & (refs.region == rid)
        offset[chosen] = starts[rid][threads[chosen]] - offset[chosen] - 1
    return Refs(refs.region, offset)


def _resolve_value(v: _Value, threads: np.ndarray, starts: dict[int, np.ndarray]) -> _Value:
    match v:
        case _Scalar(refs, value, floating):
            return _Scalar(_resolve(refs, threads, starts), value, floating)
        case _Pair(refs, first, second):
            return _Pair(_resolve(refs, threads, starts), _resolve_value(first, threads, starts),
                         _resolve_value(second, threads, starts))
    return v


# ---------------------------------------------------------------------------------------------------
# The evaluation


def offload_inputs(checked: CheckedProgram, params: dict[str, int] | None = None,
                   options: EvaluationOptions = EvaluationOptions()) -> list[Offload]:
    """The `Offload` of the program's top-level `on` (or of its `profile "__offload…"` cost
    centre, validate's CPU placement) as the explicit evaluator's OffloadCollector records it,
    but with `RegionImage`s for inputs, no value (None), no heap after the work and no device box.
    A program with no such point gives []; one this evaluation cannot do raises NotVectorised."""
    if options.paper:
        raise NotVectorised("the paper's rules (ap moves by |v| + 1, branches see their own "
                            "tables) are left to the explicit evaluator")
    bsize = options.profile.region.bsize
    if bsize < 2:
        raise NotVectorised(f"BSIZE {bsize} is below a pair's two words")
    points = _offload_points(checked.body)
    if len(points) > 1:
        raise NotVectorised(f"the program has {len(points)} `on`s; only the first one's inputs "
                            "are known without running the first", points[1].span)
    if not points:
        return []
    return [_Prelude(bind_parameters(checked, params or {}), bsize).top(checked.body, {}, {})]


def estimate_room(checked: CheckedProgram, params_at: Callable[[int], dict[str, int]],
                  size: int, probes: tuple[int, int] = (8, 16),
                  options: EvaluationOptions = EvaluationOptions()) -> dict[int, int]:
    """The words the work of the program's offload allocates in each region at size `size`
    (region id -> words), which an offload of `offload_inputs` does not know (the device needs
    them as room before it runs: regions cannot grow on the GPU, Fig. 9, NoExpandWE).

    The explicit evaluator runs the program at the two small sizes `probes` (`params_at` gives
    the parameters of a size), and each region's growth across the offload, g(p), is extrapolated
    by the power law through both, g(size) = g(p2) · (size / p2)^k: k is 1 for a map (nn), 3
    for gemm's n² threads of n-step loops. Lower-order terms make it an estimate (up to 7% short
    on the suite), which the runner's margin (1.5 g + 4096 words) covers. A size no larger than
    the larger probe is evaluated."""
    if size <= probes[1]:
        return _growth(checked, params_at(size), options)
    low, high = (_growth(checked, params_at(p), options) for p in probes)
    room = {}
    for rid, g2 in high.items():
        g1 = low.get(rid, 0)
        k = math.log(g2 / g1) / math.log(probes[1] / probes[0]) if g1 > 0 and g2 > 0 else 0.0
        room[rid] = math.ceil(g2 * (size / probes[1]) ** max(k, 0.0))
    return room


def _growth(checked: CheckedProgram, params: dict[str, int],
            options: EvaluationOptions) -> dict[int, int]:
    collector = OffloadCollector()
    evaluate(checked, bind_parameters(checked, params), replace(options, observer=collector))
    growth: dict[int, int] = {}
    for offload in collector.offloads:
        if _is_offload(offload.node):
            for rid, region in offload.inputs.items():
                grown = offload.heap[rid].ap - region.ap
                growth[rid] = max(growth.get(rid, 0), grown)
    return growth


def _is_offload(e: Expr) -> bool:
    return isinstance(e, On) or (isinstance(e, Profile) and e.name.startswith(OFFLOAD_CENTRE))


def _offload_points(e: Expr) -> list[Expr]:
    found = []
    stack = [e]
    while stack:
        node = stack.pop()
        if _is_offload(node):
            found.append(node)
        else:
            stack.extend(reversed(children(node)))
    return found


_ARITHMETIC = {BinaryOperator.ADD: np.add, BinaryOperator.SUB: np.subtract,
               BinaryOperator.MUL: np.multiply}
_COMPARISONS = {BinaryOperator.LT: np.less, BinaryOperator.LE: np.less_equal,
                BinaryOperator.GT: np.greater, BinaryOperator.GE: np.greater_equal,
                BinaryOperator.EQ: np.equal, BinaryOperator.NE: np.not_equal}


class _Prelude:
    """One evaluation of a program's CPU part: its region images and where allocation is."""

    def __init__(self, params: dict[str, int], bsize: int):
        self.params = params
        self.bsize = bsize
        self.images: dict[int, RegionImage] = {}
        self.stack: list[int] = []  # the CPU region stack, innermost last
        self.next_region = 1
        self.top_threads = _Threads(1, self.images)

    # -- the top level: letregion, let, and the `on` -------------------------------------------------
    def top(self, e: Expr, env: dict, regions: dict) -> Offload:
        while True:
            if _is_offload(e):
                return self._offload(e, env, regions)
            match e:
                case LetRegion(name, body):
                    rid = self.next_region
                    self.next_region += 1
                    self.images[rid] = _new_image(rid, name, self.bsize)
                    self.stack.append(rid)
                    regions = {**regions, name: rid}
                    e = body
                case Let(name, bound, body) if not _offload_points(bound):
                    env = {**env, name: self.eval(bound, env, regions, self.top_threads,
                                                  np.zeros(1, np.int64))}
                    e = body
                case Let(_, bound, _) if _is_offload(bound):
                    return self._offload(bound, env, regions)
                case _:
                    raise NotVectorised("the `on` is not at the top of the program (inside "
                                        "this expression): its inputs need the interpreter",
                                        e.span)

    def _offload(self, e: Expr, env: dict, regions: dict) -> Offload:
        if isinstance(e, On):
            assert e.region is not None  # the checker writes every `on`'s region
            names = sorted(set(e.uses) | {e.region})
            rids = list(dict.fromkeys(regions[name] for name in names))
            body = e.body
        else:
            assert isinstance(e, Profile)
            rids = list(self.stack)
            body = e.expr
        inputs: dict[int, Region | RegionImage] = {rid: self.images[rid].copy() for rid in rids}
        return Offload(e, body, {name: _location(v) for name, v in env.items()}, dict(regions),
                       inputs, None, {}, None, None)

    # -- expressions, over the threads `threads` (positions into the running _Threads) ---------------
    def eval(self, e: Expr, env: dict, regions: dict, threads: _Threads,
             sel: np.ndarray) -> _Value:
        m = len(sel)
        match e:
            case Var(name):
                bound = env[name]
                if isinstance(bound, _Const):
                    return _take(bound.value, np.zeros(m, np.int64))
                return bound
            case IntLit(literal, region, span):
                number = self.params[literal] if isinstance(literal, str) else literal
                return self._scalar(np.full(m, number, np.int64), False, region, regions,
                                    threads, sel)
            case FloatLit(real, region, span):
                return self._scalar(np.full(m, real, np.float64), True, region, regions,
                                    threads, sel)
            case BoolLit(value):
                return _Bools(np.full(m, value, bool))
            case BinOp():
                return self._binop(e, env, regions, threads, sel)
            case Let(name, bound, body):
                bound_value = self.eval(bound, env, regions, threads, sel)
                return self.eval(body, {**env, name: bound_value}, regions, threads, sel)
            case If(cond, then, orelse, span):
                test = self.eval(cond, env, regions, threads, sel)
                assert isinstance(test, _Bools)
                if test.value.all():
                    return self.eval(then, env, regions, threads, sel)
                if not test.value.any():
                    return self.eval(orelse, env, regions, threads, sel)
                at_then, at_else = np.flatnonzero(test.value), np.flatnonzero(~test.value)
                a = self.eval(then, _subset(env, at_then), regions, threads, sel[at_then])
                b = self.eval(orelse, _subset(env, at_else), regions, threads, sel[at_else])
                return _merge(span, m, a, at_then, b, at_else)
            case Pair(first, second, region, span):
                a = self.eval(first, env, regions, threads, sel)
                b = self.eval(second, env, regions, threads, sel)
                rid = self._rid(region, regions)
                offsets = threads.allocate(rid, sel, 2)
                threads.record(rid, sel, ImageBlock("pair", offsets,
                                                    (_refs_of(a, m), _refs_of(b, m))))
                return _Pair(Refs(_same_region(rid, m), offsets), a, b)
            case Fst(inner) | Snd(inner):
                pair = self.eval(inner, env, regions, threads, sel)
                if not isinstance(pair, _Pair):
                    raise NotVectorised("a projection of a pair built before the parmap",
                                        e.span)
                return pair.first if isinstance(e, Fst) else pair.second
            case Index(vector, index, span):
                vec = self.eval(vector, env, regions, threads, sel)
                idx = self.eval(index, env, regions, threads, sel)
                if not isinstance(vec, _Vector):
                    raise NotVectorised("indexing a vector built inside the parmap", span)
                assert isinstance(idx, _Scalar) and not idx.floating
                length = vec.length
                bad = (idx.value < 0) | (idx.value >= length)
                if bad.any():
                    wrong = int(idx.value[np.argmax(bad)])
                    raise EvaluationError(f"index {wrong} is out of bounds for a vector of "
                                          f"{length} elements", span, "indexing")
                return _take(vec.items, idx.value)
            case Length(inner, region, span):
                vec = self.eval(inner, env, regions, threads, sel)
                if not isinstance(vec, _Vector):
                    raise NotVectorised("the length of a vector built inside the parmap", span)
                return self._scalar(np.full(m, vec.length, np.int64), False, region, regions,
                                    threads, sel)
            case VecLit(elements, region, span) if threads is self.top_threads:
                items = [self.eval(x, env, regions, threads, sel) for x in elements]
                return self._vector(items, region, regions, span)
            case Iota(count, region, span) if threads is self.top_threads:
                return self._iota(count, region, span, env, regions)
            case ParMap(func, vector, region, span) if threads is self.top_threads:
                return self._parmap(func, vector, region, span, env, regions)
            case VecLit() | Iota() | ParMap():
                raise NotVectorised("a vector built inside a parmap's threads", e.span)
        raise NotVectorised(f"`{type(e).__name__}` is not evaluated without the interpreter "
                            "(only arithmetic, let, if, pairs, length and indexing in a "
                            "parmap over a vector)", e.span)

    def _rid(self, region: str | None, regions: dict) -> int:
        assert region is not None  # the checker elaborates every allocation's region
        return regions[region]

    def _scalar(self, value: np.ndarray, floating: bool, region: str | None, regions: dict,
                threads: _Threads, sel: np.ndarray) -> _Scalar:
        rid = self._rid(region, regions)
        offsets = threads.allocate(rid, sel, 1)
        threads.record(rid, sel, ImageBlock("float" if floating else "int", offsets, (value,)))
        return _Scalar(Refs(_same_region(rid, len(sel)), offsets), value, floating)

    def _binop(self, e: BinOp, env: dict, regions: dict, threads: _Threads,
               sel: np.ndarray) -> _Value:
        a = self.eval(e.left, env, regions, threads, sel)
        b = self.eval(e.right, env, regions, threads, sel)
        assert isinstance(a, _Scalar) and isinstance(b, _Scalar)
        x, y, op, span = a.value, b.value, e.op, e.span
        comparison = _COMPARISONS.get(op)
        if comparison is not None:
            return _Bools(comparison(x, y))
        if op is BinaryOperator.DIV and (y == 0).any():
            raise EvaluationError("division by zero", span, "arithmetic")
        if a.floating:
            with np.errstate(all="ignore"):
                result = x / y if op is BinaryOperator.DIV else _ARITHMETIC[op](x, y)
        else:
            result = _integer(op, x, y, span)
        return self._scalar(result, a.floating, e.region, regions, threads, sel)

    def _vector(self, items: list[_Value], region: str | None, regions: dict,
                span: Span) -> _Vector:
        """A vector of one-element values, allocated at the top level."""
        rid = self._rid(region, regions)
        if items:
            joined = _concatenate(items, span)
            refs = _refs_of(joined, len(items))
        else:
            joined = _Scalar(Refs(np.zeros(0, np.int64), np.zeros(0, np.int64)),
                             np.zeros(0, np.int64), False)
            refs = joined.refs
        return self._place_vector(rid, joined, refs)

    def _place_vector(self, rid: int, items: _Value, refs: Refs) -> _Vector:
        offset = self.images[rid]._allocate(max(1, len(refs)))
        self.images[rid].blocks.append(ImageBlock("vector", np.array([offset], np.int64),
                                                  (refs,)))
        return _Vector(rid, offset, items, len(refs))

    def _iota(self, count: Expr, region: str | None, span: Span, env: dict,
              regions: dict) -> _Vector:
        number = self.eval(count, env, regions, self.top_threads, np.zeros(1, np.int64))
        assert isinstance(number, _Scalar)
        n = int(number.value[0])
        if n < 0:
            raise EvaluationError(f"iota of a negative count ({n})", span, "iota")
        rid = self._rid(region, regions)
        image = self.images[rid]
        start = image.ap
        image._grow_to(start + n)
        offsets = np.arange(start, start + n, dtype=np.int64)
        image.blocks.append(ImageBlock("int", offsets, (np.arange(n, dtype=np.int64),)))
        refs = Refs(_same_region(rid, n), offsets)
        return self._place_vector(rid, _Scalar(refs, np.arange(n, dtype=np.int64), False), refs)

    def _parmap(self, func: Expr, vector: Expr, region: str | None, span: Span, env: dict,
                regions: dict) -> _Vector:
        """parmap (lambda x. body) v at ρ (Fig. 6): the body once for all threads."""
        if not isinstance(func, Lambda):
            raise NotVectorised("a parmap of a function value (only a lambda written in place "
                                "is evaluated without the interpreter)", func.span)
        vec = self.eval(vector, env, regions, self.top_threads, np.zeros(1, np.int64))
        assert isinstance(vec, _Vector)
        n = vec.length
        threads = _Threads(n, None)
        sel = np.arange(n, dtype=np.int64)
        inner: dict[str, _Value | _Const] = {name: _Const(v) for name, v in env.items()}
        inner[func.param] = vec.items
        result = self.eval(func.body, inner, regions, threads, sel)
        # Every thread's words, in thread order after the words before the parmap (Fig. 3).
        starts: dict[int, np.ndarray] = {}
        for rid, words in threads.cursor.items():
            image = self.images[rid]
            ends = np.cumsum(words)
            starts[rid] = image.ap + ends - words
            image._grow_to(image.ap + (int(ends[-1]) if n else 0))
        for rid, who, block in threads.blocks:
            offsets = (starts[rid] if len(who) == n else starts[rid][who]) - block.offsets - 1
            data = tuple(_resolve(part, who, starts) if isinstance(part, Refs) else part
                         for part in block.data)
            self.images[rid].blocks.append(ImageBlock(block.kind, offsets, data))
        result = _resolve_value(result, sel, starts)
        return self._place_vector(self._rid(region, regions), result, _refs_of(result, n))


def _subset(env: dict, at: np.ndarray) -> dict:
    return {name: v if isinstance(v, _Const) else _take(v, at) for name, v in env.items()}


def _concatenate(items: list[_Value], span: Span) -> _Value:
    """One-element values as one value of len(items) elements (a vector literal's items)."""
    first = items[0]

    def refs(parts: list[Refs]) -> Refs:
        return Refs(np.concatenate([p.region for p in parts]),
                    np.concatenate([p.offset for p in parts]))

    if all(isinstance(v, _Scalar) and v.floating == getattr(first, "floating", None)
           for v in items):
        scalars = [v for v in items if isinstance(v, _Scalar)]
        return _Scalar(refs([v.refs for v in scalars]),
                       np.concatenate([v.value for v in scalars]), scalars[0].floating)
    if all(isinstance(v, _Bools) for v in items):
        return _Bools(np.concatenate([v.value for v in items if isinstance(v, _Bools)]))
    if all(isinstance(v, _Pair) for v in items):
        pairs = [v for v in items if isinstance(v, _Pair)]
        return _Pair(refs([p.refs for p in pairs]), _concatenate([p.first for p in pairs], span),
                     _concatenate([p.second for p in pairs], span))
    raise NotVectorised("a vector literal of vectors or of mixed values", span)


def _integer(op: BinaryOperator, x: np.ndarray, y: np.ndarray, span: Span) -> np.ndarray:
    """64-bit integer arithmetic as the interpreter does it: exact, division truncating toward
    zero (C's, as OpenCL computes it), an EvaluationError where a result does not fit."""
    if op is BinaryOperator.DIV:
        extreme = (x == INT_MIN) | (y == INT_MIN)
        q = np.abs(x) // np.where(extreme, 1, np.abs(y))
        result = np.where((x >= 0) == (y >= 0), q, -q)
        if extreme.any():  # |INT_MIN| does not fit: those few, with Python's integers
            for k in np.flatnonzero(extreme).tolist():
                a, b = int(x[k]), int(y[k])
                exact = abs(a) // abs(b) if (a >= 0) == (b >= 0) else -(abs(a) // abs(b))
                _fits(exact, span)
                result[k] = exact
        return result
    with np.errstate(all="ignore"):
        result = _ARITHMETIC[op](x, y)
    if op is BinaryOperator.ADD:
        overflow = ((x ^ result) & (y ^ result)) < 0
    elif op is BinaryOperator.SUB:
        overflow = ((x ^ y) & (x ^ result)) < 0
    else:  # a product is checked exactly where its magnitude may reach 2^63
        with np.errstate(all="ignore"):
            near = np.abs(x.astype(np.float64) * y.astype(np.float64)) >= 2.0**62
        overflow = np.zeros(len(result), bool)
        for k in np.flatnonzero(near).tolist():
            overflow[k] = not INT_MIN <= int(x[k]) * int(y[k]) <= INT_MAX
    if overflow.any():
        k = int(np.argmax(overflow))
        a, b = int(x[k]), int(y[k])
        _fits(a + b if op is BinaryOperator.ADD else a - b if op is BinaryOperator.SUB
              else a * b, span)
    return result


def _fits(value: int, span: Span) -> None:
    if not INT_MIN <= value <= INT_MAX:
        raise EvaluationError(f"integer overflow: {value} does not fit in 64 bits", span,
                              "arithmetic")


def _location(v: _Value) -> Value:
    """A one-element value as the environment holds it: a location, or a boolean."""
    match v:
        case _Vector(region, offset):
            return Loc(region, offset)
        case _Bools(value):
            return bool(value[0])
        case _Scalar(refs) | _Pair(refs):
            return Loc(int(refs.region[0]), int(refs.offset[0]))
    raise AssertionError(v)
