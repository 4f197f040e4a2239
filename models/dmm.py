"""Nakano's DMM and UMM (§5.2) as the GPU memory model (`--gpu-mode dmm`).

- Local memory is a DMM: w banks, address a in bank a mod w. Requests of one warp step to distinct
  addresses in one bank serialize, so the step costs the conflict degree (the most distinct
  addresses in one bank) times the local latency; threads reading one address are served at once
  (multicast/broadcast). A warp reading at stride s has degree gcd(s, w): none for s = 1 or 33, w-way
  for s = w.
- Global memory is a UMM: addresses in one address group A[j] = m[j·w .. (j+1)·w - 1] are served by
  one request, and k pipelined requests take k + l - 1 time units.
- A work group's warps are dispatched round-robin into the same pipeline, so a warp-box step costs
  the requests of all its warps plus one latency: Σ requests + l - 1 for global memory, Σ degrees for
  local memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.base import GpuModel, MemoryAccess, Space, StepCost
from models.device_profile import GpuParameters
from models.gpu_paper import count_sharing


def conflict_degree(addresses: list[int], banks: int) -> int:
    """The largest number of distinct addresses that fall in one bank."""
    per_bank: dict[int, set[int]] = {}
    for address in addresses:
        per_bank.setdefault(address % banks, set()).add(address)
    return max((len(a) for a in per_bank.values()), default=0)


@dataclass(frozen=True, slots=True)
class DmmGpu(GpuModel):
    parameters: GpuParameters
    name: str = "dmm"

    def warp_step(self, accesses: list[MemoryAccess], other_weights: list[float]) -> StepCost:
        p = self.parameters
        local = [a.address for a in accesses if a.space is Space.LOCAL]
        global_ = [a.address for a in accesses if a.space is Space.GLOBAL]
        degree = conflict_degree(local, p.banks)
        groups = len({address // p.banks for address in global_})
        local_cycles = degree * p.local_latency
        memory = local_cycles + (groups + p.global_latency - 1 if groups else 0)
        other = max(other_weights, default=0.0)
        cost = max(memory, other)
        conflicts = len(set(local)) - len({a % p.banks for a in local}) if local else 0
        broadcasts, multicasts = count_sharing(accesses, len(accesses) + len(other_weights))
        return StepCost(cost, conflicts, max(degree, 1), broadcasts, multicasts, groups,
                        local_cycles, other)

    def group_step(self, warp_steps: list[StepCost]) -> float:
        p = self.parameters
        groups = sum(s.address_groups for s in warp_steps)
        memory = sum(s.local_cycles for s in warp_steps)
        if groups:
            memory += groups + p.global_latency - 1
        return max(memory, max((s.other for s in warp_steps), default=0.0))
