"""The roofline baseline (models/roofline.py): its arithmetic on hand-computed counts, and no
prediction where the profile has no calibrated rates."""

from __future__ import annotations

import pytest

from models.device_profile import DeviceProfile
from models.roofline import WORD_BYTES, KernelCounts, roofline_of_kernels, roofline_seconds


def calibrated(bandwidth: float, rate: float, launch_s: float) -> DeviceProfile:
    profile = DeviceProfile(units="seconds").with_cpu(seconds_per_unit=1e-9)
    return profile.with_gpu(seconds_per_unit=1e-6, launch=launch_s / 1e-6,
                            dram_bytes_per_s=bandwidth, ops_per_s=rate)


def test_word_is_the_backends_int64():
    assert WORD_BYTES == 8


def test_compute_bound_and_memory_bound_kernels():
    profile = calibrated(8e9, 1e10, 1e-6)
    # 1000 words = 8000 bytes: 1 µs of traffic; 50 000 operations: 5 µs of issue
    assert roofline_seconds(1000, 50_000, profile) == pytest.approx(1e-6 + 5e-6)
    # 10^6 words: 1 ms of traffic beats 5 µs of issue
    assert roofline_seconds(10**6, 50_000, profile) == pytest.approx(1e-6 + 1e-3)
    assert roofline_seconds(1000, 0, profile, launches=0) == pytest.approx(1e-6)


def test_kernels_are_bounded_one_by_one():
    profile = calibrated(8e9, 1e10, 1e-6)
    kernels = [KernelCounts(500, 500, 0, 1), KernelCounts(0, 0, 50_000, 1),
               KernelCounts(1, 0, 0, 0)]
    expected = (1e-6 + 1e-6) + (1e-6 + 5e-6) + 8 / 8e9
    assert roofline_of_kernels(kernels, profile) == pytest.approx(expected)
    assert kernels[0].words == 1000


@pytest.mark.parametrize("profile", [
    DeviceProfile(),  # abstract units
    calibrated(0.0, 1e10, 1e-6),
    calibrated(8e9, 0.0, 1e-6),
])
def test_uncalibrated_roofline_is_unavailable(profile):
    assert roofline_seconds(1000, 1000, profile) is None
    assert roofline_of_kernels([KernelCounts(1, 1, 1)], profile) is None
