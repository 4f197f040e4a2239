"""How hetprof writes a formula for people (text reports): the notation of the paper, ⌈x⌉, ⌊x⌋,
log₂ and max, instead of sympy's `ceiling(log(n)/log(2))`. The JSON reports keep the form sympy
parses back (graphs.symbolic_profile.formula_text)."""

from __future__ import annotations

import re

import sympy as sp
from sympy.printing.str import StrPrinter


class _FormulaPrinter(StrPrinter):
    """sympy's plain printer with ⌈x⌉, ⌊x⌋, max, min and cases."""

    def _print_ceiling(self, expr: sp.Expr) -> str:
        return "⌈" + self._print(expr.args[0]) + "⌉"

    def _print_floor(self, expr: sp.Expr) -> str:
        return "⌊" + self._print(expr.args[0]) + "⌋"

    def _print_Max(self, expr: sp.Expr) -> str:
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr: sp.Expr) -> str:
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Piecewise(self, expr: sp.Expr) -> str:
        """`{2*n if n <= 2; 9*n/2 otherwise}`, not `Piecewise((2*n, n <= 2), (9*n/2, True))`."""
        parts = [f"{self._print(value)} otherwise" if condition == sp.true
                 else f"{self._print(value)} if {self._print(condition)}"
                 for value, condition in expr.args]
        return "{" + "; ".join(parts) + "}"


_LOG2 = re.compile(r"log\(([^()]*)\)/log\(2\)")


def formula(text: str | sp.Expr) -> str:
    """A formula for people: `ceiling(log(n)/log(2))` as ⌈log₂(n)⌉, `floor(x)` as ⌊x⌋, `Max` as
    max. A formula's text (sympy's `sstr`, as the JSON reports keep it) is rewritten as it
    stands, its terms in the same order, without parsing it back (a second of sympy for the
    formulas of one `place`); text that is not a formula (such as "-") is returned as it is."""
    if isinstance(text, str) and "Piecewise(" in text:  # rare: parsed, for its cases
        text = sp.sympify(text)
    if isinstance(text, str):
        return _LOG2.sub(r"log₂(\1)", _notation(text))
    return _LOG2.sub(r"log₂(\1)", _FormulaPrinter().doprint(text))


def piece_marker(piece: dict) -> str:
    """What follows a formula shown by one of its pieces (graphs.symbolic_profile.piece_at)."""
    return f" [piece {piece['piece']} of {piece['pieces']}, the one at these sizes]"


_CALL = re.compile(r"(?<![\w.])(ceiling|floor|Max|Min)\(")
_BRACKETS = {"ceiling": ("⌈", "⌉"), "floor": ("⌊", "⌋"), "Max": ("max(", ")"),
             "Min": ("min(", ")")}


def _notation(text: str) -> str:
    """`_FormulaPrinter`'s notation on sympy's plain text of a formula: each call of ceiling,
    floor, Max and Min, to its matching parenthesis, as _FormulaPrinter prints it."""
    out: list[str] = []
    closing: list[str] = []  # what each open parenthesis closes with
    at = 0
    for match in re.finditer(r"[()]", text):
        call = _CALL.search(text, at, match.end()) if match.group() == "(" else None
        if call is not None and call.end() == match.end():
            out.append(text[at:call.start()])
            opening, close = _BRACKETS[call.group(1)]
            out.append(opening)
            closing.append(close)
        elif match.group() == "(":
            out.append(text[at:match.end()])
            closing.append(")")
        else:
            out.append(text[at:match.start()])
            out.append(closing.pop() if closing else ")")
        at = match.end()
    out.append(text[at:])
    return "".join(out)
