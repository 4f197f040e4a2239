"""The `hetprof` command. The only module that prints or exits.

Exit codes: 0 success; 1 the program (or a profile, a parameter, a device) is wrong, with a
`file:line:col` message and a caret; 2 a usage error or a file that cannot be read.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from collections.abc import Callable

from cli.arguments import build_parser
from cli.common import (
    EXIT_OK,
    EXIT_PROGRAM_ERROR,
    EXIT_USAGE,
    SourceHolder,
    UsageError,
)
from profiler.errors import HetprofError, ParseError, format_error
from profiler.syntax import Span

STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 200_000


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hetprof` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    outcome: dict[str, int] = {}

    def target() -> None:
        outcome["code"] = _dispatch(args)

    _with_deep_stack(target)
    return outcome.get("code", EXIT_PROGRAM_ERROR)


def console() -> None:
    """The `hetprof` command (and `python -m cli`): `main`, then the process ends at once, its
    output flushed and its exit handlers run, without tearing down its modules and objects one
    by one (0.1 to 0.3 s once sympy and a cost graph are loaded; issue 19)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # a reader that left; a stream closed
            pass
    atexit._run_exitfuncs()  # what the interpreter runs at exit (matplotlib's, multiprocessing's)
    os._exit(code)


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
        pass  # reported below, once the error's traceback (every frame's objects) is freed
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
    # Out of memory. Printing needs a little: inside the `except` the traceback still held the
    # graph (every frame's objects), so the message is printed once it is freed.
    print("hetprof: out of memory (at these sizes the program's explicit cost graph does not "
          "fit): profile it with --symbolic, or lower the sizes or --max-graph-size",
          file=sys.stderr)
    return EXIT_PROGRAM_ERROR


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
    console()
