"""The layers of the source tree (README "Layout"): import-linter's contracts in pyproject.toml hold
for the tree as it is, and break on an import that points the wrong way."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("profiler", "models", "graphs", "cli")
LINT_IMPORTS = shutil.which("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS is not None, "import-linter (the test extra) is not installed"
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=tree, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": str(Path(sys.executable).parent)},
                          timeout=120)


def copy_tree(target: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def test_every_import_points_left():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    # the language must not reach the cost graphs (the evaluator once lived in profiler/)
    ("profiler/checker.py", "import graphs.costgraph", "profiler <- models <- graphs <- cli"),
    # the machine models must not reach the real devices, which sit above graphs
    ("models/pram.py", "import models.opencl.runner", "only cli imports it"),
    # the cost graphs must not reach the command line
    ("graphs/schedule.py", "import cli.common", "profiler <- models <- graphs <- cli"),
])
def test_an_import_that_points_right_breaks_a_contract(tmp_path: Path, module: str, line: str,
                                                       contract: str):
    tree = copy_tree(tmp_path)
    path = tree / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    result = lint_imports(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    assert contract in result.stdout
