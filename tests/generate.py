"""Hypothesis strategies for well-typed λG programs, built by construction from their types.

`well_typed_programs()` draws a `profiler.syntax.Program`: an AST (every span `NO_SPAN`) with its
size parameters, each declared with a default. Run it with the defaults (`evaluate(checked, {})`);
the generator treats every parameter as the constant its default gives. Print it with
`profiler.printer.pretty` to read it or to feed it to the parser.

How every drawn program checks and runs without error:
- Expressions are drawn for a goal type (`IntG`, `FloatG`, `BoolG`, `PairG`, `VecG`, `FunG`), each
  rule producing a node of exactly that λG type, so nothing is ever rejected and retried. Goal
  types say more than λG's: an int's goal holds the range its value must lie in, a vector's goal
  its exact length. That is what keeps indices in bounds (`v[i]` asks for an index in
  [0, length - 1]), `iota` counts exact, divisions by a positive literal only, and integers far
  from 64-bit overflow.
- Regions: the program is `letregion r0 in ... letregion rk in e` with 1 to 3 regions, and no other
  letregion; the generator mirrors the checker's ambient regions (profiler.checker, "Ambient
  regions") so that a form it leaves without `at ρ` lands where its goal says. Lambdas write their
  latent effect as every region of the program, or leave it out where only application needs it.
- Worlds: `on` wraps a parmap (inside a `let` sometimes), never inside another `on`.
- Evaluation stays small: literal vectors have at most 8 elements, and a parmap or reduce is only
  drawn where the code it runs per element runs at most 64 times in all.

Shrinking goes toward the first rule of each choice, which is a leaf (a literal or a variable).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from profiler.syntax import (
    NO_SPAN,
    App,
    BinaryOperator,
    BinOp,
    BoolLit,
    BoolT,
    Boxed,
    Expr,
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
    PairS,
    Par,
    Param,
    ParMap,
    Profile,
    Program,
    Reduce,
    Snd,
    Type,
    Var,
    VecLit,
    VecS,
)

MAX_VECTOR = 8
"""The longest vector a program builds."""

MAX_WORK = 64
"""How many times, at most, the body of a parmap or reduce function may run in all."""

# --------------------------------------------------------------------------------------------------
# Goal types: λG types that also know an int's range and a vector's length


@dataclass(frozen=True, slots=True)
class IntG:
    region: str
    lo: int
    hi: int


@dataclass(frozen=True, slots=True)
class FloatG:
    region: str


@dataclass(frozen=True, slots=True)
class BoolG:
    pass


@dataclass(frozen=True, slots=True)
class PairG:
    first: Goal
    second: Goal
    region: str


@dataclass(frozen=True, slots=True)
class VecG:
    element: Goal
    region: str
    length: int


@dataclass(frozen=True, slots=True)
class FunG:
    """A function; `effect` None: its latent effect was inferred, so only applying it is safe."""

    arg: Goal
    result: Goal
    region: str
    effect: frozenset[str] | None


Goal = IntG | FloatG | BoolG | PairG | VecG | FunG


def lg_type(goal: Goal) -> Type:
    """The λG type of a goal (ranges and lengths dropped)."""
    match goal:
        case IntG(region, _, _):
            return Boxed(IntS(), region)
        case FloatG(region):
            return Boxed(FloatS(), region)
        case BoolG():
            return BoolT()
        case PairG(first, second, region):
            return Boxed(PairS(lg_type(first), lg_type(second)), region)
        case VecG(element, region, _):
            return Boxed(VecS(lg_type(element)), region)
        case FunG(arg, result, region, effect):
            return Boxed(FunS(lg_type(arg), lg_type(result), effect or frozenset()), region)
    raise AssertionError(goal)


def fits(actual: Goal, goal: Goal, applied: bool = False) -> bool:
    """A value of `actual` may stand where `goal` is asked for. `applied`: the value will only be
    applied, so a function's latent effect does not matter."""
    match actual, goal:
        case IntG(r1, lo1, hi1), IntG(r2, lo2, hi2):
            return r1 == r2 and lo2 <= lo1 and hi1 <= hi2
        case FloatG(r1), FloatG(r2):
            return r1 == r2
        case BoolG(), BoolG():
            return True
        case PairG(a1, b1, r1), PairG(a2, b2, r2):
            return r1 == r2 and fits(a1, a2) and fits(b1, b2)
        case VecG(e1, r1, n1), VecG(e2, r2, n2):
            return r1 == r2 and n1 == n2 and fits(e1, e2)
        case FunG(a1, b1, r1, eff1), FunG(a2, b2, r2, eff2):
            if r1 != r2 or lg_type(a1) != lg_type(a2) or not fits(a2, a1) or not fits(b1, b2):
                return False
            return applied or (eff1 is not None and eff2 is not None and eff1 <= eff2)
    return False


# --------------------------------------------------------------------------------------------------
# The generator


@dataclass(frozen=True, slots=True)
class Scope:
    """What the checker knows at a point (regions, ambient region, variables, world) and what the
    generator adds: how deep it may still go and how many times this code may run."""

    regions: tuple[str, ...]
    ambient: str
    values: tuple[tuple[str, Goal], ...]
    params: tuple[tuple[str, int], ...]
    in_on: bool
    depth: int
    work: int
    size: int  # the program's favourite vector length

    def deeper(self, by: int = 1) -> Scope:
        return replace(self, depth=max(0, self.depth - by))

    def bind(self, name: str, goal: Goal) -> Scope:
        return replace(self, values=(*self.values, (name, goal)))

    def at(self, ambient: str) -> Scope:
        return replace(self, ambient=ambient)


_ARITHMETIC = (BinaryOperator.ADD, BinaryOperator.SUB, BinaryOperator.MUL, BinaryOperator.DIV)
_COMPARISONS = (
    BinaryOperator.LT,
    BinaryOperator.LE,
    BinaryOperator.GT,
    BinaryOperator.GE,
    BinaryOperator.EQ,
    BinaryOperator.NE,
)
_FLOATS = (0.5, 1.0, 2.0, 0.1, 2.25, 3.0, 10.0, 1e-05, 123.456, 7.0e20)
_PROFILE_ALPHABET = 'abcxyz _-#"\\é'


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


class _Generator:
    """One program's drawing: `expr(goal, scope)` is the one recursive rule chooser."""

    def __init__(self, draw):
        self.draw = draw
        self.names = 0

    # -- small draws -------------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def flip(self) -> bool:
        return self.draw(st.booleans())

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def region(self, scope: Scope) -> str:
        """Any region in scope, the ambient one first (shrinks to it)."""
        return self.pick([scope.ambient, *[r for r in scope.regions if r != scope.ambient]])

    def at(self, region: str, scope: Scope) -> str | None:
        """The `at` to write for an allocation in `region`: None where the ambient is that region
        (sometimes), so that both spellings are drawn."""
        if region == scope.ambient and self.flip():
            return None
        return region

    def length(self, scope: Scope) -> int:
        return self.pick([scope.size, *range(1, MAX_VECTOR + 1)])

    def goal(self, scope: Scope, depth: int = 2, functions: bool = False) -> Goal:
        """A random goal type over the regions in scope."""
        kinds = ["int", "float", "bool"] + (["pair", "vec"] if depth > 0 else [])
        kinds += ["fun"] if functions and depth > 0 else []
        match self.pick(kinds):
            case "int":
                # Every range holds a literal (0 or more): the leaves of an int goal.
                return IntG(
                    self.region(scope), self.pick([0, -5, -100]), self.pick([9, 100, 10_000])
                )
            case "float":
                return FloatG(self.region(scope))
            case "bool":
                return BoolG()
            case "pair":
                return PairG(
                    self.goal(scope, depth - 1), self.goal(scope, depth - 1), self.region(scope)
                )
            case "vec":
                n = self.length(scope)
                if self.flip():  # an iota's type: indices into vectors of length n
                    region = self.region(scope)
                    return VecG(IntG(region, 0, n - 1), region, n)
                return VecG(self.goal(scope, depth - 1), self.region(scope), n)
            case "fun":
                return FunG(
                    self.goal(scope, depth - 1),
                    self.goal(scope, depth - 1),
                    self.region(scope),
                    frozenset(scope.regions),
                )
        raise AssertionError

    # -- the rule chooser --------------------------------------------------------------------------
    def expr(self, goal: Goal, scope: Scope) -> Expr:
        """An expression of λG type lg_type(goal) whose value meets the goal, in `scope`."""
        assert not (isinstance(goal, FunG) and goal.effect is None), "inferred effects do not join"
        rules = self.leaf_rules(goal, scope)
        if scope.depth > 0:
            rules += self.rules(goal, scope)
        else:  # the smallest constructor, so that every goal bottoms out
            match goal:
                case PairG(first, second, region):
                    rules.append(
                        lambda: Pair(
                            self.expr(first, scope.at(region)),
                            self.expr(second, scope.at(region)),
                            self.at(region, scope),
                            NO_SPAN,
                        )
                    )
                case VecG():
                    rules.append(lambda: self.vector_literal(goal, scope))
                case FunG():
                    rules.append(lambda: self.lambda_(goal, scope))
        return self.pick(rules)()

    def leaf_rules(self, goal: Goal, scope: Scope) -> list:
        rules = []
        match goal:
            case IntG(hi=hi) if hi >= 0:
                rules.append(lambda: self.int_literal(goal, scope))
            case FloatG():
                rules.append(
                    lambda: FloatLit(self.pick(_FLOATS), self.at(goal.region, scope), NO_SPAN)
                )
            case BoolG():
                rules.append(lambda: BoolLit(self.flip(), NO_SPAN))
        names = [name for name, actual in scope.values if fits(actual, goal)]
        if names:
            rules.append(lambda: Var(self.pick(names), NO_SPAN))
        if isinstance(goal, IntG) and goal.region == scope.ambient:
            params = [name for name, value in scope.params if goal.lo <= value <= goal.hi]
            if params:  # a size parameter allocates in the ambient region
                rules.append(lambda: Var(self.pick(params), NO_SPAN))
        return rules

    def rules(self, goal: Goal, scope: Scope) -> list:
        """The non-leaf rules for a goal: the generic ones once, the goal's own ones (which make
        the interesting programs) several times, so that they are drawn more often."""
        inner = scope.deeper()
        rules = [
            lambda: self.let(goal, scope),
            lambda: self.if_(goal, scope),
            lambda: self.apply(goal, scope),
            lambda: self.project(goal, scope),
            lambda: self.index(goal, scope),
            lambda: Profile(
                self.draw(st.text(_PROFILE_ALPHABET, max_size=5)), self.expr(goal, inner), NO_SPAN
            ),
        ]
        match goal:
            case IntG(region, lo, hi):
                rules += [lambda: self.arithmetic(goal, scope)] * 4
                if self.lengths_in(lo, hi) and region == scope.ambient:
                    rules.append(lambda: self.length_of(goal, scope))
                if self.reduce_allowed(goal, scope):
                    rules += [lambda: self.reduce(goal, scope)] * 2
            case FloatG():
                rules += [lambda: self.float_arithmetic(goal, scope)] * 3
                if self.reduce_allowed(goal, scope):
                    rules += [lambda: self.reduce(goal, scope)] * 2
            case BoolG():
                rules += [lambda: self.comparison(scope)] * 3
            case PairG(first, second, region):
                rules += [
                    lambda: Pair(
                        self.expr(first, inner.at(region)),
                        self.expr(second, inner.at(region)),
                        self.at(region, scope),
                        NO_SPAN,
                    )
                ] * 2
                rules += [
                    lambda: Par(
                        self.expr(first, inner.at(region)),
                        self.expr(second, inner.at(region)),
                        self.at(region, scope),
                        NO_SPAN,
                    )
                ] * 2
            case VecG(element, region, n):
                rules += [lambda: self.vector_literal(goal, scope)] * 2
                if (
                    isinstance(element, IntG)
                    and element.region == region
                    and element.lo <= 0
                    and element.hi >= n - 1
                ):
                    rules += [lambda: self.iota(goal, scope)] * 4
                if scope.work * n <= MAX_WORK:
                    rules += [lambda: self.parmap(goal, scope)] * 3
                    if not scope.in_on:
                        rules += [lambda: self.on(goal, scope)] * 2
            case FunG():
                rules += [lambda: self.lambda_(goal, scope)] * 3
        return rules

    # -- leaves ------------------------------------------------------------------------------------
    def int_literal(self, goal: IntG, scope: Scope) -> Expr:
        low = max(goal.lo, 0)
        value = self.draw(st.integers(low, min(goal.hi, low + 12)))
        return IntLit(value, self.at(goal.region, scope), NO_SPAN)

    # -- binders and control -----------------------------------------------------------------------
    def let(self, goal: Goal, scope: Scope) -> Expr:
        inner = scope.deeper()
        bound_goal = self.goal(scope, functions=True)
        if isinstance(bound_goal, FunG):
            # A function may be applied anywhere, even inside a parmap: keep its body cheap.
            cheap = replace(inner, work=MAX_WORK)
            name = self.fresh("f")
            if self.flip():
                bound_goal = replace(bound_goal, effect=None)
                bound = self.lambda_(bound_goal, cheap)
            else:
                bound = self.expr(bound_goal, cheap)
        else:
            name = self.fresh("x")
            bound = self.expr(bound_goal, inner)
        return Let(name, bound, self.expr(goal, inner.bind(name, bound_goal)), NO_SPAN)

    def if_(self, goal: Goal, scope: Scope) -> Expr:
        inner = scope.deeper()
        return If(
            self.expr(BoolG(), inner), self.expr(goal, inner), self.expr(goal, inner), NO_SPAN
        )

    def apply(self, goal: Goal, scope: Scope) -> Expr:
        """`f e`: f a lambda written in place, or a variable bound to a function."""
        inner = scope.deeper()
        names = [
            (name, actual)
            for name, actual in scope.values
            if isinstance(actual, FunG) and fits(actual.result, goal)
        ]
        if names and self.flip():
            name, fun = self.pick(names)
            return App(Var(name, NO_SPAN), self.expr(fun.arg, inner), NO_SPAN)
        fun = FunG(self.goal(scope), goal, self.region(scope), None)
        return App(self.lambda_(fun, scope), self.expr(fun.arg, inner), NO_SPAN)

    def project(self, goal: Goal, scope: Scope) -> Expr:
        """`fst e` or `snd e` of a pair that holds the goal."""
        inner = scope.deeper()
        other = self.goal(scope, depth=1)
        if self.flip():
            return Fst(self.expr(PairG(goal, other, self.region(scope)), inner), NO_SPAN)
        return Snd(self.expr(PairG(other, goal, self.region(scope)), inner), NO_SPAN)

    def index(self, goal: Goal, scope: Scope) -> Expr:
        """`v[i]` with i in bounds."""
        inner = scope.deeper()
        n = self.length(scope)
        vector = self.expr(VecG(goal, self.region(scope), n), inner)
        return Index(vector, self.expr(IntG(self.region(scope), 0, n - 1), inner), NO_SPAN)

    def lambda_(self, goal: FunG, scope: Scope) -> Lambda:
        """`lambda x: τ [φ]. e at ρ` with φ every region (or left out when the goal allows)."""
        name = self.fresh("a")
        region = goal.region
        effect = frozenset(scope.regions)
        if goal.effect is None and self.flip():
            effect = None
        body_scope = scope.deeper().at(region).bind(name, goal.arg)
        return Lambda(
            name,
            lg_type(goal.arg),
            effect,
            self.expr(goal.result, body_scope),
            self.at(region, scope),
            NO_SPAN,
        )

    # -- numbers -----------------------------------------------------------------------------------
    def arithmetic(self, goal: IntG, scope: Scope) -> Expr:
        """`a op b at ρ`, the operands' ranges chosen so that the result stays in the goal's."""
        lo, hi = goal.lo, goal.hi
        operators = [BinaryOperator.ADD, BinaryOperator.SUB, BinaryOperator.DIV]
        if lo <= 0 <= hi:
            operators.append(BinaryOperator.MUL)
        op = self.pick(operators)
        operand_scope = scope.deeper().at(goal.region)
        left_region, right_region = self.region(scope), self.region(scope)
        if op is BinaryOperator.ADD:
            left = IntG(left_region, lo // 2, hi // 2)
            right = IntG(right_region, lo - lo // 2, hi - hi // 2)
        elif op is BinaryOperator.SUB:
            spread = (hi - lo) // 2
            left = IntG(left_region, lo + spread, hi)
            right = IntG(right_region, 0, spread)
        elif op is BinaryOperator.MUL:
            k = self.pick([1, 2, 3])
            left = IntG(left_region, _ceil_div(lo, k), hi // k)
            right = IntG(right_region, 0, k)
        else:
            k = self.pick([1, 2, 3, 7])
            return BinOp(
                op,
                self.expr(IntG(left_region, lo * k, hi * k), operand_scope),
                IntLit(k, self.at(right_region, operand_scope), NO_SPAN),
                self.at(goal.region, scope),
                NO_SPAN,
            )
        return BinOp(
            op,
            self.expr(left, operand_scope),
            self.expr(right, operand_scope),
            self.at(goal.region, scope),
            NO_SPAN,
        )

    def float_arithmetic(self, goal: FloatG, scope: Scope) -> Expr:
        op = self.pick(_ARITHMETIC)
        operand_scope = scope.deeper().at(goal.region)
        left = self.expr(FloatG(self.region(scope)), operand_scope)
        if op is BinaryOperator.DIV:  # a positive literal: never a division by zero
            right = FloatLit(
                self.pick(_FLOATS), self.at(self.region(scope), operand_scope), NO_SPAN
            )
        else:
            right = self.expr(FloatG(self.region(scope)), operand_scope)
        return BinOp(op, left, right, self.at(goal.region, scope), NO_SPAN)

    def comparison(self, scope: Scope) -> Expr:
        inner = scope.deeper()
        if self.flip():
            left, right = FloatG(self.region(scope)), FloatG(self.region(scope))
        else:
            left, right = IntG(self.region(scope), 0, 20), IntG(self.region(scope), -5, 20)
        return BinOp(
            self.pick(_COMPARISONS), self.expr(left, inner), self.expr(right, inner), None, NO_SPAN
        )

    def lengths_in(self, lo: int, hi: int) -> list[int]:
        return [n for n in range(1, MAX_VECTOR + 1) if lo <= n <= hi]

    def length_of(self, goal: IntG, scope: Scope) -> Expr:
        """`length v`: allocated in the ambient region, which the goal's is."""
        n = self.pick(self.lengths_in(goal.lo, goal.hi))
        vector = VecG(self.goal(scope, depth=1), self.region(scope), n)
        return Length(self.expr(vector, scope.deeper()), None, NO_SPAN)

    # -- vectors -----------------------------------------------------------------------------------
    def vector_literal(self, goal: VecG, scope: Scope) -> Expr:
        inner = scope.deeper(2).at(goal.region)
        elements = tuple(self.expr(goal.element, inner) for _ in range(goal.length))
        return VecLit(elements, self.at(goal.region, scope), NO_SPAN)

    def iota(self, goal: VecG, scope: Scope) -> Expr:
        """`iota e at ρ`: e must be exactly the goal's length."""
        inner = scope.deeper().at(goal.region)
        count = self.expr(IntG(self.region(scope), goal.length, goal.length), inner)
        return Iota(count, self.at(goal.region, scope), NO_SPAN)

    def function(
        self, goal: FunG, scope: Scope, outer: Scope, make=None
    ) -> tuple[Expr, tuple[str, Lambda] | None]:
        """The function of a parmap or reduce: a lambda written in place (checked in `scope`), a
        lambda bound by a `let` around the node (checked in `outer`; returned as its name and the
        binding), or a variable already in scope."""
        make = make or self.lambda_
        names = [name for name, actual in scope.values if fits(actual, goal, applied=True)]
        choice = self.pick(["in place", "let"] + (["variable"] if names else []))
        if choice == "variable":
            return Var(self.pick(names), NO_SPAN), None
        if choice == "let":
            name = self.fresh("f")
            return Var(name, NO_SPAN), (name, make(goal, outer))
        return make(goal, scope), None

    def parmap(self, goal: VecG, scope: Scope) -> Expr:
        """`parmap f v at ρ` over a vector of the goal's length."""
        n = goal.length
        inner = scope.deeper().at(goal.region)
        if self.flip():
            region = self.region(scope)
            vector_goal = VecG(IntG(region, 0, n - 1), region, n)  # often an iota: indices
        else:
            vector_goal = VecG(self.goal(scope, depth=1), self.region(scope), n)
        fun_goal = FunG(vector_goal.element, goal.element, self.region(scope), None)
        # The function's body runs once per element.
        func, binding = self.function(
            fun_goal,
            replace(inner, work=scope.work * n),
            replace(scope.deeper(), work=scope.work * n),
        )
        node = ParMap(func, self.expr(vector_goal, inner), self.at(goal.region, scope), NO_SPAN)
        return node if binding is None else Let(*binding, node, NO_SPAN)

    def on(self, goal: VecG, scope: Scope) -> Expr:
        """`on parmap ... at ρ` (sometimes with a let or a cost centre inside)."""
        inner = replace(scope.at(goal.region), in_on=True)
        body = self.parmap(goal, inner)
        local: tuple[str, ...] = ()
        if self.flip():
            local = (goal.region,)  # a parmap always touches its own region
        if self.flip():
            body = Profile("kernel", body, NO_SPAN)
        return On(body, self.at(goal.region, scope), local, NO_SPAN)

    def reduce_allowed(self, goal: IntG | FloatG, scope: Scope) -> bool:
        return scope.work * MAX_VECTOR <= MAX_WORK and (
            isinstance(goal, FloatG) or self.sum_range(goal, 1) is not None
        )

    def sum_range(self, goal: IntG, n: int) -> tuple[int, int] | None:
        """An element range whose sums of up to n elements stay in the goal's range."""
        low, high = _ceil_div(goal.lo, n), goal.hi // n
        if goal.lo > 0 or low > high:
            return None
        return low, high

    def reduce(self, goal: IntG | FloatG, scope: Scope) -> Expr:
        """`reduce f z v at ρ`: a sum (its elements small enough that no partial sum leaves the
        goal's range) or any function that keeps values in the goal's range."""
        n = self.length(scope)
        pair_region = self.region(scope)
        element: Goal = goal
        make = self.lambda_
        if isinstance(goal, IntG):
            bounds = self.sum_range(goal, n)
            if bounds is not None and self.flip():
                element = IntG(goal.region, *bounds)
                make = self.sum_lambda
        elif self.flip():
            make = self.sum_lambda
        fun_goal = FunG(PairG(goal, goal, pair_region), goal, self.region(scope), None)
        # Without `at`, reduce allocates its pairs where its function expects them. The function
        # is checked in the enclosing ambient; z and v with the pairs' region as ambient.
        inner = scope.deeper().at(pair_region)
        func, binding = self.function(
            fun_goal,
            replace(scope.deeper(), work=scope.work * n),
            replace(scope.deeper(), work=scope.work * n),
            make,
        )
        vector = VecG(element, self.region(scope), n)
        node = Reduce(
            func,
            self.expr(element, inner),
            self.expr(vector, inner),
            self.at(pair_region, scope),
            NO_SPAN,
        )
        return node if binding is None else Let(*binding, node, NO_SPAN)

    def sum_lambda(self, goal: FunG, scope: Scope) -> Lambda:
        """`lambda p: ((τ, τ), ρ) [φ]. fst p + snd p at ρ'`."""
        name = self.fresh("p")
        result = goal.result
        assert isinstance(result, IntG | FloatG)
        body = BinOp(
            BinaryOperator.ADD,
            Fst(Var(name, NO_SPAN), NO_SPAN),
            Snd(Var(name, NO_SPAN), NO_SPAN),
            self.at(result.region, scope.at(goal.region)),
            NO_SPAN,
        )
        effect = frozenset(scope.regions) if self.flip() else None
        return Lambda(name, lg_type(goal.arg), effect, body, self.at(goal.region, scope), NO_SPAN)


@st.composite
def well_typed_programs(draw, allow_on: bool = True, max_depth: int = 4) -> Program:
    """A well-typed λG program with 1-3 regions, 0-2 size parameters (with defaults) and a body of
    a random type; `allow_on=False` leaves out `on` (a program that runs on the CPU only)."""
    generator = _Generator(draw)
    regions = tuple(f"r{i}" for i in range(draw(st.integers(1, 3))))
    size = draw(st.integers(1, MAX_VECTOR))
    params = tuple(
        (f"n{i}", draw(st.sampled_from([size, *range(1, MAX_VECTOR + 1)])))
        for i in range(draw(st.integers(0, 2)))
    )
    scope = Scope(regions, regions[-1], (), params, not allow_on, max_depth, 1, size)
    goal = generator.goal(scope)
    body = generator.pick(generator.rules(goal, scope))()  # not a bare literal
    for region in reversed(regions):
        body = LetRegion(region, body, NO_SPAN)
    return Program(tuple(Param(name, value, NO_SPAN) for name, value in params), body)


@st.composite
def parallel_on_programs(draw) -> Program:
    """A well-typed λG program whose `on`s run inside parallel branches: `e1 || e2` with an `on`
    on one or both sides (or a CPU allocation beside it), and a parmap whose function's body is
    an `on`, each thread pushing, running and merging its own device box. These are the forks
    whose branches Fig. 6 evaluates from one configuration table and whose GPU copies are merged
    back (Def. 4.3, Theorem 4.4). 1-2 regions; each `on` is drawn as `well_typed_programs` draws
    them (a parmap, sometimes in local memory), over vectors of at most 4 elements."""
    generator = _Generator(draw)
    regions = tuple(f"r{i}" for i in range(draw(st.integers(1, 2))))
    size = draw(st.integers(1, 4))
    scope = Scope(regions, regions[-1], (), (), False, 2, 1, size)

    def vector_goal(region: str) -> VecG:
        return VecG(IntG(region, 0, 100), region, draw(st.integers(1, 4)))

    # Every form built here names its region (`at ρ`): a form without one allocates in the
    # region of the nearest enclosing form that names one (profiler.checker), which the scopes
    # below follow as the ambient region.
    def side(outer: Scope, cpu: bool) -> Expr:
        """An `on`, or (`cpu`) CPU code that allocates beside the other side's `on`."""
        region = generator.region(outer)
        if cpu:
            return generator.vector_literal(vector_goal(region), outer)
        return generator.on(vector_goal(region), outer)

    def par(outer: Scope) -> Expr:
        region = generator.region(outer)
        inner = outer.at(region)
        cpu = draw(st.sampled_from([None, "left", "right"]))  # at most one side without `on`
        return Par(side(inner, cpu == "left"), side(inner, cpu == "right"), region, NO_SPAN)

    def parmap_of_ons(outer: Scope) -> Expr:
        """`parmap (lambda x. on ... at ρ) (iota n at ρ') at ρ''`: every thread runs an `on`."""
        target, home, index_region = (generator.region(outer) for _ in range(3))
        n = draw(st.integers(1, 4))
        name = generator.fresh("x")
        index = IntG(index_region, 0, n - 1)
        inner = replace(outer.at(home).bind(name, index), work=n, depth=1)
        body = generator.on(vector_goal(generator.region(inner)), inner)
        function = Lambda(name, lg_type(index), None, body, home, NO_SPAN)
        vector = Iota(IntLit(n, index_region, NO_SPAN), index_region, NO_SPAN)
        return ParMap(function, vector, target, NO_SPAN)

    shape = draw(st.sampled_from(["par", "parmap", "both"]))
    if shape == "par":
        body = par(scope)
    elif shape == "parmap":
        body = parmap_of_ons(scope)
    else:
        body = Par(par(scope), parmap_of_ons(scope), regions[-1], NO_SPAN)
    for region in reversed(regions):
        body = LetRegion(region, body, NO_SPAN)
    return Program((), body)
