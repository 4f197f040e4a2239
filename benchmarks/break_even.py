"""Break-even sizes predicted by `hetprof place` against the crossings measured by `hetprof
validate` (issue 15: "break-even sizes (`hetprof place`) checked against measured crossings for at
least three programs whose measured crossing lies inside the sizes run: predicted within a factor
of 1.5").

    python benchmarks/break_even.py PROFILE.json VALIDATION.json ... [--markdown OUT.md]

For each program whose measured cheaper placement changes inside the sizes run (the `on` on the
GPU, its `on` case's time, against its body on the OpenCL CPU device, its `cpu` case's time):

- the measured crossing: the two sizes that bracket the change, and the size where the two
  measured times meet, by linear interpolation of log(GPU / CPU) in log n between them (the sizes
  run are powers of two or close, so a straight line in log-log is the least that can be said);
- the predicted crossing: `hetprof place FILE --device-profile PROFILE --format json`, run as a
  user runs it, its site for the program's written `on` (the first size from which the CPU is
  cheaper);
- their ratio, whether the prediction lies within a factor of 1.5 of the interpolated crossing,
  and whether it lies inside the measured bracket (the sizes run pin the crossing down to it; the
  interpolation assumes a straight line that noisy CPU times need not follow).

No measurement enters the prediction: `place` reads only the program and the profile (calibrated
from microbenchmarks). Programs are looked up by name in benchmarks/suite/ and examples/.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FACTOR = 1.5


def measured_crossing(cases: list[dict], program: str) -> dict | None:
    """The measured change of the cheaper placement of `program` (its `on` and `cpu` cases by
    size): the bracket, the interpolated size and the side that is cheaper from it; None where
    the cheaper side does not change, or changes more than once."""
    times: dict[int, dict[str, float]] = {}
    for case in cases:
        if case["program"] == program and case["part"] in ("on", "cpu"):
            times.setdefault(case["n"], {})[case["part"]] = case["measured_s"]
    sizes = sorted(n for n, t in times.items() if len(t) == 2)
    sides = [("cpu" if times[n]["cpu"] < times[n]["on"] else "gpu") for n in sizes]
    changes = [k for k in range(1, len(sizes)) if sides[k] != sides[k - 1]]
    if len(changes) != 1:
        return None
    k = changes[0]
    low, high = sizes[k - 1], sizes[k]
    ratio_low = math.log(times[low]["on"] / times[low]["cpu"])
    ratio_high = math.log(times[high]["on"] / times[high]["cpu"])
    share = ratio_low / (ratio_low - ratio_high)  # where the line in log n crosses 0
    at = math.exp(math.log(low) + share * (math.log(high) - math.log(low)))
    return {"low": low, "high": high, "n": at, "cheaper": sides[k], "sizes": sizes}


def predicted_crossing(program: Path, profile: str) -> tuple[dict | None, dict]:
    """`hetprof place`'s site for the program's written `on` (the first), and its whole JSON."""
    done = subprocess.run([sys.executable, "-m", "cli", "place", str(program),
                           "--device-profile", profile, "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    site = next((s for s in result["sites"] if s["written"] == "gpu"), None)
    return site, result


def locate(name: str) -> Path:
    for folder in ("benchmarks/suite", "examples"):
        path = ROOT / folder / f"{name}.lg"
        if path.exists():
            return path
    raise SystemExit(f"no program {name}.lg in benchmarks/suite/ or examples/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("validations", nargs="+")
    parser.add_argument("--markdown", help="also write the table here")
    args = parser.parse_args()
    rows = []
    sources = []
    for path in args.validations:
        report = json.loads(Path(path).read_text())
        sources.append(f"{Path(path).name} ({report.get('card') or report.get('device')}, "
                       f"{report.get('date')})")
        for program in sorted({c["program"] for c in report["cases"]}):
            measured = measured_crossing(report["cases"], program)
            if measured is None:
                continue
            site, result = predicted_crossing(locate(program), args.profile)
            change = next((c for c in (site or {}).get("crossings", [])
                           if c["cheaper"] == measured["cheaper"]), None)
            predicted = change["n"] if change else None
            ratio = predicted / measured["n"] if predicted else None
            rows.append({
                "program": program, "bracket": (measured["low"], measured["high"]),
                "measured": measured["n"], "cheaper": measured["cheaper"],
                "predicted": predicted, "ratio": ratio,
                "within": ratio is not None and 1 / FACTOR <= ratio <= FACTOR,
                "inside": predicted is not None and measured["low"] < predicted <= measured["high"],
                "method": (site or {}).get("method"), "procs": result["procs"],
            })
    lines = [
        f"Break-even sizes: `hetprof place` under {args.profile} against the crossings measured "
        f"in {', '.join(sources)}.",
        "",
        "| program | measured bracket | measured crossing | cheaper from it | `place` predicts | "
        "predicted / measured | within 1.5x | inside the bracket |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        low, high = row["bracket"]
        predicted = f"{row['predicted']:,}" if row["predicted"] else "no crossing"
        ratio = f"{row['ratio']:.2f}" if row["ratio"] else "-"
        lines.append(f"| {row['program']} | {low:,} .. {high:,} | {row['measured']:,.0f} | "
                     f"{row['cheaper'].upper()} | {predicted} ({row['method']}, P = "
                     f"{row['procs']}) | {ratio} | {'yes' if row['within'] else 'no'} | "
                     f"{'yes' if row['inside'] else 'no'} |")
    within = sum(1 for row in rows if row["within"])
    inside = sum(1 for row in rows if row["inside"])
    lines += ["", f"{within} of {len(rows)} predicted within a factor of {FACTOR} of the "
              f"interpolated crossing; {inside} of {len(rows)} inside the measured bracket."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
