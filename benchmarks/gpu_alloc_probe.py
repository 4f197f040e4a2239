"""Issue 14's open question, measured apart (docs/validation/cachegap.md): what one allocation
costs a thread of the generated code when many threads allocate at once.

Every work item of G work groups (256 items each) runs a chain of `reps` allocations exactly as
the generated code makes them (codegen's PRELUDE `ALLOC`: an atomic add on the region's pointer,
the capacity check), each followed by the store of a value into the new cell and a load of it
that the next allocation's value depends on. The time per step is (T(reps) - T(0)) / reps; the
aggregate rate is the allocations of all items over that time. Printed one line per G, with the
calibrated cache profile's atomic latency and rate beside it for comparison (no model parameter
is fitted here: it only prints).

With `--reps 1` the chain is one allocation a thread, as a map's kernel makes it: T(1) - T(0)
is then what a single allocating step costs a kernel of that many items, and T(0) (a kernel of
one store a thread) how the launch grows with them; both are printed.

    python benchmarks/gpu_alloc_probe.py [--device nvidia] [--profile PROFILE.json]
        [--groups 1,4,16,66] [--reps 32] [--runs 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate_cache import GROUP_ALLOC  # noqa: E402  (the same chain)
from models.opencl.runner import DeviceSession, Timing, select_device, time_kernel  # noqa: E402

GROUP = 256
REPS = 32
RUNS = 5


def device_and_profile(device: str, profile: Path | None) -> tuple[DeviceSession, Any]:
    """The session on `device` (its description printed) and the GPU parameters of `profile`
    (None without one)."""
    session = DeviceSession(select_device(device))
    print(f"device: {session.info.describe()}")
    return session, load_profile(profile).gpu if profile else None


def time_allocations(session, source: str, name: str, items: int, reps: int,
                     runs: int) -> tuple[Timing, Timing, list[np.ndarray]]:
    """An allocation kernel of the generated code's buffers (heap, bases, caps, aps, err, slots)
    and arguments (reps, region), `source`'s `name`, on `items` threads in groups of `GROUP`:
    its time with 0 and with `reps` allocations a thread, and the buffers after the second."""
    words = items * max(reps, 1) * (runs + 1) + 16  # the runs share the buffers: room for all

    def buffers() -> list[np.ndarray]:
        return [np.zeros(words, np.int64), np.zeros(1, np.int64),
                np.array([words], np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32),
                np.zeros(items, np.int64)]

    zero, _ = time_kernel(session, source, name, items, GROUP, buffers(),
                          [np.int32(0), np.int32(0)], runs)
    full, out = time_kernel(session, source, name, items, GROUP, buffers(),
                            [np.int32(reps), np.int32(0)], runs)
    return zero, full, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--groups", default="1,4,16,66,132,264,528,1056")
    parser.add_argument("--reps", type=int, default=REPS,
                        help="allocations in each thread's chain (1: a map's single step)")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs of each kernel")
    args = parser.parse_args()
    reps, runs = args.reps, args.runs
    session, gpu = device_and_profile(args.device, args.profile)
    if gpu is not None:
        unit = gpu.unit_seconds
        print(f"profile {args.profile.name}: atomic latency {gpu.atomic_latency * unit * 1e9:.1f} "
              f"ns, atomic (serialised, one address) {gpu.atomic * unit * 1e9:.3f} ns, "
              f"L1 {gpu.l1_latency * unit * 1e9:.1f} ns")
    for groups in (int(g) for g in args.groups.split(",")):
        items = groups * GROUP
        zero, full, out = time_allocations(session, GROUP_ALLOC, "group_alloc", items, reps, runs)
        if int(out[4][0]) != 0 or int(out[5][1]) != 1 + reps:
            raise RuntimeError("the allocation chain computed a wrong value or overflowed")
        step = (full.median - zero.median) / reps
        rate = items * reps / max(1e-12, full.median - zero.median)
        print(f"groups {groups:5d} items {items:7d}: {step * 1e9:9.1f} ns a step per thread, "
              f"{1e9 / rate:7.3f} ns an allocation (all threads), empty {zero.median * 1e6:.2f} "
              f"µs, with the chain {full.median * 1e6:.2f} µs", flush=True)


if __name__ == "__main__":
    main()
