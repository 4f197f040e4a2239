"""The text of the symbolic reports: `hetprof profile --symbolic` (each quantity's formula in the
size parameters and its value at the sizes given) and `hetprof place` (where each parallel form is
cheaper as a size grows). Both render the plain data that `graphs.symbolic_profile.report` and the
place command build, which the JSON format writes as it is."""

from __future__ import annotations

import shutil
import textwrap
from io import StringIO

from rich.console import Console
from rich.table import Table

from graphs.formulas import formula as pretty
from graphs.formulas import piece_marker
from graphs.numbers import amount, number


def _columns() -> int:
    """The terminal's width (120 where there is none: a file, a pipe)."""
    return max(80, shutil.get_terminal_size((120, 24)).columns)


def _wrapped(text: str, width: int) -> list[str]:
    """A formula broken at its spaces into lines of at most `width` (a longer term stays whole)."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def render_symbolic(result: dict) -> str:
    """The symbolic report as text: each quantity's formula and its value at the sizes given. A
    formula piecewise in many pieces (the report's `pieces`) is shown by the piece that holds at
    those sizes, marked as such; the JSON report keeps every piece."""
    values, formulas = result["values"], result["formulas"]
    at = ", ".join(f"{k} = {v}" for k, v in result["params"].items())
    procs = result["procs"]
    # (quantity, formula, value, the formula's key in `pieces`)
    rows: list[tuple[str, str, str, str]] = [
        ("work", formulas["work"], number(values["work"]), "work"),
        ("span", formulas["span"], number(values["span"]), "span"),
    ]
    if formulas["time"] is not None:
        rows.append((f"time (P = {procs}, every schedule)", formulas["time"],
                     number(values["time"]), "time"))
    else:
        lower, upper = formulas["time_bounds"]
        exact = values["time"] is not None  # the bounds meet at these sizes
        rows.append((f"time (P = {procs}) at least", lower, number(values["time_bounds"][0]),
                     "time_bounds.0"))
        rows.append((f"time (P = {procs}) at most", upper, number(values["time_bounds"][1]),
                     "time_bounds.1"))
        if exact:
            rows.append((f"time (P = {procs}, every schedule)", "-", number(values["time"]), ""))
        elif result.get("explicit_time") is not None:
            rows.append((f"time ({result['schedule']}, P = {procs}, explicit)", "-",
                         number(result["explicit_time"]), ""))
    for world in ("cpu", "gpu", "peak"):
        rows.append((f"space {world} (words)", formulas["space"][world],
                     number(values["space"][world]), f"space.{world}"))
    rows.append(("bytes to the device", formulas["bytes_to_device"],
                 number(values["bytes_to_device"]), "bytes_to_device"))
    rows.append(("bytes back to the host", formulas["bytes_to_host"],
                 number(values["bytes_to_host"]), "bytes_to_host"))
    for i, (box, numbers) in enumerate(zip(formulas["on"], values["on"], strict=True)):
        for part in ("transfer_in", "kernel", "transfer_out", "grow", "merge"):
            rows.append((f"on #{i + 1} {part.replace('_', ' ')}", box[part],
                         number(numbers[part]), f"on.{i}.{part}"))
            if part == "kernel" and numbers.get("page_walks"):
                rows.append((f"on #{i + 1} of it, page walks (and copy step) after the copy", "-",
                             number(numbers["page_walks"]), ""))
        if "total" in box:  # the paper's rules: §7.1.2's quantities
            rows.append((f"on #{i + 1} total (δ* + kernel + δ†)", box["total"],
                         number(numbers["total"]), ""))
            rows.append((f"on #{i + 1} words allocated on the GPU", box["gpu_words"],
                         number(numbers["gpu_words"]), ""))
    for name, centre in formulas["cost_centres"].items():
        rows.append((f'centre "{name}" work', centre["work"],
                     number(values["cost_centres"][name]["work"]), ""))
    rows.append(("cost-graph nodes (explicit)", formulas["nodes"], number(values["nodes"]),
                 "nodes"))
    pieces = result.get("pieces", {})
    shown = [(name, _shown(text, pieces.get(key)), value) for name, text, value, key in rows]
    width = max(len(r[0]) for r in shown)
    value_width = max(len("value"), *(len(r[2]) for r in shown))
    formula_width = max(30, min(max(len(r[1]) for r in shown),
                                _columns() - width - value_width - 4))
    assumptions = list(result["assumptions"])
    if pieces:
        assumptions.append("a formula of many pieces is shown by the piece that holds at these "
                           "sizes (--format json gives every piece)")
    lines = [f"{result['file']}: symbolic profile in {', '.join(result['symbols']) or 'nothing'}"
             f" (P = {procs}), values at {at}",
             f"assuming: {'; '.join(assumptions)}", ""]
    lines.append(f"{'quantity':<{width}}  {'formula':<{formula_width}}  value")
    for name, text, value in shown:
        first, *rest = _wrapped(text, formula_width)
        lines.append(f"{name:<{width}}  {first:<{formula_width}}  {value}")
        lines += [f"{'':<{width}}    {more}" for more in rest]
    return "\n".join(lines) + "\n"


def _shown(text: str, piece: dict | None) -> str:
    """A row's formula for people: the whole formula, or where it has many pieces the one that
    holds at the report's sizes, followed by which of how many it is."""
    return pretty(text) if piece is None else pretty(piece["formula"]) + piece_marker(piece)


PLACE_HEADINGS = ("site", "written", "CPU time", "GPU time", "GPU speedup", "GPU bound", "use",
                  "cheaper as n grows")


def place_cells(site: dict, units: str = "units") -> tuple[str, ...]:
    """One site's verdict row of `hetprof place` (PLACE_HEADINGS): the world it is written for,
    both times at the sizes given (in µs/ms/s under a calibrated profile, whose `units` are
    "seconds"), the GPU's speedup, what bounds the GPU's time (graphs.kernel_counts.gpu_bound:
    transfer, launch, memory or compute), the world to use there, and the sizes from which each
    world is cheaper."""
    here = site["at_params"]
    cpu, gpu = here["cpu"], here["gpu"]
    speedup = f"{cpu / gpu:.2f}x" if gpu else "-"
    pieces = [f"{site['cheaper_from_1'].upper()} from {number(site.get('runs_from', 1))}"]
    pieces += [f"{c['cheaper'].upper()} from {number(c['n'])}" for c in site["crossings"]]
    if not site["crossings"]:
        upper = site.get("searched_up_to")
        pieces.append(f"no crossing up to {number(upper)}" if upper else "no crossing found")
    return (site["site"], "GPU (`on`)" if site["written"] == "gpu" else "CPU", amount(cpu, units),
            amount(gpu, units), speedup, site.get("bound") or "-", "GPU" if gpu < cpu else "CPU",
            "; ".join(pieces))


def render_place(result: dict) -> str:
    """The report of `hetprof place` as text. First a verdict per site (as Intel Advisor's
    offload report leads with one): CPU and GPU time at the sizes given, the speedup of the GPU,
    the world to use there, and the sizes from which each world is cheaper; then each site's time
    formulas, in the paper's notation, wrapped to the terminal."""
    n = result["parameter"]
    at = f"{n} = {number(result['params'][n])}"
    columns = _columns()
    table = Table(title=f"{result['file']}: where each parallel form is cheaper, at {at} "
                  f"(P = {result['procs']})", title_justify="left", header_style="bold")
    for heading in PLACE_HEADINGS[:-1] + (f"cheaper as {n} grows",):
        table.add_column(heading, overflow="fold")
    for site in result["sites"]:
        table.add_row(*place_cells(site, result.get("units", "units")))
    buffer = StringIO()
    console = Console(file=buffer, width=columns, color_system=None, highlight=False)
    if result["sites"]:
        console.print(table)
    else:
        console.print(f"{result['file']}: no parallel form to place (no `on`, and no parmap or "
                      "reduce outside one)")
    lines = [buffer.getvalue().rstrip("\n"), ""]
    lines += _wrapped(f"time = {result['time']}", columns)
    said: dict[str, str] = {}  # a method's text -> the first site it was said for
    for site in result["sites"]:
        lines.append("")
        method = site["method"] + (f" ({site['note']})" if site.get("note") else "")
        if method in said:  # said once, in full: `calibrated (as 20:13)`
            lines.append(f"{site['site']}: {method.split(' (')[0]} (as {said[method]})")
        else:
            said[method] = site["site"]
            lines += _wrapped(f"{site['site']}: {method}", columns)
        for world in ("cpu", "gpu"):
            if "time" in site:
                head = f"  {world.upper()} time = "
                first, *rest = _wrapped(pretty(site["time"][world]), columns - len(head))
                lines.append(head + first)
                lines += [" " * len(head) + more for more in rest]
        methods = ", ".join(f"{number(c['n'])}: {c['method']}" for c in site["crossings"])
        if methods:
            lines.append(f"  break-evens found by: {methods}")
    return "\n".join(lines) + "\n"
