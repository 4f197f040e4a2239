"""Microbenchmarks of the GPU memory hierarchy (issue 14): what the `cache` GPU mode
(models/gpu_cache.py) reads from a device profile.

Each measures one thing, on one thread where it is a latency (nothing else runs, so the time per
step is the latency itself) and on the whole device where it is a rate:
- pointer-chase latency at working sets from a few KiB to several times the last-level cache: a
  random cycle through one word per 128-byte line, so that every hop is a new line and no
  prefetcher can guess the next; the plateaus are the L1, L2 and DRAM latencies, and the points
  between two plateaus give the level's capacity (`_capacity`);
- the latency of an atomic add whose result the thread waits for, on one thread; of the
  generated code's own allocation (`ALLOC`: the atomic add, then the capacity check and the
  address, `ALLOC_CHAIN`) on one thread; and of an allocation step as a whole work group
  makes it: every item a chain of the generated code's own `ALLOC` and the store into the new
  cell (`GROUP_ALLOC`; the compiler aggregates a warp's atomic adds and hands the lanes their
  offsets, which one thread alone does not pay);
- the latency of reading a staged word through the generated code's `LD` macro (`LOCAL_LD`);
- the latency of reading back a word the thread has just stored (through a volatile pointer, so
  the compiler cannot forward the value);
- the latency of one dependent 64-bit integer multiply-add, and of a double one;
- L2 bandwidth: every thread reading, coalesced, a buffer that fits the L2, many times over;
- the rate of atomic adds on one address from the whole device (the allocation pointer that every
  thread of a generated kernel bumps), at several thread counts;
- address translation after a copy (`measure_page_walks`): a buffer of 2^k bytes filled and copied
  in as the backend's runner does it (from page-locked memory), then one warp reading 32 words
  spread evenly over it, twice; the first kernel's time less the second's is the page walks the
  copy left cold (on the H200 about 1-3 µs up to 256 MiB: benchmarks/gpu_walk_sequence_probe.py;
  from pageable memory 9-20 µs at 64-256 MiB, which the calibration measured until 2026-11-28).
Sector effects (lane strides 1..32) are the existing global-stride microbenchmark of
models/opencl/calibrate.py.

Calibration sees these microbenchmarks only, never the programs that `hetprof validate` checks.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from models.opencl.codegen import PRELUDE, ld_macro

LINE_WORDS = 16  # 128 bytes of 8-byte words
CHASE_HOPS = 4096
CHASE_DRAM_HOPS = 1 << 20  # 128 MiB of lines: more than any L2

GENERATED_EMPTY = """\
__kernel void generated_empty(__global long* restrict heap, __global const long* restrict bases,
                              __global const int* restrict caps, __global int* restrict aps,
                              __global int* restrict err, __global long* restrict slots,
                              const long n, const long out) {
    if (get_global_id(0) == 0 && n < 0) heap[out] = bases[0] + caps[0] + aps[0] + err[0];
    if (get_global_id(0) == 0 && n < 0) slots[0] = out;
}
"""
"""An empty kernel with the signature of every kernel hetprof generates
(models/opencl/codegen.py's COMMON and a size and result slot): a generated kernel's launch."""

CHASE = """\
__kernel void chase(__global const long* next, __global long* out, const int hops) {
    long p = 0;
    for (int h = 0; h < hops; h++) p = next[p];
    out[get_global_id(0)] = p;
}
"""

ATOMIC_CHAIN = """\
__kernel void atomic_chain(__global int* ap, __global long* out, const int hops, const int at) {
    int x = 0;
    for (int h = 0; h < hops; h++) x = atomic_add(&ap[at], (x & 1) + 1);
    out[get_global_id(0)] = x;
}
"""

ALLOC_CHAIN = PRELUDE + """
__kernel void alloc_chain(COMMON, const int hops, const int r) {
    long x = 0;
    for (int h = 0; h < hops; h++) x += ALLOC(r, 1 + (int)(x & 0));
    slots[0] = x;
}
"""
"""One thread's chain of the generated code's own allocation (PRELUDE's `ALLOC`: the atomic add,
then the capacity check against `caps` and the address from `bases`), each allocation's size
depending on the last address: what an allocation costs a warp step where one lane allocates.
On the H200 (2026-11-27) 296 ns, twice the bare atomic's 145 ns: the loads after the atomic
wait for it."""

LOCAL_LD = "\n" + ld_macro(0) + """__kernel void local_ld(__global long* restrict heap, __global long* restrict out,
                       const int hops, const int words) {
    __local long L0[LOCAL_WORDS];
    long lb0 = 0;
    int ls0 = min(words, LOCAL_WORDS);
    for (int w = get_local_id(0); w < ls0; w += get_local_size(0)) L0[w] = heap[lb0 + w];
    barrier(CLK_LOCAL_MEM_FENCE);
    long p = 0;
    for (int h = 0; h < hops; h++) p = LD0(p);
    out[get_global_id(0)] = p;
}
"""
"""A pointer chase (`chase_cycle`) through a region staged into local memory and read through the
generated code's `LD` macro (models/opencl/codegen.py's `local_macros`: the bounds check that
falls back to the heap), one thread: what a read of a staged word costs an `on local` body. On
the H200 (2026-11-27) 58 ns, where a chase read from local memory directly takes 14 ns and one
from the L1 21 ns (benchmarks/gpu_thread_chain_probe.py). LOCAL_WORDS is the device's."""
LOCAL_CHASE_WORDS = 1024  # 8 KiB: inside any device's local memory

GROUP_ALLOC = PRELUDE + """
__kernel void group_alloc(COMMON, const int reps, const int r) {
    long x = get_global_id(0);
    for (int k = 0; k < reps; k++) {
        long a = ALLOC(r, 1);
        heap[a] = x;  /* the store of the new value, as the generated code makes it */
        x = heap[a] + 1;
    }
    slots[get_global_id(0)] = x;
}
"""
"""One work group's allocation chain (`measure_group_allocation`)."""

ALLOC_AT = PRELUDE + """
__kernel void alloc_chain_at(COMMON, const int hops, const int r, const int who) {
    if (get_group_id(0) != who) return;
    long x = 0;
    for (int h = 0; h < hops; h++) x += ALLOC(r, 1 + (int)(x & 0));
    slots[0] = x;
}
"""
"""`ALLOC_CHAIN` run by the one work item of group `who` among a kernel's one-item groups, the
others returning at once: group `who` lands on its own compute unit
(`measure_allocation_by_unit`)."""

GROUP_ALLOC_AT = PRELUDE + """
__kernel void group_alloc_at(COMMON, const int reps, const int r, const int who) {
    if (get_group_id(0) != who) return;
    long x = get_local_id(0);
    for (int k = 0; k < reps; k++) {
        long a = ALLOC(r, 1);
        heap[a] = x;
        x = heap[a] + 1;
    }
    slots[get_local_id(0)] = x;
}
"""
"""`GROUP_ALLOC` run by work group `who` alone among a kernel's groups, the others returning at
once (`measure_group_allocation_by_unit`)."""

STORE_LOAD = """\
__kernel void store_load(__global long* cells, __global long* out, const int hops) {
    volatile __global long* v = cells;
    long x = 1;
    for (int h = 0; h < hops; h++) {
        v[(h * 16) & 4095] = x + h;
        x = v[(h * 16) & 4095];
    }
    out[get_global_id(0)] = x;
}
"""

STORE_LOAD_ALIAS = """\
__kernel void store_load_alias(__global long* cells, __global long* same, __global long* out,
                               const int hops) {
    long x = 1;
    for (int h = 0; h < hops; h++) {
        cells[(x * 16) & 4095] = x + h;
        x = same[(x * 16) & 4095];
    }
    out[get_global_id(0)] = x;
}
"""
"""Reading back a stored word through another pointer to the same buffer: the compiler cannot
forward the value, so the load goes to the cache (L1, if a store leaves the line there)."""

STORE_FRESH = """\
__kernel void store_fresh(__global long* cells, __global long* same, __global long* out,
                          const int hops) {
    long x = 1;
    for (int h = 0; h < hops; h++) {
        cells[h * 16] = x + h;
        x = same[h * 16];
    }
    out[get_global_id(0)] = x;
}
"""
"""The same, each hop at a line never read before: whether a store brings its line into the L1
(then the load hits it) or only writes through to the L2."""

OP_CHAIN = """\
__kernel void op_chain(__global long* out, const int hops) {
    long x = get_global_id(0) + 3;
    for (int h = 0; h < hops; h++) x = x * 3 + 1;
    out[get_global_id(0)] = x;
}
"""

FLOAT_CHAIN = """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void float_chain(__global double* out, const int hops) {
    double x = get_global_id(0) + 0.5;
    for (int h = 0; h < hops; h++) x = x * 0.999 + 0.25;
    out[get_global_id(0)] = x;
}
"""

L1_STRIDE = """\
__kernel void l1_stride(__global const long* a, __global long* out, const int stride,
                        const int reps) {
    int lane = get_local_id(0);
    long acc = 0;
    for (int r = 0; r < reps; r++) acc += a[(lane * stride + r * 8) & 2047];
    out[get_global_id(0)] = acc;
}
"""
"""Lane strides over 16 KiB (in the L1 after the first pass), one work group per compute unit,
independent loads: the time per line a compute unit's load unit takes (a warp's loads at lane
stride s touch min(32, 2s) lines of 128 bytes)."""
L1_STRIDES = (1, 2, 4, 8, 16, 32)

READ_SWEEP = """\
__kernel void read_sweep(__global const long* a, __global long* out, const long words,
                         const int passes) {
    long i = get_global_id(0);
    long stride = get_global_size(0);
    long acc = 0;
    for (int r = 0; r < passes; r++)
        for (long k = i; k < words; k += stride) acc += a[k];
    out[i] = acc;
}
"""

ATOMIC_BUMP = """\
__kernel void bump(__global int* ap, __global long* out, const int reps) {
    long acc = 0;
    for (int r = 0; r < reps; r++) acc += atomic_add(ap, 1);
    out[get_global_id(0)] = acc;
}
"""

ATOMIC_PLACES = 16  # words an atomic microbenchmark is run on, each in turn
PLACE_STRIDE = 1024  # entries (of 4 or 8 bytes) between two places: 4 or 8 KiB
"""A one-thread atomic's latency depends on the word's place: on the H200 (2026-11-27,
benchmarks/gpu_atomic_place_probe.py) 140-170 ns for about half of all addresses and 230-270 ns
for the rest (the L2's near and far halves, whose home an atomic must reach; a read is served
from a near copy and does not vary so). One place is a draw from the two: the calibration took
146 ns for the bare atomic and 310 ns for the generated code's ALLOC, and the suite's one-thread
kernels came out 0% or +40-58% by where the backend's allocation pointers happened to lie. The
bare atomic's microbenchmark runs on `ATOMIC_PLACES` words `PLACE_STRIDE` entries apart and
reports the mean. The allocations' microbenchmarks no longer do: the runner keeps its allocation
pointers at one place per process (models/opencl/runner.py's `DeviceSession.allocation_pointers`),
and they measure there (`runner_regions`)."""

CHASE_BYTES = [2**k for k in range(13, 31)]  # 8 KiB ... 1 GiB
QUICK_CHASE_BYTES = [2**k for k in (13, 15, 17, 19, 21, 23, 25, 27)]
BUMP_THREADS = [32, 256, 4096, 65536, 1 << 20]


@dataclass
class Hierarchy:
    """What the microbenchmarks measured, in seconds (and bytes, and bytes or atomics per
    second), with the raw points for the calibration report."""

    chase: list[tuple[int, float]] = field(default_factory=list)  # (working set bytes, s/hop)
    atomic_latency: float = 0.0
    alloc_latency: float = 0.0  # one thread's chain of the generated code's ALLOC
    pointer_place: int = 0  # where the runner keeps its allocation pointers (runner.py)
    pointer_place_s: float = 0.0  # one atomic there, as the session chose it (0: not measured)
    slowest_place_s: float = 0.0  # one atomic at the slowest of the session's places
    local_latency: float = 0.0  # a staged word read through the generated code's LD macro
    group_alloc_latency: float = 0.0  # an allocation step of one full work group, per item
    # the two above by compute unit (`measure_allocation_by_unit`, `..._group_...`)
    alloc_units: list[float] = field(default_factory=list)
    group_alloc_units: list[float] = field(default_factory=list)
    store_load_latency: float = 0.0
    store_load_alias_latency: float = 0.0
    store_fresh_latency: float = 0.0
    op_latency: float = 0.0
    float_op_latency: float = 0.0
    l2_bytes_per_s: float = 0.0
    bump: list[tuple[int, float]] = field(default_factory=list)  # (threads, s per atomic add)
    l1_strides: list[tuple[int, float]] = field(default_factory=list)  # (lines per warp load, s)
    line_time: float = 0.0  # seconds a compute unit's load unit takes per line
    launch: float = 0.0
    generated_launch: float = 0.0  # an empty kernel with the generated kernels' arguments
    walks: list[tuple[int, float]] = field(default_factory=list)  # (heap bytes, s of walks)

    def levels(self) -> dict[str, float]:
        """The L1, L2 and DRAM latencies and the L1 and L2 capacities read off the chase curve
        (`read_levels`)."""
        return read_levels(self.chase)


def read_levels(chase: list[tuple[int, float]]) -> dict[str, float]:
    """Latency plateaus of a pointer-chase curve: the smallest working set's latency is L1's,
    the largest's DRAM's; L2's is the median of the points between the two jumps. The two
    jumps are the two largest ratios between neighbouring points. Capacities: `_capacity`."""
    if len(chase) < 3:
        raise ValueError("a chase curve needs at least three working sets")
    sizes = [s for s, _ in chase]
    times = [max(t, 1e-12) for _, t in chase]  # a time below the launch's noise reads as 0
    ratios = [(times[k + 1] / times[k], k) for k in range(len(times) - 1)]
    jumps = sorted(k for _, k in sorted(ratios, reverse=True)[:2])
    l1 = min(times[:jumps[0] + 1])
    middle = times[jumps[0] + 1:jumps[1] + 1] or [times[jumps[0] + 1]]
    l2 = sorted(middle)[len(middle) // 2]
    dram = times[-1]
    l2, dram = max(l2, l1), max(dram, l2, l1)  # a farther level is never faster (noise aside)
    return {"l1_latency": l1, "l2_latency": l2, "dram_latency": dram,
            "l1_bytes": float(_capacity(sizes, times, l1, l2)),
            "l2_bytes": float(_capacity(sizes, times, l2, dram))}


def _capacity(sizes: list[int], times: list[float], near: float, far: float) -> int:
    """A cache's capacity from the chase points between its latency (`near`) and the next
    level's (`far`): a working set W read at latency t hits with rate h = (far - t) / (far -
    near), so the cache kept about h·W bytes of it; the capacity is the most any point kept
    (at least the largest working set read at the cache's own latency)."""
    kept = [s for s, t in zip(sizes, times, strict=True) if t <= near * 1.05]
    best = max(kept, default=sizes[0])
    if far <= near:
        return best
    for size, t in zip(sizes, times, strict=True):
        if near < t < far:
            best = max(best, int((far - t) / (far - near) * size))
    return best


def chase_cycle(words: int, seed: int = 7) -> np.ndarray:
    """A random cycle visiting one word of each 128-byte line of a `words`-word buffer: entry p
    holds the next word to read."""
    lines = max(2, words // LINE_WORDS)
    order = np.random.default_rng(seed).permutation(lines) * LINE_WORDS
    nxt = np.zeros(max(words, LINE_WORDS * lines), np.int64)
    nxt[order] = np.roll(order, -1)
    return nxt


def measure_hierarchy(session, quick: bool = False, max_bytes: int | None = None,
                      progress: Callable[[str], None] | None = None) -> Hierarchy:
    """Run every microbenchmark above on `session` (a models.opencl.runner.DeviceSession)."""
    from models.opencl.runner import time_kernel

    def say(text: str) -> None:
        if progress:
            progress(text)

    repeats = 3 if quick else 5
    result = Hierarchy()
    one = [np.zeros(1, np.int64)]
    say("a generated kernel's launch")
    result.launch, result.generated_launch = measure_launches(session, repeats * 3)
    limit = max_bytes or session.info.global_memory // 8
    hops = CHASE_HOPS // (4 if quick else 1)
    for size in QUICK_CHASE_BYTES if quick else CHASE_BYTES:
        if size > limit:
            break
        say(f"pointer chase, {size // 1024} KiB")
        nxt = chase_cycle(size // 8)
        # Every run follows the same cycle from its start: the lines touched are the first
        # `steps` of it, so the steps must cover more than the L2 for the DRAM's latency.
        steps = hops if size <= (1 << 24) else min(size // 128, CHASE_DRAM_HOPS)
        timing, (_, out) = time_kernel(session, CHASE, "chase", 1, 1, [nxt, one[0].copy()],
                                       [np.int32(steps)], 1 if steps > hops else repeats)
        p = 0
        for _ in range(steps):
            p = int(nxt[p])
        if int(out[0]) != p:
            raise RuntimeError("the pointer-chase microbenchmark followed a wrong chain")
        result.chase.append((size, max(0.0, timing.median - result.launch) / steps))
    say("atomic latency")
    result.atomic_latency = measure_atomic(session, hops, repeats)
    say("an allocation of one thread")
    result.pointer_place, result.pointer_place_s = session.pointer_place()
    result.slowest_place_s = max(session.place_times, default=0.0)
    result.alloc_latency = measure_thread_allocation(session, hops, repeats)
    say("a staged word read through LD")
    result.local_latency = measure_local_read(session, hops, repeats)
    say("an allocation step of a work group")
    result.group_alloc_latency = measure_group_allocation(session, repeats)
    say("an allocation from each compute unit")
    result.alloc_units = measure_allocation_by_unit(session, hops, repeats)
    result.group_alloc_units = measure_group_allocation_by_unit(session, repeats)
    say("store then load")
    result.store_load_latency, _ = _chain_latency(
        session, STORE_LOAD, "store_load", lambda: [np.zeros(4096, np.int64), one[0].copy()],
        hops, repeats)
    result.store_load_alias_latency = _aliased(session, STORE_LOAD_ALIAS, "store_load_alias",
                                               4096, hops, repeats, result.launch)
    result.store_fresh_latency = _aliased(session, STORE_FRESH, "store_fresh", 16 * hops,
                                          hops, repeats, result.launch)
    say("operation latency")
    # Long enough that the chains' difference (about 40 µs at the quick size on PoCL) stands
    # above a loaded machine's launch jitter: at 4 x hops it was a few µs, and came out 0 once
    # beside other jobs on this project's 2-core machine (2026-11-27).
    op_hops = 32 * hops
    result.op_latency, (out,) = _chain_latency(session, OP_CHAIN, "op_chain",
                                               lambda: [one[0].copy()], op_hops, repeats)
    x = 3
    for _ in range(op_hops):
        x = (x * 3 + 1) & 0xFFFFFFFFFFFFFFFF
    if int(out[0]) & 0xFFFFFFFFFFFFFFFF != x:
        raise RuntimeError("the operation-latency microbenchmark computed a wrong value")
    result.float_op_latency, _ = _chain_latency(session, FLOAT_CHAIN, "float_chain",
                                                lambda: [np.zeros(1)], op_hops, repeats)
    say("L1 lines per second")
    group = min(256, session.info.max_work_group_size)
    units = session.info.compute_units
    line_reps = 256 if quick else 1024
    small = np.random.default_rng(5).integers(1, 1000, size=2048, dtype=np.int64)
    for stride in L1_STRIDES:
        timing, (_, out) = time_kernel(session, L1_STRIDE, "l1_stride", group * units, group,
                                       [small, np.zeros(group * units, np.int64)],
                                       [np.int32(stride), np.int32(line_reps)], repeats)
        if int(out[1]) != sum(int(small[(stride + r * 8) & 2047]) for r in range(line_reps)):
            raise RuntimeError("the L1-stride microbenchmark computed a wrong sum")
        lines = min(32, max(1, 2 * stride))
        result.l1_strides.append((lines, max(0.0, timing.median - result.launch)))
    result.line_time = fit_line_time(result.l1_strides, group // 32, line_reps)
    say("L2 bandwidth")
    l2_words = (4 << 20) // 8  # 4 MiB: inside the L2 of every GPU hetprof has met
    threads = min(l2_words, session.info.compute_units * 2048)
    threads = max(group, threads // group * group)
    passes = 4 if quick else 16
    data = np.random.default_rng(3).integers(1, 1000, size=l2_words, dtype=np.int64)
    timing, (_, out) = time_kernel(session, READ_SWEEP, "read_sweep", threads, group,
                                   [data, np.zeros(threads, np.int64)],
                                   [np.int64(l2_words), np.int32(passes)], repeats)
    if int(out[0]) != passes * int(data[0::threads].sum()):
        raise RuntimeError("the L2-bandwidth microbenchmark computed a wrong sum")
    result.l2_bytes_per_s = passes * l2_words * 8 / max(1e-12, timing.median - result.launch)
    for count in BUMP_THREADS:
        if quick and count > 65536:
            break
        say(f"atomic adds on one address, {count} threads")
        reps = 8
        g = min(group, count)
        timing, (counter, _) = time_kernel(session, ATOMIC_BUMP, "bump", count, g,
                                           [np.zeros(1, np.int32), np.zeros(count, np.int64)],
                                           [np.int32(reps)], repeats)
        if int(counter[0]) != count * reps * (repeats + 1):
            raise RuntimeError("the atomic-rate microbenchmark lost atomic adds")
        result.bump.append((count, max(0.0, timing.median - result.launch) / (count * reps)))
    result.walks = measure_page_walks(session, quick, say)
    return result


SPREAD_READS = """\
__kernel void spread_reads(__global const long* restrict data, __global long* restrict out,
                           const long step) {
    out[get_global_id(0)] = data[get_global_id(0) * step] + 1;
}
"""
"""One warp's reads spread evenly over a buffer: lane i reads word i·step (`measure_page_walks`)."""

WALK_LANES = 32
QUICK_WALK_BYTES = (16, 21, 24)  # log2 bytes; `--quick` (PoCL in CI) stops at 16 MiB


def measure_page_walks(session, quick: bool = False,
                       progress: Callable[[str], None] | None = None,
                       runs: int | None = None) -> list[tuple[int, float]]:
    """(heap bytes, seconds) of the page walks the first kernel after a copy pays, for heaps of
    2^k bytes, k in models.device_profile.WALK_BYTES (`QUICK_WALK_BYTES` with `quick`) up to a
    quarter of the device's memory. Each run goes as the backend's runner starts an offload
    (models/opencl/runner.py's `_run_once`): a buffer created for the run and filled on the
    device, the heap copied in from page-locked host memory allocated for the run, one word
    read back; then one warp reads 32 words spread evenly over it (`SPREAD_READS`) and at once
    again. Each run's first kernel less its second, the median over the runs, at least 0.
    Checked: every lane read its word.

    Why the runner's sequence: on the H200 the same kernel after a copy from pageable numpy
    memory paid 9-20 µs at 64-256 MiB, and after the runner's copy from page-locked memory
    1-3 µs (benchmarks/gpu_walk_sequence_probe.py, 2026-11-28, card GPU-229229c1;
    docs/validation/walk-sequence-probe-nvidia-h200-2026-11-28.txt). The calibration copied from
    pageable memory until then, and the suite's sample and lookup, whose first kernels pay 1-3 µs
    there, came out 20-55% over at 2^19 words and up."""
    from models.device_profile import WALK_BYTES
    from models.opencl.runner import event_seconds

    cl, context, queue = session.cl, session.context, session.queue
    kernel = session.kernel(session.program(SPREAD_READS), "spread_reads")
    runs = runs or (3 if quick else 9)
    out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8 * WALK_LANES)
    flag, flag_buffer = np.zeros(1, np.int64), cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
    limit = min(session.info.global_memory // 4, session.info.max_allocation or (1 << 62))
    result = []
    for k in QUICK_WALK_BYTES if quick else WALK_BYTES:
        size = 1 << k
        if size > limit:
            break
        if progress:
            progress(f"page walks after a copy of {size // 1024} KiB")
        words = size // 8
        step = words // WALK_LANES
        values = np.arange(1, words + 1, dtype=np.int64)
        walks = []
        got = np.zeros(WALK_LANES, np.int64)
        for _ in range(runs + 1):
            data = session.pinned(words)  # each run's, as the runner's heap is
            data[:] = values
            buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, size)
            cl.enqueue_fill_buffer(queue, buffer, np.int64(0), 0, size).wait()
            cl.enqueue_copy(queue, buffer, data).wait()
            cl.enqueue_copy(queue, flag, flag_buffer).wait()  # as the runner reads its flag
            first = event_seconds(kernel(queue, (WALK_LANES,), (WALK_LANES,), buffer, out,
                                         np.int64(step)))
            again = event_seconds(kernel(queue, (WALK_LANES,), (WALK_LANES,), buffer, out,
                                         np.int64(step)))
            walks.append(first - again)
            buffer.release()
            session.release_pinned()
        cl.enqueue_copy(queue, got, out).wait()
        if not np.array_equal(got, values[::step][:WALK_LANES] + 1):
            raise RuntimeError("the page-walk microbenchmark read wrong words")
        result.append((size, max(0.0, float(np.median(walks[1:])))))  # the first: warm-up
    return result


def measure_launches(session, repeats: int = 15) -> tuple[float, float]:
    """The medians of `repeats` launches of an empty kernel and of one with the generated
    kernels' arguments (`GENERATED_EMPTY`); `cache_parameters` takes the slower as the launch."""
    from models.opencl.runner import time_kernel

    empty, _ = time_kernel(session, "__kernel void empty(__global long* out) { }\n", "empty",
                           1, 1, [np.zeros(1, np.int64)], [], repeats)
    generated, _ = time_kernel(session, GENERATED_EMPTY, "generated_empty", 1, 1,
                               [np.zeros(8, np.int64), np.zeros(1, np.int64),
                                np.zeros(1, np.int32), np.zeros(1, np.int32),
                                np.zeros(1, np.int32), np.zeros(8, np.int64)],
                               [np.int64(1), np.int64(0)], repeats)
    return empty.median, generated.median


def measure_atomic(session, hops: int = CHASE_HOPS, repeats: int = 5) -> float:
    """Seconds per step of one thread's chain of dependent atomic adds (`ATOMIC_CHAIN`), the
    mean over `ATOMIC_PLACES` places of the word, checked."""
    places = []
    for k in range(ATOMIC_PLACES):
        seconds, (counter, _) = _chain_latency(
            session, ATOMIC_CHAIN, "atomic_chain",
            lambda: [np.zeros(ATOMIC_PLACES * PLACE_STRIDE, np.int32), np.zeros(1, np.int64)],
            hops, repeats, [np.int32(k * PLACE_STRIDE)])
        if int(counter[k * PLACE_STRIDE]) <= 0:
            raise RuntimeError("the atomic microbenchmark added nothing")
        places.append(seconds)
    return float(np.mean(places))


def placed_regions(words: int) -> list[np.ndarray]:
    """The generated code's bookkeeping buffers (bases, caps, aps) with `ATOMIC_PLACES` regions
    `PLACE_STRIDE` entries apart, each of `words` words from the heap's start: region
    k · PLACE_STRIDE is the k-th place of an atomic microbenchmark."""
    size = ATOMIC_PLACES * PLACE_STRIDE
    return [np.zeros(size, np.int64), np.full(size, words, np.int32), np.zeros(size, np.int32)]


def runner_regions(words: int) -> list:
    """The generated code's bookkeeping buffers (bases, caps, aps) for one region of `words`
    words from the heap's start, its pointer in the session's own pointer buffer, where the
    runner puts it (models/opencl/runner.py's `DeviceSession.allocation_pointers`)."""
    from models.opencl.runner import AllocationPointers

    return [np.zeros(1, np.int64), np.full(1, words, np.int32),
            AllocationPointers(np.zeros(1, np.int32))]


ALLOC_ROUNDS = 4
"""Runs of the one-thread allocation chain, whose mean is kept: at the runner's place it is steady
to 1-2 ns (2026-11-28, benchmarks/gpu_alloc_runner_place_probe.py)."""


def measure_thread_allocation(session, hops: int = CHASE_HOPS, repeats: int = 5) -> float:
    """Seconds per allocation of one thread's chain of the generated code's ALLOC
    (`ALLOC_CHAIN`), its region's pointer where the runner puts it (`runner_regions`); the mean
    of `ALLOC_ROUNDS` runs, checked: every run allocates anew in one region large enough for
    all. Until 2026-11-28 the mean over `ATOMIC_PLACES` places of the pointer (253 ns on the
    H200 where the runner's place gave 197-316 ns, by the heap before it)."""
    words = 3 * hops * (repeats + 1) + 16
    rounds = []
    for _ in range(ALLOC_ROUNDS):
        seconds, out = _chain_latency(session, ALLOC_CHAIN, "alloc_chain",
                                      lambda: [np.zeros(words, np.int64), *runner_regions(words),
                                               np.zeros(1, np.int32), np.zeros(1, np.int64)],
                                      hops, repeats, [np.int32(0)])
        if int(out[4][0]) != 0 or int(out[3][0]) != hops * (repeats + 1):
            raise RuntimeError("the allocation chain overflowed or lost allocations")
        rounds.append(seconds)
    return float(np.mean(rounds))


def measure_local_read(session, hops: int = CHASE_HOPS, repeats: int = 5) -> float:
    """Seconds per hop of one thread's chase through a staged region read with the generated
    code's LD macro (`LOCAL_LD`), checked; the staging loop is in both runs of the slope, so it
    does not enter it."""
    words = min(LOCAL_CHASE_WORDS, max(LINE_WORDS * 2, session.info.local_words))
    nxt = chase_cycle(words)
    source = LOCAL_LD.replace("LOCAL_WORDS", str(session.info.local_words))
    seconds, (_, out) = _chain_latency(
        session, source, "local_ld", lambda: [nxt.copy(), np.zeros(1, np.int64)], hops,
        repeats, [np.int32(words)])
    p = 0
    for _ in range(hops):
        p = int(nxt[p])
    if int(out[0]) != p:
        raise RuntimeError("the local-read microbenchmark followed a wrong chain")
    return seconds


GROUP_ROUNDS = 16
"""Runs of the work group's allocation step, whose mean is kept: one run's figure spreads over
210-400 ns on the H200 (2026-11-28, benchmarks/gpu_alloc_runner_place_probe.py)."""


def measure_group_allocation(session, repeats: int = 5, reps: int = 32) -> float:
    """Seconds an allocation step takes each item of one work group (of up to 256 items) when
    every item allocates at once, as the generated code does (`GROUP_ALLOC`): (T(reps) - T(0))
    / reps, one work group alone on the device, its region's pointer where the runner puts it
    (`runner_regions`); the mean of `GROUP_ROUNDS` runs (`group_allocation_step`)."""
    items = min(256, session.info.max_work_group_size)
    return float(np.mean([group_allocation_step(session, items, 1, repeats, reps)
                          for _ in range(GROUP_ROUNDS)]))


def group_allocation_step(session, items: int, groups: int = 1, repeats: int = 5,
                          reps: int = 32) -> float:
    """One run of `GROUP_ALLOC` by `groups` work groups of `items` items at once: seconds a step,
    (T(reps) - T(0)) / reps, each the median of `repeats` runs; checked."""
    from models.opencl.runner import time_kernel

    threads = items * groups
    words = threads * reps * (repeats + 1) + 16  # the runs share the buffers: room for all

    def buffers() -> list:
        return [np.zeros(words, np.int64), *runner_regions(words), np.zeros(1, np.int32),
                np.zeros(threads, np.int64)]

    zero, _ = time_kernel(session, GROUP_ALLOC, "group_alloc", threads, items, buffers(),
                          [np.int32(0), np.int32(0)], repeats)
    full, out = time_kernel(session, GROUP_ALLOC, "group_alloc", threads, items, buffers(),
                            [np.int32(reps), np.int32(0)], repeats)
    if int(out[4][0]) != 0 or int(out[5][threads - 1]) != threads - 1 + reps:
        raise RuntimeError("the work group's allocation chain overflowed or computed a "
                           "wrong value")
    return max(0.0, full.median - zero.median) / reps


def measure_allocation_by_unit(session, hops: int = CHASE_HOPS, repeats: int = 5) -> list[float]:
    """Seconds per allocation of one thread's chain of the generated code's ALLOC (`ALLOC_AT`),
    run by each work group in turn of a kernel of as many one-item groups as the device has
    compute units, so that each unit runs it once (on the H200 group k's unit is fixed:
    benchmarks/gpu_alloc_sm_probe.py read it with %smid); its region's pointer where the runner
    puts it. Each figure is the slope between `hops` and 2·`hops`, each the fastest of `repeats`
    runs, checked."""
    from models.opencl.runner import time_kernel

    groups = max(1, session.info.compute_units)
    words = 2 * hops * (repeats + 1) + 16  # the longer chain's runs share one region
    figures = []
    for who in range(groups):
        best = []
        for h in (hops, 2 * hops):
            timing, out = time_kernel(
                session, ALLOC_AT, "alloc_chain_at", groups, 1,
                [np.zeros(words, np.int64), *runner_regions(words), np.zeros(1, np.int32),
                 np.zeros(1, np.int64)], [np.int32(h), np.int32(0), np.int32(who)], repeats)
            if int(out[4][0]) != 0 or int(out[3][0]) != h * (repeats + 1):
                raise RuntimeError("the allocation chain by unit overflowed or lost allocations")
            best.append(timing.best)
        figures.append(max(0.0, (best[1] - best[0]) / hops))
    return figures


def measure_group_allocation_by_unit(session, repeats: int = 5, reps: int = 32) -> list[float]:
    """Seconds an allocation step takes each item of one work group (of up to 256 items) when
    every item allocates at once (`GROUP_ALLOC_AT`), the group run by each compute unit in turn as
    in `measure_allocation_by_unit`: (T(reps) - T(0)) / reps, checked."""
    from models.opencl.runner import time_kernel

    items = min(256, session.info.max_work_group_size)
    groups = max(1, session.info.compute_units)
    words = items * reps * (repeats + 1) + 16

    def buffers() -> list:
        return [np.zeros(words, np.int64), *runner_regions(words), np.zeros(1, np.int32),
                np.zeros(items, np.int64)]

    figures = []
    for who in range(groups):
        zero, _ = time_kernel(session, GROUP_ALLOC_AT, "group_alloc_at", groups * items, items,
                              buffers(), [np.int32(0), np.int32(0), np.int32(who)], repeats)
        full, out = time_kernel(session, GROUP_ALLOC_AT, "group_alloc_at", groups * items,
                                items, buffers(), [np.int32(reps), np.int32(0), np.int32(who)],
                                repeats)
        if int(out[4][0]) != 0 or int(out[5][items - 1]) != items - 1 + reps:
            raise RuntimeError("the work group's allocation chain by unit overflowed or "
                               "computed a wrong value")
        figures.append(max(0.0, full.median - zero.median) / reps)
    return figures


NEAR_FAR_GAP = 1.2
"""Two sorted neighbours of the per-unit figures further apart than this ratio split the units
into near and far (on the H200: 238 and 311 ns, 1.31; within a cluster the steps are under 1.05)."""


def near_far(figures: list[float]) -> tuple[float, float, float]:
    """(near, far, near share) of per-unit figures: split at the widest ratio between sorted
    neighbours where it exceeds `NEAR_FAR_GAP`, each side's median; one cluster: its median
    twice and share 1. No figures: zeros."""
    values = sorted(f for f in figures if f > 0)
    if not values:
        return 0.0, 0.0, 0.0
    ratios = [(b / a, i) for i, (a, b) in enumerate(zip(values, values[1:], strict=False))]
    ratio, at = max(ratios, default=(1.0, 0))
    if ratio <= NEAR_FAR_GAP:
        middle = statistics.median(values)
        return middle, middle, 1.0
    near, far = values[:at + 1], values[at + 1:]
    return statistics.median(near), statistics.median(far), len(near) / len(values)


def fit_line_time(points: list[tuple[int, float]], warps: int, reps: int) -> float:
    """Seconds per line from (lines per warp load, kernel seconds) points: the slope of the
    kernel's time in the lines all its warps' loads touch (one group per compute unit, so a
    unit's load unit serves `warps` × `reps` loads), by least squares."""
    xs = np.array([lines * warps * reps for lines, _ in points], float)
    ys = np.array([t for _, t in points], float)
    if len(xs) < 2 or np.ptp(xs) == 0:
        return 0.0
    slope = float(np.polyfit(xs, ys, 1)[0])
    return max(slope, 0.0)


def _chain_latency(session, source: str, name: str, buffers, hops: int, repeats: int,
                   more: list | None = None):
    """Seconds per hop of a one-thread dependent chain (its kernel's first scalar argument is
    the hops, `more` the others), and the buffers after its run of `hops`: the slope between
    runs of `hops` and of 2·`hops`, each at its fastest of `repeats` (noise only adds time), so
    that neither the launch nor its jitter enters it (a subtraction of the launch measured apart
    came out 0 on a loaded 2-core machine)."""
    from models.opencl.runner import time_kernel

    more = more or []
    short, out = time_kernel(session, source, name, 1, 1, buffers(), [np.int32(hops), *more],
                             repeats)
    long, _ = time_kernel(session, source, name, 1, 1, buffers(), [np.int32(2 * hops), *more],
                          repeats)
    return max(0.0, (long.best - short.best) / hops), out


def _aliased(session, source: str, name: str, words: int, hops: int, repeats: int,
             launch: float) -> float:
    """Seconds per hop of a one-thread kernel given one buffer of `words` words twice (as two
    pointers the compiler cannot tell are the same)."""
    cl = session.cl
    cells = cl.Buffer(session.context, cl.mem_flags.READ_WRITE, 8 * words)
    out = cl.Buffer(session.context, cl.mem_flags.READ_WRITE, 8)
    kernel = session.kernel(session.program(source), name)
    samples = []
    for run in range(repeats + 1):
        event = kernel(session.queue, (1,), (1,), cells, cells, out, np.int32(hops))
        event.wait()
        if run:
            samples.append((event.profile.end - event.profile.start) * 1e-9)
    return max(0.0, sorted(samples)[len(samples) // 2] - launch) / hops


def hierarchy_to_json(h: Hierarchy) -> dict:
    """The measurements as JSON (for benchmarks/ and the calibration report)."""
    out = {"launch_s": h.launch, "generated_launch_s": h.generated_launch, "chase": [[s, t] for s, t in h.chase],
           "atomic_latency_s": h.atomic_latency, "alloc_latency_s": h.alloc_latency,
           "pointer_place": h.pointer_place, "pointer_place_s": h.pointer_place_s,
           "slowest_place_s": h.slowest_place_s,
           "local_latency_s": h.local_latency,
           "group_alloc_latency_s": h.group_alloc_latency,
           "alloc_units_s": h.alloc_units, "group_alloc_units_s": h.group_alloc_units,
           "store_load_latency_s": h.store_load_latency,
           "store_load_alias_latency_s": h.store_load_alias_latency,
           "store_fresh_latency_s": h.store_fresh_latency,
           "op_latency_s": h.op_latency, "float_op_latency_s": h.float_op_latency,
           "l2_bytes_per_s": h.l2_bytes_per_s, "bump": [[c, t] for c, t in h.bump],
           "l1_strides": [[k, t] for k, t in h.l1_strides], "line_time_s": h.line_time,
           "walks": [[b, t] for b, t in h.walks]}
    if len(h.chase) >= 3:
        out["levels"] = h.levels()
    return out
