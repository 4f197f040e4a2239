"""The benchmark suite (benchmarks/suite, issue 13): every program, at its quick sizes, has the
value its numpy reference computes from the same inputs, and every `on` it evaluates, compiled to
OpenCL C and run on PoCL (the OpenCL CPU device), gives the interpreter's value."""

from __future__ import annotations

import functools
import math
import re

import pytest
from conftest import ROOT, box_launches_as_run

from benchmarks.suite.reference import SUITE
from graphs.semantics.explicit import Evaluation, Offload, OffloadCollector, evaluate
from graphs.semantics.options import EvaluationOptions
from models.opencl.runner import DeviceSession, interpreter_value, run_offload, select_device
from profiler.checker import CheckedProgram, bind_parameters, check_program
from profiler.parser import parse

SUITE_DIR = ROOT / "benchmarks" / "suite"
CASES = [(name, params) for name, (_, sizes) in SUITE.items() for params in sizes]
FLOAT_TOLERANCE = 1e-9  # relative; ints compare exactly


def _id(case: tuple[str, dict[str, int]]) -> str:
    name, params = case
    return name.removesuffix(".lg") + "-" + "-".join(f"{k}{v}" for k, v in params.items())


@functools.cache
def _evaluated(name: str, sizes: tuple[tuple[str, int], ...]) -> tuple[
        CheckedProgram, dict[str, int], Evaluation, list[Offload]]:
    """A suite program checked and evaluated once at the given sizes, its offloads kept."""
    path = SUITE_DIR / name
    checked = check_program(parse(path.read_text(), str(path.relative_to(ROOT))))
    params = bind_parameters(checked, dict(sizes))
    collector = OffloadCollector()
    evaluation = evaluate(checked, params, EvaluationOptions(observer=collector))
    return checked, params, evaluation, collector.offloads


def evaluated(name: str, params: dict[str, int]):
    return _evaluated(name, tuple(sorted(params.items())))


def close(value, expected) -> bool:
    """ints and bools exactly, floats to FLOAT_TOLERANCE, lists and tuples element by element."""
    if isinstance(expected, float):
        return isinstance(value, float) and math.isclose(value, expected,
                                                         rel_tol=FLOAT_TOLERANCE)
    if isinstance(expected, (list, tuple)):
        return (type(value) is type(expected) and len(value) == len(expected)
                and all(map(close, value, expected)))
    return type(value) is type(expected) and value == expected


@pytest.fixture(scope="module")
def pocl():
    return DeviceSession(select_device("pocl"))


def test_every_program_has_a_reference_and_a_header():
    programs = {path.name for path in SUITE_DIR.glob("*.lg")}
    assert programs == set(SUITE) and len(programs) >= 16
    for name in programs:
        text = (SUITE_DIR / name).read_text()
        header = "".join(line for line in text.splitlines(keepends=True)
                         if line.startswith("#"))
        assert text.startswith(f"# {name.removesuffix('.lg')}: "), name
        assert "Stresses:" in header and "Port:" in header, name
        assert re.search(r"^param \w+ : int = \d+$", text, re.MULTILINE), name
        assert re.search(r"\bon\b", text.replace(header, "")), f"{name} has no `on`"


@pytest.mark.parametrize("name, params", CASES, ids=map(_id, CASES))
def test_value_equals_the_numpy_reference(name, params):
    reference, _ = SUITE[name]
    _, _, evaluation, offloads = evaluated(name, params)
    value = interpreter_value(evaluation.value, evaluation._heap_lookup)
    expected = reference(params)
    assert close(value, expected), (value, expected)
    assert offloads, f"{name} ran nothing on the GPU"


@pytest.mark.parametrize("name, params", CASES, ids=map(_id, CASES))
def test_on_bodies_on_pocl_equal_the_interpreter(name, params, pocl):
    checked, bound, _, offloads = evaluated(name, params)
    for offload in offloads:
        run = run_offload(pocl, offload, checked.types, bound, repeats=1, warmup=0)
        assert run.matches, (run.value, run.expected)
        assert run.kernels



@pytest.mark.parametrize("name, params", CASES, ids=map(_id, CASES))
def test_device_boxes_launch_the_kernels_the_runner_launches(name, params, pocl):
    checked, bound, _, offloads = evaluated(name, params)
    assert sum(box_launches_as_run(checked, bound, o, pocl) for o in offloads) >= 1
