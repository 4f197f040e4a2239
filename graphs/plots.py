"""Plots of a profile (PNG or SVG bytes; matplotlib imported only inside the drawing functions
and `load_matplotlib`).

- `space_plot`: space over the schedule's steps per world, one line per schedule (1DF vs BF), the
  comparison of Spoonhower et al. (2010) that §6.7's eqs. 8-9 make possible.
- `timeline_plot`: the schedule as a per-processor timeline, with the device boxes' work groups
  and the transfers on rows of their own (`graphs.timeline`).
- `speedup_plot`: predicted speedup T1 / TP against P with the work law (TP >= T1 / P, so speedup
  <= P), the span law (TP >= T∞, so speedup <= T1 / T∞) and Brent's greedy bound
  (TP <= T1 / P + T∞), as Cilkscale draws them.
- `sizes_plot`: time against a size parameter for the CPU and the GPU placement
  (`graphs.placement`), with the break-even size marked.
- `validation_plot`: predicted against measured seconds from a validation report: JSON with
  `cases`, each {program, n, part, predicted_s, measured_s}.

The data helpers (`speedup_points`, `space_series`, `validation_cases`) need no matplotlib. In an
SVG, text stays text (svg.fonttype "none"), so a reader or a test can search it.
"""

from __future__ import annotations

import math
from typing import Any

from graphs.costgraph import CostGraph
from graphs.draw import SVG_SALT, figure_bytes
from graphs.numbers import amount, number
from graphs.placement import SizePoint
from graphs.schedule import Policy, schedule, schedule_times
from graphs.timeline import space_samples

KIND_COLOURS = {
    "read": "#4e79a7", "write": "#59a14f", "expand": "#f28e2b", "alloc-region": "#b07aa1",
    "merge": "#9c755f", "fork": "#bab0ac", "join": "#edc948", "seq": "#8c8c8c", "op": "#3d3d3d",
    "device-box": "#17becf", "mixed": "#d4a6c8",
}
"""One colour per kind of task: each is a legend entry of its own, so no two share a colour."""
# Transfers apart from the device box's own cyan (they shared it, and the legend could not tell).
TRANSFER_IN, TRANSFER_OUT = "#e15759", "#ff9d9a"
RATIO_PARTS = frozenset({"bank_conflict_slowdown"})  # ratios, not seconds: their own axes
POLICY_STYLES = {"1df": ("#1f77b4", "-"), "bf": ("#d62728", "--"), "ws": ("#2ca02c", ":")}


def speedup_points(graph: CostGraph, procs: list[int],
                   policy: Policy | str = Policy.DEPTH_FIRST) -> list[tuple[int, float]]:
    """(P, time(e, ⊴) on P processors) for each P (§6.3, eq. 5)."""
    return list(zip(procs, schedule_times(graph, procs, policy), strict=True))


SPACE_POLICIES = ("1df", "bf")
"""The schedules whose space the space plot compares (Spoonhower et al. (2010))."""


def space_series(graph: CostGraph, procs: int, policies: tuple[str, ...] = SPACE_POLICIES,
                 known: dict[str, list[list[float]]] | None = None,
                 ) -> dict[str, list[list[float]]]:
    """Space per step (eq. 8) under each policy: [step, time, CPU words, GPU words] samples.
    `known` holds samples already made on `procs` processors (a profile's timeline's `space`),
    which are not made again."""
    known = known or {}
    # The samples need the space trace and the steps' count, not the steps (`space_samples`).
    return {name: known[name] if name in known
            else space_samples(schedule(graph, procs, name, keep_steps=False))
            for name in policies}


def validation_cases(data: Any) -> list[dict[str, Any]]:
    """The cases of a validation report, checked: ValueError says what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise ValueError("a validation report is a JSON object with a list `cases`")
    cases = []
    for index, case in enumerate(data["cases"]):
        if not isinstance(case, dict):
            raise ValueError(f"cases[{index}] is not an object")
        for key in ("program", "n", "part", "predicted_s", "measured_s"):
            if key not in case:
                raise ValueError(f"cases[{index}] has no `{key}`")
        for key in ("predicted_s", "measured_s"):
            value = case[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value > 0):
                raise ValueError(f"cases[{index}].{key} must be a positive number of seconds")
        cases.append(case)
    if not cases:
        raise ValueError("the validation report has no cases")
    return cases


# ---------------------------------------------------------------------------------------------------


def load_matplotlib(fmt: str = "png") -> None:
    """Import what drawing a plot as `fmt` takes (matplotlib's Figure, the format's backend),
    ahead of drawing it: a command can compute the plot's data meanwhile."""
    import matplotlib.figure  # noqa: F401

    if fmt == "svg":
        import matplotlib.backends.backend_svg  # noqa: F401
    else:
        import matplotlib.backends.backend_agg  # noqa: F401


def warm_matplotlib(fmt: str = "svg") -> None:
    """`load_matplotlib`, then a small figure with text drawn as `fmt` and thrown away: the
    first figure a process draws also loads its fonts and caches (about 0.06 s of a report's
    timeline plot), which a process drawing later for another can pay ahead."""
    load_matplotlib(fmt)
    _render(2, 1.5, fmt, lambda fig: fig.subplots().set_title("warm"))


def _render(width: float, height: float, fmt: str, draw) -> bytes:
    """A figure of that size in inches, drawn by `draw(fig)`, as PNG or SVG bytes."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT, "svg.fonttype": "none", "font.size": 9}):
        fig = Figure(figsize=(width, height), layout="constrained")
        draw(fig)
        return figure_bytes(fig, fmt, 110)


def _unit(units: str) -> str:
    return "seconds" if units == "seconds" else "abstract units"


def _named(title: str, program: str) -> str:
    """A plot's title naming the program it is of."""
    return f"{title}: {program}" if program else title


def space_plot(series: dict[str, list[list[float]]], fmt: str = "png", title: str = "",
               units: str = "abstract", program: str = "") -> bytes:
    """Space (words) over the schedule's time, CPU and GPU worlds, one line per policy: every
    instant where space changes (device boxes' pushes included), so its peaks are the report's."""

    def draw(fig) -> None:
        axes = fig.subplots(2, 1, sharex=True)
        for world, column, ax in (("CPU", 2, axes[0]), ("GPU", 3, axes[1])):
            for name, samples in series.items():
                colour, style = POLICY_STYLES.get(name, ("#555555", "-"))
                times = [s[1] for s in samples]
                words = [s[column] for s in samples]
                peak = max(words, default=0)
                ax.step(times, words, where="post", color=colour, linestyle=style,
                        label=f"{name.upper()} (peak {number(round(peak))} words)")
            ax.set_ylabel(f"{world} words live")
            ax.set_title(f"{world} world: space(V_i, ⊴) (eq. 8)", fontsize=9, loc="left")
            ax.legend(fontsize=8, loc="upper right")
            ax.grid(alpha=0.3)
        axes[1].set_xlabel(f"time ({_unit(units)})")
        fig.suptitle(title or _named("space over the schedule", program), fontsize=10)

    return _render(8, 5.5, fmt, draw)


def timeline_plot(timeline: dict[str, Any], fmt: str = "png", title: str = "",
                  max_group_rows: int = 8, program: str = "") -> bytes:
    """Processors, GPU work groups and transfers as rows of intervals (a Gantt chart)."""
    from matplotlib.patches import Patch

    rows: list[tuple[str, list[tuple[float, float]], list[str]]] = []
    for index, track in enumerate(timeline["processors"]):
        bars, colours = _joined((i[0], i[1], KIND_COLOURS.get(i[3], "#8c8c8c")) for i in track)
        rows.append((f"CPU processor {index}", bars, colours))
    groups: dict[int, list[tuple[float, float]]] = {}
    others: list[tuple[float, float]] = []
    kernels: list[tuple[float, float]] = []
    transfers: list[tuple[float, float]] = []
    transfer_colours: list[str] = []
    for run in timeline["device"]:
        for part, colour in (("transfer_in", TRANSFER_IN), ("transfer_out", TRANSFER_OUT)):
            start, end = run[part]
            if end > start:
                transfers.append((start, end - start))
                transfer_colours.append(colour)
        for phase in run["phases"]:
            kernels.append((phase["start"], phase["end"] - phase["start"]))
            for group, start, end in phase["groups"]:
                target = groups.setdefault(group, []) if group < max_group_rows else others
                target.append((start, end - start))
            others.extend((start, end - start) for start, end, _ in phase["other_groups"])
    if kernels:
        rows.append(("GPU kernels (phases)", kernels, ["#6baed6"] * len(kernels)))
        for group in sorted(groups):
            bars = groups[group]
            rows.append((f"GPU work group {group}", bars, ["#9467bd"] * len(bars)))
        if others:
            rows.append(("GPU other work groups", others, ["#c5b0d5"] * len(others)))
    if transfers:
        rows.append(("transfers (δ*, δ†)", transfers, transfer_colours))

    def draw(fig) -> None:
        ax = fig.subplots()
        for index, (_, bars, colours) in enumerate(rows):
            ax.broken_barh(bars, (index - 0.4, 0.8), facecolors=colours, linewidth=0)
        ax.set_yticks(range(len(rows)), [name for name, _, _ in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(0, max(timeline["makespan"], 1e-12))
        ax.set_xlabel(f"time ({_unit(timeline['units'])})")
        ax.grid(axis="x", alpha=0.3)
        used = sorted({i[3] for track in timeline["processors"] for i in track})
        handles = [Patch(color=KIND_COLOURS.get(kind, "#8c8c8c"), label=kind) for kind in used]
        if kernels:
            handles.append(Patch(color="#9467bd", label="GPU work group"))
        if transfers:
            handles += [Patch(color=TRANSFER_IN, label="transfer in δ*"),
                        Patch(color=TRANSFER_OUT, label="transfer out δ†")]
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        coarse = " (tasks gathered into windows)" if timeline.get("coarsened") else ""
        ax.set_title(title or _named(
            f"schedule {timeline['schedule'].upper()} on P = {timeline['procs']}, time "
            f"{amount(timeline['makespan'], timeline['units'])}{coarse}", program), fontsize=10)

    return _render(10, 1.2 + 0.42 * len(rows), fmt, draw)


def _joined(intervals) -> tuple[list[tuple[float, float]], list[str]]:
    """(start, end, colour) intervals in time order as broken_barh's (start, width) bars and
    their colours, each run of intervals of one colour that follow at once drawn as one bar: the
    same picture (the bars have no edges), in far fewer SVG paths (a coarsened timeline's
    windows mostly follow at once: zipmul at 10^5 draws 5 bars for its 1 115)."""
    bars: list[tuple[float, float]] = []
    colours: list[str] = []
    start = end = 0.0
    colour = None
    for low, high, shade in intervals:
        if shade == colour and low == end:
            end = high
            continue
        if colour is not None:
            bars.append((start, end - start))
            colours.append(colour)
        start, end, colour = low, high, shade
    if colour is not None:
        bars.append((start, end - start))
        colours.append(colour)
    return bars, colours


def speedup_plot(work: float, span: float, points: list[tuple[int, float]], fmt: str = "png",
                 title: str = "", policy: str = "1df", program: str = "",
                 units: str = "abstract") -> bytes:
    """Predicted speedup T1 / TP against P, with the work and span laws and Brent's bound."""
    procs = [p for p, _ in points]
    top = max(procs, default=1)

    def draw(fig) -> None:
        ax = fig.subplots()
        xs = [1 + (top - 1) * i / 200 for i in range(201)]
        parallelism = work / span if span else 1.0
        ax.plot(xs, xs, color="#7f7f7f", linestyle="--", label="work law: speedup ≤ P")
        ax.axhline(parallelism, color="#d62728", linestyle="--",
                   label=f"span law: speedup ≤ work/span = {parallelism:.4g}")
        ax.plot(xs, [work / (work / x + span) if work else 1.0 for x in xs], color="#ff7f0e",
                linestyle=":", label="greedy (Brent): speedup ≥ T1 / (T1/P + T∞)")
        speedups = [work / t if t else 0.0 for _, t in points]
        ax.plot(procs, speedups, marker="o", color="#1f77b4",
                label=f"predicted ({policy.upper()} schedule): T1 / TP")
        ax.set_xlabel("processors P")
        ax.set_ylabel("speedup")
        ax.set_xlim(1, top)
        ax.set_ylim(0, max(top, max(speedups, default=1)) * 1.05 if parallelism > top
                    else max(parallelism, max(speedups, default=1)) * 1.25)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title(title or _named(f"speedup (work {amount(work, units)}, span "
                                     f"{amount(span, units)})", program), fontsize=10)

    return _render(7, 5, fmt, draw)


def sizes_plot(points: list[SizePoint], parameter: str, fmt: str = "png", title: str = "",
               units: str = "abstract", program: str = "", failed: str = "") -> bytes:
    """Time against the size for both placements, and their break-even size; `failed` (what
    went wrong at the first size left out) is written under the title."""
    # graphs.crossings imports sympy (0.3 s), which no other plot needs.
    from graphs.crossings import interpolated_break_even

    points = sorted(points, key=lambda p: p.size)

    def draw(fig) -> None:
        ax = fig.subplots()
        sizes = [p.size for p in points]
        ax.plot(sizes, [p.cpu_time for p in points], marker="o", color="#1f77b4",
                label="CPU placement (every `on` removed)")
        ax.plot(sizes, [p.gpu_time for p in points], marker="s", color="#2ca02c",
                label="GPU placement (as written)")
        crossing = interpolated_break_even(points)
        if crossing is not None:
            ax.axvline(crossing, color="#d62728", linestyle="--",
                       label=f"break-even: {parameter} ≈ {number(float(f'{crossing:.4g}'))}")
        if sizes and min(sizes) > 0 and max(sizes) / min(sizes) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(f"size parameter {parameter}")
        ax.set_ylabel(f"time ({_unit(units)})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        heading = title or _named(f"time vs {parameter}: CPU and GPU placements", program)
        if failed:
            heading += f"\n{failed}"
        ax.set_title(heading, fontsize=10 if not failed else 8)

    return _render(7, 5, fmt, draw)


def validation_plot(cases: list[dict[str, Any]], fmt: str = "png", title: str = "") -> bytes:
    """Predicted against measured seconds (log-log), the diagonal and a factor-2 band, one colour
    per part (matplotlib's tab10, or tab20 past 10 parts); ratios (bank-conflict slowdowns) on
    axes of their own beside it."""
    timed = [c for c in cases if str(c["part"]) not in RATIO_PARTS]
    ratios = [c for c in cases if str(c["part"]) in RATIO_PARTS]
    parts = sorted({str(c["part"]) for c in cases})

    def colour(part: str) -> Any:
        import matplotlib

        palette = "tab10" if len(parts) <= 10 else "tab20"
        return matplotlib.colormaps[palette](parts.index(part) % 20)

    def scatter(ax, chosen: list[dict[str, Any]], log: bool, unit: str) -> None:
        values = [c["predicted_s"] for c in chosen] + [c["measured_s"] for c in chosen]
        low, high = (min(values) / 2, max(values) * 2) if log else (0, max(values) * 1.1)
        ax.plot([low, high], [low, high], color="#7f7f7f", label="predicted = measured")
        if log:
            ax.fill_between([low, high], [low / 2, high / 2], [low * 2, high * 2],
                            color="#7f7f7f", alpha=0.12, label="within a factor of 2")
        for part in sorted({str(c["part"]) for c in chosen}):
            mine = [c for c in chosen if str(c["part"]) == part]
            ax.scatter([c["measured_s"] for c in mine], [c["predicted_s"] for c in mine],
                       color=colour(part), label=part, zorder=3)
        if len(chosen) <= 24:
            for c in chosen:
                ax.annotate(f"{c['program']} n={c['n']}", (c["measured_s"], c["predicted_s"]),
                            fontsize=6.5, xytext=(3, 3), textcoords="offset points")
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_xlabel(f"measured {unit}")
        ax.set_ylabel(f"predicted {unit}")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper left")

    def draw(fig) -> None:
        panels = [chosen for chosen in (timed, ratios) if chosen]
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, chosen in zip(axes, panels, strict=True):
            scatter(ax, chosen, chosen is timed, "(s)" if chosen is timed else "(slowdown, ×)")
        summary = ""
        if timed:
            logs = [math.log(c["predicted_s"] / c["measured_s"]) for c in timed]
            summary = (f": {len(timed)} timed cases, geometric mean of predicted/measured "
                       f"{math.exp(sum(logs) / len(logs)):.3g}")
        fig.suptitle(title or f"predicted vs measured{summary}", fontsize=10)

    return _render(7 * (2 if timed and ratios else 1), 6, fmt, draw)
