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
from collections import deque
from dataclasses import dataclass
from enum import Enum
from operator import itemgetter

from graphs.costgraph import CostGraph, EdgeKind
from profiler.syntax import World

SpaceChanges = tuple[tuple[World, int], ...]


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


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """A CPU schedule ⊴ of a cost graph on `procs` processors and what it costs.

    `time` is time(e, ⊴) (§6.7, Σ of eq. 5 over the steps), the makespan. The peaks are
    space_τ(⊴) of eq. 9. They are sampled at the end of every instant at which the simulation
    does something, which includes each step; an instant that is not a step (a device-box edge
    starting right after an edge into a join that is not yet reached) can raise the peak above
    the largest `Step.space`. `intervals` holds (processor, start, end, u, v) for each edge of
    positive weight, sorted by processor and start.
    """

    policy: Policy
    procs: int
    time: float
    steps: tuple[Step, ...]
    peak_space_cpu: int
    peak_space_gpu: int
    peak_space: int
    intervals: tuple[tuple[int, float, float, int, int], ...]

    def processor_intervals(self, processor: int) -> list[tuple[float, float, int, int]]:
        """The (start, end, u, v) tasks that `processor` ran, in order."""
        return [(start, end, u, v) for p, start, end, u, v in self.intervals if p == processor]


def schedule(graph: CostGraph, procs: int, policy: Policy | str) -> ScheduleResult:
    """Schedule `graph` greedily on `procs` processors under `policy` (§6.3, eqs. 3-5, 8-9)."""
    if procs < 1:
        raise ValueError(f"a schedule needs at least one processor, not {procs}")
    policy = Policy(policy)
    index = _GraphIndex(graph)
    return _Simulation(index, procs, policy, _depth_first_numbers(index)).run()


def depth_first_order(graph: CostGraph) -> tuple[tuple[int, int], ...]:
    """The edges in the order a one-processor, left-to-right depth-first execution runs them.

    This is the priority order of the 1DF schedule: a node is entered when its last incoming
    edge is done, and its first outgoing edge (in insertion order) is run next.
    """
    index = _GraphIndex(graph)
    order = sorted(range(len(index.target)), key=_depth_first_numbers(index).__getitem__)
    return tuple((index.nodes[index.source_of[e]], index.nodes[index.target[e]]) for e in order)


class _GraphIndex:
    """The cost graph as flat lists indexed by position, which the simulation's loop needs."""

    def __init__(self, graph: CostGraph) -> None:
        if graph.source is None:
            raise ValueError("the cost graph has no source; call CostGraph.finish first")
        g = graph.graph
        self.nodes: list[int] = list(g)
        position = {node: i for i, node in enumerate(self.nodes)}
        self.source = position[graph.source]
        self.out_edges: list[list[int]] = [[] for _ in self.nodes]
        self.in_degree = [0] * len(self.nodes)
        self.node_space: list[tuple[int, int] | None] = [
            _by_world(data.get("space", ())) for _, data in g.nodes(data=True)
        ]
        self.source_of: list[int] = []
        self.target: list[int] = []
        self.weight: list[float] = []
        # Only device-box edges change space, so they alone get an entry: (start, end).
        self.edge_space: dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {}
        for u, neighbours in g.adjacency():
            for v, data in neighbours.items():
                edge = len(self.target)
                self.source_of.append(position[u])
                self.target.append(position[v])
                self.weight.append(data["weight"])
                self.out_edges[position[u]].append(edge)
                self.in_degree[position[v]] += 1
                if data.get("kind") is EdgeKind.DEVICE_BOX:
                    self.edge_space[edge] = (
                        _by_world(data.get("space_start", ())),
                        _by_world(data.get("space_end", ())),
                    )


def _by_world(changes: SpaceChanges) -> tuple[int, int] | None:
    """Sum a node's or edge's space changes into (CPU words, GPU words); None for no change."""
    cpu = gpu = 0
    for world, words in changes:
        if world is World.CPU:
            cpu += words
        else:
            gpu += words
    return (cpu, gpu) if cpu or gpu else None


def _depth_first_numbers(index: _GraphIndex) -> list[int]:
    """Each edge's position in the sequential depth-first order (the 1DF priority, §6.3)."""
    remaining = list(index.in_degree)
    numbers = [-1] * len(index.target)
    stack = list(reversed(index.out_edges[index.source]))
    count = 0
    while stack:
        edge = stack.pop()
        numbers[edge] = count
        count += 1
        target = index.target[edge]
        remaining[target] -= 1
        if remaining[target] == 0:
            stack.extend(reversed(index.out_edges[target]))
    unreached = [
        index.nodes[n]
        for n in range(len(index.nodes))
        if remaining[n] or (index.in_degree[n] == 0 and n != index.source)
    ]
    if count != len(numbers) or unreached:
        raise ValueError(f"the cost graph has nodes its source does not reach: {unreached[:5]}")
    return numbers


class _Simulation:
    """Greedy list scheduling of the edges of one cost graph, event by event."""

    def __init__(self, index: _GraphIndex, procs: int, policy: Policy, numbers: list[int]) -> None:
        self.index = index
        self.procs = procs
        self.policy = policy
        self.numbers = numbers
        self.by_number = [0] * len(numbers)
        for edge, number in enumerate(numbers):
            self.by_number[number] = edge
        self.remaining = list(index.in_degree)
        # 1df and bf keep one priority queue of integer keys that decode to a 1DF number;
        # bf's key puts the instant the task became ready first, so it is FIFO by instant.
        self.ready: list[int] = []
        self.free = list(range(procs))
        self.deques: list[deque[int]] = [deque() for _ in range(procs)]
        self.queued = 0  # tasks waiting in all the deques (ws)
        self.idle = set(range(procs))  # ws
        self.instant = 0  # how many distinct event times have passed (bf's FIFO clock)
        self.events: list[tuple[float, int, int]] = []  # (end, processor, edge)
        self.busy = 0
        self.space_cpu = 0
        self.space_gpu = 0
        self.peak_cpu = self.peak_gpu = self.peak_total = 0
        self.step_nodes: list[int] = []
        self.steps: list[Step] = []
        self.intervals: list[tuple[int, float, float, int, int]] = []

    def run(self) -> ScheduleResult:
        time: float = 0
        self.make_ready(self.reach(self.index.source), 0)
        self.dispatch(time)
        self.close_instant(time)
        events = self.events
        while events:
            time = events[0][0]
            self.instant += 1
            finished = []
            while events and events[0][0] == time:
                _, processor, edge = heapq.heappop(events)
                finished.append((processor, edge))
            # The heap breaks ties by processor, so completions are handled in processor order.
            for processor, edge in finished:
                self.busy -= 1
                if self.policy is Policy.WORK_STEALING:
                    self.idle.add(processor)
                else:
                    heapq.heappush(self.free, processor)
                self.make_ready(self.complete(edge), processor)
            self.dispatch(time)
            self.close_instant(time)
        return ScheduleResult(
            policy=self.policy,
            procs=self.procs,
            time=self.steps[-1].time,
            steps=tuple(self.steps),
            peak_space_cpu=self.peak_cpu,
            peak_space_gpu=self.peak_gpu,
            peak_space=self.peak_total,
            intervals=tuple(sorted(self.intervals, key=itemgetter(0))),
        )

    # -- the graph ----------------------------------------------------------------------------------
    def reach(self, node: int) -> list[int]:
        """Reach `node` and everything its weight-0 edges reach at once; return the tasks of
        positive weight this enables, in depth-first order (so `ws` continues with the first)."""
        index = self.index
        enabled: list[int] = []
        self.enter(node)
        stack = list(reversed(index.out_edges[node]))
        while stack:
            edge = stack.pop()
            if index.weight[edge] > 0:
                enabled.append(edge)
                continue
            self.change_space(edge, 0)
            self.change_space(edge, 1)
            target = index.target[edge]
            self.remaining[target] -= 1
            if self.remaining[target] == 0:
                self.enter(target)
                stack.extend(reversed(index.out_edges[target]))
        return enabled

    def enter(self, node: int) -> None:
        """Mark `node` reached now, applying its space changes (eq. 8)."""
        self.step_nodes.append(self.index.nodes[node])
        change = self.index.node_space[node]
        if change is not None:
            self.space_cpu += change[0]
            self.space_gpu += change[1]

    def sample_peak(self) -> None:
        cpu, gpu = self.space_cpu, self.space_gpu
        self.peak_cpu = max(self.peak_cpu, cpu)
        self.peak_gpu = max(self.peak_gpu, gpu)
        self.peak_total = max(self.peak_total, cpu + gpu)

    def complete(self, edge: int) -> list[int]:
        self.change_space(edge, 1)
        target = self.index.target[edge]
        self.remaining[target] -= 1
        if self.remaining[target] == 0:
            return self.reach(target)
        return []

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

    # -- the processors -----------------------------------------------------------------------------
    def make_ready(self, enabled: list[int], processor: int) -> None:
        if not enabled:
            return
        if self.policy is Policy.DEPTH_FIRST:
            for edge in enabled:
                heapq.heappush(self.ready, self.numbers[edge])
        elif self.policy is Policy.BREADTH_FIRST:
            base = self.instant * len(self.numbers)
            for edge in enabled:
                heapq.heappush(self.ready, base + self.numbers[edge])
        else:
            # Work first: the enabling processor runs the first child next and thieves take
            # the others from the far (oldest) end.
            self.deques[processor].extend(reversed(enabled))
            self.queued += len(enabled)

    def dispatch(self, time: float) -> None:
        """Give every free processor a ready task, while there are any (greedy)."""
        if self.policy is Policy.WORK_STEALING:
            self.dispatch_work_stealing(time)
            return
        ready, free, count = self.ready, self.free, len(self.numbers)
        while ready and free:
            processor = heapq.heappop(free)
            self.start(processor, self.by_number[heapq.heappop(ready) % count], time)

    def dispatch_work_stealing(self, time: float) -> None:
        if not self.queued or not self.idle:
            return
        deques = self.deques
        thieves = []
        for processor in sorted(self.idle):
            own = deques[processor]
            if own:
                self.idle.discard(processor)
                self.queued -= 1
                self.start(processor, own.pop(), time)
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
                    break

    def start(self, processor: int, edge: int, time: float) -> None:
        end = time + self.index.weight[edge]
        self.change_space(edge, 0)
        heapq.heappush(self.events, (end, processor, edge))
        self.busy += 1
        index = self.index
        self.intervals.append(
            (
                processor,
                time,
                end,
                index.nodes[index.source_of[edge]],
                index.nodes[index.target[edge]],
            )
        )

    # -- steps --------------------------------------------------------------------------------------
    def close_instant(self, time: float) -> None:
        """Sample space (eq. 9's max) and, if some node was reached, record the step (eq. 3)."""
        cpu, gpu = self.space_cpu, self.space_gpu
        self.sample_peak()
        if self.step_nodes:
            previous = self.steps[-1].time if self.steps else time
            self.steps.append(
                Step(time, time - previous, tuple(self.step_nodes), cpu, gpu, self.busy)
            )
            self.step_nodes = []
