"""Each typing rule (Fig. 2, Figs. 14-17) accepted and rejected, and the checker's elaboration."""

from __future__ import annotations

import pytest

from profiler.checker import check_program
from profiler.errors import CheckError, RegionError, WorldError
from profiler.parser import parse
from profiler.syntax import Boxed, IntLit, IntS, Lambda, On, RegionApp, VecS


def type_of(source: str) -> str:
    return str(check_program(parse(source, "t.lg")).type)


def rejects(source: str, kind: type, fragment: str) -> CheckError:
    with pytest.raises(kind) as info:
        check_program(parse(source, "t.lg"))
    assert fragment in info.value.message
    assert info.value.span is not None and info.value.span.line >= 1
    assert info.value.rule
    return info.value


@pytest.mark.parametrize("source, expected", [
    ("letregion r in 1 at r", "int r"),
    ("letregion r in 1.5 at r", "float r"),
    ("letregion r in True", "bool"),
    ("letregion r in (1 at r) < (2 at r)", "bool"),
    ("letregion r in (1 at r) + (2 at r) at r", "int r"),
    ("letregion r in if True then 1 at r else 2 at r", "int r"),
    ("letregion r in (1 at r, True) at r", "((int r, bool), r)"),
    ("letregion r in fst ((1 at r, True) at r)", "int r"),
    ("letregion r in lambda x: int r [r]. x + x at r", "((int r) -> int r [r], r)"),
    ("letregion r in (lambda x: int r [r]. x) (1 at r)", "int r"),
    ("letregion r in [1 at r, 2 at r] at r", "(Vec (int r), r)"),
    ("letregion r in iota (3 at r) at r", "(Vec (int r), r)"),
    ("letregion r in (iota (3 at r) at r)[1 at r]", "int r"),
    ("letregion r in length (iota (3 at r) at r)", "int r"),
    ("letregion r in parmap (lambda x: int r [r]. x < x) (iota (3 at r) at r) at r",
     "(Vec bool, r)"),
    ("letregion r in (1 at r) || True at r", "((int r, bool), r)"),
    ("letregion r in on (1 at r) at r", "int r"),
    ("letregion r in letregion s in (lambda x: int r [r, s]. x) (1 at r)", "int r"),
    ('letregion r in profile "c" (1 at r)', "int r"),
    ("letregion r in let x = 1 at r in x", "int r"),
])
def test_accepts(source, expected):
    assert type_of(source) == expected


def test_fix_and_region_abstraction():
    source = """letregion r in
    let f = lambda s >= [r] [r, s]. (lambda x: int r [r, s]. x * (2 at s) at r) at r in
    letregion q in (f[q]) (3 at r)"""
    assert type_of(source) == "int r"
    assert type_of("letregion r in fix f: ((int r) -> int r [r], r). "
                   "lambda x: int r [r]. f x") == "((int r) -> int r [r], r)"


def test_elaboration_fills_ambient_regions_and_region_application():
    checked = check_program(parse(
        "param n : int = 3\nletregion r in letregion s in "
        "let f = lambda q >= [r] [q]. iota n at q in f[s]", "t.lg"))
    assert isinstance(checked.type, Boxed) and isinstance(checked.type.shape, VecS)
    body = checked.body.body.body  # letregion r, letregion s, let
    assert isinstance(body.body, RegionApp) and body.body.region == "s"
    region_lambda = body.bound
    iota = region_lambda.body
    assert iota.count == IntLit("n", "q", iota.count.span)


def test_ambient_region_of_a_lambda_is_its_enclosing_at():
    checked = check_program(parse("letregion r in letregion s in "
                                  "lambda x: int r [r, s]. x + x at s", "t.lg"))
    lam = checked.body.body.body
    assert isinstance(lam, Lambda) and lam.region == "s"  # the innermost region
    assert lam.body.region == "s"


def test_on_records_the_regions_it_pushes():
    checked = check_program(parse("letregion r in letregion s in on (lambda x: int r [r]. x) "
                                  "(1 at r) at r", "t.lg"))
    on = checked.body.body.body
    assert isinstance(on, On) and on.uses == ("r",)
    assert checked.type == Boxed(IntS(), "r")


@pytest.mark.parametrize("source, kind, fragment", [
    ("letregion r in x", CheckError, "unbound variable x"),
    ("letregion r in 1 at q", RegionError, "region q is not in scope"),
    ("1", RegionError, "none is in scope"),
    ("letregion r in (letregion s in 1 at s) + (1 at r) at r", RegionError, "cannot escape"),
    ("letregion r in letregion s in lambda x: int r [r]. x + x at s", RegionError,
     "latent effect [r] does not include"),
    ("letregion r in on (letregion s in 1 at s) at r", WorldError, "letregion is not allowed"),
    ("letregion r in on (on 1 at r at r) at r", WorldError, "`on` inside `on`"),
    ("letregion r in letregion s in on (1 at s) at r", RegionError, "leaves its result in"),
    ("letregion r in letregion s in on local [s] (1 at r) at r", WorldError, "does not use"),
    ("letregion r in letregion r in 1 at r", RegionError, "already in scope"),
    ("letregion r in (1 at r) (2 at r)", CheckError, "only functions can be applied"),
    ("letregion r in (lambda x: int r [r]. x) True", CheckError, "expects int r"),
    ("letregion r in if True then 1 at r else True", CheckError, "branches of `if` differ"),
    ("letregion r in if 1 at r then True else False", CheckError, "must be a bool"),
    ("letregion r in True + (1 at r) at r", CheckError, "must be an int or a float"),
    ("letregion r in (1 at r) + (1.0 at r) at r", CheckError, "mixes int and float"),
    ("letregion r in fst (1 at r)", CheckError, "takes a pair"),
    ("letregion r in (1 at r)[0 at r]", CheckError, "only vectors can be indexed"),
    ("letregion r in parmap (lambda x: int r [r]. x) (1 at r) at r", CheckError,
     "maps over a vector"),
    ("letregion r in parmap (lambda x: bool [r]. x) (iota (2 at r) at r) at r", CheckError,
     "the function expects bool"),
    ("letregion r in [] at r", CheckError, "empty vector"),
    ("letregion r in fix f: ((int r) -> int r [r], r). 1 at r", CheckError,
     "must be a lambda"),
    ("letregion r in letregion q in let f = lambda s >= [q] [s]. 1 at s in f[r]", RegionError,
     "does not satisfy the bound"),
    ("param n : int\nparam n : int\nletregion r in n", CheckError, "declared twice"),
])
def test_rejects(source, kind, fragment):
    rejects(source, kind, fragment)


def test_error_names_the_offending_span():
    error = rejects("letregion r in\n  on (letregion s in 1 at s) at r", WorldError,
                    "letregion is not allowed")
    assert (error.span.line, error.span.column) == (2, 7)
    assert "Fig. 2" in error.rule
