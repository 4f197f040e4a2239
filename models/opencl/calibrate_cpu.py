"""The CPU world's microbenchmarks (issue 15): each by-class parameter of models/cpu.py measured on
the OpenCL CPU device, the device whose runs of hetprof's generated code `hetprof validate`
compares the CPU placement with (models/cpu.py's docstring says why that is the fair comparison).

Calibration sees these microbenchmarks only, never the programs `validate` checks. Each is a
kernel over N work items, every item doing `reps` of one operation in a loop; the operation's
cost per processor is what `reps` more of it add, times the compute units P that ran the items,
over the items and reps: (T(reps) - T(0)) · P / (N · reps). The per-processor seconds are what a
CPU edge weighs in the cost graph, whose time on P processors is about its work over P.

- launch_s: a kernel's launch and join on the device as the backend launches them: three empty
  kernels of one work item taking the generated code's arguments (models/opencl/codegen.py's
  COMMON: the heap, the regions' bases, capacities and pointers, the error word and the slots),
  in turn, each round after the host has copied 2^10 words into the heap, as the runner moves
  an `on`'s inputs in before its kernels; the median of 300 launches (`launches_after`). For the
  report only, the same with each kernel after the blocking one-word copies the runner makes
  before every step: measured as the profile's launch on one H200 host (2026-11-27,
  docs/validation/cpu-part-probe/), it made the CPU parts' predictions worse (median 31.2%
  against 27.7%, p90 66.3% against 61.7%, on the same measurements), so it is not used.
  launch_after_16_s, _19_s and _22_s: the same after copying 2^16, 2^19 and 2^22 words, which leave the caches cold (on the
  H200's host the median went from about 20 to about 39 µs: benchmarks/cpu_launch_probe.py);
  also, for the report only, the bare empty kernel of P items with one argument that launch_s
  was until 2026-11-27;
- task_s: a kernel whose items do nothing (a branch never taken), per item, less the launch;
- read_s: items summing `reps` words in a row of a buffer larger than the caches (stride 1);
  read_stride_s, the same a cache line apart (a new line each read); read_cached_s, re-reading
  one cached line (what models/cpu.py prices an indexing site's slot read at by its access
  pattern, profiler/access.py);
- write_s: items storing `reps` words in a row;
- alloc_s: items bumping their work group's counter with `atomic_add` (the backend's `ALLOC`,
  one core alone on a pointer it keeps in its cache);
- contended_alloc_s: every item allocating from one counter as the generated code does (the bump,
  then a store of the value into the cell it got): the wall time per allocation, the rate at
  which the compute units take the counter's cache line in turn and, since consecutive cells go
  to different units, the cells' lines as well (a floor, not a per-processor cost); also with
  only 2, 4 and 8 units allocating (work groups of the backend's WORK_GROUP items, one a unit),
  since the more units wait for the line the longer each handoff; the bump alone, without the
  store, is measured beside it for the report;
- op_s: a chain of dependent 64-bit multiply-adds (the backend's values are 64-bit);
- serial_step_s: one work item alone (the other units idle, as the backend runs an `on` body's
  top-level serial code) walking a dependent chain of the generated code's commonest step: load
  two boxed ints, multiply-add, allocate a cell (the bump and its bounds check), store, and the
  next step loads the cell just stored. The classes above are each measured with every unit
  busy and priced one after another; a lone dependent chain overlaps its loads and arithmetic
  with the atomic's latency, and its core has no sibling thread to share (models/cpu.py:
  `serial_scale`);
- unit_step_1_s ... unit_step_8_s, unit_step_all_s: the generated code's map step (two loads, a
  multiply-add, a bump of the work group's own counter, a store) per compute unit while only 1,
  2, 4 or 8 units run it, and while all do (`unit_steps`); a part on fewer busy units is priced
  lower by their ratio (models/cpu.py's `busy_scale`). Written since 2026-11-27's run 10: of the
  two suite runs predicted and measured on one host, the larger (109 CPU parts, card
  GPU-d9ee7a55) came out far better with them (13.2% / 43.9% against 19.7% / 57.8%), the
  smaller (19 parts, card GPU-7ed4d4d9) worse (20.8% / 51.2% against 12.7% / 36.9%); pooled,
  15.0% / 46.2% against 18.7% / 54.9% (README, "Parts on few units");
- bytes_per_s: a stride-1 copy over all compute units, bytes read plus written over its time;
- and, for profiles priced by the PRAM (`--units` of old), seconds per PRAM step: a map kernel as
  the backend writes one (two reads, an allocating write), as `hetprof calibrate` always did.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from models.device_profile import CpuParameters
from models.opencl.calibrate import ARITHMETIC, COPY, Fit  # the same kernels as the GPU's
from models.opencl.codegen import PRELUDE, WORK_GROUP
from profiler.access import LINE_WORDS  # 64-byte cache lines of 8-byte words

EMPTY = "__kernel void empty(__global long* out) { }\n"
EMPTY_COMMON = PRELUDE + "__kernel void empty_common(COMMON) { }\n"
# three kernels of one program, as a plan's steps are (a store never taken keeps each apart)
THREE_KERNELS = PRELUDE + "".join(
    f"__kernel void step{k}(COMMON) {{ if (get_global_id(0) == 1000000) heap[{k}] = {k}; }}\n"
    for k in range(3))

TASK = """\
__kernel void task(__global long* out, const long never) {
    long i = get_global_id(0);
    if (i == never) out[0] = i;  /* never taken: what a work item costs by itself */
}
"""

READ = """\
__kernel void read_words(__global const long* a, __global long* out, const int reps,
                         const long stride, const long mask) {
    long i = get_global_id(0);
    long acc = 0;
    long at = i * reps * stride;
    for (int r = 0; r < reps; r++) { acc += a[(at + r * stride) & mask]; }
    out[i] = acc;
}
"""

WRITE = """\
__kernel void write_words(__global long* out, const int reps) {
    long i = get_global_id(0);
    for (int r = 0; r < reps; r++) { out[i * reps + r] = i + r; }
}
"""

BUMP = """\
__kernel void bump(__global int* counters, const int reps, const int shared) {
    long i = get_global_id(0);
    /* the work group's own counter (a line a core keeps in its cache, as it keeps a region's
       pointer while it alone allocates), or one counter for every compute unit */
    __global int* counter = counters + (shared ? 0 : get_group_id(0) * 16);
    for (int r = 0; r < reps; r++) { atomic_add(counter, 1); }
}
"""

ALLOCATE = """\
__kernel void allocate(__global int* counter, __global long* cells, const int reps,
                       const long mask) {
    long i = get_global_id(0);
    /* hetprof's ALLOC and the store of the new value, every compute unit on one region */
    for (int r = 0; r < reps; r++) { int at = atomic_add(counter, 1); cells[at & mask] = i + r; }
}
"""

CPU_MAP = """\
__kernel void cpu_map(__global const long* a, __global const long* b, __global long* out,
                      __global int* ap) {
    long i = get_global_id(0);
    int at = atomic_add(ap, 1);  /* the bump hetprof's generated code does for each result */
    out[i] = a[i] * b[i] + (at < 0);
}
"""

SERIAL = """\
__kernel void serial_chain(__global long* heap, __global int* ap, __global int* err,
                           const int cap, const int reps, const int mask) {
    /* one work item: x = heap[a] * heap[1] + 12345 into a fresh cell, a = that cell (the
       bounds check as ALLOC makes it; the cells wrap around a buffer of mask + 1 words, since
       the pointer runs on over the repetitions) */
    long a = 0;
    for (int r = 0; r < reps; r++) {
        long x = heap[a];
        long y = heap[1];
        int offset = atomic_add(ap, 1);
        if (offset + 1 > cap) { atomic_or(err, 1); offset = 0; }
        long t = 2 + (offset & mask);
        heap[t] = x * y + 12345;
        a = t;
    }
}
"""

# The generated code's commonest parallel step (models/opencl/codegen.py's map kernel): load two
# boxed values, multiply-add, allocate a cell from the work group's own counter (no unit waits on
# another's line), store the result into it and read it back.
UNIT_STEP = """\
__kernel void map_step(__global const long* a, __global long* cells, __global int* counters,
                       const int reps, const long mask) {
    long i = get_global_id(0);
    __global int* counter = counters + get_group_id(0) * 16;
    long base = (long)get_group_id(0) * get_local_size(0) * reps;
    long at = i * reps;
    long acc = 0;
    for (int r = 0; r < reps; r++) {
        long x = a[(at + r) & mask];
        long y = a[(at + r + 1) & mask];
        int k = atomic_add(counter, 1);
        long c = (base + k) & mask;
        cells[c] = x * y + acc;
        acc += cells[c] & 7;
    }
}
"""

REPS = 16
LAUNCH_ROUNDS = 100  # rounds of three launches whose median is `launch_s`


@dataclass(frozen=True, slots=True)
class CpuCalibration:
    """The CPU section of a profile and the fits that made it (calibrate.Calibration's `fits`)."""

    cpu: CpuParameters
    fits: list[Fit]
    processors: int


def launches_after(session, words: int, rounds: int, round_trips: bool = False) -> list[float]:
    """The event times of THREE_KERNELS' launches (one work item each, in turn) over `rounds`
    rounds, each round after copying `words` words into the heap, as the backend's runner moves
    an `on`'s inputs in before its kernels (`calibrate_cpu`'s launch_s is their median;
    benchmarks/cpu_launch_probe.py prints their distribution), back to back. With
    `round_trips` (the calibration's report only), each kernel after the host's blocking
    one-word copies that the runner makes before every step (`runner._run_once`: the error
    word, a slot, a vector's length, the allocation pointers read, the capacities written)."""
    from models.opencl.runner import event_seconds

    cl = session.cl
    queue = session.queue
    program = session.program(THREE_KERNELS)
    kernels = [session.kernel(program, f"step{k}") for k in range(3)]
    data = np.arange(words, dtype=np.int64)
    sizes = (8 * max(words, 1 << 10), 32, 16, 16, 4, 128)  # the COMMON arguments, in bytes
    buffers = [cl.Buffer(session.context, cl.mem_flags.READ_WRITE, size) for size in sizes]
    heap, _, caps, aps, err, slots = buffers
    flag, word, pointers = np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(4, np.int32)
    samples = []
    for run in range(rounds + 1):
        cl.enqueue_copy(queue, heap, data).wait()
        for kernel in kernels:
            if round_trips:
                cl.enqueue_copy(queue, flag, err).wait()
                cl.enqueue_copy(queue, word, slots).wait()
                cl.enqueue_copy(queue, word, heap).wait()
                cl.enqueue_copy(queue, pointers, aps).wait()
                cl.enqueue_copy(queue, caps, pointers).wait()
            seconds = event_seconds(kernel(queue, (1,), None, *buffers))
            if run:  # the first round compiles and warms up
                samples.append(seconds)
    return samples


def unit_steps(session, words: int, repeats: int, rounds: int = 3) -> dict[int, float]:
    """UNIT_STEP's cost per compute unit while u units run it, for u in models.cpu.UNIT_STEPS
    below the device's units and for all of them (the key: its units): u work groups of up to
    1 024 items, one a unit, over `words` words in all (a buffer past the caches), each cost
    (T(reps) - T(0)) · u / (items · reps); the median of `rounds` rounds, since whether a few
    busy units share a core is the operating system's choice from one launch to the next."""
    from models.cpu import UNIT_STEPS
    from models.opencl.runner import time_kernel

    processors = max(1, session.info.compute_units)
    group = min(1024, session.info.max_work_group_size)
    mask = words - 1
    data = np.random.default_rng(7).integers(1, 1000, size=words, dtype=np.int64)
    ladder = [u for u in UNIT_STEPS if u < processors] + [processors]
    samples: dict[int, list[float]] = {u: [] for u in ladder}
    for _ in range(rounds):
        for units in ladder:
            items = units * group
            reps = max(1, words // items)
            times = [time_kernel(session, UNIT_STEP, "map_step", items, group,
                                 [data, np.zeros(words, np.int64),
                                  np.zeros(16 * processors, np.int32)],
                                 [np.int32(r), np.int64(mask)], repeats)[0].median
                     for r in (0, reps)]
            samples[units].append(max(1e-12, (times[1] - times[0]) * units / (items * reps)))
    return {units: statistics.median(values) for units, values in samples.items()}


def calibrate_cpu(session, quick: bool = False, repeats: int = 7,
                  step: Callable[[str, float], None] | None = None) -> CpuCalibration:
    """Run the CPU world's microbenchmarks on `session` (the OpenCL CPU device) and return its
    profile section: the by-class parameters (models/cpu.py), and the PRAM's seconds per step
    and δm for profiles priced by the PRAM."""
    from models.opencl.runner import time_kernel

    def progress(label: str, done: float) -> None:
        if step:
            step(label, done)

    processors = max(1, session.info.compute_units)
    fits: list[Fit] = []
    items = 1 << (14 if quick else 18)
    items -= items % processors

    def per_processor(name: str, source: str, kernel: str, buffers, scalars_at,
                      count: int = items) -> float:
        """(T(REPS) - T(0)) · P / (count · REPS), with the fit of both points."""
        zero, _ = time_kernel(session, source, kernel, count, None, buffers(), scalars_at(0),
                              repeats)
        full, _ = time_kernel(session, source, kernel, count, None, buffers(), scalars_at(REPS),
                              repeats)
        seconds = max(1e-12, (full.median - zero.median) * processors / (count * REPS))
        fits.append(Fit(f"CPU {name}", {"seconds": seconds, "items": count, "reps": REPS},
                        [(0, zero.median, zero.median),
                         (REPS, full.median, zero.median + seconds * count * REPS / processors)]))
        return seconds

    # -- a kernel's launch, and a work item by itself --------------------------------------------
    progress("CPU launch", 0.9)
    empty, _ = time_kernel(session, EMPTY, "empty", processors, None, [np.zeros(1, np.int64)], [],
                           repeats * 3)
    fits.append(Fit("CPU kernel launch, bare (report only)", {"seconds": empty.median},
                    [(processors, empty.median, empty.median)]))

    after = {log_words: statistics.median(launches_after(session, 1 << log_words, LAUNCH_ROUNDS))
             for log_words in (10, 16, 19, 22)}
    for log_words, seconds in after.items():
        fits.append(Fit(f"CPU kernel launch, three kernels of one work item in turn with the "
                        f"backend's arguments, after copying 2^{log_words} words in",
                        {"seconds": seconds, "launches": 3 * LAUNCH_ROUNDS},
                        [(1 << log_words, seconds, seconds)]))
    for log_words in (10, 22):  # the runner's step pattern (docs/validation/cpu-part-probe/)
        seconds = statistics.median(launches_after(session, 1 << log_words, LAUNCH_ROUNDS,
                                                   round_trips=True))
        fits.append(Fit(f"CPU kernel launch, the same each after the runner's round trips, "
                        f"after copying 2^{log_words} words in (report only)",
                        {"seconds": seconds, "launches": 3 * LAUNCH_ROUNDS},
                        [(1 << log_words, seconds, seconds)]))
    launch = after[10]
    tasks = items * 16
    task_t, (out,) = time_kernel(session, TASK, "task", tasks, None, [np.zeros(1, np.int64)],
                                 [np.int64(-1)], repeats)
    if int(out[0]) != 0:
        raise RuntimeError("the CPU task microbenchmark took a branch it should not")
    task = max(1e-12, (task_t.median - launch) * processors / tasks)
    fits.append(Fit("CPU per-task overhead", {"seconds": task, "items": tasks},
                    [(tasks, task_t.median, launch + task * tasks / processors)]))
    # -- reads: stride 1 over a buffer past the caches; a cache line's stride; one line again ----
    progress("CPU reads", 0.91)
    words = 1 << (22 if quick else 25)  # 32 MB (quick) or 256 MB: past a socket's last cache
    mask = words - 1
    data = np.random.default_rng(5).integers(1, 1000, size=words, dtype=np.int64)
    read_items = words // REPS  # every word of the buffer read once

    def reads(stride: int, span: int):
        return lambda reps: [np.int32(reps), np.int64(stride), np.int64(span)]

    def read_buffers():
        return [data, np.zeros(read_items, np.int64)]

    read = per_processor("read, stride 1", READ, "read_words", read_buffers, reads(1, mask),
                         read_items)
    timing, (_, sums) = time_kernel(session, READ, "read_words", read_items, None,
                                    read_buffers(), reads(1, mask)(REPS), 1)
    if int(sums[3]) != int(data[3 * REPS:4 * REPS].sum()):
        raise RuntimeError("the CPU read microbenchmark computed a wrong sum")
    read_stride = per_processor(f"read, stride {LINE_WORDS}", READ, "read_words", read_buffers,
                                reads(LINE_WORDS, mask), read_items)
    read_cached = per_processor("re-read of one cached line", READ, "read_words", read_buffers,
                                reads(0, LINE_WORDS - 1), read_items)
    # -- writes, bumps, arithmetic ---------------------------------------------------------------
    progress("CPU writes", 0.92)
    write_items = words // REPS
    write = per_processor("write, stride 1", WRITE, "write_words",
                          lambda: [np.zeros(write_items * REPS, np.int64)],
                          lambda reps: [np.int32(reps)], write_items)
    progress("CPU allocation bumps", 0.93)
    bump_items = items // 4

    def counters():
        return [np.zeros(bump_items * 16, np.int32)]

    alloc = per_processor("allocation bump, the work group's counter", BUMP, "bump", counters,
                          lambda reps: [np.int32(reps), np.int32(0)], bump_items)
    zero, _ = time_kernel(session, BUMP, "bump", bump_items, None, counters(),
                          [np.int32(0), np.int32(1)], repeats)
    full, (counted,) = time_kernel(session, BUMP, "bump", bump_items, None, counters(),
                                   [np.int32(REPS), np.int32(1)], repeats)
    if int(counted[0]) != bump_items * REPS * (repeats + 1):
        raise RuntimeError("the CPU allocation microbenchmark lost atomic increments")
    bumps = bump_items * REPS
    bump_only = max(1e-12, (full.median - zero.median) / bumps)
    fits.append(Fit(f"CPU allocation bump alone, one counter, {processors} compute units (wall "
                    "time; report only)", {"seconds": bump_only, "bumps": bumps},
                    [(0, zero.median, zero.median),
                     (bumps, full.median, zero.median + bump_only * bumps)]))
    cell_mask = (1 << 22) - 1  # 32 MB of cells: fresh lines, as a growing region's are

    def allocation_buffers():
        return [np.zeros(1, np.int32), np.zeros(cell_mask + 1, np.int64)]

    zero, _ = time_kernel(session, ALLOCATE, "allocate", bump_items, None, allocation_buffers(),
                          [np.int32(0), np.int64(cell_mask)], repeats)
    full, (counted, _) = time_kernel(session, ALLOCATE, "allocate", bump_items, None,
                                     allocation_buffers(), [np.int32(REPS), np.int64(cell_mask)],
                                     repeats)
    if int(counted[0]) != bumps * (repeats + 1):
        raise RuntimeError("the CPU allocation microbenchmark lost atomic increments")
    contended = max(1e-12, (full.median - zero.median) / bumps)
    fits.append(Fit(f"CPU allocation (bump and store), one counter, {processors} compute units "
                    "(wall time)", {"seconds": contended, "bumps": bumps},
                    [(0, zero.median, zero.median),
                     (bumps, full.median, zero.median + contended * bumps)]))
    # the same with fewer units allocating: k work groups of WORK_GROUP items, one per unit
    fewer: dict[int, float] = {}
    for units in (2, 4, 8):
        if units >= processors:
            continue
        count, reps = units * WORK_GROUP, 4 * REPS
        times = [time_kernel(session, ALLOCATE, "allocate", count, WORK_GROUP,
                             allocation_buffers(), [np.int32(r), np.int64(cell_mask)], repeats)[0]
                 for r in (0, reps)]
        fewer[units] = max(1e-12, (times[1].median - times[0].median) / (count * reps))
        fits.append(Fit(f"CPU allocation (bump and store), one counter, {units} compute units "
                        "(wall time)", {"seconds": fewer[units], "bumps": count * reps},
                        [(0, times[0].median, times[0].median),
                         (count * reps, times[1].median,
                          times[0].median + fewer[units] * count * reps)]))
    progress("CPU arithmetic", 0.94)
    op = per_processor("multiply-add", ARITHMETIC, "arithmetic",
                       lambda: [np.zeros(items, np.int64)], lambda reps: [np.int32(reps)])
    # -- a lone dependent chain (one work item; the backend's serial code) -------------------------
    progress("CPU serial chain", 0.945)
    steps = 1 << (14 if quick else 18)

    def chain_buffers():
        heap = np.zeros(steps + 2, np.int64)
        heap[0], heap[1] = 3, 5
        return [heap, np.zeros(1, np.int32), np.zeros(1, np.int32)]

    chain = [time_kernel(session, SERIAL, "serial_chain", 1, None, chain_buffers(),
                         [np.int32(2**31 - 1), np.int32(r), np.int32(steps - 1)], repeats)
             for r in (0, steps)]
    _, (heap, used, err) = chain[1]
    if int(err[0]) or int(used[0]) != steps * (repeats + 1):
        raise RuntimeError("the CPU serial-chain microbenchmark lost or overflowed a bump")
    serial = max(1e-12, (chain[1][0].median - chain[0][0].median) / steps)
    fits.append(Fit("CPU serial chain step (one work item: 2 loads, multiply-add, bump, store)",
                    {"seconds": serial, "steps": steps},
                    [(0, chain[0][0].median, chain[0][0].median),
                     (steps, chain[1][0].median, chain[0][0].median + serial * steps)]))
    # -- the map step with only a few units busy --------------------------------------------------
    progress("CPU busy units", 0.947)
    stepped = unit_steps(session, 1 << (21 if quick else 25), repeats)
    for units, seconds in stepped.items():
        fits.append(Fit(f"CPU map step per unit, {units} of {processors} compute units busy",
                        {"seconds": seconds, "units": units}, [(units, seconds, seconds)]))
    fewer_units = {u: t for u, t in stepped.items() if u < processors}
    # -- the socket's bandwidth -------------------------------------------------------------------
    progress("CPU bandwidth", 0.95)
    copy_t, (_, copied) = time_kernel(session, COPY, "copy", words, None,
                                      [data, np.zeros(words, np.int64)], [], repeats)
    if not np.array_equal(copied, data):
        raise RuntimeError("the CPU bandwidth microbenchmark copied a wrong word")
    moved = 2 * 8 * words
    bandwidth = moved / max(1e-12, copy_t.median - launch)
    fits.append(Fit("CPU memory bandwidth, stride-1 copy", {"bytes_per_s": bandwidth,
                                                            "words": words},
                    [(moved, copy_t.median, launch + moved / bandwidth)]))
    # -- the PRAM's seconds per step (profiles priced by the PRAM) -------------------------------
    progress("CPU map", 0.96)
    n = 1 << (16 if quick else 20)
    a = np.random.default_rng(2).integers(1, 1000, size=n, dtype=np.int64)
    cpu_t, (_, _, product, _) = time_kernel(session, CPU_MAP, "cpu_map", n, None,
                                            [a, a.copy(), np.zeros(n, np.int64),
                                             np.zeros(1, np.int32)], [], repeats)
    if not np.array_equal(product, a * a):
        raise RuntimeError("the CPU microbenchmark computed a wrong product")
    # per element, as hetprof counts a map: 2 reads, an allocating write, ⊕ and the ⊗ edges (4)
    pram_units = n * 8
    seconds_per_unit = cpu_t.median * processors / pram_units
    fits.append(Fit("CPU fork-join (δm)", {"seconds": launch}, [(processors, launch, launch)]))
    fits.append(Fit("CPU PRAM step", {"seconds_per_unit": seconds_per_unit,
                                      "processors": processors},
                    [(n, cpu_t.median, seconds_per_unit * pram_units / processors)]))
    cpu = replace(CpuParameters(), seconds_per_unit=seconds_per_unit,
                  merge=launch / seconds_per_unit, read_s=read, read_stride_s=read_stride,
                  read_cached_s=read_cached, write_s=write, alloc_s=alloc,
                  op_s=op, task_s=task, launch_s=launch, contended_alloc_s=contended,
                  contended_alloc_2_s=fewer.get(2, 0.0), contended_alloc_4_s=fewer.get(4, 0.0),
                  contended_alloc_8_s=fewer.get(8, 0.0), serial_step_s=serial,
                  launch_after_16_s=after[16], launch_after_19_s=after[19],
                  launch_after_22_s=after[22],
                  unit_step_1_s=fewer_units.get(1, 0.0), unit_step_2_s=fewer_units.get(2, 0.0),
                  unit_step_4_s=fewer_units.get(4, 0.0), unit_step_8_s=fewer_units.get(8, 0.0),
                  unit_step_all_s=stepped.get(processors, 0.0),
                  bytes_per_s=bandwidth, processors=processors)
    return CpuCalibration(cpu, fits, processors)
