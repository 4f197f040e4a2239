"""Merge validation reports (one per program, plus transfers and bank conflicts) into one, with
the summary figures recomputed over all cases; write JSON and markdown.

    python benchmarks/merge_validation.py OUT.json OUT.md val_*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.validate import render_markdown, summarise  # noqa: E402


def merge(paths: list[str]) -> dict:
    reports = [json.loads(Path(p).read_text()) for p in paths]
    merged = dict(reports[0])
    merged["cases"] = [c for r in reports for c in r["cases"] if c["measured_s"] > 0]
    merged["placements"] = [p for r in reports for p in r.get("placements", [])]
    merged["skipped"] = [s for r in reports for s in r.get("skipped", [])]
    # each validation process's allocation-pointer place, with the programs and sizes it ran
    merged.pop("pointer_place", None)
    merged["pointer_places"] = [
        {**r["pointer_place"], "programs": sorted({c["program"] for c in r["cases"]}),
         "sizes": sorted({c["n"] for c in r["cases"]})}
        for r in reports if "pointer_place" in r]
    compared: dict[str, list[dict]] = {}
    for report in reports:
        for mode, cases in report.get("compare_cases", {}).items():
            compared.setdefault(mode, []).extend(cases)
    merged["compare_cases"] = compared
    # runs of each measured part (`--repeats`): one number where every report agrees, else none
    # (the older reports do not say)
    repeats = {r.get("repeats") for r in reports}
    merged.pop("repeats", None)
    if len(repeats) == 1 and None not in repeats:
        merged["repeats"] = repeats.pop()
    return summarise(merged)


if __name__ == "__main__":
    out_json, out_md, *inputs = sys.argv[1:]
    report = merge(inputs)
    Path(out_json).write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    Path(out_md).write_text(render_markdown(report))
    print(f"{len(report['cases'])} cases; kernel median {report['kernel_median_abs_pct_error']:.1f}%")
