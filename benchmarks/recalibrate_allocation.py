"""Re-run only the work group's allocation microbenchmark (models/opencl/calibrate_cache.py's
`measure_group_allocation`) on a GPU and write it into existing cache-mode profiles, every other
field kept: for that microbenchmark's addition after a full `hetprof calibrate`, as
`hetprof calibrate` itself now sets it (`cache_parameters`: `warp_atomic_latency`, a write step
where several lanes of a warp allocate; one lane's stays the one-thread atomic's).

    python benchmarks/recalibrate_allocation.py --device nvidia PROFILE.cache.json [...]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile, save_profile  # noqa: E402
from models.opencl.calibrate_cache import measure_group_allocation  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("profiles", nargs="+", type=Path)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    seconds = measure_group_allocation(session, repeats=7)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{session.info.describe()}: a work group's allocation step {seconds * 1e9:.1f} ns "
          f"({when})")
    for path in args.profiles:
        profile = load_profile(path)
        if profile.gpu.mode != "cache":
            raise SystemExit(f"{path}: not a cache-mode profile (mode {profile.gpu.mode})")
        lone = profile.gpu.atomic_latency * profile.gpu.unit_seconds
        warp = max(lone, seconds)
        note = (f"allocation step recalibrated {when} by benchmarks/recalibrate_allocation.py: "
                f"a work group's {seconds * 1e9:.1f} ns (warp_atomic_latency "
                f"{warp * 1e9:.1f} ns), the one-thread atomic's {lone * 1e9:.1f} ns")
        gpu = replace(profile.gpu, warp_atomic_latency=warp / profile.gpu.unit_seconds)
        save_profile(replace(profile, gpu=gpu, notes=(*profile.notes, note)), path)
        print(f"{path}: {note}")


if __name__ == "__main__":
    main()
