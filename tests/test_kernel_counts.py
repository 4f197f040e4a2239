"""Counting a device box's global words and operations from its cost paths
(graphs/kernel_counts.py), by hand on examples/zipmul.lg."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import ROOT

from graphs.kernel_counts import (
    gpu_bound,
    kernel_counts,
    kernel_side,
    on_bound,
    roofline_of_paths,
)
from graphs.semantics.explicit import OffloadCollector, evaluate
from graphs.semantics.options import EvaluationOptions
from models.device_profile import DeviceProfile
from models.roofline import KernelCounts
from profiler.checker import bind_parameters, check_program
from profiler.parser import parse


def zipmul_paths(n: int):
    path = ROOT / "examples" / "zipmul.lg"
    checked = check_program(parse(path.read_text(), "examples/zipmul.lg"))
    collector = OffloadCollector()
    evaluate(checked, bind_parameters(checked, {"n": n}), EvaluationOptions(observer=collector))
    (offload,) = collector.offloads
    assert offload.on is not None
    return offload.on.paths


def test_zipmul_counted_by_hand():
    """zipmul's `on parmap (λp. fst p * snd p) arrs` at n = 64, by hand:
    - the parmap reads its vector `arrs` once (serial bookkeeping, no kernel launch): 1 word;
    - each of the 64 threads: `fst p` and `snd p` each read the pair (2 words), `*` reads its two
      ints (2 words) and writes the product (1 word); the ⊕ joining the operands is its one
      operation;
    - the result vector: its 64 slots written (the merge of tables is the host's, no operation).
    Each thread's write allocates once: 64 allocations in the kernel of 64 threads.
    """
    counts = kernel_counts(zipmul_paths(64), DeviceProfile().gpu)
    # (words read, written, operations, launches, threads, allocations): the result vector is
    # one allocation of 64 words
    assert counts == [KernelCounts(1, 0, 0, 0, 1, 0), KernelCounts(4 * 64, 64, 64, 1, 64, 64),
                      KernelCounts(0, 64, 0, 0, 1, 1)]
    assert sum(c.words for c in counts) == 257 + 128


def test_zipmul_roofline_from_its_counts():
    profile = DeviceProfile(units="seconds").with_cpu(seconds_per_unit=1e-9).with_gpu(
        seconds_per_unit=1e-6, launch=2.0, dram_bytes_per_s=1e9, ops_per_s=1e8)
    # vector read 8 B; kernel: launch 2 µs + max(320 words · 8 B / 1 GB/s, 64 / 10^8 per s);
    # result vector 64 words · 8 B
    expected = 8 / 1e9 + (2e-6 + max(320 * 8 / 1e9, 64 / 1e8)) + 64 * 8 / 1e9
    assert roofline_of_paths(zipmul_paths(64), profile) == pytest.approx(expected)
    assert roofline_of_paths(zipmul_paths(64), DeviceProfile()) is None


def test_what_bounds_an_on_on_the_gpu():
    """`gpu_bound`: the largest of the transfers, the launches and the kernels' rest, the rest
    named by the heavier of its words (at l each) and operations (at 1 each)."""
    profile = DeviceProfile().with_gpu(global_latency=10.0, launch=5.0)
    reads = [KernelCounts(10, 0, 50, 1, 64, 0)]  # 10 words · 10 > 50 operations
    adds = [KernelCounts(1, 0, 50, 1, 64, 0)]  # 1 word · 10 < 50 operations
    assert gpu_bound(100.0, 40.0, reads, profile) == "transfer"
    assert gpu_bound(1.0, 40.0, reads, profile) == "memory"
    assert gpu_bound(1.0, 40.0, adds, profile) == "compute"
    # two launches of 5 outweigh a kernel's 8 of the rest
    assert gpu_bound(1.0, 18.0, [replace(adds[0], launches=2)], profile) == "launch"
    assert gpu_bound(1.0, 40.0, None, profile) == "kernel"  # counts unknown
    # calibrated rates: the roofline's memory and compute times decide
    rates = DeviceProfile(units="seconds").with_gpu(seconds_per_unit=1e-9, dram_bytes_per_s=8e9,
                                                     ops_per_s=1e9)
    assert gpu_bound(0.0, 1.0, [KernelCounts(100, 0, 50, 0, 64, 0)], rates) == "memory"
    assert gpu_bound(0.0, 1.0, [KernelCounts(10, 0, 500, 0, 64, 0)], rates) == "compute"


def test_a_device_box_keeps_its_kernels_counts():
    """Without an observer the explicit evaluation keeps no GPU paths, but each phase of its
    device box keeps the counts its paths gave (`PhaseCost.counts`), so that an `on` evaluated
    explicitly (hetprof place's irregular sites, every row of hetprof rewrite) is still named
    memory- or compute-bound."""
    path = ROOT / "examples" / "zipmul.lg"
    checked = check_program(parse(path.read_text(), "examples/zipmul.lg"))
    evaluation = evaluate(checked, bind_parameters(checked, {"n": 64}), EvaluationOptions())
    (record,) = evaluation.ons
    assert record.paths is None
    kept = [phase.counts for phase in record.box.phases]
    assert kept == kernel_counts(zipmul_paths(64), DeviceProfile().gpu)
    # zipmul's words (385 at l = 32) outweigh its 64 operations; with ten times the
    # operations they would not
    assert kernel_side(kept, DeviceProfile().with_gpu(global_latency=32.0)) == "memory"
    more = [replace(c, operations=c.operations * 1000) for c in kept]
    assert kernel_side(more, DeviceProfile().with_gpu(global_latency=32.0)) == "compute"
    assert on_bound(record, DeviceProfile()) == gpu_bound(
        record.info.total - record.info.kernel, record.info.kernel, kept, DeviceProfile())
