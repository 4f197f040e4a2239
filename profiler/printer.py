"""A pretty printer for λG: the AST of `profiler.syntax` back to indented source text.

`pretty(p)` parses back to an equal tree: `parse(pretty(p))` has p's parameters and body. It also
prints elaborated bodies (`check_program(...).body`), where every region is explicit; checking the
printed text again gives the same elaborated body. Two elaborated forms have no spelling of their
own, and are printed so that the checker rebuilds them: a size parameter's use `IntLit("n", ρ)` is
printed `n` (the checker places it in the ambient region ρ again; `n at ρ` is not valid syntax),
and `length e` has no `at`, so its region is left to the ambient too. `RegionApp` is printed `e[ρ]`,
which parses as an index and is turned back into an instantiation by the checker (Fig. 14).

Precedence follows grammar.lark (loosest first): the binders (`lambda`, `let`, `letregion`, `if`,
`fix`, `on`, `profile`), `||`, comparisons, `+ -`, `* /`, application, the prefix forms (`fst`,
`snd`, `length`, `parmap`, `iota`, `reduce`), indexing, atoms. The one subtle rule is `at ρ`: it
attaches, like a dangling else, to the innermost form on its left that accepts one, so a form that
carries `at ρ` parenthesizes its last part whenever that part would otherwise take the `at` itself
(`(x * 5) at r` is not valid syntax, but `x * (5) at r` places the product, not the 5, in r).

Layout is Wadler's and Lindig's ("Strictly Pretty", 2000): each node becomes a document of texts,
optional line breaks, nesting and groups; a group is printed on one line when it fits the width,
and otherwise breaks its lines.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import IntEnum

from profiler.syntax import (
    App,
    BinaryOperator,
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
    Param,
    ParMap,
    Profile,
    Program,
    Reduce,
    RegionApp,
    RegionFunS,
    RegionLambda,
    Shape,
    Snd,
    Type,
    Var,
    VecLit,
    VecS,
    children,
    format_effect,
)

WIDTH = 100
"""The column the printer tries to stay within (ruff's line length for the project)."""


def pretty(node: Program | Expr, width: int = WIDTH) -> str:
    """λG source text for a program (its parameters, then its body, ending in a newline) or for an
    expression (no trailing newline). Raises ValueError for a tree that no source text parses to:
    a negative or NaN literal, or a comparison that carries a region."""
    if isinstance(node, Program):
        params = [_param(p) for p in node.params]
        body = _render(_print_tree(node.body).doc, width)
        return "\n".join([*params, *([""] if params else []), body]) + "\n"
    return _render(_print_tree(node).doc, width)


def pretty_type(type_: Type) -> str:
    """A type as grammar.lark spells it (Fig. 13): `bool`, `int ρ`, `float ρ`, or `(μ, ρ)`."""
    match type_:
        case BoolT():
            return "bool"
        case Boxed(IntS(), region):
            return f"int {region}"
        case Boxed(FloatS(), region):
            return f"float {region}"
        case Boxed(shape, region):
            return f"({_shape(shape)}, {region})"
    raise AssertionError(f"unknown type {type_!r}")


def _shape(shape: Shape) -> str:
    match shape:
        case IntS():
            return "int"
        case FloatS():
            return "float"
        case FunS(arg, result, effect, worlds):
            return f"{pretty_type(arg)} -> {pretty_type(result)} {format_effect(effect, worlds)}"
        case PairS(first, second):
            return f"({pretty_type(first)}, {pretty_type(second)})"
        case VecS(PairS() as pair):
            return f"Vec {_shape(pair)}"
        case VecS(element):
            return f"Vec {pretty_type(element)}"
        case RegionFunS(region, bound, body, effect, worlds):
            return (f"forall {region} >= {format_effect(bound)}. {pretty_type(body)} "
                    f"{format_effect(effect, worlds)}")
    raise AssertionError(f"unknown shape {shape!r}")


def _param(param: Param) -> str:
    default = "" if param.default is None else f" = {param.default}"
    return f"param {param.name} : int{default}"


# --------------------------------------------------------------------------------------------------
# Documents (Lindig, "Strictly Pretty")


@dataclass(frozen=True, slots=True)
class _Text:
    text: str


@dataclass(frozen=True, slots=True)
class _Line:
    """A space when its group fits on one line, else a newline at the current indentation."""


@dataclass(frozen=True, slots=True)
class _Nest:
    indent: int
    doc: _Doc


@dataclass(frozen=True, slots=True)
class _Group:
    doc: _Doc


@dataclass(frozen=True, slots=True)
class _Concat:
    parts: tuple[_Doc, ...]


_Doc = _Text | _Line | _Nest | _Group | _Concat
_LINE = _Line()


def _cat(*parts: _Doc | str) -> _Concat:
    return _Concat(tuple(_Text(p) if isinstance(p, str) else p for p in parts))


def _render(doc: _Doc, width: int) -> str:
    out: list[str] = []
    column = 0
    stack: list[tuple[int, bool, _Doc]] = [(0, False, doc)]
    while stack:
        indent, flat, item = stack.pop()
        match item:
            case _Text(text):
                out.append(text)
                column += len(text)
            case _Line():
                if flat:
                    out.append(" ")
                    column += 1
                else:
                    out.append("\n" + " " * indent)
                    column = indent
            case _Nest(more, inner):
                stack.append((indent + more, flat, inner))
            case _Group(inner):
                stack.append((indent, flat or _fits(inner, width - column, stack), inner))
            case _Concat(parts):
                stack.extend((indent, flat, part) for part in reversed(parts))
    return "".join(out)


def _fits(doc: _Doc, room: int, rest: list[tuple[int, bool, _Doc]]) -> bool:
    """Whether doc, printed on one line, and what follows it up to the next line break, take at
    most `room` columns (Wadler's `fits`: a trailing ` at r` must fit too)."""
    stack = [(True, doc)]
    waiting = len(rest)
    while room >= 0:
        if not stack:
            if not waiting:
                return True
            waiting -= 1
            stack.append(rest[waiting][1:])
        flat, item = stack.pop()
        match item:
            case _Text(text):
                room -= len(text)
            case _Line():
                if not flat:
                    return True
                room -= 1
            case _Nest(_, inner) | _Group(inner):
                stack.append((flat, inner))
            case _Concat(parts):
                stack.extend((flat, part) for part in reversed(parts))
    return False


# --------------------------------------------------------------------------------------------------
# Expressions


class _Level(IntEnum):
    """Precedence levels of grammar.lark, loosest first: what a position accepts unparenthesized."""

    BINDER = 0  # lambda, let, letregion, if, fix, on, profile: they extend as far right as they can
    PAR = 1
    COMPARE = 2
    ADD = 3
    MUL = 4
    APP = 5
    PREFIX = 6  # fst, snd, length, parmap, iota, reduce
    POSTFIX = 7  # e1[e2]
    ATOM = 8


@dataclass(frozen=True, slots=True)
class _Printed:
    """A printed expression: its document, its level, whether a following `at ρ` would attach to
    something inside it (`open`), and whether its text starts with `[` (which, after another
    expression, would read as indexing)."""

    doc: _Doc
    level: _Level
    open: bool = False
    bracket: bool = False
    at: bool = False  # ends in `at ρ`


_ARITHMETIC_LEVEL = {
    BinaryOperator.ADD: _Level.ADD,
    BinaryOperator.SUB: _Level.ADD,
    BinaryOperator.MUL: _Level.MUL,
    BinaryOperator.DIV: _Level.MUL,
}


def _print_tree(root: Expr) -> _Printed:
    """Print every node after its children, with an explicit stack rather than recursion, so that
    programs nested deeper than Python's recursion limit (a sum of a thousand terms) print too."""
    done: list[_Printed] = []
    todo: list[tuple[Expr, bool]] = [(root, False)]
    while todo:
        node, ready = todo.pop()
        kids = children(node)
        if ready:
            parts = done[len(done) - len(kids) :]
            del done[len(done) - len(kids) :]
            done.append(_expr(node, parts))
        else:
            todo.append((node, True))
            todo.extend((kid, False) for kid in reversed(kids))
    return done[0]


def _expr(e: Expr, parts: list[_Printed]) -> _Printed:
    """The one pass over the node types: node e as a document, given its children (in the order
    of `syntax.children`) already printed; parenthesizes them as grammar.lark needs."""
    match e:
        case IntLit(str() as name, _, _):
            # A size parameter's use after elaboration: its region is the ambient one.
            return _Printed(_Text(name), _Level.ATOM)

        case IntLit(value, region, _):
            assert not isinstance(value, str)  # a size parameter's name matched the case above
            if isinstance(value, bool) or value < 0:
                raise ValueError(f"no λG literal denotes the integer {value!r}")
            return _allocating(_Text(str(value)), _Level.ATOM, region)

        case FloatLit(value, region, _):
            return _allocating(_Text(_float(value)), _Level.ATOM, region)

        case BoolLit(value, _):
            return _Printed(_Text("True" if value else "False"), _Level.ATOM)

        case Var(name, _):
            return _Printed(_Text(name), _Level.ATOM)

        case BinOp(op, _, _, region, _) if op.is_comparison:
            if region is not None:
                raise ValueError(
                    f"a comparison ({op.value}) is a bool and cannot carry `at {region}`"
                )
            left_p = _wrap(parts[0], _Level.ADD)
            right_p = _wrap(parts[1], _Level.ADD)
            doc: _Doc = _Group(_cat(left_p.doc, f" {op.value}", _Nest(2, _cat(_LINE, right_p.doc))))
            return _Printed(doc, _Level.COMPARE, right_p.open)

        case BinOp(op, _, _, region, _):
            level = _ARITHMETIC_LEVEL[op]
            left_p = _wrap(parts[0], level)
            right_p = _wrap(parts[1], _Level(level + 1), region is not None)
            doc = _cat(left_p.doc, f" {op.value}", _Nest(2, _cat(_LINE, right_p.doc)))
            return _allocating(_Group(doc), level, region)

        case If():
            cond_p, then_p, else_p = parts
            doc = _cat(
                "if ",
                _Nest(3, cond_p.doc),
                _LINE,
                "then ",
                _Nest(5, then_p.doc),
                _LINE,
                "else ",
                _Nest(5, else_p.doc),
            )
            return _Printed(_Group(doc), _Level.BINDER, else_p.open)

        case Lambda(param, param_type, effect, _, region, _):
            effect_text = "" if effect is None else " " + format_effect(effect)
            head = f"lambda {param}: {pretty_type(param_type)}{effect_text}."
            return _binder(head, _wrap(parts[0], _Level.BINDER, region is not None), region)

        case RegionLambda(param, bound, effect, _, region, _):
            effect_text = "" if effect is None else " " + format_effect(effect)
            head = f"lambda {param} >= {format_effect(bound)}{effect_text}."
            return _binder(head, _wrap(parts[0], _Level.BINDER, region is not None), region)

        case App():
            func_p = _wrap(parts[0], _Level.APP)
            # Prefix forms as arguments are legal (`f fst p`), and so is `f 5 at r`, but they read
            # badly: parenthesize them.
            arg_p = _wrap(parts[1], _Level.POSTFIX)
            if arg_p.bracket or arg_p.at:  # `f [1, 2]` would index f
                arg_p = _parenthesized(arg_p)
            doc = _Group(_cat(func_p.doc, _Nest(2, _cat(_LINE, arg_p.doc))))
            return _Printed(doc, _Level.APP, arg_p.open, func_p.bracket)

        case Pair(region=region):
            first_p, second_p = parts
            doc = _cat("(", _Nest(1, _cat(first_p.doc, ",", _LINE, second_p.doc)), ")")
            return _allocating(_Group(doc), _Level.ATOM, region)

        case Fst() | Snd() | Length():
            keyword = {Fst: "fst", Snd: "snd", Length: "length"}[type(e)]
            inner_p = _wrap(parts[0], _Level.PREFIX)
            doc = _cat(f"{keyword} ", _Nest(len(keyword) + 1, inner_p.doc))
            return _Printed(doc, _Level.PREFIX, inner_p.open)

        case LetRegion(region, _, _):
            body_p = parts[0]
            doc = _Group(_cat(f"letregion {region} in", _LINE, body_p.doc))
            return _Printed(doc, _Level.BINDER, body_p.open)

        case Fix(name, fix_type, _, _):
            body_p = parts[0]
            doc = _Group(
                _cat(f"fix {name}: {pretty_type(fix_type)}.", _Nest(2, _cat(_LINE, body_p.doc)))
            )
            return _Printed(doc, _Level.BINDER, body_p.open)

        case Par(region=region):
            left_p = _wrap(parts[0], _Level.COMPARE)
            right_p = _wrap(parts[1], _Level.COMPARE, region is not None)
            doc = _cat(left_p.doc, " ||", _Nest(2, _cat(_LINE, right_p.doc)))
            return _allocating(_Group(doc), _Level.PAR, region)

        case VecLit(region=region):
            items: list[_Doc | str] = []
            for i, element in enumerate(parts):
                items += [",", _LINE] if i else []
                items.append(element.doc)
            doc = _Group(_cat("[", _Nest(1, _cat(*items)), "]"))
            printed = _allocating(doc, _Level.ATOM, region)
            return _Printed(printed.doc, printed.level, printed.open, True, printed.at)

        case ParMap(region=region):
            return _keyword_form("parmap", parts, region)

        case On(region=region, local=local):
            local_text = f"local [{', '.join(local)}] " if local else ""
            body_p = _wrap(parts[0], _Level.BINDER, region is not None)
            doc = _cat(f"on {local_text}", _Nest(3, body_p.doc))
            if region is None:
                return _Printed(_Group(doc), _Level.BINDER, True)
            return _Printed(_Group(_cat(doc, _LINE, f"at {region}")), _Level.BINDER)

        case RegionApp(region=region):
            inner_p = _indexed(parts[0])
            return _Printed(
                _cat(inner_p.doc, f"[{region}]"), _Level.POSTFIX, bracket=inner_p.bracket
            )

        case Let(name=name):
            bound_p, body_p = parts
            # A chain of lets reads best one binding a line: `let x = e in` then the body.
            doc = _Group(
                _cat(
                    _Group(_cat(f"let {name} =", _Nest(2, _cat(_LINE, bound_p.doc)), " in")),
                    _LINE,
                    body_p.doc,
                )
            )
            return _Printed(doc, _Level.BINDER, body_p.open)

        case Index():
            vector_p = _indexed(parts[0])
            doc = _cat(vector_p.doc, "[", _Nest(2, parts[1].doc), "]")
            return _Printed(doc, _Level.POSTFIX, bracket=vector_p.bracket)

        case Iota(region=region):
            return _keyword_form("iota", parts, region)

        case Reduce(region=region):
            return _keyword_form("reduce", parts, region)

        case Profile(name=name):
            inner_p = parts[0]
            doc = _Group(_cat(f"profile {_string(name)}", _Nest(2, _cat(_LINE, inner_p.doc))))
            return _Printed(doc, _Level.BINDER, inner_p.open)

    raise AssertionError(f"unknown node {e!r}")


def _parenthesized(printed: _Printed) -> _Printed:
    return _Printed(_cat("(", _Nest(1, printed.doc), ")"), _Level.ATOM)


def _wrap(printed: _Printed, level: _Level, before_at: bool = False) -> _Printed:
    """Parenthesize a part that sits where only `level` or tighter is accepted, or that an `at`
    follows and would otherwise attach to something inside it."""
    if printed.level < level or (before_at and printed.open):
        return _parenthesized(printed)
    return printed


def _indexed(printed: _Printed) -> _Printed:
    """What `[...]` follows: `[1, 2] at r[0]` parses, but reads as if r were indexed."""
    printed = _wrap(printed, _Level.POSTFIX)
    return _parenthesized(printed) if printed.at else printed


def _allocating(doc: _Doc, level: _Level, region: str | None) -> _Printed:
    """An allocating form whose last part is already closed: add `at ρ`, or leave it open."""
    if region is None:
        return _Printed(doc, level, open=True)
    return _Printed(_cat(doc, f" at {region}"), level, at=True)


def _binder(head: str, body: _Printed, region: str | None) -> _Printed:
    """`lambda ... . body at ρ`: the body on the next line, indented, when it does not fit."""
    doc = _cat(head, _Nest(2, _cat(_LINE, body.doc)))
    if region is None:
        return _Printed(_Group(doc), _Level.BINDER, True)
    return _Printed(_Group(_cat(doc, _LINE, f"at {region}")), _Level.BINDER)


def _keyword_form(keyword: str, parts: list[_Printed], region: str | None) -> _Printed:
    """`parmap f e at ρ`, `iota e at ρ`, `reduce f z e at ρ`: every part is an atom."""
    printed = [_wrap(part, _Level.ATOM) for part in parts]
    printed = [_parenthesized(p) if p.at else p for p in printed]  # `reduce f (0 at r) v`
    if region is not None and printed[-1].open:
        printed[-1] = _parenthesized(printed[-1])
    items: list[_Doc | str] = []
    for i, part in enumerate(printed):
        items += [_LINE] if i else []
        items.append(part.doc)
    doc = _Group(_cat(f"{keyword} ", _Nest(len(keyword) + 1, _cat(*items))))
    return _allocating(doc, _Level.PREFIX, region)


def _float(value: float) -> str:
    """A DECIMAL token (`1.5`, `2.0e-07`) that parses to exactly `value` (repr is the shortest
    text that round-trips; the grammar wants digits on both sides of the point)."""
    if math.isnan(value) or math.copysign(1.0, value) < 0:
        raise ValueError(f"no λG literal denotes the float {value!r}")
    if math.isinf(value):
        return "1.0e999"  # what the parser makes of any literal beyond the largest double
    mantissa, _, exponent = repr(value).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (f"e{exponent}" if exponent else "")


def _string(name: str) -> str:
    """A string literal that parser.py's unescaping (JSON's) turns back into `name`: quotes,
    backslashes and control characters escaped as JSON escapes them, and any lone surrogate as
    `\\uXXXX` so that the text can be written out as UTF-8."""
    text = json.dumps(name, ensure_ascii=False)
    return "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in text)
