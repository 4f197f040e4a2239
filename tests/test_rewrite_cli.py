"""`hetprof rewrite`, run as a user would: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

SMALL = ("--param", "n=16", "--ladder-max", "8")


def hetprof(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_lists_the_rewrites_with_their_costs(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the verdict table is as wide as the terminal
    result = hetprof("rewrite", "examples/map_map.lg", *SMALL)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "examples/map_map.lg (n=16; P=2, 1df; GPU model dmm; units abstract)"
    header = next(line for line in lines if "rewrite" in line and "pays when" in line)
    for column in ("time before -> after", "speedup", "bound", "moved", "use", "space",
                   "pays when"):
        assert column in header
    fusion = next(line for line in lines if "vertical-fusion@9:4" in line)
    assert "kernel -64" in fusion and "always" in fusion  # the symbolic solver
    remove = next(line for line in lines if "remove-on@9:1" in line)
    assert "transfer -" in remove


def test_json_for_tools():
    result = hetprof("rewrite", "examples/zipmul.lg", "--param", "n=4", "--no-break-even",
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["params"] == {"n": 4} and data["size_parameter"] is None
    by_key = {r["key"]: r for r in data["rewrites"]}
    remove = by_key["remove-on@22:1"]
    assert remove["rule"] == "remove-on" and remove["where"] == "22:1"
    assert remove["after"]["time"] < remove["before"]["time"] and remove["speedup"] > 1
    assert remove["moved"] == "transfer" and remove["delta"]["transfer"] < -19_000
    assert remove["pays"] is None


def test_apply_writes_a_program_that_checks_and_computes_the_same(tmp_path):
    out = tmp_path / "fused.lg"
    result = hetprof("rewrite", "examples/map_map.lg", "--param", "n=16",
                     "--apply", "vertical-fusion@9:4", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{out}: time ")
    assert result.stderr.count("wrote") == 1 and f"hetprof: wrote {out}" in result.stderr
    text = out.read_text()
    assert text.startswith("param n : int = 1024\n") and text.count("parmap") == 1
    assert hetprof("check", str(out)).returncode == 0
    original = hetprof("run", "examples/map_map.lg", "--param", "n=16")
    fused = hetprof("run", str(out), "--param", "n=16")
    assert fused.stdout.splitlines()[0] == original.stdout.splitlines()[0]


def test_apply_in_sequence_to_stdout():
    result = hetprof("rewrite", "examples/dot.lg", "--param", "n=8",
                     "--apply", "horizontal-fusion@8:10", "--apply", "redomap@11:5")
    assert result.returncode == 0, result.stderr
    assert "fst " in result.stdout and "length m" in result.stdout


def test_work_group_size_says_it_is_not_syntax():
    result = hetprof("rewrite", "examples/map_map.lg", "--apply", "work-group-size=64@9:1")
    assert result.returncode == 0
    assert "--work-group-size 64" in result.stderr


def test_bad_apply_is_a_usage_error_without_a_traceback():
    for key, message in (
        ("fusion@9:4", "no rewrite rule 'fusion'"),
        ("vertical-fusion@1:1", "it applies at: vertical-fusion@9:4"),
        ("vertical-fusion", "write NAME@LINE:COL"),
    ):
        result = hetprof("rewrite", "examples/map_map.lg", "--apply", key)
        assert result.returncode == 2, key
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr
        assert "Traceback" not in result.stderr


def test_option_mistakes_are_usage_errors():
    for args in (("--search", "--apply", "remove-on@9:1"), ("-o", "x.lg"), ("--beam", "0"),
                 ("--size-param", "m")):
        result = hetprof("rewrite", "examples/map_map.lg", *args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr


def test_search_prints_the_best_program_and_its_gain(tmp_path):
    result = hetprof("rewrite", "examples/map_map.lg", "--param", "n=16", "--search",
                     "--depth", "2")
    assert result.returncode == 0, result.stderr
    assert "search (greedy, depth <= 2)" in result.stdout
    assert "rewrites: remove-on@9:1" in result.stdout and "predicted time" in result.stdout
    assert "letregion r in" in result.stdout
    out = tmp_path / "best.lg"
    beam = hetprof("rewrite", "examples/map_map.lg", "--param", "n=16", "--search", "--beam", "2",
                   "--depth", "2", "--format", "json", "-o", str(out))
    assert beam.returncode == 0, beam.stderr
    data = json.loads(beam.stdout)
    assert data["strategy"] == "beam 2" and data["speedup"] > 1 and data["steps"]
    assert out.read_text() == data["program"]
    assert hetprof("check", str(out)).returncode == 0


def test_a_row_that_ties_at_the_given_size_says_so_and_where_it_pays(monkeypatch):
    """Issue 19: `work-group-size=64` at n = 64 (one group either way) ties there, and pays from
    65 on; the row says both instead of reading as a contradiction."""
    monkeypatch.setenv("COLUMNS", "200")
    result = hetprof("rewrite", "examples/map_map.lg", "--param", "n=64", "--ladder-max", "256")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines()
               if "work-group-size=64@9:1" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells == ["work-group-size=64@9:1", "20,696.25 -> 20,696.25", "1.000x", "transfer",
                     "nothing", "same at n = 64", "1,026 -> 1,026", "n >= 65"]
    assert "always / never: on every size n <= 10^12 (symbolic profiles)" in result.stdout
    assert "every n <=" not in result.stdout and "no n <=" not in result.stdout
