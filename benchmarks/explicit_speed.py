"""How fast the explicit cost semantics is, through the CLI's own path: `hetprof profile
examples/X.lg --param n=N --format F -o FILE`, each case in a fresh Python process, one line per
case (wall seconds, cost-graph nodes per second, peak memory, and the load average when it ran).

Issue 20's targets: zipmul and dot at n = 10^5 at >= 1 000 000 nodes per second and <= 300 MiB
in every format, JSON within 1.2x of text; zipmul at n = 10^6 (12 M nodes) within 2 GB; nbody at
n = 512 in <= 3 s.

A case's wall time is the whole command, from starting the interpreter to writing the report; its
peak memory is the process's maximum resident set size (os.wait4's ru_maxrss, which includes the
interpreter and its imports). tracemalloc is not used: it slows every allocation down several
times. The node count is read from the case's CSV report (run first). The machine's load average
goes with each line: on a shared machine a number measured under load is slower than it should be.
Each case runs with the CLI's default limits, as a user would run it, unless they stop it; then
with the limits raised (`RAISED`), which its lines say. Each line also says whether the compiled
passes were built before it ran (`graphs.passes`: the first large run of a checkout builds them).

Bytecode, as `benchmarks/latency.py` takes it: the project's modules are compiled first
(`compileall`, into their __pycache__) and the cases run without PYTHONDONTWRITEBYTECODE, as an
installed package's modules are read; where that variable is set (this project's machine sets
it) and nothing wrote the cache, every command compiles hetprof's own modules from source,
about 0.06 s of each case's time (2026-11-28). `--no-bytecode-cache` runs the cases with the
environment as it is.

    python benchmarks/explicit_speed.py                       # the cases of issue 20
    python benchmarks/explicit_speed.py zipmul=1e5 dot=1e5    # chosen cases
    python benchmarks/explicit_speed.py --formats text,json zipmul=1e6
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.latency import cached_bytecode  # noqa: E402

FORMATS = ("csv", "text", "json", "dot", "trace", "html")
CASES = ("zipmul=1e5", "dot=1e5", "nbody=512", "zipmul=1e6")
LARGEST_GRAPH = 20_000_000  # --max-graph-size for the cases (zipmul at 10^6 has 12 M nodes)


RAISED = ["--max-graph-size", str(LARGEST_GRAPH), "--max-steps", str(10**9)]
"""The limits a case runs with where the defaults stop it (zipmul at 10^6): raising --max-steps
past its default also makes the CLI count the graph's nodes first with the symbolic profile
(cli/commands.py's `_refuse_a_graph_too_large`), which loads sympy: about 30 MiB more at its
peak (zipmul 10^5 text: 338 MiB with them, 306 MiB without, 2026-11-27)."""


def run_case(example: str, n: int, fmt: str, output: Path, raised: bool = False,
             env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """Run one case in a fresh process, with `RAISED`'s limits or the CLI's defaults, in `env`
    (default: this one): (wall seconds, peak MiB, exit status, its error output)."""
    command = [sys.executable, "-m", "cli", "profile", str(ROOT / "examples" / f"{example}.lg"),
               "--param", f"n={n}", "--format", fmt, "-o", str(output),
               *(RAISED if raised else [])]
    environment = {**(os.environ if env is None else env), "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    # In ROOT: `python -m` puts the working directory first on the path.
    process = subprocess.Popen(command, env=environment, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    # ru_maxrss: KiB on Linux
    return seconds, usage.ru_maxrss / 1024, process.returncode, errors.decode(errors="replace")


def needs_raised_limits(errors: str) -> bool:
    """Whether a run stopped at the CLI's default step or graph limit (its error names them)."""
    return "--max-steps" in errors or "--max-graph-size" in errors


def compiled_state() -> str:
    """Whether the compiled passes are built (`graphs.passes`): a case of over 20 000 edges run
    before they are builds them first (about 20 s, once per checkout, interpreter and numpy)."""
    sys.path.insert(0, str(ROOT))
    try:
        from graphs.passes import built_path

        return "passes built" if built_path() else "passes not built: this run builds them"
    finally:
        sys.path.remove(str(ROOT))


def nodes_of(csv_report: Path) -> int:
    """The cost graph's node count, from a CSV report's summary rows."""
    with csv_report.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["section"] == "summary" and row["measure"] == "nodes":
                return int(row["value"])
    raise ValueError(f"{csv_report}: no node count")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list(CASES), metavar="EXAMPLE=N")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="run in this environment as it is (PYTHONDONTWRITEBYTECODE as set)")
    args = parser.parse_args()
    formats = args.formats.split(",")
    env = None if args.no_bytecode_cache else cached_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.cases:
            example, _, size = case.partition("=")
            n = int(float(size))
            nodes = None
            raised = False
            # The CSV report first: its node count gives every line its nodes per second. A
            # case runs as a user would run it, with the CLI's default limits, unless its CSV
            # run stopped at one: then every format of it runs with `RAISED`'s.
            for fmt in ["csv"] + [f for f in formats if f != "csv"]:
                output = Path(scratch) / f"report.{fmt}"
                load = os.getloadavg()[0]
                built = compiled_state()
                seconds, peak, status, errors = run_case(example, n, fmt, output, raised, env)
                if status and fmt == "csv" and not raised and needs_raised_limits(errors):
                    raised = True
                    load = os.getloadavg()[0]
                    seconds, peak, status, errors = run_case(example, n, fmt, output, raised, env)
                if status:
                    sys.stderr.write(errors)
                    print(f"{example} n={n} {fmt}: exit {status} after {seconds:.2f} s, peak "
                          f"{peak:,.0f} MiB (load {load:.2f})", flush=True)
                    continue
                if fmt == "csv":
                    nodes = nodes_of(output)
                    if "csv" not in formats:
                        continue
                rate = f"{nodes / seconds:,.0f} nodes/s" if nodes else "? nodes/s"
                limits = ", limits raised" if raised else ""
                print(f"{example} n={n} {fmt}: {seconds:.2f} s, {nodes:,} nodes, {rate}, peak "
                      f"{peak:,.0f} MiB (load {load:.2f}{limits}; {built})", flush=True)


if __name__ == "__main__":
    main()
