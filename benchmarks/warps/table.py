"""The warps probe's kernels side by side (benchmarks/gpu_warps_probe.sh): for each program and
size, the measured and predicted kernel time of every process (each predicted with its own
process's allocation draw, so a row shows whether the measured time follows the draw as the
prediction does), and the measured time per warp step relative to one warp's.

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
    print("| program | n | warps | measured µs (each process) | predicted µs (each process) | "
          "error (each process) | measured / 1 warp's |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (program, n), figures in sorted(runs.items()):
        one = runs.get((program, 32))
        base = min(m for m, _ in one) if one else None
        ratio = f"{min(m for m, _ in figures) / base:.2f}" if base else "-"
        print(f"| {program} | {n} | {min(8, -(-n // 32))} x {-(-n // 256)} | "
              f"{', '.join(f'{1e6 * m:.1f}' for m, _ in figures)} | "
              f"{', '.join(f'{1e6 * p:.1f}' for _, p in figures)} | "
              f"{', '.join(f'{100 * (p / m - 1):+.1f}%' for m, p in figures)} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1:])
