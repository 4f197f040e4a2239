"""Symbolic profiling (graphs/semantics/symbolic.py, graphs/symbolic_profile.py) against the explicit evaluator.

The differential test is the backbone: the symbolic result evaluated at n equals the explicit one
for every n in 1..64 (work, span, cost-graph nodes and edges, space per world, each device box's
parts, time on one processor), for every example the symbolic evaluator takes, for the CPU
placement of every example, and for generated programs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import graphs.symbolic_profile
from graphs.crossings import crossings, resolved_upper
from graphs.rewrite_score import Scorer, symbolic_solver
from graphs.schedule import schedule
from graphs.semantics.explicit import evaluate, render_value
from graphs.semantics.options import EvaluationOptions
from graphs.semantics.symbolic import NotRegular
from graphs.symbolic_profile import (
    TimeCurve,
    formula_text,
    parse_formula,
    report,
    symbolic_profile,
)
from models.device_profile import PAPER_PROFILE, DeviceProfile
from profiler.checker import check_program
from profiler.errors import EvaluationError
from profiler.parser import parse, parse_file
from profiler.printer import pretty
from profiler.rewrite import Subject, find
from profiler.transform import remove_on
from tests.generate import well_typed_programs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SIZES = range(1, 65)
REGULAR = ["zipmul", "zipmul_cpu", "map_map", "strided", "dot", "normalize_inc", "matvec",
           "nbody", "dc_sum"]


def load(name: str):
    return check_program(parse_file(EXAMPLES / f"{name}.lg"))


def sizes_for(name: str, n: int) -> dict[str, int]:
    if name == "strided":
        return {"n": n, "s": 32 + n % 2}  # s = 32 (conflicts) and 33 (none) in turn
    if name == "matvec":
        return {"rows": n, "cols": (n % 7) + 1}
    return {"n": n}


def explicit(checked, values, options):
    evaluation = evaluate(checked, values, options)
    graph = evaluation.graph
    one = schedule(graph, 1, "1df")
    return {
        "work": graph.work(), "span": graph.span(), "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(), "time_1": one.time,
        "space": {"cpu": one.peak_space_cpu, "gpu": one.peak_space_gpu, "peak": one.peak_space},
        "on": [{"kernel": o.info.kernel, "transfer_in": o.info.transfer_in,
                "transfer_out": o.info.transfer_out, "merge": o.info.merge, "grow": o.info.grow,
                "total": o.info.total} for o in evaluation.ons],
    }


def symbolic(profile, values):
    at = profile.at(values)
    return {
        "work": at["work"], "span": at["span"], "nodes": at["nodes"], "edges": at["edges"],
        "time_1": at["work"], "space": at["space"],
        "on": [{k: o[k] for k in ("kernel", "transfer_in", "transfer_out", "merge", "grow",
                                  "total")} for o in at["on"]],
    }


def assert_same(got, want, where):
    assert got.keys() == want.keys(), where
    for key, value in want.items():
        if isinstance(value, float | int):
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-9), (where, key)
        elif isinstance(value, list):
            assert len(got[key]) == len(value), (where, key)
            for g, w in zip(got[key], value, strict=True):
                assert_same(g, w, f"{where} {key}")
        else:
            assert_same(got[key], value, f"{where} {key}")


@pytest.mark.parametrize("name", REGULAR)
@pytest.mark.parametrize("mode", ["dmm", "paper", "cache"])
def test_symbolic_equals_explicit_for_n_1_to_64(name, mode):
    checked = load(name)
    options = EvaluationOptions(gpu_mode=mode)
    profile = symbolic_profile(checked, options)
    sizes = SIZES if name not in ("nbody",) else range(1, 65, 5)
    for n in sizes:
        values = sizes_for(name, n)
        assert_same(symbolic(profile, values), explicit(checked, values, options), f"n={n}")


@pytest.mark.parametrize("name", REGULAR)
def test_symbolic_equals_explicit_under_the_paper_rules(name):
    """The same differential test under `--rules paper` (graphs/semantics/options.py): ap moving
    by |v| + 1, f e_i per element, fix's two writes, δ† without a merge step, §7.1.2's local
    memory (strided stages a table), NoExpandWE; every example is regular under it too."""
    checked = load(name)
    options = EvaluationOptions(profile=PAPER_PROFILE)
    profile = symbolic_profile(checked, options)
    sizes = SIZES if name not in ("nbody",) else range(1, 65, 5)
    for n in sizes:
        values = sizes_for(name, n)
        assert_same(symbolic(profile, values), explicit(checked, values, options), f"n={n}")


@pytest.mark.parametrize("name", ["zipmul", "strided", "map_map"])
def test_paper_rules_on_a_small_gpu_and_with_local_memory_equal_explicit(name):
    """Rounds, partial work groups and §7.1.2's write-back (l per work group) under the paper's
    rules, with the program's regions in local memory (`on local`)."""
    source = (EXAMPLES / f"{name}.lg").read_text()
    region = re.search(r"^letregion (\w+)", source, re.MULTILINE).group(1)
    source = re.sub(r"^on (?!local)", f"on local [{region}] ", source, flags=re.MULTILINE)
    assert "on local [" in source
    checked = check_program(parse(source, f"{name}.lg"))
    options = EvaluationOptions(profile=PAPER_PROFILE.with_gpu(
        warp_width=4, work_group_size=8, threads_at_once=16))
    profile = symbolic_profile(checked, options)
    for n in (1, 7, 8, 9, 16, 17, 33, 64):
        values = sizes_for(name, n)
        assert_same(symbolic(profile, values), explicit(checked, values, options), f"n={n}")


def test_paper_rules_no_expand_we_is_an_error_in_both_evaluators():
    """NoExpandWE (Fig. 9): with BSIZE 64 zipmul's r0 has room for the kernel's words at n = 1,
    2, 5, 6 and 9 only (where its 64-word blocks end); wherever it has not, both evaluators
    raise."""
    checked = load("zipmul")
    options = EvaluationOptions(rules="paper")
    profile = symbolic_profile(checked, options)
    outcomes = []
    for n in range(1, 33):
        try:
            want = explicit(checked, {"n": n}, options)
        except EvaluationError:
            with pytest.raises(EvaluationError, match="full on the GPU"):
                profile.at({"n": n})
            outcomes.append(False)
            continue
        assert_same(symbolic(profile, {"n": n}), want, f"n={n}")
        outcomes.append(True)
    assert [n for n, fits in enumerate(outcomes, 1) if fits] == [1, 2, 5, 6, 9]


def test_paper_rules_refuse_what_the_symbolic_evaluator_cannot_follow():
    """Under the paper's rules a literal's elements run in their threads and an `on` in the
    second side of `||` pushes its own branch's view: `--symbolic` falls back, saying why."""
    literal = check_program(parse(
        "letregion r in parmap (lambda x: int r [r]. x + 1 at r) ([1 at r, 2 at r] at r) at r"))
    with pytest.raises(NotRegular, match="vector literal"):
        symbolic_profile(literal, EvaluationOptions(profile=PAPER_PROFILE))
    symbolic_profile(literal, EvaluationOptions())  # the calibrated rules take it
    branches = check_program(parse(
        "letregion r in (on (1 at r) at r) || (on (2 at r) at r) at r"))
    with pytest.raises(NotRegular, match="second side"):
        symbolic_profile(branches, EvaluationOptions(profile=PAPER_PROFILE))


def test_a_gpu_reduction_returning_an_operand_is_not_regular():
    """A GPU reduction whose function returns one of its operands (`fst p`) leaves each level's
    elements wherever the level before kept them: no closed form, so --symbolic refuses it with
    the reason and the reduce's place (fuzz campaign, seed 2711: it raised a KeyError while
    pricing before)."""
    source = ("param n : int = 17\nletregion r in\non (let products = iota n in\n"
              "reduce (lambda p: ((int r, int r), r) . fst p) (0) products) at r")
    checked = check_program(parse(source, "first.lg"))
    with pytest.raises(NotRegular, match="returns a value it did not allocate") as caught:
        symbolic_profile(checked, EvaluationOptions(gpu_mode="paper"))
    assert (caught.value.span.line, caught.value.span.column) == (4, 1)
    evaluation = evaluate(checked, {"n": 17}, EvaluationOptions(gpu_mode="paper"))
    # the first element of iota 17, as the fallback computes it
    assert render_value(evaluation.value, evaluation.regions) == "0"


@pytest.mark.parametrize("name", REGULAR)
def test_cpu_placement_symbolic_equals_explicit(name):
    checked = load(name)
    cpu = replace(checked, body=remove_on(checked.body))
    options = EvaluationOptions()
    profile = symbolic_profile(cpu, options)
    for n in range(1, 65, 3):
        values = sizes_for(name, n)
        assert_same(symbolic(profile, values), explicit(cpu, values, options), f"n={n}")
        if n % 9 == 1:
            assert_time_within_bounds(profile, cpu, values, options, procs=(3,))


def test_zipmul_formulas_are_the_papers_counts():
    """§7.1's program on the CPU: the grayed parmap costs 10n - 1 (the paper's 4(n - 1) + 6n,
    plus the read of the vector and the parmap rule's own merge and result vector). Space: iota n
    is 2n + 1 words (the count, n ints, the vector), the input n·(1 + 1 + 2) + n (the literal 1,
    i + 1, the pair; the vector), the products 2n, the function's closure 2: 9n + 3."""
    profile = symbolic_profile(load("zipmul_cpu"))
    n = sp.Symbol("n", integer=True, positive=True)
    centre = profile.evaluation.centres["gray"]
    assert sp.expand(centre.work - (10 * n - 1)) == 0
    assert sp.expand(profile.formulas()["space_cpu"] - (9 * n + 3)) == 0


def test_zipmul_kernel_formula_counts_rounds():
    """The GPU zipmul: the kernel is 276 per round of 256 work groups of 256 threads plus 65 of
    serial bookkeeping; rounds are ⌈⌈n/256⌉/256⌉ (graphs.devicebox)."""
    profile = symbolic_profile(load("zipmul"))
    n = sp.Symbol("n", integer=True, positive=True)
    kernel = profile.formulas()["on0.kernel"]
    assert sp.expand(kernel - (276 * sp.ceiling(sp.ceiling(n / 256) / 256) + 65)) == 0
    for rounds in (1, 2, 7):
        assert profile.at({"n": 65536 * rounds})["on"][0]["kernel"] == 276 * rounds + 65
    # The formula is made at n = 1024, whose last work group is full; a partial last group is
    # shorter, which `at` prices exactly.
    assert 276 + 65 < profile.at({"n": 65537})["on"][0]["kernel"] < 2 * 276 + 65


def test_a_staged_region_larger_than_local_memory_equals_explicit():
    """strided with local memory of 512 words: the table stops fitting part-way, so the work
    groups before that thread read local memory, the one with it both, and the rest global."""
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        local_words=512, work_group_size=64, threads_at_once=256))
    checked = load("strided")
    profile = symbolic_profile(checked, options)
    for n, stride in ((10, 33), (15, 33), (16, 32), (40, 33), (200, 3), (300, 1), (333, 33)):
        values = {"n": n, "s": stride}
        assert_same(symbolic(profile, values), explicit(checked, values, options), values)


@pytest.mark.parametrize("name", ["zipmul", "strided", "map_map"])
def test_rounds_and_partial_groups_equal_explicit(name):
    """A small GPU (work groups of 64, 2 resident at once) makes many rounds and partial last
    groups at small sizes: the symbolic kernel still equals the explicit device box."""
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        work_group_size=64, threads_at_once=128))
    checked = load(name)
    profile = symbolic_profile(checked, options)
    for n in (1, 63, 64, 65, 127, 128, 129, 300, 641):
        values = sizes_for(name, n)
        assert_same(symbolic(profile, values), explicit(checked, values, options), f"n={n}")


def test_symbolic_at_a_billion_is_fast_and_consistent():
    profile = symbolic_profile(load("zipmul"))
    at = profile.at({"n": 10**9})
    assert at["nodes"] == 12 * 10**9 + 10
    assert at["space"]["cpu"] == 9 * 10**9 + 3
    formulas = profile.formulas({"n": 10**9})
    assert float(formulas["work"].subs(sp.Symbol("n", integer=True, positive=True), 10**9)) == (
        pytest.approx(at["work"]))


def test_formula_strings_parse_back():
    profile = symbolic_profile(load("dot"))
    data = report(profile, {"n": 1024}, 2)
    for key in ("work", "span", "nodes"):
        text = data["formulas"][key]
        assert formula_text(parse_formula(text, ["n"])) == text
        value = parse_formula(text, ["n"]).subs(sp.Symbol("n", integer=True, positive=True), 1024)
        assert float(sp.sympify(value).doit()) == pytest.approx(data["values"][key])
    # The time's bounds hold sums over a reduction's levels and piecewise stretches.
    for text, want in zip(data["formulas"]["time_bounds"], data["values"]["time_bounds"],
                          strict=True):
        value = parse_formula(text, ["n"]).subs(sp.Symbol("n", integer=True, positive=True), 1024)
        assert float(sp.sympify(value).doit()) == pytest.approx(want, rel=1e-12)


def test_report_keys_follow_the_numeric_report():
    data = report(symbolic_profile(load("zipmul")), {"n": 64}, 2)
    assert {"work", "span", "time_bounds", "space", "on"} <= data["formulas"].keys()
    assert set(data["formulas"]["space"]) == {"cpu", "gpu", "peak"}
    lower, upper = data["values"]["time_bounds"]
    assert lower <= upper
    explicit_time = schedule(evaluate(load("zipmul"), {"n": 64}).graph, 2, "1df").time
    assert lower <= explicit_time <= upper


def assert_time_within_bounds(profile, checked, values, options, procs=(2, 3, 8)):
    """Every greedy schedule's time lies within the symbolic bounds, and equals them where they
    meet; the top level adds up to the work and span (serial edges plus parallel stretches)."""
    graph = evaluate(checked, values, options).graph
    for p in procs:
        lower, upper = profile.time_at(values, p)
        assert lower <= upper
        for policy in ("1df", "bf", "ws"):
            time = schedule(graph, p, policy, record=False).time
            assert lower - 1e-9 <= time <= upper + 1e-9, (values, p, policy, lower, time, upper)
            if lower == upper:
                assert time == pytest.approx(lower, rel=1e-12), (values, p, policy)
    shape, subs = profile.evaluation.shape, profile.substitution(values)
    work = span = graphs.symbolic_profile._value(shape.serial, subs)
    for block in shape.blocks:
        for level in range(int(graphs.symbolic_profile._value(block.count, subs))):
            here = subs if block.level is None else {**subs, block.level: level}
            work += graphs.symbolic_profile._value(block.work, here)
            span += graphs.symbolic_profile._value(block.span, here)
    assert (work, span) == pytest.approx((graph.work(), graph.span()), rel=1e-12)


@pytest.mark.parametrize("name", REGULAR)
def test_time_bounds_hold_for_every_greedy_schedule(name):
    checked = load(name)
    options = EvaluationOptions()
    profile = symbolic_profile(checked, options)
    for n in (SIZES if name != "nbody" else range(1, 65, 5)):
        assert_time_within_bounds(profile, checked, sizes_for(name, n), options)


def test_time_is_exact_where_every_stretch_fits_the_processors():
    """A parmap over iota n: two parallel stretches of width n. With n ≤ P no task ever waits,
    so every schedule takes the span; beyond, the bounds hold and are tighter than Brent's."""
    source = """param n : int = 8
letregion r in
parmap (lambda i: int r [r]. i + 1 at r) (iota n at r) at r
"""
    checked = check_program(parse(source, "map.lg"))
    profile = symbolic_profile(checked)
    for n in (1, 2, 3, 4):
        lower, upper = profile.time_at({"n": n}, 4)
        assert lower == upper == evaluate(checked, {"n": n}).graph.span()
    data = report(profile, {"n": 4}, 4)
    assert data["values"]["time"] == data["values"]["span"]
    assert data["formulas"]["time"] is None  # exact at n = 4, not at every n
    graph = evaluate(checked, {"n": 1000}).graph
    lower, upper = profile.time_at({"n": 1000}, 2)
    assert max(graph.work() / 2, graph.span()) < lower
    assert upper < graph.work() / 2 + graph.span()
    assert lower <= schedule(graph, 2, "1df").time <= upper
    text = report(profile, {"n": 1000}, 1)["formulas"]["time"]
    assert text == report(profile, {"n": 1000}, 1)["formulas"]["work"]


def test_divide_and_conquer_is_solved_in_closed_form():
    """dc_sum's `sum (lo, hi)` calls itself on both halves under `||`: W(m) = 31 + 12 + W(⌊m/2⌋)
    + W(⌈m/2⌉) with W(1) = 12, so W(n) = 55n - 43 inside the call, 55n - 32 in all; its span
    adds 38 per level, ⌈log2 n⌉ levels; 15 words per call. Exact at n = 1..64 (above) and, by
    the recurrence, at a billion."""
    profile = symbolic_profile(load("dc_sum"))
    formulas = {k: formula_text(v) for k, v in profile.formulas().items()}
    assert formulas["work"] == "55*n - 32"
    assert formulas["span"] == "38*ceiling(log(n)/log(2)) + 23"
    assert formulas["space_cpu"] == "15*n - 7"
    assert formulas["nodes"] == "54*n - 30"
    assert profile.at({"n": 10**9})["work"] == 55 * 10**9 - 32


RECURSION = """param n : int = 16

letregion r in
let f = fix f: (int r -> int r [r], r).
  lambda m: int r [r].
    if m <= 1 at r then m
    else f (m {step} at r) + 1 at r
in f n
"""


def test_a_recursion_on_half_its_size_is_solved():
    """f m calls f ⌊m/2⌋ once: ⌊log2 m⌋ calls deep."""
    checked = check_program(parse(RECURSION.format(step="/ 2"), "half.lg"))
    profile = symbolic_profile(checked)
    assert formula_text(profile.formulas()["work"]) == "15*floor(log(n)/log(2)) + 12"
    for n in (*SIZES, 1000, 1025):
        assert_same(symbolic(profile, {"n": n}), explicit(checked, {"n": n},
                                                           EvaluationOptions()), n)


def test_a_recursion_that_shrinks_by_one_is_not_regular():
    """f m calls f (m - 1): n calls deep, no halving to solve; refused with the reason."""
    checked = check_program(parse(RECURSION.format(step="- 1"), "linear.lg"))
    with pytest.raises(NotRegular, match="shrinks its size too slowly") as caught:
        symbolic_profile(checked)
    assert caught.value.span.line == 7


DIVIDE_AND_CONQUER = """param n : int = 16

letregion r in
let f = fix f: (((int r, int r), r) -> int r [r], r).
  lambda range: ((int r, int r), r) [r].
    let lo = fst range in
    let hi = snd range in
    if hi - lo at r <= {cut} at r then {base}
    else
      let mid = lo + (hi - lo at r) / {div} at r at r in
      {pre}let halves = {calls} in
      {combine}
in f (0 at r, n) at r
"""
CALLS = ["f (lo, mid) at r || f (mid, hi) at r at r",
         "(let a = f (lo, mid) at r in let b = f (mid, hi) at r in (a, b) at r)"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 2, 3]), st.sampled_from([2, 3]),
       st.sampled_from(["lo", "hi - lo at r", "lo * 2 at r", "7 at r",
                        "(let t = lo + 1 at r in t * t at r)"]),
       st.sampled_from(["", "let extra = mid * 2 at r in "]), st.sampled_from(CALLS),
       st.sampled_from(["fst halves + snd halves at r", "fst halves",
                        "(fst halves + snd halves at r) + 1 at r"]))
def test_generated_divide_and_conquer_symbolic_equals_explicit(cut, div, base, pre, calls,
                                                                combine):
    """Recursions on a range drawn from parts: solved, they equal the explicit evaluator (and
    the schedules lie within the time bounds); else refused with the reason, never wrong."""
    assume(cut >= div - 1)  # a smaller range always, so that the program stops
    source = DIVIDE_AND_CONQUER.format(cut=cut, div=div, base=base, pre=pre, calls=calls,
                                       combine=combine)
    note(source)
    checked = check_program(parse(source, "dc.lg"))
    try:
        profile = symbolic_profile(checked)
    except NotRegular as refused:
        assert "recursi" in refused.message
        return
    for n in (1, 2, 3, 5, 8, 13, 21, 34, 55, 64):
        assert_same(symbolic(profile, {"n": n}), explicit(checked, {"n": n},
                                                           EvaluationOptions()), n)
        assert_time_within_bounds(profile, checked, {"n": n}, EvaluationOptions(), (2, 3))


def test_data_dependent_costs_are_not_regular():
    source = """param n : int = 8
letregion r in
parmap (lambda i: int r [r]. if i < 3 then i + 1 at r else 0 at r) (iota n at r) at r
"""
    with pytest.raises(NotRegular, match="cost differently") as caught:
        symbolic_profile(check_program(parse(source, "branch.lg")))
    assert caught.value.span.line == 3


def test_branches_that_cost_the_same_stay_symbolic():
    source = """param n : int = 8
letregion r in
parmap (lambda i: int r [r]. if i < 3 then i + 1 at r else i + 2 at r) (iota n at r) at r
"""
    checked = check_program(parse(source, "branch.lg"))
    profile = symbolic_profile(checked)
    for n in (1, 3, 4, 40):
        assert_same(symbolic(profile, {"n": n}), explicit(checked, {"n": n},
                                                           EvaluationOptions()), n)


def test_crossings_are_exact_integers():
    found = crossings(lambda n: 3 * n + 100, lambda n: 4 * n, "n", 3 * sp.Symbol("n") + 100,
                      4 * sp.Symbol("n"), 10**6)
    assert [(c.n, c.cheaper) for c in found] == [(100, "a")]  # equal at 100: a tie goes to a
    found = crossings(lambda n: 5 * n, lambda n: 1000 + (n // 7), "n", upper=10**6)
    # 1000 + 205 // 7 = 1029 > 5 * 205 = 1025, but 1000 + 206 // 7 = 1029 < 1030
    assert [(c.n, c.cheaper) for c in found] == [(206, "b")]


def test_crossings_from_a_lower_size_never_price_below_it():
    """`lower`: the sizes below it are not priced (a program that does not run there); a crossing
    below it is not reported, one above it is, exactly."""
    def runs_from_5(cost):
        def at(n: int) -> int:
            assert n >= 5, n
            return cost(n)
        return at

    a, b = runs_from_5(lambda n: 3 if n < 8 else 100 - n), runs_from_5(lambda n: 50)
    assert [(c.n, c.cheaper) for c in crossings(a, b, "n", upper=1000, lower=5)] == [
        (8, "b"), (50, "a")]  # 100 - 50 = 50: a tie goes to a
    assert [(c.n, c.cheaper) for c in crossings(a, b, "n", upper=1000, lower=9)] == [(50, "a")]


def test_sizes_where_floats_cannot_tell_two_costs_apart_are_not_searched():
    """b is cheaper by 30 units everywhere, but above about 4.5·10^7 the costs (1.5 n^2) exceed
    their floats' resolution (1e-14 of their size): there a crossing would be rounding. The
    search stops at the ladder's last size below, 2^25; quarter units below 2^50 are exact."""
    def cost_a(n):
        return 1.5 * float(n) ** 2

    def cost_b(n):
        return 1.5 * float(n) ** 2 - 30
    assert resolved_upper(cost_a, cost_b, "n", upper=10**12) == 2**25
    assert crossings(cost_a, cost_b, "n", upper=2**25) == []  # b from n = 1 on, no change
    assert [c.n for c in crossings(cost_a, cost_b, "n", upper=10**12)]  # rounding, unguarded
    assert resolved_upper(lambda n: 4.0 * n, lambda n: 4.0 * n - 1, "n", upper=10**12) == 10**12
    n = sp.Symbol("n")
    assert resolved_upper(cost_a, cost_a, "n", 3 * n**2 / 2, 3 * n**2 / 2, 10**12) == 10**12


def test_crossings_are_found_where_the_formulas_mislead():
    """Formulas only sort the sizes: here they say the costs tie everywhere, while b is exactly
    cheaper from n = 769 on (a kernel formula holds only at its reference sizes' residue class,
    as with strided's work-group size). The exact costs at the ends disagree with the formulas'
    story, so every size is priced exactly."""
    n = sp.Symbol("n")
    found = crossings(lambda k: 10 * k, lambda k: 10 * k - (k > 768), "n", 10 * n, 10 * n,
                      10**12)
    assert [(c.n, c.cheaper) for c in found] == [(769, "b")]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(well_typed_programs())
def test_generated_programs_symbolic_equals_explicit(program):
    """Generated programs take their parameters' defaults; where the symbolic evaluator takes a
    program (it refuses irregular ones), its numbers are the explicit evaluator's."""
    note(pretty(program))
    checked = check_program(program)
    values = {p.name: p.default for p in program.params}
    try:
        profile = symbolic_profile(checked, EvaluationOptions(), values)
        got = symbolic(profile, values)
    except NotRegular:
        return
    assert_same(got, explicit(checked, values, EvaluationOptions()), "generated")
    assert_time_within_bounds(profile, checked, values, EvaluationOptions(), procs=(2, 3))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(well_typed_programs())
def test_generated_programs_symbolic_equals_explicit_under_the_paper_rules(program):
    """As above, under the paper's rules; a program either evaluator refuses (a merge conflict,
    Theorem 4.4, or a form the symbolic one cannot follow) is left out."""
    note(pretty(program))
    checked = check_program(program)
    values = {p.name: p.default for p in program.params}
    options = EvaluationOptions(profile=PAPER_PROFILE)
    try:
        profile = symbolic_profile(checked, options, values)
        got = symbolic(profile, values)
    except NotRegular:
        return
    assert_same(got, explicit(checked, values, options), "generated")


def test_symbolic_break_even_of_a_rewrite_is_the_exact_crossing():
    """remove-on for zipmul on one processor: the CPU program is cheaper below some n; the
    symbolic solver's n is exactly where the explicit evaluator's works cross."""
    rewrite = find(Subject(load("zipmul")), "remove-on@22:1")
    scorer = Scorer({"n": 64}, procs=1)
    found = symbolic_solver(scorer)(rewrite.before, rewrite.after, "n")
    assert found.direction == "below" and found.method == "symbolic (work)"
    work = {}
    for n in (found.n - 1, found.n):
        for side, subject in (("gpu", rewrite.before), ("cpu", rewrite.after)):
            work[side, n] = evaluate(subject.checked, {"n": n}).graph.work()
    assert work["cpu", found.n - 1] < work["gpu", found.n - 1]
    assert work["cpu", found.n] >= work["gpu", found.n]


@pytest.mark.parametrize("name", ["nbody", "matvec", "dot", "strided"])
def test_long_thread_loops_priced_by_period_equal_explicit(name, monkeypatch):
    """Kernels whose threads loop (nbody's inner parmap and reduction, matvec's row) are priced
    one period of their loops at a time when the loops are long; forced on here at small sizes,
    they equal the explicit device boxes."""
    monkeypatch.setattr(graphs.symbolic_profile, "STRUCTURED_STEPS", 0)
    checked = load(name)
    # Warps of 8 threads: many warps per work group even at these sizes, so the warps priced
    # once for all (their addresses move by multiples of the banks) are tested too.
    for options in (EvaluationOptions(), EvaluationOptions(
            profile=EvaluationOptions().profile.with_gpu(warp_width=8, work_group_size=32))):
        profile = symbolic_profile(checked, options)
        for n in (1, 2, 5, 17, 33, 40, 64):
            values = sizes_for(name, n)
            assert_same(symbolic(profile, values), explicit(checked, values, options), f"n={n}")


def test_rows_larger_than_bsize_grow_the_region_as_explicit():
    """matvec's rows of more than BSIZE words: each grows its region by exactly what is missing
    (Fig. 3), which the region-size replay finds without running every thread."""
    checked = load("matvec")
    profile = symbolic_profile(checked, EvaluationOptions())
    for rows, cols in ((3, 65), (5, 100), (2, 200)):
        values = {"rows": rows, "cols": cols}
        assert_same(symbolic(profile, values), explicit(checked, values, EvaluationOptions()),
                    values)


def test_a_staged_region_a_thread_loop_walks_out_of_local_memory_equals_explicit(monkeypatch):
    """nbody with its region staged in local memory (the stage-local rewrite) and local memory
    of 200 words: each thread's inner loop reads xs[j] from local memory until j passes its end,
    then from global memory; the periodic pricing splits the loop there."""
    monkeypatch.setattr(graphs.symbolic_profile, "STRUCTURED_STEPS", 0)
    staged = find(Subject(load("nbody")), "stage-local=r@11:1").after.checked
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        local_words=200, warp_width=8, work_group_size=32))
    profile = symbolic_profile(staged, options)
    for n in (3, 20, 33, 50, 64):
        assert_same(symbolic(profile, {"n": n}), explicit(staged, {"n": n}, options), f"n={n}")


@pytest.mark.parametrize("name, key", [("dot", None), ("strided", "widen-on@12:1")])
def test_staging_per_kernel_equals_explicit(name, key):
    """A kernel stages the local regions as they are when it starts: dot with its region staged
    stages more at each reduction level (the pairs of the levels before), and strided with its
    `on` widened over the table's iota stages nothing in the iota's kernel and the whole table
    in the parmap's. Small local memory, so some levels overflow it."""
    if key is None:
        text = (EXAMPLES / f"{name}.lg").read_text()
        assert text.count("on (") == 1
        checked = check_program(parse(text.replace("on (", "on local [r] ("), f"{name}.lg"))
    else:
        checked = find(Subject(load(name)), key).after.checked
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        local_words=300, warp_width=8, work_group_size=32))
    profile = symbolic_profile(checked, options)
    for n in (1, 2, 7, 33, 64, 100):
        values = sizes_for(name, n)
        got, want = symbolic(profile, values), explicit(checked, values, options)
        assert_same(got, want, f"n={n}")
        assert want["on"][0]["kernel"] > 0


def test_a_one_thread_loop_inside_a_kernel_thread_equals_explicit():
    """A parmap over a one-element vector inside a GPU thread is inlined into the thread's path
    with its index 0 (found by the generated-program test)."""
    source = """letregion r0 in
(on parmap (lambda a1: int r0 [r0].
   parmap (lambda a2: int r0 [r0]. 0.5 at r0) ([0 at r0] at r0) at r0)
  ([0 at r0] at r0) at r0
 at r0)[0 at r0]
"""
    checked = check_program(parse(source, "one.lg"))
    options = EvaluationOptions()
    got = symbolic(symbolic_profile(checked, options), {})
    assert_same(got, explicit(checked, {}, options), "one-thread loop")
    assert got["on"][0]["kernel"] > 0


ROWS_AND_COLUMNS = """
param n : int = 4
letregion r in
let a = parmap (lambda t: int r [r]. t * 3) (iota (n * n)) at r in
let b = parmap (lambda t: int r [r]. t + 1) (iota n) at r in
on parmap (lambda t: int r [r].
             let i = t / n in
             let j = t - i * n in
             a[i * n + j] + b[i] * a[j * n + i]
             + reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p) 0
                      (parmap (lambda k: int r [r]. a[i * n + k] * b[k]) (iota 4)))
          (iota (n * n))
at r
"""


def test_a_kernel_indexed_by_row_and_column_equals_explicit():
    """Thread t's row t / n and column t mod n are not polynomials in t: whether every work group
    steps alike is decided over the thread indices (`_lockstep_period`). Rows a whole number of
    groups long: the symbolic kernel (many groups, priced once) equals the explicit device box;
    rows that break groups apart (n = 80 with groups of 32) are refused, not mispriced."""
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        work_group_size=32, threads_at_once=128))
    checked = check_program(parse(ROWS_AND_COLUMNS, "rows.lg"))
    profile = symbolic_profile(checked, options)
    for n in (64, 96):
        values = {"n": n}
        assert_same(symbolic(profile, values), explicit(checked, values, options), values)
    with pytest.raises(NotRegular, match="not affine"):
        profile.at({"n": 80})
    # 2^40 threads: too many to check thread by thread (a break-even ladder asks for such
    # sizes); not regular, rather than a numpy array of 2^40 indices (`rewrite strided` ran
    # out of memory on one)
    with pytest.raises(NotRegular, match="not affine"):
        profile.at({"n": 2**20})


def test_groups_that_repeat_with_a_period_are_priced_once_a_period(monkeypatch):
    """The suite's gemm at n = 12 on a small GPU (warps, work groups and banks of 8): rows of 12
    threads break groups of 8 apart, so no two neighbouring groups step alike, but every third
    does (12 / gcd(12, 8) = 3: two rows on, each address 24 words further, a multiple of the
    banks). Its 18 groups are priced as 3 (`_lockstep_period`): the same report as the explicit
    device box. Under the cache mode a shift must also keep the lines aligned, so the period is
    12 groups, and the kernel times are the same as pricing every group (the period not looked
    for)."""
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        warp_width=8, work_group_size=8, banks=8, threads_at_once=64))
    suite = Path(__file__).resolve().parent.parent / "benchmarks" / "suite"
    checked = check_program(parse_file(suite / "gemm.lg"))
    values = {"n": 12}
    priced = []
    price_group = graphs.symbolic_profile.SymbolicProfile._price_group

    def counted(self, template, values, ids, *rest):
        if len(ids) == 8:  # the kernel's groups (its other phases run one thread)
            priced.append(ids.start)
        return price_group(self, template, values, ids, *rest)

    monkeypatch.setattr(graphs.symbolic_profile.SymbolicProfile, "_price_group", counted)
    assert_same(symbolic(symbolic_profile(checked, options), values),
                explicit(checked, values, options), values)
    # one group of each phase; the last also on its own, where the formula prices its round
    assert {0, 8, 16} <= set(priced) <= {0, 8, 16, 136}
    cache = replace(options, gpu_mode="cache")
    priced.clear()
    by_period = [o["kernel"] for o in symbolic(symbolic_profile(checked, cache), values)["on"]]
    # the cache mode's shifts keep its lines (128 bytes, 32 words of 4 bytes) aligned: every
    # twelfth group (96 words on)
    twelve = set(range(0, 96, 8))
    assert twelve <= set(priced) <= twelve | {136}
    monkeypatch.setattr(graphs.symbolic_profile, "LOCKSTEP_PERIODS", 1)
    priced.clear()
    every = [o["kernel"] for o in symbolic(symbolic_profile(checked, cache), values)["on"]]
    assert sorted(set(priced)) == list(range(0, 144, 8))
    assert by_period == every


def test_gemm_priced_symbolically_equals_explicit():
    """The suite's gemm (a row-and-column kernel whose threads loop and reduce) at n = 24 on a
    small GPU (warps and work groups of 8, banks of 8): 72 groups, priced from the first."""
    options = EvaluationOptions(profile=EvaluationOptions().profile.with_gpu(
        warp_width=8, work_group_size=8, banks=8, threads_at_once=64))
    suite = Path(__file__).resolve().parent.parent / "benchmarks" / "suite"
    checked = check_program(parse_file(suite / "gemm.lg"))
    profile = symbolic_profile(checked, options)
    values = {"n": 24}
    assert_same(symbolic(profile, values), explicit(checked, values, options), values)


@pytest.mark.parametrize("name", ["nbody", "matvec", "dot", "strided"])
def test_long_thread_loops_in_cache_mode_are_priced_close_to_explicit(name, monkeypatch):
    """Under the cache mode a loop's steady period stands for its later periods
    (symbolic_profile._stateful_loop): forced on at small sizes, the kernels are within 20% of
    the explicit device boxes, which step every iteration on the group's cache state. (Not
    exact: a long path priced item by item takes fewer steps than its concrete threads (its
    loops run thread 0's count) and touches a few sectors they do not; it costs up to 15% more
    at these sizes, nbody at 40. The cause is not yet pinned down.)"""
    monkeypatch.setattr(graphs.symbolic_profile, "STRUCTURED_STEPS", 0)
    checked = load(name)
    options = EvaluationOptions(gpu_mode="cache")
    profile = symbolic_profile(checked, options)
    for n in (5, 17, 40, 64):
        values = sizes_for(name, n)
        got = [o["kernel"] for o in symbolic(profile, values)["on"]]
        want = [o["kernel"] for o in explicit(checked, values, options)["on"]]
        assert got == pytest.approx(want, rel=0.2), f"n={n}"


def test_cache_mode_loops_repeat_with_the_lines_period():
    """Under the cache mode a thread loop's global accesses cost the same once their addresses
    have moved by whole lines (sectors, lines and stored words are what its steps price; banks
    only for local memory), so the loop's period is a line's words over the slope, not the
    banks': covariance at n = 256 (threads that loop 256 times over a matrix's columns) is
    priced within 0.5% of the explicit device box under an H200 calibration (with the banks'
    period, 64 iterations, it came out +1.9%), stepping a quarter of the iterations."""
    from models.device_profile import load_profile
    from models.opencl.predict import growth_as_write

    root = EXAMPLES.parent
    checked = check_program(parse_file(root / "benchmarks" / "suite" / "covariance.lg"))
    calibrated = growth_as_write(load_profile(root / "profiles" / "nvidia-h200-run19.json"))
    options = EvaluationOptions(profile=calibrated, gpu_mode="cache")
    profile = symbolic_profile(checked, options)
    values = {"n": 256, "m": 12}
    got = [o["kernel"] for o in symbolic(profile, values)["on"]]
    want = [o["kernel"] for o in explicit(checked, values, options)["on"]]
    assert got == pytest.approx(want, rel=0.005)


def test_time_curves_that_share_prices_price_a_common_kernel_once_and_agree():
    """Two programs that a placement compares (dot with and without an `on` around its first
    parmap) share their reduction's kernels: with one dict of prices the second curve prices
    only its own kernel, and both curves give the times they give alone."""
    checked = check_program(parse_file(EXAMPLES / "dot.lg"))
    written = Subject(checked)
    moved = find(written, "insert-on@8:10").after
    options, params = EvaluationOptions(), {"n": 1024}
    alone = [TimeCurve(s.checked, options, params, "n", 2) for s in (written, moved)]
    prices: dict = {}
    shared = [TimeCurve(s.checked, options, params, "n", 2, prices) for s in (written, moved)]
    for n in (1, 33, 1000, 4096):
        assert [c(n) for c in shared] == [c(n) for c in alone]
    first = len(prices)
    shared[0](5000)
    kernels = len(prices) - first
    shared[1](5000)
    assert 0 < len(prices) - first - kernels < kernels  # the on's kernels were priced once


def test_a_thread_coefficient_is_read_once_from_an_address_linear_in_the_thread_index():
    """_shift_invariant's shortcut: c where the address is c·t plus terms free of t, None where t
    enters otherwise (the substitution of the sizes then decides, as before)."""
    t, n, k = sp.symbols("t n k", integer=True)
    coefficient = graphs.symbolic_profile._thread_coefficient
    assert coefficient(3 * t + 17 * n + sp.ceiling(n / 2**k), t) == 3
    assert coefficient(n + 4, t) == 0
    assert coefficient(sp.ceiling(t / 2) + n, t) is None
    assert coefficient(n * t, t) is None


def _kernel_groups(profile, values):
    """Each parallel phase of each device box at `values`, with its first and last work group."""
    subs = profile.substitution(values)
    size = profile.gpu.work_group_size
    for box in profile.evaluation.boxes:
        for template, local in graphs.symbolic_profile._phases(box.paths or [], subs):
            here = {**subs, **local}
            count = int(graphs.symbolic_profile._value(template.count, here))
            if not template.parallel or count == 0:
                continue
            last = (count - 1) // size
            for g in sorted({0, last}):
                yield template, here, range(g * size, min(count, (g + 1) * size))


@pytest.mark.parametrize("name", [n for n in REGULAR if n != "dc_sum"])  # dc_sum: no kernel
@pytest.mark.parametrize("mode", ["dmm", "paper"])
def test_a_work_group_priced_in_lock_step_equals_group_time_on_its_threads_paths(name, mode):
    """_lockstep_group walks a kernel template once for all the threads of a work group
    (`_Lanes`); it equals graphs.devicebox.group_time on the group's threads' concrete paths,
    time, steps and counters, for every kernel of the example and of every regular program a
    rewrite of it makes (local memory, other work-group sizes), full and partial groups."""
    from graphs.devicebox import PhaseCost, group_time
    from profiler.rewrite import offered

    written = Subject(load(name))
    subjects = [written, *(r.after for r in offered(written))]
    base = EvaluationOptions(gpu_mode=mode)
    small = replace(base, profile=base.profile.with_gpu(warp_width=8, work_group_size=32))
    checked_groups = 0
    for subject in subjects:
        for options in (base, small):
            try:
                profile = symbolic_profile(subject.checked, options)
            except NotRegular:
                continue
            for n in (1, 5, 33) if name == "nbody" else (1, 5, 33, 100):
                values = sizes_for(name, n)
                try:
                    groups = list(_kernel_groups(profile, values))
                except (NotRegular, EvaluationError):
                    continue
                for template, here, ids in groups:
                    walked = PhaseCost(0, 0, 0, 0, 0, 0.0, 0.0)
                    got = profile._lockstep_group(template, here, ids, walked)
                    if got is None:
                        continue  # threads whose paths differ in length: built instead
                    thread = graphs.symbolic_profile._threads(template, here)
                    built = PhaseCost(0, 0, 0, 0, 0, 0.0, 0.0)
                    want = group_time([thread(t) for t in ids], profile.model, profile.gpu,
                                      built, {})
                    where = f"{subject.key()} n={n} threads {ids}"
                    assert got == want, where
                    assert ((walked.conflicts, walked.conflict_degree_max, walked.broadcasts,
                             walked.multicasts) == (built.conflicts, built.conflict_degree_max,
                                                    built.broadcasts, built.multicasts)), where
                    checked_groups += 1
    assert checked_groups > 0


@pytest.mark.parametrize("name", ["zipmul", "map_map"])
def test_near_and_far_allocation_in_cache_mode_equal_explicit(name):
    """The cache mode's allocation charge by the kernel's groups (models.gpu_cache.
    allocation_latencies: the mean of near and far for one pair of units, nearer far with more):
    the symbolic profile charges what the explicit evaluator does, at one group and at many; each
    kernel costs less than under the far figure alone, and one group saves the larger share."""
    profile = DeviceProfile().with_gpu(atomic_latency=96.0, atomic_latency_near=48.0,
                                       warp_atomic_latency=100.0, warp_atomic_latency_near=60.0,
                                       near_unit_share=0.5)
    options = EvaluationOptions(profile=profile, gpu_mode="cache")
    far = EvaluationOptions(profile=profile.with_gpu(near_unit_share=0.0), gpu_mode="cache")
    checked = load(name)
    near_blind = symbolic_profile(checked, far)
    priced = symbolic_profile(checked, options)
    saved = []
    for n in (4, 5000):
        values = sizes_for(name, n)
        got = symbolic(priced, values)
        assert_same(got, explicit(checked, values, options), f"n={n}")
        kernels = [o["kernel"] for o in got["on"]]
        blind = [o["kernel"] for o in symbolic(near_blind, values)["on"]]
        assert all(k < b for k, b in zip(kernels, blind, strict=True)), n
        saved.append(1 - sum(kernels) / sum(blind))
    assert saved[0] > saved[1] > 0


@pytest.mark.parametrize("name", REGULAR)
def test_page_walks_in_cache_mode_equal_explicit(name):
    """The cache mode's page walks after an `on`'s copy (models.gpu_cache.page_walk, charged once
    per device box with its first kernel): the symbolic profile charges what the explicit
    evaluator does, at heaps held below the first measured point and, for the vector programs,
    at heaps between the points."""
    walks = {"walk_16": 7.0, "walk_21": 50.0, "walk_24": 90.0, "walk_26": 400.0,
             "walk_27": 900.0, "walk_28": 1300.0, "walk_30": 1700.0}
    profile = DeviceProfile().with_gpu(**walks)
    options = EvaluationOptions(profile=profile, gpu_mode="cache")
    plain = EvaluationOptions(gpu_mode="cache")
    checked = load(name)
    walked, unwalked = symbolic_profile(checked, options), symbolic_profile(checked, plain)
    sizes = [1, 7, 33] + ([5000, 40000] if name in ("zipmul", "dot", "map_map") else [])
    for n in sizes:
        values = sizes_for(name, n)
        got = symbolic(walked, values)
        assert_same(got, explicit(checked, values, options), f"n={n}")
        # the report names the walk (part of the kernel), as the explicit box does
        walks = [sum(p.walk for p in o.info.box.phases)
                 for o in evaluate(checked, values, options).ons]
        assert [o["page_walks"] for o in walked.at(values)["on"]] == pytest.approx(walks)
        assert all(w > 0 for w in walks)
        assert not any("page_walks" in o for o in unwalked.at(values)["on"])
        kernels = [o["kernel"] for o in got["on"]]
        assert all(k > u for k, u in zip(kernels, (o["kernel"] for o in
                                                  symbolic(unwalked, values)["on"]),
                                          strict=True)), n


@pytest.mark.parametrize("name", ["zipmul", "dot", "map_map", "matvec"])
def test_the_first_kernel_after_a_copy_in_pays_the_copy_step_once(name):
    """The cache mode's `copy_step` (models.gpu_cache.CacheGpu.walk): a device box whose host
    copied words in pays it once, with its first kernel, in the symbolic profile as in the
    explicit evaluator; the runner program whose input is made on the device pays none."""
    profile = DeviceProfile().with_gpu(copy_step=700.0, walk_16=5.0, walk_30=9.0)
    options = EvaluationOptions(profile=profile, gpu_mode="cache")
    plain = EvaluationOptions(profile=profile.with_gpu(copy_step=0.0), gpu_mode="cache")
    checked = load(name)
    stepped, unstepped = symbolic_profile(checked, options), symbolic_profile(checked, plain)
    for n in (3, 40):
        values = sizes_for(name, n)
        got = symbolic(stepped, values)
        assert_same(got, explicit(checked, values, options), f"n={n}")
        ons = evaluate(checked, values, options).ons
        boxes = [o.info.box for o in ons]
        assert all(o.pushed_words > 0 for o in ons)
        # the explicit note names both (the symbolic report's row: `page_walks`)
        assert all(any("and the first kernel's step after data copied in: " in note
                       for note in o.info.notes) for o in ons)
        assert [o["page_walks"] for o in stepped.at(values)["on"]] == pytest.approx(
            [sum(p.walk for p in box.phases) for box in boxes])
        before = [o["kernel"] for o in symbolic(unstepped, values)["on"]]
        # per box: the walk of its heap (at most walk_30) plus the step, once
        assert [k - b for k, b in zip((o["kernel"] for o in got["on"]), before, strict=True)] \
            == pytest.approx([700.0 * profile.gpu.unit_seconds] * len(boxes)), n
    made_on_device = check_program(parse_file(EXAMPLES.parent / "benchmarks" / "runner_programs"
                                              / "device_made.lg"))
    (on,) = evaluate(made_on_device, {"n": 64}, options).ons
    assert on.pushed_words == 0
    assert sum(p.walk for p in on.info.box.phases) == pytest.approx(5.0)


@pytest.mark.parametrize("name", ["strided", "dot", "matvec", "nbody", "suite/atax", "suite/gemm",
                                  "suite/covariance"])
def test_box_counts_equal_the_explicit_boxes_counts(name):
    """`SymbolicProfile.box_counts` (each kernel's words read and written, operations and
    allocations, for the roofline and the CPU part's floor) counts a thread's path without
    building it, a loop whose body counts alike in every iteration once. Its kernels count what
    the explicit evaluator's device boxes keep (graphs.devicebox.count_phase), kernel by kernel,
    and its serial stretches (cut where the symbolic evaluator cuts them) add up to theirs, at
    sizes where the threads' loops run 1 to 40 times and a staged region fits local memory or
    not."""
    from models.opencl.validate import size_params
    from profiler.checker import bind_parameters

    if name.startswith("suite/"):
        path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.lg"
        checked = check_program(parse_file(path))
    else:
        checked = load(name)
    options = EvaluationOptions(gpu_mode="cache")
    profile = symbolic_profile(checked, options)
    fields = ("words_read", "words_written", "operations", "launches", "allocations")
    for n in (1, 3, 17, 40):
        values = (bind_parameters(checked, size_params(checked, n, name.removeprefix("suite/")))
                  if name.startswith("suite/") else sizes_for(name, n))
        subs = profile.substitution(values)
        boxes = [[c for c in (p.counts for p in o.info.box.phases) if c.threads]
                 for o in evaluate(checked, values, options).ons]
        got = [profile.box_counts(box, subs) for box in profile.evaluation.boxes]
        assert len(got) == len(boxes), n
        for mine, theirs in zip(got, boxes, strict=True):
            assert mine is not None
            assert ([c for c in mine if c.threads > 1]
                    == [c for c in theirs if c.threads > 1]), n
            assert ([sum(getattr(c, f) for c in mine) for f in fields]
                    == [sum(getattr(c, f) for c in theirs) for f in fields]), n
        # each has a kernel whose threads loop (a thread's path of several reads)
        assert any(c.words_read > 2 * c.threads for counts in got for c in counts or [])
