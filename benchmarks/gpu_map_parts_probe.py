"""What a map kernel's time is made of, as its items grow (issue 14: the runner's map steps cost
1-2 µs more than the model at 2 048-16 384 items, which neither a single allocation's queue nor
a store-only kernel's launch explains; docs/validation/step-items-sweep-nvidia-h200-2026-11-28.txt
and alloc-burst-probe-nvidia-h200-2026-11-28.txt).

A map kernel as the generated code makes one (models/opencl/codegen.py's PRELUDE and `ALLOC`;
work groups of `WORK_GROUP`): each item i reads its input vector's cell (a location), then the
value there, allocates a word for its result with the atomic add, stores the result there and
the result's location into the output vector's cell. Five variants, each timed by its events
(the median of `--runs` launches after a warm-up, as the runner times a step), drop one part at
a time:

- `full`: all of it;
- `no-alloc`: the result stored at a fixed place for item i (no atomic);
- `no-load`: the value is i (no read of the input);
- `one-load`: the cell is read, not the value behind it;
- `store`: only the output cell is stored (a kernel's floor at that size).

Input vectors are laid out as the runner lays out a λG vector (a length word, then one location a
cell; the values elsewhere in the heap), written by the host before the first launch. Nothing is
fitted: it only prints each variant's median in µs, per size.

    python benchmarks/gpu_map_parts_probe.py [--device nvidia] [--items 1024,4096,16384]
        [--runs 21]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.codegen import PRELUDE, WORK_GROUP  # noqa: E402
from models.opencl.runner import DeviceSession, select_device, time_kernel  # noqa: E402

BODY = {
    "full": "long v = heap[heap[in + 1 + i]]; long a = ALLOC(0, 1); heap[a] = v + 1;",
    "no-alloc": "long v = heap[heap[in + 1 + i]]; long a = fixed + i; heap[a] = v + 1;",
    "no-load": "long v = i; long a = ALLOC(0, 1); heap[a] = v + 1;",
    "one-load": "long v = heap[in + 1 + i]; long a = ALLOC(0, 1); heap[a] = v + 1;",
    "store": "long a = i;",
}


def kernel_source(variant: str) -> str:
    name = variant.replace("-", "_")
    return PRELUDE + f"""
__kernel void map_{name}(COMMON, const long n, const long in, const long out,
                         const long fixed) {{
    long i = get_global_id(0);
    if (i >= n) return;
    {BODY[variant]}
    heap[out + 1 + i] = a;
    if (i == 0) heap[out] = n;
}}
"""


def time_variant(session, variant: str, items: int, runs: int) -> float:
    """The median event time, in seconds, of the variant's kernel over `items` items."""
    values = 1 << 20  # the input's values lie past its cells, as a region's later words do
    inp = 16
    out = inp + items + 1
    fixed = out + items + 1
    free = values + items  # where the allocations start
    words = free + items * (runs + 1) + 16
    heap = np.zeros(words, np.int64)
    heap[inp] = items
    heap[inp + 1:inp + 1 + items] = values + np.arange(items)
    heap[values:values + items] = np.arange(items)
    buffers = [heap, np.zeros(1, np.int64), np.array([words], np.int32),
               np.array([free], np.int32), np.zeros(1, np.int32), np.zeros(1, np.int64)]
    groups = -(-items // WORK_GROUP) * WORK_GROUP
    timing, result = time_kernel(session, kernel_source(variant), f"map_{variant.replace('-', '_')}",
                                 groups, WORK_GROUP, buffers,
                                 [np.int64(items), np.int64(inp), np.int64(out),
                                  np.int64(fixed)], runs)
    if int(result[4][0]) != 0 or int(result[0][out]) != items:
        raise RuntimeError(f"{variant}: the map overflowed its region or wrote no length")
    return statistics.median(timing.samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--items", default="64,256,1024,2048,4096,8192,16384,65536")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    print(f"device: {session.info.describe()}; medians of {args.runs} launches, µs")
    print(f"{'items':>7} " + " ".join(f"{variant:>9}" for variant in BODY), flush=True)
    for items in (int(k) for k in args.items.split(",")):
        times = [time_variant(session, variant, items, args.runs) for variant in BODY]
        print(f"{items:7d} " + " ".join(f"{t * 1e6:9.2f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
