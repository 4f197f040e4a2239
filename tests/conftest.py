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


def box_launches_as_run(checked, bound, offload, session) -> int:
    """Asserts that an `on`'s device box prices a launch for every kernel the OpenCL runner
    launches, run on `session`: its launching phases, serial and parallel, one for one with the
    runner's one-item kernels and its parallel launches (a map, an iota, each level of a
    reduce). Serial expressions one after another are one kernel (trace's zero and its count
    were two before 2026-11-28). Returns the launches (0 for an offload that is no `on`)."""
    from graphs.devicebox import phase_launches
    from models.opencl.runner import run_offload

    if offload.on is None:
        return 0
    run = run_offload(session, offload, checked.types, bound, repeats=1, warmup=0)
    kinds = {step.kernel: step.kind for step in run.plan.steps}
    serial = sum(n for kernel, n in run.launches.items() if kinds[kernel] == "serial")
    parallel = sum(n for kernel, n in run.launches.items() if kinds[kernel] != "serial")
    phases = [p for p in offload.on.info.box.phases if phase_launches(p)]
    assert (sum(not p.parallel for p in phases), sum(p.parallel for p in phases)) == (
        serial, parallel), run.launches
    assert serial == sum(kind == "serial" for kind in kinds.values())
    return serial + parallel
