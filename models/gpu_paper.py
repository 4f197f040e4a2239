"""The GPU memory model exactly as Fig. 9 writes it (`--gpu-mode paper`).

Within one warp step the threads' requests are taken in order with the request state Σ (the
addresses requested so far in this step). A request to local memory whose bank already holds a
different requested address is a bank conflict and costs 2 (BankConfR/W); any other request costs 1
in local memory and l in global memory (NBankConfR/W). The step's weight is the largest edge weight
among the warp's threads (§6.4, Δ(W^j, W^{j+1})); a work-group step is the largest of its warps'.

Reconstructed or read narrowly, and why:
- Bank conflicts are charged on local memory only. Read literally, Fig. 9 would also charge 2 for a
  conflicting *global* access, cheaper than the l of a non-conflicting one, and §7.1 ("each memory
  read and write will cost l") would not hold; banks are a property of Nakano's DMM/shared memory.
- The multicast/broadcast correction 𝔹 is 0: Fig. 9's conflict test already requires a *different*
  address in the same bank (a ≢ 𝒜(ℓ)), so threads reading one address are never counted as a
  conflict and there is nothing to correct. Multicasts and broadcasts are still counted (eq. 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from models.base import GpuModel, MemoryAccess, Space, StepCost
from models.device_profile import GpuParameters


def count_sharing(accesses: list[MemoryAccess], active: int) -> tuple[int, int]:
    """(broadcasts, multicasts) of eq. 6: a broadcast when every active thread reads one address;
    otherwise each address read by more than one thread is a multicast."""
    counts: dict[int, int] = {}
    for access in accesses:
        counts[access.address] = counts.get(access.address, 0) + 1
    if active > 1 and len(counts) == 1 and len(accesses) == active:
        return 1, 0
    return 0, sum(1 for c in counts.values() if c > 1)


@dataclass(frozen=True, slots=True)
class PaperGpu(GpuModel):
    parameters: GpuParameters
    name: str = "paper"

    def warp_step(self, accesses: list[MemoryAccess], other_weights: list[float]) -> StepCost:
        p = self.parameters
        requested: set[int] = set()  # Σ
        banks_used: dict[int, int] = {}
        worst = max(other_weights, default=0.0)
        conflicts = 0
        for access in accesses:
            bank = access.address % p.banks
            conflicting = (access.space is Space.LOCAL and bank in banks_used
                           and banks_used[bank] != access.address)
            if conflicting:
                cost = p.conflict_cost
                conflicts += 1
            else:
                cost = p.local_latency if access.space is Space.LOCAL else p.global_latency
                requested.add(access.address)
                banks_used.setdefault(bank, access.address)
            worst = max(worst, cost)
        broadcasts, multicasts = count_sharing(accesses, len(accesses) + len(other_weights))
        degree = 2 if conflicts else 1
        return StepCost(worst, conflicts, degree, broadcasts, multicasts,
                        other=max(other_weights, default=0.0))

    def group_step(self, warp_steps: list[StepCost]) -> float:
        return max((s.cost for s in warp_steps), default=0.0)
