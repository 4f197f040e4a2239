"""Issue 15's calibration noise, measured apart: how steady a CPU kernel's launch is on the OpenCL
CPU device, the figure every small CPU part of the suite is mostly made of.

Until 2026-11-27 `hetprof calibrate` took `launch_s` as the median of 21 launches of an empty
kernel. Three
calibrations on the H200's hosts within an hour (2026-11-27) gave 23.7, 28.7 and 45.1 µs, while
the suite's serial_loop at n = 25 (one kernel of one work item, 25 steps) measured 23.1 µs.
Each of `rounds` rounds prints the distribution of the profiled event times (start to end, as
the suite times kernels: min, p10, p25, median, p75, p90, mean) of `launches` launches of an
empty kernel of one work item taking the generated code's arguments (`calibrate_cpu`'s
EMPTY_COMMON, as the backend launches a serial step): back to back; each followed by a blocking
read of the error word, as the runner checks it; three different kernels in turn; and three in
turn after the host copied 2^22 words in, as the runner moves an `on`'s inputs in first
(`calibrate_cpu.launches_after`, whose median after 2^10 ... 2^22 words the profile keeps).
`--beside nvidia` opens the GPU too, as `hetprof validate` holds it. Nothing is fitted here.

    python benchmarks/cpu_launch_probe.py [--device pocl] [--rounds 3] [--launches 400]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cpu import EMPTY_COMMON, THREE_KERNELS, launches_after  # noqa: E402
from models.opencl.runner import (  # noqa: E402
    DeviceSession,
    event_seconds,
    select_device,
    time_kernel,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="pocl")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launches", type=int, default=400)
    parser.add_argument("--beside", default="",
                        help="also open this device (e.g. nvidia) and run a kernel on it first, "
                             "as `hetprof validate` holds the GPU while it times the CPU")
    args = parser.parse_args()
    beside = None
    if args.beside:
        beside = DeviceSession(select_device(args.beside))
        time_kernel(beside, EMPTY_COMMON, "empty_common", 1, None,
                    [np.zeros(16, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int32),
                     np.zeros(4, np.int32), np.zeros(1, np.int32), np.zeros(16, np.int64)], [], 3)
        print(f"# with {beside.info.describe()} open beside")
    session = DeviceSession(select_device(args.device))
    print(f"# {session.info.describe()}; {args.launches} launches a round; µs")
    print("round  min    p10    p25    median p75    p90    mean   (launches)")
    for round_ in range(args.rounds):
        for between in (False, True):
            samples = sorted(s * 1e6 for s in _launches(session, args.launches, between))
            _show(f"{round_}{' copy' if between else ''}", samples)
        samples = sorted(s * 1e6 for s in _turns(session, args.launches))
        _show(f"{round_} turns", samples)
        samples = sorted(s * 1e6 for s in launches_after(session, 1 << 22, args.launches // 4))
        _show(f"{round_} after", samples)


def _turns(session: DeviceSession, count: int) -> list[float]:
    """The event times of `count` launches of three different kernels of one program in turn
    (a serial step, an iota and a map of the backend's plan, say), each of one work item."""
    cl = session.cl
    program = session.program(THREE_KERNELS)
    kernels = [session.kernel(program, f"step{k}") for k in range(3)]
    sizes = (8 << 22, 32, 16, 16, 4, 128)
    buffers = [cl.Buffer(session.context, cl.mem_flags.READ_WRITE, size) for size in sizes]
    samples = []
    for run in range(count + 3):
        event = kernels[run % 3](session.queue, (1,), None, *buffers)
        seconds = event_seconds(event)
        if run >= 3:
            samples.append(seconds)
    return samples


def _launches(session: DeviceSession, count: int, between: bool) -> list[float]:
    """The event times of `count` launches of the empty kernel with the backend's arguments;
    `between`: each followed by a blocking read of the error word, as the backend's runner
    checks it before every step (runner.run_offload's `check_full`), else back to back."""
    if not between:
        buffers = [np.zeros(1 << 22, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int32),
                   np.zeros(4, np.int32), np.zeros(1, np.int32), np.zeros(16, np.int64)]
        timing, _ = time_kernel(session, EMPTY_COMMON, "empty_common", 1, None, buffers, [],
                                count)
        return timing.samples
    cl = session.cl
    kernel = session.kernel(session.program(EMPTY_COMMON), "empty_common")
    flags = cl.mem_flags.READ_WRITE
    sizes = (8 << 22, 32, 16, 16, 4, 128)
    buffers = [cl.Buffer(session.context, flags, size) for size in sizes]
    err = np.zeros(1, np.int32)
    samples = []
    for run in range(count + 1):
        event = kernel(session.queue, (1,), None, *buffers)
        seconds = event_seconds(event)
        cl.enqueue_copy(session.queue, err, buffers[4]).wait()
        if run:
            samples.append(seconds)
    return samples


def _show(label: str, samples: list[float]) -> None:
    """One line: the distribution of `samples` (µs, sorted)."""
    def at(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))]

    print(f"{label:<6} {samples[0]:<6.1f} {at(0.1):<6.1f} {at(0.25):<6.1f} "
          f"{statistics.median(samples):<6.1f} {at(0.75):<6.1f} {at(0.9):<6.1f} "
          f"{statistics.fmean(samples):.1f}")


if __name__ == "__main__":
    main()
