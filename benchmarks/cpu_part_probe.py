"""Where a small CPU part's time goes (issue 15): the suite's launch-bound CPU parts (lookup,
sample, trace, nn, vecsum at small sizes) were measured 1.3-3x what the model predicts, on every
host, and most of each prediction is its kernels' launches (`launch_after_*_s`, measured on
kernels launched right after a copy). The backend's runner launches each kernel of an `on` after
a few blocking reads and writes of single words (the error flag, a vector's length, the
allocation pointers: `runner._run_once`), and the host spends tens of µs in Python between
kernels, while PoCL's worker threads wait on a condition variable.

Three parts, nothing fitted:
1. `idle`: an empty kernel with the generated code's arguments (`calibrate_cpu.EMPTY_COMMON`), of
   one work item and of one per compute unit, launched `launches` times each after the host
   busy-waited for a gap (0 µs to 5 ms) without calling OpenCL, and after the runner's pattern
   of blocking one-word copies (`steps`): the distribution of the profiled event times.
2. `sizes`: the empty kernel launched as a reduction's levels are (n halving, each after the
   runner's round trip), against the same launches at one n.
3. `parts`: chosen suite programs at chosen sizes validated as `hetprof validate` does (the GPU
   run, then the CPU part), with `--repeats` repeats instead of 7, printing every kernel's
   samples on each device, beside the prediction.

    python benchmarks/cpu_part_probe.py --device-profile P.json [--gpu nvidia] [--cpu pocl]
        [--launches 200] [--repeats 21] [PROGRAM=N[,N...] ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import models.opencl.runner as runner  # noqa: E402
from cli.main import _with_deep_stack  # noqa: E402
from models.device_profile import load_profile  # noqa: E402
from models.opencl.calibrate_cpu import EMPTY_COMMON  # noqa: E402
from models.opencl.runner import DeviceSession, event_seconds, select_device  # noqa: E402

GAPS_US = (0, 20, 50, 100, 200, 500, 1000, 5000)


def busy_wait(seconds: float) -> None:
    """Spin on the host's clock (no sleep: the host thread stays on its core)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def idle(session: DeviceSession, launches: int) -> list[dict]:
    """Part 1: rows of (items, gap or 'steps', the event times' quantiles in µs)."""
    cl = session.cl
    kernel = session.kernel(session.program(EMPTY_COMMON), "empty_common")
    sizes = (8 << 20, 32, 16, 16, 4, 128)
    buffers = [cl.Buffer(session.context, cl.mem_flags.READ_WRITE, size) for size in sizes]
    word = np.zeros(1, np.int64)
    flag = np.zeros(1, np.int32)
    units = max(1, session.info.compute_units)
    rows = []
    for items in (1, units):
        for gap in (*GAPS_US, "steps"):
            samples = []
            for run in range(launches + 2):
                if gap == "steps":  # runner._run_once before a map step: err, slot, word, aps
                    cl.enqueue_copy(session.queue, flag, buffers[4]).wait()
                    cl.enqueue_copy(session.queue, word, buffers[5]).wait()
                    cl.enqueue_copy(session.queue, word, buffers[0]).wait()
                    cl.enqueue_copy(session.queue, flag, buffers[3]).wait()
                    cl.enqueue_copy(session.queue, buffers[2], flag).wait()
                else:
                    busy_wait(gap * 1e-6)
                event = kernel(session.queue, (items,), (1,), *buffers)
                seconds = event_seconds(event)
                if run >= 2:
                    samples.append(seconds * 1e6)
            rows.append({"items": items, "gap_us": gap, **quantiles(samples)})
            print(f"idle items={items:<3} gap={gap!s:<6} " + show(rows[-1]), flush=True)
    return rows


def sizes(session: DeviceSession, rounds: int, levels: int = 10) -> list[dict]:
    """Part 3: the empty kernel launched as a reduction's levels are, each after the runner's
    allocation-pointer round trip (a blocking read and a blocking write), with the NDRange the
    runner gives n items (`DeviceSession.global_size`: one work group of up to the device's
    largest): n halving from 2^(levels-1) to 1, against the same launches all at one n (the
    first level's, and 1). Event times in µs, over `rounds` rounds."""
    cl = session.cl
    kernel = session.kernel(session.program(EMPTY_COMMON), "empty_common")
    buffers = [cl.Buffer(session.context, cl.mem_flags.READ_WRITE, size)
               for size in (8 << 20, 32, 16, 16, 4, 128)]
    word = np.zeros(4, np.int32)
    rows = []
    halving = [1 << k for k in range(levels - 1, -1, -1)]
    for label, counts in (("halving", halving), ("fixed first", [halving[0]] * levels),
                          ("fixed 1", [1] * levels)):
        samples = []
        for run in range(rounds + 1):
            for n in counts:
                cl.enqueue_copy(session.queue, word, buffers[3]).wait()
                cl.enqueue_copy(session.queue, buffers[2], word).wait()
                global_size, local_size = session.global_size(n)
                seconds = event_seconds(kernel(session.queue, global_size, local_size,
                                               *buffers))
                if run:
                    samples.append(seconds * 1e6)
        rows.append({"launches": label, **quantiles(samples)})
        print(f"sizes {label:<12} " + show(rows[-1]), flush=True)
    return rows


def quantiles(samples: list[float]) -> dict:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"n": len(ordered), "min": ordered[0], "p10": at(0.1), "median": statistics.median(
        ordered), "p90": at(0.9), "max": ordered[-1], "mean": statistics.fmean(ordered)}


def show(row: dict) -> str:
    return " ".join(f"{k} {row[k]:.1f}" for k in ("min", "p10", "median", "p90", "max", "mean"))


def parts(gpu: DeviceSession, cpu: DeviceSession, profile, cases: list[str],
          repeats: int, output: str | None = None, out: dict | None = None) -> list[dict]:
    """Part 2: each case validated as `hetprof validate` does, every kernel's samples kept (and
    `out` written to `output` after each, so that a run cut short keeps what it measured)."""
    from models.opencl.validate import validate

    original = runner.run_offload
    captured: list[dict] = []

    def run_offload(session, offload, types, params, repeats_=5, warmup=1, where="",
                    room=None, **_):
        run = original(session, offload, types, params, repeats=repeats, warmup=warmup,
                       where=where, room=room)
        captured.append({"device": "cpu" if session is cpu else "gpu",
                         "kernels": {name: [s * 1e6 for s in timing.samples]
                                     for name, timing in run.kernels.items()}})
        return run

    runner.run_offload = run_offload  # validate imports it from the module when it runs
    rows = []
    try:
        for case in cases:
            name, _, sizes = case.partition("=")
            path = ROOT / "benchmarks" / "suite" / f"{name}.lg"
            for size in (int(float(s)) for s in sizes.split(",")):
                captured.clear()
                try:
                    report = validate(gpu, cpu, profile, [str(path)], [size],
                                      parts=("programs",))
                except Exception as error:  # noqa: BLE001 (a probe: say what failed, go on)
                    print(f"part {name} n={size}: failed: {error}", flush=True)
                    continue
                predicted = {c["part"]: c["predicted_s"] * 1e6 for c in report["cases"]}
                measured = {c["part"]: c["measured_s"] * 1e6 for c in report["cases"]}
                row = {"program": name, "n": size, "predicted_us": predicted,
                       "measured_us": measured, "runs": list(captured), "report": report}
                rows.append(row)
                if output and out is not None:
                    Path(output).write_text(json.dumps({**out, "parts": rows}, indent=1))
                print(f"part {name} n={size}: cpu predicted {predicted.get('cpu', 0):.1f} "
                      f"measured {measured.get('cpu', 0):.1f} µs; kernel predicted "
                      f"{predicted.get('kernel', 0):.1f} measured {measured.get('kernel', 0):.1f}",
                      flush=True)
                for run in captured:
                    for kernel, samples in run["kernels"].items():
                        print(f"    {run['device']} {kernel:<10} " + show(quantiles(samples)),
                              flush=True)
    finally:
        runner.run_offload = original
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", metavar="PROGRAM=N[,N...]")
    parser.add_argument("--device-profile", required=True)
    parser.add_argument("--gpu", default="nvidia")
    parser.add_argument("--cpu", default="pocl")
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--skip-idle", action="store_true")
    parser.add_argument("-o", "--output", help="write the rows as JSON here")
    args = parser.parse_args()
    profile = load_profile(args.device_profile)
    gpu = DeviceSession(select_device(args.gpu))
    cpu = DeviceSession(select_device(args.cpu))
    print(f"# {cpu.info.describe()} beside {gpu.info.describe()}", flush=True)
    out: dict = {"cpu": cpu.info.describe(), "gpu": gpu.info.describe()}
    if not args.skip_idle:
        out["idle"] = idle(cpu, args.launches)
    out["sizes"] = sizes(cpu, args.launches // 10)
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=1))

    def measure() -> None:  # deep recursions, as the CLI evaluates them (cli.main)
        out["parts"] = parts(gpu, cpu, profile, args.cases, args.repeats, args.output, out)

    _with_deep_stack(measure)


if __name__ == "__main__":
    main()
