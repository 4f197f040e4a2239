"""models/opencl/validate.py on PoCL: where each `on`'s inputs come from (`inputs=`), and how the
device's value was checked, per program in the report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from graphs.semantics.inputs import NotVectorised
from models.device_profile import DeviceProfile, save_profile
from models.opencl.runner import DeviceSession, select_device
from models.opencl.validate import validate

NN = str(ROOT / "benchmarks" / "suite" / "nn.lg")
ATAX = str(ROOT / "benchmarks" / "suite" / "atax.lg")
ZIPMUL = str(ROOT / "examples" / "zipmul.lg")


@pytest.fixture(scope="module")
def pocl():
    return DeviceSession(select_device("pocl"))


def _validate(pocl, programs, inputs):
    return validate(pocl, pocl, DeviceProfile(), programs, [64], quick=True, parts=("programs",),
                    inputs=inputs)


def test_auto_inputs_run_fast_where_the_predictions_are_symbolic_and_say_so(pocl):
    """atax is regular and its CPU part vectorises: symbolic predictions, numpy inputs, the GPU's
    value checked against the CPU device's. nn's branch is not regular, so the interpreter runs
    for its predictions and gives its inputs too; zipmul's `on` is not at the top."""
    report = _validate(pocl, [ATAX, NN, ZIPMUL], "auto")
    atax, nn, zipmul = report["inputs"]
    assert atax == {"program": "atax", "n": 64, "predictions": "symbolic", "inputs": "fast",
                    "values": f"checked against {pocl.info.describe()}"}
    assert nn["predictions"] == "explicit" and nn["inputs"] == "interpreter"
    assert "branch" in nn["explicit_because"]
    assert nn["values"] == "checked against the interpreter"
    assert zipmul["inputs"] == "interpreter"
    parts = {(c["program"], c["part"]) for c in report["cases"]}
    assert {("atax", "kernel"), ("atax", "cpu"), ("nn", "kernel"), ("zipmul", "kernel")} <= parts


def test_fast_inputs_where_asked_and_a_refusal_of_what_does_not_vectorise(pocl):
    report = _validate(pocl, [NN], "fast")
    assert [(i["predictions"], i["inputs"]) for i in report["inputs"]] == [("explicit", "fast")]
    with pytest.raises(NotVectorised):
        _validate(pocl, [ZIPMUL], "fast")
    report = validate(pocl, pocl, DeviceProfile(), [ATAX], [64], quick=True,
                      parts=("programs",), inputs="interpreter", predictions="explicit")
    assert [(i["predictions"], i["inputs"]) for i in report["inputs"]] == [
        ("explicit", "interpreter")]


def test_the_cli_takes_inputs_and_reports_them(tmp_path):
    save_profile(DeviceProfile(), tmp_path / "profile.json")
    done = subprocess.run(
        [sys.executable, "-m", "cli", "validate", ATAX, "--device", "pocl", "--cpu-device", "pocl",
         "--device-profile", str(tmp_path / "profile.json"), "--sizes", "64", "--parts",
         "programs", "--inputs", "auto", "--format", "json", "-o", str(tmp_path / "r.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(i["program"], i["inputs"]) for i in report["inputs"]] == [("atax", "fast")]
