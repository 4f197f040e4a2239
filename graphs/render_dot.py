"""The DOT renderer (`--format dot`, `hetprof graph -o OUT.dot`): the summarised cost graph of
`graphs.draw.cost_picture` for graphviz, for those who have it (`dot -Tsvg OUT.dot`).

Series steps run top to bottom; each ⊗ is a fork and a join node (⊗) around its branches; each
device box is a cluster `cluster_device_box_N` holding a box node (and, expanded, one cluster per
phase with a chain of lock-step cells per warp box); transfers are dashed edges labelled δ* and δ†;
the critical path is red and thick. Labels are DOT-escaped, so any source text is safe.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html import escape
from typing import Any

from graphs.analysis import ProfileResult
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


def quote(text: str) -> str:
    """A DOT double-quoted string holding exactly `text` (escapes and newlines as \\n)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{escaped}"'


def _attributes(**values: Any) -> str:
    return "[" + ", ".join(f"{key}={quote(str(value))}" for key, value in values.items()) + "]"


class _Writer:
    def __init__(self, expand_gpu: bool):
        self.expand_gpu = expand_gpu
        self.lines: list[str] = []
        self.links: list[str] = []
        self.count = 0
        self.titles: dict[str, str] = {}  # node name or edge id -> its tooltip in an SVG
        self.edges = 0

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def fresh(self) -> str:
        self.count += 1
        return f"n{self.count}"

    def node(self, indent: str, **attributes: Any) -> str:
        name = self.fresh()
        self.lines.append(f"{indent}{name} {_attributes(**attributes)};")
        self.titles[name] = str(attributes.get("label") or attributes.get("tooltip") or "")
        return name

    def edge(self, indent: str, source: str, target: str, edge: Picture) -> None:
        critical = edge["critical"]
        dashed = edge["kind"] in ("transfer-in", "transfer-out")
        attributes = {
            "color": CRITICAL if critical else EDGE_COLOURS.get(edge["kind"], "#555555"),
            "penwidth": 3 if critical else (2 if dashed else 1),
            "style": "dashed" if dashed else "solid",
            "label": edge_label(edge),
            "tooltip": f"{edge['kind']} edge, weight {cost_label(edge['weight'])}",
        }
        if critical:
            attributes["class"] = "critical-path"
        self.edges += 1
        edge_id = f"e{self.edges}"
        attributes["id"] = edge_id
        self.titles[edge_id] = str(attributes["tooltip"])
        self.lines.append(f"{indent}{source} -> {target} {_attributes(**attributes)};")

    def chain(self, chain: list[Picture], indent: str) -> tuple[str, str]:
        """Write a chain; return its entry and exit node names."""
        first = last = ""
        pending: Picture | None = None
        for item in chain:
            if item["t"] == "edge":
                pending = item
                continue
            entry, exit_ = self.element(item, indent)
            if last and pending is not None:
                self.edge(indent, last, entry, pending)
            first = first or entry
            last = exit_
            pending = None
        return first, last

    def element(self, item: Picture, indent: str) -> tuple[str, str]:
        critical = bool(item.get("critical"))
        outline = {"color": CRITICAL if critical else "#333333",
                   "penwidth": 3 if critical else 1}
        match item["t"]:
            case "node":
                kind = item["kind"]
                if item["label"]:
                    name = self.node(indent, shape="box", style="filled", label=item["label"],
                                     fillcolor=NODE_COLOURS.get(kind, "#dddddd"),
                                     fontcolor="white", **outline)
                else:
                    name = self.node(indent, shape="circle", style="filled", label="",
                                     width=0.2, fixedsize="true", tooltip=kind,
                                     fillcolor=NODE_COLOURS.get(kind, "#dddddd"), **outline)
                return name, name
            case "par":
                fork = self.node(indent, shape="circle", label="⊗", width=0.3, fixedsize="true",
                                 tooltip=f"fork: ⊗ of {item['threads']} threads "
                                 f"@{item['location']}", **outline)
                join = self.node(indent, shape="circle", label="⊗", width=0.3, fixedsize="true",
                                 tooltip="join", **outline)
                for branch in item["branches"]:
                    entry, exit_ = self.chain(branch["chain"], indent)
                    critical_branch = branch["critical"]
                    self.edge(indent, fork, entry, {"kind": "fork", "critical": critical_branch,
                                                    "weight": branch["fork_weight"]})
                    self.edge(indent, exit_, join, {"kind": "join", "critical": critical_branch,
                                                     "weight": branch["join_weight"]})
                return fork, join
            case "device-box":
                return self.device_box(item, indent, outline)
        name = self.node(indent, shape="box", style="rounded,filled", fillcolor="#fff7e6",
                         label=element_label(item), **outline)
        return name, name

    def device_box(self, item: Picture, indent: str, outline: dict) -> tuple[str, str]:
        number_ = item["number"]
        inner = indent + "  "
        self.lines.append(f"{indent}subgraph cluster_device_box_{number_} {{")
        label = f"device box of on #{number_} at {item['location']}"
        self.titles[f"cluster_device_box_{number_}"] = label
        self.lines.append(f"{inner}label={quote(label)}; id={quote(f'device-box-{number_}')};")
        self.lines.append(f"{inner}style=filled; fillcolor={quote('#e8f6f5')}; "
                          f"color={quote(outline['color'])}; penwidth={outline['penwidth']};")
        box = self.node(inner, shape="box", style="filled", fillcolor="white",
                        label=element_label(item), **outline)
        if self.expand_gpu:
            for index, phase in enumerate(item["phases"]):
                self.phase(number_, index, phase, box, inner)
            self.lines += [inner + link for link in self.links]
            self.links.clear()
        self.lines.append(f"{indent}}}")
        return box, box

    def phase(self, number_: int, index: int, phase: Picture, box: str, indent: str) -> None:
        inner = indent + "  "
        kind = "kernel" if phase["parallel"] else "serial"
        label = (f"{kind} {index + 1}: {phase['threads']:,} threads, "
                 f"{phase['work_groups']:,} work groups, time {number(phase['time'])}")
        self.lines.append(f"{indent}subgraph cluster_device_box_{number_}_phase_{index} {{")
        self.titles[f"cluster_device_box_{number_}_phase_{index}"] = label
        self.lines.append(f"{inner}label={quote(label)}; style=filled; fillcolor=white; "
                          'color="#17becf"; penwidth=1; '
                          f"id={quote(f'device-box-{number_}-phase-{index}')};")
        for group in phase["groups"]:
            deeper = inner + "  "
            group_index = group["index"]
            self.lines.append(f"{inner}subgraph cluster_warp_box_{number_}_{index}_"
                              f"{group['index']} {{")
            title = f"warp box {group['index']}"
            self.titles[f"cluster_warp_box_{number_}_{index}_{group_index}"] = title
            self.lines.append(f'{deeper}label={quote(title)}; style=dotted; color="#555555"; '
                              f"id={quote(f'warp-box-{number_}-{index}-{group_index}')};")
            previous = None
            for cell in group["cells"]:
                if "gap" in cell:
                    name = self.node(deeper, shape="plaintext", label=f"⋯ {cell['gap']:,} steps")
                else:
                    conflict = cell["conflicts"] > 0
                    text = number(cell["weight"])
                    if cell["count"] > 1:
                        text += f" ×{cell['count']}"
                    if conflict:
                        text += f" (bank conflict, degree {cell['degree']})"
                    name = self.node(deeper, shape="box", style="filled", label=text,
                                     fillcolor="#fb6a4a" if conflict
                                     else STEP_COLOURS.get(cell["memory"], "#f0f0f0"),
                                     **({"class": "bank-conflict"} if conflict else {}))
                if previous is None:
                    # Stated outside the clusters: naming a node in a subgraph puts it there.
                    self.links.append(f"{box} -> {name} [style=invis];")
                else:
                    self.lines.append(f"{deeper}{previous} -> {name} [arrowsize=0.5];")
                previous = name
            self.lines.append(f"{inner}}}")
        self.lines.append(f"{indent}}}")


def picture_to_dot(picture: Picture, expand_gpu: bool = False, title: str = "",
                   units: str = "") -> str:
    """A summary from `cost_picture` as a DOT digraph, its costs labelled in `units`."""
    with label_units(units):
        return _write(picture, expand_gpu, title).text()


GRAPHVIZ_SECONDS = 60  # past this, a picture is drawn with matplotlib's layout instead


def graphviz_picture(picture: Picture, fmt: str, expand_gpu: bool = False,
                     title: str = "", units: str = "") -> bytes | None:
    """A summary laid out and drawn by graphviz's `dot` as SVG or PNG bytes, or None where `dot`
    is not installed or fails (the caller draws it with graphs.draw instead). In an SVG, each
    node's `<title>` (its tooltip) is its label, not graphviz's node name, and each edge's its
    kind and weight, as in graphs.draw's SVG. Costs are labelled in `units`, the profile's."""
    program = shutil.which("dot")
    if program is None:
        return None
    with label_units(units):
        writer = _write(picture, expand_gpu, title)
    try:
        done = subprocess.run([program, f"-T{fmt}"], input=writer.text().encode("utf-8"),
                              capture_output=True, timeout=GRAPHVIZ_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or not done.stdout:
        return None
    if fmt != "svg":
        return done.stdout

    def title_of(match: re.Match[str]) -> str:
        label = writer.titles.get(match["name"])
        shown = escape(label.replace("\n", "; "), quote=False) if label else match["name"]
        return f'{match["head"]}<title>{shown}</title>'

    def edge_title(match: re.Match[str]) -> str:
        label = writer.titles.get(match["id"])
        return f'{match["head"]}<title>{escape(label, quote=False)}</title>' if label else \
            match[0]

    svg = done.stdout.decode("utf-8")
    svg = re.sub(r'(?P<head><g id="[^"]+" class="(node|cluster)">\s*)'
                 r'<title>(?P<name>\w+)</title>', title_of, svg)
    # An edge's title is graphviz's `n1->n2`; its kind and weight say more.
    return re.sub(r'(?P<head><g id="(?P<id>e\d+)" class="[^"]*">\s*)<title>[^<]*</title>',
                  edge_title, svg).encode("utf-8")


def _write(picture: Picture, expand_gpu: bool, title: str) -> _Writer:
    writer = _Writer(expand_gpu)
    heading = (f"{title or 'cost graph'}\nwork {cost_label(picture['work'])}, span "
               f"{cost_label(picture['span'])} (critical path in red); {picture['nodes']:,} nodes, "
               f"{picture['edges']:,} edges; shown: {picture['detail']}")
    writer.lines += [
        "digraph cost_graph {",
        f"  label={quote(heading)}; labelloc=t; rankdir=TB;",
        '  node [fontname="Helvetica", fontsize=9]; edge [fontname="Helvetica", fontsize=8];',
    ]
    writer.chain(picture["chain"], "  ")
    writer.lines.append("}")
    return writer


class DotRenderer:
    """render(result) -> str: the result's cost-graph summary as DOT."""

    def __init__(self, expand_gpu: bool = False):
        self.expand_gpu = expand_gpu

    def render(self, result: ProfileResult) -> str:
        if result.cost_graph is None:
            raise ValueError("this profile carries no cost graph: save it with `profile --format json --pictures`")
        return picture_to_dot(result.cost_graph, self.expand_gpu, result.file, result.units)
