"""The conditions under which the symbolic evaluator (graphs.semantics.symbolic) hands a program
back to the explicit one. They live apart from it so that a command that only catches them, such as
`hetprof profile`, need not import sympy (issue 19: start-up time)."""

from __future__ import annotations

from profiler.errors import HetprofError

__all__ = ["NotRegular", "OutsideAssumptions"]


class NotRegular(HetprofError):  # noqa: N818 - a condition the caller handles, not a failure
    """The program is not regular at this place: its threads differ in cost shape, or a size
    decides control flow. The caller evaluates it explicitly instead."""

    rule = "symbolic profiling"


class OutsideAssumptions(NotRegular):
    """Sizes at which the formulas do not hold: a size parameter below 1, or a count or a
    recursion's size (an expression in the sizes, e.g. `n - 32`) below 1 there. The caller
    evaluates the program explicitly at those sizes instead."""
