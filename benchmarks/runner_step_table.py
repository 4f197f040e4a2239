"""The calibrated runner step beside the step the suite's small kernels paid, run by run (issue 14).

`hetprof calibrate` measures a kernel step's cost beyond its predicted work on a program of its own
(models/opencl/calibrate.py's `runner_step_launch`) and the cache mode charges it as every
kernel's launch. This reads saved suite runs (the per-program `validate` JSON reports, which
record each case's measured and predicted kernel times and its steps) and prints, for each run,
the profile's step beside what the suite's small kernels paid a step beyond the same model's
work: the launch plus (measured - predicted) / steps, over the kernel cases predicted under
`--small` seconds, the one-thread loops and the large-table programs left out (their misses are
their loops' and their page walks', not the launch's). Nothing here is measured anew or fitted.

    python benchmarks/runner_step_table.py [--by-step] RUN_DIR PROFILE.json [RUN_DIR PROFILE.json ...]

`--by-step` re-evaluates the programs under each profile and prints every step kind's miss by
work items: where in an `on` the steps' cost beyond the model lies (the first kernel after the
copy, or the later ones; at which sizes).
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


def program_path(name: str) -> Path:
    """A validated program's source: a suite program, or one of benchmarks/runner_programs."""
    for folder in PROGRAM_FOLDERS:
        if (path := ROOT / "benchmarks" / folder / f"{name}.lg").exists():
            return path
    raise SystemExit(f"no program {name}.lg in benchmarks/{{{','.join(PROGRAM_FOLDERS)}}}")


PROGRAM_FOLDERS = ("suite", "runner_programs")


def steps_by_kind(run: Path, profile, small_s: float) -> dict[tuple[str, int], list[float]]:
    """Each step of the small kernel cases, measured less what the profile's cache mode predicts
    for that step's phase (the launch included), in seconds, keyed by the step's kind ("first"
    for the `on`'s first kernel, which also pays the page walks after the copy; else the
    generated kernel's kind: iota, map, ...) and its work items. The programs are evaluated
    again under `profile` (`program_path`'s NAME.lg at the case's n); an `on` whose phases do
    not line up with its measured steps, or whose prediction differs from the report's, is left
    out."""
    from graphs.devicebox import phase_launches
    from graphs.semantics.explicit import OffloadCollector, evaluate
    from graphs.semantics.options import EvaluationOptions
    from profiler.checker import bind_parameters, check_program
    from profiler.parser import parse_file

    unit = profile.gpu.unit_seconds
    gaps: dict[tuple[str, int], list[float]] = {}
    for path in sorted(run.glob("val_*.json")):
        cases = [c for c in json.loads(path.read_text())["cases"]
                 if c["part"] == "kernel" and c["program"] not in LEFT_OUT and c["steps"]]
        for n in sorted({c["n"] for c in cases}):
            at_n = [c for c in cases if c["n"] == n]
            if min(c.get("cache_s") or c["predicted_s"] for c in at_n) > small_s:
                continue
            checked = check_program(parse_file(program_path(at_n[0]["program"])))
            collector = OffloadCollector()
            evaluate(checked, bind_parameters(checked, {"n": n}),
                     EvaluationOptions(profile=profile, gpu_mode="cache", observer=collector))
            ons = [o for o in collector.offloads if o.on is not None]
            for case, offload in zip(at_n, ons, strict=False):
                phases = offload.on.info.box.phases
                predicted = case.get("cache_s") or case["predicted_s"]
                launching = [p for p in phases if phase_launches(p)]
                total = sum(p.time for p in phases) * unit
                if (len(launching) != len(case["steps"])
                        or abs(total - predicted) > 0.01 * predicted):
                    continue
                for k, (phase, step) in enumerate(zip(launching, case["steps"], strict=True)):
                    kind = "first" if k == 0 else step["kernel"].rstrip("0123456789")
                    gaps.setdefault((kind, step.get("work_items", 1)), []).append(
                        step["median_s"] - phase.time * unit)
    return gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", metavar="RUN_DIR PROFILE.json")
    parser.add_argument("--small", type=float, default=60e-6,
                        help="the largest predicted kernel time counted as small (seconds)")
    parser.add_argument("--by-step", action="store_true",
                        help="each step kind and work-item count: measured less predicted")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give each run's folder with its profile")
    if args.by_step:
        print("run | step (first: the `on`'s first kernel), work items | measured - predicted "
              "(µs): median [least..most] (steps)")
        for run, profile_path in zip(args.pairs[::2], args.pairs[1::2], strict=True):
            gaps = steps_by_kind(Path(run), load_profile(profile_path), args.small)
            for (kind, items), values in sorted(gaps.items()):
                print(f"{Path(run).name} | {kind} {items} | {statistics.median(values) * 1e6:+.2f} "
                      f"[{min(values) * 1e6:+.2f}..{max(values) * 1e6:+.2f}] ({len(values)})")
        return
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
