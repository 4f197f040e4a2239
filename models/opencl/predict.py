"""Validation's predictions from the symbolic profiles: what `hetprof validate` compares with the
measured times at sizes the explicit interpreter cannot reach (issue 13: "where a program is
regular, `validate` and `validate-rewrites` take their predictions from the symbolic profile (its
cost does not grow with n)").

For a regular program, one symbolic evaluation of its GPU placement and one of its CPU placement
(every `on` body a cost centre, `profiler.transform.centre_on_bodies`) price any size: per `on`,
the kernel under the report's GPU model and under each baseline model (the same evaluation priced
with the other mode's calibrated profile), the roofline from the kernels' counted words and
operations (graphs.kernel_counts, models.roofline), and the CPU part.

Region growth. The symbolic evaluator follows a parallel form that may grow a region only where
growing costs what a write costs (which thread grows decides its path's weight). Under a
calibrated profile it does not, so these profiles price growth as a write (`growth_as_write`).
That leaves the kernels unchanged (a kernel never grows a region: Fig. 9, NoExpandWE) and drops
the CPU part's Δa charges, which the measured run does not pay either: the OpenCL backend sizes
every region before the kernel starts (models/opencl/runner.py). `validate`'s explicit path
prices growth the same way (before issue 15's suite run it kept the Δa charges, and a serial loop
that grows its region at every step came out up to 8 times its measured CPU time).

The CPU part is a cost centre's time under the 1DF schedule on the OpenCL CPU device's compute
units: "the CPU" is that device running hetprof's own generated code, the same kernels the GPU
runs (models/cpu.py says why that is the fair comparison). The explicit path simulates that
schedule; the symbolic profile gives the centre's serial edges and parallel stretches, and every
greedy schedule on P processors takes the serial edges' weight plus, for each stretch of work W and
span S, between max(W/P, S) (Brent's lower bound) and W/P + (1 - 1/P)·S (Graham's upper bound)
(graphs.symbolic_profile.shape_time). The prediction is the middle of the two; the report keeps
both bounds. For the parmaps of the suite at the sizes it runs, W/P is many times S, and the two
bounds are within a few percent of each other. P is the device's compute units, or fewer where
the `on`'s widest kernel has fewer work groups (models.opencl.codegen.WORK_GROUP items each): the
device runs each work group on one compute unit. Under a profile that measured the map step on
fewer busy units, a thread's classes are priced as on that many (models.cpu.at_units, not the
default; `SymbolicPredictions.cpu_on` keeps one CPU profile per number of units).

Under a profile that prices the CPU by operation class (models/cpu.py), each kernel of one work
item that the backend runs an `on` body's top-level serial code as (`plan_kernels`: the whole
body of serial_loop, `iota 8`'s count in sample) adds a launch; the cost graph's δm charges one
(`launch_s`) only where a parallel form merges. Every launch is priced after the `on`'s inputs
moved in (`on_launches`, models.cpu.launch_after): a copy past the caches leaves the launches
that follow it cold, about twice a warm one on the H200's host. And neither bound is below the
centre's floor (`cpu_floor`): the words it moves over the socket's bandwidth, or, where more than
one compute unit runs it, its allocations one after another on the allocation pointer. Its reads
and allocations are counted by evaluating the CPU placement once more under a counting profile (`counting_profile`: a read, or a write, weighs 1 and every other edge
0; the work is then their number, since work is the sum of the edge weights); the words it reads
from memory are at most the words its `on` pushes (what the centre starts from): re-reads beyond
them hit the caches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphs.semantics.explicit import OFFLOAD_CENTRE
from graphs.semantics.irregular import NotRegular
from graphs.semantics.options import EvaluationOptions
from graphs.symbolic_profile import SymbolicProfile, symbolic_profile
from models.cpu import at_units, by_class, cpu_floor, cpu_model, launch_after
from models.device_profile import AllocationParameters, CpuParameters, DeviceProfile
from models.opencl.codegen import WORK_GROUP, compile_offload
from models.roofline import WORD_BYTES, KernelCounts, roofline_of_kernels
from profiler.checker import CheckedProgram, bind_parameters, check_program
from profiler.errors import DeviceError, EvaluationError
from profiler.syntax import On, Span, children
from profiler.transform import centre_names, centre_on_bodies, free_variables, with_body


def growth_as_write(profile: DeviceProfile) -> DeviceProfile:
    """The profile with a region's growth (Δa of BSIZE words) priced as one CPU write (δw of
    the profile's CPU model, models/cpu.py)."""
    return replace(profile, allocation=AllocationParameters(
        latency=cpu_model(profile).write(), per_word=0.0))


def counting_profile(profile: DeviceProfile, counted: str) -> DeviceProfile:
    """`profile` in abstract units with the CPU's `counted` edges ("read" or "write") weighing 1
    and every other CPU edge 0: a CPU graph's work under it is the number of such edges. A
    region's growth counts as a write (`growth_as_write`)."""
    read, write = (1.0, 0.0) if counted == "read" else (0.0, 1.0)
    cpu = CpuParameters(read=read, write=write, op=0.0, merge=0.0)
    return growth_as_write(replace(profile, units="abstract", cpu=cpu))


@dataclass(frozen=True, slots=True)
class OnPrediction:
    """One `on` at one size, in seconds. `models`: the kernel under each GPU mode (the report's
    and the baselines'); `roofline`: None where the profile has no calibrated rates; `cpu_low`
    and `cpu_high`: the bounds of the CPU part (None where the program has no CPU variant of this
    `on`); `whole`: the `on`'s device-box edge (Fig. 6, rule for `on`: growth, priced as a
    write, transfers of the words the cost semantics moves, the kernel and the merge).

    One prediction is made for each run of an `on` (each device box), but the CPU part is the
    `on` written in the program run on the CPU, all its runs together (its cost centre,
    `cpu_variant`): an `on` in a loop or a function that runs m times has its CPU part on its
    first run's prediction and None on the other m - 1, and placing it on the CPU is weighed
    against all m runs on the GPU (`OnPlacement`). `centre` names the `on` written (the CPU
    placement's cost centre, `cpu_variant`), the same on all its runs."""

    kernel: float
    models: dict[str, float]
    roofline: float | None
    cpu_low: float | None
    cpu_high: float | None
    whole: float = 0.0
    centre: str = ""  # the `on` written in the program this is a run of (its CPU cost centre)

    @property
    def cpu(self) -> float | None:
        if self.cpu_low is None or self.cpu_high is None:
            return None
        return (self.cpu_low + self.cpu_high) / 2


class SymbolicPredictions:
    """A program's predictions at any size from its two symbolic profiles; `reason` says why
    there are none (the program, or a size, is not regular): the caller then evaluates
    explicitly."""

    def __init__(self, gpu: CheckedProgram, cpu: CheckedProgram, profile: DeviceProfile,
                 mode: str, baselines: dict[str, DeviceProfile], processors: int) -> None:
        profile = growth_as_write(profile)
        baselines = {m: growth_as_write(p) for m, p in baselines.items()}
        self.profile, self.mode, self.processors = profile, mode, processors
        self.reason: str | None = None
        self.gpu: SymbolicProfile | None = None
        self.cpu: SymbolicProfile | None = None
        self.others: dict[str, SymbolicProfile] = {}
        self.counts: dict[str, SymbolicProfile] = {}  # the CPU part's reads and writes
        self.kernels = plan_kernels(gpu) if by_class(profile) else {}
        self.cpu_checked = cpu
        self.centres = centre_names(gpu.body, OFFLOAD_CENTRE)  # `cpu_variant`'s, by `on`
        self.cpu_at: dict[int, SymbolicProfile] = {}  # the CPU placement on so many busy units
        try:
            self.gpu = symbolic_profile(gpu, EvaluationOptions(profile=profile, gpu_mode=mode))
            self.cpu = symbolic_profile(cpu, EvaluationOptions(profile=profile, gpu_mode=mode))
        except NotRegular as error:
            self.reason = error.message
            return
        self.others = {m: self.gpu.with_options(EvaluationOptions(profile=p, gpu_mode=m))
                       for m, p in baselines.items()}
        # The CPU part's reads and writes, for its floor (the module's docstring).
        if by_class(profile):
            try:
                self.counts = {kind: symbolic_profile(cpu, EvaluationOptions(
                    profile=counting_profile(profile, kind), gpu_mode=mode))
                    for kind in ("read", "write")}
            except NotRegular as error:
                self.reason = error.message
                self.gpu = None

    def at(self, params: dict[str, int]) -> list[OnPrediction] | None:
        """Each `on`'s predictions at these sizes, in program order; None (and `reason` set)
        where a kernel at these sizes is not regular or an assumption of the formulas fails."""
        if self.gpu is None or self.cpu is None:
            return None
        try:
            return self._at(params)
        except (NotRegular, EvaluationError) as error:
            self.reason = error.message
            return None

    def _at(self, params: dict[str, int]) -> list[OnPrediction]:
        assert self.gpu is not None and self.cpu is not None
        gpu_scale = self.profile.unit_scales()[1]
        subs = self.gpu.substitution(params)
        evaluation = self.gpu.evaluation
        other_subs = {m: other.substitution(params) for m, other in self.others.items()}
        out = []
        for k, (box, symbol) in enumerate(zip(evaluation.boxes, evaluation.box_symbols,
                                             strict=True)):
            kernel = float(subs[symbol]) * gpu_scale
            models = {self.mode: kernel}
            for m, other in self.others.items():
                models[m] = float(other_subs[m][symbol]) * other.options.profile.unit_scales()[1]
            counts = self.gpu.box_counts(box, subs)
            roofline = None if counts is None else roofline_of_kernels(counts, self.profile)
            runs = [j for j, other in enumerate(evaluation.boxes) if other.span == box.span]
            low = high = None
            if runs[0] == k:  # the `on`'s first run stands for all of them (`OnPrediction`)
                low, high = self._cpu_part(self.centres[box.span],
                                           [evaluation.boxes[j] for j in runs], subs, params)
            whole = self.gpu.box_total(k, subs)
            out.append(OnPrediction(kernel, models, roofline, low, high, whole,
                                    self.centres[box.span]))
        return out

    def _cpu_part(self, name: str, runs: list, subs: dict, params: dict[str, int],
                  ) -> tuple[float | None, float | None]:
        """The bounds of the CPU part of one `on` written in the program, over all its `runs`
        (device boxes): the cost centre's time on the compute units its widest kernel fills,
        at least the floor of all the runs' words and allocations, plus each run's launches."""
        assert self.gpu is not None
        gpu = self.gpu
        part = all_runs(self.profile.cpu, self.processors, self.kernels.get(runs[0].span, (0, 0)),
                        [(gpu.kernel_threads(box, subs), gpu.pushed_words(box, subs),
                          gpu.box_counts(box, subs)) for box in runs])
        cpu = self.cpu_on(part.units)
        bounds = cpu.centre_time_at(name, cpu.substitution(params), part.units)
        if bounds is None:
            return None, None
        low, high = bounds
        if self.counts:
            floor = self.floor(name, params, part.words, part.units, part.kernels)
            low, high = max(low, floor) + part.launches, max(high, floor) + part.launches
        return low, high

    def cpu_on(self, units: int) -> SymbolicProfile:
        """The CPU placement's symbolic profile with its classes priced as on `units` busy
        compute units (models.cpu.at_units); made once for each number of units where that
        changes a price."""
        assert self.cpu is not None
        profile = at_units(self.profile, units)
        if profile is self.profile:
            return self.cpu
        if units not in self.cpu_at:  # growth still priced as a write, the write now scaled
            self.cpu_at[units] = symbolic_profile(self.cpu_checked, EvaluationOptions(
                profile=growth_as_write(profile), gpu_mode=self.mode))
        return self.cpu_at[units]

    def floor(self, name: str, params: dict[str, int], pushed_words: float,
              units: int, kernels: list[tuple[int, float]] | None = None) -> float:
        """The CPU part's floor (`cpu_floor`): its allocations (kernel by kernel where
        `kernels` gives each one's units and allocations, `kernel_units`), and the words it
        moves, its writes and its reads up to the words its `on` pushes."""
        reads, writes = (self.counts[kind].centre_at(name, self.counts[kind].substitution(params))
                         for kind in ("read", "write"))
        assert reads is not None and writes is not None  # the same program's centres
        words = writes[0] + min(reads[0], pushed_words)
        return cpu_floor(self.profile, words, writes[0], units, kernels)


def plan_kernels(checked: CheckedProgram) -> dict[Span, tuple[int, int]]:
    """For each `on` of a program (by its span), the kernels the OpenCL backend launches for its
    body (models/opencl/codegen.py's plan): (one-work-item kernels, the "serial" steps: every
    run of top-level expressions that are not a parmap, iota, reduce, let or variable; parallel
    steps, a map, an iota or a reduction, each counted once). The plan does not depend on the
    sizes; an `on` the backend cannot compile is left out."""
    out: dict[Span, tuple[int, int]] = {}
    defaults = bind_parameters(checked, {})  # constants in the code; the steps are the same
    todo = [checked.body]
    while todo:
        node = todo.pop()
        todo.extend(children(node))
        if not isinstance(node, On) or node.region is None:
            continue
        names = sorted(set(node.uses) | {node.region})
        free = {name: None for name in free_variables(node.body)}
        try:
            plan = compile_offload(node.body, checked.types, defaults, names, free, node.local)
        except DeviceError:
            continue
        serial = sum(1 for step in plan.steps if step.kind == "serial")
        out[node.span] = (serial, len(plan.steps) - serial)
    return out


def on_launches(cpu: CpuParameters, kernels: tuple[int, int], words: float) -> float:
    """What the CPU part of an `on` pays for its kernels' launches beyond its cost graph's, the
    backend having moved its `words` inputs in first (models.cpu.launch_after): a whole launch
    for each one-work-item kernel (the graph has no δm for serial code), and for each parallel
    step what the launch costs beyond the δm (`launch_s`) its merge already charges."""
    serial, parallel = kernels
    launch = launch_after(cpu, words)
    return serial * launch + parallel * (launch - cpu.launch_s)


@dataclass(frozen=True, slots=True)
class AllRuns:
    """What the CPU part of an `on` that runs several times is priced from (`OnPrediction`): the
    compute units its widest kernel fills in any run, the words all its runs push, their
    kernels' launches beyond the graph's (`on_launches`), and every run's kernels as
    (units, allocations) for the floor (`kernel_units`; None where a run's are unknown)."""

    units: int
    words: int
    launches: float
    kernels: list[tuple[int, float]] | None


def all_runs(cpu: CpuParameters, processors: int, plan: tuple[int, int],
             runs: list[tuple[int, int, list[KernelCounts] | None]]) -> AllRuns:
    """`AllRuns` from each run's (widest kernel's threads, words pushed, kernel counts), the
    `on`'s plan being `plan` (`plan_kernels`); the symbolic and the explicit predictions both
    price an `on`'s CPU part from it."""
    per_run = [kernel_units(processors, counts) for _, _, counts in runs]
    return AllRuns(max(cpu_units(processors, threads) for threads, _, _ in runs),
                   sum(words for _, words, _ in runs),
                   sum(on_launches(cpu, plan, words) for _, words, _ in runs),
                   None if any(k is None for k in per_run)
                   else [kernel for k in per_run if k is not None for kernel in k])


def cpu_variant(gpu: CheckedProgram) -> CheckedProgram:
    """The CPU placement whose parts are predicted: every `on` body of `gpu` run on the CPU as a
    cost centre named OFFLOAD_CENTRE and its index (profiler.transform.centre_on_bodies)."""
    return check_program(with_body(gpu.program, centre_on_bodies(gpu.body, OFFLOAD_CENTRE)))


def kernel_units(processors: int, counts: list[KernelCounts] | None,
                 ) -> list[tuple[int, float]] | None:
    """Each kernel of an `on` body (`KernelCounts`, in order) as (the compute units of the CPU
    device that run it, its allocations), for the CPU part's floor; None where the counts are
    unknown."""
    if counts is None:
        return None
    return [(cpu_units(processors, k.threads), float(k.allocations)) for k in counts]


def cpu_units(processors: int, threads: int) -> int:
    """The compute units of the CPU device that run an `on` body whose widest kernel has
    `threads` work items: the device runs a work group (models.opencl.codegen.WORK_GROUP items)
    on one unit, so at most ⌈threads / WORK_GROUP⌉ of its `processors` are busy."""
    return max(1, min(processors, -(-threads // WORK_GROUP)))


class OnPlacement:
    """One `on`'s two placements at any size, priced as `hetprof validate` predicts them
    (`SymbolicPredictions`), for `hetprof place` under a profile that prices the CPU by operation
    class: on the GPU, the `on`'s device-box edge (`OnPrediction.whole`); on the CPU, its body as
    a cost centre on the compute units its widest kernel's work groups fill, at least its floor,
    plus a launch per one-work-item kernel. What the program does outside the `on` is the same in
    both placements and is left out, so the two times are the `on`'s alone.

    `gpu` is the program with the `on` (at `span`); `processors` the CPU device's compute units.
    Raises NotRegular where the program has no symbolic profile (the caller places it by the
    explicit evaluator)."""

    def __init__(self, gpu: CheckedProgram, span: Span, profile: DeviceProfile, mode: str,
                 processors: int) -> None:
        self.predictions = SymbolicPredictions(gpu, cpu_variant(gpu), profile, mode, {},
                                               processors)
        if self.predictions.gpu is None:
            raise NotRegular(self.predictions.reason or "no symbolic profile", span)
        spans = [box.span for box in self.predictions.gpu.evaluation.boxes]
        if span not in spans:
            raise NotRegular("the `on` is not a device box of its own in the symbolic profile",
                             span)
        self.index, self.span = spans.index(span), span
        self.runs = [k for k, other in enumerate(spans) if other == span]
        self._times: dict[tuple, tuple[float, float]] = {}

    def heap_bytes(self, params: dict[str, int]) -> int:
        """The largest heap of the `on`'s runs at these sizes, in bytes: the words its device box
        pushes and returns (`SymbolicProfile.heaps`), int64 words as the backend's heap."""
        gpu = self.predictions.gpu
        assert gpu is not None  # checked when made
        heaps = gpu.heaps(params)
        return max(heaps[k] for k in self.runs) * WORD_BYTES

    def bound(self, params: dict[str, int]) -> str | None:
        """What bounds the `on` on the GPU at these sizes (graphs.kernel_counts.gpu_bound)."""
        gpu = self.predictions.gpu
        assert gpu is not None  # checked when made
        return gpu.on_bound(self.span, params)

    def times(self, params: dict[str, int]) -> tuple[float, float]:
        """(CPU, GPU) seconds of the `on` at these sizes; NotRegular where they have none."""
        key = tuple(sorted(params.items()))
        if key not in self._times:
            found = self.predictions.at(params)
            if found is None:
                raise NotRegular(self.predictions.reason or "not regular at these sizes",
                                 self.span)
            on = found[self.index]
            if on.cpu is None:
                raise NotRegular("the `on` has no CPU part", self.span)
            # the CPU part is all the `on`'s runs (`OnPrediction`), so the GPU side is too
            self._times[key] = (on.cpu, sum(found[k].whole for k in self.runs))
        return self._times[key]
