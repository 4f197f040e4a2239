"""Type, region and world checking for λG (Fig. 2 and Figs. 14-17), and elaboration.

The judgement Ω; Δ; Γ ⊢^ω e : τ, φ is implemented by `_Checker.check`, one `match` over the nodes.
It returns the type, the effect (the set of regions e may touch, computed bottom-up and compared
with the latent effects the program writes on its functions) and an elaborated copy of e.

What hetprof infers, and what it requires (documented in README "The language"):
- Ambient regions: an allocating form without `at ρ` allocates in the region of the nearest
  enclosing form that names one, or else in the innermost region in scope. The paper writes `at ρ`
  everywhere; the zipmul program of §7.1 itself leaves some out.
- Latent effects: `lambda x: τ [φ]. e` checks that e touches only regions covered by φ (Fig. 14,
  rule for λ); without `[φ]` the effect is inferred as exactly what the body touches.
- Size parameters (`param n`) are integers; using `n` allocates it in the ambient region like `i`.
- `e[ρ]` and `e1[e2]` share a spelling: an index by a name that is a region in scope (and not a
  variable) is region instantiation.
- Types must be written where the paper writes them: on lambda parameters and `fix`.
- The program's outermost letregions may hold its result: hetprof reads the value out before they
  are popped (as the paper's own §7.1 program, which returns a function over r0, needs).

World effects (hetprof's, beyond the paper): Fig. 2 types `on` and `letregion` on the CPU world
only, and the paper checks that by syntax, which a call escapes: `let f = λx. on ... in on (f 1)`
runs an `on` inside an `on`. So a function type also records its *world effect* ω, whether calling
it may run `on` or `letregion` (`τ1 -> τ2 [φ; on]`), inferred like a latent effect: an `on` or
`letregion` form, or a call of a function whose type has them, puts them in the enclosing effect
(internally, as the markers WORLD_EFFECTS beside the region names: no region can be named `on` or
`letregion`, both keywords). A call, parmap, reduce or instantiation inside `on` of a function
with a world effect is rejected at the call, naming where the function's body does it. A lambda's
world effect is always inferred, also where its region effect is written; a parameter's function
type must admit the world effect of the function passed (write `[φ; on]` in it); `fix` adds its
body's world effect to the declared type and checks the body again, so a recursive call inside `on`
is caught too.

Subtyping is the one the bounded-effect calculus gives function types: a function with a smaller
latent effect may be used where a larger one is expected. The effect relation φ ∋ ρ is taken up to
the outlives constraints Δ (Fig. 15, ⊢er): ρ is covered if it is in φ, or outlives a region in φ.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from profiler.errors import CheckError, ParameterError, RegionError, WorldError
from profiler.syntax import (
    WORLD_EFFECTS,
    App,
    BinOp,
    BoolLit,
    BoolT,
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
    PairS,
    Par,
    ParMap,
    Profile,
    Program,
    Reduce,
    RegionApp,
    RegionFunS,
    RegionLambda,
    Shape,
    Snd,
    Span,
    Type,
    Var,
    VecLit,
    VecS,
    World,
    children,
    format_effect,
    substitute_type,
    type_regions,
)


@dataclass(frozen=True, slots=True)
class CheckedProgram:
    """A well-typed program: the elaborated body (every region explicit) and its type."""

    program: Program
    body: Expr
    type: Type
    effect: frozenset[str]
    types: dict[int, Type] = field(default_factory=dict, compare=False, repr=False)

    def type_of(self, node: Expr) -> Type:
        """The type the checker gave an elaborated node (for code generation)."""
        return self.types[id(node)]

def bind_parameters(checked: CheckedProgram, values: dict[str, int]) -> dict[str, int]:
    """The size parameters' values: command-line values over declared defaults."""
    declared = {p.name: p for p in checked.program.params}
    for name in values:
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise ParameterError(f"--param {name}: the program declares no parameter {name} "
                                 f"(declared: {known})")
    result = {}
    for name, param in declared.items():
        if name in values:
            result[name] = values[name]
        elif param.default is not None:
            result[name] = param.default
        else:
            raise ParameterError(f"parameter {name} has no default: give it with --param "
                                 f"{name}=VALUE", param.span)
    return result



@dataclass(frozen=True, slots=True)
class _Region:
    name: str
    world: World
    depth: int  # position in the region stack: larger is younger


@dataclass(frozen=True, slots=True)
class _Site:
    """Where a function's body does a world effect: the `on`/`letregion` form, or a call."""

    span: Span
    call: bool


@dataclass(frozen=True, slots=True)
class _Context:
    """Ω (regions in scope, with their worlds), Δ (outlives), Γ, the world ω and the ambient."""

    regions: dict[str, _Region]
    outlives: dict[str, frozenset[str]]  # ρ -> regions that must stay alive while ρ is
    values: dict[str, Type]
    world: World
    ambient: str | None
    params: frozenset[str]
    in_on: bool
    top: bool = False  # in the program's outermost chain of letregions, whose values it prints
    types: dict[int, Type] = field(default_factory=dict)  # shared: id(elaborated node) -> type
    # variables bound to functions with a world effect -> where their bodies do each of them
    sites: dict[str, dict[str, _Site]] = field(default_factory=dict)


def check_program(program: Program) -> CheckedProgram:
    """Check a parsed program; raise a CheckError subclass naming the span and the broken rule."""
    seen: set[str] = set()
    for param in program.params:
        if param.name in seen:
            raise CheckError(f"parameter {param.name} is declared twice", param.span, "param")
        seen.add(param.name)
    types: dict[int, Type] = {}
    context = _Context({}, {}, {}, World.CPU, None, frozenset(seen), False, top=True, types=types)
    body, type_, effect = _check(program.body, context)
    return CheckedProgram(program, body, type_, _regions_of(effect), types)


def _error(kind: type[CheckError], message: str, span: Span, rule: str) -> CheckError:
    return kind(message, span, rule)


# ---------------------------------------------------------------------------------------------------
# World effects

_WORLDS = frozenset(WORLD_EFFECTS)
_WORLD_FORMS = {"on": ("an `on`", "launch kernels"), "letregion": ("a `letregion`",
                                                                  "create regions")}


def _regions_of(effect: frozenset[str]) -> frozenset[str]:
    """The region names of an effect (without the world markers)."""
    return effect - _WORLDS


def _worlds_of(effect: frozenset[str]) -> frozenset[str]:
    """The world markers of an effect: `on`, `letregion`."""
    return effect & _WORLDS


def _callee_worlds(type_: Type | None) -> frozenset[str]:
    if isinstance(type_, Boxed) and isinstance(type_.shape, (FunS, RegionFunS)):
        return type_.shape.worlds
    return frozenset()


def _world_sites(function: Expr, ctx: _Context) -> dict[str, _Site]:
    """Where an elaborated function (a lambda, a region abstraction or a `fix` of one) first does
    each world effect in its body: an `on` or `letregion` form, or a call of a function that does
    (nested lambdas' bodies run only when called). Empty for other expressions."""
    while isinstance(function, Fix):
        function = function.body
    if not isinstance(function, (Lambda, RegionLambda)):
        return {}
    sites: dict[str, _Site] = {}
    todo = [function.body]
    while todo:
        node = todo.pop()
        match node:
            case On():
                sites.setdefault("on", _Site(node.span, False))
            case LetRegion():
                sites.setdefault("letregion", _Site(node.span, False))
            case App(func=callee) | ParMap(func=callee) | Reduce(func=callee) | RegionApp(
                    expr=callee):
                for world in _callee_worlds(ctx.types.get(id(callee))):
                    sites.setdefault(world, _Site(node.span, True))
        if not isinstance(node, (Lambda, RegionLambda)):
            todo.extend(reversed(children(node)))
    return sites


def _bind(ctx: _Context, name: str, type_: Type, function: Expr | None = None) -> _Context:
    """Γ, name : type, remembering where `function` (the bound value) does its world effects."""
    sites = {k: v for k, v in ctx.sites.items() if k != name}
    if function is not None and _callee_worlds(type_):
        sites[name] = _world_sites(function, ctx)
    return replace(ctx, values={**ctx.values, name: type_}, sites=sites)


def _with_worlds(type_: Type, worlds: frozenset[str]) -> Type:
    assert isinstance(type_, Boxed) and isinstance(type_.shape, (FunS, RegionFunS))
    return replace(type_, shape=replace(type_.shape, worlds=type_.shape.worlds | worlds))


def _gpu_call(ctx: _Context, callee: Expr, callee_t: Type, span: Span, how: str) -> None:
    """Fig. 2's world rule through calls: inside `on`, a function whose world effect names `on`
    or `letregion` must not be called (`how`: "calling", "mapping", ...). `callee` is the
    elaborated function expression."""
    worlds = _callee_worlds(callee_t)
    if ctx.world is not World.GPU or not worlds:
        return
    world = next(w for w in WORLD_EFFECTS if w in worlds)
    form, action = _WORLD_FORMS[world]
    name = f"`{callee.name}`" if isinstance(callee, Var) else "this function"
    sites = ctx.sites.get(callee.name, {}) if isinstance(callee, Var) else _world_sites(callee,
                                                                                        ctx)
    site = sites.get(world)
    if site is None:
        where = f"its type {callee_t} says so"
    elif site.call:
        where = f"its body calls, at {site.span.line}:{site.span.column}, a function that does"
    else:
        where = f"its body has {form} at {site.span.line}:{site.span.column}"
    raise _error(WorldError, f"{how} {name} inside `on` would run {form} on the GPU ({where}); "
                 f"code on the GPU cannot {action}", span,
                 f"Fig. 2, {world} is typed on ℂ only (the function's world effect)")


# ---------------------------------------------------------------------------------------------------
# Regions and effects


def _place(context: _Context, region: str, span: Span) -> None:
    """Ω ⊢place ρ (Fig. 16): ρ is a region in scope on the current world."""
    if region not in context.regions:
        hint = ""
        if not context.regions:
            hint = "; create one with `letregion " + region + " in ...`"
        raise _error(RegionError, f"region {region} is not in scope here{hint}", span,
                     "Fig. 16, ⊢place")


def _ambient(context: _Context, explicit: str | None, span: Span) -> str:
    if explicit is not None:
        _place(context, explicit, span)
        return explicit
    if context.ambient is not None:
        return context.ambient
    raise _error(RegionError, "this value needs a region to live in, and none is in scope: "
                 "wrap the program in `letregion r in ...` or write `at r`", span,
                 "Fig. 1, `at ρ`")


def _outlives_closure(context: _Context, region: str) -> frozenset[str]:
    """Regions that outlive `region` (reflexively, transitively) under Δ."""
    seen = {region}
    todo = [region]
    while todo:
        for outer in context.outlives.get(todo.pop(), ()):
            if outer not in seen:
                seen.add(outer)
                todo.append(outer)
    return frozenset(seen)


def _covered(context: _Context, effect: frozenset[str], region: str) -> bool:
    """Ω; Δ ⊢er φ ∋ ρ (Fig. 15), up to outlives: ρ in φ, or ρ outlives some region of φ."""
    return any(region in _outlives_closure(context, r) for r in effect)


def _check_type(context: _Context, type_: Type, span: Span) -> None:
    """Ω; Δ ⊢type τ (Fig. 16): every region the type mentions is in scope."""
    for region in sorted(type_regions(type_)):
        if region not in context.regions:
            raise _error(RegionError, f"the type {type_} mentions region {region}, which is not "
                         "in scope here", span, "Fig. 16, ⊢type")


def _effect_names(context: _Context, effect: frozenset[str], span: Span) -> None:
    for region in sorted(effect):
        if region not in context.regions:
            raise _error(RegionError, f"the effect {format_effect(effect)} names region {region},"
                         " which is not in scope here", span, "Fig. 16, ⊢eff")


# ---------------------------------------------------------------------------------------------------
# Types


def subtype(actual: Type, expected: Type) -> bool:
    """actual ≤ expected: equal up to larger latent effects on functions (covariant results,
    contravariant arguments)."""
    match actual, expected:
        case BoolT(), BoolT():
            return True
        case Boxed(shape_a, region_a), Boxed(shape_e, region_e):
            return region_a == region_e and _subshape(shape_a, shape_e)
    return False


def _subshape(actual: Shape, expected: Shape) -> bool:
    match actual, expected:
        case IntS(), IntS():
            return True
        case FloatS(), FloatS():
            return True
        case PairS(a1, a2), PairS(e1, e2):
            return subtype(a1, e1) and subtype(a2, e2)
        case VecS(a), VecS(e):
            return subtype(a, e)
        case FunS(arg_a, res_a, eff_a, worlds_a), FunS(arg_e, res_e, eff_e, worlds_e):
            return (subtype(arg_e, arg_a) and subtype(res_a, res_e) and eff_a <= eff_e
                    and worlds_a <= worlds_e)
        case (RegionFunS(ra, ba, body_a, eff_a, worlds_a),
              RegionFunS(re, be, body_e, eff_e, worlds_e)):
            renamed = substitute_type(body_a, ra, re)
            eff_a2 = frozenset(re if r == ra else r for r in eff_a)
            bound_a = frozenset(re if r == ra else r for r in ba)
            return (bound_a == be and subtype(renamed, body_e) and eff_a2 <= eff_e
                    and worlds_a <= worlds_e)
    return False


def _join(first: Type, second: Type) -> Type | None:
    if subtype(first, second):
        return second
    if subtype(second, first):
        return first
    return None


def _expect_shape(type_: Type, shape: type, what: str, span: Span) -> Boxed:
    if isinstance(type_, Boxed) and isinstance(type_.shape, shape):
        return type_
    raise _error(CheckError, f"{what}, but this expression has type {type_}", span, "Fig. 14")


def _numeric(type_: Type, what: str, span: Span) -> Boxed:
    if isinstance(type_, Boxed) and isinstance(type_.shape, (IntS, FloatS)):
        return type_
    raise _error(CheckError, f"{what} must be an int or a float, but has type {type_}", span,
                 "Fig. 14, arithmetic")


# ---------------------------------------------------------------------------------------------------
# The judgement


def _check(e: Expr, ctx: _Context) -> tuple[Expr, Type, frozenset[str]]:
    node, type_, effect = _check_node(e, ctx)
    ctx.types[id(node)] = type_
    return node, type_, effect


def _check_node(e: Expr, ctx: _Context) -> tuple[Expr, Type, frozenset[str]]:
    if ctx.top and not isinstance(e, LetRegion):
        ctx = replace(ctx, top=False)
    match e:
        case IntLit(value, region, span):
            if isinstance(value, str) and value not in ctx.params:
                raise _error(CheckError, f"unknown size parameter {value}", span, "param")
            if isinstance(value, int) and not -(2**63) <= value < 2**63:
                raise _error(CheckError, f"the integer literal {value} does not fit in 64 bits",
                             span, "int literals")
            region = _ambient(ctx, region, span)
            return replace(e, region=region), Boxed(IntS(), region), frozenset({region})

        case FloatLit(_, region, span):
            region = _ambient(ctx, region, span)
            return replace(e, region=region), Boxed(FloatS(), region), frozenset({region})

        case BoolLit():
            return e, BoolT(), frozenset()

        case Var(name, span):
            if name in ctx.values:
                return e, ctx.values[name], frozenset()
            if name in ctx.params:
                return _check(IntLit(name, None, span), ctx)
            if name in ctx.regions:
                raise _error(CheckError, f"{name} is a region, not a value", span, "Fig. 14, var")
            raise _error(CheckError, f"unbound variable {name}", span, "Fig. 14, var")

        case BinOp(op, left, right, region, span):
            inner = ctx if region is None else replace(ctx, ambient=_ambient(ctx, region, span))
            left_e, left_t, left_eff = _check(left, inner)
            right_e, right_t, right_eff = _check(right, inner)
            lt = _numeric(left_t, f"the left operand of {op.value}", left.span)
            rt = _numeric(right_t, f"the right operand of {op.value}", right.span)
            if type(lt.shape) is not type(rt.shape):
                raise _error(CheckError, f"{op.value} mixes {lt.shape} and {rt.shape}; convert "
                             "one side", span, "Fig. 14, arithmetic")
            effect = left_eff | right_eff | {lt.region, rt.region}
            if op.is_comparison:
                return replace(e, left=left_e, right=right_e, region=None), BoolT(), effect
            result_region = _ambient(ctx, region, span)
            return (replace(e, left=left_e, right=right_e, region=result_region),
                    Boxed(lt.shape, result_region), effect | {result_region})

        case If(cond, then, orelse, span):
            cond_e, cond_t, cond_eff = _check(cond, ctx)
            if not isinstance(cond_t, BoolT):
                raise _error(CheckError, f"the condition of `if` must be a bool, not {cond_t}",
                             cond.span, "Fig. 14, if")
            then_e, then_t, then_eff = _check(then, ctx)
            else_e, else_t, else_eff = _check(orelse, ctx)
            joined = _join(then_t, else_t)
            if joined is None:
                raise _error(CheckError, f"the branches of `if` differ: {then_t} and {else_t}",
                             span, "Fig. 14, if")
            return (replace(e, cond=cond_e, then=then_e, orelse=else_e), joined,
                    cond_eff | then_eff | else_eff)

        case Lambda(param, param_type, effect, body, region, span):
            region = _ambient(ctx, region, span)
            _check_type(ctx, param_type, span)
            if effect is not None:
                _effect_names(ctx, effect, span)
            inner = replace(_bind(ctx, param, param_type), ambient=region)
            body_e, body_t, body_eff = _check(body, inner)
            touched_regions = _regions_of(body_eff)
            if effect is None:
                effect = touched_regions
            else:
                for touched in sorted(touched_regions):
                    if not _covered(ctx, effect, touched):
                        raise _error(RegionError, f"the body of this function touches region "
                                     f"{touched}, which its latent effect {format_effect(effect)}"
                                     " does not include", span, "Fig. 14, λ: φ ⊇ φ'")
            fun_t = Boxed(FunS(param_type, body_t, effect, _worlds_of(body_eff)), region)
            return (replace(e, effect=effect, body=body_e, region=region), fun_t,
                    frozenset({region}))

        case App(func, arg, span):
            func_e, func_t, func_eff = _check(func, ctx)
            arg_e, arg_t, arg_eff = _check(arg, ctx)
            fun = _expect_shape(func_t, FunS, "only functions can be applied", func.span)
            assert isinstance(fun.shape, FunS)
            if not subtype(arg_t, fun.shape.arg):
                raise _error(CheckError, f"this function expects {fun.shape.arg}, but the "
                             f"argument has type {arg_t}", arg.span, "Fig. 14, application")
            _gpu_call(ctx, func_e, func_t, span, "calling")
            effect = func_eff | arg_eff | fun.shape.effect | fun.shape.worlds | {fun.region}
            return replace(e, func=func_e, arg=arg_e), fun.shape.result, effect

        case Pair(first, second, region, span):
            region = _ambient(ctx, region, span)
            inner = replace(ctx, ambient=region)
            first_e, first_t, first_eff = _check(first, inner)
            second_e, second_t, second_eff = _check(second, inner)
            return (replace(e, first=first_e, second=second_e, region=region),
                    Boxed(PairS(first_t, second_t), region), first_eff | second_eff | {region})

        case Fst(inner_e, span) | Snd(inner_e, span):
            sub_e, sub_t, sub_eff = _check(inner_e, ctx)
            which = "fst" if isinstance(e, Fst) else "snd"
            pair = _expect_shape(sub_t, PairS, f"`{which}` takes a pair", inner_e.span)
            assert isinstance(pair.shape, PairS)
            result = pair.shape.first if isinstance(e, Fst) else pair.shape.second
            return replace(e, expr=sub_e), result, sub_eff | {pair.region}

        case LetRegion(region, body, span):
            if ctx.world is World.GPU:
                raise _error(WorldError, "letregion is not allowed inside `on`: code on the GPU "
                             "cannot create regions", span, "Fig. 2, letregion is typed on ℂ only")
            if region in ctx.regions:
                raise _error(RegionError, f"region {region} is already in scope; λG region names "
                             "are unique (§3.2)", span, "Fig. 2, letregion")
            if region in ctx.params:
                raise _error(RegionError, f"{region} is a size parameter; name the region "
                             "differently", span, "Fig. 2, letregion")
            depth = len(ctx.regions)
            inner = replace(
                ctx,
                regions={**ctx.regions, region: _Region(region, World.CPU, depth)},
                outlives={**ctx.outlives, region: frozenset(ctx.regions)},
                ambient=region,
            )
            body_e, body_t, body_eff = _check(body, inner)
            if region in type_regions(body_t) and not ctx.top:
                raise _error(RegionError, f"the result of this letregion has type {body_t}, which "
                             f"refers to region {region}; {region} is deallocated when the "
                             "letregion ends, so its values cannot escape", span,
                             "Fig. 2, letregion: Ω; Δ ⊢type τ")
            return replace(e, body=body_e), body_t, (body_eff - {region}) | {"letregion"}

        case Fix(name, fix_type, body, span):
            _check_type(ctx, fix_type, span)
            if not (isinstance(fix_type, Boxed) and isinstance(fix_type.shape,
                                                                (FunS, RegionFunS))):
                raise _error(CheckError, f"fix needs a function type, not {fix_type}", span,
                             "Fig. 14, fix")
            if not isinstance(body, (Lambda, RegionLambda)):
                raise _error(CheckError, "the body of fix must be a lambda", body.span,
                             "Fig. 14, fix f: τ. u")
            body_e, body_t, body_eff = _check(body, _bind(ctx, name, fix_type))
            added = _callee_worlds(body_t) - _callee_worlds(fix_type)
            if added:
                # The body runs `on` or `letregion`: so does every call of `name`, the recursive
                # ones too. Check the body again knowing it.
                fix_type = _with_worlds(fix_type, added)
                first = replace(e, body=body_e)
                body_e, body_t, body_eff = _check(body, _bind(ctx, name, fix_type, first))
            if not subtype(body_t, fix_type):
                raise _error(CheckError, f"the body of fix has type {body_t}, but fix declares "
                             f"{fix_type}", span, "Fig. 14, fix")
            return replace(e, body=body_e), fix_type, body_eff

        case Par(left, right, region, span):
            region = _ambient(ctx, region, span)
            inner = replace(ctx, ambient=region)
            left_e, left_t, left_eff = _check(left, inner)
            right_e, right_t, right_eff = _check(right, inner)
            return (replace(e, left=left_e, right=right_e, region=region),
                    Boxed(PairS(left_t, right_t), region), left_eff | right_eff | {region})

        case VecLit(elements, region, span):
            region = _ambient(ctx, region, span)
            if not elements:
                raise _error(CheckError, "the element type of an empty vector cannot be "
                             "inferred; build it with `iota (0 at r) at r`", span, "Fig. 14")
            inner = replace(ctx, ambient=region)
            checked = [_check(element, inner) for element in elements]
            element_t = checked[0][1]
            for (_, t, _), element in zip(checked[1:], elements[1:], strict=True):
                joined = _join(element_t, t)
                if joined is None:
                    raise _error(CheckError, f"vector elements differ: {element_t} and {t}",
                                 element.span, "Fig. 14, vector")
                element_t = joined
            effect = frozenset({region}).union(*(eff for _, _, eff in checked))
            return (replace(e, elements=tuple(c[0] for c in checked), region=region),
                    Boxed(VecS(element_t), region), effect)

        case ParMap(func, vector, region, span):
            region = _ambient(ctx, region, span)
            inner = replace(ctx, ambient=region)
            func_e, func_t, func_eff = _check(func, inner)
            vec_e, vec_t, vec_eff = _check(vector, inner)
            fun = _expect_shape(func_t, FunS, "parmap needs a function", func.span)
            vec = _expect_shape(vec_t, VecS, "parmap maps over a vector", vector.span)
            assert isinstance(fun.shape, FunS) and isinstance(vec.shape, VecS)
            if not subtype(vec.shape.element, fun.shape.arg):
                raise _error(CheckError, f"the function expects {fun.shape.arg}, but the vector "
                             f"holds {vec.shape.element}", span, "Fig. 2, parmap")
            _gpu_call(ctx, func_e, func_t, span, "mapping")
            effect = (func_eff | vec_eff | fun.shape.effect | fun.shape.worlds
                      | {fun.region, vec.region, region})
            return (replace(e, func=func_e, vector=vec_e, region=region),
                    Boxed(VecS(fun.shape.result), region), effect)

        case On(body, region, local, span):
            if ctx.world is World.GPU:
                raise _error(WorldError, "`on` inside `on`: code on the GPU cannot launch "
                             "kernels", span, "Fig. 2, on: the body is typed on 𝔾")
            region = _ambient(ctx, region, span)
            gpu_regions = {name: replace(r, world=World.GPU) for name, r in ctx.regions.items()}
            inner = replace(ctx, regions=gpu_regions, world=World.GPU, ambient=region,
                            in_on=True)
            body_e, body_t, body_eff = _check(body, inner)
            if isinstance(body_t, Boxed) and body_t.region != region:
                raise _error(RegionError, f"the body of this `on` leaves its result in region "
                             f"{body_t.region}, but the `on` says `at {region}`", span,
                             "Fig. 2, on: e : (τ, ρ𝔾) gives (τ, ρℂ)")
            for name in local:
                _place(ctx, name, span)
                if name not in body_eff:
                    raise _error(WorldError, f"`local [{name}]`: the body of this `on` does not "
                                 f"use region {name}", span, "§7.1.2, local memory")
            uses = tuple(sorted(_regions_of(body_eff) | {region}))
            return (replace(e, body=body_e, region=region, uses=uses), body_t,
                    body_eff | {region, "on"})

        case RegionLambda(param, bound, effect, body, region, span):
            region = _ambient(ctx, region, span)
            if param in ctx.regions:
                raise _error(RegionError, f"region {param} is already in scope; λG region names "
                             "are unique (§3.2)", span, "Fig. 14, region abstraction")
            _effect_names(ctx, bound, span)
            depth = len(ctx.regions)
            inner = replace(
                ctx,
                regions={**ctx.regions, param: _Region(param, ctx.world, depth)},
                outlives={**ctx.outlives, param: bound},
                ambient=region,
            )
            if effect is not None:
                _effect_names(inner, effect, span)
            body_e, body_t, body_eff = _check(body, inner)
            touched_regions = _regions_of(body_eff)
            if effect is None:
                effect = touched_regions
            else:
                for touched in sorted(touched_regions):
                    if not _covered(inner, effect, touched):
                        raise _error(RegionError, f"the body of this region abstraction touches "
                                     f"{touched}, which its latent effect "
                                     f"{format_effect(effect)} does not include", span,
                                     "Fig. 14, region abstraction")
            type_ = Boxed(RegionFunS(param, bound, body_t, effect, _worlds_of(body_eff)), region)
            return (replace(e, effect=effect, body=body_e, region=region), type_,
                    frozenset({region}))

        case RegionApp(inner_e, region, span):
            return _check_region_app(e, inner_e, region, span, ctx)

        case Let(name, bound, body, span):
            bound_e, bound_t, bound_eff = _check(bound, ctx)
            body_e, body_t, body_eff = _check(body, _bind(ctx, name, bound_t, bound_e))
            return replace(e, bound=bound_e, body=body_e), body_t, bound_eff | body_eff

        case Index(vector, index, span):
            if (isinstance(index, Var) and index.name in ctx.regions
                    and index.name not in ctx.values):
                return _check_region_app(RegionApp(vector, index.name, span), vector, index.name,
                                         span, ctx)
            vec_e, vec_t, vec_eff = _check(vector, ctx)
            idx_e, idx_t, idx_eff = _check(index, ctx)
            vec = _expect_shape(vec_t, VecS, "only vectors can be indexed", vector.span)
            idx = _expect_shape(idx_t, IntS, "an index must be an int", index.span)
            assert isinstance(vec.shape, VecS)
            return (replace(e, vector=vec_e, index=idx_e), vec.shape.element,
                    vec_eff | idx_eff | {vec.region, idx.region})

        case Length(inner_e, region, span):
            region = _ambient(ctx, region, span)
            sub_e, sub_t, sub_eff = _check(inner_e, ctx)
            vec = _expect_shape(sub_t, VecS, "`length` takes a vector", inner_e.span)
            return (replace(e, expr=sub_e, region=region), Boxed(IntS(), region),
                    sub_eff | {vec.region, region})

        case Iota(count, region, span):
            region = _ambient(ctx, region, span)
            count_e, count_t, count_eff = _check(count, replace(ctx, ambient=region))
            c = _expect_shape(count_t, IntS, "`iota` takes an int", count.span)
            return (replace(e, count=count_e, region=region),
                    Boxed(VecS(Boxed(IntS(), region)), region), count_eff | {c.region, region})

        case Reduce(func, zero, vector, region, span):
            # The function is checked in the enclosing ambient whether or not `at ρ` is written,
            # so that elaborating the region (which writes it) does not change the program.
            func_e, func_t, func_eff = _check(func, ctx)
            fun = _expect_shape(func_t, FunS, "reduce needs a function of a pair", func.span)
            assert isinstance(fun.shape, FunS)
            pair_t = fun.shape.arg
            if not (isinstance(pair_t, Boxed) and isinstance(pair_t.shape, PairS)):
                raise _error(CheckError,
                             f"reduce's function must take a pair (τ, τ), not {pair_t}",
                             func.span, "reduce")
            region = region if region is not None else pair_t.region
            _place(ctx, region, span)
            if pair_t.region != region:
                raise _error(RegionError, f"reduce allocates its pairs in {region}, but the "
                             f"function expects pairs in {pair_t.region}", span, "reduce")
            inner = replace(ctx, ambient=region)
            zero_e, zero_t, zero_eff = _check(zero, inner)
            vec_e, vec_t, vec_eff = _check(vector, inner)
            vec = _expect_shape(vec_t, VecS, "reduce folds a vector", vector.span)
            assert isinstance(vec.shape, VecS) and isinstance(pair_t.shape, PairS)
            element_t = vec.shape.element
            result = fun.shape.result
            if not (subtype(element_t, pair_t.shape.first)
                    and subtype(element_t, pair_t.shape.second)
                    and subtype(result, pair_t.shape.first) and subtype(zero_t, result)):
                raise _error(CheckError, f"reduce needs f : ((τ, τ), {region}) -> τ, z : τ and a "
                             f"Vec τ; here f takes {pair_t}, returns {result}, z is {zero_t} and "
                             f"the vector holds {element_t}", span, "reduce")
            _gpu_call(ctx, func_e, func_t, span, "reducing with")
            effect = (func_eff | zero_eff | vec_eff | fun.shape.effect | fun.shape.worlds
                      | {fun.region, vec.region, region})
            return (replace(e, func=func_e, zero=zero_e, vector=vec_e, region=region), result,
                    effect)

        case Profile(_, inner_e, _):
            sub_e, sub_t, sub_eff = _check(inner_e, ctx)
            return replace(e, expr=sub_e), sub_t, sub_eff

    raise AssertionError(f"unknown node {e!r}")


def _check_region_app(node: RegionApp, inner_e: Expr, region: str, span: Span,
                      ctx: _Context) -> tuple[Expr, Type, frozenset[str]]:
    """e[ρ2] (Fig. 14): ρ2 must be in scope and outlived by the abstraction's bound."""
    sub_e, sub_t, sub_eff = _check(inner_e, ctx)
    _place(ctx, region, span)
    fun = _expect_shape(sub_t, RegionFunS, "only region abstractions can be instantiated",
                        inner_e.span)
    assert isinstance(fun.shape, RegionFunS)
    shape = fun.shape
    for bound in sorted(shape.bound):
        if bound not in _outlives_closure(ctx, region):
            raise _error(RegionError, f"{region} does not satisfy the bound "
                         f"{shape.region} >= {format_effect(shape.bound)}: {bound} is not known "
                         f"to outlive {region}", span, "Fig. 14, instantiation: Δ ⊢re ρ2 ≥ φ''")
    _gpu_call(ctx, sub_e, sub_t, span, "instantiating")
    result = substitute_type(shape.body, shape.region, region)
    effect = frozenset(region if r == shape.region else r for r in shape.effect)
    return (RegionApp(sub_e, region, node.span), result,
            sub_eff | effect | shape.worlds | {fun.region})
