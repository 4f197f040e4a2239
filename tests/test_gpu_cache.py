"""The cache GPU mode (models/gpu_cache.py): sectors and lines, the per-group L1, forwarding,
allocation latency, the load unit's queue, the L2/DRAM split and the kernel's ceilings."""

import math
from dataclasses import replace

import pytest

from graphs.costgraph import EdgeKind
from graphs.devicebox import PathEdge, Phase, build_device_box
from models.base import AccessKind, MemoryAccess, Space
from models.device_profile import DeviceProfile, GpuParameters, RegionParameters
from models.gpu import gpu_model
from models.gpu_cache import CacheGpu, Traffic

READ, WRITE = AccessKind.READ, AccessKind.WRITE
P = GpuParameters(mode="cache", l1_latency=20.0, l2_latency=150.0, dram_latency=350.0,
                  atomic_latency=140.0, op=2.0, line_time=0.5, l1_bytes=1024, l2_bytes=4096,
                  threads_at_once=2048 * 4, work_group_size=64, warp_width=32)


def model(**changes) -> CacheGpu:
    from dataclasses import replace
    return CacheGpu(replace(P, **changes), word_bytes=8)


def reads(addresses):
    return [MemoryAccess(READ, a, Space.GLOBAL) for a in addresses]


def test_the_mode_is_chosen_by_name():
    profile = DeviceProfile(gpu=P)
    assert isinstance(gpu_model(profile), CacheGpu) and gpu_model(profile).name == "cache"
    assert gpu_model(profile).word_bytes == profile.region.word_bytes


def test_a_coalesced_read_is_two_lines_of_eight_sectors_from_the_l2():
    m = model()
    state = m.new_group()
    step = m.warp_step_in(state, 0, reads(range(32)), [])  # 32 words of 8 bytes: 256 bytes
    assert step.address_groups == 2 and step.local_cycles == 150.0 and step.cost == 150.0
    assert (state.traffic.l1_misses, state.traffic.footprint) == (8, 8)
    again = m.warp_step_in(state, 1, reads(range(32)), [])  # the same sectors: in the L1
    assert again.cost == 20.0 and state.traffic.l1_hits == 8


def test_a_lane_stride_of_sixteen_words_touches_a_line_per_lane():
    step = model().warp_step(reads(range(0, 32 * 16, 16)), [])
    assert step.address_groups == 32


def test_the_l1_forgets_the_least_recently_used_sector():
    m = model(l1_bytes=64)  # two sectors
    state = m.new_group()
    assert state.capacity == 2
    for address in (0, 4, 8):  # three sectors; the first is evicted
        m.warp_step_in(state, 0, reads([address]), [])
    assert m.warp_step_in(state, 0, reads([8]), []).cost == 20.0
    assert m.warp_step_in(state, 0, reads([0]), []).cost == 150.0


def test_groups_on_one_compute_unit_share_its_l1():
    m = model()  # 4 compute units of 2048 threads; groups of 64: at most 32 on a unit
    assert m.new_group(groups=4).capacity == 1024 // 32
    assert m.new_group(groups=8).capacity == 1024 // 32 // 2
    assert m.new_group(groups=10_000).capacity == 1


def test_a_write_waits_for_its_allocation_and_a_read_of_it_is_forwarded():
    m = model()
    state = m.new_group()
    write = m.warp_step_in(state, 0, [MemoryAccess(WRITE, 100, Space.GLOBAL)], [])
    assert write.cost == 140.0 and state.traffic.atomics == 1
    read = m.warp_step_in(state, 0, reads([100]), [])
    assert read.cost == 2.0 and state.traffic.forwarded == 1 and read.address_groups == 0
    # another warp did not store it: its read finds the line the store left in the L1
    assert m.warp_step_in(state, 1, reads([100]), []).cost == 20.0


def test_a_warp_whose_lanes_allocate_together_waits_the_warp_latency():
    writes = [MemoryAccess(WRITE, 100 + lane, Space.GLOBAL) for lane in range(32)]
    m = model(warp_atomic_latency=330.0)
    assert m.warp_step_in(m.new_group(), 0, writes, []).cost == 330.0
    # one lane alone allocates as the one-thread microbenchmark does
    assert m.warp_step_in(m.new_group(), 0, writes[:1], []).cost == 140.0
    # a profile without the measurement prices every write step as one lane's
    assert model().warp_step_in(model().new_group(), 0, writes, []).cost == 140.0


def test_an_allocation_costs_a_kernel_the_far_units_unless_all_its_units_are_near():
    """Units near the pointer's L2 partition allocate at the near figure, the others at the far
    one (P's 140); a kernel waits for its slowest group, so it pays far - (far - near) · s^t for
    t pairs of units (here 4 units of 2 048 threads: at most 2 pairs)."""
    from models.gpu_cache import allocation_latencies

    writes = [MemoryAccess(WRITE, 100 + lane, Space.GLOBAL) for lane in range(32)]
    m = model(atomic_latency_near=100.0, warp_atomic_latency=330.0,
              warp_atomic_latency_near=230.0, near_unit_share=0.5)
    # one or two groups: one pair of units, near half the time
    assert allocation_latencies(m.parameters, 1) == (120.0, 280.0)
    assert m.warp_step_in(m.new_group(2), 0, writes[:1], []).cost == 120.0
    assert m.warp_step_in(m.new_group(1), 0, writes, []).cost == 280.0
    # three or more groups: both pairs must be near (a quarter of the time)
    assert allocation_latencies(m.parameters, 3) == (130.0, 305.0)
    assert allocation_latencies(m.parameters, 64) == (130.0, 305.0)  # the device has 2 pairs
    # without a near figure (or its share) every unit is the profile's
    assert allocation_latencies(model().parameters, 1) == (140.0, 0.0)
    assert allocation_latencies(model(atomic_latency_near=100.0).parameters, 1) == (140.0, 0.0)


def test_a_kernel_s_groups_pay_what_their_process_measured_for_them():
    """Where validate timed each work group's one-thread allocation in its process, a kernel
    of g groups pays the largest figure of its groups 0 .. g - 1, near or far, and all of them
    past the measured; a step where several lanes allocate that times the profile's far ratio
    (330 / 140 here). Where only group 0's was kept, its pair pays it and the other pairs the
    expectation."""
    from models.gpu_cache import allocation_latencies

    m = model(atomic_latency_near=100.0, warp_atomic_latency=330.0,
              warp_atomic_latency_near=230.0, near_unit_share=0.5)
    ratio = 330.0 / 140.0
    drawn = replace(m.parameters, group_atomic_latencies=(105.0, 104.0, 101.0, 146.0))
    assert allocation_latencies(drawn, 1) == (105.0, 105.0 * ratio)
    assert allocation_latencies(drawn, 3) == (105.0, 105.0 * ratio)  # groups 0-2: all near
    assert allocation_latencies(drawn, 4) == allocation_latencies(drawn, 64) == (
        146.0, 146.0 * ratio)
    # group 0's figure alone (a report of runs 22-24): its pair as measured, the rest expected
    assert allocation_latencies(replace(drawn, group_atomic_latencies=(145.0,)), 2)[0] == 145.0
    assert allocation_latencies(replace(drawn, group_atomic_latencies=(104.0,)), 3)[0] == 120.0
    # a profile without near figures: the measured pair, the other pairs far
    plain = replace(model().parameters, group_atomic_latencies=(90.0,))
    assert allocation_latencies(plain, 1) == (90.0, 0.0)
    assert allocation_latencies(plain, 3) == (140.0, 0.0)
    # what the model charges a lone group's write steps follows
    writes = [MemoryAccess(WRITE, 100 + lane, Space.GLOBAL) for lane in range(32)]
    cache = CacheGpu(drawn, word_bytes=8)
    assert cache.warp_step_in(cache.new_group(1), 0, writes[:1], []).cost == 105.0
    assert cache.warp_step_in(cache.new_group(1), 0, writes, []).cost == 105.0 * ratio


def test_the_load_unit_queues_the_warps_lines_before_the_slowest_latency():
    m = model()
    state = m.new_group()
    steps = [m.warp_step_in(state, w, reads(range(w * 512, w * 512 + 512, 16)), [])
             for w in range(2)]
    assert [s.address_groups for s in steps] == [32, 32]
    assert m.group_step(steps) == pytest.approx(63 * 0.5 + 150.0)


def test_a_heap_larger_than_the_l2_misses_to_dram_in_proportion():
    m = model()
    assert m.with_heap(512).miss_latency == 150.0  # 4096 bytes: fits
    big = m.with_heap(2048)  # 16384 bytes: the L2 holds a quarter
    assert big.miss_latency == pytest.approx(0.25 * 150.0 + 0.75 * 350.0)


def test_the_kernel_takes_the_largest_of_latency_and_its_ceilings():
    m = model(seconds_per_unit=1e-9, dram_bytes_per_s=32e9, l2_bytes_per_s=64e9, atomic=0.5)
    traffic = Traffic(l1_misses=1000, stores=1000, atomics=100, footprint=4000)
    kernel = m.kernel_time(100.0, traffic)
    assert kernel.dram == pytest.approx(4000 * 32 / 32e9 / 1e-9)  # 4000 ns
    assert kernel.l2 == pytest.approx(2000 * 32 / 64e9 / 1e-9)  # 1000 ns
    assert kernel.atomics == 50.0
    assert kernel.time == kernel.dram and kernel.bound == "DRAM bandwidth"
    assert m.kernel_time(1e6, traffic).bound == "latency"


def test_every_warps_first_allocations_queue_behind_the_latency():
    """The atomics of each warp's first allocating step reach the pointer together at the
    kernel's start, so their queue adds to the latency (one allocation a thread: T(1) - T(0)
    grows as latency + k · atomic, docs/validation/alloc-burst-probe-nvidia-h200-2026-11-28.txt);
    later allocations spread out and only their whole queue is a ceiling, which its last
    allocation's wait follows (UMM: k + l - 1)."""
    m = model(seconds_per_unit=1e-9, atomic=0.5, atomic_latency=10.0)
    state = m.new_group()
    for warp in range(2):
        for step in range(3):  # three allocating steps each: the first is the burst's
            writes = [MemoryAccess(WRITE, 1000 * warp + 100 * step + lane, Space.GLOBAL)
                      for lane in range(32)]
            m.warp_step_in(state, warp, writes, [])
    traffic = state.traffic
    assert (traffic.atomics, traffic.first_atomics) == (192, 64)
    kernel = m.kernel_time(100.0, traffic)
    assert (kernel.burst, kernel.atomics, kernel.tail) == (32.0, 96.0, 10.0)
    assert kernel.time == 132.0 and kernel.bound == "latency"  # 100 + 32 over 96 + 10
    assert m.kernel_time(50.0, traffic).time == 106.0  # the whole queue, where it is longer
    assert m.kernel_time(50.0, traffic).bound == "atomics"
    assert m.kernel_time(50.0, Traffic()).time == 50.0  # no allocation: no queue, no wait
    scaled = Traffic()
    scaled.add(traffic, 3)  # three groups alike
    assert scaled.first_atomics == 192


def test_a_device_box_in_cache_mode_reports_its_traffic_and_bound():
    profile = DeviceProfile(gpu=P, region=RegionParameters(word_bytes=8))
    threads = [[PathEdge(EdgeKind.READ, 0.0, MemoryAccess(READ, t, Space.GLOBAL)),
                PathEdge(EdgeKind.READ, 0.0, MemoryAccess(READ, t, Space.GLOBAL))]
               for t in range(64)]
    box = build_device_box([Phase(threads, True)], gpu_model(profile), profile.gpu)
    phase = box.phases[0]
    # each step queues the 4 lines of the group's 2 warps; the first waits for the L2, the
    # second finds the sectors in the L1
    assert phase.time == pytest.approx(3 * 0.5 + 150.0 + 3 * 0.5 + 20.0)
    assert phase.traffic.l1_misses == 16 and phase.traffic.l1_hits == 16
    assert phase.bound == "latency" and phase.latency == phase.time


def test_an_on_in_cache_mode_notes_its_memory_traffic_and_bounds():
    from tests.conftest import run

    source = ("param n : int = 8\nletregion r in\nlet v = iota n at r in\n"
              "on parmap (lambda x: int r [r]. x + 1 at r) v at r")
    cached = run(source, {"n": 64}, gpu_mode="cache")
    note = next(n for n in cached.ons[0].info.notes if n.startswith("memory (cache model)"))
    # each of the 64 threads allocates the literal 1 and its result, then the result vector;
    # each reads back the literal it has just stored (forwarded)
    assert "allocations 129" in note and "reads forwarded from a store 64" in note
    assert "kernels bound: 1 by latency" in note
    assert not any(n.startswith("memory") for n in run(source, {"n": 64}).ons[0].info.notes)


def test_an_on_whose_allocations_were_charged_the_expectation_says_what_a_run_pays():
    """A kernel of one group (one pair of units) is charged the expectation over near and far
    units, (100 + 140) / 2; its `on` says what a run pays at either, and nothing where the
    process's own figures are known, where the profile has no near figures, or where every
    allocating kernel is charged within 1% of the far figure."""
    from tests.conftest import run

    source = ("param n : int = 8\nletregion r in\nlet v = iota n at r in\n"
              "on parmap (lambda x: int r [r]. x + 1 at r) v at r")
    profile = DeviceProfile(gpu=replace(P, atomic_latency_near=100.0, near_unit_share=0.5),
                            region=RegionParameters(word_bytes=8))

    def notes(profile, n=64):
        return [note for note in run(source, {"n": n}, gpu_mode="cache", profile=profile)
                .ons[0].info.notes if note.startswith("allocations")]

    assert notes(profile) == [
        "allocations (cache model): a step where one lane allocates is charged 120, the "
        "expectation over compute units near the allocation pointer (100) and far from it "
        "(140); a run pays near or far as its process drew its units, -17% to +17% on those "
        "steps (`hetprof validate` times its own process's)"]
    assert notes(profile.with_gpu(group_atomic_latencies=(100.0,))) == []
    assert notes(profile.with_gpu(near_unit_share=0.0)) == []
    # 4 096 items: the map's 64 groups over both pairs of units, charged far - 40 · 0.5², the
    # result vector's one-item step 120
    assert "charged 120 to 130" in notes(profile, 4096)[0]
    # a near share of 1%: 139.6 and 140, within 1% of far
    assert notes(profile.with_gpu(near_unit_share=0.01), 4096) == []


WALKS = {"walk_16": 10.0, "walk_21": 60.0, "walk_24": 90.0, "walk_26": 400.0, "walk_27": 900.0,
         "walk_28": 1300.0, "walk_30": 1700.0}


def test_page_walks_interpolate_in_log2_of_the_heap_and_hold_at_the_ends():
    from dataclasses import replace

    from models.gpu_cache import page_walk

    p = replace(P, **WALKS)
    assert page_walk(P, 1 << 20) == 0.0  # not measured: no walk
    assert page_walk(p, 0) == 0.0  # an empty heap: nothing to translate
    assert page_walk(p, 1) == page_walk(p, 1 << 16) == 10.0  # held below 2^16 bytes
    assert page_walk(p, 1 << 24) == 90.0 and page_walk(p, 1 << 27) == 900.0
    assert page_walk(p, 1 << 25) == pytest.approx(245.0)  # halfway from 2^24 to 2^26
    assert page_walk(p, 3 << 26) == pytest.approx(900.0 + 400.0 * (math.log2(3 << 26) - 27))
    assert page_walk(p, 1 << 40) == 1700.0  # held above 2^30
    assert model(**WALKS).with_heap(1 << 21).walk == pytest.approx(
        page_walk(p, 8 << 21))  # 8-byte words


def test_a_device_box_pays_its_heaps_page_walks_once_with_its_first_kernel():
    from dataclasses import replace

    from graphs.devicebox import phase_launches
    from models.gpu_cache import page_walk
    from tests.conftest import run

    source = ("param n : int = 8\nletregion r in\nlet v = iota n at r in\n"
              "on parmap (lambda x: int r [r]. x + 1 at r) (parmap (lambda x: int r [r]. "
              "x * 2 at r) v at r) at r")
    plain = DeviceProfile(gpu=P, region=RegionParameters(word_bytes=8))
    walked = DeviceProfile(gpu=replace(P, **WALKS), region=RegionParameters(word_bytes=8))
    for n in (1, 64, 5000):
        before = run(source, {"n": n}, gpu_mode="cache", profile=plain).ons[0]
        after = run(source, {"n": n}, gpu_mode="cache", profile=walked).ons[0]
        heap = 8 * (before.pushed_words + before.gpu_words)
        walk = page_walk(walked.gpu, heap)
        assert walk > 0
        assert after.info.kernel == pytest.approx(before.info.kernel + walk, rel=1e-12)
        phases = after.info.box.phases
        first = next(i for i, p in enumerate(phases) if phase_launches(p))
        assert [p.walk for p in phases] == [walk if i == first else 0.0
                                            for i in range(len(phases))]
        assert any(note.startswith(f"page walks after the copy of the heap ({heap:,} bytes)")
                   for note in after.info.notes)
        assert not any("page walks" in note for note in before.info.notes)
    # the paper's and the DMM's models charge no walk
    dmm = run(source, {"n": 64}, gpu_mode="dmm", profile=walked).ons[0]
    assert not any("page walks" in note for note in dmm.info.notes)
