"""Re-predict the transfers of saved `hetprof validate` reports as validate now prices them: each
copy the backend makes (models/opencl/validate.py's `predicted_transfers`), where reports made
before 2026-11-27's change priced all of a run's words as one copy. The copies a run makes (one
per region in; out, a region's words allocated on the device and the vectors the host reserved
at its top) depend on the program's layout and plan, not on the device, so each `on` is run once
on a local OpenCL device (PoCL here) to find them; its times there are not used. The measured
times are the report's, and the transfers are priced under PROFILE (the run's own, for an as-run
comparison). The whole `on`'s prediction moves by the same amounts, and the placements with it
(a CPU part against the runs reported since the CPU part before it: the runs of one `on`, in the
suite and the examples, where no two `on`s' runs interleave); kernels and CPU parts are left as
they are.

    python benchmarks/repredict_transfers.py PROFILE.json OUT_DIR VALIDATION.json ...
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from repredict import program_path  # noqa: E402

from cli.main import _with_deep_stack  # noqa: E402  (deep recursions, as the CLI evaluates them)
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import load_profile  # noqa: E402
from models.opencl.runner import DeviceSession, run_offload, select_device  # noqa: E402
from models.opencl.validate import (  # noqa: E402
    _fast_offloads,
    _variants,
    explicit_predictions,
    predicted_transfers,
    size_params,
    summarise,
)
from profiler.checker import bind_parameters, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402


def runs(session, name: str, n: int, profile) -> list:
    """One run of each `on` of program `name` at size n on `session`, with the inputs `validate`
    gives it (numpy's where the program vectorises, else the interpreter's)."""
    path = program_path(name)
    checked = check_program(parse(path.read_text(), str(path.relative_to(ROOT))))
    gpu, cpu = _variants(checked)
    params = bind_parameters(checked, size_params(checked, n, name))  # n: the size run
    options = EvaluationOptions(profile=profile, gpu_mode=profile.gpu.mode)
    fast = _fast_offloads("auto", checked, gpu, cpu, params, n, name, options)
    if isinstance(fast, tuple):
        offloads, room = fast[0], fast[1]
    else:
        offloads, _, _ = explicit_predictions(gpu, cpu, params, options, {}, 0)
        room = None
    return [run_offload(session, offload, gpu.types, params, repeats=1, room=room)
            for offload in offloads]


def repredict(report: dict, profile, profile_path: Path, session) -> dict:
    keys = sorted({(c["program"], c["n"]) for c in report["cases"] if c["part"] == "kernel"})
    for name, n in keys:
        done = runs(session, name, n, profile)
        cases = [c for c in report["cases"] if (c["program"], c["n"]) == (name, n)]
        placements = iter(p for p in report["placements"] if (p["program"], p["n"]) == (name, n))
        k, change = 0, 0.0  # k: the run whose cases these are (each ends with its `on` case)
        gpu = 0.0  # the runs' whole `on`s since the last CPU part: that part's `on`'s runs
        for case in cases:
            part = case["part"]
            if part == "cpu":
                next(placements)["predicted"] = "gpu" if gpu < case["predicted_s"] else "cpu"
                gpu = 0.0
                continue
            if part in ("transfer_in", "transfer_out"):
                fresh = predicted_transfers(profile, done[k])[part == "transfer_out"]
                change += fresh - case["predicted_s"]
                case["predicted_s"] = fresh
            elif part == "on":
                case["predicted_s"] += change
                k, change, gpu = k + 1, 0.0, gpu + case["predicted_s"]
            else:
                continue
            case["error_pct"] = 100 * (case["predicted_s"] - case["measured_s"]) / case["measured_s"]
        if k != len(done):
            raise SystemExit(f"{name} n={n}: {k} `on`s in the report, {len(done)} run")
    report["repredicted_transfers"] = {
        "what": "transfers in and out and the whole `on`s, each copy priced "
                "(benchmarks/repredict_transfers.py)",
        "profile_file": profile_path.name, "copies_found_on": session.info.describe(),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    return summarise(report)


def main(profile_path: Path, out_dir: Path, reports: list[Path]) -> None:
    profile = load_profile(profile_path)
    session = DeviceSession(select_device("pocl"))
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in reports:
        report = repredict(json.loads(path.read_text()), profile, profile_path, session)
        (out_dir / path.name).write_text(json.dumps(report, indent=1) + "\n")
        print(f"{path.name}: done", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    _with_deep_stack(lambda: main(Path(sys.argv[1]), Path(sys.argv[2]),
                                  [Path(p) for p in sys.argv[3:]]))
