"""What one step of the backend's runner costs a small generated kernel (issue 14: the suite's
smallest kernels, one work item or a few, took 7-12 µs each on the H200 where an empty kernel
takes 4.6-6 µs and the cache mode prices one allocation and a store at about 0.3 µs).

Two kernels with the generated code's arguments (models/opencl/codegen.py's COMMON): `empty`
(calibrate_cache.GENERATED_EMPTY, what `calibrate` times as the launch) and `alloc`, whose first
work item makes one allocation with the generated code's ALLOC, stores into it and writes a slot
(what the backend's one-work-item kernels do, e.g. the suite's `serial1`). Each is timed by its
event (start to end, as the runner times kernels), the median of `--runs`, in three patterns:
- `alone`: launch, wait, launch, wait ...;
- `runner`: before each launch the runner's small blocking copies (read the error word, write
  the regions' capacities, read a slot: models/opencl/runner.py's `_run_once`);
- `after copy`: before each launch the heap (`--heap` words) and the small buffers copied in
  afresh;
- `new buffers`: before each launch every buffer made anew as the runner makes them for each run
  of an `on` (the heap cleared by a fill, the small ones made from host memory, COPY_HOST_PTR).
Nothing is fitted.

    python benchmarks/gpu_step_launch_probe.py [--device nvidia] [--runs 41] [--heap 65536]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import GENERATED_EMPTY  # noqa: E402
from models.opencl.codegen import PRELUDE  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

STEP_ALLOC = PRELUDE + """
__kernel void step_alloc(COMMON, const long n, const long out) {
    if (get_global_id(0) == 0) { long p = ALLOC(0, 1); heap[p] = n; slots[1] = p; }
}
"""


def small_buffers(session, words: int) -> tuple[list[np.ndarray], list]:
    """The runner's small buffers for a heap of `words` words (bases, capacities, allocation
    pointers, the error word, slots), made from host arrays as the runner makes them (a region
    of half the heap): (the host arrays, the buffers)."""
    cl = session.cl
    small_host = [np.zeros(4, np.int64), np.array([words // 2], np.int32), np.zeros(4, np.int32),
                  np.zeros(1, np.int32), np.zeros(8, np.int64)]
    small = [cl.Buffer(session.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=a) for a in small_host]
    return small_host, small


def runner_buffers(session, words: int) -> tuple[Any, list]:
    """A heap of `words` words holding 0, 1, 2, ... and the runner's small buffers for it
    (`small_buffers`): (the heap, the small buffers)."""
    cl = session.cl
    heap = cl.Buffer(session.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.arange(words, dtype=np.int64))
    return heap, small_buffers(session, words)[1]


def runner_copies(session, words: int, small: list) -> None:
    """The runner's small blocking copies before a step (models/opencl/runner.py's `_run_once`):
    read the error word, write the capacities, read a slot."""
    cl, queue = session.cl, session.queue
    _, caps, _, err, slots = small
    cl.enqueue_copy(queue, np.zeros(1, np.int32), err).wait()
    cl.enqueue_copy(queue, caps, np.array([words // 2], np.int32)).wait()
    cl.enqueue_copy(queue, np.zeros(1, np.int64), slots).wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--heap", type=int, default=1 << 16, help="heap words")
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, context, queue = session.cl, session.context, session.queue
    flags = cl.mem_flags
    words = args.heap
    heap_host = np.arange(1, words + 1, dtype=np.int64)
    heap = cl.Buffer(context, flags.READ_WRITE, 8 * words)
    small_host, small = small_buffers(session, words)
    kernels = {"empty": session.kernel(session.program(GENERATED_EMPTY), "generated_empty"),
               "alloc": session.kernel(session.program(STEP_ALLOC), "step_alloc")}
    print(f"device: {session.info.describe()}; heap {words:,} words; medians of {args.runs}")

    def copies() -> None:
        runner_copies(session, words, small)

    def copy_in() -> None:
        cl.enqueue_copy(queue, heap, heap_host).wait()
        for buffer, host in zip(small, small_host, strict=True):
            cl.enqueue_copy(queue, buffer, host).wait()

    fresh: list = []

    def new_buffers() -> None:
        made = cl.Buffer(context, flags.READ_WRITE, 8 * words)
        cl.enqueue_fill_buffer(queue, made, np.int64(0), 0, 8 * words).wait()
        fresh[:] = [made] + [cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                                       hostbuf=a) for a in small_host]

    for pattern, before in (("alone", None), ("runner", copies), ("after copy", copy_in),
                            ("new buffers", new_buffers)):
        row = []
        for name, kernel in kernels.items():
            samples = []
            for run in range(args.runs + 1):
                if before is not None:
                    before()
                buffers = fresh if pattern == "new buffers" else [heap, *small]
                event = kernel(queue, (1,), (1,), *buffers, np.int64(7), np.int64(0))
                seconds = event_seconds(event)
                if run:
                    samples.append(seconds)
            row.append(f"{name} {statistics.median(samples) * 1e6:6.2f} µs (fastest "
                       f"{min(samples) * 1e6:5.2f})")
        print(f"{pattern:<12} " + ", ".join(row), flush=True)
    check = np.zeros(8, np.int64)
    cl.enqueue_copy(queue, check, small[4]).wait()
    got = np.zeros(1, np.int64)
    cl.enqueue_copy(queue, got, heap, src_offset=8 * int(check[1])).wait()
    if int(got[0]) != 7:
        raise RuntimeError("the allocating kernel stored a wrong value")


if __name__ == "__main__":
    main()
