"""`hetprof rewrite`: the rewrites that apply to a program, scored under the cost semantics.

    hetprof rewrite FILE [--param n=1024] [--size-param n] [--ladder-max N] [--no-break-even]
                    [--format text|json]                     # every rewrite at every site
    hetprof rewrite FILE --apply NAME@LINE:COL [--apply ...] [-o OUT.lg]   # the rewritten program
    hetprof rewrite FILE --search [--beam K] [--depth D] [-o OUT.lg]       # the best sequence
"""

from __future__ import annotations

import argparse
import shutil
import sys
from io import StringIO

from rich.console import Console
from rich.table import Table

from cli.common import (
    EXIT_OK,
    SourceHolder,
    UsageError,
    evaluation_options,
    load_checked,
    parse_params,
    write_output,
)
from cli.forked import forked_map
from cli.progress import verdict_progress
from graphs.numbers import amount, json_text, number, signed
from graphs.rewrite_score import (
    DISAGREES,
    Assessment,
    Score,
    Scorer,
    SearchResult,
    bound_term,
    search,
    symbolic_solver,
)
from profiler.checker import bind_parameters
from profiler.errors import ParameterError
from profiler.rewrite import Subject, find, offered, parse_key, start


def command_rewrite(args: argparse.Namespace, holder: SourceHolder) -> int:
    if args.procs < 1:
        raise ParameterError("--procs must be at least 1")
    if args.beam < 1 or args.depth < 1:
        raise UsageError("--beam and --depth must be at least 1")
    if args.ladder_max < 1:
        raise UsageError("--ladder-max must be at least 1")
    if args.search and args.apply:
        raise UsageError("--apply and --search do not go together: apply, write the program "
                         "with -o, then search from it")
    if args.output and not (args.search or args.apply):
        raise UsageError("-o writes a rewritten program: give --apply NAME@LINE:COL or --search")
    checked = load_checked(args.file, holder)
    params = bind_parameters(checked, parse_params(args.param))
    scorer = Scorer(params, evaluation_options(args), args.procs, args.schedule)
    subject = start(checked, scorer.initial_settings())
    if args.apply:
        return _apply(args, scorer, subject)
    if args.search:
        return _search(args, scorer, subject)
    return _list(args, scorer, subject, _size_parameter(args, checked, params))


def _size_parameter(args: argparse.Namespace, checked, params: dict[str, int]) -> str | None:
    if args.no_break_even:
        return None
    if args.size_param is not None:
        if args.size_param not in params:
            known = ", ".join(sorted(params)) or "none"
            raise UsageError(f"--size-param {args.size_param}: the program declares no such "
                             f"parameter (declared: {known})")
        return args.size_param
    if "n" in params:
        return "n"
    return checked.program.params[0].name if checked.program.params else None


def _header(args: argparse.Namespace, scorer: Scorer, score: Score) -> str:
    values = ", ".join(f"{k}={v}" for k, v in sorted(scorer.params.items())) or "no parameters"
    profile = scorer.options.profile
    mode = scorer.options.gpu_mode or profile.gpu.mode
    return (f"{args.file} ({values}; P={scorer.procs}, {args.schedule}; GPU model {mode}; "
            f"units {profile.units})\ntime {amount(score.time, profile.units)}, space "
            f"{number(score.space)} words")


def _list(args: argparse.Namespace, scorer: Scorer, subject: Subject,
          parameter: str | None) -> int:
    base = scorer.score(subject)
    # Symbolic profiles answer "from which n" for every size up to 10^12 where both programs
    # are regular; the ladder of explicit evaluations answers for the others.
    solver = symbolic_solver(scorer) if parameter is not None else None
    rewrites = offered(subject)
    size = scorer.params.get(parameter) if parameter is not None else None
    if solver is not None and parameter is not None:  # shared by every row, made before the fork
        written = solver.curve_of(subject, parameter)
        if written is not None:
            _ = written.formula, written(1)
    # The rows are scored by this process and a forked one (cli.forked), and each is shown as
    # soon as it is scored, under a progress bar (on a terminal only; started once the child is
    # forked).
    units = scorer.options.profile.units
    progress = verdict_progress(args)
    task = progress.add_task("scoring rewrites", total=len(rewrites))

    def shown(_: int, assessment: Assessment) -> None:
        if not progress.disable:
            cells = _cells(assessment, units, parameter, size, "")
            progress.console.print(f"{cells[0]}: {cells[4]}, {cells[3]}, pays when "
                                   f"{cells[7]}")
        progress.advance(task)

    try:
        assessments = forked_map(
            lambda i: scorer.assess(rewrites[i], parameter, args.ladder_max, solver),
            len(rewrites), shown, forked=progress.start)
    finally:
        progress.stop()
    if args.format == "json":
        data = {"file": args.file, "params": scorer.params, "procs": scorer.procs,
                "schedule": args.schedule, "time": base.time, "space": base.space,
                "size_parameter": parameter,
                "rewrites": [a.to_json() for a in assessments]}
        write_output(json_text(data) + "\n", None)
        return EXIT_OK
    lines = [_header(args, scorer, base), ""]
    if not assessments:
        lines.append("no rewrite applies to this program")
    else:
        lines.extend(_table(assessments, units, parameter, size))
    write_output("\n".join(lines) + "\n", None)
    return EXIT_OK


HEADINGS = ("rewrite", "time before -> after", "speedup", "bound", "moved", "use", "space",
            "pays when")


def _common_range(assessments: list[Assessment]) -> str | None:
    """The sizes most symbolic answers cover (`n <= 10^12`): the note under the table says it
    once, and a row that covers fewer says its own."""
    ranges = [a.break_even.searched(grouped=True) for a in assessments
              if a.break_even is not None
              and not a.break_even.method.startswith("numeric")]
    return max(set(ranges), key=ranges.count) if ranges else None


def _cells(a: Assessment, units: str, parameter: str | None, size: int | None,
           common: str | None = None) -> tuple[str, ...]:
    """One rewrite's verdict row: its times, speedup, what bounds the rewritten program, the term
    that moved, whether to apply it at these sizes, its space and where it pays."""
    delta = a.after.term(a.moved) - a.before.term(a.moved) if a.moved != "nothing" else 0
    moved = a.moved if a.moved == "nothing" else f"{a.moved} {signed(delta, units)}"
    # A speedup that prints as 1.000x is a tie here, whichever side of 1 it lies on.
    if a.after.time < a.before.time and f"{a.speedup:.3f}" != "1.000":
        use = "apply"
    elif a.after.time > a.before.time and f"{a.speedup:.3f}" != "1.000":
        use = "keep"
    else:
        use = "same here" if size is None else f"same at {parameter} = {size:,}"
    pays = "-"
    if a.break_even is not None:
        pays = a.break_even.describe(grouped=True)
        if a.break_even.direction in ("always", "never"):
            if a.break_even.method.startswith("numeric"):
                pays += " †"
            elif a.break_even.searched(grouped=True) != common:
                pays += f" ({a.break_even.searched(grouped=True)})"
        if DISAGREES in a.break_even.method:
            pays += " *"
    return (a.key, f"{amount(a.before.time, units)} -> {amount(a.after.time, units)}",
            f"{a.speedup:.3f}x",
            bound_term(a.after), moved, use,
            f"{number(a.before.space)} -> {number(a.after.space)}", pays)


def _table(assessments: list[Assessment], units: str, parameter: str | None = None,
           size: int | None = None) -> list[str]:
    """The verdict table (rich), a row per rewrite, and the notes its marks refer to."""
    columns = max(80, shutil.get_terminal_size((160, 24)).columns)
    table = Table(header_style="bold", title_justify="left")
    for heading in HEADINGS:
        table.add_column(heading, overflow="fold")
    common = _common_range(assessments)
    rows = [_cells(a, units, parameter, size, common) for a in assessments]
    for row in rows:
        table.add_row(*row)
    buffer = StringIO()
    Console(file=buffer, width=columns, color_system=None, highlight=False).print(table)
    lines = [buffer.getvalue().rstrip("\n")]
    notes = []
    if common is not None:
        notes.append(f"always / never: on every size {common} (symbolic profiles)")
    ladder = [a.break_even for a in assessments if a.break_even is not None
              and a.break_even.method.startswith("numeric")
              and a.break_even.direction in ("always", "never")]
    if ladder:
        sizes = ladder[0].searched(grouped=True)
        notes.append(f"† by explicit evaluation on the sizes {sizes} only (a "
                     "program the symbolic profiles do not cover)")
    if any("*" in row[-1] for row in rows):
        notes.append("* found symbolically on the time's lower bound (serial edges plus "
                     "max(work/P, span) of each parallel stretch); the schedule's time at this "
                     "size says otherwise (near a break-even the two can differ)")
    if notes:
        lines += ["", *notes]
    return lines


def _apply(args: argparse.Namespace, scorer: Scorer, subject: Subject) -> int:
    current = subject
    for key in args.apply:
        try:
            parse_key(key)
            current = find(current, key).after
        except (KeyError, ValueError) as error:
            message = error.args[0] if error.args else str(error)
            raise UsageError(f"--apply {message}") from None
    before, after = scorer.score(subject), scorer.score(current)
    text = current.text(subject.checked.program)
    note = _settings_note(subject, current)
    if args.format == "json":
        data = {"file": args.file, "applied": list(args.apply), "program": text,
                "settings": dict(current.settings), "time_before": before.time,
                "time_after": after.time, "space_before": before.space,
                "space_after": after.space, "speedup": before.time / after.time
                if after.time else None}
        write_output(json_text(data) + "\n", None)
        if args.output:
            write_output(text, args.output)
        return EXIT_OK
    if args.output:
        write_output(text, args.output)
        units = scorer.options.profile.units
        print(f"{args.output}: time {amount(before.time, units)} -> "
              f"{amount(after.time, units)} "
              f"({before.time / after.time if after.time else float('inf'):.3f}x), space "
              f"{number(before.space)} -> {number(after.space)} words")
    else:
        write_output(text, None)
    if note:
        print(note, file=sys.stderr)
    return EXIT_OK


def _settings_note(before: Subject, after: Subject) -> str:
    size = after.setting("work_group_size")
    if size != before.setting("work_group_size"):
        return (f"hetprof: the work-group size is not λG syntax: profile the program with "
                f"--work-group-size {size}")
    return ""


def _search(args: argparse.Namespace, scorer: Scorer, subject: Subject) -> int:
    with verdict_progress(args) as bar:  # on a terminal: a wide beam takes minutes
        task = bar.add_task(f"search: depth 1 of {args.depth}", total=None)

        def scored(level: int, explored: int) -> None:
            bar.update(task, completed=explored,
                       description=f"search: depth {level} of {args.depth}, programs scored")

        result: SearchResult = search(scorer, subject, args.beam, args.depth, progress=scored)
    text = result.best.text(subject.checked.program)
    if args.format == "json":
        data = {"file": args.file, **result.to_json(), "program": text}
        write_output(json_text(data) + "\n", None)
        if args.output:
            write_output(text, args.output)
        return EXIT_OK
    lines = [_header(args, scorer, result.before),
             f"search ({result.strategy}, depth <= {args.depth}): {result.explored} programs "
             "scored"]
    if not result.steps:
        lines.append("no sequence of rewrites is predicted to be faster")
    else:
        lines.append("rewrites: " + ", then ".join(result.steps))
        units = scorer.options.profile.units
        lines.append(f"predicted time {amount(result.before.time, units)} -> "
                     f"{amount(result.after.time, units)} ({result.gain:.3f}x), space "
                     f"{number(result.before.space)} -> {number(result.after.space)} words")
    note = _settings_note(subject, result.best)
    if note:
        lines.append(note.removeprefix("hetprof: "))
    if args.output:  # write_output says `hetprof: wrote FILE`, as every writer does
        write_output(text, args.output)
    else:
        lines += ["", text.rstrip("\n")]
    write_output("\n".join(lines) + "\n", None)
    return EXIT_OK
