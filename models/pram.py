"""The PRAM model of the CPU (§5.1, Fortune and Wyllie 1978): every operation costs one unit."""

from __future__ import annotations

from dataclasses import dataclass

from models.base import CpuModel
from models.device_profile import CpuParameters


@dataclass(frozen=True, slots=True)
class Pram(CpuModel):
    """CRCW PRAM: reads, writes and operations at unit cost, or the profile's δr, δw (Fig. 9); a
    ⊗'s edges cost a step, and δm is the profile's `merge` wherever the form is."""

    parameters: CpuParameters = CpuParameters()

    def read(self) -> float:
        return self.parameters.read

    def write(self) -> float:
        return self.parameters.write

    def op(self) -> float:
        return self.parameters.op

    def fork(self) -> float:
        return self.parameters.op

    def merge(self, in_thread: bool) -> float:
        return self.parameters.merge
