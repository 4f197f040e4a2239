"""Resource guards and strict inputs and outputs (issue 17): every input that used to crash
hetprof gets a clear error, located at `file:line:col` where the program has a position.

CLI cases run the command in a subprocess (tests/test_robustness.py's helpers)."""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from graphs.numbers import json_text
from graphs.semantics.irregular import OutsideAssumptions
from graphs.semantics.options import EvaluationOptions
from graphs.symbolic_profile import symbolic_profile
from profiler.checker import check_program
from profiler.errors import ParameterError
from profiler.parser import parse
from tests.test_robustness import (
    EXIT_OK,
    EXIT_PROGRAM_ERROR,
    EXIT_USAGE,
    ROOT,
    assert_clean,
    hetprof,
    write,
)

# -- the parser ---------------------------------------------------------------------------------


def test_an_integer_literal_of_100_000_digits_is_a_located_syntax_error(tmp_path: Path):
    path = write(tmp_path, "big.lg", "letregion r in\n" + "9" * 100_000 + " at r\n")
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    head, line, caret = result.stderr.splitlines()[:3]
    assert head == (f"{path}:2:1: syntax error: integer literal too large: 100000 digits "
                    "(an int is 64 bits)")
    assert line.strip().startswith("9999")
    assert caret.strip().startswith("^^^")


def test_a_parameter_default_of_5000_digits_is_a_located_syntax_error(tmp_path: Path):
    path = write(tmp_path, "big.lg", "param n : int = " + "9" * 5000 + "\nletregion r in n\n")
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(f"{path}:1:17: syntax error: integer literal too large: "
                                    "5000 digits")


# -- device profiles and model parameters -------------------------------------------------------

DOT = "examples/dot.lg"


@pytest.mark.parametrize("transfer", ["[1, 2]", '"fast"', "7"], ids=["list", "string", "number"])
def test_a_transfer_that_is_not_an_object_names_the_file_and_field(tmp_path: Path,
                                                                    transfer: str):
    path = write(tmp_path, "p.json", f'{{"transfer": {{"host_to_device": {transfer}}}}}')
    result = hetprof("profile", DOT, "--device-profile", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == (f"profile error: {path}: field 'transfer.host_to_device' must be an "
                             f"object, not {json.dumps(json.loads(transfer))}\n")


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000,
                                  '{"gpu": {"banks": ' + "[" * 150_000 + "]" * 150_000 + "}}"],
                         ids=["top", "field"])
def test_a_deeply_nested_profile_is_a_malformed_profile(tmp_path: Path, text: str):
    path = write(tmp_path, "deep.json", text)
    result = hetprof("profile", DOT, "--device-profile", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(f"profile error: {path}: ")
    assert "program" not in result.stderr


def test_an_overflowing_latency_in_a_profile_is_refused_at_load(tmp_path: Path):
    path = write(tmp_path, "p.json", '{"gpu": {"global_latency": 1e308}}')
    result = hetprof("profile", DOT, "--device-profile", path, "--format", "json")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == (f"profile error: {path}: field 'gpu.global_latency' must be a finite "
                             "non-negative number of at most 10^15, not 1e+308\n")
    assert result.stdout == ""


@pytest.mark.parametrize("arguments, shown", [
    (["--global-latency", "1e308"], "--global-latency must be a finite number from 1 to 10^15, "
                                    "not 1e+308"),
    (["--global-latency", "inf"], "--global-latency must be a finite number from 1 to 10^15, "
                                  "not inf"),
    (["--warp-width", "99999999999999999999"], "--warp-width must be a finite number from 1 to "
                                               "10^15, not 1e+20"),
    (["--bsize", "0"], "--bsize must be a finite number from 1 to 10^15, not 0"),
], ids=["huge", "inf", "huge-int", "zero"])
@pytest.mark.parametrize("output", ["text", "json"])
def test_overflowing_model_options_are_refused(arguments: list[str], shown: str, output: str):
    result = hetprof("profile", DOT, "--param", "n=4", "--format", output, *arguments)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == f"parameter error: {shown}\n"
    assert result.stdout == ""


def test_json_is_never_written_with_a_number_that_is_not_finite():
    for value in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ParameterError, match="not a finite number"):
            json_text({"work": value})
    assert json_text({"work": 1.5}) == '{\n  "work": 1.5\n}'


# -- processors ---------------------------------------------------------------------------------

DC_SUM = "examples/dc_sum.lg"


def test_processors_beyond_the_graphs_width_are_capped_and_said_so():
    huge, capped_text, at_width = (
        hetprof("profile", DC_SUM, "--procs", "99999999999999999999", "--format", "json"),
        hetprof("profile", DC_SUM, "--procs", "100000000"),
        hetprof("profile", DC_SUM, "--procs", "64", "--format", "json"),
    )
    for result in (huge, capped_text, at_width):
        assert_clean(result, EXIT_OK)
    data, reference = json.loads(huge.stdout), json.loads(at_width.stdout)
    assert data["procs"] == 99999999999999999999 and data["procs_used"] == 64
    assert "procs_used" not in reference  # 64 processors: none capped
    for key in ("time", "space", "work", "span"):
        assert data[key] == reference[key]
    assert ("note: scheduled on 64 processors (the most tasks ever ready at once); more change "
            "nothing") in capped_text.stdout


def test_too_many_processors_for_a_speedup_plot_is_a_parameter_error(tmp_path: Path):
    result = hetprof("plot", "speedup", DC_SUM, "--max-procs", "5000", "-o", tmp_path / "s.svg")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == ("parameter error: --max-procs must be at most 1024 (the speedup plot "
                             "schedules the program once for each P)\n")


# -- memory -------------------------------------------------------------------------------------

ZIPMUL = "examples/zipmul.lg"


def test_a_graph_over_the_budget_is_refused_before_it_is_built():
    # --max-steps lifts the step limit, so the symbolic profile's node count (12n + 10) decides.
    result = hetprof("profile", ZIPMUL, "--param", "n=100000000", "--max-steps", "1000000000000")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(
        "examples/zipmul.lg:19:1: evaluation error: at these sizes the explicit cost graph would "
        "have 1,200,000,010 nodes, more than --max-graph-size (6,000,000): profile it with "
        "--symbolic, which does not build it, or raise --max-graph-size if the memory is there "
        "[memory budget]\n    letregion r0 in\n    ^")


def test_the_evaluator_stops_at_the_budget_where_the_program_is_building(tmp_path: Path):
    result = hetprof("run", ZIPMUL, "--param", "n=100000", "--max-graph-size", "100000")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert re.match(r"examples/zipmul.lg:20:\d+: evaluation error: the explicit cost graph grew "
                    r"past --max-graph-size \(100,000 nodes and GPU steps; [\d,]+ here\): profile "
                    r"it with --symbolic", result.stderr)


def test_a_graph_size_past_32_bit_numbers_is_a_usage_error():
    result = hetprof("profile", ZIPMUL, "--max-graph-size", "2e9")
    assert_clean(result, 2)
    assert "--max-graph-size: '2e9': at most 1,000,000,000" in result.stderr
    assert hetprof("profile", ZIPMUL, "--param", "n=4", "--max-graph-size", "1e9").returncode == 0


def test_running_out_of_memory_is_a_clear_message():
    limit = 1200 * 2**20  # address space: the interpreter, its imports and the stack fit

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-m", "cli", "profile", ZIPMUL, "--param", "n=1000000",
         "--max-graph-size", "1000000000"],
        cwd=ROOT, capture_output=True, encoding="utf-8", timeout=300, preexec_fn=cap_memory)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == ("hetprof: out of memory (at these sizes the program's explicit cost "
                             "graph does not fit): profile it with --symbolic, or lower the sizes "
                             "or --max-graph-size\n")


# -- symbolic profiles at sizes outside their assumptions -----------------------------------------

# dc_sum summing the range 32 .. n - 1: its recursion's size is n - 32, below 1 up to n = 32.
DC_SUM_FROM_32 = (ROOT / DC_SUM).read_text(encoding="utf-8").replace("sum (0 at r, n)",
                                                                     "sum (32 at r, n)")


@pytest.mark.parametrize("n", ["0", "-1"])
def test_a_size_below_1_is_profiled_explicitly_with_the_reason(n: str):
    result = hetprof("profile", ZIPMUL, "--symbolic", "--param", f"n={n}")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout.splitlines()[0] == (
        "hetprof: outside the formulas' assumptions, so profiled explicitly at the sizes given: "
        f"examples/zipmul.lg:17:1: the formulas assume every size parameter is at least 1, and "
        f"n = {n}")
    if n == "0":
        assert_clean(result, EXIT_OK)
        assert "hetprof profile examples/zipmul.lg  (params: n=0)" in result.stdout
    else:  # the explicit evaluator's own error, located
        assert_clean(result, EXIT_PROGRAM_ERROR)
        assert result.stderr.startswith("examples/zipmul.lg:20:69: evaluation error: iota of a "
                                        "negative count (-1)")


def test_a_recursion_on_a_size_below_1_is_profiled_explicitly_with_the_reason(tmp_path: Path):
    path = write(tmp_path, "dc_sum_32.lg", DC_SUM_FROM_32)
    below, above, as_json = (
        hetprof("profile", path, "--symbolic", "--param", "n=16"),
        hetprof("profile", path, "--symbolic", "--param", "n=40"),
        hetprof("profile", path, "--symbolic", "--param", "n=16", "--format", "json"))
    for result in (below, above, as_json):
        assert_clean(result, EXIT_OK)
    reason = ("the formulas assume the size of the range the recursive function sum recurses on "
              "is at least 1, and here it is n - 32 = -16")
    assert below.stdout.splitlines()[0] == (
        "hetprof: outside the formulas' assumptions, so profiled explicitly at the sizes given: "
        f"{path}:17:4: {reason}")
    assert "final regions: r: 8 words" in below.stdout
    data = json.loads(as_json.stdout)
    assert (data["symbolic"], data["reason"], data["location"]) == (False, reason, f"{path}:17:4")
    assert ("n - 32 (the size of the range the recursive function sum recurses on) is at least "
            "1") in above.stdout
    assert "55*n - 1792" in above.stdout  # its work, as a formula


def test_a_symbolic_profile_that_falls_back_past_the_graph_budget_says_what_is_left():
    """zipmul under a calibrated profile is not regular (a region's growth costs other than a
    write) and its explicit graph passes a small --max-graph-size: the error does not advise the
    --symbolic that was asked for, and names why it could not be used."""
    result = hetprof("profile", ZIPMUL, "--symbolic", "--param", "n=50000",
                     "--device-profile", "profiles/nvidia-h200-placed.json",
                     "--max-graph-size", "1000")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(
        "examples/zipmul.lg:20:45: evaluation error: the symbolic profile cannot price this "
        "program (not regular: examples/zipmul.lg:20:69: a parallel form that may grow a region, "
        "under a profile where growing costs differ from a write), and at these sizes the "
        "explicit cost graph grows past --max-graph-size: lower the sizes, or raise "
        "--max-graph-size if the memory is there; --growth-as-write prices a region's growth as "
        "a write, as `validate` and `place` do, and lets the symbolic profile through "
        "[memory budget]")
    assert "profile it with --symbolic" not in result.stderr
    assert result.stdout.endswith("under a profile where growing costs differ from a write; "
                                  "--growth-as-write prices a region's growth as a write, as "
                                  "`validate` and `place` do, and lets the symbolic profile "
                                  "through\n")


def test_growth_as_write_lets_the_symbolic_profile_price_a_calibrated_profile_at_a_million():
    """The same program and profile with --growth-as-write: the symbolic profile at n = 10^6, in
    seconds, its assumption stated; its kernel the same as without the flag at a size the
    explicit evaluator reaches (a kernel never grows a region), its growth one write."""
    flags = ["--device-profile", "profiles/nvidia-h200-placed.json", "--format", "json"]
    big = hetprof("profile", ZIPMUL, "--symbolic", "--growth-as-write", "--param", "n=1000000",
                  *flags)
    assert_clean(big, EXIT_OK)
    data = json.loads(big.stdout)
    assert data["symbolic"] is True and data["params"] == {"n": 1000000}
    assert "a region's growth costs a write (--growth-as-write)" in data["assumptions"]
    small = [json.loads(hetprof("profile", ZIPMUL, *extra, "--param", "n=64", *flags).stdout)
             for extra in ([], ["--growth-as-write"])]
    assert small[0]["on"][0]["kernel"] == small[1]["on"][0]["kernel"] > 0
    assert small[1]["work"] < small[0]["work"]  # growth at a write's price, not Δa's
    assert small[1]["profile_name"] == ("NVIDIA H200 (calibrated 2026-11-26); a region's growth "
                                        "priced as a write")


def test_place_falls_back_to_explicit_evaluation_outside_the_assumptions():
    result = hetprof("place", ZIPMUL, "--param", "n=0")
    assert_clean(result, EXIT_OK)
    assert ("explicit (outside the formulas' assumptions: the formulas assume every size "
            "parameter is at least 1, and n = 0)") in result.stdout


def test_values_outside_the_assumptions_are_refused_in_process(tmp_path: Path):
    checked = check_program(parse(DC_SUM_FROM_32, "dc.lg"))
    profile = symbolic_profile(checked, EvaluationOptions(), {"n": 40})
    assert profile.at({"n": 40})["work"] == 55 * 40 - 1792
    for n in (16, 32, 0):
        with pytest.raises(OutsideAssumptions):
            profile.at({"n": n})
        with pytest.raises(OutsideAssumptions):
            profile.time_at({"n": n}, 2)
    assert profile.at({"n": 33})["work"] == 55 * 33 - 1792


# -- programs nested deeper than the interpreter's stack -----------------------------------------

RUNAWAY = """param n : int = 10
letregion r in
let loop = fix loop: (int r -> int r [r], r).
  lambda k: int r [r]. if k <= 0 at r then k else loop (k + 1 at r) in
loop n
"""


def test_a_100_000_term_sum_is_located(tmp_path: Path):
    path = write(tmp_path, "chain.lg", "letregion r in\n" + " + ".join(["1 at r"] * 100_000)
                 + " at r\n")
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    head, line, caret = result.stderr.splitlines()
    assert head == (f"{path}:2:1: syntax error: the program is nested too deeply for hetprof (the "
                    "interpreter's stack ran out at this expression, the deepest reached); "
                    "simplify it or split it into smaller functions")
    assert line.startswith("    1 at r + 1 at r") and caret.startswith("    ^^^")


def test_a_runaway_recursion_past_the_interpreters_stack_is_located(tmp_path: Path):
    path = write(tmp_path, "runaway.lg", RUNAWAY)
    result = hetprof("run", path, "--max-depth", "10000000")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert re.match(rf"{re.escape(str(path))}:4:\d+: evaluation error: evaluation nested \d+ deep, "
                    r"as deep as the interpreter's stack holds, before the depth limit "
                    r"\(10000000\) was reached", result.stderr), result.stderr


def test_a_deeply_nested_validation_report_is_a_usage_error(tmp_path: Path):
    path = write(tmp_path, "deep.json", "[" * 200_000 + "]" * 200_000)
    result = hetprof("plot", "validation", path, "-o", tmp_path / "v.png")
    assert_clean(result, EXIT_USAGE)
    assert result.stderr == f"hetprof: {path}: not a JSON validation report (nested too deeply)\n"


# -- command-line values ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["4", "2**2", "4e0", "0.4e1", "+4", " 4 ", "0_4"])
def test_a_size_may_be_written_as_the_readme_writes_it(value: str):
    result = hetprof("run", DOT, "--param", f"n={value}")
    assert_clean(result, EXIT_OK)
    assert result.stdout.splitlines()[0] == "40"  # test_robustness.test_a_good_parameter_runs


@pytest.mark.parametrize("value, why", [
    ("٣", "'٣' is not an integer (write e.g. 1000000, 1_000_000, 10**6 or 1e6, in ASCII digits)"),
    ("1.5", "'1.5' is not an integer"),
    ("2.5e0", "'2.5e0' is not a whole number"),
    ("10**19", "'10**19' is too large (at most 10**18)"),
    ("1e400", "'1e400' is too large (at most 10**18)"),
    ("9" * 5000, "'999999999999999999999999999...' is too large (at most 10**18)"),
], ids=["arabic-indic", "fraction", "fraction-e", "power", "exponent", "digits"])
def test_a_size_that_is_not_a_plain_integer_is_a_parameter_error(value: str, why: str):
    result = hetprof("run", DOT, "--param", f"n={value}")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    shown = repr(f"n={value}") if len(value) < 100 else None
    assert result.stderr.startswith(f"parameter error: --param {shown}: {why}" if shown
                                    else "parameter error: --param ")
    assert why in result.stderr


def test_a_parameter_given_twice_is_an_error_naming_it():
    result = hetprof("run", DOT, "--param", "n=10**3", "--param", "n=4")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == ("parameter error: --param n is given twice (n=1000 and n=4): give "
                             "each parameter once\n")


def test_the_readmes_sizes_are_accepted():
    big, ceiling = (hetprof("profile", ZIPMUL, "--symbolic", "--param", "n=10**9"),
                    hetprof("place", ZIPMUL, "--max-n", "10**12", "--format", "json"))
    assert_clean(big, EXIT_OK)
    assert "values at n = 1000000000" in big.stdout
    assert_clean(ceiling, EXIT_OK)
    assert json.loads(ceiling.stdout)["sites"]


@pytest.mark.parametrize("value", ["0", "-5"])
def test_place_needs_a_largest_size_of_at_least_1(value: str):
    result = hetprof("place", ZIPMUL, "--max-n", value)
    assert_clean(result, EXIT_USAGE)
    assert result.stderr.endswith(f"hetprof place: error: argument --max-n: '{value}': must be "
                                  "at least 1\n")


@pytest.mark.parametrize("command", [["profile", DOT], ["graph", DOT],
                                     ["rewrite", DOT, "--apply", "x@1:1"]],
                         ids=["profile", "graph", "rewrite"])
def test_an_empty_output_path_is_a_usage_error(command: list[str]):
    result = hetprof(*command, "-o", "")
    assert_clean(result, EXIT_USAGE)
    assert result.stderr == 'hetprof: the output path is empty (-o ""): give a file name\n'


# -- reproducible pictures ----------------------------------------------------------------------


@pytest.mark.parametrize("command, name", [
    (["graph", DOT, "--param", "n=8"], "graph.svg"),
    (["graph", DOT, "--param", "n=8"], "graph.png"),
    (["plot", "timeline", DOT, "--param", "n=8"], "timeline.svg"),
    (["report", DOT, "--param", "n=8"], "report.html"),
], ids=["graph-svg", "graph-png", "timeline-svg", "report-html"])
def test_identical_runs_write_identical_bytes(tmp_path: Path, command: list[str], name: str):
    first, second = tmp_path / f"1-{name}", tmp_path / f"2-{name}"
    for output in (first, second):
        assert_clean(hetprof(*command, "-o", output), EXIT_OK)
    assert first.read_bytes() == second.read_bytes()
    if name.endswith(".svg"):
        assert b"<dc:date>" not in first.read_bytes()


@pytest.mark.parametrize("command", [["plot", "sizes", DOT, "-o", "s.svg"],
                                     ["validate", "--device", "none", "--device-profile",
                                      "profiles/default.json"]],
                         ids=["plot-sizes", "validate"])
def test_sizes_that_are_not_integers_are_a_parameter_error(command: list[str]):
    # validate reads its sizes before it opens any device.
    result = hetprof(*command, "--sizes", "2**4,abc")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith("parameter error: --sizes '2**4,abc': write integers "
                                    "separated by commas, e.g. 64,256,1024 or 2**10,2**20 ('abc' "
                                    "is not an integer")


def test_symbolic_index_into_an_empty_vector_falls_back_to_the_located_error(tmp_path):
    """Fuzz campaign (seed 1): an IndexError in the symbolic evaluator's `_select`."""
    program = write(tmp_path, "empty.lg", "letregion r in let ys = iota 0 at r in ys[0 at r]\n")
    result = hetprof("profile", program, "--symbolic")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert "an index into a vector of no elements" in result.stdout
    assert "empty.lg:1:40: evaluation error: index 0 is out of bounds for a vector of 0 " \
           "elements" in result.stderr


@pytest.mark.parametrize("command", [("place",), ("plot", "sizes", "--sizes", "1,2", "-o",
                                                  "x.png")])
def test_an_empty_size_parameter_is_a_usage_error(command):
    result = hetprof(*command, "examples/zipmul.lg", "--size-param", "")
    assert_clean(result, 2)
    assert "--size-param is empty" in result.stderr
