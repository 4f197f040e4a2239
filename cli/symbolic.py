"""`hetprof profile --symbolic` and `hetprof place`: formulas in the size parameters, and where
each parallel form is cheaper as the size grows."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from typing import Any

from cli.commands import command_profile, device_profile, load_checked, write_output
from cli.main import EXIT_OK, SourceHolder, UsageError, parse_params
from graphs.analysis import analyse
from graphs.symbolic import (
    PLACEMENT_TIME,
    SymbolicProfile,
    crossings,
    formula_text,
    placement_time,
    report,
    resolved_upper,
    symbolic_profile,
)
from profiler.checker import CheckedProgram
from profiler.errors import ParameterError
from profiler.evaluator import EvaluationOptions, bind_parameters, evaluate
from profiler.rewrite import Subject, offered
from profiler.symbolic import NotRegular

EXPLICIT_NODES = 300_000  # beside the formulas, schedule the explicit graph up to this size


def register(commands, add_common, add_model_options) -> None:
    place = commands.add_parser(
        "place", help="for every parallel form: the cheaper world as n grows, and the break-even n")
    add_common(place)
    add_model_options(place)
    place.add_argument("--procs", "-P", type=int, default=2, help="CPU processors (default 2)")
    place.add_argument("--size-param", help="the size that grows (default: the first parameter)")
    place.add_argument("--max-n", type=int, default=10**12,
                       help="look for break-even sizes up to this n (default 10^12)")
    place.add_argument("--format", choices=("text", "json"), default="text")
    place.add_argument("-o", "--output", help="write the report here instead of stdout")
    place.set_defaults(handler="cli.symbolic:command_place")


def _options(args: argparse.Namespace) -> EvaluationOptions:
    return EvaluationOptions(profile=device_profile(args), gpu_mode=args.gpu_mode,
                             grow_gpu_regions=not args.strict_gpu_regions)


def command_symbolic_profile(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof profile FILE --symbolic`."""
    if args.procs < 1:
        raise ParameterError("--procs must be at least 1")
    if args.format not in ("text", "json"):
        raise UsageError("--symbolic writes text or json (--format text|json)")
    checked = load_checked(args.file, holder)
    values = bind_parameters(checked, parse_params(args.param))
    options = _options(args)
    try:
        profile = symbolic_profile(checked, options, values)
        result = report(profile, values, args.procs)
    except NotRegular as irregular:
        return _fallback(args, holder, irregular)
    result["file"] = args.file
    result["schedule"] = args.schedule
    result["explicit_time"] = _explicit_time(checked, values, options, args, result)
    if args.format == "json":
        write_output(json.dumps(result, indent=2, default=str) + "\n", args.output)
    else:
        write_output(render_symbolic(result), args.output)
    return EXIT_OK


def _explicit_time(checked: CheckedProgram, values: dict[str, int], options: EvaluationOptions,
                   args: argparse.Namespace, result: dict) -> float | None:
    """The exact time under the schedule, from the explicit graph, where it is small enough."""
    if result["values"]["nodes"] > EXPLICIT_NODES:
        return None
    evaluation = evaluate(checked, values, options)
    return analyse(evaluation, args.procs, args.schedule, pictures=False).time


def _fallback(args: argparse.Namespace, holder: SourceHolder, irregular: NotRegular) -> int:
    where = f"{irregular.span}: " if irregular.span is not None else ""
    note = (f"not regular, so profiled explicitly at the sizes given: {where}{irregular.message}")
    if args.format == "json":
        output, args.output = args.output, None
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            command_profile(replace_args(args, symbolic=False), holder)
        data = {"symbolic": False, "reason": irregular.message,
                "location": str(irregular.span) if irregular.span else None,
                "explicit": json.loads(buffer.getvalue())}
        write_output(json.dumps(data, indent=2) + "\n", output)
        return EXIT_OK
    print(f"hetprof: {note}")
    return command_profile(replace_args(args, symbolic=False), holder)


def replace_args(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    values = vars(args).copy()
    values.update(changes)
    return argparse.Namespace(**values)


def render_symbolic(result: dict) -> str:
    """The symbolic report as text: each quantity's formula and its value at the sizes given."""
    values, formulas = result["values"], result["formulas"]
    at = ", ".join(f"{k} = {v}" for k, v in result["params"].items())
    procs = result["procs"]
    rows: list[tuple[str, str, str]] = [
        ("work", formulas["work"], _number(values["work"])),
        ("span", formulas["span"], _number(values["span"])),
    ]
    if formulas["time"] is not None:
        rows.append((f"time (P = {procs}, every schedule)", formulas["time"],
                     _number(values["time"])))
    else:
        lower, upper = formulas["time_bounds"]
        exact = values["time"] is not None  # the bounds meet at these sizes
        rows.append((f"time (P = {procs}) at least", lower, _number(values["time_bounds"][0])))
        rows.append((f"time (P = {procs}) at most", upper, _number(values["time_bounds"][1])))
        if exact:
            rows.append((f"time (P = {procs}, every schedule)", "-", _number(values["time"])))
        elif result.get("explicit_time") is not None:
            rows.append((f"time ({result['schedule']}, P = {procs}, explicit)", "-",
                         _number(result["explicit_time"])))
    for world in ("cpu", "gpu", "peak"):
        rows.append((f"space {world} (words)", formulas["space"][world],
                     _number(values["space"][world])))
    rows.append(("bytes to the device", formulas["bytes_to_device"],
                 _number(values["bytes_to_device"])))
    rows.append(("bytes back to the host", formulas["bytes_to_host"],
                 _number(values["bytes_to_host"])))
    for i, (box, numbers) in enumerate(zip(formulas["on"], values["on"], strict=True)):
        for part in ("transfer_in", "kernel", "transfer_out", "grow", "merge"):
            rows.append((f"on #{i + 1} {part.replace('_', ' ')}", box[part],
                         _number(numbers[part])))
    for name, centre in formulas["cost_centres"].items():
        rows.append((f'centre "{name}" work', centre["work"],
                     _number(values["cost_centres"][name]["work"])))
    rows.append(("cost-graph nodes (explicit)", formulas["nodes"], _number(values["nodes"])))
    width = max(len(r[0]) for r in rows)
    formula_width = min(70, max(len(r[1]) for r in rows))
    lines = [f"{result['file']}: symbolic profile in {', '.join(result['symbols']) or 'nothing'}"
             f" (P = {procs}), values at {at}",
             f"assuming: {'; '.join(result['assumptions'])}", ""]
    lines.append(f"{'quantity':<{width}}  {'formula':<{formula_width}}  value")
    for name, formula, value in rows:
        lines.append(f"{name:<{width}}  {formula:<{formula_width}}  {value}")
    return "\n".join(lines) + "\n"


def _number(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not x.is_integer():
        text = f"{x:,.4f}".rstrip("0").rstrip(".") if abs(x) >= 1e-3 else f"{x:.6g}"
        return text.replace(",", " ")
    return f"{int(x):,}".replace(",", " ")


# -- place --------------------------------------------------------------------------------------------


def command_place(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof place FILE`: for every `on` and every CPU parallel form outside one, the two
    placements (§7.1), their times as formulas, and the sizes where the cheaper one changes."""
    if args.procs < 1:
        raise ParameterError("--procs must be at least 1")
    checked = load_checked(args.file, holder)
    values = bind_parameters(checked, parse_params(args.param))
    if not values:
        raise UsageError(f"{args.file} has no size parameter to vary")
    parameter = args.size_param or next(iter(values))
    if parameter not in values:
        raise UsageError(f"--size-param {parameter}: the program has no such parameter "
                         f"(it has {', '.join(values)})")
    options = _options(args)
    subject = Subject(checked)
    sites = []
    for rewrite in offered(subject):
        if rewrite.site.rule not in ("insert-on", "remove-on"):
            continue
        written_on = rewrite.site.rule == "remove-on"
        gpu, cpu = ((rewrite.before, rewrite.after) if written_on
                    else (rewrite.after, rewrite.before))
        sites.append(_place_site(rewrite.site.where, written_on, cpu.checked, gpu.checked,
                                 values, parameter, options, args))
    result = {"file": args.file, "parameter": parameter, "params": values, "procs": args.procs,
              "time": PLACEMENT_TIME,
              "sites": sites}
    if args.format == "json":
        write_output(json.dumps(result, indent=2, default=str) + "\n", args.output)
    else:
        write_output(_render_place(result), args.output)
    return EXIT_OK


def _place_site(where: str, written_on: bool, cpu: CheckedProgram, gpu: CheckedProgram,
                values: dict[str, int], parameter: str, options: EvaluationOptions,
                args: argparse.Namespace) -> dict[str, Any]:
    site: dict[str, Any] = {"site": where, "written": "gpu" if written_on else "cpu"}
    try:
        profiles = {"cpu": symbolic_profile(cpu, options, values, [parameter]),
                    "gpu": symbolic_profile(gpu, options, values, [parameter])}
    except NotRegular as irregular:
        site.update(method="explicit", note=f"not regular: {irregular.message}")
        return _place_explicit(site, cpu, gpu, values, parameter, options, args)
    formulas = {w: placement_time(p, args.procs) for w, p in profiles.items()}

    def time_of(world: str):
        profile: SymbolicProfile = profiles[world]

        def at(n: int) -> float:
            return profile.time_at({**values, parameter: n}, args.procs)[0]
        return at

    largest = resolved_upper(time_of("cpu"), time_of("gpu"), parameter, formulas["cpu"],
                             formulas["gpu"], args.max_n)
    found = crossings(time_of("cpu"), time_of("gpu"), parameter, formulas["cpu"],
                      formulas["gpu"], largest, ("cpu", "gpu"))
    first = "cpu" if time_of("cpu")(1) < time_of("gpu")(1) else "gpu"
    site.update(
        method="symbolic",
        time={w: formula_text(f) for w, f in formulas.items()},
        at_params={w: time_of(w)(values[parameter]) for w in formulas},
        cheaper_from_1=first,
        crossings=[{"n": c.n, "cheaper": c.cheaper, "method": c.method} for c in found],
    )
    if largest < args.max_n:
        site.update(searched_up_to=largest,
                    note=f"above {parameter} = {largest} the two times differ by less than their "
                         "floating-point resolution")
    return site


def _place_explicit(site: dict, cpu: CheckedProgram, gpu: CheckedProgram, values: dict,
                    parameter: str, options: EvaluationOptions, args) -> dict:
    """Placement by the explicit evaluator at sizes 1, 2, 4, ... up to the size given."""
    def time_of(checked: CheckedProgram):
        def at(n: int) -> float:
            evaluation = evaluate(checked, {**values, parameter: n}, options)
            return analyse(evaluation, args.procs, "1df", pictures=False).time
        return at

    upper = max(values[parameter], 2)
    found = crossings(time_of(cpu), time_of(gpu), parameter, upper=upper, names=("cpu", "gpu"))
    site.update(at_params={"cpu": time_of(cpu)(values[parameter]),
                           "gpu": time_of(gpu)(values[parameter])},
                cheaper_from_1="cpu" if time_of(cpu)(1) < time_of(gpu)(1) else "gpu",
                crossings=[{"n": c.n, "cheaper": c.cheaper, "method": c.method} for c in found],
                searched_up_to=upper)
    return site


def _render_place(result: dict) -> str:
    n = result["parameter"]
    lines = [f"{result['file']}: where each parallel form is cheaper as {n} grows "
             f"(P = {result['procs']}; time = {result['time']})", ""]
    if not result["sites"]:
        lines.append("no parallel form to place (no `on`, and no parmap or reduce outside one)")
    for site in result["sites"]:
        written = "under `on` (GPU)" if site["written"] == "gpu" else "on the CPU"
        lines.append(f"{site['site']}: written {written}; {site['method']}"
                     + (f" ({site['note']})" if site.get("note") else ""))
        if "time" in site:
            lines.append(f"  CPU time = {site['time']['cpu']}")
            lines.append(f"  GPU time = {site['time']['gpu']}")
        here = site["at_params"]
        lines.append(f"  at {n} = {result['params'][n]}: CPU {_number(here['cpu'])}, "
                     f"GPU {_number(here['gpu'])}")
        pieces = [f"{site['cheaper_from_1'].upper()} from {n} = 1"]
        for c in site["crossings"]:
            pieces.append(f"{c['cheaper'].upper()} from {n} = {c['n']:,} ({c['method']})"
                          .replace(",", " "))
        if not site["crossings"]:
            upper = site.get("searched_up_to")
            pieces.append("no break-even" + (f" up to {upper}" if upper else ""))
        lines.append("  cheaper: " + "; ".join(pieces))
    return "\n".join(lines) + "\n"


