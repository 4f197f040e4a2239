"""Whether a generated kernel's launch costs more inside the runner than alone (issue 14: the
suite's smallest kernels, 25-40 µs of mostly launches, were predicted 5-44% fast on the H200).

`calibrate` times a launch as an empty kernel with the generated kernels' arguments
(calibrate_cache.GENERATED_EMPTY), run again and again, each waited for. The runner
(models/opencl/runner.py's `run_offload`) does more between two kernels: it reads the error word
back, writes the regions' capacities and reads a slot, each a small blocking copy. This times the
same empty kernel's event (start to end, as the runner times each kernel) after each pattern, on
heaps of several sizes:
- `alone`: launch, wait, launch, wait ... (what `calibrate` measures);
- `runner`: before each launch, the runner's three small blocking copies.
Nothing is fitted: it prints the median and the fastest event per pattern and heap.

    python benchmarks/gpu_launch_probe.py [--device nvidia] [--runs 41]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import GENERATED_EMPTY  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

HEAP_WORDS = (1 << 10, 1 << 17, 1 << 24)  # 8 KiB, 1 MiB, 128 MiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--runs", type=int, default=41)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, context, queue = session.cl, session.context, session.queue
    kernel = session.kernel(session.program(GENERATED_EMPTY), "generated_empty")
    flags = cl.mem_flags
    print(f"device: {session.info.describe()}")
    for words in HEAP_WORDS:
        heap = cl.Buffer(context, flags.READ_WRITE, 8 * words)
        cl.enqueue_fill_buffer(queue, heap, np.int64(0), 0, 8 * words).wait()
        small = [cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=a)
                 for a in (np.zeros(4, np.int64), np.array([words], np.int32),
                           np.zeros(4, np.int32), np.zeros(1, np.int32), np.zeros(8, np.int64))]
        bases, caps, aps, err, slots = small
        args_ = (heap, bases, caps, aps, err, slots, np.int64(1), np.int64(0))

        def runner_copies(err=err, caps=caps, slots=slots, words=words) -> None:
            out = np.zeros(1, np.int32)
            cl.enqueue_copy(queue, out, err).wait()
            cl.enqueue_copy(queue, caps, np.array([words], np.int32)).wait()
            word = np.zeros(1, np.int64)
            cl.enqueue_copy(queue, word, slots).wait()

        for name, before in (("alone", None), ("runner", runner_copies)):
            samples = []
            for run in range(args.runs + 1):
                if before:
                    before()
                seconds = event_seconds(kernel(queue, (1,), (1,), *args_))
                if run:
                    samples.append(seconds)
            print(f"heap {8 * words // 1024:>7} KiB  {name:<7} median "
                  f"{statistics.median(samples) * 1e6:6.2f} µs, fastest {min(samples) * 1e6:6.2f} µs")


if __name__ == "__main__":
    main()
