"""benchmarks/suite_report.py: per-program validation reports and rewrite reports merged into
docs/validation/suite-<card>-<date>.{md,json,png}, on a small synthetic input whose figures are
computed by hand."""

from __future__ import annotations

import json

import pytest

from benchmarks.suite_report import card_slug, main


def kernel(program, predicted, measured, roofline, paper):
    return {"program": program, "n": 64, "part": "kernel", "predicted_s": predicted,
            "measured_s": measured, "error_pct": 100 * (predicted - measured) / measured,
            "roofline_s": roofline, "paper_s": paper, "dmm_s": predicted}


def part(program, name, predicted, measured):
    return {"program": program, "n": 64, "part": name, "predicted_s": predicted,
            "measured_s": measured, "error_pct": 100 * (predicted - measured) / measured}


def validation(program, cases, measured_cheaper):
    return {"device": "NVIDIA CUDA / NVIDIA H200", "device_version": "OpenCL 3.0 CUDA",
            "cpu_device": "PoCL / cpu", "card": "NVIDIA H200", "date": "2026-11-27",
            "gpu_mode": "dmm", "profile": "test", "sizes": [64], "cases": cases,
            "placements": [{"program": program, "n": 64, "predicted": "gpu",
                            "measured": measured_cheaper}],
            "skipped": [], "compare_cases": {}, "repeats": 9}


def rewrite(measured_speedup, right, error):
    return {"program": "a", "rule": "fuse", "n": 64, "predicted_speedup": 1.2,
            "measured_speedup": measured_speedup, "direction_right": right,
            "abs_pct_error": error, "values_match": True, "same_value": True}


@pytest.fixture
def written(tmp_path):
    a = validation("a", [kernel("a", 1.1, 1.0, 0.5, 2.0), part("a", "cpu", 1.2, 1.0),
                         part("a", "on", 1.0, 1.0)], "gpu")
    b = validation("b", [kernel("b", 3.0, 2.0, 1.8, 2.2), part("b", "cpu", 0.6, 1.0)], "cpu")
    rewrites = {"cases": [rewrite(1.5, True, 10.0), rewrite(1.02, False, 90.0),
                          rewrite(0.5, False, 30.0)], "sizes": [64], "skipped": []}
    inputs = []
    for name, data in (("val_a", a), ("val_b", b), ("rw_a", rewrites)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        inputs.append(str(tmp_path / f"{name}.json"))
    out = tmp_path / "docs"
    assert main([inputs[0], inputs[1], "--rewrites", inputs[2], "--driver", "580.1",
                 "--out-dir", str(out)]) == 0
    return out / "suite-nvidia-h200-2026-11-27"


def test_card_slug():
    assert card_slug("NVIDIA H200") == "nvidia-h200"
    assert card_slug("pthread-AMD EPYC") == "pthread-amd-epyc"


def test_summary_keys_computed_by_hand(written):
    report = json.loads(written.with_suffix(".json").read_text())
    # hetprof: +10%, +50%; roofline: -50%, -10%; paper: +100%, +10%
    expected = {
        "kernel_median_abs_pct_error": 30.0, "kernel_p90_abs_pct_error": 50.0,
        "roofline_kernel_median_abs_pct_error": 30.0, "paper_kernel_median_abs_pct_error": 55.0,
        "beats_roofline_fraction": 0.5, "beats_paper_fraction": 0.5, "beats_dmm_fraction": 0.0,
        "cpu_median_abs_pct_error": 30.0, "cpu_p90_abs_pct_error": 40.0,
        "placement_accuracy": 0.5, "placement_cpu_faster_fraction": 0.5,
        # the rewrite measured at 1.02x changes nothing and is left out
        "rewrite_cases": 2, "rewrite_direction_accuracy": 0.5,
        "rewrite_speedup_median_abs_pct_error": 20.0,
    }
    for key, value in expected.items():
        assert report[key] == pytest.approx(value), key
    assert (report["gpu_mode"], report["card"], report["date"]) == ("dmm", "NVIDIA H200",
                                                                    "2026-11-27")
    assert report["driver"] == "580.1" and len(report["rewrites"]["cases"]) == 3


def test_markdown_and_picture(written):
    text = written.with_suffix(".md").read_text()
    assert text.startswith("# Benchmark suite on NVIDIA H200")
    assert "driver: 580.1; date: 2026-11-27" in text
    assert "| a | 64 | 1 | +10.0% | -50.0% | +100.0% |" in text
    assert "hetprof loses to the roofline on 1 of 2 kernel cases, in b" in text
    assert "| CPU part | 2 | 30.0% | 40.0% |" in text
    assert "hetprof's GPU model: `dmm`. Profile" in text  # a calibrated profile's is `cache`
    assert "| the paper's Fig. 9 model, kernel median / 90th percentile abs. error | 55.0% / " \
        "100.0% |" in text
    assert "| hetprof beats the paper's Fig. 9 model | 50% of 2 kernel cases |" in text
    assert written.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Each measured time is the median of 9 runs." in text


def test_runs_per_measurement_said_only_where_the_reports_agree(tmp_path):
    """merge keeps `repeats` (validate's --repeats) where every report has the same, and drops it
    where they differ or one does not say (reports from before the option)."""
    from benchmarks.merge_validation import merge

    def written_with(name, repeats):
        data = validation(name, [kernel(name, 1.1, 1.0, 0.5, 2.0)], "gpu")
        if repeats is None:
            del data["repeats"]
        else:
            data["repeats"] = repeats
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        return str(path)

    assert merge([written_with("a", 9), written_with("b", 9)])["repeats"] == 9
    assert "repeats" not in merge([written_with("a", 9), written_with("b", 3)])
    assert "repeats" not in merge([written_with("a", 9), written_with("b", None)])


def test_each_validation_process_s_pointer_place_is_listed_with_what_it_ran(tmp_path):
    """merge lists each report's `pointer_place` with the programs and sizes of its cases (a
    report from before the field adds no row), and the markdown shows them in ns."""
    from benchmarks.merge_validation import merge
    from benchmarks.suite_report import render_markdown

    paths = []
    for name, place in (("a", {"place": 3, "atomic_s": 1.4e-7, "slowest_place_atomic_s": 2.5e-7,
                               "alloc_s": 2.0e-7, "profile_alloc_s": 3.043e-7}),
                        ("b", {"place": 0, "atomic_s": 2.42e-7}), ("c", None)):
        data = validation(name, [kernel(name, 1.1, 1.0, 0.5, 2.0)], "gpu")
        if place:
            data["pointer_place"] = place
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    merged = merge([str(p) for p in paths])
    assert merged["pointer_places"] == [
        {"place": 3, "atomic_s": 1.4e-7, "slowest_place_atomic_s": 2.5e-7, "alloc_s": 2.0e-7,
         "profile_alloc_s": 3.043e-7, "programs": ["a"], "sizes": [64]},
        {"place": 0, "atomic_s": 2.42e-7, "programs": ["b"], "sizes": [64]}]
    merged["rewrites"] = {"cases": []}
    text = render_markdown(merged)
    assert "| a | 64 | 3 | 140.0 | 250.0 | 200.0 | 304.3 |" in text
    assert "| b | 64 | 0 | 242.0 |  |  |  |" in text


def test_a_report_seen_from_a_compared_mode():
    """as_mode: the cache mode's kernel predictions become hetprof's; the `on` moves by the
    kernel's difference, the placement is predicted again, and DMM becomes a baseline."""
    from benchmarks.suite_report import as_mode

    kernel_case = {**kernel("a", 2.0, 1.0, 0.5, 4.0), "cache_s": 0.8}
    report = {**validation("a", [kernel_case, part("a", "on", 2.5, 1.5),
                                 part("a", "cpu", 2.0, 1.0)], "cpu"),
              "compare_cases": {"cache": [{"part": "kernel"}]}}
    seen = as_mode(report, "cache")
    kernel_seen, on, cpu = seen["cases"]
    assert seen["gpu_mode"] == "cache"
    assert (kernel_seen["predicted_s"], kernel_seen["dmm_s"], kernel_seen["cache_s"]) == (
        0.8, 2.0, None)
    assert kernel_seen["error_pct"] == pytest.approx(-20.0)
    assert on["predicted_s"] == pytest.approx(1.3) and on["error_pct"] == pytest.approx(
        100 * (1.3 - 1.5) / 1.5)
    assert cpu["predicted_s"] == 2.0
    assert seen["placements"][0]["predicted"] == "gpu"  # 1.3 on the GPU against 2.0
    assert set(seen["compare_cases"]) == {"dmm"}
    assert report["cases"][0]["predicted_s"] == 2.0  # the given report is left as it was
