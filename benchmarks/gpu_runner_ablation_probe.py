"""Where a small generated kernel's time goes in the runner (issue 14: in validate's runs on the
H200 each kernel of a small `on` takes 8-12 µs, where the same launch alone takes 5-6.5 µs, and
neither a kernel switch, the code's size, the runner's small copies nor fresh buffers explain it:
benchmarks/gpu_kernel_switch_probe.py, gpu_step_launch_probe.py).

Each case's GPU `on` is run as `validate` runs it (models/opencl/runner.py's run_offload), with
the runner's kernel launches wrapped: each step's launch is timed as the runner times it (its
event, start to end: `first`), and then, in the same state,
- `again`: the same kernel launched once more at once (its allocations land past the first's;
  the value is still checked);
- `empty before`: the generated empty kernel (calibrate's launch) launched just before the step's
  kernel, timed apart (not with `--no-empty`);
and the event's queued-to-start and submit-to-start times of `first`. Medians over the runs.
Nothing is fitted.

    python benchmarks/gpu_runner_ablation_probe.py --profile PROFILE.json [--device nvidia]
        [--repeats 15] PROGRAM:N ...
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate_cache import GENERATED_EMPTY  # noqa: E402
from models.opencl.runner import DeviceSession, run_offload, select_device  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_kernel_steps_probe import case_offloads  # noqa: E402


class _Timed:
    """A kernel whose every launch is recorded: (kernel, first, again, empty before, queued to
    start, submitted to start), seconds."""

    def __init__(self, kernel, name: str, empty, rows: list):
        self.kernel, self.name, self.empty, self.rows = kernel, name, empty, rows

    def __call__(self, queue, global_size, local_size, *args):
        common = args[:6]
        before = None
        if self.empty is not None:
            before = self.empty(queue, (1,), (1,), *common, np.int64(1), np.int64(0))
            before.wait()
        first = self.kernel(queue, global_size, local_size, *args)
        first.wait()
        again = self.kernel(queue, global_size, local_size, *args)
        again.wait()
        p, q = first.profile, again.profile
        self.rows.append((self.name, (p.end - p.start) * 1e-9, (q.end - q.start) * 1e-9,
                          (before.profile.end - before.profile.start) * 1e-9 if before else 0.0,
                          (p.start - p.queued) * 1e-9, (p.start - p.submit) * 1e-9))
        return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-empty", action="store_true",
                        help="no empty kernel before each step (its column reads 0)")
    parser.add_argument("cases", nargs="+", help="PROGRAM:N (a suite program or an example)")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    session = DeviceSession(select_device(args.device))
    empty = session.cl.Kernel(session.program(GENERATED_EMPTY), "generated_empty")
    rows: list = []
    plain_kernel = session.kernel

    def kernel(program, name: str):
        return _Timed(plain_kernel(program, name), name, None if args.no_empty else empty, rows)

    session.kernel = kernel  # type: ignore[method-assign]
    print(f"device: {session.info.describe()}; profile {args.profile.name}; medians of "
          f"{args.repeats} runs after a warm-up, µs")
    for case in args.cases:
        name, n, gpu, _, params, offloads, _ = case_offloads(case, profile)
        for k, offload in enumerate(offloads):
            rows.clear()
            run = run_offload(session, offload, gpu.types, params, repeats=args.repeats)
            if run.matches is False:
                print(f"{name} n={n} on{k}: the value differs from the interpreter's")
            by_kernel: dict[str, list] = {}
            for row in rows:
                by_kernel.setdefault(row[0], []).append(row[1:])
            print(f"\n{name} n={n} on{k}")
            for kernel_name, samples in by_kernel.items():
                cols = [statistics.median(c) * 1e6 for c in zip(*samples, strict=True)]
                print(f"  {kernel_name:<10} first {cols[0]:7.2f}  again {cols[1]:7.2f}  "
                      f"empty before {cols[2]:6.2f}  queued->start {cols[3]:7.2f}  "
                      f"submit->start {cols[4]:7.2f}  ({len(samples)} launches)", flush=True)


if __name__ == "__main__":
    main()
