"""What one thread of the generated code pays per allocation, measured apart (issue 14: one-thread
kernels such as the suite's serial_loop and recurrence were predicted 20-50% fast on the H200).

One work item runs a chain of `hops` steps; a step's time is the slope between runs of `hops` and
2·`hops` steps, each the fastest of its runs (models/opencl/calibrate_cache._chain_latency), so
neither the launch nor its jitter enters it. The chains, each a kernel of the generated code's
own PRELUDE:
- `atomic`: a bare dependent atomic add (what `calibrate` measures as `atomic_latency`);
- `alloc`: the generated code's ALLOC (calibrate_cache.ALLOC_CHAIN, what `calibrate` now
  measures for `atomic_latency`);
- `alloc+store+load`: ALLOC, the store of a value into the new cell and a load of it that the
  next step depends on (the generated code's allocation of a value it reads back);
- `alloc independent`: the same with the allocation's size a constant, as the generated code's
  allocations are (each waits for no value read before it);
- `alloc pair`: two such allocations a step, a literal and a product of it, as the generated
  code boxes a constant and an arithmetic result (printed per allocation);
- `store+load`: the store and the load back through the same restrict pointer, no allocation
  (what a compiler may forward in a register);
- `local LD`: a pointer chase (a random cycle, calibrate_cache.chase_cycle) through a region
  staged into local memory and read through the generated code's `LD` macro (the bounds check
  that falls back to the heap: codegen's `local_macros`), as an `on local` body reads it
  (calibrate_cache.LOCAL_LD, what `calibrate` now measures for the cache mode's
  `local_latency`);
- `local`: the same chase read from local memory directly, without the macro;
- `global L1`: the same chase from global memory (a working set inside the L1).
Nothing is fitted: it prints each step's time and the cache profile's parameters beside it.

    python benchmarks/gpu_thread_chain_probe.py [--device nvidia] [--profile PROFILE.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate_cache import (  # noqa: E402
    ATOMIC_CHAIN,
    LOCAL_LD,
    _chain_latency,
    chase_cycle,
    measure_thread_allocation,
)
from models.opencl.codegen import PRELUDE  # noqa: E402
from models.opencl.runner import DeviceSession, select_device, time_kernel  # noqa: E402

CHAINS = PRELUDE + """
__kernel void alloc_store_load(COMMON, const int hops) {
    long x = 1;
    for (int h = 0; h < hops; h++) {
        long a = ALLOC(0, 1 + (int)(x & 0));
        heap[a] = x + h;
        x = heap[a];
    }
    slots[0] = x;
}

__kernel void alloc_independent(COMMON, const int hops) {
    long x = 1;
    for (int h = 0; h < hops; h++) {
        long a = ALLOC(0, 1);
        heap[a] = x + h;
        x = heap[a];
    }
    slots[0] = x;
}

__kernel void alloc_pairs(COMMON, const int hops) {
    long x = 1;
    for (int h = 0; h < hops; h++) {
        long a = ALLOC(0, 1);
        heap[a] = 1103515245L;
        long b = ALLOC(0, 1);
        heap[b] = x * heap[a];
        x = heap[b] + h;
    }
    slots[0] = x;
}

__kernel void store_load(COMMON, const int hops) {
    long x = 1;
    for (int h = 0; h < hops; h++) {
        long a = bases[0] + ((x + h) & 1023);
        heap[a] = x + h;
        x = heap[a];
    }
    slots[0] = x;
}
"""
LOCAL_CHASES = LOCAL_LD + """
__kernel void local_plain(__global long* restrict heap, __global long* restrict out,
                          const int hops, const int words) {
    __local long L0[LOCAL_WORDS];
    for (int w = get_local_id(0); w < words; w += get_local_size(0)) L0[w] = heap[w];
    barrier(CLK_LOCAL_MEM_FENCE);
    long p = 0;
    for (int h = 0; h < hops; h++) p = L0[p];
    out[get_global_id(0)] = p;
}

__kernel void global_chase(__global long* restrict heap, __global long* restrict out,
                           const int hops, const int words) {
    long p = 0;
    for (int h = 0; h < hops; h++) p = heap[p];
    out[get_global_id(0)] = p;
}
"""
CHASE_WORDS = 1024  # 8 KiB: inside local memory and the L1
HOPS = 4096
REPEATS = 7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    words = 6 * HOPS * (REPEATS + 1) + 2048  # every run of every chain allocates anew

    def common() -> list[np.ndarray]:
        return [np.zeros(words, np.int64), np.zeros(1, np.int64), np.array([words], np.int32),
                np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int64)]

    print(f"device: {session.info.describe()}")
    seconds, _ = _chain_latency(session, ATOMIC_CHAIN, "atomic_chain",
                                lambda: [np.zeros(1, np.int32), np.zeros(1, np.int64)], HOPS,
                                REPEATS, [np.int32(0)])
    print(f"{'atomic':<18} {seconds * 1e9:8.1f} ns a step")
    seconds = measure_thread_allocation(session, HOPS, REPEATS)
    print(f"{'alloc':<18} {seconds * 1e9:8.1f} ns a step")
    for name, kernel, per in (("alloc+store+load", "alloc_store_load", 1),
                              ("alloc independent", "alloc_independent", 1),
                              ("alloc pair", "alloc_pairs", 2), ("store+load", "store_load", 1)):
        seconds, out = _chain_latency(session, CHAINS, kernel, common, HOPS, REPEATS)
        if int(out[4][0]) != 0:
            raise RuntimeError(f"the {name} chain overflowed its region")
        print(f"{name:<18} {seconds / per * 1e9:8.1f} ns a step"
              + (" (per allocation)" if per > 1 else ""))
    nxt = chase_cycle(CHASE_WORDS)
    source = LOCAL_CHASES.replace("LOCAL_WORDS", str(session.info.local_words))
    expected = 0
    for _ in range(HOPS):
        expected = int(nxt[expected])
    for name, kernel in (("local LD", "local_ld"), ("local", "local_plain"),
                         ("global L1", "global_chase")):
        short, (_, out) = time_kernel(session, source, kernel, 1, 1,
                                      [nxt.copy(), np.zeros(1, np.int64)],
                                      [np.int32(HOPS), np.int32(CHASE_WORDS)], REPEATS)
        long, _ = time_kernel(session, source, kernel, 1, 1,
                              [nxt.copy(), np.zeros(1, np.int64)],
                              [np.int32(2 * HOPS), np.int32(CHASE_WORDS)], REPEATS)
        if int(out[0]) != expected:
            raise RuntimeError(f"the {name} chase followed a wrong chain")
        print(f"{name:<18} {max(0.0, long.best - short.best) / HOPS * 1e9:8.1f} ns a step")
    if args.profile:
        gpu = load_profile(args.profile).gpu
        unit = gpu.seconds_per_unit * 1e9
        print(f"profile {args.profile.name}: atomic_latency {gpu.atomic_latency * unit:.1f} ns, "
              f"L1 {gpu.l1_latency * unit:.1f} ns, local {gpu.local_latency * unit:.1f} ns, "
              f"op {gpu.op * unit:.2f} ns")


if __name__ == "__main__":
    main()
