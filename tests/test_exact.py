"""graphs.semantics.exact: sympy expressions in the sizes evaluated in exact Python arithmetic give
what sympy's substitution gives, and refuse what is not exact arithmetic."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import sympy as sp
from sympy.core.cache import clear_cache

from graphs.semantics.exact import Inexact, by_identity, exact_function, exact_integer, exact_value

n = sp.Symbol("n", integer=True, positive=True)
k = sp.Symbol("k", integer=True, nonnegative=True)
t = sp.Symbol("t", integer=True, nonnegative=True)

EXPRESSIONS = [
    17 * n + 3 * t - 3 * sp.ceiling(n / 2**k) + 4,
    t + 32 * (k + 2) * sp.ceiling(n / 32),
    sp.floor(sp.ceiling(n / 2**k) / 2),
    sp.Max(n - 5, 2 * k) + sp.Min(t, 3),
    sp.Rational(3, 4) * n + sp.Rational(1, 3) * t,
    sp.ceiling(-n / 7) + sp.floor(sp.Rational(5, 3) * t),
    (n + 1) ** 2 - 2 ** (k + 1),
    sp.ceiling((n + t) / 3),
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
def test_values_equal_sympys_substitution(expr):
    random.seed(str(expr))
    for _ in range(200):
        values = {n: random.choice([1, 2, 31, 32, 33, 1023, 2**39 + 1, 10**12]),
                  k: random.randint(0, 40), t: random.randint(0, 10**6)}
        want = expr.xreplace({s: sp.Integer(v) for s, v in values.items()})
        got = exact_value(expr, values)
        assert got == Fraction(int(want.p), int(want.q)), values
        assert isinstance(got, int) == bool(want.is_Integer)


def test_sympy_integers_and_rationals_are_values_too():
    assert exact_value(n / 2 + t, {n: sp.Integer(3), t: sp.Rational(1, 2)}) == 2


@pytest.mark.parametrize("expr", [n * sp.Float(0.5), sp.Piecewise((n, n > 3), (1, True)),
                                  sp.ceiling(sp.log(n)), sp.log(n) / sp.log(2)], ids=str)
def test_what_is_not_exact_arithmetic_is_left_to_sympy(expr):
    """A float, a piecewise, a logarithm other than ⌈log2⌉ and ⌊log2⌋ are not compiled: the
    callers ask sympy."""
    assert exact_function(expr) is None
    with pytest.raises(Inexact):
        exact_value(expr, {n: 4})


@pytest.mark.parametrize("rounding", [sp.ceiling, sp.floor])
def test_log2_is_sympys_away_from_powers_of_two_and_left_to_it_near_them(rounding):
    """sympy decides ⌈log2 x⌉ numerically and takes a value very near a whole number for it
    (⌈log2(2^39 + 1)⌉ = 39): exact arithmetic answers where sympy's floats tell them apart, and
    at powers of two, and leaves the sizes just above or below one to sympy."""
    expr = rounding(sp.log(n) / sp.log(2))
    random.seed(7)
    sizes = [*range(1, 200), *(2**m for m in range(41)),
             *(random.randint(1, 10**12) for _ in range(300))]
    for x in sizes:
        want = expr.xreplace({n: sp.Integer(x)})
        assert exact_value(expr, {n: x}) == want, x
    for x in (2**39 + 1, 2**40 - 1, 2**30 + 5):
        with pytest.raises(Inexact):
            exact_value(expr, {n: x})


def test_a_sum_over_levels_is_added_term_by_term():
    """A lock-step base after a reduction: a Sum over its levels, up to ⌈log2 n⌉."""
    expr = 64 * sp.Sum(sp.ceiling(sp.floor(sp.ceiling(n / 2**k) / 2) / 32),
                       (k, 0, sp.ceiling(sp.log(n) / sp.log(2)) - 1)) + t
    for x in (3, 5, 100, 1000, 10**6 + 3, 10**12):
        values = {n: x, t: 7}
        want = expr.xreplace({n: sp.Integer(x), t: sp.Integer(7)}).doit()
        assert exact_value(expr, values) == want, x


def test_values_it_cannot_take_raise():
    with pytest.raises(Inexact):
        exact_value(n + 1, {n: 0.5})  # a float: sympy's rounding, not exact arithmetic
    with pytest.raises(KeyError):
        exact_value(n + t, {n: 1})  # t not given: sympy leaves it free
    with pytest.raises(ZeroDivisionError):
        exact_value(1 / n, {n: 0})
    with pytest.raises(Inexact):
        exact_integer(n / 2, {n: 3})
    with pytest.raises(Inexact):
        exact_value(sp.sqrt(n), {n: 4})  # a root


def test_results_are_kept_by_identity():
    """Two equal expressions built apart (another program's, with its own symbols) are kept
    apart: neither is handed the other's result."""
    calls = []

    @by_identity
    def symbols_of(expr):
        calls.append(expr)
        return [s for s in expr.free_symbols]

    first = n + t
    clear_cache()  # else sympy hands back the expression it made above
    second = n + t
    assert first == second and first is not second
    symbols_of(first)
    symbols_of(first)
    symbols_of(second)
    assert len(calls) == 2
