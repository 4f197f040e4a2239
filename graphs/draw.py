"""Drawing a cost graph's picture (`graphs.picture.cost_picture`) with matplotlib, which is
imported only here, inside `draw_cost_graph`; graphviz is not needed (`graphs.render_dot.
graphviz_picture` lays the picture out with graphviz's `dot` where it is installed, and
`draw_picture` picks one).

The summary is laid out series top to bottom and parallel side by side. `--expand-gpu` draws each
device box's phases, warp boxes (work groups) and their lock-step steps, with bank-conflicting steps
in red. In an SVG each device box is the group `device-box-N` (N counts the device boxes in graph
order), each edge of the critical path a group whose id starts with `critical-path`, each warp box
`warp-box-N-P-G` and each bank-conflicting step `bank-conflict-N-P-G-S`; every element and edge
carries a `<title>` (its label, shown as a tooltip), and each box is sized to hold its label.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html import escape

from graphs.numbers import number
from graphs.picture import (
    CRITICAL,
    EDGE_COLOURS,
    NODE_COLOURS,
    STEP_COLOURS,
    Picture,
    cost_label,
    edge_label,
    element_label,
    label_units,
)

# ---------------------------------------------------------------------------------------------------
# Layout: series top to bottom, parallel side by side (grid units)

NODE = 0.2  # radius of a plain node
GAP = 0.75  # vertical room for an edge and its label
SIDE = 0.5  # horizontal room between branches


@dataclass(slots=True)
class _Placed:
    item: Picture
    x: float
    top: float
    bottom: float
    width: float


CHARACTER_WIDTH = 0.62  # of the font size: DejaVu Sans' widest common glyphs, digits included
LINE_HEIGHT = 1.45  # of the font size, with matplotlib's line spacing of 1.3-1.4
SUMMARY_FONT = 6.5  # points: the labels of runs, blocks and ⊗ summaries
BOX_FONT = 7.0  # points: a device box's label


def label_size(text: str, font_size: float) -> tuple[float, float]:
    """The grid units a label needs, with a margin: its longest line's width and its lines'
    height at `font_size` points (SCALE inches per grid unit)."""
    lines = text.split("\n")
    points_per_unit = SCALE * 72
    width = max(len(line) for line in lines) * font_size * CHARACTER_WIDTH / points_per_unit
    height = len(lines) * font_size * LINE_HEIGHT / points_per_unit
    return width + 0.5, height + 0.35


def _size(item: Picture, expand: bool) -> tuple[float, float]:
    match item["t"]:
        case "node":
            return (1.6, 0.7) if item["label"] else (0.8, 2 * NODE)
        case "run" | "block":
            w, h = label_size(element_label(item), SUMMARY_FONT)
            return max(3.0, w), max(1.1, h)
        case "threads":
            w, h = label_size(element_label(item), SUMMARY_FONT)
            return max(4.8, w), max(1.3, h)
        case "device-box":
            if not expand or not item["phases"]:
                w, h = label_size(element_label(item), BOX_FONT)
                return max(5.4, w), max(1.5, h)
            rows = _phase_rows(item["phases"])
            width = max(sum(_phase_width(p) for p in row) for row, _ in rows) + 0.4
            label_width = label_size(element_label(item), BOX_FONT)[0]
            return max(5.4, width, label_width), 1.1 + sum(h for _, h in rows)
        case "par":
            widths = [_chain_size(b["chain"], expand)[0] for b in item["branches"]]
            heights = [_chain_size(b["chain"], expand)[1] for b in item["branches"]]
            return sum(widths) + SIDE * (len(widths) - 1), max(heights) + 2 * (2 * NODE + GAP)
    raise AssertionError(item["t"])


def _phase_width(phase: Picture) -> float:
    return max(2.6, 1.5 * len(phase["groups"]) + 0.4)


PHASES_PER_ROW = 4


def _phase_rows(phases: list[Picture]) -> list[tuple[list[Picture], float]]:
    """An expanded device box's phases in rows, with each row's height."""
    rows = []
    for first in range(0, len(phases), PHASES_PER_ROW):
        row = phases[first:first + PHASES_PER_ROW]
        cells = max((len(g["cells"]) for p in row for g in p["groups"]), default=0)
        rows.append((row, 1.65 + 0.45 * cells + 0.3))
    return rows


def _chain_size(chain: list[Picture], expand: bool) -> tuple[float, float]:
    width, height = 0.0, 0.0
    for item in chain:
        if item["t"] == "edge":
            height += GAP
        else:
            w, h = _size(item, expand)
            width = max(width, w)
            height += h
    return width, height


def _layout(chain: list[Picture], x: float, top: float, expand: bool,
            out: list[_Placed], edges: list[tuple[_Placed, _Placed, Picture]]) -> tuple:
    """Place a chain centred on x from `top` down; return its first and last placed element."""
    first = last = None
    pending_edge = None
    y = top
    for item in chain:
        if item["t"] == "edge":
            pending_edge = item
            y += GAP
            continue
        w, h = _size(item, expand)
        placed = _Placed(item, x, y, y + h, w)
        if item["t"] == "par":
            entry, exit_ = _layout_par(item, x, y, w, h, expand, out, edges)
        else:
            out.append(placed)
            entry = exit_ = placed
        if last is not None and pending_edge is not None:
            edges.append((last, entry, pending_edge))
        if first is None:
            first = entry
        last = exit_
        pending_edge = None
        y += h
    return first, last


def _layout_par(item: Picture, x: float, top: float, width: float, height: float, expand: bool,
                out: list[_Placed], edges: list) -> tuple[_Placed, _Placed]:
    fork = _Placed({"t": "node", "kind": "fork", "label": "", "critical": item["critical"]},
                   x, top, top + 2 * NODE, 0.8)
    join = _Placed({"t": "node", "kind": "join", "label": "", "critical": item["critical"]},
                   x, top + height - 2 * NODE, top + height, 0.8)
    out.extend((fork, join))
    if item["threads"] > 2:
        fork.item["label_beside"] = (f"⊗ of {item['threads']:,} threads @{item['location']} "
                                     f"(fork/join tree weight {cost_label(item['overhead'])})")
    left = x - width / 2
    for branch in item["branches"]:
        w, h = _chain_size(branch["chain"], expand)
        centre = left + w / 2
        branch_top = fork.bottom + GAP + (height - 2 * (2 * NODE + GAP) - h) / 2
        first, last = _layout(branch["chain"], centre, branch_top, expand, out, edges)
        critical = branch["critical"]
        edges.append((fork, first, {"t": "edge", "kind": "fork", "weight": branch["fork_weight"],
                                    "critical": critical}))
        edges.append((last, join, {"t": "edge", "kind": "join", "weight": branch["join_weight"],
                                   "critical": critical}))
        left += w + SIDE
    return fork, join


# Identical runs draw identical bytes: SVG ids (clip paths, glyphs) come from this salt
# (rcParams["svg.hashsalt"]) rather than a random one, and `figure_bytes` writes no creation
# date (SVG's <dc:date>, PDF's).
SVG_SALT = "hetprof"


def figure_bytes(fig, fmt: str, dpi: float) -> bytes:
    """A matplotlib figure as PNG, SVG or PDF bytes, the same for the same figure on every run
    (drawn with rcParams["svg.hashsalt"] = SVG_SALT)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=dpi, metadata={"Date": None})
    return buffer.getvalue()


LEGEND_WIDTH = 5.0  # grid units left of the graph for the legend
SCALE = 0.55  # inches per grid unit


def draw_cost_graph(picture: Picture, fmt: str = "png", expand_gpu: bool = False,
                    title: str = "", units: str = "") -> bytes:
    """Draw a summary from `cost_picture` as PNG or SVG bytes (matplotlib, no graphviz); its
    costs labelled in `units`, the profile's (`graphs.picture.label_units`)."""
    with label_units(units):
        return _draw_cost_graph(picture, fmt, expand_gpu, title)


def _draw_cost_graph(picture: Picture, fmt: str, expand_gpu: bool, title: str) -> bytes:
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Patch, Rectangle

    placed: list[_Placed] = []
    edges: list[tuple[_Placed, _Placed, Picture]] = []
    width, height = _chain_size(picture["chain"], expand_gpu)
    _layout(picture["chain"], width / 2, 0.0, expand_gpu, placed, edges)
    header = 1.6
    left, right = -LEGEND_WIDTH, max(width + 0.6, 13.0)
    top, bottom = -header, max(height + 0.6, 9.0)
    fig_w, fig_h = (right - left) * SCALE, (bottom - top) * SCALE
    dpi = max(40, min(110, int(9000 / max(fig_w, fig_h))))
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT, "svg.fonttype": "none", "font.size": 7}):
        fig = Figure(figsize=(fig_w, fig_h))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(left, right)
        ax.set_ylim(bottom, top)
        ax.axis("off")
        ax.text(left + 0.2, top + 0.2,
                f"{title or 'cost graph'}\nwork {cost_label(picture['work'])}, span "
                f"{cost_label(picture['span'])} (the critical path, in red); "
                f"{picture['nodes']:,} nodes, {picture['edges']:,} edges; shown: "
                f"{picture['detail']}", ha="left", va="top", fontsize=8.5)
        anchors: dict[int, tuple[float, float]] = {}
        titles: dict[str, str] = {}
        for index, p in enumerate(placed):
            gid = (f"device-box-{p.item['number']}" if p.item["t"] == "device-box"
                   else f"element-{index}")
            titles[gid] = tooltip(p.item)
            anchors[id(p)] = _draw_element(ax, p, expand_gpu, gid, Circle, FancyBboxPatch,
                                           Rectangle)
        critical_count = 0
        for index, (a, b, edge) in enumerate(edges):
            a_bottom = anchors[id(a)][1]
            b_top = anchors[id(b)][0]
            critical = bool(edge["critical"])
            colour = EDGE_COLOURS.get(edge["kind"], "#555555")
            dashed = edge["kind"] in ("transfer-in", "transfer-out")
            arrow = FancyArrowPatch((a.x, a_bottom), (b.x, b_top), arrowstyle="-|>",
                                    mutation_scale=8, color=colour, lw=1.6 if dashed else 1.0,
                                    linestyle="--" if dashed else "-", shrinkA=0, shrinkB=0,
                                    zorder=1)
            if critical:  # a red band under the edge, so that its kind's colour still shows
                band = FancyArrowPatch((a.x, a_bottom), (b.x, b_top), arrowstyle="-",
                                       color=CRITICAL, lw=6, alpha=0.45, shrinkA=0, shrinkB=0,
                                       zorder=0.5)
                band.set_gid(f"critical-path-edge-{critical_count}")
                critical_count += 1
                ax.add_patch(band)
            arrow.set_gid(f"edge-{index}")
            titles[f"edge-{index}"] = (f"{edge['kind']} edge, weight {cost_label(edge['weight'])}"
                                       + (" (critical path)" if critical else ""))
            ax.add_patch(arrow)
            label = edge_label(edge)
            if label:
                ax.text((a.x + b.x) / 2 + 0.12, (a_bottom + b_top) / 2, label, fontsize=6.5,
                        color=colour if dashed else "#333333", va="center",
                        ha="left", zorder=4,
                        bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none",
                              "alpha": 0.85})
        handles = [
            Patch(color=NODE_COLOURS["read"], label="read"),
            Patch(color=NODE_COLOURS["write"], label="write (allocation)"),
            Patch(color=NODE_COLOURS["point"], label="other step"),
            Patch(color=NODE_COLOURS["push"], label="region push / pop"),
            Patch(facecolor="white", edgecolor="black", label="⊗ fork / join"),
            Patch(facecolor="#fff7e6", edgecolor="#b07a00", label="summary: ×n threads,\n"
                  "run of steps, block"),
            Patch(facecolor="#e8f6f5", edgecolor="#17becf", label="device box (on)"),
            Line2D([], [], color=EDGE_COLOURS["expand"], label="Δa: a region grows"),
            Line2D([], [], color=EDGE_COLOURS["alloc-region"], label="Δa(R): new region"),
            Line2D([], [], color=EDGE_COLOURS["transfer-in"], ls="--", lw=1.8,
                   label="transfer δ*, δ†"),
            Line2D([], [], color=CRITICAL, lw=6, alpha=0.45, label="critical path"),
        ]
        if expand_gpu:
            handles += [Patch(color=STEP_COLOURS["global"], label="step: global memory"),
                        Patch(color=STEP_COLOURS["local"], label="step: local memory"),
                        Patch(color="#fb6a4a", label="step: bank conflict")]
        legend = ax.legend(handles=handles, loc="upper left", fontsize=6.5, frameon=True,
                           title="⊕ edges top to bottom;\nunlabelled edges weigh 1",
                           title_fontsize=6.5,
                           bbox_to_anchor=(0.2 / (right - left), 1 - 1.3 / (bottom - top)))
        legend.set_gid("legend")
        data = figure_bytes(fig, fmt, dpi)
        return with_titles(data, titles) if fmt == "svg" else data


def tooltip(item: Picture) -> str:
    """What hovering over an element shows: its label, or for a plain node its kind."""
    label = element_label(item).replace("\n", "; ")
    kind = item["t"] if item["t"] != "node" else f"{item['kind']} node"
    text = f"{kind}: {label}" if label else kind
    return text + (" (critical path)" if item.get("critical") else "")


def with_titles(svg: bytes, titles: dict[str, str]) -> bytes:
    """An SVG with a `<title>` (a tooltip) as the first child of each group `<g id="GID">` named
    in `titles` (matplotlib writes an artist with a gid as such a group)."""
    def add(match: re.Match[str]) -> str:
        text = titles.get(match["gid"])
        if text is None:
            return match[0]
        return f"{match[0]}\n   <title>{escape(text, quote=False)}</title>"

    return re.sub(r'<g id="(?P<gid>[^"]+)"[^>]*>', add, svg.decode("utf-8")).encode("utf-8")


def _draw_element(ax, p: _Placed, expand: bool, gid: str, Circle, FancyBboxPatch,
                  Rectangle) -> tuple[float, float]:
    """Draw one element; return the top and bottom of its outline (where edges attach)."""
    item = p.item
    critical = bool(item.get("critical"))
    edge_colour = CRITICAL if critical else "#333333"
    lw = 2.0 if critical else 0.8
    kind = item["t"]
    if kind == "node":
        node_kind = item["kind"]
        if item["label"]:  # push / pop: a labelled square
            w, h = 1.4, 0.6
            top = (p.top + p.bottom) / 2 - h / 2
            ax.add_patch(FancyBboxPatch((p.x - w / 2, top), w, h, boxstyle="square,pad=0",
                                        fc=NODE_COLOURS.get(node_kind, "#dddddd"),
                                        ec=edge_colour, lw=lw, zorder=2, gid=gid))
            ax.text(p.x, top + h / 2, item["label"], ha="center", va="center", color="white",
                    fontsize=7, zorder=3, fontweight="bold")
            return top, top + h
        y = (p.top + p.bottom) / 2
        ax.add_patch(Circle((p.x, y), NODE, fc=NODE_COLOURS.get(node_kind, "#dddddd"),
                            ec=edge_colour, lw=lw, zorder=2, gid=gid))
        if node_kind in ("fork", "join"):
            ax.text(p.x, y, "⊗", ha="center", va="center", fontsize=8, zorder=3)
        if item.get("label_beside"):
            ax.text(p.x + NODE + 0.1, y - NODE, item["label_beside"], ha="left", va="bottom",
                    fontsize=6, zorder=3, color="#333333")
        return y - NODE, y + NODE
    if kind == "device-box":
        return _draw_box(ax, p, expand, critical, Rectangle)
    w, h = _size(item, expand)
    w -= 0.2
    h -= 0.1
    top = p.top + 0.05
    ax.add_patch(FancyBboxPatch((p.x - w / 2, top), w, h, boxstyle="round,pad=0,rounding_size=0.2",
                                fc="#fff7e6", ec=CRITICAL if critical else "#b07a00", lw=lw,
                                zorder=2, gid=gid))
    ax.text(p.x, top + h / 2, element_label(item), ha="center", va="center", fontsize=SUMMARY_FONT,
            zorder=3, linespacing=1.3)
    return top, top + h


def _draw_box(ax, p: _Placed, expand: bool, critical: bool,
              Rectangle) -> tuple[float, float]:
    item = p.item
    w, h = _size(item, expand)
    w -= 0.2
    h -= 0.1
    left, top = p.x - w / 2, p.top + 0.05
    box = Rectangle((left, top), w, h, fc="#e8f6f5", ec=CRITICAL if critical else "#17becf",
                    lw=2.4 if critical else 1.6, zorder=2)
    box.set_gid(f"device-box-{item['number']}")
    ax.add_patch(box)
    if not expand or not item["phases"]:
        ax.text(p.x, top + h / 2, element_label(item), ha="center", va="center",
                fontsize=BOX_FONT, zorder=3, linespacing=1.4)
        return top, top + h
    ax.text(p.x, top + 0.15, element_label(item), ha="center", va="top", fontsize=7, zorder=3,
            linespacing=1.4)
    y = top + 1.0
    index = 0
    for row, row_height in _phase_rows(item["phases"]):
        x = left + 0.2
        for phase in row:
            pw = _phase_width(phase) - 0.2
            kind = "kernel" if phase["parallel"] else "serial"
            ax.add_patch(Rectangle((x, y), pw, row_height - 0.15, fc="white", ec="#17becf",
                                   lw=0.6, zorder=2))
            where = f" @{phase['location']}" if phase["location"] else ""
            ax.text(x + pw / 2, y + 0.08,
                    f"{kind} {index + 1}{where}: time {number(phase['time'])}\n"
                    f"{phase['threads']:,} threads, {phase['work_groups']:,} work group(s)\n"
                    f"{phase['rounds']} round(s), {phase['steps']:,} steps",
                    ha="center", va="top", fontsize=5.5, zorder=3)
            gx = x + 0.25
            for group in phase["groups"]:
                _draw_warp_box(ax, item["number"], index, group, gx, y + 1.0, Rectangle)
                gx += 1.5
            hidden = phase["work_groups"] - len(phase["groups"])
            if hidden > 0:
                ax.text(x + pw - 0.1, y + row_height - 0.25, f"+{hidden:,} more work groups",
                        ha="right", va="bottom", fontsize=5.5, zorder=3)
            x += pw + 0.2
            index += 1
        y += row_height
    return top, top + h


def _draw_warp_box(ax, number_: int, phase: int, group: Picture, x: float, top: float,
                   Rectangle) -> None:
    cells = group["cells"]
    outline = Rectangle((x - 0.05, top - 0.05), 1.3, 0.45 * len(cells) + 0.45, fc="none",
                        ec="#555555", lw=0.6, ls=":", zorder=2)
    outline.set_gid(f"warp-box-{number_}-{phase}-{group['index']}")
    ax.add_patch(outline)
    ax.text(x + 0.6, top, f"warp box {group['index']}", ha="center", va="top", fontsize=5,
            zorder=3)
    y = top + 0.3
    for s, cell in enumerate(cells):
        if "gap" in cell:
            ax.text(x + 0.6, y + 0.17, f"⋯ {cell['gap']:,} steps", ha="center", va="center",
                    fontsize=5, zorder=3, color="#555555")
        else:
            conflict = cell["conflicts"] > 0
            rect = Rectangle((x, y), 1.2, 0.36, fc="#fb6a4a" if conflict else
                             STEP_COLOURS.get(cell["memory"], "#f0f0f0"),
                             ec="#a50f15" if conflict else "#999999", lw=0.5, zorder=3)
            if conflict:
                rect.set_gid(f"bank-conflict-{number_}-{phase}-{group['index']}-{s}")
            ax.add_patch(rect)
            text = number(cell["weight"])
            if cell["count"] > 1:
                text += f" ×{cell['count']}"
            if conflict:
                text += f" (deg {cell['degree']})"
            ax.text(x + 0.6, y + 0.18, text, ha="center", va="center", fontsize=5, zorder=4)
        y += 0.45
