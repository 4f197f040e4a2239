"""Time and peak memory of `offload_inputs` (graphs/semantics/inputs.py), the inputs of an `on`
without the interpreter, at the sizes `hetprof validate` should reach (issue: vectors of
2^22-2^24 elements, matrices of 512²-2048²), and of laying them out as the device's heap.

    python benchmarks/fast_inputs.py [--objects] [--run] [program=n ...]

Each case runs in a fresh process; peak memory is that process's maximum resident set.
--objects also builds the interpreter's `Region`s (one Python object per value) from the images,
which is what the runner would otherwise lay out; --run also runs the offload on PoCL with the
room `estimate_room` gives (gemm's and blackscholes' room passes the backend's 32-bit allocation
pointers at the larger sizes, which the run reports as a device error)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ["gemm=512", "gemm=1024", "nn=1048576", "nn=4194304", "blackscholes=1048576",
         "blackscholes=4194304", "nn=16777216"]


def one(program: str, n: int, objects: bool, run: bool) -> None:
    from graphs.semantics.inputs import estimate_room, offload_inputs
    from models.opencl.runner import heap_image
    from models.opencl.validate import _variants
    from profiler.checker import check_program
    from profiler.parser import parse

    path = ROOT / "benchmarks" / "suite" / f"{program}.lg"
    gpu, _ = _variants(check_program(parse(path.read_text(), str(path))))
    start = time.perf_counter()
    (offload,) = offload_inputs(gpu, {"n": n})
    middle = time.perf_counter()
    words = len(heap_image(offload))
    end = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    room = estimate_room(gpu, lambda p: {"n": p}, n)
    after = time.perf_counter()
    line = (f"{program:13} n={n:<9} inputs {middle - start:6.2f} s  device heap "
            f"{end - middle:6.2f} s  {words / 1e6:6.1f} M words  peak {peak:5.2f} GB  "
            f"room {after - end:5.2f} s ({sum(room.values()) / 1e6:.0f} M words)")
    if objects:  # the same regions as the interpreter's Python objects, for comparison
        regions = [image.to_region() for image in offload.inputs.values()]
        line += (f"  | as Region objects {time.perf_counter() - after:6.2f} s, peak "
                 f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:5.2f} GB "
                 f"({sum(len(r.values) for r in regions) / 1e6:.1f} M values)")
    if run:  # the whole runner on PoCL (OpenCL on this CPU): fill, copy, kernels, read back
        from models.opencl.runner import DeviceSession, run_offload, select_device

        session = DeviceSession(select_device("pocl"))
        begin = time.perf_counter()
        done = run_offload(session, offload, gpu.types, {"n": n}, repeats=1, warmup=0,
                           room=room)
        line += (f"  | run_offload on PoCL {time.perf_counter() - begin:6.2f} s (kernels "
                 f"{done.kernel_total:.2f} s), peak "
                 f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:5.2f} GB")
    print(line, flush=True)


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "--one":
        program, n = argv[2].split("=")
        one(program, int(n), "--objects" in argv, "--run" in argv)
        return
    flags = [a for a in argv[1:] if a.startswith("--")]
    for case in [a for a in argv[1:] if not a.startswith("--")] or CASES:
        subprocess.run([sys.executable, __file__, "--one", case, *flags], check=False)


if __name__ == "__main__":
    main(sys.argv)
