"""Programs that hetprof must reject, one per kind of error, through the `hetprof` command.

Each file in tests/programs/bad declares what hetprof says about it in its first two lines:

    # expect: KIND: SUBSTRING OF THE MESSAGE
    # at: LINE:COL

and names, in a comment below, the rule of the paper it breaks. Static errors are found by
`hetprof check`; evaluation and parameter errors only by running the program (`hetprof run`), and
such a program must pass `hetprof check`.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "programs" / "bad"
BAD_FILES = sorted(BAD.glob("*.lg"))

STATIC_KINDS = {"syntax error", "type error", "region error", "world error"}
RUNTIME_KINDS = {"evaluation error", "parameter error"}

_EXPECT = re.compile(r"# expect: ([a-z ]+?): (.+)")
_AT = re.compile(r"# at: (\d+):(\d+)")


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a bad program's header says hetprof reports."""

    kind: str
    message: str
    line: int
    column: int

    @property
    def command(self) -> str:
        return "run" if self.kind in RUNTIME_KINDS else "check"


def read_expectation(path: Path) -> Expectation:
    lines = path.read_text(encoding="utf-8").splitlines()
    expect = _EXPECT.fullmatch(lines[0]) if lines else None
    at = _AT.fullmatch(lines[1]) if len(lines) > 1 else None
    assert expect, f"{path.name}: line 1 must be `# expect: <kind>: <message>`"
    assert at, f"{path.name}: line 2 must be `# at: LINE:COL`"
    return Expectation(expect.group(1), expect.group(2), int(at.group(1)), int(at.group(2)))


def hetprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=120,
    )


@functools.cache
def outcomes() -> dict[tuple[str, Path], subprocess.CompletedProcess[str]]:
    """Every bad program under its command, and the runtime ones under `check` too, run at once:
    each run is mostly interpreter start-up, so running them side by side keeps the suite fast."""
    calls = [(read_expectation(path).command, path) for path in BAD_FILES]
    calls += [("check", path) for path in BAD_FILES if read_expectation(path).command == "run"]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = pool.map(
            lambda call: hetprof(call[0], call[1].relative_to(ROOT).as_posix()), calls
        )
        return dict(zip(calls, results, strict=True))


def test_there_are_bad_programs():
    assert len(BAD_FILES) >= 30


@pytest.mark.parametrize("path", BAD_FILES, ids=lambda p: p.stem)
def test_header_is_well_formed(path: Path):
    expectation = read_expectation(path)
    assert expectation.kind in STATIC_KINDS | RUNTIME_KINDS
    third = path.read_text(encoding="utf-8").splitlines()[2]
    assert third.startswith("# "), f"{path.name}: line 3 must say which rule the program breaks"


@pytest.mark.parametrize("path", BAD_FILES, ids=lambda p: p.stem)
def test_bad_program_is_rejected_with_its_message(path: Path):
    expectation = read_expectation(path)
    relative = path.relative_to(ROOT).as_posix()
    result = outcomes()[expectation.command, path]

    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    head = f"{relative}:{expectation.line}:{expectation.column}: {expectation.kind}:"
    assert result.stderr.startswith(head), f"expected {head!r}, got:\n{result.stderr}"
    first_line = result.stderr.splitlines()[0]
    assert expectation.message in first_line, result.stderr

    # The source line, then a caret under the reported column (format_error indents both by 4).
    source_line = path.read_text(encoding="utf-8").splitlines()[expectation.line - 1]
    shown = result.stderr.splitlines()[1:3]
    assert len(shown) == 2, result.stderr
    assert shown[0] == "    " + source_line.expandtabs(1), result.stderr
    caret = re.fullmatch(r"    ( *)(\^+)", shown[1])
    assert caret, result.stderr
    assert len(caret.group(1)) == expectation.column - 1, result.stderr


@pytest.mark.parametrize(
    "path",
    [p for p in BAD_FILES if read_expectation(p).kind in RUNTIME_KINDS],
    ids=lambda p: p.stem,
)
def test_runtime_errors_pass_the_checker(path: Path):
    """An evaluation or parameter error is not a static one: `hetprof check` accepts the program."""
    result = outcomes()["check", path]
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
