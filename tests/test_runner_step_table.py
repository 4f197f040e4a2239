"""benchmarks/runner_step_table.py: the step the suite's small kernels paid beyond the model's
work, from saved reports, on a synthetic run whose figures are computed by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.runner_step_table import suite_steps

ROOT = Path(__file__).resolve().parent.parent


def case(program, measured, predicted, items, steps=3, part="kernel"):
    return {"program": program, "n": 64, "part": part, "measured_s": measured,
            "predicted_s": predicted, "cache_s": predicted,
            "steps": [{"kernel": f"k{i}", "work_items": 1 if i == 0 else items,
                       "median_s": measured / steps} for i in range(steps)]}


@pytest.fixture
def run(tmp_path):
    cases = [
        case("jacobi1d", 30e-6, 24e-6, 1024),  # 6 µs over 3 steps: 2 µs a step beyond
        case("jacobi1d", 27e-6, 24e-6, 4096),  # 1 µs a step beyond
        case("nn", 24e-6, 27e-6, 1024),  # 1 µs a step under
        case("gemm", 900e-6, 800e-6, 16384),  # not small: left out
        case("serial_loop", 90e-6, 50e-6, 1, steps=1),  # a one-thread loop: left out
        case("jacobi1d", 5e-6, 4e-6, 1024, part="transfer in"),  # not a kernel
    ]
    (tmp_path / "val_a.json").write_text(json.dumps({"cases": cases}))
    return tmp_path


def test_each_small_kernel_gives_its_step_beyond_the_work(run):
    steps = suite_steps(run, launch_s=6e-6, small_s=60e-6)
    assert sorted(steps) == [10, 12]
    assert steps[10] == pytest.approx([8e-6, 5e-6])
    assert steps[12] == pytest.approx([7e-6])


def test_the_table_prints_the_profile_step_beside_the_suite_median(run, tmp_path):
    profile = json.loads((ROOT / "profiles" / "nvidia-h200-run18.json").read_text())
    profile["gpu"]["launch"] = 6000.0  # model units of 1 ns: a 6 µs step
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "runner_step_table.py"),
                          str(run), str(path)], capture_output=True, text=True, check=True)
    row = out.stdout.splitlines()[1]
    assert row.startswith(f"{run.name} | 6.00 | 7.00, 3 | ")
    assert "2^10 6.50 (2)" in row and "2^12 7.00 (1)" in row


def test_each_step_kind_gives_its_miss_by_work_items(tmp_path):
    """`--by-step`: jacobi1d at n = 64 re-evaluated under a profile, its four `on`s' steps
    measured as the phases' predictions plus 3 µs (the first kernel), 1 µs (the iota) and 2 µs
    (the map); a case whose steps do not line up with its phases is left out."""
    from benchmarks.runner_step_table import steps_by_kind
    from graphs.devicebox import phase_launches
    from graphs.semantics.explicit import OffloadCollector, evaluate
    from graphs.semantics.options import EvaluationOptions
    from models.device_profile import load_profile
    from profiler.checker import bind_parameters, check_program
    from profiler.parser import parse_file

    profile = load_profile(ROOT / "profiles" / "nvidia-h200-run22c.json")
    unit = profile.gpu.unit_seconds
    checked = check_program(parse_file(ROOT / "benchmarks" / "suite" / "jacobi1d.lg"))
    collector = OffloadCollector()
    evaluate(checked, bind_parameters(checked, {"n": 64}),
             EvaluationOptions(profile=profile, gpu_mode="cache", observer=collector))
    extra = {"serial": 3e-6, "iota": 1e-6, "map": 2e-6}
    cases = []
    for offload in collector.offloads:
        phases = offload.on.info.box.phases
        launching = [p for p in phases if phase_launches(p)]
        steps = [{"kernel": f"{kind}{k + 1}", "work_items": 1 if kind == "serial" else 64,
                  "median_s": p.time * unit + extra[kind]}
                 for k, (kind, p) in enumerate(zip(("serial", "iota", "map"), launching,
                                                   strict=True))]
        cases.append({"program": "jacobi1d", "n": 64, "part": "kernel",
                      "predicted_s": sum(p.time for p in phases) * unit,
                      "measured_s": sum(s["median_s"] for s in steps), "steps": steps})
    cases[-1]["steps"] = cases[-1]["steps"][:2]  # not lined up with its phases: left out
    (tmp_path / "val_jacobi1d_64.json").write_text(json.dumps({"cases": cases}))
    gaps = steps_by_kind(tmp_path, profile, small_s=60e-6)
    ons = len(collector.offloads) - 1
    assert sorted(gaps) == [("first", 1), ("iota", 64), ("map", 64)]
    assert gaps[("first", 1)] == pytest.approx([3e-6] * ons)
    assert gaps[("iota", 64)] == pytest.approx([1e-6] * ons)
    assert gaps[("map", 64)] == pytest.approx([2e-6] * ons)


def test_programs_are_found_in_the_suite_and_among_the_runner_programs():
    """`program_path` gives a suite program's source, or one of benchmarks/runner_programs (the
    runner-step programs that benchmarks/gpu_runner_programs.sh validates), and stops with the
    folders it looked in for another name."""
    from benchmarks.runner_step_table import program_path

    assert program_path("jacobi1d") == ROOT / "benchmarks" / "suite" / "jacobi1d.lg"
    assert program_path("host_made") == ROOT / "benchmarks" / "runner_programs" / "host_made.lg"
    with pytest.raises(SystemExit, match=r"no program nothing\.lg in benchmarks/\{suite,"):
        program_path("nothing")
