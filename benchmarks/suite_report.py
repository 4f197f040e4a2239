"""The benchmark suite's validation report (issue 13): merge the per-program `hetprof validate`
reports (and optionally `validate-rewrites` reports) of benchmarks/gpu_suite.sh into
docs/validation/suite-<card>-<date>.{md,json,png}.

    python benchmarks/suite_report.py [--rewrites rw_*.json] [--driver TEXT] [--out-dir DIR] \
        val_*.json

The JSON is the merged validation report (benchmarks/merge_validation.py; the figures of
models/opencl/validate.summarise, issue 13's summary keys among them) with the merged rewrite
report under `rewrites`. The markdown has the card, driver and date; every kernel case with
hetprof's error and each other model's (the roofline, the paper's Fig. 9, DMM/UMM, the cache
mode: those the report has); the medians and 90th percentiles of each
part; the placements; the rewrite figures; in how many cases hetprof beats each baseline, and in
plain sentences where it does not. The picture: predicted / measured per kernel case, per model.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.merge_validation import merge  # noqa: E402
from models.opencl import validate_rewrites  # noqa: E402
from models.opencl.calibrate import DEFAULT_CALIBRATED_MODE as DEFAULT_MODE  # noqa: E402
from models.opencl.validate import (  # noqa: E402
    CPU_MEASURED,
    baseline_error_pct,
    percentile,
    summarise,
)

PARTS = ("kernel", "transfer_in", "transfer_out", "on", "cpu")
PART_NAMES = {"kernel": "kernels", "transfer_in": "transfers in", "transfer_out": "transfers out",
              "on": "whole `on`", "cpu": "CPU part"}
MODELS = (("predicted_s", "hetprof"), ("roofline_s", "roofline"), ("paper_s", "paper Fig. 9"),
          ("dmm_s", "DMM/UMM"), ("cache_s", "cache"))
BASELINE_LABELS = {"roofline": "the roofline", "paper": "the paper's Fig. 9 model",
                   "dmm": "DMM/UMM", "cache": "the cache mode"}


def baselines_of(report: dict) -> list[str]:
    """The baselines to show beside the report's own mode: each other model with cases, and the
    roofline (shown as unavailable when it has none)."""
    mode = report["gpu_mode"]
    return [name for name in BASELINE_LABELS
            if name != mode and (name == "roofline" or report.get(f"{name}_cases"))]


def card_slug(card: str) -> str:
    """A card's name as a file name: "NVIDIA H200" -> "nvidia-h200"."""
    return re.sub(r"[^a-z0-9]+", "-", card.lower()).strip("-") or "device"


def load_rewrites(paths: list[str]) -> dict | None:
    """The `validate-rewrites` reports at `paths`, merged; None for none readable."""
    reports = []
    for path in paths:
        try:
            reports.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as error:
            print(f"skipping {path}: {error}", file=sys.stderr)
    return validate_rewrites.merge(reports) if reports else None


def suite_report(validation_paths: list[str], rewrites: dict | None = None,
                 driver: str = "", mode: str | None = None) -> dict:
    """The merged report, with the rewrite report under `rewrites` and the summary recomputed;
    with `mode`, seen from that GPU mode (`as_mode`)."""
    report = merge(validation_paths)
    if mode and mode != report["gpu_mode"]:
        report = as_mode(report, mode)
    report["rewrites"] = rewrites or {"cases": []}
    report["driver"] = driver or report.get("device_version", "")
    return summarise(report)


def as_mode(report: dict, mode: str) -> dict:
    """A merged report whose GPU mode was `report["gpu_mode"]`, with another mode's kernel
    predictions (its `<mode>_s`, from the same run's compared profile) as hetprof's: each kernel
    case's prediction and error, its `on`'s (transfers + kernel), and the placement predicted
    from them. The old mode becomes a compared one. A kernel case without the other mode's
    prediction is left out, with its `on`, its placement and its CPU part."""
    old = report["gpu_mode"]
    key = f"{mode}_s"
    kernels: dict[tuple, tuple[float, float]] = {}
    cases = []
    for case in report["cases"]:
        case = dict(case)
        if case["part"] == "kernel":
            new = case.get(key)
            if new is None:
                continue
            where = (case["program"], case["n"])
            old_sum, new_sum = kernels.get(where, (0.0, 0.0))
            kernels[where] = (old_sum + case["predicted_s"], new_sum + new)
            case[f"{old}_s"], case["predicted_s"], case[key] = case["predicted_s"], new, None
        cases.append(case)
    out = []
    for case in cases:
        where = (case["program"], case["n"])
        if case["part"] in ("on", "cpu") and where not in kernels:
            continue
        if case["part"] == "on":
            before, after = kernels[where]
            case["predicted_s"] += after - before
        if case["part"] != "kernel" or case.get(f"{old}_s") is not None:
            if case["measured_s"]:
                case["error_pct"] = 100 * (case["predicted_s"] - case["measured_s"]) \
                    / case["measured_s"]
        out.append(case)
    predicted = {(c["program"], c["n"], c["part"]): c["predicted_s"] for c in out}
    placements = []
    for p in report["placements"]:
        on, cpu = (predicted.get((p["program"], p["n"], part)) for part in ("on", "cpu"))
        if on is None or cpu is None:
            continue
        placements.append({**p, "predicted": "gpu" if on < cpu else "cpu"})
    compared = dict(report.get("compare_cases", {}))
    compared.pop(mode, None)
    compared[old] = [{k: c[k] for k in ("program", "n", "part", "predicted_s", "measured_s",
                                        "error_pct")}
                     for c in report["cases"] if c["part"] == "kernel"]
    return {**report, "gpu_mode": mode, "cases": out, "placements": placements,
            "compare_cases": compared}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _abs_errors(cases: list[dict], part: str) -> list[float]:
    return [abs(c["error_pct"]) for c in cases if c["part"] == part]


def losses(report: dict) -> list[str]:
    """Plain sentences: where a baseline predicts a kernel better than hetprof does."""
    kernels = [c for c in report["cases"] if c["part"] == "kernel"]
    sentences = []
    for baseline in baselines_of(report):
        key, name = f"{baseline}_s", BASELINE_LABELS[baseline]
        compared = [(c, e) for c in kernels if (e := baseline_error_pct(c, key)) is not None]
        if not compared:
            sentences.append(f"No kernel case has a prediction by {name}: it is unavailable "
                             "(for the roofline: the profile has no calibrated rates).")
            continue
        lost = [(c, e) for c, e in compared if abs(e) < abs(c["error_pct"])]
        if not lost:
            sentences.append(f"hetprof is more accurate than {name} on every one of the "
                             f"{len(compared)} kernel cases.")
            continue
        programs = sorted({c["program"] for c, _ in lost})
        worst = max(lost, key=lambda pair: abs(pair[0]["error_pct"]) - abs(pair[1]))
        sentences.append(
            f"hetprof loses to {name} on {len(lost)} of {len(compared)} kernel cases, in "
            f"{', '.join(programs)}; the widest gap is {worst[0]['program']} at n = "
            f"{worst[0]['n']} (hetprof {worst[0]['error_pct']:+.1f}%, {name} {worst[1]:+.1f}%).")
        own = report["kernel_median_abs_pct_error"]
        other = statistics.median(abs(e) for _, e in compared)
        if other < own:
            sentences.append(f"Over all kernel cases {name}'s median |error| ({other:.1f}%) is "
                             f"below hetprof's ({own:.1f}%).")
    return sentences


def _baseline_rows(report: dict) -> list[str]:
    """Summary rows: each baseline's median |error| and in how many cases hetprof beats it."""
    rows = []
    for baseline in baselines_of(report):
        label = BASELINE_LABELS[baseline]
        cases = report.get(f"{baseline}_cases", 0)
        if not cases:
            rows.append(f"| {label}, kernel median abs. error | unavailable |")
            continue
        rows += [f"| {label}, kernel median / 90th percentile abs. error | "
                 f"{report[f'{baseline}_kernel_median_abs_pct_error']:.1f}% / "
                 f"{report[f'{baseline}_kernel_p90_abs_pct_error']:.1f}% |",
                 f"| hetprof beats {label} | {report[f'beats_{baseline}_fraction'] * 100:.0f}% of "
                 f"{cases} kernel cases |"]
    return rows


def render_markdown(report: dict) -> str:
    """The suite report as markdown (module doc)."""
    cases = report["cases"]
    kernels = [c for c in cases if c["part"] == "kernel"]
    mode = report["gpu_mode"]
    lines = [
        f"# Benchmark suite on {report['card']}",
        "",
        f"Device: {report['device']}; driver: {report.get('driver') or 'unknown'}; date: "
        f"{report['date']}. hetprof's GPU model: `{mode}`"
        + (" (the default)" if mode == DEFAULT_MODE else "") + f". Profile: {report['profile']}. CPU "
        f"part measured on {report['cpu_device']}"
        + (f"; the CPU priced {report['cpu_model']}" if "cpu_model" in report else "")
        + ". Calibration saw microbenchmarks only: no parameter is fitted to the suite."
        + (f" Each measured time is the median of {report['repeats']} runs."
           if "repeats" in report else ""),
        "",
        report.get("cpu_measured", CPU_MEASURED),
        "",
        "## Summary",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| kernel, median / 90th percentile abs. error | "
        f"{report['kernel_median_abs_pct_error']:.1f}% / {report['kernel_p90_abs_pct_error']:.1f}%"
        " |",
        *_baseline_rows(report),
        f"| cheaper placement chosen right | {100 * report['placement_accuracy']:.0f}% of "
        f"{len(report['placements'])} |",
        f"| placements measured faster on the CPU | "
        f"{100 * report['placement_cpu_faster_fraction']:.0f}% |",
        f"| placement right where the CPU / the GPU was measured faster | "
        f"{100 * report.get('placement_cpu_faster_accuracy', 0):.0f}% / "
        f"{100 * report.get('placement_gpu_faster_accuracy', 0):.0f}% |",
        f"| rewrite direction right | {100 * report['rewrite_direction_accuracy']:.0f}% of "
        f"{report['rewrite_cases']} cases measured to change by more than 5% |",
        f"| rewrite speedup, median abs. error | "
        f"{report['rewrite_speedup_median_abs_pct_error']:.1f}% |",
        "",
        "Percentiles are over |error %| (nearest rank); hetprof beats a baseline in a case where its"
        " |error| is strictly smaller.",
        "",
        "## Where hetprof does not win",
        "",
        *[f"- {s}" for s in losses(report)],
        "",
        "## Each part",
        "",
        "| part | cases | median abs. error | 90th percentile |",
        "| --- | --- | --- | --- |",
    ]
    for part in PARTS:
        errors = _abs_errors(cases, part)
        if errors:
            lines.append(f"| {PART_NAMES[part]} | {len(errors)} | "
                         f"{statistics.median(errors):.1f}% | {percentile(errors, 0.9):.1f}% |")
    shown = baselines_of(report)
    lines += ["", "## Kernels", "",
              f"| program | n | measured (s) | hetprof (`{mode}`) | "
              + " | ".join(dict(MODELS)[f"{b}_s"] for b in shown) + " |",
              "| --- | --- | --- | --- | " + " | ".join("---" for _ in shown) + " |"]
    for c in kernels:
        lines.append(f"| {c['program']} | {c['n']} | {c['measured_s']:.4g} | "
                     f"{c['error_pct']:+.1f}% | "
                     + " | ".join(_pct(baseline_error_pct(c, f"{b}_s")) for b in shown) + " |")
    lines += ["", "## Transfers, whole `on` and CPU part", "",
              "| program | n | transfers in | transfers out | whole `on` | CPU part |",
              "| --- | --- | --- | --- | --- | --- |"]
    by_case: dict[tuple, dict[str, float]] = {}
    for c in cases:
        if c["part"] in PARTS:
            by_case.setdefault((c["program"], c["n"]), {})[c["part"]] = c["error_pct"]
    for (program, n), parts in by_case.items():
        lines.append(f"| {program} | {n} | " + " | ".join(
            _pct(parts.get(p)) for p in ("transfer_in", "transfer_out", "on", "cpu")) + " |")
    if report["placements"]:
        lines += ["", "## Placement", "", "| program | n | predicted cheaper | measured cheaper |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {p['program']} | {p['n']} | {p['predicted']} | {p['measured']} |"
                  for p in report["placements"]]
    rewrite_cases = report["rewrites"].get("cases", [])
    lines += ["", "## Rewrites", ""]
    if rewrite_cases:
        lines += [f"{len(rewrite_cases)} cases, of which {report['rewrite_cases']} were measured "
                  "to change the time by more than 5%: over those, the direction is right in "
                  f"{100 * report['rewrite_direction_accuracy']:.0f}% and the median speedup "
                  f"error is {report['rewrite_speedup_median_abs_pct_error']:.1f}%.", "",
                  "| program | rewrite | n | predicted speedup | measured speedup | direction |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {c['program']} | {c['rule']} | {c['n']} | {c['predicted_speedup']:.3f}x | "
                  f"{c['measured_speedup']:.3f}x | "
                  f"{'right' if c['direction_right'] else 'WRONG'} |" for c in rewrite_cases]
    else:
        lines.append("No rewrite was validated.")
    places = report.get("pointer_places", [])
    if places:
        lines += ["", "## Allocation pointers", "",
                  "Each validation process chose its allocation pointers' place when its session "
                  "was made (the fastest of its places for one thread's chain of atomics); what "
                  "a one-thread allocation costs follows that atomic (on the H200: near 140-170 "
                  "ns, far 230-270 ns). The allocation is the calibration's microbenchmark, run "
                  "in that process after its programs.", "",
                  "| programs | sizes | place | atomic (ns) | slowest place's atomic (ns) | "
                  "allocation (ns) | the profile's allocation (ns) |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {', '.join(p['programs'])} | {', '.join(str(n) for n in p['sizes'])} | "
                  f"{p['place']} | {1e9 * p['atomic_s']:.1f} | "
                  + " | ".join(f"{1e9 * p[key]:.1f}" if p.get(key) is not None else "" for key in
                               ("slowest_place_atomic_s", "alloc_s", "profile_alloc_s")) + " |"
                  for p in places]
    for note in report.get("skipped", []):
        lines.append(f"\nSkipped: {note}")
    return "\n".join(lines) + "\n"


def draw(report: dict, path: Path) -> None:
    """predicted / measured per kernel case for hetprof and each other model the report has
    (log scale; 1 is exact)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = [c for c in report["cases"] if c["part"] == "kernel"]
    colours = plt.get_cmap("tab10").colors
    figure, axes = plt.subplots(figsize=(max(6.0, 0.35 * len(kernels) + 2), 4.5))
    own = f"{report['gpu_mode']}_s"
    for k, (key, name) in enumerate(MODELS):
        if key == own:
            continue
        points = [(i, c[key] / c["measured_s"]) for i, c in enumerate(kernels)
                  if c.get(key) is not None and c["measured_s"] > 0 and c[key] > 0]
        if points:
            axes.scatter([i for i, _ in points], [r for _, r in points], color=colours[k],
                         label=name, s=22, marker="os^Dv"[k])
    axes.axhline(1.0, color="grey", linewidth=0.8)
    axes.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}")
    axes.yaxis.set_major_formatter(plain)
    axes.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels collide
    axes.set_xticks(range(len(kernels)))
    axes.set_xticklabels([f"{c['program']} {c['n']}" for c in kernels], rotation=90, fontsize=7)
    axes.set_ylabel("predicted / measured kernel time")
    axes.set_title(f"Kernel predictions on {report['card']}, {report['date']}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write(report: dict, out_dir: Path) -> list[Path]:
    """suite-<card>-<date>.{md,json,png} under `out_dir`; their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"suite-{card_slug(report['card'])}-{report['date']}"
    paths = [stem.with_suffix(".json"), stem.with_suffix(".md"), stem.with_suffix(".png")]
    paths[0].write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    paths[1].write_text(render_markdown(report))
    draw(report, paths[2])
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("validations", nargs="+", help="per-program `validate` JSON reports")
    parser.add_argument("--rewrites", nargs="*", default=[],
                        help="`validate-rewrites` JSON reports")
    parser.add_argument("--driver", default="", help="the GPU driver's version, for the header")
    parser.add_argument("--out-dir", default="docs/validation")
    parser.add_argument("--mode", default=None,
                        help="the GPU mode to report as hetprof's (a mode the runs compared)")
    args = parser.parse_args(argv)
    readable = []
    for path in args.validations:
        try:
            json.loads(Path(path).read_text())
            readable.append(path)
        except (OSError, json.JSONDecodeError) as error:
            print(f"skipping {path}: {error}", file=sys.stderr)
    if not readable:
        print("no validation report to merge", file=sys.stderr)
        return 1
    report = suite_report(readable, load_rewrites(args.rewrites), args.driver, args.mode)
    for path in write(report, Path(args.out_dir)):
        print(path)
    print(f"{len(report['cases'])} cases; kernel median "
          f"{report['kernel_median_abs_pct_error']:.1f}%, roofline "
          f"{report['roofline_kernel_median_abs_pct_error']:.1f}%, paper "
          f"{report['paper_kernel_median_abs_pct_error']:.1f}%; hetprof beats the roofline in "
          f"{100 * report['beats_roofline_fraction']:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
