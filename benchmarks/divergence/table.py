"""The divergence microbenchmarks' table (benchmarks/divergence/README.md): for each saved
`hetprof validate --format json` run of the six programs, the measured kernel times of the all-then
(T), all-else (E) and alternating (A) programs of each kind and size, A - max(T, E) (what running
both sides costs beyond the longer one), and the same difference as each lock-step rule predicts it
under PROFILE (`gpu.lockstep` "edge" and "point", the explicit evaluation).

    python benchmarks/divergence/table.py PROFILE.json RUN.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from graphs.semantics.explicit import evaluate  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import LOCKSTEPS, load_profile  # noqa: E402
from profiler.checker import check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402

SIDES = ("then", "else", "alternate")


def predicted(profile, name: str, n: int) -> dict[str, float]:
    """The program's kernel time in µs under each lock-step rule."""
    path = ROOT / "benchmarks" / "divergence" / f"{name}.lg"
    checked = check_program(parse(path.read_text(), str(path)))
    return {rule: evaluate(checked, {"n": n}, EvaluationOptions(
        profile=profile.with_gpu(lockstep=rule))).ons[0].info.kernel * 1e6 for rule in LOCKSTEPS}


def main(argv: list[str]) -> None:
    profile = load_profile(argv[0])
    measured: dict[tuple[str, int], list[dict[str, float]]] = {}
    for run in argv[1:]:
        cases = {(c["program"], c["n"]): c["measured_s"] * 1e6
                 for c in json.loads(Path(run).read_text())["cases"] if c["part"] == "kernel"}
        for kind in ("select", "branch"):
            for n in sorted({n for (_, n) in cases}):
                if all((f"{kind}_{side}", n) in cases for side in SIDES):
                    measured.setdefault((kind, n), []).append(
                        {side: cases[(f"{kind}_{side}", n)] for side in SIDES})
    print("| kind | n | measured T / E / A (µs), each run | A - max(T, E), each run | "
          "edge: A - max | point: A - max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (kind, n), runs in sorted(measured.items()):
        rules = {side: predicted(profile, f"{kind}_{side}", n) for side in SIDES}
        gaps = {rule: rules["alternate"][rule] - max(rules["then"][rule], rules["else"][rule])
                for rule in LOCKSTEPS}
        times = "; ".join(" / ".join(f"{run[side]:.1f}" for side in SIDES) for run in runs)
        beyond = ", ".join(f"{run['alternate'] - max(run['then'], run['else']):+.1f}"
                           for run in runs)
        print(f"| {kind} | {n} | {times} | {beyond} | {gaps['edge']:+.1f} | "
              f"{gaps['point']:+.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
