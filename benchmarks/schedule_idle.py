"""Why the 1DF and BF times on P > 1 processors are bounds, not formulas: the processor time they
leave idle, P·T - W, for n = 1..N, one line per n, beside the symbolic bounds.

The idle time of a greedy schedule of one parmap is not a function of n that floors and ceilings
of bounded depth can write: it follows n's binary digits, because the balanced ⊗ tree splits
⌊n/2⌋ : ⌈n/2⌉ and each policy interleaves the tree's fork and join edges with the threads in its
own order. The lines show it (P = 2, a parmap over iota n, n = 29..33: 1DF leaves 21, 18, 27, 24,
21 units idle; BF 13, 10, 13, 10, 17). The symbolic report therefore gives the bounds every greedy
schedule lies within (graphs.symbolic_profile.time_bounds), and the explicit schedule's exact time beside
them where the graph is small enough.

    python benchmarks/schedule_idle.py [N] [P] [FILE.lg]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphs.schedule import schedule  # noqa: E402
from graphs.semantics.explicit import evaluate  # noqa: E402
from graphs.symbolic_profile import symbolic_profile  # noqa: E402
from profiler.checker import check_program  # noqa: E402
from profiler.parser import parse, parse_file  # noqa: E402

PARMAP = """param n : int = 8
letregion r in
parmap (lambda i: int r [r]. i + 1 at r) (iota n at r) at r
"""


def main(argv: list[str]) -> None:
    upper = int(argv[0]) if argv else 64
    procs = int(argv[1]) if len(argv) > 1 else 2
    program = parse_file(Path(argv[2])) if len(argv) > 2 else parse(PARMAP, "parmap.lg")
    checked = check_program(program)
    name = program.params[0].name
    profile = symbolic_profile(checked, values={name: upper})
    print(f"P = {procs}: {name}, binary, work, idle P*T - W under 1df, bf and ws, "
          "and the symbolic bounds' idle (lower, upper)")
    for n in range(1, upper + 1):
        graph = evaluate(checked, {name: n}).graph
        work = graph.work()
        idle = [procs * schedule(graph, procs, policy, record=False).time - work
                for policy in ("1df", "bf", "ws")]
        lower, upper_bound = profile.time_at({name: n}, procs)
        print(f"{n:5d} {n:>12b} {work:10g}  1df {idle[0]:6g}  bf {idle[1]:6g}  ws {idle[2]:6g}  "
              f"bounds {procs * lower - work:8g} {procs * upper_bound - work:8g}")


if __name__ == "__main__":
    main(sys.argv[1:])
