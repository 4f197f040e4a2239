"""Sympy expressions in the sizes, evaluated in exact Python arithmetic.

The symbolic profiles (`graphs.symbolic_profile`) and the region sizes (`graphs.semantics.symbolic.
RegionSizes`) are priced at many sizes: a break-even search asks a program's time at dozens of
them. Substituting the sizes with sympy at each one walks and rebuilds every expression; here an
expression is compiled once, on first use, into a Python function of its symbols' values, which
computes what sympy's substitution computes, in ints and Fractions. Only sums, products, integer
powers, ceilings, floors, Max and Min of integers and rationals, finite Sums of them, and the
ceiling and floor of log2 (away from powers of two) are compiled: anything else (a float, whose
sum sympy rounds in its own order; a Piecewise; another logarithm) is left to sympy, and the
callers fall back to it where `exact_function` gives None or its function raises.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import sympy as sp

Number = int | Fraction
Compiled = Callable[[dict], Number]

MAX_EXPONENT = 4096  # a larger power is left to sympy, not computed here to a million digits
MAX_TERMS = 4096  # a longer Sum is left to sympy


class Inexact(Exception):  # noqa: N818 - a condition the callers handle, not a failure
    """An expression, or a value given to it, that exact arithmetic does not evaluate: the caller
    asks sympy instead."""


def by_identity(function: Callable[..., Any]) -> Callable[..., Any]:
    """functools.cache keyed by the identity of its sympy arguments (other arguments by value).

    sympy compares two equal expressions by walking them; and an equal expression of another
    profile (a rewrite's candidate programs are built with fresh symbols of the same names) would
    be handed a result holding the other profile's symbols, which every later lookup in this
    profile's dicts would then compare by value. The arguments are kept with the result, so that
    an id is not reused while it is a key."""
    kept: dict[Any, tuple] = {}

    @functools.wraps(function)
    def cached(*args: Any) -> Any:
        first = args[0]
        if len(args) == 1 and isinstance(first, sp.Basic):
            key: Any = id(first)  # the common call, without building a tuple
        else:
            key = tuple(id(a) if isinstance(a, sp.Basic) else a for a in args)
        found = kept.get(key)
        if found is None:
            found = kept[key] = (function(*args), args)
        return found[0]

    return cached


@by_identity
def exact_function(expr: sp.Basic) -> Compiled | None:
    """expr as a function of a dict of its symbols' values (ints, sympy Integers or Rationals,
    Fractions) that returns its value as an int or a Fraction; None where expr has a part exact
    arithmetic does not evaluate (see the module's docstring). The function raises Inexact
    where a value is not an integer or a rational, KeyError where one is missing, and
    ZeroDivisionError where sympy would find a complex infinity. Kept per expression: a
    profile's expressions are met again at every size."""
    try:
        return _compile(sp.sympify(expr))
    except Inexact:
        return None


def exact_value(expr: sp.Basic, values: dict) -> Number:
    """expr at `values` (`exact_function`): an int where it is whole, else a Fraction; Inexact
    where it cannot be evaluated exactly."""
    function = exact_function(expr)
    if function is None:
        raise Inexact
    found = function(values)
    if not isinstance(found, int) and found.denominator == 1:
        return int(found)
    return found


def exact_integer(expr: sp.Basic, values: dict) -> int:
    """expr at `values` (`exact_value`); Inexact where it is not an integer."""
    found = exact_value(expr, values)
    if not isinstance(found, int):
        raise Inexact
    return found


def _compile(expr: sp.Basic) -> Compiled:
    if expr.is_Integer:
        whole = int(expr)
        return lambda values: whole
    if expr.is_Rational:
        ratio = Fraction(int(expr.p), int(expr.q))
        return lambda values: ratio
    if expr.is_Symbol:
        return lambda values: _number(values[expr])
    if isinstance(expr, sp.ceiling | sp.floor):
        return _rounded(expr)
    if isinstance(expr, sp.Sum):
        return _summed(expr)
    parts = [_compile(arg) for arg in expr.args]
    if isinstance(expr, sp.Add | sp.Mul):
        return _combined(parts, isinstance(expr, sp.Add))
    if isinstance(expr, sp.Pow):
        base, exponent = parts
        return lambda values: _power(base(values), exponent(values))
    if isinstance(expr, sp.Max):
        return lambda values: max(part(values) for part in parts)
    if isinstance(expr, sp.Min):
        return lambda values: min(part(values) for part in parts)
    raise Inexact


def _combined(parts: list[Compiled], add: bool) -> Compiled:
    """The sum or product of `parts` (exact, so in any order): two or three parts without a
    generator, the common case."""
    if len(parts) == 2:
        a, b = parts
        return (lambda values: a(values) + b(values)) if add else (
            lambda values: a(values) * b(values))
    if len(parts) == 3:
        a, b, c = parts
        return (lambda values: a(values) + b(values) + c(values)) if add else (
            lambda values: a(values) * b(values) * c(values))
    if add:
        return lambda values: sum(part(values) for part in parts)
    return lambda values: math.prod(part(values) for part in parts)


def _rounded(expr: sp.ceiling | sp.floor) -> Compiled:
    """⌈x⌉ or ⌊x⌋. The common x = (p/q)·rest, with rest an integer (⌈n/32⌉), in integer
    division; x = log(y)/log(2) (`_log2`); any other x through a Fraction."""
    ceiling = isinstance(expr, sp.ceiling)
    argument = expr.args[0]
    if isinstance(argument, sp.Mul) and len(argument.args) == 2 and sp.Pow(
            sp.log(2), -1) in argument.args:
        logarithm = next(a for a in argument.args if a != sp.Pow(sp.log(2), -1))
        if isinstance(logarithm, sp.log) and len(logarithm.args) == 1:
            inner = _compile(logarithm.args[0])
            return lambda values: _log2(inner(values), ceiling)
    coefficient, rest = argument.as_coeff_Mul()
    if coefficient.is_Rational and not coefficient.is_Integer and rest != 1:
        p, q = int(coefficient.p), int(coefficient.q)
        inner = _compile(rest)

        def divided(values: dict) -> Number:
            x = inner(values)
            if isinstance(x, int):
                return -(-(p * x) // q) if ceiling else (p * x) // q
            return math.ceil(p * x / q) if ceiling else math.floor(p * x / q)

        return divided
    whole = _compile(expr.args[0])
    rounding = math.ceil if ceiling else math.floor
    return lambda values: rounding(whole(values))


SYMPY_LOG_DIGITS = 24
"""How close to a power of two (relatively, in binary digits) a size must be for ⌈log2⌉ and ⌊log2⌋
of it to be left to sympy: sympy decides them numerically, taking a value that close to a whole
number for it (⌈log2(2^39 + 1)⌉ = 39, where the answer is 40), so exact arithmetic answers only
where sympy's floats certainly tell the two apart, and at powers of two, which sympy gets
right."""


def _log2(x: Number, ceiling: bool) -> int:
    """⌈log2 x⌉ or ⌊log2 x⌋ of a positive integer, exactly, as sympy finds it; Inexact for x just
    above or below a power of two (`SYMPY_LOG_DIGITS`: sympy is asked), and for any other x."""
    if not isinstance(x, int) or x < 1:
        raise Inexact
    power = x.bit_length() - 1
    if x == 1 << power:
        return power  # sympy finds a power of two's logarithm whole, as it is
    if min(x - (1 << power), (2 << power) - x) << SYMPY_LOG_DIGITS < (1 << power):
        raise Inexact
    return power + 1 if ceiling else power


def _summed(expr: sp.Sum) -> Compiled:
    """Σ of a term over an index from one bound to the other, bounds and term exact: term by
    term (a reduction's levels, about log2 n of them)."""
    if len(expr.limits) != 1:
        raise Inexact
    index, low, high = expr.limits[0]
    term, first, last = _compile(expr.function), _compile(low), _compile(high)

    def total(values: dict) -> Number:
        start, end = first(values), last(values)
        if not isinstance(start, int) or not isinstance(end, int) or end - start > MAX_TERMS:
            raise Inexact
        return sum(term({**values, index: i}) for i in range(start, end + 1))

    return total


def _number(value: Any) -> Number:
    if type(value) is int:
        return value
    if isinstance(value, int | Fraction) and not isinstance(value, bool):
        return value
    if isinstance(value, sp.Integer):
        return int(value)
    if isinstance(value, sp.Rational):
        return Fraction(int(value.p), int(value.q))
    raise Inexact  # a float, an expression


def _power(base: Number, exponent: Number) -> Number:
    if not isinstance(exponent, int):
        if exponent.denominator != 1:
            raise Inexact  # a root
        exponent = int(exponent)
    if abs(exponent) > MAX_EXPONENT:
        raise Inexact
    if exponent >= 0:
        return base**exponent
    return Fraction(1) / Fraction(base) ** -exponent
