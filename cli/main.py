"""The `hetprof` command. The only module that prints or exits.

Exit codes: 0 success; 1 the program (or a profile, a parameter, a device) is wrong, with a
`file:line:col` message and a caret; 2 a usage error or a file that cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable

from cli import commands, opencl, pictures, rewriting, symbolic
from cli.common import (
    EXIT_OK,
    EXIT_PROGRAM_ERROR,
    EXIT_USAGE,
    SourceHolder,
    UsageError,
    count_argument,
)
from graphs.renderers import RENDERERS
from graphs.semantics.options import DEFAULT_MAX_GRAPH
from profiler.errors import HetprofError, ParseError, format_error
from profiler.syntax import Span

STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 200_000


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the λG program (.lg)")
    parser.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="set a size parameter (repeatable)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop a program after this many evaluation steps")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="stop a program nested (recursing) deeper than this")
    parser.add_argument("--max-graph-size", type=count_argument, default=None, metavar="N",
                        help="refuse to build an explicit cost graph of more than N nodes and "
                        f"GPU steps (default {DEFAULT_MAX_GRAPH:,}, about 1-4 GB; --symbolic "
                        "profiles any size)")


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device-profile", metavar="FILE.json",
                        help="machine parameters (default: hetprof's profile in abstract units)")
    parser.add_argument("--gpu-mode", choices=("paper", "dmm"),
                        help="GPU memory model: Fig. 9 as written, or Nakano's DMM/UMM")
    parser.add_argument("--warp-width", type=int, help="w, threads per warp")
    parser.add_argument("--work-group-size", type=int, help="threads per work group")
    parser.add_argument("--global-latency", type=float, help="l, cost of a global access")
    parser.add_argument("--banks", type=int, help="local memory banks")
    parser.add_argument("--threads-at-once", type=int, help="H, threads the GPU runs at once")
    parser.add_argument("--bsize", type=int, help="BSIZE, words a region grows by")
    parser.add_argument("--strict-gpu-regions", action="store_true",
                        help="make a region that fills up on the GPU an error (NoExpandWE) "
                        "instead of growing it before the push")
    parser.add_argument("--rules", choices=("calibrated", "paper"),
                        help="the rule set: hetprof's calibrated model (default: the profile's), "
                        "or the paper's own rules exactly (reproduces §7.1; see the README)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hetprof",
        description="Cost-semantics profiler for heterogeneous (CPU/GPU) λG programs.")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    subcommands.required = True

    check = subcommands.add_parser("check", help="type-, region- and world-check a program")
    check.add_argument("file")
    check.set_defaults(handler=commands.command_check)

    run = subcommands.add_parser("run", help="run a program and print its value and regions")
    _add_common(run)
    _add_model_options(run)
    run.add_argument("--device", help="also run it through OpenCL on this device (an index or "
                     "part of the platform or device name, e.g. pocl, nvidia) and compare")
    run.set_defaults(handler=commands.command_run)

    profile = subcommands.add_parser("profile", help="time and space of a program (the main job)")
    _add_common(profile)
    _add_model_options(profile)
    profile.add_argument("--procs", "-P", type=int, default=2, help="CPU processors (default 2)")
    profile.add_argument("--schedule", choices=("1df", "bf", "ws"), default="1df",
                         help="CPU schedule: greedy depth-first, breadth-first, work stealing")
    profile.add_argument("--format", choices=sorted(RENDERERS), default="text")
    profile.add_argument("-o", "--output", help="write the report here instead of stdout")
    profile.add_argument("--symbolic", action="store_true",
                         help="formulas in the size parameters (work, span, time bounds, space, "
                         "transfers, kernels), in time independent of the sizes")
    profile.set_defaults(handler=commands.command_profile)

    for module in (pictures, opencl, symbolic, rewriting):
        module.register(subcommands, _add_common, _add_model_options)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hetprof` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    outcome: dict[str, int] = {}

    def target() -> None:
        outcome["code"] = _dispatch(args)

    _with_deep_stack(target)
    return outcome.get("code", EXIT_PROGRAM_ERROR)


def _with_deep_stack(function: Callable[[], None]) -> None:
    """Run in a thread with a large stack, so that deeply nested programs are evaluated rather
    than crashing Python; depth limits stay hetprof's own (--max-depth)."""
    old_limit = sys.getrecursionlimit()
    old_size = threading.stack_size()
    try:
        threading.stack_size(STACK_BYTES)
        sys.setrecursionlimit(RECURSION_LIMIT)
        thread = threading.Thread(target=function)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)


def _dispatch(args: argparse.Namespace) -> int:
    holder = SourceHolder()
    try:
        if getattr(args, "output", None) == "":  # before any work; write_output checks it too
            raise UsageError("the output path is empty (-o \"\"): give a file name")
        return args.handler(args, holder)
    except UsageError as error:
        print(f"hetprof: {error}", file=sys.stderr)
        return EXIT_USAGE
    except HetprofError as error:
        print(format_error(error, holder.text), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except MemoryError:
        print("hetprof: out of memory (at these sizes the program's explicit cost graph does not "
              "fit): profile it with --symbolic, or lower the sizes or --max-graph-size",
              file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except RecursionError as error:
        # Nesting is the program's shape, as brackets nested too deep are (profiler.parser).
        span = _deepest_span(error)
        where = " at this expression, the deepest reached" if span is not None else ""
        print(format_error(ParseError(
            f"the program is nested too deeply for hetprof (the interpreter's stack ran out{where}"
            "); simplify it or split it into smaller functions", span), holder.text),
            file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except BrokenPipeError:
        return EXIT_OK


def _deepest_span(error: RecursionError) -> Span | None:
    """Where in the program a recursive pass (the checker, an evaluator, the printer) was when
    Python's stack ran out: the span of the deepest frame that holds a program node (or a span)
    of the file being read."""
    frames = []
    trace = error.__traceback__
    while trace is not None:
        frames.append(trace.tb_frame)
        trace = trace.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            span = value if isinstance(value, Span) else getattr(value, "span", None)
            if isinstance(span, Span) and span.line > 0:
                return span
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
