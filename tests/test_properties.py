"""Properties of generated well-typed programs (tests/generate.py), checked with hypothesis.

- Soundness in practice: a well-typed program checks and runs without any HetprofError (no
  region or world error in particular), and its cost graph satisfies its invariants.
- The pretty printer round-trips generated programs, parsed and elaborated.
- The GPU model prices memory but does not compute: the value is the same under `--gpu-mode paper`
  and `--gpu-mode dmm`, and a program without `on` costs the same CPU work under both.
- Theorem 4.4 (merge-conflict freedom) over programs with `on` inside `||` and parmap, under the
  calibrated rules and the paper's, with the conditions under which it holds.
"""

import math
from unittest.mock import patch

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import graphs.semantics.explicit
from graphs.semantics.explicit import evaluate
from graphs.semantics.options import EvaluationOptions
from models.device_profile import PAPER_PROFILE, DeviceProfile
from profiler.checker import check_program
from profiler.errors import EvaluationError
from profiler.parser import parse
from profiler.printer import pretty
from profiler.regions import merge
from profiler.syntax import On, Program, children
from tests.generate import parallel_on_programs, well_typed_programs

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ALL_ELEMENTS = 10**6  # render whole vectors when comparing values


def has_on(program: Program) -> bool:
    todo = [program.body]
    while todo:
        node = todo.pop()
        if isinstance(node, On):
            return True
        todo.extend(children(node))
    return False


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_generated_programs_check_and_run(program):
    note(pretty(program))
    checked = check_program(program)
    evaluation = evaluate(checked, {})
    evaluation.graph.self_check()
    assert evaluation.graph.work() > 0
    assert evaluation.steps > 0


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_generated_programs_print_and_parse_back(program):
    text = pretty(program)
    note(text)
    again = parse(text)
    assert again.params == program.params
    assert again.body == program.body
    assert pretty(again) == text
    original = evaluate(check_program(program), {})
    reparsed = evaluate(check_program(again), {})
    assert reparsed.render_value(ALL_ELEMENTS) == original.render_value(ALL_ELEMENTS)
    assert reparsed.graph.work() == original.graph.work()


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_generated_programs_print_elaborated_and_check_back(program):
    checked = check_program(program)
    text = pretty(Program(program.params, checked.body))
    note(text)
    rechecked = check_program(parse(text))
    assert rechecked.body == checked.body
    assert rechecked.type == checked.type


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_value_does_not_depend_on_the_gpu_mode(program):
    note(pretty(program))
    checked = check_program(program)
    paper = evaluate(checked, {}, EvaluationOptions(gpu_mode="paper"))
    dmm = evaluate(checked, {}, EvaluationOptions(gpu_mode="dmm"))
    assert paper.render_value(ALL_ELEMENTS) == dmm.render_value(ALL_ELEMENTS)
    assert len(paper.ons) == len(dmm.ons)


@PROPERTY_SETTINGS
@given(well_typed_programs(allow_on=False))
def test_cpu_work_does_not_depend_on_the_gpu_mode(program):
    note(pretty(program))
    assert not has_on(program)
    checked = check_program(program)
    paper = evaluate(checked, {}, EvaluationOptions(gpu_mode="paper"))
    dmm = evaluate(checked, {}, EvaluationOptions(gpu_mode="dmm"))
    assert paper.render_value(ALL_ELEMENTS) == dmm.render_value(ALL_ELEMENTS)
    assert paper.graph.work() == dmm.graph.work()
    assert paper.graph.span() == dmm.graph.span()


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_lockstep_by_program_point_keeps_values_work_and_uniform_kernels(program):
    """`gpu.lockstep` "point" only lines up divergent threads otherwise: the value, the threads'
    work and every kernel whose warps do not diverge are as edge by edge; a divergent kernel
    takes at least as many steps as its longest path."""
    note(pretty(program))
    checked = check_program(program)
    edge = evaluate(checked, {})
    point = evaluate(checked, {}, EvaluationOptions(
        profile=DeviceProfile().with_gpu(lockstep="point")))
    assert point.render_value(ALL_ELEMENTS) == edge.render_value(ALL_ELEMENTS)
    assert len(point.ons) == len(edge.ons)
    for by_edge, by_point in zip(edge.ons, point.ons, strict=True):
        pairs = list(zip(by_edge.box.phases, by_point.box.phases, strict=True))
        for a, b in pairs:
            assert b.thread_work == a.thread_work
            assert b.divergent_warps == a.divergent_warps
            if b.divergent_warps:
                event("a divergent kernel")
                assert b.steps >= b.longest_path
            else:
                assert (b.steps, b.time) == (a.steps, a.time)


def _same(a, b) -> bool:
    return a is b or a == b


@PROPERTY_SETTINGS
@given(parallel_on_programs(), st.sampled_from(["calibrated", "paper"]))
def test_theorem_4_4_merge_conflict_freedom(program, rules):
    """Theorem 4.4: for R1; R1' ▶ R; δ, every value of R1 and of R1' is in R, and an offset both
    hold holds one value. Checked on every merge of an `on` (profiler.regions.merge, Def. 4.3).

    The conditions under which it holds: the words the two sides allocated since the copy was
    made (from the ap it was pushed with) must not disagree; in particular it holds whenever at
    most one side grew. Both sides bump their own allocation pointer from that ap (Fig. 3) and
    Def. 4.3 relocates nothing, so two sides that both grew put different values at the same
    offsets, and the merge raises (the paper's proof, "by immutability", misses this case).
    - Calibrated rules: the CPU side never grows while its copy is on the GPU (an `on` runs to its
      merge before anything else allocates, branches one after another on one heap), so the
      theorem holds for every merge of every program.
    - Paper rules (Fig. 6: each branch evaluated from the same configuration table): an `on` in a
      branch pushes the region as its branch's table holds it, whose ap comes before the words
      its earlier siblings allocated there since the fork. If its kernel allocates in that region
      (both sides grew), the merge conflicts: a parmap whose threads each run an `on` that
      allocates where the threads' results go, `(on a) || (on b)` both allocating in one region,
      `(CPU code allocating in r) || (on ... at r)`. Otherwise (the first branch, or a kernel that
      allocates nowhere its siblings did) it holds."""
    note(pretty(program))
    note(rules)
    checked = check_program(program)
    merges = []

    def recording(cpu, gpu, span, base=None):
        start = cpu.ap if base is None else base
        record = {"cpu_grew": cpu.ap > start, "gpu_grew": gpu.ap > start,
                  "cpu": dict(cpu.values), "gpu": dict(gpu.values), "start": start}
        merges.append(record)
        result = merge(cpu, gpu, span, base)
        record["merged"] = result.region.values
        return result

    options = EvaluationOptions(profile=PAPER_PROFILE if rules == "paper" else
                                EvaluationOptions().profile)
    with patch.object(graphs.semantics.explicit, "merge", recording):
        try:
            evaluate(checked, {}, options)
            raised = False
        except EvaluationError as error:
            assert error.rule == "Theorem 4.4", error
            raised = True
    assert merges
    for record in merges:
        both_grew = record["cpu_grew"] and record["gpu_grew"]
        if "merged" not in record:  # this merge raised
            assert raised and both_grew
            start = record["start"]
            assert ({o: v for o, v in record["cpu"].items() if o >= start}
                    != {o: v for o, v in record["gpu"].items() if o >= start})
            continue
        merged = record["merged"]
        for side in ("cpu", "gpu"):  # ∀v ∈ range(R1) ∪ range(R1'). v ∈ range(R), in place
            assert all(o in merged and _same(merged[o], v) for o, v in record[side].items())
        for o in record["cpu"].keys() & record["gpu"].keys():  # v1(o) ≡ v1'(o)
            assert _same(record["cpu"][o], record["gpu"][o])
    if rules == "calibrated":
        assert not raised
        assert not any(record["cpu_grew"] for record in merges)
    else:
        event("paper: a merge whose both sides grew raised" if raised else
              "paper: every merge held")


# -- the longest path in doubles equals the one in Python numbers -------------------------------


@st.composite
def weighted_dags(draw):
    """A DAG on nodes 0..n-1 (edges from lower to higher numbers, no two between one pair), its
    edges (u, v, weight) with int and float weights, ties among them likely."""
    n = draw(st.integers(1, 12))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs))) if pairs else []
    weight = st.one_of(st.integers(0, 5), st.sampled_from([0.5, 0.75, 1.0, 2.0, 1e-9, 3.25]),
                       st.integers(2**40, 2**41), st.integers(2**60, 2**61))
    return n, [(u, v, draw(weight)) for u, v in chosen]


def reference_longest_path(n, order, start, in_degree, targets, weights, best_edge):
    """The longest path in Python numbers (hetprof's pass before it kept doubles)."""
    queue = [u for u in range(n) if not in_degree[u]]
    best = [None] * n
    result, end = 0.0, (queue[0] if queue else -1)
    for node in queue:
        here = best[node]
        if here is None:
            here = 0
        if here > result:
            result, end = here, node
        for e in order[start[node]:start[node + 1]]:
            child = targets[e]
            candidate = here + weights[e]
            known = best[child]
            if candidate > (-1 if known is None else known):
                best[child] = candidate
                best_edge[child] = e
            elif candidate == known and e < best_edge[child]:
                best_edge[child] = e
            in_degree[child] -= 1
            if not in_degree[child]:
                queue.append(child)
    return result, end


@PROPERTY_SETTINGS
@given(weighted_dags())
def test_the_longest_path_in_doubles_is_the_one_in_python_numbers(dag):
    from array import array

    from graphs.costgraph import NUMBER, _longest_path

    n, edges = dag
    start = [0] * (n + 1)
    in_degree = [0] * n
    for u, v, _ in edges:
        start[u + 1] += 1
        in_degree[v] += 1
    for u in range(n):
        start[u + 1] += start[u]
    order = sorted(range(len(edges)), key=lambda e: edges[e][0])  # stable: by source
    targets, weights = [v for _, v, _ in edges], [w for _, _, w in edges]
    fast_best, slow_best = array(NUMBER, [-1]) * n, array(NUMBER, [-1]) * n
    fast = _longest_path(range(n), order, start, list(in_degree), targets, range(len(weights)),
                         weights, fast_best)
    slow = reference_longest_path(n, order, start, list(in_degree), targets, weights, slow_best)
    event("total weight past 2^53" if sum(weights) >= 2**53 else "doubles")
    assert fast == slow and type(fast[0]) is type(slow[0])
    assert fast_best == slow_best


SMALL_WEIGHTS = st.one_of(st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0, 2.0, 1e-9]))


@st.composite
def series_parallel_graphs(draw, weight=SMALL_WEIGHTS):
    """A cost graph of random ⊕ and ⊗ (binary and n-ary, as parmap makes them) over steps whose
    weights are ints and floats with ties likely: wide levels of joins, as the evaluator builds."""
    from graphs.costgraph import CostGraph, EdgeKind, NodeKind

    graph = CostGraph()

    def build(depth):
        shape = draw(st.sampled_from(["step", "seq", "par", "par_all"] if depth < 4 else ["step"]))
        if shape == "step":
            return graph.step(None, draw(weight), EdgeKind.OP, NodeKind.POINT)
        if shape == "seq":
            return graph.seq(build(depth + 1), build(depth + 1), draw(weight))
        if shape == "par":
            return graph.par(build(depth + 1), build(depth + 1), draw(weight))
        return graph.par_all([build(depth + 1) for _ in range(draw(st.integers(2, 9)))],
                             draw(weight))

    graph.finish(build(0))
    return graph


@PROPERTY_SETTINGS
@given(series_parallel_graphs(), st.sampled_from([1, 2, 5]))
def test_the_longest_path_visited_wide_with_numpy_is_the_one_visited_node_by_node(graph, wide):
    """`_longest_path`'s numpy visits of many queued nodes (`wide`) give the length, its type,
    the path's end and every node's best edge of the loop that visits one node at a time."""
    from array import array

    from graphs.costgraph import NUMBER, _longest_path

    adjacency = graph.adjacency()
    found = []
    for visits in (None, wide):
        best_edge = array(NUMBER, [-1]) * graph.number_of_nodes()
        length, end = _longest_path(range(graph.number_of_nodes()), adjacency.order,
                                    adjacency.start, adjacency.in_degree[:], graph.edge_target,
                                    graph.edge_weight.codes, graph.edge_weight.values,
                                    best_edge, wide=visits)
        found.append((length, type(length), end, best_edge))
    assert found[0] == found[1]


@PROPERTY_SETTINGS
@given(st.one_of(
    series_parallel_graphs(st.one_of(SMALL_WEIGHTS, st.sampled_from([-0.0, 0.1, 1 / 3, 2.0**60]))),
    series_parallel_graphs(st.one_of(SMALL_WEIGHTS, st.sampled_from([2**51, 2**60 + 1])))),
    st.integers(1, 4))
def test_weight_totals_are_the_sums_of_a_loop_over_the_edges(graph, keys):
    """`CostGraph.work` is `sum` over the edges in adjacency order (its value and its type), and
    `weight_totals` by any key of the records is a loop's sums from 0.0 in that order (in
    chunks of any size), or None where numpy's doubles could not give them exactly; `true_at` is the edges whose value is
    true, in the order asked for (or in order)."""
    order = graph.adjacency().order
    weights = list(graph.edge_weight.at(order))
    work = graph.work()
    assert work == sum(weights) and type(work) is type(sum(weights))
    key_of = [None if code % (keys + 1) == keys else code % keys
              for code in range(len(graph.edge_weight.values))]
    totals = graph.weight_totals(key_of)
    with patch("graphs.costgraph.CHUNK", 3):  # sums carried from chunk to chunk
        assert graph.weight_totals(key_of) == totals
    loop: dict = {}
    for code, weight in zip(map(graph.edge_weight.codes.__getitem__, order), weights,
                            strict=True):
        if key_of[code] is not None:
            loop[key_of[code]] = loop.get(key_of[code], 0.0) + weight
    event("numpy" if totals is not None else "left to the caller")
    if totals is not None:
        assert totals == loop
        assert [math.copysign(1, t) for t in totals.values()] == [
            math.copysign(1, loop[key]) for key in totals]
    assert graph.edge_weight.true_at(order) == [e for e in order if graph.edge_weight[e]]
    assert graph.edge_weight.true_at() == [e for e in range(len(weights)) if graph.edge_weight[e]]
