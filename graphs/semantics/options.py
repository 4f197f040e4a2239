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


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    """Knobs of one evaluation."""

    profile: DeviceProfile = DeviceProfile()
    gpu_mode: str | None = None  # "paper" | "dmm"; None: the profile's
    max_steps: int = DEFAULT_MAX_STEPS
    max_depth: int = DEFAULT_MAX_DEPTH
    grow_gpu_regions: bool = True  # Harlan's retry; False: NoExpandWE is an error (Fig. 9)
    observer: OffloadObserver | None = None
