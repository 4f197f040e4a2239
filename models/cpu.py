"""The CPU world in seconds, by operation class (issue 15), beside the paper's PRAM (models/pram.py).

The paper's PRAM (§5.1) prices every read, write and step alike; it stays the unit model: the
default abstract profile, and a calibrated profile without the fields below, price the CPU world
with `Pram` (PRAM units times `cpu.seconds_per_unit`), exactly as before.

"The CPU" that calibration and validation measure is the OpenCL CPU device (PoCL) running
hetprof's own generated code (models/opencl/codegen.py) on its compute units: every value boxed in
a heap region, every allocation an atomic add on the region's allocation pointer (`ALLOC`), a
top-level parallel form one kernel launch whose work items the device spreads over its compute
units, a parallel form inside a work item a loop. A profile whose `cpu` section has the
by-class fields (`hetprof calibrate` measures each with a microbenchmark,
models/opencl/calibrate_cpu.py) prices each CPU edge of the cost graph (Figs. 5 and 6) by what that
code does for it:

- a read edge δr: one load of a word, `read_s` (stride 1, as a parmap's work items walk their
  vector and the values they allocated in order);
- the read of a vector's slot at an indexing site inside a loop (`v[i]` loads the word at
  v + 1 + i), by how consecutive iterations on one core walk the vector (profiler/access.py's
  patterns) where the profile measured a strided and a cached read and `reads` is "pattern":
  re-reading the same slot, `read_cached_s` (a line in the L1); stepping s < 8 words,
  `read_s` up to `read_stride_s` in proportion to s - 1 of 7; a line or more (a row's length,
  at the sizes the program runs at), or an index computed from the data, `read_stride_s` (a new
  line each read, as the microbenchmark reads past the caches at a line's stride; a random read,
  which no prefetcher foresees, may cost more: not measured); a line's stride whose lines the
  next 7 iterations of the loop around walk again (a matrix's column by neighbouring work
  items), one strided read and seven cached ones in eight. Re-predicting three suite runs both
  ways moved no CPU part by more than 1% (README, "Reads by access pattern"): slot reads are a
  small share of what the generated code spends;
- a write edge δw: every write of λG allocates, so a store plus the region's bump, `write_s +
  alloc_s` (one core alone on the allocation pointer);
- a ⊕ edge and any other step: `op_s` (an integer operation and the code around it);
- the ⊗ of a parallel form: its 4(n - 1) fork and join edges share a parmap's per-task overhead,
  `task_s / 4` each, so n tasks cost about n · task_s;
- the merge δm after a parallel form (`||`, parmap, iota, a reduction level): a kernel launch,
  `launch_s`, where the form is not inside another's thread (then it is a kernel of its own), and
  one step, `op_s`, inside a thread (where the backend runs it as a loop).

Those classes are measured with every compute unit busy, each class alone, and priced one after
another. Serial code, outside every parallel form's threads, is a dependent chain that one work
item runs alone (the backend's one-item kernels): its core overlaps the loads and arithmetic of
a step with the allocation's atomic, and has the memory system to itself. Its reads, writes (and
growth) and steps are priced times `serial_scale`: the measured time of one such chain's step
(`serial_step_s`: two loads, a multiply-add, a bump and a store, the generated code's commonest
serial step, each step loading the cell the one before stored) over what the classes price that
step at. On the H200's host (2026-11-27): 9.9 ns against 16.8 ns, a scale of 0.59. Where the
profile has no `serial_step_s` the scale is 1 and the classes price serial code as before.

The classes are measured with every compute unit busy. A part that fills fewer units (a CPU
kernel runs a work group on one unit: `predict.cpu_units`) may have the cores, caches and memory
system more to itself: under a profile that carries the generated code's map step per unit at 1,
2, 4 and 8 busy units and at all of them (`unit_step_*_s`), its threads' classes are priced times
`busy_scale`, the step's ratio at its units (on the H200's hosts, 2026-11-27: 0.53 to 0.64 up to
4 of 16 units; `at_units`); serial code keeps its measured price. `hetprof calibrate` writes
the step's fields since 2026-11-27's run 10: of the two suite runs predicted and measured on one
host, the larger (109 parts) came out far better with the scale, the smaller (19 parts) worse;
pooled, 15.0% / 46.2% median / p90 against 18.7% / 54.9% (README, "Parts on few units").
A profile without those fields prices every part as on all units.

Two shared resources bound a parallel stretch however many processors run it (`cpu_floor`): the
socket's memory bandwidth, `bytes_per_s` (a stride-1 copy over all compute units), for the words
it moves; and, where more than one compute unit runs it, the allocation pointer, whose cache line
the cores take in turn, `contended_allocation` per allocation when that many compute units
allocate at once (measured as the generated code allocates: the bump, then a store into the new
cell, whose line the next unit's cell shares; at 2, 4, 8 and all units, in case the handoff
costs more the more units wait for the line: on the H200's host it did not, 67–78 ns at each).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from models.base import CpuModel, log2_interpolate
from models.device_profile import CpuParameters, DeviceProfile
from models.pram import Pram
from profiler.access import LINE_WORDS, Pattern, SlotAccess, slot_accesses
from profiler.syntax import Program, Span

if TYPE_CHECKING:  # imported where a walk is priced: an explicit profile never needs sympy
    import sympy as sp

FORK_EDGES = 4
"""Edges of one binary ⊗ (graphs.costgraph.CostGraph.par): a ⊗ of n threads has n - 1 of them."""


@dataclass(frozen=True, slots=True)
class CalibratedCpu(CpuModel):
    """The CPU world by operation class, in seconds (the module's docstring)."""

    parameters: CpuParameters

    def read(self) -> float:
        return self.parameters.read_s

    def write(self) -> float:
        return self.parameters.write_s + self.parameters.alloc_s

    def op(self) -> float:
        return self.parameters.op_s

    def fork(self) -> float:
        return self.parameters.task_s / FORK_EDGES

    def merge(self, in_thread: bool) -> float:
        return self.parameters.op_s if in_thread else self.parameters.launch_s

    def prices_patterns(self) -> bool:
        """Whether a slot read is priced by its access pattern: `reads` is "pattern" and the
        strided and cached reads were measured."""
        p = self.parameters
        return p.reads == "pattern" and p.read_stride_s > 0 and p.read_cached_s > 0

    def slot_read(self, access: SlotAccess, sizes: Mapping[str, Any]) -> Any:
        p = self.parameters
        if not self.prices_patterns():
            return p.read_s
        match access.pattern:
            case Pattern.REREAD:
                return p.read_cached_s
            case Pattern.RANDOM:
                return p.read_stride_s
            case Pattern.WALK:
                return self._walk(access.at(sizes), access.shared)
        return p.read_s

    def _walk(self, stride: sp.Expr, shared: bool) -> Any:
        """A walk's slot read at `stride` words an iteration: one rule, a float where the stride
        is a number, else a sympy expression in the size parameters (the symbolic evaluator's)."""
        import sympy as sp

        p = self.parameters
        line = LINE_WORDS
        shared_line = (p.read_stride_s + (line - 1) * p.read_cached_s) / line
        walking = (sp.Float(p.read_s) + sp.Float(p.read_stride_s - p.read_s)
                   * (sp.Min(stride, line) - 1) / (line - 1))
        price = sp.Piecewise((sp.Float(p.read_cached_s), sp.Eq(stride, 0)),
                             *([(sp.Float(shared_line), sp.Ge(stride, line))] if shared else []),
                             (walking, True))
        return float(price) if stride.is_number else price

    def serial_scale(self) -> float:
        """`serial_step_s` over what the classes price its step at (2 reads, a step, an
        allocating write), where the profile measured it; else 1 (the module's docstring)."""
        p = self.parameters
        step = 2 * p.read_s + p.op_s + p.write_s + p.alloc_s
        return p.serial_step_s / step if p.serial_step_s > 0 and step > 0 else 1.0


def slot_read_weights(program: Program, model: CpuModel,
                      sizes: Mapping[str, Any]) -> dict[Span, Any]:
    """The read of a vector's slot at each indexing site of `program` inside a loop, priced by
    `model` by the site's access pattern (profiler/access.py) at the size parameters `sizes`
    (numbers, or the symbolic evaluator's symbols), where that differs from the model's read:
    what both evaluators charge a site's slot read on the CPU (empty for the PRAM, and where the
    profile does not price patterns)."""
    if not (isinstance(model, CalibratedCpu) and model.prices_patterns()):
        return {}
    read = model.read()
    weights = {span: model.slot_read(access, sizes)
               for span, access in slot_accesses(program).items()}
    return {span: weight for span, weight in weights.items() if weight != read}


def by_class(profile: DeviceProfile) -> bool:
    """Whether `profile` prices the CPU world by operation class: a profile in seconds whose
    `cpu` section has a calibrated read, write and step (`CpuParameters.by_class`)."""
    return profile.units == "seconds" and profile.cpu.by_class


def cpu_model(profile: DeviceProfile) -> CpuModel:
    """The CPU model a profile asks for: `CalibratedCpu` where it prices by class (`by_class`),
    else the PRAM with every weight in seconds (δr, δw, δm and a step times the CPU's seconds per
    unit) or in abstract units."""
    cpu = profile.cpu
    if by_class(profile):
        return CalibratedCpu(cpu)
    scale = profile.unit_scales()[0]
    return Pram(replace(cpu, read=cpu.read * scale, write=cpu.write * scale, op=cpu.op * scale,
                        merge=cpu.merge * scale))


def cpu_floor(profile: DeviceProfile, words: float, allocations: float,
              processors: int = 2, kernels: Sequence[tuple[int, float]] | None = None) -> float:
    """The least time a parallel stretch that moves `words` words of memory and bumps a region's
    allocation pointer `allocations` times takes on the CPU, run on `processors` compute units:
    the larger of its traffic over the socket's bandwidth and its bumps one after another on the
    pointer's cache line. 0 where the profile has neither rate calibrated.

    The bumps. Where `kernels` gives each kernel's compute units and allocations (the device runs
    a work group on one unit, so a kernel of one group runs on one, whatever the others do), each
    kernel's bumps take `allocation_rate` at its own units, one kernel after another. Without
    them, all `allocations` take the contended rate at `processors` where that is more than one
    (a single unit pays its own bumps, `alloc_s` each, on its path)."""
    cpu = profile.cpu
    if not by_class(profile):
        return 0.0
    bandwidth = (words * profile.region.word_bytes / cpu.bytes_per_s if cpu.bytes_per_s
                 else 0.0)
    if kernels is not None:
        bumps = sum(count * allocation_rate(cpu, units) for units, count in kernels)
    else:
        bumps = allocations * contended_allocation(cpu, processors) if processors > 1 else 0.0
    return max(bandwidth, bumps)


LAUNCH_WORDS = (10, 16, 19, 22)  # log2 of the words copied in before the launches measured


def launch_after(cpu: CpuParameters, words: float) -> float:
    """A CPU kernel's launch after the host moved `words` words in (an `on`'s inputs, which the
    backend's runner copies before its kernels): interpolated, linearly in log2 of the words,
    between the launches measured after 2^10 (`launch_s`), 2^16, 2^19 and 2^22 words, and held
    at the ends. A copy larger than the caches leaves the kernels' launch cold: on the H200's
    host about 20 µs after 2^10 words and 39 µs after 2^22 (benchmarks/cpu_launch_probe.py).
    `launch_s` alone where the others were not measured."""
    points = [cpu.launch_s, cpu.launch_after_16_s, cpu.launch_after_19_s, cpu.launch_after_22_s]
    if not all(points[1:]):
        return cpu.launch_s
    return log2_interpolate(LAUNCH_WORDS, points, words)


UNIT_STEPS = (1, 2, 4, 8)  # the busy compute units the map step is measured at, beside all


def busy_scale(cpu: CpuParameters, units: int) -> float:
    """What a thread's read, write, allocation, step and task cost while only `units` compute
    units are busy, as a fraction of their calibrated cost (measured with every unit busy): the
    generated code's map step per unit at that many units over the same at all of them
    (`unit_step_1_s` ... `unit_step_all_s`), interpolated in log2 of the units between the
    measured points and held at the ends; 1 where the step was not measured.

    On the H200's host (16 compute units, 2026-11-27, benchmarks/cpu_units_probe.py) the step
    took 10-11 ns a unit with 1 to 4 units busy and 18.7 ns with all 16, the stores 0.4-0.6
    times and the loads 0.6-0.9 times their all-units cost: a unit alone has a core, its caches
    and its share of the memory system to itself, where 16 units are two threads on each of 8
    cores (8 busy units measured 11 ns once and 20 ns once: whether they share cores is the
    operating system's choice)."""
    whole = cpu.unit_step_all_s
    if whole <= 0:
        return 1.0
    points = [(k, t / whole) for k, t in zip(UNIT_STEPS, (cpu.unit_step_1_s, cpu.unit_step_2_s,
                                                         cpu.unit_step_4_s, cpu.unit_step_8_s),
                                            strict=True)
              if t > 0 and (not cpu.processors or k < cpu.processors)]
    points.append((cpu.processors or max(units, UNIT_STEPS[-1] * 2), 1.0))
    if units <= points[0][0]:
        return points[0][1]
    for (k0, s0), (k1, s1) in itertools.pairwise(points):
        if units <= k1:
            return s0 + (s1 - s0) * math.log2(units / k0) / math.log2(k1 / k0)
    return points[-1][1]


def at_units(profile: DeviceProfile, units: int) -> DeviceProfile:
    """`profile` with a thread's CPU classes (read, write, allocation bump, step, task) priced as
    on `units` busy compute units (`busy_scale`); serial code, priced from `serial_step_s`
    (`CalibratedCpu.serial_scale`), keeps its price, and launches, the contended pointer and the
    socket's bandwidth are their own measurements. The profile itself where it does not price the
    CPU by class or the scale is 1."""
    if not by_class(profile):
        return profile
    cpu = profile.cpu
    scale = busy_scale(cpu, units)
    if scale == 1.0:
        return profile
    return replace(profile, cpu=replace(cpu, read_s=cpu.read_s * scale,
                                        read_stride_s=cpu.read_stride_s * scale,
                                        read_cached_s=cpu.read_cached_s * scale,
                                        write_s=cpu.write_s * scale,
                                        alloc_s=cpu.alloc_s * scale, op_s=cpu.op_s * scale,
                                        task_s=cpu.task_s * scale))


def allocation_rate(cpu: CpuParameters, units: int) -> float:
    """The wall time of one bump of a region's pointer while `units` compute units allocate from
    it: the contended measurement (`contended_allocation`) on more than one unit, `alloc_s` on
    one. benchmarks/cpu_alloc_spacing_probe.py measured on the H200's host that the contended
    rate holds however much work separates two allocations (60-100 ns at 2 to 16 units, 0 to 128
    multiply-adds apart) and that one unit alone pays 10-13 ns."""
    return contended_allocation(cpu, units) if units > 1 else cpu.alloc_s


def contended_allocation(cpu: CpuParameters, units: int) -> float:
    """The wall time per allocation while `units` compute units allocate from one pointer: the
    measurement at that many units (`contended_alloc_2_s`, `_4_s`, `_8_s`, and
    `contended_alloc_s` at all of them), interpolated in log2 of the units between the measured
    points and held at the ends; the all-units value where no other was measured."""
    points = sorted({(k, t) for k, t in ((2, cpu.contended_alloc_2_s),
                                         (4, cpu.contended_alloc_4_s),
                                         (8, cpu.contended_alloc_8_s)) if t > 0 and
                     (not cpu.processors or k < cpu.processors)}
                    | ({(cpu.processors or units, cpu.contended_alloc_s)}
                       if cpu.contended_alloc_s > 0 else set()))
    if not points:
        return 0.0
    if units <= points[0][0]:
        return points[0][1]
    for (k0, t0), (k1, t1) in itertools.pairwise(points):
        if units <= k1:
            share = math.log2(units / k0) / math.log2(k1 / k0)
            return t0 + share * (t1 - t0)
    return points[-1][1]
