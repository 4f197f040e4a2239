"""`hetprof validate-rewrites`: predicted against measured speedups of rewrites, on real devices.

The rewrite engine (profiler.rewrite) offers transformations and the scorer (graphs.rewrite_score)
predicts whether each pays (§7.2: "scoring functions for guiding other optimizations"). This
module checks those predictions on real OpenCL devices. For each case (example program, rewrite
`NAME@LINE:COL`, size n), the program before and after the rewrite is evaluated under the
calibrated device profile and its device work is run through the OpenCL backend:
- every `on` body runs on the GPU (`run_offload`); its prediction is the one `hetprof validate`
  uses for a whole `on`: δ* of the words the backend moves, the device box's kernel time, and δ†
  of the words it copies back (the merge's bookkeeping is host work no device event times);
- every outermost CPU `parmap` or `reduce` (outside every `on` and every function) is marked as a
  cost centre and runs as kernels on the OpenCL CPU device; its prediction is the one `hetprof
  validate` makes for an `on` body run on that device (`cpu_part`): the centre's time under a
  1DF schedule on the compute units its widest kernel's work groups fill, at least its floor
  (socket bandwidth, the contended allocation pointer), plus its launches after its inputs were
  copied in. Until 2026-11-27 it was the centre's 1DF time on all the device's compute units,
  with no floor and no launches beyond the graph's; on the examples under the `cache` profile
  that under-predicted the CPU parts several times over (zipmul's `insert-on` at 16384:
  predicted 11.5x, measured 48x).
A program's predicted time is the sum of its parts' predictions and its measured time the sum of
the parts' fastest runs, so the two stand for the same work. Two choices keep noise out of the
measured speedups (on an H200 host, 2026-11-26, PoCL's CPU parts varied by up to 43% between
two runs of the same kernels, more than many rewrites change):
- a part is timed by its fastest run (`Timing.best`): noise only adds time;
- a part that the rewrite leaves as it was (the same kernels on the same input words: one
  `offload_key`) is timed once and that time is used before and after the rewrite, so a
  rewrite is measured by what it changes.
Then

    predicted_speedup = predicted_before / predicted_after
    measured_speedup  = measured_before / measured_after

and a case has its direction right when both speedups are on the same side of 1 (within 2% of 1
on both counts as agreeing), and its error is |predicted - measured| / measured.

Code that no device runs (the host's `let`s, `iota`s outside parmaps, recursion) is in neither
figure: a rewrite that only moves that code is measured as far as its device work changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from graphs.numbers import duration
from graphs.semantics.explicit import OFFLOAD_CENTRE, OffloadCollector, evaluate
from graphs.semantics.options import EvaluationOptions
from models.cpu import by_class
from models.device_profile import DeviceProfile
from models.opencl.predict import cpu_units, growth_as_write, on_launches
from models.opencl.validate import (
    EXAMPLES,
    SQUARE,
    CpuOnUnits,
    explicit_cpu_part,
    predicted_transfers,
    process_draw,
    repeats_for,
    rewrite_figures,
    size_params,
)
from profiler.checker import CheckedProgram, bind_parameters, check_program
from profiler.errors import HetprofError
from profiler.parser import parse
from profiler.rewrite import Rewrite, offered, start
from profiler.syntax import App, Expr, Fix, Lambda, On, ParMap, Profile, Reduce, RegionLambda
from profiler.transform import has_on, map_children, with_body

SIZES = [2**10, 2**12, 2**14]
QUICK_SIZES = [2**6]
PROGRAMS = ("map_map", "dot", "normalize_inc", "zipmul", "zipmul_cpu", "matvec", "nbody",
            "strided")
"""The examples with device work (dc_sum has none: its recursion runs on the host)."""

RULES = ("vertical-fusion", "horizontal-fusion", "redomap", "insert-on", "remove-on", "widen-on",
         "narrow-on", "stage-local", "unstage-local", "work-group-size", "sequentialise",
         "hoist-allocation", "pad-local")
"""The rules validated by default: every rule (those in NOT_RUN are listed as skipped)."""

NOT_RUN = {
    "work-group-size": "the OpenCL runner launches every kernel in work groups of min(256, the "
                       "device's maximum); it cannot run a program at another work-group size",
}
"""Rules left out, with the reason."""

AGREE = 0.02
"""Speedups within 2% of 1 on both sides count as agreeing in direction (neither pays)."""


@dataclass(frozen=True, slots=True)
class Parts:
    """One program at one size on the devices: predicted and measured seconds of its GPU parts
    (the `on`s) and of its CPU parts (the marked parmaps and reduces), how many of each, whether
    every device value matched the interpreter's, and the program's value (rendered)."""

    predicted_gpu: float
    predicted_cpu: float
    measured_gpu: float
    measured_cpu: float
    gpu_parts: int
    cpu_parts: int
    matches: bool
    value: str = field(compare=False)

    @property
    def predicted(self) -> float:
        return self.predicted_gpu + self.predicted_cpu

    @property
    def measured(self) -> float:
        return self.measured_gpu + self.measured_cpu

    def to_json(self) -> dict:
        """The parts as a dict (the value left out)."""
        return {"predicted_gpu_s": self.predicted_gpu, "predicted_cpu_s": self.predicted_cpu,
                "measured_gpu_s": self.measured_gpu, "measured_cpu_s": self.measured_cpu,
                "gpu_parts": self.gpu_parts, "cpu_parts": self.cpu_parts}


def mark_cpu_work(body: Expr) -> Expr:
    """Every outermost `parmap` or `reduce` outside every `on` and every function (a lambda
    applied where it is written runs once, and counts as outside) becomes `profile "__offloadk"
    e`, so that the evaluator hands it over as CPU work to run on an OpenCL CPU device
    (models.opencl.validate marks whole `on` bodies the same way)."""
    counter = [0]

    def go(node: Expr) -> Expr:
        if isinstance(node, App) and isinstance(node.func, Lambda):
            # a lambda written in place and applied there runs once (zipmul's `on` is in one)
            return App(replace(node.func, body=go(node.func.body)), go(node.arg), node.span)
        if isinstance(node, (On, Lambda, RegionLambda, Fix)):
            return node  # GPU work, or code that may run any number of times
        if isinstance(node, (ParMap, Reduce)) and not has_on(node):
            name = f"{OFFLOAD_CENTRE}{counter[0]}"
            counter[0] += 1
            return Profile(name, node, node.span)
        return map_children(node, go)

    return go(body)


def measure(session, cpu_session, profile: DeviceProfile, checked: CheckedProgram,
            params: dict[str, int], repeats: int, memo: dict | None = None) -> Parts:
    """Evaluate a program (its CPU work marked) and run each of its parts on its device; a part
    whose `offload_key` is in `memo` is not run again."""
    from models.opencl.runner import offload_key, run_offload

    memo = {} if memo is None else memo

    def run(on_session, offload):
        key = offload_key(on_session, offload, marked.types, params)
        if key not in memo:
            memo[key] = run_offload(on_session, offload, marked.types, params, repeats=repeats)
        return memo[key]

    marked = check_program(with_body(checked.program, mark_cpu_work(checked.body)))
    collector = OffloadCollector()
    # Region growth priced as a write, as `validate` prices a CPU part (predict.growth_as_write):
    # the backend sizes every region before a kernel; the kernels are the same either way.
    options = EvaluationOptions(profile=growth_as_write(profile), gpu_mode=profile.gpu.mode)
    evaluation = evaluate(marked, params, replace(options, observer=collector))
    predicted_gpu = predicted_cpu = measured_gpu = measured_cpu = 0.0
    gpu_parts = cpu_parts = 0
    matches = True
    processors = max(1, cpu_session.info.compute_units)
    on_units = CpuOnUnits(marked, params, options, evaluation)
    for offload in collector.offloads:
        if offload.on is not None:
            done = run(session, offload)
            transfer_in, transfer_out = predicted_transfers(profile, done)
            predicted_gpu += transfer_in + offload.on.info.kernel + transfer_out
            measured_gpu += done.time("best")
            gpu_parts += 1
        elif isinstance(offload.node, Profile):
            done = run(cpu_session, offload)
            predicted_cpu += cpu_part(on_units, offload.node.name, done, profile, processors)
            measured_cpu += done.kernel_time("best")
            cpu_parts += 1
        else:
            continue  # a bare parmap of a program without `on`: its marked centre stands for it
        matches = matches and done.matches
    return Parts(predicted_gpu, predicted_cpu, measured_gpu, measured_cpu, gpu_parts, cpu_parts,
                 matches, evaluation.render_value(10**6))


def cpu_part(on_units: CpuOnUnits, centre: str, done, profile: DeviceProfile,
             processors: int) -> float:
    """A CPU part's prediction as `validate` predicts an `on` body run on the CPU
    (validate.explicit_cpu_part): its centre's time under the 1DF schedule on the compute units
    its widest kernel's work groups fill (predict.cpu_units; `done`, its run, says how many
    work items each kernel had), its classes priced as on that many busy units (`on_units`,
    validate.CpuOnUnits), at least its floor, plus its kernels' launches after its inputs were
    copied in (predict.on_launches, under a profile that prices the CPU by class)."""
    units = cpu_units(processors, max(done.work_items.values(), default=1))
    evaluation, times = on_units(units)
    launches = 0.0
    if by_class(profile):
        serial = sum(1 for step in done.plan.steps if step.kind == "serial")
        launches = on_launches(profile.cpu, (serial, len(done.plan.steps) - serial),
                               done.words_in)
    found = explicit_cpu_part(evaluation, centre, times, done.words_in, profile, units,
                              launches)
    return 0.0 if found is None else found


def direction_right(predicted_speedup: float, measured_speedup: float,
                    agree: float = AGREE) -> bool:
    """Whether the prediction says the rewrite pays exactly when the measurement does; two
    speedups both within `agree` of 1 agree (neither says it pays or hurts)."""
    if abs(predicted_speedup - 1) < agree and abs(measured_speedup - 1) < agree:
        return True
    return (predicted_speedup > 1) == (measured_speedup > 1)


def case_json(program: str, rewrite: str, n: int, params: dict[str, int], before: Parts,
              after: Parts, same_value: bool) -> dict:
    """One case of the report, with its speedups, direction and error."""
    predicted_speedup = before.predicted / after.predicted if after.predicted else math.inf
    measured_speedup = before.measured / after.measured if after.measured else math.inf
    error = abs(predicted_speedup - measured_speedup) / measured_speedup * 100
    return {
        "program": program, "rewrite": rewrite, "rule": rewrite.partition("@")[0].partition("=")[0],
        "n": n, "params": params,
        "predicted_before_s": before.predicted, "predicted_after_s": after.predicted,
        "measured_before_s": before.measured, "measured_after_s": after.measured,
        "predicted_speedup": predicted_speedup, "measured_speedup": measured_speedup,
        "direction_right": direction_right(predicted_speedup, measured_speedup),
        "abs_pct_error": error,
        "values_match": before.matches and after.matches, "same_value": same_value,
        "before": before.to_json(), "after": after.to_json(),
    }


def rewrites_of(checked: CheckedProgram, profile: DeviceProfile, rules: Iterable[str],
                keys: Iterable[str] | None = None) -> tuple[list[Rewrite], list[dict]]:
    """The offered rewrites of a program under the given rules (or exactly `keys`), and what was
    left out with the reason (one entry per rule)."""
    wanted = set(rules)
    chosen: list[Rewrite] = []
    not_run: dict[str, list[str]] = {}
    gpu = profile.gpu
    subject = start(checked, {"work_group_size": gpu.work_group_size,
                              "warp_width": gpu.warp_width})
    for rewrite in offered(subject):
        rule = rewrite.site.rule
        if keys is not None:
            if rewrite.key in keys:
                chosen.append(rewrite)
        elif rule in NOT_RUN and rule in wanted:
            not_run.setdefault(rule, []).append(rewrite.key)
        elif rule in wanted:
            chosen.append(rewrite)
    left_out = [{"rewrite": ", ".join(found), "reason": NOT_RUN[rule]}
                for rule, found in not_run.items()]
    if keys is not None:
        left_out += [{"rewrite": key, "reason": "not offered in this program"}
                     for key in sorted(set(keys) - {r.key for r in chosen})]
    return chosen, left_out


def validate_rewrites(session, cpu_session, profile: DeviceProfile,
                      programs: list[str] | None = None, rules: Iterable[str] = RULES,
                      sizes: list[int] | None = None, quick: bool = False,
                      repeats: int | None = None,
                      gpu_mode: str | None = None, keys: list[str] | None = None, holder=None,
                      progress: Callable[[str, float], None] | None = None,
                      draw: str = "process") -> dict:
    """Run every case (program × offered rewrite of `rules`, or the rewrites named in `keys`,
    × size); return the JSON report (`cases`, `direction_accuracy`,
    `speedup_median_abs_pct_error`, ...). `programs` are paths (default: PROGRAMS among the
    examples). A case the devices cannot run is recorded in `skipped` with the reason. `draw`:
    as `validate.validate`'s (each work group's allocation, timed in this process, or the
    profile's expectation; the report's `allocation_by_group`)."""
    profile, by_group = process_draw(session, profile.with_gpu(mode=gpu_mode or profile.gpu.mode),
                                       draw)
    repeats = repeats or repeats_for(quick)
    sizes = sizes or (QUICK_SIZES if quick else SIZES)
    paths = [Path(p) for p in programs] if programs else [EXAMPLES / f"{name}.lg"
                                                          for name in PROGRAMS]
    cases: list[dict] = []
    skipped: list[dict] = []
    errors = _device_errors(session)
    for index, path in enumerate(paths):
        source = holder.read(str(path)) if holder else path.read_text()
        checked = check_program(parse(source, str(path)))
        chosen, left_out = rewrites_of(checked, profile, rules, keys)
        skipped += [{"program": path.stem, "n": None, **item} for item in left_out]
        for k, n in enumerate(sizes):
            if progress:
                progress(f"{path.stem} n={n}", (index + k / len(sizes)) / len(paths))
            size = int(math.isqrt(n)) if path.stem in SQUARE else n
            memo: dict = {}
            try:
                params = bind_parameters(checked, size_params(checked, size, path.stem))
                before = measure(session, cpu_session, profile, checked, params, repeats, memo)
            except errors as error:
                skipped.append({"program": path.stem, "rewrite": None, "n": size,
                                "reason": f"the original program: {error}"})
                continue
            if before.gpu_parts + before.cpu_parts == 0:
                skipped.append({"program": path.stem, "rewrite": None, "n": size,
                                "reason": "nothing runs on a device"})
                break
            for rewrite in chosen:
                try:
                    after = measure(session, cpu_session, profile, rewrite.after.checked,
                                    params, repeats, memo)
                except errors as error:
                    skipped.append({"program": path.stem, "rewrite": rewrite.key, "n": size,
                                    "reason": str(error).splitlines()[0]})
                    continue
                if after.measured <= 0 or after.predicted <= 0:
                    skipped.append({"program": path.stem, "rewrite": rewrite.key, "n": size,
                                    "reason": "nothing runs on a device after the rewrite"})
                    continue
                cases.append(case_json(path.stem, rewrite.key, size, params, before, after,
                                       before.value == after.value))
    if progress:
        progress("done", 1.0)
    return summarise({
        "device": session.info.describe(),
        "device_version": session.info.version,
        "cpu_device": cpu_session.info.describe(),
        "cpu_compute_units": cpu_session.info.compute_units,
        "date": date.today().isoformat(),
        "gpu_mode": profile.gpu.mode,
        "profile": profile.name,
        "sizes": sizes,
        "repeats": repeats,
        "statistic": "fastest",
        "cases": cases,
        "skipped": skipped,
        "allocation_by_group": by_group,
    })


def _device_errors(session) -> tuple[type[BaseException], ...]:
    """What one case may fail with and the others go on: a program's or a device's error."""
    cl_error = getattr(getattr(session, "cl", None), "Error", None)
    return (HetprofError, cl_error) if cl_error else (HetprofError,)


def summarise(report: dict) -> dict:
    """Recompute the summary figures from the cases (also after merging reports): the share of
    cases whose direction is right, the median absolute error of the speedup, and both per rule."""
    cases = report["cases"]
    report.update(rewrite_figures(cases))
    rules: dict[str, list[dict]] = {}
    for case in cases:
        rules.setdefault(case["rule"], []).append(case)
    report["rules"] = {rule: rewrite_figures(group) for rule, group in sorted(rules.items())}
    report["values_match"] = all(c["values_match"] and c["same_value"] for c in cases)
    return report


def merge(reports: list[dict]) -> dict:
    """Several reports (e.g. one per program, run one at a time) as one."""
    merged = dict(reports[0])
    merged["cases"] = [c for r in reports for c in r["cases"]]
    skipped = [s for r in reports for s in r.get("skipped", [])]
    # a rule left out of a program is reported by each size's run: once is enough
    merged["skipped"] = [s for i, s in enumerate(skipped) if s not in skipped[:i]]
    merged["sizes"] = sorted({n for r in reports for n in r.get("sizes", [])})
    return summarise(merged)


def render_markdown(report: dict) -> str:
    """The report as markdown: the card and date, the figures against the targets, each rule's
    figures, then every case and what was skipped."""
    lines = [
        f"# Rewrites validated on {report['device']}",
        "",
        f"Date: {report['date']}. Device: {report['device']} ({report.get('device_version', '')})."
        f" CPU parts on {report['cpu_device']}. GPU memory model: `{report['gpu_mode']}`. "
        f"Profile: {report['profile']}. Each part is timed by the "
        f"{report.get('statistic', 'median')} of {report.get('repeats', '?')} runs after a "
        "warm-up" + ("; a part a rewrite leaves as it was is timed once, for both sides."
                     if report.get("statistic") == "fastest" else "."),
        "",
        "| figure | value | target |",
        "| --- | --- | --- |",
        f"| cases | {report['case_count']} | ≥ 50 |",
        f"| direction right | {100 * report['direction_accuracy']:.1f}% | ≥ 90% |",
        f"| speedup, median abs. error | {report['speedup_median_abs_pct_error']:.1f}% | ≤ 15% |",
        f"| device values equal the interpreter's and the original's | "
        f"{'yes' if report['values_match'] else 'NO'} | yes |",
        "",
        "| rule | cases | direction right | median abs. error |",
        "| --- | --- | --- | --- |",
        *[f"| `{rule}` | {f['case_count']} | {100 * f['direction_accuracy']:.0f}% | "
          f"{f['speedup_median_abs_pct_error']:.1f}% |"
          for rule, f in report["rules"].items()],
        "",
        "| program | rewrite | n | predicted before → after | measured before → after "
        "| predicted speedup | measured speedup | direction | error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in report["cases"]:
        lines.append(
            f"| {c['program']} | `{c['rewrite']}` | {c['n']} | {duration(c['predicted_before_s'])} "
            f"→ {duration(c['predicted_after_s'])} | {duration(c['measured_before_s'])} → "
            f"{duration(c['measured_after_s'])} | {c['predicted_speedup']:.3f}x | "
            f"{c['measured_speedup']:.3f}x | {'right' if c['direction_right'] else 'WRONG'} | "
            f"{c['abs_pct_error']:.1f}% |")
    if report.get("skipped"):
        lines += ["", "Skipped:", ""]
        for s in report["skipped"]:
            what = " ".join(str(x) for x in (s.get("program"), s.get("rewrite"),
                                              f"n={s['n']}" if s.get("n") else None) if x)
            lines.append(f"- {what}: {s['reason']}")
    return "\n".join(lines) + "\n"
