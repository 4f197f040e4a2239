"""`hetprof graph`, `hetprof plot KIND` and `hetprof report`: pictures of a program's costs.

    hetprof graph FILE -o OUT.svg|png|dot [--expand-gpu] [--max-nodes N] [--layout L]
    hetprof plot space FILE -o OUT.png|svg [--procs P]              # 1DF vs BF, per world
    hetprof plot timeline FILE -o OUT.png|svg [--procs P] [--schedule S]
    hetprof plot speedup FILE -o OUT.png|svg [--max-procs P] [--schedule S]
    hetprof plot sizes FILE -o OUT.png|svg --sizes 64,256,1024 [--size-param n] [--procs P]
    hetprof plot validation REPORT.json -o OUT.png|svg
    hetprof report FILE -o report.html [--sizes ...] [--max-procs P] [--expand-gpu] [--layout L]
    hetprof report --load PROFILE.json -o report.html   # a profile saved with --format json

Answers in seconds (issue 19): where the system can fork, a plot's data is computed in a child
process while this one loads matplotlib, and the report's formulas, its speedup curve and its
cost-graph figure while this one analyses the profile and draws its other pictures
(`cli.forked.Beside`, one child each).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TypeVar

from cli.commands import prepare_program, run_program, saved_result
from cli.common import (
    EXIT_OK,
    SourceHolder,
    UsageError,
    check_procs,
    device_profile,
    evaluation_options,
    load_checked,
    parse_params,
    parse_sizes,
    write_output,
)
from cli.forked import Beside, Helpers
from graphs import plots
from graphs.analysis import GraphMeasures, ProfileResult, analyse, graph_measures, snippet
from graphs.costgraph import CostGraph, cyclic_gc_paused
from graphs.draw import draw_cost_graph
from graphs.picture import cost_picture
from graphs.placement import SizePoint, time_by_size
from graphs.render_dot import graphviz_picture, picture_to_dot
from graphs.render_html import HtmlRenderer, ReportExtras
from graphs.schedule import Policy
from graphs.semantics.explicit import evaluate
from graphs.semantics.irregular import NotRegular
from graphs.semantics.options import EvaluationOptions
from profiler.checker import bind_parameters
from profiler.errors import HetprofError, ParameterError

PICTURE_FORMATS = ("png", "svg")
T = TypeVar("T")

NO_GRAPHVIZ = ("--layout graphviz: graphviz's `dot` is not installed or failed (apt-get install "
               "graphviz), or use --layout matplotlib")


def _format(output: str, allowed: tuple[str, ...]) -> str:
    suffix = Path(output).suffix.lower().lstrip(".")
    if suffix not in allowed:
        raise UsageError(f"{output}: the output's suffix must be one of "
                         f"{', '.join('.' + a for a in allowed)}")
    return suffix


def _title(args: argparse.Namespace, params: dict[str, int]) -> str:
    values = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{args.file} ({values})" if values else args.file


def _analysed(args: argparse.Namespace, checked, params: dict[str, int], evaluation,
              profile, graph_picture: bool = True,
              timeline_made: Callable[[dict], object] | None = None,
              space_made: Callable[[list], object] | None = None,
              measured: Callable[[], GraphMeasures] | None = None) -> ProfileResult:
    return analyse(
        evaluation, args.procs, args.schedule, file=args.file, params=params, body=checked.body,
        source=checked.program.source, units=profile.units, profile_name=profile.name,
        seconds_per_unit={"cpu": profile.cpu.seconds_per_unit,
                          "gpu": profile.gpu.seconds_per_unit},
        graph_picture=graph_picture, timeline_made=timeline_made, space_made=space_made,
        measured=measured,
    )


def _while_matplotlib_loads(fmt: str, compute: Callable[[], T]) -> T:
    """`compute()` beside this process (`cli.forked.Beside`) while it loads matplotlib for the
    picture: matplotlib takes 0.3 to 0.4 s of a plot's time, about what evaluating and
    scheduling an example takes."""
    beside = Beside(compute)
    try:
        plots.load_matplotlib(fmt)
        return beside.result()
    except BaseException:
        beside.cancel()
        raise


def _plot_data(args: argparse.Namespace, graph: CostGraph, source: str,
               renderer: HtmlRenderer, units: str) -> tuple[list[tuple[int, float]], str]:
    """What the report's pictures need beyond the profile, made beside its analysis: the speedup
    curve's points and the cost graph's figure, drawn (its summary, critical path and layout
    take about a fifth of a report's time)."""
    picture = cost_picture(graph, lambda span: snippet(source, span, 32))
    return (plots.speedup_points(graph, list(range(1, args.max_procs + 1)), args.schedule),
            renderer.cost_graph_figure(picture, args.file, units))


def _formulas(args: argparse.Namespace, checked, params: dict[str, int]) -> dict[str, str] | None:
    """The report's symbolic formulas (graphs.symbolic_profile), or None where the program is not
    regular."""
    import sympy as sp  # sympy (0.3 s), only for the report's formulas

    from graphs.symbolic_profile import formula_at, symbolic_profile

    options = EvaluationOptions(profile=device_profile(args), gpu_mode=args.gpu_mode,
                                grow_gpu_regions=not args.strict_gpu_regions,
                                rules=getattr(args, "rules", None))
    try:
        profile = symbolic_profile(checked, options, params)
        formulas = profile.formulas(params)
        lower, upper = profile.time_formulas(args.procs, params)
    except NotRegular:
        return None
    subs = {symbol: params[name] for name, symbol in profile.symbols.items() if name in params}

    def formula_text(expr) -> str:  # a formula of many pieces: its piece at the sizes given
        return formula_at(expr, subs)

    names = {"work": "work", "span": "span", "space_cpu": "space (CPU words)",
             "space_gpu": "space (GPU words)", "bytes_to_device": "bytes to the device",
             "bytes_to_host": "bytes back to the host", "nodes": "cost-graph nodes"}
    shown = {label: formula_text(formulas[key]) for key, label in list(names.items())[:2]}
    if sp.expand(upper - lower) == 0:
        shown[f"time (P = {args.procs}, every schedule)"] = formula_text(lower)
    else:
        shown[f"time (P = {args.procs}) at least"] = formula_text(lower)
        shown[f"time (P = {args.procs}) at most"] = formula_text(upper)
    shown.update({label: formula_text(formulas[key]) for key, label in names.items()
                  if label not in shown})
    # graphs.symbolic_profile keys the `on` forms from 0 (`on0.kernel`); people count from 1.
    shown.update({f"on #{int(key[2:-len('.kernel')]) + 1} kernel": formula_text(value)
                  for key, value in formulas.items()
                  if key.startswith("on") and key.endswith(".kernel")})
    return shown


def command_graph(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof graph`: the cost graph as PNG, SVG or DOT."""
    fmt = _format(args.output, (*PICTURE_FORMATS, "dot"))
    if args.max_nodes < 5:
        raise ParameterError("--max-nodes must be at least 5")
    checked, params, evaluation, profile = run_program(args, holder)
    source = checked.program.source
    picture = cost_picture(evaluation.graph, lambda span: snippet(source, span, 32),
                           args.max_nodes)
    title = _title(args, params)
    if fmt == "dot":
        write_output(picture_to_dot(picture, args.expand_gpu, title, profile.units),
                     args.output)
    else:
        drawn = None
        if args.layout != "matplotlib":
            drawn = graphviz_picture(picture, fmt, args.expand_gpu, title, profile.units)
            if drawn is None and args.layout == "graphviz":
                raise UsageError(NO_GRAPHVIZ)
        write_output(drawn or draw_cost_graph(picture, fmt, args.expand_gpu, title,
                                              profile.units), args.output)
    return EXIT_OK


def command_plot_space(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof plot space`: space per step and world under 1DF and BF."""
    fmt = _format(args.output, PICTURE_FORMATS)
    check_procs(args)

    def compute():
        _, params, evaluation, profile = run_program(args, holder)
        return params, profile.units, plots.space_series(evaluation.graph, args.procs)

    params, units, series = _while_matplotlib_loads(fmt, compute)
    title = f"space over the schedule, P = {args.procs}: {_title(args, params)}"
    write_output(plots.space_plot(series, fmt, title, units), args.output)
    return EXIT_OK


def command_plot_timeline(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof plot timeline`: the schedule per processor, work group and transfer."""
    fmt = _format(args.output, PICTURE_FORMATS)

    def compute():
        check_procs(args)
        checked, params, evaluation, profile = run_program(args, holder)
        result = _analysed(args, checked, params, evaluation, profile, graph_picture=False)
        assert result.timeline is not None
        return result.params, result.timeline

    params, timeline = _while_matplotlib_loads(fmt, compute)
    write_output(plots.timeline_plot(timeline, fmt, program=_title(args, params)), args.output)
    return EXIT_OK


def command_plot_speedup(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof plot speedup`: T1 / TP for P = 1 .. --max-procs, with the work and span laws."""
    fmt = _format(args.output, PICTURE_FORMATS)
    check_procs(args)

    def compute():
        _, params, evaluation, profile = run_program(args, holder)
        graph = evaluation.graph
        points = plots.speedup_points(graph, list(range(1, args.max_procs + 1)), args.schedule)
        return params, profile.units, graph.work(), graph.span(), points

    params, units, work, span, points = _while_matplotlib_loads(fmt, compute)
    title = f"speedup: {_title(args, params)}"
    write_output(plots.speedup_plot(work, span, points, fmt, title, args.schedule, units=units),
                 args.output)
    return EXIT_OK


def command_plot_sizes(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof plot sizes`: time vs size of the CPU and GPU placements, and the break-even."""
    fmt = _format(args.output, PICTURE_FORMATS)
    check_procs(args)
    parameter, points, units, failed = _sizes(args, holder)
    if failed:
        print(f"hetprof: {failed}; the plot shows the sizes done", file=sys.stderr)
    write_output(plots.sizes_plot(points, parameter, fmt, units=units, program=args.file,
                                  failed=failed), args.output)
    return EXIT_OK


def _sizes(args: argparse.Namespace, holder: SourceHolder
           ) -> tuple[str, list[SizePoint], str, str]:
    """Evaluate both placements at --sizes (the program is read and checked once), smallest
    first: where a size fails (a step limit, the memory budget) after others succeeded, the
    sizes done and what went wrong at that size ('' where every size was done); where the first
    fails, its error."""
    sizes = parse_sizes(args.sizes)
    checked = load_checked(args.file, holder)
    declared = [p.name for p in checked.program.params]
    if args.size_param is not None and not args.size_param.strip():
        raise UsageError("--size-param is empty: name a size parameter")
    parameter = args.size_param or (declared[0] if declared else None)
    if parameter is None:
        raise ParameterError("the program declares no size parameter to vary (param n : int)")
    if parameter not in declared:
        raise ParameterError(f"--size-param {parameter}: the program declares no parameter "
                             f"{parameter} (declared: {', '.join(declared) or 'none'})")
    given = parse_params(args.param)
    params = bind_parameters(checked, {**given, parameter: sizes[0]})
    profile = device_profile(args)
    options = evaluation_options(args, profile=profile)
    points: list[SizePoint] = []
    for size in sizes:
        try:
            points += time_by_size(checked, parameter, [size], params, options, args.procs,
                                   args.schedule)
        except HetprofError as error:
            if not points:
                raise
            return parameter, points, profile.units, (
                f"{parameter}={size:,} failed ({error.kind}: {error.message}); larger sizes "
                "were not tried")
    return parameter, points, profile.units, ""


def command_plot_validation(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof plot validation`: predicted vs measured seconds from a validation report."""
    fmt = _format(args.output, PICTURE_FORMATS)
    try:
        data = json.loads(Path(args.report).read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read {args.report}: {error.strerror}") from None
    except (UnicodeDecodeError, ValueError) as error:  # JSONDecodeError, or a number too long
        raise UsageError(f"{args.report}: not a JSON validation report ({error})") from None
    except RecursionError:
        raise UsageError(f"{args.report}: not a JSON validation report (nested too deeply)") \
            from None
    try:
        cases = plots.validation_cases(data)
    except ValueError as error:
        raise UsageError(f"{args.report}: {error}") from None
    write_output(plots.validation_plot(cases, fmt), args.output)
    return EXIT_OK


def profile_html(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof profile --format html`: the profile's page, on two cores where the system can
    fork (issue 20). Matplotlib loads in helper children (`cli.forked.Helpers`, two copies)
    while this process evaluates the program; the cost-graph figure is made in a child
    (`Beside`, with the graph's work, span and span tree) while this one schedules it; the space
    plot and the timeline are handed to the helpers, one each, as soon as their data is made (the
    schedule's space samples come before its timeline), and drawn while this one finishes the
    analysis. The page is the one `HtmlRenderer().render` of the whole result writes, byte for
    byte."""
    check_procs(args)
    helpers = Helpers(plots.warm_matplotlib)
    figure: Beside | None = None
    try:
        checked, params, evaluation, profile = run_program(args, holder)
        evaluation = evaluation.without_heap()
        graph = evaluation.graph
        renderer = HtmlRenderer()
        source = checked.program.source

        def beside() -> tuple[str, GraphMeasures]:  # what needs the cost graph only
            picture = cost_picture(graph, lambda span: snippet(source, span, 32))
            return (renderer.cost_graph_figure(picture, args.file, profile.units),
                    graph_measures(evaluation, checked.body, source))

        figure = Beside(beside)
        jobs: dict[str, int] = {}

        def draw_space(space: list) -> None:  # as soon as the schedule's space is sampled
            jobs["space"] = helpers.submit(partial(
                renderer.space_figure, {Policy(args.schedule).value: space}, profile.units,
                args.file))

        def draw_timeline(timeline: dict) -> None:  # as soon as its timeline is made
            jobs["timeline"] = helpers.submit(partial(renderer.timeline_figure, timeline,
                                                      args.file))

        result = _analysed(args, checked, params, evaluation, profile, graph_picture=False,
                           timeline_made=draw_timeline, space_made=draw_space,
                           measured=lambda: figure.result()[1])
        drawn = {"cost-graph": figure.result()[0]}
        drawn.update({name: helpers.result(job) for name, job in jobs.items()})
    except BaseException:
        if figure is not None:
            figure.cancel()
        helpers.close(kill=True)
        raise
    helpers.close()
    write_output(renderer.render(result, drawn), args.output)
    return EXIT_OK


def command_report(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof report`: the profile, its pictures and plots on one self-contained page."""
    saved = saved_result(args)
    name = args.load if saved is not None else args.file
    output = args.output or f"{Path(name).stem}.report.html"
    if Path(output).suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"{output}: the report is an HTML page: name it *.html")
    if saved is not None:  # the plots that need the cost graph itself are left out
        write_output(HtmlRenderer().render(saved), output)
        return EXIT_OK
    check_procs(args)
    if args.layout == "graphviz" and shutil.which("dot") is None:
        raise UsageError(NO_GRAPHVIZ)
    # The report's objects live until it is written, and the collector would walk them all again
    # and again, in each process, the forked ones included (graphs.costgraph.cyclic_gc_paused):
    # paused, each process takes 0.1 to 0.2 s less (matvec).
    with cyclic_gc_paused():
        checked, params, options, profile = prepare_program(args, holder)
        # Two children beside this one. The formulas need the checked program only, so theirs is
        # forked now and makes them while this one evaluates, on the core otherwise idle then;
        # the plots' own data needs the cost graph, and the space plot waits for it, but not
        # for the formulas as well.
        formulas_beside = Beside(lambda: _formulas(args, checked, params))
        plots_beside: Beside | None = None
        try:
            evaluation = evaluate(checked, params, options)
            graph = evaluation.graph
            graph.adjacency()  # once, before the fork, for the analysis and the child's schedules
            extras = ReportExtras()
            renderer = HtmlRenderer(extras, args.expand_gpu, args.layout)
            plots_beside = Beside(lambda: _plot_data(args, graph, checked.program.source,
                                                     renderer, profile.units))
            result = _analysed(args, checked, params, evaluation, profile, graph_picture=False)
            assert result.timeline is not None
            drawn = {"timeline": renderer.figure(result, "timeline")}
            # The profile's schedule is one of the space plot's: its samples are not made again.
            extras.space = plots.space_series(graph, args.procs,
                                              known={result.schedule: result.timeline["space"]})
            extras.speedup, drawn["cost-graph"] = plots_beside.result()
            # Every picture the formulas do not change is drawn before waiting for them.
            drawn.update({name: renderer.figure(result, name) for name in ("space", "speedup")})
            formulas = formulas_beside.result()
        except BaseException:
            formulas_beside.cancel()
            if plots_beside is not None:
                plots_beside.cancel()
            raise
    result = replace(result, formulas=formulas)
    if args.sizes:
        extras.size_parameter, extras.sizes, _, failed = _sizes(args, holder)
        if failed:
            extras.notes.append(f"time against size: {failed}")
    write_output(renderer.render(result, drawn), output)
    return EXIT_OK
