"""Whether one thread's allocations cost the calibrated chain's latency each when nothing makes
them wait on one another (issue 14; written 2026-11-28 and not yet run on a GPU).

The cache mode prices every allocating warp step at `atomic_latency` or `warp_atomic_latency`,
which the calibration measures as a chain (models/opencl/calibrate_cache.py's `ALLOC_CHAIN`):
each allocation's size depends on the last address, so that no two overlap. The generated code's
allocations do not depend on one another's addresses, and the suite's allocating loops
(blackscholes, nbody3d, mandelbrot, hotspot, serial_loop) come out 12-32% over on every card
(runs 13-19). In one thread, per allocation, at `ATOMIC_PLACES` places of the pointer:

- `alloc_chain`: the calibration's chain;
- `alloc_store`: the generated code's pattern, an allocation of constant size and a store of a
  value into it, the addresses summed only at the end;
- `alloc_store_use`: the same, each value computed from the one read back from the last cell
  (as a boxed float's next operation reads it).

Each the slope between runs of `--hops` and twice as many (`_chain_latency`). Nothing is fitted.

    python benchmarks/gpu_alloc_independent_probe.py [--device nvidia] [--hops 2048]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import (  # noqa: E402
    ALLOC_CHAIN,
    ATOMIC_PLACES,
    PLACE_STRIDE,
    _chain_latency,
    placed_regions,
)
from models.opencl.codegen import PRELUDE  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402

PATTERNS = PRELUDE + """
__kernel void alloc_store(COMMON, const int hops, const int r) {
    long x = 0;
    for (int h = 0; h < hops; h++) { long t = ALLOC(r, 1); heap[t] = h; x += t; }
    slots[0] = x;
}
__kernel void alloc_store_use(COMMON, const int hops, const int r) {
    double v = 1.0;
    for (int h = 0; h < hops; h++) {
        long t = ALLOC(r, 1);
        heap[t] = as_long(v * 1.000001);
        v = as_double(heap[t]);
    }
    slots[0] = as_long(v);
}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--hops", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    print(f"device: {session.info.describe()}", flush=True)
    words = 3 * args.hops * (args.repeats + 1) + 16  # both runs' allocations at every place

    def buffers() -> list[np.ndarray]:
        return [np.zeros(words, np.int64), *placed_regions(words), np.zeros(1, np.int32),
                np.zeros(1, np.int64)]

    for k in range(ATOMIC_PLACES):
        row = []
        for source, name in ((ALLOC_CHAIN, "alloc_chain"), (PATTERNS, "alloc_store"),
                             (PATTERNS, "alloc_store_use")):
            seconds, out = _chain_latency(session, source, name, buffers, args.hops,
                                          args.repeats, [np.int32(k * PLACE_STRIDE)])
            if int(out[4][0]) != 0:
                raise RuntimeError(f"{name} filled its region")
            row.append(f"{name} {seconds * 1e9:6.1f} ns")
        print(f"place {k:2d}: " + ", ".join(row), flush=True)


if __name__ == "__main__":
    main()
