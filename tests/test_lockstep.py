"""How a warp's threads line up in lock-step (graphs/devicebox.py's `warp_columns`): edge by edge
as §6.4 steps a warp box (`gpu.lockstep` "edge", the paper's), or by program point, as a SIMT
warp runs the two sides of a divergent branch one after the other and reconverges ("point")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, run
from hypothesis import given, settings
from hypothesis import strategies as st

import graphs.semantics.explicit as explicit
from graphs.costgraph import EdgeKind
from graphs.devicebox import PathEdge, _shape_of, point_steps, warp_columns
from graphs.semantics.options import EvaluationOptions
from models.device_profile import DeviceProfile, profile_from_json
from profiler.errors import ProfileError
from profiler.syntax import Span

SPANS = [Span("t.lg", 1, column, 1, column + 1) for column in range(1, 9)]


def edge(point: int, lane: int = 0, kind: EdgeKind = EdgeKind.OP) -> PathEdge:
    """An edge of program point `point` (a span) in thread `lane` (kept in its cost centres)."""
    return PathEdge(kind, 1.0, span=SPANS[point], centres=(str(lane),))


def lane_of(e: PathEdge) -> int:
    return int(e.centres[0])


def test_a_warp_steps_divergent_threads_edge_by_edge_or_by_program_point():
    # lane 0 takes a branch's two-edge side (points 1, 2), lane 1 its one-edge side (point 3);
    # both run point 0 before and point 4 after
    then_lane = [edge(0), edge(1), edge(2), edge(4)]
    else_lane = [edge(0, 1), edge(3, 1), edge(4, 1)]
    by_edge = warp_columns([then_lane, else_lane])
    assert [list(c) for c in by_edge] == [
        [then_lane[0], else_lane[0]], [then_lane[1], else_lane[1]],
        [then_lane[2], else_lane[2]], [then_lane[3]]]
    by_point = warp_columns([then_lane, else_lane], by_point=True)
    assert [list(c) for c in by_point] == [
        [then_lane[0], else_lane[0]], [then_lane[1]], [then_lane[2]], [else_lane[1]],
        [then_lane[3], else_lane[2]]]


def test_a_loop_that_some_threads_run_longer_keeps_their_extra_iterations_apart():
    # a body of points 1, 2: lane 0 runs it three times, lanes 1 and 2 once, then point 3
    long = [edge(0)] + [edge(1), edge(2)] * 3 + [edge(3)]
    short = [edge(0), edge(1), edge(2), edge(3)]
    columns = warp_columns([long, short, list(short)], by_point=True)
    assert [len(c) for c in columns] == [3, 3, 3, 1, 1, 1, 1, 3]
    assert [c[0].span.column for c in columns] == [1, 2, 3, 2, 3, 2, 3, 4]


program_points = st.lists(st.integers(0, 7), min_size=0, max_size=12)
KINDS = [EdgeKind.OP, EdgeKind.SEQ]


@settings(max_examples=200, deadline=None)
@given(st.lists(program_points, min_size=1, max_size=6))
def test_by_program_point_every_edge_runs_once_in_order_in_a_step_of_its_own_shape(lanes):
    # points 0, 2, 4, 6 make OP edges and 1, 3, 5, 7 SEQ edges: runs of other points of the same
    # kinds may share steps (a branch's two sides that a compiler makes one stream)
    paths = [[edge(point, lane, KINDS[point % 2]) for point in points]
             for lane, points in enumerate(lanes)]
    columns = warp_columns(paths, by_point=True)
    seen: dict[int, list[PathEdge]] = {lane: [] for lane in range(len(paths))}
    for column in columns:
        assert column and len({e.kind for e in column}) == 1  # one shape a step
        lanes_here = [lane_of(e) for e in column]
        assert lanes_here == sorted(set(lanes_here))  # each thread at most once, in lane order
        for e in column:
            seen[lane_of(e)].append(e)
    assert all(seen[lane] == path for lane, path in enumerate(paths))
    assert len(columns) >= max(map(len, paths))
    if all(points == lanes[0] for points in lanes):  # no divergence: the paper's steps
        assert [list(c) for c in columns] == [list(c) for c in warp_columns(paths)]


def test_the_two_sides_of_a_branch_of_one_shape_share_steps_by_program_point():
    # lane 0 runs points 1, 3 and lane 1 points 5, 7 (OP, SEQ both): a select, not a branch
    first = [edge(0), edge(1), edge(3, 0, EdgeKind.SEQ), edge(4)]
    second = [edge(0, 1), edge(5, 1), edge(7, 1, EdgeKind.SEQ), edge(4, 1)]
    columns = warp_columns([first, second], by_point=True)
    assert [[lane_of(e) for e in c] for c in columns] == [[0, 1]] * 4
    # sides of other shapes run apart
    other = [edge(0, 1), edge(5, 1, EdgeKind.SEQ), edge(7, 1), edge(4, 1)]
    columns = warp_columns([first, other], by_point=True)
    assert [[lane_of(e) for e in c] for c in columns] == [[0, 1], [0], [0], [1], [1], [0, 1]]


DIVERGENT = """param n : int = 32

letregion r in
on parmap (lambda i: int r [r].
             let d = if i - i / 2 * 2 == 0 then 0.0 - 1.0 else 1.0 in
             d * 2.0)
          (iota n)
at r
"""


def _map_phase(lockstep: str):
    profile = DeviceProfile().with_gpu(lockstep=lockstep)
    evaluation = run(DIVERGENT, {"n": 32}, profile=profile,
                     observer=explicit.OffloadCollector())
    paths = [p for p in evaluation.ons[0].paths if p.parallel][1]
    return evaluation.ons[0].box.phases[3], list(paths.threads)


def test_a_branch_on_the_lane_runs_each_side_with_half_the_warp_then_reconverges():
    """The even threads (then: the literals 0.0 and 1.0 and their difference, six edges) and the
    odd ones (else: the literal 1.0, one edge) of one warp, in the default DMM mode."""
    edge_cost, threads = _map_phase("edge")
    point_cost, _ = _map_phase("point")
    assert [len(threads[0]), len(threads[1])] == [28, 23]
    # the paper's rule: as many steps as the longest path
    assert edge_cost.steps == 28
    # by program point: the 17 edges before the branch, then 6, else 1, and the 5 after it
    assert point_cost.steps == 17 + 6 + 1 + 5
    columns = warp_columns(threads, by_point=True)
    assert [len(c) for c in columns] == [32] * 17 + [16] * 7 + [32] * 5
    # After the branch the warp reads d, which the two halves allocated in separate steps: two
    # address groups (l + 1 = 33 under DMM) where every other global step is one (l = 32).
    weights = [step.weight for step in point_cost.lockstep[0]]
    assert weights[26] == 33.0 and weights.count(33.0) == 1
    assert point_cost.time == edge_cost.time + 33.0


def test_the_lockstep_rule_is_a_profile_field_and_the_papers_rules_step_edge_by_edge():
    profile = DeviceProfile().with_gpu(lockstep="point")
    assert profile_from_json(json.loads(json.dumps(profile.to_json()))) == profile
    assert DeviceProfile().gpu.lockstep == "edge"
    assert EvaluationOptions(profile=profile, rules="paper").profile.gpu.lockstep == "edge"
    with pytest.raises(ProfileError, match=r"'gpu\.lockstep' must be one of edge, point, "
                                           r'not "diagonal"'):
        profile_from_json({"gpu": {"lockstep": "diagonal"}})


def test_hetprof_lockstep_option_prices_the_divergent_map_by_program_point(tmp_path):
    source = tmp_path / "divergent.lg"
    source.write_text(DIVERGENT)
    kernels = {}
    for lockstep in ("edge", "point"):
        done = subprocess.run([sys.executable, "-m", "cli", "profile", str(source), "--format",
                               "json", "--lockstep", lockstep], cwd=ROOT, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        kernels[lockstep] = json.loads(done.stdout)["on"][0]["kernel"]
    assert kernels["point"] == kernels["edge"] + 33.0


def test_by_program_point_a_work_groups_warps_step_through_the_same_points():
    """Fig. 8 steps a work group's warps together, step j of each. By program point, step j is
    one program point for the whole group: a warp that takes no side of another warp's branch
    sits that branch's steps out."""
    from graphs.devicebox import group_columns

    diverging = [[edge(0), edge(1), edge(2), edge(4)], [edge(0, 1), edge(3, 1), edge(4, 1)]]
    uniform = [[edge(0, 2), edge(1, 2), edge(2, 2), edge(4, 2)],
               [edge(0, 3), edge(1, 3), edge(2, 3), edge(4, 3)]]
    warp0, warp1 = group_columns(diverging + uniform, 2, by_point=True)
    assert [len(c) for c in warp0] == [2, 1, 1, 1, 2]
    assert [len(c) for c in warp1] == [2, 2, 2, 0, 2]
    for j in range(5):
        assert len({e.span for e in list(warp0[j]) + list(warp1[j])}) == 1
    edge0, edge1 = group_columns(diverging + uniform, 2)
    assert [len(c) for c in edge0] == [2, 2, 2, 1] and [len(c) for c in edge1] == [2, 2, 2, 2]
    assert {e.span for e in list(edge0[1]) + list(edge1[1])} == {SPANS[1], SPANS[3]}


def test_an_on_notes_its_divergent_warps_and_the_steps_they_cost():
    notes = {}
    for lockstep in ("edge", "point"):
        evaluation = run(DIVERGENT, {"n": 64}, profile=DeviceProfile().with_gpu(lockstep=lockstep))
        notes[lockstep] = next(n for n in evaluation.ons[0].info.notes if n.startswith("divergent"))
    assert notes["point"] == ("divergent threads, stepped by program point (each side of a "
                              "branch in steps of its own): 2 of 2 warps of the kernel at "
                              "test.lg:4:4 (29 steps for paths of at most 28 edges)")
    assert notes["edge"].startswith("divergent threads, stepped edge by edge (§6.4;")
    assert notes["edge"].endswith("2 of 2 warps of the kernel at test.lg:4:4 (28 steps for paths "
                                  "of at most 28 edges)")
    uniform = run(DIVERGENT.replace("i - i / 2 * 2 == 0", "n == 0"), {"n": 64},
                  profile=DeviceProfile().with_gpu(lockstep="point"))
    assert not any(n.startswith("divergent") for n in uniform.ons[0].info.notes)


SAME_COST = DIVERGENT.replace("then 0.0 - 1.0 else 1.0", "then 1.0 - 0.5 else 2.0 - 0.5")


def test_a_branch_of_equal_sides_is_one_stream_under_both_rules_and_the_symbolic_profile():
    """The symbolic profile prices a kernel as one thread template: a thread-dependent branch
    whose sides cost alike is one side's cost. By program point such sides share their steps
    too (a select), so the symbolic profile equals the explicit one under both rules."""
    from graphs.symbolic_profile import symbolic_profile
    from profiler.checker import check_program
    from profiler.parser import parse

    checked = check_program(parse(SAME_COST, "test.lg"))
    for lockstep in ("edge", "point"):
        options = EvaluationOptions(profile=DeviceProfile().with_gpu(lockstep=lockstep))
        symbolic = symbolic_profile(checked, options, {"n": 64}).at({"n": 64})["on"][0]["kernel"]
        explicit = run(SAME_COST, {"n": 64}, profile=options.profile)
        assert symbolic == pytest.approx(explicit.ons[0].info.kernel)
        # each side is six edges (its two literals, a sequencing edge, the subtraction's two
        # reads and its write), run as one: 17 edges before, 6, then 5 after
        assert explicit.ons[0].box.phases[3].steps == 28


def _longest_common_subsequence(a: list, b: list) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if a[i] == b[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    return table[0][0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=14), st.lists(st.integers(0, 3), max_size=14))
def test_two_paths_line_up_by_a_shortest_edit_script(a, b):
    """`_aligned` covers both sequences in order, and its equal runs are a longest common
    subsequence (Myers's script is a shortest one)."""
    from graphs.devicebox import _aligned

    i = j = common = 0
    for equal, i1, i2, j1, j2 in _aligned(a, b):
        assert (i1, j1) == (i, j) and i2 >= i1 and j2 >= j1
        if equal:
            assert a[i1:i2] == b[j1:j2]
            common += i2 - i1
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    assert common == _longest_common_subsequence(a, b)


def test_a_loop_whose_iterations_look_alike_stays_in_step_where_one_side_differs():
    """Three iterations of points 1, 2 and a branch side: lane 0 takes side 3 (two edges) in the
    first, lane 1 in the last, side 5 (one edge) otherwise. A longest-common-run alignment would
    shift lane 1 by an iteration; the shortest edit script keeps the iterations together and runs
    each differing side apart."""
    def path(lane, sides):
        edges = [edge(0, lane)]
        for side in sides:
            edges += [edge(1, lane), edge(2, lane)]
            edges += [edge(3, lane), edge(4, lane, EdgeKind.SEQ)] if side else [edge(5, lane)]
        return edges + [edge(6, lane)]

    columns = warp_columns([path(0, [1, 0, 0]), path(1, [0, 0, 1])], by_point=True)
    assert [[lane_of(e) for e in c] for c in columns] == (
        [[0, 1]] + [[0, 1]] * 2 + [[0], [0], [1]]
        + [[0, 1]] * 3
        + [[0, 1]] * 2 + [[0], [1], [1]] + [[0, 1]])


# Kernels whose threads part ways, made from a small menu: a side is a float expression of the
# thread's x (literals, arithmetic, a vector read, a nested branch on the thread, a loop that
# runs a thread-dependent number of times).
SIDES = [
    "x * 1.5",
    "x - w[i]",
    "(x + 2.0) * (x - 0.5)",
    "x",
    "if i - i / 3 * 3 == 0 then x + 1.0 else x",
    "w[(i * 7) - (i * 7) / n * n] + x",
    "loop (i - i / 4 * 4, x)",
]
CONDITIONS = ["i - i / 2 * 2 == 0", "i < 5", "i - i / 3 * 3 == 1", "i > n - 3", "0 == 1"]
SIDED = """param n : int = 64

letregion r in
let vals = [0.5, 1.0, 1.5, 2.0, 2.5] at r in
let w = parmap (lambda t: int r [r]. vals[t - t / 5 * 5] * 0.25) (iota n) at r in
on parmap (lambda i: int r [r].
             let loop = fix loop: (((int r, float r), r) -> float r [r], r).
               lambda s: ((int r, float r), r) [r].
                 if fst s <= 0 then snd s else loop (fst s - 1, snd s * 0.5 + 1.0) in
             let x = vals[i - i / 5 * 5] in
             let y = if {c1} then ({a}) else ({b}) in
             if {c2} then y + ({d}) else y)
          (iota n)
at r
"""


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(CONDITIONS), st.sampled_from(CONDITIONS), st.sampled_from(SIDES),
       st.sampled_from(SIDES), st.sampled_from(SIDES), st.sampled_from([32, 64, 300]))
def test_kernels_that_part_ways_keep_value_and_work_and_step_each_edge_once(c1, c2, a, b, d, n):
    source = SIDED.format(c1=c1, c2=c2, a=a, b=b, d=d.replace("x", "y"))
    edge_run = run(source, {"n": n}, observer=explicit.OffloadCollector())
    point_run = run(source, {"n": n}, profile=DeviceProfile().with_gpu(lockstep="point"))
    assert point_run.render_value(10**6) == edge_run.render_value(10**6)
    paths = [p for p in edge_run.ons[0].paths if p.parallel][-1]
    threads = list(paths.threads)
    by_edge = [p for p in edge_run.ons[0].box.phases if p.parallel][-1]
    by_point = [p for p in point_run.ons[0].box.phases if p.parallel][-1]
    assert by_point.thread_work == by_edge.thread_work
    assert by_point.steps >= max(map(len, threads))
    for start in range(0, len(threads), 256):
        members = threads[start:start + 256]
        seen = [0] * len(members)
        for step in point_steps(members):
            assert len({_shape_of(members[lane][j]) for lane, j in step}) == 1
            for lane, j in step:
                assert j == seen[lane]  # each thread's edges once, in order
                seen[lane] += 1
        assert seen == [len(path) for path in members]
