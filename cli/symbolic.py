"""`hetprof profile --symbolic` and `hetprof place`: formulas in the size parameters, and where
each parallel form is cheaper as the size grows."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from cli.common import (
    EXIT_OK,
    SourceHolder,
    UsageError,
    check_procs,
    evaluation_options,
    load_checked,
    parse_params,
    write_output,
)
from cli.forked import Beside, forked_map
from cli.progress import verdict_progress
from graphs.analysis import analyse
from graphs.crossings import bisect, crossings, ladder, resolved_upper
from graphs.kernel_counts import on_bound
from graphs.numbers import json_text
from graphs.render_symbolic import PLACE_HEADINGS, place_cells, render_place, render_symbolic
from graphs.semantics.explicit import Evaluation, evaluate
from graphs.semantics.irregular import NotRegular, OutsideAssumptions
from graphs.semantics.options import EvaluationOptions
from graphs.symbolic_profile import (
    PLACEMENT_TIME,
    TimeCurve,
    formula_text,
    report,
    symbolic_profile,
)
from models.cpu import by_class
from models.opencl.predict import OnPlacement, growth_as_write
from models.opencl.validate import ExplicitOnPlacement
from profiler.checker import CheckedProgram, bind_parameters
from profiler.errors import EvaluationError
from profiler.rewrite import RULES, Site, Subject, node_at, offered

PLACEMENT_RULES = ("insert-on", "remove-on")  # the rewrites that move a parallel form (§7.1)
EXPLICIT_NODES = 300_000  # beside the formulas, schedule the explicit graph up to this size


def command_symbolic_profile(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof profile FILE --symbolic`. A program that is not regular raises NotRegular (the
    caller profiles it explicitly)."""
    check_procs(args)
    if args.format not in ("text", "json"):
        raise UsageError("--symbolic writes text or json (--format text|json)")
    checked = load_checked(args.file, holder)
    values = bind_parameters(checked, parse_params(args.param))
    options = evaluation_options(args)
    # The explicit graph's time beside the formulas, in a child (cli.forked); not waited for
    # where the graph is too large to schedule, or the program has no symbolic profile.
    explicit = Beside(lambda: _explicit_time(checked, values, options, args))
    try:
        profile = symbolic_profile(checked, options, values)
        # the text shows a formula of many pieces by its piece: not written out whole for it
        result = report(profile, values, args.procs, whole=args.format == "json")
        small = result["values"]["nodes"] <= EXPLICIT_NODES
        explicit_time = explicit.result() if small else None
    finally:
        explicit.cancel()  # a child not waited for; nothing where its result came back
    result["file"] = args.file
    result["schedule"] = args.schedule
    result["explicit_time"] = explicit_time
    if getattr(args, "growth_as_write", False):
        result["assumptions"].append("a region's growth costs a write (--growth-as-write)")
    if args.format == "json":
        write_output(json_text(result, default=str) + "\n", args.output)
    else:
        write_output(render_symbolic(result), args.output)
    return EXIT_OK


def _explicit_time(checked: CheckedProgram, values: dict[str, int], options: EvaluationOptions,
                   args: argparse.Namespace) -> float:
    """The exact time under the schedule, from the explicit graph (the caller asks only where
    the symbolic profile counts at most EXPLICIT_NODES nodes)."""
    evaluation = evaluate(checked, values, options)
    return analyse(evaluation, args.procs, args.schedule, pictures=False).time


# -- place --------------------------------------------------------------------------------------------


def command_place(args: argparse.Namespace, holder: SourceHolder) -> int:
    """`hetprof place FILE`: for every `on` and every CPU parallel form outside one, the two
    placements (§7.1), their times as formulas, and the sizes where the cheaper one changes."""
    check_procs(args)
    checked = load_checked(args.file, holder)
    values = bind_parameters(checked, parse_params(args.param))
    if not values:
        raise UsageError(f"{args.file} has no size parameter to vary")
    if args.size_param is not None and not args.size_param.strip():
        raise UsageError("--size-param is empty: name a size parameter")
    parameter = args.size_param or next(iter(values))
    if parameter not in values:
        raise UsageError(f"--size-param {parameter}: the program has no such parameter "
                         f"(it has {', '.join(values)})")
    options = evaluation_options(args)
    calibrated = by_class(options.profile)
    if calibrated:  # the OpenCL backend sizes regions before a kernel (models.opencl.predict)
        options = replace(options, profile=growth_as_write(options.profile))
    if args.procs is None:  # the CPU device's compute units where the profile measured them
        args.procs = options.profile.cpu.processors or 2
    subject = Subject(checked)
    curves = _Curves(values, parameter, options, args.procs)
    # Only the two placement rules are tried: the others' results are not checked for nothing.
    rules = tuple(rule for rule in RULES if rule.name in PLACEMENT_RULES)
    placements = [r for r in offered(subject, rules) if r.site.rule in PLACEMENT_RULES]
    if placements and not calibrated:  # the written program's curve, in every row: made once
        try:
            written = curves(subject)
            _ = written.formula, written(1)
        except NotRegular:
            pass

    def place(index: int) -> dict[str, Any]:
        rewrite = placements[index]
        written_on = rewrite.site.rule == "remove-on"
        gpu, cpu = ((rewrite.before, rewrite.after) if written_on
                    else (rewrite.after, rewrite.before))
        if calibrated:
            return _place_on(rewrite.site, written_on, cpu, gpu, values, parameter, options,
                             args, curves)
        return _place_site(rewrite.site, written_on, cpu, gpu, values, parameter, options, args,
                           curves)

    # The sites are placed by this process and a forked one (cli.forked), and each verdict is
    # shown as soon as it is decided, under a progress bar (on a terminal only, as `hetprof
    # rewrite` does; started once the child is forked); the table follows on stdout.
    progress = verdict_progress(args)
    task = progress.add_task("placing parallel forms", total=len(placements))

    def shown(_: int, site: dict[str, Any]) -> None:
        if not progress.disable:
            cells = dict(zip(PLACE_HEADINGS, place_cells(site, options.profile.units),
                             strict=True))
            progress.console.print(
                f"{cells['site']}: use {cells['use']} (CPU {cells['CPU time']}, GPU "
                f"{cells['GPU time']}); {cells['cheaper as n grows']}", markup=False)
        progress.advance(task)

    try:
        sites = forked_map(place, len(placements), shown, forked=progress.start)
    finally:
        progress.stop()
    result = {"file": args.file, "parameter": parameter, "params": values, "procs": args.procs,
              "units": options.profile.units, "time": PLACEMENT_TIME,
              "sites": sites}
    if args.format == "json":
        write_output(json_text(result, default=str) + "\n", args.output)
    else:
        write_output(render_place(result), args.output)
    return EXIT_OK


def _place_site(where: Site, written_on: bool, cpu: Subject, gpu: Subject,
                values: dict[str, int], parameter: str, options: EvaluationOptions,
                args: argparse.Namespace, curves: _Curves) -> dict[str, Any]:
    site: dict[str, Any] = {"site": where.where, "written": "gpu" if written_on else "cpu"}
    span = node_at(gpu.checked.body, where.path).span  # the `on`, written or inserted
    try:
        worlds = {"cpu": curves(cpu), "gpu": curves(gpu)}
        placed = _place_symbolic(site, worlds, values, parameter, args)
        placed["bound"] = worlds["gpu"].profile.on_bound(span, values)
        return placed
    except NotRegular as irregular:  # or sizes outside the formulas' assumptions
        why = ("outside the formulas' assumptions" if isinstance(irregular, OutsideAssumptions)
               else "not regular")
        site.update(method="explicit", note=f"{why}: {irregular.message}")
        return _place_explicit(site, cpu.checked, gpu.checked, values, parameter, options, args,
                               span)


CALIBRATED_NOTE = (
    "the `on` alone, as `hetprof validate` predicts it: on the GPU its transfers, kernels and "
    "merge; on the CPU its body on the compute units its work groups fill, at least its floor "
    "(bytes over the socket's bandwidth, allocations one after another), plus a launch per "
    "one-work-item kernel (models.opencl.predict.OnPlacement)")


def _place_on(where: Site, written_on: bool, cpu: Subject, gpu: Subject,
              values: dict[str, int], parameter: str, options: EvaluationOptions,
              args: argparse.Namespace, curves: _Curves) -> dict[str, Any]:
    """A site placed under a profile that prices the CPU by operation class: the `on` against its
    body on the CPU device, as `validate` predicts the two (`OnPlacement`); the crossings by the
    exact costs at sizes 1, 2, 4, ... up to --max-n or the largest size the profile prices, and,
    where the profile knows the card's memory (`gpu.memory_bytes`), the largest size whose `on`
    heap fits it (`_fits_up_to`; a note says so). A program without a symbolic profile is placed
    as under any other profile (`_place_site`)."""
    site: dict[str, Any] = {"site": where.where, "written": "gpu" if written_on else "cpu"}
    on = node_at(gpu.checked.body, where.path)
    mode = options.gpu_mode or options.profile.gpu.mode
    placement: OnPlacement | ExplicitOnPlacement
    try:
        symbolic = placement = OnPlacement(gpu.checked, on.span, options.profile, mode,
                                           args.procs)
        memory = options.profile.gpu.memory_bytes

        def heap(n: int) -> int:
            return symbolic.heap_bytes({**values, parameter: n})

        fits = _fits_up_to(heap, memory, max(args.max_n, values[parameter]))
        limit = min(args.max_n, max(fits, values[parameter]))
        upper = _priced_up_to(lambda n: placement.times({**values, parameter: n})[0], limit)
        if fits < args.max_n and upper == limit:  # the card's memory, not the formulas, ended it
            site["note"] = (f"crossings looked for up to {parameter} = {fits}: from {parameter} "
                            f"= {fits + 1} the `on`'s heap ({heap(fits + 1):,} bytes) outgrows "
                            f"the card's memory ({int(memory):,} bytes)")
        method, note = "calibrated", CALIBRATED_NOTE
    except NotRegular as irregular:
        # No symbolic profile: the same prediction from explicit evaluations, at the sizes
        # 1, 2, 4, ... up to the size given (each evaluates the program twice).
        placement = ExplicitOnPlacement(gpu.checked, on.span, options.profile, mode, args.procs)
        upper = max(values[parameter], 2)
        method = "calibrated, explicit"
        note = f"{CALIBRATED_NOTE}; evaluated explicitly ({irregular.message})"
    worlds = ("cpu", "gpu")

    def cost(world: str):
        return lambda n: placement.times({**values, parameter: n})[worlds.index(world)]

    try:
        at_params = {w: cost(w)(values[parameter]) for w in worlds}
        lower = _runs_from(site, [cost(w) for w in worlds], parameter, upper)
        found = crossings(cost("cpu"), cost("gpu"), parameter, upper=upper, names=worlds,
                          lower=lower)
        site.update(method=method, note=_joined(note, site.get("note")), at_params=at_params,
                    bound=placement.bound(values),
                    cheaper_from_1="cpu" if cost("cpu")(lower) < cost("gpu")(lower) else "gpu",
                    crossings=[{"n": c.n, "cheaper": c.cheaper, "method": c.method}
                               for c in found])
    except NotRegular as irregular:
        placed = _place_site(where, written_on, cpu, gpu, values, parameter, options,
                             args, curves)
        why = f"not placed alone ({irregular.message})"
        placed["note"] = f"{why}; {placed['note']}" if placed.get("note") else why
        return placed
    if upper < args.max_n:
        site["searched_up_to"] = upper
    return site


def _runs_from(site: dict[str, Any], costs, parameter: str, upper: int) -> int:
    """The first size of the ladder 1, 2, 4, ... (up to `upper`, where the program runs: the
    caller priced it) at which every cost is priced: a program may not run below some size (an
    index past a vector's end where n is smaller than it assumes, as kmeans's first k points are
    its centres). Where it is above 1, `site` records it (`runs_from`) and a note says why, in the
    program's own words; crossings are then looked for from there."""
    for n in [*ladder(upper, halves=False), upper]:
        try:
            for cost in costs:
                cost(n)
        except EvaluationError as error:
            failed = n, error
            continue
        if n > 1:
            size, last = failed
            site.update(runs_from=n, note=_joined(
                site.get("note"), f"placed from {parameter} = {n}: the program does not run at "
                f"{parameter} = {size} and below ({_where(last)}{last.message})"))
        return n
    return upper  # not reached: the caller priced `upper`


def _where(error: EvaluationError) -> str:
    """`line:column: ` of where an evaluation error happened, where it says."""
    return f"{error.span.line}:{error.span.column}: " if error.span is not None else ""


def _joined(first: str | None, second: str | None) -> str | None:
    """Two notes as one (either may be missing)."""
    return "; ".join(n for n in (first, second) if n) or None


def _fits_up_to(heap_bytes, memory: float, largest: int) -> int:
    """The largest size up to `largest` whose heap (`heap_bytes(n)`, growing with n) fits a card
    of `memory` bytes: the ladder 1, 2, 4, ... to the first size that does not fit, then bisected
    to the exact integer; `largest` where the memory is not known (0) or every size fits, 0
    where none does."""
    if memory <= 0:
        return largest
    low = 0
    for n in [*ladder(largest, halves=False), largest]:
        if heap_bytes(n) > memory:
            if low == 0:
                return 0
            low, _ = bisect(low, n, lambda m: heap_bytes(m) <= memory)
            return low
        low = n
    return largest


def _priced_up_to(cost, largest: int) -> int:
    """The largest size of the ladder 1, 2, 4, ... up to `largest` from which down every size is
    priced (a size past the formulas' assumptions, or too large for a kernel's lanes, stops it);
    `largest` itself where all are."""
    good = 0
    for n in ladder(largest, halves=False):
        try:
            cost(n)
        except (NotRegular, OverflowError, MemoryError):
            break
        good = n
    if good == 0:
        raise NotRegular("no size is priced", None)
    return largest if good == ladder(largest, halves=False)[-1] else good


class _Curves:
    """Each program's time curve, made once (the written program is in every row; a NotRegular
    is kept and raised again), its kernels priced through one dict that every curve shares."""

    def __init__(self, values: dict[str, int], parameter: str, options: EvaluationOptions,
                 procs: int):
        self.values, self.parameter, self.options, self.procs = values, parameter, options, procs
        self.made: dict[Any, TimeCurve | NotRegular] = {}
        self.prices: dict = {}

    def __call__(self, subject: Subject) -> TimeCurve:
        key = subject.key()
        if key not in self.made:
            try:
                self.made[key] = TimeCurve(subject.checked, self.options, self.values,
                                           self.parameter, self.procs, self.prices)
            except NotRegular as irregular:
                self.made[key] = irregular
        found = self.made[key]
        if isinstance(found, NotRegular):
            raise found
        return found


def _place_symbolic(site: dict[str, Any], worlds: dict[str, TimeCurve],
                    values: dict[str, int], parameter: str,
                    args: argparse.Namespace) -> dict[str, Any]:
    """A site placed by its two symbolic profiles: the formulas, and the crossings up to
    --max-n."""
    formulas = {w: curve.formula for w, curve in worlds.items()}

    def time_of(world: str) -> TimeCurve:
        return worlds[world]

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
                    parameter: str, options: EvaluationOptions, args, span) -> dict:
    """Placement by the explicit evaluator at sizes 1, 2, 4, ... up to the size given; what
    bounds the `on` at `span` from the GPU placement's evaluation at the size given."""
    given: dict[int, Evaluation] = {}
    times: dict[tuple[int, int], float] = {}  # (which program, n) -> time: each evaluated once

    def time_of(checked: CheckedProgram):
        def at(n: int) -> float:
            key = (id(checked), n)
            if key not in times:
                evaluation = evaluate(checked, {**values, parameter: n}, options)
                if checked is gpu and n == values[parameter]:
                    given[n] = evaluation
                times[key] = analyse(evaluation, args.procs, "1df", pictures=False).time
            return times[key]
        return at

    upper = max(values[parameter], 2)
    at_params = {"cpu": time_of(cpu)(values[parameter]), "gpu": time_of(gpu)(values[parameter])}
    lower = _runs_from(site, [time_of(cpu), time_of(gpu)], parameter, upper)
    found = crossings(time_of(cpu), time_of(gpu), parameter, upper=upper, names=("cpu", "gpu"),
                      lower=lower)
    site.update(at_params=at_params,
                cheaper_from_1="cpu" if time_of(cpu)(lower) < time_of(gpu)(lower) else "gpu",
                crossings=[{"n": c.n, "cheaper": c.cheaper, "method": c.method} for c in found],
                searched_up_to=upper)
    record = next((r for r in given[values[parameter]].ons if r.span == span), None)
    if record is not None:
        site["bound"] = on_bound(record, options.profile)
    return site
