"""Re-predict saved `hetprof validate` reports under the current code and another profile,
against their measurements (which no model enters): for a change to a model or its calibration
after the device runs. Each `on`'s kernel under the report's GPU mode (the baselines' fields
other than that mode's are kept: their profiles are the run's), its whole `on` (the transfers'
predictions kept, the kernel's replaced), its CPU part, and so the placements.

    python benchmarks/repredict.py [--draw] PROFILE.json OUT_DIR VALIDATION.json ...

--draw predicts as `validate --allocation-draw process` does, with the one-thread allocation
figures each report's process measured: `pointer_place.by_group` (each work group's, timed
before the programs) where the report has it; else `pointer_place.first_pair` (group 0's, timed
before them: card GPU-f9f620d1's reports of 2026-11-29); else `pointer_place.alloc_s` (group 0's,
timed after them: reports of runs 22-24; a process's figure was steady from start to end in
runs 21, 22 and 25). The groups not measured take the expectation. A report with none keeps
the profile's expectation, and its `repredicted` note says which was used.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.main import _with_deep_stack  # noqa: E402  (deep recursions, as the CLI evaluates them)
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import GPU_MODES, load_profile  # noqa: E402
from models.opencl.predict import SymbolicPredictions  # noqa: E402
from models.opencl.validate import (  # noqa: E402
    CPU_PART,
    _variants,
    cpu_model_name,
    explicit_predictions,
    size_params,
    summarise,
    with_group_allocations,
)
from profiler.checker import bind_parameters, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402


def program_path(name: str) -> Path:
    folders = [ROOT / "benchmarks" / f for f in ("suite", "divergence", "warps")] + [ROOT / "examples"]
    for folder in folders:
        if (folder / f"{name}.lg").exists():
            return folder / f"{name}.lg"
    raise SystemExit(f"no program {name}.lg in benchmarks/suite, divergence, warps or examples")


def predictions(name: str, n: int, profile, mode: str, processors: int) -> list:
    """Each `on`'s predictions (OnPrediction) for program `name` at size n, as `validate` makes
    them."""
    path = program_path(name)
    checked = check_program(parse(path.read_text(), str(path.relative_to(ROOT))))
    gpu, cpu = _variants(checked)
    params = bind_parameters(checked, size_params(checked, n, name))
    baselines = {m: profile.with_gpu(mode=m) for m in GPU_MODES if m != mode}
    predicted = SymbolicPredictions(gpu, cpu, profile, mode, baselines, processors).at(params)
    if predicted is None:
        _, _, predicted = explicit_predictions(
            gpu, cpu, params, EvaluationOptions(profile=profile, gpu_mode=mode), baselines,
            processors)
    return predicted


def _error(case: dict) -> float:
    return 100 * (case["predicted_s"] - case["measured_s"]) / case["measured_s"]


def drawn(report: dict, profile) -> tuple[object, str]:
    """`profile` with the allocation figures `report`'s process measured (the module's
    docstring, --draw), and which were used."""
    place = report.get("pointer_place") or {}
    gpu = profile.gpu
    if not gpu.seconds_per_unit or gpu.mode != "cache":
        return profile, "the profile's expectation (not a cache profile in seconds)"
    for key, what in (("by_group", "each work group's, timed before the programs"),
                      ("first_pair", "group 0's, timed before the programs")):
        figures = place.get(key) or {}
        if figures.get("used"):
            one = figures["alloc_s"]
            return (with_group_allocations(profile, one if isinstance(one, list) else [one]),
                    f"the process's one-thread allocations: {what}")
    if place.get("alloc_s"):
        return (with_group_allocations(profile, [place["alloc_s"]]),
                "the process's one-thread allocation (group 0), timed after the programs")
    return profile, "the profile's expectation (the report has no figure of its process)"


def repredict(report: dict, profile, profile_path: Path, draw: bool = False) -> dict:
    """`report` re-predicted under `profile` (the module's docstring). The CPU part of an `on`
    that runs more than once is all its runs (validate.CPU_PART): in a report made before that,
    its case measured the first run alone, so it is left out with its placement, and the
    report's `repredicted` note names them."""
    mode = report["gpu_mode"]
    profile = profile.with_gpu(mode=mode)
    used = "the profile's expectation"
    if draw:
        profile, used = drawn(report, profile)
    processors = int(report.get("cpu_processors") or profile.cpu.processors or 1)
    every_run = report.get("cpu_part") == CPU_PART
    keys = sorted({(c["program"], c["n"]) for c in report["cases"] if c["part"] == "kernel"})
    dropped: list[str] = []
    for name, n in keys:
        fresh = predictions(name, n, profile, mode, processors)
        placements = iter(p for p in report["placements"] if (p["program"], p["n"]) == (name, n))
        k, kernel_change = -1, 0.0
        on_predicted: list[float] = []
        for case in [c for c in report["cases"] if (c["program"], c["n"]) == (name, n)]:
            if case["part"] == "kernel":
                k += 1
                kernel_change = fresh[k].kernel - case["predicted_s"]
                case["predicted_s"] = fresh[k].kernel
                if f"{mode}_s" in case:
                    case[f"{mode}_s"] = fresh[k].kernel
            elif case["part"] == "on":
                case["predicted_s"] += kernel_change
                on_predicted.append(case["predicted_s"])
            elif case["part"] == "cpu":
                runs = [j for j, p in enumerate(fresh) if p.centre == fresh[k].centre]
                placement = next(placements)
                if not every_run and len(runs) > 1:  # measured one run of several
                    report["cases"].remove(case)
                    report["placements"].remove(placement)
                    dropped.append(f"{name} n={n}")
                    continue
                cpu = fresh[runs[0]].cpu
                assert cpu is not None, (name, n)
                case["predicted_s"] = cpu
                gpu = sum(on_predicted[j] for j in runs)
                placement["predicted"] = "gpu" if gpu < cpu else "cpu"
            else:
                continue
            case["error_pct"] = _error(case)
    report["cpu_model"] = cpu_model_name(profile)
    report["repredicted"] = {
        "what": f"the kernels under `{mode}`, the whole `on`s, the CPU parts and the placements, "
                "by benchmarks/repredict.py",
        "profile": profile.name, "profile_file": profile_path.name,
        "profile_notes": list(profile.notes[-2:]),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "allocation_draw": used,
    }
    if dropped:
        report["repredicted"]["cpu_parts_left_out"] = (
            "an `on` that runs more than once, whose first run alone was measured: "
            + ", ".join(dropped))
    return summarise(report)


def main(profile_path: Path, out_dir: Path, reports: list[Path], draw: bool = False) -> None:
    profile = load_profile(profile_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in reports:
        report = repredict(json.loads(path.read_text()), profile, profile_path, draw)
        (out_dir / path.name).write_text(json.dumps(report, indent=1) + "\n")
        print(f"{path.name}: kernel median {report['kernel_median_abs_pct_error']:.1f}%, CPU part "
              f"median {report['cpu_median_abs_pct_error']:.1f}%, placement "
              f"{100 * report['placement_accuracy']:.0f}%", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    draw = bool(args) and args[0] == "--draw"
    args = args[1:] if draw else args
    if len(args) < 3:
        raise SystemExit(__doc__)
    _with_deep_stack(lambda: main(Path(args[0]), Path(args[1]), [Path(p) for p in args[2:]],
                                  draw))
