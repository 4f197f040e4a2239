"""The abstract syntax of λG (Fig. 1 and Fig. 13 of the specification, plus hetprof's extensions).

Every node is an immutable dataclass carrying the `Span` it was parsed from. Allocating forms carry an
optional `region` (the paper's `at ρ`); the checker fills in the ones a program leaves out (see
`profiler.checker`, "ambient regions") and returns a new tree: passes never mutate the AST.

Extensions beyond the paper, each typed in `profiler.checker` and given semantics in
`graphs.semantics.explicit`: `let`, arithmetic `+ - /`, comparisons, float literals, indexing `e1[e2]`,
`length e`, `iota e at ρ`, `reduce f z e at ρ`, cost centres `profile "name" e` and size parameters
`param n : int = 8`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, slots=True)
class Span:
    """A source range: 1-based line and column of the first character, and of the end."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NO_SPAN = Span("<none>", 0, 0, 0, 0)


class World(Enum):
    """Computation worlds ω (Fig. 1): the CPU ℂ and the GPU 𝔾."""

    CPU = "C"
    GPU = "G"

    def __str__(self) -> str:
        return "CPU" if self is World.CPU else "GPU"


# ---------------------------------------------------------------------------------------------------
# Types (Fig. 13): τ ::= bool | (μ, ρ);  μ ::= int | τ1 -φ-> τ2 | τ1 × τ2 | Vec τ | Π ρ ≥ φ. τ


@dataclass(frozen=True, slots=True)
class BoolT:
    """`bool`: unboxed, so it carries no region."""

    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class Boxed:
    """`(μ, ρ)`: a boxed value of shape μ stored in region ρ."""

    shape: Shape
    region: str

    def __str__(self) -> str:
        if isinstance(self.shape, (IntS, FloatS)):
            return f"{self.shape} {self.region}"
        return f"({self.shape}, {self.region})"


@dataclass(frozen=True, slots=True)
class IntS:
    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True, slots=True)
class FloatS:
    def __str__(self) -> str:
        return "float"


@dataclass(frozen=True, slots=True)
class FunS:
    """`τ1 -> τ2 [φ; ω]`: a function whose body may touch the regions of its latent effect φ, and
    whose call may do what its world effect ω names (`on`: launch a kernel; `letregion`: create a
    region), which Fig. 2 allows on the CPU only. ω is hetprof's: the paper checks the world
    rules by syntax, which calls through closures escape (see profiler.checker)."""

    arg: Type
    result: Type
    effect: frozenset[str]
    worlds: frozenset[str] = frozenset()

    def __str__(self) -> str:
        return (f"{_arrow_operand(self.arg)} -> {self.result} "
                f"{format_effect(self.effect, self.worlds)}")


@dataclass(frozen=True, slots=True)
class PairS:
    """`τ1 × τ2`, written `(τ1, τ2)` inside a boxed type or `Vec`."""

    first: Type
    second: Type

    def __str__(self) -> str:
        return f"({self.first}, {self.second})"


@dataclass(frozen=True, slots=True)
class VecS:
    element: Type

    def __str__(self) -> str:
        return f"Vec {_atomic(self.element)}"


@dataclass(frozen=True, slots=True)
class RegionFunS:
    """`Π ρ ≥ φ'. τ [φ]` (Fig. 14): a region abstraction, instantiated with `e[ρ']`."""

    region: str
    bound: frozenset[str]
    body: Type
    effect: frozenset[str]
    worlds: frozenset[str] = frozenset()  # as FunS's: what instantiating it may do

    def __str__(self) -> str:
        return (
            f"forall {self.region} >= {format_effect(self.bound)}. {self.body} "
            f"{format_effect(self.effect, self.worlds)}"
        )


Shape = IntS | FloatS | FunS | PairS | VecS | RegionFunS
Type = BoolT | Boxed


WORLD_EFFECTS = ("on", "letregion")
"""What a function's world effect may name: running `on` (a kernel launch) and creating a region
with `letregion`, the two forms Fig. 2 types on the CPU world only."""


def format_effect(effect: frozenset[str], worlds: frozenset[str] = frozenset()) -> str:
    """`[r1, r2]`, or with a world effect `[r1, r2; on, letregion]`."""
    text = ", ".join(sorted(effect))
    if worlds:
        text += "; " + ", ".join(w for w in WORLD_EFFECTS if w in worlds)
    return "[" + text + "]"


def _atomic(t: Type) -> str:
    text = str(t)
    return text if isinstance(t, BoolT) or text.startswith("(") else f"({t})"


def _arrow_operand(t: Type) -> str:
    return _atomic(t)


def type_regions(t: Type) -> frozenset[str]:
    """The free region variables of a type."""
    match t:
        case BoolT():
            return frozenset()
        case Boxed(shape, region):
            return shape_regions(shape) | {region}
    raise AssertionError(t)


def shape_regions(s: Shape) -> frozenset[str]:
    match s:
        case IntS() | FloatS():
            return frozenset()
        case FunS(arg, result, effect):
            return type_regions(arg) | type_regions(result) | effect
        case PairS(first, second):
            return type_regions(first) | type_regions(second)
        case VecS(element):
            return type_regions(element)
        case RegionFunS(region, bound, body, effect):
            return (bound | ((type_regions(body) | effect) - {region})) - {region}
    raise AssertionError(s)


def substitute_type(t: Type, old: str, new: str) -> Type:
    """τ[new/old]: rename a region variable in a type (Fig. 14, instantiation)."""
    match t:
        case BoolT():
            return t
        case Boxed(shape, region):
            return Boxed(_substitute_shape(shape, old, new), new if region == old else region)
    raise AssertionError(t)


def _rename(effect: frozenset[str], old: str, new: str) -> frozenset[str]:
    return frozenset(new if r == old else r for r in effect)


def _substitute_shape(s: Shape, old: str, new: str) -> Shape:
    match s:
        case IntS() | FloatS():
            return s
        case FunS(arg, result, effect, worlds):
            return FunS(
                substitute_type(arg, old, new),
                substitute_type(result, old, new),
                _rename(effect, old, new),
                worlds,
            )
        case PairS(first, second):
            return PairS(substitute_type(first, old, new), substitute_type(second, old, new))
        case VecS(element):
            return VecS(substitute_type(element, old, new))
        case RegionFunS(region, bound, body, effect, worlds):
            if region == old:
                return s
            return RegionFunS(
                region, _rename(bound, old, new), substitute_type(body, old, new),
                _rename(effect, old, new), worlds,
            )
    raise AssertionError(s)


# ---------------------------------------------------------------------------------------------------
# Terms (Fig. 13 and extensions)


class BinaryOperator(Enum):
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="

    @property
    def is_comparison(self) -> bool:
        return self in COMPARISONS


COMPARISONS = frozenset(
    {BinaryOperator.LT, BinaryOperator.LE, BinaryOperator.GT, BinaryOperator.GE,
     BinaryOperator.EQ, BinaryOperator.NE}
)


@dataclass(frozen=True, slots=True)
class IntLit:
    """`i at ρ`; `value` is an integer, or the name of a size parameter (`n at ρ`)."""

    value: int | str
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class FloatLit:
    value: float
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class BoolLit:
    value: bool
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class BinOp:
    """`e1 op e2 at ρ` for arithmetic (boxed result in ρ), `e1 op e2` for comparisons (bool)."""

    op: BinaryOperator
    left: Expr
    right: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: Expr
    orelse: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Lambda:
    """`lambda x: τ [φ]. e at ρ`: a closure allocated in ρ with latent effect φ.

    `effect` is None when the program leaves the latent effect out; the checker then infers it as
    the regions the body touches.
    """

    param: str
    param_type: Type
    effect: frozenset[str] | None
    body: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class App:
    func: Expr
    arg: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Pair:
    first: Expr
    second: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Fst:
    expr: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Snd:
    expr: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class LetRegion:
    region: str
    body: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Fix:
    """`fix f: τ. u` where u is a lambda or region lambda (Fig. 5, rule for fix)."""

    name: str
    fix_type: Type
    body: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Par:
    """`e1 || e2 at ρ`: both sides in parallel, their results paired in ρ (Fig. 6)."""

    left: Expr
    right: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class VecLit:
    elements: tuple[Expr, ...]
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class ParMap:
    """`parmap f e at ρ` over a literal vector or any vector-valued expression (Fig. 6, §7.1)."""

    func: Expr
    vector: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class On:
    """`on e at ρ` runs e on the GPU (Fig. 6); `local` names regions staged in local memory."""

    body: Expr
    region: str | None
    local: tuple[str, ...]
    span: Span = field(compare=False)
    uses: tuple[str, ...] = field(default=(), compare=False)  # frv(e), filled by the checker


@dataclass(frozen=True, slots=True)
class RegionLambda:
    """`lambda ρ >= φ'. u at ρ'`: region abstraction (Fig. 14)."""

    param: str
    bound: frozenset[str]
    effect: frozenset[str] | None
    body: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class RegionApp:
    """`e[ρ]`: region instantiation (Fig. 14). The parser cannot tell `e[r]` from indexing, so it
    builds `Index`; the checker turns an index by a region name into this node."""

    expr: Expr
    region: str
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Let:
    name: str
    bound: Expr
    body: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Index:
    """`e1[e2]`: a read of the location of element e2 of vector e1."""

    vector: Expr
    index: Expr
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Length:
    """`length e`: the number of elements of a vector, allocated as an int in the ambient region."""

    expr: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Iota:
    """`iota e at ρ`: the vector [0, 1, ..., e-1] with each integer allocated in ρ."""

    count: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Reduce:
    """`reduce f z e at ρ`: a balanced tree of applications of f (over pairs allocated in ρ)."""

    func: Expr
    zero: Expr
    vector: Expr
    region: str | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Profile:
    """`profile "name" e`: a cost centre (Sansom and Peyton Jones 1995)."""

    name: str
    expr: Expr
    span: Span = field(compare=False)


Expr = (
    IntLit | FloatLit | BoolLit | Var | BinOp | If | Lambda | App | Pair | Fst | Snd | LetRegion
    | Fix | Par | VecLit | ParMap | On | RegionLambda | RegionApp | Let | Index | Length | Iota
    | Reduce | Profile
)

ALLOCATING = (IntLit, FloatLit, BinOp, Lambda, Pair, Par, VecLit, ParMap, On, RegionLambda, Iota,
              Reduce, Length)


@dataclass(frozen=True, slots=True)
class Param:
    """`param n : int = default`: a size parameter, set from the command line with --param."""

    name: str
    default: int | None
    span: Span = field(compare=False)


@dataclass(frozen=True, slots=True)
class Program:
    params: tuple[Param, ...]
    body: Expr
    source: str = field(compare=False, repr=False, default="")
    file: str = field(compare=False, default="<input>")


def children(e: Expr) -> tuple[Expr, ...]:
    """The immediate sub-expressions of e, left to right."""
    match e:
        case IntLit() | FloatLit() | BoolLit() | Var():
            return ()
        case BinOp(_, left, right, _, _) | Par(left, right, _, _):
            return (left, right)
        case If(cond, then, orelse, _):
            return (cond, then, orelse)
        case Lambda(body=body) | RegionLambda(body=body) | LetRegion(body=body) | Fix(body=body):
            return (body,)
        case App(func, arg, _):
            return (func, arg)
        case Pair(first, second, _, _):
            return (first, second)
        case Fst(expr, _) | Snd(expr, _) | Length(expr, _, _) | Profile(_, expr, _):
            return (expr,)
        case RegionApp(expr, _, _):
            return (expr,)
        case VecLit(elements, _, _):
            return elements
        case ParMap(func, vector, _, _):
            return (func, vector)
        case On(body=body):
            return (body,)
        case Let(_, bound, body, _):
            return (bound, body)
        case Index(vector, index, _):
            return (vector, index)
        case Iota(count, _, _):
            return (count,)
        case Reduce(func, zero, vector, _, _):
            return (func, zero, vector)
    raise AssertionError(f"unknown node {e!r}")
