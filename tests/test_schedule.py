"""Tests for graphs.schedule: greedy CPU schedules (§6.3, eqs. 3-5) and their space (eqs. 8-9).

Every expected time and peak below was worked out by hand on the tiny graph it names.
"""

import pytest
from conftest import ROOT, run

from graphs.costgraph import CostGraph, DeviceBoxInfo, EdgeKind, NodeKind, Sub
from graphs.schedule import (
    WIDTH_CHECKED,
    Policy,
    ScheduleResult,
    Step,
    _depth_first,
    _GraphIndex,
    _Simulation,
    _width,
    depth_first_order,
    schedule,
    schedule_times,
)
from graphs.semantics.explicit import evaluate
from profiler.checker import check_program
from profiler.parser import parse_file
from profiler.syntax import World

ALL_POLICIES = list(Policy)


# -- hand-built graphs --------------------------------------------------------------------------
def chain(graph: CostGraph, weights: list[float], start: Sub | None = None) -> Sub:
    """A path of edges with the given weights (k weights give k edges and k + 1 nodes)."""
    current = start if start is not None else graph.node()
    for weight in weights:
        current = graph.step(current, weight, EdgeKind.OP, NodeKind.POINT)
    return current


def unit_chain(length: int) -> CostGraph:
    graph = CostGraph()
    graph.finish(chain(graph, [1] * length))
    return graph


def two_chains(left: int, right: int) -> CostGraph:
    """par of a chain of `left` and of `right` unit edges: work left+right+4, span max+2."""
    graph = CostGraph()
    graph.finish(graph.par(chain(graph, [1] * left), chain(graph, [1] * right)))
    return graph


def binary_tree(leaves: int) -> CostGraph:
    graph = CostGraph()
    graph.finish(graph.par_all([graph.node() for _ in range(leaves)]))
    return graph


def three_tasks() -> CostGraph:
    """par_all of single edges of weights 5, 3, 2: par(5, par(3, 2)); work 18, span 7."""
    graph = CostGraph()
    graph.finish(
        graph.par_all([graph.step(None, w, EdgeKind.OP, NodeKind.POINT) for w in (5, 3, 2)])
    )
    return graph


def allocating_branches(branches: int, length: int) -> CostGraph:
    """par_all of branches that each allocate a word, run `length` unit edges, then free it."""
    graph = CostGraph()
    parts: list[Sub | None] = []
    for _ in range(branches):
        current = graph.node(space=((World.CPU, 1),))
        current = chain(graph, [1] * (length - 1), current)
        current = graph.step(current, 1, EdgeKind.OP, NodeKind.POINT, space=((World.CPU, -1),))
        parts.append(current)
    graph.finish(graph.par_all(parts))
    return graph


def mixed_weights() -> CostGraph:
    """Weights far apart: a 400 / 1e6 / 3.2e-6 chain beside a 2.5 edge."""
    graph = CostGraph()
    graph.finish(graph.par(chain(graph, [400, 1e6, 3.2e-6]), chain(graph, [2.5])))
    return graph


def with_zero_edges() -> CostGraph:
    """A fork whose δ is 0, around a chain 3, 0, 4 and a single edge of weight 6."""
    graph = CostGraph()
    graph.finish(graph.par(chain(graph, [3, 0, 4]), chain(graph, [6]), weight=0))
    return graph


# -- time ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ALL_POLICIES)
@pytest.mark.parametrize("procs", [1, 2, 5])
@pytest.mark.parametrize("length", [1, 2, 7])
def test_a_chain_of_k_unit_edges_takes_k(policy, procs, length):
    result = schedule(unit_chain(length), procs, policy)
    assert result.time == length
    assert len(result.steps) == length + 1
    assert [step.weight for step in result.steps] == [0] + [1] * length
    assert [step.nodes for step in result.steps] == [(i,) for i in range(length + 1)]
    assert all(step.busy == (1 if step.time < length else 0) for step in result.steps)


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_two_chains_take_the_work_on_one_processor_and_the_span_on_two(policy):
    graph = two_chains(3, 5)
    assert (graph.work(), graph.span()) == (12, 7)
    assert schedule(graph, 1, policy).time == 12
    assert schedule(graph, 2, policy).time == 7
    assert schedule(graph, 8, policy).time == 7


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Policy.DEPTH_FIRST, 16),  # the left subtree's chain of joins holds one processor back
        (Policy.BREADTH_FIRST, 14),  # level by level, both processors always busy: work / 2
        (Policy.WORK_STEALING, 14),  # each processor takes one half after the first steal
    ],
)
def test_binary_tree_of_eight_leaves_on_two_processors(policy, expected):
    graph = binary_tree(8)
    graph.self_check()
    assert (graph.work(), graph.span()) == (28, 6)
    assert schedule(graph, 2, policy).time == expected
    assert schedule(graph, 1, policy).time == 28
    assert schedule(graph, 28, policy).time == 6


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Policy.DEPTH_FIRST, 11),
        (Policy.BREADTH_FIRST, 10),
        (Policy.WORK_STEALING, 11),
    ],
)
def test_unequal_tasks_on_two_processors(policy, expected):
    assert schedule(three_tasks(), 2, policy).time == expected


def long_tasks(result: ScheduleResult) -> list[tuple[float, float]]:
    """(start, duration) of the tasks longer than 1, in order of start."""
    return sorted(
        (start, end - start) for _, start, end, _, _ in result.intervals if end - start > 1
    )


def test_depth_first_and_breadth_first_order_unequal_tasks_differently():
    # 1DF runs the 3 right after its fork edge, and the 2 only after the 3's join edge; BF
    # starts the fork edge to the 2 first because it became ready earlier than the 3.
    depth_first = schedule(three_tasks(), 2, Policy.DEPTH_FIRST)
    assert long_tasks(depth_first) == [(1, 5), (2, 3), (7, 2)]
    assert depth_first.processor_intervals(0)[1][:2] == (1, 6)
    assert len(depth_first.intervals) == 11
    breadth_first = schedule(three_tasks(), 2, Policy.BREADTH_FIRST)
    assert long_tasks(breadth_first) == [(1, 5), (3, 3), (6, 2)]


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_large_and_float_weights_are_not_expanded(policy):
    graph = mixed_weights()
    serial = schedule(graph, 1, policy)
    assert serial.time == pytest.approx(4 + 400 + 1e6 + 3.2e-6 + 2.5, rel=1e-15)
    parallel = schedule(graph, 2, policy)
    assert parallel.time == pytest.approx(1 + 400 + 1e6 + 3.2e-6 + 1, rel=1e-15)
    # the fork; both branch sources; the 2.5 side's end; the long side's three nodes; the join.
    assert [step.weight for step in parallel.steps] == pytest.approx(
        [0, 1, 2.5, 397.5, 1e6, 3.2e-6, 1], rel=1e-9, abs=1e-9
    )
    assert [len(step.nodes) for step in parallel.steps] == [1, 2, 1, 1, 1, 1, 1]
    assert len(parallel.intervals) == 8


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_zero_weight_edges_complete_at_once_without_a_processor(policy):
    graph = with_zero_edges()
    assert (graph.work(), graph.span()) == (13, 7)
    serial = schedule(graph, 1, policy)
    assert serial.time == 13
    assert len(serial.intervals) == 3
    parallel = schedule(graph, 2, policy)
    assert parallel.time == 7
    assert parallel.steps[0].nodes[:1] == (graph.source,)
    # At time 0 the fork and both branch sources are reached through the weight-0 fork edges.
    assert len(parallel.steps[0].nodes) == 3
    assert parallel.steps[0].busy == 2


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_the_steps_partition_the_nodes_and_their_weights_sum_to_the_time(policy):
    graph = binary_tree(5)
    result = schedule(graph, 3, policy)
    reached = [node for step in result.steps for node in step.nodes]
    assert sorted(reached) == sorted(graph.graph.nodes)
    assert sum(step.weight for step in result.steps) == result.time
    assert result.steps[-1].nodes == (graph.sink,)
    assert [step.time for step in result.steps] == sorted({step.time for step in result.steps})


# -- Brent's bounds -----------------------------------------------------------------------------
BOUND_GRAPHS = [
    pytest.param(lambda: two_chains(3, 5), id="two-chains"),
    pytest.param(lambda: binary_tree(8), id="tree-8"),
    pytest.param(lambda: binary_tree(13), id="tree-13"),
    pytest.param(three_tasks, id="three-tasks"),
    pytest.param(lambda: allocating_branches(6, 4), id="allocating"),
    pytest.param(mixed_weights, id="mixed-weights"),
    pytest.param(with_zero_edges, id="zero-edges"),
]


@pytest.mark.parametrize("make", BOUND_GRAPHS)
@pytest.mark.parametrize("policy", ALL_POLICIES)
@pytest.mark.parametrize("procs", [1, 2, 3, 4])
def test_greedy_schedules_meet_brents_bounds(make, policy, procs):
    graph = make()
    work, span = graph.work(), graph.span()
    time = schedule(graph, procs, policy).time
    slack = 1e-9 * (work + span)
    assert time >= span - slack
    assert time >= work / procs - slack
    assert time <= work / procs + span + slack


@pytest.mark.parametrize("make", BOUND_GRAPHS)
@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_one_processor_takes_the_work_and_enough_processors_take_the_span(make, policy):
    graph = make()
    assert schedule(graph, 1, policy).time == pytest.approx(graph.work(), rel=1e-12)
    edges = graph.graph.number_of_edges()
    assert schedule(graph, edges, policy).time == pytest.approx(graph.span(), rel=1e-12)


# -- the depth-first order ----------------------------------------------------------------------
def test_depth_first_order_of_two_chains():
    graph = two_chains(1, 2)
    # nodes: left 0-1, right 2-3-4, fork 5, join 6
    assert depth_first_order(graph) == ((5, 0), (0, 1), (1, 6), (5, 2), (2, 3), (3, 4), (4, 6))


@pytest.mark.parametrize("make", BOUND_GRAPHS)
def test_one_depth_first_processor_runs_the_depth_first_order(make):
    graph = make()
    result = schedule(graph, 1, Policy.DEPTH_FIRST)
    ran = [(u, v) for _, _, _, u, v in result.intervals]
    positive = [edge for edge in depth_first_order(graph) if graph.graph.edges[edge]["weight"]]
    assert ran == positive


# -- space --------------------------------------------------------------------------------------
@pytest.mark.parametrize("branches", [2, 3, 4, 5, 8])
def test_breadth_first_holds_every_allocation_and_depth_first_one_per_processor(branches):
    graph = allocating_branches(branches, 2 * branches + 2)
    assert schedule(graph, 1, Policy.BREADTH_FIRST).peak_space == branches
    assert schedule(graph, 2, Policy.BREADTH_FIRST).peak_space == branches
    assert schedule(graph, 1, Policy.DEPTH_FIRST).peak_space == 1
    assert schedule(graph, 2, Policy.DEPTH_FIRST).peak_space == 2
    assert schedule(graph, 1, Policy.WORK_STEALING).peak_space == 1
    assert schedule(graph, 2, Policy.WORK_STEALING).peak_space == 2


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_space_per_step_returns_to_zero(policy):
    result = schedule(allocating_branches(4, 10), 2, policy)
    assert result.steps[0].space == 0
    assert result.steps[-1].space == 0
    assert result.peak_space_gpu == 0
    assert result.peak_space == result.peak_space_cpu == max(s.space_cpu for s in result.steps)


def device_box_graph() -> CostGraph:
    """4 CPU words, then a device box of weight 8 that holds 10 GPU words while it runs, leaves
    3 CPU words when it ends, and whose end node frees one of them."""
    graph = CostGraph()
    before = graph.node(space=((World.CPU, 4),))
    info = DeviceBoxInfo(transfer_in=2, kernel=5, transfer_out=1, merge=0, regions=("r1",))
    box = graph.device_box(
        before,
        info,
        centres=(),
        space_start=((World.GPU, 10),),
        space_end=((World.GPU, -10), (World.CPU, 3)),
        space_after=((World.CPU, -1),),
    )
    graph.finish(box)
    return graph


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_device_box_space_starts_with_the_edge_and_ends_before_its_target(policy):
    graph = device_box_graph()
    graph.self_check()
    result = schedule(graph, 1, policy)
    assert result.time == 9
    summary = [(s.time, s.weight, s.space_cpu, s.space_gpu, s.busy) for s in result.steps]
    assert summary == [(0, 0, 4, 0, 1), (1, 1, 4, 10, 1), (9, 8, 6, 0, 0)]
    # At the box's end the merged CPU words (4 + 3) are alive before the target node frees 1:
    # the peak sees 7 even though no step does.
    assert (result.peak_space_cpu, result.peak_space_gpu, result.peak_space) == (7, 10, 14)
    assert result.intervals == ((0, 0, 1, 0, 1), (0, 1, 9, 1, 2))


def test_space_between_steps_counts_towards_the_peak():
    # s -> y -> j and s -> u1 =box=> u2 -> j. Breadth-first on one processor runs s->y, s->u1,
    # y->j (j is not reached: no step), then the box from 3 to 8: its 7 GPU words are live
    # although no step ever sees them.
    graph = CostGraph()
    s, y, u1, u2, j = (graph.node().source for _ in range(5))
    graph.edge(s, y, 1, EdgeKind.SEQ)
    graph.edge(s, u1, 1, EdgeKind.SEQ)
    graph.edge(y, j, 1, EdgeKind.SEQ)
    graph.edge(
        u1, u2, 5, EdgeKind.DEVICE_BOX, space_start=((World.GPU, 7),), space_end=((World.GPU, -7),)
    )
    graph.edge(u2, j, 1, EdgeKind.SEQ)
    graph.finish(Sub(s, j))
    result = schedule(graph, 1, Policy.BREADTH_FIRST)
    assert [step.time for step in result.steps] == [0, 1, 2, 8, 9]
    assert max(step.space_gpu for step in result.steps) == 0
    assert result.peak_space_gpu == 7
    assert result.time == 9


# -- work stealing ------------------------------------------------------------------------------
def test_work_stealing_is_deterministic():
    graph = binary_tree(13)
    first = schedule(graph, 3, "ws")
    second = schedule(graph, 3, Policy.WORK_STEALING)
    assert first == second
    assert first.policy is Policy.WORK_STEALING


def test_work_stealing_keeps_the_first_child_and_the_thief_takes_the_oldest():
    # par(left, right): processor 0 runs fork->left, processor 1 steals fork->right; each then
    # runs its own branch to the end.
    graph = two_chains(2, 2)  # left 0-1-2, right 3-4-5, fork 6, join 7
    result = schedule(graph, 2, Policy.WORK_STEALING)
    assert result.processor_intervals(0) == [(0, 1, 6, 0), (1, 2, 0, 1), (2, 3, 1, 2), (3, 4, 2, 7)]
    assert result.processor_intervals(1) == [(0, 1, 6, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 7)]


def test_work_stealing_on_four_processors_splits_a_tree_of_four():
    # 1 steals the root's second child from 0; then 2 steals from 0 and 3 from 1. The join of
    # the two leaves is run by whichever processor reaches it last: the thieves 2 and 3.
    graph = binary_tree(4)  # leaves 0-3, forks 4 (0, 1), 6 (2, 3), 8 (root); joins one above
    result = schedule(graph, 4, Policy.WORK_STEALING)
    assert result.time == graph.span() == 4
    assert result.processor_intervals(0) == [(0, 1, 8, 4), (1, 2, 4, 0), (2, 3, 0, 5)]
    assert result.processor_intervals(2) == [(1, 2, 4, 1), (2, 3, 1, 5), (3, 4, 5, 9)]
    assert [len(result.processor_intervals(p)) for p in range(4)] == [3, 3, 3, 3]


# -- the interface ------------------------------------------------------------------------------
@pytest.mark.parametrize("procs", [0, -1])
def test_a_schedule_needs_a_processor(procs):
    with pytest.raises(ValueError, match="at least one processor"):
        schedule(unit_chain(2), procs, Policy.DEPTH_FIRST)


def test_policy_names():
    assert [policy.value for policy in Policy] == ["1df", "bf", "ws"]
    assert schedule(unit_chain(3), 2, "bf").policy is Policy.BREADTH_FIRST
    with pytest.raises(ValueError):
        schedule(unit_chain(3), 2, "lifo")


def test_a_graph_with_a_node_the_source_does_not_reach_is_refused():
    graph = unit_chain(2)
    graph.node()
    with pytest.raises(ValueError, match="does not reach"):
        schedule(graph, 1, Policy.DEPTH_FIRST)


def test_a_single_node_graph_takes_no_time():
    graph = CostGraph()
    graph.finish(None)
    result = schedule(graph, 4, Policy.BREADTH_FIRST)
    assert (result.policy, result.procs, result.time) == (Policy.BREADTH_FIRST, 4, 0)
    assert result.steps == (Step(0, 0, (0,), 0, 0, 0),) and result.step_count == 1
    assert (result.peak_space_cpu, result.peak_space_gpu, result.peak_space) == (0, 0, 0)
    assert result.intervals == () and result.space_trace == ()


def test_without_its_steps_a_schedule_keeps_their_count_and_everything_else():
    graph = run(ROOT.joinpath("examples", "dc_sum.lg").read_text(), {"n": 16}).graph
    full = schedule(graph, 2, Policy.DEPTH_FIRST)
    lean = schedule(graph, 2, Policy.DEPTH_FIRST, keep_steps=False)
    assert lean.steps == () and lean.step_count == full.step_count == len(full.steps) > 1
    assert lean.intervals == full.intervals and len(lean.intervals) > 1
    assert lean.space_trace == full.space_trace
    assert (lean.time, lean.peak_space) == (full.time, full.peak_space)


# -- more processors than the graph's width ------------------------------------------------------
@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: p.value)
@pytest.mark.parametrize("example, n", [("dc_sum", 100), ("zipmul", 300), ("normalize_inc", 100)])
def test_processors_beyond_the_width_are_capped_and_change_nothing(policy: Policy, example: str,
                                                                   n: int):
    checked = check_program(parse_file(ROOT / "examples" / f"{example}.lg"))
    graph = evaluate(checked, {"n": n}).graph
    index = _GraphIndex(graph)
    numbers, in_order = _depth_first(index)
    width = _width(index, in_order)
    assert WIDTH_CHECKED < width < 10 * width
    # The simulation itself on 10x the width, every processor kept.
    uncapped = _Simulation(index, 10 * width, policy, numbers, in_order, True).run()
    for procs in (10 * width, 10**20):
        capped = schedule(graph, procs, policy)
        assert capped.procs == width
        assert (capped.time, capped.peak_space_cpu, capped.peak_space_gpu, capped.peak_space) == (
            uncapped.time, uncapped.peak_space_cpu, uncapped.peak_space_gpu, uncapped.peak_space)
        assert [(s.time, s.nodes, s.space_cpu, s.space_gpu, s.busy) for s in capped.steps] == [
            (s.time, s.nodes, s.space_cpu, s.space_gpu, s.busy) for s in uncapped.steps]
    # On one processor fewer than the width some task waits: the width is the least that
    # changes nothing.
    assert schedule(graph, width - 1, policy).time >= uncapped.time


def test_few_processors_are_never_capped():
    assert schedule(binary_tree(2), WIDTH_CHECKED, "1df").procs == WIDTH_CHECKED


# -- times alone (a speedup curve) ------------------------------------------------------------------
@pytest.mark.parametrize("make", [*BOUND_GRAPHS, mixed_weights, with_zero_edges,
                                  lambda: allocating_branches(5, 3)])
@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: p.value)
def test_schedule_times_are_the_schedules_times(make, policy: Policy):
    graph = make()
    procs = [1, 2, 3, 4, 7, 100]
    assert schedule_times(graph, procs, policy) == [schedule(graph, p, policy).time
                                                    for p in procs]


@pytest.mark.parametrize("policy", ALL_POLICIES, ids=lambda p: p.value)
@pytest.mark.parametrize("example, params", [("dc_sum", {"n": 100}), ("matvec", {"rows": 8}),
                                             ("normalize_inc", {"n": 100})])
def test_schedule_times_of_the_examples_are_the_schedules_times(policy: Policy, example: str,
                                                                params: dict[str, int]):
    checked = check_program(parse_file(ROOT / "examples" / f"{example}.lg"))
    graph = evaluate(checked, params).graph
    procs = list(range(1, 17))
    assert schedule_times(graph, procs, policy) == [schedule(graph, p, policy).time
                                                    for p in procs]


def test_schedule_times_need_a_processor():
    with pytest.raises(ValueError, match="at least one processor"):
        schedule_times(binary_tree(2), [2, 0], "1df")


@pytest.mark.parametrize("policy", ALL_POLICIES)
@pytest.mark.parametrize("kinds", [3, 300])  # fewer and more than a byte's numbers
def test_many_different_space_changes_are_kept_apart(policy, kinds):
    """A chain whose node i allocates i words on the CPU and frees them again at the end: the
    peak is the sum, whatever the number of different changes the index numbers."""
    graph = CostGraph()
    current = graph.node()
    for words in range(1, kinds + 1):
        current = graph.step(current, 1, EdgeKind.OP, NodeKind.POINT,
                             space=((World.CPU, words),))
    total = kinds * (kinds + 1) // 2
    current = graph.step(current, 1, EdgeKind.OP, NodeKind.POINT, space=((World.CPU, -total),))
    graph.finish(current)
    result = schedule(graph, 2, policy)
    assert result.peak_space == result.peak_space_cpu == total
    assert result.steps[-1].space == 0
