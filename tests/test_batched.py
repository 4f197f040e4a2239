"""Batched evaluation of GPU kernels (graphs/semantics/batched.py): the same evaluation as the
explicit evaluator's thread-by-thread one, path for path, word for word, and its fallbacks.

The reference is the explicit evaluator with batching turned off (`_batch` returning None), so
every comparison is between two runs of this checkout on one program."""

from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

import graphs.semantics.explicit as explicit
from graphs.devicebox import Layout, TemplateThreads
from graphs.semantics.options import EvaluationOptions
from models.device_profile import load_profile
from profiler.checker import check_program
from profiler.errors import EvaluationError
from profiler.parser import parse, parse_file
from profiler.printer import pretty
from tests.generate import parallel_on_programs, well_typed_programs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.lg"))
CACHE_PROFILE = ROOT / "profiles" / "nvidia-h200-serial.json"  # the cache mode (stateful)


def evaluate(checked, params, batched: bool, **options):
    """An evaluation with its device boxes' paths kept (an observer), batched or not."""
    def never(*args):
        return None

    with patch.object(explicit, "_batch", explicit._batch if batched else never), \
            patch.object(explicit, "_iota_batch", explicit._iota_batch if batched else never):
        return explicit.evaluate(checked, params, EvaluationOptions(
            observer=explicit.OffloadCollector(), **options))


def fingerprint(evaluation) -> list:
    """Everything an evaluation produced that a report can show, in comparable form."""
    graph = evaluation.graph
    out = [evaluation.render_value(10**6), evaluation.steps, graph.number_of_nodes(),
           list(graph.node_kind), list(graph.node_span), list(graph.node_centres),
           list(graph.node_space), graph.node_extra, list(graph.edge_source),
           list(graph.edge_target), list(graph.edge_weight), list(graph.edge_kind),
           list(graph.edge_span), list(graph.edge_centres),
           {e: {k: v for k, v in extra.items() if k != "box"}
            for e, extra in graph.edge_extra.items()}, (graph.source, graph.sink)]
    for on in evaluation.ons:
        out.append((on.info.total, on.pushed_words, on.gpu_words, on.grown, on.info.notes))
        out.append([(p.time, p.steps, p.conflicts, p.conflict_degree_max, p.broadcasts,
                     p.multicasts, p.thread_work, p.lockstep, p.counts, p.group_times,
                     p.round_times, p.centres, p.traffic, p.bound) for p in on.box.phases])
        out.append([(phase.parallel, phase.staged, phase.writeback, phase.span,
                     [list(thread) for thread in phase.threads]) for phase in on.paths or []])
    heap = evaluation._heap_lookup
    out.append({rid: (r.ap, r.size, list(r.values.items())) for rid, r in heap.items()})
    return out


def outcome(checked, params, batched: bool, **options):
    """The evaluation's fingerprint, or its error's message and place."""
    try:
        return fingerprint(evaluate(checked, params, batched, **options))
    except EvaluationError as error:
        return ("error", str(error), error.span)


def assert_same(checked, params, **options) -> None:
    """Batched (down to levels of two threads, below MIN_THREADS, to exercise batching on small
    programs too) and thread by thread, the same evaluation."""
    import graphs.semantics.batched as batched

    with patch.object(batched, "MIN_THREADS", 2), patch.object(batched, "STRICT", True):
        batched_outcome = outcome(checked, params, True, **options)
    assert batched_outcome == outcome(checked, params, False, **options)


def assert_same_under_both(checked, sizes) -> None:
    """`assert_same` at each n of `sizes`, under the default profile (dmm, priced per warp
    pattern) and an H200 one (the cache mode, priced over made paths)."""
    for n in sizes:
        assert_same(checked, {"n": n})
        assert_same(checked, {"n": n}, profile=load_profile(CACHE_PROFILE))


def count_batches(checked, params, **options) -> int:
    """How many parallel levels were evaluated as a batch."""
    import graphs.semantics.batched as batched

    made = []
    real = batched._commit

    def spy(*args):
        result = real(*args)
        made.append(result is not None)
        return result

    with patch.object(batched, "_commit", spy):
        explicit.evaluate(checked, params, EvaluationOptions(**options))
    return sum(made)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("n", [1, 2, 5, 33, 70])
def test_examples_batched_equal_explicit(path, n):
    checked = check_program(parse_file(path))
    params = {p.name: n for p in checked.program.params}
    assert_same(checked, params)
    assert_same(checked, params, profile=load_profile(CACHE_PROFILE))


@pytest.mark.parametrize("name", ["nbody", "dot", "strided", "matvec"])
def test_examples_batched_equal_explicit_under_the_papers_rules(name):
    checked = check_program(parse_file(ROOT / "examples" / f"{name}.lg"))
    params = {p.name: 9 for p in checked.program.params}
    assert_same(checked, params, rules="paper")


def test_parallel_levels_of_the_examples_are_batched():
    """The examples' parallel levels are what batching is for, on both worlds."""
    def batches(name, n):
        return count_batches(check_program(parse_file(ROOT / "examples" / f"{name}.lg")),
                             {"n": n})

    # nbody: its two iotas, its CPU parmap (whose threads branch on i < 2: two paths) and its
    # kernel (the threads' inner iota, parmap and reduce included).
    assert batches("nbody", 64) == 2 + 1 + 1
    # dot: three iotas; xs and ys on the CPU; the products, then the reduction levels of at
    # least MIN_THREADS = 16 threads (of 32 and 16; those of 8, 4, 2 and 1 run as before).
    assert batches("dot", 64) == 3 + 2 + 1 + 2
    assert batches("zipmul", 64) == 3  # the iota and the input on the CPU, the products on the GPU
    assert batches("zipmul_cpu", 64) == 3


KERNELS = """
param n : int = 40
letregion r in
let xs = parmap (lambda i: int r [r]. i * 3 - 7 at r) (iota n at r) at r in
on parmap (lambda i: int r [r]. BODY) (iota n at r) at r
at r
"""


def kernel(body: str):
    return check_program(parse(KERNELS.replace("BODY", body), "kernel.lg"))


@pytest.mark.parametrize("body", [
    "if xs[i] < 20 then xs[i] else 0 - xs[i] at r",  # threads disagree: two paths
    "let v = iota (i + 1 at r) at r in length v at r",  # a path per length
    "reduce (lambda p: ((int r, int r), r) [r]. if fst p < snd p then snd p else fst p at r) "
    "(0 at r) (parmap (lambda j: int r [r]. xs[j] * (i - 20 at r) at r) (iota 9 at r) at r) at r",
    "(xs[i] * xs[i] at r) / (7 at r) at r",
    "(0 - xs[i] at r) / (3 at r) at r",  # C's division truncates toward zero
    "let p = (xs[i], i) at r in fst p + snd p at r",
    "let v = [xs[i], i, 5 at r] at r in v[2 at r] + length v at r at r",
    "reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p at r) (0 at r) "
    "(parmap (lambda j: int r [r]. xs[j] * i at r) (iota 9 at r) at r) at r",
    "if 1 < 2 then i else xs[i]",  # a test every thread agrees on
    "profile \"inner\" (xs[n - 1 - i at r] + 1 at r)",
])
def test_kernel_bodies_batched_equal_explicit(body):
    assert_same_under_both(kernel(body), (1, 31, 40, 97))


def count_paths(checked, params) -> list[int]:
    """The number of paths each batched level's threads were split into."""
    import graphs.semantics.batched as batched

    paths = []
    real = batched._commit

    def spy(ev, groups, threads):
        result = real(ev, groups, threads)
        if result is not None:
            paths.append(len(groups))
        return result

    with patch.object(batched, "_commit", spy):
        explicit.evaluate(checked, params, EvaluationOptions())
    return paths


def test_threads_that_diverge_are_split_by_path():
    # The two iotas and the CPU's parmap that makes xs are one path each; the kernel's threads
    # take two (xs[i] = 3i - 7 < 20 for i < 9) or one.
    assert count_paths(kernel("if xs[i] < 20 then xs[i] else 0 at r"), {"n": 40}) == [1, 1, 1, 2]
    assert count_paths(kernel("if i < 100 then xs[i] else 0 at r"), {"n": 40}) == [1, 1, 1, 1]
    # An iota per thread of its own length: a path per length, up to MAX_GROUPS of them.
    lengths = kernel("let v = iota (i + 1 at r) at r in length v at r")
    assert count_paths(lengths, {"n": 40})[-1] == 40
    # 97 paths: the kernel is left to the thread-by-thread rules (each thread's iota a batch).
    assert max(count_paths(lengths, {"n": 97})) == 1


RAGGED = """
param n : int = 40
letregion r in
let rows = parmap (lambda v: int r [r]. iota (1 + v - v / 3 * 3)) (iota n) at r in
on parmap (lambda v: int r [r].
             reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p) 0 (rows[v])
             + length (rows[v]))
          (iota n) at r
"""


def test_vectors_of_different_lengths_split_by_length():
    """Each thread reads its own row, of 1, 2 or 3 elements (a graph's adjacency lists, as in
    the suite's bfs): three paths, on the CPU (the rows' iotas) and on the GPU."""
    checked = check_program(parse(RAGGED, "ragged.lg"))
    assert count_paths(checked, {"n": 40}) == [1, 3, 1, 3]
    assert_same_under_both(checked, (2, 3, 40, 100))


CALLS = """
param n : int = 40
letregion r in
let xs = parmap (lambda i: int r [r]. i * 3 - 7 at r) (iota n at r) at r in
let square = lambda x: int r [r]. x * x at r in
let clamp = fix clamp: (int r -> int r [r], r).
  lambda x: int r [r]. if x < 0 then clamp (x + 5 at r) else x in
ON parmap (lambda i: int r [r]. square (clamp (xs[i])) + square i at r) (iota n at r) at r
"""


@pytest.mark.parametrize("world", ["on", "cpu"])
def test_calls_of_functions_made_before_the_level_are_batched(world):
    """Threads call a function and a recursive one defined outside the level (Fig. 5's
    application rule): one batch, split by how deep each thread's recursion goes."""
    source = CALLS.replace("ON", "on" if world == "on" else "").rstrip() + (
        "\nat r\n" if world == "on" else "\n")
    checked = check_program(parse(source, "calls.lg"))
    assert count_paths(checked, {"n": 40})[-1] == 3  # x = -7: two recursions; -4, -1: one; else none
    assert_same_under_both(checked, (2, 17, 40))


MADE_INSIDE = """
param n : int = 40
letregion r in
let xs = parmap (lambda i: int r [r]. i * 3 - 7 at r) (iota n at r) at r in
ON parmap (lambda i: int r [r].
  let square = lambda x: int r [r]. x * x at r in
  let clamp = fix clamp: (int r -> int r [r], r).
    lambda x: int r [r]. if x < 0 then clamp (x + i + 1 at r) else x in
  square (clamp (xs[i])) + 1 at r) (iota n at r) at r
"""


@pytest.mark.parametrize("world", ["on", "cpu"])
def test_functions_made_inside_a_level_are_batched(world):
    """Each thread makes a function and a recursive one whose environment holds its own i; the
    heap gets each thread's closures, with their own environments."""
    source = MADE_INSIDE.replace("ON", "on" if world == "on" else "").rstrip() + (
        "\nat r\n" if world == "on" else "\n")
    checked = check_program(parse(source, "inside.lg"))
    assert count_paths(checked, {"n": 40})[-1] == 4  # recursions: 7 (i = 0), 2, 1, none (i > 2)
    assert_same_under_both(checked, (2, 17, 40))


CPU_LEVELS = """
param n : int = 40
letregion r in
let xs = parmap (lambda i: int r [r]. i * 3 - 7 at r) (iota n at r) at r in
parmap (lambda i: int r [r]. BODY) (iota n at r) at r
"""


@pytest.mark.parametrize("body", [
    "if xs[i] < 20 then xs[i] else 0 - xs[i] at r",
    "if xs[i] < 20 then (let p = (xs[i], i) at r in fst p * snd p at r) else 1 at r",
    "let v = iota (i - i / 4 * 4 at r) at r in length v at r",
    "reduce (lambda p: ((int r, int r), r) [r]. if fst p < snd p then snd p else fst p at r) "
    "(0 at r) (parmap (lambda j: int r [r]. xs[j] * (i - 20 at r) at r) (iota 9 at r) at r) at r",
])
def test_cpu_levels_that_diverge_equal_explicit(body):
    checked = check_program(parse(CPU_LEVELS.replace("BODY", body), "levels.lg"))
    assert max(count_paths(checked, {"n": 40})) > 1
    for n in (2, 33, 40, 200):
        assert_same(checked, {"n": n})


@pytest.mark.parametrize("body, message", [
    ("xs[i + 1 at r]", "out of bounds"),
    ("(7 at r) / (xs[i] - 2 at r) at r", "division by zero"),
    ("xs[i] * 3037000500 * 3037000500 at r at r", "integer overflow"),
])
def test_errors_inside_a_kernel_are_the_explicit_evaluators(body, message):
    """A batch that meets an error is abandoned; the explicit evaluator reports it, at the same
    place, as it always did."""
    checked = kernel(body)
    errors = []
    for batched in (False, True):
        with pytest.raises(EvaluationError) as caught:
            evaluate(checked, {"n": 40}, batched)
        errors.append((str(caught.value), caught.value.span))
    assert errors[0] == errors[1]
    assert message in errors[0][0]


def test_limits_reached_in_a_kernel_are_the_explicit_evaluators():
    """The step limit inside the kernel; the graph's size, checked every 65 536 steps, past its
    limit inside the kernel (n = 20 000: 331 069 nodes and GPU steps at the check) and after it."""
    checked = kernel("xs[i] * xs[i] at r")
    for n, options in ((40, {"max_steps": 300}), (20_000, {"max_graph": 330_000}),
                       (20_000, {"max_graph": 400_000})):
        errors = []
        for batched in (False, True):
            with pytest.raises(EvaluationError) as caught:
                evaluate(checked, {"n": n}, batched, **options)
            errors.append((str(caught.value), caught.value.span))
        assert errors[0] == errors[1]


def test_template_threads_are_the_paths_they_stand_for():
    checked = check_program(parse_file(ROOT / "examples" / "nbody.lg"))
    unbatched = evaluate(checked, {"n": 40}, False).ons[0].paths
    template = evaluate(checked, {"n": 40}, True).ons[0].paths
    batched = [k for k, phase in enumerate(template) if isinstance(phase.threads, TemplateThreads)]
    assert len(batched) == 2  # the kernel's vector's iota, then the kernel
    for k in batched:
        assert list(template[k].threads) == unbatched[k].threads
    kernel_threads = template[batched[1]].threads
    expected = unbatched[batched[1]].threads
    assert len(kernel_threads) == 40
    assert kernel_threads[0] == expected[0] and kernel_threads[-1] == expected[-1]
    assert kernel_threads[3:17:2] == expected[3:17:2]
    assert list(kernel_threads) == expected
    with pytest.raises(IndexError):
        kernel_threads[40]


def test_layout_looks_template_writes_up_as_the_dict_would():
    layout = Layout()
    layout[5] = 100
    first, words, count = (3 << 32) + 10, 4, 6
    layout.segments.append((first, words, count, {0: 1000, 2: 2000}))
    assert layout.get(5) == 100
    assert layout.get(first + 4 * 5) == 1005  # thread 5's word at offset 0
    assert layout.get(first + 4 * 2 + 2) == 2002
    assert layout.get(first + 4 * 2 + 1, -1) == -1  # no write starts there
    assert layout.get(first + 4 * 6, -1) == -1  # past the last thread
    assert first + 2 in layout and first + 1 not in layout
    addresses = np.array([5, first, first + 4 * 5 + 2, first + 1, 77], dtype=np.int64)
    assert layout.many(addresses).tolist() == [layout.get(a, a) for a in addresses.tolist()]


BATCH_SETTINGS = settings(max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@BATCH_SETTINGS
@given(well_typed_programs())
def test_generated_programs_batched_equal_explicit(program):
    note(pretty(program))
    assert_same(check_program(program), {})


@BATCH_SETTINGS
@given(parallel_on_programs())
def test_generated_parallel_ons_batched_equal_explicit(program):
    note(pretty(program))
    checked = check_program(program)
    for rules in (None, "paper"):
        assert_same(checked, {}, rules=rules)


@pytest.mark.parametrize("name, n", [("zipmul", 300), ("dot", 200), ("normalize_inc", 150)])
def test_pictures_read_a_batch_once_for_all_its_threads(name, n):
    """The cost-graph summary reads one copy of a batch's sub-graph for all its threads
    (`CostGraph.replicas`): the same summary as reading every copy."""
    from graphs.picture import cost_picture

    checked = check_program(parse_file(ROOT / "examples" / f"{name}.lg"))
    graph = explicit.evaluate(checked, {"n": n}, EvaluationOptions()).graph
    assert graph.replicas  # the CPU's parmaps and iotas were batched
    graph.longest_path(best_edges=True)
    once = cost_picture(graph)
    graph.replicas.clear()
    assert cost_picture(graph) == once
