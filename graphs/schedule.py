"""CPU schedules of a cost graph (§6.3, eqs. 1-5) and the space they use (§6.7, eqs. 8-9).

A schedule ⊴ is found by simulating P processors over the graph. Every edge is a task lasting its
weight; a node is reached once all its incoming edges are done, and then its outgoing edges become
ready. Scheduling is greedy: a free processor never idles while a task is ready. The policy only
decides which ready task goes first:

- `1df`: the task that comes first in the sequential depth-first order (Blelloch and Narlikar's
  parallel depth-first schedule, the one Spoonhower et al. (2010) call 1DF);
- `bf`: the task that became ready first (breadth-first, FIFO);
- `ws`: deterministic work stealing, one deque per processor.

The simulation is event driven: time jumps from one completion to the next, so an edge of weight 1e6
costs no more to simulate than an edge of weight 1. Weight-0 edges complete as soon as they are ready
and occupy no processor.

The steps V_1 ◀ … ◀ V_k of eq. 3 are the instants at which some node is reached; step_w (eq. 5) is
the time since the previous step, so Σ step_w = time(e, ⊴) is the makespan. Space (eq. 8) is the
running total of the `space` changes of the reached nodes and the `space_start` / `space_end`
changes of the device-box edges started and finished, per world.
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import graphs.passes as passes
from graphs.costgraph import (
    CHUNK,
    NUMBER,
    CostGraph,
    EdgeKind,
    cyclic_gc_paused,
    exact_total,
    numpy_view,
    take_in_chunks,
)
from graphs.passes import compiled_passes
from profiler.syntax import World

if TYPE_CHECKING:
    import numpy as np

SpaceChanges = tuple[tuple[World, int], ...]
_CPU = World.CPU  # a global: Python 3.11 looks up `World.CPU` ten times slower


class Policy(Enum):
    """The CPU scheduling policies ⊴ that time and space are parameterised by (§6.3)."""

    DEPTH_FIRST = "1df"
    BREADTH_FIRST = "bf"
    WORK_STEALING = "ws"


@dataclass(frozen=True, slots=True)
class Step:
    """One step V_i of eq. 3: the nodes reached at one instant, and the state just after it.

    `weight` is step_w(V_i) of eq. 5, the time since the previous step (0 for the first).
    `space_cpu` and `space_gpu` are space(V_i, ⊴) of eq. 8 split by world; `busy` is how many
    processors are running a task when the step's instant is over (for a timeline).
    """

    time: float
    weight: float
    nodes: tuple[int, ...]
    space_cpu: int
    space_gpu: int
    busy: int

    @property
    def space(self) -> int:
        """space(V_i, ⊴) of eq. 8 over both worlds."""
        return self.space_cpu + self.space_gpu


def _step_maker() -> Callable[[float, float, tuple[int, ...], int, int, int], Step]:
    """A function making a `Step` from its fields, twice as fast as `Step(...)`.

    A schedule of a million-node graph has hundreds of thousands of steps, and a frozen
    dataclass's __init__ sets each field through object.__setattr__; this sets the slots
    directly, which is all that __init__ does."""
    new = object.__new__
    time, weight, nodes, cpu, gpu, busy = (
        getattr(Step, name).__set__ for name in Step.__slots__)

    def make(t: float, w: float, n: tuple[int, ...], c: int, g: int, b: int) -> Step:
        step = new(Step)
        time(step, t)
        weight(step, w)
        nodes(step, n)
        cpu(step, c)
        gpu(step, g)
        busy(step, b)
        return step

    return make


_new_step = _step_maker()


@dataclass(frozen=True, slots=True)
class Tasks:
    """The tasks (edges of positive weight) each processor ran, in the order it started them:
    processor p's i-th task is edge `edges[p][i]`, from `times[instants[p][i]]` (the instant it
    started, as the simulation's clock held it) to that plus the edge's weight (`run`, which
    adds them as the simulation did, so both are the same numbers). Two typed arrays per
    processor, 16 bytes a task, where a start, an end and an edge as Python objects cost about
    120: a schedule of a million-node graph runs a million tasks. Edge e weighs
    weights[weight_codes[e]] (the cost graph's `RecordField`); `sources` and `targets` are
    the cost graph's edge arrays (not copies)."""

    instants: list[array[int]]
    edges: list[array[int]]
    times: Sequence[float]  # a list, or the compiled simulation's `Clock`
    weight_codes: Sequence[int]
    weights: Sequence[float]
    sources: Sequence[int]
    targets: Sequence[int]

    def __len__(self) -> int:
        return sum(map(len, self.edges))

    def run(self, processor: int) -> Iterator[tuple[float, float, int]]:
        """(start, end, edge) of each task processor `processor` ran, in order."""
        times, weight_codes, weights = self.times, self.weight_codes, self.weights
        for instant, edge in zip(self.instants[processor], self.edges[processor], strict=True):
            start = times[instant]
            yield start, start + weights[weight_codes[edge]], edge


class Clock(Sequence[float]):
    """The instants' times as the compiled simulation keeps them: doubles, and whether each is
    an int in Python (`doubles`, `ints`: numpy arrays), read as the Python numbers that the
    Python simulation's list holds: 9 bytes an instant where that list costs about 32 (a
    million-task schedule has a million instants), and no list made when a pass reads the
    doubles themselves (graphs.timeline). Equal to any sequence of the same numbers."""

    __slots__ = ("doubles", "ints", "every_int", "no_int")

    def __init__(self, doubles: np.ndarray, ints: np.ndarray) -> None:
        self.doubles, self.ints = doubles, ints
        self.every_int = bool(ints.all())
        self.no_int = not self.every_int and not ints.any()

    def __len__(self) -> int:
        return len(self.doubles)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return _python_numbers(self.doubles[index], self.ints[index])
        value = self.doubles.item(index)
        if self.no_int:
            return value
        return int(value) if self.every_int or self.ints.item(index) else value

    def __iter__(self) -> Iterator[float]:
        for low in range(0, len(self.doubles), CHUNK):
            yield from _python_numbers(self.doubles[low:low + CHUNK],
                                       self.ints[low:low + CHUNK])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(
            a == b and type(a) is type(b) for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]


class SpaceTrace(Sequence[tuple[int, float, int, int]]):
    """`ScheduleResult.space_trace`: (step index, time, CPU words, GPU words) entries, kept as
    typed arrays (24 bytes an entry, where a tuple of four numbers costs about 120: a
    million-node schedule changes its space at a few hundred thousand instants), each time as
    its instant's index into the simulation's clock (`Tasks.times`). Reads as a sequence of
    tuples, equal to any sequence of the same tuples."""

    __slots__ = ("steps", "instants", "cpu", "gpu", "times")

    def __init__(self, times: Sequence[float]) -> None:
        self.steps: array[int] = array(NUMBER)
        self.instants: array[int] = array(NUMBER)
        self.cpu: array[int] = array("q")
        self.gpu: array[int] = array("q")
        self.times = times

    def append(self, step: int, instant: int, cpu: int, gpu: int) -> None:
        self.steps.append(step)
        self.instants.append(instant)
        self.cpu.append(cpu)
        self.gpu.append(gpu)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        return (self.steps[index], self.times[self.instants[index]], self.cpu[index],
                self.gpu[index])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """A CPU schedule ⊴ of a cost graph on `procs` processors and what it costs.

    `time` is time(e, ⊴) (§6.7, Σ of eq. 5 over the steps), the makespan. The peaks are
    space_τ(⊴) of eq. 9. They are sampled at the end of every instant at which the simulation
    does something, which includes each step; an instant that is not a step (a device-box edge
    starting right after an edge into a join that is not yet reached) can raise the peak above
    the largest `Step.space`. `tasks` holds each processor's tasks (see `Tasks`), and
    `intervals` gives them as (processor, start, end, u, v), sorted by processor and start.
    `space_trace` holds (step index, time, CPU words, GPU words) at the end of every instant
    whose space differs from the instant before (from 0 words): the whole curve of eq. 8, device
    boxes' pushes included, so that its maxima are the peaks. A schedule made with
    `record=False` leaves `steps`, `tasks` and `space_trace` empty, and one made with
    `keep_steps=False` leaves `steps` empty; `step_count` is the number of steps either way.
    `procs` is the processors the schedule ran on: those asked for, or the
    graph's width where more than WIDTH_CHECKED were asked for and it is smaller.
    """

    policy: Policy
    procs: int
    time: float
    steps: tuple[Step, ...]
    peak_space_cpu: int
    peak_space_gpu: int
    peak_space: int
    tasks: Tasks | None
    space_trace: Sequence[tuple[int, float, int, int]] = ()
    step_count: int = 0

    @property
    def intervals(self) -> tuple[tuple[int, float, float, int, int], ...]:
        """(processor, start, end, u, v) for each task, sorted by processor and start (made on
        each call, from `tasks`)."""
        if self.tasks is None:
            return ()
        return tuple((p, start, end, u, v) for p in range(len(self.tasks.edges))
                     for start, end, u, v in self.processor_intervals(p))

    def processor_intervals(self, processor: int) -> list[tuple[float, float, int, int]]:
        """The (start, end, u, v) tasks that `processor` ran, in order."""
        tasks = self.tasks
        if tasks is None or processor >= len(tasks.edges):
            return []
        sources, targets = tasks.sources, tasks.targets
        return [(start, end, sources[e], targets[e]) for start, end, e in tasks.run(processor)]


def schedule(graph: CostGraph, procs: int, policy: Policy | str,
             record: bool = True, keep_steps: bool = True) -> ScheduleResult:
    """Schedule `graph` greedily on `procs` processors under `policy` (§6.3, eqs. 3-5, 8-9).

    Without `record`, only the time and the space peaks are kept: not the steps, the tasks and
    the space trace, which only timelines and cost centres read. Without `keep_steps`, the
    tasks and the space trace are kept but not the steps (a `Step` per instant, which only
    tests read; a timeline needs their count only).
    More than WIDTH_CHECKED processors are capped to the graph's width (`_width`), which changes
    nothing but the result's `procs`."""
    if procs < 1:
        raise ValueError(f"a schedule needs at least one processor, not {procs}")
    policy = Policy(policy)
    with cyclic_gc_paused():
        index = _GraphIndex(graph)
        numbers, in_order = _depth_first(index)
        if procs > WIDTH_CHECKED:
            procs = min(procs, max(1, _width(index, in_order)))
        if policy is not Policy.WORK_STEALING and _fits_compiled(index):
            return _run_compiled(index, procs, policy, numbers, in_order, record, keep_steps)
        return _Simulation(index, procs, policy, numbers, in_order, record, keep_steps).run()


def schedule_times(graph: CostGraph, procs: Sequence[int],
                   policy: Policy | str) -> list[float]:
    """time(e, ⊴) on each number of processors in `procs` (§6.3, eq. 5): what
    `schedule(graph, p, policy).time` gives for each p, with the graph indexed and ordered once
    and, under 1df and bf, only the makespan simulated (`_Makespan`), as a speedup curve needs."""
    if any(p < 1 for p in procs):
        raise ValueError(f"a schedule needs at least one processor, not {min(procs)}")
    policy = Policy(policy)
    with cyclic_gc_paused():
        index = _GraphIndex(graph)
        numbers, in_order = _depth_first(index)
        if policy is Policy.WORK_STEALING:
            return [_Simulation(index, p, policy, numbers, in_order, False).run().time
                    for p in procs]
        makespan = _Makespan(index, numbers, in_order)
        return [makespan.time(p, policy is Policy.BREADTH_FIRST) for p in procs]


class _Makespan:
    """The time of the 1df or bf schedule, as `_Simulation.run` finds it but without space, steps
    or processors' names: the same instants and the same ready keys, so the same tasks start at
    each instant, counted rather than assigned to processors. What does not depend on the number
    of processors is made once: the index as lists (indexed faster than typed arrays), and the
    tasks by their 1DF number, which is what the ready heap holds: each task's weight, and the
    number of the task its end makes ready at once where there is one (its target has no other
    in-edge and one out-edge, of positive weight: most tasks), so that the loop, run once per
    task for each number of processors, looks nothing else up. The tasks ending at an instant
    are kept together, one heap entry per instant rather than per task: on unit-weight graphs
    all the tasks started at an instant end together."""

    def __init__(self, index: _GraphIndex, numbers: Sequence[int], by_number: Sequence[int]) -> None:
        self.index = index
        self.numbers = numbers
        self.by_number = by_number
        self.target = list(index.target)
        order, start = index.order, index.start
        weight_codes, weights = index.weight_codes, index.weights
        # The 1DF number of node u's only out-edge where it has one, of positive weight; else -1.
        self.only = [-1] * index.count
        for node in range(index.count):
            first = start[node]
            if start[node + 1] - first == 1 and weights[weight_codes[order[first]]] > 0:
                self.only[node] = numbers[order[first]]
        # By 1DF number: the task's weight, and the number its end makes ready at once (-1 where
        # its target waits for other edges or has other out-edges: `time` counts those).
        in_degree, target, only = index.in_degree, self.target, self.only
        self.weight_of = list(map(weights.__getitem__, map(weight_codes.__getitem__, by_number)))
        self.next_of = [only[target[edge]] if in_degree[target[edge]] == 1 else -1
                        for edge in by_number]

    def time(self, procs: int, breadth_first: bool) -> float:
        """The makespan on `procs` processors under bf (`breadth_first`) or 1df."""
        index = self.index
        weight_codes, weights, order, start = index.weight_codes, index.weights, index.order, index.start
        if procs == 1 and not breadth_first:
            # One 1df processor runs the tasks in the depth-first order, one after the other:
            # the same sum, in the same order, as the simulation's ends.
            time: float = 0
            for weight in map(weights.__getitem__, map(weight_codes.__getitem__, self.by_number)):
                if weight > 0:
                    time = time + weight
            return time
        target, only, numbers, by_number = self.target, self.only, self.numbers, self.by_number
        weight_of, next_of = self.weight_of, self.next_of
        remaining = index.in_degree[:]
        count = len(numbers)
        heappush, heappop = heapq.heappush, heapq.heappop
        ready: list[int] = []  # keys, as the simulation's: a 1DF number, after the instant (bf)
        ending: dict[float, list[int]] = {}  # the tasks (1DF numbers) ending at each instant
        instants: list[float] = []  # those instants, a heap
        free = procs
        time = 0
        instant = 0

        def make_ready(node: int, base: int) -> None:
            """Reach `node` and what its weight-0 edges reach at once (`_Simulation.reach`): its
            tasks of positive weight become ready."""
            stack = [node]
            while stack:
                node = stack.pop()
                for edge in order[start[node]:start[node + 1]]:
                    if weights[weight_codes[edge]] > 0:
                        heappush(ready, base + numbers[edge])
                        continue
                    reached = target[edge]
                    remaining[reached] -= 1
                    if remaining[reached] == 0:
                        stack.append(reached)

        make_ready(index.source, 0)
        while True:
            last_end: float = -1
            tasks: list[int] = []
            while ready and free:
                task = heappop(ready)
                if breadth_first:
                    task %= count
                end = time + weight_of[task]
                if end != last_end:  # the tasks started together mostly end together
                    last_end = end
                    tasks = ending.get(end)  # type: ignore[assignment]
                    if tasks is None:
                        tasks = ending[end] = []
                        heappush(instants, end)
                tasks.append(task)
                free -= 1
            if not instants:
                return time
            time = heappop(instants)
            instant += 1
            base = instant * count if breadth_first else 0
            tasks = ending.pop(time)
            free += len(tasks)
            for task in tasks:
                key = next_of[task]
                if key >= 0:
                    heappush(ready, base + key)
                    continue
                node = target[by_number[task]]
                left = remaining[node] - 1
                remaining[node] = left
                if left:
                    continue
                key = only[node]
                if key >= 0:
                    heappush(ready, base + key)
                else:
                    make_ready(node, base)


WIDTH_CHECKED = 64
"""On more processors than this, `schedule` first measures the graph's width (`_width`) and uses
no more processors than it: every one beyond would never run a task, and the simulation keeps
lists, deques and intervals per processor."""


def _width(index: _GraphIndex, in_order: Sequence[int]) -> int:
    """The most tasks that ever run at once when every task starts as soon as it is ready (the
    schedule on unboundedly many processors). On P >= this width every greedy schedule is that
    one, whatever its policy: no ready task ever waits (by induction on the instants, the tasks
    running or ready at an instant are those of the unbounded schedule, at most the width), so
    time, space and steps are the same as on the width itself."""
    reached = [0.0] * index.count  # when each node is reached: the latest of its in-edges' ends
    sources, targets, weight_codes, weights = (index.source_of, index.target, index.weight_codes,
                                               index.weights)
    starts: list[float] = []
    ends: list[float] = []
    for edge in in_order:  # a topological order: an edge comes after every edge into its source
        start = reached[sources[edge]]
        weight = weights[weight_codes[edge]]
        end = start + weight
        target = targets[edge]
        if end > reached[target]:
            reached[target] = end
        if weight > 0:  # weight-0 edges are no task (see `_Simulation.reach`)
            starts.append(start)
            ends.append(end)
    starts.sort()
    ends.sort()
    running = widest = finished = 0
    for start in starts:
        while ends[finished] <= start:  # a task ending at an instant frees its processor first
            finished += 1
            running -= 1
        running += 1
        widest = max(widest, running)
    return widest


def depth_first_order(graph: CostGraph) -> tuple[tuple[int, int], ...]:
    """The edges in the order a one-processor, left-to-right depth-first execution runs them.

    This is the priority order of the 1DF schedule: a node is entered when its last incoming
    edge is done, and its first outgoing edge (in insertion order) is run next.
    """
    index = _GraphIndex(graph)
    _, order = _depth_first(index)
    return tuple((index.source_of[e], index.target[e]) for e in order)


class _GraphIndex:
    """The cost graph as flat lists indexed by node and by edge, which the simulation's loop needs.

    Nodes and edges keep the cost graph's numbers. Node u's out-edges, in the order networkx's
    adjacency lists them, are order[start[u]:start[u + 1]]."""

    def __init__(self, graph: CostGraph) -> None:
        import numpy as np

        if graph.source is None:
            raise ValueError("the cost graph has no source; call CostGraph.finish first")
        adjacency = graph.adjacency()
        self.count = graph.number_of_nodes()
        self.source = graph.source
        self.order = adjacency.order
        self.start = adjacency.start
        self.in_degree = adjacency.in_degree
        # Each node's space change as a number into `space_changes` ((CPU words, GPU words);
        # 0 for none): a byte a node while there are fewer than 256 different changes (a few
        # kinds of allocation make them all), else 4 bytes; a list would cost 8 bytes a node.
        # Numbered in the order the nodes first have them, read by node record (numpy).
        self.space_changes: list[tuple[int, int]] = [(0, 0)]
        number_of: dict[SpaceChanges, int] = {}
        spaces = graph.node_space.values
        with memoryview(graph.node_space.codes) as memory:
            codes = np.frombuffer(memory, dtype=f"u{memory.itemsize}")
            first_node: dict[int, int] = {}  # by node record: the first node that has it
            for low in range(0, len(codes), CHUNK):  # a few MB of temporaries at a time
                used, firsts = np.unique(codes[low:low + CHUNK], return_index=True)
                for code, first in zip(used.tolist(), firsts.tolist(), strict=True):
                    first_node.setdefault(code, low + first)
            number_of_code = np.zeros(len(spaces), dtype=np.uint32)
            for code in sorted(first_node, key=first_node.__getitem__):
                space = spaces[code]
                if space:
                    number = number_of.get(space)
                    if number is None:
                        change = _by_world(space)
                        number = number_of[space] = len(self.space_changes) if change else 0
                        if change:
                            self.space_changes.append(change)
                    number_of_code[code] = number
            if len(self.space_changes) <= 256:  # a byte a node
                self.node_space: Sequence[int] = bytearray(self.count)
                take_in_chunks(number_of_code.astype(np.uint8), codes, np.frombuffer(
                    self.node_space, dtype=np.uint8))  # type: ignore[call-overload]
            else:
                self.node_space = array("I", [0]) * self.count
                take_in_chunks(number_of_code, codes,
                               np.frombuffer(self.node_space, dtype=np.uint32))
            del codes
        self.source_of = graph.edge_source
        self.target = graph.edge_target
        # Edge e weighs weights[weight_codes[e]] (the cost graph's `RecordField`).
        self.weight_codes, self.weights = graph.edge_weight.codes, graph.edge_weight.values
        # Only device-box edges change space, so they alone get an entry: (start, end).
        self.edge_space: dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {}
        for edge, data in graph.edge_extra.items():
            if graph.edge_kind[edge] is EdgeKind.DEVICE_BOX:
                self.edge_space[edge] = (
                    _by_world(data.get("space_start", ())),
                    _by_world(data.get("space_end", ())),
                )

    def out_edges(self, node: int) -> list[int]:
        """Node `node`'s out-edges, in order (a fresh list)."""
        return list(self.order[self.start[node]:self.start[node + 1]])


def _by_world(changes: SpaceChanges) -> tuple[int, int] | None:
    """Sum a node's or edge's space changes into (CPU words, GPU words); None for no change."""
    cpu = gpu = 0
    for world, words in changes:
        if world is _CPU:
            cpu += words
        else:
            gpu += words
    return (cpu, gpu) if cpu or gpu else None


def _depth_first(index: _GraphIndex) -> tuple[array[int], array[int]]:
    """Each edge's position in the sequential depth-first order (the 1DF priority, §6.3), and the
    edges in that order: typed arrays (4 bytes an edge, where a list of fresh ints costs 40,
    about 100 MB at a million edges). An edge into a node of one in-edge and one out-edge goes
    on to that out-edge at once (`_chain_followers`: most edges of a cost graph are steps of a
    chain), without counting the node's in-edges down."""
    import numpy as np

    from graphs.costgraph import NUMBER_DTYPE

    order, start, targets = index.order, index.start, index.target
    compiled = compiled_passes(len(targets))
    if compiled is not None:
        numbers = array(NUMBER, [-1]) * len(targets)
        in_order = array(NUMBER, [0]) * len(targets)
        with memoryview(numbers) as numbers_memory, memoryview(in_order) as in_order_memory:
            count = compiled.depth_first_numbers(
                numpy_view(order), numpy_view(start), numpy_view(index.in_degree),
                numpy_view(targets), index.source,
                np.frombuffer(numbers_memory, dtype=NUMBER_DTYPE),
                np.frombuffer(in_order_memory, dtype=NUMBER_DTYPE))
    else:
        numbers, count = _depth_first_numbers(index)
    # Every node was reached if every edge was (each is numbered once, when its source is) and
    # only the source has no in-edge; the nodes that fail this are listed only for the message.
    sources = 1 if index.in_degree[index.source] == 0 else 0
    numbered = np.frombuffer(numbers, dtype=NUMBER_DTYPE)
    if count != len(numbers) or index.in_degree.count(0) != sources:
        waiting = np.frombuffer(index.in_degree, dtype=NUMBER_DTYPE) == 0
        waiting[index.source] = False
        waiting[np.frombuffer(targets, dtype=NUMBER_DTYPE)[numbered < 0]] = True
        unreached = np.flatnonzero(waiting)[:5].tolist()
        raise ValueError(f"the cost graph has nodes its source does not reach: {unreached}")
    if compiled is not None:
        return numbers, in_order
    in_order = array(NUMBER, [0]) * len(numbers)
    with memoryview(in_order) as memory:
        placed = np.frombuffer(memory, dtype=NUMBER_DTYPE)
        for low in range(0, len(numbers), CHUNK):  # a few MB of temporaries at a time
            high = min(low + CHUNK, len(numbers))
            placed[numbered[low:high]] = np.arange(low, high, dtype=NUMBER_DTYPE)
        del placed
    del numbered
    return numbers, in_order


def _depth_first_numbers(index: _GraphIndex) -> tuple[array[int], int]:
    """`_depth_first`'s numbering in Python: each edge's position in the depth-first order (-1
    where the source does not reach it), and how many edges were numbered."""
    followers = _chain_followers(index)  # first: its temporaries go before the arrays come
    remaining = index.in_degree[:]
    numbers = array(NUMBER, [-1]) * len(index.target)
    order, start, targets = index.order, index.start, index.target
    stack = index.out_edges(index.source)
    stack.reverse()
    count = 0
    while stack:
        edge = stack.pop()
        while True:
            numbers[edge] = count
            count += 1
            follower = followers[edge]
            if follower >= 0:
                edge = follower
                continue
            target = targets[edge]
            remaining[target] -= 1
            if remaining[target]:
                break
            first, last = start[target], start[target + 1]
            if last - first != 1:
                stack.extend(reversed(order[first:last]))
                break
            # A node of one out-edge (most are) goes on to it at once, as the stack would.
            edge = order[first]
    return numbers, count


def _chain_followers(index: _GraphIndex) -> array[int]:
    """For each edge, the only out-edge of its target where the target has one in-edge and one
    out-edge (a step of a chain), else -1: made with numpy, 4 bytes an edge."""
    import numpy as np

    from graphs.costgraph import NUMBER_DTYPE

    start = np.frombuffer(index.start, dtype=NUMBER_DTYPE)
    chained = (np.diff(start) == 1) & (np.frombuffer(index.in_degree, dtype=NUMBER_DTYPE) == 1)
    out_edge = np.full(index.count, -1, dtype=NUMBER_DTYPE)
    out_edge[chained] = np.frombuffer(index.order, dtype=NUMBER_DTYPE)[start[:-1][chained]]
    del chained
    followers = array(NUMBER, [0]) * len(index.target)
    with memoryview(followers) as memory:
        take_in_chunks(out_edge, np.frombuffer(index.target, dtype=NUMBER_DTYPE),
                       np.frombuffer(memory, dtype=NUMBER_DTYPE))
    return followers


class _Simulation:
    """Greedy list scheduling of the edges of one cost graph, event by event."""

    def __init__(self, index: _GraphIndex, procs: int, policy: Policy, numbers: Sequence[int],
                 by_number: Sequence[int], record: bool, keep_steps: bool = True) -> None:
        self.index = index
        self.procs = procs
        self.policy = policy
        self.record = record  # keep the tasks and the space trace
        self.keep_steps = record and keep_steps  # and the steps
        self.step_count = 0
        self.numbers = numbers
        self.by_number = by_number
        self.remaining = index.in_degree[:]
        # 1df and bf keep one priority queue of integer keys that decode to a 1DF number;
        # bf's key puts the instant the task became ready first, so it is FIFO by instant.
        self.ready: list[int] = []
        self.free = list(range(procs))
        self.deques: list[deque[int]] = [deque() for _ in range(procs)]
        self.queued = 0  # tasks waiting in all the deques (ws)
        self.idle = set(range(procs))  # ws
        self.events: list[tuple[float, int, int]] = []  # (end, processor, edge)
        self.space_cpu = 0
        self.space_gpu = 0
        self.peak_cpu = self.peak_gpu = self.peak_total = 0
        self.step_nodes: list[int] = []
        self.steps: list[Step] = []
        self.stepped_at: float = 0  # the time of the latest step
        # Per processor, in the order they start (ScheduleResult.tasks).
        self.task_instants: list[array[int]] = [array(NUMBER) for _ in range(procs)]
        self.task_edges: list[array[int]] = [array(NUMBER) for _ in range(procs)]
        self.times: list[float] = []  # each instant's time, while recording (Tasks.times)
        self.space_trace = SpaceTrace(self.times)
        self.traced = (0, 0)  # the space of the last entry of space_trace
        self.now: float = 0  # the instant being simulated

    def run(self) -> ScheduleResult:
        """The schedule: `_run_by_priority` under 1df and bf; under work stealing, this loop."""
        if self.policy is not Policy.WORK_STEALING:
            return self._run_by_priority()
        index = self.index
        target, edge_space, remaining, events = (index.target, index.edge_space, self.remaining,
                                                 self.events)
        steps, step_nodes, record, keep_steps = (self.steps, self.step_nodes, self.record,
                                                 self.keep_steps)
        times = self.times
        time: float = 0
        if record:
            times.append(time)
        self.make_ready(self.reach(index.source), 0)
        busy = self.dispatch_work_stealing(time)
        self.close_instant(time, busy)
        while events:
            time = self.now = events[0][0]
            if record:
                times.append(time)
            # The heap breaks ties by processor, so completions are handled in processor order.
            # Handling one only starts tasks once all are handled, so each is handled as popped.
            while events and events[0][0] == time:
                _, processor, edge = heapq.heappop(events)
                busy -= 1
                self.idle.add(processor)
                if edge in edge_space:
                    self.change_space(edge, 1)
                node = target[edge]
                remaining[node] -= 1
                if not remaining[node]:
                    self.make_ready(self.reach(node), processor)
            busy += self.dispatch_work_stealing(time)
            cpu, gpu = self.space_cpu, self.space_gpu
            self.sample_peak()
            if step_nodes:
                self.step_count += 1
                if keep_steps:
                    steps.append(_new_step(time, time - self.stepped_at, tuple(step_nodes), cpu,
                                           gpu, busy))
                self.stepped_at = time
                step_nodes.clear()
            if record and (cpu, gpu) != self.traced:
                self.trace(time)
        return ScheduleResult(
            policy=self.policy,
            procs=self.procs,
            time=self.stepped_at,
            steps=tuple(self.steps),
            peak_space_cpu=self.peak_cpu,
            peak_space_gpu=self.peak_gpu,
            peak_space=self.peak_total,
            tasks=Tasks(self.task_instants, self.task_edges, times, index.weight_codes,
                        index.weights, index.source_of, target)
            if record else None,
            space_trace=self.space_trace if record else (),
            step_count=self.step_count,
        )

    def _run_by_priority(self) -> ScheduleResult:
        """`run` under 1df and bf: one ready heap of keys, free processors taken lowest first.
        Everything a task or an instant touches is a local name (the space, its peaks, the
        step count, the clock), and `reach` is written out: at a million tasks in 700 000
        instants, attribute and method look-ups cost a third of the loop's time. Device boxes,
        whose edges change space when they start and end (`change_space`), are rare: their
        state goes through `_box_space`."""
        index = self.index
        weight_codes, weights = index.weight_codes, index.weights
        target, order, start = index.target, index.order, index.start
        node_space, space_changes, edge_space = (index.node_space, index.space_changes,
                                                 index.edge_space)
        remaining, events, free, ready = self.remaining, self.events, self.free, self.ready
        numbers, by_number, count = self.numbers, self.by_number, len(self.numbers)
        task_instants, task_edges, times = self.task_instants, self.task_edges, self.times
        steps, step_nodes, space_trace = self.steps, self.step_nodes, self.space_trace
        record, keep_steps = self.record, self.keep_steps
        instant_appends = [tasks.append for tasks in task_instants]  # by processor
        edge_appends = [tasks.append for tasks in task_edges]
        breadth_first = self.policy is Policy.BREADTH_FIRST
        heappush, heappop = heapq.heappush, heapq.heappop
        cpu = gpu = peak_cpu = peak_gpu = peak_total = traced_cpu = traced_gpu = 0
        step_count = 0
        stepped_at: float = 0  # the time of the latest step
        time: float = 0
        at = 0  # the instant's index in `times`
        if record:
            times.append(time)
        instant = 0
        base = 0  # a ready task's key: its 1DF number, after the instant it became ready (bf)
        busy = 0
        first_node = index.source  # the node the first instant reaches (-1 once reached)
        while True:
            # The heap breaks ties by processor, so completions are handled in processor order,
            # each before the next is popped (a device box's end samples the space then).
            while True:
                if first_node >= 0:
                    node, first_node = first_node, -1
                else:
                    if not events or events[0][0] != time:
                        break
                    _, processor, edge = heappop(events)
                    busy -= 1
                    heappush(free, processor)
                    if edge in edge_space:
                        state = [cpu, gpu, peak_cpu, peak_gpu, peak_total, traced_cpu, traced_gpu]
                        self._box_space(edge, 1, state, step_count, time)
                        cpu, gpu, peak_cpu, peak_gpu, peak_total, traced_cpu, traced_gpu = state
                    node = target[edge]
                    remaining[node] -= 1
                    if remaining[node]:
                        continue
                    first = start[node]
                    if (start[node + 1] - first == 1 and weights[weight_codes[order[first]]] > 0
                            and not node_space[node]):
                        # Most nodes: one out-edge, of positive weight, and no space change.
                        step_nodes.append(node)
                        heappush(ready, base + numbers[order[first]])
                        continue
                # `reach`, written out: the node and what its weight-0 edges reach at once.
                step_nodes.append(node)
                change = node_space[node]
                if change:
                    cpu += space_changes[change][0]
                    gpu += space_changes[change][1]
                first, last = start[node], start[node + 1]
                if last - first == 1:  # most nodes have one out-edge: no stack needed for them
                    edge = order[first]
                    if weights[weight_codes[edge]] > 0:
                        heappush(ready, base + numbers[edge])
                        continue
                    stack = [edge]
                else:
                    stack = list(order[first:last])
                    stack.reverse()
                while stack:
                    edge = stack.pop()
                    if weights[weight_codes[edge]] > 0:
                        heappush(ready, base + numbers[edge])
                        continue
                    if edge in edge_space:
                        state = [cpu, gpu, peak_cpu, peak_gpu, peak_total, traced_cpu, traced_gpu]
                        self._box_space(edge, 0, state, step_count, time)
                        self._box_space(edge, 1, state, step_count, time)
                        cpu, gpu, peak_cpu, peak_gpu, peak_total, traced_cpu, traced_gpu = state
                    node = target[edge]
                    remaining[node] -= 1
                    if remaining[node] == 0:
                        step_nodes.append(node)
                        change = node_space[node]
                        if change:
                            cpu += space_changes[change][0]
                            gpu += space_changes[change][1]
                        stack.extend(reversed(order[start[node]:start[node + 1]]))
            # Give every free processor a ready task, while there are any (greedy).
            while ready and free:
                processor = heappop(free)
                edge = by_number[heappop(ready) % count]
                if edge in edge_space:
                    state = [cpu, gpu, peak_cpu, peak_gpu, peak_total, traced_cpu, traced_gpu]
                    self._box_space(edge, 0, state, step_count, time)
                    cpu, gpu, peak_cpu, peak_gpu, peak_total, traced_cpu, traced_gpu = state
                heappush(events, (time + weights[weight_codes[edge]], processor, edge))
                busy += 1
                if record:
                    instant_appends[processor](at)
                    edge_appends[processor](edge)
            # Close the instant: sample space (eq. 9's max) and, if some node was reached,
            # record the step (eq. 3), with `busy` processors running a task.
            if cpu > peak_cpu:
                peak_cpu = cpu
            if gpu > peak_gpu:
                peak_gpu = gpu
            if cpu + gpu > peak_total:
                peak_total = cpu + gpu
            if step_nodes:
                step_count += 1
                if keep_steps:
                    steps.append(_new_step(time, time - stepped_at, tuple(step_nodes), cpu, gpu,
                                           busy))
                stepped_at = time
                step_nodes.clear()
            if record and (cpu != traced_cpu or gpu != traced_gpu):
                traced_cpu, traced_gpu = cpu, gpu
                space_trace.append(max(0, step_count - 1), at, cpu, gpu)
            if not events:
                break
            time = events[0][0]
            if record:
                at = len(times)
                times.append(time)
            instant += 1
            if breadth_first:
                base = instant * count
        self.step_count = step_count
        return ScheduleResult(
            policy=self.policy,
            procs=self.procs,
            time=stepped_at,
            steps=tuple(steps),
            peak_space_cpu=peak_cpu,
            peak_space_gpu=peak_gpu,
            peak_space=peak_total,
            tasks=Tasks(task_instants, task_edges, times, weight_codes, weights,
                        index.source_of, target)
            if record else None,
            space_trace=space_trace if record else (),
            step_count=step_count,
        )

    def _box_space(self, edge: int, end: int, state: list[int], step_count: int,
                   time: float) -> None:
        """`change_space` for `_run_by_priority`, on its state: [CPU words, GPU words, the
        three peaks, the CPU and GPU words of the last space_trace entry], changed in place."""
        self.space_cpu, self.space_gpu, self.peak_cpu, self.peak_gpu, self.peak_total = state[:5]
        self.traced = (state[5], state[6])
        self.step_count, self.now = step_count, time
        self.change_space(edge, end)
        state[:] = [self.space_cpu, self.space_gpu, self.peak_cpu, self.peak_gpu,
                    self.peak_total, *self.traced]

    # -- the graph ----------------------------------------------------------------------------------
    def reach(self, node: int) -> list[int]:
        """Reach `node` and everything its weight-0 edges reach at once; return the tasks of
        positive weight this enables, in depth-first order (so `ws` continues with the first)."""
        index = self.index
        weight_codes, weights = index.weight_codes, index.weights
        target, node_space, edge_space = index.target, index.node_space, index.edge_space
        order, start, remaining = index.order, index.start, self.remaining
        step_nodes = self.step_nodes
        enabled: list[int] = []
        step_nodes.append(node)  # enter(node), written out
        if node_space[node]:
            change = index.space_changes[node_space[node]]
            self.space_cpu += change[0]
            self.space_gpu += change[1]
        first, last = start[node], start[node + 1]
        if last - first == 1:  # most nodes have one out-edge: no stack needed for them
            edge = order[first]
            if weights[weight_codes[edge]] > 0:
                return [edge]
            stack = [edge]
        else:
            stack = list(order[first:last])
            stack.reverse()
        while stack:
            edge = stack.pop()
            if weights[weight_codes[edge]] > 0:
                enabled.append(edge)
                continue
            if edge in edge_space:
                self.change_space(edge, 0)
                self.change_space(edge, 1)
            node = target[edge]
            remaining[node] -= 1
            if remaining[node] == 0:
                step_nodes.append(node)
                if node_space[node]:
                    change = index.space_changes[node_space[node]]
                    self.space_cpu += change[0]
                    self.space_gpu += change[1]
                stack.extend(reversed(order[start[node]:start[node + 1]]))
        return enabled

    def sample_peak(self) -> None:
        cpu, gpu = self.space_cpu, self.space_gpu
        if cpu > self.peak_cpu:
            self.peak_cpu = cpu
        if gpu > self.peak_gpu:
            self.peak_gpu = gpu
        if cpu + gpu > self.peak_total:
            self.peak_total = cpu + gpu

    def change_space(self, edge: int, end: int) -> None:
        """Apply a device-box edge's space_start (end=0) or space_end (end=1)."""
        changes = self.index.edge_space.get(edge)
        change = changes[end] if changes is not None else None
        if change is not None:
            self.space_cpu += change[0]
            self.space_gpu += change[1]
            if end:
                # The end of a device box is the moment both the GPU copies and the CPU regions
                # they merge into are alive (§7.1.2): sample it before the target node frees the
                # GPU copies in the same instant.
                self.sample_peak()
                if self.record:
                    self.trace(self.now)

    # -- the processors -----------------------------------------------------------------------------
    def make_ready(self, enabled: list[int], processor: int) -> None:
        """Work first (ws): the enabling processor runs the first child next and thieves take
        the others from the far (oldest) end."""
        if enabled:
            self.deques[processor].extend(reversed(enabled))
            self.queued += len(enabled)

    def dispatch_work_stealing(self, time: float) -> int:
        """`dispatch` under work stealing."""
        if not self.queued or not self.idle:
            return 0
        deques = self.deques
        thieves = []
        started = 0
        for processor in sorted(self.idle):
            own = deques[processor]
            if own:
                self.idle.discard(processor)
                self.queued -= 1
                self.start(processor, own.pop(), time)
                started += 1
            else:
                thieves.append(processor)
        for processor in thieves:
            if not self.queued:
                break
            for offset in range(1, self.procs):
                victim = deques[(processor + offset) % self.procs]
                if victim:
                    self.idle.discard(processor)
                    self.queued -= 1
                    self.start(processor, victim.popleft(), time)
                    started += 1
                    break
        return started

    def start(self, processor: int, edge: int, time: float) -> None:
        end = time + self.index.weights[self.index.weight_codes[edge]]
        self.change_space(edge, 0)
        heapq.heappush(self.events, (end, processor, edge))
        if self.record:  # `time` is the latest of `times` (`run` appends each instant's)
            self.task_instants[processor].append(len(self.times) - 1)
            self.task_edges[processor].append(edge)

    # -- steps --------------------------------------------------------------------------------------
    def close_instant(self, time: float, busy: int) -> None:
        """Sample space (eq. 9's max) and, if some node was reached, record the step (eq. 3),
        with `busy` processors running a task."""
        self.sample_peak()
        if self.step_nodes:
            self.step_count += 1
            if self.keep_steps:
                self.steps.append(Step(time, time - self.stepped_at, tuple(self.step_nodes),
                                       self.space_cpu, self.space_gpu, busy))
            self.stepped_at = time
            self.step_nodes.clear()
        if self.record and (self.space_cpu, self.space_gpu) != self.traced:
            self.trace(time)

    def trace(self, time: float) -> None:
        """Record the space now (ScheduleResult.space_trace), if it changed."""
        if (self.space_cpu, self.space_gpu) == self.traced:
            return
        self.traced = (self.space_cpu, self.space_gpu)
        # `time` is the instant's, the last of `times` (`run` appends each instant's first).
        self.space_trace.append(max(0, self.step_count - 1), len(self.times) - 1,
                                self.space_cpu, self.space_gpu)


# -- the compiled simulation (graphs.compiled) ---------------------------------------------------
_EXACT_INTS = 2**53  # a double holds every int below this exactly
_EXACT_SPACE = 2**62  # the compiled simulation keeps space in 64-bit ints


def _fits_compiled(index: _GraphIndex) -> bool:
    """Whether the compiled simulation gives this graph's schedule exactly: large enough
    (`graphs.passes.COMPILED_FROM`), every weight a finite float or an int, the ints adding
    up (over every edge, so over any path and any instant's clock) to less than 2^53, where a
    double is exact; the space changes to less than 2^62; and `graphs.compiled` loads."""
    import math


    if len(index.target) < passes.COMPILED_FROM:
        return False
    weights = index.weights
    if not all(type(w) is int or (type(w) is float and math.isfinite(w)) for w in weights):
        return False
    ints = [w if type(w) is int else 0 for w in weights]
    if any(ints) and exact_total(index.weight_codes, ints) >= _EXACT_INTS:
        return False
    total = exact_total(index.node_space, [abs(cpu) + abs(gpu) for cpu, gpu in
                                           index.space_changes])
    total += sum(abs(cpu) + abs(gpu) for changes in index.edge_space.values()
                 for change in changes if change is not None for cpu, gpu in [change])
    if total >= _EXACT_SPACE:
        return False
    return compiled_passes(len(index.target)) is not None


def _run_compiled(index: _GraphIndex, procs: int, policy: Policy, numbers: array[int],
                  by_number: array[int], record: bool, keep_steps: bool) -> ScheduleResult:
    """`_Simulation._run_by_priority`'s schedule, simulated by `graphs.compiled` (where
    `_fits_compiled`): the same result, number for number, each time an int where Python's
    would be one."""
    import numpy as np

    compiled = compiled_passes(len(index.target))
    assert compiled is not None
    keep_steps = record and keep_steps
    weights = index.weights
    weight_values = np.array([float(w) for w in weights], dtype=np.float64)
    weight_ints = np.array([type(w) is int for w in weights], dtype=np.bool_)
    codes = numpy_view(index.weight_codes)
    positive = weight_values > 0
    tasks = int(sum(np.count_nonzero(positive[codes[low:low + CHUNK]])
                    for low in range(0, len(codes), CHUNK)))
    box_edges = np.array(sorted(index.edge_space), dtype=np.int64)
    box_changes = np.zeros((len(box_edges), 2, 2), dtype=np.int64)
    box_has = np.zeros((len(box_edges), 2), dtype=np.bool_)
    for row, edge in enumerate(box_edges.tolist()):
        for end, change in enumerate(index.edge_space[edge]):
            if change is not None:
                box_changes[row, end] = change
                box_has[row, end] = True
    (stepped_at, stepped_int, peak_cpu, peak_gpu, peak_total, step_count, clock, clock_ints,
     bounds, instants, edges, trace, step_rows, step_starts,
     step_nodes) = compiled.simulate_by_priority(
        numpy_view(index.order), numpy_view(index.start), numpy_view(index.in_degree),
        numpy_view(index.target),
        codes, weight_values, weight_ints, numpy_view(index.node_space),
        np.array(index.space_changes, dtype=np.int64).reshape(-1, 2), box_edges, box_changes,
        box_has, numpy_view(numbers), numpy_view(by_number), index.source, tasks, procs,
        policy is Policy.BREADTH_FIRST, record, keep_steps)
    del codes
    # Each typed result as soon as its numpy arrays can go: the times, a Python number an
    # instant as the Python simulation keeps them, last.
    bounds = bounds.tolist()
    task_instants = [_typed(instants[low:high], NUMBER)
                     for low, high in zip(bounds[:-1], bounds[1:], strict=True)]
    del instants
    task_edges = [_typed(edges[low:high], NUMBER)
                  for low, high in zip(bounds[:-1], bounds[1:], strict=True)]
    del edges
    trace_columns = [_typed(np.ascontiguousarray(column, dtype=f"i{itemsize}"), typecode)
                     for column, (typecode, itemsize) in zip(
                         trace.T, ((NUMBER, 4), (NUMBER, 4), ("q", 8), ("q", 8)), strict=True)]
    del trace
    times: Sequence[float] = Clock(clock, clock_ints) if record else []
    del clock, clock_ints
    space_trace = SpaceTrace(times)
    space_trace.steps, space_trace.instants, space_trace.cpu, space_trace.gpu = trace_columns
    steps: list[Step] = []
    if keep_steps:
        previous: float = 0
        for (at, cpu, gpu, busy), low, high in zip(step_rows.tolist(), step_starts[:-1].tolist(),
                                                   step_starts[1:].tolist(), strict=True):
            time = times[at]
            steps.append(_new_step(time, time - previous, tuple(step_nodes[low:high].tolist()),
                                   cpu, gpu, busy))
            previous = time
    return ScheduleResult(
        policy=policy,
        procs=procs,
        time=int(stepped_at) if stepped_int else float(stepped_at),
        steps=tuple(steps),
        peak_space_cpu=int(peak_cpu),
        peak_space_gpu=int(peak_gpu),
        peak_space=int(peak_total),
        tasks=Tasks(task_instants, task_edges, times, index.weight_codes, weights,
                    index.source_of, index.target) if record else None,
        space_trace=space_trace if record else (),
        step_count=int(step_count),
    )


def _typed(values: np.ndarray, typecode: str) -> array[int]:
    """A numpy array of ints as a typed array of `typecode` (the same item size)."""
    import numpy as np

    result = array(typecode)
    result.frombytes(np.ascontiguousarray(values).view(np.uint8))  # type: ignore[arg-type]
    return result


def _python_numbers(values: np.ndarray, ints: np.ndarray) -> list[float]:
    """Doubles as the Python numbers they stand for: an int where `ints` says so, else a float."""
    import numpy as np

    if ints.all():
        return values.astype(np.int64).tolist()
    if not ints.any():
        return values.tolist()
    return [int(value) if is_int else value
            for value, is_int in zip(values.tolist(), ints.tolist(), strict=True)]
