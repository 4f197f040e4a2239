"""Break-even sizes: where the cheaper of two costs changes as one size parameter grows. One home for
the three ways hetprof finds them, which share the ladder of sizes and the bisection:

- `crossings`: every change of the cheaper side in 1..upper, exact to the integer, for costs that
  are cheap to evaluate at any size (symbolic profiles: `hetprof place`, the symbolic solver of
  `hetprof rewrite`). sympy's roots of the two formulas (ceilings relaxed) and a ladder of sizes
  bracket the changes; the exact costs confirm and bisect each one. `resolved_upper` says up to
  which size floats can tell the two costs apart at all.
- `ladder_break_even`: where a rewrite starts (or stops) paying, from a verdict that evaluates
  both programs explicitly (so the ladder stops before the evaluations grow past a budget of
  work). Its result, `BreakEven`, is the one `hetprof rewrite` prints.
- `interpolated_break_even`: the crossing of two measured or predicted time curves sampled at a
  few sizes (`hetprof plot sizes`), linearly interpolated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import sympy as sp

from graphs.semantics.exact import by_identity
from graphs.semantics.symbolic import size_symbol


def ladder(upper: int, halves: bool = True) -> list[int]:
    """The sizes tried between 1 and `upper`: 1, 2, 4, 8, ... and, with `halves`, the sizes
    half-way between (3, 6, 12, ...)."""
    points: list[int] = []
    n = 1
    while n <= upper:
        points.extend((n, n + n // 2) if n > 1 and halves else (n,))
        n *= 2
    return [p for p in points if p <= upper]


def bisect(low: int, high: int, on_low_side: Callable[[int], bool | None],
           width: int = 1) -> tuple[int, int]:
    """Narrow a bracket [low, high] whose ends lie on two sides of one change (on_low_side(low)
    holds, on_low_side(high) does not) until it is at most `width` wide. A verdict of None (a size
    that cannot be evaluated) stops early with the bracket so far."""
    while high - low > width:
        middle = (low + high) // 2
        side = on_low_side(middle)
        if side is None:
            break
        if side:
            low = middle
        else:
            high = middle
    return low, high


def _gives(verdict: Callable[[int], object], side: object) -> Callable[[int], bool | None]:
    """Whether `verdict(n)` is `side` (None where the verdict is None), for `bisect`."""
    def on_side(n: int) -> bool | None:
        answer = verdict(n)
        return None if answer is None else answer == side
    return on_side


# -- every change of the cheaper side (costs cheap at any size) -------------------------------------


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where two costs cross as one size grows: from `n` on, `cheaper` is the cheaper one."""

    n: int
    cheaper: str
    method: str  # "sympy": a root of the formulas (ceilings relaxed) led to it; else "numeric"


def crossings(cost_a, cost_b, parameter: str, formula_a: sp.Expr | None = None,
              formula_b: sp.Expr | None = None, upper: int = 10**12,
              names: tuple[str, str] = ("a", "b"), lower: int = 1) -> list[Crossing]:
    """Every size in lower..upper from which the cheaper of two costs changes, exactly (integers).

    `cost_a(n)` and `cost_b(n)` are exact costs at a size (each O(1) for a symbolic profile).
    With formulas, sympy first solves formula_a = formula_b with ceilings and floors relaxed to
    their arguments; each root is checked, and moved to the exact integer, with the exact costs.
    The numeric fallback evaluates n = 1, 2, 4, ... and bisects every change of sign. Sizes
    below `lower` are not priced (a program that does not run there: `hetprof place`)."""

    known: dict[int, str] = {}

    def cheaper(n: int) -> str:  # a tie goes to the first (it is no worse)
        if n not in known:
            known[n] = names[1] if cost_b(n) < cost_a(n) else names[0]
        return known[n]

    roots = [r for r in _sympy_roots(formula_a, formula_b, parameter, upper) if r >= lower]
    points = sorted({lower, *(p for p in ladder(upper) if p >= lower), *roots})
    # The formulas, compiled, sort the ladder quickly; the exact costs then check every bracket
    # and both ends, and bisect. Where the formulas misled (a kernel formula holds for its
    # reference sizes' residue class), the changes found do not lead from the exact verdict at
    # the first size to the one at the last. Then the sizes up to EXACT_BELOW, where a kernel's
    # last, partial work group makes its formula miss most, are priced exactly and the formulas
    # sort the rest (every larger size of the ladder is a multiple of the largest work group);
    # where the story still does not hold, every size of the ladder is priced exactly.
    fast = _fast_verdict(formula_a, formula_b, parameter, names)
    if fast is not None:
        def small_exact(n: int) -> str:
            return cheaper(n) if n <= EXACT_BELOW else fast(n)

        for guess in (fast, small_exact):
            found = _scan(points, guess, cheaper, roots)
            last = found[-1].cheaper if found else cheaper(points[0])
            if last == cheaper(points[-1]):
                return found
    return _scan(points, cheaper, cheaper, roots)


EXACT_BELOW = 4096  # `crossings` prices the ladder's sizes up to this exactly before all of them
RESOLUTION = 1e-14  # relative (about 90 ulps): below it, two costs in floats are not told apart
EXACT_FLOATS = 2**50  # below it, quarter units (abstract profiles' weights) are exact in floats


def resolved_upper(cost_a, cost_b, parameter: str, formula_a: sp.Expr | None = None,
                   formula_b: sp.Expr | None = None, upper: int = 10**12) -> int:
    """The largest size up to `upper` at which the two costs can be compared (`_comparable`):
    where they differ by less than RESOLUTION of their size and are not exact, floats (the GPU
    model's kernel times, the values of the formulas) cannot tell which is cheaper, and a
    crossing found there would be rounding. Walks the ladder down from `upper`, by the compiled
    formulas where there are any, else by the exact costs."""
    if formula_a is not None and formula_b is not None and sp.expand(formula_a - formula_b) == 0:
        return upper  # the same formula: a tie at every size, not a rounding
    fast = _compiled(formula_a, formula_b, parameter)
    sizes = ladder(upper)
    for n in reversed(sizes):
        try:
            a, b = fast(n) if fast is not None else (cost_a(n), cost_b(n))
        except (ValueError, OverflowError, TypeError):
            a, b = cost_a(n), cost_b(n)
        if _comparable(a, b):
            return upper if n == sizes[-1] else n
    return 1


def _comparable(a: float, b: float) -> bool:
    """Whether two costs in floats tell which is cheaper: whole numbers of quarter units below
    EXACT_FLOATS are exact, so they always do; others must differ by more than RESOLUTION."""
    if all(abs(x) < EXACT_FLOATS and float(4 * x).is_integer() for x in (a, b)):
        return True
    return abs(a - b) > RESOLUTION * max(abs(a), abs(b))


def _compiled(formula_a, formula_b, parameter: str):
    """Both formulas compiled to Python floats, as one function of n; None if sympy cannot."""
    if formula_a is None or formula_b is None:
        return None
    symbol = size_symbol(parameter)
    fa, fb = _lambdified(formula_a, symbol), _lambdified(formula_b, symbol)
    if fa is None or fb is None:
        return None
    return lambda n: (fa(n), fb(n))


@by_identity
def _lambdified(formula, symbol):
    """A formula compiled to Python floats (sympy's lambdify), tried at 1; None if sympy cannot.
    Kept per formula: `hetprof rewrite` compares the written program's with every other's."""
    try:
        function = sp.lambdify(symbol, formula, "math")
        function(1)
    except Exception:  # noqa: BLE001 - sympy cannot compile every formula; then there is none
        return None
    return function


def _scan(points: list[int], guess, cheaper, roots: list[int]) -> list[Crossing]:
    """`crossings` over the sizes `points`, sorted by `guess`, confirmed by `cheaper`."""
    verdicts = [(n, guess(n)) for n in points]
    for i in (0, len(verdicts) - 1):
        verdicts[i] = (verdicts[i][0], cheaper(verdicts[i][0]))
    found: list[Crossing] = []
    for (low, left), (high, right) in zip(verdicts, verdicts[1:], strict=False):
        if left == right:
            continue
        left, right = cheaper(low), cheaper(high)
        if left == right:
            continue
        # A relaxed root inside the bracket is sympy's answer; bisection makes it exact.
        method = "sympy" if any(low <= r <= high for r in roots) else "numeric"
        # The compiled formulas narrow the bracket; the exact costs confirm it and finish.
        if guess is not cheaper:
            narrow_low, narrow_high = bisect(low, high, _gives(guess, left), width=64)
            if cheaper(narrow_low) == left and cheaper(narrow_high) != left:
                low, high = narrow_low, narrow_high
        _, high = bisect(low, high, _gives(cheaper, left))
        found.append(Crossing(high, cheaper(high), method))
    return found


def _fast_verdict(formula_a, formula_b, parameter: str, names: tuple[str, str]):
    """cheaper(n) from the formulas compiled to Python (floats): for sorting sizes only."""
    both = _compiled(formula_a, formula_b, parameter)
    if both is None:
        return None

    def verdict(n: int) -> str:
        try:
            a, b = both(n)
        except (ValueError, OverflowError, TypeError):
            return names[0]
        return names[1] if b < a else names[0]
    return verdict





def _sympy_roots(formula_a, formula_b, parameter: str, upper: int) -> list[int]:
    """Integer candidates near the real roots of formula_a = formula_b, with ceilings and floors
    relaxed to their arguments and each side's max(...) tried branch by branch."""
    if formula_a is None or formula_b is None:
        return []
    symbol = size_symbol(parameter)
    out: list[int] = []
    for a in _branches(formula_a):
        for b in _branches(formula_b):
            difference = sp.sympify(a - b)
            for function in (sp.ceiling, sp.floor):
                difference = difference.replace(function, lambda x: x)
            if difference.has(sp.Piecewise, sp.Max, sp.Min, sp.Sum, sp.log) or (
                    difference.free_symbols - {symbol}):
                continue
            try:
                roots = sp.solve(sp.Eq(difference, 0), symbol)
            except (NotImplementedError, TypeError, ValueError):
                continue
            for root in roots:
                value = complex(sp.N(root))
                if abs(value.imag) < 1e-9 and 1 <= value.real <= upper:
                    out.extend({max(1, math.floor(value.real)), math.ceil(value.real)})
    return out


def _branches(formula: sp.Expr) -> list[sp.Expr]:
    formula = sp.sympify(formula)
    return list(formula.args) if isinstance(formula, sp.Max) else [formula]


# -- where a rewrite pays (costs evaluated explicitly) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class BreakEven:
    """Where a rewrite starts (or stops) paying, in size parameter `parameter`.

    `direction`: "from" (it pays for n ≥ `n`), "below" (it pays for n < `n`), "always" or
    "never" (on every size tried, up to `largest`: `searched`); `method` says how it was
    found."""

    parameter: str
    direction: str
    n: int | None
    method: str
    largest: int

    def describe(self, grouped: bool = False) -> str:
        """`n >= 49`, `n < 50`, `always` or `never`: one vocabulary, whichever way it was found
        (`searched` says up to which size). `grouped`: sizes with thousands separators, as the
        text reports write numbers (`n < 7,407`; JSON keeps `n < 7407`)."""
        size = f"{self.n:,}" if grouped and self.n is not None else f"{self.n}"
        match self.direction:
            case "from":
                return f"{self.parameter} >= {size}"
            case "below":
                return f"{self.parameter} < {size}"
            case "always":
                return "always"
        return "never"

    def searched(self, grouped: bool = False) -> str:
        """The sizes the answer covers: `n <= 1024`, `n <= 10^12` (`grouped`: `n <= 1,024`)."""
        largest = self.largest
        exponent = len(str(largest)) - 1
        shown = f"{largest:,}" if grouped else f"{largest}"
        if largest >= 10**6 and largest == 10**exponent:
            shown = f"10^{exponent}"
        return f"{self.parameter} <= {shown}"

    def pays_at(self, n: int) -> bool:
        """Whether this says the rewrite pays at size n."""
        match self.direction:
            case "from":
                return n >= (self.n or 0)
            case "below":
                return n < (self.n or 0)
            case "always":
                return True
        return False


def ladder_break_even(pays: Callable[[int], bool | None], parameter: str, ladder_max: int = 1024,
                      steps: Callable[[int], int] | None = None,
                      budget: int | None = None) -> BreakEven:
    """Where `pays(n)` (the rewritten program is faster at n; None where a size cannot be
    evaluated, an index out of range at a tiny size, say) changes, on the sizes 1, 2, 4, ...,
    ladder_max: the first change of verdict is bisected to the exact integer (assuming one
    change between two rungs).

    With a `budget`, the ladder stops before a size whose verdict is predicted to take more
    than `budget` steps of work (`steps(n)`: what the verdict at n took, e.g. the explicit
    evaluator's steps), and after a size that took more: the prediction carries on the growth
    between the last two sizes evaluated (`predicted_steps`). Work, unlike wall time, does not
    depend on the machine or its load, so neither does the answer (`largest` says where the
    ladder stopped)."""
    points = []
    spent: list[tuple[int, int]] = []  # (n, steps) of the sizes evaluated, for the prediction
    for n in ladder(ladder_max, halves=False):
        if budget is not None and predicted_steps(spent, n) > budget:
            break  # the explicit programs would grow too big to evaluate quickly: stop here
        verdict = pays(n)
        if verdict is None:
            continue
        points.append((n, verdict))
        if steps is not None:
            spent.append((n, steps(n)))
            if budget is not None and spent[-1][1] > budget:
                break
    largest = points[-1][0] if points else ladder_max
    if not points:
        return BreakEven(parameter, "never", None, "numeric (no size evaluated)", largest)
    for (low, low_pays), (high, high_pays) in zip(points, points[1:], strict=False):
        if low_pays == high_pays:
            continue
        _, high = bisect(low, high, _gives(pays, low_pays))
        direction = "from" if high_pays else "below"
        return BreakEven(parameter, direction, high, "numeric (ladder and bisection)", largest)
    direction = "always" if points[0][1] else "never"
    first = points[0][0] if points[0][1] else None
    return BreakEven(parameter, direction, first, "numeric (ladder)", largest)


def predicted_steps(spent: list[tuple[int, int]], n: int) -> float:
    """The work at size n foreseen from the sizes evaluated so far, `spent` ((size, steps),
    growing): the last two sizes' steps fitted by a power of the size (steps ∝ size^k, k at
    least 1: the work of a size at least keeps up with it), carried on to n; 0 before any."""
    if not spent:
        return 0.0
    last_n, last = spent[-1]
    power = 1.0
    if len(spent) > 1:
        before_n, before = spent[-2]
        if before > 0 and last > before:
            power = max(1.0, math.log(last / before) / math.log(last_n / before_n))
    return last * (n / last_n) ** power


# -- two sampled time curves -------------------------------------------------------------------------


class Sample(Protocol):
    """Both placements' times at one size (graphs.placement.SizePoint is one)."""

    @property
    def size(self) -> int: ...
    @property
    def cpu_time(self) -> float: ...
    @property
    def gpu_time(self) -> float: ...


def interpolated_break_even(points: Sequence[Sample]) -> float | None:
    """The first size at which the faster placement changes, linearly interpolated between the
    two sizes around it; None when one placement is faster (or they tie) at every size."""
    previous = None
    for point in sorted(points, key=lambda p: p.size):
        difference = point.cpu_time - point.gpu_time
        if previous is not None:
            size, before = previous
            if before != 0 and (difference == 0 or (before < 0) != (difference < 0)):
                return size + (point.size - size) * before / (before - difference)
        previous = (point.size, difference)
    return None
