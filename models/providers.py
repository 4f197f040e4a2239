"""Primitive cost providers (§6.6): Δa for allocation, ω*β and ω†β for host↔device transfers.

They are the extrinsic costs the semantics cannot derive; each is a small callable object so that a
user (or `hetprof calibrate`) can plug in another. The defaults read a `DeviceProfile`:
Δa(n) = latency + per_word · n, and a transfer of n words costs latency + n / words_per_unit,
piecewise where the profile gives pieces.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from models.device_profile import AllocationParameters, DeviceProfile, TransferParameters


class AllocationProvider(ABC):
    """Δa : ℕ → cost (§6.6 i)."""

    @abstractmethod
    def __call__(self, words: int) -> float: ...


class TransferProvider(ABC):
    """ω*β or ω†β : memory → cost (§6.6 ii, eq. 7)."""

    @abstractmethod
    def __call__(self, words: int) -> float: ...


@dataclass(frozen=True, slots=True)
class LinearAllocation(AllocationProvider):
    parameters: AllocationParameters

    def __call__(self, words: int) -> float:
        return self.parameters.latency + self.parameters.per_word * words


@dataclass(frozen=True, slots=True)
class LinearTransfer(TransferProvider):
    """latency + words / words_per_unit, or the first piece whose bound covers the size."""

    parameters: TransferParameters

    def __call__(self, words: int) -> float:
        if words <= 0:
            return 0.0
        for piece in self.parameters.pieces:
            if words <= piece.up_to_words:
                return piece.latency + words / piece.words_per_unit
        return self.parameters.latency + words / self.parameters.words_per_unit


@dataclass(frozen=True, slots=True)
class CostProviders:
    allocation: AllocationProvider
    host_to_device: TransferProvider
    device_to_host: TransferProvider


def providers_for(profile: DeviceProfile) -> CostProviders:
    return CostProviders(
        LinearAllocation(profile.allocation),
        LinearTransfer(profile.host_to_device),
        LinearTransfer(profile.device_to_host),
    )
