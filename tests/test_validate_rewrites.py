"""models/opencl/validate_rewrites.py: predicted against measured speedups of rewrites, run for real on
PoCL (the OpenCL CPU device installed with hetprof's dependencies) standing for both devices."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys

import pytest
from conftest import ROOT

from graphs.semantics.explicit import evaluate
from graphs.semantics.options import EvaluationOptions
from models.device_profile import load_profile
from models.opencl.runner import DeviceSession, select_device
from models.opencl.validate import EXAMPLES
from models.opencl.validate_rewrites import (
    direction_right,
    mark_cpu_work,
    measure,
    merge,
    render_markdown,
    validate_rewrites,
)
from profiler.checker import bind_parameters, check_program
from profiler.parser import parse
from profiler.rewrite import find, start
from profiler.syntax import Profile
from profiler.transform import walk_paths

PROFILE = ROOT / "profiles" / "nvidia-h200.json"
CASE_KEYS = {"program", "rewrite", "n", "predicted_before_s", "predicted_after_s",
             "measured_before_s", "measured_after_s", "predicted_speedup", "measured_speedup",
             "direction_right", "abs_pct_error"}


@pytest.fixture(scope="module")
def pocl():
    return DeviceSession(select_device("pocl"))


@pytest.fixture(scope="module")
def report(pocl):
    """A --quick run: map_map (vertical fusion: GPU work only; remove-on: GPU -> CPU) and
    zipmul_cpu (insert-on: CPU -> GPU) at n = 32."""
    return validate_rewrites(
        pocl, pocl, load_profile(PROFILE),
        [str(ROOT / "examples" / "map_map.lg"), str(ROOT / "examples" / "zipmul_cpu.lg")],
        rules=("vertical-fusion", "remove-on", "insert-on", "work-group-size"), sizes=[32],
        quick=True)


def checked(name: str):
    path = ROOT / "examples" / f"{name}.lg"
    return check_program(parse(path.read_text(), str(path)))


def centres(body) -> list[str]:
    return [node.name for _, node in walk_paths(body) if isinstance(node, Profile)]


def test_cpu_work_is_marked_outside_on_and_functions():
    # dot: the two input parmaps on the CPU are marked; the `on` body is not
    assert centres(mark_cpu_work(checked("dot").body)) == ["__offload0", "__offload1"]
    # zipmul: the input parmap, and not the parmap under `on` inside the applied lambda
    assert centres(mark_cpu_work(checked("zipmul").body)) == ["__offload0", "gray"]
    # zipmul_cpu: its `profile "gray"` parmap is inside a lambda applied in place: it runs once
    assert centres(mark_cpu_work(checked("zipmul_cpu").body)) == ["__offload0", "gray",
                                                                 "__offload1"]


def test_direction():
    assert direction_right(1.5, 1.2) and direction_right(0.5, 0.9)
    assert not direction_right(1.5, 0.8) and not direction_right(0.99, 1.01 + 0.02)
    assert direction_right(1.01, 0.99)  # within 2% of 1 on both sides: neither pays


def test_measure_runs_every_part_and_matches_the_interpreter(pocl):
    program = checked("zipmul")
    params = bind_parameters(program, {"n": 24})
    parts = measure(pocl, pocl, load_profile(PROFILE), program, params, repeats=2)
    assert (parts.gpu_parts, parts.cpu_parts) == (1, 1)  # the `on`, the input's parmap
    assert parts.matches
    assert parts.value == evaluate(program, params).render_value(10**6)
    assert parts.measured_gpu > 0 and parts.measured_cpu > 0
    assert parts.predicted_gpu > 0 and parts.predicted_cpu > 0


@pytest.mark.parametrize("n", [24, 600])
def test_a_cpu_part_is_priced_as_validate_prices_an_on_body_on_the_cpu(pocl, n):
    """zipmul_cpu's first CPU part (the input's parmap of n pairs) under a profile that prices
    the CPU by class: its centre's 1DF time on the compute units its n work items' groups fill
    (1 group of 256 at n = 24, 3 at n = 600), at least its floor (its allocations on the
    contended pointer, or the words over the socket's bandwidth), plus its launches beyond the
    graph's after its inputs were copied in; not its time on every unit of the device."""
    from dataclasses import replace as replaced

    from graphs.analysis import centre_times
    from graphs.schedule import schedule
    from models.cpu import cpu_floor, launch_after
    from models.opencl.predict import growth_as_write
    from models.opencl.validate import CpuOnUnits
    from models.opencl.validate_rewrites import cpu_part
    from profiler.transform import with_body

    profile = load_profile(ROOT / "profiles" / "nvidia-h200-serial.json")
    program = checked("zipmul_cpu")
    params = bind_parameters(program, {"n": n})
    wide = DeviceSession(pocl.info)
    wide.info = replaced(pocl.info, compute_units=16)  # the H200 host's PoCL had 16
    parts = measure(pocl, wide, profile, program, params, repeats=1)
    marked = check_program(with_body(program.program, mark_cpu_work(program.body)))
    evaluation = evaluate(marked, params, EvaluationOptions(
        profile=growth_as_write(profile), gpu_mode=profile.gpu.mode))
    units = 1 if n <= 256 else 3
    on_units = centre_times(evaluation, schedule(evaluation.graph, units, "1df"))["__offload0"]
    on_all = centre_times(evaluation, schedule(evaluation.graph, 16, "1df"))["__offload0"]
    graph = evaluation.graph
    kinds = [kind.value for kind, names in zip(graph.edge_kind, graph.edge_centres,
                                                strict=True) if "__offload0" in names]
    writes, reads = kinds.count("write") + kinds.count("expand"), kinds.count("read")
    # per element its iota cell, the 1 of i + 1, the sum and the pair; the two vectors and
    # iota's count
    assert writes == 4 * n + 3
    run = next(iter(pocl_runs(pocl, marked, params)))
    assert max(run.work_items.values()) == n
    floor = cpu_floor(profile, writes + min(reads, run.words_in), writes, units)
    # the iota's count (a one-item kernel, which no δm in the graph charges), the iota, the map
    assert [step.kind for step in run.plan.steps] == ["serial", "iota", "map"]
    cold = launch_after(profile.cpu, run.words_in)
    launches = cold + 2 * (cold - profile.cpu.launch_s)
    options = EvaluationOptions(profile=growth_as_write(profile), gpu_mode=profile.gpu.mode)
    found = cpu_part(CpuOnUnits(marked, params, options, evaluation), "__offload0", run,
                     profile, 16)
    assert found == pytest.approx(max(on_units, floor) + launches, rel=1e-12)
    assert found > on_all  # fewer units than the device has, a floor and cold launches
    assert parts.predicted_cpu >= found
    # A profile that measured the map step on fewer busy units prices the part's threads as on
    # its units (models.cpu.busy_scale): less, where its 1DF time is above its floor.
    busy = replaced(profile, cpu=replaced(profile.cpu, unit_step_1_s=6.0, unit_step_2_s=6.0,
                                          unit_step_4_s=6.0, unit_step_8_s=6.0,
                                          unit_step_all_s=10.0))
    busy_options = replaced(options, profile=growth_as_write(busy))
    on_few = cpu_part(CpuOnUnits(marked, params, busy_options,
                                 evaluate(marked, params, busy_options)), "__offload0", run,
                      busy, 16)
    if on_units > floor:  # n = 24, on one unit, where no other unit takes the pointer's line
        assert on_few < found
    else:  # n = 600: three units' allocations on the contended pointer bound it either way
        assert on_few == found


def pocl_runs(session, marked, params):
    """The runs of a marked program's CPU parts on `session`, in program order."""
    from graphs.semantics.explicit import OffloadCollector
    from models.opencl.runner import run_offload

    collector = OffloadCollector()
    evaluate(marked, params, EvaluationOptions(observer=collector))
    for offload in collector.offloads:
        if isinstance(offload.node, Profile):
            yield run_offload(session, offload, marked.types, params, repeats=1)


def test_a_part_the_rewrite_leaves_is_timed_once(pocl):
    """dot's redomap rewrite changes only the `on`: its two CPU parmaps are the
    same kernels on the same words before and after, so their time is shared (one run), while
    the `on` (other kernels) is run again."""
    program = checked("dot")
    params = bind_parameters(program, {"n": 24})
    subject = start(program, {})
    after = find(subject, "redomap@11:5").after.checked
    memo: dict = {}
    profile = load_profile(PROFILE)
    before = measure(pocl, pocl, profile, program, params, repeats=2, memo=memo)
    assert len(memo) == 3  # two CPU parts and the `on`
    shared = measure(pocl, pocl, profile, after, params, repeats=2, memo=memo)
    assert len(memo) == 4  # only the rewritten `on` ran
    assert shared.measured_cpu == before.measured_cpu
    assert shared.measured_gpu != before.measured_gpu
    again = measure(pocl, pocl, profile, program, params, repeats=2, memo=memo)
    assert len(memo) == 4 and again.measured == before.measured
    # Hoisting the iota's count out of the `on` allocates one more word on the CPU after the
    # two CPU parmaps ran: they are still the same work; only the rewritten `on` runs.
    hoisted = find(subject, "hoist-allocation@10:75").after.checked
    measure(pocl, pocl, profile, hoisted, params, repeats=2, memo=memo)
    assert len(memo) == 5


def test_report_cases(report):
    cases = report["cases"]
    assert {(c["program"], c["rewrite"]) for c in cases} == {
        ("map_map", "vertical-fusion@9:4"), ("map_map", "remove-on@9:1"),
        ("zipmul_cpu", "insert-on@7:13"), ("zipmul_cpu", "insert-on@9:17")}
    for case in cases:
        assert CASE_KEYS <= set(case)
        assert case["n"] == 32
        assert case["values_match"] and case["same_value"]
        for key in ("predicted_before_s", "predicted_after_s", "measured_before_s",
                    "measured_after_s"):
            assert case[key] > 0
        assert case["predicted_speedup"] == pytest.approx(
            case["predicted_before_s"] / case["predicted_after_s"])
        assert case["measured_speedup"] == pytest.approx(
            case["measured_before_s"] / case["measured_after_s"])
        assert case["abs_pct_error"] == pytest.approx(
            abs(case["predicted_speedup"] - case["measured_speedup"])
            / case["measured_speedup"] * 100)
        assert case["direction_right"] == direction_right(case["predicted_speedup"],
                                                          case["measured_speedup"])
    by_key = {c["rewrite"]: c for c in cases}
    # remove-on moves map_map's work from the `on` to a CPU parmap; insert-on the other way
    assert by_key["remove-on@9:1"]["before"]["gpu_parts"] == 1
    assert by_key["remove-on@9:1"]["after"] == {**by_key["remove-on@9:1"]["after"],
                                                "gpu_parts": 0, "cpu_parts": 1}
    assert by_key["insert-on@7:13"]["after"]["gpu_parts"] == 1
    # the work-group size cannot be run: skipped with the reason
    assert any("work-group-size" in s["rewrite"] and "work groups" in s["reason"]
               for s in report["skipped"])


def test_report_figures(report):
    cases = report["cases"]
    assert report["case_count"] == len(cases) == 4
    assert report["direction_accuracy"] == sum(c["direction_right"] for c in cases) / len(cases)
    assert report["speedup_median_abs_pct_error"] == statistics.median(
        c["abs_pct_error"] for c in cases)
    assert set(report["rules"]) == {"vertical-fusion", "remove-on", "insert-on"}
    assert report["rules"]["insert-on"]["case_count"] == 2
    assert report["device"].startswith("Portable Computing Language")
    assert report["date"] and report["values_match"]
    text = render_markdown(report)
    assert text.startswith(f"# Rewrites validated on {report['device']}")
    assert "`vertical-fusion@9:4` | 32 |" in text and report["date"] in text
    # times in people's units (issue 19), not `1.804e-05`
    row = next(line for line in text.splitlines() if "`vertical-fusion@9:4` | 32 |" in line)
    assert re.search(r"\| 32 \| [\d.]+ (ns|µs|ms|s) → [\d.]+ (ns|µs|ms|s) \|", row)
    assert "e-0" not in row


def test_merge_recomputes_the_figures(report):
    one = {**report, "cases": report["cases"][:1]}
    other = {**report, "cases": report["cases"][1:]}
    merged = merge([json.loads(json.dumps(one)), json.loads(json.dumps(other))])
    assert merged["case_count"] == 4
    assert merged["direction_accuracy"] == report["direction_accuracy"]
    assert merged["speedup_median_abs_pct_error"] == report["speedup_median_abs_pct_error"]
    # what two runs both skipped (a rule the runner cannot run) is listed once
    twice = merge([json.loads(json.dumps(report)), json.loads(json.dumps(report))])
    assert twice["skipped"] == report["skipped"] and twice["case_count"] == 8


def test_cli_json_and_markdown(tmp_path):
    out = tmp_path / "rw.json"
    common = ["-m", "cli", "validate-rewrites", "--device", "pocl", "--cpu-device", "pocl",
              "--device-profile", str(PROFILE), "--quick", "--sizes", "16",
              "examples/map_map.lg", "--rewrite", "vertical-fusion@9:4"]
    done = subprocess.run([sys.executable, *common, "--format", "json", "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert [(c["rewrite"], c["n"]) for c in data["cases"]] == [("vertical-fusion@9:4", 16)]
    assert data["repeats"] == 3  # --quick's
    again = subprocess.run([sys.executable, *common, "--repeats", "2", "--format", "json",
                            "-o", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text())["repeats"] == 2
    assert {"device", "date", "cases", "direction_accuracy",
            "speedup_median_abs_pct_error"} <= set(data)
    shown = subprocess.run([sys.executable, *common], cwd=ROOT, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("# Rewrites validated on Portable Computing Language")
    bad = subprocess.run([sys.executable, *common, "--rules", "no-such-rule"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no-such-rule" in bad.stderr


def test_validation_finds_the_examples_from_its_own_place():
    """models/opencl/validate.py reads examples/ (its default programs, strided.lg for the bank
    conflicts) relative to itself: the move into models/opencl/ once pointed it at models/."""
    assert EXAMPLES == ROOT / "examples"
    assert (EXAMPLES / "strided.lg").is_file()
