"""Re-run only the runner-step microbenchmark (models/opencl/calibrate.py's `runner_step_launch`)
on a GPU and write its launch into existing cache-mode profiles, every other field kept: for that
microbenchmark's addition after a full `hetprof calibrate`, which now measures it and takes it as
the cache mode's launch. With `-o`, the first profile is written there instead of in place.

    python benchmarks/recalibrate_runner_step.py --device nvidia PROFILE.json [...] [-o OUT.json]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile, save_profile  # noqa: E402
from models.opencl.calibrate import runner_step_launch  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("profiles", nargs="+", type=Path)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    for k, path in enumerate(args.profiles):
        profile = load_profile(path)
        if profile.gpu.mode != "cache":
            raise SystemExit(f"{path}: not a cache-mode profile (mode {profile.gpu.mode})")
        launch, fit = runner_step_launch(session, profile, args.repeats)
        steps = ", ".join(f"step {s}: measured {m * 1e6:.2f} µs, predicted {p * 1e6:.2f} µs"
                          for s, m, p in fit.points)
        note = (f"launch recalibrated {when} by benchmarks/recalibrate_runner_step.py on "
                f"{session.info.describe()}: a runner step {launch * 1e6:.2f} µs beyond its "
                f"work (was {profile.gpu.launch * profile.gpu.unit_seconds * 1e6:.2f} µs; {steps})")
        gpu = replace(profile.gpu, launch=launch / profile.gpu.unit_seconds)
        out = args.output if args.output is not None and k == 0 else path
        save_profile(replace(profile, gpu=gpu, notes=(*profile.notes, note)), out)
        print(f"{out}: {note}", flush=True)


if __name__ == "__main__":
    main()
