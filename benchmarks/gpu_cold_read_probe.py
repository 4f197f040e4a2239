"""Whether the first kernel after a host-to-device copy finds the copied words in the L2 (issue 14:
the suite's small kernels, which read a few words of vectors just copied in, were predicted 5-44%
fast on the H200; the `cache` mode prices an L1 miss at the L2's latency wherever the device
box's heap fits in the L2, models/gpu_cache.py's `miss_latency`).

For each buffer size: the buffer is copied to the device, then one thread chases a random cycle
through one word of each of `hops` of its 128-byte lines (calibrate_cache.chase_cycle), twice:
`cold` is the first chase after the copy, `warm` the same chase again. A hop's time is the run's
time less an empty kernel's (the launch), over the hops. The copy is made again before every
cold run. Then, for buffers of 32 KiB to 256 MiB: one warp's eight reads spread evenly over a buffer
just copied in (the suite's `sample`), in a buffer made afresh for the run, as the runner makes its
heap, and in one buffer reused. Nothing is fitted: it prints the medians, and the profile's L2 and
DRAM latencies beside them.

    python benchmarks/gpu_cold_read_probe.py [--device nvidia] [--profile PROFILE.json] [--grid]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate_cache import CHASE, LINE_WORDS, chase_cycle  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

SIZES = (1 << 16, 1 << 20, 1 << 23, 1 << 25)  # bytes: 64 KiB, 1 MiB, 8 MiB, 32 MiB
FRESH_SIZES = (1 << 15, 1 << 20, 1 << 25, 1 << 28)  # 32 KiB .. 256 MiB
GRID_SPACINGS = tuple(1 << k for k in range(16, 26, 1))  # 64 KiB .. 32 MiB
GRID_COUNTS = (1, 8, 32)
PAGE_SPACINGS = (1 << 21, 1 << 23, 1 << 25)  # 2, 8, 32 MiB
PAGE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
SPREAD = """
__kernel void spread(__global const long* restrict data, __global long* restrict out,
                     const long step) {
    long v = data[get_global_id(0) * step] + 1;
    if (v == -1) out[0] = v;
}
"""
HOPS = 512
RUNS = 9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--grid", action="store_true",
                        help="also the spread reads at spacings of 64 KiB to 32 MiB, 1, 8 and 32 "
                        "of them")
    parser.add_argument("--pages", action="store_true",
                        help="also reads of 1 to 64 distinct pages 2, 8 and 32 MiB apart, cold "
                        "and in a second kernel")
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, context, queue = session.cl, session.context, session.queue
    chase = session.kernel(session.program(CHASE), "chase")
    empty = session.kernel(session.program("__kernel void empty(__global long* o) { }\n"),
                           "empty")
    out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
    launch = statistics.median(event_seconds(empty(queue, (1,), (1,), out)) for _ in range(21))
    print(f"device: {session.info.describe()}; an empty kernel {launch * 1e6:.2f} µs")
    for size in SIZES:
        words = size // 8
        nxt = chase_cycle(words)
        hops = min(HOPS, max(1, words // LINE_WORDS))
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, nxt.nbytes)
        cold, warm = [], []
        for _ in range(RUNS):
            cl.enqueue_copy(queue, buffer, nxt).wait()
            cold.append(event_seconds(chase(queue, (1,), (1,), buffer, out, np.int32(hops))))
            warm.append(event_seconds(chase(queue, (1,), (1,), buffer, out, np.int32(hops))))
        result = np.zeros(1, np.int64)
        cl.enqueue_copy(queue, result, out).wait()
        p = 0
        for _ in range(hops):
            p = int(nxt[p])
        if int(result[0]) != p:
            raise RuntimeError("the chase followed a wrong chain")
        per_hop = [(statistics.median(t) - launch) / hops * 1e9 for t in (cold, warm)]
        print(f"{size // 1024:>7} KiB, {hops} hops: cold {per_hop[0]:7.1f} ns a hop, "
              f"warm {per_hop[1]:7.1f} ns a hop")
    # A buffer made afresh for each run, as the runner makes its heap for each run of an `on`:
    # eight reads spread evenly over it (the suite's `sample`), by one warp, in the first kernel.
    spread = session.program(SPREAD)
    spread_kernel = session.kernel(spread, "spread")
    for size in FRESH_SIZES:
        words = size // 8
        data = np.arange(words, dtype=np.int64)
        times = {"fresh": [], "reused": []}
        kept = cl.Buffer(context, cl.mem_flags.READ_WRITE, data.nbytes)
        for _ in range(RUNS):
            fresh = cl.Buffer(context, cl.mem_flags.READ_WRITE, data.nbytes)
            for name, buffer in (("fresh", fresh), ("reused", kept)):
                cl.enqueue_copy(queue, buffer, data).wait()
                times[name].append(event_seconds(spread_kernel(
                    queue, (8,), (8,), buffer, out, np.int64(words // 8))))
            fresh.release()
        print(f"{size // 1024:>9} KiB, 8 spread reads: fresh buffer "
              f"{statistics.median(times['fresh']) * 1e6:6.2f} µs, reused "
              f"{statistics.median(times['reused']) * 1e6:6.2f} µs (kernel, launch included)")
    if args.grid:
        # The same reads at spacings from 64 KiB to 32 MiB, 1, 8 or 32 of them (one warp), in a
        # buffer of exactly that span: the walk's cost by spacing and by count.
        for spacing in GRID_SPACINGS:
            row = []
            for count in GRID_COUNTS:
                words = spacing * count // 8
                data = np.arange(words, dtype=np.int64)
                buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, data.nbytes)
                samples = []
                for _ in range(RUNS):
                    cl.enqueue_copy(queue, buffer, data).wait()
                    samples.append(event_seconds(spread_kernel(
                        queue, (count,), (count,), buffer, out, np.int64(spacing // 8))))
                buffer.release()
                row.append(f"{count:>2} reads {(statistics.median(samples) - launch) * 1e6:6.2f} µs")
            print(f"spacing {spacing // 1024:>6} KiB: " + ", ".join(row)
                  + " (less an empty kernel)")
    if args.pages:
        # Reads of 1 to 64 distinct pages (one read each, `spacing` apart; the buffer exactly
        # that span), by one work group, right after the buffer was copied in ("cold") and in a
        # second kernel at once ("again"): whether a walk's cost is per page, how walks
        # overlap, and whether a kernel finds the pages an earlier one touched.
        for spacing in PAGE_SPACINGS:
            for count in PAGE_COUNTS:
                words = spacing * count // 8
                data = np.zeros(words, dtype=np.int64)
                buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, data.nbytes)
                cold, again = [], []
                for _ in range(RUNS):
                    cl.enqueue_copy(queue, buffer, data).wait()
                    for samples in (cold, again):
                        samples.append(event_seconds(spread_kernel(
                            queue, (count,), (count,), buffer, out, np.int64(spacing // 8))))
                buffer.release()
                print(f"pages spacing {spacing >> 20:>3} MiB, {count:>2} pages: cold "
                      f"{(statistics.median(cold) - launch) * 1e6:6.2f} µs, again "
                      f"{(statistics.median(again) - launch) * 1e6:6.2f} µs (less an empty "
                      "kernel)", flush=True)
    if args.profile:
        gpu = load_profile(args.profile).gpu
        unit = gpu.seconds_per_unit * 1e9
        print(f"profile {args.profile.name}: L2 {gpu.l2_latency * unit:.1f} ns, DRAM "
              f"{gpu.dram_latency * unit:.1f} ns, L2 {gpu.l2_bytes / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
