"""Whether a one-thread atomic's latency depends on where its word lies (issue 14: the suite's
one-thread `serial_loop`, which allocates 13 times an iteration, took 4.4 µs an iteration at
n = 10, 25, 50 and 300 and 2.6-3.0 µs at n = 75 ... 250 and 400, the same sizes on two H200
hosts; `calibrate` measured the allocation's atomic at one address, 310 ns a step).

One thread's chain of dependent atomic adds (calibrate_cache.ATOMIC_CHAIN) on the word at
byte offset `k * --spacing` of one buffer, for `--places` offsets; each place's ns a step is the
slope between 2048 and 4096 steps, each the faster of two runs. Printed: every place's figure,
their median, mean and spread. Nothing is fitted.

    python benchmarks/gpu_atomic_place_probe.py [--device nvidia] [--places 64] [--spacing 4096]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

PLACED = """\
__kernel void placed(__global int* words, __global long* out, const int at, const int hops) {
    int x = 0;
    for (int h = 0; h < hops; h++) x = atomic_add(&words[at], (x & 1) + 1);
    out[get_global_id(0)] = x;
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--places", type=int, default=64)
    parser.add_argument("--spacing", type=int, default=4096, help="bytes between places")
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, context, queue = session.cl, session.context, session.queue
    kernel = session.kernel(session.program(PLACED), "placed")
    words = args.places * args.spacing // 4
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4 * words)
    cl.enqueue_fill_buffer(queue, buffer, np.int32(0), 0, 4 * words).wait()
    out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
    figures = []
    for k in range(args.places):
        at = np.int32(k * args.spacing // 4)
        times = []
        for hops in (2048, 4096):
            times.append(min(event_seconds(kernel(queue, (1,), (1,), buffer, out, at,
                                                  np.int32(hops))) for _ in range(2)))
        figures.append((times[1] - times[0]) / 2048 * 1e9)
    print(f"device: {session.info.describe()}; {args.places} places {args.spacing} bytes apart")
    print("ns a step: " + " ".join(f"{f:.0f}" for f in figures))
    print(f"median {statistics.median(figures):.1f}, mean {statistics.fmean(figures):.1f}, "
          f"fastest {min(figures):.1f}, slowest {max(figures):.1f}")


if __name__ == "__main__":
    main()
