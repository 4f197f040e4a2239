"""One function per `hetprof` sub-command: read, run the pipeline, render, print."""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

from cli.main import EXIT_OK, SourceHolder, UsageError, parse_params
from graphs.analysis import analyse
from graphs.render_text import TextRenderer
from graphs.renderers import RENDERERS
from models.device_profile import DeviceProfile, load_profile
from profiler.checker import CheckedProgram, check_program
from profiler.errors import ParameterError
from profiler.evaluator import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_STEPS,
    Evaluation,
    EvaluationOptions,
    OffloadObserver,
    bind_parameters,
    evaluate,
)
from profiler.parser import parse


def load_checked(path: str, holder: SourceHolder) -> CheckedProgram:
    source = holder.read(path)
    return check_program(parse(source, path))


def device_profile(args: argparse.Namespace) -> DeviceProfile:
    """The profile of --device-profile (or the default), with command-line overrides."""
    profile = load_profile(args.device_profile) if args.device_profile else DeviceProfile()
    gpu_changes = {}
    for option, name in (("warp_width", "warp_width"), ("work_group_size", "work_group_size"),
                         ("global_latency", "global_latency"), ("banks", "banks"),
                         ("threads_at_once", "threads_at_once"), ("gpu_mode", "mode")):
        value = getattr(args, option, None)
        if value is not None:
            if not isinstance(value, str) and not (math.isfinite(value) and value >= 1):
                raise ParameterError(f"--{option.replace('_', '-')} must be a finite number of at "
                                     "least 1")
            gpu_changes[name] = value
    if gpu_changes:
        profile = profile.with_gpu(**gpu_changes)
    if profile.gpu.work_group_size % profile.gpu.warp_width:
        raise ParameterError(f"the work-group size ({profile.gpu.work_group_size}) must be a "
                             f"multiple of the warp width ({profile.gpu.warp_width})")
    if getattr(args, "bsize", None) is not None:
        if args.bsize < 1:
            raise ParameterError("--bsize must be at least 1")
        profile = replace(profile, region=replace(profile.region, bsize=args.bsize))
    return profile


def run_program(args: argparse.Namespace, holder: SourceHolder,
                observer: OffloadObserver | None = None) -> tuple[
        CheckedProgram, dict[str, int], Evaluation, DeviceProfile]:
    checked = load_checked(args.file, holder)
    params = bind_parameters(checked, parse_params(args.param))
    profile = device_profile(args)
    for name in ("max_steps", "max_depth"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be at least 1")
    options = EvaluationOptions(
        profile=profile,
        gpu_mode=args.gpu_mode,
        max_steps=args.max_steps or DEFAULT_MAX_STEPS,
        max_depth=args.max_depth or DEFAULT_MAX_DEPTH,
        grow_gpu_regions=not args.strict_gpu_regions,
        observer=observer,
    )
    return checked, params, evaluate(checked, params, options), profile


def command_check(args: argparse.Namespace, holder: SourceHolder) -> int:
    checked = load_checked(args.file, holder)
    print(f"{args.file}: ok: {checked.type}")
    return EXIT_OK


def command_run(args: argparse.Namespace, holder: SourceHolder) -> int:
    observer = None
    if args.device:
        from profiler.evaluator import OffloadCollector

        observer = OffloadCollector()
    checked, params, evaluation, _ = run_program(args, holder, observer)
    print(evaluation.render_value(limit=64))
    for region in evaluation.regions.values():
        print(f"region {region.label}: {region.ap} words used, {region.size} words reserved")
    if observer is not None:
        from cli.opencl import run_on_device

        return run_on_device(args, checked, params, observer)
    return EXIT_OK


def command_profile(args: argparse.Namespace, holder: SourceHolder) -> int:
    if getattr(args, "symbolic", False):
        from cli.symbolic import command_symbolic_profile

        return command_symbolic_profile(args, holder)
    if args.procs < 1:
        raise ParameterError("--procs must be at least 1")
    checked, params, evaluation, profile = run_program(args, holder)
    result = analyse(
        evaluation, args.procs, args.schedule, file=args.file, params=params, body=checked.body,
        source=checked.program.source, units=profile.units, profile_name=profile.name,
        pictures=args.format != "text",
        seconds_per_unit={"cpu": profile.cpu.seconds_per_unit,
                          "gpu": profile.gpu.seconds_per_unit},
    )
    if args.format == "text":
        renderer = TextRenderer(color=args.output is None and sys.stdout.isatty())
    else:
        renderer = RENDERERS[args.format]()
    write_output(renderer.render(result), args.output)
    return EXIT_OK


def write_output(content: str | bytes, output: str | None) -> None:
    """Write a report to a file, or to stdout when no file is given."""
    if output is None:
        if isinstance(content, bytes):
            sys.stdout.buffer.write(content)
        else:
            sys.stdout.write(content)
        return
    try:
        if isinstance(content, bytes):
            Path(output).write_bytes(content)
        else:
            Path(output).write_text(content, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {output}: {error.strerror}") from None
