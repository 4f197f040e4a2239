"""Cost graphs (§6.1, Fig. 4): weighted DAGs built with ⊕_δ and ⊗_δ, and device-box edges.

A `CostGraph` holds the whole graph of an evaluation, in typed arrays (its `graph`
property gives a networkx DiGraph for the tests and the rare passes that want one); the evaluator
combines sub-graphs, which are `Sub(source, sink)` handles into it (or None, the empty graph ∅).

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

import gc
import math
from array import array
from collections.abc import Hashable, Iterable, Iterator, MutableSequence, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from functools import partial
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import graphs.passes as passes
from profiler.syntax import Span, World

if TYPE_CHECKING:  # networkx and numpy are imported where used (issue 19: start-up time)
    import networkx as nx
    import numpy as np


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

# The members the builders use once or more per node, as globals: Python 3.11 looks up an Enum
# member as a class attribute (`NodeKind.FORK`) about ten times slower than a global name.
_POINT, _FORK_NODE, _JOIN_NODE = NodeKind.POINT, NodeKind.FORK, NodeKind.JOIN
_FORK_EDGE, _JOIN_EDGE = EdgeKind.FORK, EdgeKind.JOIN


class Sub(NamedTuple):
    """A sub-graph of the cost graph: its source and sink vertices (Fig. 4, G = (v1, v2, V, E)).

    A named tuple rather than a frozen dataclass: the evaluator makes one for every node, and a
    tuple is made in less than half the time."""

    source: int
    sink: int


# Sub(u, v) runs the named tuple's Python-level __new__; _new_sub((u, v)) makes the same Sub in
# C, in about half the time, for the builders that run once per node.
_new_sub = partial(tuple.__new__, Sub)

T = TypeVar("T")

NUMBER = "i"
"""The typecode of the typed arrays that hold node and edge numbers (the graph's edge ends, its
adjacency, the schedule's orders): 32-bit, half the memory of 64-bit ones. A graph of 2^31 nodes
would need hundreds of GB before it got there; `MAX_GRAPH_SIZE` bounds what may be asked for."""
NUMBER_DTYPE = "int32"  # numpy's name for the same
MAX_GRAPH_SIZE = 10**9
"""The largest --max-graph-size: cost-graph nodes plus GPU path edges, so that node and edge
numbers (about 1.2 edges a node) stay below 2^31 (`NUMBER`)."""

_WIDER = {"B": "H", "H": "I"}
_LARGEST_CODE = {"B": 0xFF, "H": 0xFFFF, "I": 0xFFFFFFFF}


def _number_key(value: float) -> Any:
    """How `InternedRecords` tells weights apart: ints and floats by value (the record's key
    holds the type too, so 1 and 1.0 differ), a zero float by its sign (a value does not tell
    -0.0 from 0.0), anything else (a NaN, a bool, another type) by identity."""
    if type(value) is float:
        if value > 0.0:
            return value
        if value == 0.0:
            return 0.5j if math.copysign(1.0, value) > 0 else -0.5j  # no number equals these
        return id(value)
    return value if type(value) is int else id(value)


class InternedRecords:
    """Some attributes of every node, or of every edge, interned together (nodes: kind, span,
    cost-centre stack, space changes; edges: weight, kind, span, cost-centre stack): each
    distinct combination (a record) once, in the order first met, and each node's or edge's
    record as its number in the typed array `codes`, a byte while there are at most 256
    records, then 2 bytes, then 4. A list per attribute costs a pointer (8 bytes) a node or
    edge: at dot n = 10^5 (2.2 million nodes, 2.6 million edges) the eight lists held 186 MiB,
    a byte per attribute 19 MiB, and a byte per node and per edge 5 (every example has fewer
    than 256 records of each; 2026-11-27).

    A value is known by its identity, and the very object given is what is read back: the
    evaluator shares one span per expression, one cost-centre stack per `profile`, one kind per
    enum member. Weights, made afresh per edge, are known by value and type (`_number_key`).
    `field(i)` gives one attribute as a `RecordField`.

    `codes` is replaced by a wider array when the records outgrow it: read it after adding,
    never keep it across a call that adds records."""

    __slots__ = ("codes", "fields", "_by_key", "_number")

    def __init__(self, width: int, number: int | None = None) -> None:
        self.codes: array[int] = array("B")
        self.fields: list[list[Any]] = [[] for _ in range(width)]  # fields[i][record]
        self._by_key: dict[tuple, int] = {}
        self._number = number  # the field that holds weights, if any

    def key(self, record: tuple) -> tuple:
        number = self._number
        if number is None:
            return tuple(map(id, record))
        value = record[number]
        return (type(value), _number_key(value),
                *map(id, record[:number]), *map(id, record[number + 1:]))

    def code(self, record: tuple) -> int:
        """The number of `record`, added where it is new."""
        key = self.key(record)
        code = self._by_key.get(key)
        if code is None:
            code = self._by_key[key] = len(self.fields[0])
            for values, value in zip(self.fields, record, strict=True):
                values.append(value)
            if code > _LARGEST_CODE[self.codes.typecode]:
                self.codes = array(_WIDER[self.codes.typecode], self.codes)
        return code

    def append(self, *record: Any) -> None:
        code = self.code(record)
        self.codes.append(code)

    def append_node(self, kind: NodeKind, span: Span | None, centres: tuple[str, ...],
                    space: tuple[tuple[World, int], ...]) -> None:
        """`append` of a node's record, with its key written out: the builders make millions."""
        code = self._by_key.get((id(kind), id(span), id(centres), id(space)))
        if code is None:
            code = self.code((kind, span, centres, space))
        self.codes.append(code)

    def append_edge(self, weight: float, kind: EdgeKind, span: Span | None,
                    centres: tuple[str, ...]) -> None:
        """`append` of an edge's record (weight first), with its key written out."""
        number = type(weight)
        code = self._by_key.get((number, weight if number is int or (number is float and weight > 0.0)
                                 else _number_key(weight), id(kind), id(span), id(centres)))
        if code is None:
            code = self.code((weight, kind, span, centres))
        self.codes.append(code)

    def append_repeated(self, times: int, *record: Any) -> None:
        """`record` for the next `times` nodes or edges."""
        code = self.code(record)
        self.codes.extend(array(self.codes.typecode, [code]) * times)

    def append_pattern(self, times: int, *records: tuple) -> None:
        """`records`, `times` over."""
        codes = [self.code(record) for record in records]
        self.codes.extend(array(self.codes.typecode, codes) * times)

    def record(self, index: int) -> tuple:
        code = self.codes[index]
        return tuple(values[code] for values in self.fields)

    def codes_of(self, other: InternedRecords) -> array[int]:
        """`other`'s codes as this table's (its records added here), for copying its nodes or
        edges in bulk (graphs.semantics.batched)."""
        translated = [self.code(record) for record in zip(*other.fields, strict=True)]
        return array(self.codes.typecode, [translated[code] for code in other.codes])

    def field(self, position: int) -> RecordField:
        return RecordField(self, position)


class RecordField(Generic[T]):
    """One attribute of an `InternedRecords`, read as a column: node or edge i's value is
    values[codes[i]] (both in C, which the passes that read every node write out); indexing and
    iterating give the values, as a list would."""

    __slots__ = ("records", "position")

    def __init__(self, records: InternedRecords, position: int) -> None:
        self.records = records
        self.position = position

    @property
    def codes(self) -> array[int]:
        return self.records.codes

    @property
    def values(self) -> list[T]:
        return self.records.fields[self.position]

    def any(self) -> bool:
        """Whether some node's or edge's value is true (`any` of the column, without reading every
        node or edge where no record has one)."""
        values, codes = self.values, self.records.codes
        return any(code in codes for code, value in enumerate(values) if value)

    def true_at(self, indices: array[int] | None = None) -> list[int]:
        """The nodes or edges whose value is true: of `indices` (a typed array of `NUMBER`s),
        in their order, or of all, in order (with numpy: a pass that reads every node)."""
        import numpy as np

        true = np.array([bool(value) for value in self.values], dtype=bool)
        found: list[int] = []
        with memoryview(self.records.codes) as memory:
            codes = np.frombuffer(memory, dtype=f"u{memory.itemsize}")
            if indices is None:
                for low in range(0, len(codes), CHUNK):  # a few MB of temporaries at a time
                    found += (np.flatnonzero(true[codes[low:low + CHUNK]]) + low).tolist()
                return found
            chosen = np.frombuffer(indices, dtype=NUMBER_DTYPE)
            for low in range(0, len(chosen), CHUNK):
                some = chosen[low:low + CHUNK]
                found += some[true[codes[some]]].tolist()
        return found

    def at(self, indices: Iterable[int]) -> Iterator[T]:
        """The values of the nodes or edges `indices`, in that order (in C)."""
        return map(self.values.__getitem__, map(self.records.codes.__getitem__, indices))

    def __getitem__(self, index: int) -> T:
        return self.values[self.records.codes[index]]

    def __setitem__(self, index: int, value: T) -> None:
        record = list(self.records.record(index))
        record[self.position] = value
        code = self.records.code(tuple(record))
        self.records.codes[index] = code

    def __len__(self) -> int:
        return len(self.records.codes)

    def __iter__(self) -> Iterator[T]:
        return map(self.values.__getitem__, self.records.codes)


def _fork_tree(branches: list[Sub], low: int, high: int, forks: Iterator[int], ends: array[int],
               starts: array[int]) -> Sub:
    """`CostGraph.par_all`'s balanced tree over branches[low:high]: each fork's and join's edges
    appended to `ends` and `starts`, the subtrees' first. A function of the module, not a closure
    of par_all: a recursive closure is a reference cycle, which kept the lists (and every branch)
    alive while the cyclic collector is paused (`cyclic_gc_paused`)."""
    if high - low == 1:
        return branches[low]
    middle = (low + high) // 2
    left = _fork_tree(branches, low, middle, forks, ends, starts)
    right = _fork_tree(branches, middle, high, forks, ends, starts)
    fork = next(forks)
    ends.extend((fork, left.sink, fork, right.sink))
    starts.extend((left.source, fork + 1, right.source, fork + 1))
    return _new_sub((fork, fork + 1))


WIDE_FORK_TREE = 64
"""From how many branches `CostGraph.par_all` makes its fork tree with numpy (`_wide_fork_tree`):
below it, numpy's calls cost more than the recursion (`_fork_tree`)."""


def _wide_fork_tree(branches: list[Sub], first_fork: int) -> tuple[array[int], array[int], Sub]:
    """`_fork_tree` over all of `branches` (forks numbered from `first_fork`), with numpy: the
    same edges in the same order, made one level of the tree at a time rather than one fork at a
    time. A fork's number follows from where its range of branches sits: before it come the
    forks of every subtree left of that range and those of its own two subtrees (a subtree of k
    branches has k - 1 forks), so the ⊗ over branches[low:high], with `before` forks left of
    `low`, is the (before + high - low - 2)-th made."""
    import numpy as np

    ends_of = np.frombuffer(array(NUMBER, chain.from_iterable(branches)),
                            dtype=NUMBER_DTYPE).reshape(-1, 2)
    sources, sinks = ends_of[:, 0].astype(np.int64), ends_of[:, 1].astype(np.int64)
    del ends_of
    pairs = len(branches) - 1
    ends_made = array(NUMBER, [0]) * (4 * pairs)  # fork, left sink, fork, right sink, ...
    starts_made = array(NUMBER, [0]) * (4 * pairs)  # left source, join, right source, join, ...
    with memoryview(ends_made) as ends_memory, memoryview(starts_made) as starts_memory:
        _fill_fork_tree(np.frombuffer(ends_memory, dtype=NUMBER_DTYPE).reshape(pairs, 4),
                        np.frombuffer(starts_memory, dtype=NUMBER_DTYPE).reshape(pairs, 4),
                        sources, sinks, first_fork)
    root = first_fork + 2 * (pairs - 1)
    return ends_made, starts_made, _new_sub((root, root + 1))


def _fill_fork_tree(ends: np.ndarray, starts: np.ndarray, sources: np.ndarray,
                    sinks: np.ndarray, first_fork: int) -> None:
    """`_wide_fork_tree`'s edges, written into `ends` and `starts` (a row per ⊗)."""
    import numpy as np

    low = np.zeros(1, dtype=np.int64)
    high = np.full(1, len(sources), dtype=np.int64)
    before = np.zeros(1, dtype=np.int64)
    while low.size:  # the ⊗s of one level of the tree
        made = before + (high - low) - 2
        fork = first_fork + 2 * made
        middle = (low + high) // 2
        right_before = before + (middle - low) - 1
        left_leaf, right_leaf = middle - low == 1, high - middle == 1
        left_fork = first_fork + 2 * (before + (middle - low) - 2)
        right_fork = first_fork + 2 * (right_before + (high - middle) - 2)
        ends[made] = np.stack((fork, np.where(left_leaf, sinks[low], left_fork + 1), fork,
                               np.where(right_leaf, sinks[middle], right_fork + 1)), axis=1)
        starts[made] = np.stack((np.where(left_leaf, sources[low], left_fork), fork + 1,
                                 np.where(right_leaf, sources[middle], right_fork), fork + 1),
                                axis=1)
        inner_left, inner_right = ~left_leaf, ~right_leaf
        low, high, before = (np.concatenate((low[inner_left], middle[inner_right])),
                             np.concatenate((middle[inner_left], high[inner_right])),
                             np.concatenate((before[inner_left], right_before[inner_right])))


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block.

    Building and analysing a cost graph allocates millions of small objects that live until the
    end, and each allocation burst makes the collector walk all of them again: about a quarter
    of the time. They form no reference cycles, so reference counting alone frees what dies.
    When the block ends, every object the collector tracks, the block's survivors among them,
    moves to the oldest generation (frozen and unfrozen at once, unless something else holds
    frozen objects), so that the first young collection after it does not walk them all either."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


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


@dataclass(frozen=True, slots=True)
class Adjacency:
    """A cost graph's edges by source node, in networkx's adjacency order (by source node, then in
    the order they were made): node u's out-edges are order[start[u]:start[u + 1]]. Sums over
    edges run in this order, as they did over the networkx graph, so that floating-point results
    stay the same. `in_degree[u]` counts node u's incoming edges."""

    order: array[int]
    start: array[int]
    in_degree: array[int]


@dataclass(frozen=True, slots=True)
class LongestPath:
    """The longest paths from a cost graph's source, as networkx's `dag_longest_path` finds them:
    `length` is the span (the longest path's weight); `best_edge[u]` is the last edge of the
    longest path to node u (among equally long ones, the edge made first; -1 at the source),
    where it was asked for (None otherwise); `end` is the first node, in networkx's topological
    order, that a path of weight `length` reaches (the sink, unless the last edges weigh 0)."""

    length: float
    end: int
    best_edge: array[int] | None


class CostGraph:
    """The CPU cost graph of one evaluation (plus device boxes on its dvb edges).

    Nodes are the integers 0, 1, 2, ... in the order they are made, and their attributes sit in
    flat columns indexed by node (`node_kind`, `node_span`, ...); edges are numbered in the order
    they are made, with their attributes in columns indexed by edge (`edge_source`,
    `edge_weight`, ...). Attributes only a few nodes or edges have (the region of a pop, a device box) sit in
    `node_extra` / `edge_extra`; a fork's join is the node after it (`par` makes the two
    together), so `node_data` gives each its partner without storing it. A networkx DiGraph per
    node and edge costs about a kilobyte and several dict operations each, which at 10^6 nodes is
    most of an evaluation's time and memory; the edges' ends sit in typed arrays of 32-bit ints
    (`NUMBER`), and the other attributes in two `InternedRecords` (`node_records`, `edge_records`), a byte
    or two a node or edge where a list per attribute cost a pointer (8 bytes) each. `graph` builds the networkx view for the passes that
    want one.
    """

    def __init__(self) -> None:
        self.source: int | None = None
        self.sink: int | None = None
        # Each node's (kind, span, cost centres, space changes), as one record.
        self.node_records = InternedRecords(4)
        self.node_kind: RecordField[NodeKind] = self.node_records.field(0)
        self.node_span: RecordField[Span | None] = self.node_records.field(1)
        self.node_centres: RecordField[tuple[str, ...]] = self.node_records.field(2)
        self.node_space: RecordField[tuple[tuple[World, int], ...]] = self.node_records.field(3)
        self.node_extra: dict[int, dict[str, Any]] = {}
        # Typed arrays (4 bytes an edge, where a list and its boxed ints cost 36 or more).
        self.edge_source: array[int] = array(NUMBER)
        self.edge_target: array[int] = array(NUMBER)
        # Each edge's (weight, kind, span, cost centres), as one record.
        self.edge_records = InternedRecords(4, number=0)
        self.edge_weight: RecordField[float] = self.edge_records.field(0)
        self.edge_kind: RecordField[EdgeKind] = self.edge_records.field(1)
        self.edge_span: RecordField[Span | None] = self.edge_records.field(2)
        self.edge_centres: RecordField[tuple[str, ...]] = self.edge_records.field(3)
        self.edge_extra: dict[int, dict[str, Any]] = {}
        self._graph: nx.DiGraph | None = None
        self._graph_size = (0, 0)
        self._adjacency: Adjacency | None = None
        self._adjacency_size = (0, 0)
        self._longest: LongestPath | None = None
        self._longest_size = (0, 0)
        # Sub-graphs copied once per thread by a batch (graphs.semantics.batched): (first node,
        # nodes a thread, the thread's source among them, threads, the threads whose copy differs
        # from the others': a write that grew its region). A picture reads one copy for all.
        self.replicas: list[tuple[int, int, int, int, frozenset[int]]] = []
        # `step`'s memo: by the ids of a span and two kinds, the last such step's objects and
        # their two records.
        self._last_step: dict[int, tuple] = {}

    # -- building -----------------------------------------------------------------------------------
    def node(self, kind: NodeKind = NodeKind.POINT, span: Span | None = None,
             centres: tuple[str, ...] = (), space: tuple[tuple[World, int], ...] = (),
             **extra: Any) -> Sub:
        """[u]: a fresh vertex."""
        u = len(self.node_records.codes)
        self.node_records.append_node(kind, span, centres, space)
        if extra:
            self.node_extra[u] = extra
        return Sub(u, u)

    def edge(self, u: int, v: int, weight: float, kind: EdgeKind, span: Span | None = None,
             centres: tuple[str, ...] = (), **extra: Any) -> None:
        """An edge u -> v of weight δ (δ >= 0)."""
        if weight < 0:
            raise ValueError(f"negative edge weight {weight}")
        if extra:
            self.edge_extra[len(self.edge_source)] = extra
        self.edge_source.append(u)
        self.edge_target.append(v)
        self.edge_records.append_edge(weight, kind, span, centres)

    def seq(self, first: Sub | None, second: Sub | None, weight: float = 1,
            kind: EdgeKind = EdgeKind.SEQ, span: Span | None = None,
            centres: tuple[str, ...] = ()) -> Sub | None:
        """first ⊕_δ second; ∅ ⊕ c = c ⊕ ∅ = c."""
        if first is None:
            return second
        if second is None:
            return first
        if weight < 0:
            raise ValueError(f"negative edge weight {weight}")
        # Once per sequenced pair of sub-graphs, so edge() is inlined here.
        self.edge_source.append(first.sink)
        self.edge_target.append(second.source)
        self.edge_records.append_edge(weight, kind, span, centres)
        return _new_sub((first.source, second.sink))

    def seq_all(self, parts: list[Sub | None], weight: float = 1, span: Span | None = None,
                centres: tuple[str, ...] = ()) -> Sub | None:
        """⊕_i c_i, left to right."""
        result: Sub | None = None
        for part in parts:
            result = self.seq(result, part, weight, span=span, centres=centres)
        return result

    def step(self, before: Sub | None, weight: float, edge_kind: EdgeKind,
             node_kind: NodeKind, span: Span | None = None, centres: tuple[str, ...] = (),
             space: tuple[tuple[World, int], ...] = (), **edge_extra: Any) -> Sub:
        """before ⊕_δ [u]. With before = ∅ a start vertex is made, so the δ edge is never lost."""
        # The shape of every memory operation, so node() and edge() are inlined here.
        if weight < 0:
            raise ValueError(f"negative edge weight {weight}")
        records = self.node_records
        if before is None:
            start = len(records.codes)
            records.append_node(_POINT, span, centres, ())
        else:
            start = before.source
        after = len(records.codes)
        # The node's and the edge's records, by way of the last step made with this span and
        # these kinds (an expression's steps mostly repeat their weight, cost centres and space,
        # the very objects: an identity check each, where interning both records costs ten
        # `id`s and two lookups). The memo holds its objects, so an id in it is never reused;
        # two steps whose ids mix to one key only take turns.
        memo = id(span) ^ id(node_kind) ^ id(edge_kind)
        last = self._last_step.get(memo)
        if (last is not None and last[0] is span and last[1] is weight
                and last[2] is node_kind and last[3] is edge_kind and last[4] is centres
                and last[5] is space):
            records.codes.append(last[6])
            edge_code = last[7]
        else:
            node_code = records.code((node_kind, span, centres, space))
            records.codes.append(node_code)
            edge_code = self.edge_records.code((weight, edge_kind, span, centres))
            self._last_step[memo] = (span, weight, node_kind, edge_kind, centres, space,
                                     node_code, edge_code)
        if edge_extra:
            self.edge_extra[len(self.edge_source)] = edge_extra
        self.edge_source.append(after - 1 if before is None else before.sink)
        self.edge_target.append(after)
        self.edge_records.codes.append(edge_code)
        return _new_sub((start, after))

    def par(self, left: Sub | None, right: Sub | None, weight: float = 1,
            span: Span | None = None, centres: tuple[str, ...] = ()) -> Sub:
        """left ⊗_δ right: fork and join vertices around both (Fig. 4)."""
        left = left if left is not None else self.node(_POINT, span, centres)
        right = right if right is not None else self.node(_POINT, span, centres)
        if weight < 0:
            raise ValueError(f"negative edge weight {weight}")
        # A parmap of n elements makes n - 1 of these, so node() and edge() are inlined here.
        fork = len(self.node_records.codes)
        join = fork + 1
        self.node_records.append_pattern(1, (_FORK_NODE, span, centres, ()),
                                  (_JOIN_NODE, span, centres, ()))
        self.edge_source.extend((fork, left.sink, fork, right.sink))
        self.edge_target.extend((left.source, join, right.source, join))
        self.edge_records.append_pattern(2, (weight, _FORK_EDGE, span, centres),
                                     (weight, _JOIN_EDGE, span, centres))
        return _new_sub((fork, join))

    def par_all(self, branches: list[Sub | None], weight: float = 1, span: Span | None = None,
                centres: tuple[str, ...] = ()) -> Sub | None:
        """⊗_i c_i as a balanced tree of binary ⊗ (n-1 of them, so 4(n-1) unit edges).

        The tree is made in bulk: its forks and joins, numbered as `par` would number them one
        ⊗ at a time (each subtree's before its own fork and join, the left one first), and their
        edges in the same order, go into the lists in one extend each."""
        if not branches:
            return None
        if len(branches) == 1:
            return branches[0]
        if None in branches:  # an empty branch gets a vertex of its own, as `par` makes it
            middle = len(branches) // 2
            left = self.par_all(branches[:middle], weight, span, centres)
            right = self.par_all(branches[middle:], weight, span, centres)
            return self.par(left, right, weight, span, centres)
        if weight < 0:
            raise ValueError(f"negative edge weight {weight}")
        # Typed arrays, not lists: a parmap of a million elements makes four million of each.
        first_fork = len(self.node_records.codes)
        if len(branches) >= WIDE_FORK_TREE:
            ends, starts, whole = _wide_fork_tree(branches, first_fork)  # type: ignore[arg-type]
        else:
            ends = array(NUMBER)  # fork, left sink, fork, right sink, ... as `par` adds them
            starts = array(NUMBER)  # left source, join, right source, join, ...
            forks = iter(range(first_fork, first_fork + 2 * len(branches), 2))
            whole = _fork_tree(branches, 0, len(branches), forks, ends,  # type: ignore[arg-type]
                               starts)
        pairs = len(branches) - 1  # binary ⊗s
        self.node_records.append_pattern(pairs, (_FORK_NODE, span, centres, ()),
                                  (_JOIN_NODE, span, centres, ()))
        self.edge_source.extend(ends)
        self.edge_target.extend(starts)
        self.edge_records.append_pattern(2 * pairs, (weight, _FORK_EDGE, span, centres),
                                     (weight, _JOIN_EDGE, span, centres))
        return whole

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
        """Mark `whole` as the graph of the evaluation: its source and sink are the graph's."""
        if whole is None:
            whole = self.node(NodeKind.POINT)
        self.source, self.sink = whole.source, whole.sink

    # -- reading ------------------------------------------------------------------------------------
    def number_of_nodes(self) -> int:
        """How many vertices the graph has."""
        return len(self.node_records.codes)

    def number_of_edges(self) -> int:
        """How many edges the graph has."""
        return len(self.edge_source)

    def node_data(self, u: int) -> dict[str, Any]:
        """Node u's attributes, as the networkx view has them."""
        kind = self.node_kind[u]
        data: dict[str, Any] = {"kind": kind, "span": self.node_span[u],
                                "centres": self.node_centres[u], "space": self.node_space[u]}
        if kind is _FORK_NODE:
            data["join"] = u + 1
        elif kind is _JOIN_NODE:
            data["fork"] = u - 1
        data.update(self.node_extra.get(u, ()))
        return data

    def edge_data(self, e: int) -> dict[str, Any]:
        """Edge e's attributes, as the networkx view has them."""
        data = {"weight": self.edge_weight[e], "kind": self.edge_kind[e],
                "span": self.edge_span[e], "centres": self.edge_centres[e]}
        data.update(self.edge_extra.get(e, ()))
        return data

    @property
    def graph(self) -> nx.DiGraph:
        """The graph as a networkx DiGraph (node u and edge u -> v with the attributes above).

        Built on first use and kept until the cost graph grows; it is a copy, so changing it
        does not change the cost graph."""
        import networkx as nx

        size = (len(self.node_records.codes), len(self.edge_source))
        if self._graph is None or self._graph_size != size:
            g = nx.DiGraph()
            g.add_nodes_from((u, self.node_data(u)) for u in range(size[0]))
            source, target = self.edge_source, self.edge_target
            g.add_edges_from((source[e], target[e], self.edge_data(e)) for e in range(size[1]))
            self._graph, self._graph_size = g, size
        return self._graph

    def adjacency(self) -> Adjacency:
        """The edges in networkx's adjacency order, with each node's in-degree (see `Adjacency`).
        Kept until the graph grows."""
        size = (len(self.node_records.codes), len(self.edge_source))
        if self._adjacency is None or self._adjacency_size != size:
            import numpy as np

            # numpy sorts and counts a million edges in milliseconds; the typed arrays it fills
            # are what the passes index, one element at a time (8 bytes an entry, where a list
            # of ints costs 36). Each temporary goes as soon as it is used, since the peak of
            # memory can fall here.
            with memoryview(self.edge_target) as targets:
                in_degree = _int_array(np.bincount(np.frombuffer(targets, dtype=NUMBER_DTYPE),
                                                   minlength=size[0]))
            with memoryview(self.edge_source) as sources:
                edges_by_source = np.frombuffer(sources, dtype=NUMBER_DTYPE)
                start = np.zeros(size[0] + 1, dtype=np.int64)
                np.cumsum(np.bincount(edges_by_source, minlength=size[0]), out=start[1:])
                first_edges = _int_array(start)
                del start
                order = _int_array(np.argsort(edges_by_source, kind="stable"))
                del edges_by_source  # the view must go before the memoryview is released
            self._adjacency = Adjacency(order, first_edges, in_degree)
            self._adjacency_size = size
        return self._adjacency

    def edge_between(self, u: int, v: int) -> int:
        """The number of the edge u -> v (KeyError where there is none)."""
        adjacency = self.adjacency()
        target = self.edge_target
        for e in adjacency.order[adjacency.start[u]:adjacency.start[u + 1]]:
            if target[e] == v:
                return e
        raise KeyError((u, v))

    def edges(self):
        """(u, v, attributes) for every edge, in networkx's adjacency order."""
        source, target = self.edge_source, self.edge_target
        return [(source[e], target[e], self.edge_data(e)) for e in self.adjacency().order]

    def work(self) -> float:
        """Σ of all edge weights: the time of the graph on one processor (in networkx's
        adjacency order, as `sum` adds them: an int where every weight is one)."""
        import numpy as np

        values = self.edge_weight.values
        totals = self.weight_totals([0] * len(values))
        if totals is None:
            return sum(self.edge_weight.at(self.adjacency().order))
        with memoryview(self.edge_weight.codes) as memory:
            used = np.bincount(np.frombuffer(memory, dtype=f"u{memory.itemsize}"),
                               minlength=len(values))
        if all(type(w) is int for w, edges in zip(values, used, strict=True) if edges):
            return int(totals.get(0, 0))
        return totals[0]

    def weight_totals(self, keys: Sequence[Hashable | None]) -> dict[Hashable, float] | None:
        """Σ of the edges' weights by a key of their records (`keys[code]` for the edges of
        edge record `code`; None leaves them out): each sum a float from 0.0, the weights added
        one at a time in networkx's adjacency order, as a loop over the edges adds them
        (floating point), made with numpy: its cumulative sum adds in order, one addition at a
        time (its `sum` adds in pairs), from the sum so far. None where a weight is neither a float nor an int, or
        ints could sum past 2^52 (no longer exact in doubles): the caller's loop adds them."""
        import numpy as np

        values = self.edge_weight.values
        if not all(type(w) is float or (type(w) is int and w < 2**52) for w in values):
            return None
        weights = np.array(values, dtype=np.float64)
        named = list(dict.fromkeys(key for key in keys if key is not None))
        number = {key: i for i, key in enumerate(named)}
        group_of = np.array([-1 if key is None else number[key] for key in keys],
                            dtype=np.int16 if len(named) < 2**15 else np.int32)
        bound = 2.0**52 if any(type(w) is int for w in values) else math.inf
        sums = [0.0] * len(named)  # each group's running sum, carried from chunk to chunk
        present = [False] * len(named)  # whether the group has edges
        reached = 0.0  # all the weights' sum so far, against `bound`
        order = self.adjacency().order
        # A chunk of edges at a time: a few MB of temporaries, where the whole graph's cost
        # tens (dot at 10^5: 2.6 million edges).
        with memoryview(self.edge_weight.codes) as memory, memoryview(order) as edges:
            all_codes = np.frombuffer(memory, dtype=f"u{memory.itemsize}")
            for low in range(0, len(order), CHUNK):
                codes = all_codes[np.frombuffer(edges[low:low + CHUNK], dtype=NUMBER_DTYPE)]
                added = weights[codes]
                reached += float(added.sum())
                if reached >= bound:
                    return None
                groups = group_of[codes]
                by_group = np.argsort(groups, kind="stable")  # each group's edges stay in order
                added, groups = added[by_group], groups[by_group]
                bounds = np.searchsorted(groups, np.arange(-1, len(named) + 1))
                for group, (first, last) in enumerate(zip(bounds[1:-1], bounds[2:],
                                                          strict=True)):
                    if last > first:  # from the sum so far: the first chunk's from 0.0
                        sums[group] = float(np.cumsum(np.concatenate(
                            ([sums[group]], added[first:last])))[-1])
                        present[group] = True
                del codes, added, groups, by_group
        return {key: total for key, total, edges_in in zip(named, sums, present, strict=True)
                if edges_in}

    def span(self) -> float:
        """The weight of the longest path from source to sink (the graph's depth)."""
        return self.longest_path().length

    def longest_path(self, best_edges: bool = False) -> LongestPath:
        """The longest paths from the source (see `LongestPath`), in one pass over the graph;
        with `best_edges`, each node's best in-edge too (4 bytes a node, which only the
        critical path reads). Kept until the graph grows."""
        size = (len(self.node_records.codes), len(self.edge_source))
        known = self._longest
        if (known is None or self._longest_size != size
                or (best_edges and known.best_edge is None)):
            adjacency = self.adjacency()
            edges = array(NUMBER, [-1]) * size[0] if best_edges else None  # no boxed int
            found = self._longest_path_compiled(adjacency, edges)
            if found is None:
                found = _longest_path(range(size[0]), adjacency.order, adjacency.start,
                                      adjacency.in_degree[:], self.edge_target,
                                      self.edge_weight.codes, self.edge_weight.values, edges,
                                      wide=WIDE_VISITS)
            length, end = found
            self._longest, self._longest_size = LongestPath(length, end, edges), size
        assert self._longest is not None
        return self._longest

    def _longest_path_compiled(self, adjacency: Adjacency,
                               edges: array[int] | None) -> tuple[float, int] | None:
        """`_longest_path`'s result from `graphs.compiled.longest_path`, where the graph is large
        enough (`graphs.passes.COMPILED_FROM`) and its lengths are exact in doubles (every weight an int or
        a finite float, all of them adding up to less than EXACT_IN_DOUBLES, as
        `_longest_path`'s doubles need); else None."""
        import numpy as np

        weights = self.edge_weight.values
        if (len(self.edge_source) < passes.COMPILED_FROM
                or not all(type(w) is int or (type(w) is float and math.isfinite(w))
                           for w in weights)
                or exact_total(self.edge_weight.codes, weights) >= EXACT_IN_DOUBLES):
            return None
        compiled = passes.compiled_passes(len(self.edge_source))
        if compiled is None:
            return None
        with memoryview(edges if edges is not None else array(NUMBER)) as memory:
            length, whole, end = compiled.longest_path(
                numpy_view(adjacency.order), numpy_view(adjacency.start),
                numpy_view(adjacency.in_degree), numpy_view(self.edge_target),
                numpy_view(self.edge_weight.codes),
                np.array([float(w) for w in weights], dtype=np.float64),
                np.array([type(w) is int for w in weights], dtype=np.bool_),
                np.frombuffer(memory, dtype=NUMBER_DTYPE), edges is not None)
        return (int(length) if whole else float(length)), int(end)

    def device_boxes(self) -> list[DeviceBoxInfo]:
        """The device boxes of the `on`s, in networkx's adjacency order (by source node)."""
        kinds, source = self.edge_kind, self.edge_source
        boxes = sorted((source[e], e) for e in self.edge_extra if kinds[e] is EdgeKind.DEVICE_BOX)
        return [self.edge_extra[e]["box"] for _, e in boxes]

    def self_check(self) -> None:
        """Assert the invariants: a DAG with one source and one sink, no two edges between the same
        nodes, non-negative weights, every fork matched by its join."""
        import networkx as nx

        g = self.graph
        assert g.number_of_edges() == self.number_of_edges(), "cost graph has parallel edges"
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


def take_in_chunks(values: np.ndarray, indices: np.ndarray, out: np.ndarray) -> None:
    """out[i] = values[indices[i]], `CHUNK` indices at a time: numpy copies an index array of
    32-bit numbers into 64-bit ones before it indexes, 8 bytes an index, and under glibc's
    moving mmap threshold a freed temporary of tens of MB stays in the process's memory."""
    import numpy as np

    for low in range(0, len(indices), CHUNK):
        np.take(values, indices[low:low + CHUNK], out=out[low:low + CHUNK])


CHUNK = 2**18
"""How many nodes or edges a pass over numpy arrays takes at a time (`take_in_chunks`,
`CostGraph.weight_totals`): a few MB of temporaries."""

def _int_array(values: np.ndarray) -> array[int]:
    """A numpy array of node or edge numbers (or counts of them) as a typed array of `NUMBER`s
    (indexed faster than numpy's)."""
    import numpy as np

    result = array(NUMBER, [0]) * len(values)
    with memoryview(result) as view:
        np.frombuffer(view, dtype=NUMBER_DTYPE)[:] = values  # no copy in between
    return result


def longest_path_length(graph: nx.DiGraph) -> float:
    """Longest weighted path in a DAG, iteratively (no recursion, any size)."""
    import networkx as nx

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


def longest_path_of_edges(edges: list[tuple[int, int, float]]) -> float:
    """`longest_path_length` of the DAG made of `edges` (u, v, weight), added in that order."""
    label: dict[int, int] = {}  # nodes numbered in the order networkx would have added them
    for u, v, _ in edges:
        label.setdefault(u, len(label))
        label.setdefault(v, len(label))
    count = len(label)
    start = [0] * (count + 1)
    in_degree = [0] * count
    for u, v, _ in edges:
        start[label[u] + 1] += 1
        in_degree[label[v]] += 1
    for u in range(count):
        start[u + 1] += start[u]
    order = [0] * len(edges)
    filled = start[:-1]
    for e, (u, _, _) in enumerate(edges):  # a stable counting sort by source
        order[filled[label[u]]] = e
        filled[label[u]] += 1
    return _longest_path(range(count), order, start, in_degree, [label[v] for _, v, _ in edges],
                         range(len(edges)), [w for _, _, w in edges])[0]


def _longest_path(nodes, order: Sequence[int], start: Sequence[int], in_degree: MutableSequence[int],
                  target: Sequence[int], weight_codes: Sequence[int], weights: Sequence[float],
                  best_edge: array[int] | None = None, wide: int | None = None) -> tuple[float, int]:
    """`longest_path_length` over the flat form: node u's out-edges are order[start[u]:start[u+1]]
    and edge e weighs weights[weight_codes[e]] (`RecordField`) (`in_degree` is used up). Returns
    the length and the first node (in this order) that a longest path reaches (-1 for an empty
    graph); fills `best_edge` where given (see `LongestPath`).

    It visits nodes in exactly the order networkx's topological_sort does (Kahn's algorithm,
    first in first out, from the in-degree-0 nodes in node order), so that where paths of equal
    weight mix int and float weights the result is the same object type as before. A node's
    best edge is the first made among its equally long in-edges, as networkx's
    `dag_longest_path` takes the first of a node's predecessors, in the order their edges were
    added; the lengths compared are equal numbers whichever of them is kept.

    With `wide` (typed arrays only: `CostGraph.longest_path`), whenever `wide` nodes or more
    wait in the queue, they are visited at once with numpy (`_WideVisits`), in the same order
    and with the same results; the nodes of a narrow stretch (a chain, the top of a fork tree)
    are visited one by one in Python, which costs less than numpy's calls for a few nodes."""
    count = len(start) - 1
    # A typed array: a node's number is stored, not boxed (4 bytes a node, not 40); its iterator
    # reads on while it grows, as a list's does.
    queue = array(NUMBER, [u for u in nodes if not in_degree[u]])
    end = queue[0] if queue else -1
    # Each node's best length as a double (8 bytes, where a float object and its slot cost 32),
    # with a flag for whether Python would hold it as an int: where every weight on its best
    # path is one. Below EXACT_IN_DOUBLES every sum and comparison of these numbers is exact in
    # doubles, so the lengths, the ties and the result's type are those of Python numbers,
    # which hold the lengths above it (a list, ints of any size).
    doubles = sum(map(weights.__getitem__, weight_codes)) < EXACT_IN_DOUBLES
    best: MutableSequence[float] = (array("d", [-1.0]) * count if doubles
                                    else [-1] * count)  # -1: not reached (lengths are >= 0)
    zero = 0.0 if doubles else 0
    whole = bytearray(count)  # 1 where the best length is an int
    result: float = zero
    result_whole = False
    visits = (_WideVisits(order, start, in_degree, target, weight_codes, weights, best, whole,
                          best_edge)
              if wide is not None and doubles and all(map(math.isfinite, weights)) else None)
    visited = 0  # how many of `queue`'s nodes were visited
    nodes_left = iter(queue)
    while visited < len(queue):
        if visits is not None and len(queue) - visited >= wide:  # type: ignore[operator]
            queue, (result, result_whole, end) = visits.visit(
                queue[visited:], (result, result_whole, end))
            visited, nodes_left = 0, iter(queue)
            continue
        for node in islice(nodes_left, _NARROW_CHECKED):  # the queue grows while it is read
            here = best[node]
            if here < 0:
                here, here_whole = zero, True
            else:
                here_whole = whole[node] == 1
            if here > result:
                result, result_whole = here, here_whole
                end = node
            for e in order[start[node]:start[node + 1]]:
                child = target[e]
                w = weights[weight_codes[e]]
                candidate = here + w
                known = best[child]
                if candidate > known:
                    best[child] = candidate
                    whole[child] = here_whole and type(w) is int
                    if best_edge is not None:
                        best_edge[child] = e
                elif best_edge is not None and candidate == known and e < best_edge[child]:
                    best_edge[child] = e
                in_degree[child] -= 1
                if not in_degree[child]:
                    queue.append(child)
        # The slice stops early only where it read the whole queue.
        visited = min(visited + _NARROW_CHECKED, len(queue))
    if result_whole:
        return int(result), end
    return (result if doubles or result else 0.0), end


_NARROW_CHECKED = 1024
"""How many nodes `_longest_path` visits in Python between two looks at how many wait."""

WIDE_VISITS = 512
"""From how many waiting nodes `CostGraph.longest_path` visits them with numpy (`_WideVisits`):
about where numpy's thirty-odd calls a visit cost less than Python's loop over their edges."""


class _WideVisits:
    """`_longest_path`'s visit of many queued nodes at once, with numpy, on the pass's own state
    (its typed arrays, viewed in place): what the loop does for each node in queue order, done
    for all of them. A node's length is the largest of its in-edges' candidates (one double
    addition each, whatever the order), its best edge the first made among those that reach it;
    what depends on the order is kept by the position of each edge in the queue's order of
    visits: the int flag comes from the first edge to reach the largest length, a node joins
    the queue where its last in-edge is visited, and the path's end is the first node to reach
    the longest length."""

    def __init__(self, order, start, in_degree, target, weight_codes, weights, best, whole,
                 best_edge) -> None:
        import numpy as np

        def view(values, dtype=NUMBER_DTYPE):
            return np.frombuffer(values, dtype=dtype)

        self.order, self.start, self.target = view(order), view(start), view(target)
        self.remaining = view(in_degree)
        self.single = self.remaining == 1  # nodes of one in-edge: their first is their last
        self.codes = view(weight_codes, f"u{weight_codes.itemsize}")
        self.values = np.array(weights, dtype=np.float64)
        self.ints = np.array([type(w) is int for w in weights], dtype=bool)
        self.best = view(best, np.float64)
        self.whole = view(whole, np.uint8)
        self.best_edge = view(best_edge) if best_edge is not None else None

    def visit(self, nodes: array[int], known: tuple[float, bool, int]) -> tuple[
            array[int], tuple[float, bool, int]]:
        """Visit `nodes` (in queue order), given the loop's (result, result_whole, end) before
        them: the nodes their visits add to the queue, in order, and those three after them."""
        import numpy as np

        best, whole, remaining = self.best, self.whole, self.remaining
        queued = np.frombuffer(nodes, dtype=NUMBER_DTYPE)
        here = best[queued]
        unreached = here < 0
        here[unreached] = 0.0
        here_whole = (whole[queued] == 1) | unreached
        result, result_whole, end = known
        first = int(np.argmax(here))  # the first of the longest, as the loop's `>` keeps it
        if here[first] > result:
            result, result_whole, end = float(here[first]), bool(here_whole[first]), int(
                queued[first])
        firsts = self.start[queued]
        counts = self.start[queued + 1] - firsts
        total = int(counts.sum())
        if not total:
            return array(NUMBER), (result, result_whole, end)
        # Their out-edges, in the order the loop visits them.
        edges = self.order[np.arange(total) + np.repeat(firsts - (np.cumsum(counts) - counts),
                                                        counts)]
        codes = self.codes[edges]
        candidates = np.repeat(here, counts) + self.values[codes]
        candidate_whole = np.repeat(here_whole, counts) & self.ints[codes]
        del codes
        children = self.target[edges]
        one = self.single[children]
        # A child of one in-edge: that edge gives its length and joins it to the queue.
        alone = children[one]
        best[alone] = candidates[one]
        whole[alone] = candidate_whole[one]
        if self.best_edge is not None:
            self.best_edge[alone] = edges[one]
        remaining[alone] = 0
        positions = np.flatnonzero(one)
        many = ~one
        if many.any():
            joined, joined_at = self._visit_joins(
                children[many], candidates[many], candidate_whole[many], edges[many],
                np.flatnonzero(many))
            alone = np.concatenate((alone, joined))
            positions = np.concatenate((positions, joined_at))
            alone = alone[np.argsort(positions, kind="stable")]
        queue = array(NUMBER, [0]) * len(alone)
        view = np.frombuffer(queue, dtype=NUMBER_DTYPE)
        view[:] = alone
        del view
        return queue, (result, result_whole, end)

    def _visit_joins(self, children, candidates, candidate_whole, edges, positions):
        """The visited edges into nodes of several in-edges (in visit order, `positions` in the
        visit's edge order): each child's length, int flag and best edge updated as the loop
        would, one after the other; the children whose last in-edge this was, and where."""
        import numpy as np

        best, whole, remaining = self.best, self.whole, self.remaining
        by_child = np.argsort(children, kind="stable")  # each child's edges stay in visit order
        children, candidates = children[by_child], candidates[by_child]
        candidate_whole, edges = candidate_whole[by_child], edges[by_child]
        positions = positions[by_child]
        group_starts = np.flatnonzero(np.concatenate(([True], children[1:] != children[:-1])))
        sizes = np.diff(np.append(group_starts, len(children)))
        child = children[group_starts]
        longest = np.maximum.reduceat(candidates, group_starts)
        reaching = candidates == np.repeat(longest, sizes)
        first_reaching = np.minimum.reduceat(np.where(reaching, np.arange(len(children)),
                                                      len(children)), group_starts)
        known = best[child]
        better = longest > known
        best[child[better]] = longest[better]
        whole[child[better]] = candidate_whole[first_reaching][better]
        if self.best_edge is not None:
            reached_by = np.minimum.reduceat(
                np.where(reaching, edges, np.iinfo(NUMBER_DTYPE).max), group_starts)
            kept = self.best_edge[child]
            self.best_edge[child] = np.where(better, reached_by, np.where(
                longest == known, np.minimum(kept, reached_by), kept))
        left = remaining[child] - sizes
        remaining[child] = left
        done = left == 0
        return child[done], positions[group_starts + sizes - 1][done]


# -- the compiled passes (graphs.compiled) ------------------------------------------------------
def exact_total(codes: Sequence[int], values: Sequence[float]) -> float:
    """Σ |values[codes[i]]| over all i, exactly (ints as ints, counted per code with numpy, a
    chunk at a time): a bound on any sum of some of them in any order."""
    import numpy as np

    used = np.zeros(len(values), dtype=np.int64)
    view = numpy_view(codes)
    for low in range(0, len(view), CHUNK):
        used += np.bincount(view[low:low + CHUNK], minlength=len(values))
    del view
    return sum(count * abs(value) for count, value in zip(used.tolist(), values, strict=True)
               if count)


def numpy_view(numbers: Sequence[int]) -> np.ndarray:
    """A typed array (or bytearray) as a numpy array over the same memory (no copy)."""
    import numpy as np

    with memoryview(numbers) as memory:  # type: ignore[arg-type]
        dtype = f"i{memory.itemsize}" if memory.format.islower() else f"u{memory.itemsize}"
    return np.frombuffer(numbers, dtype=dtype)  # type: ignore[call-overload]


EXACT_IN_DOUBLES = 2**53
"""Below this total weight every path length, int or float, is a double exactly (`_longest_path`)."""
