"""Whether the GPU's clock state moves latency-bound kernels (issue 14: the suite's one-thread
`serial_loop` took 4.4 µs an iteration at some sizes and 2.6-3.0 µs at others on one H200, in
one run; the cache mode, calibrated at 4.4, missed the others by 40-58%).

One thread's chain of the generated code's allocations (calibrate_cache.ALLOC_CHAIN, what
`calibrate` measures as `atomic_latency`) is timed per step, short (`--short` steps, a kernel of
tens of µs) and long (4096 steps, about a ms): after the host idled 2 s, and right after a
kernel that keeps every compute unit busy for about `--busy-ms` (the GPU raises its clocks under
load). The SM and memory clocks that nvidia-smi reports are printed beside, where it is there.
Nothing is fitted.

    python benchmarks/gpu_clock_probe.py [--device nvidia] [--busy-ms 300] [--short 64]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import ALLOC_CHAIN  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

BUSY = """\
__kernel void busy(__global double* out, const int reps) {
    double x = get_global_id(0) * 1e-9, y = 1.0;
    for (int r = 0; r < reps; r++) { x = x * 0.999999 + y; y = y * 1.000001 - x * 1e-9; }
    out[get_global_id(0)] = x + y;
}
"""


def clocks() -> str:
    if not shutil.which("nvidia-smi"):
        return "no nvidia-smi"
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,pstate",
                          "--format=csv,noheader"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--busy-ms", type=float, default=300.0)
    parser.add_argument("--short", type=int, default=64)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, context, queue = session.cl, session.context, session.queue
    flags = cl.mem_flags
    chain = session.kernel(session.program(ALLOC_CHAIN), "alloc_chain")
    busy = session.kernel(session.program(BUSY), "busy")
    threads = session.info.compute_units * 2048
    out = cl.Buffer(context, flags.READ_WRITE, 8 * threads)
    words = 1 << 22
    buffers = [cl.Buffer(context, flags.READ_WRITE, 8 * words),
               cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                         hostbuf=np.zeros(1, np.int64)),
               cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                         hostbuf=np.array([words], np.int32)),
               cl.Buffer(context, flags.READ_WRITE, 4), cl.Buffer(context, flags.READ_WRITE, 4),
               cl.Buffer(context, flags.READ_WRITE, 8)]
    aps = buffers[3]

    def step_time(hops: int) -> float:
        """ns a step: the slope between `hops` and 2 `hops` steps, each the faster of two."""
        times = []
        for h in (hops, 2 * hops):
            best = float("inf")
            for _ in range(2):
                cl.enqueue_copy(queue, aps, np.zeros(1, np.int32)).wait()
                best = min(best, event_seconds(chain(queue, (1,), (1,), *buffers, np.int32(h),
                                                     np.int32(0))))
            times.append(best)
        return (times[1] - times[0]) / hops * 1e9

    # calibrate the busy kernel's repetitions to about --busy-ms
    reps = 1 << 12
    seconds = event_seconds(busy(queue, (threads,), None, out, np.int32(reps)))
    reps = max(1, int(reps * args.busy_ms * 1e-3 / max(seconds, 1e-6)))
    print(f"device: {session.info.describe()}; clocks now (SM, memory, state): {clocks()}")
    for label in ("after 2 s idle", "after a busy kernel", "after 2 s idle", "after a busy kernel"):
        if label.startswith("after 2 s"):
            time.sleep(2.0)
            state = clocks()
        else:
            event = busy(queue, (threads,), None, out, np.int32(reps))
            state = clocks()  # while it runs
            event.wait()
        short, long_ = step_time(args.short), step_time(4096)
        print(f"{label:<20} alloc chain {short:6.1f} ns a step ({args.short} steps), "
              f"{long_:6.1f} ns (4096 steps); clocks {state}", flush=True)


if __name__ == "__main__":
    main()
