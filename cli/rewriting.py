"""`hetprof rewrite`: the rewrites that apply to a program, scored under the cost semantics.

    hetprof rewrite FILE [--param n=1024] [--size-param n] [--ladder-max N] [--no-break-even]
                    [--format text|json]                     # every rewrite at every site
    hetprof rewrite FILE --apply NAME@LINE:COL [--apply ...] [-o OUT.lg]   # the rewritten program
    hetprof rewrite FILE --search [--beam K] [--depth D] [-o OUT.lg]       # the best sequence
"""

from __future__ import annotations

import argparse
import sys

from cli.common import (
    EXIT_OK,
    SourceHolder,
    UsageError,
    evaluation_options,
    load_checked,
    parse_params,
    write_output,
)
from graphs.numbers import json_text, number, signed
from graphs.rewrite_score import (
    DISAGREES,
    Assessment,
    Score,
    Scorer,
    SearchResult,
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
            f"units {profile.units})\ntime {number(score.time)}, space {score.space} words")


def _list(args: argparse.Namespace, scorer: Scorer, subject: Subject,
          parameter: str | None) -> int:
    base = scorer.score(subject)
    # Symbolic profiles answer "from which n" for every size up to 10^12 where both programs
    # are regular; the ladder of explicit evaluations answers for the others.
    solver = symbolic_solver(scorer) if parameter is not None else None
    assessments = [scorer.assess(r, parameter, args.ladder_max, solver)
                   for r in offered(subject)]
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
        lines.extend(_table(assessments))
    write_output("\n".join(lines) + "\n", None)
    return EXIT_OK


def _table(assessments: list[Assessment]) -> list[str]:
    rows = [("rewrite", "time before -> after", "speedup", "space before -> after", "moved",
             "pays when")]
    flagged = False
    for a in assessments:
        delta = a.after.term(a.moved) - a.before.term(a.moved) if a.moved != "nothing" else 0
        moved = a.moved if a.moved == "nothing" else f"{a.moved} {signed(delta)}"
        pays = a.break_even.describe() if a.break_even else "-"
        if a.break_even and DISAGREES in a.break_even.method:
            pays += " *"
            flagged = True
        rows.append((a.key, f"{number(a.before.time)} -> {number(a.after.time)}",
                     f"{a.speedup:.3f}x", f"{a.before.space} -> {a.after.space}", moved, pays))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    if flagged:
        lines += ["", "* found symbolically on the time's lower bound (serial edges plus "
                      "max(work/P, span) of each parallel stretch); the schedule's time at this "
                      "size says otherwise (near a break-even the two can differ)"]
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
        print(f"wrote {args.output}: time {number(before.time)} -> {number(after.time)} "
              f"({before.time / after.time if after.time else float('inf'):.3f}x), space "
              f"{before.space} -> {after.space} words")
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
    result: SearchResult = search(scorer, subject, args.beam, args.depth)
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
        lines.append(f"predicted time {number(result.before.time)} -> "
                     f"{number(result.after.time)} ({result.gain:.3f}x), space "
                     f"{result.before.space} -> {result.after.space} words")
    note = _settings_note(subject, result.best)
    if note:
        lines.append(note.removeprefix("hetprof: "))
    if args.output:
        write_output(text, args.output)
        lines.append(f"wrote {args.output}")
    else:
        lines += ["", text.rstrip("\n")]
    write_output("\n".join(lines) + "\n", None)
    return EXIT_OK
