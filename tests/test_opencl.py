"""The OpenCL backend: generated code against golden files, and every example run for real on
PoCL (an OpenCL CPU device installed with hetprof's dependencies) against the interpreter."""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import replace

import numpy as np
import pytest
from conftest import EXAMPLES, ROOT, box_launches_as_run
from hypothesis import HealthCheck, assume, given, note, settings

from graphs.semantics.explicit import OffloadCollector, evaluate
from graphs.semantics.inputs import estimate_room, offload_inputs
from graphs.semantics.options import EvaluationOptions
from models.opencl.codegen import BackendError
from models.opencl.runner import (
    DeviceSession,
    check_runs,
    heap_image,
    offload_key,
    plan_offload,
    run_offload,
    select_device,
    value_difference,
)
from models.opencl.validate import _variants
from profiler.checker import bind_parameters, check_program
from profiler.errors import DeviceError
from profiler.parser import parse
from tests.generate import well_typed_programs

GOLDEN = ROOT / "tests" / "golden"
SMALL = {"zipmul": {"n": 40}, "zipmul_cpu": {"n": 12}, "dot": {"n": 37}, "matvec":
         {"rows": 5, "cols": 6}, "nbody": {"n": 9}, "normalize_inc": {"n": 13}, "map_map":
         {"n": 9}, "dc_sum": {"n": 8}, "strided": {"n": 40, "s": 3}}


def offloads(path, params):
    checked = check_program(parse(path.read_text(), str(path.relative_to(ROOT))))
    bound = bind_parameters(checked, params)
    collector = OffloadCollector()
    evaluate(checked, bound, EvaluationOptions(observer=collector))
    return checked, bound, collector.offloads


@pytest.fixture(scope="module")
def pocl():
    return DeviceSession(select_device("pocl"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_device_boxes_launch_the_kernels_the_runner_launches(path, pocl):
    checked, params, found = offloads(path, SMALL[path.stem])
    if not any(o.on is not None for o in found):
        pytest.skip(f"{path.stem} runs no `on` on the GPU")
    assert sum(box_launches_as_run(checked, params, o, pocl) for o in found) >= 1


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_generated_code_matches_golden_file(path):
    checked, params, found = offloads(path, SMALL[path.stem])
    text = "".join(f"// offload {i}\n" + plan_offload(o, checked.types, params)[0].source
                   for i, o in enumerate(found))
    golden = GOLDEN / f"{path.stem}.cl"
    if os.environ.get("HETPROF_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), "run with HETPROF_UPDATE_GOLDEN=1 to create the golden file"
    assert text == golden.read_text()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_on_pocl_equals_the_interpreter(path, pocl):
    checked, params, found = offloads(path, SMALL[path.stem])
    if path.stem == "dc_sum":
        assert found == []  # `||` only: nothing to run as a kernel
        return
    assert found
    for offload in found:
        run = run_offload(pocl, offload, checked.types, params, repeats=2)
        assert run.matches, (run.value, run.expected)
        assert run.kernels and all(t.median > 0 for t in run.kernels.values())
        assert len(run.transfer_in.samples) == 2


def test_zipmul_moves_the_words_of_the_model(pocl):
    n = 40
    checked, params, (offload,) = offloads(ROOT / "examples" / "zipmul.lg", {"n": n})
    run = run_offload(pocl, offload, checked.types, params, repeats=1)
    # r0 as pushed: ints 1 + n, the iota vector 1 + n (+ its header), pairs ... : every value the
    # interpreter holds, each vector with one header word more
    interpreter_words = offload.on.pushed_words
    vectors = 2  # iota's and the input's
    assert run.words_in == interpreter_words + vectors
    # back: n products and the result vector (with its header)
    assert run.words_out == 2 * n + 1
    # in one copy (one region); back in two: the products the kernels allocated, and the result
    # vector the host reserved at the region's top
    assert run.copies_in == (run.words_in,)
    assert run.copies_out == (n, n + 1)


TAIL_LOOP = ROOT / "tests" / "programs" / "backend" / "tail_loop.lg"


def collatz_steps(k: int) -> int:
    steps = 0
    while k > 1:
        k, steps = (k // 2 if k % 2 == 0 else 3 * k + 1), steps + 1
    return steps


def test_tail_recursion_compiles_to_a_loop_matching_its_golden_file():
    checked, params, found = offloads(TAIL_LOOP, {"n": 6})
    text = plan_offload(found[0], checked.types, params)[0].source
    golden = GOLDEN / "tail_loop.cl"
    if os.environ.get("HETPROF_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert text.count("for (;;) {") == 2 and text.count("continue;") == 4


@pytest.mark.parametrize("n", [1, 9])
def test_tail_recursion_on_pocl_equals_the_interpreter(n, pocl):
    checked, params, (offload,) = offloads(TAIL_LOOP, {"n": n})
    run = run_offload(pocl, offload, checked.types, params, repeats=1, warmup=0)
    assert run.matches and run.value == (collatz_steps(27), [collatz_steps(k + 1)
                                                             for k in range(n)])


RECURSIVE = ("letregion r in on (let f = fix f: ((int r) -> int r [r], r). lambda x: int r [r]. "
             "if x <= 0 then x else {} in f (3 at r)) at r")


@pytest.mark.parametrize("body, at, reason", [
    ("x + f (x - 1)", "f (x", "`f` is called inside `+`, where its result is still needed"),
    ("f (f (x - 1))", "f (x", "`f` is called in the argument of a call of `f`"),
    ("(if f (x - 1) <= 0 then x else x)", "f (x", "`f` is called in the condition of an `if`"),
    ("let y = f (x - 1) in y", "f (x", "`f` is called in the value bound to `y`"),
    ("let g = lambda y: int r [r]. f y in g (x - 1)", "f y",
     "`f` is used inside the function `g`"),
    ("let g = f in g (x - 1)", "f in", "`f` is used as a value in the value bound to `g`"),
])
def test_recursion_that_is_not_a_loop_is_refused_with_its_place_and_reason(body, at, reason):
    checked = check_program(parse(RECURSIVE.format(body), "fix.lg"))
    collector = OffloadCollector()
    evaluate(checked, {}, EvaluationOptions(observer=collector))
    with pytest.raises(BackendError) as info:
        plan_offload(collector.offloads[0], checked.types, {})
    assert info.value.message.startswith(reason)
    assert "only" in info.value.message  # and what the backend does compile
    column = RECURSIVE.index("{}") + body.index(at) + 1
    assert (info.value.span.line, info.value.span.column) == (1, column)


def test_unsupported_construct_is_named(pocl):
    source = "letregion r in on (let g = lambda s >= [r]. (1 at s) at r in g[r]) at r"
    checked = check_program(parse(source, "region.lg"))
    collector = OffloadCollector()
    evaluate(checked, {}, EvaluationOptions(observer=collector))
    with pytest.raises(BackendError) as info:
        run_offload(pocl, collector.offloads[0], checked.types, {})
    assert "`region lambda` cannot be compiled" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (1, 28)


def test_device_selection_errors():
    from profiler.errors import DeviceError

    with pytest.raises(DeviceError, match="no OpenCL device matches 'no-such-gpu'"):
        select_device("no-such-gpu")
    assert select_device("0").index == 0
    assert "pocl" in select_device("POCL").platform_version.lower()


def test_device_selection_takes_a_matching_device_that_builds(monkeypatch):
    """Where a name matches several devices (two PoCLs: the wheel's, whose LLVM cannot name some
    CPUs, and Debian's), the first that builds a kernel; the first match where none does (its
    build error then says why)."""
    import models.opencl.runner as runner
    from models.opencl.runner import DeviceInfo, builds

    real = runner.list_devices()
    assert builds(select_device("pocl"))  # the suite's own device builds
    first = next(d for d in real if "pocl" in d.platform_version.lower())
    fakes = [DeviceInfo(k, first.platform, f"{first.name} #{k}", first.type, 1, 1, 1, 1, "",
                        first.platform_version) for k in range(3)]
    monkeypatch.setattr(runner, "list_devices", lambda: fakes)
    monkeypatch.setattr(runner, "builds", lambda info: info.name.endswith("#1"))
    assert select_device("pocl").name.endswith("#1")
    monkeypatch.setattr(runner, "builds", lambda info: False)
    assert select_device("pocl").name.endswith("#0")
    assert select_device("2").name.endswith("#2")  # an index is taken as given


def test_runner_step_launch_is_each_later_steps_time_beyond_its_predicted_work(pocl):
    """`runner_step_launch` runs its λG microbenchmark through the runner and takes the median,
    over the steps after the first, of measured less predicted-without-launch (the mean of
    that over its rounds); its points are each step's measurement beside its prediction with
    that launch."""
    import statistics

    from models.device_profile import load_profile
    from models.opencl.calibrate import runner_step_launch

    profile = load_profile(ROOT / "profiles" / "nvidia-h200-placed.json")
    launch, fit = runner_step_launch(pocl, profile, repeats=3, rounds=1)
    assert [k for k, _, _ in fit.points] == [0, 1, 2, 3, 4]
    assert all(m > 0 for _, m, _ in fit.points)
    beyond = [m - (p - launch) for _, m, p in fit.points[1:]]
    assert launch == pytest.approx(statistics.median(beyond))
    assert fit.parameters["seconds"] == launch
    assert fit.parameters["rounds"] == 1 and fit.parameters["round_spread_s"] == 0
    # the launch-free prediction of a later step is its work alone: far below any launch
    assert all(p - launch < 2e-6 for _, _, p in fit.points[1:])
    # over rounds (the runner's buffers placed anew each): their mean, each step's median
    launch, fit = runner_step_launch(pocl, profile, repeats=3, rounds=3)
    assert fit.parameters["rounds"] == 3 and fit.parameters["seconds"] == launch
    spread = fit.parameters["round_spread_s"]
    assert spread >= 0
    beyond = [m - (p - launch) for _, m, p in fit.points[1:]]
    assert min(beyond) - spread <= launch <= max(beyond) + spread


def test_runs_and_the_allocation_microbenchmarks_bump_pointers_at_the_sessions_place(pocl):
    """The runner's allocation pointers live at the session's one place (`pointer_place`), and
    the calibration's allocation chain (`runner_regions`, through `time_kernel`) bumps them
    there: after a run of an allocating example the place holds its final pointers, and after
    the chain it holds the chain's allocations."""
    from models.opencl.calibrate_cache import ALLOC_CHAIN, runner_regions
    from models.opencl.runner import POINTER_SLOTS, AllocationPointers, time_kernel

    place, seconds = pocl.pointer_place()
    assert (place, seconds) == (0, 0.0)  # a CPU device: the first place, nothing measured
    first = pocl.allocation_pointers(np.array([5, 6], dtype=np.int32))
    assert pocl.allocation_pointers(np.array([1], dtype=np.int32)).int_ptr == first.int_ptr
    wide = pocl.allocation_pointers(np.zeros(POINTER_SLOTS + 1, dtype=np.int32))
    assert wide.int_ptr != first.int_ptr  # past the place's slots: a buffer of its own

    def at_place(words: int) -> np.ndarray:
        out = np.zeros(words, dtype=np.int32)
        pocl.cl.enqueue_copy(pocl.queue, out, first).wait()
        return out

    checked, params, (offload, *_) = offloads(ROOT / "examples" / "nbody.lg", {"n": 9})
    _, regions = plan_offload(offload, checked.types, params)
    pocl.allocation_pointers(np.zeros(len(regions), dtype=np.int32))
    run = run_offload(pocl, offload, checked.types, params, repeats=1)
    assert run.matches is True
    assert at_place(len(regions)).sum() > 0  # zeroed before: the run's pointers are there
    hops, repeats, words = 16, 2, 1024
    _, out = time_kernel(pocl, ALLOC_CHAIN, "alloc_chain", 1, 1,
                         [np.zeros(words, np.int64), *runner_regions(words),
                          np.zeros(1, np.int32), np.zeros(1, np.int64)],
                         [np.int32(hops), np.int32(0)], repeats)
    assert isinstance(runner_regions(words)[2], AllocationPointers)
    assert int(out[3][0]) == hops * (repeats + 1) == int(at_place(1)[0])


def test_a_gpu_session_keeps_its_pointers_at_the_place_its_atomic_chain_timed_fastest(
        monkeypatch):
    """On a GPU the session times `PLACE_PROBE` at every place of its pointer buffer and keeps
    the fastest (here PoCL taken for a GPU, its measured times replaced by ones that make place
    5 the fastest): the pointers then live in a sub-buffer at that place's offset, chosen once,
    when the session is made."""
    from models.opencl import runner
    from models.opencl.runner import PLACE_BYTES, PLACE_HOPS, POINTER_PLACES

    launches = []
    real = runner.event_seconds

    def timed(event) -> float:  # each place's two lengths of chain, three runs each, in turn
        real(event)
        place, within = divmod(len(launches), 6)
        launches.append(place)
        hops = PLACE_HOPS if within < 3 else 2 * PLACE_HOPS
        return hops * (100e-9 if place == 5 else 300e-9)

    monkeypatch.setattr(runner, "event_seconds", timed)
    session = DeviceSession(replace(select_device("pocl"), type="GPU"))
    assert len(launches) == 6 * POINTER_PLACES  # chosen as the session was made
    place, seconds = session.pointer_place()
    assert len(launches) == 6 * POINTER_PLACES
    assert place == 5 and seconds == pytest.approx(100e-9)
    assert len(session.place_times) == POINTER_PLACES
    assert max(session.place_times) == pytest.approx(300e-9)
    buffer = session.allocation_pointers(np.array([7, 8], dtype=np.int32))
    assert buffer.offset == 5 * PLACE_BYTES and buffer.size == PLACE_BYTES
    assert session.pointer_place() == (5, seconds)  # chosen once
    out = np.zeros(2, dtype=np.int32)
    session.cl.enqueue_copy(session.queue, out, buffer).wait()
    assert out.tolist() == [7, 8]


def test_the_place_probe_is_one_chain_of_atomic_adds_each_at_the_last_ones_result():
    """`PLACE_PROBE` with `mask` 0 adds one to the place's first word `hops` times, each add at
    an address computed from the previous add's result (so that no compiler can issue them
    together): the word ends `hops` higher and the kernel returns the last add's old value."""
    from models.opencl.runner import PLACE_PROBE

    session = DeviceSession(select_device("pocl"))
    cl = session.cl
    flags = cl.mem_flags
    word = cl.Buffer(session.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                     hostbuf=np.array([40, 0], dtype=np.int32))
    out = cl.Buffer(session.context, flags.READ_WRITE, 4)
    kernel = session.kernel(session.program(PLACE_PROBE), "place_probe")
    kernel(session.queue, (1,), (1,), word, out, np.int32(300), np.int32(0)).wait()
    words, last = np.zeros(2, dtype=np.int32), np.zeros(1, dtype=np.int32)
    cl.enqueue_copy(session.queue, words, word).wait()
    cl.enqueue_copy(session.queue, last, out).wait()
    assert words.tolist() == [340, 0] and int(last[0]) == 339


def test_runner_step_figure_is_the_rounds_mean_of_the_later_steps_median_beyond_work():
    """`runner_step_figure` on rounds made up from the profile's own predictions: a round
    whose later steps each take their work plus c gives c, the first step left out, and rounds
    are averaged."""
    from graphs.devicebox import phase_launches
    from models.device_profile import load_profile
    from models.opencl.calibrate import _runner_step_offload, runner_step_figure

    profile = load_profile(ROOT / "profiles" / "nvidia-h200-placed.json")
    _, _, offload = _runner_step_offload(profile)
    work = [p.time * profile.gpu.unit_seconds for p in offload.on.info.box.phases
            if phase_launches(p)]
    assert len(work) == 5 and all(0 < w < 2e-6 for w in work)
    first = [[w + 6e-6 for w in work], [w + 8e-6 for w in work]]
    first[0][0] += 5e-6  # the first step (its page walks) does not count
    first[1][3] += 9e-6  # one slow step of four does not move their median
    launch, fit = runner_step_figure(profile, first)
    assert launch == pytest.approx((6e-6 + 8e-6) / 2)
    assert fit.parameters["rounds"] == 2
    assert fit.parameters["round_spread_s"] == pytest.approx(2e-6)
    with pytest.raises(RuntimeError, match="5 launching phases"):
        runner_step_figure(profile, [work[:4]])


def test_runner_copy_step_is_the_first_kernel_after_the_copy_beyond_work_walk_and_launch():
    """`runner_copy_step` on rounds made up from the profile's own predictions of
    `RUNNER_COPIED`: a round whose first step takes its work (walk included) plus the launch
    plus d gives d, the later steps do not count, rounds are averaged, and a first step faster
    than its launch gives 0, not less."""
    from graphs.devicebox import phase_launches
    from models.device_profile import load_profile
    from models.opencl.calibrate import RUNNER_COPIED, _runner_step_offload, runner_copy_step

    profile = load_profile(ROOT / "profiles" / "nvidia-h200-placed.json")
    _, _, offload = _runner_step_offload(profile, RUNNER_COPIED)
    phases = [p for p in offload.on.info.box.phases if phase_launches(p)]
    work = [p.time * profile.gpu.unit_seconds for p in phases]
    assert len(work) == 3 and phases[0].walk > 0  # three maps; the first pays the walks
    launch = 6e-6
    rounds = [[w + launch for w in work], [w + launch for w in work]]
    rounds[0][0] += 2e-6
    rounds[1][0] += 3e-6
    rounds[1][2] += 9e-6  # a slow later step does not count
    step, fit = runner_copy_step(profile, rounds, launch)
    assert step == pytest.approx(2.5e-6)
    assert fit.parameters["rounds"] == 2
    assert fit.parameters["round_spread_s"] == pytest.approx(1e-6)
    assert [m for _, m, _ in fit.points] == [r[0] for r in rounds]
    step, _ = runner_copy_step(profile, [[w + launch - 1e-6 for w in work]], launch)
    assert step == 0.0
    with pytest.raises(RuntimeError, match="3 launching phases"):
        runner_copy_step(profile, [work[:2]], launch)


def test_the_copied_in_runner_program_runs_three_map_steps_on_pocl(pocl):
    """`RUNNER_COPIED` through the runner on a real device: three kernel steps a round, each
    timed, its result checked (`runner_step_rounds` raises on a wrong value)."""
    from models.opencl.calibrate import RUNNER_COPIED, runner_step_rounds

    rounds = runner_step_rounds(pocl, repeats=3, rounds=2, source=RUNNER_COPIED)
    assert len(rounds) == 2 and all(len(r) == 3 for r in rounds)
    assert all(0 < t < 0.1 for r in rounds for t in r)


def test_quick_calibration_and_validation_on_pocl(pocl, tmp_path):
    """The whole loop on a real device: microbenchmarks, fits, a profile in seconds, and a
    validation report with the keys the issue names."""
    from models.device_profile import load_profile, save_profile
    from models.opencl.calibrate import calibrate
    from models.opencl.validate import render_markdown, validate

    result = calibrate(pocl, pocl, quick=True)
    profile = result.profile
    assert profile.units == "seconds"
    assert profile.gpu.seconds_per_unit > 0 and profile.cpu.seconds_per_unit > 0
    assert set(result.mode_errors) == {"paper", "dmm"}
    # the written profile is in the mode the suite's measurements chose; each mode is beside it
    assert profile.gpu.mode == "cache" and set(result.per_mode) == {"paper", "dmm", "cache"}
    assert profile == result.per_mode["cache"]
    assert profile.gpu.seconds_per_unit == 1e-9  # the cache mode's latencies are nanoseconds
    gpu = profile.gpu
    assert 0 < gpu.l1_latency <= gpu.l2_latency <= gpu.dram_latency
    assert gpu.atomic_latency > 0 and gpu.op > 0 and gpu.line_time >= 0
    assert gpu.l1_bytes >= 8192 and gpu.l2_bytes >= gpu.l1_bytes
    chase = next(f for f in result.fits if f.name.startswith("pointer chase"))
    assert chase.parameters["l1_latency"] * 1e9 == pytest.approx(gpu.l1_latency)
    names = {fit.name for fit in result.fits}
    assert {"host to device", "device to host", "kernel launch",
            "local staging loop, seconds vs iterations"} <= names
    # u is fitted in each mode's own latency: the written (cache) profile's from its own fit,
    # the DMM profile's from the DMM fit, over the same timed loops.
    staging = next(f for f in result.fits if f.name.startswith("local staging")
                   and f.name.endswith("(cache mode)"))
    dmm_staging = next(f for f in result.fits if f.name.startswith("local staging")
                       and "cache" not in f.name)
    assert profile.gpu.staging_overlap == staging.parameters["staging_overlap"] >= 1
    assert (result.per_mode["dmm"].gpu.staging_overlap
            == dmm_staging.parameters["staging_overlap"] >= 1)
    assert [m for _, m, _ in staging.points] == [m for _, m, _ in dmm_staging.points]
    assert staging.points[0][1] == staging.points[0][2]  # the shortest loop is the base
    assert [k for k, _, _ in staging.points][:3] == [1, 2, 4]
    # the roofline's rates (microbenchmarks only), in the profile and in the fits table
    bandwidth = next(f for f in result.fits if f.name.startswith("DRAM bandwidth"))
    issue = next(f for f in result.fits if f.name.startswith("issue rate"))
    assert profile.gpu.dram_bytes_per_s == bandwidth.parameters["bytes_per_s"] > 1e6
    assert profile.gpu.ops_per_s == issue.parameters["ops_per_s"] > 1e6
    assert all(p.gpu.dram_bytes_per_s == profile.gpu.dram_bytes_per_s
               for p in result.per_mode.values())
    # the CPU world by operation class (models/opencl/calibrate_cpu.py)
    assert profile.cpu.by_class and profile.cpu.processors == pocl.info.compute_units
    assert {"CPU read, stride 1", "CPU memory bandwidth, stride-1 copy",
            "CPU PRAM step"} <= names
    # the launch as the backend launches: after the host copied 2^10 ... 2^22 words in
    launches = {f.name.rsplit("2^", 1)[1].split()[0]: f.parameters["seconds"]
                for f in result.fits if f.name.startswith("CPU kernel launch, three kernels")}
    assert launches.keys() == {"10", "16", "19", "22"}
    cpu = profile.cpu
    assert (cpu.launch_s, cpu.launch_after_16_s, cpu.launch_after_19_s, cpu.launch_after_22_s) == (
        launches["10"], launches["16"], launches["19"], launches["22"])
    # the cache mode's launch is a kernel step through the backend's runner, beyond its work
    # (where its work is predicted above what it measured, as PoCL's can be, the empty kernels'
    # launch stays: the slower of the bare and the generated-signature one)
    runner_step = next(f for f in result.fits if f.name.startswith("kernel launch of a runner"))
    expected = runner_step.parameters["seconds"]
    empty = runner_step.parameters["empty_kernel_s"]
    assert empty > 0
    assert profile.gpu.launch * 1e-9 == pytest.approx(expected if expected > 0 else empty)
    assert len(runner_step.points) == 5  # RUNNER_STEPS: the count, an iota, three maps
    assert math.isfinite(runner_step.parameters["first_s"])  # measured before the rest, reported
    # the first kernel after a copy in: its figure in the profile, one point a round
    copy = next(f for f in result.fits if f.name.startswith("the first kernel after a copy in"))
    assert profile.gpu.copy_step * 1e-9 == pytest.approx(copy.parameters["seconds"])
    assert copy.parameters["seconds"] >= 0
    assert len(copy.points) == copy.parameters["rounds"] >= 1
    # the map step per busy unit, written (a part on fewer units is priced by their ratio)
    steps = {int(f.parameters["units"]): f.parameters["seconds"] for f in result.fits
             if f.name.startswith("CPU map step per unit")}
    processors = cpu.processors
    assert steps.keys() == {u for u in (1, 2, 4, 8) if u < processors} | {processors}
    assert cpu.unit_step_all_s == steps[processors] > 0
    assert (cpu.unit_step_1_s, cpu.unit_step_2_s, cpu.unit_step_4_s, cpu.unit_step_8_s) == tuple(
        steps.get(u, 0.0) if u < processors else 0.0 for u in (1, 2, 4, 8))
    chain = next(f for f in result.fits if f.name.startswith("CPU serial chain step"))
    assert cpu.serial_step_s == chain.parameters["seconds"] > 0
    save_profile(profile, tmp_path / "pocl.json")
    assert load_profile(tmp_path / "pocl.json") == profile
    report = validate(pocl, pocl, profile, [str(ROOT / "examples" / "map_map.lg")], [64],
                      quick=True, parts=("programs",))
    assert report["repeats"] == 3  # --quick's, where no --repeats is given
    # the process's pointer place (on a CPU the first, with no atomic timed) and its allocation
    place = report["pointer_place"]
    assert (place["place"], place["atomic_s"]) == pocl.pointer_place() == (0, 0.0)
    assert place["slowest_place_atomic_s"] == 0.0 and pocl.place_times == []
    assert 0 < place["alloc_s"] < 1e-5
    assert place["profile_alloc_s"] == profile.gpu.atomic_latency * profile.gpu.seconds_per_unit
    from graphs.numbers import duration
    assert (f"Allocation pointers: place 0; no atomic was timed (not a GPU); one thread's "
            f"allocation took {duration(place['alloc_s'])} after the programs, where the profile "
            f"charges {duration(place['profile_alloc_s'])}. The predictions charge the profile's "
            "expectation (not a GPU).") in render_markdown(report)
    assert place["by_group"] == {"used": False, "why": "not a GPU"}
    for key in ("device", "date", "gpu_mode", "cases", "kernel_median_abs_pct_error",
                "kernel_p90_abs_pct_error", "transfer_mean_abs_pct_error",
                "bank_conflict_max_abs_pct_error", "placement_accuracy"):
        assert key in report
    parts = {case["part"] for case in report["cases"]}
    assert {"kernel", "transfer_in", "on", "cpu"} <= parts
    for case in report["cases"]:
        assert case["predicted_s"] > 0 and case["measured_s"] > 0
    # issue 13's summary keys, each a number, consistent with the cases
    for key in ("kernel_median_abs_pct_error", "kernel_p90_abs_pct_error",
                "roofline_kernel_median_abs_pct_error", "paper_kernel_median_abs_pct_error",
                "beats_roofline_fraction", "beats_dmm_fraction", "cpu_median_abs_pct_error",
                "cpu_p90_abs_pct_error", "placement_accuracy", "placement_cpu_faster_fraction",
                "rewrite_direction_accuracy", "rewrite_speedup_median_abs_pct_error"):
        assert isinstance(report[key], (int, float)), key
    assert report["card"] == pocl.info.name and report["gpu_mode"] == profile.gpu.mode
    kernels = [c for c in report["cases"] if c["part"] == "kernel"]
    assert kernels and report["roofline_cases"] == report["paper_cases"] == len(kernels)
    for case in kernels:
        assert 0 < case["roofline_s"] and case["paper_s"] > 0 and case["dmm_s"] > 0
        assert case[f"{report['gpu_mode']}_s"] == case["predicted_s"]
    roofline_errors = sorted(abs(100 * (c["roofline_s"] - c["measured_s"]) / c["measured_s"])
                             for c in kernels)
    assert report["roofline_kernel_median_abs_pct_error"] == pytest.approx(
        statistics.median(roofline_errors))
    wins = sum(1 for c, r in zip(kernels, [abs(100 * (c["roofline_s"] - c["measured_s"])
                                               / c["measured_s"]) for c in kernels], strict=True)
               if abs(c["error_pct"]) < r)
    assert report["beats_roofline_fraction"] == pytest.approx(wins / len(kernels))
    if report["gpu_mode"] == "dmm":
        assert report["beats_dmm_fraction"] == 0.0
    placements = report["placements"]
    assert report["placement_cpu_faster_fraction"] == pytest.approx(
        sum(p["measured"] == "cpu" for p in placements) / len(placements))
    assert report["rewrite_cases"] == 0 and report["rewrite_direction_accuracy"] == 0.0
    assert "roofline" in render_markdown(report)


def test_cpu_microbenchmarks_give_finite_positive_parameters_on_pocl(pocl):
    """Each by-class parameter of models/cpu.py measured on PoCL's CPU device: finite, positive,
    and within what any CPU of this decade does (a read under a microsecond, a launch under a
    second, a bandwidth between 100 MB/s and 10 TB/s)."""
    from models.opencl.calibrate_cpu import calibrate_cpu

    result = calibrate_cpu(pocl, quick=True, repeats=1)
    cpu = result.cpu
    assert cpu.by_class and result.processors == cpu.processors == pocl.info.compute_units
    seconds = (cpu.read_s, cpu.read_stride_s, cpu.read_cached_s, cpu.write_s, cpu.alloc_s,
               cpu.op_s, cpu.task_s, cpu.launch_s, cpu.contended_alloc_s)
    assert all(0 < s < 1 and math.isfinite(s) for s in seconds), seconds
    assert max(cpu.read_s, cpu.read_stride_s, cpu.read_cached_s, cpu.write_s, cpu.op_s,
               cpu.alloc_s) < 1e-6
    assert 1e8 < cpu.bytes_per_s < 1e13
    assert cpu.seconds_per_unit is not None and 0 < cpu.seconds_per_unit < 1e-6
    assert cpu.merge == pytest.approx(cpu.launch_s / cpu.seconds_per_unit)
    assert all(f.parameters and f.points for f in result.fits)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(program=well_typed_programs())
def test_generated_programs_on_pocl_equal_the_interpreter(program, pocl):
    """Differential: every offload of a generated well-typed program, compiled to OpenCL C and
    run on PoCL, gives the interpreter's value. Programs using what the backend does not compile
    (a CPU closure used inside an `on`, say) are set aside, never counted as passing."""
    checked = check_program(program)
    collector = OffloadCollector()
    evaluate(checked, {}, EvaluationOptions(observer=collector))
    ran = 0
    for offload in collector.offloads:
        try:
            run = run_offload(pocl, offload, checked.types, {p.name: p.default
                                                             for p in program.params},
                              repeats=1, warmup=0)
        except BackendError:
            continue
        note(f"device {run.value!r}, interpreter {run.expected!r}")
        assert run.matches
        ran += 1
    assume(ran > 0)


def test_an_on_passing_on_a_value_of_a_region_it_does_not_copy_is_set_aside(pocl):
    """The differential test's program of 2026-11-29 (CI, hypothesis): the kernel returns x1, a
    float of region r2 that the `on` does not copy (the checker allows it: the work never reads
    it). The backend cannot hand a kernel a pointer into host memory, so the offload is a
    `BackendError` naming the value and the regions, where it was a bare device error."""
    from models.opencl.codegen import BackendError

    source = """letregion r0 in
letregion r1 in
letregion r2 in
(let x1 = (lambda a3: ((float r2, bool), r2) [r0, r1, r2]. 0.5 at r2 at r2)
            ((0.5 at r2, False) at r2) in
 on parmap (lambda a5: float r0. x1 at r1) ([0.5 at r0] at r1) at r0 at r0)[0 at r2]
"""
    checked = check_program(parse(source, "<on>"))
    collector = OffloadCollector()
    evaluate(checked, {}, EvaluationOptions(observer=collector))
    (offload,) = collector.offloads
    with pytest.raises(BackendError, match=r"the `on` uses x1, a value in region r2, which it "
                                           r"does not copy to the device \(it copies r0, r1\)"
                       ) as raised:
        run_offload(pocl, offload, checked.types, {}, repeats=1, warmup=0)
    assert (raised.value.span.line, raised.value.span.column) == (6, 2)  # the `on`


def test_transfer_fit_of_two_sizes_timed_alike_keeps_a_finite_readable_rate(tmp_path):
    """CI's PoCL calibration once timed two copy sizes alike; the interval between them was
    credited with 1e18 words/s, and the profile written could not be read back. The rate of an
    interval is capped at twice the best measured throughput, and the profile round-trips."""
    from dataclasses import replace

    from models.device_profile import DeviceProfile, load_profile, save_profile
    from models.opencl.calibrate import MAX_RATE_OVER_BEST, fit_transfer

    words = [1024, 4096, 16384, 65536]
    seconds = [2.0e-5, 2.0e-5, 4.0e-5, 1.0e-4]  # the first two timed alike
    params, fit = fit_transfer("device to host", words, seconds)
    best = max(w / t for w, t in zip(words, seconds, strict=True))
    rates = [p.words_per_unit for p in params.pieces] + [params.words_per_unit]
    assert max(rates) == pytest.approx(MAX_RATE_OVER_BEST * best)
    assert fit.points[-1][2] == pytest.approx(1.0e-4)  # still through the largest size
    profile = replace(DeviceProfile(), host_to_device=params, device_to_host=params)
    save_profile(profile, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json") == profile


# -- offloads without the interpreter (graphs/semantics/inputs.py) ---------------------------------

FAST = [("gemm", {"n": 16}), ("nn", {"n": 1024}), ("blackscholes", {"n": 64}), ("kmeans", {})]


def _suite_offloads(name, params):
    path = ROOT / "benchmarks" / "suite" / f"{name}.lg"
    checked = check_program(parse(path.read_text(), str(path.relative_to(ROOT))))
    gpu, _ = _variants(checked)
    bound = bind_parameters(checked, params)
    collector = OffloadCollector()
    evaluate(gpu, bound, EvaluationOptions(observer=collector))
    (slow,) = collector.offloads
    (fast,) = offload_inputs(gpu, bound)
    return gpu, bound, fast, slow


@pytest.mark.parametrize("name, params", FAST, ids=[name for name, _ in FAST])
def test_region_images_fill_the_device_heap_as_the_interpreters_regions_do(name, params):
    """The image path of `_layout`/`_fill` writes the very words the per-value path writes."""
    _, _, fast, slow = _suite_offloads(name, params)
    assert np.array_equal(heap_image(fast), heap_image(slow))


@pytest.mark.parametrize("name, params", FAST[:2], ids=[name for name, _ in FAST[:2]])
def test_an_offload_without_the_interpreter_runs_and_its_value_is_unchecked(name, params, pocl):
    """gemm and nn with inputs from graphs.semantics.inputs: the device computes the
    interpreter's value; the run says it is unchecked (there was nothing to compare with), and
    comparing it with a run of the interpreter's offload finds no difference."""
    checked, bound, fast, slow = _suite_offloads(name, params)
    room = estimate_room(checked, lambda n: {"n": n}, bound["n"], probes=(4, 8))
    grown = {rid: slow.heap[rid].ap - slow.inputs[rid].ap for rid in slow.inputs}
    assert room.keys() == grown.keys()
    for rid, words in room.items():  # the estimate within the runner's margin of 4
        assert grown[rid] / 4 < words < 4 * grown[rid]
    run = run_offload(pocl, fast, checked.types, bound, repeats=1, warmup=0, room=room)
    reference = run_offload(pocl, slow, checked.types, bound, repeats=1, warmup=0)
    assert reference.matches is True and reference.checked
    assert run.matches is None and not run.checked and run.expected is None
    assert run.value == reference.expected  # exactly, floats bit for bit
    assert check_runs(run, reference) is None
    assert run.words_in == reference.words_in
    # the same kernels on the same words: one key, however the inputs were obtained
    assert offload_key(pocl, fast, checked.types, bound) == offload_key(
        pocl, replace(fast, inputs={rid: image.copy() for rid, image in fast.inputs.items()}),
        checked.types, bound)


def test_two_runs_that_differ_are_reported_where_they_differ(pocl):
    checked, bound, fast, slow = _suite_offloads("gemm", {"n": 4})
    room = {rid: slow.heap[rid].ap - slow.inputs[rid].ap for rid in slow.inputs}
    run = run_offload(pocl, fast, checked.types, bound, repeats=1, warmup=0, room=room)
    with pytest.raises(DeviceError, match="allocates on the device are unknown"):
        run_offload(pocl, fast, checked.types, bound, repeats=1, warmup=0)
    changed = list(run.value)
    changed[5] = changed[5] + 2.0**-40
    other = replace(run, value=changed, device="another device")
    message = check_runs(run, other)
    assert message is not None and "value[5]" in message and "another device" in message
    assert value_difference([1.0, (2, 3.0)], [1.0, (2, 3.0)]) is None
    assert value_difference([(1, float("nan"))], [(1, float("nan"))]) is None
    assert value_difference([1, 2], [1, 2, 3]) == "value: a vector of 2 elements against 3 elements"
    assert value_difference((1, -0.0), (1, 0.0)) is None  # == on floats, as _same compares
    assert value_difference([(4, 1.5)], [(4, 1.25)]) == "value[0][1]: 1.5 against 1.25"


def test_a_heap_larger_than_the_device_allocates_is_a_device_error(pocl):
    """gemm at n = 256 on the H200 asked for a heap past CL_DEVICE_MAX_MEM_ALLOC_SIZE and ended in
    pyopencl's traceback; it is a DeviceError naming the size and the limit."""
    from profiler.errors import DeviceError

    words = pocl.info.max_allocation // 8 + 1
    assert pocl.info.max_allocation > 0
    with pytest.raises(DeviceError, match="allocates in one buffer"):
        pocl.pinned(words)
