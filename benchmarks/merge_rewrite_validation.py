"""Merge rewrite-validation reports (one per program and size, from
benchmarks/gpu_validate_rewrites.sh) into one, with the summary figures recomputed over all cases;
write JSON and markdown.

    python benchmarks/merge_rewrite_validation.py OUT.json OUT.md rw_*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.validate_rewrites import merge, render_markdown  # noqa: E402

if __name__ == "__main__":
    out_json, out_md, *inputs = sys.argv[1:]
    reports = []
    for path in inputs:
        try:
            reports.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as error:
            print(f"skipping {path}: {error}", file=sys.stderr)
    if not reports:
        sys.exit("no report to merge")
    report = merge(reports)
    Path(out_json).write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    Path(out_md).write_text(render_markdown(report))
    print(f"{report['case_count']} cases; direction right {100 * report['direction_accuracy']:.1f}%;"
          f" median speedup error {report['speedup_median_abs_pct_error']:.1f}%")
