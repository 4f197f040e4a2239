"""`hetprof devices`, `run --device`, `calibrate`, `validate` and `validate-rewrites`: the OpenCL
side of hetprof."""

from __future__ import annotations

import argparse
import sys

from cli.common import EXIT_OK, EXIT_PROGRAM_ERROR, SourceHolder
from graphs.analysis import location
from graphs.semantics.explicit import OffloadCollector
from models.opencl.runner import DeviceSession, list_devices, run_offload, select_device
from profiler.checker import CheckedProgram


def command_devices(args: argparse.Namespace, holder: SourceHolder) -> int:
    devices = list_devices()
    if not devices:
        print("no OpenCL device found (hetprof installs PoCL, a CPU device, with its "
              "dependencies; a GPU needs its vendor's OpenCL driver)", file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    for d in devices:
        print(f"{d.index}: {d.platform} ({d.platform_version}) / {d.name} [{d.type}] "
              f"{d.compute_units} compute units, {d.global_memory // 2**20} MiB global, "
              f"{d.local_memory // 1024} KiB local, work groups up to {d.max_work_group_size}")
    return EXIT_OK


def run_on_device(args: argparse.Namespace, checked: CheckedProgram, params: dict[str, int],
                  collector: OffloadCollector) -> int:
    """Run each offload of a program on the device and compare it with the interpreter."""
    info = select_device(args.device)
    if not collector.offloads:
        print(f"nothing to run on {info.describe()}: the program has no `on` and no parmap",
              file=sys.stderr)
        return EXIT_OK
    session = DeviceSession(info)
    failed = False
    for offload in collector.offloads:
        where = location(offload.node.span)
        run = run_offload(session, offload, checked.types, params, repeats=3, where=where)
        verdict = "matches the interpreter" if run.matches else "DIFFERS from the interpreter"
        print(f"{where} on {info.describe()}: {verdict}; transfer in "
              f"{run.transfer_in.median * 1e6:.1f} µs ({run.words_in} words), kernels "
              f"{run.kernel_total * 1e6:.1f} µs ({len(run.kernels)}), transfer out "
              f"{run.transfer_out.median * 1e6:.1f} µs ({run.words_out} words)")
        if not run.matches:
            failed = True
            print(f"  device: {str(run.value)[:200]}\n  interpreter: {str(run.expected)[:200]}")
    return EXIT_PROGRAM_ERROR if failed else EXIT_OK
