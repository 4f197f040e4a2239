"""How fast symbolic profiling is: every example at n = 10^9 (every size parameter), one line per
case: seconds to build the compressed cost graph and its formulas, seconds to evaluate them at
n = 10^9, and what they give. Issue 4's target: at most 1 s per example at any n.

    python benchmarks/symbolic_speed.py [n]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphs.semantics.symbolic import NotRegular  # noqa: E402
from graphs.symbolic_profile import symbolic_profile  # noqa: E402
from profiler.checker import check_program  # noqa: E402
from profiler.parser import parse_file  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def measure(path: Path, n: int) -> str:
    checked = check_program(parse_file(path))
    values = {p.name: n for p in checked.program.params}
    if path.stem == "strided":
        values["s"] = 33
    start = time.perf_counter()
    try:
        profile = symbolic_profile(checked, values=values)
        formulas = profile.formulas()
        built = time.perf_counter()
        at = profile.at(values)
    except NotRegular as irregular:
        return (f"{path.stem}: not regular ({irregular.message}) after "
                f"{time.perf_counter() - start:.2f} s")
    done = time.perf_counter()
    sizes = ", ".join(f"{k}={v:.0e}" if v >= 1000 else f"{k}={v}" for k, v in values.items())
    return (f"{path.stem} ({sizes}): formulas {built - start:.2f} s, values {done - built:.2f} s, "
            f"total {done - start:.2f} s; work {at['work']:.4g}, span {at['span']:.4g}, "
            f"{at['nodes']:.3g} explicit nodes; work = {formulas['work']}"[:240])


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 10**9
    for example in sorted(EXAMPLES.glob("*.lg")):
        print(measure(example, size), flush=True)
