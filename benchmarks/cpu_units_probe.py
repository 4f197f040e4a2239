"""Issue 15: does a CPU class cost less per compute unit when fewer units are busy? The by-class
CPU model (models/cpu.py) prices a thread's reads, writes and steps at what each costs with every
unit of the OpenCL CPU device busy; a CPU part whose kernels fill one work group runs on one
unit, with the socket's caches, memory bandwidth and clock to itself.

For u = 1, 2, 4, 8 and all units, each microbenchmark runs as u work groups of GROUP items (one
group a unit), every item doing `reps` of one operation, with the same words in all (a buffer
larger than the caches for the memory classes); the per-unit cost is (T(reps) - T(0)) · u /
(items · reps), as `calibrate_cpu` computes it with every unit busy. Printed per class: the cost
at each u and its ratio to the all-units cost. Nothing is fitted here.

    python benchmarks/cpu_units_probe.py [--device pocl] [--repeats 7] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate import ARITHMETIC  # noqa: E402
from models.opencl.calibrate_cpu import READ, UNIT_STEP, WRITE  # noqa: E402
from models.opencl.runner import DeviceSession, select_device, time_kernel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="pocl")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="16 MB buffers instead of 256 MB")
    parser.add_argument("--json", default="", help="also write the figures here")
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    units_all = max(1, session.info.compute_units)
    group = min(1024, session.info.max_work_group_size)
    words = 1 << (21 if args.quick else 25)
    mask = words - 1
    data = np.random.default_rng(7).integers(1, 1000, size=words, dtype=np.int64)
    ladder = sorted({u for u in (1, 2, 4, 8) if u < units_all} | {units_all})
    print(f"device: {session.info.describe()}, {units_all} compute units; groups of {group} "
          f"items; {words * 8 >> 20} MiB per run")

    def cost(kernel_source: str, name: str, units: int, buffers, scalars_at) -> float:
        items = units * group
        reps = max(1, words // items)
        times = [time_kernel(session, kernel_source, name, items, group, buffers(),
                             scalars_at(r), args.repeats)[0].median for r in (0, reps)]
        return max(1e-12, (times[1] - times[0]) * units / (items * reps))

    classes = {
        "read (stride 1)": (READ, "read_words",
                            lambda: [data, np.zeros(words, np.int64)],
                            lambda r: [np.int32(r), np.int64(1), np.int64(mask)]),
        "write": (WRITE, "write_words", lambda: [np.zeros(words, np.int64)],
                  lambda r: [np.int32(r)]),
        "multiply-add": (ARITHMETIC, "arithmetic", lambda: [np.zeros(words, np.int64)],
                         lambda r: [np.int32(r)]),
        "map step (2 loads, op, own-counter bump, store)": (
            UNIT_STEP, "map_step",
            lambda: [data, np.zeros(words, np.int64), np.zeros(16 * units_all, np.int32)],
            lambda r: [np.int32(r), np.int64(mask)]),
    }
    figures: dict[str, dict[int, float]] = {}
    for label, (source, name, buffers, scalars_at) in classes.items():
        figures[label] = {u: cost(source, name, u, buffers, scalars_at) for u in ladder}
        whole = figures[label][units_all]
        cells = "  ".join(f"u={u}: {s * 1e9:7.2f} ns ({s / whole:4.2f})"
                          for u, s in figures[label].items())
        print(f"{label:50} {cells}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"device": session.info.describe(), "units": units_all, "group": group,
             "words": words, "seconds": figures}, indent=2) + "\n")


if __name__ == "__main__":
    main()
