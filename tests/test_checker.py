"""Each typing rule (Fig. 2, Figs. 14-17) accepted and rejected, and the checker's elaboration."""

from __future__ import annotations

import pytest

from profiler.checker import check_program
from profiler.errors import CheckError, ParseError, RegionError, WorldError
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


# -- world effects: Fig. 2's world rules through calls ------------------------------------------------

ON_IN_F = "letregion r in\nlet f = lambda x: int r [r]. on (x + 1 at r) at r in\n"


@pytest.mark.parametrize("source, fragment, line, column", [
    # the case: an `on` reached through a closure inside `on`
    (ON_IN_F + "on (f (1 at r)) at r",
     "calling `f` inside `on` would run an `on` on the GPU (its body has an `on` at 2:30)", 3, 5),
    # a `letregion` in the body, through parmap
    ("letregion r in\nlet f = lambda x: int r [r]. letregion s in x in\n"
     "on (parmap f (iota (4 at r) at r) at r) at r",
     "mapping `f` inside `on` would run a `letregion` on the GPU (its body has a `letregion` at "
     "2:30)", 3, 5),
    # through a second function: the site is the call in its body
    ("letregion r in\nlet f = lambda x: int r [r]. letregion s in x in\n"
     "let g = lambda y: int r [r]. f y in\non (g (1 at r)) at r",
     "calling `g` inside `on` would run a `letregion` on the GPU (its body calls, at 3:30, a "
     "function that does)", 4, 5),
    # a parameter whose type says it may run `on`
    ("letregion r in\nlet g = lambda h: (int r -> int r [r; on], r) [r]. on (h (2 at r)) at r "
     "in g (lambda x: int r [r]. on (x + 1 at r) at r)",
     "calling `h` inside `on` would run an `on` on the GPU (its type ((int r) -> int r [r; on], "
     "r) says so)", 2, 56),
    # a recursive call inside `on` of a function whose body runs `on`
    ("param n : int = 4\nletregion r in\nlet go = fix go: (int r -> int r [r], r). "
     "lambda k: int r [r].\n  if k < 1 then on (k + 1 at r) at r else on (go (k - 1 at r)) at r"
     " in go n", "calling `go` inside `on` would run an `on` on the GPU", 4, 47),
    # reduce, and a region abstraction instantiated inside `on`
    ("letregion r in\nlet f = lambda p: ((int r, int r), r) [r]. letregion s in fst p in\n"
     "on (reduce f (0 at r) (iota (4 at r) at r)) at r",
     "reducing with `f` inside `on` would run a `letregion`", 3, 5),
    ("letregion r in\nlet k = lambda s >= [r]. (letregion t in 1 at r) at r in\n"
     "on (k[r]) at r", "instantiating `k` inside `on` would run a `letregion`", 3, 5),
])
def test_a_world_effect_reached_through_a_call_inside_on_is_rejected(source, fragment, line,
                                                                      column):
    error = rejects(source, WorldError, fragment)
    assert (error.span.line, error.span.column) == (line, column)
    assert "Fig. 2" in error.rule


def test_a_function_type_records_its_world_effect():
    assert type_of(ON_IN_F + "f") == "((int r) -> int r [r; on], r)"
    assert type_of("letregion r in lambda x: int r [r]. letregion s in x") == (
        "((int r) -> int r [r; letregion], r)")
    # calling it on the CPU is fine, and the call carries no world effect to the outside type
    assert type_of(ON_IN_F + "f (1 at r)") == "int r"
    # a shadowing binding without `on` may be called inside `on`
    assert type_of(ON_IN_F + "let f = lambda x: int r [r]. x + 1 at r in on (f (1 at r)) at r"
                   ) == "int r"


def test_a_parameter_must_admit_the_world_effect_of_the_function_passed():
    rejects("letregion r in\nlet g = lambda h: (int r -> int r [r], r) [r]. h (2 at r) in\n"
            "g (lambda x: int r [r]. on (x + 1 at r) at r)", CheckError,
            "but the argument has type ((int r) -> int r [r; on], r)")
    assert type_of("letregion r in\nlet g = lambda h: (int r -> int r [r; on], r) [r]. h (2 at r)"
                   " in\ng (lambda x: int r [r]. on (x + 1 at r) at r)") == "int r"


def test_a_lambda_world_effect_is_inferred_not_written():
    with pytest.raises(ParseError) as info:
        parse("letregion r in lambda x: int r [r; on]. x", "t.lg")
    assert "written only in a function type" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (1, 32)
