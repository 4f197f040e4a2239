"""models/opencl/validate.py on PoCL: where each `on`'s inputs come from (`inputs=`), and how the
device's value was checked, per program in the report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from types import SimpleNamespace

import pytest
from conftest import ROOT

from graphs.semantics.explicit import OFFLOAD_CENTRE, OffloadCollector, evaluate
from graphs.semantics.inputs import NotVectorised
from graphs.semantics.options import EvaluationOptions
from models.device_profile import (
    CpuParameters,
    DeviceProfile,
    GpuParameters,
    load_profile,
    save_profile,
)
from models.opencl.predict import (
    SymbolicPredictions,
    growth_as_write,
    plan_kernels,
)
from models.opencl.runner import DeviceSession, run_offload, select_device
from models.opencl.validate import (
    _explicit_floor,
    _variants,
    explicit_predictions,
    predicted_transfers,
    render_markdown,
    validate,
)
from profiler.checker import bind_parameters, check_program
from profiler.parser import parse

NN = str(ROOT / "benchmarks" / "suite" / "nn.lg")
ATAX = str(ROOT / "benchmarks" / "suite" / "atax.lg")
ZIPMUL = str(ROOT / "examples" / "zipmul.lg")


@pytest.fixture(scope="module")
def pocl():
    return DeviceSession(select_device("pocl"))


def _validate(pocl, programs, inputs):
    return validate(pocl, pocl, DeviceProfile(), programs, [64], quick=True, parts=("programs",),
                    inputs=inputs)


def test_auto_inputs_run_fast_where_the_predictions_are_symbolic_and_say_so(pocl):
    """atax is regular and its CPU part vectorises: symbolic predictions, numpy inputs, the GPU's
    value checked against the CPU device's. nn's branch is not regular, so the interpreter runs
    for its predictions and gives its inputs too; zipmul's `on` is not at the top."""
    report = _validate(pocl, [ATAX, NN, ZIPMUL], "auto")
    atax, nn, zipmul = report["inputs"]
    assert atax == {"program": "atax", "n": 64, "predictions": "symbolic", "inputs": "fast",
                    "values": f"checked against {pocl.info.describe()}"}
    assert nn["predictions"] == "explicit" and nn["inputs"] == "interpreter"
    assert "branch" in nn["explicit_because"]
    assert nn["values"] == "checked against the interpreter"
    assert zipmul["inputs"] == "interpreter"
    parts = {(c["program"], c["part"]) for c in report["cases"]}
    assert {("atax", "kernel"), ("atax", "cpu"), ("nn", "kernel"), ("zipmul", "kernel")} <= parts
    # each kernel case keeps its plan's steps as measured: their medians make up the kernel's time
    for case in (c for c in report["cases"] if c["part"] == "kernel"):
        steps = case["steps"]
        assert steps and all(s["fastest_s"] <= s["median_s"] and s["work_items"] >= 1
                             for s in steps)
        assert sum(s["median_s"] for s in steps) == pytest.approx(case["measured_s"])
    atax_steps = next(c["steps"] for c in report["cases"]
                      if c["program"] == "atax" and c["part"] == "kernel")
    assert max(s["work_items"] for s in atax_steps) == 64  # a thread a row


def test_fast_inputs_where_asked_and_a_refusal_of_what_does_not_vectorise(pocl):
    report = _validate(pocl, [NN], "fast")
    assert [(i["predictions"], i["inputs"]) for i in report["inputs"]] == [("explicit", "fast")]
    with pytest.raises(NotVectorised):
        _validate(pocl, [ZIPMUL], "fast")
    report = validate(pocl, pocl, DeviceProfile(), [ATAX], [64], quick=True,
                      parts=("programs",), inputs="interpreter", predictions="explicit")
    assert [(i["predictions"], i["inputs"]) for i in report["inputs"]] == [
        ("explicit", "interpreter")]


def test_the_cli_takes_inputs_and_reports_them(tmp_path):
    save_profile(DeviceProfile(), tmp_path / "profile.json")
    done = subprocess.run(
        [sys.executable, "-m", "cli", "validate", ATAX, "--device", "pocl", "--cpu-device", "pocl",
         "--device-profile", str(tmp_path / "profile.json"), "--sizes", "64", "--parts",
         "programs", "--inputs", "auto", "--repeats", "2", "--format", "json",
         "-o", str(tmp_path / "r.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(i["program"], i["inputs"]) for i in report["inputs"]] == [("atax", "fast")]
    assert report["repeats"] == 2  # not validate's default of 7
    assert "the median of 2 runs" in render_markdown(report)
    refused = subprocess.run(
        [sys.executable, "-m", "cli", "validate", ATAX, "--device", "pocl",
         "--device-profile", str(tmp_path / "profile.json"), "--repeats", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "--repeats" in refused.stderr
    assert "must be at least 1" in refused.stderr and "Traceback" not in refused.stderr


def test_the_cpu_floor_counts_the_same_edges_symbolically_and_explicitly():
    """models/opencl/predict.py counts a CPU part's reads and writes with a counting profile;
    validate's explicit path counts them in the graph: the floors agree, and a slow enough
    contended pointer makes the floor the allocations' time where two units allocate."""
    cpu = CpuParameters(seconds_per_unit=1e-9, read_s=1e-9, write_s=1e-9, op_s=1e-9,
                        contended_alloc_s=1.0, bytes_per_s=8e9, processors=2)
    profile = DeviceProfile(units="seconds", cpu=cpu, gpu=GpuParameters(seconds_per_unit=1e-9))
    checked = check_program(parse((ROOT / "examples" / "zipmul.lg").read_text(), ZIPMUL))
    gpu, cpu_variant = _variants(checked)
    predictions = SymbolicPredictions(gpu, cpu_variant, profile, "dmm", {}, 2)
    params = bind_parameters(checked, {"n": 512})  # two work groups: both units allocate
    (guess,) = predictions.at(params)
    evaluation = evaluate(cpu_variant, params, EvaluationOptions(profile=growth_as_write(profile)))
    centre = f"{OFFLOAD_CENTRE}0"
    explicit = _explicit_floor(evaluation, centre, 0, profile, 2)
    symbolic = predictions.floor(centre, params, 0, 2)
    # zipmul's `on` body allocates 512 products and the result vector: 513 bumps of a second
    assert symbolic == explicit == pytest.approx(512 + 1)
    # the prediction floors kernel by kernel (models.cpu.cpu_floor's `kernels`): the map's
    # kernel of two work groups makes the 512 products' bumps on two units; the result vector is
    # reserved by the host (models/opencl/runner.py), not bumped by a kernel
    assert guess.cpu_low == guess.cpu_high == pytest.approx(512.0)
    # one work group runs on one unit, which keeps the pointer's line to itself: only the
    # socket's bandwidth bounds it, for the 513 words it writes
    assert predictions.floor(centre, params, 0, 1) == _explicit_floor(
        evaluation, centre, 0, profile, 1) == pytest.approx(513 * profile.region.word_bytes / 8e9)
    (small,) = predictions.at(bind_parameters(checked, {"n": 64}))
    assert small.cpu is not None and small.cpu < 1e-3


@pytest.mark.parametrize("program, n", [("examples/zipmul.lg", 1000),
                                        ("benchmarks/suite/vecsum.lg", 600)])
def test_explicit_and_symbolic_cpu_predictions_agree(program, n):
    """validate's two paths price the CPU part alike: region growth as a write on both (the
    backend sizes regions before a kernel), the same compute units, the same floor."""
    profile = load_profile(ROOT / "profiles" / "nvidia-h200-cpu-alloc.json")
    checked = check_program(parse((ROOT / program).read_text(), program))
    gpu, cpu_variant = _variants(checked)
    params = bind_parameters(checked, {"n": n})
    symbolic = SymbolicPredictions(gpu, cpu_variant, profile, "cache", {}, 16).at(params)
    _, _, explicit = explicit_predictions(gpu, cpu_variant, params,
                                          EvaluationOptions(profile=profile, gpu_mode="cache"),
                                          {}, 16)
    assert symbolic is not None and len(symbolic) == len(explicit) == 1
    assert explicit[0].cpu == pytest.approx(symbolic[0].cpu, rel=1e-3)
    assert explicit[0].kernel == pytest.approx(symbolic[0].kernel, rel=1e-9)


def test_a_serial_on_body_costs_the_cpu_one_kernel_launch():
    """An `on` body without a parallel phase runs on the CPU device as one kernel of one work
    item: its CPU part pays one launch beyond its edges (a δm charges one only where a parallel
    form merges)."""
    profile = load_profile(ROOT / "profiles" / "nvidia-h200-cpu-alloc.json")
    slower = profile.with_cpu(launch_s=profile.cpu.launch_s + 1.0)
    program = "benchmarks/suite/serial_loop.lg"
    checked = check_program(parse((ROOT / program).read_text(), program))
    gpu, cpu_variant = _variants(checked)
    params = bind_parameters(checked, {"n": 20})
    (before,), (after,) = (explicit_predictions(
        gpu, cpu_variant, params, EvaluationOptions(profile=p, gpu_mode="cache"), {}, 16)[2]
        for p in (profile, slower))
    assert before.cpu is not None and after.cpu is not None
    assert after.cpu - before.cpu == pytest.approx(1.0)
    assert before.cpu > profile.cpu.launch_s


@pytest.mark.parametrize("program, expected", [("examples/zipmul.lg", (0, 1)),
                                               ("benchmarks/suite/sample.lg", (1, 2)),
                                               ("benchmarks/suite/serial_loop.lg", (1, 0))])
def test_plan_kernels_are_the_plans_steps(program, expected, pocl):
    """predict.plan_kernels counts the backend's kernels of each `on`, one-work-item and
    parallel: a map over a variable (zipmul); `iota 8`'s count, the iota and the map (sample);
    a body of serial code (serial_loop). The run's plan on PoCL has exactly those."""
    checked = check_program(parse((ROOT / program).read_text(), program))
    gpu, _ = _variants(checked)
    (count,) = plan_kernels(gpu).values()
    assert count == expected
    params = bind_parameters(checked, {"n": 16})
    collector = OffloadCollector()
    evaluate(gpu, params, EvaluationOptions(observer=collector))
    (offload,) = collector.offloads
    run = run_offload(pocl, offload, gpu.types, params, repeats=1)
    serial = sum(1 for step in run.plan.steps if step.kind == "serial")
    assert (serial, len(run.plan.steps) - serial) == expected



THRICE = "tests/programs/on_three_times.lg"


def test_an_on_that_runs_more_than_once_is_one_cpu_part_of_all_its_runs():
    """An `on` in a function called three times runs three times: each run is a device box with
    its own kernel prediction, but the CPU part is the `on` written once, run three times: its
    cost centre's time with each run's launches, on the first run's prediction (the others have
    none), the same on both paths. Each run launches three kernels on the CPU device (the iota's
    count, one work item; the iota and the map, each a parallel form whose merge δm is a
    launch): a second more per launch costs the CPU part 3 x 3 seconds more."""
    profile = load_profile(ROOT / "profiles" / "nvidia-h200-cpu-alloc.json")
    slower = profile.with_cpu(launch_s=profile.cpu.launch_s + 1.0)
    checked = check_program(parse((ROOT / THRICE).read_text(), THRICE))
    gpu, cpu_variant = _variants(checked)
    assert list(plan_kernels(gpu).values()) == [(1, 2)]
    params = bind_parameters(checked, {"n": 256})
    found = {}
    for p in (profile, slower):
        symbolic = SymbolicPredictions(gpu, cpu_variant, p, "cache", {}, 16).at(params)
        _, _, explicit = explicit_predictions(
            gpu, cpu_variant, params, EvaluationOptions(profile=p, gpu_mode="cache"), {}, 16)
        assert symbolic is not None and len(symbolic) == len(explicit) == 3
        assert [s.cpu is None for s in symbolic] == [e.cpu is None for e in explicit] == [
            False, True, True]
        assert explicit[0].cpu == pytest.approx(symbolic[0].cpu, rel=1e-3)
        found[p is slower] = symbolic[0].cpu
    assert found[True] - found[False] == pytest.approx(3 * 3)


def test_validate_measures_every_run_of_an_on_as_its_cpu_part(pocl):
    """On PoCL: the three runs are three kernel cases and one CPU part, which covers the three
    runs of the CPU placement's centre, and one placement, all the runs on either device."""
    report = _validate(pocl, [str(ROOT / THRICE)], "auto")
    parts = Counter(c["part"] for c in report["cases"])
    assert parts["kernel"] == 3 and parts["cpu"] == 1
    assert len(report["placements"]) == 1
    (cpu,) = (c for c in report["cases"] if c["part"] == "cpu")
    checked = check_program(parse((ROOT / THRICE).read_text(), THRICE))
    _, cpu_variant = _variants(checked)
    collector = OffloadCollector()
    evaluate(cpu_variant, bind_parameters(checked, {"n": 64}),
             EvaluationOptions(observer=collector))
    runs = [o for o in collector.offloads if getattr(o.node, "name", "") == f"{OFFLOAD_CENTRE}0"]
    assert cpu["runs"] == len(runs) == 3 and cpu["measured_s"] > 0
    # a program whose `on` runs once says so too
    once = _validate(pocl, [ATAX], "auto")
    assert [c["runs"] for c in once["cases"] if c["part"] == "cpu"] == [1]


def test_each_copy_of_a_run_pays_the_transfers_latency():
    """validate prices an `on`'s transfers as the copies the backend made (one per region in,
    a region's allocations and its reserved vectors out): under the default profile's providers
    (a latency of 10 000 units, 4 words a unit) zipmul's run above moves 40 + 41 words back in
    two copies, two latencies, not one."""
    run = SimpleNamespace(copies_in=(400,), copies_out=(40, 41))
    transfer_in, transfer_out = predicted_transfers(DeviceProfile(), run)
    assert transfer_in == pytest.approx(10_000 + 400 / 4)
    assert transfer_out == pytest.approx(2 * 10_000 + 81 / 4)


def test_the_pointer_place_line_reads_a_gpu_process_s_draw_against_the_profile():
    """A GPU process's `pointer_place`: its place, its atomic beside the slowest place's, and
    one thread's allocation beside what the profile charges."""
    from models.opencl.validate import pointer_place_line

    assert pointer_place_line({"place": 3, "atomic_s": 1.4e-7, "slowest_place_atomic_s": 2.5e-7,
                               "alloc_s": 2.0e-7, "profile_alloc_s": 3.043e-7}) == (
        "Allocation pointers: place 3; an atomic took 140 ns there (the slowest place's 250 ns); "
        "one thread's allocation took 200 ns after the programs, where the profile charges "
        "304.3 ns.")
    assert pointer_place_line({"place": 0, "atomic_s": 0.0, "slowest_place_atomic_s": 0.0,
                               "alloc_s": 1.0e-8, "profile_alloc_s": None,
                               "by_group": {"used": False, "why": "not a GPU"}}) == (
        "Allocation pointers: place 0; no atomic was timed (not a GPU); one thread's allocation "
        "took 10 ns after the programs, where the profile, in abstract units, charges no "
        "seconds. The predictions charge the profile's expectation (not a GPU).")
    drawn = {"used": True, "alloc_s": [2.06e-7, 2.1e-7, 2.98e-7], "profile_alloc_s": 2.51e-7}
    assert pointer_place_line({"place": 12, "atomic_s": 1.47e-7, "slowest_place_atomic_s": 1.5e-7,
                               "alloc_s": 2.05e-7, "profile_alloc_s": 2.93e-7,
                               "by_group": drawn}).endswith(
        "Before them, run by each of 3 work groups in turn, one thread's allocation took "
        "206 ns to 298 ns (group 0 206 ns; the profile's expectation 251 ns); a kernel's groups "
        "are charged their own (`--allocation-draw process`).")


def test_a_process_s_figures_are_charged_in_model_units_at_least_the_l1_s_latency():
    """What validate timed for each work group (seconds) becomes the profile's
    `group_atomic_latencies` in model units, each at least the L1's latency, in group order."""
    from models.opencl.validate import with_group_allocations

    profile = DeviceProfile().with_gpu(mode="cache", seconds_per_unit=1e-9, l1_latency=23.0)
    drawn = with_group_allocations(profile, [2.06e-7, 2.99e-7, 1e-8])
    assert drawn.gpu.group_atomic_latencies == pytest.approx((206.0, 299.0, 23.0))
    assert drawn.gpu.atomic_latency == profile.gpu.atomic_latency


def test_a_process_that_is_not_a_gpu_keeps_the_profile_s_expectation(pocl):
    """`process_draw` times nothing on PoCL (its allocations have no near or far units), nor
    where asked for the profile's expectation, and says why; a draw it does not know is
    refused."""
    from models.opencl.validate import process_draw

    profile = DeviceProfile().with_gpu(mode="cache")
    assert process_draw(pocl, profile) == (profile, {"used": False, "why": "not a GPU"})
    assert process_draw(pocl, profile, "profile") == (
        profile, {"used": False, "why": "asked for the profile's expectation"})
    with pytest.raises(ValueError, match="draw must be one of process, profile"):
        process_draw(pocl, profile, "card")
    report = _validate(pocl, [ZIPMUL], "auto")
    assert report["pointer_place"]["by_group"] == {"used": False, "why": "not a GPU"}
