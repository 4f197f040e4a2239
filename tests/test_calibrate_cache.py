"""The memory-hierarchy microbenchmarks' fits (models/opencl/calibrate_cache.py), on hand-made
curves, and the microbenchmarks themselves on PoCL."""

import numpy as np
import pytest

from models.opencl.calibrate_cache import (
    LINE_WORDS,
    chase_cycle,
    fit_line_time,
    hierarchy_to_json,
    read_levels,
)

# The H200's chase curve, 2026-11-26 (bytes, seconds per hop), abridged.
H200 = [(8192, 23.3e-9), (16384, 25.1e-9), (32768, 29.2e-9), (65536, 36.9e-9),
        (131072, 52.2e-9), (262144, 125.3e-9), (524288, 147.1e-9), (4194304, 147.4e-9),
        (16777216, 146.7e-9), (33554432, 220.7e-9), (67108864, 327.1e-9),
        (268435456, 337.1e-9), (1073741824, 340.4e-9)]


def test_levels_of_the_h200_chase():
    levels = read_levels(H200)
    assert levels["l1_latency"] == 23.3e-9 and levels["dram_latency"] == 340.4e-9
    assert levels["l2_latency"] == pytest.approx(147.1e-9)
    # 128 KiB read at 52 ns: (147.1 - 52.2) / (147.1 - 23.3) of it hit, about 100 KB
    assert levels["l1_bytes"] == int((147.1 - 52.2) / (147.1 - 23.3) * 131072)
    # 32 MiB at 221 ns: (340.4 - 220.7) / (340.4 - 147.1) hit
    assert levels["l2_bytes"] == int((340.4 - 220.7) / (340.4 - 147.1) * 33554432)


def test_levels_never_make_a_farther_level_faster():
    levels = read_levels([(1024, 5e-9), (2048, 50e-9), (4096, 40e-9), (8192, 45e-9)])
    assert levels["l1_latency"] <= levels["l2_latency"] <= levels["dram_latency"]


def test_a_chase_visits_every_line_once_in_one_cycle():
    words = 64 * LINE_WORDS
    nxt = chase_cycle(words)
    seen, p = set(), 0
    for _ in range(64):
        assert p % LINE_WORDS == 0 and p not in seen
        seen.add(p)
        p = int(nxt[p])
    assert p == 0 and len(seen) == 64


def test_line_time_is_the_slope_in_lines():
    warps, reps = 8, 100
    points = [(lines, 1e-6 + 0.5e-9 * lines * warps * reps) for lines in (2, 4, 8, 16, 32)]
    assert fit_line_time(points, warps, reps) == pytest.approx(0.5e-9)
    assert fit_line_time(points[:1], warps, reps) == 0.0


def test_the_microbenchmarks_run_on_pocl():
    from models.opencl.calibrate_cache import measure_hierarchy
    from models.opencl.runner import DeviceSession, select_device

    session = DeviceSession(select_device("pocl"))
    result = measure_hierarchy(session, quick=True, max_bytes=1 << 22)
    data = hierarchy_to_json(result)
    # the allocation pointers' place, as the session chose it (a CPU device: the first, unmeasured)
    assert (result.pointer_place, result.pointer_place_s) == session.pointer_place() == (0, 0.0)
    assert (data["pointer_place"], data["pointer_place_s"], data["slowest_place_s"]) == (0, 0.0, 0.0)
    assert len(result.chase) >= 3 and all(t >= 0 for _, t in result.chase)
    assert result.atomic_latency > 0 and result.op_latency > 0 and result.l2_bytes_per_s > 0
    assert result.alloc_latency > 0 and data["alloc_latency_s"] == result.alloc_latency
    assert result.local_latency > 0 and data["local_latency_s"] == result.local_latency
    assert result.group_alloc_latency > 0 and data["group_alloc_latency_s"] > 0
    # by compute unit: one figure per unit, each a real chain's
    units = session.info.compute_units
    assert len(result.alloc_units) == len(result.group_alloc_units) == units
    assert all(t > 0 for t in result.alloc_units) and data["alloc_units_s"] == result.alloc_units
    assert [c for c, _ in result.bump] == [32, 256, 4096, 65536]
    assert np.isfinite(result.line_time) and data["levels"]["l1_latency"] > 0
    # --quick's page walks: heaps of 64 KiB, 2 MiB and 16 MiB, each checked and at least 0
    assert [b for b, _ in result.walks] == [1 << 16, 1 << 21, 1 << 24]
    assert all(t >= 0 for _, t in result.walks) and data["walks"][0] == [1 << 16,
                                                                         result.walks[0][1]]


def test_the_lone_and_the_work_group_allocation_are_calibrated_apart():
    from models.device_profile import GpuParameters
    from models.opencl.calibrate import CACHE_UNIT, cache_parameters
    from models.opencl.calibrate_cache import Hierarchy

    hierarchy = Hierarchy(chase=H200, atomic_latency=145e-9, group_alloc_latency=355e-9,
                          bump=[(1 << 20, 0.024e-9)])
    cache, fits = cache_parameters(GpuParameters(), hierarchy)
    assert cache.atomic_latency * CACHE_UNIT == pytest.approx(145e-9)
    assert cache.warp_atomic_latency * CACHE_UNIT == pytest.approx(355e-9)
    assert any(f.parameters.get("group_alloc_s") == 355e-9 for f in fits)
    lone = cache_parameters(GpuParameters(), Hierarchy(chase=H200, atomic_latency=145e-9))[0]
    assert lone.atomic_latency * CACHE_UNIT == pytest.approx(145e-9)
    assert lone.warp_atomic_latency == 0.0  # not measured: every write step as one lane's
    # Where the generated code's own allocation was timed on one thread, a lane's write step costs
    # that (the H200, 2026-11-27: 296 ns, the atomic inside it 145 ns).
    generated = cache_parameters(GpuParameters(), Hierarchy(chase=H200, atomic_latency=145e-9,
                                                            alloc_latency=296e-9))[0]
    assert generated.atomic_latency * CACHE_UNIT == pytest.approx(296e-9)
    # Staged words: the LD macro's measured read where there is one (the H200: 58 ns), else the
    # L1's latency.
    assert lone.local_latency * CACHE_UNIT == pytest.approx(23.3e-9)
    staged = cache_parameters(GpuParameters(), Hierarchy(chase=H200, local_latency=58.3e-9))[0]
    assert staged.local_latency * CACHE_UNIT == pytest.approx(58.3e-9)


# One thread's allocation chain run by each of an H200's 132 units in turn, group k of a kernel
# of 132 (2026-11-29, card GPU-757663ba, benchmarks/gpu_alloc_sm_probe.py, its first process),
# in ns: 70 near, 62 far.
H200_UNITS = [ns * 1e-9 for ns in [
    320, 321, 216, 211, 321, 321, 212, 214, 332, 334, 340, 339, 329, 331, 337, 336,
    216, 216, 213, 213, 218, 219, 213, 213, 210, 212, 215, 215, 207, 208, 213, 213,
    328, 328, 333, 332, 338, 339, 326, 325, 327, 327, 336, 337, 323, 323, 334, 333,
    229, 229, 231, 230, 237, 237, 223, 223, 229, 229, 235, 234, 225, 227, 232, 231,
    216, 216, 213, 216, 218, 219, 213, 213, 210, 212, 216, 218, 211, 211, 208, 208,
    319, 318, 320, 320, 327, 326, 315, 315, 318, 318, 323, 324, 314, 314, 315, 314,
    315, 315, 321, 321, 325, 324, 312, 313, 320, 318, 321, 322, 311, 311, 317, 316,
    320, 319, 228, 229, 232, 233, 237, 238, 227, 226, 230, 230, 234, 235, 223, 224,
    229, 227, 231, 233,
]]


def test_units_split_into_near_and_far_at_the_widest_gap():
    from models.opencl.calibrate_cache import near_far

    near, far, share = near_far(H200_UNITS)
    assert (len(H200_UNITS), share) == (132, pytest.approx(70 / 132))
    assert near == pytest.approx(219e-9) and far == pytest.approx(321.5e-9)
    # one cluster (steps under 20%): its median for both, every unit near
    assert near_far([200e-9, 205e-9, 210e-9]) == (205e-9, 205e-9, 1.0)
    assert near_far([]) == (0.0, 0.0, 0.0)


def test_the_near_and_far_allocation_reach_the_profile():
    from models.opencl.calibrate import CACHE_UNIT, cache_parameters
    from models.opencl.calibrate_cache import Hierarchy

    hierarchy = Hierarchy(chase=H200, atomic_latency=255e-9, alloc_latency=316e-9,
                          group_alloc_latency=340e-9, alloc_units=H200_UNITS,
                          group_alloc_units=[230e-9] * 70 + [337e-9] * 62)
    from models.device_profile import GpuParameters
    cache, fits = cache_parameters(GpuParameters(), hierarchy)
    assert cache.atomic_latency * CACHE_UNIT == pytest.approx(321.5e-9)
    # near: not floored by the bare atomic, which one (far) unit timed
    assert cache.atomic_latency_near * CACHE_UNIT == pytest.approx(219e-9)
    assert cache.warp_atomic_latency * CACHE_UNIT == pytest.approx(337e-9)
    assert cache.warp_atomic_latency_near * CACHE_UNIT == pytest.approx(230e-9)
    assert cache.near_unit_share == pytest.approx(70 / 132)
    (latencies,) = [f for f in fits if "alloc_near_s" in f.parameters]
    assert latencies.parameters["alloc_s"] == 316e-9  # the session's own draw, reported
    # every unit's figure in the report, beside the figure it counts in
    (by_unit,) = [f for f in fits if f.name.startswith("one thread's allocation by compute unit")]
    assert [x for x, _, _ in by_unit.points] == list(range(132))
    assert by_unit.points[0][1:] == (320e-9, pytest.approx(321.5e-9))
    assert by_unit.points[2][1:] == (216e-9, pytest.approx(219e-9))
    # not measured by unit: the session's draws, one figure for every unit
    lone = cache_parameters(GpuParameters(), Hierarchy(chase=H200, atomic_latency=145e-9,
                                                       alloc_latency=296e-9))[0]
    assert (lone.atomic_latency_near, lone.near_unit_share) == (0.0, 0.0)
    assert lone.atomic_latency * CACHE_UNIT == pytest.approx(296e-9)


# The staging loop on an H200, one work group of 256 per compute unit, 2026-11-27 09:13 UTC
# (card GPU-7a5394f9, benchmarks/calibrate_staging.py): (iterations, kernel seconds).
H200_STAGING = [(1, 7.008e-6), (2, 6.720e-6), (4, 7.328e-6), (8, 7.776e-6), (16, 9.376e-6),
                (23, 11.33e-6)]


def test_the_staging_overlap_is_fitted_in_each_modes_own_latency():
    """u belongs to the latency it was fitted with. Each further iteration took about 190 ns: in
    the cache mode (l = the L2's 147 ns) that is one iteration at a time, u = 1; in the DMM mode
    (l = 32 units of 9.4 ns, 302 ns) two at a time. The cache mode once took the DMM's u and
    predicted staging twice as fast as the loop ran."""
    from dataclasses import replace

    from models.device_profile import GpuParameters
    from models.opencl.calibrate import fit_staging

    cache = GpuParameters(mode="cache", seconds_per_unit=1e-9, global_latency=147.2,
                          warp_width=32, work_group_size=256)
    dmm = replace(cache, mode="dmm", seconds_per_unit=9.44e-9, global_latency=32.0)
    overlap, fit = fit_staging(cache, 256, H200_STAGING)
    assert overlap == 1 and fit.mean_abs_pct_error < 5
    # The fitted line: 22 further iterations of 8 warps' loads at one latency each.
    assert fit.points[-1][2] == pytest.approx(7.008e-6 + 22 * (8 + 147.2 - 1) * 1e-9)
    assert fit_staging(dmm, 256, H200_STAGING)[0] == 2


def test_page_walks_fill_the_profile_and_hold_past_the_last_heap_measured():
    from models.device_profile import WALK_BYTES, GpuParameters
    from models.opencl.calibrate import CACHE_UNIT, cache_parameters
    from models.opencl.calibrate_cache import Hierarchy

    walks = [(1 << 16, 0.2e-6), (1 << 21, 1.0e-6), (1 << 24, 3.0e-6)]  # as --quick measures
    hierarchy = Hierarchy(chase=H200, atomic_latency=145e-9, bump=[(1 << 20, 0.024e-9)],
                          walks=walks)
    cache, fits = cache_parameters(GpuParameters(), hierarchy)
    got = [getattr(cache, f"walk_{k}") * CACHE_UNIT for k in WALK_BYTES]
    assert got == pytest.approx([0.2e-6, 1.0e-6] + [3.0e-6] * 5)
    fit = next(f for f in fits if f.name.startswith("page walks"))
    assert fit.parameters == {"walk_16_s": 0.2e-6, "walk_21_s": 1.0e-6, "walk_24_s": 3.0e-6}
    # none measured: no walk in the profile
    bare, _ = cache_parameters(GpuParameters(), Hierarchy(chase=H200, atomic_latency=145e-9))
    assert all(getattr(bare, f"walk_{k}") == 0.0 for k in WALK_BYTES)
