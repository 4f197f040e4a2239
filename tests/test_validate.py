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
ZIPMUL = str(ROOT / "examples" / "zipmul.lg")


@pytest.fixture(scope="module")
def pocl():
    return DeviceSession(select_device("pocl"))


def _validate(pocl, programs, inputs):
    return validate(pocl, pocl, DeviceProfile(), programs, [64], quick=True, parts=("programs",),
                    inputs=inputs)


def test_auto_inputs_run_fast_where_the_prelude_vectorises_and_say_so(pocl):
    report = _validate(pocl, [NN, ZIPMUL], "auto")
    nn, zipmul = report["inputs"]
    assert nn == {"program": "nn", "n": 64, "inputs": "fast",
                  "values": f"checked against {pocl.info.describe()}"}
    assert zipmul["inputs"] == "interpreter"
    assert zipmul["values"] == "checked against the interpreter"
    assert "the `on` is not at the top of the program" in zipmul["fallback"]
    parts = {(c["program"], c["part"]) for c in report["cases"]}
    assert {("nn", "kernel"), ("nn", "cpu"), ("zipmul", "kernel")} <= parts


def test_interpreter_inputs_are_the_default_and_fast_inputs_refuse_what_does_not_vectorise(pocl):
    report = validate(pocl, pocl, DeviceProfile(), [NN], [64], quick=True, parts=("programs",))
    assert [i["inputs"] for i in report["inputs"]] == ["interpreter"]
    with pytest.raises(NotVectorised):
        _validate(pocl, [ZIPMUL], "fast")


def test_the_cli_takes_inputs_and_reports_them(tmp_path):
    save_profile(DeviceProfile(), tmp_path / "profile.json")
    done = subprocess.run(
        [sys.executable, "-m", "cli", "validate", NN, "--device", "pocl", "--cpu-device", "pocl",
         "--device-profile", str(tmp_path / "profile.json"), "--sizes", "64", "--parts",
         "programs", "--inputs", "auto", "--format", "json", "-o", str(tmp_path / "r.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(i["program"], i["inputs"]) for i in report["inputs"]] == [("nn", "fast")]
