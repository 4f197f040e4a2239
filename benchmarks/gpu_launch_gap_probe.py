"""A launch's time against the host's gap before it (issue 14: in validate's runs each kernel of
a small `on` took 2-4 µs more than calibrate's launch; with the generated empty kernel launched
just before each step, the step's kernel took about what the model predicts and the empty kernel
took the extra: benchmarks/gpu_runner_ablation_probe.py. Between two kernels the runner makes up
to five small blocking copies, tens of µs in which the device idles).

The generated empty kernel (calibrate_cache.GENERATED_EMPTY, one work item) is launched, waited
for, and launched again after the host waits `gap` µs (spinning, no copy) or after the runner's
five small blocking copies (read the error word, a slot, a heap word and the allocation pointers;
write the capacities: models/opencl/runner.py's map step). Each launch is timed by its event
(start to end); medians of `--runs`. Nothing is fitted.

    python benchmarks/gpu_launch_gap_probe.py [--device nvidia] [--runs 61]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import GENERATED_EMPTY  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_step_launch_probe import runner_buffers  # noqa: E402

GAPS_US = (0, 10, 20, 40, 80, 160, 320, 640, 1280)


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--runs", type=int, default=61)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, queue = session.cl, session.queue
    words = 1 << 16
    heap, small = runner_buffers(session, words)
    _, caps, aps, err, slots = small
    kernel = session.cl.Kernel(session.program(GENERATED_EMPTY), "generated_empty")

    def launch() -> float:
        return event_seconds(kernel(queue, (1,), (1,), heap, *small, np.int64(1), np.int64(0)))

    def runner_copies() -> None:
        word = np.zeros(1, np.int64)
        cl.enqueue_copy(queue, np.zeros(1, np.int32), err).wait()
        cl.enqueue_copy(queue, word, slots, src_offset=8).wait()
        cl.enqueue_copy(queue, word, heap, src_offset=8 * 5).wait()
        cl.enqueue_copy(queue, np.zeros(4, np.int32), aps).wait()
        cl.enqueue_copy(queue, caps, np.array([words // 2], np.int32)).wait()

    print(f"device: {session.info.describe()}; generated empty kernel, one work item; medians "
          f"of {args.runs}")
    cases: list[tuple[str, object]] = [(f"gap {g:>5} µs", g * 1e-6) for g in GAPS_US]
    cases.append(("runner's 5 copies", runner_copies))
    for label, before in cases:
        samples, gaps = [], []
        for run in range(args.runs + 2):
            launch()
            start = time.perf_counter()
            if callable(before):
                before()
            else:
                spin(float(before))  # type: ignore[arg-type]
            gaps.append(time.perf_counter() - start)
            seconds = launch()
            if run >= 2:
                samples.append(seconds)
        print(f"{label:<18} host gap {statistics.median(gaps) * 1e6:7.1f} µs  launch median "
              f"{statistics.median(samples) * 1e6:6.2f} µs, fastest {min(samples) * 1e6:5.2f}",
              flush=True)


if __name__ == "__main__":
    main()
