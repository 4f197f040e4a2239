"""profiler/access.py: each indexing site's access pattern, from the program text."""

from __future__ import annotations

import pytest
import sympy as sp

from profiler.access import Pattern, SlotAccess, slot_accesses
from profiler.checker import check_program
from profiler.parser import parse

HEADER = """\
param n : int = 4
letregion r in
let v = parmap (lambda t: int r [r]. t * 2) (iota (n * n)) at r in
"""


N = sp.Symbol("n", positive=True, integer=True)


def walk(stride, shared: bool = False) -> SlotAccess:
    return SlotAccess(Pattern.WALK, sp.sympify(stride), shared)


def patterns(body: str) -> list[SlotAccess]:
    """The patterns of the program's indexing sites, in source order."""
    checked = check_program(parse(HEADER + body, "access.lg"))
    found = slot_accesses(checked.program)
    return [found[span] for span in sorted(found, key=lambda s: (s.line, s.column))]


@pytest.mark.parametrize("body, expected", [
    # work items one after another: v[i], v[i + 3], v[2 i], v[7 i]
    ("parmap (lambda i: int r [r]. v[i] + v[i + 3]) (iota n)",
     [walk(1), walk(1)]),
    ("parmap (lambda i: int r [r]. v[2 * i] + v[7 * i]) (iota n)",
     [walk(2), walk(7)]),
    # a line or more an iteration, or a size parameter's worth (a diagonal)
    ("parmap (lambda i: int r [r]. v[8 * i] + v[i * n + i]) (iota n)",
     [walk(8), walk(N + 1)]),
    # inside a loop over j: v[i] stays (re-read), v[i * n + j] walks a row, v[j * n + i] a
    # column whose lines the next work items (i + 1, ...) walk again
    ("parmap (lambda i: int r [r]. reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p) 0 "
     "(parmap (lambda j: int r [r]. v[i] + v[i * n + j] + v[j * n + i]) (iota n))) (iota n)",
     [SlotAccess(Pattern.REREAD), walk(1), walk(N, shared=True)]),
    # a row of t / n: held from one iteration to the next, so t - (t / n) * n steps by one
    ("parmap (lambda t: int r [r]. let i = t / n in v[t - i * n] + v[i]) (iota (n * n))",
     [walk(1), SlotAccess(Pattern.REREAD)]),
    # an index read from the data, or a product of a loop's index with itself
    ("parmap (lambda i: int r [r]. v[v[i]] + v[i * i]) (iota n)",
     [SlotAccess(Pattern.RANDOM), walk(1), SlotAccess(Pattern.RANDOM)]),
    # the elements of a vector that is not an iota are data
    ("parmap (lambda x: int r [r]. v[x]) v",
     [SlotAccess(Pattern.RANDOM)]),
    # a function's parameter: not followed
    ("parmap (lambda i: int r [r]. let f = lambda k: int r [r]. v[k] in f i) (iota n)",
     [SlotAccess(Pattern.UNKNOWN)]),
    # a site is placed by the loops around it in the text: a function written outside every
    # loop and called inside one is not followed into its calls
    ("let f = lambda k: int r [r]. v[k] in parmap (lambda i: int r [r]. f i) (iota n)", []),
    # a vector written out in the program stays in the L1 wherever its index goes
    ("let w = [1, 2, 3] at r in parmap (lambda i: int r [r]. w[i * n]) (iota 3)",
     [SlotAccess(Pattern.REREAD)]),
])
def test_each_site_is_classified_by_how_its_index_moves(body, expected):
    assert patterns(body) == expected


def test_sites_outside_every_loop_have_no_pattern():
    assert patterns("v[3] + v[n]") == []


def test_a_loop_bound_to_a_name_is_still_a_loop():
    assert patterns("let ix = iota n at r in parmap (lambda i: int r [r]. v[i * n]) ix") == [
        walk(N)]


def test_a_shadowed_size_parameter_is_the_inner_value():
    # `n` rebound to a loop's index: v[i * n] is then v[i * i], not affine
    assert patterns("parmap (lambda n: int r [r]. v[n * n]) (iota 4)") == [
        SlotAccess(Pattern.RANDOM)]
