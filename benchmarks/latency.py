"""How long each `hetprof` command takes on each example at its default sizes: one line per
(command, example) with the wall time and the peak memory, each in a fresh process (as a user
runs it). Issue 19's targets on the 2-core development machine: `--help`, `--version` and `check`
≤ 0.3 s; every other command ≤ 2 s, except `calibrate`, `validate*` and `rewrite --search`;
`rewrite` (with its break-evens) ≤ 10 s.

    python benchmarks/latency.py [--commands check,profile,...] [--examples zipmul,dot] [--timeout S]
                                 [--repeat K]   # K runs a line: the fastest and the median

Peak memory is the child's maximum resident set size (RUSAGE_CHILDREN, read after each run:
`ru_maxrss` of the largest child so far, so each command runs in its own `fork` of this script).

Bytecode. Python keeps each module's compiled bytecode beside it, and `pip install` writes it for
an installed package, so a user's second command does not compile hetprof again. The development
machine sets PYTHONDONTWRITEBYTECODE, under which every command compiles all of hetprof's modules
(about 0.2 s). This script therefore compiles the packages first (`compileall`, as pip does) and
runs each command with that variable cleared; `--no-bytecode-cache` measures the other way.
The parser's tables are cached likewise, in the user's cache directory (profiler/parser.py): a
warm-up `check` builds them before the first measured line.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.lg"))

COMMANDS: dict[str, list[str]] = {
    "check": ["check", "{file}"],
    "run": ["run", "{file}"],
    "profile": ["profile", "{file}"],
    "profile-json": ["profile", "{file}", "--format", "json", "-o", "{out}.json"],
    "profile-symbolic": ["profile", "{file}", "--symbolic"],
    "place": ["place", "{file}"],
    "rewrite": ["rewrite", "{file}"],
    "graph": ["graph", "{file}", "-o", "{out}.svg"],
    "plot-space": ["plot", "space", "{file}", "-o", "{out}.png"],
    "plot-timeline": ["plot", "timeline", "{file}", "-o", "{out}.png"],
    "plot-speedup": ["plot", "speedup", "{file}", "-o", "{out}.png"],
    "report": ["report", "{file}", "-o", "{out}.html"],
}
GLOBAL = {"help": ["--help"], "version": ["--version"]}


def measure(argv: list[str], timeout: float, env: dict[str, str] | None = None,
            ) -> tuple[float, float, str]:
    """Run `python -m cli argv` in a fresh child process: (seconds, peak MiB, outcome)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child waits for its own child, so its RUSAGE_CHILDREN is that one alone
        os.close(read)
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "cli", *argv], cwd=ROOT, env=env,
                                  capture_output=True, timeout=timeout)
            outcome = "ok" if done.returncode == 0 else f"exit {done.returncode}"
        except subprocess.TimeoutExpired:
            outcome = f"timeout {timeout:g}s"
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        os.write(write, f"{seconds} {peak} {outcome}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    seconds, peak, outcome = text.split(" ", 2)
    return float(seconds), float(peak), outcome


def target(command: str) -> float:
    """Issue 19's latency target for `command`, in seconds."""
    if command in ("help", "version", "check"):
        return 0.3
    return 10.0 if command == "rewrite" else 2.0


def cached_bytecode() -> dict[str, str]:
    """Compile hetprof's packages to bytecode (`compileall`, as pip does; a no-op where it is
    current) and return the environment to run commands in: this one without
    PYTHONDONTWRITEBYTECODE, so that they read and write the cache as an installed package's do."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    packages = [str(ROOT / p) for p in ("profiler", "models", "graphs", "cli")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True, env=env)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", default=",".join([*GLOBAL, *COMMANDS]))
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each line this many times, one after the other, and print the "
                        "fastest and the median (the machine's speed varies by 20-30%%)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="compile every module in every run (PYTHONDONTWRITEBYTECODE as set)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    commands = args.commands.split(",")
    env = None if args.no_bytecode_cache else cached_bytecode()
    measure(["check", "examples/dc_sum.lg"], args.timeout, env)  # the parser's cached tables
    lines = [(command, "-", GLOBAL[command]) for command in commands if command in GLOBAL]
    lines += [(command, example, COMMANDS[command]) for command in commands
              if command not in GLOBAL for example in args.examples.split(",")]
    timing = "seconds" if args.repeat == 1 else "fastest   median"
    print(f"{'command':<18} {'example':<14} {timing:>16} {'peak MiB':>9} {'target':>7}  outcome")
    within = 0
    with tempfile.TemporaryDirectory() as scratch:
        for command, example, template in lines:
            argv = [a.format(file=f"examples/{example}.lg", out=f"{scratch}/{command}-{example}")
                    for a in template]
            runs = [measure(argv, args.timeout, env) for _ in range(args.repeat)]
            times = sorted(seconds for seconds, _, _ in runs)
            median = statistics.median(times)
            peak = max(peak for _, peak, _ in runs)
            outcomes = sorted({outcome for _, _, outcome in runs})
            limit = target(command)
            within += median <= limit and outcomes == ["ok"]
            shown = f"{median:>16.2f}" if args.repeat == 1 else f"{times[0]:>7.2f} {median:>8.2f}"
            flag = "" if median <= limit else "  OVER"
            print(f"{command:<18} {example:<14} {shown} {peak:>9.0f} {limit:>7g}  "
                  f"{', '.join(outcomes)}{flag}", flush=True)
    print(f"{within} of {len(lines)} lines ran and took at most their target (by the median of "
          f"{args.repeat} run{'s' if args.repeat > 1 else ''})")


if __name__ == "__main__":
    main()
