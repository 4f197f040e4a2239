"""Re-predict a committed rewrite-validation report after a GPU-model change, against its
measurements (which no model enters). Each case's predicted GPU parts change by what the device
boxes' kernel times change between the model that made the report and the model now
(transfers and CPU parts are priced as before); speedups, directions and errors are recomputed.

    python benchmarks/repredict_rewrites.py kernels REPORT.json PROFILE.json OUT.json
        the kernel times of every case's programs, before and after, under PROFILE and the code
        this script runs with (run it in a checkout of the report's commit for the old side)
    python benchmarks/repredict_rewrites.py apply REPORT.json OLD.json NEW.json PROFILE.json \
        OUT.json OUT.md
        the report with its predictions moved from the OLD kernel times to the NEW ones
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphs.semantics.explicit import OffloadCollector, evaluate  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import DeviceProfile, load_profile  # noqa: E402
from models.opencl.validate import EXAMPLES  # noqa: E402
from models.opencl.validate_rewrites import (  # noqa: E402
    RULES,
    Parts,
    case_json,
    mark_cpu_work,
    render_markdown,
    rewrites_of,
    summarise,
)
from profiler.checker import CheckedProgram, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402
from profiler.transform import with_body  # noqa: E402


def kernels(checked: CheckedProgram, params: dict, profile: DeviceProfile) -> float:
    """Σ of the kernel times of the program's `on`s, as `validate_rewrites.measure` prices them
    (written out here, with what older checkouts have too, so that `kernels` runs in them)."""
    marked = check_program(with_body(checked.program, mark_cpu_work(checked.body)))
    collector = OffloadCollector()
    evaluate(marked, params, EvaluationOptions(profile=profile, gpu_mode=profile.gpu.mode,
                                               observer=collector))
    return sum(o.on.info.kernel for o in collector.offloads if o.on is not None)


def moved(side: dict, delta: float, matches: bool) -> Parts:
    """A case's side (`Parts.to_json`) as `Parts`, its predicted GPU time moved by `delta`."""
    return Parts(side["predicted_gpu_s"] + delta, side["predicted_cpu_s"], side["measured_gpu_s"],
                 side["measured_cpu_s"], side["gpu_parts"], side["cpu_parts"], matches, "")


def kernel_times(report_path: str, profile_path: str, out_path: str) -> None:
    """Write [before, after] kernel times for every case of the report."""
    report = json.loads(Path(report_path).read_text())
    profile = load_profile(profile_path)
    programs: dict[str, tuple[CheckedProgram, dict]] = {}
    before: dict[tuple[str, int], float] = {}
    times = []
    for case in report["cases"]:
        name, params = case["program"], case["params"]
        if name not in programs:
            path = EXAMPLES / f"{name}.lg"
            checked = check_program(parse(path.read_text(), str(path)))
            chosen, _ = rewrites_of(checked, profile, RULES)
            programs[name] = (checked, {r.key: r.after.checked for r in chosen})
        checked, after = programs[name]
        if (name, case["n"]) not in before:
            before[name, case["n"]] = kernels(checked, params, profile)
        times.append([before[name, case["n"]], kernels(after[case["rewrite"]], params, profile)])
    Path(out_path).write_text(json.dumps(times, allow_nan=False) + "\n")


def apply(report_path: str, old_path: str, new_path: str, profile_path: str, out_json: str,
          out_md: str) -> None:
    """The report with each case's predicted GPU time moved by (new - old) kernel time."""
    report = json.loads(Path(report_path).read_text())
    old, new = json.loads(Path(old_path).read_text()), json.loads(Path(new_path).read_text())
    cases = []
    for case, (old_before, old_after), (new_before, new_after) in zip(
            report["cases"], old, new, strict=True):
        same = case["values_match"]
        cases.append(case_json(
            case["program"], case["rewrite"], case["n"], case["params"],
            moved(case["before"], new_before - old_before, same),
            moved(case["after"], new_after - old_after, same), case["same_value"]))
    profile = load_profile(profile_path)
    out = summarise({**report, "cases": cases, "profile": profile.name,
                     "repredicted": f"predictions re-made with {Path(profile_path).name} and "
                                    f"the model now, against the measurements of "
                                    f"{Path(report_path).name}"})
    Path(out_json).write_text(json.dumps(out, indent=2, allow_nan=False) + "\n")
    Path(out_md).write_text(render_markdown(out))
    print(f"{out['case_count']} cases; direction right {100 * out['direction_accuracy']:.1f}%; "
          f"median speedup error {out['speedup_median_abs_pct_error']:.1f}%")


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"kernels": kernel_times, "apply": apply}[command](*arguments)
