"""Does a work group's allocation step cost the same at every group size? (issue 14)

The calibration times a work group's allocation step with groups of 256 items (eight warps;
`calibrate_cache.measure_group_allocation`, `GROUP_ALLOC`), 280-296 ns on three H200s
(2026-11-29, run 23), and the cache mode charges that figure to every allocating warp step. The
suite's allocating kernels of one or two small work groups come out over by 22-89%
(blackscholes at 64 items, two groups of 64; mandelbrot at 8; nbody3d at 64; hotspot at 16), and
most of their predicted time is those steps. This probe times the same kernel (`GROUP_ALLOC`:
every item allocates one word, stores, reads back, `reps` times; (T(reps) - T(0)) / reps) with
groups of 1, 32, 64, 128 and 256 items, one group and two at once, in interleaved rounds, in
each of several processes. Nothing is fitted; it prints each configuration's median and spread
over the rounds and writes all figures to --out.

    python benchmarks/gpu_group_alloc_size_probe.py [--device nvidia] [--processes 2] [--out F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models.opencl.calibrate_cache import group_allocation_step  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402

SIZES = (1, 32, 64, 128, 256)
GROUPS = (1, 2)


def one_process(device: str, rounds: int) -> dict:
    session = DeviceSession(select_device(device))
    figures: dict[str, list[float]] = {f"{i}x{g}": [] for i in SIZES for g in GROUPS}
    for _ in range(rounds):
        for items in SIZES:
            for groups in GROUPS:
                figures[f"{items}x{groups}"].append(group_allocation_step(session, items, groups))
    return {"device": session.info.name, "figures": figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.device, args.rounds)))
        return
    runs = []
    for k in range(args.processes):
        done = subprocess.run([sys.executable, __file__, "--child", "--device", args.device,
                               "--rounds", str(args.rounds)], capture_output=True, text=True,
                              check=True)
        run = json.loads(done.stdout.strip().splitlines()[-1])
        runs.append(run)
        print(f"process {k + 1}: {run['device']}; a step, ns: median [least..most] of "
              f"{args.rounds} rounds")
        for key, values in run["figures"].items():
            items, groups = key.split("x")
            print(f"  {items:>3} items x {groups} group(s): {statistics.median(values) * 1e9:6.1f} "
                  f"[{min(values) * 1e9:6.1f}..{max(values) * 1e9:6.1f}]")
    if args.out:
        Path(args.out).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
