"""Choosing the GPU model by mode name."""

from __future__ import annotations

from models.base import GpuModel
from models.device_profile import GPU_MODES, DeviceProfile
from models.dmm import DmmGpu
from models.gpu_cache import CacheGpu
from models.gpu_paper import PaperGpu
from profiler.errors import ParameterError


def gpu_model(profile: DeviceProfile, mode: str | None = None) -> GpuModel:
    """The GPU model for `mode` ("paper", "dmm" or "cache"; default: the profile's)."""
    mode = mode or profile.gpu.mode
    if mode == "paper":
        return PaperGpu(profile.gpu)
    if mode == "dmm":
        return DmmGpu(profile.gpu)
    if mode == "cache":
        return CacheGpu(profile.gpu, profile.region.word_bytes)
    raise ParameterError(f"unknown GPU mode {mode!r}; choose one of {', '.join(GPU_MODES)}")
