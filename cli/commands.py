"""The pipeline's own sub-commands: `check`, `run` and `profile` (explicit, or `--symbolic` with
the explicit profile as the fallback for programs that are not regular)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys

from cli import opencl, symbolic
from cli.common import (
    EXIT_OK,
    SourceHolder,
    check_procs,
    device_profile,
    evaluation_options,
    format_for,
    load_checked,
    parse_params,
    replace_args,
    write_output,
)
from graphs.analysis import analyse
from graphs.numbers import json_text
from graphs.render_text import TextRenderer
from graphs.renderers import RENDERERS
from graphs.semantics.explicit import Evaluation, OffloadCollector, OffloadObserver, evaluate
from graphs.semantics.options import DEFAULT_MAX_STEPS, EvaluationOptions
from graphs.semantics.symbolic import NotRegular, OutsideAssumptions
from graphs.symbolic_profile import explicit_nodes
from models.device_profile import DeviceProfile
from profiler.checker import CheckedProgram, bind_parameters
from profiler.errors import EvaluationError

PICTURE_FORMATS = ("json", "dot", "trace", "html")
"""The formats that write the cost-graph picture or the timeline (the others skip computing them)."""


def run_program(args: argparse.Namespace, holder: SourceHolder,
                observer: OffloadObserver | None = None) -> tuple[
        CheckedProgram, dict[str, int], Evaluation, DeviceProfile]:
    """Read, check and evaluate the program of a command line."""
    checked = load_checked(args.file, holder)
    params = bind_parameters(checked, parse_params(args.param))
    profile = device_profile(args)
    options = evaluation_options(args, observer, profile)
    _refuse_a_graph_too_large(checked, params, options)
    return checked, params, evaluate(checked, params, options), profile


def _refuse_a_graph_too_large(checked: CheckedProgram, params: dict[str, int],
                              options: EvaluationOptions) -> None:
    """Where --max-steps lets an evaluation run past the default step limit, ask the symbolic
    profile how many nodes the explicit cost graph will have, and refuse one above
    --max-graph-size before building it (the evaluator stops at the budget anyway, but only
    after building that much). Within the default step limit the graph stays near the budget."""
    if options.max_steps <= DEFAULT_MAX_STEPS:
        return
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
        print(f"region {region.label}: {region.ap} words used, {region.size} words reserved")
    if observer is not None:
        return opencl.run_on_device(args, checked, params, observer)
    return EXIT_OK


def command_profile(args: argparse.Namespace, holder: SourceHolder) -> int:
    if args.format is None:
        args.format = format_for(args.output)
    if getattr(args, "symbolic", False):
        try:
            return symbolic.command_symbolic_profile(args, holder)
        except NotRegular as irregular:
            return _fallback(args, holder, irregular)
    check_procs(args)
    checked, params, evaluation, profile = run_program(args, holder)
    result = analyse(
        evaluation, args.procs, args.schedule, file=args.file, params=params, body=checked.body,
        source=checked.program.source, units=profile.units, profile_name=profile.name,
        pictures=args.format in PICTURE_FORMATS,
        seconds_per_unit={"cpu": profile.cpu.seconds_per_unit,
                          "gpu": profile.gpu.seconds_per_unit},
    )
    if args.format == "text":
        renderer = TextRenderer(color=args.output is None and sys.stdout.isatty())
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
    explicit = replace_args(args, symbolic=False)
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
