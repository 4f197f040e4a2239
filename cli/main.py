"""The `hetprof` command. The only module that prints or exits.

Exit codes: 0 success; 1 the program (or a profile, a parameter, a device) is wrong, with a
`file:line:col` message and a caret; 2 a usage error or a file that cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from profiler.errors import HetprofError, ParameterError, ParseError, format_error
from profiler.syntax import Span

EXIT_OK, EXIT_PROGRAM_ERROR, EXIT_USAGE = 0, 1, 2
STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 200_000


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


def parse_params(items: list[str] | None) -> dict[str, int]:
    params: dict[str, int] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ParameterError(f"--param {item!r}: write NAME=VALUE, e.g. --param n=1024")
        try:
            params[name.strip()] = int(value.strip().replace("_", ""))
        except ValueError:
            raise ParameterError(f"--param {item!r}: {value!r} is not an integer") from None
    return params


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the λG program (.lg)")
    parser.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="set a size parameter (repeatable)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop a program after this many evaluation steps")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="stop a program nested (recursing) deeper than this")


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hetprof",
        description="Cost-semantics profiler for heterogeneous (CPU/GPU) λG programs.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    check = commands.add_parser("check", help="type-, region- and world-check a program")
    check.add_argument("file")
    check.set_defaults(handler="cli.commands:command_check")

    run = commands.add_parser("run", help="run a program and print its value and regions")
    _add_common(run)
    _add_model_options(run)
    run.add_argument("--device", help="also run it through OpenCL on this device (an index or "
                     "part of the platform or device name, e.g. pocl, nvidia) and compare")
    run.set_defaults(handler="cli.commands:command_run")

    profile = commands.add_parser("profile", help="time and space of a program (the main job)")
    _add_common(profile)
    _add_model_options(profile)
    profile.add_argument("--procs", "-P", type=int, default=2, help="CPU processors (default 2)")
    profile.add_argument("--schedule", choices=("1df", "bf", "ws"), default="1df",
                         help="CPU schedule: greedy depth-first, breadth-first, work stealing")
    profile.add_argument("--format", choices=profile_formats(), default="text")
    profile.add_argument("-o", "--output", help="write the report here instead of stdout")
    profile.add_argument("--symbolic", action="store_true",
                         help="formulas in the size parameters (work, span, time bounds, space, "
                         "transfers, kernels), in time independent of the sizes")
    profile.set_defaults(handler="cli.commands:command_profile")

    for register in _registrars():
        register(commands, _add_common, _add_model_options)
    return parser


def profile_formats() -> list[str]:
    from graphs.renderers import RENDERERS

    return sorted(RENDERERS)


def _registrars():
    """Sub-commands defined in other modules of cli/ (each has `register(commands, ...)`)."""
    import importlib

    found = []
    for name in ("cli.pictures", "cli.opencl", "cli.symbolic", "cli.rewriting"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            continue
        found.append(module.register)
    return found


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
    import importlib

    module_name, function_name = args.handler.split(":")
    holder = SourceHolder()
    try:
        # The commands import the whole pipeline: import them only now, to keep --help fast.
        handler = getattr(importlib.import_module(module_name), function_name)
        return handler(args, holder)
    except UsageError as error:
        print(f"hetprof: {error}", file=sys.stderr)
        return EXIT_USAGE
    except HetprofError as error:
        print(format_error(error, holder.text), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except RecursionError:
        print("hetprof: the program is nested too deeply for hetprof to analyse; simplify it or "
              "split it into smaller functions", file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except BrokenPipeError:
        return EXIT_OK


class SourceHolder:
    """The source text of the file being processed, for error messages with a caret."""

    def __init__(self) -> None:
        self.text: str | None = None

    def read(self, path: str) -> str:
        self.text = None
        self.text = read_source(path)
        return self.text


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
