"""Device boxes (§6.4, Figs. 7-8): GPU cost paths grouped into warps and work groups.

On the GPU world the evaluator does not build a DAG but *cost paths* (threads), with `PathBuilder`:
each `parmap` at the top of an `on` body becomes a parallel *phase* (a kernel, one thread per
element), and serial code around it a one-thread phase. `build_device_box` groups each phase's paths
into warps of width w and warps into work groups (warp boxes) of `work_group_size` threads, steps the
warps of a group in lock-step, weighs each warp-box step with the GPU model (Δ(W^j, W^{j+1}) of
§6.4), and takes the box's time as its longest path. Work groups beyond the H threads the GPU runs
at once wait for later rounds (the ⌈(n/H)/k⌉ of §7.1.2).

Reconstructed, and why: the paper's paths are "the distinct paths through ℰ↓(e)"; taking every path
through a graph with several parallel sections multiplies them, so hetprof keeps one phase per
kernel instead. A `parmap` *inside* a GPU thread (no nested kernels on the GPU) runs sequentially
within that thread.

Threads that took different sides of a data-dependent branch step edge by edge under the paper's
rule (§6.4, `gpu.lockstep` "edge"); by program point ("point") a work group's steps are a merge
of its threads' paths in which a step is one program point, as a SIMT GPU runs a divergent branch
(`warp_columns`, `group_columns`, `point_steps`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, repeat, zip_longest
from operator import attrgetter
from typing import Any, NamedTuple

from graphs.costgraph import EdgeKind
from models.base import AccessKind, GpuModel, MemoryAccess, Space, StepCost
from models.device_profile import GpuParameters
from models.gpu_cache import Traffic, allocation_latencies
from models.roofline import KernelCounts
from profiler.syntax import Span


class PathEdge(NamedTuple):
    """One edge of a GPU cost path. Memory edges carry their access and are priced per warp step;
    other edges carry their weight.

    A named tuple rather than a frozen dataclass (like `graphs.costgraph.Sub`): the evaluator
    makes one for every edge of every GPU thread, and a tuple is made several times faster."""

    kind: EdgeKind
    weight: float
    access: MemoryAccess | None = None
    span: Span | None = None
    centres: tuple[str, ...] = ()
    words: int = 0  # words allocated by this edge (GPU space)
    bookkeeping: bool = False  # a parmap's own read, merge or result vector (no kernel of its own)


# PathEdge(...) runs the named tuple's Python-level __new__; _new_edge((...)) makes the same edge
# in C, for the builder, which runs once per edge.
_new_edge = partial(tuple.__new__, PathEdge)
_new_access = partial(tuple.__new__, MemoryAccess)
_SEQ_EDGE = EdgeKind.SEQ  # a global: Python 3.11 looks up `EdgeKind.SEQ` ten times slower
_WRITE, _LOCAL, _GLOBAL = AccessKind.WRITE, Space.LOCAL, Space.GLOBAL

Path = list[PathEdge]


class TemplateThreads(Sequence[Path]):
    """A kernel's threads that all take one path (`graphs.semantics.batched`): one template of
    edges, each memory edge's address and space given per thread.

    It is the list of the threads' paths: indexing, slicing or iterating makes the `PathEdge`
    lists the explicit evaluator would have built thread by thread, equal edge for edge. The
    device box prices the template itself where its model is stateless (`phase_cost`,
    `count_phase`, `_lockstep_layout`), without making them.

    `edges[j]` is the j-th edge (its access None for a memory edge, whose access is made per
    thread); for a memory edge `kinds[j]` is its access kind, `addresses[j]` its address (one
    int for every thread, or a numpy array over the threads) and `local[j]` whether it goes to
    local memory (one bool, or an array). `writes` gives each write edge in path order as
    (j, region's first address, words a thread allocates there, offset in the thread's words):
    thread t's write j is at first + t·words + offset."""

    def __init__(self, count: int, edges: list[PathEdge], kinds: list, addresses: list,
                 local: list, writes: list[tuple[int, int, int, int]],
                 inside: list[tuple[int, int, int] | None] | None = None):
        self.thread_count = count
        self.edges = edges
        self.kinds = kinds
        self.addresses = addresses
        self.local = local
        self.writes = writes
        # For a memory edge to a word the kernel's own threads allocate: (region's first
        # address, words a thread allocates, offset), as in `writes`; else None.
        self.inside = inside if inside is not None else [None] * len(edges)

    def __len__(self) -> int:
        return self.thread_count

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return self._rows(*index.indices(self.thread_count))
        if index < 0:
            index += self.thread_count
        if not 0 <= index < self.thread_count:
            raise IndexError(index)
        return self._rows(index, index + 1, 1)[0]

    def __iter__(self):
        step = 4096  # made a block at a time, so that iterating holds few paths at once
        for start in range(0, self.thread_count, step):
            yield from self._rows(start, min(self.thread_count, start + step), 1)

    def _rows(self, start: int, stop: int, stride: int) -> list[Path]:
        n = len(range(start, stop, stride))
        if n <= 0:
            return []
        columns: list[Iterable[PathEdge]] = []
        for j, edge in enumerate(self.edges):
            address = self.addresses[j]
            if address is None:
                columns.append([edge] * n)
                continue
            local = self.local[j]
            kind = self.kinds[j]
            if isinstance(address, int) and isinstance(local, bool):
                access = _new_access((kind, address, _LOCAL if local else _GLOBAL))
                columns.append([edge._replace(access=access)] * n)
                continue
            addresses = (address[start:stop:stride].tolist() if not isinstance(address, int)
                         else [address] * n)
            spaces = ([_LOCAL if local else _GLOBAL] * n if isinstance(local, bool) else
                      [_LOCAL if x else _GLOBAL for x in local[start:stop:stride].tolist()])
            template = tuple(edge)
            columns.append([_new_edge(template[:2] + (_new_access((kind, a, space)),)
                                      + template[3:])
                            for a, space in zip(addresses, spaces, strict=True)])
        if not columns:
            return [[] for _ in range(n)]
        return [list(row) for row in zip(*columns, strict=True)]


def _sorted_table(table: dict[int, int], np: Any) -> tuple[Any, Any]:
    keys = sorted(table)
    return np.array(keys, dtype=np.int64), np.array([table[k] for k in keys], dtype=np.int64)


def _lookup(addresses: Any, keys: Any, values: Any, default: Any, np: Any) -> Any:
    """values[keys == a] for each address a found among the sorted `keys`, else `default`."""
    where = np.clip(np.searchsorted(keys, addresses), 0, len(keys) - 1)
    return np.where(keys[where] == addresses, values[where], default)


class Layout(dict):
    """`_lockstep_layout`'s moved addresses (old address -> new): a dict, plus for each
    template kernel (`TemplateThreads`) its writes as arithmetic progressions, looked up
    without a dict entry per word."""

    def __init__(self) -> None:
        super().__init__()
        # (region's first address, words a thread allocates, threads, {offset: new address})
        self.segments: list[tuple[int, int, int, dict[int, int]]] = []
        # (region's first address, words, offset) -> the new address of thread 0's word
        self.bases: dict[tuple[int, int, int], int] = {}
        self._sorted: tuple | None = None  # the dict's keys and values as sorted arrays
        self._tables: list[tuple] = []  # the segments' tables as sorted arrays

    def __bool__(self) -> bool:
        return bool(self.segments) or len(self) > 0

    def get(self, address, default=None):  # type: ignore[override]
        found = dict.get(self, address)
        if found is not None:
            return found
        for first, words, count, table in self.segments:
            relative = address - first
            if 0 <= relative < words * count:
                thread, offset = divmod(relative, words)
                base = table.get(offset)
                if base is not None:
                    return base + thread
        return default

    def __contains__(self, address) -> bool:
        return self.get(address) is not None

    def many(self, addresses):
        """`get(a, a)` for a numpy array of addresses."""
        import numpy as np

        addresses = np.asarray(addresses, dtype=np.int64)
        result = addresses
        if len(self):
            if self._sorted is None or len(self._sorted[0]) != len(self):
                keys = np.array(sorted(self), dtype=np.int64)
                self._sorted = (keys, np.array([dict.__getitem__(self, k) for k in keys.tolist()],
                                               dtype=np.int64))
            result = _lookup(addresses, *self._sorted, result, np)
        if len(self._tables) != len(self.segments):
            self._tables = [(first, words, count, *_sorted_table(table, np))
                            for first, words, count, table in self.segments]
        for first, words, count, keys, bases in self._tables:
            relative = addresses - first
            inside = (relative >= 0) & (relative < words * count)
            if not inside.any():
                continue
            thread, offset = np.divmod(relative, words)
            where = np.clip(np.searchsorted(keys, offset), 0, len(keys) - 1)
            hit = inside & (keys[where] == offset)
            result = np.where(hit, bases[where] + thread, result)
        return result


@dataclass(slots=True)
class Phase:
    """A kernel (parallel, one path per thread) or a stretch of serial code (one path)."""

    threads: list[Path]
    parallel: bool
    span: Span | None = None
    staged: int = 0  # words the kernel copies into local memory first (`on local [ρ]`)
    writeback: bool = False  # the paper's §7.1.2: each work group writes its results back (l)


GSub = list[Phase]


class PathBuilder:
    """The GPU counterpart of `CostGraph`'s combinators: ⊕ appends to paths, ⊗_i is n-ary.

    Sub-results are used once, as the evaluator's rules consume them, so the builder extends
    them in place: appending to a path is O(1), not a copy. `edges` counts the edges made (the
    evaluator's guard on the size of what it builds).
    """

    def __init__(self) -> None:
        self.edges = 0

    def node(self, *args, **kwargs) -> GSub:
        return [Phase([[]], False)]

    def step(self, before: GSub | None, weight: float, kind: EdgeKind, span: Span | None,
             centres: tuple[str, ...], access: MemoryAccess | None = None, words: int = 0,
             bookkeeping: bool = False) -> GSub:
        """before ⊕ edge, the edge of `kind` with its `weight` (or memory `access`), the `words`
        it allocates and whether it is a parallel form's `bookkeeping`."""
        edge = _new_edge((kind, weight, access, span, centres, words, bookkeeping))
        self.edges += 1
        if not before:
            return [Phase([[edge]], False)]
        last = before[-1]
        if last.parallel:
            before.append(Phase([[edge]], False))
        else:
            last.threads[0].append(edge)
        return before

    def seq(self, first: GSub | None, second: GSub | None, weight: float, span: Span | None,
            centres: tuple[str, ...]) -> GSub | None:
        """first ⊕_δ second, δ = `weight`; ∅ is the unit of ⊕."""
        if first is None:
            return second
        if second is None:
            return first
        return _concat(self.step(first, weight, _SEQ_EDGE, span, centres), second)

    def then(self, first: GSub | None, second: GSub | None) -> GSub | None:
        """first followed directly by second (the edge joining them is already in first)."""
        if first is None:
            return second
        if second is None:
            return first
        return _concat(first, second)

    def par_all(self, branches: list[GSub | None], span: Span | None,
                staged: int = 0, writeback: bool = False) -> GSub | None:
        """⊗_i c_i on 𝔾: one kernel phase with a thread per branch (nested phases flattened),
        which first stages `staged` words in local memory (and with `writeback`, ends with a
        write-back per work group: `phase_cost`)."""
        if not branches:
            return None
        if isinstance(branches, TemplateThreads):
            return [Phase(branches, True, span, staged, writeback)]  # type: ignore[arg-type]
        return [Phase([flatten(b) for b in branches], True, span, staged, writeback)]


def concat_phases(first: list, second: list, serial_path: Callable[[Any], list | None]) -> list:
    """first then second, as lists of phases (§6.4's cost paths on 𝔾): where first ends and second
    starts with serial code, the two serial paths become one. `serial_path(phase)` is a phase's
    path if it is serial code, else None. The explicit evaluator's `Phase` and the symbolic
    evaluator's `SPhase` share this rule; `first` is extended in place and returned."""
    if first and second:
        tail, head = serial_path(first[-1]), serial_path(second[0])
        if tail is not None and head is not None:
            tail.extend(head)
            first.extend(second[1:])
            return first
    first.extend(second)
    return first


def _serial_path(phase: Phase) -> Path | None:
    return None if phase.parallel else phase.threads[0]


def _concat(first: GSub, second: GSub) -> GSub:
    return concat_phases(first, second, _serial_path)


def flatten(sub: GSub | None) -> Path:
    """A thread's whole path: nested parallel phases run one thread after another. (The symbolic
    evaluator's counterpart, `graphs.semantics.symbolic._path_flatten`, differs: its nested
    kernels become loops over a thread template.)"""
    if not sub:
        return []
    if len(sub) == 1 and len(sub[0].threads) == 1:
        return sub[0].threads[0]
    path: Path = []
    for phase in sub:
        for thread in phase.threads:
            path.extend(thread)
    return path


# ---------------------------------------------------------------------------------------------------


RECORDED_GROUPS = 4  # work groups per phase whose lock-step steps are kept (for pictures)
RECORDED_STEPS = 2048  # steps kept per recorded work group
RECORDED_GROUP_TIMES = 1024  # work groups per phase whose times are kept (for timelines)


@dataclass(frozen=True, slots=True)
class LockStep:
    """One step W_i^j -> W_i^{j+1} of a warp box (Fig. 8): its weight Δ(W_i^j, W_i^{j+1}) (§6.4),
    the bank-conflicting requests of its warps, their largest conflict degree, and which memory
    its requests went to ("global", "local", "global+local", or "" for no memory request)."""

    weight: float
    conflicts: int = 0
    degree: int = 1
    memory: str = ""


@dataclass(slots=True)
class PhaseCost:
    """What one kernel (or serial stretch) of a device box cost.

    For pictures and timelines it also keeps, cheaply: the lock-step steps of its first
    `RECORDED_GROUPS` work groups (`lockstep`, at most `RECORDED_STEPS` each), the time of its first
    `RECORDED_GROUP_TIMES` work groups (`group_times`) and the time of every round (`round_times`).
    """

    threads: int
    warps: int
    work_groups: int
    rounds: int
    steps: int  # the longest work group's number of lock-step steps
    time: float
    group_time_max: float
    conflicts: int = 0
    conflict_degree_max: int = 1
    broadcasts: int = 0
    multicasts: int = 0
    parallel: bool = True
    span: Span | None = None
    thread_work: float = 0.0  # Σ over threads of their edges' weights alone
    centres: tuple[str, ...] = ()  # the cost centres every edge of this phase is charged to
    lockstep: list[list[LockStep]] = field(default_factory=list)
    group_times: list[float] = field(default_factory=list)
    round_times: list[float] = field(default_factory=list)
    launch: float = 0.0  # the launch overhead included in `time`
    walk: float = 0.0  # the cache mode's page walks after the heap's copy, included in `time`
    groups_at_once: int = 1  # work groups resident at once: the size of a round
    traffic: Traffic | None = None  # a stateful (cache) model's memory traffic, summed
    bound: str = ""  # a stateful model's largest term: "latency", "DRAM bandwidth", ...
    latency: float = 0.0  # a stateful model's latency term: the rounds' lock-step time
    counts: KernelCounts | None = None  # its global words, operations, launches (count_phase)
    divergent_warps: int = 0  # warps whose threads' paths pass different program points
    longest_path: int = 0  # the most edges a thread's path has


@dataclass(slots=True)
class DeviceBox:
    """𝒟 of Fig. 7: its phases and its time (the longest path from start to finish)."""

    phases: list[PhaseCost] = field(default_factory=list)
    mode: str = "dmm"

    @property
    def time(self) -> float:
        return sum(p.time for p in self.phases)

    @property
    def conflicts(self) -> int:
        return sum(p.conflicts for p in self.phases)

    @property
    def broadcasts(self) -> int:
        return sum(p.broadcasts for p in self.phases)

    @property
    def multicasts(self) -> int:
        return sum(p.multicasts for p in self.phases)

    @property
    def work(self) -> float:
        return sum(p.thread_work for p in self.phases)

    def memory_note(self, sector_bytes: int) -> str | None:
        """A stateful (cache-mode) box's memory traffic in words a user can act on: reads from
        the L1, from further away, forwarded; the DRAM bytes its kernels fetch at least; and what
        bounds each kernel (latency, DRAM or L2 bandwidth, the allocation pointer's atomics).
        None for a box priced without traffic (the paper's and the DMM's modes)."""
        priced = [p for p in self.phases if p.traffic is not None]
        if not priced:
            return None
        total = Traffic()
        for phase in priced:
            total.add(phase.traffic)  # type: ignore[arg-type]
        bounds: dict[str, int] = {}
        for phase in priced:
            if phase.parallel:
                bounds[phase.bound] = bounds.get(phase.bound, 0) + 1
        bound = ", ".join(f"{count} by {name}" for name, count in sorted(bounds.items()))
        return (f"memory (cache model): sectors read from the L1 {total.l1_hits:,}, from the "
                f"L2 or DRAM {total.l1_misses:,}; reads forwarded from a store "
                f"{total.forwarded:,}; sectors stored {total.stores:,}; allocations "
                f"{total.atomics:,}; at least {total.footprint * sector_bytes:,} bytes from DRAM"
                + (f"; kernels bound: {bound}" if bound else ""))

    def allocation_note(self, p: GpuParameters, shown: Callable[[float], str]) -> str | None:
        """Where the cache mode charged a kernel's allocations the expectation over the near/far
        draw (models/gpu_cache.py's `allocation_latencies`), what a run pays instead: its units
        are near the allocation pointer or far from it as its process drew them, so a kernel of
        few work groups pays one or the other, ±20% on the H200. `shown` formats a model time.
        None where no kernel allocates, the profile has no near figures, every allocating kernel
        is charged within 1% of the far figure (too many groups for all to be near), or the
        process's own figures are known (`group_atomic_latencies`, set by `hetprof validate`)."""
        if p.group_atomic_latencies or p.near_unit_share <= 0 or p.atomic_latency_near <= 0:
            return None
        far, near = p.atomic_latency, p.atomic_latency_near
        charged = sorted({allocation_latencies(p, phase.work_groups)[0]
                          for phase in self.phases
                          if phase.traffic is not None and phase.traffic.atomics})
        charged = [c for c in charged if c < far * 0.99]
        if not charged:
            return None
        what = (shown(charged[0]) if len(charged) == 1
                else f"{shown(charged[0])} to {shown(charged[-1])}")
        return (f"allocations (cache model): a step where one lane allocates is charged {what}, "
                f"the expectation over compute units near the allocation pointer ({shown(near)}) "
                f"and far from it ({shown(far)}); a run pays near or far as its process drew its "
                f"units, {100 * (near / charged[-1] - 1):+.0f}% to "
                f"{100 * (far / charged[0] - 1):+.0f}% on those steps "
                "(`hetprof validate` times its own process's)")

    def divergence_note(self, lockstep: str) -> str | None:
        """Which kernels have warps whose threads took different paths (data-dependent
        branches or loops), and how many lock-step steps that cost beside their longest path,
        under the profile's `lockstep` rule (`warp_columns`). None where no warp diverged."""
        parts = [f"{phase.divergent_warps:,} of {phase.warps:,} warps of the kernel at "
                 f"{phase.span} ({phase.steps:,} steps for paths of at most "
                 f"{phase.longest_path:,} edges)"
                 for phase in self.phases if phase.divergent_warps]
        if not parts:
            return None
        how = ("by program point (each side of a branch in steps of its own)"
               if lockstep == "point" else "edge by edge (§6.4; --lockstep point steps each side "
               "of a branch apart, as a SIMT warp runs it)")
        return "divergent threads, stepped " + how + ": " + "; ".join(parts)


def box_model(model: GpuModel, heap_words: int, pushed_words: float = 0) -> GpuModel:
    """The model that prices one device box whose heap (the words it pushes and allocates) is
    `heap_words`, `pushed_words` of them copied in by the host: a stateful model (the cache mode)
    needs them to tell L2 from DRAM and to charge the first kernel after a copy."""
    if not model.stateful:
        return model
    return model.with_heap(heap_words, pushed_words)  # type: ignore[attr-defined]


def build_device_box(body: GSub | None, model: GpuModel, parameters: GpuParameters) -> DeviceBox:
    """[[e, 𝒯, ℓ]]_𝒟 (§6.4): the device box of an `on` body's cost paths.

    A kernel of an `on local [...]` body first loads what it stages (`Phase.staged`) into the
    local memory of every work group.
    """
    box = DeviceBox(mode=model.name)
    phases = body or []
    moved = _lockstep_layout(phases, parameters.warp_width, parameters.lockstep == "point",
                             parameters.work_group_size)
    for phase in phases:
        box.phases.append(phase_cost(phase, model, parameters, moved))
    walk = box_walk(box.phases, model)
    if walk:
        first = next(c for c in box.phases if phase_launches(c))
        first.time += walk
        first.walk = walk
    return box


def phase_launches(cost: PhaseCost) -> bool:
    """Whether a priced phase is a kernel launch of its own (`launches_kernel`): a parallel
    phase with threads, or serial code whose counts have a launch."""
    if cost.parallel:
        return cost.threads > 0
    return cost.counts is not None and cost.counts.launches > 0


def box_walk(costs, model: GpuModel) -> float:
    """The page walks a device box pays once, with its first kernel (the cache mode's `walk`
    for the box's heap, models/gpu_cache.py): 0 for another model or a box that launches no
    kernel."""
    walk = getattr(model, "walk", 0.0)
    if not walk or not any(map(phase_launches, costs)):
        return 0.0
    return walk


FRESH = 1 << 60  # device addresses of words allocated inside a kernel

_access_of, _address_of, _space_of, _centres_of = (
    attrgetter("access"), attrgetter("address"), attrgetter("space"), attrgetter("centres"))


def _lockstep_layout(phases: GSub, width: int, by_point: bool = False,
                     group: int = 256) -> dict[int, int]:
    """Where a kernel's allocations land on a real GPU.

    The evaluator allocates thread after thread, so thread i's words follow thread i-1's. On the
    GPU the threads of a kernel allocate in lock-step from one bump pointer: the k-th allocations
    of all threads come before anyone's (k+1)-th, in thread order. This gives the device address
    of every word allocated in a parallel phase that way (old address -> new address); pricing
    moves those words' writes and reads there, so that bank conflicts and address groups see the
    layout the hardware would produce. The paths themselves are left as they are.

    With `by_point` (`gpu.lockstep` "point") the k-th allocations are those of each work
    group's k-th step that writes, the steps of a group of `group` threads lined up by program
    point (`point_steps`): threads on two sides of a branch allocate in separate steps, and
    after the branch together again.
    """
    # A plain dict unless a template kernel needs the Layout's segments (a dict's own get and
    # `in` are several times faster than a subclass's Python-level ones).
    templates = any(isinstance(phase.threads, TemplateThreads)
                    and _template_writes(phase.threads) > LAYOUT_DICT_LIMIT for phase in phases)
    moved: dict[int, int] = Layout() if templates else {}
    next_address = FRESH
    for phase in phases:
        if not phase.parallel:
            continue
        if isinstance(phase.threads, TemplateThreads):
            next_address = _template_layout(phase.threads, moved, next_address, width)
            continue
        # The k-th column holds every thread's k-th write (None for a thread with fewer); by
        # program point, every thread's write at its warp's k-th writing step.
        for column in (_point_write_columns(phase.threads, group) if by_point else
                       zip_longest(*[[a.address for a in map(_access_of, thread)
                                      if a is not None and a.kind is _WRITE]
                                     for thread in phase.threads])):
            for address in column:
                if address is not None and address not in moved:
                    moved[address] = next_address
                    next_address += 1
            next_address += width - next_address % width if next_address % width else 0
    return moved


def _point_write_columns(threads: list[Path], group: int) -> Iterable[list[int]]:
    """The addresses the threads write, in `_lockstep_layout`'s columns by program point: the
    k-th column holds, work group after work group, the writes of each group's k-th step
    (`point_steps`) that has one, in thread order."""
    steps = []
    for start in range(0, len(threads), group):
        members = threads[start:start + group]
        steps.append([addresses for addresses in
                      ([a.address for a in (members[lane][j].access for lane, j in step)
                        if a is not None and a.kind is _WRITE]
                       for step in point_steps(members))
                      if addresses])
    for column in zip_longest(*steps, fillvalue=[]):
        yield list(chain.from_iterable(column))


LAYOUT_DICT_LIMIT = 1 << 16  # a template kernel's writes kept in the layout's dict up to this


def _template_writes(threads: TemplateThreads) -> int:
    return threads.thread_count * len(threads.writes)


def _template_layout(threads: TemplateThreads, moved: dict[int, int], next_address: int,
                     width: int) -> int:
    """`_lockstep_layout` for a template kernel: its k-th write of thread t goes to the k-th
    column's first new address + t. A kernel of few writes has them in the dict, as a kernel
    of made paths; a larger one, in a `Layout`, as arithmetic progressions."""
    count = threads.thread_count
    segments = isinstance(moved, Layout) and _template_writes(threads) > LAYOUT_DICT_LIMIT
    tables: dict[tuple[int, int], dict[int, int]] = {}
    for _, first, words, offset in threads.writes:
        if segments:
            tables.setdefault((first, words), {})[offset] = next_address
            moved.bases[(first, words, offset)] = next_address  # type: ignore[attr-defined]
        else:
            moved.update(zip(range(first + offset, first + offset + words * count, words),
                             range(next_address, next_address + count), strict=True))
        next_address += count
        next_address += width - next_address % width if next_address % width else 0
    for (first, words), table in tables.items():
        moved.segments.append((first, words, count, table))  # type: ignore[attr-defined]
    return next_address


def phase_cost(phase: Phase, model: GpuModel, p: GpuParameters,
                moved: dict[int, int] | None = None) -> PhaseCost:
    """What one phase costs, its memory words at the addresses `moved` gives them (see
    `_lockstep_layout`)."""
    threads = phase.threads
    width = p.warp_width
    group_threads = p.work_group_size if phase.parallel else width
    warps = math.ceil(len(threads) / width)
    groups = math.ceil(len(threads) / group_threads)
    cost = PhaseCost(len(threads), warps, groups, 0, 0, 0.0, 0.0, parallel=phase.parallel,
                     span=phase.span)
    group_times: list[float] = []
    cache: dict[tuple, StepCost] = {}
    if model.stateful:
        cost.traffic = Traffic()
    template = (threads if isinstance(threads, TemplateThreads) and not model.stateful
                else None)
    if template is not None:
        priced = _template_group_times(template, model, p, cost, moved, group_threads)
    for g in range(groups):
        record: list[LockStep] | None = None
        if g < RECORDED_GROUPS:
            record = []
            cost.lockstep.append(record)
        if template is not None:
            time, steps, recorded = priced[g]
            if record is not None:
                record.extend(recorded)
        elif isinstance(threads, TemplateThreads):  # a stateful model, group after group
            time, steps = _stateful_template_group_time(
                threads, g * group_threads, min(len(threads), (g + 1) * group_threads), model,
                p, cost, record, moved, groups)
        else:
            members = threads[g * group_threads:(g + 1) * group_threads]
            time, steps = group_time(members, model, p, cost, cache, record, moved, groups)
        if phase.staged and phase.parallel:
            # Every work item of a group helps stage, the idle ones of the last included, before
            # they return (`staging_items`).
            time += staging_time(staging_items(len(threads), group_threads, model), model, p,
                                 phase.staged)
        group_times.append(time)
        cost.steps = max(cost.steps, steps)
    resident = max(1, p.threads_at_once // group_threads) if phase.parallel else 1
    cost.rounds = math.ceil(groups / resident) if groups else 0
    cost.groups_at_once = resident
    total = 0.0
    for start in range(0, groups, resident):
        round_time = max(group_times[start:start + resident])
        cost.round_times.append(round_time)
        total += round_time
    if phase.writeback and phase.parallel:
        total += writeback_time(groups, p)
    if model.stateful and cost.traffic is not None:
        kernel = model.kernel_time(total, cost.traffic)  # type: ignore[attr-defined]
        total, cost.bound, cost.latency = kernel.time, kernel.bound, kernel.latency
    if launches_kernel(phase):
        total += p.launch
    if p.atomic and not model.stateful:
        # Every write allocates (λG's regions are immutable) with an atomic bump of the region's
        # allocation pointer; atomics on one address serialize over the whole device.
        if isinstance(threads, TemplateThreads):
            total += p.atomic * (len(threads.writes) * threads.thread_count)
        else:
            total += p.atomic * sum(1 for e in chain.from_iterable(threads)
                                    if e.access is not None and e.access.kind is _WRITE)
        cost.launch = p.launch
    cost.group_times = group_times[:RECORDED_GROUP_TIMES]
    cost.time = total
    cost.group_time_max = max(group_times, default=0.0)
    if isinstance(threads, TemplateThreads):
        # The same sum, in the same order (thread after thread), as over the made paths.
        weights = [e.weight for j, e in enumerate(threads.edges)
                   if threads.addresses[j] is None]
        cost.thread_work = sum(chain.from_iterable(repeat(weights, threads.thread_count)))
        stacks = set(map(_centres_of, threads.edges)) if threads.thread_count else set()
    else:
        cost.thread_work = sum(e.weight for e in chain.from_iterable(threads)
                               if e.access is None)
        # The edges share a few centre stacks: intersect each distinct one once.
        stacks = set(map(_centres_of, chain.from_iterable(threads)))
    common = set.intersection(*map(set, stacks)) if stacks else set()
    cost.centres = tuple(sorted(common))
    cost.counts = count_phase(phase, p)
    if phase.parallel and not isinstance(threads, TemplateThreads) and threads:
        cost.longest_path = max(map(len, threads))
        cost.divergent_warps = sum(1 for i in range(0, len(threads), width)
                                   if _diverge(threads[i:i + width]))
    return cost


def count_phase(phase: Phase, gpu: GpuParameters) -> KernelCounts:
    """The global words read and written, operations, launches, threads and allocations of one
    phase, as graphs.kernel_counts counts them (its module doc), for the roofline and for what
    bounds a kernel (memory or compute)."""
    read = written = operations = allocations = 0
    threads = phase.threads
    if isinstance(threads, TemplateThreads):
        count = threads.thread_count
        for j, edge in enumerate(threads.edges):
            local = threads.local[j]
            if threads.addresses[j] is None:
                if not edge.bookkeeping:
                    operations += count
                continue
            in_global = (count - bool(local) * count if isinstance(local, bool)
                         else count - int(local.sum()))
            if threads.kinds[j] is AccessKind.READ:
                read += in_global
            else:
                written += max(1, edge.words) * in_global
                allocations += in_global
        threads = []
    for thread in threads:
        for edge in thread:
            access = edge.access
            if access is None:
                if not edge.bookkeeping:
                    operations += 1
            elif access.space is Space.GLOBAL:
                if access.kind is AccessKind.READ:
                    read += 1
                else:
                    written += max(1, edge.words)
                    allocations += 1
    if phase.parallel and phase.threads:
        groups = math.ceil(len(phase.threads) / gpu.work_group_size)
        read += phase.staged * groups
        if phase.writeback:
            written += groups
    return KernelCounts(read, written, operations, 1 if launches_kernel(phase) else 0,
                        len(phase.threads) if phase.parallel else 1, allocations)


def launches_kernel(phase: Phase) -> bool:
    """Whether the phase is a kernel launch of its own: every parallel phase, and a serial stretch
    that computes something (a literal, arithmetic) rather than only a parmap's bookkeeping (its
    vector read, merge and result vector, which the kernel and the host do around it)."""
    if not phase.threads:
        return False
    if phase.parallel:
        return True
    return any(e.kind is not _SEQ_EDGE and not e.bookkeeping for e in phase.threads[0])


def group_time(members: list[Path], model: GpuModel, p: GpuParameters, cost: PhaseCost,
                cache: dict, record: list[LockStep] | None = None,
                moved: dict[int, int] | None = None, groups: int = 1) -> tuple[float, int]:
    """Step a work group's warps in lock-step (Fig. 8) and add up the warp-box step weights,
    with memory words at the addresses `moved` gives them (see `_lockstep_layout`).

    With `record`, each step's `LockStep` is appended to it (up to `RECORDED_STEPS`). A stateful
    model (the cache mode) prices the group's steps in order with the group's cache state, and
    adds the group's traffic to `cost.traffic`; `groups` is the kernel's number of work groups
    (those on one compute unit share its cache)."""
    if model.stateful:
        return _stateful_group_time(members, model, p, cost, record, moved, groups)
    width = p.warp_width
    warps = group_columns(members, width, p.lockstep == "point")
    length = max(map(len, warps), default=0)
    time = 0.0
    conflicts = broadcasts = multicasts = 0
    degree = cost.conflict_degree_max
    for j in range(length):
        warp_steps: list[StepCost] = []
        spaces: set[Space] = set()
        keep = record is not None and j < RECORDED_STEPS
        for columns in warps:
            column = columns[j] if j < len(columns) else None
            if not column:
                continue  # every thread of this warp is dead (Fig. 8, footnote 11)
            accesses = list(map(_access_of, column))
            if None in accesses:
                others = [e.weight for e in column if e.access is None]
                accesses = [a for a in accesses if a is not None]
            else:
                others = []
            if keep:
                spaces.update(a.space for a in accesses)
            key = step_key(accesses, others, p, moved)
            step = cache.get(key)
            if step is None:
                if moved:
                    accesses = [MemoryAccess(a.kind, moved.get(a.address, a.address), a.space)
                                for a in accesses]
                step = cache[key] = model.warp_step(accesses, others)
            warp_steps.append(step)
            conflicts += step.conflicts
            if step.degree > degree:
                degree = step.degree
            broadcasts += step.broadcasts
            multicasts += step.multicasts
        weight = model.group_step(warp_steps)
        time += weight
        if keep:
            assert record is not None
            record.append(LockStep(
                weight, sum(s.conflicts for s in warp_steps),
                max((s.degree for s in warp_steps), default=1),
                "+".join(sorted(space.value for space in spaces))))
    cost.conflicts += conflicts
    cost.conflict_degree_max = degree
    cost.broadcasts += broadcasts
    cost.multicasts += multicasts
    return time, length


def _template_group_times(threads: TemplateThreads, model: GpuModel, p: GpuParameters,
                          cost: PhaseCost, moved: Layout | dict | None,
                          group_threads: int) -> list[tuple[float, int, list[LockStep]]]:
    """`group_time` for every work group of a template kernel under a stateless model: each
    group's time, its steps and its recorded `LockStep`s, and `cost`'s conflict, broadcast and
    multicast counts, exactly as `group_time` finds them over the made paths.

    A warp's step is priced once per access pattern (its `step_key`), as `group_time` does; the
    patterns of a step are found for all warps at once, over the template's address arrays."""
    import numpy as np

    width, banks = p.warp_width, p.banks
    n = threads.thread_count
    groups = math.ceil(n / group_threads)
    warps_of: list[list[tuple[int, int]]] = []
    for g in range(groups):
        start, end = g * group_threads, min(n, (g + 1) * group_threads)
        warps_of.append([(w, min(end, w + width)) for w in range(start, end, width)])
    warps = [w for ws in warps_of for w in ws]
    aligned = all(start % width == 0 for start, _ in warps)
    full = [end - start == width for start, end in warps]
    first_warp = []  # each group's first warp's index in `warps`
    index = 0
    for ws in warps_of:
        first_warp.append(index)
        index += len(ws)
    step_ids: dict[tuple, int] = {}
    steps: list[StepCost] = []

    def step_id(key: tuple, accesses: list[MemoryAccess], others: list[float]) -> int:
        found = step_ids.get(key)
        if found is None:
            found = step_ids[key] = len(steps)
            steps.append(model.warp_step(accesses, others))
        return found

    group_steps: dict[tuple, tuple[float, int, int, int, int]] = {}
    times = [0.0] * groups
    recorded: list[list[LockStep]] = [[] for _ in range(min(groups, RECORDED_GROUPS))]
    length = len(threads.edges)
    for j, edge in enumerate(threads.edges):
        address = threads.addresses[j]
        if address is None:
            by_size = {size: step_id(((), None, (edge.weight,) * size), [], [edge.weight] * size)
                       for size in {end - start for start, end in warps}}
            ids = [by_size[end - start] for start, end in warps]
            space_names = [""] * len(warps)
        else:
            ids, space_names = _template_warp_ids(threads, j, address, moved, warps, aligned,
                                                  full, width, banks, step_id, np)
        for g, ws in enumerate(warps_of):
            first = first_warp[g]
            key = tuple(ids[first:first + len(ws)])
            priced = group_steps.get(key)
            if priced is None:
                members = [steps[i] for i in key]
                priced = group_steps[key] = (
                    model.group_step(members), sum(s.conflicts for s in members),
                    max((s.degree for s in members), default=1),
                    sum(s.broadcasts for s in members), sum(s.multicasts for s in members))
            times[g] += priced[0]
            cost.conflicts += priced[1]
            if priced[2] > cost.conflict_degree_max:
                cost.conflict_degree_max = priced[2]
            cost.broadcasts += priced[3]
            cost.multicasts += priced[4]
            if g < RECORDED_GROUPS and j < RECORDED_STEPS:
                names = {name for name in space_names[first:first + len(ws)] if name}
                spaces = {part for name in names for part in name.split("+")}
                recorded[g].append(LockStep(priced[0], priced[1], priced[2],
                                            "+".join(sorted(spaces))))
    return [(times[g], length, recorded[g] if g < RECORDED_GROUPS else [])
            for g in range(groups)]


def _template_warp_ids(threads: TemplateThreads, j: int, address: Any,
                       moved: Layout | dict | None, warps: list[tuple[int, int]], aligned: bool,
                       full: list[bool], width: int, banks: int,
                       step_id: Callable[[tuple, list, list], int],
                       np: Any) -> tuple[list[int], list[str]]:
    """Each warp's priced step (an index from `step_id`) and the memory its requests went to,
    for the template's memory edge j."""
    n = threads.thread_count
    kind, local = threads.kinds[j], threads.local[j]
    ids = [0] * len(warps)
    names = [""] * len(warps)
    if isinstance(local, bool):
        # One address for every thread, or the kernel's own words (thread t's at a base + t,
        # `_template_layout`): every full warp has one pattern, found without arrays.
        space, name = (_LOCAL, "local") if local else (_GLOBAL, "global")
        inside = threads.inside[j]
        if isinstance(address, int):
            moved_address = moved.get(address, address) if moved else address
            by_size: dict[int, int] = {}
            for w, (start, end) in enumerate(warps):
                size = end - start
                if size not in by_size:
                    by_size[size] = step_id(
                        ((moved_address % banks,) * size, (True,) * size if local else None, ()),
                        [MemoryAccess(kind, moved_address, space)] * size, [])
                ids[w], names[w] = by_size[size], name
            return ids, names
        if (inside is not None and isinstance(moved, Layout) and inside in moved.bases
                and aligned and width % banks == 0):
            base = moved.bases[inside]
            pattern = None
            for w, (start, end) in enumerate(warps):
                if end - start == width and pattern is not None:
                    ids[w], names[w] = pattern, name
                    continue
                values = list(range(base + start, base + end))
                found = step_id((tuple([a - (values[0] - values[0] % banks) for a in values]),
                                 (True,) * len(values) if local else None, ()),
                                [MemoryAccess(kind, a, space) for a in values], [])
                if end - start == width:
                    pattern = found
                ids[w], names[w] = found, name
            return ids, names
    if isinstance(address, int):
        addresses = np.full(n, address, dtype=np.int64)
    else:
        addresses = address
    if moved:
        addresses = (moved.many(addresses) if isinstance(moved, Layout)
                     else np.array([moved.get(a, a) for a in addresses.tolist()], dtype=np.int64))
    is_local = (np.full(n, local, dtype=bool) if isinstance(local, bool)
                else np.asarray(local, dtype=bool))

    def one(w: int, rows: Any, flags: Any) -> int:
        values = rows.tolist()
        base = values[0] - values[0] % banks
        flag_list = flags.tolist()
        key_local = None if not any(flag_list) else tuple(flag_list)
        accesses = [MemoryAccess(kind, a, _LOCAL if f else _GLOBAL)
                    for a, f in zip(values, flag_list, strict=True)]
        return step_id((tuple([a - base for a in values]), key_local, ()), accesses, [])

    def space_name(flags: Any) -> str:
        any_local, all_local = bool(flags.any()), bool(flags.all())
        return "local" if all_local else "global+local" if any_local else "global"

    full_indices = [w for w, f in enumerate(full) if f] if aligned else []
    if full_indices:
        starts = np.array([warps[w][0] for w in full_indices], dtype=np.int64)
        rows = addresses[starts[:, None] + np.arange(width)]
        flags = is_local[starts[:, None] + np.arange(width)]
        relative = rows - (rows[:, :1] - rows[:, :1] % banks)
        same = bool((relative == relative[0]).all()) and bool((flags == flags[0]).all())
        if same:
            found = one(full_indices[0], rows[0], flags[0])
            name = space_name(flags[0])
            for w in full_indices:
                ids[w], names[w] = found, name
        else:
            keyed = np.concatenate([relative, flags.astype(np.int64)], axis=1)
            _, first_of, inverse = np.unique(keyed, axis=0, return_index=True,
                                             return_inverse=True)
            found_ids = [one(full_indices[i], rows[i], flags[i]) for i in first_of.tolist()]
            for position, w in enumerate(full_indices):
                u = int(inverse.reshape(-1)[position])
                ids[w] = found_ids[u]
                names[w] = space_name(flags[position])
    done = set(full_indices)
    for w, (start, end) in enumerate(warps):
        if w not in done:
            ids[w] = one(w, addresses[start:end], is_local[start:end])
            names[w] = space_name(is_local[start:end])
    return ids, names


def _stateful_group_time(members: list[Path], model: GpuModel, p: GpuParameters,
                         cost: PhaseCost, record: list[LockStep] | None,
                         moved: dict[int, int] | None, groups: int) -> tuple[float, int]:
    """`group_time` for a stateful model: no step is looked up in a cache of equal patterns,
    since a step's cost depends on what the group touched before it."""
    width = p.warp_width
    state = model.new_group(groups)  # type: ignore[attr-defined]
    warps = group_columns(members, width, p.lockstep == "point")
    length = max(map(len, warps), default=0)
    time = 0.0
    for j in range(length):
        warp_steps: list[StepCost] = []
        spaces: set[Space] = set()
        for w, columns in enumerate(warps):
            column = columns[j] if j < len(columns) else None
            if not column:
                continue
            accesses = [a for a in map(_access_of, column) if a is not None]
            others = [e.weight for e in column if e.access is None]
            if moved:
                accesses = [MemoryAccess(a.kind, moved.get(a.address, a.address), a.space)
                            for a in accesses]
            if record is not None:
                spaces.update(a.space for a in accesses)
            step = model.warp_step_in(state, w, accesses, others)  # type: ignore[attr-defined]
            warp_steps.append(step)
        time += _stateful_step(model, warp_steps, spaces, record, j, cost)
    if cost.traffic is not None:
        cost.traffic.add(state.traffic)
    return time, length


def _stateful_step(model: GpuModel, warp_steps: list[StepCost], spaces: set[Space],
                   record: list[LockStep] | None, j: int, cost: PhaseCost) -> float:
    """Step j of a work group under a stateful model, its warps priced: their conflicts,
    broadcasts and multicasts added to `cost`, its `LockStep` recorded where asked; returns its
    weight."""
    for step in warp_steps:
        cost.conflicts += step.conflicts
        if step.degree > cost.conflict_degree_max:
            cost.conflict_degree_max = step.degree
        cost.broadcasts += step.broadcasts
        cost.multicasts += step.multicasts
    weight = model.group_step(warp_steps)
    if record is not None and j < RECORDED_STEPS:
        record.append(LockStep(
            weight, sum(s.conflicts for s in warp_steps),
            max((s.degree for s in warp_steps), default=1),
            "+".join(sorted(space.value for space in spaces))))
    return weight


def _stateful_template_group_time(threads: TemplateThreads, start: int, end: int,
                                  model: GpuModel, p: GpuParameters, cost: PhaseCost,
                                  record: list[LockStep] | None, moved: dict[int, int] | None,
                                  groups: int) -> tuple[float, int]:
    """`_stateful_group_time` for the work group of threads start..end - 1 of a template kernel:
    the same warp steps in the same order, their accesses made from the template's addresses
    (moved as `_lockstep_layout` says) rather than from made paths."""
    width = p.warp_width
    state = model.new_group(groups)  # type: ignore[attr-defined]
    warps = [(w - start, min(w + width, end) - start) for w in range(start, end, width)]
    time = 0.0
    for j, edge in enumerate(threads.edges):
        warp_steps: list[StepCost] = []
        spaces: set[Space] = set()
        address = threads.addresses[j]
        if address is None:
            for w, (lo, hi) in enumerate(warps):
                warp_steps.append(model.warp_step_in(  # type: ignore[attr-defined]
                    state, w, [], [edge.weight] * (hi - lo)))
        else:
            kind = threads.kinds[j]
            moved_addresses = _group_addresses(threads, j, address, start, end, moved)
            local = threads.local[j]
            if isinstance(local, bool):
                flags = [_LOCAL if local else _GLOBAL] * (end - start)
            else:
                flags = [_LOCAL if f else _GLOBAL for f in local[start:end].tolist()]
            for w, (lo, hi) in enumerate(warps):
                accesses = [_new_access((kind, a, f))
                            for a, f in zip(moved_addresses[lo:hi], flags[lo:hi], strict=True)]
                if record is not None:
                    spaces.update(flags[lo:hi])
                warp_steps.append(model.warp_step_in(  # type: ignore[attr-defined]
                    state, w, accesses, []))
        time += _stateful_step(model, warp_steps, spaces, record, j, cost)
    if cost.traffic is not None:
        cost.traffic.add(state.traffic)
    return time, len(threads.edges)


def _group_addresses(threads: TemplateThreads, j: int, address: Any, start: int, end: int,
                     moved: dict[int, int] | None) -> list[int]:
    """The template's memory edge j's addresses for threads start..end - 1, moved as
    `_lockstep_layout` says."""
    if isinstance(address, int):
        return [moved.get(address, address) if moved else address] * (end - start)
    inside = threads.inside[j]
    if inside is not None and isinstance(moved, Layout) and inside in moved.bases:
        base = moved.bases[inside]
        return list(range(base + start, base + end))
    addresses = address[start:end]
    if not moved:
        return addresses.tolist()
    if isinstance(moved, Layout):
        return moved.many(addresses).tolist()
    return [moved.get(a, a) for a in addresses.tolist()]


def warp_columns(warp: list[Path], by_point: bool = False) -> list[Sequence[PathEdge]]:
    """The edges a warp's running threads take at each lock-step step, step after step.

    By default (`by_point` False, the profile's `gpu.lockstep` "edge") the j-th step is every
    running thread's j-th edge, as §6.4 steps a warp box (W_i^j holds the j-th node of each of
    its paths; a thread whose path ended is dead, Fig. 8's footnote 11). Threads that took
    different sides of a data-dependent branch are then out of step for the rest of the kernel:
    one's write can fall beside another's read, and each such step is priced as both.

    With `by_point` ("point"), a step is a program point (or the two sides of a branch of one
    shape), as a SIMT warp runs code: where the threads' paths differ, the warp runs each side
    with the other threads masked off and reconverges after them (`point_steps`). Where every
    thread's path passes the same program points (the same edges' spans in the same order) both
    give the same steps."""
    return group_columns(warp, len(warp) or 1, by_point)[0] if warp else []


def group_columns(members: list[Path], width: int,
                  by_point: bool = False) -> list[list[Sequence[PathEdge]]]:
    """`warp_columns` of each warp of a work group (`members`, `width` threads a warp), in the
    lock-step in which Fig. 8 steps the group's warps: edge by edge, step j of every warp is its
    j-th; by program point, the whole group's paths are merged (`point_steps`), so that step j
    of every warp is the same program point, and a warp none of whose threads is there sits it
    out (an empty column)."""
    warps = [members[i:i + width] for i in range(0, len(members), width)]
    if not by_point or not _diverge(members):
        return [list(zip(*warp, strict=True)) if len(set(map(len, warp))) == 1 else
                [[e for e in column if e is not None] for column in zip_longest(*warp)]
                for warp in warps]
    steps = point_steps(members)
    columns: list[list[Sequence[PathEdge]]] = [[] for _ in warps]
    for step in steps:
        per_warp: list[list[PathEdge]] = [[] for _ in warps]
        for lane, j in step:
            per_warp[lane // width].append(members[lane][j])
        for w, column in enumerate(per_warp):
            columns[w].append(column)
    return columns


_span_of = attrgetter("span")


def _diverge(paths: list[Path]) -> bool:
    """Whether `paths` do not all pass the same program points (their edges' spans) in order.
    (A list compares its items by identity first: the spans are the syntax tree's own.)"""
    if not paths:
        return False
    if len(set(map(len, paths))) > 1:
        return True
    first = list(map(_span_of, paths[0]))
    return any(list(map(_span_of, path)) != first for path in paths[1:])


def point_steps(paths: list[Path]) -> list[list[tuple[int, int]]]:
    """The lock-step steps of `paths` by program point, each a list of (thread, edge index) in
    thread order: a merge of the paths in which an edge of one thread shares a step with another
    thread's edge of the same program point where the two paths line up, and every other edge is
    a step of its own threads.

    The threads are grouped by their sequence of program points (`_point_of`); the sequences are
    merged one after another, the most common first, each lined up with the merge so far by a
    shortest edit script (`_aligned`): the common code before, between and after the differing
    branches, and a loop's shared iterations, line up. Where the two differ:
    - runs of the same length whose edges do the same things in the same order (`_shape_of`:
      the two sides of a branch that differ only in what they compute with, `if c then 1 else
      0`, a tail call with other arguments) share steps, edge by edge: a compiler makes such a
      branch one instruction stream with a select (LLVM's if-conversion, and its hoisting and
      sinking of the instructions both sides share). On the H200 such a branch measured between
      the two, about 60% of its sides run apart (benchmarks/divergence/, the README's run 24);
    - any other run becomes steps of its own threads, after the merge's run at that place: the
      warp runs one side of the branch with the other threads masked off, then the other side,
      and reconverges after it.
    A thread's edges keep their order.

    Reconstructed: §6.4 steps the paths edge by edge (W_i^j); this is how a SIMT GPU runs a
    divergent branch, which the paper's rule does not model."""
    lanes_of: dict[tuple, list[int]] = {}
    for lane, path in enumerate(paths):
        lanes_of.setdefault(tuple(map(_point_of, path)), []).append(lane)
    ordered = sorted(lanes_of.items(), key=lambda item: (-len(item[1]), item[1][0]))
    first = ordered[0][1]
    points: list[tuple] = list(ordered[0][0])
    shapes = list(map(_shape_of, paths[first[0]]))
    slots: list[list[tuple[int, int]]] = [[(lane, j) for lane in first]
                                          for j in range(len(points))]
    for key, lanes in ordered[1:]:
        key_shapes = list(map(_shape_of, paths[lanes[0]]))
        merged_points: list[tuple] = []
        merged_shapes: list[tuple] = []
        merged: list[list[tuple[int, int]]] = []
        for equal, i1, i2, j1, j2 in _aligned(points, list(key)):
            merged_points.extend(points[i1:i2])
            merged_shapes.extend(shapes[i1:i2])
            merged.extend(slots[i1:i2])
            if equal or (i2 - i1 == j2 - j1 and shapes[i1:i2] == key_shapes[j1:j2]):
                for slot, j in zip(slots[i1:i2], range(j1, j2), strict=True):
                    slot.extend((lane, j) for lane in lanes)
                continue
            merged_points.extend(key[j1:j2])
            merged_shapes.extend(key_shapes[j1:j2])
            merged.extend([(lane, j) for lane in lanes] for j in range(j1, j2))
        points, shapes, slots = merged_points, merged_shapes, merged
    return [sorted(slot) for slot in slots]


def _aligned(a: list, b: list) -> list[tuple[bool, int, int, int, int]]:
    """`a` and `b` lined up by a shortest edit script (Myers, "An O(ND) difference algorithm",
    1986): runs (equal, i1, i2, j1, j2), in order, where a[i1:i2] == b[j1:j2] if `equal`, and
    otherwise a[i1:i2] is what `a` has there instead of b[j1:j2] (either may be empty). A common
    prefix and suffix are taken off first. A shortest script keeps a loop's iterations in step:
    lining up by the longest common run instead (difflib) would shift a loop whose every
    iteration looks alike by one iteration, where the paths differ in one side of a branch."""
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and a[start] == b[start]:
        start += 1
    end = 0
    while end < n - start and end < m - start and a[n - 1 - end] == b[m - 1 - end]:
        end += 1
    runs: list[tuple[bool, int, int, int, int]] = []
    if start:
        runs.append((True, 0, start, 0, start))
    runs.extend(_myers_runs(a, b, start, n - end, start, m - end))
    if end:
        runs.append((True, n - end, n, m - end, m))
    return runs


def _myers_runs(a: list, b: list, a0: int, a1: int, b0: int,
                b1: int) -> list[tuple[bool, int, int, int, int]]:
    """`_aligned`'s runs for a[a0:a1] against b[b0:b1], by Myers's greedy search for the
    furthest-reaching paths of each edit distance, then back along the one that arrived."""
    n, m = a1 - a0, b1 - b0
    if not n or not m:
        return [(False, a0, a1, b0, b1)] if n or m else []
    offset = n + m + 1
    v = [0] * (2 * offset + 1)
    trace: list[list[int]] = []
    found = -1
    for d in range(n + m + 1):
        trace.append(v[offset - d - 1:offset + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[a0 + x] == b[b0 + y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                found = d
                break
        if found >= 0:
            break
    # Back from (n, m): each round d moved from a diagonal of round d - 1 by one edit, then
    # along its diagonal (equal items).
    equal_pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(found, 0, -1):
        before = trace[d]  # v as round d found it: diagonals -d - 1 .. d + 1
        k = x - y
        if k == -d or (k != d and before[k - 1 + d + 1] < before[k + 1 + d + 1]):
            previous_k = k + 1
        else:
            previous_k = k - 1
        previous_x = before[previous_k + d + 1]
        previous_y = previous_x - previous_k
        while x > previous_x and y > previous_y:  # the snake, back to just after the edit
            x, y = x - 1, y - 1
            equal_pairs.append((x, y))
        x, y = previous_x, previous_y
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        equal_pairs.append((x, y))
    equal_pairs.reverse()
    runs: list[tuple[bool, int, int, int, int]] = []
    i = j = 0
    for x, y in equal_pairs:
        if (x, y) != (i, j):
            runs.append((False, a0 + i, a0 + x, b0 + j, b0 + y))
        if runs and runs[-1][0] and runs[-1][2] == a0 + x and runs[-1][4] == b0 + y:
            last = runs[-1]
            runs[-1] = (True, last[1], last[2] + 1, last[3], last[4] + 1)
        else:
            runs.append((True, a0 + x, a0 + x + 1, b0 + y, b0 + y + 1))
        i, j = x + 1, y + 1
    if (i, j) != (n, m):
        runs.append((False, a0 + i, a0 + n, b0 + j, b0 + m))
    return runs


def _shape_of(edge: PathEdge) -> tuple:
    """What an edge does, apart from its program point and its address: its kind, whether it
    reads or writes, and its weight."""
    access = edge.access
    return (edge.kind, access.kind if access is not None else None, edge.weight)


def _point_of(edge: PathEdge) -> tuple:
    """An edge's program point: the syntax node that made it (its span, the tree's own object)
    and what it does there (a binary operation's node makes a sequencing edge, reads and a
    write)."""
    access = edge.access
    return (id(edge.span), edge.kind, access.kind if access is not None else None)


def step_key(accesses: list[MemoryAccess], others: list[float], p: GpuParameters,
              moved: dict[int, int] | None = None) -> tuple:
    """Warp steps with the same access pattern relative to their first address cost the same:
    bank conflicts depend on addresses mod the banks, address groups on their differences.
    The key holds the addresses (moved as `moved` says) relative to the first one's bank row,
    which accesses go to local memory (None when none do) and the other edges' weights."""
    if not accesses:
        return ((), None, tuple(others))
    addresses = list(map(_address_of, accesses))
    if moved:
        addresses = list(map(moved.get, addresses, addresses))
    spaces = list(map(_space_of, accesses))
    base = addresses[0] - addresses[0] % p.banks
    # Comparing members one by one, not hashing them: an Enum hashes in Python.
    local = None if spaces.count(_GLOBAL) == len(spaces) else tuple(s is _LOCAL for s in spaces)
    return (tuple([a - base for a in addresses]), local, tuple(others))


def writeback_time(groups: int, p: GpuParameters) -> float:
    """§7.1.2's l·k, under the paper's rules: in a kernel of an `on local [ρ]` body "one thread
    in each work group must write the results for its work group to global memory after all the
    threads in the work group have finished their computations", l per work group, k work
    groups. The paper adds the term once to the kernel, outside its rounds, and so does hetprof:
    the write-backs are not overlapped with each other or with later rounds."""
    return groups * p.global_latency


def staging_items(count: int, group: int, model: GpuModel) -> int:
    """The work items of one work group of a kernel of `count` items that copy its staged
    regions into local memory (`staging_time`). The calibrated modes take the group as the OpenCL
    backend launches it (models.opencl.runner.DeviceSession.global_size): `group` items, the
    kernel's size rounded up to whole groups, except that a kernel of fewer items than a group
    is one group of exactly its items. Until 2026-11-27 every mode priced the copy with a whole
    group's items, and a reduction's last levels (1, 2, 4 ... items, each copying up to 4 096
    words) were predicted to stage up to 4 096 times faster than they did (on an H200, dot's
    `stage-local`: predicted 0.93x, measured 0.31x). The paper's mode keeps that reading (a
    kernel launched in whole work groups: tests/test_section71.py), which its preset's numbers
    follow."""
    if model.name == "paper":
        return group
    return max(1, min(group, count))


def staging_time(threads: int, model: GpuModel, p: GpuParameters, staged_words: int) -> float:
    """A work group of `threads` threads loading `staged_words` words into local memory (§7.1.2's
    local variant: the l·k term). The loop `for (w = id; w < words; w += threads) L[w] = heap[w]`
    takes ⌈words / threads⌉ iterations; in one iteration every warp's load is one coalesced
    request, pipelined with the other warps' (Nakano's UMM: k requests take k + l - 1). A store
    to local memory waits for its load, so only the u = `staging_overlap` iterations a compiler
    unrolls have their loads in flight together: a batch of u iterations costs
    u·warps + l - 1. u is calibrated (`hetprof calibrate` times this very loop). (Measured on an
    H200, 2026-11-26: pipelining every iteration, as hetprof first did, made staging nearly free
    and predicted staging rewrites to pay where they lost.) The paper's mode charges l per
    iteration, as §7.1.2 does."""
    if not staged_words:
        return 0.0
    steps = math.ceil(staged_words / max(1, threads))
    if model.name == "paper":
        return steps * p.global_latency
    warps = math.ceil(threads / p.warp_width)
    overlap = max(1, p.staging_overlap)
    return math.ceil(steps / overlap) * (overlap * warps + p.global_latency - 1)
