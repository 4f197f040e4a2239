"""Pictures of cost graphs (§6.1, Fig. 4; device boxes §6.4, Figs. 7-8).

Two steps, so that a picture can be saved inside a `ProfileResult` and drawn or exported later:

1. `cost_picture(graph)` reads the cost graph's series-parallel structure (a chain of ⊕ steps, a
   fork/join pair for each ⊗) into a *summary*: plain JSON data small enough to draw. It marks the
   critical path (the longest path, whose weight is the span), turns each ⊗-tree of structurally
   identical threads into one node with its multiplicity (×n: a compressed `parmap`, `iota` or
   `reduce` level), splits each device-box edge into its transfers (edges labelled δ* and δ†) and
   the box itself, and, when the graph is still larger than `max_nodes`, summarises: first runs of
   plain reads, writes and steps become one node, then ⊗-blocks nested deeper than some level are
   collapsed, and last the outermost chain is cut into blocks. It never returns a hairball.
2. `draw_cost_graph(picture, fmt)` lays the summary out (series top to bottom, parallel side by
   side) and draws it with matplotlib, which is imported only there; graphviz is not needed.
   `--expand-gpu` draws each device box's phases, warp boxes (work groups) and their lock-step
   steps, with bank-conflicting steps in red.

In an SVG each device box is the group `device-box-N` (N counts the device boxes in graph order),
each edge of the critical path a group whose id starts with `critical-path`, each warp box
`warp-box-N-P-G` and each bank-conflicting step `bank-conflict-N-P-G-S`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphs.costgraph import CostGraph, DeviceBoxInfo, EdgeKind, NodeKind
from profiler.syntax import Span

MAX_NODES = 60  # drawn elements (nodes, boxes, summaries) before a picture is summarised
MAX_PARSED_DEPTH = 48  # ⊗ nesting read in detail; deeper blocks are only measured
MAX_BRANCHES = 6  # distinct thread shapes drawn side by side under one ⊗
MAX_STEP_CELLS = 12  # lock-step cells drawn per warp box
MAX_WARP_BOXES = 3  # warp boxes drawn per kernel
RUN_MIN_EDGES = 3  # plain edges in a row before they may become one node

Picture = dict[str, Any]

_VALUES = {id(kind): kind.value for kinds in (NodeKind, EdgeKind) for kind in kinds}


def _value(kind: NodeKind | EdgeKind) -> str:
    """kind.value, fast: reading an enum's value or hashing it runs Python code."""
    return _VALUES[id(kind)]


PLAIN_NODES = frozenset({NodeKind.POINT.value, NodeKind.READ.value, NodeKind.WRITE.value})
PLAIN_EDGES = frozenset({EdgeKind.SEQ.value, EdgeKind.OP.value, EdgeKind.READ.value,
                         EdgeKind.WRITE.value, EdgeKind.MERGE.value})


# ---------------------------------------------------------------------------------------------------
# The series-parallel tree of a cost graph


@dataclass(slots=True)
class _Edge:
    kind: str
    weight: float
    critical: bool
    sig: int  # the exact shape: kinds and weights
    skeleton: int  # the shape up to weights (a region growing is still a write)


@dataclass(slots=True)
class _Node:
    kind: NodeKind
    label: str
    critical: bool
    sig: int
    skeleton: int
    work: float = 0.0
    length: float = 0.0
    nodes: int = 1
    boxes: int = 0


@dataclass(slots=True)
class _Box:
    number: int
    info: DeviceBoxInfo
    critical: bool
    sig: int
    skeleton: int
    work: float = 0.0
    length: float = 0.0
    nodes: int = 0
    boxes: int = 1


@dataclass(slots=True)
class _Chain:
    items: list[Any]  # element, edge, element, ..., element
    work: float = 0.0
    length: float = 0.0
    nodes: int = 0
    boxes: int = 0
    critical: bool = False
    sig: int = 0
    skeleton: int = 0
    depth: int = 0  # the deepest ⊗ nesting inside


@dataclass(slots=True)
class _Branch:
    fork_weight: float
    join_weight: float
    chain: _Chain
    critical: bool
    sig: int


@dataclass(slots=True)
class _Par:
    span: Span | None
    branches: list[_Branch]
    overhead: float  # Σ of the fork and join edges of the (flattened) ⊗-tree
    critical: bool
    sig: int = 0
    skeleton: int = 0
    work: float = 0.0
    length: float = 0.0
    nodes: int = 0
    boxes: int = 0
    depth: int = 1


@dataclass(slots=True)
class _Opaque:
    """A ⊗-block nested deeper than `MAX_PARSED_DEPTH`: only measured."""

    span: Span | None
    critical: bool
    sig: int
    skeleton: int
    work: float
    length: float
    nodes: int
    boxes: int


class _Reader:
    """Reads a cost graph into `_Chain`s, hash-consing each sub-tree's shape into a small int so
    that structurally identical threads compare in O(1)."""

    def __init__(self, graph: CostGraph):
        g = graph.graph
        self.nodes: dict[int, dict] = dict(g.nodes(data=True))
        self.succ: dict[int, dict[int, dict]] = dict(g.adjacency())
        self.shapes: dict[tuple, int] = {}
        self.critical_nodes, self.critical_edges = critical_path(graph, self.succ)
        self.push_regions: dict[int, str] = {}
        self.box_numbers: dict[int, int] = {}
        for _, v, data in g.edges(data=True):
            kind = data["kind"]
            if kind is EdgeKind.DEVICE_BOX:
                self.box_numbers[id(data["box"])] = len(self.box_numbers) + 1
            elif kind is EdgeKind.ALLOC_REGION and "region" in data:
                self.push_regions[v] = data["region"]

    def shape(self, key: tuple) -> int:
        return self.shapes.setdefault(key, len(self.shapes))

    def edge(self, kind: str, weight: float, critical: bool) -> _Edge:
        plain = EdgeKind.WRITE.value if kind == EdgeKind.EXPAND.value else kind
        return _Edge(kind, weight, critical, self.shape(("e", kind, weight)),
                     self.shape(("E", plain)))

    def chain(self, start: int, join: int | None, depth: int) -> tuple[_Chain, float, bool]:
        """The chain from `start` up to the edge into `join` (or to the sink when None); returns it
        with that edge's weight and criticality."""
        items: list[Any] = []
        node = start
        while True:
            data = self.nodes[node]
            if data["kind"] is NodeKind.FORK:
                end = data["join"]
                items.append(self.par(node, end, depth + 1))
                node = end
            else:
                items.append(self.node(node, data))
            successors = self.succ[node]
            if not successors:
                return self.close(items), 0.0, False
            ((child, edge),) = successors.items()
            critical = (node, child) in self.critical_edges
            if child == join:
                return self.close(items), edge["weight"], critical
            if edge["kind"] is EdgeKind.DEVICE_BOX:
                info: DeviceBoxInfo = edge["box"]
                items.append(self.edge("transfer-in", info.grow + info.transfer_in, critical))
                items.append(_Box(self.box_numbers[id(info)], info, critical,
                                  self.shape(("b", id(info))), self.shape(("B",)), info.kernel,
                                  info.kernel))
                items.append(self.edge("transfer-out", info.transfer_out + info.merge, critical))
            else:
                items.append(self.edge(_value(edge["kind"]), edge["weight"], critical))
            node = child

    def node(self, node: int, data: dict) -> _Node:
        kind: NodeKind = data["kind"]
        region = self.push_regions.get(node) if kind is NodeKind.PUSH else data.get("region")
        value = _value(kind)
        label = f"{value} {region}" if region else ""
        return _Node(kind, label, node in self.critical_nodes, self.shape(("n", value, label)),
                     self.shape(("N", value, label)))

    def close(self, items: list[Any]) -> _Chain:
        chain = _Chain(items)
        for item in items:
            if isinstance(item, _Edge):
                chain.work += item.weight
                chain.length += item.weight
            else:
                chain.work += item.work
                chain.length += item.length
                chain.nodes += item.nodes
                chain.boxes += item.boxes
                if isinstance(item, _Par):
                    chain.depth = max(chain.depth, item.depth)
            chain.critical = chain.critical or item.critical
        chain.sig = self.shape(("c", *(item.sig for item in items)))
        chain.skeleton = self.shape(("C", *(item.skeleton for item in items)))
        return chain

    def par(self, fork: int, join: int, depth: int) -> _Par | _Opaque:
        """The ⊗ between `fork` and `join`. The balanced tree of binary ⊗ that one `par_all`
        builds (its forks share a source span, and each inner ⊗ is a whole branch) is read as
        one n-ary ⊗ (Fig. 4's ⊗_i c_i), top-down, so that reading it is linear."""
        span = self.nodes[fork]["span"]
        if depth > MAX_PARSED_DEPTH:
            return self.opaque(fork, join, span)
        par = _Par(span, [], 0.0, fork in self.critical_nodes or join in self.critical_nodes)
        # Tasks in left-to-right order: expand an inner ⊗ of the same tree, or keep a branch.
        leaves: list[tuple] = []
        tasks: list[tuple] = [(True, fork, join, 0.0, 0.0, True)]
        while tasks:
            expand, top, bottom, fork_sum, join_sum, critical_so_far, *rest = tasks.pop()
            if not expand:
                leaves.append((top, bottom, fork_sum, join_sum, critical_so_far, *rest))
                continue
            found: list[tuple] = []
            for child, edge in self.succ[top].items():
                fork_weight = edge["weight"]
                critical = critical_so_far and (top, child) in self.critical_edges
                inner = self.nodes[child]
                if (inner["kind"] is NodeKind.FORK and inner["span"] == span
                        and bottom in self.succ[inner["join"]]):
                    inner_join = inner["join"]
                    join_weight = self.succ[inner_join][bottom]["weight"]
                    par.overhead += fork_weight + join_weight
                    found.append((True, child, inner_join, fork_sum + fork_weight,
                                  join_sum + join_weight,
                                  critical and (inner_join, bottom) in self.critical_edges))
                else:
                    found.append((False, child, bottom, fork_sum + fork_weight, join_sum,
                                  critical, fork_weight))
            tasks.extend(reversed(found))
        for child, bottom, fork_weight, join_sum, critical, own_fork in leaves:
            chain, join_weight, join_critical = self.chain(child, bottom, depth)
            par.overhead += own_fork + join_weight
            par.branches.append(_Branch(fork_weight, join_sum + join_weight, chain,
                                        critical and join_critical,
                                        self.shape(("br", fork_weight, join_sum + join_weight,
                                                    chain.sig))))
        branches = par.branches
        par.work = par.overhead + sum(b.chain.work for b in branches)
        par.length = max(b.fork_weight + b.chain.length + b.join_weight for b in branches)
        par.nodes = 2 * (len(branches) - 1) + sum(b.chain.nodes for b in branches)
        par.boxes = sum(b.chain.boxes for b in branches)
        par.depth = 1 + max(b.chain.depth for b in branches)
        par.critical = par.critical or any(b.critical for b in branches)
        par.sig = self.shape(("p", par.overhead, *(b.sig for b in branches)))
        par.skeleton = self.shape(("P", *(b.chain.skeleton for b in branches)))
        return par

    def opaque(self, fork: int, join: int, span: Span | None) -> _Opaque:
        inside = {fork}
        stack = [fork]
        while stack:
            for child in self.succ[stack.pop()]:
                if child != join and child not in inside:
                    inside.add(child)
                    stack.append(child)
        work = 0.0
        boxes = 0
        best: dict[int, float] = {fork: 0.0}
        for node in _topological(fork, {n: self.succ[n] for n in inside}):
            for child, edge in self.succ[node].items():
                work += edge["weight"]
                boxes += edge["kind"] is EdgeKind.DEVICE_BOX
                best[child] = max(best.get(child, 0.0), best.get(node, 0.0) + edge["weight"])
        critical = bool(inside & self.critical_nodes)
        length = best.get(join, 0.0)
        return _Opaque(span, critical, self.shape(("o", len(inside), work, length)),
                       self.shape(("O",)), work, length, len(inside) + 1, boxes)


def critical_path(graph: CostGraph, succ: dict[int, dict[int, dict]] | None = None
                  ) -> tuple[set[int], set[tuple[int, int]]]:
    """The nodes and edges of one longest path from source to sink (its weight is the span).
    Among paths of equal weight the choice is deterministic for a given graph."""
    if graph.source is None or graph.graph.number_of_nodes() == 0:
        return set(), set()
    succ = succ if succ is not None else dict(graph.graph.adjacency())
    best: dict[int, float] = {graph.source: 0.0}
    parent: dict[int, int] = {}
    for node in _topological(graph.source, succ):
        here = best[node]
        for child, data in succ[node].items():
            candidate = here + data["weight"]
            if child not in best or candidate > best[child]:
                best[child] = candidate
                parent[child] = node
    assert graph.sink is not None  # CostGraph.finish sets it with the source
    node = graph.sink
    nodes = {node}
    edges = set()
    while node in parent:
        edges.add((parent[node], node))
        node = parent[node]
        nodes.add(node)
    return nodes, edges


def _topological(source: int, succ: dict[int, dict[int, dict]]) -> list[int]:
    """The nodes of `succ` reachable from `source`, in a topological order (Kahn's algorithm)."""
    remaining: dict[int, int] = {}
    for children in succ.values():
        for child in children:
            remaining[child] = remaining.get(child, 0) + 1
    ready = [source]
    order = []
    while ready:
        node = ready.pop()
        order.append(node)
        for child in succ.get(node, ()):
            remaining[child] -= 1
            if remaining[child] == 0:
                ready.append(child)
    return order


# ---------------------------------------------------------------------------------------------------
# From the tree to a summary of at most max_nodes elements


class _TooBig(Exception):
    pass


@dataclass(slots=True)
class _Detail:
    merge_runs: bool
    max_depth: int
    budget: int | None
    pairs: bool = False  # also draw a ⊗ of two identical threads as one ×2 node
    count: int = 0

    def add(self, n: int = 1) -> None:
        self.count += n
        if self.budget is not None and self.count > self.budget:
            raise _TooBig


@dataclass(slots=True)
class _Emitter:
    describe: Callable[[Span], str]
    detail: _Detail
    boxes: dict[int, Picture] = field(default_factory=dict)

    def chain(self, chain: _Chain, depth: int) -> list[Picture]:
        out: list[Picture] = []
        for item in chain.items:
            if isinstance(item, _Edge):
                out.append({"t": "edge", "kind": item.kind, "weight": item.weight,
                            "critical": item.critical})
            else:
                out.append(self.element(item, depth))
        if self.detail.merge_runs:
            out = _merge_runs(out)
        # Nodes and runs are counted here, after merging; nested elements count themselves.
        self.detail.add(sum(1 for x in out if x["t"] in ("node", "run")))
        return out

    def element(self, item: Any, depth: int) -> Picture:
        match item:
            case _Node():
                return {"t": "node", "kind": item.kind.value, "label": item.label,
                        "critical": item.critical, "work": 0.0, "span": 0.0}
            case _Box():
                self.detail.add()
                picture = self.boxes.get(item.number)
                if picture is None:
                    picture = self.boxes[item.number] = _box_picture(item, self.describe)
                return dict(picture)
            case _Opaque():
                self.detail.add()
                return _block(item.nodes, item.work, item.length, item.critical, item.boxes,
                              self.where(item.span))
            case _Par():
                return self.par(item, depth)
        raise AssertionError(item)

    def where(self, span: Span | None) -> tuple[str, str]:
        if span is None:
            return "?", ""
        return f"{span.line}:{span.column}", self.describe(span)

    def par(self, par: _Par, depth: int) -> Picture:
        location, text = self.where(par.span)
        # Threads of one shape up to weights (a region that grows in one of them) are drawn
        # together when there are at least three; a pair only when it is exactly the same.
        many = len(par.branches) >= 3
        groups: dict[int, list[_Branch]] = {}
        for branch in par.branches:
            groups.setdefault(branch.chain.skeleton if many else branch.sig, []).append(branch)
        uniform = len(groups) == 1
        if uniform and (many or self.detail.pairs):
            self.detail.add()
            return _threads(par.branches, par.work, par.length, par.critical, location, text)
        if depth > self.detail.max_depth:
            self.detail.add()
            return _block(par.nodes, par.work, par.length, par.critical, par.boxes,
                          (location, text))
        self.detail.add(2)  # the fork and the join
        branches: list[Picture] = []
        shown = list(groups.values())
        hidden: list[_Branch] = []
        if len(shown) > MAX_BRANCHES:
            hidden = [b for group in shown[MAX_BRANCHES - 1:] for b in group]
            shown = shown[:MAX_BRANCHES - 1]
        for group in shown:
            first = group[0]
            critical = any(b.critical for b in group)
            if len(group) == 1:
                chain = self.chain(first.chain, depth + 1)
            else:
                self.detail.add()
                chain = [_threads(group, sum(b.chain.work for b in group),
                                  first.chain.length, critical, location, text)]
            branches.append({"fork_weight": first.fork_weight,
                             "join_weight": first.join_weight, "critical": critical,
                             "chain": chain})
        if hidden:
            self.detail.add()
            critical = any(b.critical for b in hidden)
            block = _block(sum(b.chain.nodes for b in hidden), sum(b.chain.work for b in hidden),
                           max(b.chain.length for b in hidden), critical,
                           sum(b.chain.boxes for b in hidden), (location, text))
            block["label"] = f"{len(hidden)} more threads of other shapes"
            branches.append({"fork_weight": hidden[0].fork_weight,
                             "join_weight": hidden[0].join_weight, "critical": critical,
                             "chain": [block]})
        return {"t": "par", "critical": par.critical, "work": par.work, "span": par.length,
                "threads": len(par.branches), "overhead": par.overhead, "location": location,
                "text": text, "branches": branches}


def _threads(branches: list[_Branch], work: float, length: float, critical: bool,
             location: str, text: str) -> Picture:
    """⊗ of n structurally identical threads, as one node with its multiplicity."""
    works = [b.chain.work for b in branches]
    lengths = [b.chain.length for b in branches]
    return {"t": "threads", "count": len(branches), "work_each": [min(works), max(works)],
            "span_each": [min(lengths), max(lengths)], "work": work, "span": length,
            "critical": critical, "location": location, "text": text,
            "boxes": sum(b.chain.boxes for b in branches)}


def _block(nodes: int, work: float, length: float, critical: bool, boxes: int,
           where: tuple[str, str]) -> Picture:
    return {"t": "block", "nodes": nodes, "work": work, "span": length, "critical": critical,
            "boxes": boxes, "location": where[0], "text": where[1], "label": ""}


def _merge_runs(items: list[Picture]) -> list[Picture]:
    """Replace each run of at least RUN_MIN_EDGES plain edges between plain nodes by one node."""
    out: list[Picture] = []
    i = 0
    while i < len(items):
        j = i
        while (j + 2 < len(items) and _plain(items[j]) and items[j + 1]["kind"] in PLAIN_EDGES
               and _plain(items[j + 2])):
            j += 2
        edges = (j - i) // 2
        if edges >= RUN_MIN_EDGES:
            counts: dict[str, int] = {}
            weight = 0.0
            critical = False
            for k in range(i + 1, j, 2):
                edge = items[k]
                counts[edge["kind"]] = counts.get(edge["kind"], 0) + 1
                weight += edge["weight"]
            for k in range(i, j + 1):
                critical = critical or items[k]["critical"]
            out.append({"t": "run", "edges": edges, "counts": counts, "work": weight,
                        "span": weight, "critical": critical})
            if j + 1 < len(items):
                out.append(items[j + 1])
            i = j + 2
        else:
            out.append(items[i])
            if i + 1 < len(items):
                out.append(items[i + 1])
            i += 2
    return out


def _plain(item: Picture) -> bool:
    return item["t"] == "node" and item["kind"] in PLAIN_NODES


def _chunk(items: list[Picture], budget: int) -> list[Picture]:
    """Cut a chain into at most about `budget` elements: consecutive elements become blocks;
    device boxes stay whole."""
    elements, links = items[0::2], items[1::2]
    size = max(2, math.ceil(len(elements) / max(1, budget - 2)))
    segments: list[tuple[int, int]] = []
    i = 0
    while i < len(elements):
        j = i
        if elements[i]["t"] != "device-box":
            while (j + 1 < len(elements) and j + 1 - i < size
                   and elements[j + 1]["t"] != "device-box"):
                j += 1
        segments.append((i, j))
        i = j + 1
    out: list[Picture] = []
    for first, last in segments:
        if first:
            out.append(links[first - 1])
        if first == last:
            out.append(elements[first])
            continue
        inside = elements[first:last + 1]
        between = links[first:last]
        work = sum(e["work"] for e in inside) + sum(e["weight"] for e in between)
        length = sum(e["span"] for e in inside) + sum(e["weight"] for e in between)
        block = _block(sum(e.get("nodes", 1) for e in inside), work, length,
                       any(e["critical"] for e in inside + between),
                       sum(e.get("boxes", 0) for e in inside), ("", ""))
        block["label"] = f"{len(inside)} steps in sequence"
        out.append(block)
    return out


def _box_picture(box: _Box, describe: Callable[[Span], str]) -> Picture:
    info = box.info
    span = info.span
    device = info.box
    phases = []
    if device is not None:
        for phase in device.phases:
            groups = []
            for index, steps in enumerate(phase.lockstep[:MAX_WARP_BOXES]):
                cells, steps_total = _cells(steps, phase.steps if index == 0 else len(steps))
                groups.append({"index": index,
                               "time": phase.group_times[index]
                               if index < len(phase.group_times) else None,
                               "steps": steps_total, "cells": cells})
            phases.append({"parallel": phase.parallel, "threads": phase.threads,
                           "warps": phase.warps, "work_groups": phase.work_groups,
                           "rounds": phase.rounds, "steps": phase.steps, "time": phase.time,
                           "conflicts": phase.conflicts,
                           "max_degree": phase.conflict_degree_max, "launch": phase.launch,
                           "location": f"{phase.span.line}:{phase.span.column}"
                           if phase.span else "", "groups": groups})
    return {"t": "device-box", "number": box.number,
            "location": f"{span.line}:{span.column}" if span else "?",
            "text": describe(span) if span else "", "grow": info.grow,
            "transfer_in": info.transfer_in, "kernel": info.kernel,
            "transfer_out": info.transfer_out, "merge": info.merge, "total": info.total,
            "regions": list(info.regions), "notes": list(info.notes),
            "mode": device.mode if device is not None else "",
            "conflicts": device.conflicts if device is not None else 0,
            "work": info.kernel, "span": info.kernel, "critical": box.critical,
            "phases": phases}


def _cells(steps: list, total: int) -> tuple[list[Picture], int]:
    """A warp box's lock-step steps as at most MAX_STEP_CELLS cells: runs of equal steps become
    one cell (×count); bank-conflicting runs are always kept, the others elided (`gap`)."""
    runs: list[Picture] = []
    for step in steps:
        key = (step.weight, step.conflicts, step.degree, step.memory)
        if runs and runs[-1]["key"] == key:
            runs[-1]["count"] += 1
        else:
            runs.append({"key": key, "weight": step.weight, "conflicts": step.conflicts,
                         "degree": step.degree, "memory": step.memory, "count": 1})
    keep = {i for i, run in enumerate(runs) if run["conflicts"]}
    keep = set(sorted(keep)[: MAX_STEP_CELLS - 1])
    i = 0
    while len(keep) < MAX_STEP_CELLS - 1 and i < len(runs):
        keep.add(i)
        i += 1
    if len(runs) <= MAX_STEP_CELLS:
        keep = set(range(len(runs)))
    cells: list[Picture] = []
    gap_count, gap_weight = 0, 0.0
    for i, run in enumerate(runs):
        if i in keep:
            if gap_count:
                cells.append({"gap": gap_count, "weight": gap_weight})
                gap_count, gap_weight = 0, 0.0
            cells.append({k: v for k, v in run.items() if k != "key"})
        else:
            gap_count += run["count"]
            gap_weight += run["weight"] * run["count"]
    hidden = max(0, total - len(steps))
    if gap_count or hidden:
        cells.append({"gap": gap_count + hidden, "weight": gap_weight})
    return cells, total


def cost_picture(graph: CostGraph, describe: Callable[[Span], str] | None = None,
                 max_nodes: int = MAX_NODES) -> Picture:
    """The summary of `graph` to draw: at most about `max_nodes` elements (see the module's
    docstring). `describe` names a source span (e.g. by its text) for labels."""
    describe = describe or (lambda span: "")
    reader = _Reader(graph)
    if graph.source is None or graph.graph.number_of_nodes() == 0:
        root = _Chain([])
    else:
        root, _, _ = reader.chain(graph.source, None, 0)
    deepest = root.depth
    levels = [_Detail(False, deepest, max_nodes), _Detail(True, deepest, max_nodes),
              _Detail(True, deepest, max_nodes, pairs=True)]
    # A ⊗ at nesting depth d (0 outermost) is drawn when d <= max_depth.
    levels += [_Detail(True, depth, max_nodes, pairs=True) for depth in range(deepest - 2, -2, -1)]
    names = ["every node", "runs of plain steps merged", "runs merged, identical pairs as ×2"]
    chain: list[Picture] = []
    detail_name = ""
    for index, detail in enumerate(levels):
        emitter = _Emitter(describe, detail)
        try:
            chain = emitter.chain(root, 0)
        except _TooBig:
            continue
        detail_name = (names[index] if index < len(names) else
                       f"⊗-blocks nested deeper than {detail.max_depth + 1} collapsed")
        break
    else:
        emitter = _Emitter(describe, _Detail(True, -1, None, pairs=True))
        chain = _chunk(emitter.chain(root, 0), max_nodes)
        detail_name = "collapsed into blocks"
    g = graph.graph
    return {"version": 1, "nodes": g.number_of_nodes(), "edges": g.number_of_edges(),
            "work": root.work, "span": root.length, "device_boxes": len(reader.box_numbers),
            "detail": detail_name, "max_nodes": max_nodes, "chain": chain}


def count_elements(chain: list[Picture]) -> int:
    """How many elements a summary draws (a ⊗ counts its fork and join)."""
    total = 0
    for item in chain:
        if item["t"] == "edge":
            continue
        total += 1
        if item["t"] == "par":
            total += 1 + sum(count_elements(b["chain"]) for b in item["branches"])
    return total


def walk(chain: list[Picture]):
    """Every element and edge of a summary, depth first."""
    for item in chain:
        yield item
        if item["t"] == "par":
            for branch in item["branches"]:
                yield from walk(branch["chain"])


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


def _size(item: Picture, expand: bool) -> tuple[float, float]:
    match item["t"]:
        case "node":
            return (1.6, 0.7) if item["label"] else (0.8, 2 * NODE)
        case "run" | "block":
            return 3.0, 1.1
        case "threads":
            return 4.8, 1.3
        case "device-box":
            if not expand or not item["phases"]:
                return 5.4, 1.5
            rows = _phase_rows(item["phases"])
            width = max(sum(_phase_width(p) for p in row) for row, _ in rows) + 0.4
            return max(5.4, width), 1.1 + sum(h for _, h in rows)
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
                                     f"(fork/join tree weight {number(item['overhead'])})")
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


# ---------------------------------------------------------------------------------------------------
# Drawing

NODE_COLOURS = {
    "point": "#bdbdbd", "read": "#4e79a7", "write": "#59a14f", "fork": "#ffffff",
    "join": "#ffffff", "push": "#b07aa1", "pop": "#b07aa1", "device-start": "#76b7b2",
    "device-end": "#76b7b2",
}
EDGE_COLOURS = {
    "read": "#4e79a7", "write": "#59a14f", "expand": "#f28e2b", "alloc-region": "#b07aa1",
    "merge": "#9c755f", "fork": "#8c8c8c", "join": "#8c8c8c", "transfer-in": "#17becf",
    "transfer-out": "#17becf", "seq": "#555555", "op": "#555555",
}
CRITICAL = "#d62728"
STEP_COLOURS = {"global": "#c6dbef", "local": "#c7e9c0", "global+local": "#dadaeb", "": "#f0f0f0"}


def number(x: float) -> str:
    """A cost for a label: integers with thousands separators, others to 4 significant digits."""
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.1f}"
    return f"{x:.4g}"


def _range(bounds: list[float]) -> str:
    low, high = bounds
    return number(low) if low == high else f"{number(low)}–{number(high)}"


def _short(text: str, width: int = 30) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def element_label(item: Picture) -> str:
    """The text drawn in (or beside) an element; DOT uses it too."""
    match item["t"]:
        case "node":
            return item["label"]
        case "run":
            parts = ", ".join(f"{n} {k}" for k, n in sorted(item["counts"].items()))
            return f"{item['edges']} steps ({parts})\nweight {number(item['work'])}"
        case "threads":
            text = f"\n{_short(item['text'])}" if item["text"] else ""
            return (f"⊗ ×{item['count']:,} threads @{item['location']}: work "
                    f"{number(item['work'])}, span {number(item['span'])}\n"
                    f"each: work {_range(item['work_each'])}, span {_range(item['span_each'])}"
                    f"{text}")
        case "block":
            head = item["label"] or f"⊗ block @{item['location']}"
            boxes = f", {item['boxes']} device box(es)" if item["boxes"] else ""
            return (f"{head}: {item['nodes']:,} nodes{boxes}\n"
                    f"work {number(item['work'])}, span {number(item['span'])}")
        case "device-box":
            text = f"  {_short(item['text'], 24)}" if item["text"] else ""
            return (f"device box #{item['number']} (on @{item['location']}){text}\n"
                    f"kernel {number(item['kernel'])}, {item['mode']}, "
                    f"{item['conflicts']:,} bank conflicts")
    return ""


def edge_label(edge: Picture) -> str:
    """An edge's weight, named for transfers (δ*, δ†); unit edges are left unlabelled."""
    kind, weight = edge["kind"], edge["weight"]
    if kind == "transfer-in":
        return f"δ* transfer in {number(weight)}"
    if kind == "transfer-out":
        return f"δ† transfer out + merge {number(weight)}"
    if weight == 1:
        return ""
    return number(weight)


LEGEND_WIDTH = 5.0  # grid units left of the graph for the legend
SCALE = 0.55  # inches per grid unit


def draw_cost_graph(picture: Picture, fmt: str = "png", expand_gpu: bool = False,
                    title: str = "") -> bytes:
    """Draw a summary from `cost_picture` as PNG or SVG bytes (matplotlib, no graphviz)."""
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
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 7}):
        fig = Figure(figsize=(fig_w, fig_h))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(left, right)
        ax.set_ylim(bottom, top)
        ax.axis("off")
        ax.text(left + 0.2, top + 0.2,
                f"{title or 'cost graph'}\nwork {number(picture['work'])}, span "
                f"{number(picture['span'])} (the critical path, in red); "
                f"{picture['nodes']:,} nodes, {picture['edges']:,} edges; shown: "
                f"{picture['detail']}", ha="left", va="top", fontsize=8.5)
        anchors: dict[int, tuple[float, float]] = {}
        for p in placed:
            anchors[id(p)] = _draw_element(ax, p, expand_gpu, Circle, FancyBboxPatch, Rectangle)
        critical_count = 0
        for a, b, edge in edges:
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
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, dpi=dpi)
    return buffer.getvalue()


def _draw_element(ax, p: _Placed, expand: bool, Circle, FancyBboxPatch,
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
                                        ec=edge_colour, lw=lw, zorder=2))
            ax.text(p.x, top + h / 2, item["label"], ha="center", va="center", color="white",
                    fontsize=7, zorder=3, fontweight="bold")
            return top, top + h
        y = (p.top + p.bottom) / 2
        ax.add_patch(Circle((p.x, y), NODE, fc=NODE_COLOURS.get(node_kind, "#dddddd"),
                            ec=edge_colour, lw=lw, zorder=2))
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
                                zorder=2))
    ax.text(p.x, top + h / 2, element_label(item), ha="center", va="center", fontsize=6.5,
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
        ax.text(p.x, top + h / 2, element_label(item), ha="center", va="center", fontsize=7,
                zorder=3, linespacing=1.4)
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
