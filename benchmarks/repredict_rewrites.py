"""Re-predict a committed rewrite-validation report after a GPU-model change, against its
measurements (which no model enters): each case's predicted GPU parts change by what the device
boxes' kernel times change between the report's profile and the new one (transfers and CPU parts
are priced as before); speedups, directions and errors are recomputed. Writes JSON + markdown.

    python benchmarks/repredict_rewrites.py REPORT.json OLD_PROFILE.json NEW_PROFILE.json \
        OUT.json OUT.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import DeviceProfile, load_profile  # noqa: E402
from models.validate import EXAMPLES  # noqa: E402
from models.validate_rewrites import (  # noqa: E402
    RULES,
    case_json,
    mark_cpu_work,
    render_markdown,
    rewrites_of,
    summarise,
)
from profiler.checker import CheckedProgram, check_program  # noqa: E402
from profiler.evaluator import EvaluationOptions, OffloadCollector, evaluate  # noqa: E402
from profiler.parser import parse  # noqa: E402
from profiler.transform import with_body  # noqa: E402


def kernels(checked: CheckedProgram, params: dict, profile: DeviceProfile) -> float:
    """Σ of the kernel times of the program's `on`s, as `validate_rewrites.measure` prices them."""
    marked = check_program(with_body(checked.program, mark_cpu_work(checked.body)))
    collector = OffloadCollector()
    evaluate(marked, params, EvaluationOptions(profile=profile, gpu_mode=profile.gpu.mode,
                                               observer=collector))
    return sum(o.on.info.kernel for o in collector.offloads if o.on is not None)


class _Parts:
    """A case's side as `case_json` reads it, its predicted GPU time moved by `delta`."""

    def __init__(self, side: dict, delta: float, matches: bool):
        self.side = {**side, "predicted_gpu_s": side["predicted_gpu_s"] + delta}
        self.predicted = self.side["predicted_gpu_s"] + side["predicted_cpu_s"]
        self.measured = side["measured_gpu_s"] + side["measured_cpu_s"]
        self.matches = matches

    def to_json(self) -> dict:
        return self.side


def main(report_path: str, old_path: str, new_path: str, out_json: str, out_md: str) -> None:
    report = json.loads(Path(report_path).read_text())
    old, new = load_profile(old_path), load_profile(new_path)
    programs: dict[str, tuple[CheckedProgram, dict]] = {}
    before_delta: dict[tuple[str, int], float] = {}
    cases = []
    for case in report["cases"]:
        name, params = case["program"], case["params"]
        if name not in programs:
            path = EXAMPLES / f"{name}.lg"
            checked = check_program(parse(path.read_text(), str(path)))
            chosen, _ = rewrites_of(checked, new, RULES)
            programs[name] = (checked, {r.key: r.after.checked for r in chosen})
        checked, after = programs[name]
        key = (name, case["n"])
        if key not in before_delta:
            before_delta[key] = kernels(checked, params, new) - kernels(checked, params, old)
        after_delta = (kernels(after[case["rewrite"]], params, new)
                       - kernels(after[case["rewrite"]], params, old))
        same = case["values_match"]
        cases.append(case_json(name, case["rewrite"], case["n"], params,
                               _Parts(case["before"], before_delta[key], same),
                               _Parts(case["after"], after_delta, same), case["same_value"]))
    out = summarise({**report, "cases": cases, "profile": new.name,
                     "repredicted": f"predictions re-made with {Path(new_path).name} against "
                                    f"the measurements of {Path(report_path).name}"})
    Path(out_json).write_text(json.dumps(out, indent=2) + "\n")
    Path(out_md).write_text(render_markdown(out))
    print(f"{out['case_count']} cases; direction right {100 * out['direction_accuracy']:.1f}%; "
          f"median speedup error {out['speedup_median_abs_pct_error']:.1f}%")


if __name__ == "__main__":
    main(*sys.argv[1:6])
