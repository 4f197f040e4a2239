"""`hetprof validate`: predicted against measured times, on real OpenCL devices.

For each program (default: every example with work to offload) and each size n:
- the GPU placement (the program's `on`s; a program without one gets its outermost parmaps put
  under `on`) is profiled with the calibrated device profile, and each `on` body runs on the GPU
  through the OpenCL backend: predicted and measured transfer in, kernels, transfer out and the
  whole `on`;
- the CPU placement (every `on` body run on the CPU, marked as a cost centre) is profiled under a
  1DF schedule on as many processors as the OpenCL CPU device has compute units, and the same
  work runs as kernels on that device: predicted and measured. An `on` that runs more than once
  (in a loop, or a function called more than once) is one CPU part, all its runs: its cost
  centre's time against the sum of its runs on the CPU device (until 2026-11-27 its first run
  alone was measured against the centre's all);
- whether the placement predicted cheaper is the one measured cheaper: each `on` written in the
  program, all its runs on the GPU against all of them on the CPU.
Then, apart from the programs: transfers from 4 KB to 256 MB at sizes calibration did not use, and
the bank-conflict slowdowns of examples/strided.lg at strides 1..33.

Every kernel case is also predicted by two baselines from the same cost paths (issue 13): the
roofline of the same calibrated profile (models/roofline.py, `roofline_s`; absent where the
profile has no calibrated rates) and the paper's Fig. 9 GPU model (`paper_s`: a compared profile
in `paper` mode where one is given, else the profile in `paper` mode); `dmm_s` is the DMM/UMM
model's likewise, and `cache_s` the memory-hierarchy model's (models/gpu_cache.py). `summarise`
defines the figures that compare them. A kernel case keeps its `steps` as measured: each kernel of
the backend's plan (`kernel`, its launches' `median_s` and `fastest_s` summed in a run, the most
`work_items` one launch had), whose medians make up `measured_s`, so that where a kernel's time
goes can be read from a run without measuring it again.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from graphs.analysis import centre_times
from graphs.costgraph import EdgeKind
from graphs.kernel_counts import kernel_counts, on_bound, roofline_of_paths
from graphs.numbers import duration
from graphs.schedule import schedule
from graphs.semantics.explicit import (
    OFFLOAD_CENTRE,
    Evaluation,
    Offload,
    OffloadCollector,
    evaluate,
)
from graphs.semantics.inputs import NotVectorised, estimate_room, offload_inputs
from graphs.semantics.irregular import NotRegular
from graphs.semantics.options import EvaluationOptions
from models.cpu import at_units, by_class, cpu_floor
from models.device_profile import GPU_MODES, DeviceProfile
from models.opencl.predict import (
    OnPrediction,
    SymbolicPredictions,
    all_runs,
    cpu_variant,
    growth_as_write,
    plan_kernels,
)
from models.providers import providers_for
from profiler.checker import CheckedProgram, bind_parameters, check_program
from profiler.parser import parse
from profiler.syntax import Span
from profiler.transform import centre_names, gpu_placement, has_on, with_body

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"  # the repository's examples/
SIZES = [2**10, 2**12, 2**14]
QUICK_SIZES = [2**8, 2**10]
SQUARE = {"nbody"}  # n² work: sizes are cut to keep the interpreter's share small
TRANSFER_WORDS = [int(512 * 4**k * 1.5) for k in range(9)]  # 6 KB ... 192 MB, 1.5x off the grid


@dataclass(frozen=True, slots=True)
class Case:
    program: str
    n: int
    part: str
    predicted_s: float
    measured_s: float
    roofline_s: float | None = None  # kernel cases: the baselines' predictions (module doc)
    paper_s: float | None = None
    dmm_s: float | None = None
    cache_s: float | None = None
    # kernel cases: each kernel step of the backend's plan as measured (its name, the median and
    # fastest seconds of its launches summed in a run, the most work items one launch had)
    steps: tuple[tuple[str, float, float, int], ...] = ()
    runs: int = 1  # CPU parts: the runs of its `on` it covers, measured and predicted (CPU_PART)

    @property
    def error_pct(self) -> float:
        return 100 * (self.predicted_s - self.measured_s) / self.measured_s \
            if self.measured_s else 0.0


def size_params(checked: CheckedProgram, n: int, name: str) -> dict[str, int]:
    """The parameters for size n: `n` itself; a matrix's rows and cols ≈ √n each."""
    declared = {p.name for p in checked.program.params}
    if "n" in declared:
        return {"n": n}
    if {"rows", "cols"} <= declared:
        side = max(1, int(math.isqrt(n)))
        return {"rows": side, "cols": side}
    return {}


def _variants(checked: CheckedProgram) -> tuple[CheckedProgram, CheckedProgram]:
    program = checked.program
    gpu_body = checked.body if has_on(checked.body) else gpu_placement(checked.body)
    gpu = check_program(with_body(program, gpu_body)) if gpu_body is not checked.body else checked
    return gpu, cpu_variant(gpu)


CPU_MEASURED = (
    "\"The CPU\" is the OpenCL CPU device running hetprof's own generated code for the CPU "
    "placement (the `on` bodies, compiled as for the GPU: boxed values in heap regions, an atomic "
    "bump per allocation, a top-level parallel form one kernel spread over the device's compute "
    "units). That is the fair comparison: both worlds run the same program with the same data "
    "layout through one compiler, so the placement question (which world runs this code faster) "
    "is answered for the code hetprof's cost semantics prices, not for a hand-tuned CPU version "
    "that neither the semantics nor the GPU side sees.")
"""What every validation report says "the CPU" is in its measurements (README, models/cpu.py)."""

CPU_PART = "all runs of each `on`"
"""What a report's CPU part of an `on` that runs more than once measured: since 2026-11-27, all
its runs (the module's docstring); reports without the key measured its first run alone against
a prediction of all (benchmarks/repredict.py leaves those out)."""


def cpu_model_name(profile: DeviceProfile) -> str:
    """How the profile prices the CPU world, for reports."""
    if by_class(profile):
        return (f"by operation class (models/cpu.py; {profile.cpu.processors} compute units "
                "calibrated)")
    return "the PRAM, one calibrated second per step" if profile.units == "seconds" \
        else "the PRAM, in abstract units"


PARTS = ("programs", "transfers", "conflicts")
BASELINES = ("roofline_s", "paper_s", "dmm_s", "cache_s")
"""A kernel case's baseline predictions, in seconds (None: that baseline is unavailable)."""
REWRITE_MEASURED_THRESHOLD = 0.05
"""The rewrite figures count a case only where its measured speedup differs from 1 by more than
this: a rewrite measured to change nothing has no direction to get right."""
INPUTS = ("auto", "interpreter", "fast")


def repeats_for(quick: bool) -> int:
    """How many times a measured part runs where the user does not say (`--repeats`): 7, or 3
    with `--quick`. Its median is kept."""
    return 3 if quick else 7


def validate(session, cpu_session, profile: DeviceProfile, programs: list[str] | None,
             sizes: list[int] | None, quick: bool = False, repeats: int | None = None,
             gpu_mode: str | None = None,
             holder=None, progress: Callable[[str, float], None] | None = None,
             compare: Sequence[DeviceProfile] = (), parts: tuple[str, ...] = PARTS,
             inputs: str = "auto", predictions: str = "auto", draw: str = "process") -> dict:
    """Run the validation; return the JSON report (see the issue: `cases` and the summaries).

    `compare`: other profiles (e.g. the other GPU mode's calibration) whose kernel predictions
    are computed from the same cost paths and reported side by side.

    `inputs`: where the regions each `on` body starts from come from: "interpreter" (the
    explicit evaluator's offloads, whose values the devices' are checked against), "fast"
    (graphs.semantics.inputs, without the interpreter; the GPU's value is checked against the
    OpenCL CPU device's run of the same body) or "auto" (fast where the program's CPU part
    vectorises, else the interpreter; used only where the predictions are symbolic, since the
    interpreter runs anyway where they are not). The report's `inputs` says, per program and
    size, which was used and how the value was checked.

    `predictions`: "auto" takes them from the symbolic profiles where the program is regular at
    that size (models/opencl/predict.py: any size in seconds), else from the explicit
    evaluation; "explicit" always evaluates explicitly. The report's `inputs` rows also say
    which (`predictions`) and, where explicit, why (`explicit_because`).

    `draw`: "process" (the default) first times, in this process, what each work group of a
    kernel pays for an allocation (`process_draw`) and predicts with it; "profile" predicts
    with the profile's expectation over the near/far draw. The report's
    `pointer_place.by_group` has the figures and which was used."""
    from models.opencl.runner import check_runs, run_offload, time_transfers

    mode = gpu_mode or profile.gpu.mode
    profile, by_group = process_draw(session, profile.with_gpu(mode=mode), draw)
    baselines = {m: next((p for p in compare if p.gpu.mode == m), profile.with_gpu(mode=m))
                 for m in GPU_MODES if m != mode}
    repeats = repeats or repeats_for(quick)
    paths = [Path(p) for p in programs] if programs else sorted(EXAMPLES.glob("*.lg"))
    if "programs" not in parts:
        paths = []
    sizes = sizes or (QUICK_SIZES if quick else SIZES)
    cases: list[Case] = []
    compared: dict[str, list[Case]] = {p.gpu.mode: [] for p in compare}
    placements: list[dict] = []
    skipped: list[str] = []
    input_paths: list[dict] = []
    total = len(paths) * len(sizes)
    done = 0
    processors = max(1, cpu_session.info.compute_units)
    for path in paths:
        source = holder.read(str(path)) if holder else path.read_text()
        checked = check_program(parse(source, str(path)))
        gpu_checked, cpu_checked = _variants(checked)
        symbolic = (SymbolicPredictions(gpu_checked, cpu_checked, profile, mode, baselines,
                                        processors) if predictions != "explicit" else None)
        for n in sizes:
            done += 1
            if progress:
                progress(f"{path.stem} n={n}", done / (total + 2))
            size = int(math.isqrt(n)) if path.stem in SQUARE else n
            params = bind_parameters(checked, size_params(checked, size, path.stem))
            options = EvaluationOptions(profile=profile, gpu_mode=mode)
            predicted = symbolic.at(params) if symbolic is not None else None
            used: dict = {"program": path.stem, "n": size,
                          "predictions": "symbolic" if predicted is not None else "explicit"}
            if predicted is None and symbolic is not None:
                used["explicit_because"] = symbolic.reason  # why the profile is not symbolic
            # Without symbolic predictions the interpreter runs anyway: its inputs are free.
            fast = _fast_offloads(inputs if predicted is not None or inputs == "fast"
                                  else "interpreter", checked, gpu_checked, cpu_checked, params,
                                  size, path.stem, options)
            gpu_offloads: list[Offload] = []
            cpu_offloads: list[Offload] = []
            if predicted is None or not isinstance(fast, tuple):
                gpu_offloads, cpu_offloads, explicit = explicit_predictions(
                    gpu_checked, cpu_checked, params, options, baselines,
                    processors if predicted is None else 0)
                predicted = predicted if predicted is not None else explicit
            if isinstance(fast, tuple):
                if gpu_offloads and len(fast[0]) != len(gpu_offloads):
                    raise RuntimeError(f"{path.name} n={size}: the CPU part gave another "
                                       "number of offloads than the interpreter")
                gpu_offloads, cpu_offloads = fast[0], fast[2]
            if not gpu_offloads:
                skipped.append(f"{path.name}: nothing to offload")
                break
            used["inputs"] = "fast" if isinstance(fast, tuple) else "interpreter"
            if isinstance(fast, str):
                used["fallback"] = fast  # why the CPU part did not vectorise
            input_paths.append(used)
            room = fast[1] if isinstance(fast, tuple) else None
            centres = centre_names(gpu_checked.body, OFFLOAD_CENTRE)
            gpu_runs: dict[str, list] = {}  # each `on`'s runs so far: (measured, predicted, run)
            for k, (offload, guess) in enumerate(zip(gpu_offloads, predicted, strict=True)):
                run = run_offload(session, offload, gpu_checked.types, params, repeats=repeats,
                                  room=room)
                if run.matches is False:
                    raise RuntimeError(f"{path.name} n={size}: the device's value differs from "
                                       "the interpreter's")
                used["values"] = ("checked against the interpreter" if run.checked
                                  else "unchecked")
                # The merge's bookkeeping (Definition 4.3) is host work no device event times.
                predicted_in, predicted_out = predicted_transfers(profile, run)
                label = path.stem
                kernel = guess.kernel
                cases += [
                    Case(label, size, "transfer_in", predicted_in, run.transfer_in.median),
                    Case(label, size, "kernel", kernel, run.kernel_total, guess.roofline,
                         guess.models.get("paper"), guess.models.get("dmm"),
                         guess.models.get("cache"),
                         tuple((name, t.median, t.best, run.work_items.get(name, 0))
                               for name, t in run.kernels.items())),
                    Case(label, size, "transfer_out", predicted_out, run.transfer_out.median),
                    Case(label, size, "on", predicted_in + kernel + predicted_out, run.total),
                ]
                for other in compare:
                    seconds = (_kernel_seconds(offload, other) if offload.on is not None
                               else guess.models.get(other.gpu.mode))
                    if seconds is not None:
                        compared[other.gpu.mode].append(Case(label, size, "kernel", seconds,
                                                             run.kernel_total))
                centre = centres.get(offload.node.span)
                if centre is None:
                    continue
                runs = gpu_runs.setdefault(centre, [])
                runs.append((run.total, predicted_in + kernel + predicted_out, run, guess))
                if k != max(j for j, o in enumerate(gpu_offloads)
                            if o.node.span == offload.node.span):
                    continue  # the `on`'s CPU part once its last run is measured
                units = [o for o in cpu_offloads if getattr(o.node, "name", "") == centre]
                first = runs[0][3]  # the prediction of the `on`'s first run has its CPU part
                if len(units) != len(runs) or first.cpu is None:
                    continue
                cpu_total = 0.0
                for unit, (_, _, gpu_run, _) in zip(units, runs, strict=True):
                    cpu_run = run_offload(cpu_session, unit, cpu_checked.types, params,
                                          repeats=repeats, room=None if room is None else {
                                              rid: room.get(rid, 0) for rid in unit.inputs})
                    if not gpu_run.checked:
                        mismatch = check_runs(gpu_run, cpu_run)
                        if mismatch:
                            raise RuntimeError(f"{path.name} n={size}: {mismatch}")
                        used["values"] = f"checked against {cpu_run.device}"
                    cpu_total += cpu_run.kernel_total
                cases.append(Case(label, size, "cpu", first.cpu, cpu_total, runs=len(runs)))
                gpu_predicted = sum(r[1] for r in runs)
                placements.append({
                    "program": label, "n": size,
                    "predicted": "gpu" if gpu_predicted < first.cpu else "cpu",
                    "measured": "gpu" if sum(r[0] for r in runs) < cpu_total else "cpu",
                })
    # -- transfers at sizes calibration did not see -----------------------------------------------
    if progress:
        progress("transfers", (total + 1) / (total + 2))
    providers = providers_for(profile)
    max_words = session.info.global_memory // 8 // 4
    transfer_sizes = [w for w in TRANSFER_WORDS[: 6 if quick else None] if w <= max_words
                      and "transfers" in parts]
    for words in transfer_sizes:
        up, down = time_transfers(session, words, repeats)
        cases.append(Case("transfer", words * 8, "host_to_device", providers.host_to_device(words),
                          up.median))
        cases.append(Case("transfer", words * 8, "device_to_host", providers.device_to_host(words),
                          down.median))
    # -- bank conflicts: examples/strided.lg at strides 1..33 --------------------------------------
    if progress:
        progress("bank conflicts", 1.0)
    if "conflicts" in parts:
        cases += _bank_conflicts(session, profile, mode, quick, repeats)
    cases = [c for c in cases if c.measured_s > 0]  # nothing moved: nothing to compare
    report = _report(session, cpu_session, profile, mode, cases, placements, skipped, sizes,
                     repeats)
    report["pointer_place"]["by_group"] = by_group
    report["inputs"] = input_paths
    report["compare_cases"] = {mode_: [_case_json(c) for c in other]
                               for mode_, other in compared.items()}
    return summarise(report)


def _fast_offloads(inputs: str, checked: CheckedProgram, gpu_checked: CheckedProgram,
                   cpu_checked: CheckedProgram, params: dict[str, int], size: int, name: str,
                   options: EvaluationOptions
                   ) -> tuple[list[Offload], dict[int, int], list[Offload]] | str | None:
    """The offloads of both placements from graphs.semantics.inputs, with the room their work
    needs on a device; None where `inputs` asks for the interpreter, or the reason (a string)
    where "auto" falls back to it. "fast" raises NotVectorised where the CPU part does not
    vectorise."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {', '.join(INPUTS)}, not {inputs!r}")
    if inputs == "interpreter":
        return None
    try:
        gpu = offload_inputs(gpu_checked, params, options)
        cpu = offload_inputs(cpu_checked, params, options)
    except NotVectorised as refused:
        if inputs == "fast":
            raise
        where = f" ({refused.span})" if refused.span else ""
        return f"{refused.message}{where}"
    room = estimate_room(gpu_checked, lambda p: size_params(checked, p, name), size,
                         options=replace(options, observer=None))
    return gpu, room, cpu


def predicted_transfers(profile: DeviceProfile, run) -> tuple[float, float]:
    """The transfers in and out of an offload's run (models/opencl/runner.py's OffloadRun) as
    the profile's transfer providers price them: each copy the backend made, the words it really
    moves (vector headers included), its latency and its words (§4.3: one copy per region; out,
    a region's words allocated on the device and the vectors the host reserved at its top are
    two). Until 2026-11-27 all of a run's words were priced as one copy, which left the latency
    of every other copy out: the suite's small `on`s' transfers out were about half what they
    measured."""
    providers = providers_for(profile)
    return (sum(providers.host_to_device(words) for words in run.copies_in),
            sum(providers.device_to_host(words) for words in run.copies_out))


def explicit_predictions(gpu_checked: CheckedProgram, cpu_checked: CheckedProgram,
                         params: dict[str, int], options: EvaluationOptions,
                         baselines: dict[str, DeviceProfile], processors: int,
                         ) -> tuple[list[Offload], list[Offload], list[OnPrediction]]:
    """The GPU and CPU placements (`_variants`) evaluated explicitly at `params`: their offloads
    (the `on`s, and the CPU's cost centres of the `on` bodies), and each `on`'s predictions on
    `processors` compute units of the CPU device (none where `processors` is 0: only the
    offloads are wanted).

    The CPU placement prices region growth as a write, as the symbolic predictions do
    (predict.growth_as_write): the backend sizes every region before a kernel, so the measured
    CPU run grows none."""
    profile = options.profile
    mode = options.gpu_mode or profile.gpu.mode
    gpu_collector, cpu_collector = OffloadCollector(), OffloadCollector()
    evaluate(gpu_checked, params, replace(options, observer=gpu_collector))
    cpu_options = replace(options, profile=growth_as_write(profile), observer=None)
    cpu_evaluation = evaluate(cpu_checked, params, replace(cpu_options, observer=cpu_collector))
    if not processors:
        return gpu_collector.offloads, cpu_collector.offloads, []
    on_units = CpuOnUnits(cpu_checked, params, cpu_options, cpu_evaluation)
    kernels = plan_kernels(gpu_checked) if by_class(profile) else {}
    centres = centre_names(gpu_checked.body, OFFLOAD_CENTRE)
    offloads = gpu_collector.offloads
    predictions = []
    for offload in offloads:
        assert offload.on is not None  # all of the GPU placement's parallel work is in `on`s
        runs = [o.on for o in offloads if o.node.span == offload.node.span and o.on is not None]
        cpu = None
        if runs[0] is offload.on:  # the `on`'s first run stands for all (predict.OnPrediction)
            part = all_runs(profile.cpu, processors, kernels.get(offload.node.span, (0, 0)),
                            [(max((p.threads for p in run.box.phases), default=1),
                              run.pushed_words, kernel_counts(run.paths, profile.gpu))
                             for run in runs])
            evaluation, times = on_units(part.units)
            cpu = explicit_cpu_part(evaluation, centres[offload.node.span], times, part.words,
                                    profile, part.units, part.launches, part.kernels)
        predictions.append(_explicit_prediction(offload, profile, mode, baselines, cpu,
                                                centres[offload.node.span]))
    return gpu_collector.offloads, cpu_collector.offloads, predictions


class ExplicitOnPlacement:
    """One `on`'s two placements, as `validate` predicts them where the program has no symbolic
    profile (predict.OnPlacement's explicit counterpart, for `hetprof place`): at each size, the
    GPU and CPU placements evaluated explicitly (`explicit_predictions`): on the GPU, the device
    box edges of all the `on`'s runs; on the CPU, its body run as often, on the compute units its
    widest kernel's work groups fill, at least its floor, plus its kernels' launches. `gpu` is
    the program with the `on` at `span`; `processors` the CPU device's compute units."""

    def __init__(self, gpu: CheckedProgram, span: Span, profile: DeviceProfile, mode: str,
                 processors: int) -> None:
        self.gpu, self.cpu = gpu, cpu_variant(gpu)
        self.span, self.processors = span, processors
        # region growth priced as a write, as predict.SymbolicPredictions prices both placements
        self.options = EvaluationOptions(profile=growth_as_write(profile), gpu_mode=mode)
        self._made: dict[tuple, tuple[tuple[float, float], Offload | None]] = {}

    def _at(self, params: dict[str, int]) -> tuple[tuple[float, float], Offload | None]:
        key = tuple(sorted(params.items()))
        if key not in self._made:
            offloads, _, found = explicit_predictions(self.gpu, self.cpu, params, self.options,
                                                      {}, self.processors)
            runs = [(o, p) for o, p in zip(offloads, found, strict=True)
                    if o.node.span == self.span]
            cpu = runs[0][1].cpu if runs else None
            if cpu is None:
                raise NotRegular("the `on` does not run at these sizes, or has no CPU part",
                                 self.span)
            self._made[key] = ((cpu, sum(p.whole for _, p in runs)), runs[0][0])
        return self._made[key]

    def times(self, params: dict[str, int]) -> tuple[float, float]:
        """(CPU, GPU) seconds of the `on`, all its runs, at these sizes."""
        return self._at(params)[0]

    def bound(self, params: dict[str, int]) -> str | None:
        """What bounds the `on`'s first run on the GPU at these sizes."""
        offload = self._at(params)[1]
        return None if offload is None or offload.on is None else on_bound(
            offload.on, self.options.profile)


class CpuOnUnits:
    """A program's CPU work priced on so many busy compute units: its evaluation under the
    profile's CPU classes as on that many units (models.cpu.at_units: a unit alone runs a thread's
    loads, stores and steps faster than each of all the units at once), evaluated again only where
    that changes a price, and its cost centres' times under the 1DF schedule on those units;
    each number of units made once. `evaluation` is the program evaluated under `options`,
    whose profile prices region growth as a write (predict.growth_as_write)."""

    def __init__(self, checked: CheckedProgram, params: dict[str, int],
                 options: EvaluationOptions, evaluation: Evaluation) -> None:
        self.checked, self.params, self.options = checked, params, options
        self.evaluation = evaluation
        self.made: dict[int, tuple[Evaluation, dict[str, float]]] = {}

    def __call__(self, units: int) -> tuple[Evaluation, dict[str, float]]:
        if units not in self.made:
            profile = at_units(self.options.profile, units)
            # region growth still priced as a write (predict.growth_as_write), the write scaled
            evaluation = (self.evaluation if profile is self.options.profile
                          else evaluate(self.checked, self.params,
                                        replace(self.options, profile=growth_as_write(profile))))
            self.made[units] = (evaluation, centre_times(evaluation, schedule(
                evaluation.graph, units, "1df")))
        return self.made[units]


def _explicit_prediction(offload: Offload, profile: DeviceProfile, mode: str,
                         baselines: dict[str, DeviceProfile], cpu: float | None,
                         centre: str) -> OnPrediction:
    """An `on`'s predictions from the explicit evaluation: its device box under each GPU mode
    and the roofline from its cost paths; `cpu`, the CPU part of all the `on`'s runs (on its
    first run, predict.OnPrediction; `explicit_cpu_part`)."""
    assert offload.on is not None  # all of the GPU placement's parallel work is in `on`s
    models = {m: _kernel_seconds(offload, p) for m, p in baselines.items()}
    models[mode] = offload.on.info.kernel
    return OnPrediction(offload.on.info.kernel, models,
                        roofline_of_paths(offload.on.paths, profile), cpu, cpu,
                        offload.on.info.total, centre)


def explicit_cpu_part(evaluation: Evaluation, centre: str, centre_time: dict[str, float],
                      words: int, profile: DeviceProfile, units: int, launches: float = 0.0,
                      kernels: list[tuple[int, float]] | None = None) -> float | None:
    """A CPU part's prediction from an explicit evaluation: its cost centre's time under the
    1DF schedule on the `units` compute units that run it (`centre_time`), at least its floor
    (the words it moves, its reads counted up to the `words` its inputs hold, and its
    allocations: models.cpu.cpu_floor), plus `launches`, its kernels' launches beyond the
    graph's (predict.on_launches); None where the evaluation has no such centre. `validate`
    prices an `on` body on the CPU so, and `validate-rewrites` each CPU part."""
    cpu = centre_time.get(centre)
    if cpu is None:
        return None
    return max(cpu, _explicit_floor(evaluation, centre, words, profile, units, kernels)) + launches


def _explicit_floor(evaluation: Evaluation, centre: str, pushed_words: int,
                    profile: DeviceProfile, units: int,
                    kernels: list[tuple[int, float]] | None = None) -> float:
    """A cost centre's CPU floor (models.cpu.cpu_floor) from its read and write edges in the
    explicit graph, as SymbolicPredictions.floor counts them."""
    graph = evaluation.graph
    counts = Counter(kind for kind, names in zip(graph.edge_kind, graph.edge_centres,
                                                  strict=True) if centre in names)
    writes = counts[EdgeKind.WRITE] + counts[EdgeKind.EXPAND]
    return cpu_floor(profile, writes + min(counts[EdgeKind.READ], pushed_words), writes, units,
                     kernels)


def _accuracy(placements: list[dict]) -> float:
    """The fraction of placement cases whose predicted cheaper world was the measured one (0.0
    for none)."""
    right = sum(1 for p in placements if p["predicted"] == p["measured"])
    return right / len(placements) if placements else 0.0


def _case_json(c: Case) -> dict:
    data = {"program": c.program, "n": c.n, "part": c.part, "predicted_s": c.predicted_s,
            "measured_s": c.measured_s, "error_pct": c.error_pct}
    if c.part == "kernel":
        for key in BASELINES:
            data[key] = getattr(c, key)
        if c.steps:
            data["steps"] = [{"kernel": name, "median_s": median, "fastest_s": fastest,
                              "work_items": items} for name, median, fastest, items in c.steps]
    if c.part == "cpu":
        data["runs"] = c.runs
    return data


def _kernel_seconds(offload: Offload, profile: DeviceProfile) -> float:
    """The kernel time another profile (another GPU model) predicts for the same cost paths."""
    from graphs.devicebox import box_model, build_device_box
    from models.gpu import gpu_model

    record = offload.on
    assert record is not None  # an `on`'s offload, as validate() collects them
    model = box_model(gpu_model(profile), record.pushed_words + record.gpu_words,
                      record.pushed_words)
    box = build_device_box(record.paths, model, profile.gpu)
    return box.time * profile.gpu.unit_seconds


def _kernel_summary(cases: list[Case]) -> dict:
    errors = [abs(c.error_pct) for c in cases if c.part == "kernel"]
    return {"kernel_median_abs_pct_error": statistics.median(errors) if errors else 0,
            "kernel_p90_abs_pct_error": percentile(errors, 0.9), "cases": len(errors)}


def _bank_conflicts(session, profile: DeviceProfile, mode: str, quick: bool,
                    repeats: int) -> list[Case]:
    """Slowdown of strided.lg's kernel at stride s against stride 1, predicted and measured."""
    from models.opencl.runner import run_offload

    path = EXAMPLES / "strided.lg"
    checked = check_program(parse(path.read_text(), str(path)))
    n = 64  # the table (2·n·s words) fits in local memory up to s = 33
    strides = [1, 2, 4, 8, 16, 32, 33] if quick else list(range(1, 34))
    kernel_times: dict[int, tuple[float, float]] = {}
    for s in strides:
        params = bind_parameters(checked, {"n": n, "s": s})
        collector = OffloadCollector()
        evaluate(checked, params, EvaluationOptions(profile=profile, gpu_mode=mode,
                                                    observer=collector))
        (offload,) = collector.offloads
        assert offload.on is not None  # strided.lg's one offload is its `on`
        run = run_offload(session, offload, checked.types, params, repeats=repeats)
        kernel_times[s] = (offload.on.info.kernel, run.kernel_total)
    predicted_1, measured_1 = kernel_times[1]
    return [Case("strided", s, "bank_conflict_slowdown", p / predicted_1, m / measured_1)
            for s, (p, m) in kernel_times.items()]


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-quantile of `values` (0.0 for none): the smallest value with at least
    a fraction q of them at or below it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def summarise(report: dict) -> dict:
    """Recompute the summary figures of a report from its cases (e.g. after merging reports),
    with the kernel errors of each GPU mode compared."""
    report["modes"] = {report["gpu_mode"]: _kernel_summary(
        [Case(c["program"], c["n"], c["part"], c["predicted_s"], c["measured_s"])
         for c in report["cases"]])}
    for mode, other in report.get("compare_cases", {}).items():
        report["modes"][mode] = _kernel_summary(
            [Case(c["program"], c["n"], c["part"], c["predicted_s"], c["measured_s"])
             for c in other])
    cases = [Case(c["program"], c["n"], c["part"], c["predicted_s"], c["measured_s"])
             for c in report["cases"]]
    kernel_errors = [abs(c.error_pct) for c in cases if c.part == "kernel"]
    transfer_errors = [abs(c.error_pct) for c in cases
                       if c.part in ("host_to_device", "device_to_host")]
    conflict_errors = [abs(c.error_pct) for c in cases if c.part == "bank_conflict_slowdown"]
    placements = report.get("placements", [])
    right = sum(1 for p in placements if p["predicted"] == p["measured"])
    cpu_errors = [abs(c.error_pct) for c in cases if c.part == "cpu"]
    report.update({
        "kernel_median_abs_pct_error": statistics.median(kernel_errors) if kernel_errors else 0,
        "kernel_p90_abs_pct_error": percentile(kernel_errors, 0.9),
        "transfer_mean_abs_pct_error": statistics.fmean(transfer_errors) if transfer_errors
        else 0,
        "bank_conflict_max_abs_pct_error": max(conflict_errors, default=0),
        "placement_accuracy": right / len(placements) if placements else 0,
        "placement_cpu_faster_fraction": (sum(1 for p in placements if p["measured"] == "cpu")
                                          / len(placements) if placements else 0.0),
        # the issue asks for the accuracy on the cases measured faster on the CPU apart
        "placement_cpu_faster_accuracy": _accuracy([p for p in placements
                                                    if p["measured"] == "cpu"]),
        "placement_gpu_faster_accuracy": _accuracy([p for p in placements
                                                    if p["measured"] == "gpu"]),
        "cpu_median_abs_pct_error": statistics.median(cpu_errors) if cpu_errors else 0.0,
        "cpu_p90_abs_pct_error": percentile(cpu_errors, 0.9),
        "card": report.get("card") or str(report.get("device", "")).split(" / ")[-1],
    })
    report.update(baseline_summary(report["cases"], report["gpu_mode"]))
    report.update(rewrite_summary(report.get("rewrites")))
    return report


def baseline_error_pct(case: dict, key: str) -> float | None:
    """A kernel case's signed error, in percent of the measured time, under the baseline `key`
    (one of BASELINES); None where that baseline made no prediction."""
    predicted = case.get(key)
    if predicted is None or not case["measured_s"]:
        return None
    return 100 * (predicted - case["measured_s"]) / case["measured_s"]


def baseline_summary(cases: list[dict], mode: str) -> dict:
    """The baselines' figures over the kernel cases (issue 13), all over |error %|:
    - `roofline_kernel_median_abs_pct_error`, `paper_kernel_median_abs_pct_error`: the median,
      over the kernel cases where that baseline predicted (`roofline_cases`, `paper_cases`);
    - `beats_roofline_fraction`, `beats_dmm_fraction`: the fraction of those cases where the
      report's own mode (`mode`) has a strictly smaller |error| than the baseline. Under `dmm`
      the DMM baseline is the report's own prediction, and `beats_dmm_fraction` is 0.0;
    - `beats_paper_fraction` and `beats_cache_fraction` likewise (0.0 under their own mode).
    A baseline with no case (an uncalibrated roofline) keeps its keys, at 0.0, with a count of 0.
    """
    kernels = [c for c in cases if c["part"] == "kernel"]
    figures: dict = {}
    for name, key in (("roofline", "roofline_s"), ("paper", "paper_s"), ("dmm", "dmm_s"),
                      ("cache", "cache_s")):
        pairs = [(abs(c["error_pct"]), abs(error)) for c in kernels
                 if (error := baseline_error_pct(c, key)) is not None]
        errors = [b for _, b in pairs]
        wins = sum(1 for own, baseline in pairs if own < baseline)
        figures[f"{name}_cases"] = len(pairs)
        figures[f"{name}_kernel_median_abs_pct_error"] = (statistics.median(errors) if errors
                                                          else 0.0)
        figures[f"{name}_kernel_p90_abs_pct_error"] = percentile(errors, 0.9)
        figures[f"beats_{name}_fraction"] = (wins / len(pairs) if pairs and name != mode
                                             else 0.0)
    return figures


def rewrite_summary(rewrites: dict | None) -> dict:
    """The rewrite figures of a merged `validate-rewrites` report, over its cases whose measured
    speedup differs from 1 by more than REWRITE_MEASURED_THRESHOLD: the fraction whose direction
    was predicted right, and the median |error %| of the predicted speedup. Without a report, or
    with no such case, both are 0.0 and `rewrite_cases` says 0."""
    cases = [c for c in (rewrites or {}).get("cases", [])
             if abs(c["measured_speedup"] - 1) > REWRITE_MEASURED_THRESHOLD]
    figures = rewrite_figures(cases)
    return {
        "rewrite_cases": figures["case_count"],
        "rewrite_direction_accuracy": figures["direction_accuracy"],
        "rewrite_speedup_median_abs_pct_error": figures["speedup_median_abs_pct_error"],
    }


def rewrite_figures(cases: list[dict]) -> dict:
    """Over rewrite cases (models.opencl.validate_rewrites): how many, the fraction whose
    direction was predicted right, and the median |error %| of the predicted speedup (0.0 for
    none)."""
    errors = [c["abs_pct_error"] for c in cases]
    return {
        "case_count": len(cases),
        "direction_accuracy": (sum(1 for c in cases if c["direction_right"]) / len(cases)
                               if cases else 0.0),
        "speedup_median_abs_pct_error": statistics.median(errors) if errors else 0.0,
    }


def _report(session, cpu_session, profile, mode, cases, placements, skipped, sizes,
            repeats: int) -> dict:
    """The report's facts; `summarise` adds the figures computed from them."""
    return {
        "device": session.info.describe(),
        "device_version": session.info.version,
        "cpu_device": cpu_session.info.describe(),
        "cpu_processors": cpu_session.info.compute_units,
        "cpu_model": cpu_model_name(profile),
        "cpu_measured": CPU_MEASURED,
        "cpu_part": CPU_PART,
        "card": session.info.name,
        "date": date.today().isoformat(),
        "gpu_mode": mode,
        "profile": profile.name,
        "sizes": sizes,
        "repeats": repeats,
        "cases": [_case_json(c) for c in cases],
        "placements": placements,
        "skipped": skipped,
        "pointer_place": {**pointer_place_json(session),
                          # None under a profile in abstract units (no seconds to compare)
                          "profile_alloc_s": (profile.gpu.atomic_latency
                                              * profile.gpu.seconds_per_unit
                                              if profile.gpu.seconds_per_unit else None)},
    }


def pointer_place_json(session) -> dict:
    """Where this process's allocation pointers lie (models/opencl/runner.py's
    `DeviceSession.pointer_place`), what one thread's chain of atomics cost there, and what one
    thread's allocation costs there (the calibration's own microbenchmark,
    `measure_thread_allocation`, run after the programs): on the H200 a place is near (140-170
    ns an atomic) or far (230-270 ns) and a process's one-thread allocations pay 200 or 300 ns
    accordingly (run 21), so each report says what its process drew, beside the profile's
    `atomic_latency`."""
    from models.opencl.calibrate_cache import measure_thread_allocation

    place, seconds = session.pointer_place()
    return {"place": place, "atomic_s": seconds,
            "slowest_place_atomic_s": max(session.place_times, default=0.0),
            "alloc_s": measure_thread_allocation(session, hops=PLACE_ALLOC_HOPS)}


PLACE_ALLOC_HOPS = 1024  # a third of a millisecond a run at 300 ns an allocation

DRAWS = ("process", "profile")


def process_draw(session, profile: DeviceProfile, draw: str = "process"
                 ) -> tuple[DeviceProfile, dict]:
    """`profile` with what this process's work groups pay for an allocation, group by group
    (`GpuParameters.group_atomic_latencies`), and the figures for the report.

    On the H200 whether a compute unit is near the allocation pointer's L2 partition or far from
    it is a draw of the process (one thread's allocation 200-225 or 285-326 ns in 97 validation
    processes of runs 22-24, steady within each; the calibration's by-unit figures near for
    groups 16-23 in one process and far for 0-23 in another, 2026-11-29), and a kernel's group
    k runs on the same unit in every launch (models/gpu_cache.py's `allocation_latencies`). The
    profile can only charge the expectation over the draw, which misses a kernel of few groups
    by ±20% in every process. So before any program runs, this times the calibration's own
    one-thread allocation chain here, run by each group of a kernel of as many groups as the
    device has compute units in turn (`measure_allocation_by_unit`); each figure is charged as
    the calibration charges its own, at least the L1's latency. Nothing of the programs
    enters it.

    Only a GPU, a profile in seconds under the cache mode, and `draw` "process"; otherwise the
    profile is returned as it is, with the reason."""
    if draw not in DRAWS:
        raise ValueError(f"draw must be one of {', '.join(DRAWS)}, not {draw!r}")
    gpu = profile.gpu
    why = ("asked for the profile's expectation" if draw == "profile"
           else "not a GPU" if "GPU" not in session.info.type
           else "the profile is not in seconds" if not gpu.seconds_per_unit
           else "not the cache mode" if gpu.mode != "cache" else None)
    if why or not gpu.seconds_per_unit:
        return profile, {"used": False, "why": why}
    from models.opencl.calibrate_cache import measure_allocation_by_unit

    one = measure_allocation_by_unit(session, hops=DRAW_HOPS, repeats=DRAW_REPEATS)
    return with_group_allocations(profile, one), {
        "used": True, "alloc_s": one, "profile_alloc_s": allocation_seconds(profile, 1)}


def with_group_allocations(profile: DeviceProfile, seconds: Sequence[float]) -> DeviceProfile:
    """`profile` (in seconds) charging work group k's one-lane allocation `seconds[k]`
    (`GpuParameters.group_atomic_latencies`), each as the calibration charges its own figure: in
    model units, at least the L1's latency. `process_draw` and benchmarks/repredict.py's
    `--draw` both make their profiles here."""
    gpu = profile.gpu
    per_unit = 1 / (gpu.seconds_per_unit or 1.0)
    return profile.with_gpu(
        group_atomic_latencies=tuple(max(t * per_unit, gpu.l1_latency) for t in seconds))


DRAW_HOPS = 512  # a figure is the slope between 512 and 1 024 allocations: 0.2-0.3 ms a run
DRAW_REPEATS = 3  # runs of each, the fastest kept


def allocation_seconds(profile: DeviceProfile, groups: int) -> float:
    """What `profile` charges an allocating step where one lane allocates, in a kernel of
    `groups` work groups, in seconds."""
    from models.gpu_cache import allocation_latencies

    return allocation_latencies(profile.gpu, groups)[0] * profile.gpu.unit_seconds


def render_markdown(report: dict) -> str:
    """The validation report as markdown: summary figures, then every case."""
    lines = [
        f"# Validation on {report['device']}",
        "",
        f"Date: {report['date']}. GPU memory model: `{report['gpu_mode']}`. Profile: "
        f"{report['profile']}. CPU placement measured on {report['cpu_device']}"
        + (f" ({report['cpu_processors']} compute units)" if "cpu_processors" in report else "")
        + (f"; the CPU priced {report['cpu_model']}" if "cpu_model" in report else "") + "."
        + (f" Each measured time is the median of {report['repeats']} runs."
           if "repeats" in report else ""),
        "",
        report.get("cpu_measured", CPU_MEASURED),
        "",
        "| figure | value | target |",
        "| --- | --- | --- |",
        f"| kernel time, median abs. error | {report['kernel_median_abs_pct_error']:.1f}% | "
        "≤ 15% |",
        f"| kernel time, 90th percentile abs. error | {report['kernel_p90_abs_pct_error']:.1f}% | "
        "≤ 40% |",
        f"| transfers 4 KB-256 MB, mean abs. error | "
        f"{report['transfer_mean_abs_pct_error']:.1f}% | ≤ 8% |",
        f"| bank-conflict slowdown, max abs. error | "
        f"{report['bank_conflict_max_abs_pct_error']:.1f}% | ≤ 10% |",
        f"| cheaper placement chosen right | {100 * report['placement_accuracy']:.0f}% | "
        "≥ 90% |",
        f"| CPU part, median abs. error | {report.get('cpu_median_abs_pct_error', 0):.1f}% | |",
        f"| CPU part, 90th percentile abs. error | {report.get('cpu_p90_abs_pct_error', 0):.1f}% "
        "| |",
        "",
        "Kernel errors by GPU memory model (each with its own calibration):",
        "",
        "| mode | median abs. error | 90th percentile | kernel cases |",
        "| --- | --- | --- | --- |",
        *[f"| `{mode}` | {m['kernel_median_abs_pct_error']:.1f}% | "
          f"{m['kernel_p90_abs_pct_error']:.1f}% | {m['cases']} |"
          for mode, m in sorted(report.get("modes", {}).items())],
        "",
        *render_baselines(report),
        "",
        "| program | n | part | predicted | measured | error |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for case in report["cases"]:
        lines.append(f"| {case['program']} | {case['n']} | {case['part']} | "
                     f"{duration(case['predicted_s'])} | {duration(case['measured_s'])} | "
                     f"{case['error_pct']:+.1f}% |")
    if report["placements"]:
        lines += ["", "| program | n | predicted cheaper | measured cheaper |",
                  "| --- | --- | --- | --- |"]
        for p in report["placements"]:
            lines.append(f"| {p['program']} | {p['n']} | {p['predicted']} | {p['measured']} |")
    place = report.get("pointer_place")
    if place:
        lines += ["", pointer_place_line(place)]
    for note in report.get("skipped", []):
        lines.append(f"\nSkipped: {note}")
    return "\n".join(lines) + "\n"


def pointer_place_line(place: dict) -> str:
    """What the report's `pointer_place` says, for people: where this process's allocation
    pointers were, what an atomic and one thread's allocation cost there, and what the profile
    charges an allocation (its `atomic_latency`), so that a one-thread loop's miss can be read
    against the place its process drew."""
    atomic = (f"an atomic took {duration(place['atomic_s'])} there (the slowest place's "
              f"{duration(place['slowest_place_atomic_s'])})"
              if place.get("atomic_s") else "no atomic was timed (not a GPU)")
    charged = place.get("profile_alloc_s")
    line = (f"Allocation pointers: place {place['place']}; {atomic}; one thread's allocation "
            f"took {duration(place['alloc_s'])} after the programs, "
            + (f"where the profile charges {duration(charged)}." if charged is not None
               else "where the profile, in abstract units, charges no seconds."))
    drawn = place.get("by_group")
    if not drawn:
        return line
    if not drawn.get("used"):
        return line + f" The predictions charge the profile's expectation ({drawn['why']})."
    one = drawn["alloc_s"]
    return line + (f" Before them, run by each of {len(one)} work groups in turn, one thread's "
                   f"allocation took {duration(min(one))} to {duration(max(one))} (group 0 "
                   f"{duration(one[0])}; the profile's expectation "
                   f"{duration(drawn['profile_alloc_s'])}); a kernel's groups are charged "
                   "their own (`--allocation-draw process`).")


BASELINE_NAMES = {"roofline": "roofline (same profile's bandwidth and issue rate)",
                  "paper": "the paper's Fig. 9 GPU", "dmm": "DMM/UMM GPU",
                  "cache": "memory-hierarchy GPU (cache mode)"}


def render_baselines(report: dict) -> list[str]:
    """Markdown lines: hetprof's kernel errors beside each baseline's on the same kernel cases,
    and in how many of them hetprof is the more accurate (`baseline_summary`)."""
    mode = report["gpu_mode"]
    lines = [f"Baselines on the same kernel cases (hetprof's model: `{mode}`; |error| percentiles;"
             " hetprof beats a baseline where its |error| is strictly smaller):", "",
             "| model | median abs. error | 90th percentile | cases | hetprof more accurate |",
             "| --- | --- | --- | --- | --- |",
             f"| hetprof (`{mode}`) | {report['kernel_median_abs_pct_error']:.1f}% | "
             f"{report['kernel_p90_abs_pct_error']:.1f}% | "
             f"{report.get('modes', {}).get(mode, {}).get('cases', '')} | |"]
    notes = []
    for name, label in BASELINE_NAMES.items():
        cases = report.get(f"{name}_cases", 0)
        if name == mode:
            notes.append(f"The report's own model is `{mode}`"
                         + (" (hetprof's default)" if mode == "dmm" else "")
                         + f", so `beats_{name}_fraction` is 0.")
            continue
        if not cases:
            lines.append(f"| {label} | unavailable | | 0 | |")
            if name == "roofline":
                notes.append("The roofline is unavailable: the profile has no calibrated "
                             "`gpu.dram_bytes_per_s` and `gpu.ops_per_s` (`hetprof calibrate`).")
            continue
        fraction = report[f"beats_{name}_fraction"]
        lines.append(f"| {label} | {report[f'{name}_kernel_median_abs_pct_error']:.1f}% | "
                     f"{report[f'{name}_kernel_p90_abs_pct_error']:.1f}% | {cases} | "
                     f"{round(fraction * cases)} of {cases} ({100 * fraction:.0f}%) |")
    return lines + [""] + notes if notes else lines
