"""The CSV renderer (`--format csv`): a profile as one long ("tidy") table, for spreadsheets and
data frames: one row per number, with columns

    section, name, location, parent, measure, value

Sections: `summary` (work, span, parallelism, time, work / P, peak space per world, graph size),
`param` (size parameters), `on` (each device box's parts: grow, transfer_in, kernel, transfer_out,
merge, total, threads, work groups, rounds, bank conflicts, ...), `centre` (each cost centre's
work, span, time, space, GPU kernel time), `source` (the cost-by-source tree: inclusive and
exclusive work; `parent` is the enclosing expression's location) and `region` (the final sizes of
the outermost regions). Pivot on `measure` to get the wide tables of the text report.

Text comes from the user's program (cost-centre names, source snippets, file names), so a text
cell that a spreadsheet would read as a formula (starting with =, +, -, @, a tab or a carriage
return) is written with a single quote before it, as OWASP advises against CSV injection; numbers
are written as they are.
"""

from __future__ import annotations

import csv
import io

from graphs.analysis import ProfileResult, SpanCost

COLUMNS = ("section", "name", "location", "parent", "measure", "value")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ON_MEASURES = ("grow", "transfer_in", "kernel", "transfer_out", "merge", "total",
               "bank_conflicts", "broadcasts", "multicasts", "threads", "work_groups", "rounds",
               "max_conflict_degree", "gpu_work", "pushed_words", "gpu_words")
CENTRE_MEASURES = ("work", "span", "time", "space", "gpu_time", "edges")


class CsvRenderer:
    """render(result) -> str: the rows described in the module's docstring."""

    def render(self, result: ProfileResult) -> str:
        buffer = io.StringIO()
        writer = _SafeWriter(csv.writer(buffer, lineterminator="\n"))
        writer.writerow(COLUMNS)
        for measure, value in (
            ("work", result.work), ("span", result.span), ("parallelism", result.parallelism),
            ("time", result.time), ("work_per_processor", result.paper_time),
            ("space_cpu", result.space["cpu"]), ("space_gpu", result.space["gpu"]),
            ("space_peak", result.space["peak"]), ("procs", result.procs),
            ("nodes", result.nodes), ("edges", result.edges), ("steps", result.steps),
        ):
            writer.writerow(("summary", result.file, "", "", measure, value))
        if result.procs_used is not None:
            writer.writerow(("summary", result.file, "", "", "procs_used", result.procs_used))
        for key, text in (("units", result.units), ("schedule", result.schedule),
                          ("gpu_mode", result.gpu_mode), ("profile", result.profile_name)):
            writer.writerow(("summary", result.file, "", "", key, text))
        for name, value in result.params.items():
            writer.writerow(("param", name, "", "", "value", value))
        for index, on in enumerate(result.on, start=1):
            for measure in ON_MEASURES:
                writer.writerow(("on", f"on #{index}", on.location, "", measure,
                                 getattr(on, measure)))
        for centre in result.cost_centres:
            for measure in CENTRE_MEASURES:
                writer.writerow(("centre", centre.name, "", "", measure,
                                 getattr(centre, measure)))
        stack: list[tuple[SpanCost, str]] = [(root, "") for root in reversed(result.spans)]
        while stack:
            node, parent = stack.pop()
            for measure in ("inclusive", "exclusive"):
                writer.writerow(("source", node.label, node.location, parent, measure,
                                 getattr(node, measure)))
            stack.extend((child, node.location) for child in reversed(node.children))
        for name, words in result.regions.items():
            writer.writerow(("region", name, "", "", "words", words))
        return buffer.getvalue()


def neutralised(cell: object) -> object:
    """A cell a spreadsheet cannot run: text that starts like a formula gets a single quote
    before it (OWASP, "CSV Injection"); numbers and other text are kept."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


class _SafeWriter:
    """A csv writer whose rows go through `neutralised`."""

    def __init__(self, writer) -> None:
        self.writer = writer

    def writerow(self, row: tuple) -> None:
        self.writer.writerow([neutralised(cell) for cell in row])
