"""The text renderer of a profile: rich tables and a cost-centre tree (like pyinstrument's)."""

from __future__ import annotations

from io import StringIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from graphs.analysis import ProfileResult, SpanCost
from graphs.numbers import amount, number


def _line_column(location: str) -> str:
    """`file:line:col` -> `line:col` (the file is in the report's header)."""
    parts = location.rsplit(":", 2)
    return ":".join(parts[-2:]) if len(parts) == 3 else location


class TextRenderer:
    """render(result) -> str: the human-readable report of `hetprof profile`."""

    def __init__(self, width: int = 100, color: bool = False, tree_depth: int | None = 6,
                 tree_threshold: float = 0.1):
        """`tree_depth` levels of the cost-by-source tree are shown (None: all), and only the rows
        of at least `tree_threshold` percent of the work (0: all); `hetprof profile --show-all`
        asks for both."""
        self.width = width
        self.color = color
        self.tree_depth = tree_depth
        self.tree_threshold = tree_threshold

    def render(self, result: ProfileResult) -> str:
        buffer = StringIO()
        console = Console(file=buffer, width=self.width, color_system="standard" if self.color
                          else None, force_terminal=self.color, highlight=False)
        params = ", ".join(f"{k}={v}" for k, v in result.params.items()) or "none"
        console.print(f"[bold]hetprof profile[/bold] {result.file}  (params: {params})")
        unit_note = ("abstract units (one PRAM step = 1)" if result.units == "abstract"
                     else "seconds")
        console.print(f"units: {unit_note}; device profile: {result.profile_name}")
        console.print(f"GPU memory model: {result.gpu_mode}; CPU schedule: {result.schedule} on "
                      f"P = {result.procs}")
        if result.procs_used is not None:
            console.print(f"note: scheduled on {result.procs_used} processors (the most tasks "
                          "ever ready at once); more change nothing")
        console.print(f"value: {result.value}")

        def cost(x: float | None) -> str:
            return amount(x, result.units)

        summary = Table(title="Summary", show_header=True, header_style="bold")
        summary.add_column("measure")
        summary.add_column("value", justify="right")
        summary.add_column("meaning")
        summary.add_row("work", cost(result.work), "Σ edge weights: time on one processor")
        summary.add_row("span", cost(result.span), "longest path: time on ∞ processors")
        summary.add_row("parallelism", f"{result.parallelism:.2f}", "work / span")
        summary.add_row(f"time ({result.schedule}, P={result.procs})", cost(result.time),
                        "Σ step weights under the schedule (§6.3, eq. 5)")
        summary.add_row("work / P", cost(result.paper_time),
                        "the division §7.1 uses; a schedule also waits for the span")
        summary.add_row("peak space CPU", number(result.space["cpu"]), "words live (eq. 8-9)")
        summary.add_row("peak space GPU", number(result.space["gpu"]), "words on the device")
        summary.add_row("peak space", number(result.space["peak"]), "both worlds at once")
        summary.add_row("cost graph", f"{result.nodes:,} nodes, {result.edges:,} edges", "")
        console.print(summary)
        if result.on:
            # One column per `on`, so that wide numbers are never cut.
            table = Table(title="`on` forms (device boxes)", header_style="bold")
            table.add_column("part")
            for index, on in enumerate(result.on, start=1):
                table.add_column(f"on #{index} at {_line_column(on.location)}", justify="right")
            rows = [
                ("region growth (Δa)", lambda o: cost(o.grow)),
                ("transfer in δ*", lambda o: cost(o.transfer_in)),
                ("kernel (device box)", lambda o: cost(o.kernel)),
                ("transfer out δ†", lambda o: cost(o.transfer_out)),
                ("merge (Def. 4.3)", lambda o: cost(o.merge)),
                ("total", lambda o: cost(o.total)),
                ("threads / work groups / rounds",
                 lambda o: f"{o.threads:,} / {o.work_groups:,} / {o.rounds:,}"),
                ("bank conflicts (max degree)",
                 lambda o: f"{o.bank_conflicts:,} ({o.max_conflict_degree:,})"),
                ("broadcasts / multicasts", lambda o: f"{o.broadcasts:,} / {o.multicasts:,}"),
                ("words pushed / allocated on GPU",
                 lambda o: f"{o.pushed_words:,} / {o.gpu_words:,}"),
            ]
            for label, cell in rows:
                table.add_row(label, *(cell(on) for on in result.on))
            console.print(table)
            for index, on in enumerate(result.on, start=1):
                for note in on.notes:
                    console.print(f"  note (on #{index} at {_line_column(on.location)}): "
                                  f"{escape(note)}")
        if result.cost_centres:
            table = Table(title="Cost centres", header_style="bold")
            for column in ("name", "work", "span", "time", "space", "GPU kernel"):
                table.add_column(column, justify="right" if column != "name" else "left")
            for centre in result.cost_centres:
                table.add_row(centre.name, cost(centre.work), cost(centre.span),
                              cost(centre.time), number(centre.space), cost(centre.gpu_time))
            console.print(table)
        if result.spans:
            tree = Tree(f"[bold]cost by source[/bold] (inclusive / exclusive work, "
                        f"total {cost(result.work)})")
            hidden = [0]
            for root in result.spans:
                self._add(tree, root, result.work or 1, 0, result.units, hidden)
            console.print(tree)
            if hidden[0]:
                hidden_rows = "1 row" if hidden[0] == 1 else f"{hidden[0]:,} rows"
                console.print(f"({hidden_rows} of the tree not shown: under "
                              f"{number(self.tree_threshold)}% of the work or deeper than "
                              f"{self.tree_depth} levels; --show-all shows them all, "
                              "--tree-threshold PERCENT sets the cut)")
        if result.regions:
            sizes = ", ".join(f"{k}: {v:,} words" for k, v in result.regions.items())
            console.print(f"final regions: {sizes}")
        return buffer.getvalue()

    def _add(self, tree: Tree, node: SpanCost, total: float, depth: int, units: str,
             hidden: list[int]) -> None:
        """Add `node` and the children shown under it; count in hidden[0] the rows left out."""
        share = 100.0 * node.inclusive / total
        branch = tree.add(f"{share:5.1f}%  {amount(node.inclusive, units)} / "
                          f"{amount(node.exclusive, units)}  {_line_column(node.location)}  "
                          f"{escape(node.label)}")
        if self.tree_depth is not None and depth + 1 >= self.tree_depth:
            hidden[0] += sum(_size(child) for child in node.children)
            return
        for child in sorted(node.children, key=lambda c: -c.inclusive):
            if 100.0 * child.inclusive / total >= self.tree_threshold:
                self._add(branch, child, total, depth + 1, units, hidden)
            else:
                hidden[0] += _size(child)


def _size(node: SpanCost) -> int:
    """The rows of a subtree (the source tree can be as deep as the program: no recursion)."""
    count, stack = 0, [node]
    while stack:
        count += 1
        stack.extend(stack.pop().children)
    return count
