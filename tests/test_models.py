"""GPU memory models (Fig. 9 and Nakano's DMM/UMM), conflict degrees, and space under schedules."""

from __future__ import annotations

import math

import pytest
from conftest import ROOT, run

from graphs.schedule import schedule
from models.base import AccessKind, MemoryAccess, Space
from models.device_profile import GpuParameters
from models.dmm import DmmGpu, conflict_degree
from models.gpu_paper import PaperGpu

GPU = GpuParameters()  # w = 32, 32 banks, l = 32
STRIDED = (ROOT / "examples" / "strided.lg").read_text()


def warp(stride: int, space: Space = Space.LOCAL, kind=AccessKind.READ) -> list[MemoryAccess]:
    return [MemoryAccess(kind, i * stride, space) for i in range(32)]


@pytest.mark.parametrize("stride", range(1, 34))
def test_dmm_local_step_costs_the_conflict_degree(stride):
    step = DmmGpu(GPU).warp_step(warp(stride), [])
    assert step.degree == math.gcd(stride, 32)
    assert step.cost == math.gcd(stride, 32) * GPU.local_latency


@pytest.mark.parametrize("stride", range(1, 34))
def test_paper_local_step_costs_two_on_any_conflict(stride):
    step = PaperGpu(GPU).warp_step(warp(stride), [])
    assert step.cost == (2 if math.gcd(stride, 32) > 1 else 1)
    # BankConfR charges every request after the first in a bank (Σ holds the first)
    assert step.conflicts == 32 - 32 // math.gcd(stride, 32)


def test_broadcast_is_not_a_conflict():
    accesses = [MemoryAccess(AccessKind.READ, 7, Space.LOCAL)] * 32
    for model in (DmmGpu(GPU), PaperGpu(GPU)):
        step = model.warp_step(accesses, [])
        assert step.cost == 1 and step.conflicts == 0 and step.broadcasts == 1


@pytest.mark.parametrize("stride, groups", [(1, 1), (2, 2), (4, 4), (32, 32), (0, 1)])
def test_umm_global_step_is_address_groups_plus_latency(stride, groups):
    step = DmmGpu(GPU).warp_step(warp(stride, Space.GLOBAL), [])
    assert step.address_groups == groups
    assert step.cost == groups + GPU.global_latency - 1


def test_paper_global_step_costs_l():
    step = PaperGpu(GPU).warp_step(warp(32, Space.GLOBAL), [])
    assert step.cost == GPU.global_latency and step.conflicts == 0


def test_dmm_work_group_pipelines_its_warps():
    model = DmmGpu(GPU)
    steps = [model.warp_step(warp(1, Space.GLOBAL), []) for _ in range(8)]
    assert model.group_step(steps) == 8 + GPU.global_latency - 1
    assert PaperGpu(GPU).group_step([PaperGpu(GPU).warp_step(warp(1, Space.GLOBAL), [])] * 8) \
        == GPU.global_latency


@pytest.mark.parametrize("overlap, expected", [(1, 10 * (8 + 31)), (4, 3 * (4 * 8 + 31)),
                                               (16, 1 * (16 * 8 + 31))])
def test_staging_loop_overlaps_u_iterations(overlap, expected):
    """256 threads (8 warps of 32) staging 2560 words: 10 iterations of the loop, in batches
    of u whose loads are in flight together, u·warps + l - 1 each (l = 32); the paper's l each."""
    from graphs.devicebox import staging_time

    p = GpuParameters(warp_width=32, global_latency=32.0, staging_overlap=overlap)
    assert staging_time(256, DmmGpu(p), p, 2560) == expected
    assert staging_time(256, PaperGpu(p), p, 2560) == 10 * 32
    assert staging_time(256, DmmGpu(p), p, 0) == 0


@pytest.mark.parametrize("items", [1, 4, 31, 32, 33, 100])
def test_a_kernel_smaller_than_a_work_group_stages_with_its_own_items(items):
    """The backend launches a kernel of fewer items than a work group as one group of exactly
    its items (models.opencl.runner.DeviceSession.global_size), so its staging loop takes
    ⌈words / items⌉ iterations; a larger kernel's groups, the last included, stage with a whole
    group's items. The paper's mode keeps a whole group's for every kernel."""
    from graphs.devicebox import Phase, phase_cost, staging_items, staging_time

    p = GpuParameters(warp_width=8, work_group_size=32, global_latency=32.0,
                      staging_overlap=1)
    words = 640
    stagers = items if items < 32 else 32
    assert staging_items(items, 32, DmmGpu(p)) == stagers
    assert staging_items(items, 32, PaperGpu(p)) == 32
    staged, plain = (phase_cost(Phase([[] for _ in range(items)], True, staged=s), DmmGpu(p), p)
                     for s in (words, 0))
    # the empty threads' groups all finish at once, so the kernel takes one group's staging
    assert staged.time - plain.time == staging_time(stagers, DmmGpu(p), p, words)
    iterations = math.ceil(words / stagers)
    assert staging_time(stagers, DmmGpu(p), p, words) == iterations * (
        math.ceil(stagers / 8) + 31)


def test_conflict_degree_counts_distinct_addresses():
    assert conflict_degree([0, 32, 64, 0], 32) == 3
    assert conflict_degree([], 32) == 0


@pytest.mark.parametrize("stride", range(1, 34))
@pytest.mark.parametrize("mode", ["dmm", "paper"])
def test_strided_example_conflicts(stride, mode):
    evaluation = run(STRIDED, {"n": 32, "s": stride}, gpu_mode=mode)
    (on,) = evaluation.ons
    degree = math.gcd(stride, 32)
    worst = max(phase.conflict_degree_max for phase in on.box.phases)
    assert worst == (degree if mode == "dmm" else (2 if degree > 1 else 1))
    # only the step reading table[i * s] conflicts: 32 threads, 32 / degree banks
    assert on.box.conflicts == 32 - 32 // degree
    assert evaluation.render_value(64) == "[" + ", ".join(str(i * stride + 1)
                                                          for i in range(32)) + "]"


SPACE = """
param n : int = 8
param m : int = 16
letregion r in
parmap (lambda i: int r [r].
          letregion t in
          let v = iota m at t in
          (length v) + i at r)
       (iota n at r) at r
"""


def test_breadth_first_space_grows_with_n_times_m_depth_first_with_n():
    """Each thread fills a temporary region of 2m + 2 words (m, m integers, the m-word vector,
    its length). Breadth-first runs every thread's allocation before any thread pops its region:
    Θ(n·m) words. Depth-first on P = 2 holds at most two temporaries: Θ(n + m), where the n is the
    output: 4 words per element (i, its slot in iota's vector, the result, its slot)."""
    m = 16
    peaks = {}
    for n in (4, 8, 16, 32):
        evaluation = run(SPACE, {"n": n, "m": m})
        for policy in ("1df", "bf"):
            peaks[policy, n] = schedule(evaluation.graph, 2, policy).peak_space
    for n in (4, 8, 16):
        assert peaks["1df", 2 * n] - peaks["1df", n] == 4 * n
        assert peaks["bf", 2 * n] - peaks["bf", n] >= (2 * m + 2) * n
    assert peaks["bf", 32] > 5 * peaks["1df", 32]
