"""Which condition of `hetprof validate`'s runs makes a kernel step cost more than the
calibration's runner step (issue 14, runs 13-15: the suite's small steps left 7.4, 8.0 and 8.2 µs
beyond their predicted work where each run's `hetprof calibrate` measured 6.69, 6.47 and 6.09 µs).

The calibration's own runner program (models/opencl/calibrate.py's `RUNNER_STEPS`, five steps of
almost no work) is timed step by step under each condition, every one in a fresh process unless
said, and each step's median printed beside what the profile predicts for its work:

- `calibrate`: as `hetprof calibrate` times it (`runner_step_launch`: its own session, 15 runs);
- `validate R`: through `hetprof validate` on the same program, as the suite runs a program
  (`--quick --repeats R --parts programs`, the CPU device's session open and its CPU part
  measured too), for R = 3, 7, 15;
- `validate R, GPU only`: the same without `--cpu-device`;
- `after the CPU part`: in one process, the program's CPU part run on the CPU device first, then
  the steps on the GPU (PoCL's threads still spinning).

Nothing is fitted: what differs between the rows is the condition that the calibration should
reproduce.

    python benchmarks/gpu_runner_step_conditions_probe.py --profile PROFILE.json \
        [--device nvidia] [--cpu-device pocl]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphs.devicebox import phase_launches  # noqa: E402
from graphs.semantics.explicit import OffloadCollector, evaluate  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate import RUNNER_STEPS, runner_step_launch  # noqa: E402
from models.opencl.runner import DeviceSession, run_offload, select_device  # noqa: E402
from profiler.checker import bind_parameters, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402


def predicted_work(profile) -> list[float]:
    """Each launching phase's predicted time without the launch, in seconds."""
    from dataclasses import replace

    free = replace(profile, gpu=replace(profile.gpu, launch=0.0))
    checked = check_program(parse(RUNNER_STEPS, "<runner steps>"))
    collector = OffloadCollector()
    evaluate(checked, bind_parameters(checked, {}),
             EvaluationOptions(profile=free, gpu_mode=free.gpu.mode, observer=collector))
    (offload,) = collector.offloads
    assert offload.on is not None
    unit = free.gpu.unit_seconds
    return [p.time * unit for p in offload.on.info.box.phases if phase_launches(p)]


def line(label: str, measured: list[float], work: list[float]) -> str:
    beyond = [m - w for m, w in zip(measured, work, strict=False)]
    steps = " ".join(f"{m * 1e6:6.2f}" for m in measured)
    later = statistics.median(beyond[1:]) * 1e6 if len(beyond) > 1 else float("nan")
    return (f"{label:28s} steps (µs) {steps}   beyond the work, median of steps 1-: "
            f"{later:5.2f} µs")


def through_validate(program: Path, profile: Path, device: str, cpu_device: str | None,
                     repeats: int) -> list[float]:
    """Each kernel step's median as `hetprof validate` measures it, in a fresh process."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "v.json"
        command = [sys.executable, "-m", "cli", "validate", str(program), "--device", device,
                   "--device-profile", str(profile), "--quick", "--repeats", str(repeats),
                   "--parts", "programs", "--sizes", "1", "--format", "json", "-o", str(out)]
        if cpu_device:
            command += ["--cpu-device", cpu_device]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"validate failed: {done.stderr[-2000:]}")
        report = json.loads(out.read_text())
    (kernel,) = [c for c in report["cases"] if c["part"] == "kernel"]
    return [step["median_s"] for step in kernel["steps"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True, type=Path)
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--cpu-device", default="pocl")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    work = predicted_work(profile)
    print(f"profile {args.profile.name}: the runner step {profile.gpu.launch:.0f} model units; "
          "predicted work (µs) " + " ".join(f"{w * 1e6:.2f}" for w in work), flush=True)

    session = DeviceSession(select_device(args.device))
    print(f"device: {session.info.describe()}", flush=True)
    _, fit = runner_step_launch(session, profile, 15)
    print(line("calibrate (15 runs)", [m for _, m, _ in fit.points], work), flush=True)

    checked = check_program(parse(RUNNER_STEPS, "<runner steps>"))
    collector = OffloadCollector()
    evaluate(checked, bind_parameters(checked, {}),
             EvaluationOptions(profile=profile, gpu_mode=profile.gpu.mode, observer=collector))
    (offload,) = collector.offloads
    cpu_session = DeviceSession(select_device(args.cpu_device))
    run_offload(cpu_session, offload, checked.types, {}, repeats=3)  # PoCL's threads now warm
    run = run_offload(session, offload, checked.types, {}, repeats=15)
    print(line("after the CPU part (15)", [run.kernels[s.kernel].median for s in run.plan.steps],
               work), flush=True)

    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "runner_steps.lg"
        program.write_text("param n : int = 1\n\n" + RUNNER_STEPS)
        for repeats in (3, 7, 15):
            for cpu in (args.cpu_device, None):
                label = f"validate {repeats}" + ("" if cpu else ", GPU only")
                measured = through_validate(program, args.profile, args.device, cpu, repeats)
                print(line(label, measured, work), flush=True)


if __name__ == "__main__":
    main()
