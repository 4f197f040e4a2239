"""The Cilkscale renderer (`--format cilkscale`): work and span per cost centre in the CSV columns
of OpenCilk's Cilkscale (`tag,work,span,parallelism,burdened_span,burdened_parallelism`), so that
tools and habits built around Cilkscale's reports read hetprof's.

The first row is the whole program, with an empty tag as Cilkscale writes it; then one row per
cost centre (`profile "name" e`), tagged by its name. Work and span are the cost graph's (eqs. 5-6
of the paper; in model units, or seconds with a calibrated profile). Cilkscale's burdened span adds
an estimate of the scheduling overhead of each spawn; hetprof's span already includes the cost of
every fork and join (the ⊗ edges of Fig. 4 and the merge δ of Def. 4.3), so the burdened columns
equal the plain ones.
"""

from __future__ import annotations

import csv
import io

from graphs.analysis import ProfileResult
from graphs.render_csv import neutralised

COLUMNS = ("tag", "work", "span", "parallelism", "burdened_span", "burdened_parallelism")


class CilkscaleRenderer:
    """render(result) -> str: Cilkscale's CSV."""

    def render(self, result: ProfileResult) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        rows = [("", result.work, result.span)]
        rows += [(str(neutralised(c.name)), c.work, c.span) for c in result.cost_centres]
        for tag, work, span in rows:
            parallelism = work / span if span else 0.0
            writer.writerow((tag, _number(work), _number(span), _number(parallelism),
                             _number(span), _number(parallelism)))
        return buffer.getvalue()


def _number(x: float) -> str:
    return repr(float(x))
