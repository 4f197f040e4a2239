"""Inputs that must never make `hetprof` print a traceback, through the command in a subprocess.

Exit codes (cli/main.py): 0 success; 1 the program or a parameter is wrong, with a
`file:line:col: kind: message`; 2 a usage error or a file that cannot be read. A Python traceback
on any input is a bug in hetprof, never the user's fault (STYLE.md, "Errors").
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.lg"))
EXIT_OK, EXIT_PROGRAM_ERROR, EXIT_USAGE = 0, 1, 2

# `file:line:col: kind: message`, the first line of every error about a program.
_LOCATED = re.compile(r"[^\n]*:\d+:\d+: (syntax|type|region|world|evaluation|parameter) error: ")


Result = subprocess.CompletedProcess[str]


def hetprof(*args: str | Path) -> Result:
    return subprocess.run(
        [sys.executable, "-m", "cli", *map(str, args)],
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=120,
    )


def hetprof_all(calls: list[tuple[str | Path, ...]]) -> list[Result]:
    """Run several independent commands at once (each is mostly interpreter start-up)."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return list(pool.map(lambda args: hetprof(*args), calls))


def assert_clean(result: Result, code: int) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "Traceback" not in result.stdout, result.stdout
    assert result.returncode == code, result.stderr


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- the examples -------------------------------------------------------------------------------


def test_there_are_examples():
    assert len(EXAMPLES) >= 5


def _code_start(text: str) -> int:
    """Offset of the first line that is neither blank nor a comment."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith("#"):
            return offset
        offset += len(line)
    return offset


def _cuts(text: str) -> list[int]:
    """Where to cut an example: a third and two thirds into its code, and before its last
    character."""
    start, end = _code_start(text), len(text.rstrip())
    return sorted({start + (end - start) * k // 3 for k in (1, 2)} | {end - 1})


@pytest.fixture(scope="module")
def example_checks(tmp_path_factory) -> dict[tuple[Path, int | None], Result]:
    """`hetprof check` on every example (cut None) and on its truncated copies, run at once."""
    folder = tmp_path_factory.mktemp("truncated")
    files: dict[tuple[Path, int | None], Path] = {}
    for example in EXAMPLES:
        files[example, None] = example.relative_to(ROOT)
        text = example.read_text(encoding="utf-8")
        for cut in _cuts(text):
            files[example, cut] = write(folder, f"{example.stem}_cut{cut}.lg", text[:cut])
    results = hetprof_all([("check", path) for path in files.values()])
    return dict(zip(files, results, strict=True))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_checks(example: Path, example_checks):
    result = example_checks[example, None]
    assert_clean(result, EXIT_OK)
    assert result.stdout.startswith(f"{example.relative_to(ROOT).as_posix()}: ok: ")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_truncated_examples_fail_cleanly(example: Path, example_checks):
    text = example.read_text(encoding="utf-8")
    for cut in _cuts(text):
        result = example_checks[example, cut]
        where = f"{example.name} cut after {cut} characters:\n{result.stderr}"
        assert "Traceback" not in result.stderr, where
        assert result.returncode in (EXIT_OK, EXIT_PROGRAM_ERROR), where
        if result.returncode == EXIT_PROGRAM_ERROR:
            assert _LOCATED.match(result.stderr), where


# -- files that hold no program -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "\n\n   \n", "# only a comment\n   # and another\n"],
    ids=["empty", "blank", "comments"],
)
def test_a_file_without_a_program_is_a_syntax_error(tmp_path: Path, text: str):
    path = write(tmp_path, "empty.lg", text)
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(f"{path}:1:1: syntax error: the program is empty")
    # The source line (empty for an empty file) and a caret under column 1, as for every error.
    assert result.stderr.splitlines()[2] == "    ^"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_garbage_is_a_syntax_error(tmp_path: Path, seed: int):
    generator = random.Random(seed)
    data = bytes(generator.randrange(256) for _ in range(2000)) + b"\x00\xff\xfe\xc3"
    path = write(tmp_path, "garbage.lg", data)
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: syntax error: ", result.stderr)
    assert "binary file" in result.stderr


def test_a_nul_byte_in_utf8_text_is_a_syntax_error(tmp_path: Path):
    path = write(tmp_path, "nul.lg", "letregion r in\n1 at\x00 r\n")
    result = hetprof("run", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(f"{path}:2:5: syntax error: the file contains a NUL byte")


def test_a_byte_order_mark_is_an_unexpected_character(tmp_path: Path):
    path = write(tmp_path, "bom.lg", "\ufeffletregion r in 1 at r\n")
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(f"{path}:1:1: syntax error: unexpected character")


# -- big and deep programs ----------------------------------------------------------------------


def test_ten_thousand_nested_parentheses_are_refused(tmp_path: Path):
    depth = 10_000
    path = write(tmp_path, "parens.lg", "letregion r in " + "(" * depth + "1 at r" + ")" * depth)
    result = hetprof("check", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert re.match(
        rf"{re.escape(str(path))}:1:\d+: syntax error: brackets are nested", result.stderr
    )


def test_five_thousand_nested_lets_run_or_fail_cleanly(tmp_path: Path):
    count = 5_000
    lets = "".join(f"let x{i} = {i} at r in\n" for i in range(count))
    path = write(tmp_path, "lets.lg", f"letregion r in\n{lets}x{count - 1}\n")
    checked, ran = hetprof_all([("check", path), ("run", path)])
    for result in (checked, ran):
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode in (EXIT_OK, EXIT_PROGRAM_ERROR), result.stderr
        if result.returncode == EXIT_PROGRAM_ERROR:
            assert _LOCATED.match(result.stderr), result.stderr
    if checked.returncode == EXIT_OK:
        assert checked.stdout == f"{path}: ok: int r\n"
    if ran.returncode == EXIT_OK:
        assert ran.stdout.splitlines()[0] == str(count - 1)


def test_a_vector_literal_of_twenty_thousand_elements(tmp_path: Path):
    count = 20_000
    elements = ", ".join(f"{i} at r" for i in range(count))
    path = write(tmp_path, "vector.lg", f"letregion r in\n[{elements}] at r\n")
    checked, ran = hetprof_all([("check", path), ("run", path)])
    assert_clean(checked, EXIT_OK)
    assert checked.stdout == f"{path}: ok: (Vec (int r), r)\n"
    assert_clean(ran, EXIT_OK)
    value = ran.stdout.splitlines()[0]
    assert value.startswith("[0, 1, 2, ")
    assert value.endswith(f"... ({count} elements)]")


def test_dividing_a_huge_integer_literal_fails_cleanly(tmp_path: Path):
    path = write(tmp_path, "huge.lg", "letregion r in\n" + "9" * 400 + " / 1 at r\n")
    result = hetprof("run", path)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert _LOCATED.match(result.stderr)


# -- files that cannot be read ------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "profile"])
def test_a_directory_is_a_usage_error(tmp_path: Path, command: str):
    result = hetprof(command, tmp_path)
    assert_clean(result, EXIT_USAGE)
    assert result.stderr == f"hetprof: {tmp_path}: is a directory, not a λG file\n"


@pytest.mark.parametrize("command", ["check", "profile"])
def test_a_missing_file_is_a_usage_error(tmp_path: Path, command: str):
    missing = tmp_path / "no_such_program.lg"
    result = hetprof(command, missing)
    assert_clean(result, EXIT_USAGE)
    assert result.stderr.startswith(f"hetprof: cannot read {missing}: ")


def test_an_unknown_command_is_a_usage_error():
    result = hetprof("frobnicate", "examples/dot.lg")
    assert_clean(result, EXIT_USAGE)
    assert "invalid choice" in result.stderr


# -- bad command-line values --------------------------------------------------------------------

DOT = "examples/dot.lg"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--param", "n"], "--param 'n': write NAME=VALUE"),
        (["--param", "=5"], "--param '=5': write NAME=VALUE"),
        (["--param", "n=abc"], "--param 'n=abc': 'abc' is not an integer"),
        (["--param", "n="], "--param 'n=': '' is not an integer"),
        (["--param", "m=4"], "--param m: the program declares no parameter m (declared: n)"),
        (["--max-steps", "0"], "--max-steps must be at least 1"),
        (["--max-depth", "0"], "--max-depth must be at least 1"),
    ],
    ids=["no-value", "no-name", "not-an-integer", "empty-value", "unknown", "steps", "depth"],
)
def test_bad_run_options_are_parameter_errors(arguments: list[str], message: str):
    result = hetprof("run", DOT, *arguments)
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr.startswith(f"parameter error: {message}")


def test_zero_processors_is_a_parameter_error():
    result = hetprof("profile", DOT, "--procs", "0")
    assert_clean(result, EXIT_PROGRAM_ERROR)
    assert result.stderr == "parameter error: --procs must be at least 1\n"
    assert result.stdout == ""


@pytest.mark.parametrize("latency", ["nan", "inf"])
def test_a_non_finite_latency_fails_cleanly(latency: str):
    result = hetprof("profile", DOT, "--param", "n=4", "--global-latency", latency)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == EXIT_PROGRAM_ERROR, result.stderr


def test_a_parameter_that_is_not_a_number_for_argparse_is_a_usage_error():
    result = hetprof("profile", DOT, "--procs", "two")
    assert_clean(result, EXIT_USAGE)
    assert "invalid int value: 'two'" in result.stderr


def test_a_good_parameter_runs():
    result = hetprof("run", DOT, "--param", "n=4")
    assert_clean(result, EXIT_OK)
    # xs[i] * ys[i] summed: (i + 1) * 2i for i < 4 = 0 + 4 + 12 + 24.
    assert result.stdout.splitlines()[0] == "40"


@pytest.mark.parametrize("body, fragment", [
    ("on (x + 1 at r) at r", "calling `f` inside `on` would run an `on` on the GPU"),
    ("letregion s in x", "calling `f` inside `on` would run a `letregion` on the GPU"),
])
def test_a_closure_that_runs_on_or_letregion_is_rejected_before_running(tmp_path, body,
                                                                      fragment):
    """Issue 17's fuzz finding: `check` accepted these and `run`/`profile` crashed."""
    program = write(tmp_path, "closure.lg", "letregion r in\n"
                    f"let f = lambda x: int r [r]. {body} in\non (f (1 at r)) at r\n")
    calls = [(command, program, *extra) for command, *extra in (
        ("check",), ("run",), ("profile",), ("profile", "--symbolic"))]
    for result in hetprof_all(calls):
        assert_clean(result, EXIT_PROGRAM_ERROR)
        assert f"closure.lg:3:5: world error: {fragment}" in result.stderr
        assert "    on (f (1 at r)) at r\n        ^" in result.stderr
