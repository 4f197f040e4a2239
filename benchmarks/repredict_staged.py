"""Re-predict the staged program of a committed kernel validation (examples/strided.lg, the only
example with `on local`) under the current model, against the measurements in the report: its
kernel cases and its bank-conflict slowdowns. No device needed; one line per figure.

    python benchmarks/repredict_staged.py [REPORT.json] [PROFILE.json]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphs.semantics.explicit import evaluate  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import load_profile  # noqa: E402
from profiler.checker import bind_parameters, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402


def main(report_path: Path, profile_path: Path) -> None:
    report = json.loads(report_path.read_text())
    profile = load_profile(profile_path)
    path = ROOT / "examples" / "strided.lg"
    checked = check_program(parse(path.read_text(), str(path)))

    def kernel(params: dict[str, int]) -> float:
        evaluation = evaluate(checked, bind_parameters(checked, params),
                              EvaluationOptions(profile=profile))
        return evaluation.ons[0].info.kernel

    def error(predicted: float, measured: float) -> float:
        return (predicted - measured) / measured * 100

    stride_1 = kernel({"n": 64, "s": 1})
    kernel_errors, conflict_errors = [], []
    for case in report["cases"]:
        if case["program"] == "strided" and case["part"] == "kernel":
            now = kernel({"n": case["n"]})
            kernel_errors.append(abs(error(now, case["measured_s"])))
            print(f"strided kernel n={case['n']}: measured {case['measured_s']:.3g} s, "
                  f"reported {case['predicted_s']:.3g} s ({case['error_pct']:+.1f}%), "
                  f"now {now:.3g} s ({error(now, case['measured_s']):+.1f}%)")
        elif case["part"] == "kernel":
            kernel_errors.append(abs(case["error_pct"]))
        elif case["part"] == "bank_conflict_slowdown":
            now = kernel({"n": 64, "s": case["n"]}) / stride_1
            conflict_errors.append(abs(error(now, case["measured_s"])))
    print(f"kernel median abs. error: reported {report['kernel_median_abs_pct_error']:.1f}%, "
          f"now {statistics.median(kernel_errors):.1f}%")
    print(f"bank-conflict slowdowns: reported max {report['bank_conflict_max_abs_pct_error']:.1f}%,"
          f" now max {max(conflict_errors):.1f}%, median {statistics.median(conflict_errors):.1f}%")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(Path(arguments[0]) if arguments else ROOT / "docs/validation/nvidia-h200-2026-11-26.json",
         Path(arguments[1]) if len(arguments) > 1 else ROOT / "profiles/nvidia-h200.json")
