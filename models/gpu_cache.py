"""A GPU model that knows the memory hierarchy (`--gpu-mode cache`, issue 14), beside Fig. 9's
(`paper`) and Nakano's DMM/UMM (`dmm`).

The paper's and the DMM's rules charge every global access the one latency l. Measured on an
H200 (models/opencl/calibrate_cache.py, 2026-11-26), one dependent access takes 23 ns when its
line is in the SM's L1, 147 ns in the L2 and 340 ns from DRAM; an atomic add whose result a
thread waits for (every allocation of hetprof's generated code) 146 ns; a 64-bit multiply-add
2 ns. A work group's threads that re-read what they or their neighbours touched pay the L1's
latency, not the DRAM's. This mode prices a work group's lock-step steps with that hierarchy:

- **Sectors.** Global memory moves 32-byte sectors (`sector_bytes`) of 128-byte lines: a warp
  step's global requests are the distinct sectors its threads' words fall in, not words.
- **L1, per work group.** Each work group keeps an LRU list of the sectors it has touched, of the
  capacity its share of its compute unit's L1 gives: `l1_bytes` over the groups resident on one
  unit (the kernel's groups spread over threads_at_once / `threads_per_compute_unit` units, at
  most `threads_per_compute_unit` / work group size on each). A read whose sector
  is there costs `l1_latency`; any other read costs `miss_latency` (the L2's, or where the device
  box's heap is larger than `l2_bytes`, the L2's and the DRAM's in proportion) and brings its
  sector into the L1. A store leaves its sector in the L1 too (measured: a word read back after its store, through
  a pointer the compiler cannot see through, took 30 ns, an L1 hit). The reuse distance that
  decides a hit is the LRU stack distance in the group's own lock-step address trace, as Nugteren
  et al. (HPCA 2014) model GPU caches, simplified to one group's share of the L1.
- **Store-to-load forwarding.** A thread reading the word it stored last, with no store of its
  own in between, gets it from a register, and the read costs `op`: nothing in between can
  change that word, so a compiler may keep the value (the generated code's pointers are
  `restrict`). An assumption about the OpenCL compiler, not measured on its own: a kernel
  reading through a second pointer to the same buffer, which no compiler can forward, took
  30 ns a hop on the H200, an L1 hit.
- **Allocation.** Every global write of the cost semantics allocates (λG's regions are
  immutable); the generated code bumps the region's pointer with an atomic add and waits for its
  result before it stores: a write step costs `atomic_latency` where one lane of the warp
  allocates, and `warp_atomic_latency` where several do (models/opencl/calibrate_cache.py's
  `GROUP_ALLOC`, a whole work group allocating at once: on the H200 145 ns alone, 269–355 ns
  with every lane, since the compiler aggregates a warp's adds and hands the lanes their
  offsets). The store itself does not stall.
- **Local memory** is Nakano's DMM, as in `dmm` mode: the conflict degree times `local_latency`.
- **The load unit.** A warp step's global requests are the distinct 128-byte lines (`line_bytes`)
  its reads and stores touch; a compute unit's load unit serves one line per `line_time`
  (measured: 0.5 ns on the H200, lane strides over an L1-resident array). A work-group step
  queues all its warps' lines and then waits for the slowest warp's latency, Nakano's UMM
  pipeline (k requests take k + l - 1) with lines for address groups and the latency of the level
  that served them for l. A warp step's own latency is its slowest thread's (lock-step).

- **Address translation.** The first kernel after the host copied an `on`'s heap in finds the
  GPU's translations of its pages cold and pays page walks that grow with the heap's span (on the
  H200, 2026-11-27: about 1-5 µs up to 128 MiB and 12-17 µs from 256 MiB, and nothing in a
  second kernel over the same buffer; `benchmarks/gpu_cold_read_probe.py --pages`). A device box
  that launches a kernel is charged `page_walk` of its heap once: the walk measured after a copy
  of that many bytes (`walk_16` ... `walk_30`, one warp's reads spread over the heap, less the
  same kernel again), not per page, since the probe found the span, not the page count, decides
  it. A box that pushes words (data the host copied in, which its first kernel reads) also pays
  `copy_step` then: what the first step of the calibration's runner program with its input
  copied in took beyond its work, walk and launch (on the H200, 2026-11-29, card GPU-6a0a3aee:
  the first map after the copy paid 1.1-3.2 µs more than the maps after it, and a first kernel
  with nothing copied in 0.2 µs more; benchmarks/runner_programs/).

A kernel cannot move bytes faster than the card does, however its warps overlap, nor bump one
allocation pointer faster than the L2's atomic unit serialises them. `kernel_time` takes the
largest of: the rounds' lock-step time (latency), the DRAM bytes over `dram_bytes_per_s`, the
L2 traffic (L1 misses) over `l2_bytes_per_s`, and the atomic adds times `atomic` (the time one
costs when the whole device bumps one address). The atomics of every warp's first allocating
step reach the pointer together, at the kernel's start, where no other work hides their queue:
that queue (`KernelTime.burst`) is added to the latency, and the whole queue's last allocation
still waits for its result (`atomic_latency` after the queue), as Nakano's UMM pipeline takes
k + l - 1 for k requests of latency l. Measured on the H200 (`benchmarks/gpu_alloc_probe.py
--reps 1|2|32`, 2026-11-28): one allocation a thread costs a kernel 1.6, 2.3, 3.3-3.8 and 5.3-6.0
µs at 32 768, 65 536, 131 072 and 262 144 items, about a step's 0.3 µs plus the queue (1.05, 1.8,
3.3, 6.3 µs) where the largest term alone says 0.75, 1.5, 3.0 and 6.0; two a thread 1.9-2.3,
3.1-3.8 and 6.8-6.9 µs at 32 768-131 072 items (this rule: 1.8, 3.3, 6.3; the largest term: 1.5,
3.0, 6.0); a chain of 32 allocations a thread costs each step the larger of the two (0.26-0.41
µs up to 16 384 items, then 0.78-6.9 µs, 0.024 ns an allocation). DRAM bytes are each work group's distinct sectors, summed: the compulsory
misses when groups touch disjoint data, more than the card moves when they share it (then the
L2 serves the repeats, and the L2 ceiling is the one that matters).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace

from models.base import (
    AccessKind,
    GpuModel,
    MemoryAccess,
    Space,
    StepCost,
    log2_interpolate,
)
from models.device_profile import WALK_BYTES, GpuParameters
from models.dmm import conflict_degree
from models.gpu_paper import count_sharing

_READ, _WRITE, _GLOBAL, _LOCAL = AccessKind.READ, AccessKind.WRITE, Space.GLOBAL, Space.LOCAL


def page_walk(p: GpuParameters, heap_bytes: float) -> float:
    """The page walks of the first kernel after a copy of a `heap_bytes` heap, in model units:
    the profile's walks (`walk_16` ... `walk_30`, after copies of 2^k bytes, k in WALK_BYTES)
    interpolated linearly in log2 of the bytes and held at the ends; 0 where none was measured
    or the heap is empty."""
    points = [getattr(p, f"walk_{k}") for k in WALK_BYTES]
    if heap_bytes <= 0 or not any(points):
        return 0.0
    return log2_interpolate(WALK_BYTES, points, heap_bytes)


GROUPS_PER_UNIT_PAIR = 2
"""Work groups launched one after another that land on one pair of compute units (a TPC), and so
share their distance from the allocation pointer: on the H200 (2026-11-29, card GPU-757663ba, %smid
read by benchmarks/gpu_alloc_sm_probe.py) groups 2k and 2k + 1 ran on units 2j and 2j + 1, and both
units of every pair were near or both far."""


def allocation_latencies(p: GpuParameters, groups: int) -> tuple[float, float]:
    """What an allocating write step costs a warp of a kernel of `groups` work groups: one lane
    allocating, and several (0: as one). The generated code bumps one pointer per region, which
    lies in one of the L2's partitions: from the compute units near it an allocation costs
    `atomic_latency_near`, from the others `atomic_latency` (on the H200, 2026-11-29, all 132
    units in turn: 207-238 ns and 311-340 ns, 70 near and 62 far, the same in three processes;
    the bare atomic 141-171 and 243-273 ns). Which units a kernel's groups land on, and which
    partition holds the pointer, is a draw from one launch to the next (one thread's allocation
    chain came out 200 or 300-325 ns in 7 and 10 of 17 processes of run 22). A lock-step kernel
    waits for its slowest group, so it pays the far figure unless every pair of units its groups
    land on is near: the expectation far - (far - near) · s^t, with s the near units' share
    (`near_unit_share`) and t the pairs (`GROUPS_PER_UNIT_PAIR`) its groups occupy, at most the
    device's. A kernel of one or two groups pays s · near + (1 - s) · far; one of many, far.
    Without near figures (before 2026-11-29, or a device with one distance), the profile's.

    Where the draw was measured in the process that runs the kernel (`group_atomic_latencies`:
    `hetprof validate` times the calibration's one-thread allocation chain, run by each group k
    of a kernel in turn, before its programs), a kernel of g groups pays the largest figure of
    its groups 0 .. g - 1 (all of them where it has more groups than were measured), and a step
    where several lanes allocate that times the ratio of the profile's two far figures
    (`warp_atomic_latency` / `atomic_latency`). A kernel's group k runs on the same unit in
    every launch (group 0 on unit 128 of the H200, benchmarks/gpu_alloc_sm_probe.py,
    2026-11-29), so its groups run where the microbenchmark ran; and a process's one-thread
    loops paid its figure at every size (2026-11-29, card GPU-8e59a6b8: recurrence's process
    drew 206 ns and came out 18-24% over the expectation of 251, serial_loop's drew 299 ns and
    came out 10-11% under; within 1-7% of their process's figure). Why not the work group's
    step by group as well: run by group k it is too noisy to stand for that group (card
    GPU-1013152f, 2026-11-29: group 0's 213-389 ns over 16 processes whose one-thread chain
    gave 296-307 ns), while mandelbrot's kernel of 64 items, all allocating, took 136 µs in a
    process whose group 0 drew near and 191 µs in ones that drew far, the one-thread figures'
    ratio (1.40 against 300 / 205 ns). Where fewer figures were measured than the kernel has
    pairs of units (a report that kept only group 0's), the pairs not measured take the
    expectation over them. A known miss (README, run 26): PolyBench's matrix-vector kernels at
    1 024² (32 warps, each allocating every step) measured 8.0-8.6 ms whether their process drew
    near or far, while this rule moves their prediction about 10%; not understood yet
    (benchmarks/warps/read_loop.lg is the probe)."""
    share = p.near_unit_share
    units = max(1, p.threads_at_once // max(1, p.threads_per_compute_unit))
    pairs = -(-min(max(1, groups), units) // GROUPS_PER_UNIT_PAIR)

    def expected(far: float, near: float, pairs: int) -> float:
        if share <= 0 or near <= 0:
            return far
        return far - (far - near) * min(1.0, share) ** pairs

    figures = p.group_atomic_latencies
    if not figures:
        return (expected(p.atomic_latency, p.atomic_latency_near, pairs),
                expected(p.warp_atomic_latency, p.warp_atomic_latency_near, pairs)
                if p.warp_atomic_latency > 0 else 0.0)
    one = max(figures[:max(1, groups)])
    rest = pairs - -(-len(figures) // GROUPS_PER_UNIT_PAIR)
    if rest > 0:
        one = max(one, expected(p.atomic_latency, p.atomic_latency_near, rest))
    ratio = p.warp_atomic_latency / p.atomic_latency if p.atomic_latency > 0 else 1.0
    return one, one * ratio if p.warp_atomic_latency > 0 else 0.0


@dataclass(slots=True)
class Traffic:
    """What a work group's (or a kernel's) memory requests did, summed over its steps."""

    l1_hits: int = 0  # sectors read from the L1
    l1_misses: int = 0  # sectors read from the L2 (or further): the L2 traffic
    forwarded: int = 0  # reads served by store-to-load forwarding
    stores: int = 0  # sectors stored (write-through to the L2)
    atomics: int = 0  # allocating writes (atomic adds on a region's pointer)
    first_atomics: int = 0  # those of each warp's first allocating step (the kernel's burst)
    footprint: int = 0  # distinct sectors the group touched (its compulsory misses)

    def add(self, other: Traffic, times: int = 1) -> None:
        self.l1_hits += other.l1_hits * times
        self.l1_misses += other.l1_misses * times
        self.forwarded += other.forwarded * times
        self.stores += other.stores * times
        self.atomics += other.atomics * times
        self.first_atomics += other.first_atomics * times
        self.footprint += other.footprint * times


@dataclass(slots=True)
class GroupState:
    """One work group's cache state while its steps are priced: its L1 share (sector -> None,
    least recently used first), every sector it has touched, and each warp's last stored words
    (for forwarding)."""

    capacity: int
    # what an allocating write step costs its warp in this kernel (`allocation_latencies`):
    # one lane allocating, several; None: the parameters' (far) figures
    atomic_latency: float | None = None
    warp_atomic_latency: float | None = None
    l1: OrderedDict = field(default_factory=OrderedDict)
    touched: set = field(default_factory=set)
    last_stored: dict[int, frozenset] = field(default_factory=dict)
    traffic: Traffic = field(default_factory=Traffic)

    def touch(self, sector: int) -> bool:
        """Bring `sector` to the front of the L1; whether it was there (a hit)."""
        l1 = self.l1
        if sector in l1:
            l1.move_to_end(sector)
            return True
        l1[sector] = None
        if len(l1) > self.capacity:
            l1.popitem(last=False)
        if sector not in self.touched:
            self.touched.add(sector)
            self.traffic.footprint += 1
        return False


@dataclass(frozen=True, slots=True)
class KernelTime:
    """A kernel's time under the cache mode and what bounds it."""

    time: float
    latency: float
    dram: float
    l2: float
    atomics: float
    burst: float = 0.0  # the queue of every warp's first allocation, behind the latency
    tail: float = 0.0  # the last allocation's wait, after the whole queue (where there is one)

    @property
    def bound(self) -> str:
        """"latency", "DRAM bandwidth", "L2 bandwidth" or "atomics": the largest term (the
        latency with the first allocations' queue behind it; the allocation queue with its last
        allocation's wait)."""
        terms = {"latency": self.latency + self.burst, "DRAM bandwidth": self.dram,
                 "L2 bandwidth": self.l2, "atomics": self.atomics + self.tail}
        return max(terms, key=terms.__getitem__)


@dataclass(frozen=True, slots=True)
class CacheGpu(GpuModel):
    parameters: GpuParameters
    word_bytes: int = 8
    heap_bytes: int = 0  # the device box's data (pushed and allocated); 0: not known
    copied: bool = False  # whether the host copied words in for the box (it pushes some)
    name: str = "cache"
    stateful = True  # a step's cost depends on the steps before it (graphs.devicebox)

    def with_heap(self, words: int, pushed: float = 0) -> CacheGpu:
        """The model for one device box whose heap (the regions it pushes and the words it
        allocates) holds `words` words, `pushed` of them copied in by the host: an L1 miss finds
        its line in the L2 as often as the L2 holds the heap (`miss_latency`)."""
        return replace(self, heap_bytes=max(0, int(words)) * self.word_bytes, copied=pushed > 0)

    @property
    def walk(self) -> float:
        """What the device box's first kernel pays once after its heap was copied in, in model
        units: the page walks (`page_walk`), and `copy_step` where the host copied words in."""
        p = self.parameters
        return page_walk(p, self.heap_bytes) + (p.copy_step if self.copied else 0.0)

    @property
    def miss_latency(self) -> float:
        """An L1 miss's latency: the L2's where the box's heap fits in the L2, else the L2's
        for the share h = l2_bytes / heap bytes of lines the L2 holds and the DRAM's for the
        rest (the L2 as a cache of random lines of the heap)."""
        p = self.parameters
        if self.heap_bytes <= p.l2_bytes:
            return p.l2_latency
        share = p.l2_bytes / self.heap_bytes
        return share * p.l2_latency + (1 - share) * max(p.dram_latency, p.l2_latency)

    def new_group(self, groups: int = 1) -> GroupState:
        """A work group's fresh state, in a kernel of `groups` work groups: they spread over the
        compute units, and those on one unit share its L1."""
        p = self.parameters
        units = max(1, p.threads_at_once // max(1, p.threads_per_compute_unit))
        most = max(1, p.threads_per_compute_unit // max(1, p.work_group_size))
        sharing = min(most, -(-max(1, groups) // units))
        one, several = allocation_latencies(p, groups)
        return GroupState(max(1, p.l1_bytes // sharing // max(1, p.sector_bytes)), one, several)

    def sector(self, address: int) -> int:
        return address * self.word_bytes // self.parameters.sector_bytes

    def warp_step_in(self, state: GroupState, warp: int, accesses: list[MemoryAccess],
                     other_weights: list[float]) -> StepCost:
        """One warp step of a work group in `state` (updated): `warp` is the warp's index in
        its group."""
        p = self.parameters
        worst = max(other_weights, default=0.0)
        local = [a.address for a in accesses if a.space is _LOCAL]
        degree = conflict_degree(local, p.banks) if local else 0
        local_cycles = degree * p.local_latency
        reads: set[int] = set()
        stores: set[int] = set()
        lines: set[int] = set()
        stored_words: list[int] = []
        forwarded = 0
        last = state.last_stored.get(warp, frozenset())
        for access in accesses:
            if access.space is _LOCAL:
                continue
            if access.kind is _WRITE:
                stores.add(self.sector(access.address))
                stored_words.append(access.address)
            elif access.address in last:
                forwarded += 1
                continue
            else:
                reads.add(self.sector(access.address))
            lines.add(access.address * self.word_bytes // p.line_bytes)
        traffic = state.traffic
        memory = 0.0
        if forwarded:
            traffic.forwarded += forwarded
            memory = p.op
        if reads:
            hits = sum(state.touch(s) for s in sorted(reads))
            traffic.l1_hits += hits
            traffic.l1_misses += len(reads) - hits
            memory = max(memory, p.l1_latency if hits == len(reads) else self.miss_latency)
        if stores:
            for s in sorted(stores):
                state.touch(s)
            traffic.stores += len(stores)
            traffic.atomics += len(stored_words)
            if warp not in state.last_stored:  # the warp's first allocation
                traffic.first_atomics += len(stored_words)
            state.last_stored[warp] = frozenset(stored_words)
            one = p.atomic_latency if state.atomic_latency is None else state.atomic_latency
            several = (p.warp_atomic_latency if state.warp_atomic_latency is None
                       else state.warp_atomic_latency)
            memory = max(memory, several if len(stored_words) > 1 and several > 0 else one)
        latency = max(memory, local_cycles)
        conflicts = len(set(local)) - len({a % p.banks for a in local}) if local else 0
        broadcasts, multicasts = count_sharing(accesses, len(accesses) + len(other_weights))
        return StepCost(max(latency, worst), conflicts, max(degree, 1), broadcasts, multicasts,
                        len(lines), latency, worst)

    def warp_step(self, accesses: list[MemoryAccess], other_weights: list[float]) -> StepCost:
        """A warp step alone, as the first of a fresh work group (the stateless interface)."""
        return self.warp_step_in(self.new_group(), 0, accesses, other_weights)

    def group_step(self, warp_steps: list[StepCost]) -> float:
        """The warps' memory requests queue at their compute unit's load unit, one line per
        `line_time` (UMM's pipeline, with lines for address groups): the step takes the lines of
        all its warps, then the slowest warp's latency; or its slowest other edge."""
        p = self.parameters
        lines = sum(s.address_groups for s in warp_steps)
        latency = max((s.local_cycles for s in warp_steps), default=0.0)
        memory = (lines - 1) * p.line_time + latency if lines else latency
        return max(memory, max((s.other for s in warp_steps), default=0.0))

    def kernel_time(self, latency: float, traffic: Traffic) -> KernelTime:
        """The kernel's time, in model units, from its rounds' lock-step time and its traffic:
        the largest of latency (with the first allocations' queue behind it), DRAM, L2 and
        atomic-rate terms (see the module's docstring)."""
        p = self.parameters
        unit = p.unit_seconds
        sector = p.sector_bytes
        dram = (traffic.footprint * sector / p.dram_bytes_per_s / unit
                if p.dram_bytes_per_s else 0.0)
        l2 = ((traffic.l1_misses + traffic.stores) * sector / p.l2_bytes_per_s / unit
              if p.l2_bytes_per_s else 0.0)
        atomics = traffic.atomics * p.atomic
        burst = traffic.first_atomics * p.atomic
        # The queue's last allocation still waits for its result (UMM: k requests, k + l - 1).
        tail = p.atomic_latency if traffic.atomics else 0.0
        return KernelTime(max(latency + burst, dram, l2, atomics + tail), latency, dram, l2,
                          atomics, burst, tail)
