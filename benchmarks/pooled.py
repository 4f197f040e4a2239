"""Kernel errors pooled over saved validation runs (`hetprof validate --format json` files, as run
or re-predicted by benchmarks/repredict.py): each set's and the pooled median and 90th percentile
of |error| (nearest rank) and the share of cases where hetprof is strictly closer than the
roofline and than DMM, the figures the README's run tables give.

    python benchmarks/pooled.py [--override SET=DIR ...] [--programs P,Q,...] SET=GLOB ...

SET=GLOB names a set of files (a shell glob, quoted). --override SET=DIR replaces each of that
set's files by the file of the same name in DIR where there is one (a re-prediction of part of
the set). --programs also prints the pooled figures of each of those programs alone.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.validate import percentile  # noqa: E402  (nearest rank, as the reports)


def _pairs(values: Iterable[str], what: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise SystemExit(f"{what} {value!r}: expected NAME=VALUE")
        pairs[name] = rest
    return pairs


def kernel_cases(files: Iterable[str]) -> list[dict]:
    cases: list[dict] = []
    for path in files:
        with open(path) as f:
            cases.extend(c for c in json.load(f).get("cases", [])
                         if c.get("part") == "kernel" and c.get("measured_s"))
    return cases


def _baseline_error(case: dict, key: str) -> float | None:
    value = case.get(key)
    return None if value is None else abs(100 * (value / case["measured_s"] - 1))


def summary(cases: list[dict]) -> str:
    if not cases:
        return "no kernel cases"
    errors = [abs(c["error_pct"]) for c in cases]
    shares = []
    for key in ("roofline_s", "dmm_s"):
        judged = [c for c in cases if c.get(key) is not None]
        closer = sum(abs(c["error_pct"]) < _baseline_error(c, key) for c in judged)
        shares.append(f"{100 * closer / len(judged):.0f}%" if judged else "-")
    return (f"{len(cases)} cases: median {percentile(errors, 0.5):.1f}%, p90 "
            f"{percentile(errors, 0.9):.1f}%; closer than the roofline {shares[0]}, than DMM "
            f"{shares[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+", metavar="SET=GLOB")
    parser.add_argument("--override", action="append", default=[], metavar="SET=DIR")
    parser.add_argument("--programs", default="")
    args = parser.parse_args()
    sets = _pairs(args.sets, "set")
    overrides = _pairs(args.override, "--override")
    pooled: list[dict] = []
    for name, pattern in sets.items():
        files = sorted(glob.glob(pattern, recursive=True))
        if name in overrides:
            files = [os.path.join(overrides[name], os.path.basename(f))
                     if os.path.exists(os.path.join(overrides[name], os.path.basename(f)))
                     else f for f in files]
        cases = kernel_cases(files)
        print(f"{name}: {summary(cases)}")
        pooled.extend(cases)
    print(f"pooled: {summary(pooled)}")
    for program in filter(None, args.programs.split(",")):
        cases = [c for c in pooled if c["program"] == program]
        signed = [c["error_pct"] for c in cases]
        print(f"  {program}: {summary(cases)}"
              + (f"; median error {percentile(signed, 0.5):+.1f}%" if signed else ""))


if __name__ == "__main__":
    main()
