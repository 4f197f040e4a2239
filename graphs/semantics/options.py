"""The knobs of one evaluation under the cost semantics, shared by the explicit and the symbolic
evaluator: the device profile (the machine models' numbers), the GPU mode, the limits that stop a
runaway program, and what the GPU does when a region fills up (Fig. 9's NoExpandWE)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.device_profile import DeviceProfile

if TYPE_CHECKING:
    from graphs.semantics.explicit import OffloadObserver

DEFAULT_MAX_STEPS = 5_000_000
DEFAULT_MAX_DEPTH = 20_000
DEFAULT_MAX_GRAPH = 6_000_000
"""The most cost-graph nodes and GPU path edges an explicit evaluation builds by default. With
what comes with them (values, regions, then the schedule and the cost-by-source tree) each took
150 to 700 bytes of peak memory on the examples at n = 10^5 (700: zipmul_cpu, whose analysis
holds most; 290: zipmul; 320: dc_sum and nbody; measured 2026-11-27), so 6 M are about 1-4 GB."""
GRAPH_CHECK_EVERY = 65_536  # evaluation steps between two checks of the graph's size


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    """Knobs of one evaluation."""

    profile: DeviceProfile = DeviceProfile()
    gpu_mode: str | None = None  # "paper" | "dmm"; None: the profile's
    max_steps: int = DEFAULT_MAX_STEPS
    max_depth: int = DEFAULT_MAX_DEPTH
    max_graph: int = DEFAULT_MAX_GRAPH  # cost-graph nodes plus GPU path edges
    grow_gpu_regions: bool = True  # Harlan's retry; False: NoExpandWE is an error (Fig. 9)
    observer: OffloadObserver | None = None
