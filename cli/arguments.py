"""`hetprof`'s command line: every sub-command's arguments, and its handler.

The handlers are functions that import their command module when they run (the modules import the
pipeline: sympy, networkx, numpy, matplotlib), so that `hetprof --help`, `--version` and `check`
start in a fraction of a second. `check` needs only the language (profiler/) and runs here.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.common import EXIT_OK, SourceHolder, count_argument, graph_size_argument, load_checked
from graphs.semantics.options import DEFAULT_MAX_GRAPH
from models.device_profile import GPU_MODES, LOCKSTEPS

PROFILE_FORMATS = ("text", "json", "csv", "dot", "trace", "html", "speedscope", "cilkscale")
"""The formats of `hetprof profile --format` (graphs.renderers.RENDERERS' keys)."""


def _add_common(parser: argparse.ArgumentParser, loadable: bool = False) -> None:
    if loadable:  # or --load FILE.json (cli.commands.saved_result checks that one is given)
        parser.add_argument("file", nargs="?", help="the λG program (.lg), unless --load")
        parser.add_argument("--load", metavar="FILE.json",
                            help="render a profile saved with `profile --format json` instead "
                            "of running a program")
    else:
        parser.add_argument("file", help="the λG program (.lg)")
    parser.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="set a size parameter (repeatable)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop a program after this many evaluation steps")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="stop a program nested (recursing) deeper than this")
    parser.add_argument("--max-graph-size", type=graph_size_argument, default=None, metavar="N",
                        help="refuse to build an explicit cost graph of more than N nodes and "
                        f"GPU steps (default {DEFAULT_MAX_GRAPH:,}, about 1-4 GB; --symbolic "
                        "profiles any size)")


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device-profile", metavar="FILE.json",
                        help="machine parameters (default: hetprof's profile in abstract units)")
    parser.add_argument("--units", choices=("seconds", "abstract"),
                        help="price in seconds (a calibrated profile's) or in the model's own "
                        "units: the paper's PRAM at unit cost and DMM steps, with the profile's "
                        "GPU shape (default: the profile's units)")
    parser.add_argument("--gpu-mode", choices=GPU_MODES,
                        help="GPU memory model: Fig. 9 as written, Nakano's DMM/UMM, or the "
                        "memory hierarchy (sectors, L1/L2, bandwidth ceilings)")
    parser.add_argument("--lockstep", choices=LOCKSTEPS,
                        help="how a warp's threads line up where they took different branches: "
                        "edge by edge as §6.4 steps them, or by program point as a SIMT warp "
                        "runs each side and reconverges (default: the profile's)")
    parser.add_argument("--warp-width", type=int, help="w, threads per warp")
    parser.add_argument("--work-group-size", type=int, help="threads per work group")
    parser.add_argument("--global-latency", type=float, help="l, cost of a global access")
    parser.add_argument("--banks", type=int, help="local memory banks")
    parser.add_argument("--threads-at-once", type=int, help="H, threads the GPU runs at once")
    parser.add_argument("--bsize", type=int, help="BSIZE, words a region grows by")
    parser.add_argument("--strict-gpu-regions", action="store_true",
                        help="make a region that fills up on the GPU an error (NoExpandWE) "
                        "instead of growing it before the push")
    parser.add_argument("--growth-as-write", action="store_true",
                        help="price a region's growth (Δa) as a write, as `validate` and "
                        "`place` do under a calibrated profile (the OpenCL backend sizes every "
                        "region before a kernel): lets --symbolic price parallel forms that "
                        "allocate under such a profile")
    parser.add_argument("--rules", choices=("calibrated", "paper"),
                        help="the rule set: hetprof's calibrated model (default: the profile's), "
                        "or the paper's own rules exactly (reproduces §7.1; see the README)")


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png|svg")


def _size_options(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--sizes", required=required, metavar="N1,N2,...",
                        help="sizes to evaluate both placements at, e.g. 64,256,1024")
    parser.add_argument("--size-param", metavar="NAME",
                        help="the size parameter (default: the program's first)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hetprof",
        description="Cost-semantics profiler for heterogeneous (CPU/GPU) λG programs.")
    parser.add_argument("--version", action=_VersionAction)
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    subcommands.required = True

    check = subcommands.add_parser("check", help="type-, region- and world-check a program")
    check.add_argument("file")
    check.set_defaults(handler=_command_check)

    run = subcommands.add_parser("run", help="run a program and print its value and regions")
    _add_common(run)
    _add_model_options(run)
    run.add_argument("--device", help="also run it through OpenCL on this device (an index or "
                     "part of the platform or device name, e.g. pocl, nvidia) and compare")
    run.set_defaults(handler=_command_run)

    profile = subcommands.add_parser("profile", help="time and space of a program (the main job)")
    _add_common(profile, loadable=True)
    _add_model_options(profile)
    profile.add_argument("--procs", "-P", type=int, default=2, help="CPU processors (default 2)")
    profile.add_argument("--schedule", choices=("1df", "bf", "ws"), default="1df",
                         help="CPU schedule: greedy depth-first, breadth-first, work stealing")
    profile.add_argument("--format", choices=PROFILE_FORMATS,
                         help="the report's format (default: the one -o's suffix names, e.g. x.html, x.json, x.speedscope.json; else text)")
    profile.add_argument("-o", "--output", help="write the report here instead of stdout")
    profile.add_argument("--symbolic", action="store_true",
                         help="formulas in the size parameters (work, span, time bounds, space, "
                         "transfers, kernels), in time independent of the sizes")
    profile.add_argument("--pictures", action="store_true",
                         help="JSON: carry the schedule's timeline and the cost graph's summary "
                         "too, so that `--load` can draw them later (dot, trace, html); they "
                         "take longer than the rest of a large profile")
    profile.add_argument("--show-all", action="store_true",
                         help="the text report's cost-by-source tree in full (by default rows "
                         "under 0.1%% of the work and deeper than 6 levels are left out)")
    profile.add_argument("--tree-threshold", type=float, default=0.1, metavar="PERCENT",
                         help="leave out of the cost-by-source tree the rows under this "
                         "percentage of the work (default 0.1; 0 keeps them all)")
    profile.set_defaults(handler=_command_profile)

    for add in (_pictures_commands, _opencl_commands, _symbolic_commands, _rewriting_commands):
        add(subcommands)
    return parser


def _pictures_commands(commands: Any) -> None:
    """Add the picture sub-commands to `hetprof`'s parser."""
    graph = commands.add_parser("graph", help="draw the cost graph (PNG, SVG or DOT)")
    _add_common(graph)
    _add_model_options(graph)
    graph.add_argument("-o", "--output", required=True, metavar="OUT.svg|png|dot")
    graph.add_argument("--expand-gpu", action="store_true",
                       help="draw each device box's kernels, warp boxes and lock-step steps")
    graph.add_argument("--max-nodes", type=int, default=60,
                       help="summarise the picture to about this many elements (default 60)")
    _layout_option(graph)
    graph.set_defaults(handler=_command_graph)

    plot = commands.add_parser("plot", help="plot space, the schedule, speedup, time vs size, "
                               "or a validation report")
    kinds = plot.add_subparsers(dest="plot", metavar="KIND")
    kinds.required = True
    for name, help_text, handler in (
        ("space", "space over the schedule's steps per world, 1DF vs BF", _command_plot_space),
        ("timeline", "the schedule per processor, GPU work group and transfer",
         _command_plot_timeline),
        ("speedup", "predicted speedup vs P with the work and span bounds", _command_plot_speedup),
        ("sizes", "time vs a size parameter for the CPU and GPU placements", _command_plot_sizes),
    ):
        parser = kinds.add_parser(name, help=help_text)
        _add_common(parser)
        _add_model_options(parser)
        _output(parser)
        parser.add_argument("--procs", "-P", type=int, default=2, help="CPU processors")
        parser.add_argument("--schedule", choices=("1df", "bf", "ws"), default="1df")
        if name == "speedup":
            parser.add_argument("--max-procs", type=int, default=16,
                                help="plot P = 1 .. this (default 16)")
        if name == "sizes":
            _size_options(parser, required=True)
        parser.set_defaults(handler=handler)
    validation = kinds.add_parser("validation", help="predicted vs measured seconds")
    validation.add_argument("report", help="a validation report (JSON with `cases`)")
    _output(validation)
    validation.set_defaults(handler=_command_plot_validation)

    report = commands.add_parser("report", help="one self-contained HTML page of the profile")
    _add_common(report, loadable=True)
    _add_model_options(report)
    report.add_argument("-o", "--output", metavar="report.html",
                        help="the page to write (default: the program's name, .report.html)")
    report.add_argument("--procs", "-P", type=int, default=2, help="CPU processors")
    report.add_argument("--schedule", choices=("1df", "bf", "ws"), default="1df")
    report.add_argument("--max-procs", type=int, default=16,
                        help="the speedup plot's largest P (default 16)")
    report.add_argument("--expand-gpu", action="store_true",
                        help="draw each device box's warp boxes and steps")
    _layout_option(report)
    _size_options(report, required=False)
    report.set_defaults(handler=_command_report)


def _layout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layout", choices=("auto", "graphviz", "matplotlib"), default="auto",
                        help="lay the cost graph out with graphviz's dot (auto: where it is "
                        "installed) or with hetprof's own matplotlib layout")


def _opencl_commands(commands: Any) -> None:
    devices = commands.add_parser("devices", help="list the OpenCL platforms and devices")
    devices.set_defaults(handler=_command_devices)

    calibrate = commands.add_parser(
        "calibrate", help="measure a device with microbenchmarks and write a device profile")
    calibrate.add_argument("--device", required=True, help="index or part of a device's name")
    calibrate.add_argument("-o", "--output", required=True, help="the profile to write (JSON)")
    calibrate.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    calibrate.add_argument("--cpu-device", help="the OpenCL CPU device that stands for the "
                           "CPU world (default: the first CPU device, e.g. PoCL)")
    calibrate.set_defaults(handler=_command_calibrate)

    validate = commands.add_parser(
        "validate", help="compare predicted with measured times on real devices")
    validate.add_argument("programs", nargs="*", help="λG programs (default: every example)")
    validate.add_argument("--device", required=True, help="the GPU (or any OpenCL device)")
    validate.add_argument("--device-profile", required=True, help="a calibrated profile")
    validate.add_argument("--cpu-device", help="the OpenCL CPU device for the CPU placement")
    validate.add_argument("--sizes", help="comma-separated sizes n (default: 2^10 ... 2^24 "
                          "where memory allows; --quick: a few small ones)")
    validate.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    validate.add_argument("--repeats", type=count_argument, metavar="N",
                          help="how many times each measured part runs; the median is kept (default 7, --quick 3)")
    validate.add_argument("--gpu-mode", choices=GPU_MODES,
                          help="GPU memory model (default: the profile's)")
    validate.add_argument("--compare-profile", action="append", metavar="FILE.json",
                          help="also predict kernels with this profile (e.g. the other GPU "
                          "mode's fit) and report its errors")
    validate.add_argument("--parts", default="programs,transfers,conflicts",
                          help="what to validate: programs, transfers, conflicts (comma-separated)")
    validate.add_argument("--inputs", choices=("auto", "interpreter", "fast"),
                          default="auto",
                          help="where each on's inputs come from: the interpreter, a numpy "
                          "evaluation of the CPU part (fast; the GPU's value is then checked "
                          "against the CPU device's), or (auto, the default) fast where the "
                          "predictions are symbolic and the CPU part vectorises")
    validate.add_argument("--predictions", choices=("auto", "explicit"), default="auto",
                          help="from the symbolic profiles where the program is regular (auto, "
                          "the default: any size), or always from the explicit evaluation")
    validate.add_argument("--allocation-draw", choices=("process", "profile"), default="process",
                          help="what each work group of a kernel pays for an allocation: "
                          "timed in this process before the programs run (process, the "
                          "default), or the profile's expectation over the near/far draw")
    validate.add_argument("--format", choices=("text", "json"), default="text")
    validate.add_argument("-o", "--output", help="write the report here")
    validate.set_defaults(handler=_command_validate)

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
    rewrites.add_argument("--repeats", type=count_argument, metavar="N",
                          help="how many times each measured part runs; the median is kept (default 7, --quick 3)")
    rewrites.add_argument("--gpu-mode", choices=GPU_MODES,
                          help="GPU memory model (default: the profile's)")
    rewrites.add_argument("--allocation-draw", choices=("process", "profile"), default="process",
                          help="as validate's: each work group's allocation timed in this "
                          "process (the default), or the profile's expectation")
    rewrites.add_argument("--format", choices=("json", "markdown"), default="markdown")
    rewrites.add_argument("-o", "--output", help="write the report here")
    rewrites.set_defaults(handler=_command_validate_rewrites)


def _symbolic_commands(commands: Any) -> None:
    place = commands.add_parser(
        "place", help="for every parallel form: the cheaper world as n grows, and the break-even n")
    _add_common(place)
    _add_model_options(place)
    place.add_argument("--procs", "-P", type=int, default=None,
                       help="CPU processors (default: the compute units the device profile "
                       "measured, else 2)")
    place.add_argument("--size-param", help="the size that grows (default: the first parameter)")
    place.add_argument("--max-n", type=count_argument, default=10**12,
                       help="look for break-even sizes up to this n (default 10^12)")
    place.add_argument("--format", choices=("text", "json"), default="text")
    place.add_argument("-o", "--output", help="write the report here instead of stdout")
    place.set_defaults(handler=_command_place)


def _rewriting_commands(commands: Any) -> None:
    """Add `hetprof rewrite` to the parser."""
    rewrite = commands.add_parser(
        "rewrite", help="list, apply or search rewrites (fusion, placement, local memory, ...) "
        "scored by the cost model")
    _add_common(rewrite)
    _add_model_options(rewrite)
    rewrite.add_argument("--procs", "-P", type=int, default=2, help="CPU processors (default 2)")
    rewrite.add_argument("--schedule", choices=("1df", "bf", "ws"), default="1df",
                         help="CPU schedule: greedy depth-first, breadth-first, work stealing")
    rewrite.add_argument("--apply", action="append", metavar="NAME@LINE:COL",
                         help="apply this rewrite (repeatable: applied in order) and print the "
                         "rewritten program")
    rewrite.add_argument("-o", "--output", metavar="OUT.lg",
                         help="with --apply or --search: write the program here")
    rewrite.add_argument("--search", action="store_true",
                         help="search sequences of rewrites and print the best program found")
    rewrite.add_argument("--beam", type=int, default=1,
                         help="with --search: keep this many programs per depth (1: greedy)")
    rewrite.add_argument("--depth", type=int, default=4,
                         help="with --search: at most this many rewrites (default 4)")
    rewrite.add_argument("--size-param", metavar="NAME",
                         help="the size parameter of the break-even point (default: n, else "
                         "the program's first parameter)")
    rewrite.add_argument("--ladder-max", type=int, default=1024,
                         help="the largest size tried for the break-even point (default 1024)")
    rewrite.add_argument("--no-break-even", action="store_true",
                         help="do not look for the size from which each rewrite pays")
    rewrite.add_argument("--format", choices=("text", "json"), default="text")
    rewrite.set_defaults(handler=_command_rewrite)


class _VersionAction(argparse.Action):
    """`--version`, as argparse's own, but the version is looked up only when it is asked for:
    importlib.metadata takes 0.02 s of every command's start."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS,
                 help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"hetprof {_version()}")
        parser.exit()


def _version() -> str:
    from importlib import metadata  # only for --version

    try:
        return metadata.version("hetprof")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "(not installed)"


def _command_check(args: argparse.Namespace, holder: SourceHolder) -> int:
    checked = load_checked(args.file, holder)
    print(f"{args.file}: ok: {checked.type}")
    return EXIT_OK


# -- the other handlers: each imports its command module when it runs -------------------------------


def _command_graph(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_graph

    return command_graph(args, holder)


def _command_plot_validation(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_plot_validation

    return command_plot_validation(args, holder)


def _command_report(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_report

    return command_report(args, holder)


def _command_plot_space(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_plot_space

    return command_plot_space(args, holder)


def _command_plot_timeline(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_plot_timeline

    return command_plot_timeline(args, holder)


def _command_plot_speedup(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_plot_speedup

    return command_plot_speedup(args, holder)


def _command_plot_sizes(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.pictures import command_plot_sizes

    return command_plot_sizes(args, holder)


def _command_devices(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.opencl import command_devices

    return command_devices(args, holder)


def _command_calibrate(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.calibration import command_calibrate

    return command_calibrate(args, holder)


def _command_validate(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.calibration import command_validate

    return command_validate(args, holder)


def _command_validate_rewrites(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.calibration import command_validate_rewrites

    return command_validate_rewrites(args, holder)


def _command_place(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.symbolic import command_place

    return command_place(args, holder)


def _command_rewrite(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.rewriting import command_rewrite

    return command_rewrite(args, holder)


def _command_run(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.commands import command_run

    return command_run(args, holder)


def _command_profile(args: argparse.Namespace, holder: SourceHolder) -> int:
    from cli.commands import command_profile

    return command_profile(args, holder)
