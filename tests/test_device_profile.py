"""Device profiles: the shipped default, validation, and the cost providers."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run

from graphs.semantics.options import EvaluationOptions
from models.device_profile import (
    PAPER_PROFILE,
    DeviceProfile,
    in_abstract_units,
    load_profile,
    profile_from_json,
    save_profile,
)
from models.providers import LinearTransfer, providers_for
from profiler.errors import ParameterError, ProfileError


def test_shipped_default_profile_is_the_default():
    loaded = load_profile(ROOT / "profiles" / "default.json")
    assert loaded.to_json() | {"notes": []} == DeviceProfile().to_json()


def test_profile_round_trips_through_json():
    profile = DeviceProfile().with_gpu(mode="paper", global_latency=400)
    assert profile_from_json(json.loads(json.dumps(profile.to_json()))) == profile


def test_cpu_classes_default_to_uncalibrated_and_round_trip(tmp_path):
    """A profile from before issue 15 (no by-class CPU fields) loads as the PRAM; the fields
    load, save and come back."""
    old = {"units": "seconds", "cpu": {"seconds_per_unit": 2e-9, "merge": 300.0},
           "gpu": {"seconds_per_unit": 1e-9}}
    profile = profile_from_json(old)
    assert profile.cpu.read_s == profile.cpu.bytes_per_s == 0.0 and profile.cpu.processors == 0
    assert not profile.cpu.by_class
    classes = profile.with_cpu(read_s=1e-9, write_s=6e-10, alloc_s=4e-9, op_s=5e-10,
                               task_s=3e-10, launch_s=2e-6, contended_alloc_s=2e-9,
                               bytes_per_s=1.8e10, processors=16)
    assert classes.cpu.by_class and classes.cpu.reads == "pattern"
    classes = classes.with_cpu(read_stride_s=5e-9, read_cached_s=1e-9, reads="uniform")
    save_profile(classes, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json") == classes
    with pytest.raises(ProfileError, match="'cpu.processors' must be a whole number"):
        profile_from_json({"cpu": {"processors": 1.5}})


def test_roofline_rates_default_to_uncalibrated_and_round_trip(tmp_path):
    assert DeviceProfile().gpu.dram_bytes_per_s == DeviceProfile().gpu.ops_per_s == 0.0
    profile = DeviceProfile().with_gpu(dram_bytes_per_s=4.8e12, ops_per_s=3.5e13)
    save_profile(profile, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json") == profile
    assert json.loads((tmp_path / "p.json").read_text())["gpu"]["dram_bytes_per_s"] == 4.8e12


def test_a_process_s_allocations_by_group_round_trip_as_a_list(tmp_path):
    """`gpu.group_atomic_latencies` (set by validate for its process) saves as a list of numbers
    and loads back as the tuple; anything else in it is named."""
    profile = DeviceProfile().with_gpu(group_atomic_latencies=(201.0, 202.5, 298.0))
    save_profile(profile, tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text())["gpu"]["group_atomic_latencies"] == [
        201.0, 202.5, 298.0]
    assert load_profile(tmp_path / "p.json") == profile
    with pytest.raises(ProfileError, match="'gpu.group_atomic_latencies' must be a list"):
        profile_from_json({"gpu": {"group_atomic_latencies": 200}})
    with pytest.raises(ProfileError, match=r"'gpu.group_atomic_latencies\[1\]' must be a "
                       "finite non-negative"):
        profile_from_json({"gpu": {"group_atomic_latencies": [200, -1]}})


@pytest.mark.parametrize("data, field", [
    ({"cpu": {"read": -1}}, "cpu.read"),
    ({"cpu": {"reads": "by-guess"}}, "'cpu.reads' must be one of pattern, uniform"),
    ({"cpu": {"reads": 1}}, "'cpu.reads' must be a string"),
    ({"gpu": {"banks": 0}}, "gpu.banks"),
    ({"gpu": {"warp_width": 2.5}}, "gpu.warp_width"),
    ({"gpu": {"staging_overlap": 0}}, "gpu.staging_overlap"),
    ({"gpu": {"dram_bytes_per_s": -1}}, "gpu.dram_bytes_per_s"),
    ({"gpu": {"ops_per_s": "fast"}}, "gpu.ops_per_s"),
    ({"region": {"bsize": 0}}, "region.bsize"),
    ({"transfer": {"host_to_device": {"words_per_unit": 0}}}, "words_per_unit"),
    ({"transfer": {"sideways": {}}}, "transfer.sideways"),
    ({"transfer": {"host_to_device": {"pieces": [{"up_to_words": 1}]}}}, "pieces[0]"),
    ({"units": "seconds"}, "seconds_per_unit"),
    ([], "top level"),
    ({"transfer": {"host_to_device": [1, 2]}}, "field 'transfer.host_to_device' must be an object"),
    ({"transfer": {"host_to_device": "fast"}}, "field 'transfer.host_to_device' must be an object"),
    ({"transfer": {"device_to_host": 7}}, "field 'transfer.device_to_host' must be an object"),
    ({"transfer": {"host_to_device": {"latency": -1}}}, "field 'transfer.host_to_device.latency'"),
    ({"transfer": {"host_to_device": {"pieces": "x"}}}, "'transfer.host_to_device.pieces'"),
    ({"cpu": [1]}, "field 'cpu' must be an object"),
    ({"gpu": {"global_latency": 1e308}}, "'gpu.global_latency' must be a finite non-negative "
                                          "number of at most 10^15, not 1e+308"),
    ({"gpu": {"global_latency": float("inf")}}, "'gpu.global_latency'"),
    ({"gpu": {"global_latency": float("nan")}}, "'gpu.global_latency'"),
    ({"gpu": {"warp_width": 10**400}}, "'gpu.warp_width'"),
    ({"cpu": {"seconds_per_unit": 1e300}}, "'cpu.seconds_per_unit'"),
])
def test_bad_fields_are_named(data, field):
    with pytest.raises(ProfileError) as info:
        profile_from_json(data, "p.json")
    assert field in info.value.message and info.value.message.startswith("p.json")


def test_piecewise_transfer():
    profile = profile_from_json({"transfer": {"host_to_device": {
        "latency": 100, "words_per_unit": 10,
        "pieces": [{"up_to_words": 1000, "latency": 5, "words_per_unit": 2}]}}})
    transfer = LinearTransfer(profile.host_to_device)
    assert transfer(0) == 0
    assert transfer(1000) == 5 + 500
    assert transfer(1001) == 100 + 100.1
    assert providers_for(profile).host_to_device(10) == 10


def test_seconds_profile_scales_each_world():
    profile = profile_from_json({
        "units": "seconds",
        "cpu": {"seconds_per_unit": 1e-9},
        "gpu": {"seconds_per_unit": 2e-9, "mode": "paper"},
        "allocation": {"latency": 1e-7},
        "transfer": {"host_to_device": {"latency": 1e-5, "words_per_unit": 1e9},
                     "device_to_host": {"latency": 2e-5, "words_per_unit": 1e9}}})
    cpu = run("letregion r in (3 at r) * (4 at r) at r", profile=profile)
    # Δa(BSIZE) for the region, then 2 ⊕ edges, 2 writes, ⊕, 2 reads, write: 8 PRAM units
    assert cpu.graph.work() == pytest.approx(1e-7 + 8e-9)
    gpu = run("letregion r in on (1 at r) at r", profile=profile)
    (on,) = gpu.ons
    assert on.info.kernel == pytest.approx(32 * 2e-9)  # one global write: l = 32 GPU units
    assert on.info.transfer_out == pytest.approx(2e-5 + 1e-9)


def test_the_paper_preset_is_selectable_in_a_profile():
    """`"rules": "paper"` in a profile selects the paper's rules (graphs.semantics.options), as
    --rules paper does; the shipped profiles/paper-rules.json is the preset's profile."""
    assert load_profile(ROOT / "profiles" / "paper-rules.json") == PAPER_PROFILE
    loaded = profile_from_json({"rules": "paper", "gpu": {"mode": "dmm", "launch": 5}})
    options = EvaluationOptions(profile=loaded)
    assert options.paper and options.gpu_mode == "paper" and not options.grow_gpu_regions
    assert options.profile.gpu.mode == "paper" and options.profile.gpu.launch == 0
    assert not EvaluationOptions(profile=loaded, rules="calibrated").paper
    assert EvaluationOptions(rules="paper").paper
    with pytest.raises(ParameterError, match="Fig. 9"):
        EvaluationOptions(rules="paper", gpu_mode="dmm")
    with pytest.raises(ProfileError, match="'rules'"):
        profile_from_json({"rules": "harlan"})
    assert profile_from_json(json.loads(json.dumps(PAPER_PROFILE.to_json()))) == PAPER_PROFILE


@pytest.mark.parametrize("text, message", [
    ("[" * 200_000 + "]" * 200_000, "malformed device profile: its JSON is nested too deeply"),
    ('{"gpu": {"banks": 1' + "0" * 5000 + "}}", "malformed device profile: a number of more than"),
    ('{"gpu": {"global_latency": Infinity}}', "'gpu.global_latency' must be a finite"),
    ("{", "not valid JSON"),
], ids=["nested", "long-number", "infinity", "truncated"])
def test_a_malformed_profile_file_is_named(tmp_path, text: str, message: str):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert info.value.message.startswith(str(path)) and message in info.value.message


def test_saving_a_profile_with_a_non_finite_number_is_refused(tmp_path):
    profile = DeviceProfile().with_gpu(global_latency=float("inf"))
    with pytest.raises(ProfileError, match="not a finite number"):
        save_profile(profile, tmp_path / "p.json")
    assert not (tmp_path / "p.json").exists()


def test_a_profile_that_could_not_be_read_back_is_not_written(tmp_path):
    from dataclasses import replace

    from models.device_profile import TransferParameters
    bad = replace(DeviceProfile(), device_to_host=TransferParameters(0.0, 1e18))
    with pytest.raises(ProfileError) as info:
        save_profile(bad, tmp_path / "bad.json")
    assert "device_to_host" in info.value.message
    assert not (tmp_path / "bad.json").exists()


def test_abstract_units_keep_the_gpu_shape_and_drop_the_seconds():
    calibrated = load_profile(ROOT / "profiles/nvidia-h200-run14.json")
    abstract = in_abstract_units(calibrated)
    assert abstract.units == "abstract" and abstract.unit_scales() == (1.0, 1.0)
    assert abstract.cpu == DeviceProfile().cpu and abstract.gpu.mode == DeviceProfile().gpu.mode
    assert (abstract.gpu.warp_width, abstract.gpu.threads_at_once) == (
        calibrated.gpu.warp_width, calibrated.gpu.threads_at_once)
    assert in_abstract_units(DeviceProfile()) == DeviceProfile()
