"""The `hetprof` command, run as a user would: in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import partial

import pytest
from conftest import ROOT

from cli.forked import Beside, Helpers, forked_map


def hetprof(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_check_ok():
    result = hetprof("check", "examples/zipmul.lg")
    assert result.returncode == 0
    assert "ok" in result.stdout and "(Vec (int r0), r0)" in result.stdout


def test_check_error_has_position_and_caret(tmp_path):
    bad = tmp_path / "bad.lg"
    bad.write_text("letregion r in\n  on (on 1 at r at r) at r\n")
    result = hetprof("check", str(bad))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:2:7: world error: `on` inside `on`")
    assert lines[1] == "      on (on 1 at r at r) at r"
    assert lines[2] == "    " + " " * 6 + "^" * len("on 1 at r at r")
    assert "Traceback" not in result.stderr


def test_run_prints_value_and_regions():
    result = hetprof("run", "examples/zipmul.lg", "--param", "n=4")
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == "[0, 2, 6, 12]"
    # r0: iota (1 + 2n) + input (5n) + the closure (2) + products and their vector (2n)
    assert "region r0: 39 words used" in result.stdout


def test_profile_text_report():
    result = hetprof("profile", "examples/zipmul.lg", "--param", "n=64")
    assert result.returncode == 0
    for text in ("work", "span", "time (1df, P=2)", "peak space GPU", "device boxes",
                 "gray", "cost by source", "GPU memory model: dmm"):
        assert text in result.stdout


def test_profile_json_keys_and_values(tmp_path):
    out = tmp_path / "p.json"
    result = hetprof("profile", "examples/zipmul_cpu.lg", "--param", "n=16", "--procs", "3",
                     "--schedule", "bf", "--format", "json", "-o", str(out))
    assert result.returncode == 0 and result.stdout == ""
    data = json.loads(out.read_text())
    for key in ("work", "span", "time", "procs", "schedule", "units", "space", "on",
                "cost_centres"):
        assert key in data
    assert set(data["space"]) == {"cpu", "gpu", "peak"}
    assert data["procs"] == 3 and data["schedule"] == "bf" and data["units"] == "abstract"
    (gray,) = data["cost_centres"]
    assert gray["name"] == "gray" and gray["work"] == 10 * 16 - 1
    assert set(gray) >= {"name", "work", "span", "time", "space"}
    assert data["span"] <= data["time"] <= data["work"]


def test_a_centre_inside_an_on_costs_its_kernel_time_in_the_profiles_units():
    """zipmul's `gray` centre is its `on`'s kernel. Under a calibrated profile (seconds) its work
    was the box's phase time in the GPU model's nanoseconds, read as seconds: 10^9 too large."""
    result = hetprof("profile", "examples/zipmul.lg", "--param", "n=64", "--format", "json",
                     "--device-profile", "profiles/nvidia-h200-serial.json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (on,) = data["on"]
    (gray,) = data["cost_centres"]
    assert data["units"] == "seconds" and 1e-7 < on["kernel"] < 1e-3
    assert gray["work"] == pytest.approx(on["kernel"]) == pytest.approx(gray["time"])


def test_profile_json_on_fields():
    result = hetprof("profile", "examples/zipmul.lg", "--param", "n=8", "--format", "json",
                     "--gpu-mode", "paper")
    data = json.loads(result.stdout)
    (on,) = data["on"]
    assert set(on) >= {"transfer_in", "kernel", "transfer_out", "merge", "bank_conflicts"}
    assert data["gpu_mode"] == "paper"
    assert on["kernel"] == (5 * 32 + 1) + 2 * 32 + 1


def test_profile_result_round_trips_through_json():
    from graphs.analysis import ProfileResult
    from graphs.render_text import TextRenderer

    result = hetprof("profile", "examples/dot.lg", "--param", "n=8", "--format", "json")
    data = json.loads(result.stdout)
    again = ProfileResult.from_json(data)
    assert again.to_json() == data
    assert "dot.lg" in TextRenderer().render(again)


def test_model_options_change_the_costs():
    def kernel(*extra, n=8):
        result = hetprof("profile", "examples/zipmul.lg", "--param", f"n={n}", "--format",
                         "json", "--gpu-mode", "paper", *extra)
        return json.loads(result.stdout)["on"][0]["kernel"]

    assert kernel("--global-latency", "100") == (5 * 100 + 1) + 2 * 100 + 1
    assert kernel("--threads-at-once", "32", "--work-group-size", "32", n=96) == \
        3 * (5 * 32 + 1) + 2 * 32 + 1


def test_device_profile_file(tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"name": "slow bus", "transfer": {
        "host_to_device": {"latency": 5, "words_per_unit": 1},
        "device_to_host": {"latency": 7, "words_per_unit": 2}}}))
    result = hetprof("profile", "examples/zipmul.lg", "--param", "n=4", "--format", "json",
                     "--device-profile", str(profile))
    data = json.loads(result.stdout)
    on = data["on"][0]
    assert data["profile_name"] == "slow bus"
    assert on["transfer_in"] == 5 + on["pushed_words"]
    assert on["transfer_out"] == 7 + on["gpu_words"] / 2


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ('{"gpu": {"warp_width": "wide"}}', "'gpu.warp_width' must be a number"),
    ('{"gpu": {"warps": 3}}', "unknown field 'gpu.warps'"),
    ('{"units": "hours"}', "'units' must be"),
    ('{"gpu": {"mode": "magic"}}', "'gpu.mode' must be one of"),
    ('{"gpu": {"work_group_size": 48}}', "multiple of 'gpu.warp_width'"),
])
def test_bad_device_profile(tmp_path, content, message):
    profile = tmp_path / "bad.json"
    profile.write_text(content)
    result = hetprof("profile", "examples/zipmul.lg", "--device-profile", str(profile))
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_usage_errors_exit_two():
    assert hetprof().returncode == 2
    assert hetprof("check").returncode == 2
    assert hetprof("check", "no/such/file.lg").returncode == 2
    assert hetprof("profile", "examples/zipmul.lg", "--schedule", "lifo").returncode == 2


def test_step_limit_is_a_clear_error(tmp_path):
    loop = tmp_path / "loop.lg"
    loop.write_text("letregion r in (fix f: ((int r) -> int r [r], r). "
                    "lambda x: int r [r]. f x) (1 at r)\n")
    result = hetprof("run", str(loop), "--max-steps", "1000")
    assert result.returncode == 1
    assert "more than 1000 evaluation steps" in result.stderr
    assert "Traceback" not in result.stderr
    deep = hetprof("run", str(loop))
    assert deep.returncode == 1 and "nested deeper than" in deep.stderr


def test_python_dash_m_cli_and_console_script_agree():
    import shutil

    script = shutil.which("hetprof")
    if script is None:
        pytest.skip("hetprof is not installed as a console script here")
    a = subprocess.run([script, "run", "examples/map_map.lg", "--param", "n=3"], cwd=ROOT,
                       capture_output=True, text=True)
    assert a.stdout == hetprof("run", "examples/map_map.lg", "--param", "n=3").stdout


def test_help_version_and_check_import_none_of_the_heavy_libraries():
    """Issue 19: `--help`, `--version` and `check` start fast: they import neither sympy, networkx,
    numpy, matplotlib nor pyopencl (each handler imports its command's pipeline when it runs),
    nor rich (the progress bar of place and rewrite) or importlib.metadata (--version's)."""
    script = ("import sys, contextlib, io\n"
              "from cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    code = main(['check', 'examples/zipmul.lg'])\n"
              "heavy = sorted({'sympy', 'networkx', 'numpy', 'matplotlib', 'pyopencl', 'rich',"
              " 'importlib.metadata'} & set(sys.modules))\n"
              "print(code, heavy)\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.strip() == "0 []", result.stderr
    version = hetprof("--version")
    assert version.returncode == 0 and version.stdout.startswith("hetprof ")


def test_an_explicit_profile_under_the_default_profile_imports_no_sympy(tmp_path):
    """Issue 20: an explicit profile in the model's units prices no formula, so it does not pay
    sympy's import (about 0.17 s of a 0.5 s run); profiler/access.py and models/cpu.py import it
    where a calibrated profile prices reads by pattern."""
    script = ("import sys\n"
              "from cli.main import main\n"
              f"code = main(['profile', 'examples/zipmul.lg', '--param', 'n=8', '-o', "
              f"{str(tmp_path / 'p.txt')!r}])\n"
              "print(code, 'sympy' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.strip() == "0 False", result.stderr
    assert (tmp_path / "p.txt").read_text().startswith("hetprof profile")


@pytest.mark.parametrize("name, first", [
    ("p.json", '{\n  "schema_version": 1'), ("p.html", "<!DOCTYPE html>"), ("p.csv", "section,name"),
    ("p.speedscope.json", '{\n "$schema"'), ("p.cilkscale.csv", "tag,work,span"),
    ("p.txt", "hetprof profile"),
])
def test_profile_takes_the_format_from_the_output_suffix(tmp_path, name, first):
    out = tmp_path / name
    result = hetprof("profile", "examples/dot.lg", "--param", "n=16", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith(first)
    assert result.stderr == f"hetprof: wrote {out}\n"


def test_report_writes_a_default_file_and_says_where(tmp_path):
    program = tmp_path / "mine.lg"
    program.write_text((ROOT / "examples" / "dot.lg").read_text())
    result = subprocess.run([sys.executable, "-m", "cli", "report", str(program), "--param",
                             "n=16"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mine.report.html").read_text().startswith("<!DOCTYPE html>")
    assert result.stderr.strip() == "hetprof: wrote mine.report.html"



def test_work_done_beside_comes_back_from_the_child():
    assert Beside(lambda: {"a": [1, 2.5], "b": None}).result() == {"a": [1, 2.5], "b": None}
    assert Beside(os.getpid).result() != os.getpid()


def test_work_that_fails_beside_is_done_again_here_and_fails_here():
    calls: list[int] = []

    def failing() -> None:
        calls.append(os.getpid())  # the child's list is its own copy
        raise ValueError("the program's error")

    with pytest.raises(ValueError, match="the program's error"):
        Beside(failing).result()
    assert calls == [os.getpid()]


def test_work_beside_asked_for_again_is_not_done_again(monkeypatch):
    """`result()` twice: the same object, the work done once, whether in a child or, where
    nothing forks, here."""
    calls: list[int] = []

    def work() -> list[int]:
        calls.append(os.getpid())
        return [len(calls)]

    beside = Beside(work)
    assert beside.result() is beside.result() and beside.result() == [1]

    def no_fork() -> int:
        raise OSError("no fork here")

    monkeypatch.setattr(os, "fork", no_fork)
    here = Beside(work)
    assert here.result() is here.result() and here.result() == [1]
    assert calls == [os.getpid()]  # the child's call was in its own copy


def test_work_beside_is_stopped_when_not_waited_for():
    beside = Beside(lambda: __import__("time").sleep(60))
    beside.cancel()
    assert beside.pid == 0


def test_forked_map_gives_every_item_in_order_and_shares_them_with_a_child():
    """Items slow enough that the child takes some: the results in order, each reported once
    where it is finished, and some computed in the child."""
    def work(index: int) -> tuple[int, int]:
        time.sleep(0.02)
        return index * index, os.getpid()

    finished: list[int] = []
    results = forked_map(work, 12, lambda index, _: finished.append(index))
    assert [square for square, _ in results] == [i * i for i in range(12)]
    assert sorted(finished) == list(range(12))
    if (os.cpu_count() or 1) > 1:  # on one core all is done here
        assert {pid for _, pid in results} - {os.getpid()}  # a child did some


def test_forked_map_raises_the_first_error_in_order_here():
    """Items 3 and 7 fail, whichever process took them: the serial loop's error (item 3's) is
    raised here, after the other items are done."""
    def work(index: int) -> int:
        time.sleep(0.01)
        if index in (3, 7):
            raise ValueError(f"item {index}")
        return index

    with pytest.raises(ValueError, match="item 3"):
        forked_map(work, 10)
    assert forked_map(lambda index: index, 1) == [0]  # one item: here, no child
    assert forked_map(lambda index: index, 0) == []


def test_forked_map_calls_forked_once_here():
    """`forked` (a progress display's start) runs once, in this process, whether or not there
    are children."""
    calls: list[int] = []
    assert forked_map(lambda i: i, 3, forked=lambda: calls.append(os.getpid())) == [0, 1, 2]
    assert forked_map(lambda i: i, 1, forked=lambda: calls.append(os.getpid())) == [0]
    assert calls == [os.getpid(), os.getpid()]


_PREPARED: list[int] = []  # the processes `_prepare` ran in (each process its own copy)


def _prepare() -> None:
    _PREPARED.append(os.getpid())


def _where(tag: str) -> tuple[str, int, list[int]]:
    return tag, os.getpid(), list(_PREPARED)


def test_helpers_run_each_job_in_a_prepared_child_and_give_its_value_here():
    """Two jobs, two copies: each job runs in a child that ran `prepare` first (the second copy
    forked from the first once prepared), none here; values come back by handle, in any
    order asked."""
    helpers = Helpers(_prepare)
    try:
        first = helpers.submit(partial(_where, "a"))
        second = helpers.submit(partial(_where, "b"))
        b_tag, b_pid, b_prepared = helpers.result(second)
        a_tag, a_pid, a_prepared = helpers.result(first)
    finally:
        helpers.close()
    assert (a_tag, b_tag) == ("a", "b")
    assert _PREPARED == []  # `prepare` never ran here
    if (os.cpu_count() or 1) > 1:
        assert a_pid != os.getpid() and b_pid != os.getpid() and a_pid != b_pid
        assert a_prepared == [a_pid] or b_prepared == [b_pid]  # one copy prepared itself
        assert a_prepared and b_prepared  # the other was forked from it, prepared
        assert a_prepared[0] == b_prepared[0]


def test_a_helper_job_that_fails_is_run_again_here_and_fails_here():
    helpers = Helpers(_prepare)
    try:
        failing = helpers.submit(partial(int, "not a number"))
        fine = helpers.submit(partial(_where, "fine"))
        with pytest.raises(ValueError, match="not a number"):
            helpers.result(failing)
        assert helpers.result(fine)[0] == "fine"
    finally:
        helpers.close()


def test_helper_jobs_run_here_when_the_helpers_died_or_a_job_cannot_be_sent():
    """A child that died while preparing, and a job that does not pickle (a local function):
    each job's value is computed here."""
    helpers = Helpers(lambda: os._exit(3))
    try:
        assert helpers.result(helpers.submit(partial(_where, "x")))[1] == os.getpid()
    finally:
        helpers.close()
    helpers = Helpers(_prepare)
    try:
        def local() -> int:
            return os.getpid()

        assert helpers.result(helpers.submit(local)) == os.getpid()
        assert helpers.result(helpers.submit(partial(_where, "y")))[0] == "y"
    finally:
        helpers.close()


def test_the_html_profile_drawn_beside_is_the_one_drawn_here(tmp_path, monkeypatch):
    """`profile --format html` draws its figures in children (cli.pictures.profile_html): the
    page is byte for byte the one made where nothing can fork."""
    from cli.main import main

    beside, here = tmp_path / "beside.html", tmp_path / "here.html"
    command = ["profile", "examples/dot.lg", "--param", "n=300", "--format", "html"]
    monkeypatch.chdir(ROOT)
    assert main([*command, "-o", str(beside)]) == 0

    def no_fork() -> int:
        raise OSError("no fork here")

    monkeypatch.setattr(os, "fork", no_fork)
    assert main([*command, "-o", str(here)]) == 0
    assert beside.read_bytes() == here.read_bytes()
    page = here.read_text()
    for figure in ('id="cost-graph"', 'id="timeline"', 'id="space"'):
        assert figure in page


def test_a_report_has_the_formulas_of_a_regular_program_only(tmp_path):
    """The formulas are computed beside the pictures; the symbolic evaluator declines a vector
    literal under the paper's rules, and the report then has none."""
    program = tmp_path / "literal.lg"
    program.write_text(
        "letregion r in parmap (lambda x: int r [r]. x + 1 at r) ([1 at r, 2 at r] at r) at r\n")
    pages = []
    for rules in ("calibrated", "paper"):
        output = tmp_path / f"{rules}.html"
        result = hetprof("report", str(program), "--rules", rules, "-o", str(output))
        assert result.returncode == 0, result.stderr
        pages.append(output.read_text())
    assert "Symbolic formulas" in pages[0] and "Symbolic formulas" not in pages[1]
    assert all('<figure id="speedup">' in page for page in pages)

# -- saved profiles (--load) and the source tree's cut ---------------------------------------------


def test_a_saved_profile_renders_as_the_direct_one(tmp_path):
    saved, direct, loaded = tmp_path / "p.json", tmp_path / "a.html", tmp_path / "b.html"
    args = ("examples/dot.lg", "--param", "n=8")
    assert hetprof("profile", *args, "--pictures", "-o", str(saved)).returncode == 0
    assert json.loads(saved.read_text())["schema_version"] == 1
    text = hetprof("profile", *args)
    again = hetprof("profile", "--load", str(saved))
    assert again.returncode == 0, again.stderr
    assert again.stdout == text.stdout and "on #1 at 10:1" in text.stdout
    assert hetprof("profile", *args, "--format", "html", "-o", str(direct)).returncode == 0
    report = hetprof("report", "--load", str(saved), "-o", str(loaded))
    assert report.returncode == 0, report.stderr
    assert loaded.read_text() == direct.read_text()


def test_json_carries_the_pictures_only_when_asked(tmp_path):
    plain, pictured = tmp_path / "plain.json", tmp_path / "pictured.json"
    args = ("examples/zipmul.lg", "--param", "n=8")
    assert hetprof("profile", *args, "-o", str(plain)).returncode == 0
    assert hetprof("profile", *args, "--pictures", "-o", str(pictured)).returncode == 0
    without, with_them = json.loads(plain.read_text()), json.loads(pictured.read_text())
    assert without["timeline"] is None and without["cost_graph"] is None
    assert with_them["timeline"]["space"] and with_them["cost_graph"]["nodes"]
    # Nothing else differs: the pictures are read from the analysis, never fed back into it.
    assert {k: v for k, v in with_them.items() if k not in ("timeline", "cost_graph")} == {
        k: v for k, v in without.items() if k not in ("timeline", "cost_graph")}
    for fmt in ("dot", "trace"):
        drawn = hetprof("profile", "--load", str(plain), "--format", fmt)
        assert drawn.returncode == 2 and "--pictures" in drawn.stderr, drawn.stderr
        assert "Traceback" not in drawn.stderr
        assert hetprof("profile", "--load", str(pictured), "--format", fmt).returncode == 0
    # The page of a profile saved without them says how to have them.
    page = tmp_path / "plain.html"
    assert hetprof("report", "--load", str(plain), "-o", str(page)).returncode == 0
    assert "carries no timeline and no cost graph" in page.read_text()
    assert hetprof("report", "--load", str(pictured), "-o", str(page)).returncode == 0
    assert "carries no timeline" not in page.read_text()


@pytest.mark.parametrize(("content", "message"), [
    ('{"schema_version": 99, "work": 1}', "schema_version 99"),
    ("{not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"work": 1}', "no schema_version"),
    ('{"schema_version": 1, "work": "x"}', "work"),
    ('{"schema_version": 1, "work": 1, "span": 1, "parallelism": 1, "time": 1, '
     '"paper_time": 1}', "a field is missing"),
])
def test_a_bad_saved_profile_is_an_error_not_a_traceback(tmp_path, content, message):
    saved = tmp_path / "p.json"
    saved.write_text(content)
    for command in (("profile",), ("report", "-o", str(tmp_path / "r.html"))):
        result = hetprof(*command, "--load", str(saved))
        assert result.returncode == 1
        assert "saved profile error" in result.stderr and message in result.stderr
        assert "Traceback" not in result.stderr


def test_load_takes_no_program_and_no_model_options(tmp_path):
    saved = tmp_path / "p.json"
    assert hetprof("profile", "examples/dot.lg", "--param", "n=8", "-o", str(saved)).returncode == 0
    both = hetprof("profile", "examples/dot.lg", "--load", str(saved))
    assert both.returncode == 2 and "not both" in both.stderr
    options = hetprof("profile", "--load", str(saved), "--param", "n=16")
    assert options.returncode == 2 and "--param" in options.stderr
    neither = hetprof("profile")
    assert neither.returncode == 2 and "--load" in neither.stderr


def test_show_all_shows_the_rows_the_default_hides():
    args = ("profile", "examples/dot.lg", "--param", "n=8")
    default = hetprof(*args).stdout
    everything = hetprof(*args, "--show-all").stdout
    threshold = hetprof(*args, "--tree-threshold", "0").stdout
    hidden_row = "0.0%  1 / 1  8:57  n"  # `iota n`'s n: 1 of 21,321.25, under 0.1%
    assert hidden_row not in default and "of the tree not shown" in default
    assert hidden_row in everything and "not shown" not in everything
    assert hidden_row in threshold


def test_seconds_profiles_print_in_time_units():
    result = hetprof("profile", "examples/dot.lg", "--param", "n=1024", "--device-profile",
                     "profiles/nvidia-h200.json")
    assert result.returncode == 0, result.stderr
    work = next(line for line in result.stdout.splitlines() if line.startswith("│ work "))
    assert work.split("│")[2].strip().endswith((" ms", " µs", " s", " ns"))
    assert "0.000" not in result.stdout


def test_units_abstract_prices_a_calibrated_profile_by_the_pram():
    """Issue 15: the paper's PRAM stays the unit model. Under --units abstract a calibrated
    profile gives the abstract profile's exact numbers for a CPU program (its seconds dropped);
    --units seconds needs a calibrated profile and says so."""
    def summary(*flags: str) -> dict:
        out = hetprof("profile", "examples/zipmul_cpu.lg", "--param", "n=64", "--format", "json",
                      *flags)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    calibrated = ("--device-profile", "profiles/nvidia-h200-run14.json")
    abstract, default = summary(*calibrated, "--units", "abstract"), summary()
    assert abstract["units"] == default["units"] == "abstract"
    assert (abstract["work"], abstract["span"]) == (default["work"], default["span"]) == (1541, 65)
    assert summary(*calibrated)["units"] == "seconds"
    refused = hetprof("profile", "examples/zipmul_cpu.lg", "--units", "seconds")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "--units seconds" in refused.stderr and "abstract units" in refused.stderr
