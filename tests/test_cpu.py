"""models/cpu.py: the CPU world by operation class, beside the PRAM it leaves unchanged."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import pytest
import sympy as sp
from conftest import ROOT, run

from graphs.costgraph import EdgeKind
from graphs.semantics.options import EvaluationOptions
from graphs.symbolic_profile import symbolic_profile
from models.cpu import (
    CalibratedCpu,
    allocation_rate,
    at_units,
    busy_scale,
    by_class,
    contended_allocation,
    cpu_floor,
    cpu_model,
    launch_after,
)
from models.device_profile import (
    AllocationParameters,
    CpuParameters,
    DeviceProfile,
    GpuParameters,
    RegionParameters,
)
from models.opencl.predict import cpu_units, on_launches
from models.pram import Pram
from profiler.access import Pattern, SlotAccess
from profiler.checker import check_program
from profiler.parser import parse

CLASSES = CpuParameters(seconds_per_unit=1e-9, read_s=2.0, write_s=3.0, alloc_s=5.0, op_s=7.0,
                        task_s=44.0, launch_s=1000.0, contended_alloc_s=0.5, bytes_per_s=16.0,
                        processors=2)
# Growth priced as a write (models/opencl/predict.py's growth_as_write): the symbolic evaluator
# follows a loop that grows a region only where growing costs what a write costs.
BY_CLASS = DeviceProfile(units="seconds", cpu=CLASSES, gpu=GpuParameters(seconds_per_unit=1e-9),
                         allocation=AllocationParameters(latency=8.0, per_word=0.0),
                         region=RegionParameters(bsize=64, word_bytes=8))

# A lone dependent chain's step measured at half of what the classes price it at
# (2 reads + a step + an allocating write: 2·2 + 7 + 3 + 5 = 19).
SERIAL = replace(BY_CLASS, cpu=replace(CLASSES, serial_step_s=9.5))


NESTED = """\
param n : int = 3
letregion r in
parmap (lambda i: int r [r]. reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p) 0
                                    (parmap (lambda j: int r [r]. i * j) (iota n)))
       (iota n) at r
"""


def test_the_default_profile_keeps_the_pram_at_unit_cost():
    model = cpu_model(DeviceProfile())
    assert isinstance(model, Pram)
    assert (model.read(), model.write(), model.op(), model.fork()) == (1.0, 1.0, 1.0, 1.0)
    assert model.merge(False) == model.merge(True) == 1.0


def test_a_profile_in_seconds_without_the_classes_is_the_pram_in_seconds():
    profile = DeviceProfile(units="seconds", cpu=CpuParameters(read=2.0, merge=500.0,
                                                               seconds_per_unit=1e-9),
                            gpu=GpuParameters(seconds_per_unit=1e-9))
    model = cpu_model(profile)
    assert not by_class(profile) and isinstance(model, Pram)
    assert model.read() == pytest.approx(2e-9) and model.op() == model.fork() == 1e-9
    assert model.merge(False) == model.merge(True) == pytest.approx(5e-7)
    assert cpu_floor(profile, 10**9, 10**9) == 0.0


def test_each_edge_is_priced_by_its_class():
    model = cpu_model(BY_CLASS)
    assert isinstance(model, CalibratedCpu) and by_class(BY_CLASS)
    assert model.read() == 2.0
    assert model.write() == 8.0  # a store and the region's bump: every write of λG allocates
    assert model.op() == 7.0
    assert model.fork() == 11.0  # a ⊗'s four edges share a task's overhead
    assert model.merge(in_thread=False) == 1000.0  # a kernel of its own
    assert model.merge(in_thread=True) == 7.0  # a loop inside a thread


def test_the_classes_need_a_profile_in_seconds():
    assert not by_class(DeviceProfile(cpu=CLASSES))
    assert not CpuParameters(read_s=1.0, write_s=1.0).by_class


def test_the_floor_is_the_socket_bandwidth_or_the_contended_pointer():
    # 8-byte words at 16 bytes per second: half a second a word
    assert cpu_floor(BY_CLASS, 10, 4) == pytest.approx(5.0)
    assert cpu_floor(BY_CLASS, 2, 40) == pytest.approx(20.0)  # 40 bumps of 0.5 s one by one
    assert cpu_floor(BY_CLASS, 0, 0) == 0.0
    # one compute unit alone keeps the pointer's line: only the bandwidth bounds it
    assert cpu_floor(BY_CLASS, 2, 40, processors=1) == pytest.approx(1.0)


def test_the_contended_allocation_follows_the_units_that_allocate():
    cpu = CpuParameters(contended_alloc_s=64.0, contended_alloc_2_s=8.0, contended_alloc_4_s=16.0,
                        contended_alloc_8_s=32.0, processors=16)
    # measured at 2, 4, 8 and 16 units; between them log-linear in the units; held at the ends
    assert [contended_allocation(cpu, k) for k in (2, 4, 8, 16, 64)] == [8, 16, 32, 64, 64]
    assert contended_allocation(cpu, 6) == pytest.approx(16 + 16 * math.log2(1.5))
    # a profile measured at all units only (before the 2-, 4- and 8-unit microbenchmarks)
    assert contended_allocation(CpuParameters(contended_alloc_s=5.0, processors=16), 2) == 5.0
    assert contended_allocation(CpuParameters(), 4) == 0.0
    # the floor takes the value for the units of its stretch
    profile = replace(BY_CLASS, cpu=replace(CLASSES, contended_alloc_2_s=0.25, processors=4))
    assert cpu_floor(profile, 0, 40, processors=2) == pytest.approx(10.0)
    assert cpu_floor(profile, 0, 40, processors=4) == pytest.approx(20.0)


def test_the_floor_takes_each_kernel_on_its_own_units():
    """A kernel of one work group runs on one unit and pays `alloc_s` a bump; a wider one the
    contended rate at its units; the kernels one after another (covariance at 256 makes 480 k of
    its 530 k allocations in a kernel of 144 work items)."""
    profile = replace(BY_CLASS, cpu=replace(CLASSES, alloc_s=0.125, contended_alloc_2_s=0.25,
                                            processors=4))
    assert allocation_rate(profile.cpu, 1) == 0.125
    assert allocation_rate(profile.cpu, 2) == 0.25
    assert allocation_rate(profile.cpu, 4) == 0.5  # contended_alloc_s, at all 4 units
    kernels = [(1, 80), (2, 40), (4, 10)]
    assert cpu_floor(profile, 0, 130, processors=4, kernels=kernels) == pytest.approx(
        80 * 0.125 + 40 * 0.25 + 10 * 0.5)
    # without the kernels, every bump takes the rate of the widest kernel's units
    assert cpu_floor(profile, 0, 130, processors=4) == pytest.approx(130 * 0.5)
    # the socket's bandwidth still bounds it where that is larger
    assert cpu_floor(profile, 100, 130, processors=4, kernels=[(1, 2)]) == pytest.approx(50.0)


def test_an_on_body_runs_on_as_many_units_as_its_widest_kernel_has_work_groups():
    assert [cpu_units(16, threads) for threads in (1, 8, 256, 257, 4096, 10**6)] == [
        1, 1, 1, 2, 16, 16]


def test_a_top_level_form_merges_with_a_launch_and_a_nested_one_with_a_step():
    evaluation = run(NESTED, {"n": 3}, profile=BY_CLASS)
    graph = evaluation.graph
    merges = Counter(w for w, k in zip(graph.edge_weight, graph.edge_kind, strict=True)
                     if k is EdgeKind.MERGE)
    # the outer parmap and its iota are kernels; in each of the 3 threads, an iota, a parmap and
    # the reduction's ⌈log2 3⌉ = 2 levels are loops
    assert merges == {1000.0: 2, 7.0: 3 * 4}
    forks = [w for w, k in zip(graph.edge_weight, graph.edge_kind, strict=True)
             if k in (EdgeKind.FORK, EdgeKind.JOIN)]
    assert forks and set(forks) == {11.0}


# Serial code at half its classes' price, growth at a write's (serial or not, as the write is)
SERIAL_GROWING = replace(SERIAL, allocation=AllocationParameters(
    latency=cpu_model(SERIAL).write(), per_word=0.0))


@pytest.mark.parametrize("name", ["zipmul_cpu", "dc_sum", "matvec", "map_map", "normalize_inc"])
@pytest.mark.parametrize("classes", [BY_CLASS, SERIAL_GROWING], ids=["classes", "serial"])
def test_symbolic_work_and_span_equal_the_explicit_ones_by_class(name, classes):
    """The differential backbone, under a profile whose every class has its own weight, and one
    that also prices serial code at its own rate (`serial_scale`)."""
    source = (ROOT / "examples" / f"{name}.lg").read_text()
    checked = check_program(parse(source, f"{name}.lg"))
    options = EvaluationOptions(profile=classes)
    profile = symbolic_profile(checked, options)
    for n in (1, 2, 5, 8, 40):
        params = {p.name: n for p in checked.program.params}
        evaluation = run(source, params, profile=classes)
        numbers = profile.at(params)
        assert numbers["work"] == pytest.approx(evaluation.graph.work())
        assert numbers["span"] == pytest.approx(evaluation.graph.span())


def test_serial_code_is_priced_at_the_measured_chain_rate():
    """Outside every parallel form's threads a read, a write and a step cost `serial_scale`
    times their class (a dependent chain alone on one compute unit); inside them, their class.
    The PRAM and a profile that did not measure the chain keep one price for both."""
    assert cpu_model(SERIAL).serial_scale() == pytest.approx(0.5)
    assert cpu_model(BY_CLASS).serial_scale() == cpu_model(DeviceProfile()).serial_scale() == 1.0
    graph = run(NESTED, {"n": 3}, profile=SERIAL).graph
    weights: dict[EdgeKind, set[float]] = {}
    for w, k in zip(graph.edge_weight, graph.edge_kind, strict=True):
        weights.setdefault(k, set()).add(w)
    # the threads' reads (2) and writes (8); the top level's reads of the vectors it maps (1)
    assert weights[EdgeKind.READ] == {1.0, 2.0}
    assert 8.0 in weights[EdgeKind.WRITE] and weights[EdgeKind.WRITE] <= {4.0, 8.0}
    # forks are inside parallel forms and launches are not a chain's steps: both unscaled
    assert weights[EdgeKind.FORK] == {11.0}
    assert {1000.0, 7.0} == {w for w, k in zip(graph.edge_weight, graph.edge_kind, strict=True)
                             if k is EdgeKind.MERGE}


LAUNCHES = replace(CLASSES, launch_s=20.0, launch_after_16_s=22.0, launch_after_19_s=30.0,
                   launch_after_22_s=38.0)


def test_a_launch_after_a_large_copy_is_cold():
    """launch_after: the launches measured after 2^10 (launch_s), 2^16, 2^19 and 2^22 words
    copied in, linear in log2 of the words between them and held at both ends; launch_s alone
    where the others were not measured."""
    assert launch_after(LAUNCHES, 0) == launch_after(LAUNCHES, 1024) == 20.0
    assert launch_after(LAUNCHES, 2**13) == pytest.approx(21.0)
    assert launch_after(LAUNCHES, 2**19) == pytest.approx(30.0)
    assert launch_after(LAUNCHES, 2**21) == pytest.approx(30.0 + 8.0 * 2 / 3)
    assert launch_after(LAUNCHES, 2**30) == 38.0
    assert launch_after(CLASSES, 2**30) == CLASSES.launch_s


def test_an_on_pays_each_kernels_launch_after_its_inputs_moved_in():
    """on_launches: a one-work-item kernel's whole launch (the graph has no δm for it), and for
    a parallel step what its launch costs beyond the δm its merge already charges."""
    assert on_launches(LAUNCHES, (1, 2), 2**22) == pytest.approx(38.0 + 2 * (38.0 - 20.0))
    assert on_launches(LAUNCHES, (0, 3), 100) == 0.0  # warm: the graph's δm is the launch
    assert on_launches(LAUNCHES, (1, 0), 100) == 20.0


# The map step per unit measured at 1, 2, 4 and 8 of 16 busy units and at all of them: a unit
# alone runs it at 0.6 of its all-units cost (models/cpu.py's `busy_scale`).
UNITS = replace(SERIAL, cpu=replace(SERIAL.cpu, processors=16, unit_step_1_s=6.0,
                                    unit_step_2_s=6.0, unit_step_4_s=7.0, unit_step_8_s=8.0,
                                    unit_step_all_s=10.0))


@pytest.mark.parametrize("units, scale", [(1, 0.6), (2, 0.6), (3, 0.6 + 0.1 * math.log2(1.5)),
                                          (4, 0.7), (8, 0.8), (16, 1.0), (12, 0.8 + 0.2 *
                                                                         math.log2(1.5)),
                                          (64, 1.0)])
def test_the_busy_scale_follows_the_units_running_a_part(units, scale):
    assert busy_scale(UNITS.cpu, units) == pytest.approx(scale)
    # unmeasured (every profile before 2026-11-27): 1, and the profile as it is
    assert busy_scale(SERIAL.cpu, units) == 1.0
    assert at_units(SERIAL, units) is SERIAL
    assert at_units(DeviceProfile(), units) == DeviceProfile()


def test_a_part_on_few_units_prices_its_threads_lower_and_its_serial_code_the_same():
    """On one busy unit of 16 a thread's reads, writes and steps cost 0.6 of their all-units
    price; serial code keeps the measured chain's price (its scale moves the other way), and a
    launch, the contended pointer and the socket's bandwidth are their own measurements."""
    lone = at_units(UNITS, 1)
    assert lone.cpu.read_s == pytest.approx(0.6 * UNITS.cpu.read_s)
    assert lone.cpu.op_s == pytest.approx(0.6 * UNITS.cpu.op_s)
    assert lone.cpu.task_s == pytest.approx(0.6 * UNITS.cpu.task_s)
    assert (lone.cpu.launch_s, lone.cpu.contended_alloc_s, lone.cpu.bytes_per_s) == (
        UNITS.cpu.launch_s, UNITS.cpu.contended_alloc_s, UNITS.cpu.bytes_per_s)
    assert at_units(UNITS, 16) is UNITS

    def reads(profile) -> list[float]:
        graph = run(NESTED, {"n": 3}, profile=profile).graph
        return sorted({w for w, k in zip(graph.edge_weight, graph.edge_kind, strict=True)
                       if k is EdgeKind.READ})

    # the threads' reads 2 -> 1.2; the top level's reads of the vectors it maps stay 1
    assert reads(UNITS) == [1.0, 2.0]
    assert reads(lone) == pytest.approx([1.0, 1.2])


# Slot reads by access pattern: a line's stride 11, a cached line 1 (a stride-1 read 2)
PATTERNS = replace(BY_CLASS, cpu=replace(CLASSES, read_stride_s=11.0, read_cached_s=1.0))

COLUMNS = """\
param n : int = 3
letregion r in
let m = parmap (lambda t: int r [r]. t + 1) (iota (n * n)) at r in
parmap (lambda i: int r [r]. reduce (lambda p: ((int r, int r), r) [r]. fst p + snd p) 0
                                    (parmap (lambda j: int r [r]. m[i] + m[i * n + j]
                                                                 + m[j * n + i]
                                                                 + m[j * j]) (iota n)))
       (iota n) at r
"""


N = sp.Symbol("n", positive=True, integer=True)


@pytest.mark.parametrize("access, n, price", [
    (SlotAccess(Pattern.REREAD), 4, 1.0),
    (SlotAccess(Pattern.WALK, sp.Integer(1)), 4, 2.0),
    (SlotAccess(Pattern.WALK, sp.Integer(4)), 4, 2.0 + 9.0 * 3 / 7),
    (SlotAccess(Pattern.WALK, N + 1), 2, 2.0 + 9.0 * 2 / 7),  # a diagonal, 3 words
    (SlotAccess(Pattern.WALK, N + 1), 64, 11.0),
    (SlotAccess(Pattern.WALK, N - 2), 2, 1.0),  # at n = 2 the same slot again
    (SlotAccess(Pattern.RANDOM), 4, 11.0),
    (SlotAccess(Pattern.WALK, N, True), 64, (11.0 + 7 * 1.0) / 8),
    (SlotAccess(Pattern.WALK, N, True), 4, 2.0 + 9.0 * 3 / 7),  # less than a line: no sharing
    (SlotAccess(Pattern.UNKNOWN), 4, 2.0),
])
def test_a_slot_read_is_priced_by_its_access_pattern(access, n, price):
    model = cpu_model(PATTERNS)
    assert model.slot_read(access, {"n": n}) == pytest.approx(price)
    # the same rule as an expression in n, where n is a symbol
    assert float(sp.sympify(model.slot_read(access, {"n": N})).subs(N, n)) == pytest.approx(price)
    # "uniform", or a profile that did not measure the strided and cached reads: a read
    uniform = replace(PATTERNS, cpu=replace(PATTERNS.cpu, reads="uniform"))
    for profile in (uniform, BY_CLASS, DeviceProfile()):
        other = cpu_model(profile)
        assert other.slot_read(access, {"n": n}) == other.read()


def test_the_evaluators_charge_each_sites_slot_read_its_pattern():
    """At n = 8: m[i] (re-read in the loop over j), m[i n + j] (a row), m[j n + i] (a column,
    a line an iteration, its lines shared with the next i), m[j j] (not affine: random): the slot
    reads 1, 2, 2.25 and 11, n² of each; the other reads (the index, the elements, the top
    level's) 2. The symbolic profile prices them alike at every n, the column's stride n
    included (below a line at n < 8)."""
    graph = run(COLUMNS, {"n": 8}, profile=PATTERNS).graph
    reads = Counter(w for w, k in zip(graph.edge_weight, graph.edge_kind, strict=True)
                    if k is EdgeKind.READ)
    assert {w: reads[w] for w in (1.0, 2.25, 11.0)} == {1.0: 64, 2.25: 64, 11.0: 64}
    uniform = run(COLUMNS, {"n": 8}, profile=BY_CLASS).graph
    assert uniform.work() - graph.work() == pytest.approx(64 * (2 - 1) + 64 * (2 - 2.25)
                                                          + 64 * (2 - 11))
    checked = check_program(parse(COLUMNS, "columns.lg"))
    profile = symbolic_profile(checked, EvaluationOptions(profile=PATTERNS))
    for n in (1, 3, 8, 9):
        explicit = run(COLUMNS, {"n": n}, profile=PATTERNS).graph
        assert profile.at({"n": n})["work"] == pytest.approx(explicit.work())
        assert profile.at({"n": n})["span"] == pytest.approx(explicit.span())


def test_the_busy_scale_scales_the_strided_and_cached_reads_too():
    profile = replace(UNITS, cpu=replace(UNITS.cpu, read_stride_s=11.0, read_cached_s=1.0))
    lone = at_units(profile, 1)
    assert (lone.cpu.read_stride_s, lone.cpu.read_cached_s) == pytest.approx((6.6, 0.6))
