"""`hetprof devices`, `run --device`, `calibrate`, `validate` and `validate-rewrites`: the OpenCL
side of hetprof."""

from __future__ import annotations

import argparse
import sys

from cli import calibration
from cli.common import EXIT_OK, EXIT_PROGRAM_ERROR, SourceHolder
from graphs.analysis import location
from graphs.semantics.explicit import OffloadCollector
from models.opencl.runner import DeviceSession, list_devices, run_offload, select_device
from profiler.checker import CheckedProgram


def register(commands, add_common, add_model_options) -> None:
    devices = commands.add_parser("devices", help="list the OpenCL platforms and devices")
    devices.set_defaults(handler=command_devices)

    calibrate = commands.add_parser(
        "calibrate", help="measure a device with microbenchmarks and write a device profile")
    calibrate.add_argument("--device", required=True, help="index or part of a device's name")
    calibrate.add_argument("-o", "--output", required=True, help="the profile to write (JSON)")
    calibrate.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    calibrate.add_argument("--cpu-device", help="the OpenCL CPU device that stands for the "
                           "CPU world (default: the first CPU device, e.g. PoCL)")
    calibrate.set_defaults(handler=calibration.command_calibrate)

    validate = commands.add_parser(
        "validate", help="compare predicted with measured times on real devices")
    validate.add_argument("programs", nargs="*", help="λG programs (default: every example)")
    validate.add_argument("--device", required=True, help="the GPU (or any OpenCL device)")
    validate.add_argument("--device-profile", required=True, help="a calibrated profile")
    validate.add_argument("--cpu-device", help="the OpenCL CPU device for the CPU placement")
    validate.add_argument("--sizes", help="comma-separated sizes n (default: 2^10 ... 2^24 "
                          "where memory allows; --quick: a few small ones)")
    validate.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    validate.add_argument("--gpu-mode", choices=("paper", "dmm"),
                          help="GPU memory model (default: the profile's)")
    validate.add_argument("--compare-profile", action="append", metavar="FILE.json",
                          help="also predict kernels with this profile (e.g. the other GPU "
                          "mode's fit) and report its errors")
    validate.add_argument("--parts", default="programs,transfers,conflicts",
                          help="what to validate: programs, transfers, conflicts (comma-separated)")
    validate.add_argument("--format", choices=("text", "json"), default="text")
    validate.add_argument("-o", "--output", help="write the report here")
    validate.set_defaults(handler=calibration.command_validate)

    rewrites = commands.add_parser(
        "validate-rewrites", help="compare predicted with measured speedups of rewrites on real "
        "devices")
    rewrites.add_argument("programs", nargs="*", help="λG programs (default: the examples with "
                          "device work)")
    rewrites.add_argument("--device", required=True, help="the GPU (or any OpenCL device)")
    rewrites.add_argument("--device-profile", required=True, help="a calibrated profile")
    rewrites.add_argument("--cpu-device", help="the OpenCL CPU device for CPU parmaps")
    rewrites.add_argument("--sizes", help="comma-separated sizes n (default: 2^10, 2^12, 2^14; "
                          "--quick: 2^6)")
    rewrites.add_argument("--rules", help="comma-separated rule names (default: every rule the "
                          "backend can run)")
    rewrites.add_argument("--rewrite", action="append", metavar="NAME@LINE:COL",
                          help="validate only this rewrite (repeatable; instead of --rules)")
    rewrites.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    rewrites.add_argument("--gpu-mode", choices=("paper", "dmm"),
                          help="GPU memory model (default: the profile's)")
    rewrites.add_argument("--format", choices=("json", "markdown"), default="markdown")
    rewrites.add_argument("-o", "--output", help="write the report here")
    rewrites.set_defaults(handler=calibration.command_validate_rewrites)


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
