"""Transformations of elaborated λG: new trees, the old one untouched.

`map_children` rebuilds a node from its transformed children (one `match`); the placements used by
validation and by `hetprof place` are built on it: `centre_on_bodies` runs every `on` body on the
CPU (marking it as a cost centre; `remove_on` without the mark), `gpu_placement` puts every outermost CPU `parmap` under `on`.
The results must be checked again (`check_program`) before they run. The helpers at the end
(paths to nodes, free variables, fresh names, capture-free renaming) serve `profiler.rewrite`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from profiler.syntax import (
    App,
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
    Program,
    Reduce,
    RegionApp,
    RegionLambda,
    Snd,
    Span,
    Var,
    VecLit,
    children,
)


def map_children(e: Expr, f: Callable[[Expr], Expr]) -> Expr:
    """e with f applied to each immediate sub-expression."""
    match e:
        case IntLit() | FloatLit() | BoolLit() | Var():
            return e
        case BinOp(_, left, right, _, _):
            return replace(e, left=f(left), right=f(right))
        case Par(left, right, _, _):
            return replace(e, left=f(left), right=f(right))
        case If(cond, then, orelse, _):
            return replace(e, cond=f(cond), then=f(then), orelse=f(orelse))
        case Lambda(body=body) | RegionLambda(body=body) | LetRegion(body=body) | Fix(body=body):
            return replace(e, body=f(body))
        case App(func, arg, _):
            return replace(e, func=f(func), arg=f(arg))
        case Pair(first, second, _, _):
            return replace(e, first=f(first), second=f(second))
        case Fst(inner, _) | Snd(inner, _) | Length(inner, _, _) | Profile(_, inner, _) | \
                RegionApp(inner, _, _):
            return replace(e, expr=f(inner))
        case VecLit(elements, _, _):
            return replace(e, elements=tuple(f(x) for x in elements))
        case ParMap(func, vector, _, _):
            return replace(e, func=f(func), vector=f(vector))
        case On(body=body):
            return replace(e, body=f(body))
        case Let(_, bound, body, _):
            return replace(e, bound=f(bound), body=f(body))
        case Index(vector, index, _):
            return replace(e, vector=f(vector), index=f(index))
        case Iota(count, _, _):
            return replace(e, count=f(count))
        case Reduce(func, zero, vector, _, _):
            return replace(e, func=f(func), zero=f(zero), vector=f(vector))
    raise AssertionError(f"unknown node {e!r}")


def remove_on(e: Expr) -> Expr:
    """e with every `on body at ρ` replaced by body: the CPU placement (Fig. 2 gives `on e at ρ`
    the type of e, whose result is already in ρ)."""
    if isinstance(e, On):
        return remove_on(e.body)
    return map_children(e, remove_on)


def centre_on_bodies(e: Expr, prefix: str) -> Expr:
    """Every `on e at ρ` becomes `profile "<prefix>k" e`: the same work, on the CPU. The k-th
    `on` written (in `centre_names`' order) is the centre `<prefix>k`, however many times it
    runs: a centre's cost is that of all its runs."""
    return _centred(e, prefix)[0]


def centre_names(e: Expr, prefix: str) -> dict[Span, str]:
    """The cost centre `centre_on_bodies` makes of each `on` of `e`, by the `on`'s span: what
    lets a run of an `on` (one device box or offload, of which an `on` inside a loop or a
    function has many) find the CPU centre that stands for all runs of the same `on`."""
    return _centred(e, prefix)[1]


def _centred(e: Expr, prefix: str) -> tuple[Expr, dict[Span, str]]:
    names: dict[Span, str] = {}
    counter = [0]

    def go(node: Expr) -> Expr:
        if isinstance(node, On):
            name = f"{prefix}{counter[0]}"
            counter[0] += 1
            names[node.span] = name
            return Profile(name, go(node.body), node.span)
        return map_children(node, go)

    return go(e), names


def gpu_placement(e: Expr) -> Expr:
    """Every outermost `parmap` outside an `on` is put under `on ... at ρ` (ρ its own region)."""

    def go(node: Expr) -> Expr:
        if isinstance(node, On):
            return node
        if isinstance(node, ParMap):
            return On(node, node.region, (), node.span)
        return map_children(node, go)

    return go(e)


def has_on(e: Expr) -> bool:
    """Whether e contains an `on`."""
    todo = [e]
    while todo:
        node = todo.pop()
        if isinstance(node, On):
            return True
        todo.extend(children(node))
    return False


def with_body(program: Program, body: Expr) -> Program:
    return Program(program.params, body, program.source, program.file)


# --------------------------------------------------------------------------------------------------
# Helpers for the rewrite engine (profiler.rewrite): addressing nodes by path, free variables,
# fresh names and capture-free renaming.

Path = tuple[int, ...]
"""A node's address: the indices of `children` from the root down to it."""


def walk_paths(e: Expr) -> list[tuple[Path, Expr]]:
    """Every node of e with its path, in preorder (parents before children, left to right)."""
    found: list[tuple[Path, Expr]] = []
    todo: list[tuple[Path, Expr]] = [((), e)]
    while todo:
        path, node = todo.pop()
        found.append((path, node))
        kids = children(node)
        todo.extend(((*path, i), kid) for i, kid in reversed(list(enumerate(kids))))
    return found


def node_at(e: Expr, path: Path) -> Expr:
    """The sub-expression of e at `path`."""
    for index in path:
        e = children(e)[index]
    return e


def replace_at(e: Expr, path: Path, new: Expr) -> Expr:
    """e with the sub-expression at `path` replaced by `new` (a new tree; e is untouched)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    position = [0]

    def rebuild(child: Expr) -> Expr:
        index = position[0]
        position[0] += 1
        return replace_at(child, rest, new) if index == head else child

    return map_children(e, rebuild)


def binder_of(e: Expr, index: int) -> str | None:
    """The value variable that node e binds in its child number `index`, if any."""
    match e:
        case Lambda(param=param):
            return param
        case Fix(name=name):
            return name
        case Let(name=name) if index == 1:
            return name
    return None


def free_variables(e: Expr) -> frozenset[str]:
    """The value variables e uses and does not bind (size parameters are `IntLit`s once
    elaborated, so they are not among them)."""
    match e:
        case Var(name, _):
            return frozenset({name})
    found: set[str] = set()
    for index, child in enumerate(children(e)):
        inner = free_variables(child)
        bound = binder_of(e, index)
        found |= inner - {bound} if bound is not None else inner
    return frozenset(found)


def variable_names(e: Expr) -> frozenset[str]:
    """Every value variable e mentions or binds: what a fresh name must avoid."""
    names: set[str] = set()
    for _, node in walk_paths(e):
        match node:
            case Var(name, _) | Lambda(param=name) | Fix(name=name) | Let(name=name):
                names.add(name)
            case IntLit(str() as name, _, _):
                names.add(name)
            case LetRegion(region=name) | RegionLambda(param=name):
                names.add(name)
    return frozenset(names)


def fresh_name(base: str, taken: set[str]) -> str:
    """A name starting with `base` that is not in `taken` (and is then added to it)."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


def rename_free(e: Expr, old: str, new: str) -> Expr:
    """e with the free occurrences of variable `old` renamed to `new`, which must be fresh (not
    used in e), so that nothing is captured."""
    match e:
        case Var(name, span):
            return Var(new, span) if name == old else e
    kids = children(e)
    position = [0]

    def go(child: Expr) -> Expr:
        index = position[0]
        position[0] += 1
        return child if binder_of(e, index) == old else rename_free(child, old, new)

    return map_children(e, go) if kids else e
