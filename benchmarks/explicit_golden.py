"""Every example's explicit profile in every format, saved or compared byte for byte: the check
that a change to how the explicit profile is built or analysed changes none of its output.

    python benchmarks/explicit_golden.py save DIR     # from the code before the change
    python benchmarks/explicit_golden.py check DIR    # after it: lists every file that differs

Each case runs `hetprof profile examples/X.lg --param n=K --format F -o FILE` (matvec's sizes are
rows and cols) through `cli.main.main`, in this process, for the examples at n = 1..64, under the
three schedules at a few sizes and on 1, 2, 3 and 64 processors. JSON is written with
`--pictures` (its timeline and cost-graph summary, which it carries only when asked), so that it
checks them too.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.main import main  # noqa: E402

SIZES = (1, 2, 3, 7, 16, 33, 64)
FORMATS = ("text", "json", "csv", "dot", "trace", "html", "speedscope", "cilkscale")


def params(example: str, n: int) -> list[str]:
    if example == "matvec":
        return ["--param", f"rows={n}", "--param", f"cols={max(1, n // 2)}"]
    return ["--param", f"n={n}"]


def cases() -> list[tuple[str, list[str]]]:
    """(file name, command line) of every case."""
    out = []
    for path in sorted((ROOT / "examples").glob("*.lg")):
        example = path.stem
        for n in SIZES:
            for fmt in FORMATS:
                pictures = ["--pictures"] if fmt == "json" else []
                out.append((f"{example}-n{n}.{fmt}",
                            ["profile", str(path), *params(example, n), "--format", fmt,
                             *pictures]))
        for n in (3, 16, 64):
            for policy in ("1df", "bf", "ws"):
                for procs in (1, 3, 64):
                    out.append((f"{example}-n{n}-{policy}-P{procs}.json",
                                ["profile", str(path), *params(example, n), "--format", "json",
                                 "--pictures", "--schedule", policy, "--procs", str(procs)]))
    return out


def run(mode: str, directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    scratch = directory / "scratch" if mode == "check" else directory
    scratch.mkdir(exist_ok=True)
    differ = []
    for name, argv in cases():
        target = scratch / name
        code = main([*argv, "-o", str(target)])
        if code != 0:
            target.write_text(f"exit {code}\n")
        if mode == "check":
            if target.read_bytes() != (directory / name).read_bytes():
                differ.append(name)
                print(f"DIFFERS: {name}", flush=True)
            target.unlink()
    if mode == "check":
        print(f"{len(differ)} of {len(cases())} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("save", "check"):
        sys.exit(__doc__)
    sys.exit(run(sys.argv[1], Path(sys.argv[2])))
