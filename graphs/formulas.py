"""How hetprof writes a formula for people (text reports): the notation of the paper, ⌈x⌉, ⌊x⌋,
log₂ and max, instead of sympy's `ceiling(log(n)/log(2))`. The JSON reports keep the form sympy
parses back (graphs.symbolic_profile.formula_text)."""

from __future__ import annotations

import re

import sympy as sp
from sympy.printing.str import StrPrinter


class _FormulaPrinter(StrPrinter):
    """sympy's plain printer with ⌈x⌉, ⌊x⌋, max and min."""

    def _print_ceiling(self, expr: sp.Expr) -> str:
        return "⌈" + self._print(expr.args[0]) + "⌉"

    def _print_floor(self, expr: sp.Expr) -> str:
        return "⌊" + self._print(expr.args[0]) + "⌋"

    def _print_Max(self, expr: sp.Expr) -> str:
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr: sp.Expr) -> str:
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"


_LOG2 = re.compile(r"log\(([^()]*)\)/log\(2\)")


def formula(text: str | sp.Expr) -> str:
    """A formula for people: `ceiling(log(n)/log(2))` as ⌈log₂(n)⌉, `floor(x)` as ⌊x⌋, `Max` as
    max. Text that is not a formula (such as "-") is returned as it is."""
    if isinstance(text, str):
        try:
            expr = sp.sympify(text)
        except (sp.SympifyError, TypeError, SyntaxError):
            return text
    else:
        expr = text
    return _LOG2.sub(r"log₂(\1)", _FormulaPrinter().doprint(expr))
