"""The warps probe's kernels side by side (benchmarks/gpu_warps_probe.sh): for each program and
size, the measured and predicted kernel time of every process, and the measured time per warp
step relative to one warp's.

    python benchmarks/warps/table.py warps_1.json [warps_2.json ...]
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.pooled import kernel_cases  # noqa: E402  (the reports' kernel cases)


def main(paths: list[str]) -> None:
    runs: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for case in kernel_cases(paths):
        runs[case["program"], case["n"]].append((case["measured_s"], case["predicted_s"]))
    print("| program | n | warps | measured µs (each process) | predicted µs | error | "
          "measured / 1 warp's |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (program, n), figures in sorted(runs.items()):
        one = runs.get((program, 32))
        base = min(m for m, _ in one) if one else None
        measured = [m for m, _ in figures]
        predicted = figures[0][1]
        best = min(measured)
        ratio = f"{best / base:.2f}" if base else "-"
        print(f"| {program} | {n} | {min(8, -(-n // 32))} x {-(-n // 256)} | "
              f"{', '.join(f'{1e6 * m:.1f}' for m in measured)} | {1e6 * predicted:.1f} | "
              f"{100 * (predicted / best - 1):+.1f}% | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1:])
