"""`hetprof profile --symbolic`, `hetprof place` and the report's formulas, run as a user would:
in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
import sympy as sp
from conftest import ROOT

from graphs.render_symbolic import place_cells


def hetprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_symbolic_json_has_the_numeric_reports_keys_and_parseable_formulas():
    result = hetprof("profile", "examples/zipmul.lg", "--symbolic", "--param", "n=1000000000",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["symbolic"] is True and data["params"] == {"n": 10**9}
    n = sp.Symbol("n", integer=True, positive=True)
    space = sp.sympify(data["formulas"]["space"]["cpu"], locals={"n": n})
    assert sp.expand(space - (9 * n + 3)) == 0
    assert data["values"]["space"]["cpu"] == 9 * 10**9 + 3
    assert data["values"]["nodes"] == 12 * 10**9 + 10
    assert data["explicit_time"] is None  # 1.2e10 nodes: no explicit schedule
    lower, upper = data["values"]["time_bounds"]
    assert lower <= upper


def test_symbolic_text_shows_formulas_and_values():
    result = hetprof("profile", "examples/map_map.lg", "--symbolic", "--param", "n=64")
    assert result.returncode == 0, result.stderr
    work = next(line for line in result.stdout.splitlines() if line.startswith("work"))
    assert "7*n" in work
    explicit = next(line for line in result.stdout.splitlines() if "explicit)" in line)
    numeric = json.loads(hetprof("profile", "examples/map_map.lg", "--param", "n=64",
                                 "--format", "json").stdout)
    shown = explicit.split("-", 1)[1].strip().replace(",", "")  # graphs.numbers: 1,234.5
    assert float(shown) == numeric["time"]  # the exact 1DF time on P = 2 at n = 64


def test_irregular_programs_fall_back_and_say_why(tmp_path):
    program = tmp_path / "countdown.lg"
    program.write_text("param n : int = 16\nletregion r in\n"
                       "let f = fix f: (int r -> int r [r], r). lambda m: int r [r].\n"
                       "  if m <= 1 at r then m else f (m - 1 at r) + 1 at r\nin f n\n")
    result = hetprof("profile", str(program), "--symbolic", "--param", "n=16")
    assert result.returncode == 0, result.stderr
    assert "not regular" in result.stdout and f"{program}:4:" in result.stdout
    assert "recursive function" in result.stdout and "too slowly" in result.stdout
    data = json.loads(hetprof("profile", str(program), "--symbolic", "--format",
                              "json").stdout)
    assert data["symbolic"] is False and data["explicit"]["work"] > 0


def test_symbolic_refuses_formats_it_cannot_write():
    result = hetprof("profile", "examples/zipmul.lg", "--symbolic", "--format", "csv")
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_place_finds_the_break_even_size():
    result = hetprof("place", "examples/zipmul.lg", "--format", "json")
    assert result.returncode == 0, result.stderr
    sites = {site["site"]: site for site in json.loads(result.stdout)["sites"]}
    on = sites["22:1"]
    assert on["written"] == "gpu" and on["method"] == "symbolic"
    assert on["cheaper_from_1"] == "cpu"
    assert [(c["n"], c["cheaper"]) for c in on["crossings"]] == [(7407, "gpu")]
    # at n = 1024 the `on` moves 2n words each way for a kernel of n threads
    assert on["bound"] == "transfer"


def test_place_without_a_size_parameter_is_a_usage_error(tmp_path):
    program = tmp_path / "fixed.lg"
    program.write_text("letregion r in parmap (lambda i: int r [r]. i + 1 at r) "
                       "(iota 4 at r) at r\n")
    result = hetprof("place", str(program))
    assert result.returncode == 2 and "no size parameter" in result.stderr


def test_report_carries_the_formulas(tmp_path):
    output = tmp_path / "report.html"
    result = hetprof("report", "examples/zipmul.lg", "-o", str(output))
    assert result.returncode == 0, result.stderr
    page = output.read_text()
    assert "Symbolic formulas" in page and "9*n + 3" in page


def test_place_leads_with_a_verdict_per_site_and_writes_formulas_as_the_paper_does():
    """Issue 19: a verdict table first (times, speedup, the world to use, the break-evens), then
    the formulas with ⌈x⌉ and log₂ rather than sympy's ceiling(log(n)/log(2))."""
    result = subprocess.run([sys.executable, "-m", "cli", "place", "examples/dot.lg"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "COLUMNS": "160"})
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.index("GPU speedup") < text.index("CPU time =")
    row = next(line for line in text.splitlines() if line.startswith("│ 10:1"))
    assert "GPU (`on`)" in row and "CPU from 1; GPU from" in row
    assert "⌈log₂(n)⌉" in text and "ceiling(" not in text
    data = json.loads(hetprof("place", "examples/dot.lg", "--format", "json").stdout)
    assert "ceiling(log(n)/log(2))" in data["sites"][2]["time"]["cpu"]  # JSON: sympy's own form


def test_a_formula_of_cases_is_written_as_cases():
    """map_map's upper time bound has two cases: the text writes them `{A if n <= 2; B
    otherwise}`, each in the paper's notation, not sympy's Piecewise((A, n <= 2), (B, True))."""
    import sympy as sp

    from graphs.formulas import formula

    n = sp.Symbol("n", positive=True, integer=True)
    cases = sp.Piecewise((2 * n + sp.ceiling(sp.log(n) / sp.log(2)), n <= 2), (9 * n / 2, True))
    assert formula(cases) == formula(sp.sstr(cases)) == (
        "{2*n + ⌈log₂(n)⌉ if n <= 2; 9*n/2 otherwise}")
    text = hetprof("profile", "examples/map_map.lg", "--symbolic").stdout
    assert "Piecewise" not in text and " otherwise}" in text


def test_a_formula_of_many_pieces_is_shown_by_the_one_that_holds_at_the_sizes():
    """`piece_at` picks the first piece whose condition holds at the sizes, and only where there
    are more than SHOWN_PIECES; a condition it cannot decide leaves the formula whole."""
    from graphs.symbolic_profile import SHOWN_PIECES, piece_at

    n, m = sp.Symbol("n", positive=True, integer=True), sp.Symbol("m")
    steps = sp.Piecewise(*[(k * n + k, n <= 10 * k) for k in range(1, SHOWN_PIECES + 1)],
                         (100 * n, True))
    assert piece_at(steps, {n: 25}) == {"formula": "3*n + 3", "piece": 3,
                                        "pieces": SHOWN_PIECES + 1}
    assert piece_at(steps, {n: 10**6})["formula"] == "100*n"
    assert piece_at(sp.Piecewise(*steps.args[-SHOWN_PIECES:]), {n: 25}) is None  # few pieces
    assert piece_at(steps.subs(n, m), {}) is None  # undecided


def test_the_text_report_shows_a_transfer_by_its_piece_and_json_keeps_every_piece(tmp_path):
    """Under a calibrated profile a transfer's time steps with its size (18 pieces for run 21's
    table), and the folded work formula has hundreds: the text shows each by the piece at the
    sizes, marked, whose value is the report's, and so does `hetprof report`'s page; the JSON
    keeps the whole formulas."""
    args = ("profile", "examples/zipmul.lg", "--symbolic", "--growth-as-write",
            "--device-profile", "profiles/nvidia-h200-run21a.json", "--param", "n=1024")
    data = json.loads(hetprof(*args, "--format", "json").stdout)
    n = sp.Symbol("n", integer=True, positive=True)
    piece = data["pieces"]["on.0.transfer_in"]
    assert piece["pieces"] == 18 and 1 <= piece["piece"] <= 18
    value = float(sp.sympify(piece["formula"], locals={"n": n}).subs(n, 1024))
    assert value == pytest.approx(data["values"]["on"][0]["transfer_in"], rel=1e-12)
    whole = sp.sympify(data["formulas"]["on"][0]["transfer_in"], locals={"n": n})
    assert isinstance(whole, sp.Piecewise) and len(whole.args) == 18
    assert data["pieces"]["work"]["pieces"] > 100
    # wide enough that no row wraps (a wrapped row puts its value amid the formula's text)
    text = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "COLUMNS": "1000"}).stdout
    row = next(line for line in text.splitlines() if line.startswith("on #1 transfer in"))
    assert f"[piece {piece['piece']} of 18, the one at these sizes]" in row
    assert "Piecewise" not in text and len(text.splitlines()) < 120  # whole: thousands
    page = tmp_path / "zipmul.html"
    assert hetprof("report", *args[1:2], *args[3:], "-o", str(page)).returncode == 0
    html = page.read_text()
    assert f"[piece {data['pieces']['work']['piece']} of {data['pieces']['work']['pieces']}, " \
        "the one at these sizes]" in html and "Piecewise" not in html


def test_a_report_for_the_text_writes_a_many_piece_formula_as_its_piece_alone():
    """`report(..., whole=False)`, as the text asks it: a formula of many pieces is its piece's
    text (the whole is not written out), every other formula and every value as in the whole
    report."""
    from graphs.semantics.options import EvaluationOptions
    from graphs.symbolic_profile import report, symbolic_profile
    from models.device_profile import load_profile
    from models.opencl.predict import growth_as_write
    from profiler.checker import bind_parameters, check_program
    from profiler.parser import parse_file

    checked = check_program(parse_file(ROOT / "examples" / "zipmul.lg"))
    values = bind_parameters(checked, {"n": 1024})
    profile = growth_as_write(load_profile(ROOT / "profiles" / "nvidia-h200-run21a.json"))
    symbolic = symbolic_profile(checked, EvaluationOptions(profile=profile), values)
    whole, text = report(symbolic, values, 2), report(symbolic, values, 2, whole=False)
    assert text["values"] == whole["values"] and text["pieces"] == whole["pieces"]
    assert text["formulas"]["on"][0]["transfer_in"] == whole["pieces"]["on.0.transfer_in"]["formula"]
    assert text["formulas"]["work"] == whole["pieces"]["work"]["formula"]
    assert len(whole["formulas"]["work"]) > 10 * len(text["formulas"]["work"])
    assert text["formulas"]["on"][0]["kernel"] == whole["formulas"]["on"][0]["kernel"]


def test_place_streams_each_site_under_progress_on_a_terminal():
    """Issue 19: on a terminal, each site's verdict is printed (to stderr) as soon as it is
    decided, the same as its row of the table; a pipe gets the table alone."""
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "160"}
    result = subprocess.run([sys.executable, "-m", "cli", "place", "examples/zipmul.lg"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(hetprof("place", "examples/zipmul.lg", "--format", "json").stdout)
    streamed = [line for line in result.stderr.splitlines() if ": use " in line]
    assert len(streamed) == len(data["sites"]) == 2
    # in the order they were decided (two processes place them: cli.forked), one per site
    for site in data["sites"]:
        (line,) = [line for line in streamed if site["site"] + ": use " in line]
        crossing = site["crossings"][0]
        assert line.endswith(f"{site['cheaper_from_1'].upper()} from 1; "
                             f"{crossing['cheaper'].upper()} from {crossing['n']:,}")
    plain = hetprof("place", "examples/zipmul.lg")
    assert ": use " not in plain.stderr


def test_place_under_a_calibrated_cpu_prices_the_on_as_validate_does():
    """Issue 15: under a profile that prices the CPU by operation class, `place` compares the
    `on` with its body on the CPU device's compute units (the profile's 16 by default), as
    `validate` predicts them. benchmarks/suite/sample.lg's measured crossing (H200 and its host's
    PoCL, 2026-11-26) lies between 32,768 and 65,536; the prediction falls inside it."""
    out = hetprof("place", "benchmarks/suite/sample.lg", "--device-profile",
                  "profiles/nvidia-h200-alloc.json", "--format", "json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["procs"] == 16 and result["units"] == "seconds"
    on = next(site for site in result["sites"] if site["written"] == "gpu")
    assert on["method"] == "calibrated" and on["bound"] == "launch"  # 8 threads' kernels
    assert on["cheaper_from_1"] == "gpu"
    (crossing,) = on["crossings"]
    assert crossing["cheaper"] == "cpu" and 32_768 < crossing["n"] < 65_536
    text = hetprof("place", "benchmarks/suite/sample.lg", "--device-profile",
                   "profiles/nvidia-h200-alloc.json").stdout
    assert "µs" in text and f"{crossing['n']:,}" in text  # the JSON's break-even, as text


def test_place_looks_for_crossings_only_where_the_ons_heap_fits_the_card(tmp_path):
    """A profile that knows the card's memory (`gpu.memory_bytes`) bounds the search: sample's
    CPU crossing (between 32,768 and 65,536 above) lies past a card that holds the `on`'s heap
    up to n = 10,000 only, so none is reported, the search stops at 10,000 exactly, and the note
    says why in bytes. The heap is the words the device box pushes and returns, int64 each."""
    from models.device_profile import load_profile, save_profile
    from models.opencl.predict import OnPlacement, growth_as_write
    from profiler.checker import check_program
    from profiler.parser import parse
    from profiler.syntax import On
    from profiler.transform import walk_paths

    checked = check_program(parse((ROOT / "benchmarks/suite/sample.lg").read_text(), "s.lg"))
    profile = load_profile(str(ROOT / "profiles/nvidia-h200-alloc.json"))
    on = next(node for _, node in walk_paths(checked.body) if isinstance(node, On))
    placement = OnPlacement(checked, on.span, growth_as_write(profile), "cache", 16)
    heap = placement.heap_bytes({"n": 10_000})
    words = placement.predictions.gpu.at({"n": 10_000})["on"][0]
    assert heap == 8 * (words["pushed_words"] + words["gpu_words"])
    assert placement.heap_bytes({"n": 10_001}) > heap
    small = replace(profile, gpu=replace(profile.gpu, memory_bytes=float(heap)))
    save_profile(small, tmp_path / "small.json")
    out = hetprof("place", "benchmarks/suite/sample.lg", "--device-profile",
                  str(tmp_path / "small.json"), "--format", "json")
    assert out.returncode == 0, out.stderr
    site = next(s for s in json.loads(out.stdout)["sites"] if s["written"] == "gpu")
    assert site["searched_up_to"] == 10_000 and site["crossings"] == []
    assert (f"crossings looked for up to n = 10000: from n = 10001 the `on`'s heap "
            f"({placement.heap_bytes({'n': 10_001}):,} bytes) outgrows the card's memory "
            f"({heap:,} bytes)") in site["note"]


def test_the_sizes_that_fit_a_card_are_found_exactly():
    from cli.symbolic import _fits_up_to

    assert _fits_up_to(lambda n: 8 * n * n, 8 * 1000**2, 10**12) == 1000
    assert _fits_up_to(lambda n: 8 * n * n, 8 * 1000**2 - 1, 10**12) == 999
    assert _fits_up_to(lambda n: 8 * n, 0.0, 10**12) == 10**12  # not known: no bound
    assert _fits_up_to(lambda n: 8 * n, 1e15, 1000) == 1000  # every size fits
    assert _fits_up_to(lambda n: 64 + n, 63.0, 1000) == 0  # none does


def test_on_placement_is_validates_prediction():
    """`OnPlacement`'s two times are `SymbolicPredictions`' CPU part and the `on`'s device-box
    edge, which is its transfers, kernel and merge as the symbolic profile reports them."""
    from models.device_profile import load_profile
    from models.opencl.predict import OnPlacement, growth_as_write
    from profiler.checker import check_program
    from profiler.parser import parse
    from profiler.syntax import On
    from profiler.transform import walk_paths

    source = (ROOT / "benchmarks/suite/trace.lg").read_text()
    checked = check_program(parse(source, "trace.lg"))
    profile = growth_as_write(load_profile(str(ROOT / "profiles/nvidia-h200-alloc.json")))
    on = next(node for _, node in walk_paths(checked.body) if isinstance(node, On))
    placement = OnPlacement(checked, on.span, profile, "cache", 16)
    cpu, gpu = placement.times({"n": 512})
    (predicted,) = placement.predictions.at({"n": 512})
    assert (cpu, gpu) == (predicted.cpu, predicted.whole)
    (parts,) = placement.predictions.gpu.at({"n": 512})["on"]
    assert gpu == parts["total"]
    assert abs(gpu - (parts["grow"] + parts["transfer_in"] + parts["kernel"]
                      + parts["transfer_out"] + parts["merge"])) < 1e-12
    assert cpu < gpu  # the CPU is measured cheaper at 512 (500 by interpolation)


def test_place_prices_an_irregular_on_as_validate_does_explicitly():
    """jacobi1d's sweep has a branch its threads do not agree on, so it has no symbolic profile:
    under a profile that prices the CPU by class, `place` predicts its `on` as `validate` does from
    explicit evaluations (`ExplicitOnPlacement`): the CPU part of all four runs of the `on` (in the
    time loop), and on the GPU the four device boxes; the two the same as validate's."""
    from graphs.semantics.options import EvaluationOptions
    from models.device_profile import load_profile
    from models.opencl.predict import growth_as_write
    from models.opencl.validate import _variants, explicit_predictions
    from profiler.checker import bind_parameters, check_program
    from profiler.parser import parse

    profile_path = "profiles/nvidia-h200-run13.json"
    out = hetprof("place", "benchmarks/suite/jacobi1d.lg", "--device-profile", profile_path,
                  "--param", "n=64", "--format", "json")
    assert out.returncode == 0, out.stderr
    on = next(site for site in json.loads(out.stdout)["sites"] if site["written"] == "gpu")
    assert on["method"] == "calibrated, explicit" and "branch" in on["note"]
    source = (ROOT / "benchmarks/suite/jacobi1d.lg").read_text()
    checked = check_program(parse(source, "benchmarks/suite/jacobi1d.lg"))
    gpu, cpu = _variants(checked)
    profile = growth_as_write(load_profile(str(ROOT / profile_path)))
    _, _, runs = explicit_predictions(gpu, cpu, bind_parameters(checked, {"n": 64}),
                                      EvaluationOptions(profile=profile, gpu_mode="cache"), {}, 16)
    assert len(runs) == 4 and runs[0].cpu is not None
    assert on["at_params"]["cpu"] == runs[0].cpu
    assert on["at_params"]["gpu"] == sum(run.whole for run in runs) > 0


@pytest.mark.parametrize("profile", [None, "profiles/nvidia-h200-run15.json"])
def test_place_starts_where_the_program_runs(profile):
    """A program that does not run at the ladder's first sizes (an index past a vector's end
    while n is below 6) is placed from the first size that runs, 8, and the note says why in the
    program's words, where; under the default profile (explicit evaluation) and a calibrated one
    (validate's explicit prediction) alike. Before, `place` stopped at n = 1 with the program's
    error, though the size asked for (16) runs."""
    args = ["place", "tests/programs/runs_from_eight.lg", "--format", "json"]
    out = hetprof(*args, *(["--device-profile", profile] if profile else []))
    assert out.returncode == 0, out.stderr
    for site in json.loads(out.stdout)["sites"]:
        assert site["runs_from"] == 8 and site["searched_up_to"] == 16
        assert ("placed from n = 8: the program does not run at n = 4 and below (14:33: index 5 "
                "is out of bounds for a vector of 4 elements)") in site["note"]
        assert all(c["n"] >= 8 for c in site["crossings"])
        verdict = place_cells(site)[-1]  # the table's "cheaper as n grows"
        assert verdict.startswith(f"{site['cheaper_from_1'].upper()} from 8; "), verdict
