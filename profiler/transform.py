"""Transformations of elaborated λG: new trees, the old one untouched.

`map_children` rebuilds a node from its transformed children (one `match`); the placements used by
validation and by `hetprof place` are built on it: `cpu_placement` runs every `on` body on the
CPU (marking it as a cost centre), `gpu_placement` puts every outermost CPU `parmap` under `on`.
The results must be checked again (`check_program`) before they run.
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


def cpu_placement(e: Expr, prefix: str) -> Expr:
    """Every `on e at ρ` becomes `profile "<prefix>k" e`: the same work, on the CPU."""
    counter = [0]

    def go(node: Expr) -> Expr:
        if isinstance(node, On):
            name = f"{prefix}{counter[0]}"
            counter[0] += 1
            return Profile(name, go(node.body), node.span)
        return map_children(node, go)

    return go(e)


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
