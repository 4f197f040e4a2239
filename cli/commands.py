"""The pipeline's own sub-commands: `check`, `run` and `profile` (explicit, or `--symbolic` with
the explicit profile as the fallback for programs that are not regular)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
from pathlib import Path

from cli.common import (
    EXIT_OK,
    SourceHolder,
    UsageError,
    check_procs,
    device_profile,
    evaluation_options,
    format_for,
    load_checked,
    parse_params,
    replace_args,
    write_output,
)
from graphs.analysis import ProfileResult, analyse, load_result
from graphs.numbers import json_text
from graphs.render_text import TextRenderer
from graphs.renderers import RENDERERS
from graphs.semantics.explicit import Evaluation, OffloadCollector, OffloadObserver, evaluate
from graphs.semantics.irregular import NotRegular, OutsideAssumptions
from graphs.semantics.options import DEFAULT_MAX_STEPS, EvaluationOptions
from models.device_profile import DeviceProfile
from profiler.checker import CheckedProgram, bind_parameters
from profiler.errors import EvaluationError

PICTURE_FORMATS = ("dot", "trace", "html")
"""The formats that draw the schedule's timeline or the cost graph's summary (DOT the summary, a
trace the timeline, HTML both); JSON carries both only with `--pictures` (what `--load` needs to
draw them later), CSV and text never: a format computes only what it writes (issue 20)."""


def run_program(args: argparse.Namespace, holder: SourceHolder,
                observer: OffloadObserver | None = None) -> tuple[
        CheckedProgram, dict[str, int], Evaluation, DeviceProfile]:
    """Read, check and evaluate the program of a command line."""
    checked, params, options, profile = prepare_program(args, holder, observer)
    return checked, params, evaluate(checked, params, options), profile


def prepare_program(args: argparse.Namespace, holder: SourceHolder,
                    observer: OffloadObserver | None = None) -> tuple[
        CheckedProgram, dict[str, int], EvaluationOptions, DeviceProfile]:
    """Read and check the program of a command line, and what evaluating it takes: all that
    `run_program` does before it evaluates (where `hetprof report` starts its formulas)."""
    checked = load_checked(args.file, holder)
    params = bind_parameters(checked, parse_params(args.param))
    profile = device_profile(args)
    options = evaluation_options(args, observer, profile)
    _refuse_a_graph_too_large(checked, params, options)
    return checked, params, options, profile


def _refuse_a_graph_too_large(checked: CheckedProgram, params: dict[str, int],
                              options: EvaluationOptions) -> None:
    """Where --max-steps lets an evaluation run past the default step limit, ask the symbolic
    profile how many nodes the explicit cost graph will have, and refuse one above
    --max-graph-size before building it (the evaluator stops at the budget anyway, but only
    after building that much). Within the default step limit the graph stays near the budget."""
    if options.max_steps <= DEFAULT_MAX_STEPS:
        return
    from graphs.symbolic_profile import explicit_nodes  # sympy, only where it is asked

    nodes = explicit_nodes(checked, options, params)
    if nodes is not None and nodes > options.max_graph:
        raise EvaluationError(
            f"at these sizes the explicit cost graph would have {nodes:,} nodes, more than "
            f"--max-graph-size ({options.max_graph:,}): profile it with --symbolic, which does "
            "not build it, or raise --max-graph-size if the memory is there",
            checked.body.span, "memory budget")


def command_check(args: argparse.Namespace, holder: SourceHolder) -> int:
    checked = load_checked(args.file, holder)
    print(f"{args.file}: ok: {checked.type}")
    return EXIT_OK


def command_run(args: argparse.Namespace, holder: SourceHolder) -> int:
    observer = OffloadCollector() if args.device else None
    checked, params, evaluation, _ = run_program(args, holder, observer)
    print(evaluation.render_value(limit=64))
    for region in evaluation.regions.values():
        print(f"region {region.label}: {region.ap:,} words used, {region.size:,} words reserved")
    if observer is not None:
        from cli import opencl  # pyopencl, only where a device is asked for

        return opencl.run_on_device(args, checked, params, observer)
    return EXIT_OK


LOAD_IGNORES = ("param", "device_profile", "gpu_mode", "warp_width", "work_group_size",
                "global_latency", "banks", "threads_at_once", "bsize", "rules", "max_steps",
                "max_depth", "max_graph_size", "sizes", "size_param")
"""Options about running a program, which a saved profile (--load) has already run."""


def saved_result(args: argparse.Namespace) -> ProfileResult | None:
    """The profile of `--load FILE.json` (pyinstrument's --load), or None where a program is to be
    run; exactly one of the two must be given."""
    if args.load is None:
        if args.file is None:
            raise UsageError("give the λG program to profile (FILE.lg), or --load FILE.json")
        return None
    if args.file is not None:
        raise UsageError(f"give a program ({args.file}) or --load {args.load}, not both")
    given = [name for name in LOAD_IGNORES if getattr(args, name, None) not in (None, False)]
    if getattr(args, "symbolic", False):
        given.append("symbolic")
    if given:
        shown = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"--load renders a saved profile, which was run already: {shown} "
                         "cannot change it (profile the program again instead)")
    try:
        text = Path(args.load).read_text(encoding="utf-8")
    except IsADirectoryError:
        raise UsageError(f"{args.load}: is a directory, not a saved profile") from None
    except OSError as error:
        raise UsageError(f"cannot read {args.load}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{args.load}: not a saved profile (not UTF-8 text)") from None
    return load_result(text, args.load)


def text_renderer(args: argparse.Namespace) -> TextRenderer:
    """The text report of a command line: colour on a terminal; the whole cost-by-source tree
    with --show-all, else its rows from --tree-threshold percent of the work, 6 levels deep."""
    threshold = args.tree_threshold
    if not (math.isfinite(threshold) and 0 <= threshold <= 100):
        raise UsageError(f"--tree-threshold {threshold:g}: give a percentage from 0 to 100")
    if args.show_all:
        return TextRenderer(color=args.output is None and sys.stdout.isatty(), tree_depth=None,
                            tree_threshold=0.0)
    return TextRenderer(color=args.output is None and sys.stdout.isatty(),
                        tree_threshold=threshold)


def command_profile(args: argparse.Namespace, holder: SourceHolder) -> int:
    if args.format is None:
        args.format = format_for(args.output)
    saved = saved_result(args)
    if saved is not None:
        renderer = text_renderer(args) if args.format == "text" else RENDERERS[args.format]()
        try:
            content = renderer.render(saved)
        except ValueError as error:  # e.g. DOT of a profile saved without its cost graph
            raise UsageError(f"{args.load}: {error}") from None
        write_output(content, args.output)
        return EXIT_OK
    if getattr(args, "symbolic", False):
        from cli import symbolic  # sympy, only for the formulas

        try:
            return symbolic.command_symbolic_profile(args, holder)
        except NotRegular as irregular:
            return _fallback(args, holder, irregular)
    if args.format == "html":
        from cli.pictures import profile_html  # matplotlib's helpers, forked children

        return profile_html(args, holder)
    check_procs(args)
    checked, params, evaluation, profile = run_program(args, holder)
    evaluation = evaluation.without_heap()  # the program's heap goes before the analysis
    result = analyse(
        evaluation, args.procs, args.schedule, file=args.file, params=params, body=checked.body,
        source=checked.program.source, units=profile.units, profile_name=profile.name,
        pictures=args.format in PICTURE_FORMATS
        or (args.format == "json" and getattr(args, "pictures", False)),
        # A format computes only what it writes: DOT draws the cost graph, a trace the timeline.
        graph_picture=args.format != "trace", timeline_picture=args.format != "dot",
        seconds_per_unit={"cpu": profile.cpu.seconds_per_unit,
                          "gpu": profile.gpu.seconds_per_unit},
    )
    if args.format == "text":
        renderer = text_renderer(args)
    else:
        renderer = RENDERERS[args.format]()
    write_output(renderer.render(result), args.output)
    return EXIT_OK


def _fallback(args: argparse.Namespace, holder: SourceHolder, irregular: NotRegular) -> int:
    """`profile --symbolic` of a program that is not regular: the explicit profile at the sizes
    given, with the reason."""
    where = f"{irregular.span}: " if irregular.span is not None else ""
    why = ("outside the formulas' assumptions" if isinstance(irregular, OutsideAssumptions)
           else "not regular")
    note = f"{why}, so profiled explicitly at the sizes given: {where}{irregular.message}"
    if GROWTH_REFUSAL in irregular.message:
        note += GROWTH_HINT
    explicit = replace_args(args, symbolic=False)
    try:
        if args.format == "json":
            output, explicit.output = args.output, None
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                command_profile(explicit, holder)
            data = {"symbolic": False, "reason": irregular.message,
                    "location": str(irregular.span) if irregular.span else None,
                    "explicit": json.loads(buffer.getvalue())}
            write_output(json_text(data) + "\n", output)
            return EXIT_OK
        print(f"hetprof: {note}")
        return command_profile(explicit, holder)
    except EvaluationError as error:
        if error.rule != "memory budget":
            raise
        # The explicit error's own advice (--symbolic) was taken already: say what is left.
        raise EvaluationError(
            f"the symbolic profile cannot price this program ({why}: {where}"
            f"{irregular.message}), and at these sizes the explicit cost graph grows past "
            "--max-graph-size: lower the sizes, or raise --max-graph-size if the memory is there"
            + (GROWTH_HINT if GROWTH_REFUSAL in irregular.message else ""),
            error.span, error.rule) from None


GROWTH_REFUSAL = "growing costs differ from a write"  # graphs.semantics.symbolic's refusals
GROWTH_HINT = ("; --growth-as-write prices a region's growth as a write, as `validate` and "
               "`place` do, and lets the symbolic profile through")
