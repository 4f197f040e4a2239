"""How fast the explicit cost semantics is: zipmul at n = 10^3, 10^4, 10^5, one line per case
(seconds to evaluate and analyse, cost-graph nodes per second, peak memory). Issue 4's target for
the explicit evaluator: >= 200 000 nodes per second and <= 2 GB at n = 10^5.

    python benchmarks/explicit_speed.py [n ...]
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.setrecursionlimit(100_000)

from graphs.analysis import analyse  # noqa: E402
from profiler.checker import check_program  # noqa: E402
from profiler.evaluator import evaluate  # noqa: E402
from profiler.parser import parse_file  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "zipmul.lg"


def measure(n: int) -> str:
    checked = check_program(parse_file(EXAMPLE))
    tracemalloc.start()
    start = time.perf_counter()
    evaluation = evaluate(checked, {"n": n})
    evaluated = time.perf_counter()
    analyse(evaluation, 2, "1df", pictures=False)
    done = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    nodes = evaluation.graph.graph.number_of_nodes()
    return (f"zipmul n={n}: evaluate {evaluated - start:.2f} s, analyse {done - evaluated:.2f} s, "
            f"{nodes} nodes, {nodes / (done - start):,.0f} nodes/s, "
            f"peak {peak / 2**20:,.0f} MiB")


if __name__ == "__main__":
    for size in [int(a) for a in sys.argv[1:]] or [10**3, 10**4, 10**5]:
        print(measure(size), flush=True)
