"""Shared helpers: run λG source through the pipeline."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graphs.semantics.explicit import Evaluation, evaluate  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import DeviceProfile  # noqa: E402
from profiler.checker import check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402

EXAMPLES = sorted((ROOT / "examples").glob("*.lg"))


def run(source: str, params: dict[str, int] | None = None, gpu_mode: str | None = None,
        profile: DeviceProfile | None = None, **options) -> Evaluation:
    checked = check_program(parse(source, "test.lg"))
    opts = EvaluationOptions(profile=profile or DeviceProfile(), gpu_mode=gpu_mode, **options)
    evaluation = evaluate(checked, params or {}, opts)
    evaluation.graph.self_check()
    return evaluation


def edge_kinds(evaluation: Evaluation) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, _, data in evaluation.graph.graph.edges(data=True):
        counts[data["kind"].value] = counts.get(data["kind"].value, 0) + 1
    return counts


def node_kinds(evaluation: Evaluation) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, data in evaluation.graph.graph.nodes(data=True):
        counts[data["kind"].value] = counts.get(data["kind"].value, 0) + 1
    return counts


@pytest.fixture
def root() -> Path:
    return ROOT
