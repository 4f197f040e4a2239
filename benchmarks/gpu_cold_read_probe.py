"""Whether the first kernel after a host-to-device copy finds the copied words in the L2 (issue 14:
the suite's small kernels, which read a few words of vectors just copied in, were predicted 5-44%
fast on the H200; the `cache` mode prices an L1 miss at the L2's latency wherever the device
box's heap fits in the L2, models/gpu_cache.py's `miss_latency`).

For each buffer size: the buffer is copied to the device, then one thread chases a random cycle
through one word of each of `hops` of its 128-byte lines (calibrate_cache.chase_cycle), twice:
`cold` is the first chase after the copy, `warm` the same chase again. A hop's time is the run's
time less an empty kernel's (the launch), over the hops. The copy is made again before every
cold run. Nothing is fitted: it prints the medians, and the profile's L2 and DRAM latencies beside
them.

    python benchmarks/gpu_cold_read_probe.py [--device nvidia] [--profile PROFILE.json]
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
HOPS = 512
RUNS = 9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path)
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
    if args.profile:
        gpu = load_profile(args.profile).gpu
        unit = gpu.seconds_per_unit * 1e9
        print(f"profile {args.profile.name}: L2 {gpu.l2_latency * unit:.1f} ns, DRAM "
              f"{gpu.dram_latency * unit:.1f} ns, L2 {gpu.l2_bytes / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
