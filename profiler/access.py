"""How a CPU thread walks a vector at each `e1[e2]`: the access pattern of the slot it reads
(issue 15: reads priced by access pattern, sequential, strided or re-read).

The generated code (models/opencl/codegen.py) keeps a vector as a length word followed by one
word per element, and `v[i]` loads the word at v + 1 + i. On the OpenCL CPU device a top-level
parallel form is one kernel whose work items a compute unit runs one after another, and a parallel
form inside a work item is a loop: two consecutive executions of an `e1[e2]` on one core are two
iterations of the innermost parmap around it. This pass finds, for each indexing site, how its
index moves from one such iteration to the next, from the program text alone, so that the explicit
and the symbolic evaluator price a site alike (an analysis, not a rule of the paper: the paper's
PRAM prices every read the same, and stays that way; models/cpu.py prices the patterns).

An index is followed as an integer expression (sympy) in the loops' indices and the size
parameters: literals, size parameters, `+`, `-`, `*`, `/`, `let`, and the parameter of a parmap
over `iota e` (a loop index; over any other vector its parameter is data). Its pattern at a site
inside at least one parmap:

- `REREAD`: the index does not move with the innermost loop (the same slot every iteration);
- `WALK`: it moves by `stride` words an iteration, a number or an expression in the size
  parameters (a row of a matrix stored by rows: n words), which the evaluators put in: by fewer
  words than a line (`LINE_WORDS`) the walk is sequential, by a line or more strided (a new line
  every iteration); where a strided walk's index moves by one word with the loop around the
  innermost one (`shared`), the next `LINE_WORDS` - 1 iterations of that loop walk the same
  lines again (a column of a matrix by neighbouring work items, as PolyBench's column kernels
  do), assuming the inner walk's lines stay in the caches until then;
- `RANDOM`: the index depends on data read from a vector, or on the innermost loop's index
  other than affinely (the index times itself). An integer division of a loop's index (`t / n`,
  the row of a flat matrix's element t) is taken as constant from one iteration to the next: it
  changes once every so many iterations, and between those the rest of the expression walks;
- `UNKNOWN`: anything else (a function's parameter, a pair's component): priced as a read is.

A vector written out in the program (`[0.0, 1.0, ...]`) is a few words whose lines stay in the
L1: every read of it is a `REREAD`, wherever its index goes.

Sites outside every loop (serial code) get no pattern.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeAlias

from profiler.syntax import (
    App,
    BinaryOperator,
    BinOp,
    Expr,
    Fix,
    Index,
    IntLit,
    Iota,
    Lambda,
    Length,
    Let,
    ParMap,
    Program,
    Reduce,
    Span,
    Var,
    VecLit,
    children,
)

if TYPE_CHECKING:  # sympy is imported where an analysis runs: an explicit profile never needs it
    import sympy as sp

LINE_WORDS = 8
"""Words of a 64-byte cache line (8-byte words): the CPU microbenchmarks' strided read
(models/opencl/calibrate_cpu.py) reads one word a line."""


class Pattern(Enum):
    """How consecutive executions of an indexing site on one core move through the vector."""

    REREAD = "re-read"
    WALK = "walk"  # by `SlotAccess.stride` words an iteration
    RANDOM = "random"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class SlotAccess:
    """An indexing site's pattern. A `WALK` moves by `stride` words an iteration (a positive
    integer, or an expression in the size parameters: n, the length of a row); `shared`: the loop
    around the innermost one moves the index by one word."""

    pattern: Pattern
    stride: sp.Expr | int = 0
    shared: bool = False

    def at(self, sizes: Mapping[str, Any]) -> sp.Expr:
        """The stride with the size parameters given in `sizes` (numbers or symbols) put in; a
        vector's length left in it is taken as a line's words (a length is a line or more)."""
        import sympy as sp

        stride = sp.sympify(self.stride)
        named = {s: sp.sympify(sizes[s.name]) for s in stride.free_symbols
                 if isinstance(s, sp.Symbol) and s.name in sizes}
        stride = stride.xreplace(named)
        lengths = {s: LINE_WORDS for s in stride.free_symbols if isinstance(s, sp.Dummy)}
        return stride.xreplace(lengths) if lengths else stride


class _Opaque(Enum):
    DATA = "data"  # read from a vector (or derived from such a value)
    UNKNOWN = "unknown"
    IOTA = "iota"  # a vector 0, 1, ..., n - 1 bound to a name
    LITERAL = "literal"  # a vector written out in the program: a few words


_Value: TypeAlias = "sp.Expr | _Opaque"  # an integer expression, or what it is not

_ARITHMETIC = {BinaryOperator.ADD, BinaryOperator.SUB, BinaryOperator.MUL, BinaryOperator.DIV}


def slot_accesses(program: Program) -> dict[Span, SlotAccess]:
    """The pattern of every indexing site of `program` inside a loop (the module's docstring),
    by the site's span; its size parameters are positive integers."""
    found: dict[Span, SlotAccess] = {}
    sizes: dict[str, _Value] = {p.name: _size(p.name) for p in program.params}
    _Walk(found).value(program.body, sizes, ())
    return found


def _size(name: str) -> sp.Symbol:
    """A size parameter: a positive integer (`SlotAccess.at` puts its value in by name)."""
    import sympy as sp

    return sp.Symbol(name, positive=True, integer=True)


class _Walk:
    def __init__(self, found: dict[Span, SlotAccess]) -> None:
        self.found = found

    def value(self, e: Expr, env: dict[str, _Value], loops: tuple[sp.Symbol, ...]) -> _Value:
        """What `e`'s integer value is as a function of the loops' indices, recording each
        indexing site's pattern on the way."""
        import sympy as sp

        match e:
            case IntLit(value=value):
                return _size(value) if isinstance(value, str) else sp.Integer(value)
            case Var(name=name):
                return env.get(name, _Opaque.UNKNOWN)
            case BinOp(op, left, right, _, _):
                a, b = self.value(left, env, loops), self.value(right, env, loops)
                if op not in _ARITHMETIC:
                    return _Opaque.UNKNOWN
                return _arithmetic(op, a, b)
            case Let(name, bound, body, _):
                return self.value(body, {**env, name: self.value(bound, env, loops)}, loops)
            case Iota(count, _, _):
                self.value(count, env, loops)
                return _Opaque.IOTA
            case ParMap(Lambda(param=param, body=body), vector, _, _):
                # a loop either way; over an iota its parameter is the loop's index, over any
                # other vector an element of the data
                over = self.value(vector, env, loops)
                index = sp.Dummy("loop", integer=True)
                self.value(body, {**env, param: index if over is _Opaque.IOTA else _Opaque.DATA},
                           (*loops, index))
                return _Opaque.UNKNOWN
            case Index(vector, index, span):
                literal = self.value(vector, env, loops) is _Opaque.LITERAL
                position = self.value(index, env, loops)
                if loops:
                    self.found[span] = (SlotAccess(Pattern.REREAD) if literal
                                        else _pattern(position, loops))
                return _Opaque.DATA
            case VecLit(elements=elements):
                for element in elements:
                    self.value(element, env, loops)
                return _Opaque.LITERAL
            case Length(inner, _, _):
                self.value(inner, env, loops)
                return sp.Dummy("length", positive=True)
            case Lambda(param=param, body=body):
                self.value(body, {**env, param: _Opaque.UNKNOWN}, loops)
                return _Opaque.UNKNOWN
            case Fix(name=name, body=body):
                self.value(body, {**env, name: _Opaque.UNKNOWN}, loops)
                return _Opaque.UNKNOWN
            case App() | Reduce():
                for child in children(e):
                    self.value(child, env, loops)
                return _Opaque.DATA if isinstance(e, Reduce) else _Opaque.UNKNOWN
        for child in children(e):
            self.value(child, env, loops)
        return _Opaque.UNKNOWN


def _arithmetic(op: BinaryOperator, a: _Value, b: _Value) -> _Value:
    """a op b, kept as an expression while both sides are; data stays data."""
    import sympy as sp

    if _Opaque.DATA in (a, b):
        return _Opaque.DATA
    if isinstance(a, _Opaque) or isinstance(b, _Opaque):
        return _Opaque.UNKNOWN
    if op is BinaryOperator.ADD:
        return a + b
    if op is BinaryOperator.SUB:
        return a - b
    if op is BinaryOperator.MUL:
        return a * b
    if b == 0:
        return _Opaque.UNKNOWN
    # λG's integer division (of non-negative indices): `_step` holds it between iterations
    return a if b == 1 else sp.floor(a / b)


def _pattern(position: _Value, loops: tuple[sp.Symbol, ...]) -> SlotAccess:
    """The pattern of an index `position` inside `loops` (outermost first)."""
    import sympy as sp

    if position is _Opaque.DATA:
        return SlotAccess(Pattern.RANDOM)
    if isinstance(position, _Opaque):
        return SlotAccess(Pattern.UNKNOWN)
    inner = _step(position, loops[-1], loops)
    if inner is None:
        return SlotAccess(Pattern.RANDOM)
    if inner == 0:
        return SlotAccess(Pattern.REREAD)
    shared = len(loops) > 1 and _step(position, loops[-2], loops) in (1, -1)
    return SlotAccess(Pattern.WALK, sp.Abs(inner), shared)


def _step(position: sp.Expr, loop: sp.Symbol, loops: tuple[sp.Symbol, ...]) -> sp.Expr | None:
    """How far `position` moves when `loop` moves by one: its coefficient in `loop` where it
    is affine in it, integer divisions held (the module's docstring), else None."""
    import sympy as sp

    held = {division: sp.Dummy("held") for division in position.atoms(sp.floor)}
    position = position.xreplace(held)
    if not position.is_polynomial(loop) or sp.degree(position, loop) > 1:
        return None
    step = sp.expand(sp.diff(position, loop))
    return None if step.free_symbols & (set(loops) | set(held.values())) else step
