"""How long each `hetprof` command takes on each example at its default sizes: one line per
(command, example) with the wall time and the peak memory, each in a fresh process (as a user
runs it). Issue 19's targets on the 2-core development machine: `--help`, `--version` and `check`
≤ 0.3 s; every other command ≤ 2 s, except `calibrate`, `validate*` and `rewrite --search`;
`rewrite` (with its break-evens) ≤ 10 s.

    python benchmarks/latency.py [--commands check,profile,...] [--examples zipmul,dot] [--timeout S]

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
GLOBAL = {"help": ["--help"]}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", default=",".join([*GLOBAL, *COMMANDS]))
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="compile every module in every run (PYTHONDONTWRITEBYTECODE as set)")
    args = parser.parse_args()
    commands = args.commands.split(",")
    env = None
    if not args.no_bytecode_cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        packages = [str(ROOT / p) for p in ("profiler", "models", "graphs", "cli")]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True,
                       env=env)
    measure(["check", "examples/dc_sum.lg"], args.timeout, env)  # the parser's cached tables
    print(f"{'command':<18} {'example':<14} {'seconds':>8} {'peak MiB':>9}  outcome")
    with tempfile.TemporaryDirectory() as scratch:
        for command in commands:
            if command in GLOBAL:
                seconds, peak, outcome = measure(GLOBAL[command], args.timeout, env)
                print(f"{command:<18} {'-':<14} {seconds:>8.2f} {peak:>9.0f}  {outcome}",
                      flush=True)
                continue
            for example in args.examples.split(","):
                argv = [a.format(file=f"examples/{example}.lg",
                                 out=f"{scratch}/{command}-{example}") for a in COMMANDS[command]]
                seconds, peak, outcome = measure(argv, args.timeout, env)
                print(f"{command:<18} {example:<14} {seconds:>8.2f} {peak:>9.0f}  {outcome}",
                      flush=True)


if __name__ == "__main__":
    main()
