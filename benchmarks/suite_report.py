"""The benchmark suite's validation report (issue 13): merge the per-program `hetprof validate`
reports (and optionally `validate-rewrites` reports) of benchmarks/gpu_suite.sh into
docs/validation/suite-<card>-<date>.{md,json,png}.

    python benchmarks/suite_report.py [--rewrites rw_*.json] [--driver TEXT] [--out-dir DIR] \
        val_*.json

The JSON is the merged validation report (benchmarks/merge_validation.py; the figures of
models/opencl/validate.summarise, issue 13's summary keys among them) with the merged rewrite
report under `rewrites`. The markdown has the card, driver and date; every kernel case with
hetprof's, the roofline's and the paper's Fig. 9 errors; the medians and 90th percentiles of each
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
from models.opencl.validate import (  # noqa: E402
    CPU_MEASURED,
    baseline_error_pct,
    percentile,
    summarise,
)

PARTS = ("kernel", "transfer_in", "transfer_out", "on", "cpu")
PART_NAMES = {"kernel": "kernels", "transfer_in": "transfers in", "transfer_out": "transfers out",
              "on": "whole `on`", "cpu": "CPU part"}
MODELS = (("predicted_s", "hetprof"), ("roofline_s", "roofline"), ("paper_s", "paper Fig. 9"))


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
                 driver: str = "") -> dict:
    """The merged report, with the rewrite report under `rewrites` and the summary recomputed."""
    report = merge(validation_paths)
    report["rewrites"] = rewrites or {"cases": []}
    report["driver"] = driver or report.get("device_version", "")
    return summarise(report)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _abs_errors(cases: list[dict], part: str) -> list[float]:
    return [abs(c["error_pct"]) for c in cases if c["part"] == part]


def losses(report: dict) -> list[str]:
    """Plain sentences: where a baseline predicts a kernel better than hetprof does."""
    kernels = [c for c in report["cases"] if c["part"] == "kernel"]
    sentences = []
    for key, name in (("roofline_s", "the roofline"), ("paper_s", "the paper's Fig. 9 model")):
        if key == f"{report['gpu_mode']}_s":
            continue
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
        + (" (the default)" if mode == "dmm" else "") + f". Profile: {report['profile']}. CPU "
        f"part measured on {report['cpu_device']}"
        + (f"; the CPU priced {report['cpu_model']}" if "cpu_model" in report else "")
        + ". Calibration saw microbenchmarks only: no parameter is fitted to the suite.",
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
        "| roofline kernel, median abs. error | "
        + (f"{report['roofline_kernel_median_abs_pct_error']:.1f}% |" if report["roofline_cases"]
           else "unavailable |"),
        f"| paper Fig. 9 kernel, median abs. error | "
        f"{report['paper_kernel_median_abs_pct_error']:.1f}% |",
        f"| hetprof beats the roofline | {report['beats_roofline_fraction'] * 100:.0f}% of "
        f"{report['roofline_cases']} kernel cases |",
        "| hetprof beats the paper's Fig. 9 model | "
        + (f"{report['beats_paper_fraction'] * 100:.0f}% of {report['paper_cases']} kernel cases |"
           if mode != "paper" else "(it is the report's model) |"),
        "| hetprof beats DMM | " + (f"{report['beats_dmm_fraction'] * 100:.0f}% of "
                                    f"{report['dmm_cases']} kernel cases |" if mode != "dmm"
                                    else "0 (the report's model is DMM, the default) |"),
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
    lines += ["", "## Kernels", "",
              "| program | n | measured (s) | hetprof | roofline | paper Fig. 9 |",
              "| --- | --- | --- | --- | --- | --- |"]
    for c in kernels:
        lines.append(f"| {c['program']} | {c['n']} | {c['measured_s']:.4g} | "
                     f"{c['error_pct']:+.1f}% | {_pct(baseline_error_pct(c, 'roofline_s'))} | "
                     f"{_pct(baseline_error_pct(c, 'paper_s'))} |")
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
    for note in report.get("skipped", []):
        lines.append(f"\nSkipped: {note}")
    return "\n".join(lines) + "\n"


def draw(report: dict, path: Path) -> None:
    """predicted / measured per kernel case for hetprof, the roofline and the paper's model
    (log scale; 1 is exact)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = [c for c in report["cases"] if c["part"] == "kernel"]
    colours = plt.get_cmap("tab10").colors
    figure, axes = plt.subplots(figsize=(max(6.0, 0.35 * len(kernels) + 2), 4.5))
    for k, (key, name) in enumerate(MODELS):
        points = [(i, c[key] / c["measured_s"]) for i, c in enumerate(kernels)
                  if c.get(key) is not None and c["measured_s"] > 0 and c[key] > 0]
        if points:
            axes.scatter([i for i, _ in points], [r for _, r in points], color=colours[k],
                         label=name, s=22, marker="os^"[k])
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
    report = suite_report(readable, load_rewrites(args.rewrites), args.driver)
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
