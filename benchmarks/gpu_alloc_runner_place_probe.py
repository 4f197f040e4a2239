"""What an allocation costs where the runner puts its allocation pointers (issue 14).

An atomic's latency on the H200 depends on its word's place (models/opencl/calibrate_cache.py's
`ATOMIC_PLACES`: 200-320 ns for the generated code's ALLOC, 2026-11-28 card GPU-d7b4bd9f), and
the calibration charged the mean over 16 places. Until 2026-11-28 the runner
(models/opencl/runner.py's `_run_once`) made fresh buffers for every run: the heap, filled, then
the tiny `caps`, `aps`, `bases`, `err` and `slots`, in that order. If the device's allocator put
a tiny `aps` at the same kind of place every time, the suite's allocating kernels paid that
place's latency, not the mean (they came out 12-32% over in runs 13-19 on every card). This
probe makes the buffers that old way; since commit d57853f the runner keeps its pointers at the
session's chosen place (`DeviceSession.pointer_place`).

Per heap size, `--trials` times: buffers made as `_run_once` makes them, then, on them, one
thread's `ALLOC_CHAIN` (the slope between `--hops` and twice as many, at its fastest of
`--repeats`) and one work group's `GROUP_ALLOC` step (as `measure_group_allocation`), for the
first and the last of `--regions` regions. Beside them the calibration's means over places.
Nothing is fitted.

    python benchmarks/gpu_alloc_runner_place_probe.py [--device nvidia]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import (  # noqa: E402
    ALLOC_CHAIN,
    GROUP_ALLOC,
    measure_group_allocation,
    measure_thread_allocation,
)
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402


def runner_buffers(session: DeviceSession, heap_words: int, capacity: list[int]):
    """The runner's six buffers, made in the order and with the flags `_run_once` used before
    commit 49df57e: every region from word 0 of its own stretch of `capacity` words, nothing
    used yet."""
    cl = session.cl
    flags = cl.mem_flags
    bases = np.cumsum([0, *capacity[:-1]]).astype(np.int64)
    heap_buf = cl.Buffer(session.context, flags.READ_WRITE, 8 * heap_words)
    cl.enqueue_fill_buffer(session.queue, heap_buf, np.int64(0), 0, 8 * heap_words).wait()
    caps_buf = cl.Buffer(session.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                         hostbuf=np.array(capacity, dtype=np.int32))
    aps_buf = cl.Buffer(session.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                        hostbuf=np.zeros(len(capacity), dtype=np.int32))
    bases_buf = cl.Buffer(session.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=bases)
    err_buf = cl.Buffer(session.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                        hostbuf=np.zeros(1, dtype=np.int32))
    slots_buf = cl.Buffer(session.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                          hostbuf=np.zeros(256, dtype=np.int64))
    return heap_buf, bases_buf, caps_buf, aps_buf, err_buf, slots_buf


def best(session, kernel, size: int, buffers, scalars, repeats: int) -> float:
    """The fastest of `repeats` runs after a warm-up, in seconds."""
    times = []
    for run in range(repeats + 1):
        seconds = event_seconds(kernel(session.queue, (size,), (size,), *buffers, *scalars))
        if run:
            times.append(seconds)
    return min(times)


def trial(session, heap_words: int, regions: int, hops: int, repeats: int,
          items: int, reps: int) -> list[float]:
    """One set of fresh runner buffers: per region (first, last), the chain's seconds per
    allocation and the group's seconds per allocation step, and whether both stayed in bounds."""
    capacity = [heap_words // regions] * regions
    chain = session.kernel(session.program(ALLOC_CHAIN), "alloc_chain")
    group = session.kernel(session.program(GROUP_ALLOC), "group_alloc")
    out = []
    for r in (0, regions - 1):
        bufs = runner_buffers(session, heap_words, capacity)
        short = best(session, chain, 1, bufs, [np.int32(hops), np.int32(r)], repeats)
        long = best(session, chain, 1, bufs, [np.int32(2 * hops), np.int32(r)], repeats)
        out.append((long - short) / hops)
        bufs = runner_buffers(session, heap_words, capacity)
        zero = best(session, group, items, bufs, [np.int32(0), np.int32(r)], repeats)
        full = best(session, group, items, bufs, [np.int32(reps), np.int32(r)], repeats)
        out.append((full - zero) / reps)
        err = np.zeros(1, dtype=np.int32)
        session.cl.enqueue_copy(session.queue, err, bufs[4]).wait()
        if int(err[0]):
            raise RuntimeError(f"heap of {heap_words} words overflowed")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--hops", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--regions", type=int, default=4)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    print(f"device: {session.info.describe()}", flush=True)
    items, reps = min(256, session.info.max_work_group_size), 32
    need = args.regions * max(3 * args.hops * (args.repeats + 1), items * reps * (args.repeats + 1))
    print(f"calibration's means over places: chain {measure_thread_allocation(session) * 1e9:.1f}"
          f" ns, group step {measure_group_allocation(session) * 1e9:.1f} ns", flush=True)
    chains, groups = [], []
    for words in (need, 1 << 20, 1 << 22, 1 << 24):
        words = max(words, need)
        for t in range(args.trials):
            c0, g0, c1, g1 = trial(session, words, args.regions, args.hops, args.repeats,
                                   items, reps)
            chains += [c0, c1]
            groups += [g0, g1]
            print(f"heap 2^{words.bit_length() - 1} words, trial {t}: region 0 chain "
                  f"{c0 * 1e9:6.1f} ns group {g0 * 1e9:6.1f} ns; region {args.regions - 1} "
                  f"chain {c1 * 1e9:6.1f} ns group {g1 * 1e9:6.1f} ns", flush=True)
    print(f"runner's place: chain median {statistics.median(chains) * 1e9:.1f} ns "
          f"(range {min(chains) * 1e9:.1f}-{max(chains) * 1e9:.1f}), group step median "
          f"{statistics.median(groups) * 1e9:.1f} ns "
          f"(range {min(groups) * 1e9:.1f}-{max(groups) * 1e9:.1f})")


if __name__ == "__main__":
    main()
