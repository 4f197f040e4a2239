"""The abstract base of hetprof's machine models (§5): what a memory access costs.

A CPU model prices each access alone (PRAM). A GPU model prices one lock-step step of a warp and
of a work group, because on the GPU an access's cost depends on what the other threads of the warp
request in the same step (the request state Σ of Fig. 9).
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from profiler.access import SlotAccess


class AccessKind(Enum):
    READ = "read"
    WRITE = "write"


class Space(Enum):
    """Where on the GPU an access goes: global memory (latency l) or local memory (latency 1)."""

    GLOBAL = "global"
    LOCAL = "local"


class MemoryAccess(NamedTuple):
    """One memory request: which word (its global address 𝒜(R, o)), read or write, and where.

    A named tuple rather than a frozen dataclass: the evaluator makes one for every memory edge
    of every GPU thread, and a tuple is made several times faster."""

    kind: AccessKind
    address: int
    space: Space = Space.GLOBAL


@dataclass(frozen=True, slots=True)
class StepCost:
    """The cost of one lock-step step and what it counted."""

    cost: float
    conflicts: int = 0  # bank-conflicting requests (beyond the first to each bank)
    degree: int = 1  # the largest number of distinct addresses requested from one bank
    broadcasts: int = 0  # steps in which every active thread read one address
    multicasts: int = 0  # addresses read by more than one thread (but not all)
    address_groups: int = 0  # distinct UMM address groups of global requests
    local_cycles: float = 0.0  # time the local-memory requests of this step occupy the banks
    other: float = 0.0  # the largest weight of a non-memory edge in this step


class CpuModel(ABC):
    """Costs of reads, writes, operations, forks and merges on the CPU world."""

    @abstractmethod
    def read(self) -> float: ...

    @abstractmethod
    def write(self) -> float: ...

    @abstractmethod
    def op(self) -> float: ...

    @abstractmethod
    def fork(self) -> float:
        """Each of the four edges of a binary ⊗ (Fig. 5's fork and join)."""

    @abstractmethod
    def merge(self, in_thread: bool) -> float:
        """δm, merging the tables after a parallel form; `in_thread`: the form is inside another
        parallel form's thread."""

    def slot_read(self, access: SlotAccess, sizes: Mapping[str, Any]) -> Any:
        """The read of a vector's slot at an indexing site inside a loop, by the site's access
        pattern (profiler/access.py) at the size parameters `sizes` (numbers, or symbols: then
        an expression in them); the paper's PRAM prices it as any read."""
        return self.read()

    def serial_scale(self) -> float:
        """The factor on a read's, a write's (and a region's growth's) and a step's cost outside
        every parallel form's threads, where one compute unit runs a dependent chain alone
        (models/cpu.py); 1 for the paper's PRAM, which prices every context alike."""
        return 1.0


class GpuModel(ABC):
    """Costs of one warp step, given each active thread's edge in that step."""

    name: str
    stateful = False  # True: a step's cost depends on the group's earlier steps (models.gpu_cache)

    @abstractmethod
    def warp_step(self, accesses: list[MemoryAccess], other_weights: list[float]) -> StepCost:
        """accesses: the memory requests of the warp's active threads in this step; other_weights:
        the weights of the non-memory edges the other active threads take in the same step."""

    @abstractmethod
    def group_step(self, warp_steps: list[StepCost]) -> float:
        """The weight of one warp-box step Δ(W^j, W^{j+1}) from its warps' steps."""


def log2_interpolate(exponents: Sequence[int], points: Sequence[float], amount: float) -> float:
    """A quantity measured at amounts 2^e (e in `exponents`, increasing) as `points`, at
    `amount`: linear in log2 of the amount between two measured ones, held at the ends (a CPU
    kernel's launch after a copy, models/cpu.py; a GPU heap's page walks, models/gpu_cache.py)."""
    at = math.log2(max(amount, 1.0))
    if at <= exponents[0]:
        return points[0]
    for (low, high), (a, b) in zip(itertools.pairwise(exponents), itertools.pairwise(points),
                                   strict=True):
        if at <= high:
            return a + (b - a) * (at - low) / (high - low)
    return points[-1]
