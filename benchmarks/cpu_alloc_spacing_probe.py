"""Issue 15's open question, measured apart: what an allocation costs the OpenCL CPU device when
its work items do other work between allocations, as real kernels do.

`hetprof calibrate` measures the contended allocation with nothing between two allocations (every
work item allocates and stores back to back: `calibrate_cpu.ALLOCATE`), 67–78 ns each on the
H200's host. The suite's allocating CPU parts (bfs, covariance, jacobi1d) paid 16–22 ns an
allocation (docs/validation/suite-nvidia-h200-2026-11-27.md). Here every work item runs `reps`
steps of `gap` dependent 64-bit multiply-adds followed by an allocation exactly as the generated
code makes it (an atomic add on one region pointer, then the store of the value into the new
cell), and the same steps with the store into a cell of its own and no atomic. Printed one line
per (units, gap): the time per step of each, and their difference, the allocation's extra cost at
that spacing. Nothing is fitted here: it only prints.

    python benchmarks/cpu_alloc_spacing_probe.py [--device pocl] [--gaps 0,1,2,4,8,16,32,64,128]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.runner import DeviceSession, select_device, time_kernel  # noqa: E402

SPACED = """\
__kernel void spaced(__global int* counter, __global long* cells, const int reps,
                     const int gap, const int shared, const long mask) {
    long i = get_global_id(0);
    long v = i;
    for (int r = 0; r < reps; r++) {
        for (int g = 0; g < gap; g++) { v = v * 6364136223846793005L + 1442695040888963407L; }
        long at = shared ? (long) atomic_add(counter, 1) : i * reps + r;
        cells[at & mask] = v;
    }
}
"""
GROUP = 256
REPS = 64
RUNS = 5
MASK = (1 << 22) - 1  # 32 MB of cells, as calibrate_cpu.ALLOCATE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="pocl")
    parser.add_argument("--gaps", default="0,1,2,4,8,16,32,64,128")
    parser.add_argument("--units", default="")
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    processors = max(1, session.info.compute_units)
    print(f"device: {session.info.describe()}; {processors} compute units")
    units_list = [int(u) for u in args.units.split(",") if u] or [processors]
    print(f"{'units':>5} {'gap':>4} {'private ns/step':>16} {'allocating ns/step':>19} "
          f"{'extra ns/alloc':>15}")
    for units in units_list:
        items = units * GROUP  # one work group per compute unit
        for gap in (int(g) for g in args.gaps.split(",")):
            per_step = {}
            for shared in (0, 1):
                times = []
                for reps in (0, REPS):
                    timing, (counted, _) = time_kernel(
                        session, SPACED, "spaced", items, GROUP,
                        [np.zeros(1, np.int32), np.zeros(MASK + 1, np.int64)],
                        [np.int32(reps), np.int32(gap), np.int32(shared), np.int64(MASK)], RUNS)
                    if shared and int(counted[0]) != items * reps * (RUNS + 1):
                        raise RuntimeError("lost atomic increments")
                    times.append(timing.median)
                per_step[shared] = (times[1] - times[0]) / (items * REPS)  # wall, all units
            extra = per_step[1] - per_step[0]
            print(f"{units:>5} {gap:>4} {per_step[0] * 1e9:>16.2f} {per_step[1] * 1e9:>19.2f} "
                  f"{extra * 1e9:>15.2f}", flush=True)


if __name__ == "__main__":
    main()
