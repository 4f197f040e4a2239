"""Whether a thread's independent allocations overlap (issue 14: the cache mode charges every
allocating step of a thread's path the atomic's latency, one after the other, and over-predicts
kernels whose loop iterations allocate several values at once: mandelbrot +34%, serial_loop
+24%, blackscholes +28%, signed medians of runs 13-15 re-predicted).

Every work item of G work groups (256 items each) runs `reps` allocations as the generated code
makes them (codegen's PRELUDE `ALLOC`: the atomic add on the region's pointer, the capacity
check), each followed by a store of a value into the new cell, in two ways:

- `chain` (models/opencl/calibrate_cache.py's GROUP_ALLOC): each allocation's value depends on a
  load of the cell before, so one allocation waits for the last;
- `independent`: nothing an allocation does depends on the one before (the addresses are
  summed), as a λG loop step allocates the parts of a pair and the pair itself.

The time per allocation is (T(reps) - T(0)) / reps, each T the median of `--runs` launches; the
profile's atomic latency is printed beside it. No model parameter is fitted: it only prints.

    python benchmarks/gpu_alloc_overlap_probe.py [--device nvidia] [--profile PROFILE.json]
        [--groups 1,16,66] [--reps 1,2,4,8,32] [--runs 21]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.gpu_alloc_probe import GROUP, device_and_profile, time_allocations  # noqa: E402
from models.opencl.calibrate_cache import GROUP_ALLOC  # noqa: E402  (the chain)
from models.opencl.codegen import PRELUDE  # noqa: E402

INDEPENDENT_ALLOC = PRELUDE + """
__kernel void independent_alloc(COMMON, const int reps, const int r) {
    long x = get_global_id(0);
    long sum = 0;
    for (int k = 0; k < reps; k++) {
        long a = ALLOC(r, 1);
        heap[a] = x + k;  /* the store of the new value; nothing after waits for it */
        sum += a;
    }
    slots[get_global_id(0)] = sum;
}
"""

KERNELS = {"chain": (GROUP_ALLOC, "group_alloc"),
           "independent": (INDEPENDENT_ALLOC, "independent_alloc")}


def allocation_time(session, kind: str, items: int, reps: int, runs: int) -> tuple[float, float]:
    """(T(reps) - T(0)) / reps in seconds, and T(0), for `items` threads of the `kind` kernel."""
    zero, full, out = time_allocations(session, *KERNELS[kind], items, reps, runs)
    if int(out[4][0]) != 0:
        raise RuntimeError("the allocations overflowed their region")
    return (full.median - zero.median) / max(reps, 1), zero.median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--groups", default="1,16,66")
    parser.add_argument("--reps", default="1,2,4,8,32")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    session, gpu = device_and_profile(args.device, args.profile)
    if gpu is not None:
        unit = gpu.unit_seconds
        print(f"profile {args.profile.name}: atomic latency {gpu.atomic_latency * unit * 1e9:.1f} "
              f"ns, with every lane {gpu.warp_atomic_latency * unit * 1e9:.1f} ns")
    for groups in (int(g) for g in args.groups.split(",")):
        items = groups * GROUP
        for reps in (int(r) for r in args.reps.split(",")):
            line = [f"groups {groups:4d} items {items:6d} reps {reps:3d}:"]
            for kind in KERNELS:
                step, empty = allocation_time(session, kind, items, reps, args.runs)
                line.append(f"{kind} {step * 1e9:7.1f} ns an allocation (T(0) {empty * 1e6:.2f} µs)")
            print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
