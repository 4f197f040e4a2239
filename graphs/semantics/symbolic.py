"""The cost semantics of λG with symbolic sizes: a compressed cost graph, built in O(program size).

`graphs.semantics.explicit` runs a program at one size and builds its cost graph node by node, O(n) for a
`parmap` over n elements. This module runs the same rules (Figs. 5, 6 and 9, with hetprof's
reconstructions, see the evaluator's docstring) with the size parameters as sympy symbols:

- A `parmap`, `iota` or `reduce` level over n elements whose threads have the same cost shape is
  evaluated once, for a symbolic thread index t, and held with multiplicity n. Its balanced tree of
  binary ⊗ (graphs.costgraph.CostGraph.par_all) is summed in closed form: n - 1 forks, 4(n - 1)
  unit edges, depth ⌈log2 n⌉.
- A CPU cost graph is summarised by `CostSummary`: work, span, node and edge counts, exactly as the
  explicit graph would count them, ∅ included (∅ is the unit of ⊕).
- Region heaps hold symbolic allocation pointers: thread t of a loop allocates at ap0 + t·w + k,
  which gives GPU addresses as affine functions of t (what bank conflicts and address groups need).
  Regions that fill up grow by BSIZE (Fig. 3, ExpandW); the number of growths of a loop is a ceiling.
- On the GPU the paths of a kernel are one thread template with its count (`SPhase`); the device
  box (graphs.symbolic_profile) prices one representative work group and the last one with the real GPU
  model, and sums rounds in closed form.

- A recursive function applied to a size (`f m`) or a range (`f (x, x + m)`) is evaluated once
  for a generic m, its recursive calls unknowns: each quantity becomes a recurrence, solved in
  closed form (`SymbolicEvaluator._recursion`).
- For times on P processors a CPU shape also keeps its top level: serial edges and parallel
  stretches (`Block`), which every schedule runs one after another.

Values are abstract: an integer is a sympy expression in the parameters and thread indices (or
unknown), a float is unknown, a vector is a length and an element template. A branch on a
condition that depends on the thread runs both sides; the program is regular there if both cost
the same (then the value is a Piecewise). Anything else raises `NotRegular` with the reason and the
place, and the caller falls back to the explicit evaluator (and says so).

Assumption (stated in the report): every size parameter is ≥ 1.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import sympy as sp

from graphs.costgraph import EdgeKind
from graphs.devicebox import concat_phases
from graphs.semantics.exact import Inexact, exact_function
from graphs.semantics.irregular import NotRegular
from models.base import AccessKind
from models.cpu import cpu_model, slot_read_weights
from models.device_profile import AllocationParameters, DeviceProfile, TransferParameters
from models.providers import LinearAllocation, LinearTransfer, providers_for
from profiler.checker import CheckedProgram
from profiler.syntax import (
    App,
    BinaryOperator,
    BinOp,
    BoolLit,
    Boxed,
    Expr,
    Fix,
    FloatLit,
    FloatS,
    Fst,
    FunS,
    If,
    Index,
    IntLit,
    IntS,
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

ZERO = sp.Integer(0)
ONE = sp.Integer(1)
FRESH = sp.Integer(1 << 60)  # graphs.devicebox.FRESH: device addresses of words a kernel allocates
LOCAL_ALL = sp.Integer(1 << 62)  # the paper's local memory: every word of a local region (§7.1.2)
MAX_RECURSION = 64
MAX_SIZES = 100_000  # the sizes a solved recursion (`_Recurrence`) may be evaluated at


@dataclass(frozen=True, slots=True)
class Assumption:
    """What the formulas assume of the sizes, besides each being at least 1: `size` (an
    expression in them, e.g. the length `n - 32` of a vector, or the size a recursion recurses
    on) is at least 1. `what` names it in messages; `span` is where the program uses it."""

    size: sp.Expr
    what: str
    span: Span | None

def clog2(x: sp.Expr) -> sp.Expr:
    """⌈log2 x⌉ for x ≥ 1, exact on integers: the depth of `par_all`'s balanced tree."""
    if isinstance(x, sp.Integer):
        return sp.Integer(int(x - 1).bit_length()) if x >= 1 else ZERO
    return sp.ceiling(sp.log(x, 2))


def flog2(x: sp.Expr) -> sp.Expr:
    """⌊log2 x⌋ for x ≥ 1, exact on integers."""
    if isinstance(x, sp.Integer):
        return sp.Integer(int(x).bit_length() - 1) if x >= 1 else ZERO
    return sp.floor(sp.log(x, 2))


def number(x) -> sp.Expr:
    """A cost parameter as a sympy number: an Integer when it is whole (abstract units), else a
    Float (calibrated seconds)."""
    x = float(x)
    return sp.Integer(int(x)) if x.is_integer() else sp.Float(x)


def size_symbol(name: str) -> sp.Symbol:
    """The sympy symbol of a size parameter: a positive integer."""
    return sp.Symbol(name, integer=True, positive=True)


# -- CPU cost graphs, summarised ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """A parallel stretch of a CPU cost graph between two cut vertices of its top level (§6.3).

    Every schedule runs such a stretch alone: the cut vertex before it is reached only when
    everything earlier is done, and nothing later is ready before the one after it. So the times
    of a graph's stretches add up, and a greedy schedule's time of one is bounded by its own work
    W, span S and width (the most edges no path orders, so the most tasks ever ready or running
    at once). With `level` set, the block stands for its copies level = 0 .. count - 1 in a row
    (a reduction's levels), each with its own W, S and width."""

    work: sp.Expr
    span: sp.Expr
    width: sp.Expr
    level: sp.Symbol | None = None
    count: sp.Expr = ONE

    def subs(self, mapping: dict) -> Block:
        inner = {k: v for k, v in mapping.items() if k != self.level}
        return Block(sp.sympify(self.work).subs(inner), sp.sympify(self.span).subs(inner),
                     sp.sympify(self.width).subs(inner), self.level,
                     sp.sympify(self.count).subs(mapping))

    def fields(self) -> tuple[sp.Expr, ...]:
        return (self.work, self.span, self.width, self.count)


@dataclass(frozen=True, slots=True)
class CostSummary:
    """A CPU cost graph as `graphs.costgraph.CostGraph` would build it, summarised: the sum of its
    edge weights (work), its longest path (span), and its node and edge counts. ∅ is `None`.

    For times on P processors it also keeps its top level: `serial`, the weight of the edges
    outside any parallel stretch (every schedule spends exactly that on them), the parallel
    stretches in between (`blocks`), and its `width` (see `Block`). work = serial + the blocks'
    work, span = serial + the blocks' spans."""

    work: sp.Expr
    span: sp.Expr
    nodes: sp.Expr
    edges: sp.Expr
    serial: sp.Expr
    blocks: tuple[Block, ...]
    width: sp.Expr

    def same(self, other: CostSummary) -> bool:
        if len(self.blocks) != len(other.blocks):
            return False
        pairs = list(zip(self.fields(), other.fields(), strict=True))
        for a, b in zip(self.blocks, other.blocks, strict=True):
            if (a.level is None) != (b.level is None):
                return False
            mapping = {b.level: a.level} if b.level is not None else {}
            pairs += zip(a.fields(), b.subs(mapping).fields(), strict=True)
        return all(sp.expand(a - b) == 0 for a, b in pairs)

    def fields(self) -> tuple[sp.Expr, ...]:
        return (self.work, self.span, self.nodes, self.edges, self.serial, self.width)

    def subs(self, mapping: dict) -> CostSummary:
        work, span, nodes, edges, serial, width = (sp.sympify(f).subs(mapping)
                                                   for f in self.fields())
        return CostSummary(work, span, nodes, edges, serial,
                     tuple(block.subs(mapping) for block in self.blocks), width)


POINT = CostSummary(ZERO, ZERO, ONE, ZERO, ZERO, (), ZERO)


def parallel(work, span, nodes, edges, width) -> CostSummary:
    """A graph that is one parallel stretch from its source to its sink (a ⊗)."""
    return CostSummary(work, span, nodes, edges, ZERO, (Block(work, span, width),), width)


def seq(first: CostSummary | None, second: CostSummary | None, weight) -> CostSummary | None:
    """first ⊕δ second (CostGraph.seq): one edge from first's sink to second's source."""
    if first is None:
        return second
    if second is None:
        return first
    return CostSummary(first.work + second.work + weight, first.span + second.span + weight,
                 first.nodes + second.nodes, first.edges + second.edges + 1,
                 first.serial + second.serial + weight, first.blocks + second.blocks,
                 sp.Max(first.width, second.width, 1))


def step(before: CostSummary | None, weight) -> CostSummary:
    """before ⊕δ [u] (CostGraph.step): with before = ∅ a start vertex is made."""
    before = before if before is not None else POINT
    return CostSummary(before.work + weight, before.span + weight, before.nodes + 1, before.edges + 1,
                 before.serial + weight, before.blocks, sp.Max(before.width, 1))


def into(before: CostSummary | None, target: CostSummary, weight) -> CostSummary:
    """before ⊕δ target with the edge ending at target's source (`_read_into`, `_op_into`)."""
    start = before if before is not None else POINT
    return CostSummary(start.work + weight + target.work, start.span + weight + target.span,
                 start.nodes + target.nodes, start.edges + target.edges + 1,
                 start.serial + weight + target.serial, start.blocks + target.blocks,
                 sp.Max(start.width, target.width, 1))


def par(left: CostSummary | None, right: CostSummary | None, weight) -> CostSummary:
    """left ⊗ right (CostGraph.par): fork and join vertices, four δ edges. An antichain of edges
    takes, on each side, either one fork or join edge or an antichain of that side."""
    left = left if left is not None else POINT
    right = right if right is not None else POINT
    return parallel(left.work + right.work + 4 * weight,
                    sp.Max(left.span, right.span) + 2 * weight,
                    left.nodes + right.nodes + 2, left.edges + right.edges + 4,
                    sp.Max(left.width, 1) + sp.Max(right.width, 1))


def par_many(branch: CostSummary | None, count: sp.Expr, weight) -> CostSummary | None:
    """⊗ of `count` branches of one shape (CostGraph.par_all's balanced tree): count - 1 binary
    ⊗, so 4(count - 1) δ edges, and ⌈log2 count⌉ levels on the longest path."""
    count = sp.sympify(count)
    if count == 0:
        return None
    if count == 1:
        return branch
    if branch is None:
        if not isinstance(count, sp.Integer):
            raise NotRegular("a parallel form over a symbolic number of threads that cost "
                             "nothing (∅ threads are kept only when there are two or more)")
        branch = POINT
    return parallel(count * branch.work + 4 * weight * (count - 1),
                    branch.span + 2 * weight * clog2(count),
                    count * branch.nodes + 2 * (count - 1), count * branch.edges + 4 * (count - 1),
                    count * sp.Max(branch.width, 1))


# -- GPU cost paths, as templates -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TAccess:
    """A memory request of a GPU path whose address is an expression (in the thread index, the
    loop indices and the sizes). `offset` is the word's place in its region (for local memory)."""

    kind: AccessKind
    region: int
    offset: sp.Expr
    address: sp.Expr
    local: bool  # in a region the running kernel staged in local memory
    limit: sp.Expr = ZERO  # how many of the region's words the kernel staged (offsets below)


@dataclass(frozen=True, slots=True)
class TEdge:
    """graphs.devicebox.PathEdge with symbolic address and words."""

    kind: EdgeKind
    weight: float
    access: TAccess | None = None
    words: sp.Expr = ZERO
    bookkeeping: bool = False


@dataclass(frozen=True, slots=True)
class TLoop:
    """A sequential loop inside a GPU path: a parmap inside a GPU thread runs its `count` threads
    one after another (graphs.devicebox.flatten), thread `var` = 0 .. count - 1."""

    count: sp.Expr
    var: sp.Symbol
    body: tuple
    reduce: ReduceOperands | None = None  # a reduction level: where its operands are


@dataclass(slots=True)
class SPhase:
    """graphs.devicebox.Phase as a template: a serial stretch (one path), or a kernel of `count`
    threads whose path is `path` with the thread index `var`. `writes` counts the path's write
    requests per thread (the lock-step layout of its allocations)."""

    parallel: bool
    path: list
    count: sp.Expr = ONE
    var: sp.Symbol | None = None
    fresh_base: sp.Expr = ZERO  # where this kernel's first allocation lands (devicebox.FRESH + ...)
    writes: sp.Expr = ZERO
    reduce: ReduceOperands | None = None  # a reduction level: where its operands are
    staged: sp.Expr = ZERO  # words the kernel first copies into local memory (devicebox.Phase)
    writeback: bool = False  # the paper's §7.1.2: l per work group after it (devicebox.Phase)


@dataclass(slots=True)
class SPhaseLoop:
    """A loop of phases: the levels of a `reduce` on the GPU, level `var` = 0 .. count - 1."""

    count: sp.Expr
    var: sp.Symbol
    phases: list
    reduce: ReduceOperands | None = None  # the levels of this reduction


@dataclass(frozen=True, slots=True)
class ReduceOperands:
    """Where the operands of a GPU reduction's level-`level` thread `local` are (the evaluator's
    `_reduce`): element j of level 0 is the input's (`element_address` in `index`); element j of
    level k + 1 is what thread j of level k returned (`result_address`), except an odd last
    element, carried from the level before. `count` and `base` stand for the level's thread count
    and lock-step base (a kernel per level at the top of an `on`; None inside a thread)."""

    n: sp.Expr
    level: sp.Symbol
    local: sp.Symbol
    index: sp.Symbol
    element_address: sp.Expr
    element_offset: sp.Expr
    result_address: sp.Expr
    result_offset: sp.Expr
    operands: tuple[sp.Symbol, sp.Symbol, sp.Symbol, sp.Symbol]  # addresses a, b; offsets a, b
    count: sp.Symbol | None = None
    base: sp.Symbol | None = None
    fresh: sp.Expr = ZERO  # the lock-step base of level 0
    writes: sp.Expr = ZERO  # allocations per thread
    width: int = 32


def _mentions_any(exprs: tuple, symbols: tuple) -> bool:
    """Whether any of `exprs` (sympy expressions or plain numbers) has one of `symbols` in it."""
    return any(isinstance(e, sp.Basic) and not e.free_symbols.isdisjoint(symbols) for e in exprs)


def _path_append(before: list | None, edge: TEdge) -> list:
    if not before:
        return [SPhase(False, [edge])]
    last = before[-1]
    if isinstance(last, SPhase) and not last.parallel:
        last.path.append(edge)
    else:
        before.append(SPhase(False, [edge]))
    return before


def _serial_path(phase: SPhase | SPhaseLoop) -> list | None:
    return phase.path if isinstance(phase, SPhase) and not phase.parallel else None


def _path_concat(first: list, second: list) -> list:
    return concat_phases(first, second, _serial_path)


def _path_flatten(sub: list | None) -> list:
    """A thread's whole path (graphs.devicebox.flatten): nested kernels become loops."""
    if not sub:
        return []
    path: list = []
    for phase in sub:
        if isinstance(phase, SPhaseLoop):
            path.append(TLoop(phase.count, phase.var, tuple(_path_flatten(phase.phases))))
        elif phase.parallel:
            if phase.count == 1 and phase.reduce is None:
                # one thread: its index is 0
                path.extend(_subs_path(phase.path, {phase.var: ZERO}) if phase.var is not None
                            else phase.path)
            else:
                path.append(TLoop(phase.count, phase.var, tuple(phase.path), phase.reduce))
        else:
            path.extend(phase.path)
    return path


# -- abstract values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SLoc:
    """A location (region, offset). `address` is its GPU address where a kernel of device box
    `box` allocated it (the lock-step layout), else None: (region << 32) + offset."""

    region: int
    offset: sp.Expr
    address: sp.Expr | None = None
    box: int | None = None


@dataclass(frozen=True, slots=True)
class SInt:
    value: sp.Expr | None  # None: not known (a reduction's result, a data-dependent value)


@dataclass(frozen=True, slots=True)
class SFloat:
    pass


@dataclass(frozen=True, slots=True)
class SPair:
    first: Any
    second: Any


@dataclass(frozen=True, slots=True)
class SVec:
    """A vector of `length` elements: element i is `template` with `var` := i, or `items[i]`."""

    length: sp.Expr
    var: sp.Symbol | None = None
    template: Any = None
    items: tuple | None = None

    def element(self, index: sp.Expr, span: Span):
        if self.items is not None:
            if isinstance(index, sp.Integer) and 0 <= int(index) < len(self.items):
                return self.items[int(index)]
            if all(item == self.items[0] for item in self.items) and self.items:
                return self.items[0]
            return _select(self.items, index, span)
        return substitute(self.template, {self.var: index})


@dataclass(frozen=True, slots=True)
class SClosure:
    param: str
    body: Expr
    env: dict = field(compare=False)
    regions: dict = field(compare=False)
    recursive: Fix | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class SRegionClosure:
    param: str
    body: Expr
    env: dict = field(compare=False)
    regions: dict = field(compare=False)


@dataclass(frozen=True, slots=True)
class SValue:
    """A boxed value: where it is and what it holds (λG's heap is immutable, so the content can
    travel with the location)."""

    loc: SLoc
    content: Any


@dataclass(frozen=True, slots=True)
class SBool:
    value: Any  # sympy true/false, a relational, or None


def substitute(value, mapping: dict):
    """A value (or template) with sympy substitutions applied everywhere inside it."""
    if not mapping:
        return value
    match value:
        case SValue(loc, content):
            return SValue(substitute(loc, mapping), substitute(content, mapping))
        case SLoc(region, offset, address, box):
            return SLoc(region, sp.sympify(offset).subs(mapping),
                        None if address is None else sp.sympify(address).subs(mapping), box)
        case SInt(v):
            return value if v is None else SInt(sp.sympify(v).subs(mapping))
        case SPair(a, b):
            return SPair(substitute(a, mapping), substitute(b, mapping))
        case SVec(length, var, template, items):
            inner = {k: v for k, v in mapping.items() if k != var}
            return SVec(sp.sympify(length).subs(mapping), var,
                        substitute(template, inner) if template is not None else None,
                        tuple(substitute(i, mapping) for i in items) if items is not None
                        else None)
        case SBool(v):
            return value if v is None or isinstance(v, bool) else SBool(v.subs(mapping))
    return value


def size_words(content) -> sp.Expr:
    """profiler.regions.size_of for abstract contents."""
    match content:
        case SInt() | SFloat():
            return ONE
        case SPair() | SClosure() | SRegionClosure():
            return sp.Integer(2)
        case SVec(length):
            return sp.Max(1, length)
    raise AssertionError(content)


# -- regions -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SRegion:
    """profiler.regions.Region with symbolic ap and size; `label` is the source name."""

    name: int
    label: str
    ap: sp.Expr
    world: World = World.CPU
    local: bool = False
    # What one thread of the loop being evaluated allocates here, in order: words, or
    # ("repeat", count, trace) for a loop inside the thread (RegionSizes replays it).
    trace: list = field(default_factory=list)
    # What decides the region's size s (Fig. 3: a full region grows by max(BSIZE, what is
    # missing)): the allocations in order, replayed at concrete sizes by `RegionSizes`.
    log: list = field(default_factory=list)


@dataclass(slots=True)
class BoxRecord:
    """What one `on` became: its GPU path template and the words it moved, for graphs.symbolic_profile."""

    span: Span
    index: int
    paths: list | None
    pushed: list[tuple[str, sp.Expr]]  # (region label, words pushed)
    returned: list[tuple[str, sp.Expr]]  # (region label, words the GPU added, copied back)
    growth: list[tuple[str, sp.Expr]]  # (region label, words grown before the push)
    parts: dict = field(default_factory=dict)  # grow, transfer_in, transfer_out, merge
    # Under the paper's rules, NoExpandWE (Fig. 9): (region label, words the GPU needed beyond
    # the region's size), an error wherever it is positive (graphs.symbolic_profile checks).
    overflow: list[tuple[str, sp.Expr]] = field(default_factory=list)


@dataclass(slots=True)
class SymbolicEvaluation:
    """The compressed cost graph of a program: its CPU shape (device boxes as symbols K_i),
    its device boxes, and the words each world allocated."""

    shape: CostSummary
    boxes: list[BoxRecord]
    box_symbols: list[sp.Symbol]
    space_cpu: sp.Expr  # the CPU peak under any schedule: see `SymbolicEvaluator._on`
    space_gpu: sp.Expr
    space_peak: sp.Expr
    regions: dict[str, sp.Expr]  # the outermost regions' final allocation pointers
    params: dict[str, sp.Symbol]
    fixed: dict[str, int]
    box_totals: list[sp.Expr]  # each box's edge weight, in terms of its kernel symbol
    sizes: RegionSizes  # the region-size quantities (symbols) the formulas use
    centres: dict[str, CostSummary]  # `profile "name" e` on the CPU: e's work and span
    assumptions: list[Assumption]  # beyond every size parameter being at least 1


class RegionSizes:
    """Region sizes s (Definition 4.1) as named quantities, resolved at concrete sizes by replaying
    the region's allocations: O(allocation sites), not O(n). `size_r_k` is s of region r after
    its first k logged allocations; `grows_r_k` is how many words the k-th one grew it by."""

    def __init__(self, bsize: int, gap: int = 0) -> None:
        self.bsize = bsize
        self.gap = gap  # ap moves by |v| + gap (profiler.regions.allocate); logs hold |v|
        # symbol -> (what, region, upto, the region's log when the symbol was made)
        self.quantities: dict[sp.Symbol, tuple[str, SRegion, int, list]] = {}
        self.derived: dict[sp.Symbol, sp.Expr] = {}  # quantities defined by the ones above

    def symbol(self, what: str, region: SRegion, upto: int) -> sp.Symbol:
        name = f"{what}_{region.label}_{upto}"
        symbol = sp.Symbol(name, integer=True, nonnegative=True)
        self.quantities[symbol] = (what, region, upto, list(region.log))
        return symbol

    def values(self, params: dict) -> dict[sp.Symbol, int | sp.Expr]:
        """Every quantity at concrete parameter values (a dict symbol -> number)."""
        values: dict[sp.Symbol, int | sp.Expr] = {symbol: self.value(symbol, params)
                                                   for symbol in self.quantities}
        both = {**params, **values}
        for symbol, expr in self.derived.items():
            expr = sp.sympify(expr)
            values[symbol] = expr.xreplace({s: both[s] for s in expr.free_symbols if s in both})
        return values

    def value(self, symbol: sp.Symbol, params: dict) -> int:
        what, region, upto, log = self.quantities[symbol]
        size = self.bsize
        grew = 0
        for event in log[:upto]:
            kind = event[0]
            grew = 0
            if kind == "alloc":
                ap, words = _int(event[1], params), _int(event[2], params)
                if ap + words > size:
                    grew = max(self.bsize, ap + words - size)
            elif kind == "fill":
                # Allocations of at most BSIZE words each, from ap = start to end (a solved
                # recursion): each that does not fit grows the region by BSIZE (Fig. 3).
                end = _int(event[2], params) - self.gap  # the last allocation's last word
                grew = -(-max(0, end - size) // self.bsize) * self.bsize
            elif kind == "loop":
                start, end = _int(event[1], params), _int(event[2], params)
                count, trace = event[3]
                slack = self._replay(trace, _int(count, params), size - start, params, event[4])
                grew = end + slack - size
            else:
                grew = max(0, _int(event[1], params) - size)
            size += grew
        return grew if what == "grows" else size

    def _replay(self, trace: list, times: int, slack: int, params: dict, span) -> int:
        """The free words of a region (s - ap) after `times` threads allocating `trace` each
        (Fig. 3: a full region grows by max(BSIZE, what is missing)). The free words after a
        thread depend only on those before it, so the threads' effect is periodic: once a value
        repeats, whole periods are skipped (O(BSIZE) threads at most, not O(n))."""
        if times <= 0:
            return slack
        return self._replay_words(self._trace_at(trace, params), times, slack)

    def _trace_at(self, trace: list, params: dict) -> list:
        """A thread's allocations (`_replay`'s trace) at concrete sizes: words as ints, an inner
        loop as (None, count, its trace), each evaluated once rather than at every thread
        replayed (an inner loop that runs no thread is not evaluated, as before)."""
        out: list = []
        for entry in trace:
            if isinstance(entry, tuple):
                count = _int(entry[1], params)
                out.append((None, count, self._trace_at(entry[2], params) if count > 0 else []))
            else:
                out.append(_int(entry, params))
        return out

    def _replay_words(self, trace: list, times: int, slack: int) -> int:
        """`_replay` on a trace at concrete sizes (`_trace_at`)."""
        seen: dict[int, int] = {}
        i = 0
        while i < times:
            if slack in seen:
                period = i - seen[slack]
                i += (times - i) // period * period
                seen = {}
                if i >= times:
                    break
            seen[slack] = i
            for entry in trace:
                if isinstance(entry, tuple):
                    slack = self._replay_words(entry[2], entry[1], slack)
                    continue
                words = entry
                if words > slack:
                    slack += max(self.bsize, words - slack)
                slack -= words + self.gap
            i += 1
        return slack


def _int(expr, params: dict) -> int:
    # In exact arithmetic where it applies (graphs.semantics.exact: a region's sizes are replayed
    # at every size a break-even search asks); else xreplace, not subs: the same number for
    # symbols given numbers, without subs' rewriting.
    expr = sp.sympify(expr)
    exact = exact_function(expr)
    if exact is not None:
        try:
            return int(exact(params))
        except (Inexact, KeyError, ZeroDivisionError):
            pass
    value = expr.xreplace({s: params[s] for s in expr.free_symbols if s in params})
    return int(value)


# What `SymbolicEvaluator._loop` counts per thread: a region's allocation pointer, by (world,
# region id), and in a loop inside a kernel's thread the thread's allocations, "writes".
_LoopCounter = tuple[World, int] | str


class SymbolicEvaluator:
    """One symbolic evaluation. `params` maps each size parameter to a sympy symbol (symbolic)
    or an int (fixed)."""

    def __init__(self, checked: CheckedProgram, params: dict[str, Any], profile: DeviceProfile,
                 gpu_mode: str | None = None, paper: bool = False):
        self.checked = checked
        # The paper's rules (graphs.semantics.options), as the explicit evaluator's `paper`.
        self.paper = paper
        self.gap = 1 if paper else 0
        self.later_branch = 0  # evaluating the second side of a `||` (paper's rules: `_on`)
        self.params = {k: sp.sympify(v) for k, v in params.items()}
        self.profile = profile
        self.cpu_scale, self.gpu_scale = profile.unit_scales()
        cpu = cpu_model(profile)  # the PRAM, or by operation class (models/cpu.py)
        self.cpu = cpu
        self.serial_scale = cpu.serial_scale()
        self.fork_w = number(cpu.fork())
        # slot reads priced by their access pattern (the explicit evaluator's `slot_reads`)
        self.slot_reads = {
            span: weight if isinstance(weight, sp.Basic) and not weight.is_number
            else number(weight)
            for span, weight in slot_read_weights(checked.program, cpu, self.params).items()}
        self.threads = 0  # CPU parallel forms whose threads we are inside (`_merge_weight`)
        self._cpu_weights()
        self.gpu_op = float(profile.gpu.op)
        self.providers = providers_for(profile)
        self.bsize = profile.region.bsize
        self.stacks: dict[World, dict[int, SRegion]] = {World.CPU: {}, World.GPU: {}}
        self.all_regions: dict[int, SRegion] = {}
        self.outermost: dict[int, SRegion] = {}
        self.next_region = 1
        self.loops = 0  # CPU or GPU loops we are inside (a parmap's thread template)
        self.gpu_loops = 0  # GPU loops: 0 at the top of an `on` body
        self.local_share: int = 0  # each local region's share of local memory in this `on`
        self.stage_limit: dict[int, sp.Expr] = {}  # what the running kernel staged (evaluator's)
        self.bookkeeping = False
        self.box: int | None = None
        self.fresh: sp.Expr = FRESH  # the next lock-step address of the current device box
        self.boxes: list[BoxRecord] = []
        self.box_symbols: list[sp.Symbol] = []
        self.box_totals: list[sp.Expr] = []
        self.space_cpu: sp.Expr = ZERO
        self.space_peak_cpu: sp.Expr = ZERO
        self.space_peak_gpu: sp.Expr = ZERO
        self.space_peak: sp.Expr = ZERO
        self.recursion = 0
        self.solving: _Recursion | None = None  # the recursive function `_recursion` solves
        self.unsolved: dict[Fix, NotRegular] = {}  # recursive functions it could not solve
        self.counter = 0
        self.sizes = RegionSizes(self.bsize, self.gap)
        self.centres: dict[str, CostSummary] = {}  # cost centres on the CPU: what their code cost
        self.assumptions: list[Assumption] = []
        # The kernel whose thread template is being evaluated (see _gpu_thread).
        self.thread_var: sp.Symbol | None = None
        self.thread_count: sp.Expr = ONE
        self.thread_base: sp.Expr = FRESH
        # The allocations a kernel's thread made so far: an int, or an expression in a loop's
        # index inside the thread (`_loop`); and the last kernel's, per thread.
        self.gpu_writes: int | sp.Expr = 0
        self.last_writes: int | sp.Expr = 0

    # -- entry ----------------------------------------------------------------------------------------
    def run(self) -> SymbolicEvaluation:
        _, shape = self.eval(self.checked.body, {}, {}, World.CPU, outermost=True)
        self._peak()
        shape = shape if shape is not None else POINT
        symbols = {k: v for k, v in self.params.items() if isinstance(v, sp.Symbol)}
        fixed = {k: int(v) for k, v in self.params.items() if not isinstance(v, sp.Symbol)}
        return SymbolicEvaluation(shape, self.boxes, self.box_symbols, self.space_peak_cpu,
                                  self.space_peak_gpu, self.space_peak,
                                  {r.label: r.ap for r in self.outermost.values()}, symbols, fixed,
                                  self.box_totals, self.sizes, self.centres, self.assumptions)

    def _assume_at_least_one(self, size, what: str, span: Span) -> None:
        """Record that the formulas hold only where `size`, an expression in the size
        parameters, is at least 1 (a count of threads, a recursion's size: ⌈log2 m⌉ and the
        fitted closed forms hold from 1 on); where the parameters' own positivity implies it,
        nothing. Expressions in a thread's index or a recursion's generic size are skipped: the
        enclosing count or size decides them."""
        size = sp.sympify(size)
        parameters = {v for v in self.params.values() if isinstance(v, sp.Symbol)}
        if (not size.free_symbols or not size.free_symbols <= parameters
                or (size - 1).is_nonnegative):
            return
        if not any(a.size == size and a.span == span for a in self.assumptions):
            self.assumptions.append(Assumption(size, what, span))

    def fresh_symbol(self, prefix: str) -> sp.Symbol:
        self.counter += 1
        return sp.Symbol(f"{prefix}{self.counter}", integer=True, nonnegative=True)

    # -- building blocks ------------------------------------------------------------------------------
    def _region(self, regions: dict, name: str, world: World, span: Span) -> SRegion:
        region = self.stacks[world].get(regions[name])
        if region is None:
            raise NotRegular(f"region {name} is not on the {world} region stack", span)
        return region

    def _mem(self, before, world: World, kind: AccessKind, loc: SLoc, region: SRegion,
             words: sp.Expr = ZERO, expanded: sp.Expr | None = None):
        """before ⊕δ [u] for one memory operation (evaluator._mem)."""
        if world is World.CPU:
            if kind is AccessKind.READ:
                return step(before, self.read_w)
            if expanded is not None:
                # `expanded` is the words this allocation grew its region by (0: none).
                alloc = self._allocation()
                # The provider is in seconds in a calibrated profile, as the explicit
                # evaluator charges it: not scaled by the CPU's unit (in serial code by
                # `_scale`, as a write is).
                scale = self._scale()
                grow = (number(alloc.latency * scale)
                        + number(alloc.per_word * scale) * expanded)
                return step(before, sp.Piecewise((self.write_w, sp.Eq(expanded, 0)),
                                                 (grow, True)))
            return step(before, self.write_w)
        if loc.address is not None and loc.box == self.box:
            address = loc.address
        else:
            address = sp.Integer(loc.region << 32) + loc.offset
        limit = ((LOCAL_ALL if self.paper else self.stage_limit.get(region.name, ZERO))
                 if region.local else ZERO)
        edge = TEdge(EdgeKind.READ if kind is AccessKind.READ else EdgeKind.WRITE, 0.0,
                     TAccess(kind, loc.region, loc.offset, address, limit != ZERO, limit), words,
                     self.bookkeeping)
        return _path_append(before, edge)

    def _seq(self, world: World, first, second):
        """first ⊕ second (graphs.semantics.explicit's `_seq`, without its `span`: a symbolic cost
        summary records no source locations per edge)."""
        if world is World.CPU:
            return seq(first, second, self.op_w)
        if first is None:
            return second
        if second is None:
            return first
        return _path_concat(_path_append(first, TEdge(EdgeKind.SEQ, self.gpu_op)), second)

    def _seq_all(self, world: World, parts: list):
        result = None
        for part in parts:
            result = self._seq(world, result, part)
        return result

    def _op(self, world: World, before, kind: EdgeKind = EdgeKind.OP, weight=None):
        if world is World.CPU:
            return step(before, self.op_w if weight is None else weight)
        w = self.gpu_op if weight is None else float(weight)
        return _path_append(before, TEdge(kind, w, None, ZERO, self.bookkeeping))

    def _point(self, world: World):
        return POINT if world is World.CPU else [SPhase(False, [])]

    def _alloc(self, before, world: World, regions: dict, name: str | None, content,
               span: Span):
        assert name is not None  # the checker's elaboration writes every allocation's region
        region = self._region(regions, name, world, span)
        size = size_words(content)
        words = size + self.gap  # how far ap moves (Fig. 3's |v| + 1 under the paper's rules)
        offset = region.ap
        loc = SLoc(region.name, offset)
        expanded = None
        if world is World.CPU:
            if self.loops:
                region.trace.append(size)
            else:
                region.log.append(("alloc", region.ap, size))
                if self._grow_cost() != self.write_w:
                    expanded = self.sizes.symbol("grows", region, len(region.log))
            self.space_cpu = self.space_cpu + words
        elif self.gpu_loops:
            # graphs.devicebox._lockstep_layout: this kernel's k-th allocations of all threads
            # lie side by side from the kernel's fresh base.
            loc = SLoc(region.name, offset, None, self.box)
        region.ap = region.ap + words
        value = SValue(loc, content)
        if world is World.GPU and self.gpu_loops:
            value = SValue(replace(loc, address=self._lockstep_address()), content)
            self.gpu_writes += 1
        cost = self._mem(before, world, AccessKind.WRITE, value.loc, region, words, expanded)
        return value, cost

    def _lockstep_address(self) -> sp.Expr:
        """The address the `writes`-th allocation of thread `thread_var` gets in this kernel:
        fresh_base + writes·⌈T/w⌉·w + t (graphs.devicebox._lockstep_layout)."""
        width = self.profile.gpu.warp_width
        stride = width * sp.ceiling(self.thread_count / width)
        return self.thread_base + self.gpu_writes * stride + self.thread_var

    def _peak(self) -> None:
        """Sample the running CPU space (regions only grow between pushes and pops, so the
        peaks are the instants before a pop and at the end)."""
        self.space_peak_cpu = _max(self.space_peak_cpu, self.space_cpu)
        self.space_peak = _max(self.space_peak, self.space_cpu)

    def _read(self, before, world: World, value: SValue, span: Span, weight=None):
        """A read (evaluator._read); on ℂ at `weight` where given (a slot read priced by its
        access pattern)."""
        region = self.stacks[world].get(value.loc.region)
        if region is None:
            raise NotRegular("a read of a location whose region is not on the region stack",
                             span)
        if weight is not None:
            return step(before, weight)
        return self._mem(before, world, AccessKind.READ, value.loc, region)

    def _read_into(self, world: World, before, value: SValue, target, span: Span):
        if target is None:
            return self._read(before, world, value, span)
        if world is World.CPU:
            return into(before, target, self.read_w)
        return _path_concat(self._read(before, world, value, span), target)

    def _op_into(self, world: World, before, after):
        if after is None:
            return self._op(world, before)
        if world is World.GPU:
            return _path_concat(self._op(world, before), after)
        return into(before, after, self.op_w)

    # -- the judgement ------------------------------------------------------------------------------
    def eval(self, e: Expr, env: dict, regions: dict, world: World, outermost: bool = False):
        match e:
            case IntLit(value, region, span):
                number = self.params[value] if isinstance(value, str) else sp.Integer(value)
                return self._alloc(None, world, regions, region, SInt(number), span)
            case FloatLit(_, region, span):
                return self._alloc(None, world, regions, region, SFloat(), span)
            case BoolLit(value, _):
                return SBool(sp.true if value else sp.false), self._point(world)
            case Var(name, _):
                return env[name], None
            case BinOp(op, left, right, region, span):
                return self._binop(op, left, right, region, span, env, regions, world)
            case If(cond, then, orelse, span):
                return self._if(cond, then, orelse, span, env, regions, world)
            case Lambda(param, _, _, body, region, span):
                return self._alloc(None, world, regions, region,
                                   SClosure(param, body, env, regions), span)
            case App(func, arg, span):
                f, c1 = self.eval(func, env, regions, world)
                closure = f.content
                a, c2 = self.eval(arg, env, regions, world)
                if self.solving is not None and closure is self.solving.closure:
                    value, c3 = self._recursive_call(self.solving, a, span)
                else:
                    value, c3 = self._apply(closure, a, world, span)
                c = self._read_into(world, c1, f, c2, span)
                return value, self._seq(world, c, c3)
            case Pair(first, second, region, span):
                v1, c1 = self.eval(first, env, regions, world)
                v2, c2 = self.eval(second, env, regions, world)
                return self._alloc(self._seq(world, c1, c2), world, regions, region,
                                   SPair(v1, v2), span)
            case Fst(inner, span) | Snd(inner, span):
                v, c1 = self.eval(inner, env, regions, world)
                c = self._read(c1, world, v, span)
                pair = v.content
                return (pair.first if isinstance(e, Fst) else pair.second), c
            case LetRegion(name, body, span):
                return self._letregion(name, body, span, env, regions, world, outermost)
            case Fix(name, _, body, span):
                # u of `fix f: τ. u` is a lambda or a region lambda, its region elaborated
                assert isinstance(body, (Lambda, RegionLambda)) and body.region is not None
                home = self._region(regions, body.region, world, span)
                fix_cost = None
                if self.paper:  # Fig. 5's own closure clos(f, u, E[f ↦ (r, o)]) first
                    fix_env = {**env, name: SValue(SLoc(home.name, home.ap), None)}
                    _, fix_cost = self._alloc(None, world, regions, body.region,
                                              SClosure(name, body, fix_env, regions), span)
                placeholder = SValue(SLoc(home.name, home.ap), None)
                rec_env = {**env, name: placeholder}
                content: SClosure | SRegionClosure
                if isinstance(body, Lambda):
                    content = SClosure(body.param, body.body, rec_env, regions, recursive=e)
                else:
                    content = SRegionClosure(body.param, body.body, rec_env, regions)
                value, cost = self._alloc(fix_cost, world, regions, body.region, content, span)
                rec_env[name] = value  # the closure refers to itself
                return value, cost
            case Par(left, right, region, span):
                v1, c1 = self.eval(left, env, regions, world)
                self.later_branch += self.paper
                try:
                    v2, c2 = self.eval(right, env, regions, world)
                finally:
                    self.later_branch -= self.paper
                if world is World.CPU:
                    c = par(c1, c2, self.fork_w)
                    c = step(c, self._merge_weight(world, True))
                else:
                    raise NotRegular("`||` on the GPU", span)
                return self._alloc(c, world, regions, region, SPair(v1, v2), span)
            case VecLit(elements, region, span):
                items, costs = [], []
                for element in elements:
                    v, c = self.eval(element, env, regions, world)
                    items.append(v)
                    costs.append(c)
                c = self._seq_all(world, costs)
                return self._alloc(c, world, regions, region,
                                   SVec(sp.Integer(len(items)), items=tuple(items)), span)
            case ParMap(func, vector, region, span):
                return self._parmap(func, vector, region, span, env, regions, world)
            case On():
                return self._on(e, env, regions, world)
            case RegionLambda(param, _, _, body, region, span):
                return self._alloc(None, world, regions, region,
                                   SRegionClosure(param, body, env, regions), span)
            case RegionApp(inner, region, span):
                v, c1 = self.eval(inner, env, regions, world)
                c1 = self._read(c1, world, v, span)
                closure = v.content
                inner_regions = {**closure.regions, closure.param: regions[region]}
                value, c2 = self.eval(closure.body, closure.env, inner_regions, world)
                return value, self._seq(world, c1, c2)
            case Let(name, bound, body, _):
                v1, c1 = self.eval(bound, env, regions, world)
                v2, c2 = self.eval(body, {**env, name: v1}, regions, world, outermost)
                return v2, self._seq(world, c1, c2)
            case Index(vector, index, span):
                vec, c1 = self.eval(vector, env, regions, world)
                idx, c2 = self.eval(index, env, regions, world)
                c = self._read(self._seq(world, c1, c2), world, idx, span)
                c = self._read(c, world, vec, span,
                               self.slot_reads.get(span) if world is World.CPU else None)
                position = idx.content.value
                if position is None:
                    raise NotRegular("an index computed from the data", span)
                return vec.content.element(position, span), c
            case Length(inner, region, span):
                v, c1 = self.eval(inner, env, regions, world)
                c = self._read(c1, world, v, span)
                return self._alloc(c, world, regions, region, SInt(v.content.length), span)
            case Iota(count, region, span):
                return self._iota(count, region, span, env, regions, world)
            case Reduce(func, zero, vector, region, span):
                return self._reduce(func, zero, vector, region, span, env, regions, world)
            case Profile(name, inner, _):
                value, cost = self.eval(inner, env, regions, world)
                if world is World.CPU and not self.loops and cost is not None:
                    previous = self.centres.get(name)
                    # Two stretches of code apart: only their work and span are read.
                    self.centres[name] = cost if previous is None else parallel(
                        previous.work + cost.work, sp.Max(previous.span, cost.span),
                        previous.nodes + cost.nodes, previous.edges + cost.edges,
                        previous.width + cost.width)
                return value, cost
        raise AssertionError(f"unknown node {e!r}")

    def _binop(self, op: BinaryOperator, left: Expr, right: Expr, region: str | None,
               span: Span, env: dict, regions: dict, world: World):
        a, c1 = self.eval(left, env, regions, world)
        b, c2 = self.eval(right, env, regions, world)
        c = self._read(self._seq(world, c1, c2), world, a, span)
        c = self._read(c, world, b, span)
        is_int = isinstance(a.content, SInt)
        x = a.content.value if is_int else None
        y = b.content.value if isinstance(b.content, SInt) else None
        known = x is not None and y is not None
        comparisons = {
            BinaryOperator.LT: sp.Lt, BinaryOperator.LE: sp.Le, BinaryOperator.GT: sp.Gt,
            BinaryOperator.GE: sp.Ge, BinaryOperator.EQ: sp.Eq, BinaryOperator.NE: sp.Ne,
        }
        if op in comparisons:
            return SBool(comparisons[op](x, y) if known else None), c
        result = None
        if x is not None and y is not None:
            match op:
                case BinaryOperator.ADD:
                    result = x + y
                case BinaryOperator.SUB:
                    result = x - y
                case BinaryOperator.MUL:
                    result = x * y
                case BinaryOperator.DIV:
                    if y == 0:
                        raise NotRegular("division by zero", span)
                    if x.is_nonnegative and y.is_positive:
                        result = sp.floor(x / y)
        content = SInt(result) if is_int else SFloat()
        return self._alloc(c, world, regions, region, content, span)

    def _if(self, cond: Expr, then: Expr, orelse: Expr, span: Span, env: dict, regions: dict,
            world: World):
        test, c1 = self.eval(cond, env, regions, world)
        decided = test.value if test.value is not None else None
        if decided is not None and decided in (sp.true, sp.false):
            value, c2 = self.eval(then if decided == sp.true else orelse, env, regions, world)
            return value, self._op_into(world, c1, c2)
        # A branch that depends on the data or the thread: both sides must cost the same.
        state = self._save()
        v_then, c_then = self.eval(then, env, regions, world)
        after_then = self._save()
        self._restore(state)
        v_else, c_else = self.eval(orelse, env, regions, world)
        if self.solving is not None and self.solving.decides(decided):
            value, cost = self._cases(decided, (v_then, c_then, after_then),
                                      (v_else, c_else, self._save()), span)
            return value, self._op_into(world, c1, cost)
        if not _same_cost(c_then, c_else) or not _same_regions(after_then, self._save()):
            raise NotRegular("a branch whose two sides cost differently, taken by some threads "
                             "and not others (data-dependent control flow)", span)
        value = _join_values(v_then, v_else, decided)
        return value, self._op_into(world, c1, c_then)

    # -- recursion on a size ---------------------------------------------------------------------------
    def _apply(self, closure: SClosure, arg: SValue, world: World, span: Span):
        """A function applied (Fig. 5, rule for application): its body evaluated. A recursive
        function applied to a size (`_recursion`) is solved once for every size; one applied to
        constants is unfolded, up to MAX_RECURSION calls deep."""
        if (closure.recursive is not None and self.solving is None and world is World.CPU
                and not self.loops and closure.recursive not in self.unsolved
                and _size_leaves(arg, self.params)):
            state = self._save()
            try:
                return self._recursion(closure, arg, span)
            except NotRegular as why:
                self._restore(state)
                self.unsolved[closure.recursive] = why
        if closure.recursive is not None:
            self.recursion += 1
            if self.recursion > MAX_RECURSION:
                raise self._unsolved(closure, span)
        try:
            return self.eval(closure.body, {**closure.env, closure.param: arg}, closure.regions,
                             world)
        except RecursionError:
            # Unfolding a recursion on a size nests its expressions as deep as it goes.
            raise self._unsolved(closure, span) from None
        finally:
            if closure.recursive is not None:
                self.recursion -= 1

    def _unsolved(self, closure: SClosure, span: Span) -> NotRegular:
        why = self.unsolved.get(closure.recursive) if closure.recursive is not None else None
        return NotRegular("a recursive function whose depth depends on the input sizes"
                          + (f" ({why.message})" if why is not None else ""), span)

    def _recursion(self, closure: SClosure, arg: SValue, span: Span):
        """A recursive function on the CPU applied to a size: `f m`, or `f (x, x + m)` on a range.

        Its body is evaluated once for a generic m (and x), with each recursive call `f μ` an
        unknown cost Q_f(μ) for every quantity Q (work, span, nodes, edges, width, words
        allocated per region, space), and the branch on m taken both ways (`_cases`): each Q
        becomes a recurrence Q(m) = body(m, Q(μ1), Q(μ2), ...). The recurrences are evaluated
        exactly, memoised (`_Recurrence`: O(log m) sizes for halving calls), and each is solved
        as a·m + b + c·⌈log2 m⌉ + d·⌊log2 m⌋, the closed forms of divide and conquer with a
        constant cost per call (W(m) = A + W(⌊m/2⌋) + W(⌈m/2⌉) gives (A + W(1))·m - A; a span A
        + max of the halves gives S(1) + A·⌈log2 m⌉; one call on ⌊m/2⌋, A·⌊log2 m⌋ + W(1)),
        fitted on m = 1..4 and checked against the exact recurrence on m = 1..512 and at sizes
        up to 2^31. Costs that depend on x, or that no such form fits, are not regular."""
        leaves = _int_leaves(arg.content)
        m = sp.Symbol("m", integer=True, positive=True)
        x = sp.Symbol("x", integer=True, nonnegative=True)
        if len(leaves) == 1:
            generic, measure = [m], leaves[0]
        elif len(leaves) == 2 and None not in leaves:
            generic, measure = [x, x + m], sp.expand(leaves[1] - leaves[0])
        else:
            raise NotRegular("a recursive function on more than a size or a range", span)
        fix = closure.recursive
        assert fix is not None  # `_apply` solves recursive functions only
        fix_type = fix.fix_type
        result = None
        if isinstance(fix_type, Boxed):
            assert isinstance(fix_type.shape, FunS)  # the type of `fix f: τ. λx. e` (Fig. 5)
            result = fix_type.shape.result
        if not (isinstance(result, Boxed) and isinstance(result.shape, IntS | FloatS)):
            raise NotRegular("a recursive function on a size that returns more than a number",
                             span)
        cpu = dict(self.stacks[World.CPU])
        names = {rid: f"words_{region.label}" for rid, region in cpu.items()}
        frame = _Recursion(closure, len(leaves), m, closure.regions[result.region],
                           SInt(None) if isinstance(result.shape, IntS) else SFloat(), names)
        starts = {rid: region.ap for rid, region in cpu.items()}
        space_start = self.space_cpu
        bases = {rid: self.fresh_symbol("a") for rid in cpu}
        for rid, region in cpu.items():
            region.ap, region.trace = bases[rid], []
        self.space_cpu = self.fresh_symbol("s")
        space_base = self.space_cpu
        self.solving, self.loops = frame, self.loops + 1
        try:
            _, body = self.eval(closure.body,
                                {**closure.env, closure.param: _with_leaves(arg, generic)},
                                closure.regions, World.CPU)
            quantities = _quantities(body if body is not None else POINT)
            quantities["space"] = sp.piecewise_fold(self.space_cpu - space_base)
            for rid, region in cpu.items():
                quantities[names[rid]] = sp.piecewise_fold(region.ap - bases[rid])
                for words in region.trace:
                    if not (isinstance(words, sp.Integer) and words <= self.bsize):
                        raise NotRegular("a recursion that allocates more than BSIZE words at "
                                         "once, or in a loop", span)
        finally:
            self.solving, self.loops = None, self.loops - 1
        grows = any(sp.expand(q) != 0 for k, q in quantities.items() if k in names.values())
        if grows and self._grow_cost() != self.write_w:
            raise NotRegular("a recursion that may grow a region, under a profile where growing "
                             "costs differ from a write", span)
        recurrence = _Recurrence(frame, quantities, span)
        solved = {name: recurrence.closed_form(name).subs(m, measure) for name in quantities}
        for rid, region in cpu.items():
            region.ap = starts[rid] + solved[names[rid]]
            region.trace = []
            if sp.expand(solved[names[rid]]) != 0:
                region.log.append(("fill", starts[rid], region.ap))
        self.space_cpu = space_start + solved["space"]
        self._assume_at_least_one(measure, f"the size of the {'range ' if len(leaves) == 2 else ''}"
                                  f"the recursive function {fix.name} recurses on", span)
        return self._call_result(frame), _stretch(solved)

    def _recursive_call(self, frame: _Recursion, arg: SValue, span: Span):
        """`f μ` inside the body `_recursion` solves: each quantity's unknown at μ."""
        leaves = _int_leaves(arg.content)
        if len(leaves) != frame.arity or None in leaves:
            raise NotRegular("a recursive call whose size is not known", span)
        measure = leaves[0] if frame.arity == 1 else sp.expand(leaves[1] - leaves[0])
        q = {name: function(measure) for name, function in frame.unknowns.items()}
        for rid, name in frame.words.items():
            region = self.stacks[World.CPU].get(rid)
            if region is not None:
                region.ap = region.ap + q[name]
        self.space_cpu = self.space_cpu + q["space"]
        return self._call_result(frame), _stretch(q)

    def _call_result(self, frame: _Recursion) -> SValue:
        """What a call of the recursion returns: a number somewhere in its result region."""
        return SValue(SLoc(frame.result_region, self.fresh_symbol("o")), frame.result_content)

    def _cases(self, condition, then: tuple, orelse: tuple, span: Span):
        """Both sides of a branch on the size of a recursion being solved, as one: each
        quantity a Piecewise on the condition (the recurrence's base case and its step)."""
        (v_then, c_then, after_then), (v_else, c_else, after_else) = then, orelse

        def pick(a, b):
            return sp.Piecewise((a, condition), (b, True))

        for world, saved in after_then["regions"].items():
            for rid, (ap, trace, _) in saved.items():
                region = self.stacks[world].get(rid)
                other = after_else["regions"][world].get(rid)
                if region is not None and other is not None:
                    region.ap = pick(ap, other[0])
                    region.trace = trace + other[1]
        self.space_cpu = pick(after_then["space"][0], after_else["space"][0])
        a = _quantities(c_then if c_then is not None else POINT)
        b = _quantities(c_else if c_else is not None else POINT)
        cost = _stretch({name: pick(a[name], b[name]) for name in SHAPE_QUANTITIES})
        if not (isinstance(v_then, SValue) and isinstance(v_else, SValue)
                and v_then.loc.region == v_else.loc.region):
            raise NotRegular("a branch of a recursion whose sides return values of different "
                             "kinds or regions", span)
        place = SLoc(v_then.loc.region, pick(v_then.loc.offset, v_else.loc.offset))
        return SValue(place, _unknown_content(v_then.content)), cost

    # -- state ----------------------------------------------------------------------------------------
    def _save(self) -> dict:
        return {
            "regions": {w: {rid: (r.ap, list(r.trace), list(r.log)) for rid, r in stack.items()}
                        for w, stack in self.stacks.items()},
            "space": (self.space_cpu, self.space_peak_cpu, self.space_peak),
            "next": self.next_region,
            "writes": self.gpu_writes,
        }

    def _restore(self, state: dict) -> None:
        for world, saved in state["regions"].items():
            stack = self.stacks[world]
            for rid, (ap, trace, log) in saved.items():
                live = stack.get(rid)
                if live is not None:
                    live.ap, live.trace, live.log = ap, list(trace), list(log)
        self.space_cpu, self.space_peak_cpu, self.space_peak = state["space"]
        self.next_region = state["next"]
        self.gpu_writes = state["writes"]

    # -- rules with more to them ----------------------------------------------------------------------
    def _letregion(self, name: str, body: Expr, span: Span, env: dict, regions: dict,
                   world: World, outermost: bool):
        if self.loops or world is World.GPU:
            raise NotRegular("a letregion inside a parallel form or an `on`", span)
        rid = self.next_region
        self.next_region += 1
        region = SRegion(rid, name, ZERO)
        self.stacks[World.CPU][rid] = region
        self.all_regions[rid] = region
        alloc = number(self.providers.allocation(self.bsize))  # unscaled, as the explicit one
        pushed = step(POINT, alloc)
        value, c = self.eval(body, env, {**regions, name: rid}, world, outermost)
        final = self.stacks[World.CPU].pop(rid)
        self._peak()
        self.space_cpu = self.space_cpu - final.ap
        whole = seq(seq(pushed, c, self.op_w), POINT, self.op_w)
        if outermost:
            self.outermost[rid] = final
        return value, whole

    def _function(self, func: Expr, env: dict, regions: dict, world: World, span: Span):
        if isinstance(func, Lambda):
            return SClosure(func.param, func.body, env, regions), None
        f, c = self.eval(func, env, regions, world)
        return f.content, self._read(c, world, f, span)

    def _loop(self, count: sp.Expr, world: World, body, span: Span):
        """Evaluate `body(t)` as the template of `count` threads t = 0 .. count - 1.

        Thread t allocates at ap0 + t·w in each region, w being what one thread allocates: the
        template is evaluated once with w unknown (to learn it) and once with it known. A loop
        inside a kernel's thread counts that thread's allocations the same way (the k-th
        allocation of a thread decides its lock-step address)."""
        var = self.fresh_symbol("t")
        regions = [(world_, rid, r) for world_, stack in self.stacks.items()
                   for rid, r in stack.items()]
        # Each region's allocation pointer, and in a kernel's thread its write count ("writes").
        counters: dict[_LoopCounter, sp.Expr] = {(w, rid): r.ap for w, rid, r in regions}
        inner_kernel = world is World.GPU and self.gpu_loops >= 1
        if inner_kernel:
            counters["writes"] = sp.sympify(self.gpu_writes)
        unknown = {key: self.fresh_symbol("w") for key in counters}
        state = self._save()

        def set_counters(step_of: dict[_LoopCounter, sp.Expr]) -> None:
            for w, rid, r in regions:
                r.ap = counters[(w, rid)] + var * step_of[(w, rid)]
            if inner_kernel:
                self.gpu_writes = counters["writes"] + var * step_of["writes"]

        def read_counters() -> dict[_LoopCounter, sp.Expr]:
            now: dict[_LoopCounter, sp.Expr] = {(w, rid): r.ap for w, rid, r in regions}
            if inner_kernel:
                now["writes"] = sp.sympify(self.gpu_writes)
            return now

        self.loops += 1
        self.threads += 1
        if self.threads == 1:
            self._cpu_weights()
        try:
            set_counters(unknown)
            body(var)
            per_thread: dict[_LoopCounter, sp.Expr] = {}
            for key, value in read_counters().items():
                w = sp.expand(value - (counters[key] + var * unknown[key]))
                if var in w.free_symbols or unknown[key] in w.free_symbols:
                    raise NotRegular("threads that allocate different amounts", span)
                per_thread[key] = w
            space_per_thread = sp.expand(self.space_cpu - state["space"][0])
            self._restore(state)
            set_counters(per_thread)
            for _, _, r in regions:
                r.trace = []
            result = body(var)
            traces = {rid: r.trace for w, rid, r in regions if w is World.CPU}
        finally:
            self.loops -= 1
            self.threads -= 1
            if self.threads == 0:
                self._cpu_weights()
        self._restore(state)
        if self.loops:  # a loop inside a thread: the outer thread allocates it all, in order
            for w, rid, r in regions:
                if w is World.CPU and traces.get(rid):
                    r.trace.append(("repeat", count, traces[rid]))
        for w, rid, r in regions:
            r.ap = counters[(w, rid)] + count * per_thread[(w, rid)]
        if inner_kernel:
            self.gpu_writes = counters["writes"] + count * per_thread["writes"]
        self.space_cpu = state["space"][0] + count * space_per_thread.subs(var, 0)
        return var, result, per_thread, traces

    def _grown(self, world: World, start: dict, traces: dict, span: Span, count) -> None:
        """Log a loop's allocations for the region sizes (Fig. 3, ExpandW): with every single
        allocation at most BSIZE, each growth is by BSIZE, ⌈(ap_end - s)/BSIZE⌉ of them. Which
        thread grows a region decides its path's weight, so a profile where growing costs more
        than a write makes such a loop irregular."""
        if world is not World.CPU or self.loops:
            return
        for rid, region in self.stacks[World.CPU].items():
            if sp.expand(region.ap - start[rid]) == 0:
                continue
            region.log.append(("loop", start[rid], region.ap, (count, traces[rid]), span))
            if self._grow_cost() != self.write_w:
                raise NotRegular("a parallel form that may grow a region, under a profile where "
                                 "growing costs differ from a write", span)

    def _allocation(self) -> AllocationParameters:
        """The allocation provider's parameters: `providers_for` builds linear providers, the
        ones whose costs this module writes in closed form."""
        allocation = self.providers.allocation
        assert isinstance(allocation, LinearAllocation)
        return allocation.parameters

    def _grow_cost(self) -> sp.Expr:
        alloc = self._allocation()
        return number((alloc.latency + alloc.per_word * self.bsize) * self._scale())

    def _scale(self) -> float:
        """The CPU weights' factor here: the model's `serial_scale` outside every parallel
        form's threads, else 1 (the explicit evaluator's `_cpu_weights`)."""
        return 1.0 if self.threads else self.serial_scale

    def _cpu_weights(self) -> None:
        """The CPU read, write and step weights in the current context (`_scale`), as the
        explicit evaluator's `_cpu_weights` sets them."""
        scale, cpu = self._scale(), self.cpu
        read, write, op = cpu.read(), cpu.write(), cpu.op()
        if scale != 1.0:
            read, write, op = read * scale, write * scale, op * scale
        self.read_w, self.write_w, self.op_w = number(read), number(write), number(op)

    def _parmap(self, func: Expr, vector: Expr, region: str | None, span: Span, env: dict,
                regions: dict, world: World):
        """parmap f v at ρ (the explicit evaluator's `_parmap_rule`, or under the paper's rules
        its `_parmap_paper`: f e_i per element, the thread template evaluating f too)."""
        assert region is not None  # the checker's elaboration writes every region
        if self.paper:
            if isinstance(vector, VecLit):
                raise NotRegular("a parmap over a vector literal, under the paper's rules: each "
                                 "element is evaluated in its own thread, a different expression "
                                 "per thread", span)
            closure, c_f = None, None
        else:
            closure, c_f = self._function(func, env, regions, world, span)
        vec, c_v = self.eval(vector, env, regions, world)
        count = sp.sympify(vec.content.length)
        self._assume_at_least_one(count, "the length of the vector parmap maps over", span)
        start = {rid: r.ap for rid, r in self.stacks[World.CPU].items()}

        limits = self._limits(world)

        def thread(var):
            item = vec.content.element(var, span)
            with self._gpu_thread(world, var, count, limits=limits):
                if closure is not None:
                    return self.eval(closure.body, {**closure.env, closure.param: item},
                                     closure.regions, world)
                # f e_i by the application rule: c_f ⊕δr ∅ ⊕ c_body
                f, c1 = self.eval(func, env, regions, world)
                applied = f.content
                value, c3 = self.eval(applied.body, {**applied.env, applied.param: item},
                                      applied.regions, world)
                return value, self._seq(world, self._read_into(world, c1, f, None, span), c3)

        if count == 0:
            items: tuple = ()
            c_par = None
            result_vec = SVec(ZERO, items=items)
        else:
            var, (value, c_thread), per_thread, traces = self._loop(count, world, thread, span)
            self._grown(world, start, traces, span, count)
            c_par = self._par(world, c_thread, count, var, sum(limits.values(), ZERO))
            result_vec = SVec(count, var, value)
        return self._gather(world, self._seq(world, c_f, c_v), vec, c_par, regions, region,
                            result_vec, span)

    @contextmanager
    def _bookkeeping(self):
        """Mark the edges built inside as a parallel form's own bookkeeping (evaluator's)."""
        saved, self.bookkeeping = self.bookkeeping, True
        try:
            yield
        finally:
            self.bookkeeping = saved

    def _gather(self, world: World, before, read: SValue, c_par, regions: dict, region: str,
                result: SVec, span: Span):
        """A parallel form's bookkeeping (the evaluator's `_parmap_rule` and `_iota`): read
        `read` into the fork, merge the threads' tables, allocate the result vector."""
        with self._bookkeeping():
            c = self._read_into(world, before, read, c_par, span)
            c = self._op(world, c, EdgeKind.MERGE, self._merge_weight(world))
            return self._alloc(c, world, regions, region, result, span)

    def _merge_weight(self, world: World, in_thread: bool = False):
        """δm after a parallel form (the evaluator's `_merge_cost`)."""
        if world is World.CPU:
            return number(self.cpu.merge(in_thread or self.threads > 0))
        return self.gpu_op

    def _limits(self, world: World) -> dict[int, sp.Expr]:
        """What a kernel starting now stages of each local region (the evaluator's `_kernel`):
        its words so far, up to the region's share of local memory; {} inside a thread."""
        if world is not World.GPU or self.gpu_loops or self.paper:
            return {}
        return {rid: sp.Min(r.ap, self.local_share) for rid, r in self.stacks[World.GPU].items()
                if r.local}

    @contextmanager
    def _gpu_thread(self, world: World, var, count, base=None, limits=None):
        """Inside one thread of a loop. At the top of an `on` body the loop is a kernel, and its
        threads' allocations take the kernel's lock-step layout (graphs.devicebox), and their
        reads of the words it staged (`limits`) are local."""
        if world is not World.GPU:
            yield
            return
        saved = (self.thread_var, self.thread_count, self.thread_base, self.gpu_writes,
                 self.stage_limit)
        if self.gpu_loops == 0:
            self.thread_var, self.thread_count = var, count
            self.thread_base = self.fresh if base is None else base
            self.gpu_writes = 0
            self.stage_limit = limits or {}
        self.gpu_loops += 1
        try:
            yield
        finally:
            self.gpu_loops -= 1
            if self.gpu_loops == 0:
                self.last_writes = self.gpu_writes
                (self.thread_var, self.thread_count, self.thread_base, self.gpu_writes,
                 self.stage_limit) = saved

    def _par(self, world: World, thread, count: sp.Expr, var, staged: sp.Expr = ZERO):
        if world is World.CPU:
            return par_many(thread, count, self.fork_w)
        phase = SPhase(True, _path_flatten(thread), count, var, staged=staged,
                       writeback=self._writeback())
        if self.gpu_loops == 0:
            # A kernel: its allocations take lock-step addresses from the box's fresh pointer.
            width = self.profile.gpu.warp_width
            phase.fresh_base = self.fresh
            phase.writes = sp.sympify(self.last_writes)
            self.fresh = self.fresh + self.last_writes * width * sp.ceiling(count / width)
        return [phase]

    def _writeback(self) -> bool:
        """Whether a kernel ends with §7.1.2's write-back (the explicit evaluator's `_par`)."""
        return self.paper and any(r.local for r in self.stacks[World.GPU].values())

    def _iota(self, count: Expr, region: str | None, span: Span, env: dict, regions: dict,
              world: World):
        assert region is not None
        n_value, c = self.eval(count, env, regions, world)
        n = n_value.content.value
        if n is None:
            raise NotRegular("iota of a count computed from the data", span)
        n = sp.sympify(n)
        self._assume_at_least_one(n, "iota's count", span)
        start = {rid: r.ap for rid, r in self.stacks[World.CPU].items()}

        def thread(var):
            with self._gpu_thread(world, var, n):
                return self._alloc(None, world, regions, region, SInt(var), span)

        if n == 0:
            c_par, vec = None, SVec(ZERO, items=())
        else:
            var, (value, c_write), per_thread, traces = self._loop(n, world, thread, span)
            self._grown(world, start, traces, span, n)
            c_par = self._par(world, c_write, n, var)
            vec = SVec(n, var, value)
        return self._gather(world, c, n_value, c_par, regions, region, vec, span)

    def _reduce(self, func: Expr, zero: Expr, vector: Expr, region: str | None, span: Span,
                env: dict, regions: dict, world: World):
        assert region is not None
        closure, c_f = self._function(func, env, regions, world, span)
        z, c_z = self.eval(zero, env, regions, world)
        vec, c_v = self.eval(vector, env, regions, world)
        with self._bookkeeping():
            cost = self._read(self._seq_all(world, [c_f, c_z, c_v]), world, vec, span)
        n = sp.sympify(vec.content.length)
        self._assume_at_least_one(n, "the length of the vector reduce reduces", span)
        if n == 0:
            return z, cost
        if world is World.GPU:
            return self._reduce_gpu(closure, vec, n, cost, regions, region, span)
        level = self.fresh_symbol("k")
        pairs = sp.floor(sp.ceiling(n / 2**level) / 2)
        levels = clog2(n)
        start = {rid: r.ap for rid, r in self.stacks[World.CPU].items()}
        element = _unknown_like(vec.content, span)

        def thread(var):
            pair, c_pair = self._alloc(None, world, regions, region, SPair(element, element),
                                       span)
            value, c_body = self.eval(closure.body, {**closure.env, closure.param: pair},
                                      closure.regions, world)
            return value, self._seq(world, c_pair, c_body)

        # All levels together run n - 1 combinations: one loop of n - 1 threads for the heap.
        var, (value, branch), per_thread, traces = self._loop(n - 1, world, thread, span)
        self._grown(world, start, traces, span, n - 1)
        assert branch is not None
        op, fork, merge = self.op_w, self.fork_w, self._merge_weight(world)
        total_pairs = n - 1
        depth = sp.Sum(clog2(pairs), (level, 0, levels - 1))
        if isinstance(n, sp.Integer):
            depth = depth.doit()
        work = (total_pairs * branch.work + 4 * fork * (total_pairs - levels)
                + levels * (merge + op))
        span_ = levels * (branch.span + merge + op) + 2 * fork * depth
        nodes = total_pairs * branch.nodes + 2 * (total_pairs - levels) + levels
        edges = total_pairs * branch.edges + 4 * (total_pairs - levels) + 2 * levels
        result = _unknown_like(vec.content, span) if n != 1 else vec.content.element(ZERO,
                                                                                          span)
        if n != 1 and isinstance(value, SValue):
            result = SValue(value.loc, _unknown_content(value.content))
        # The levels run one after another: each a parallel stretch, then its merge.
        each = Block(pairs * branch.work + 4 * fork * (pairs - 1),
                     branch.span + 2 * fork * clog2(pairs),
                     pairs * sp.Max(branch.width, 1), level, levels)
        widest = pairs.subs(level, 0) * sp.Max(branch.width, 1)
        return result, CostSummary(cost.work + work, cost.span + span_, cost.nodes + nodes,
                             cost.edges + edges, cost.serial + levels * (merge + op),
                             (*cost.blocks, each), sp.Max(cost.width, 1, widest))

    def _reduce_gpu(self, closure: SClosure, vec: SValue, n: sp.Expr, cost, regions: dict,
                    region: str, span: Span):
        """reduce on 𝔾: ⌈log2 n⌉ levels, each a kernel of ⌊⌈n/2^k⌉/2⌋ threads (or, inside a
        thread, a loop): `[SEQ], level k, [merge]` per level (the evaluator's `_reduce`)."""
        level, local = self.fresh_symbol("k"), self.fresh_symbol("t")
        index = self.fresh_symbol("j")
        count, base = self.fresh_symbol("P"), self.fresh_symbol("B")
        operands = tuple(self.fresh_symbol(name) for name in ("A", "B", "Aoff", "Boff"))
        first = vec.content.element(ZERO, span)
        if not isinstance(first, SValue):
            raise NotRegular("a reduction over values that are not boxed", span)
        top = self.gpu_loops == 0
        m = sp.ceiling(n / 2**level)
        staged = [ZERO]

        def operand(address, offset) -> SValue:
            return SValue(SLoc(first.loc.region, offset, address, self.box),
                          _unknown_content(first.content))

        def thread(combination):
            # Level k's kernel starts with its first combination, n - m_k: what it stages is
            # the local regions as they are then.
            limits = {rid: limit.subs(combination, n - m)
                      for rid, limit in self._limits(World.GPU).items()}
            staged[0] = sum(limits.values(), ZERO)
            with self._gpu_thread(World.GPU, local, count, base, limits):
                pair, c_pair = self._alloc(None, World.GPU, regions, region,
                                           SPair(operand(operands[0], operands[2]),
                                                 operand(operands[1], operands[3])), span)
                value, c_body = self.eval(closure.body, {**closure.env, closure.param: pair},
                                          closure.regions, World.GPU)
                return value, self._seq(World.GPU, c_pair, c_body)

        fresh = self.fresh
        combination, (value, branch), _, _ = self._loop(n - 1, World.GPU, thread, span)
        writes = self.last_writes if top else 0
        if (not isinstance(value, SValue) or value.loc.address is None
                or _mentions_any((value.loc.address, value.loc.offset), operands)):
            # An operand returned as it is (`fst p`): level k + 1's element j is then wherever
            # level k's operand was, an address ReduceOperands cannot give in closed form.
            raise NotRegular("a reduction whose function returns a value it did not allocate "
                             "(one of its operands, say)", span)
        pairs = sp.floor(m / 2)
        # Thread `local` of level k is combination n - m_k + local of the whole reduction.
        shift = {combination: n - m + local}
        path = _subs_path(_path_flatten(branch), shift)
        element = vec.content.element(index, span)
        element_address = (element.loc.address if element.loc.address is not None
                           and element.loc.box == self.box
                           else sp.Integer(element.loc.region << 32) + element.loc.offset)
        width = self.profile.gpu.warp_width
        resolver = ReduceOperands(
            n, level, local, index, element_address, element.loc.offset,
            sp.sympify(value.loc.address).subs(shift), sp.sympify(value.loc.offset).subs(shift),
            operands, count if top else None, base if top else None, fresh, writes, width)
        levels = clog2(n)
        seq_edge = SPhase(False, [TEdge(EdgeKind.SEQ, self.gpu_op)])
        merge_edge = SPhase(False, [TEdge(EdgeKind.MERGE, self.gpu_op, None, ZERO, True)])
        kernel = SPhase(True, path, pairs, local, ZERO, sp.sympify(writes), resolver, staged[0],
                        self._writeback())
        loop = SPhaseLoop(levels, level, [seq_edge, kernel, merge_edge], resolver)
        if top:
            self.fresh = fresh + writes * width * sp.Sum(
                sp.ceiling(pairs / width), (level, 0, levels - 1))
        # The result is what thread 0 of the last level returned.
        last = {level: levels - 1, local: 0, combination: n - 2}
        if top:
            last[count] = 1
            last[base] = fresh + writes * width * sp.Sum(
                sp.ceiling(pairs / width), (level, 0, levels - 2))
        address = sp.sympify(value.loc.address).subs(shift).subs(last)
        result = SValue(SLoc(value.loc.region, sp.sympify(value.loc.offset).subs(shift).subs(
            last), address, self.box), _unknown_content(value.content))
        if n == 1:
            result = vec.content.element(ZERO, span)
        return result, (cost or []) + [loop] if levels != 0 else cost

    # -- on ---------------------------------------------------------------------------------------
    def _on(self, e: On, env: dict, regions: dict, world: World):
        span = e.span
        if self.loops:
            raise NotRegular("an `on` inside a parallel form or a recursion", span)
        if self.later_branch:
            raise NotRegular("an `on` in the second side of a `||`, under the paper's rules (it "
                             "pushes what its own branch's configuration holds)", span)
        assert e.region is not None  # the checker's elaboration writes every region
        names = sorted(set(e.uses) | {e.region})
        pushed: list[SRegion] = []
        for name in names:
            cpu_region = self._region(regions, name, World.CPU, span)
            if cpu_region.name in self.stacks[World.GPU]:
                continue
            gpu_copy = SRegion(cpu_region.name, cpu_region.label, cpu_region.ap, World.GPU,
                               name in e.local)
            self.stacks[World.GPU][gpu_copy.name] = gpu_copy
            pushed.append(gpu_copy)
        start_ap = {r.name: r.ap for r in pushed}
        start_size = {r.name: self.sizes.symbol("size", self.stacks[World.CPU][r.name],
                                                len(self.stacks[World.CPU][r.name].log))
                      for r in pushed}
        index = len(self.boxes)
        self.box, self.fresh = index, FRESH
        self.local_share = (self.profile.gpu.local_words
                            // max(1, sum(1 for r in pushed if r.local)))
        try:
            value, body_paths = self.eval(e.body, env, regions, World.GPU)
        finally:
            self.box = None
            copies = {r.name: self.stacks[World.GPU].pop(r.name) for r in pushed}
        growth = {rid: sp.Max(0, c.ap - start_size[rid]) for rid, c in copies.items()}
        # The last allocation's last word is at ap - gap (profiler.regions.allocate).
        overflow = {rid: sp.Max(0, c.ap - self.gap - start_size[rid])
                    for rid, c in copies.items()} if self.paper else {}
        returned = {rid: sp.Max(0, c.ap - start_ap[rid]) for rid, c in copies.items()}
        for rid, gpu_copy in copies.items():
            cpu_region = self.stacks[World.CPU][rid]
            cpu_region.ap = sp.Max(cpu_region.ap, gpu_copy.ap)
            if not self.paper:  # the paper's GPU never grows a region (NoExpandWE)
                cpu_region.log.append(("merge", gpu_copy.ap))
        labels = {r.name: r.label for r in pushed}
        record = BoxRecord(
            span, index, body_paths,
            [(labels[rid], start_ap[rid]) for rid in start_ap],
            [(labels[rid], returned[rid]) for rid in returned],
            [(labels[rid], growth[rid]) for rid in growth],
            overflow=[(labels[rid], overflow[rid]) for rid in overflow])
        self.boxes.append(record)
        kernel = sp.Symbol(f"K{index}", nonnegative=True)
        self.box_symbols.append(kernel)
        total = self._box_total(record, kernel)
        self.box_totals.append(total)
        pushed_words = sum(start_ap.values(), ZERO)
        gpu_words = sum(returned.values(), ZERO)
        # The paper's `on local`: a third copy of each local region, in local memory (§7.1.2).
        local_words = (sum((start_ap[rid] + returned[rid] for rid, c in copies.items()
                            if c.local), ZERO) if self.paper else ZERO)
        # Space (eqs. 8-9): the box holds the pushed copies and what the GPU allocated; at its end
        # the CPU regions hold the merged words too (graphs.schedule samples that instant).
        self._peak()
        self.space_cpu = self.space_cpu + gpu_words
        self.space_peak_gpu = _max(self.space_peak_gpu, pushed_words + gpu_words + local_words)
        self.space_peak = _max(self.space_peak,
                               self.space_cpu + pushed_words + gpu_words + local_words)
        self._peak()
        shape = CostSummary(total, total, sp.Integer(2), ONE, total, (), ONE)
        return value, shape

    def _box_total(self, record: BoxRecord, kernel: sp.Symbol) -> sp.Expr:
        """The device box edge's weight (Fig. 6, rule for `on`): grow + ω*β + kernel + ω†β +
        merge, with the primitive cost providers in closed form."""
        grow_expr = sum((_provider_expr_alloc(self._allocation(), words)
                         for _, words in record.growth), ZERO) if not self.paper else ZERO
        # The growth depends on where the region's BSIZE blocks end: a named quantity, resolved
        # at concrete sizes (RegionSizes), so that formulas stay readable.
        grow = sp.Symbol(f"grow{record.index}", nonnegative=True)
        self.sizes.derived[grow] = grow_expr
        to_device, to_host = self.providers.host_to_device, self.providers.device_to_host
        assert isinstance(to_device, LinearTransfer) and isinstance(to_host, LinearTransfer)
        transfer_in = sum((_transfer_expr(to_device.parameters, words)
                           for _, words in record.pushed), ZERO)
        transfer_out = sum((_transfer_expr(to_host.parameters, words)
                            for _, words in record.returned), ZERO)
        merge = len(record.returned) * self.op_w if not self.paper else ZERO  # paper: in δ†
        record.parts = {"grow": grow, "transfer_in": transfer_in,
                        "transfer_out": transfer_out, "merge": merge}
        return grow + transfer_in + kernel * number(self.gpu_scale) + transfer_out + merge


def _select(items: tuple, index: sp.Expr, span: Span):
    """items[index] for a symbolic index into a vector literal: one value whose place and
    content are Piecewise in the index (the items must be boxed values of one kind in one
    region; the type system makes them one type)."""
    if not items:
        # Every index is out of bounds: the explicit evaluator reports it at its place.
        raise NotRegular("an index into a vector of no elements (out of bounds at every size)",
                         span)
    first = items[0]
    if not all(isinstance(item, SValue) and item.loc.region == first.loc.region
               and type(item.content) is type(first.content) for item in items):
        raise NotRegular("an index that depends on the input into a vector literal of values "
                         "of different shapes", span)
    if not isinstance(first.content, (SInt, SFloat)):
        raise NotRegular("an index that depends on the input into a vector literal of "
                         "structured values", span)

    def pick(values: list) -> sp.Expr:
        pieces = [(v, sp.Eq(index, i)) for i, v in enumerate(values[:-1])]
        return sp.Piecewise(*pieces, (values[-1], True))

    offset = pick([item.loc.offset for item in items])
    address = None
    if all(item.loc.address is not None and item.loc.box == first.loc.box for item in items):
        address = pick([item.loc.address for item in items])
    content = first.content
    if isinstance(content, SInt):
        known = [item.content.value for item in items]
        content = SInt(pick(known) if all(v is not None for v in known) else None)
    return SValue(SLoc(first.loc.region, offset, address, first.loc.box), content)


def _subs_path(path: list, mapping: dict) -> list:
    """A thread path with substitutions in its addresses, offsets, words and loop counts."""
    out: list = []
    for edge in path:
        if isinstance(edge, TLoop):
            out.append(TLoop(sp.sympify(edge.count).subs(mapping), edge.var,
                             tuple(_subs_path(list(edge.body), mapping)), edge.reduce))
            continue
        access = edge.access
        if access is not None:
            access = TAccess(access.kind, access.region, sp.sympify(access.offset).subs(mapping),
                             sp.sympify(access.address).subs(mapping), access.local,
                             sp.sympify(access.limit).subs(mapping))
        out.append(TEdge(edge.kind, edge.weight, access, sp.sympify(edge.words).subs(mapping),
                         edge.bookkeeping))
    return out


def _max(a: sp.Expr, b: sp.Expr) -> sp.Expr:
    """max(a, b), kept small: when one side is known to be the larger, that side."""
    difference = sp.expand(a - b)
    if difference.is_nonnegative:
        return a
    if difference.is_nonpositive:
        return b
    return sp.Max(a, b)


def _provider_expr_alloc(parameters: AllocationParameters, words: sp.Expr) -> sp.Expr:
    """Σ Δa over a region's growth: one allocation of all the grown words (evaluator._on)."""
    cost = number(parameters.latency) + number(parameters.per_word) * words
    return sp.Piecewise((0, sp.Eq(words, 0)), (cost, True)) if not isinstance(
        words, sp.Integer) else (cost if words != 0 else ZERO)


def _transfer_expr(parameters: TransferParameters, words: sp.Expr) -> sp.Expr:
    """models.providers.LinearTransfer in closed form: 0 for nothing, else the first piece whose
    bound covers the size, else the line."""
    words = sp.sympify(words)
    pieces = [(sp.Integer(0), sp.Le(words, 0))]
    for piece in parameters.pieces:
        pieces.append((number(piece.latency) + words / number(piece.words_per_unit),
                       sp.Le(words, number(piece.up_to_words))))
    pieces.append((number(parameters.latency)
                   + words / number(parameters.words_per_unit), True))
    return sp.piecewise_fold(sp.Piecewise(*pieces))


def _unknown_content(content):
    match content:
        case SInt():
            return SInt(None)
        case SPair(a, b):
            return SPair(a, b)
    return content


def _unknown_like(vec: SVec, span: Span):
    """An element of `vec` with its content forgotten (a reduction's operands)."""
    element = vec.element(ZERO, span)
    return SValue(element.loc, _unknown_content(element.content))


def _same_cost(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, CostSummary):
        return isinstance(b, CostSummary) and a.same(b)
    return _paths_key(a) == _paths_key(b)


def _paths_key(paths) -> tuple:
    out = []
    for phase in paths:
        if isinstance(phase, SPhaseLoop):
            out.append(("loop", phase.count, _paths_key(phase.phases)))
        else:
            out.append((phase.parallel, phase.count, tuple(_edge_key(e) for e in phase.path)))
    return tuple(out)


def _edge_key(edge) -> tuple:
    if isinstance(edge, TLoop):
        return ("loop", edge.count, tuple(_edge_key(e) for e in edge.body))
    return (edge.kind, edge.weight, edge.access, sp.sympify(edge.words), edge.bookkeeping)


def _same_regions(a: dict, b: dict) -> bool:
    for world, saved in a["regions"].items():
        for rid, (ap, _, _) in saved.items():
            other = b["regions"][world].get(rid)
            if other is None or sp.expand(ap - other[0]) != 0:
                return False
    return True


def _join_values(a, b, condition):
    """The value of a branch both of whose sides ran: equal parts stay, integers become a
    Piecewise on the condition, anything else must agree."""
    if a == b:
        return a
    if isinstance(a, SValue) and isinstance(b, SValue):
        if a.loc != b.loc:
            raise NotRegular("a branch whose sides leave values in different places")
        ca, cb = a.content, b.content
        if isinstance(ca, SInt) and isinstance(cb, SInt):
            if ca.value is None or cb.value is None or condition is None:
                return SValue(a.loc, SInt(None))
            return SValue(a.loc, SInt(sp.Piecewise((ca.value, condition), (cb.value, True))))
        if isinstance(ca, SFloat) and isinstance(cb, SFloat):
            return a
    if isinstance(a, SBool) and isinstance(b, SBool):
        return SBool(None)
    raise NotRegular("a branch whose sides return values of different shapes")


# -- recursion on a size ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Recursion:
    """A recursive function being solved: its closure, whether it recurses on a size m (arity 1)
    or a range (x, x + m) (arity 2), the unknown of each quantity at a recursive call, and what
    a call returns."""

    closure: SClosure
    arity: int
    measure: sp.Symbol
    result_region: int
    result_content: Any
    words: dict[int, str]  # region id -> the quantity counting the words it allocates
    unknowns: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in (*SHAPE_QUANTITIES, "space", *self.words.values()):
            self.unknowns[name] = sp.Function(f"{name}_rec")

    def decides(self, condition) -> bool:
        """Whether a branch condition is on the size alone (the recursion's base case)."""
        return (isinstance(condition, sp.Basic) and bool(condition.free_symbols)
                and condition.free_symbols <= {self.measure})


class _Recurrence:
    """The recurrences of one `_Recursion`, evaluated exactly at concrete sizes (memoised), and
    solved in closed form."""

    CHECKED = range(1, 513)
    LARGE = (1000, 4097, 65535, 10**6 + 3, 2**30 - 1, 2**30 + 1, 2**31 - 7)

    def __init__(self, frame: _Recursion, quantities: dict[str, sp.Expr], span: Span):
        self.frame = frame
        self.span = span
        self.memo: dict[str, dict[int, float]] = {name: {} for name in quantities}
        self.pending: set[tuple[str, int]] = set()  # calls being evaluated
        m = frame.measure
        self.compiled = {}
        for name, expr in quantities.items():
            expr = sp.sympify(expr)
            if expr.free_symbols - {m}:
                raise NotRegular("a recursion whose costs depend on more than the size it "
                                 "recurses on", span)
            self.compiled[name] = sp.lambdify(
                m, expr, modules=[{f"{other}_rec": self._caller(other) for other in quantities},
                                  {"floor": math.floor, "ceiling": math.ceil, "Max": max,
                                   "Min": min}, "math"])

    def _caller(self, name: str):
        def call(size) -> float:
            return self.value(name, size)
        return call

    def value(self, name: str, size) -> float:
        """Quantity `name` of a call on size `size`, exactly."""
        size = int(size)
        memo = self.memo[name]
        if size not in memo:
            if size < 0 or (name, size) in self.pending:
                raise NotRegular("a recursion that does not stop (a call on a size calls "
                                 "itself on the same size, or on a negative one)", self.span)
            if len(memo) > MAX_SIZES:
                raise NotRegular(f"a recursion on more than {MAX_SIZES} sizes (hetprof "
                                 "solves those that divide their size)", self.span)
            self.pending.add((name, size))
            try:
                memo[size] = float(self.compiled[name](size))
            except RecursionError:
                raise NotRegular("a recursion that shrinks its size too slowly to solve (hetprof "
                                 "solves those that divide their size)", self.span) from None
            finally:
                self.pending.discard((name, size))
        return memo[size]

    def closed_form(self, name: str) -> sp.Expr:
        """a·m + b + c·⌈log2 m⌉ + d·⌊log2 m⌋ through the values at m = 1, 2, 3, 4, checked at
        every size of CHECKED and LARGE. (A recursion that halves its size goes ⌈log2 m⌉ deep
        when it splits m in two halves, ⌊log2 m⌋ when it keeps ⌊m/2⌋.)"""
        points = (1, 2, 3, 4)
        rows = sp.Matrix([[k, 1, (k - 1).bit_length(), k.bit_length() - 1] for k in points])
        values = sp.Matrix([sp.nsimplify(self.value(name, k)) for k in points])
        a, b, c, d = rows.LUsolve(values)
        for k in (*self.CHECKED, *self.LARGE):
            want = self.value(name, k)
            got = float(a * k + b + c * (k - 1).bit_length() + d * (k.bit_length() - 1))
            if abs(got - want) > 1e-9 * max(1.0, abs(want)):
                raise NotRegular(f"a recursion whose {name} is not a·m + b + c·⌈log2 m⌉ + "
                                 f"d·⌊log2 m⌋ (at m = {k}: {want:g})", self.span)
        m = self.frame.measure
        return a * m + b + c * clog2(m) + d * flog2(m)


SHAPE_QUANTITIES = ("work", "span", "nodes", "edges", "width")  # what a recursion solves for


def _quantities(shape: CostSummary) -> dict[str, sp.Expr]:
    """A shape's SHAPE_QUANTITIES by name."""
    return {name: getattr(shape, name) for name in SHAPE_QUANTITIES}


def _stretch(quantities: dict[str, sp.Expr]) -> CostSummary:
    """The shape of a graph seen only through its SHAPE_QUANTITIES: one parallel stretch."""
    return parallel(*(quantities[name] for name in SHAPE_QUANTITIES))


def _int_leaves(content) -> list:
    """The integers of a value made of pairs and integers, in order (None for an unknown one);
    [] for anything else."""
    match content:
        case SInt(value):
            return [value]
        case SPair(first, second):
            if isinstance(first, SValue) and isinstance(second, SValue):
                left, right = _int_leaves(first.content), _int_leaves(second.content)
                return left + right if left and right else []
    return []


def _size_leaves(arg, params: dict) -> bool:
    """Whether an argument is one or two integers, one of them depending on a size."""
    if not isinstance(arg, SValue):
        return False
    leaves = _int_leaves(arg.content)
    symbols = {v for v in params.values() if isinstance(v, sp.Symbol)}
    return (1 <= len(leaves) <= 2 and None not in leaves
            and any(sp.sympify(v).free_symbols & symbols for v in leaves))


def _with_leaves(value: SValue, leaves: list) -> SValue:
    """`value` with its integers replaced, in order, by `leaves`."""
    replaced = iter(leaves)

    def walk(v: SValue) -> SValue:
        match v.content:
            case SInt():
                return SValue(v.loc, SInt(next(replaced)))
            case SPair(first, second):
                return SValue(v.loc, SPair(walk(first), walk(second)))
        return v

    return walk(value)
