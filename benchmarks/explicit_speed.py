"""How fast the explicit cost semantics is: zipmul at n = 10^3, 10^4, 10^5, one line per case
(seconds to evaluate and analyse, cost-graph nodes per second, peak memory). Issue 4's target for
the explicit evaluator: >= 200 000 nodes per second and <= 2 GB at n = 10^5.

Each case runs `hetprof profile`'s path (evaluate, then `analyse` under 1DF on P = 2 with the
cost-by-source tree and without pictures) in a fresh Python process, so that its peak memory
(the process's maximum resident set size, which includes the interpreter and its imports) is its
own. tracemalloc is not used: it slows every allocation down several times.

    python benchmarks/explicit_speed.py [n ...]
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.setrecursionlimit(100_000)

from graphs.analysis import analyse  # noqa: E402
from graphs.semantics.explicit import evaluate  # noqa: E402
from profiler.checker import check_program  # noqa: E402
from profiler.parser import parse_file  # noqa: E402

EXAMPLE = ROOT / "examples" / "zipmul.lg"


def measure(n: int) -> str:
    """Profile zipmul at n in this process; one line of results."""
    checked = check_program(parse_file(EXAMPLE))
    params = {"n": n}
    start = time.perf_counter()
    evaluation = evaluate(checked, params)
    evaluated = time.perf_counter()
    result = analyse(evaluation, 2, "1df", file=str(EXAMPLE), params=params, body=checked.body,
                     source=checked.program.source, pictures=False)
    done = time.perf_counter()
    # ru_maxrss is in KiB on Linux.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds = done - start
    return (f"zipmul n={n}: {seconds:.2f} s (evaluate {evaluated - start:.2f} s, "
            f"analyse {done - evaluated:.2f} s), {result.nodes} nodes, "
            f"{result.nodes / seconds:,.0f} nodes/s, peak {peak:,.0f} MiB")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(measure(int(sys.argv[2])), flush=True)
    else:
        for size in [int(a) for a in sys.argv[1:]] or [10**3, 10**4, 10**5]:
            # A fresh process per case, so that each peak is the case's own.
            subprocess.run([sys.executable, __file__, "--one", str(size)], check=True)
