"""`hetprof calibrate`, `validate` and `validate-rewrites`: rich progress, tables of fits and of
cases."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.common import EXIT_OK, SourceHolder, UsageError, parse_sizes, write_output
from graphs.numbers import json_text
from models.device_profile import load_profile, save_profile
from models.opencl import validate, validate_rewrites
from models.opencl.calibrate import calibrate
from models.opencl.runner import DeviceSession, list_devices, select_device


def _console() -> Console:
    return Console(file=sys.stderr, width=110)


def _sessions(args: argparse.Namespace):
    """The device of --device and a session on it, and one on --cpu-device (default: the first
    OpenCL CPU device, e.g. PoCL; the device itself if there is none)."""
    info = select_device(args.device)
    if args.cpu_device:
        cpu_info = select_device(args.cpu_device)
    else:
        cpu_info = next((d for d in list_devices() if "CPU" in d.type), info)
    session = DeviceSession(info)
    cpu_session = session if cpu_info == info else DeviceSession(cpu_info)
    return info, session, cpu_session


def command_calibrate(args: argparse.Namespace, holder: SourceHolder) -> int:
    info, session, cpu_session = _sessions(args)
    console = _console()
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(f"calibrating {info.describe()}", total=1.0)

        def report(label: str, done: float) -> None:
            progress.update(task, completed=done, description=f"calibrating: {label}")

        result = calibrate(session, cpu_session, quick=args.quick, progress=report)
    save_profile(result.profile, args.output)
    stem = args.output[:-5] if args.output.endswith(".json") else args.output
    for mode, mode_profile in result.per_mode.items():
        save_profile(mode_profile, f"{stem}.{mode}.json")
    fits = json_text({"device": info.describe(), "fits": [f.to_json() for f in result.fits],
                      "mode_errors": result.mode_errors})
    with open(f"{stem}.fits.json", "w", encoding="utf-8") as out:
        out.write(fits)
    table = Table(title=f"Calibration of {info.describe()}", header_style="bold")
    for column in ("fit", "parameters", "points", "mean |error|", "max |error|"):
        table.add_column(column)
    for fit in result.fits:
        parameters = ", ".join(f"{k}={v:.4g}" for k, v in fit.parameters.items())
        table.add_row(fit.name, parameters, str(len(fit.points)),
                      f"{fit.mean_abs_pct_error:.1f}%", f"{fit.max_abs_pct_error:.1f}%")
    console.print(table)
    modes = ", ".join(f"{m}: {100 * e:.1f}%" for m, e in sorted(result.mode_errors.items()))
    console.print(f"GPU memory model fit (mean |error|): {modes}; default: "
                  f"{result.profile.gpu.mode}")
    others = ", ".join(f"{stem}.{mode}.json" for mode in result.per_mode)
    console.print(f"wrote {args.output} (and each mode's own fit: {others})")
    return EXIT_OK


def command_validate(args: argparse.Namespace, holder: SourceHolder) -> int:
    profile = load_profile(args.device_profile)
    sizes = parse_sizes(args.sizes) if args.sizes else None
    info, session, cpu_session = _sessions(args)
    compare = [load_profile(p) for p in args.compare_profile or []]
    console = _console()
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("validating", total=1.0)

        def report(label: str, done: float) -> None:
            progress.update(task, completed=done, description=f"validating: {label}")

        report_data = validate.validate(session, cpu_session, profile, args.programs or None, sizes,
                               quick=args.quick, repeats=args.repeats, gpu_mode=args.gpu_mode,
                               holder=holder,
                               progress=report, compare=compare,
                               parts=tuple(p.strip() for p in args.parts.split(",")),
                               inputs=args.inputs, predictions=args.predictions,
                               draw=args.allocation_draw)
    if args.format == "json":
        write_output(json_text(report_data) + "\n", args.output)
    else:
        write_output(validate.render_markdown(report_data), args.output)
    return EXIT_OK


def command_validate_rewrites(args: argparse.Namespace, holder: SourceHolder) -> int:
    profile = load_profile(args.device_profile)
    rules = (tuple(r.strip() for r in args.rules.split(",")) if args.rules
             else validate_rewrites.RULES)
    unknown = sorted(set(rules) - set(validate_rewrites.RULES))
    if unknown:
        raise UsageError(f"--rules: no rule {', '.join(unknown)}; the rules are "
                         + ", ".join(validate_rewrites.RULES))
    sizes = parse_sizes(args.sizes) if args.sizes else None
    info, session, cpu_session = _sessions(args)
    console = _console()
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task("validating rewrites", total=1.0)

        def report(label: str, done: float) -> None:
            progress.update(task, completed=done, description=f"validating rewrites: {label}")

        report_data = validate_rewrites.validate_rewrites(session, cpu_session, profile, args.programs or None,
                                        rules, sizes, quick=args.quick, repeats=args.repeats,
                                        gpu_mode=args.gpu_mode,
                                        keys=args.rewrite, holder=holder, progress=report,
                                        draw=args.allocation_draw)
    if args.format == "json":
        write_output(json_text(report_data) + "\n", args.output)
    else:
        write_output(validate_rewrites.render_markdown(report_data), args.output)
    console.print(f"{report_data['case_count']} cases: direction right in "
                  f"{100 * report_data['direction_accuracy']:.1f}%, median speedup error "
                  f"{report_data['speedup_median_abs_pct_error']:.1f}%")
    return EXIT_OK
