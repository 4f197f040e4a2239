"""Counting a device box's DRAM traffic and arithmetic from its cost paths, for the roofline
baseline (models/roofline.py; issue 13's comparison of hetprof with a roofline model).

Each phase of an `on` body's cost paths (graphs/devicebox.py: a kernel, or a stretch of serial
code) is counted on its own:
- words read: every read edge to global memory, plus, in a kernel of an `on local [ρ]` body, the
  words each work group stages into local memory (`Phase.staged`, read from global memory once per
  work group); reads of local memory are not DRAM traffic;
- words written: every write edge to global memory stores the words it allocates (one for an int,
  two for a pair, the n slots of a parmap's result vector, which the kernel's threads store), at
  least one; under the paper's rules a kernel of an `on local` body also writes one word back per
  work group (§7.1.2);
- operations: every edge that is not a memory access (one GPU step each in hetprof's model),
  except a parallel form's bookkeeping (its merge of configuration tables is the host's work);
- launches: whether the phase is a kernel launch of its own (`devicebox.launches_kernel`);
- threads and allocations: its work items, and its global write edges (each bumps a region's
  pointer once), for the CPU part's floor (models.cpu.cpu_floor).
"""

from __future__ import annotations

from graphs.devicebox import GSub, Phase, count_phase
from graphs.semantics.explicit import OnRecord
from models.device_profile import DeviceProfile, GpuParameters
from models.roofline import KernelCounts, roofline_available, roofline_of_kernels


def phase_counts(phase: Phase, gpu: GpuParameters) -> KernelCounts:
    """The global words read and written, operations and launches of one phase (module doc;
    graphs.devicebox.count_phase, which keeps them on every phase it prices)."""
    return count_phase(phase, gpu)


def kernel_counts(paths: GSub | None, gpu: GpuParameters) -> list[KernelCounts]:
    """Each phase's counts, in order, for an `on` body's cost paths (`OnRecord.paths`)."""
    return [phase_counts(phase, gpu) for phase in paths or []]


def roofline_of_paths(paths: GSub | None, profile: DeviceProfile) -> float | None:
    """The roofline's prediction, in seconds, for the kernels of these cost paths under the
    profile's calibrated rates; None where the profile has none (models.roofline)."""
    return roofline_of_kernels(kernel_counts(paths, profile.gpu), profile)


def gpu_bound(transfer: float, kernel: float, counts: list[KernelCounts] | None,
              profile: DeviceProfile) -> str:
    """What bounds an `on`'s time on the GPU, named as Intel Advisor's offload report names it:
    "transfer" (its growth, transfers in and out and merge: `transfer`), "launch" (its kernels'
    launches) or, for the rest of `kernel`, "memory" or "compute": whichever of its kernels'
    global words and operations weighs more, under calibrated rates the roofline's two times
    (bytes over the DRAM bandwidth, operations over the issue rate), else the GPU model's own
    weights (a global access l, an operation 1); "kernel" where the counts are unknown.
    `transfer` and `kernel` are in one unit (the CPU graph's, as the device-box edge's parts
    are)."""
    counts = counts or []
    launch = min(kernel, sum(c.launches for c in counts) * profile.gpu.launch
                 * profile.unit_scales()[1])
    terms = {"transfer": transfer, "launch": launch, kernel_side(counts, profile): kernel - launch}
    return max(terms, key=lambda term: terms[term])


def kernel_side(counts: list[KernelCounts] | None, profile: DeviceProfile) -> str:
    """Whether kernels are bound by "memory" or "compute" (`gpu_bound`'s rule: their global
    words against their operations, weighed by the roofline's rates where the profile has them,
    else by the GPU model's l and 1); "kernel" where the counts are unknown."""
    if not counts:
        return "kernel"
    gpu = profile.gpu
    words = sum(c.words for c in counts)
    operations = sum(c.operations for c in counts)
    if roofline_available(profile):
        memory = words * profile.region.word_bytes / gpu.dram_bytes_per_s
        compute = operations / gpu.ops_per_s
    else:
        memory, compute = words * gpu.global_latency, float(operations)
    return "memory" if memory >= compute else "compute"


def on_bound(record: OnRecord, profile: DeviceProfile) -> str:
    """`gpu_bound` of an explicitly evaluated `on`: its device-box edge's parts, and the counts
    its device box kept of each kernel (`PhaseCost.counts`)."""
    info = record.info
    counts = [phase.counts for phase in record.box.phases if phase.counts is not None]
    return gpu_bound(info.total - info.kernel, info.kernel, counts or None, profile)
