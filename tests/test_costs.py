"""One test per rule of Figs. 5, 6 and 9: the graph each rule builds (nodes, edges, weights).

Every program runs inside `letregion r in ...`, whose own graph is [u1] ⊕Δa(BSIZE) [u2 push] ⊕ c
⊕ [u3 pop]: with the default profile Δa(n) = 1, so the letregion adds 3 to the work (one
alloc-region edge and two unit ⊕ edges) and its push and pop nodes.
"""

from __future__ import annotations

import pytest
from conftest import edge_kinds, node_kinds, run

from graphs.costgraph import CostGraph, EdgeKind, InternedRecords, NodeKind, RecordField, Sub
from profiler.errors import EvaluationError
from profiler.regions import IntV, Region, _same_start, allocate, merge
from profiler.syntax import Span, World

LETREGION = 3  # Δa(BSIZE) + the two ⊕ edges around the body


def test_letregion_builds_push_and_pop_around_the_body():
    e = run("letregion r in 1 at r")
    assert edge_kinds(e) == {"alloc-region": 1, "seq": 2, "write": 1}
    assert node_kinds(e) == {"point": 2, "push": 1, "write": 1, "pop": 1}
    assert e.graph.work() == LETREGION + 1
    assert e.graph.span() == LETREGION + 1


def test_literal_is_one_write_edge():
    # i at ρ: [u1] ⊕δw [u2]
    e = run("letregion r in 7 at r")
    assert e.render_value() == "7"
    assert e.graph.work() - LETREGION == 1


def test_true_is_a_single_node():
    e = run("letregion r in True")
    assert e.graph.work() == LETREGION
    assert node_kinds(e)["point"] == 2  # the letregion's start and True's [u]


def test_pair_writes_after_both_components():
    # c1 ⊕ c2 ⊕δw [u]: two literal writes, one ⊕ edge, the pair's write
    e = run("letregion r in (1 at r, 2 at r) at r")
    assert e.graph.work() - LETREGION == 4
    assert edge_kinds(e)["write"] == 3


def test_fst_and_snd_read_the_pair():
    e = run("letregion r in snd ((1 at r, 2 at r) at r)")
    assert e.render_value() == "2"
    assert e.graph.work() - LETREGION == 5
    assert edge_kinds(e)["read"] == 1


def test_application_reads_the_closure_between_function_and_argument():
    # c1 ⊕δr c2 ⊕ c3: the closure's write, the read edge into the argument's write; x is ∅
    e = run("letregion r in (lambda x: int r [r]. x) (1 at r)")
    assert e.render_value() == "1"
    assert e.graph.work() - LETREGION == 3
    assert edge_kinds(e)["read"] == 1


def test_if_charges_one_branch_step():
    e = run("letregion r in if True then 1 at r else 2 at r")
    assert e.render_value() == "1"
    assert e.graph.work() - LETREGION == 2
    assert edge_kinds(e)["op"] == 1


def test_arithmetic_reads_both_operands_then_writes():
    # c1 ⊕ c2 ⊕δr [u1] ⊕δr [u2] ⊕δw [u3]
    e = run("letregion r in (3 at r) * (4 at r) at r")
    assert e.render_value() == "12"
    assert e.graph.work() - LETREGION == 1 + 1 + 1 + 3
    assert edge_kinds(e)["read"] == 2


def test_comparison_reads_without_writing():
    e = run("letregion r in (3 at r) < (4 at r)")
    assert e.render_value() == "True"
    assert edge_kinds(e) == {"alloc-region": 1, "seq": 3, "write": 2, "read": 2}


def test_parallel_pair_forks_and_joins():
    # (c1 ⊗ c2) ⊕δ [u1] ⊕δa [u2]: 4 fork/join edges, 2 writes, a merge, the pair's write
    e = run("letregion r in (1 at r) || (2 at r) at r")
    kinds = edge_kinds(e)
    assert kinds["fork"] == 2 and kinds["join"] == 2
    assert kinds["merge"] == 1 and kinds["write"] == 3
    assert e.graph.work() - LETREGION == 8
    # the span goes through one branch only
    assert e.graph.span() - LETREGION == 1 + 1 + 1 + 1 + 1


def test_vector_literal_writes_its_elements_in_sequence():
    e = run("letregion r in [1 at r, 2 at r, 3 at r] at r")
    assert e.render_value() == "[1, 2, 3]"
    assert e.graph.work() - LETREGION == 3 + 2 + 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_parmap_is_n_threads_under_a_tree_of_forks(n):
    # c_v ⊕δr (⊗_i c_i) ⊕δm [u1] ⊕δa [u2]. A thread `x + 1 at r`: x is ∅, so no ⊕ edge; the
    # literal's write, the reads of x and 1, the sum's write: 4 edges
    elements = ", ".join(f"{i} at r" for i in range(n))
    e = run(f"letregion r in parmap (lambda x: int r [r]. x + 1 at r) ([{elements}] at r) at r")
    assert e.render_value() == "[" + ", ".join(str(i + 1) for i in range(n)) + "]"
    vector = n + (n - 1) + 1
    threads = 4 * n
    forks = 4 * (n - 1)
    assert e.graph.work() - LETREGION == vector + 1 + threads + forks + 2
    assert edge_kinds(e).get("fork", 0) == 2 * (n - 1)


def test_iota_is_parallel_writes():
    e = run("letregion r in iota (4 at r) at r")
    assert e.render_value() == "[0, 1, 2, 3]"
    # count's write, its read into the fork, 4 writes, 4(4-1) fork/join, merge, vector write
    assert e.graph.work() - LETREGION == 1 + 1 + 4 + 12 + 1 + 1


def test_index_reads_the_index_and_the_vector():
    e = run("letregion r in let v = [5 at r, 6 at r] at r in v[1 at r]")
    assert e.render_value() == "6"
    # vector 4, ⊕ let, index literal 1, 2 reads
    assert e.graph.work() - LETREGION == 4 + 1 + 1 + 2


def test_reduce_has_logarithmic_levels():
    e = run("letregion r in reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p at r) "
            "(0 at r) (iota (8 at r) at r) at r")
    assert e.render_value() == "28"
    iota = 1 + 1 + 8 + 28 + 1 + 1
    # 7 combinations, each: pair write, read p (fst), read p (snd), ⊕, 2 reads, write = 7 edges,
    # plus the ⊕ between the pair and the body = 8
    combine = 7 * 8
    forks = 4 * (4 - 1) + 4 * (2 - 1)  # levels of 4, 2 and 1 combinations
    levels = 2 + 3  # ⊕ between the three levels, and each level's merge δm
    # zero's write, ⊕ to iota, ⊕ into the read of the vector, the read
    prefix = 1 + 1 + 1
    assert e.graph.work() - LETREGION == prefix + iota + combine + forks + levels + 1


def test_profile_charges_a_cost_centre():
    e = run('letregion r in profile "here" ((1 at r) + (2 at r) at r)')
    charged = [d for _, _, d in e.graph.graph.edges(data=True) if "here" in d["centres"]]
    assert len(charged) == 6 and sum(d["weight"] for d in charged) == 6


def test_on_is_one_device_box_edge():
    e = run("letregion r in on (1 at r) at r")
    boxes = [d for _, _, d in e.graph.graph.edges(data=True) if d["kind"].value == "device-box"]
    assert len(boxes) == 1
    info = boxes[0]["box"]
    assert info.transfer_in == 0  # r is empty when it is pushed
    assert info.kernel == 32  # one global write: 1 + l - 1 (dmm), l = 32
    assert info.transfer_out == 10000 + 1 / 4  # ω†β(1 word) = latency + words / bandwidth
    assert info.merge == 1
    assert e.graph.work() - LETREGION == info.total  # u1 is the letregion body's source


def test_expanding_a_region_costs_delta_a():
    # BSIZE = 2: the third word expands the region (ExpandW, Fig. 9)
    from dataclasses import replace

    from models.device_profile import AllocationParameters, DeviceProfile, RegionParameters

    profile = replace(DeviceProfile(), region=RegionParameters(bsize=2),
                      allocation=AllocationParameters(latency=5, per_word=1))
    e = run("letregion r in [1 at r, 2 at r, 3 at r] at r", profile=profile)
    expands = [d for _, _, d in e.graph.graph.edges(data=True) if d["kind"].value == "expand"]
    # the third literal grows the region by BSIZE = 2 (Δa = 5 + 2), the vector by 2 again
    assert [d["weight"] for d in expands] == [7, 7]


def test_gpu_region_full_is_an_error_in_strict_mode():
    from profiler.errors import EvaluationError

    with pytest.raises(EvaluationError, match="NoExpandWE|cannot grow"):
        run("letregion r in on (iota (100 at r) at r) at r", grow_gpu_regions=False)


# -- the paper's rules (graphs/semantics/options.py), where they differ ---------------------------


def paper(source: str, **options):
    from models.device_profile import PAPER_PROFILE

    return run(source, profile=PAPER_PROFILE, **options)


def test_paper_rules_move_ap_by_the_size_plus_one():
    # Fig. 3: R; v ↓ o@(ap + |v| + 1, ...): 1 + 1, 1 + 1 and the pair 2 + 1
    source = "letregion r in (1 at r, 2 at r) at r"
    assert [r.ap for r in run(source).regions.values()] == [4]
    assert [r.ap for r in paper(source).regions.values()] == [7]
    assert paper(source).graph.work() == run(source).graph.work()


def test_paper_rules_fix_writes_two_closures():
    # Fig. 5: clos(f, u, E[f ↦ (r, o)]) at (r, o), then u's closure: [u1] ⊕δ c, two writes
    source = "letregion r in fix f: (int r -> int r [r], r). lambda x: int r [r]. x at r"
    assert edge_kinds(run(source))["write"] == 1
    assert edge_kinds(paper(source))["write"] == 2
    assert paper(source).graph.work() - LETREGION == 2


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_paper_rules_parmap_applies_f_to_each_literal_element_in_its_thread(n):
    # Thread i is f e_i by the application rule: the closure's write, its read into e_i's
    # graph (the literal's write), ⊕ into the body (4 edges, as in the calibrated test above):
    # 8 edges. The literal is never allocated, so no n-edge chain before the fork: the span
    # is one thread's and the ⊗ tree's depth.
    elements = ", ".join(f"{i} at r" for i in range(n))
    source = f"letregion r in parmap (lambda x: int r [r]. x + 1 at r) ([{elements}] at r) at r"
    e = paper(source)
    assert e.render_value() == "[" + ", ".join(str(i + 1) for i in range(n)) + "]"
    forks = 4 * (n - 1)
    assert e.graph.work() - LETREGION == 8 * n + forks + 2
    depth = (n - 1).bit_length()
    assert e.graph.span() - LETREGION == 8 + 2 * depth + 2
    calibrated = run(source)
    assert calibrated.graph.span() - LETREGION >= 2 * n + 4  # the literal, element by element


def test_paper_rules_parmap_reads_a_named_function_per_thread():
    source = ("letregion r in let f = lambda x: int r [r]. x at r in "
              "parmap f (iota (3 at r) at r) at r")
    assert edge_kinds(paper(source))["read"] - edge_kinds(run(source))["read"] == 3 - 1


TWO_ONS = ("letregion r in let v = (1 at r, 2 at r) at r in "
           "(on (fst v + 1 at r) at r) || ({right}) at r")


def test_paper_rules_branches_start_from_the_same_configuration():
    # Fig. 6: both sides of || are evaluated from one table. Calibrated: the second `on` pushes
    # what the first one added (4 words, then 4 + 2); paper: both push the table at the fork
    # (7 words: 2 + 2 + 3). The second `on` allocates nothing, so its merge holds (Theorem 4.4).
    source = TWO_ONS.format(right="on v at r")
    assert [o.pushed_words for o in run(source).ons] == [4, 6]
    assert [o.pushed_words for o in paper(source).ons] == [7, 7]


@pytest.mark.parametrize("right", ["on (snd v + 1 at r) at r", "[5 at r] at r"])
def test_paper_rules_a_merge_whose_two_sides_grew_conflicts(right):
    # The second side allocates where its `on` (or the first side's, merged) puts words: both
    # sides of a merge grew from one ap, Def. 4.3 relocates nothing, Theorem 4.4 fails.
    source = TWO_ONS.format(right=right) if right.startswith("on") else (
        "letregion r in let v = (1 at r, 2 at r) at r in "
        f"({right}) || (on (fst v + 1 at r) at r) at r")
    run(source)  # the calibrated rules: one heap, no conflict
    with pytest.raises(EvaluationError, match="merge conflict") as info:
        paper(source)
    assert info.value.rule == "Theorem 4.4"


def test_paper_rules_fold_the_merge_into_delta_dagger():
    (on,) = paper("letregion r in on (1 at r) at r").ons
    assert on.info.merge == 0 and on.info.transfer_out == 10000 + 2 / 4
    assert on.info.kernel == 32  # Fig. 9: one global write, l


def binary_par_tree(graph: CostGraph, branches: list, weight: float) -> Sub | None:
    """⊗_i c_i made one binary ⊗ at a time, as `CostGraph.par_all` has to number it."""
    if len(branches) == 1:
        return branches[0]
    middle = len(branches) // 2
    return graph.par(binary_par_tree(graph, branches[:middle], weight),
                     binary_par_tree(graph, branches[middle:], weight), weight)


def graph_lists(graph: CostGraph) -> tuple:
    return (list(graph.node_kind), list(graph.node_space), list(graph.edge_source),
            list(graph.edge_target), list(graph.edge_weight), list(graph.edge_kind))


@pytest.mark.parametrize("count, empty", [(2, ()), (7, ()), (63, ()), (64, ()), (65, ()), (100, ()),
                                          (1000, ()), (4097, ()), (5, (0, 3)), (3, (2,)),
                                          (300, (0, 150, 299))])
def test_a_tree_of_forks_in_bulk_is_the_tree_of_binary_forks(count, empty):
    """par_all's tree, made by recursion below `WIDE_FORK_TREE` branches and with numpy from it,
    is the tree of binary ⊗s: the same nodes and edges, numbered alike."""
    made = []
    for bulk in (True, False):
        graph = CostGraph()
        branches = [None if i in empty else graph.step(None, i + 1, EdgeKind.WRITE, NodeKind.WRITE)
                    for i in range(count)]
        whole = graph.par_all(branches, 2) if bulk else binary_par_tree(graph, branches, 2)
        graph.finish(whole)
        graph.self_check()
        made.append((whole, graph_lists(graph)))
    assert made[0] == made[1]
    assert made[0][1][5].count(EdgeKind.FORK) == 2 * (count - 1)


@pytest.mark.parametrize("limit", [1, 3, 20])
def test_an_evaluation_without_its_heap_renders_its_value_the_same(limit):
    source = ("letregion r in let xs = parmap (lambda i: int r [r]. (i, i * 2 at r) at r) "
              "(iota 40 at r) at r in (xs, 7 at r) at r")
    e = run(source)
    pruned = e.without_heap(limit)
    assert pruned.render_value(limit) == e.render_value(limit)
    assert [(r.label, r.ap) for r in pruned.regions.values()] == [
        (r.label, r.ap) for r in e.regions.values()]
    assert sum(len(r.values) for r in pruned._heap_lookup.values()) < sum(
        len(r.values) for r in e._heap_lookup.values()) / 2
    assert pruned.graph is e.graph and pruned.ons is e.ons


def test_interned_records_give_back_the_very_objects_and_widen_past_256():
    records = InternedRecords(2)
    spans = [object() for _ in range(300)]
    for span in spans:
        records.append(NodeKind.READ, span)
    records.append(NodeKind.READ, spans[0])
    kinds, places = records.field(0), records.field(1)
    assert records.codes.typecode == "H" and len(records.fields[0]) == 300
    assert all(place is span for place, span in zip(places, spans + [spans[0]], strict=True))
    assert list(kinds) == [NodeKind.READ] * 301 and places[300] is spans[0]
    assert kinds.any() and not RecordField(InternedRecords(1), 0).any()


def test_interned_weights_keep_their_type_and_the_sign_of_a_zero():
    records = InternedRecords(2, number=0)
    weights = [1, 1.0, 0.0, -0.0, 2.5, 2.5 * 1, True, 1, float("nan")]
    for weight in weights:
        records.append(weight, EdgeKind.SEQ)
    read = list(records.field(0))
    assert [(type(w), str(w)) for w in read] == [(type(w), str(w)) for w in weights]
    assert len(records.fields[0]) == 7  # 1, 1.0, 0.0, -0.0, 2.5, True, nan
    column = records.field(0)
    column[0] = 3
    assert column[0] == 3 and type(column[0]) is int and records.field(1)[0] is EdgeKind.SEQ


def test_a_shared_gpu_copy_merges_back_into_the_same_table():
    cpu = Region(1, "r", 2, 64, 1, {0: IntV(5), 1: IntV(6)})
    gpu = cpu.copy_to(World.GPU, shared=True)
    assert gpu.values is cpu.values
    allocate(gpu, IntV(7), 64)
    merged = merge(cpu, gpu, Span("t.lg", 1, 1, 1, 2))
    assert merged.region.values is cpu.values and merged.new_words == 1
    assert merged.region.ap == 3 and cpu.copy_to(World.GPU).values is not cpu.values


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 64])
def test_a_merge_takes_the_gpu_table_where_it_begins_with_the_cpu_one(chunk):
    """The merge's prefix test (`_same_start`, a chunk at a time): the same object or an equal
    value at each place counts, a differing one anywhere does not, however the chunks fall."""
    values = [IntV(k) for k in range(8)]
    assert _same_start(values[:6], values, chunk) and _same_start([], values, chunk)
    assert _same_start(values, [IntV(k) for k in range(8)], chunk)  # equal, not the same
    for place in range(6):
        changed = values[:place] + [IntV(99)] + values[place + 1:]
        assert not _same_start(values[:6], changed, chunk)
    assert not _same_start(values, values[:5], chunk)  # the longer one ends first


@pytest.mark.parametrize("chunk", [3, 64, 2**18])
def test_true_at_is_the_nodes_and_edges_whose_value_is_true_in_order(chunk, monkeypatch):
    """`RecordField.true_at`, a chunk of nodes or edges at a time: those of a cost centre, of
    the indices given in their order, or of all in order."""
    monkeypatch.setattr("graphs.costgraph.CHUNK", chunk)
    graph = CostGraph()
    current = graph.node()
    for i in range(300):
        current = graph.step(current, 1, EdgeKind.OP, NodeKind.POINT,
                             centres=("a",) if i % 7 == 0 else ())
    graph.finish(current)
    order = graph.adjacency().order
    assert graph.edge_centres.true_at(order) == [e for e in order if graph.edge_centres[e]]
    assert graph.node_centres.true_at() == [u for u in range(graph.number_of_nodes())
                                            if graph.node_centres[u]]
    assert len(graph.node_centres.true_at()) == 43


def test_weights_past_a_doubles_range_are_summed_as_python_ints():
    """An int weight too large for a double: numpy's sums leave it to the loops, which keep the
    exact int (work, span), as `sum` would."""
    graph = CostGraph()
    current = graph.node()
    for weight in (1, 10**400, 2):
        current = graph.step(current, weight, EdgeKind.OP, NodeKind.POINT)
    graph.finish(current)
    assert graph.weight_totals([0] * len(graph.edge_weight.values)) is None
    assert graph.work() == 10**400 + 3 and type(graph.work()) is int
    assert graph.span() == 10**400 + 3
