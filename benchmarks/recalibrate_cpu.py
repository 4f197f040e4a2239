"""Re-run only the CPU world's microbenchmarks (models/opencl/calibrate_cpu.py) on the OpenCL CPU
device and write them into existing profiles, every GPU field kept: for a change to those
microbenchmarks after a full `hetprof calibrate`, without the GPU's minutes of calibration.

    python benchmarks/recalibrate_cpu.py --cpu-device pocl PROFILE.json [PROFILE.mode.json ...]

Each profile is rewritten in place with the new `cpu` section (and a note saying so); the fits
are printed, one line each, and written beside the first profile as PROFILE.cpu-fits.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile, save_profile  # noqa: E402
from models.opencl.calibrate_cpu import calibrate_cpu  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-device", default="pocl")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("profiles", nargs="+", type=Path)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.cpu_device))
    calibration = calibrate_cpu(session, args.quick, 3 if args.quick else 7)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    for path in args.profiles:
        profile = load_profile(path)
        note = (f"CPU world recalibrated {when} by benchmarks/recalibrate_cpu.py on "
                f"{session.info.describe()} ({calibration.processors} compute units)")
        save_profile(replace(profile, cpu=calibration.cpu, notes=(*profile.notes, note)), path)
    fits = [{"name": f.name, "parameters": f.parameters} for f in calibration.fits]
    for fit in fits:
        print(fit["name"], json.dumps(fit["parameters"]))
    first = args.profiles[0]
    first.with_suffix(".cpu-fits.json").write_text(json.dumps(fits, indent=1) + "\n")


if __name__ == "__main__":
    main()
