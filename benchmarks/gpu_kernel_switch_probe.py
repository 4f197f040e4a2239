"""Whether a launch costs more when the kernel differs from the one launched before it, or when
the kernel's code is large (issue 14: the suite's small kernels took 7-11 µs each in validate's
runs on the H200, where the same launch measured alone, one kernel over and over, takes 5-6.5 µs;
an `on`'s plan launches a different kernel at every step, and its program holds every kernel of the
`on`).

Kernels with the generated code's arguments (models/opencl/codegen.py's COMMON), built into one
program: `empty0..2` (calibrate_cache.GENERATED_EMPTY under three names: what `calibrate` times
as the launch) and `big0..2`, the same with `--lines` lines of straight code behind a branch that
never runs (the code is large, the work nil). Each launch is timed by its event (start to end, as
the runner times kernels); medians of `--runs` per pattern:
- `same`: one kernel launched over and over (calibrate's pattern);
- `rotate`: the three kernels in turn, each launch a different kernel from the last (an `on`'s
  plan: serial1, iota3, map4, serial1, ...);
- `rotate, copies`: as `rotate` with the runner's small blocking copies before each launch.
`empty` and `big` rows apart. Nothing is fitted.

    python benchmarks/gpu_kernel_switch_probe.py [--device nvidia] [--runs 61] [--lines 1500]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.codegen import PRELUDE  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_step_launch_probe import runner_buffers, runner_copies  # noqa: E402


def program_source(lines: int) -> str:
    """Three empty kernels and three with `lines` lines of dead code, all with COMMON."""
    parts = [PRELUDE]
    for k in range(3):
        parts.append(f"__kernel void empty{k}(COMMON, const long n, const long out) {{\n"
                     f"    if (get_global_id(0) == 0 && n < 0) heap[out] = bases[0] + caps[0]"
                     f" + aps[0] + err[0] + {k};\n}}\n")
        body = "\n".join(f"        acc = acc * {2 * j + 3} + heap[(out + {j}) & 1023];"
                         for j in range(lines))
        parts.append(f"__kernel void big{k}(COMMON, const long n, const long out) {{\n"
                     f"    if (get_global_id(0) == 0 && n < 0) {{\n        long acc = {k};\n"
                     f"{body}\n        heap[out] = acc;\n    }}\n}}\n")
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--runs", type=int, default=61)
    parser.add_argument("--lines", type=int, default=1500)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    queue = session.queue
    words = 1 << 16
    heap, small = runner_buffers(session, words)
    program = session.program(program_source(args.lines))
    kernels = {f"{kind}{k}": session.kernel(program, f"{kind}{k}")
               for kind in ("empty", "big") for k in range(3)}
    print(f"device: {session.info.describe()}; big kernels {args.lines} lines of dead code; "
          f"medians of {args.runs} launches")

    def copies() -> None:
        runner_copies(session, words, small)

    def timed(names: list[str], before) -> tuple[float, float]:
        samples = []
        for run in range(args.runs + 3):
            if before is not None:
                before()
            event = kernels[names[run % len(names)]](queue, (1,), (1,), heap, *small,
                                                     np.int64(7), np.int64(0))
            seconds = event_seconds(event)
            if run >= 3:
                samples.append(seconds)
        return statistics.median(samples), min(samples)

    for kind in ("empty", "big"):
        for pattern, names, before in (
                ("same", [f"{kind}0"], None),
                ("rotate", [f"{kind}{k}" for k in range(3)], None),
                ("same, copies", [f"{kind}0"], copies),
                ("rotate, copies", [f"{kind}{k}" for k in range(3)], copies)):
            median, fastest = timed(names, before)
            print(f"{kind:<6} {pattern:<15} median {median * 1e6:6.2f} µs, fastest "
                  f"{fastest * 1e6:5.2f} µs", flush=True)


if __name__ == "__main__":
    main()
