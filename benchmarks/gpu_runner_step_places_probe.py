"""Whether the calibration's runner step moves with where the runner's buffers land (issue 14).

On one H200 (2026-11-28, docs/validation/kernel-steps-probe-nvidia-h200-2026-11-28.txt) the
calibration's runner microbenchmark (`runner_step_launch`, `RUNNER_STEPS`) measured 7.36, 5.99
and 6.52 µs beyond its work in three processes one after the other, while the suite's small
kernels' 78 steps in each of the same processes came out 0.97-1.08 µs above the profile's
prediction every time: one process's runner step is a draw, as one place of an atomic was
(models/opencl/calibrate_cache.py's `ATOMIC_PLACES`: the L2's near and far halves), and the
runner's steps are chains of the allocation pointer's atomics.

Here `runner_step_launch` runs round after round in one process: with a spacer buffer of k
pages allocated (and kept) before the round, so that the runner's buffers land elsewhere, for
k = 0, 1, 2, ...; then in a fresh OpenCL context each round. Each round's figure is printed, and
the mean and median over the rounds. With `--idle S`: then rounds each after the host idled S
seconds (as the GPU idles while `validate` evaluates a program before running it), rounds at
once, and idled rounds again. Nothing is fitted.

    python benchmarks/gpu_runner_step_places_probe.py --profile PROFILE.json [--device nvidia]
        [--rounds 12] [--repeats 15] [--idle 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate import runner_step_launch  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def summary(label: str, values: list[float]) -> str:
    return (f"{label}: " + " ".join(f"{v * 1e6:.2f}" for v in values)
            + f"  | mean {statistics.mean(values) * 1e6:.2f}, median "
              f"{statistics.median(values) * 1e6:.2f}, spread "
              f"{(max(values) - min(values)) * 1e6:.2f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--idle", type=float, default=0.0,
                        help="then rounds after the host idled this many seconds each, rounds "
                        "at once, and idled rounds again")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    info = select_device(args.device)
    session = DeviceSession(info)
    cl = session.cl
    print(f"device: {session.info.describe()}")
    for page in (4096, 65536, 2 << 20):
        values = []
        for k in range(args.rounds):
            spacer = None
            if k:  # filled, so that the driver gives it memory now
                spacer = cl.Buffer(session.context, cl.mem_flags.READ_WRITE, k * page)
                cl.enqueue_fill_buffer(session.queue, spacer, np.uint8(0), 0, k * page).wait()
            values.append(runner_step_launch(session, profile, args.repeats)[0])
            del spacer
        print(summary(f"spacers of k x {page:,} bytes", values), flush=True)
    values = []
    for _ in range(args.rounds):
        values.append(runner_step_launch(DeviceSession(info), profile, args.repeats)[0])
    print(summary("a fresh context each round", values), flush=True)
    if args.idle:
        for label in ("after the host idled", "at once, round after round",
                      "after the host idled, again"):
            values = []
            for _ in range(args.rounds):
                if "idled" in label:
                    time.sleep(args.idle)
                values.append(runner_step_launch(session, profile, args.repeats)[0])
            print(summary(f"{label} ({args.idle} s)" if "idled" in label else label, values),
                  flush=True)


if __name__ == "__main__":
    main()
