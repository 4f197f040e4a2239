"""The roofline baseline (Williams, Waterman and Patterson, "Roofline", CACM 2009), against which
`hetprof validate` measures the cost semantics (issue 13).

A kernel takes its launch plus the longer of moving its bytes through global memory at the
device's DRAM bandwidth and issuing its operations at the device's arithmetic issue rate:

    seconds = launch + max(bytes / dram_bytes_per_s, ops / ops_per_s)

Both rates come from the same calibrated profile as hetprof's own model (`gpu.dram_bytes_per_s`
and `gpu.ops_per_s`, measured by `hetprof calibrate`'s microbenchmarks; the launch is
`gpu.launch` in GPU units). The counts come from the cost paths (graphs/kernel_counts.py), or
from any other counter (a symbolic evaluator) through `roofline_seconds`.

A word is `WORD_BYTES` bytes: the OpenCL backend keeps every λG value in a heap of 64-bit
integers (models/opencl/runner.py), so each global-memory access of a cost path moves 8 bytes on
the device, whatever `region.word_bytes` (the transfer providers' unit) says.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.device_profile import DeviceProfile

WORD_BYTES = 8
"""Bytes moved by one global-memory access of a cost path: the backend's heap words are int64."""


@dataclass(frozen=True, slots=True)
class KernelCounts:
    """What one kernel (or one launched serial stretch) of a device box does, counted from its
    cost paths: global-memory words read and written (local-memory accesses are not DRAM
    traffic), operations (edges that are not memory accesses), and whether it is a launch."""

    words_read: int = 0
    words_written: int = 0
    operations: int = 0
    launches: int = 1
    threads: int = 1  # the kernel's work items (1 for serial code)
    allocations: int = 0  # its global write edges, each one bump of a region's pointer

    @property
    def words(self) -> int:
        return self.words_read + self.words_written


def roofline_available(profile: DeviceProfile) -> bool:
    """Whether the profile has the roofline's rates: both calibrated, in seconds."""
    gpu = profile.gpu
    return profile.units == "seconds" and gpu.dram_bytes_per_s > 0 and gpu.ops_per_s > 0


def roofline_seconds(words: float, operations: float, profile: DeviceProfile,
                     launches: float = 1) -> float | None:
    """launches · launch + max(words · WORD_BYTES / bandwidth, operations / issue rate), in
    seconds; None where the profile has no calibrated rates (the roofline is then unavailable,
    never invented). `words` and `operations` may come from any counter."""
    if not roofline_available(profile):
        return None
    gpu = profile.gpu
    launch = gpu.launch * gpu.unit_seconds
    memory = words * WORD_BYTES / gpu.dram_bytes_per_s
    arithmetic = operations / gpu.ops_per_s
    return launches * launch + max(memory, arithmetic)


def roofline_of_kernels(kernels: list[KernelCounts], profile: DeviceProfile) -> float | None:
    """The roofline of a device box: each kernel bounded on its own (a kernel cannot overlap the
    next one's traffic with its own arithmetic), the kernels one after another."""
    if not roofline_available(profile):
        return None
    total = 0.0
    for kernel in kernels:
        seconds = roofline_seconds(kernel.words, kernel.operations, profile, kernel.launches)
        assert seconds is not None  # the rates are available
        total += seconds
    return total
