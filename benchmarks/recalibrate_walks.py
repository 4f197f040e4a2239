"""Re-run only the page-walk microbenchmark (models/opencl/calibrate_cache.py's
`measure_page_walks`) on a GPU, and with `--launch` the kernel launch, and write them into
existing cache-mode profiles, every other field kept: for that microbenchmark's addition after a
full `hetprof calibrate`, which now measures both (`cache_parameters`: `walk_16` ... `walk_30`;
`launch`, the slower of an empty kernel and one with the generated kernels' arguments).

    python benchmarks/recalibrate_walks.py --device nvidia [--launch] PROFILE.cache.json [...]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile, save_profile  # noqa: E402
from models.opencl.calibrate import walk_fields  # noqa: E402
from models.opencl.calibrate_cache import measure_launches, measure_page_walks  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--launch", action="store_true", help="also the kernel launch")
    parser.add_argument("profiles", nargs="+", type=Path)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    walks = measure_page_walks(session, progress=lambda text: print(text, flush=True))
    launch = max(measure_launches(session)) if args.launch else None
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    measured = ", ".join(f"{b >> 10:,} KiB {t * 1e6:.2f} µs" for b, t in walks)
    print(f"{session.info.describe()} ({when}): page walks after a copy: {measured}"
          + (f"; launch {launch * 1e6:.2f} µs" if launch is not None else ""))
    for path in args.profiles:
        profile = load_profile(path)
        if profile.gpu.mode != "cache":
            raise SystemExit(f"{path}: not a cache-mode profile (mode {profile.gpu.mode})")
        scale = 1 / profile.gpu.unit_seconds
        gpu = replace(profile.gpu, **walk_fields(walks, scale))
        note = (f"page walks recalibrated {when} by benchmarks/recalibrate_walks.py on "
                f"{session.info.describe()}: {measured}")
        if launch is not None:
            note += (f"; launch {launch * 1e6:.2f} µs (was "
                     f"{profile.gpu.launch * profile.gpu.unit_seconds * 1e6:.2f} µs)")
            gpu = replace(gpu, launch=launch * scale)
        save_profile(replace(profile, gpu=gpu, notes=(*profile.notes, note)), path)
        print(f"{path}: {note}")


if __name__ == "__main__":
    main()
