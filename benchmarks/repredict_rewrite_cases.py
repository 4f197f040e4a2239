"""Re-predict saved `hetprof validate-rewrites` reports under the current code and a profile,
against their measurements (which no model enters): for a change to how a rewrite's parts are
predicted after the device run.

    python benchmarks/repredict_rewrite_cases.py PROFILE.json OUT.json REWRITES.json ...

(benchmarks/repredict_rewrites.py moves only the kernels' share of a prediction, between two
checkouts; this script predicts every part again under this checkout.)

Each case (program, rewrite, size) is evaluated again before and after its rewrite, exactly as
`validate-rewrites` evaluates it (models.opencl.validate_rewrites.measure). Its parts are run
once on this machine's PoCL device, for what the predictions read of a run and what no device
changes: the words the backend copies in and out, its kernel plan and each kernel's work items.
The CPU parts are priced on the compute units the report's CPU device had
(`cpu_compute_units`), not this machine's. The measured times are the report's. OUT.json is
the merged report with each case's predictions replaced, its summary recomputed, and a
`repredicted` note (the profile, and when); OUT.md beside it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.repredict import program_path  # noqa: E402  (the suite's, then the examples')
from cli.main import _with_deep_stack  # noqa: E402  (deep recursions, as the CLI evaluates them)
from models.device_profile import load_profile  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402
from models.opencl.validate_rewrites import (  # noqa: E402
    RULES,
    Parts,
    case_json,
    measure,
    merge,
    render_markdown,
    rewrites_of,
)
from profiler.checker import check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402


def measured_as_saved(parts: Parts, saved: dict) -> Parts:
    """`parts` (predicted now) with the measured times of the saved run."""
    return replace(parts, measured_gpu=saved["measured_gpu_s"],
                   measured_cpu=saved["measured_cpu_s"])


def repredict(report: dict, profile, session, cpu_session) -> list[dict]:
    cases = []
    checked_of: dict[str, object] = {}
    memo: dict = {}
    for case in report["cases"]:
        name = case["program"]
        if name not in checked_of:
            path = program_path(name)
            checked_of[name] = check_program(parse(path.read_text(),
                                                   str(path.relative_to(ROOT))))
        checked = checked_of[name]
        chosen, _ = rewrites_of(checked, profile, RULES, [case["rewrite"]])
        if not chosen:
            print(f"{name} {case['rewrite']}: no longer offered; left out", file=sys.stderr)
            continue
        params = case["params"]
        before = measure(session, cpu_session, profile, checked, params, 1, memo)
        after = measure(session, cpu_session, profile, chosen[0].after.checked, params, 1, memo)
        cases.append(case_json(name, case["rewrite"], case["n"], params,
                               measured_as_saved(before, case["before"]),
                               measured_as_saved(after, case["after"]), case["same_value"]))
        print(f"{name} {case['rewrite']} n={case['n']}: predicted "
              f"{case['predicted_speedup']:.3f}x -> {cases[-1]['predicted_speedup']:.3f}x, "
              f"measured {case['measured_speedup']:.3f}x", file=sys.stderr, flush=True)
    return cases


def main() -> None:
    profile_path, out, *inputs = sys.argv[1:]
    profile = load_profile(profile_path)
    reports = [json.loads(Path(p).read_text()) for p in inputs]
    local = select_device("pocl")
    session = DeviceSession(local)
    merged = merge(reports)
    units = merged.get("cpu_compute_units") or reports[0]["cpu_compute_units"]
    cpu_session = DeviceSession(local)
    cpu_session.info = replace(local, compute_units=units)
    result: dict = {}

    def work() -> None:
        cases = []
        for report in reports:
            profile_of = profile.with_gpu(mode=report["gpu_mode"])
            cases += repredict(report, profile_of, session, cpu_session)
        result["report"] = merge([{**merged, "cases": cases}])

    _with_deep_stack(work)
    report = result["report"]
    report["repredicted"] = {"profile": profile_path,
                             "when": datetime.now(UTC).isoformat(timespec="seconds")}
    Path(out).write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    Path(out).with_suffix(".md").write_text(render_markdown(report))
    print(f"{len(report['cases'])} cases: direction right {report['direction_accuracy']:.1%}, "
          f"median speedup error {report['speedup_median_abs_pct_error']:.1f}%")


if __name__ == "__main__":
    main()
