"""The calibrated runner step beside the step the suite's small kernels paid, run by run (issue 14).

`hetprof calibrate` measures a kernel step's cost beyond its predicted work on a program of its own
(models/opencl/calibrate.py's `runner_step_launch`) and the cache mode charges it as every
kernel's launch. This reads saved suite runs (the per-program `validate` JSON reports, which
record each case's measured and predicted kernel times and its steps) and prints, for each run,
the profile's step beside what the suite's small kernels paid a step beyond the same model's
work: the launch plus (measured - predicted) / steps, over the kernel cases predicted under
`--small` seconds, the one-thread loops and the large-table programs left out (their misses are
their loops' and their page walks', not the launch's). Nothing here is measured anew or fitted.

    python benchmarks/runner_step_table.py RUN_DIR PROFILE.json [RUN_DIR PROFILE.json ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models.device_profile import load_profile  # noqa: E402

LEFT_OUT = ("serial_loop", "recurrence", "sample", "lookup")
"""Programs whose kernel misses are not the step's: one-thread loops (their allocations' places)
and a few reads of a large table (its page walks)."""


def suite_steps(run: Path, launch_s: float, small_s: float) -> dict[int, list[float]]:
    """Each small kernel case's step beyond the model's work, in seconds, keyed by log2 of the
    case's largest step's work items."""
    steps: dict[int, list[float]] = {}
    for path in sorted(run.glob("val_*.json")):
        for case in json.loads(path.read_text())["cases"]:
            if case["part"] != "kernel" or case["program"] in LEFT_OUT:
                continue
            predicted = case.get("cache_s") or case["predicted_s"]
            if predicted > small_s or not case["steps"]:
                continue
            items = max(step.get("work_items", 1) for step in case["steps"])
            step = launch_s + (case["measured_s"] - predicted) / len(case["steps"])
            steps.setdefault(int(math.log2(max(1, items))), []).append(step)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", metavar="RUN_DIR PROFILE.json")
    parser.add_argument("--small", type=float, default=60e-6,
                        help="the largest predicted kernel time counted as small (seconds)")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give each run's folder with its profile")
    print("run | calibrated step (µs) | suite's small kernels: median step (µs), cases | "
          "by log2 of the items: median (cases)")
    for run, profile_path in zip(args.pairs[::2], args.pairs[1::2], strict=True):
        profile = load_profile(profile_path)
        launch_s = profile.gpu.launch * profile.gpu.unit_seconds
        by_items = suite_steps(Path(run), launch_s, args.small)
        every = [s for values in by_items.values() for s in values]
        if not every:
            print(f"{Path(run).name} | {launch_s * 1e6:.2f} | no small kernel case")
            continue
        spread = ", ".join(f"2^{k} {statistics.median(v) * 1e6:.2f} ({len(v)})"
                           for k, v in sorted(by_items.items()))
        print(f"{Path(run).name} | {launch_s * 1e6:.2f} | "
              f"{statistics.median(every) * 1e6:.2f}, {len(every)} | {spread}")


if __name__ == "__main__":
    main()
