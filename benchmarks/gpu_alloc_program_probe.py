"""What one allocation costs a one-work-item λG loop, program by program, in one process (issue 14).

Run 21 (2026-11-29, card GPU-9540b2de) calibrated one thread's allocation at 304 ns, and the
suite's one-work-item loops split: serial_loop came out +0.3..+1.3% at all ten sizes, so its 13
allocations a step cost about that, while recurrence came out +27..+36% at all eight, as if its 7
cost about 200 ns. Each program ran in its own process, so either each process drew its own
place for the allocation pointers (as last session's probes suggested) or what an allocation
costs depends on what the rest of the step does. This probe tells the two apart: one process,
one session and so one pointer place, runs

- the calibration's own allocation chain (`measure_thread_allocation`) before and after;
- one thread's chains of 64-bit divisions, multiplications and additions (seconds per hop);
- the loops of `benchmarks/alloc_programs/*.lg` (a count-down, serial_loop's step without its
  modulus, with a division instead, recurrence's step without its read) and serial_loop and
  recurrence themselves, through `validate` at two sizes each: the kernel's slope per step.

The per-step slope, the model's per-step prediction (from the same profile) and the number of
allocations a step (from the cache model) are written to `--out`; what an allocation costs in
each program follows as (measured slope - predicted slope) / allocations + the profile's figure.
Nothing is fitted.

    python benchmarks/gpu_alloc_program_probe.py --profile P.json [--device nvidia] [--out F]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.main import _with_deep_stack  # noqa: E402  (deep recursions, as the CLI evaluates them)
from models.device_profile import load_profile  # noqa: E402
from models.opencl import validate  # noqa: E402
from models.opencl.calibrate_cache import _chain_latency, measure_thread_allocation  # noqa: E402
from models.opencl.runner import DeviceSession, list_devices, select_device  # noqa: E402

ARITHMETIC = """
__kernel void chain(__global long* out, const int hops, const long d, const long c) {
    long x = 0x7fffffffffffL;
    for (int h = 0; h < hops; h++) x = x OP d + c;
    out[0] = x;
}
"""
"""One thread's chain of 64-bit `x OP d + c`, d and c kernel arguments the compiler cannot see."""

PROGRAMS = [ROOT / "benchmarks" / "alloc_programs" / f"{name}.lg"
            for name in ("count", "lcg_nomod", "divide", "float_chain")] + [
    ROOT / "benchmarks" / "suite" / f"{name}.lg" for name in ("serial_loop", "recurrence")]


def arithmetic(session: DeviceSession, hops: int) -> dict[str, float]:
    """Seconds per hop of the chains of `/`, `*` and `+` (d = 3 and c = 1000003)."""
    out = {}
    for name, op in (("div", "/"), ("mul", "*"), ("add", "+")):
        seconds, _ = _chain_latency(session, ARITHMETIC.replace("OP", op), "chain",
                                    lambda: [np.zeros(1, np.int64)], hops, 5,
                                    [np.int64(3), np.int64(1000003)])
        out[name] = seconds
    return out


def kernel_slopes(report: dict) -> dict[str, dict]:
    """Per program, the kernel's measured and predicted seconds at each size and the slopes."""
    rows: dict[str, dict] = {}
    for case in report["cases"]:
        if case["part"] != "kernel":
            continue
        row = rows.setdefault(case["program"], {"n": [], "measured_s": [], "predicted_s": []})
        row["n"].append(case["n"])
        row["measured_s"].append(case["measured_s"])
        row["predicted_s"].append(case["predicted_s"])
    for row in rows.values():
        (n0, n1), (m0, m1), (p0, p1) = row["n"][:2], row["measured_s"][:2], row["predicted_s"][:2]
        row["measured_step_s"] = (m1 - m0) / (n1 - n0)
        row["predicted_step_s"] = (p1 - p0) / (n1 - n0)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--sizes", default="100,200")
    parser.add_argument("--hops", type=int, default=1024)
    parser.add_argument("--out", default="alloc-program-probe.json")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    session = DeviceSession(select_device(args.device))
    cpu_info = next(d for d in list_devices() if "CPU" in d.type)
    cpu_session = DeviceSession(cpu_info)
    place = session.pointer_place()
    result: dict = {"device": session.info.describe(), "pointer_place": list(place),
                    "profile_atomic_latency_s": profile.gpu.atomic_latency
                    * profile.gpu.seconds_per_unit}
    result["alloc_before_s"] = measure_thread_allocation(session)
    result["arithmetic_s"] = arithmetic(session, args.hops)
    sizes = [int(s) for s in args.sizes.split(",")]
    report = validate.validate(session, cpu_session, profile, [str(p) for p in PROGRAMS], sizes,
                               repeats=5, parts=("programs",))
    result["programs"] = kernel_slopes(report)
    result["alloc_after_s"] = measure_thread_allocation(session)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"place {place}; allocation chain {result['alloc_before_s'] * 1e9:.1f} ns before, "
          f"{result['alloc_after_s'] * 1e9:.1f} ns after; arithmetic (ns/hop): "
          + ", ".join(f"{k} {v * 1e9:.2f}" for k, v in result["arithmetic_s"].items()))
    for name, row in result["programs"].items():
        print(f"{name:12s} measured {row['measured_step_s'] * 1e6:7.3f} µs/step, "
              f"predicted {row['predicted_step_s'] * 1e6:7.3f} µs/step "
              f"({100 * (row['predicted_step_s'] / row['measured_step_s'] - 1):+.1f}%)")


if __name__ == "__main__":
    _with_deep_stack(main)
