"""What every `hetprof` sub-command shares: exit codes, usage errors, reading the source, the
command-line parameters and model options, the evaluation options built from them, and writing a
report. Imported by every other module of cli/; imports none of them."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphs.semantics.options import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_GRAPH,
    DEFAULT_MAX_STEPS,
    EvaluationOptions,
)
from models.device_profile import (
    MAX_PARAMETER,
    PAPER_PROFILE,
    DeviceProfile,
    in_abstract_units,
    load_profile,
)
from profiler.checker import CheckedProgram, check_program
from profiler.errors import ParameterError, ParseError
from profiler.parser import parse
from profiler.syntax import Span

if TYPE_CHECKING:
    from graphs.semantics.explicit import OffloadObserver

EXIT_OK, EXIT_PROGRAM_ERROR, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A command line or file problem: exit 2."""


def read_source(path: str) -> str:
    """The text of a λG file. Unreadable: UsageError. Not UTF-8: a ParseError at the bad byte."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory, not a λG file") from None
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise ParseError(f"the file is not UTF-8 text (byte 0x{data[error.start]:02x}): is it a "
                         "binary file?", Span(path, line, column, line, column + 1)) from None


class SourceHolder:
    """The source text of the file being processed, for error messages with a caret."""

    def __init__(self) -> None:
        self.text: str | None = None

    def read(self, path: str) -> str:
        self.text = None
        self.text = read_source(path)
        return self.text


def load_checked(path: str, holder: SourceHolder) -> CheckedProgram:
    """Read, parse and check a λG file (the caret of any error comes from `holder`)."""
    source = holder.read(path)
    return check_program(parse(source, path))


MAX_SIZE = 10**18
"""The largest size (--param, --sizes, --max-n) hetprof takes: symbolic profiles evaluate their
formulas at any size, and costs must stay far from float overflow."""

_INTEGER = re.compile(r"(?P<base>[0-9]+)\*\*(?P<power>[0-9]+)"
                      r"|(?P<mantissa>[0-9]+(?:\.[0-9]*)?)[eE]\+?(?P<exponent>[0-9]+)"
                      r"|(?P<plain>[0-9]+)")


def parse_integer(text: str) -> int:
    """An integer as the README writes sizes: 1000000, 1_000_000, 10**9, 2**20, 1e9 or 2.5e3 (a
    whole number), optionally negative, in ASCII digits, at most MAX_SIZE in size. ValueError
    says what is wrong."""
    shown = repr(text if len(text) <= 30 else text[:27] + "...")
    compact = text.strip().replace("_", "")
    negative = compact.startswith("-")
    match = _INTEGER.fullmatch(compact[1:] if compact[:1] in ("-", "+") else compact)
    if match is None:
        raise ValueError(f"{shown} is not an integer (write e.g. 1000000, 1_000_000, 10**6 or "
                         "1e6, in ASCII digits)")
    too_large = ValueError(f"{shown} is too large (at most 10**18)")
    if match["plain"] is not None:
        if len(match["plain"].lstrip("0")) > 19:
            raise too_large
        value = int(match["plain"])
    elif match["base"] is not None:
        base = int(match["base"]) if len(match["base"].lstrip("0")) <= 19 else MAX_SIZE + 1
        power = int(match["power"]) if len(match["power"].lstrip("0")) <= 4 else 10**4
        if base > 1 and power > 64:  # 2**64 is past MAX_SIZE already
            raise too_large
        value = base**power
    else:
        exponent = match["exponent"].lstrip("0") or "0"
        number = Decimal(f"{match['mantissa']}e{exponent if len(exponent) <= 4 else 10**4}")
        if number and number.adjusted() > 18:
            raise too_large
        if number != number.to_integral_value():
            raise ValueError(f"{shown} is not a whole number")
        value = int(number)
    if value > MAX_SIZE:
        raise too_large
    return -value if negative else value


def count_argument(text: str) -> int:
    """argparse's type for a count of at least 1 written as `parse_integer` reads it (a usage
    error otherwise)."""
    try:
        value = parse_integer(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def graph_size_argument(text: str) -> int:
    """argparse's type for --max-graph-size: a count (`count_argument`) of at most
    `graphs.costgraph.MAX_GRAPH_SIZE`, since the graph numbers its nodes and edges in 32 bits."""
    from graphs.costgraph import MAX_GRAPH_SIZE

    value = count_argument(text)
    if value > MAX_GRAPH_SIZE:
        raise argparse.ArgumentTypeError(
            f"{text!r}: at most {MAX_GRAPH_SIZE:,} (an explicit cost graph numbers its nodes and "
            "edges in 32 bits, and one that size would need hundreds of GB; --symbolic profiles "
            "any size)")
    return value


def parse_params(items: list[str] | None) -> dict[str, int]:
    """`--param NAME=VALUE` options as a dict (VALUE as `parse_integer` reads it); a parameter
    given twice is an error."""
    params: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"--param {item!r}: write NAME=VALUE, e.g. --param n=1024")
        if name in params:
            raise ParameterError(f"--param {name} is given twice ({name}={params[name]} and "
                                 f"{item.strip()}): give each parameter once")
        try:
            params[name] = parse_integer(value)
        except ValueError as why:
            raise ParameterError(f"--param {item!r}: {why}") from None
    return params


def parse_sizes(text: str) -> list[int]:
    """--sizes N1,N2,...: the sizes (each as `parse_integer` reads it), sorted, none negative."""
    try:
        sizes = sorted({parse_integer(item) for item in text.split(",") if item.strip()})
    except ValueError as why:
        raise ParameterError(f"--sizes {text!r}: write integers separated by commas, e.g. "
                             f"64,256,1024 or 2**10,2**20 ({why})") from None
    if not sizes or sizes[0] < 0:
        raise ParameterError(f"--sizes {text!r}: give at least one size, none negative")
    return sizes


def device_profile(args: argparse.Namespace) -> DeviceProfile:
    """The profile of --device-profile (or the default, or under --rules paper the paper
    preset's), with command-line overrides."""
    if args.device_profile:
        profile = load_profile(args.device_profile)
    else:
        profile = PAPER_PROFILE if getattr(args, "rules", None) == "paper" else DeviceProfile()
    units = getattr(args, "units", None)
    if units == "seconds" and profile.units != "seconds":
        raise ParameterError(f"--units seconds: the profile ({profile.name}) is in abstract "
                             "units; give a calibrated one with --device-profile (`hetprof "
                             "calibrate` measures one)")
    if units == "abstract":
        profile = in_abstract_units(profile)
    gpu_changes = {}
    for option, name in (("warp_width", "warp_width"), ("work_group_size", "work_group_size"),
                         ("global_latency", "global_latency"), ("banks", "banks"),
                         ("threads_at_once", "threads_at_once"), ("gpu_mode", "mode"),
                         ("lockstep", "lockstep")):
        value = getattr(args, option, None)
        if value is not None:
            if not isinstance(value, str):
                _check_model_option(option, value)
            gpu_changes[name] = value
    if gpu_changes:
        profile = profile.with_gpu(**gpu_changes)
    if profile.gpu.work_group_size % profile.gpu.warp_width:
        raise ParameterError(f"the work-group size ({profile.gpu.work_group_size}) must be a "
                             f"multiple of the warp width ({profile.gpu.warp_width})")
    if getattr(args, "bsize", None) is not None:
        _check_model_option("bsize", args.bsize)
        profile = replace(profile, region=replace(profile.region, bsize=args.bsize))
    if getattr(args, "growth_as_write", False):
        from models.opencl.predict import growth_as_write  # sympy and the symbolic profile

        profile = replace(growth_as_write(profile),
                          name=f"{profile.name}; a region's growth priced as a write")
    return profile


def _check_model_option(option: str, value: float) -> None:
    """A model parameter from the command line: finite, from 1 to the profile's bound (costs are
    sums of products of parameters and counts, and must stay far from float overflow)."""
    if not 1 <= value <= MAX_PARAMETER:  # false for NaN; an int compares exactly
        shown = (f"{value:g}" if isinstance(value, float) or abs(value) < 10**20
                 else f"an integer of {len(str(abs(value)))} digits")
        raise ParameterError(f"--{option.replace('_', '-')} must be a finite number from 1 to "
                             f"10^15, not {shown}")


def evaluation_options(args: argparse.Namespace, observer: OffloadObserver | None = None,
                       profile: DeviceProfile | None = None) -> EvaluationOptions:
    """The evaluation options of a command line: the device profile and GPU mode, the step and
    depth limits (--max-steps, --max-depth), the memory budget (--max-graph-size), NoExpandWE
    (--strict-gpu-regions) and the rule set (--rules; graphs.semantics.options)."""
    for name in ("max_steps", "max_depth", "max_graph_size"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be at least 1")
    return EvaluationOptions(
        profile=profile if profile is not None else device_profile(args),
        gpu_mode=args.gpu_mode,
        max_steps=getattr(args, "max_steps", None) or DEFAULT_MAX_STEPS,
        max_depth=getattr(args, "max_depth", None) or DEFAULT_MAX_DEPTH,
        max_graph=getattr(args, "max_graph_size", None) or DEFAULT_MAX_GRAPH,
        grow_gpu_regions=not args.strict_gpu_regions,
        observer=observer,
        rules=getattr(args, "rules", None),
    )


MAX_PLOTTED_PROCS = 1024  # --max-procs: the speedup plot schedules the graph once per P


def check_procs(args: argparse.Namespace) -> None:
    """--procs (and --max-procs where the command has it) must be at least 1; --max-procs at
    most MAX_PLOTTED_PROCS. Any --procs is taken: the schedule uses no more processors than the
    graph's width (graphs.schedule.WIDTH_CHECKED) and the report says so."""
    for name in ("procs", "max_procs"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be at least 1")
    max_procs = getattr(args, "max_procs", None)
    if max_procs is not None and max_procs > MAX_PLOTTED_PROCS:
        raise ParameterError(f"--max-procs must be at most {MAX_PLOTTED_PROCS} (the speedup plot "
                             "schedules the program once for each P)")


def replace_args(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    """A copy of the parsed command line with some options changed."""
    values = vars(args).copy()
    values.update(changes)
    return argparse.Namespace(**values)


def write_output(content: str | bytes, output: str | None) -> None:
    """Write a report to a file, or to stdout when no file is given."""
    if output == "":
        raise UsageError("the output path is empty (-o \"\"): give a file name")
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
    print(f"hetprof: wrote {output}", file=sys.stderr)


SUFFIX_FORMATS = ((".trace.json", "trace"), (".speedscope.json", "speedscope"),
                  (".cilkscale.csv", "cilkscale"), (".json", "json"), (".csv", "csv"),
                  (".dot", "dot"), (".gv", "dot"), (".html", "html"), (".htm", "html"))
"""`profile -o FILE` without --format: the format its name says (pyinstrument's habit)."""


def format_for(output: str | None) -> str:
    """The report format a file name asks for; text where it names none."""
    name = (output or "").lower()
    return next((fmt for suffix, fmt in SUFFIX_FORMATS if name.endswith(suffix)), "text")
