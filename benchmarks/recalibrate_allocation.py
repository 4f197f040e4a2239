"""Re-run only the allocation microbenchmarks (models/opencl/calibrate_cache.py's
`measure_atomic`, the mean over `ATOMIC_PLACES` places of its word, and
`measure_thread_allocation` and `measure_group_allocation`, at the place where the runner keeps its
allocation pointers) on a GPU and write them into existing
cache-mode profiles, every other field kept, as `hetprof calibrate` itself now sets them
(`cache_parameters`): `atomic_latency`, a write step where one lane allocates (the generated
code's ALLOC on one thread, at least the bare atomic and the L1's latency), and
`warp_atomic_latency`, where several lanes do (a work group's, at least the one-lane figure's
atomic).

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
from models.opencl.calibrate import allocation_latency  # noqa: E402
from models.opencl.calibrate_cache import (  # noqa: E402
    ATOMIC_PLACES,
    measure_atomic,
    measure_group_allocation,
    measure_thread_allocation,
)
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("profiles", nargs="+", type=Path)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    atomic = measure_atomic(session)
    thread = measure_thread_allocation(session)
    group = measure_group_allocation(session, repeats=7)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    place, _ = session.pointer_place()
    measured = (f"an atomic {atomic * 1e9:.1f} ns (the mean over {ATOMIC_PLACES} places); at the "
                f"runner's pointer place {place}: one thread's allocation {thread * 1e9:.1f} ns, "
                f"a work group's allocation step {group * 1e9:.1f} ns")
    print(f"{session.info.describe()} ({when}): {measured}")
    for path in args.profiles:
        profile = load_profile(path)
        if profile.gpu.mode != "cache":
            raise SystemExit(f"{path}: not a cache-mode profile (mode {profile.gpu.mode})")
        gpu = profile.gpu
        l1 = gpu.l1_latency * gpu.unit_seconds
        lone = allocation_latency(thread, atomic, l1)
        warp = allocation_latency(group, atomic, l1)
        note = (f"allocation recalibrated {when} by benchmarks/recalibrate_allocation.py on "
                f"{session.info.describe()}: {measured} (atomic_latency {lone * 1e9:.1f} ns, "
                f"was {gpu.atomic_latency * gpu.unit_seconds * 1e9:.1f}; warp_atomic_latency "
                f"{warp * 1e9:.1f} ns, was {gpu.warp_atomic_latency * gpu.unit_seconds * 1e9:.1f})")
        gpu = replace(gpu, atomic_latency=lone / gpu.unit_seconds,
                      warp_atomic_latency=warp / gpu.unit_seconds)
        save_profile(replace(profile, gpu=gpu, notes=(*profile.notes, note)), path)
        print(f"{path}: {note}")


if __name__ == "__main__":
    main()
