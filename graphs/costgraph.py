"""Cost graphs (§6.1, Fig. 4): weighted DAGs built with ⊕_δ and ⊗_δ, and device-box edges.

A `CostGraph` wraps one networkx DiGraph for a whole evaluation; the evaluator combines
sub-graphs, which are `Sub(source, sink)` handles into it (or None, the empty graph ∅).

- `seq(c1, c2, δ)` is c1 ⊕_δ c2: an edge of weight δ from c1's sink to c2's source. ∅ is its unit.
- `par(c1, c2, δ)` is c1 ⊗_δ c2: a fork node with edges of weight δ to both sources and edges of
  weight δ from both sinks to a join node (4 edges: §7.1's 4(n-1) for n branches).
- `node(...)` is [u]; `step(c, δ, ...)` is c ⊕_δ [u], the shape of every memory operation.
- `device_box(...)` adds the edge dvb = (v1, v2, D, {R1..Rn}, δ*, δ†) of Fig. 4/Fig. 6.

Nodes and edges keep where they come from (`kind`, the source `span`, the cost-centre stack) and
which combinator made them, so later passes can attribute, compress and draw. Space events live on
nodes (`space`: a tuple of (world, words) changes, applied when the node is reached) and on device
box edges (`space_start`, `space_end`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import networkx as nx

from profiler.syntax import Span, World


class NodeKind(Enum):
    POINT = "point"  # a plain vertex [u]
    READ = "read"  # the vertex after a read edge
    WRITE = "write"  # the vertex after an allocation edge
    FORK = "fork"
    JOIN = "join"
    PUSH = "push"  # a region pushed on a region stack (letregion, §6.2)
    POP = "pop"
    DEVICE_START = "device-start"  # u1 of an `on`
    DEVICE_END = "device-end"  # u2 of an `on`


class EdgeKind(Enum):
    SEQ = "seq"  # ⊕ between two sub-graphs
    READ = "read"
    WRITE = "write"
    EXPAND = "expand"  # ExpandW: Δa(n) for growing a region (Fig. 9)
    ALLOC_REGION = "alloc-region"  # Δa(R) for a new region (letregion, Fig. 6)
    FORK = "fork"
    JOIN = "join"
    MERGE = "merge"  # δ / δm: merging configuration tables after parallel branches
    OP = "op"  # arithmetic or a call: one PRAM step
    DEVICE_BOX = "device-box"


MEMORY_EDGES = frozenset({EdgeKind.READ, EdgeKind.WRITE, EdgeKind.EXPAND})


@dataclass(frozen=True, slots=True)
class Sub:
    """A sub-graph of the cost graph: its source and sink vertices (Fig. 4, G = (v1, v2, V, E))."""

    source: int
    sink: int


@dataclass(slots=True)
class DeviceBoxInfo:
    """What the CPU graph keeps of a device box: its parts' costs and the box itself."""

    transfer_in: float  # δ*: ω*β over the pushed regions
    kernel: float  # the longest path through D
    transfer_out: float  # ω†β of what is copied back
    merge: float  # the merge of Definition 4.3
    regions: tuple[str, ...]
    box: Any = None  # graphs.devicebox.DeviceBox
    span: Span | None = None
    notes: tuple[str, ...] = ()
    grow: float = 0.0  # Δa for regions grown on the CPU before the push (Harlan's retry)

    @property
    def total(self) -> float:
        return self.grow + self.transfer_in + self.kernel + self.transfer_out + self.merge


@dataclass
class CostGraph:
    """The CPU cost graph of one evaluation (plus device boxes on its dvb edges)."""

    graph: nx.DiGraph = field(default_factory=nx.DiGraph)
    source: int | None = None
    sink: int | None = None
    _next: int = 0

    # -- building -----------------------------------------------------------------------------------
    def node(self, kind: NodeKind = NodeKind.POINT, span: Span | None = None,
             centres: tuple[str, ...] = (), space: tuple[tuple[World, int], ...] = (),
             **extra: Any) -> Sub:
        """[u]: a fresh vertex."""
        u = self._next
        self._next += 1
        self.graph.add_node(u, kind=kind, span=span, centres=centres, space=space, **extra)
        return Sub(u, u)

    def edge(self, u: int, v: int, weight: float, kind: EdgeKind, span: Span | None = None,
             centres: tuple[str, ...] = (), **extra: Any) -> None:
        if weight < 0:
            raise ValueError(f"negative edge weight {weight}")
        self.graph.add_edge(u, v, weight=weight, kind=kind, span=span, centres=centres, **extra)

    def seq(self, first: Sub | None, second: Sub | None, weight: float = 1,
            kind: EdgeKind = EdgeKind.SEQ, span: Span | None = None,
            centres: tuple[str, ...] = ()) -> Sub | None:
        """first ⊕_δ second; ∅ ⊕ c = c ⊕ ∅ = c."""
        if first is None:
            return second
        if second is None:
            return first
        self.edge(first.sink, second.source, weight, kind, span, centres)
        return Sub(first.source, second.sink)

    def seq_all(self, parts: list[Sub | None], weight: float = 1, span: Span | None = None,
                centres: tuple[str, ...] = ()) -> Sub | None:
        result: Sub | None = None
        for part in parts:
            result = self.seq(result, part, weight, span=span, centres=centres)
        return result

    def step(self, before: Sub | None, weight: float, edge_kind: EdgeKind,
             node_kind: NodeKind, span: Span | None = None, centres: tuple[str, ...] = (),
             space: tuple[tuple[World, int], ...] = (), **edge_extra: Any) -> Sub:
        """before ⊕_δ [u]. With before = ∅ a start vertex is made, so the δ edge is never lost."""
        if before is None:
            before = self.node(NodeKind.POINT, span, centres)
        after = self.node(node_kind, span, centres, space)
        self.edge(before.sink, after.source, weight, edge_kind, span, centres, **edge_extra)
        return Sub(before.source, after.sink)

    def par(self, left: Sub | None, right: Sub | None, weight: float = 1,
            span: Span | None = None, centres: tuple[str, ...] = ()) -> Sub:
        """left ⊗_δ right: fork and join vertices around both (Fig. 4)."""
        left = left if left is not None else self.node(NodeKind.POINT, span, centres)
        right = right if right is not None else self.node(NodeKind.POINT, span, centres)
        fork = self.node(NodeKind.FORK, span, centres)
        join = self.node(NodeKind.JOIN, span, centres)
        self.graph.nodes[join.source]["fork"] = fork.source
        self.graph.nodes[fork.source]["join"] = join.source
        for branch in (left, right):
            self.edge(fork.sink, branch.source, weight, EdgeKind.FORK, span, centres)
            self.edge(branch.sink, join.source, weight, EdgeKind.JOIN, span, centres)
        return Sub(fork.source, join.sink)

    def par_all(self, branches: list[Sub | None], weight: float = 1, span: Span | None = None,
                centres: tuple[str, ...] = ()) -> Sub | None:
        """⊗_i c_i as a balanced tree of binary ⊗ (n-1 of them, so 4(n-1) unit edges)."""
        if not branches:
            return None
        if len(branches) == 1:
            return branches[0]
        middle = len(branches) // 2
        left = self.par_all(branches[:middle], weight, span, centres)
        right = self.par_all(branches[middle:], weight, span, centres)
        return self.par(left, right, weight, span, centres)

    def device_box(self, before: Sub | None, info: DeviceBoxInfo, centres: tuple[str, ...],
                   space_start: tuple[tuple[World, int], ...],
                   space_end: tuple[tuple[World, int], ...],
                   space_after: tuple[tuple[World, int], ...]) -> Sub:
        """(u1, u2, D, {R1..Rn}, δ*, δ†) (Fig. 6, rule for `on`), after `before`."""
        u1 = self.node(NodeKind.DEVICE_START, info.span, centres)
        u2 = self.node(NodeKind.DEVICE_END, info.span, centres, space_after)
        self.edge(u1.sink, u2.source, info.total, EdgeKind.DEVICE_BOX, info.span, centres,
                  box=info, space_start=space_start, space_end=space_end)
        joined = self.seq(before, u1, 1, span=info.span, centres=centres)
        assert joined is not None
        return Sub(joined.source, u2.sink)

    def finish(self, whole: Sub | None) -> None:
        if whole is None:
            whole = self.node(NodeKind.POINT)
        self.source, self.sink = whole.source, whole.sink

    # -- reading ------------------------------------------------------------------------------------
    def edges(self):
        return self.graph.edges(data=True)

    def work(self) -> float:
        """Σ of all edge weights: the time of the graph on one processor."""
        return sum(data["weight"] for _, _, data in self.graph.edges(data=True))

    def span(self) -> float:
        """The weight of the longest path from source to sink (the graph's depth)."""
        return longest_path_length(self.graph)

    def device_boxes(self) -> list[DeviceBoxInfo]:
        return [data["box"] for _, _, data in self.graph.edges(data=True)
                if data["kind"] is EdgeKind.DEVICE_BOX]

    def self_check(self) -> None:
        """Assert the invariants: a DAG with one source and one sink, non-negative weights, every
        fork matched by its join."""
        g = self.graph
        assert nx.is_directed_acyclic_graph(g), "cost graph has a cycle"
        if g.number_of_nodes() == 0:
            return
        sources = [n for n in g if g.in_degree(n) == 0]
        sinks = [n for n in g if g.out_degree(n) == 0]
        assert sources == [self.source], f"sources {sources} != {self.source}"
        assert sinks == [self.sink], f"sinks {sinks} != {self.sink}"
        for u, v, data in g.edges(data=True):
            assert data["weight"] >= 0, (u, v, data)
        for n, data in g.nodes(data=True):
            if data["kind"] is NodeKind.FORK:
                assert g.out_degree(n) == 2, n
                assert g.nodes[data["join"]]["kind"] is NodeKind.JOIN
            if data["kind"] is NodeKind.JOIN:
                assert g.in_degree(n) == 2, n


def longest_path_length(graph: nx.DiGraph) -> float:
    """Longest weighted path in a DAG, iteratively (no recursion, any size)."""
    best: dict[int, float] = {}
    result = 0.0
    for node in nx.topological_sort(graph):
        here = best.get(node, 0)
        result = max(result, here)
        for _, child, data in graph.out_edges(node, data=True):
            candidate = here + data["weight"]
            if candidate > best.get(child, -1):
                best[child] = candidate
    return result
