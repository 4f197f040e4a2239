"""Rewrites of λG programs: small typed transformations, each offered only where its result
type-checks, for scoring under the cost semantics (§7.1 and §7.2 of the specification: "a profiling
framework [...] could be used to better determine placement of computation [...] how we should
segment the kernel [...] amongst work groups, [and] how we should layout work-group-shared and
global memory").

A rule has a `name`, a docstring citing where the transformation comes from, `sites(subject)`
(where it may apply) and `apply(subject, site)` (a new `Subject`; nothing is mutated). Rules work
on elaborated bodies (`check_program(...).body`, every region explicit), so the regions of the
code they build are known. `offered(subject)` applies every rule at every site and keeps the
results that (1) check again (`check_program`) and (2) print back: `pretty` of the result parses
and checks to the same elaborated body, so that `hetprof rewrite --apply ... -o OUT.lg` writes
exactly the program that was scored. A rewrite that fails either is not offered.

A site is named by the source position of the node it rewrites, `LINE:COL` in the original file
(`vertical-fusion@10:4`); code a rewrite builds keeps the position of the code it came from, so
names stay stable along a sequence of rewrites. Nodes without a position (generated programs) are
named `node<k>`, k their preorder index; two sites of one rule at one position get `.2`, `.3`.

One rewrite is not λG syntax: the work-group size is a setting of the device profile
(`gpu.work_group_size`), one for the whole program. `Subject.settings` carries it, and the scorer
(graphs.rewrite_score) turns settings into evaluation options.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import ClassVar, cast

from profiler.checker import CheckedProgram, check_program
from profiler.errors import HetprofError
from profiler.parser import parse
from profiler.printer import pretty
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
    If,
    Index,
    IntLit,
    IntS,
    Iota,
    Lambda,
    Length,
    Let,
    On,
    Pair,
    Par,
    ParMap,
    Program,
    Reduce,
    RegionApp,
    RegionLambda,
    Snd,
    Span,
    Var,
    VecLit,
    VecS,
    children,
)
from profiler.transform import (
    Path,
    binder_of,
    free_variables,
    fresh_name,
    map_children,
    node_at,
    rename_free,
    replace_at,
    variable_names,
    walk_paths,
    with_body,
)

SMALL_PARMAP = 8
"""The longest parmap `sequentialise` unrolls into a vector literal."""

WORK_GROUP_SIZES = (32, 64, 128, 256, 512, 1024)
"""The work-group sizes `work-group-size` tries (those that are multiples of the warp width)."""

BANKS = 32
"""Local-memory banks `pad-local` pads against (one padding word per BANKS words)."""


class NotApplicable(Exception):
    """A rule cannot rewrite at a site (raised by `apply`; `offered` skips the site)."""


@dataclass(frozen=True, slots=True)
class Subject:
    """What rewrites transform: a checked program and the settings that are not λG syntax
    (`work_group_size`, `warp_width`: the device profile's, filled in by the scorer)."""

    checked: CheckedProgram
    settings: tuple[tuple[str, int], ...] = ()

    @property
    def program(self) -> Program:
        """The program with its elaborated body (every region explicit), for printing."""
        return with_body(self.checked.program, self.checked.body)

    def setting(self, name: str) -> int | None:
        """The value of a setting, or None when the subject does not carry it."""
        return dict(self.settings).get(name)

    def with_setting(self, name: str, value: int) -> Subject:
        """The same program with one setting changed."""
        settings = dict(self.settings)
        settings[name] = value
        return Subject(self.checked, tuple(sorted(settings.items())))

    def key(self) -> tuple[str, tuple[tuple[str, int], ...]]:
        """Equal for subjects that are the same program with the same settings."""
        return pretty(self.program), self.settings

    def text(self, original: Program | None = None) -> str:
        """The program as one would write it: each `at ρ` the checker would infer anyway (the
        ambient region, `profiler.checker`) is left out, one at a time, where the text without it
        still checks to the same elaborated body; the rest stay explicit. With the `original`
        program as parsed, the annotations its author wrote are kept (a node of the same kind at
        the same source position)."""
        program, checked = self.checked.program, self.checked
        written = ({(node.span, type(node)) for _, node in walk_paths(original.body)
                    if getattr(node, "region", None) is not None} if original else set())
        body = checked.body
        for path, node in walk_paths(checked.body):
            if (getattr(node, "region", None) is None or not _elidable(node)
                    or (node.span, type(node)) in written):
                continue
            target = cast(_OptionalRegionNode, node_at(body, path))  # the same kind as `node`
            candidate = replace_at(body, path, replace(target, region=None))
            try:
                text = pretty(with_body(program, candidate))
                again = check_program(parse(text, program.file))
            except (HetprofError, ValueError):
                continue
            if again.body == checked.body and again.type == checked.type:
                body = candidate
        return pretty(with_body(program, body))


@dataclass(frozen=True, slots=True)
class Site:
    """Where a rule applies: the path of its anchor node, its name `LINE:COL` (see the module
    docstring), an optional variant (`work-group-size=64`) and a one-line description."""

    rule: str
    path: Path
    where: str = ""
    variant: str | None = None
    detail: str = ""
    extra: tuple = field(default=(), compare=False)

    @property
    def name(self) -> str:
        """The rule's name with the variant: `stage-local=r`."""
        return self.rule if self.variant is None else f"{self.rule}={self.variant}"

    @property
    def key(self) -> str:
        """`NAME@LINE:COL`, what `hetprof rewrite --apply` takes."""
        return f"{self.name}@{self.where}"


@dataclass(frozen=True, slots=True)
class Rewrite:
    """An offered rewrite: a site and the subject before and after it."""

    site: Site
    before: Subject
    after: Subject

    @property
    def key(self) -> str:
        """`NAME@LINE:COL` of the site."""
        return self.site.key


def parse_key(key: str) -> tuple[str, str]:
    """`NAME@SITE` split in two; ValueError when the `@` is missing."""
    name, sep, where = key.rpartition("@")
    if not sep or not name or not where:
        raise ValueError(f"{key!r}: write NAME@LINE:COL, e.g. vertical-fusion@10:4")
    return name, where


# --------------------------------------------------------------------------------------------------
# Walking the tree with the context rules need


@dataclass(frozen=True, slots=True)
class _Place:
    """A node and what surrounds it: the enclosing `on` (its path), the variables bound between
    that `on` and the node, and whether the node is inside the function of a parmap or reduce."""

    path: Path
    node: Expr
    on: Path | None
    bound_in_on: frozenset[str]
    in_parallel_function: bool


def _places(body: Expr) -> list[_Place]:
    found: list[_Place] = []
    todo = [_Place((), body, None, frozenset(), False)]
    while todo:
        place = todo.pop()
        found.append(place)
        node = place.node
        kids = children(node)
        for index in reversed(range(len(kids))):
            on = place.on
            bound = place.bound_in_on
            if isinstance(node, On):
                on, bound = place.path, frozenset()
            binder = binder_of(node, index)
            if binder is not None and on is not None:
                bound = bound | {binder}
            function = place.in_parallel_function or (
                isinstance(node, (ParMap, Reduce)) and index == 0)
            todo.append(_Place((*place.path, index), kids[index], on, bound, function))
    return found


def _vector_region(subject: Subject, node: Expr) -> str | None:
    type_ = subject.checked.types.get(id(node))
    if isinstance(type_, Boxed) and isinstance(type_.shape, VecS):
        return type_.region
    return None


def _element_type(subject: Subject, vector: Expr):
    type_ = subject.checked.types.get(id(vector))
    if isinstance(type_, Boxed) and isinstance(type_.shape, VecS):
        return type_.shape.element
    raise NotApplicable("the vector's type is unknown")


def _apply_function(func: Expr, argument: Expr) -> Expr:
    """`func argument`, inlined when func is a lambda written in place (`let x = arg in body`,
    Fig. 6's f e_i), else an application."""
    if isinstance(func, Lambda):
        return Let(func.param, argument, func.body, func.span)
    return App(func, argument, argument.span)


def _simple_function(func: Expr) -> bool:
    """A function a rewrite may duplicate or move: a lambda written in place, or a variable."""
    return isinstance(func, (Lambda, Var))


def _int(value: int, region: str, span: Span) -> IntLit:
    return IntLit(value, region, span)


def _arith(op: BinaryOperator, left: Expr, right: Expr, region: str, span: Span) -> BinOp:
    return BinOp(op, left, right, region, span)


# --------------------------------------------------------------------------------------------------
# Rules


class Rule:
    """A rewrite rule: `sites` lists where it may apply, `transform` builds the new body; `apply`
    checks the result again (a rule may build code the checker rejects: it is then not offered)."""

    name: ClassVar[str] = ""

    def sites(self, subject: Subject) -> list[Site]:
        raise NotImplementedError

    def transform(self, subject: Subject, site: Site) -> Expr:
        raise NotImplementedError

    def apply(self, subject: Subject, site: Site) -> Subject:
        """The subject rewritten at `site`, checked again; NotApplicable when it does not check or
        does not print back to itself."""
        return recheck(subject, self.transform(subject, site))


def recheck(subject: Subject, body: Expr) -> Subject:
    """A new body, checked, and printed and parsed back to the same elaborated body."""
    program = with_body(subject.checked.program, body)
    try:
        checked = check_program(program)
        text = pretty(with_body(program, checked.body))
        again = check_program(parse(text, program.file))
    except (HetprofError, ValueError) as error:
        raise NotApplicable(str(error)) from None
    if again.body != checked.body or again.type != checked.type:
        raise NotApplicable("the rewritten program does not print back to itself")
    if _may_nest_on(checked.body):
        raise NotApplicable("an `on` may call a function that runs an `on`")
    return Subject(checked, subject.settings)


def _elidable(node: Expr) -> bool:
    """Whether `node`'s `at ρ` may be left out in the syntax (its region field is optional)."""
    kind = type(node)
    if kind not in _OPTIONAL_REGION:
        _OPTIONAL_REGION[kind] = kind.__dataclass_fields__["region"].type in (
            "str | None", str | None)
    return _OPTIONAL_REGION[kind]


_OPTIONAL_REGION: dict[type, bool] = {}

# The node kinds `_elidable` accepts, for the type checker.
_OptionalRegionNode = (IntLit | FloatLit | BinOp | Lambda | Pair | Par | VecLit | ParMap | On
                       | RegionLambda | Length | Iota | Reduce)


def _may_nest_on(body: Expr) -> bool:
    """Whether an `on` may run another `on` at run time: its body calls a function that is not
    a lambda written in place while some function of the program contains an `on`. The checker
    rejects `on` inside `on` only where it is written (Fig. 2); a closure that launches a kernel
    can still be called from GPU code, so rewrites that move calls into an `on` must not."""
    nodes = walk_paths(body)
    launching = any(isinstance(node, (Lambda, RegionLambda, Fix)) and any(
        isinstance(inner, On) for _, inner in walk_paths(node)) for _, node in nodes)
    if not launching:
        return False
    for _, node in nodes:
        if isinstance(node, On):
            for _, inner in walk_paths(node.body):
                if isinstance(inner, (App, RegionApp)) or (
                        isinstance(inner, (ParMap, Reduce)) and not isinstance(inner.func, Lambda)):
                    return True
    return False


@dataclass(frozen=True, slots=True)
class VerticalFusion(Rule):
    """`parmap f (parmap g x)` → `parmap (f∘g) x` (map fusion, Dybdal 2017 §2.3.1; Futhark's
    and Accelerate's producer-consumer fusion). The intermediate vector is never built: its
    result vector, merge and allocation, and its elements' reads by the consumer go away.

    Also fuses through a `let xs = parmap g x in ... parmap f xs ...` when xs is used exactly
    once, and that use is evaluated exactly once (not under a lambda, an `if` or a parallel
    function) with the producer's free variables still in scope there (examples/normalize_inc.lg,
    Dybdal §2.3.3). f∘g is `lambda y. let x_f = g's body[y/x_g] in f's body`, with y fresh; the
    latent effect is inferred (the union of f's and g's)."""

    name: ClassVar[str] = "vertical-fusion"

    def sites(self, subject: Subject) -> list[Site]:
        found = []
        for path, node in walk_paths(subject.checked.body):
            if not isinstance(node, ParMap) or not _simple_function(node.func):
                continue
            if isinstance(node.vector, ParMap) and _simple_function(node.vector.func):
                found.append(Site(self.name, path, detail="fuse the parmap into its producer"))
            elif isinstance(node.vector, Var):
                let_path = _single_use_producer(subject.checked.body, path, node.vector.name)
                if let_path is not None:
                    found.append(Site(self.name, path, extra=(let_path,),
                                      detail=f"fuse the parmap into {node.vector.name}'s producer"))
        return found

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        consumer = node_at(body, site.path)
        assert isinstance(consumer, ParMap)
        taken = set(variable_names(body))
        if not site.extra:
            producer = consumer.vector
            assert isinstance(producer, ParMap)
            fused = _fuse(subject, consumer, producer, taken)
            return replace_at(body, site.path, fused)
        (let_path,) = site.extra
        let = node_at(body, let_path)
        assert isinstance(let, Let) and isinstance(let.bound, ParMap)
        fused = _fuse(subject, consumer, let.bound, taken)
        relative = site.path[len(let_path) + 1:]
        return replace_at(body, let_path, replace_at(let.body, relative, fused))


def _fuse(subject: Subject, consumer: ParMap, producer: ParMap, taken: set[str]) -> ParMap:
    f, g = consumer.func, producer.func
    y = fresh_name(g.param if isinstance(g, Lambda) else "y", taken)
    if isinstance(g, Lambda):
        param_type = g.param_type
        inner = rename_free(g.body, g.param, y)
    else:
        param_type = _element_type(subject, producer.vector)
        inner = App(g, Var(y, g.span), g.span)
    composed_body = _apply_function(f, inner)
    region = next((h.region for h in (f, g) if isinstance(h, Lambda)), consumer.region)
    span = f.span if isinstance(f, Lambda) else consumer.span
    composed = Lambda(y, param_type, None, composed_body, region, span)
    return ParMap(composed, producer.vector, consumer.region, consumer.span)


def _single_use_producer(body: Expr, use_path: Path, name: str) -> Path | None:
    """The path of the `let name = parmap ...` whose variable the vector at `use_path` is, when
    moving that parmap to its use keeps evaluating it exactly once with the same variables."""
    for cut in range(len(use_path) - 1, -1, -1):
        ancestor = node_at(body, use_path[:cut])
        binder = binder_of(ancestor, use_path[cut])
        if binder != name:
            continue
        if not (isinstance(ancestor, Let) and use_path[cut] == 1
                and isinstance(ancestor.bound, ParMap)
                and _simple_function(ancestor.bound.func)):
            return None
        let_path = use_path[:cut]
        if _count_free(ancestor.body, name) != 1:
            return None
        needed = free_variables(ancestor.bound)
        node = ancestor.body
        for index in use_path[cut + 1:]:
            if isinstance(node, (Lambda, RegionLambda, Fix, If)) or (
                    isinstance(node, (ParMap, Reduce)) and index == 0):
                return None
            if binder_of(node, index) in needed:
                return None
            node = children(node)[index]
        return let_path
    return None


def _count_free(e: Expr, name: str) -> int:
    if isinstance(e, Var):
        return int(e.name == name)
    return sum(_count_free(child, name) for index, child in enumerate(children(e))
               if binder_of(e, index) != name)


@dataclass(frozen=True, slots=True)
class HorizontalFusion(Rule):
    """`let a = parmap f v in let b = parmap g v in e` → `let ab = parmap (λy. (f y, g y)) v in e`
    with `a[i]` read as `fst ab[i]` and `b[i]` as `snd ab[i]` (horizontal fusion of two maps over
    one input, Dybdal 2017 §2.3.2; the dot product of Harlan, Holk et al. 2014 §3, zips xs and ys
    this way). One pass over v instead of two, one vector instead of two; every use of a and b
    must be an index or a `length`, and the two inputs must be the same expression."""

    name: ClassVar[str] = "horizontal-fusion"

    def sites(self, subject: Subject) -> list[Site]:
        found = []
        for path, node in walk_paths(subject.checked.body):
            if not (isinstance(node, Let) and isinstance(node.bound, ParMap)
                    and isinstance(node.body, Let) and isinstance(node.body.bound, ParMap)):
                continue
            first, second = node.bound, node.body.bound
            if (first.vector != second.vector or node.name == node.body.name
                    or node.name in free_variables(second)
                    or not (_simple_function(first.func) and _simple_function(second.func))
                    or not _only_indexed(node.body.body, frozenset({node.name,
                                                                    node.body.name}))):
                continue
            found.append(Site(self.name, (*path, 0), extra=(path,),
                              detail=f"one parmap for {node.name} and {node.body.name}"))
        return found

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        (let_path,) = site.extra
        outer = node_at(body, let_path)
        assert isinstance(outer, Let) and isinstance(outer.body, Let)
        first, second = outer.bound, outer.body.bound
        assert isinstance(first, ParMap) and isinstance(second, ParMap)
        taken = set(variable_names(body))
        y = fresh_name("y", taken)
        both = fresh_name(f"{outer.name}_{outer.body.name}", taken)
        element = _element_type(subject, first.vector)
        region = first.region
        assert region is not None
        pair = Pair(_call(first.func, y), _call(second.func, y), region, first.span)
        closure = next((h.region for h in (first.func, second.func) if isinstance(h, Lambda)),
                       region)
        zipped = ParMap(Lambda(y, element, None, pair, closure, first.span), first.vector, region,
                        first.span)
        rest = _project(outer.body.body, {outer.name: Fst, outer.body.name: Snd}, both)
        return replace_at(body, let_path, Let(both, zipped, rest, outer.span))


def _call(func: Expr, argument: str) -> Expr:
    """`func argument` for a fresh variable: a lambda's body with its parameter renamed to it, or
    an application of a variable."""
    if isinstance(func, Lambda):
        return rename_free(func.body, func.param, argument)
    return App(func, Var(argument, func.span), func.span)


def _only_indexed(e: Expr, names: frozenset[str]) -> bool:
    """Whether every free use of `names` in e is `x[i]` or `length x`."""
    match e:
        case Index(Var(name), index, _) if name in names:
            return _only_indexed(index, names)
        case Length(Var(name), _, _) if name in names:
            return True
        case Var(name, _):
            return name not in names
    for position, child in enumerate(children(e)):
        inner = names - {binder_of(e, position)}
        if inner and not _only_indexed(child, inner):
            return False
    return True


def _project(e: Expr, projections: dict[str, type], both: str) -> Expr:
    """e with `a[i]` as `fst both[i]` (and `b[i]` as `snd both[i]`, `length a` as `length both`)."""
    match e:
        case Index(Var(name, span), index, index_span) if name in projections:
            read = Index(Var(both, span), _project(index, projections, both), index_span)
            return projections[name](read, index_span)
        case Length(Var(name, span), region, length_span) if name in projections:
            return Length(Var(both, span), region, length_span)
    kids = children(e)
    if not kids:
        return e
    position = [0]

    def go(child: Expr) -> Expr:
        index = position[0]
        position[0] += 1
        inner = {k: v for k, v in projections.items() if k != binder_of(e, index)}
        return _project(child, inner, both) if inner else child

    return map_children(e, go)


@dataclass(frozen=True, slots=True)
class Redomap(Rule):
    """`reduce f z (parmap g v)` → the map fused into the reduction's first level (redomap, Dybdal
    2017 §2.3.2; Futhark's `redomap`): one thread per pair of elements computes
    `f (g v[2i], g v[2i+1])` (or `g v[2i]` for an odd last element), and the reduction goes on
    from there. The intermediate vector of n elements and one level of the tree (on the GPU: one
    kernel launch) go away, for an iota and the index arithmetic. Because λG's `reduce` pairs
    neighbours level by level, this keeps its tree exactly: the value is the same even for floats.
    f and g must be lambdas written in place."""

    name: ClassVar[str] = "redomap"

    def sites(self, subject: Subject) -> list[Site]:
        found = []
        body = subject.checked.body
        for path, node in walk_paths(body):
            if not (isinstance(node, Reduce) and isinstance(node.func, Lambda)):
                continue
            if isinstance(node.vector, ParMap) and isinstance(node.vector.func, Lambda):
                found.append(Site(self.name, path,
                                  detail="fuse the parmap into the reduction's first level"))
            elif isinstance(node.vector, Var):
                let_path = _single_use_producer(body, path, node.vector.name)
                let = node_at(body, let_path) if let_path is not None else None
                if (isinstance(let, Let) and isinstance(let.bound, ParMap)
                        and isinstance(let.bound.func, Lambda)):
                    found.append(Site(self.name, path, extra=(let_path,),
                                      detail=f"fuse {node.vector.name}'s parmap into the "
                                      "reduction's first level"))
        return found

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        node = node_at(body, site.path)
        assert isinstance(node, Reduce)
        taken = set(variable_names(body))
        if not site.extra:
            assert isinstance(node.vector, ParMap)
            return replace_at(body, site.path, _redomap(node, node.vector, taken))
        (let_path,) = site.extra
        let = node_at(body, let_path)
        assert isinstance(let, Let) and isinstance(let.bound, ParMap)
        relative = site.path[len(let_path) + 1:]
        return replace_at(body, let_path,
                          replace_at(let.body, relative, _redomap(node, let.bound, taken)))


def _redomap(node: Reduce, mapped: ParMap, taken: set[str]) -> Expr:
    """`reduce f z (parmap g v)` with g fused into the first level (see `Redomap`)."""
    f, g = node.func, mapped.func
    assert isinstance(f, Lambda) and isinstance(g, Lambda)
    region, span = node.region, node.span
    assert region is not None and mapped.region is not None
    m, count, i, a, b = (fresh_name(base, taken) for base in ("m", "len", "i", "a", "b"))
    add, mul, div = BinaryOperator.ADD, BinaryOperator.MUL, BinaryOperator.DIV

    def left() -> Expr:
        return _arith(mul, _int(2, region, span), Var(i, span), region, span)

    def right() -> Expr:
        return _arith(add, left(), _int(1, region, span), region, span)

    def g_at(index: Expr) -> Expr:
        return Let(g.param, Index(Var(m, span), index, span), g.body, g.span)

    pair = Pair(Var(a, span), Var(b, span), region, span)
    combine = Let(b, g_at(right()), Let(f.param, pair, f.body, f.span), span)
    test = BinOp(BinaryOperator.LT, right(), Var(count, span), None, span)
    thread = Let(a, g_at(left()), If(test, combine, Var(a, span), span), span)
    lam = Lambda(i, Boxed(IntS(), region), None, thread, g.region, g.span)
    halves = _arith(div, _arith(add, Var(count, span), _int(1, region, span), region, span),
                    _int(2, region, span), region, span)
    first_level = ParMap(lam, Iota(halves, region, span), mapped.region, mapped.span)
    return Let(m, mapped.vector, Let(count, Length(Var(m, span), region, span),
                                     replace(node, vector=first_level), span), span)


@dataclass(frozen=True, slots=True)
class InsertOn(Rule):
    """`e` → `on e at ρ` for a parmap or reduce on the CPU (§7.1: "whether or not we want to
    insert the underlined `on` form"); ρ is the region of e's result (Fig. 2: the body of
    `on ... at ρ` leaves its result in ρ). Offered outside every `on` and not inside the function
    of another parallel form."""

    name: ClassVar[str] = "insert-on"

    def sites(self, subject: Subject) -> list[Site]:
        return [Site(self.name, place.path, detail="run it on the GPU")
                for place in _places(subject.checked.body)
                if isinstance(place.node, (ParMap, Reduce)) and place.on is None
                and not place.in_parallel_function]

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        node = node_at(body, site.path)
        type_ = subject.checked.types.get(id(node))
        if not isinstance(type_, Boxed):
            raise NotApplicable("an `on` needs a boxed result")
        return replace_at(body, site.path, On(node, type_.region, (), node.span))


@dataclass(frozen=True, slots=True)
class RemoveOn(Rule):
    """`on e at ρ` → `e`: run e on the CPU (§7.1, the other placement; graphs.placement does it
    for every `on` at once). Fig. 2 gives `on e at ρ` the type of e, already in ρ."""

    name: ClassVar[str] = "remove-on"

    def sites(self, subject: Subject) -> list[Site]:
        return [Site(self.name, path, detail="run it on the CPU")
                for path, node in walk_paths(subject.checked.body) if isinstance(node, On)]

    def transform(self, subject: Subject, site: Site) -> Expr:
        node = node_at(subject.checked.body, site.path)
        assert isinstance(node, On)
        return replace_at(subject.checked.body, site.path, node.body)


@dataclass(frozen=True, slots=True)
class WidenOn(Rule):
    """`let x = e1 in on e2 at ρ` → `on (let x = e1 in e2) at ρ`: move the `on` out over the let
    before it, so that e1 runs on the GPU too (§7.1 placement; §7.2 "better determine placement
    of computation"). e1 must be GPU code (no letregion, no `on`): the checker decides."""

    name: ClassVar[str] = "widen-on"

    def sites(self, subject: Subject) -> list[Site]:
        body = subject.checked.body
        return [Site(self.name, path, detail="move the `on` out over the let before it")
                for path, node in walk_paths(body)
                if isinstance(node, On) and path and path[-1] == 1
                and isinstance(node_at(body, path[:-1]), Let)]

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        on = node_at(body, site.path)
        let = node_at(body, site.path[:-1])
        assert isinstance(on, On) and isinstance(let, Let)
        return replace_at(body, site.path[:-1], replace(on, body=replace(let, body=on.body)))


@dataclass(frozen=True, slots=True)
class NarrowOn(Rule):
    """`on (let x = e1 in e2) at ρ` → `let x = e1 in on e2 at ρ`: move the `on` in past the first
    let of its body, so that e1 runs on the CPU (§7.1 placement, the inverse of widen-on)."""

    name: ClassVar[str] = "narrow-on"

    def sites(self, subject: Subject) -> list[Site]:
        return [Site(self.name, path, detail="run the first let of the `on` on the CPU")
                for path, node in walk_paths(subject.checked.body)
                if isinstance(node, On) and isinstance(node.body, Let)]

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        on = node_at(body, site.path)
        assert isinstance(on, On) and isinstance(on.body, Let)
        let = on.body
        return replace_at(body, site.path, replace(let, body=replace(on, body=let.body)))


@dataclass(frozen=True, slots=True)
class StageLocal(Rule):
    """`on e at ρ'` → `on local [ρ] e at ρ'`: stage region ρ in work-group-shared (local) memory
    (§7.1.2, "using local memory"; examples/strided.lg). Reads and writes of ρ inside the kernel
    then cost the local price; the staging is bounded by the profile's local memory."""

    name: ClassVar[str] = "stage-local"

    def sites(self, subject: Subject) -> list[Site]:
        return [Site(self.name, path, variant=region, detail=f"stage {region} in local memory")
                for path, node in walk_paths(subject.checked.body) if isinstance(node, On)
                for region in node.uses if region not in node.local]

    def transform(self, subject: Subject, site: Site) -> Expr:
        on = node_at(subject.checked.body, site.path)
        assert isinstance(on, On) and site.variant is not None
        return replace_at(subject.checked.body, site.path,
                          replace(on, local=(*on.local, site.variant)))


@dataclass(frozen=True, slots=True)
class UnstageLocal(Rule):
    """`on local [ρ] e at ρ'` → `on e at ρ'`: use global memory for ρ again (§7.1.2, "global
    memory only"); the inverse of stage-local."""

    name: ClassVar[str] = "unstage-local"

    def sites(self, subject: Subject) -> list[Site]:
        return [Site(self.name, path, variant=region, detail=f"read {region} from global memory")
                for path, node in walk_paths(subject.checked.body) if isinstance(node, On)
                for region in node.local]

    def transform(self, subject: Subject, site: Site) -> Expr:
        on = node_at(subject.checked.body, site.path)
        assert isinstance(on, On)
        local = tuple(r for r in on.local if r != site.variant)
        return replace_at(subject.checked.body, site.path, replace(on, local=local))


@dataclass(frozen=True, slots=True)
class WorkGroupSize(Rule):
    """Choose the work-group size (§7.1.2: "if we used w work groups of size p"; §7.2: "how we
    should segment the kernel generated by the computation amongst work groups").

    Not λG syntax: the device profile has one work-group size (`gpu.work_group_size`) for every
    kernel, so this rewrite changes the evaluation settings of the whole program, not one `on`.
    It is offered once, at the program's first `on`, for each size of WORK_GROUP_SIZES that is a
    multiple of the warp width and differs from the current one."""

    name: ClassVar[str] = "work-group-size"

    def sites(self, subject: Subject) -> list[Site]:
        first = next((path for path, node in walk_paths(subject.checked.body)
                      if isinstance(node, On)), None)
        if first is None:
            return []
        current = subject.setting("work_group_size")
        warp = subject.setting("warp_width") or 1
        return [Site(self.name, first, variant=str(size),
                     detail=f"work groups of {size} threads (every `on`)")
                for size in WORK_GROUP_SIZES if size % warp == 0 and size != current]

    def apply(self, subject: Subject, site: Site) -> Subject:
        assert site.variant is not None
        return subject.with_setting("work_group_size", int(site.variant))


@dataclass(frozen=True, slots=True)
class Sequentialise(Rule):
    """`parmap f [e1, ..., ek]` (or `parmap f (iota k)`, k ≤ SMALL_PARMAP) → `[f e1, ..., f ek]`:
    a small map run as sequential code, saving the fork, join and merge of the ⊗ (Fig. 6's
    parmap rule) and, on the GPU, a kernel launch (Harlan, Holk et al. 2014 §5, runs a kernel's
    inner parallel forms sequentially in each thread; Futhark sequentialises inner parallelism
    the same way)."""

    name: ClassVar[str] = "sequentialise"

    def sites(self, subject: Subject) -> list[Site]:
        found = []
        for path, node in walk_paths(subject.checked.body):
            if isinstance(node, ParMap) and _simple_function(node.func):
                size = _static_length(node.vector)
                if size is not None and 1 <= size <= SMALL_PARMAP:
                    found.append(Site(self.name, path,
                                      detail=f"run the {size} elements one after another"))
        return found

    def transform(self, subject: Subject, site: Site) -> Expr:
        node = node_at(subject.checked.body, site.path)
        assert isinstance(node, ParMap) and node.region is not None
        vector = node.vector
        if isinstance(vector, VecLit):
            elements = vector.elements
        else:
            assert isinstance(vector, Iota) and isinstance(vector.count, IntLit)
            assert isinstance(vector.count.value, int) and vector.region is not None
            elements = tuple(IntLit(i, vector.region, vector.span)
                             for i in range(vector.count.value))
        unrolled = VecLit(tuple(_apply_function(node.func, e) for e in elements), node.region,
                          node.span)
        return replace_at(subject.checked.body, site.path, unrolled)


def _static_length(vector: Expr) -> int | None:
    if isinstance(vector, VecLit):
        return len(vector.elements)
    if (isinstance(vector, Iota) and isinstance(vector.count, IntLit)
            and isinstance(vector.count.value, int)):
        return vector.count.value
    return None


_HOISTABLE = (IntLit, FloatLit, BoolLit, BinOp, Pair, Fst, Snd, Var, Length)


@dataclass(frozen=True, slots=True)
class HoistAllocation(Rule):
    """`on (... c ...) at ρ` → `let h = c in on (... h ...) at ρ` for a kernel-invariant allocating
    expression c (literals, arithmetic and pairs of them, over variables bound outside the `on`):
    memory expansion's first step, hoisting allocations out of kernels (Munksgaard, Oancea and
    Henriksen, IFL 2022, §5: "GPU kernels cannot efficiently allocate memory"). c is then
    allocated once on the CPU and transferred, instead of once per GPU thread. Division and
    indexing are not hoisted: evaluated unconditionally they could fail where the kernel did not."""

    name: ClassVar[str] = "hoist-allocation"

    def sites(self, subject: Subject) -> list[Site]:
        found = []
        places = _places(subject.checked.body)
        inside = {place.path: place.bound_in_on for place in places if place.on is not None}
        for place in places:
            if (place.on is None or len(place.path) == len(place.on) + 1
                    or not _kernel_invariant(place.node, place.bound_in_on)):
                continue
            parent = place.path[:-1]
            parent_node = node_at(subject.checked.body, parent)
            if parent in inside and _kernel_invariant(parent_node, inside[parent]):
                continue  # offer the largest invariant expression only
            found.append(Site(self.name, place.path, extra=(place.on,),
                              detail="allocate it once, before the `on`"))
        return found

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        (on_path,) = site.extra
        on = node_at(body, on_path)
        hoisted = node_at(body, site.path)
        name = fresh_name("h", set(variable_names(body)))
        relative = site.path[len(on_path):]
        new_on = replace_at(on, relative, Var(name, hoisted.span))
        return replace_at(body, on_path, Let(name, hoisted, new_on, hoisted.span))


def _kernel_invariant(e: Expr, bound: frozenset[str]) -> bool:
    """Whether e is an allocating expression of the hoistable forms over variables bound outside
    the `on` (no division, no indexing)."""
    allocates = False
    for _, node in walk_paths(e):
        if not isinstance(node, _HOISTABLE) or (
                isinstance(node, BinOp) and node.op is BinaryOperator.DIV):
            return False
        if isinstance(node, (IntLit, FloatLit, Pair, Length)) or (
                isinstance(node, BinOp) and not node.op.is_comparison):
            allocates = True
    return allocates and not (free_variables(e) & bound)


@dataclass(frozen=True, slots=True)
class PadLocal(Rule):
    """Pad a vector staged in local memory against bank conflicts: `t[e]` inside
    `on local [ρ] ...` reads `t'[j + j / 32]` (j = e) from a copy t' of t with one padding word
    after every 32 elements, built before the `on` (t'[k] = t[k - k / 33]). A warp reading at
    stride 32, which sends every lane to one bank, then reads at stride 33, which is
    conflict-free (§6.4 and Fig. 9's bank conflicts; the classic shared-memory padding of
    NVIDIA's CUDA C Best Practices Guide, "Shared Memory and Memory Banks"). BANKS = 32.

    In λG a vector holds locations: the words a warp's lanes read are its elements' own, so the
    copy allocates each element afresh (`t[k - k / 33] + 0`) rather than copying locations; only
    vectors of ints or floats are padded. The copy costs a CPU parmap and its transfer, and the
    kernel pays the index arithmetic: the cost model says when that pays."""

    name: ClassVar[str] = "pad-local"

    def sites(self, subject: Subject) -> list[Site]:
        found = []
        seen = set()
        body = subject.checked.body
        for place in _places(body):
            node = place.node
            if not (place.on is not None and isinstance(node, Index)
                    and isinstance(node.vector, Var) and node.vector.name not in place.bound_in_on):
                continue
            on = node_at(body, place.on)
            assert isinstance(on, On)
            region = _vector_region(subject, node.vector)
            element = subject.checked.types.get(id(node))
            if (region is None or region not in on.local or (place.on, node.vector.name) in seen
                    or not (isinstance(element, Boxed)
                            and isinstance(element.shape, (IntS, FloatS)))):
                continue
            seen.add((place.on, node.vector.name))
            found.append(Site(self.name, place.path, extra=(place.on, node.vector.name, region),
                              detail=f"pad {node.vector.name} in local memory ({region})"))
        return found

    def transform(self, subject: Subject, site: Site) -> Expr:
        body = subject.checked.body
        on_path, name, region = site.extra
        on = node_at(body, on_path)
        span = node_at(body, site.path).span
        taken = set(variable_names(body))
        padded, k = fresh_name(f"{name}_padded", taken), fresh_name("k", taken)
        add, sub, div = BinaryOperator.ADD, BinaryOperator.SUB, BinaryOperator.DIV

        def length() -> Expr:
            return Length(Var(name, span), region, span)

        count = _arith(add, length(), _arith(
            div, _arith(sub, length(), _int(1, region, span), region, span),
            _int(BANKS, region, span), region, span), region, span)
        source = _arith(sub, Var(k, span), _arith(div, Var(k, span), _int(BANKS + 1, region, span),
                                                  region, span), region, span)
        element = subject.checked.types[id(node_at(body, site.path))]
        assert isinstance(element, Boxed)
        zero_name = fresh_name("zero", taken)
        zero = (IntLit(0, region, span) if isinstance(element.shape, IntS)
                else FloatLit(0.0, region, span))
        value = _arith(add, Index(Var(name, span), source, span), Var(zero_name, span), region,
                       span)
        copy = ParMap(Lambda(k, Boxed(IntS(), region), None, value, region, span),
                      Iota(count, region, span), region, span)
        new_on = _pad_indices(on, name, padded, region, taken)
        return replace_at(body, on_path,
                          Let(zero_name, zero, Let(padded, copy, new_on, span), span))


def _pad_indices(e: Expr, name: str, padded: str, region: str, taken: set[str]) -> Expr:
    """e with each `name[i]` (name free) read as `let j = i in padded[j + j / BANKS]`."""
    match e:
        case Index(Var(vector, span), index, index_span) if vector == name:
            j = fresh_name("j", taken)
            inner = _pad_indices(index, name, padded, region, taken)
            skew = _arith(BinaryOperator.ADD, Var(j, span), _arith(
                BinaryOperator.DIV, Var(j, span), _int(BANKS, region, span), region, span),
                region, span)
            return Let(j, inner, Index(Var(padded, span), skew, index_span), index_span)
    kids = children(e)
    if not kids:
        return e
    position = [0]

    def go(child: Expr) -> Expr:
        index = position[0]
        position[0] += 1
        if binder_of(e, index) == name:
            return child
        return _pad_indices(child, name, padded, region, taken)

    return map_children(e, go)


RULES: tuple[Rule, ...] = (
    VerticalFusion(), HorizontalFusion(), Redomap(), InsertOn(), RemoveOn(), WidenOn(),
    NarrowOn(), StageLocal(), UnstageLocal(), WorkGroupSize(), Sequentialise(),
    HoistAllocation(), PadLocal(),
)
"""Every rule, in the order sites are listed."""


def rule_names() -> list[str]:
    """The names of every rule, in order."""
    return [rule.name for rule in RULES]


# --------------------------------------------------------------------------------------------------
# The engine


def sites(subject: Subject, rules: tuple[Rule, ...] = RULES) -> list[Site]:
    """Every rule's sites, named (`LINE:COL`, see the module docstring), not yet applied."""
    body = subject.checked.body
    order = {path: index for index, (path, _) in enumerate(walk_paths(body))}
    named: list[Site] = []
    used: set[str] = set()
    for rule in rules:
        for site in rule.sites(subject):
            node = node_at(body, site.path)
            where = (f"{node.span.line}:{node.span.column}" if node.span.line > 0
                     else f"node{order[site.path]}")
            key, k = f"{site.name}@{where}", 1
            base = where
            while key in used:
                k += 1
                where = f"{base}.{k}"
                key = f"{site.name}@{where}"
            used.add(key)
            named.append(replace(site, where=where))
    return named


def offered(subject: Subject, rules: tuple[Rule, ...] = RULES) -> list[Rewrite]:
    """Every rewrite that applies: its result checks and prints back (see `Rule.apply`)."""
    return list(_offered(subject, rules))


def _offered(subject: Subject, rules: tuple[Rule, ...]) -> Iterator[Rewrite]:
    by_name = {rule.name: rule for rule in rules}
    for site in sites(subject, rules):
        try:
            after = by_name[site.rule].apply(subject, site)
        except NotApplicable:
            continue
        yield Rewrite(site, subject, after)


def find(subject: Subject, key: str, rules: tuple[Rule, ...] = RULES) -> Rewrite:
    """The offered rewrite named `key` (`NAME@LINE:COL`). KeyError, with a message that lists what
    is offered, when there is none: a rule name that does not exist, a site where the rule does
    not apply, or a rewrite whose result does not check."""
    name, where = parse_key(key)
    rule_name = name.partition("=")[0]
    if rule_name not in {rule.name for rule in rules}:
        raise KeyError(f"no rewrite rule {rule_name!r}; the rules are: "
                       + ", ".join(rule.name for rule in rules))
    available = offered(subject, rules)
    for rewrite in available:
        if rewrite.key == key:
            return rewrite
    here = [r.key for r in available if r.site.rule == rule_name]
    listing = ", ".join(here) if here else "none in this program"
    raise KeyError(f"{key}: {rule_name} does not apply there; it applies at: {listing}")


def start(checked: CheckedProgram, settings: dict[str, int] | None = None) -> Subject:
    """The subject of a freshly checked program."""
    return Subject(checked, tuple(sorted((settings or {}).items())))
