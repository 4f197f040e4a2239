"""The picture of a cost graph (§6.1, Fig. 4; device boxes §6.4, Figs. 7-8): data small enough to
draw, apart from drawing it (graphs/draw.py) or writing it as DOT (graphs/render_dot.py).

`cost_picture(graph)` reads the cost graph's series-parallel structure (a chain of ⊕ steps, a
fork/join pair for each ⊗) into a *summary*: plain JSON data, saved inside a `ProfileResult`. It
marks the critical path (the longest path, whose weight is the span), turns each ⊗-tree of
structurally identical threads into one node with its multiplicity (×n: a compressed `parmap`,
`iota` or `reduce` level), splits each device-box edge into its transfers (edges labelled δ* and
δ†) and the box itself, and, when the graph is still larger than `max_nodes`, summarises: first
runs of plain reads, writes and steps become one node, then ⊗-blocks nested deeper than some level
are collapsed, and last the outermost chain is cut into blocks. It never returns a hairball.

The labels and colours of its elements are here too, shared by every way of drawing it.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import graphs.passes as passes
from graphs.costgraph import (
    EXACT_IN_DOUBLES,
    CostGraph,
    DeviceBoxInfo,
    EdgeKind,
    NodeKind,
    exact_total,
    numpy_view,
)
from graphs.numbers import amount
from profiler.syntax import Span

MAX_NODES = 60  # drawn elements (nodes, boxes, summaries) before a picture is summarised
MAX_PARSED_DEPTH = 48  # ⊗ nesting read in detail; deeper blocks are only measured
MAX_BRANCHES = 6  # distinct thread shapes drawn side by side under one ⊗
MAX_STEP_CELLS = 12  # lock-step cells drawn per warp box
MAX_WARP_BOXES = 3  # warp boxes drawn per kernel
RUN_MIN_EDGES = 3  # plain edges in a row before they may become one node

Picture = dict[str, Any]

_VALUES = {id(kind): kind.value for kinds in (NodeKind, EdgeKind) for kind in kinds}


# Globals: Python 3.11 looks up an Enum member as a class attribute ten times slower.
_FORK, _PUSH, _DEVICE_BOX = NodeKind.FORK, NodeKind.PUSH, EdgeKind.DEVICE_BOX


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
    that structurally identical threads compare in O(1).

    It reads the cost graph's flat lists (node u's out-edges are adjacency().order[start[u]:
    start[u + 1]], in networkx's adjacency order) rather than a networkx copy of the graph. Nodes
    and plain edges of one shape and criticality are made once and shared: nothing changes them
    after they are made."""

    def __init__(self, graph: CostGraph):
        self.cost_graph = graph
        adjacency = graph.adjacency()
        self.order, self.start = adjacency.order, adjacency.start
        self.node_kind, self.node_span = graph.node_kind, graph.node_span
        self.node_extra = graph.node_extra
        self.target, self.weight = graph.edge_target, graph.edge_weight
        self.edge_kind, self.edge_extra = graph.edge_kind, graph.edge_extra
        self.shapes: dict[tuple, int] = {}
        self.made: dict[tuple, _Node | _Edge] = {}
        self.plain_nodes: dict[tuple[int, bool], _Node] = {}  # by kind and criticality
        self.plain_edges: dict[tuple, _Edge] = {}  # by kind, weight and criticality
        self.critical_nodes, self.critical_edges = critical_path_edges(graph)
        self.replicas = sorted(graph.replicas)
        self.replica_starts = [replica[0] for replica in self.replicas]
        self.replica_chains: dict[tuple[int, int], tuple[_Chain, float, bool]] = {}
        self.push_regions: dict[int, str] = {}
        self.box_numbers: dict[int, int] = {}
        self.fork_trees = _CompiledForkTrees.of(graph, self.critical_edges)
        kinds, source = graph.edge_kind, graph.edge_source
        # The edges with extra attributes, in networkx's adjacency order (by source, then made).
        for _, e in sorted((source[e], e) for e in graph.edge_extra):
            kind = kinds[e]
            if kind is EdgeKind.DEVICE_BOX:
                self.box_numbers[id(graph.edge_extra[e]["box"])] = len(self.box_numbers) + 1
            elif kind is EdgeKind.ALLOC_REGION and "region" in graph.edge_extra[e]:
                self.push_regions[self.target[e]] = graph.edge_extra[e]["region"]

    def shape(self, key: tuple) -> int:
        return self.shapes.setdefault(key, len(self.shapes))

    def edge(self, kind: str, weight: float, critical: bool) -> _Edge:
        key = ("e", kind, weight, critical, type(weight))
        made = self.made.get(key)
        if made is None:
            plain = EdgeKind.WRITE.value if kind == EdgeKind.EXPAND.value else kind
            made = self.made[key] = _Edge(kind, weight, critical,
                                          self.shape(("e", kind, weight)),
                                          self.shape(("E", plain)))
        return made  # type: ignore[return-value]

    def out_edge(self, u: int, v: int) -> int | None:
        """The edge u -> v, or None."""
        order, target = self.order, self.target
        for e in order[self.start[u]:self.start[u + 1]]:
            if target[e] == v:
                return e
        return None

    def chain(self, start: int, join: int | None, depth: int) -> tuple[_Chain, float, bool]:
        """The chain from `start` up to the edge into `join` (or to the sink when None); returns it
        with that edge's weight and criticality."""
        items: list[Any] = []
        node = start
        order, first_edge, target = self.order, self.start, self.target
        # The columns' codes and values (`RecordField`): node u's kind is kinds[codes[u]].
        node_kind_codes, node_kinds = self.node_kind.codes, self.node_kind.values
        weight_codes, weights = self.weight.codes, self.weight.values
        edge_kind_codes, edge_kinds = self.edge_kind.codes, self.edge_kind.values
        critical_edges, critical_nodes = self.critical_edges, self.critical_nodes
        node_extra, plain, plain_edges = self.node_extra, self.plain_nodes, self.plain_edges
        while True:
            kind = node_kinds[node_kind_codes[node]]
            if kind is _FORK:
                end = node + 1  # `par` makes a fork's join right after it
                items.append(self.par(node, end, depth + 1))
                node = end
            elif kind is _PUSH or node in node_extra:
                items.append(self.node(node, kind))
            else:  # a node without a region: one of a few shapes
                key = (id(kind), node in critical_nodes)
                made = plain.get(key)
                if made is None:
                    made = plain[key] = self.node(node, kind)
                items.append(made)
            first = first_edge[node]
            out = first_edge[node + 1] - first
            if not out:
                return self.close(items), 0.0, False
            if out != 1:
                raise ValueError(f"node {node} of a chain has {out} out-edges")
            e = order[first]
            child = target[e]
            critical = e in critical_edges
            if child == join:
                return self.close(items), weights[weight_codes[e]], critical
            link = edge_kinds[edge_kind_codes[e]]
            if link is _DEVICE_BOX:
                info: DeviceBoxInfo = self.edge_extra[e]["box"]
                items.append(self.edge("transfer-in", info.grow + info.transfer_in, critical))
                items.append(_Box(self.box_numbers[id(info)], info, critical,
                                  self.shape(("b", id(info))), self.shape(("B",)), info.kernel,
                                  info.kernel))
                items.append(self.edge("transfer-out", info.transfer_out + info.merge, critical))
            else:
                edge_weight = weights[weight_codes[e]]
                edge_key = (id(link), edge_weight, type(edge_weight), critical)
                edge_made = plain_edges.get(edge_key)
                if edge_made is None:
                    edge_made = plain_edges[edge_key] = self.edge(_value(link), edge_weight,
                                                                  critical)
                items.append(edge_made)
            node = child

    def node(self, node: int, kind: NodeKind) -> _Node:
        if kind is _PUSH:
            region = self.push_regions.get(node)
        else:
            extra = self.node_extra.get(node)
            region = extra.get("region") if extra else None
        critical = node in self.critical_nodes
        key = ("n", kind, region, critical)
        made = self.made.get(key)
        if made is None:
            value = _value(kind)
            label = f"{value} {region}" if region else ""
            made = self.made[key] = _Node(kind, label, critical, self.shape(("n", value, label)),
                                          self.shape(("N", value, label)))
        return made  # type: ignore[return-value]

    def close(self, items: list[Any]) -> _Chain:
        # Once per chain (twice per thread of a parmap), so the sums run on local names.
        work = length = 0.0
        nodes = boxes = depth = 0
        critical = False
        for item in items:
            if type(item) is _Edge:
                work += item.weight
                length += item.weight
            else:
                work += item.work
                length += item.length
                nodes += item.nodes
                boxes += item.boxes
                if type(item) is _Par and item.depth > depth:
                    depth = item.depth
            if item.critical:
                critical = True
        shape = self.shapes.setdefault
        sig = shape(("c", *[item.sig for item in items]), len(self.shapes))
        skeleton = shape(("C", *[item.skeleton for item in items]), len(self.shapes))
        return _Chain(items, work, length, nodes, boxes, critical, sig, skeleton, depth)

    def par(self, fork: int, join: int, depth: int) -> _Par | _Opaque:
        """The ⊗ between `fork` and `join`. The balanced tree of binary ⊗ that one `par_all`
        builds (its forks share a source span, and each inner ⊗ is a whole branch) is read as
        one n-ary ⊗ (Fig. 4's ⊗_i c_i), top-down, so that reading it is linear."""
        span = self.node_span[fork]
        if depth > MAX_PARSED_DEPTH:
            return self.opaque(fork, join, span)
        critical_nodes, critical_edges = self.critical_nodes, self.critical_edges
        order, first_edge, target = self.order, self.start, self.target
        node_kind_codes, node_kinds = self.node_kind.codes, self.node_kind.values
        node_span_codes, node_spans = self.node_span.codes, self.node_span.values
        weight_codes, weights = self.weight.codes, self.weight.values
        par = _Par(span, [], 0.0, fork in critical_nodes or join in critical_nodes)
        # Each leaf is read as the walk reaches it (left to right, as before), and leaves alike
        # (a batch's replicas: the same chain object, weights and criticality) share one
        # `_Branch`: at zipmul n = 10^6 a list of the leaves and a branch object per thread were
        # about 500 MiB of the picture's peak (2026-11-27). The leaves' own fork and join
        # weights are added to the overhead after the inner ⊗s', the order of the sums before
        # (a float plus a number adds as a float plus that number as a double, `array("d")`).
        made: dict[tuple[float, float, int, bool], _Branch] = {}
        leaf_overheads = array("d")

        def leaf(top: int, bottom: int, fork_sum: float, join_sum: float, critical_so_far: bool,
                 fork_weight: float) -> tuple[_Branch, float]:
            """A leaf of the tree, a branch of the n-ary ⊗ (`fork_weight` its fork edge's): its
            branch and what it adds to the overhead."""
            chain, join_weight, join_critical = self.branch_chain(top, bottom, depth)
            join_total = join_sum + join_weight
            critical = critical_so_far and join_critical
            key = (fork_sum, join_total, id(chain), critical)
            branch = made.get(key)
            if branch is None:
                branch = made[key] = _Branch(fork_sum, join_total, chain, critical,
                                             self.shape(("br", fork_sum, join_total, chain.sig)))
            return branch, fork_weight + join_weight

        if self.fork_trees is not None:
            # The tree's walk compiled; the leaves read in its order, as below.
            par.overhead, *leaves = self.fork_trees.walk(fork, join)
            self.compiled_leaves(leaves, depth, leaf, par.branches, leaf_overheads)
        tasks: list[tuple] = [] if self.fork_trees is not None else [
            (True, fork, join, 0.0, 0.0, True)]
        while tasks:
            expand, top, bottom, fork_sum, join_sum, critical_so_far, *rest = tasks.pop()
            if not expand:
                branch, addend = leaf(top, bottom, fork_sum, join_sum, critical_so_far, rest[0])
                par.branches.append(branch)
                leaf_overheads.append(addend)
                continue
            found: list[tuple] = []
            for e in order[first_edge[top]:first_edge[top + 1]]:
                child = target[e]
                fork_weight = weights[weight_codes[e]]
                critical = critical_so_far and e in critical_edges
                inner_join = child + 1
                if (node_kinds[node_kind_codes[child]] is _FORK
                        and node_spans[node_span_codes[child]] == span
                        and (join_edge := self.out_edge(inner_join, bottom)) is not None):
                    join_weight = weights[weight_codes[join_edge]]
                    par.overhead += fork_weight + join_weight
                    found.append((True, child, inner_join, fork_sum + fork_weight,
                                  join_sum + join_weight,
                                  critical and join_edge in critical_edges))
                else:
                    found.append((False, child, bottom, fork_sum + fork_weight, join_sum,
                                  critical, fork_weight))
            tasks.extend(reversed(found))
        for addend in leaf_overheads:
            par.overhead += addend
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

    def compiled_leaves(self, leaves: list, depth: int, leaf, branches: list,
                        overheads: array) -> None:
        """The leaves of a fork tree that `graphs.compiled.fork_tree` walked (its columns), in
        order: each one's branch onto `branches` and what it adds to the overhead onto
        `overheads`, as `leaf` gives them. A batch's replicas (`branch_chain`'s shared chain) with
        the same sums and criticality as one read before get that one's branch, and their fork
        edge's weight plus its join weight, without reading them one by one in Python: every
        other leaf, and the first of each such group, is read by `leaf`, in order (so the
        summary's shapes are numbered as before)."""
        import numpy as np

        tops, bottoms, fork_sums, join_sums, criticals, edges = leaves
        count = len(tops)
        assert self.fork_trees is not None  # the leaves are its walk's
        _, _, _, codes, weight_values, _ = self.fork_trees.arrays
        fork_weights = weight_values[codes[edges]]
        group = np.full(count, -1, dtype=np.int64)  # the replica group of each leaf; -1: none
        if self.replicas and count:
            starts = np.array(self.replica_starts, dtype=np.int64)
            at = np.searchsorted(starts, tops, side="right") - 1
            first, nodes, source, threads = (np.array(column) for column in zip(
                *(r[:4] for r in self.replicas), strict=True))
            known = at >= 0
            here = np.where(known, at, 0)
            thread, local = np.divmod(tops - first[here], nodes[here])
            alike = (known & (thread < threads[here]) & (local == source[here])
                     & ~np.isin(tops, np.fromiter(self.critical_nodes, np.int64)))
            for r, replica in enumerate(self.replicas):  # its threads whose copy differs
                if replica[4]:
                    where = np.flatnonzero(here == r)
                    alike[where[np.isin(thread[where], np.fromiter(replica[4], np.int64))]] = (
                        False)
            # A group: the same replica, sums and criticality (the same key in `leaf`), each
            # column numbered by its distinct values (a 0.0 and a -0.0 alike, as in a dict).
            # (renumbered after each column, so that the key stays below count squared)
            key = np.zeros(count, dtype=np.int64)
            for column in (here, fork_sums, join_sums, criticals):
                values, number = np.unique(column, return_inverse=True)
                key = np.unique(key * len(values) + number.ravel(), return_inverse=True)[1]
                key = key.ravel().astype(np.int64)
            _, first_of, group_of = np.unique(key[alike], return_index=True,
                                              return_inverse=True)
            group[alike] = group_of.ravel()
            firsts = np.flatnonzero(alike)[first_of]
        else:
            firsts = np.empty(0, dtype=np.int64)
        read = np.flatnonzero(group < 0)
        read = np.union1d(read, firsts)  # in order
        made_branches = np.empty(count, dtype=object)
        addends = np.empty(count, dtype=np.float64)
        joins = {}  # a group's join weight: what its first leaf's addend adds to its fork weight
        group_branch = {}
        columns = [c[read].tolist() for c in (tops, bottoms, fork_sums, join_sums, criticals)]
        for k, top, bottom, fork_sum, join_sum, critical in zip(read.tolist(), *columns,
                                                                strict=True):
            fork_weight = self.weight[int(edges[k])]
            branch, addend = leaf(top, bottom, fork_sum, join_sum, critical, fork_weight)
            made_branches[k], addends[k] = branch, addend
            if group[k] >= 0:
                group_branch[int(group[k])] = branch
                joins[int(group[k])] = self.branch_chain(top, bottom, depth)[1]
        rest = np.flatnonzero(group >= 0)
        rest = rest[~np.isin(rest, read)]
        if len(rest):
            table = np.empty(len(group_branch), dtype=object)
            join_table = np.empty(len(group_branch), dtype=np.float64)
            for g, branch in group_branch.items():
                table[g], join_table[g] = branch, joins[g]
            made_branches[rest] = table[group[rest]]
            addends[rest] = fork_weights[rest] + join_table[group[rest]]
        branches.extend(made_branches.tolist())
        overheads.extend(addends.tolist())

    def branch_chain(self, start: int, join: int, depth: int) -> tuple[_Chain, float, bool]:
        """`chain` for a branch of a ⊗; a thread's copy of a batch's sub-graph
        (`CostGraph.replicas`) that is off the critical path and like the others is read once
        for all of them (the chain and its summary are not changed once made)."""
        at = bisect_right(self.replica_starts, start) - 1
        if at < 0 or start in self.critical_nodes:
            return self.chain(start, join, depth)
        first, nodes, source, threads, irregular = self.replicas[at]
        thread, local = divmod(start - first, nodes)
        if thread >= threads or local != source or thread in irregular:
            return self.chain(start, join, depth)
        key = (at, depth)  # the chain ends at the thread's sink, whichever join follows it
        made = self.replica_chains.get(key)
        if made is None:
            made = self.replica_chains[key] = self.chain(start, join, depth)
        return made

    def opaque(self, fork: int, join: int, span: Span | None) -> _Opaque:
        order, first_edge, target = self.order, self.start, self.target
        inside = {fork}
        stack = [fork]
        while stack:
            node = stack.pop()
            for e in order[first_edge[node]:first_edge[node + 1]]:
                child = target[e]
                if child != join and child not in inside:
                    inside.add(child)
                    stack.append(child)
        work = 0.0
        boxes = 0
        best: dict[int, float] = {fork: 0.0}
        # Rare (⊗ nested more than MAX_PARSED_DEPTH deep), so networkx orders the block, as it
        # always has: its topological order of the sub-graph fixes the order of the sums.
        import networkx as nx  # only here, and not at start-up (issue 19)

        for node in nx.topological_sort(self.cost_graph.graph.subgraph(inside | {join})):
            for e in order[first_edge[node]:first_edge[node + 1]]:
                child, edge_weight = target[e], self.weight[e]
                work += edge_weight
                boxes += self.edge_kind[e] is EdgeKind.DEVICE_BOX
                best[child] = max(best.get(child, 0.0), best.get(node, 0.0) + edge_weight)
        critical = bool(inside & self.critical_nodes)
        length = best.get(join, 0.0)
        return _Opaque(span, critical, self.shape(("o", len(inside), work, length)),
                       self.shape(("O",)), work, length, len(inside) + 1, boxes)


class _CompiledForkTrees:
    """`_Reader.par`'s walks of fork trees by `graphs.compiled.fork_tree`, where the graph is
    large enough (`graphs.passes.COMPILED_FROM`) and its weights' sums are exact in doubles (as
    the walk's Python floats then hold them): the graph's arrays as numpy views, made once."""

    def __init__(self, compiled: Any, graph: CostGraph, critical_edges: set[int]) -> None:
        import numpy as np

        self.compiled = compiled
        adjacency = graph.adjacency()
        weights = graph.edge_weight.values
        self.arrays = (numpy_view(adjacency.order), numpy_view(adjacency.start),
                       numpy_view(graph.edge_target), numpy_view(graph.edge_weight.codes),
                       np.array([float(w) for w in weights], dtype=np.float64),
                       numpy_view(graph.node_records.codes))
        classes: dict[Span | None, int] = {}
        self.is_fork = np.array([kind is NodeKind.FORK for kind in graph.node_kind.values],
                                dtype=np.bool_)
        self.span_class = np.array([classes.setdefault(span, len(classes))
                                    for span in graph.node_span.values], dtype=np.int32)
        self.critical_edges = np.array(sorted(critical_edges), dtype=np.int64)

    @classmethod
    def of(cls, graph: CostGraph, critical_edges: set[int]) -> _CompiledForkTrees | None:
        weights = graph.edge_weight.values
        if (graph.number_of_edges() < passes.COMPILED_FROM
                or not all(type(w) is int or (type(w) is float and math.isfinite(w))
                           for w in weights)
                or exact_total(graph.edge_weight.codes, weights) >= EXACT_IN_DOUBLES):
            return None
        compiled = passes.compiled_passes(graph.number_of_edges())
        return cls(compiled, graph, critical_edges) if compiled is not None else None

    def walk(self, fork: int, join: int) -> tuple:
        """(the overhead, and the leaves' columns: see `graphs.compiled.fork_tree`)."""
        order, start, target, codes, weights, node_codes = self.arrays
        return self.compiled.fork_tree(order, start, target, codes, weights, node_codes,
                                       self.is_fork, self.span_class, self.critical_edges,
                                       fork, join)


def critical_path(graph: CostGraph) -> tuple[set[int], set[tuple[int, int]]]:
    """The nodes and edges (u, v) of one longest path from source to sink (its weight is the
    span; networkx's `dag_longest_path`, see `critical_path_edges`)."""
    nodes, edges = critical_path_edges(graph)
    source, target = graph.edge_source, graph.edge_target
    return nodes, {(source[e], target[e]) for e in edges}


def critical_path_edges(graph: CostGraph) -> tuple[set[int], set[int]]:
    """The nodes and the edge numbers of one longest path from source to sink.

    It is the path networkx's `dag_longest_path` finds on the graph's networkx view, computed on
    the flat lists: each node's distance is its best in-edge's (the first in the order the edges
    were made, among equals), and the path ends at the first node of largest distance in
    networkx's topological order (Kahn's, first in first out). The longest path starts at the
    source (the only node without predecessors) but may stop short of the sink where the last
    edges weigh 0: any way on to it weighs 0 too, and it goes on by the shortest."""
    if graph.source is None or graph.number_of_nodes() == 0:
        return set(), set()
    longest = graph.longest_path(best_edges=True)
    best_edge, source = longest.best_edge, graph.edge_source
    assert best_edge is not None
    node = longest.end
    nodes = {node}
    edges: set[int] = set()
    u = node
    while best_edge[u] >= 0:
        e = best_edge[u]
        edges.add(e)
        u = source[e]
        nodes.add(u)
    adjacency = graph.adjacency()
    order, first_edge, target = adjacency.order, adjacency.start, graph.edge_target
    sink = graph.sink
    while node != sink:
        out = order[first_edge[node]:first_edge[node + 1]]
        if len(out) != 1:
            # Where the way on branches, networkx's shortest path chooses it, as it always has.
            import networkx as nx  # only here, and not at start-up (issue 19)

            path = nx.shortest_path(graph.graph, node, sink)
            nodes.update(path)
            edges.update(graph.edge_between(u, v) for u, v in zip(path, path[1:], strict=False))
            break
        edges.add(out[0])
        node = target[out[0]]
        nodes.add(node)
    return nodes, edges


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
    if graph.source is None or graph.number_of_nodes() == 0:
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
    return {"version": 1, "nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
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


_LABEL_UNITS: ContextVar[str] = ContextVar("label_units", default="")


@contextmanager
def label_units(units: str) -> Iterator[None]:
    """Within it, the labels' costs (`element_label`, `edge_label`) are written in `units`, a
    profile's: µs, ms, s where they are seconds (`graphs.numbers.amount`), else as numbers. The
    drawings (graphs.draw, graphs.render_dot) take the profile's units and label under them. A
    summary keeps its numbers in the profile's units; its GPU phases' step weights are the GPU
    model's own units and are labelled as numbers."""
    token = _LABEL_UNITS.set(units)
    try:
        yield
    finally:
        _LABEL_UNITS.reset(token)


def cost_label(x: float) -> str:
    """A cost in a label, in the units `label_units` set."""
    return amount(x, _LABEL_UNITS.get())


def _range(bounds: list[float]) -> str:
    low, high = bounds
    return cost_label(low) if low == high else f"{cost_label(low)}–{cost_label(high)}"


def _short(text: str, width: int = 30) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def element_label(item: Picture) -> str:
    """The text drawn in (or beside) an element; DOT uses it too."""
    match item["t"]:
        case "node":
            return item["label"]
        case "run":
            parts = ", ".join(f"{n} {k}" for k, n in sorted(item["counts"].items()))
            return f"{item['edges']} steps ({parts})\nweight {cost_label(item['work'])}"
        case "threads":
            text = f"\n{_short(item['text'])}" if item["text"] else ""
            return (f"⊗ ×{item['count']:,} threads @{item['location']}: work "
                    f"{cost_label(item['work'])}, span {cost_label(item['span'])}\n"
                    f"each: work {_range(item['work_each'])}, span {_range(item['span_each'])}"
                    f"{text}")
        case "block":
            head = item["label"] or f"⊗ block @{item['location']}"
            boxes = f", {item['boxes']} device box(es)" if item["boxes"] else ""
            return (f"{head}: {item['nodes']:,} nodes{boxes}\n"
                    f"work {cost_label(item['work'])}, span {cost_label(item['span'])}")
        case "device-box":
            text = f"  {_short(item['text'], 24)}" if item["text"] else ""
            return (f"device box of on #{item['number']} at {item['location']}{text}\n"
                    f"kernel {cost_label(item['kernel'])}, {item['mode']}, "
                    f"{item['conflicts']:,} bank conflicts")
    return ""


def edge_label(edge: Picture) -> str:
    """An edge's weight, named for transfers (δ*, δ†); unit edges are left unlabelled."""
    kind, weight = edge["kind"], edge["weight"]
    if kind == "transfer-in":
        return f"δ* transfer in {cost_label(weight)}"
    if kind == "transfer-out":
        return f"δ† transfer out + merge {cost_label(weight)}"
    if weight == 1:
        return ""
    return cost_label(weight)
