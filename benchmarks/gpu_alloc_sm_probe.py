"""Is one thread's allocation a draw of the compute unit it runs on, or of where its bookkeeping
lies? (issue 14)

Run 22 (2026-11-29, card GPU-86ec9c67) chose every validation process's allocation pointer first,
among 32 places, and all 32 places of every process timed 125-157 ns an atomic: no place was far.
Yet one thread's allocation chain (the calibration's `measure_thread_allocation`) came out about
200 ns in 7 of 17 processes and 290-325 ns in the other 10, steady within each process. So the
draw is not the pointer's place. The chain is the atomic on the pointer, then the loads of the
region's capacity and base (`caps`, `bases`), which wait for it. This probe, in several processes
of its own, times that chain

- as the calibration does (its figure for the process);
- with `caps` and `bases` read at 32 places spread over 48 MiB (the pointer kept at the session's
  place): if some places are near and some far, the draw is where the bookkeeping lies;
- run by one work group among as many as the device has compute units, each group in turn, with
  the compute unit that ran it (NVIDIA's `%smid`, where the compiler takes inline PTX): if the
  figure follows the unit, the draw is the unit the one-thread kernel lands on;
- and the bare atomic chain the same way, by group.

Nothing here is fitted; it prints per process the figures' spread and writes all of them to --out.

    python benchmarks/gpu_alloc_sm_probe.py [--device nvidia] [--processes 4] [--out F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models.opencl.calibrate_cache import measure_thread_allocation  # noqa: E402
from models.opencl.runner import AllocationPointers, DeviceSession, select_device, time_kernel  # noqa: E402

SMID = 'uint id; asm volatile("mov.u32 %0, %%smid;" : "=r"(id));'
"""The compute unit's id on NVIDIA (PTX's %smid), read through inline PTX."""

SPLIT_CHAIN = """
__kernel void split_chain(__global long* heap, __global const long* bases,
                          __global const int* caps, __global int* aps, __global int* err,
                          __global long* slots, const int hops, const int ra, const int rc,
                          const int who, const int atomic_only) {
    if (get_group_id(0) != who || get_local_id(0) != 0) return;
    SMID_READ
    long x = 0;
    if (atomic_only) {
        int y = 0;
        for (int h = 0; h < hops; h++) y = atomic_add(&aps[ra], (y & 1) + 1);
        x = y;
    } else {
        for (int h = 0; h < hops; h++) {
            int words = 1 + (int)(x & 0);  /* as the calibration's chain: see ALLOC_CHAIN */
            int offset = atomic_add(&aps[ra], words);
            if (offset + words > caps[rc]) { atomic_or(err, 1); x += bases[rc]; }
            else x += bases[rc] + offset;
        }
    }
    slots[2 * who] = x;
    slots[2 * who + 1] = SMID_VALUE;
}
"""
"""One thread of group `who` runs the generated code's allocation (the atomic on `aps[ra]`, then
the check against `caps[rc]` and the address from `bases[rc]`), or the bare atomic chain."""

PLACES = 32
PLACE_BYTES = 3 * 1024 * 512  # 1.5 MiB between places: 32 of them span 48 MiB


def kernel_source(smid: bool) -> str:
    if smid:
        return SPLIT_CHAIN.replace("SMID_READ", SMID).replace("SMID_VALUE", "(long)id")
    return SPLIT_CHAIN.replace("SMID_READ", "").replace("SMID_VALUE", "-1L")


def chain(session, source: str, groups: int, who: int, rc: int, atomic_only: int, entries: int,
          hops: int = 1024, repeats: int = 5) -> tuple[float, int]:
    """Seconds per hop (the slope between `hops` and 2·`hops`, each its fastest of `repeats`)
    and the compute unit that ran it (-1 unknown)."""
    words = 2 * hops * (repeats + 1) * 2 + 16

    def buffers() -> list:
        bases = np.zeros(entries, np.int64)
        caps = np.full(entries, words, np.int32)
        return [np.zeros(words, np.int64), bases, caps, AllocationPointers(np.zeros(1, np.int32)),
                np.zeros(1, np.int32), np.zeros(2 * groups, np.int64)]

    times, unit = [], -1
    for h in (hops, 2 * hops):
        timing, out = time_kernel(session, source, "split_chain", groups, 1, buffers(),
                                  [np.int32(h), np.int32(0), np.int32(rc), np.int32(who),
                                   np.int32(atomic_only)], repeats)
        if int(out[4][0]) != 0:
            raise RuntimeError("the chain overflowed its region")
        times.append(timing.best)
        unit = int(out[5][2 * who + 1])
    return max(0.0, (times[1] - times[0]) / hops), unit


def child(device: str) -> dict:
    session = DeviceSession(select_device(device))
    result: dict = {"device": session.info.describe(), "pointer_place": list(session.pointer_place()),
                    "calibration_alloc_s": measure_thread_allocation(session)}
    try:
        source = kernel_source(True)
        session.program(source)
        result["smid"] = True
    except Exception as error:  # noqa: BLE001  (the compiler refused inline PTX: go on without)
        result["smid"] = False
        result["smid_error"] = str(error)[:300]
        source = kernel_source(False)
    entries = PLACES * PLACE_BYTES // 8
    result["places"] = [chain(session, source, 1, 0, k * (PLACE_BYTES // 8), 0, entries)[0]
                        for k in range(PLACES)]
    groups = session.info.compute_units
    by_group = []
    for who in range(groups):
        alloc, unit = chain(session, source, groups, who, 0, 0, 16)
        atomic, _ = chain(session, source, groups, who, 0, 1, 16)
        by_group.append({"group": who, "unit": unit, "alloc_s": alloc, "atomic_s": atomic})
    result["by_group"] = by_group
    result["calibration_alloc_after_s"] = measure_thread_allocation(session)
    return result


def summary(k: int, r: dict) -> str:
    ns = 1e9
    places = [p * ns for p in r["places"]]
    allocs = [g["alloc_s"] * ns for g in r["by_group"]]
    atomics = [g["atomic_s"] * ns for g in r["by_group"]]
    far = [g for g in r["by_group"] if g["alloc_s"] * ns > 250]
    lines = [f"process {k}: pointer place {r['pointer_place']}; calibration chain "
             f"{r['calibration_alloc_s'] * ns:.0f} ns before, "
             f"{r['calibration_alloc_after_s'] * ns:.0f} after; smid {r['smid']}",
             f"  caps/bases at {len(places)} places: {min(places):.0f}-{max(places):.0f} ns "
             f"(median {statistics.median(places):.0f})",
             f"  by group ({len(allocs)}): allocation {min(allocs):.0f}-{max(allocs):.0f} ns "
             f"(median {statistics.median(allocs):.0f}), atomic {min(atomics):.0f}-"
             f"{max(atomics):.0f} ns (median {statistics.median(atomics):.0f}); "
             f"{len(far)} groups over 250 ns"]
    if r["smid"]:
        lines.append("  units over 250 ns: " + " ".join(str(g["unit"]) for g in far)[:600])
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--out", default="alloc-sm-probe.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.device)))
        return
    results = []
    for k in range(args.processes):
        run = subprocess.run([sys.executable, __file__, "--child", "--device", args.device],
                             capture_output=True, text=True, check=False)
        if run.returncode:
            print(f"process {k} failed:\n{run.stderr[-2000:]}")
            continue
        results.append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(summary(k, results[-1]), flush=True)
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
