"""Whether the page walks after a copy are paid by the first kernel whatever comes between, and
by how many pages it touches (issue 14: on the H200 the calibration's walk at 64-128 MiB heaps,
12-16 µs, is 3-6 times what the suite's sample and lookup paid at those heaps, 2-4 µs, so both
came out 20-55% over at 2^19 words and up).

The calibration's microbenchmark (models/opencl/calibrate_cache.py's `measure_page_walks`)
copies a buffer in and at once times one warp reading 32 words spread evenly over it, then the
same kernel again: the first less the second. The backend's runner (models/opencl/runner.py's
`_run_once`) fills the heap on the device first, copies the regions' used words in, and then
reads a word back (its error flag) before the first kernel. Here, for buffers of 2^k bytes, the
first-less-second of the same spread-reads kernel after each of these sequences:

- `copy`: the calibration's (copy, kernel, kernel);
- `copy, read`: a one-word read from another buffer between the copy and the kernel;
- `fill, copy, read`: the runner's order;
- `copy, 8 lanes` and `copy, 1 lane`: the calibration's, the kernel reading 8 or 1 spread words;
- `pinned copy`: the copy from page-locked host memory, as the runner copies;
- `new buffer, copy`: a buffer created for the run, as the runner creates its heap each run;
- `new buffer, fill, pinned copy, read`: all of the runner's sequence.

The median over `--runs` runs (the first of each sequence dropped as a warm-up). Nothing is
fitted.

    python benchmarks/gpu_walk_sequence_probe.py [--device nvidia] [--runs 7] [--sizes 21,24,26]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.opencl.calibrate_cache import SPREAD_READS, WALK_LANES  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

SEQUENCES = ("copy", "copy, read", "fill, copy, read", "copy, 8 lanes", "copy, 1 lane",
             "pinned copy", "new buffer, copy", "new buffer, fill, pinned copy, read")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="16,21,24,26,27,28",
                        help="log2 of the buffers' bytes, comma-separated")
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    cl, context, queue = session.cl, session.context, session.queue
    print(f"device: {session.info.describe()}", flush=True)
    kernel = session.kernel(session.program(SPREAD_READS), "spread_reads")
    out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8 * WALK_LANES)
    flag = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
    word = np.zeros(1, np.int64)
    print("bytes | " + " | ".join(SEQUENCES) + "  (µs: first kernel less the second, median)")
    for k in map(int, args.sizes.split(",")):
        size = 1 << k
        words = size // 8
        data = np.arange(1, words + 1, dtype=np.int64)
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, size)
        pinned = session.pinned(words)
        pinned[:] = data
        row = []
        for sequence in SEQUENCES:
            lanes = 8 if "8 lanes" in sequence else 1 if "1 lane" in sequence else WALK_LANES
            step = np.int64(words // lanes)
            walks = []
            for _ in range(args.runs + 1):
                target = buffer
                if sequence.startswith("new buffer"):
                    target = cl.Buffer(context, cl.mem_flags.READ_WRITE, size)
                if "fill" in sequence:
                    cl.enqueue_fill_buffer(queue, target, np.int64(0), 0, size).wait()
                cl.enqueue_copy(queue, target, pinned if "pinned" in sequence else data).wait()
                if "read" in sequence:
                    cl.enqueue_copy(queue, word, flag).wait()
                first = event_seconds(kernel(queue, (lanes,), (lanes,), target, out, step))
                again = event_seconds(kernel(queue, (lanes,), (lanes,), target, out, step))
                walks.append(first - again)
                if target is not buffer:
                    target.release()
            row.append(statistics.median(walks[1:]))
        buffer.release()
        session.release_pinned()
        print(f"2^{k} | " + " | ".join(f"{w * 1e6:6.2f}" for w in row), flush=True)


if __name__ == "__main__":
    main()
