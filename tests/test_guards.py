"""Resource guards and strict inputs and outputs (issue 17): every input that used to crash
hetprof gets a clear error, located at `file:line:col` where the program has a position.

CLI cases run the command in a subprocess (tests/test_robustness.py's helpers)."""

from __future__ import annotations

from pathlib import Path

from tests.test_robustness import EXIT_PROGRAM_ERROR, assert_clean, hetprof, write

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
