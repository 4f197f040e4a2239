"""Parse λG source text into the AST of `profiler.syntax`, keeping every node's span.

The grammar (grammar.lark) is LALR(1) and lark's tree is turned into the AST without recursion, so
deeply nested input cannot exhaust Python's stack here; `MAX_NESTING` bounds what later passes see.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

import lark
from lark import Lark, Token, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.visitors import Transformer_NonRecursive

from profiler.errors import ParseError
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
    RegionFunS,
    RegionLambda,
    Snd,
    Span,
    Var,
    VecLit,
    VecS,
)

_KEYWORDS = frozenset(
    "lambda letregion let in if then else fix on at profile local fst snd length parmap iota "
    "reduce True False param int float bool Vec forall".split())

MAX_NESTING = 400
"""Deepest nesting of expressions hetprof accepts; deeper input is rejected with a clear error."""

_TOKEN_NAMES = {
    "NAME": "a name", "INT": "an integer", "DECIMAL": "a float", "SIGNED_INT": "an integer",
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "DOT": "'.'",
    "COLON": "':'", "EQUAL": "'='", "CMP_OP": "a comparison", "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*' or '/'", "ESCAPED_STRING": "a string", "$END": "the end of the file",
    "__ANON_0": "'||'", "MORETHAN": "'>'", "LESSTHAN": "'<'",
}


def _describe_expected(expected: set[str]) -> str:
    names = []
    for name in sorted(expected):
        if name in _TOKEN_NAMES:
            names.append(_TOKEN_NAMES[name])
            continue
        try:
            pattern = _parser().get_terminal(name).pattern
        except KeyError:
            names.append(name)
            continue
        names.append(f"'{pattern.value}'" if pattern.type == "str" else name.lower())
    names = sorted(set(names))
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


class _Builder(Transformer_NonRecursive):
    """Builds AST nodes bottom-up from lark's tree, without recursion."""

    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    @staticmethod
    def _region(at: str | None) -> str | None:
        return at

    # -- program ----------------------------------------------------------------------------------
    @v_args(meta=True)
    def start(self, meta, children):
        *params, body = children
        return Program(tuple(params), body)

    @v_args(meta=True)
    def param_decl(self, meta, children):
        name = str(children[0])
        span = self._span(meta)
        default = _integer(children[1], span) if len(children) > 1 else None
        return Param(name, default, span)

    def at(self, children):
        return _At(str(children[0]))

    @v_args(meta=True)
    def effect(self, meta, children):
        names = frozenset(str(c) for c in children if not isinstance(c, _World))
        worlds = frozenset(c.name for c in children if isinstance(c, _World))
        return _Effect(names, worlds, self._span(meta))

    def world_on(self, children):
        return _World("on")

    def world_letregion(self, children):
        return _World("letregion")

    def local(self, children):
        return _Local(tuple(str(c) for c in children))

    # -- binders ----------------------------------------------------------------------------------
    @staticmethod
    def _no_worlds(effect: _Effect | None) -> None:
        """A lambda's world effect is inferred from its body; it is written in types only."""
        if effect is not None and effect.worlds:
            raise ParseError("a world effect (`; on`, `; letregion`) is written only in a "
                             "function type: a lambda's is inferred from its body", effect.span)

    @v_args(meta=True)
    def lam(self, meta, children):
        name, param_type, *rest = children
        effect, rest = _take(rest, _Effect)
        self._no_worlds(effect)
        body, rest = rest[0], rest[1:]
        region, _ = _take(rest, _At)
        return Lambda(str(name), param_type, effect.names if effect else None, body,
                      region.name if region else None, self._span(meta))

    @v_args(meta=True)
    def rlam(self, meta, children):
        name, bound, *rest = children
        self._no_worlds(bound)
        effect, rest = _take(rest, _Effect)
        self._no_worlds(effect)
        body, rest = rest[0], rest[1:]
        region, _ = _take(rest, _At)
        return RegionLambda(str(name), bound.names, effect.names if effect else None, body,
                            region.name if region else None, self._span(meta))

    @v_args(meta=True)
    def letregion(self, meta, children):
        return LetRegion(str(children[0]), children[1], self._span(meta))

    @v_args(meta=True)
    def let(self, meta, children):
        return Let(str(children[0]), children[1], children[2], self._span(meta))

    @v_args(meta=True)
    def if_(self, meta, children):
        return If(children[0], children[1], children[2], self._span(meta))

    @v_args(meta=True)
    def fix(self, meta, children):
        return Fix(str(children[0]), children[1], children[2], self._span(meta))

    @v_args(meta=True)
    def on(self, meta, children):
        local, rest = _take(list(children), _Local)
        body, rest = rest[0], rest[1:]
        region, _ = _take(rest, _At)
        return On(body, region.name if region else None, local.names if local else (),
                  self._span(meta))

    @v_args(meta=True)
    def profile(self, meta, children):
        token = str(children[0])
        try:
            name = json.loads(token)
        except json.JSONDecodeError:
            raise ParseError(f"the string {token} has an escape that is not valid",
                             self._span(meta)) from None
        return Profile(name, children[1], self._span(meta))

    # -- operators --------------------------------------------------------------------------------
    @v_args(meta=True)
    def par(self, meta, children):
        region, rest = _take_last(children)
        return Par(rest[0], rest[1], region, self._span(meta))

    @v_args(meta=True)
    def compare(self, meta, children):
        left, op, right = children
        return BinOp(BinaryOperator(str(op)), left, right, None, self._span(meta))

    @v_args(meta=True)
    def arith(self, meta, children):
        region, rest = _take_last(children)
        left, op, right = rest
        return BinOp(BinaryOperator(str(op)), left, right, region, self._span(meta))

    @v_args(meta=True)
    def app(self, meta, children):
        return App(children[0], children[1], self._span(meta))

    @v_args(meta=True)
    def fst(self, meta, children):
        return Fst(children[0], self._span(meta))

    @v_args(meta=True)
    def snd(self, meta, children):
        return Snd(children[0], self._span(meta))

    @v_args(meta=True)
    def length(self, meta, children):
        return Length(children[0], None, self._span(meta))

    @v_args(meta=True)
    def parmap(self, meta, children):
        region, rest = _take_last(children)
        return ParMap(rest[0], rest[1], region, self._span(meta))

    @v_args(meta=True)
    def iota(self, meta, children):
        region, rest = _take_last(children)
        return Iota(rest[0], region, self._span(meta))

    @v_args(meta=True)
    def reduce(self, meta, children):
        region, rest = _take_last(children)
        return Reduce(rest[0], rest[1], rest[2], region, self._span(meta))

    @v_args(meta=True)
    def index(self, meta, children):
        return Index(children[0], children[1], self._span(meta))

    # -- atoms ------------------------------------------------------------------------------------
    @v_args(meta=True)
    def var(self, meta, children):
        return Var(str(children[0]), self._span(meta))

    @v_args(meta=True)
    def int_lit(self, meta, children):
        region, rest = _take_last(children)
        span = self._span(meta)
        return IntLit(_integer(rest[0], span), region, span)

    @v_args(meta=True)
    def float_lit(self, meta, children):
        region, rest = _take_last(children)
        return FloatLit(float(rest[0]), region, self._span(meta))

    @v_args(meta=True)
    def true(self, meta, children):
        return BoolLit(True, self._span(meta))

    @v_args(meta=True)
    def false(self, meta, children):
        return BoolLit(False, self._span(meta))

    @v_args(meta=True)
    def pair(self, meta, children):
        region, rest = _take_last(children)
        return Pair(rest[0], rest[1], region, self._span(meta))

    @v_args(meta=True)
    def vec_lit(self, meta, children):
        region, rest = _take_last(children)
        return VecLit(tuple(rest), region, self._span(meta))

    # -- types ------------------------------------------------------------------------------------
    def bool_t(self, children):
        return BoolT()

    def int_t(self, children):
        return Boxed(IntS(), str(children[0]))

    def float_t(self, children):
        return Boxed(FloatS(), str(children[0]))

    def boxed(self, children):
        shape, region = children
        if isinstance(shape, VecS) and isinstance(shape.element, PairS):
            # `(Vec (int r, int r), r)` as §7.1 writes it: the pairs live in the vector's region.
            shape = VecS(Boxed(shape.element, str(region)))
        return Boxed(shape, str(region))

    def int_s(self, children):
        return IntS()

    def float_s(self, children):
        return FloatS()

    def fun_s(self, children):
        arg, result, effect = children
        return FunS(arg, result, effect.names, effect.worlds)

    def pair_shape(self, children):
        return PairS(children[0], children[1])

    def vec_s(self, children):
        return VecS(children[0])

    def region_fun_s(self, children):
        name, bound, body, effect = children
        self._no_worlds(bound)
        return RegionFunS(str(name), bound.names, body, effect.names, effect.worlds)


class _At:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _Effect:
    __slots__ = ("names", "worlds", "span")

    def __init__(self, names: frozenset[str], worlds: frozenset[str], span: Span):
        self.names = names
        self.worlds = worlds
        self.span = span


class _World:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _Local:
    __slots__ = ("names",)

    def __init__(self, names: tuple[str, ...]):
        self.names = names


def _take(items: list, kind: type):
    """Split off the first item if it is of `kind`."""
    items = list(items)
    if items and isinstance(items[0], kind):
        return items[0], items[1:]
    return None, items


def _take_last(children: list) -> tuple[str | None, list]:
    """Split a trailing `at ρ` off a production's children."""
    children = list(children)
    if children and isinstance(children[-1], _At):
        return children[-1].name, children[:-1]
    return None, children


def _integer(token: Token, span: Span) -> int:
    """An integer literal's value; one too long for Python to convert (its limit on the digits of
    an int read from text) is a ParseError at the literal."""
    try:
        return int(token)
    except ValueError:
        digits = len(str(token).lstrip("-"))
        raise ParseError(f"integer literal too large: {digits} digits (an int is 64 bits)",
                         Span(span.file, token.line or span.line, token.column or span.column,
                              token.end_line or span.end_line,
                              token.end_column or span.end_column)) from None


@functools.cache
def _grammar_text() -> str:
    return (Path(__file__).with_name("grammar.lark")).read_text()


@functools.cache
def _parser() -> Lark:
    """The LALR parser. Building its tables takes about 0.25 s, a quarter of a small command's
    time (issue 19), so they are kept in the user's cache directory, keyed by the grammar's and
    lark's content, and written atomically so that concurrent runs never read half a file. Any
    failure to read or write the cache falls back to building the tables."""
    grammar = _grammar_text()
    options = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": False}
    key = hashlib.sha256(f"{grammar}\0{lark.__version__}\0{sorted(options.items())}".encode())
    path = _cache_dir() / f"grammar-{key.hexdigest()[:24]}.lark"
    try:
        with path.open("rb") as cached:
            return Lark.load(cached)
    except Exception:  # absent, unreadable or from another lark: build it  # noqa: BLE001
        pass
    built = Lark(grammar, **options)  # type: ignore[arg-type]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as part:
            built.save(part)
        os.replace(part.name, path)
    except OSError:
        pass
    return built


def _cache_dir() -> Path:
    """Where hetprof keeps what it can rebuild: $HETPROF_CACHE, else $XDG_CACHE_HOME/hetprof,
    else ~/.cache/hetprof."""
    if os.environ.get("HETPROF_CACHE"):
        return Path(os.environ["HETPROF_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hetprof"


def parse(source: str, file: str = "<input>") -> Program:
    """Parse a λG program. Raises ParseError (with a span) on any malformed input."""
    if "\x00" in source:
        offset = source.index("\x00")
        line = source.count("\n", 0, offset) + 1
        column = offset - (source.rfind("\n", 0, offset) + 1) + 1
        raise ParseError("the file contains a NUL byte: is it a binary file?",
                         Span(file, line, column, line, column + 1))
    if not source.strip() or all(
        not line.strip() or line.lstrip().startswith("#") for line in source.splitlines()
    ):
        raise ParseError("the program is empty: expected an expression",
                         Span(file, 1, 1, 1, 1))
    depth_error = _nesting_error(source, file)
    if depth_error:
        raise depth_error
    try:
        tree = _parser().parse(source)
    except UnexpectedInput as error:
        raise _parse_error(error, source, file) from None
    try:
        program = _Builder(file).transform(tree)
    except lark.exceptions.VisitError as error:
        if isinstance(error.orig_exc, ParseError):
            raise error.orig_exc from None
        raise
    return Program(program.params, program.body, source=source, file=file)


def parse_file(path: str | Path) -> Program:
    path = Path(path)
    return parse(path.read_text(encoding="utf-8"), str(path))


def parse_expression(source: str, file: str = "<input>") -> Expr:
    program = parse(source, file)
    if program.params:
        raise ParseError("expected an expression, not parameter declarations",
                         program.params[0].span)
    return program.body


def _nesting_error(source: str, file: str) -> ParseError | None:
    """Reject brackets nested deeper than MAX_NESTING before the parser builds the tree."""
    depth = 0
    line, column = 1, 0
    for char in source:
        column += 1
        if char == "\n":
            line, column = line + 1, 0
        elif char in "([":
            depth += 1
            if depth > MAX_NESTING:
                return ParseError(
                    f"brackets are nested more than {MAX_NESTING} deep; hetprof accepts at most "
                    f"{MAX_NESTING} levels", Span(file, line, column, line, column + 1))
        elif char in ")]":
            depth -= 1
    return None


def _parse_error(error: UnexpectedInput, source: str, file: str) -> ParseError:
    line = getattr(error, "line", None) or 1
    column = getattr(error, "column", None) or 1
    if isinstance(error, UnexpectedCharacters):
        assert error.pos_in_stream is not None  # lark's lexer always sets it on this error
        char = source[error.pos_in_stream] if error.pos_in_stream < len(source) else "?"
        if char == '"':
            return ParseError("this string never ends: a `\"` is missing before the end of the "
                              "line", Span(file, line, column, line, column + 1))
        message = f"unexpected character {char!r}"
        expected = getattr(error, "allowed", None)
        if expected:
            message += f"; expected {_describe_expected(set(expected))}"
        return ParseError(message, Span(file, line, column, line, column + 1))
    if isinstance(error, UnexpectedEOF):
        lines = source.splitlines() or [""]
        line = len(lines)
        column = len(lines[-1]) + 1
        return ParseError(
            f"the program ends too early; expected {_describe_expected(set(error.expected))}",
            Span(file, line, column, line, column + 1))
    if isinstance(error, UnexpectedToken):
        token: Token = error.token
        if token.type == "$END":
            lines = source.splitlines() or [""]
            line, column = len(lines), len(lines[-1]) + 1
            return ParseError(
                f"the program ends too early; expected {_describe_expected(set(error.expected))}",
                Span(file, line, column, line, column + 1))
        width = max(1, len(str(token)))
        before = re.search(r"([A-Za-z_][A-Za-z0-9_']*)\s*$", source[: token.start_pos or 0])
        if token.type == "AT" and before and before.group(1) not in _KEYWORDS:
            name = before.group(1)
            return ParseError(
                f"`at` cannot follow the name {name}: a variable is not allocated, so it has no "
                "region to give, and a size parameter takes the region of the form around it "
                f"(write `{name}`, not `{name} at ...`); if the `at` belongs to an enclosing "
                "form, put that form in parentheses",
                Span(file, line, column, line, column + width))
        return ParseError(
            f"unexpected {str(token)!r}; expected {_describe_expected(set(error.expected))}",
            Span(file, line, column, line, column + width))
    return ParseError(str(error).splitlines()[0], Span(file, line, column, line, column + 1))
