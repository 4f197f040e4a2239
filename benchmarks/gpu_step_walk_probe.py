"""Whether every kernel step of an `on` pays the page walks of its heap, or only the first
(issue 14: on the H200 the suite's small kernels' later steps took 1-2 µs more at n = 1 024 and
4 096 than at 64 where their work is the same, an iota's step 6.4-6.8 µs at n = 64 and 7.1-8.5
at 1 024-4 096, lookup's 16-item steps as slow as at its 4 096-word table:
docs/validation/kernel-steps-probe-nvidia-h200-2026-11-28.txt).

The calibration's own runner program (models/opencl/calibrate.py's `RUNNER_STEPS`: five kernel
steps of almost no work on 64 items) run through the runner as `validate` runs an `on`, after
`pad` words allocated in its region on the CPU, which the `on` pushes and never reads: only the
heap's span changes; and with `--items`, its maps over longer vectors. Each step's median (of `--repeats` runs) is printed beside the profile's
predicted work for it (no launch; the first step's includes the walk the model charges once) and
the profile's page walk for that heap (`models.gpu_cache.page_walk`, from `hetprof calibrate`'s
walk microbenchmark, which the model charges the first step). If the later steps grow with the walk, each step pays it.

Nothing is fitted.

    python benchmarks/gpu_step_walk_probe.py --profile PROFILE.json [--device nvidia]
        [--repeats 15] [--pads 0,4096,32768,131072,524288] [--items 64,1024,4096]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphs.devicebox import phase_launches  # noqa: E402
from graphs.semantics.explicit import OffloadCollector, evaluate  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import load_profile  # noqa: E402
from models.opencl.runner import DeviceSession, run_offload, select_device  # noqa: E402
from profiler.checker import bind_parameters, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402

PADDED_STEPS = """\
param pad : int = 0
param items : int = 64
letregion r in
let unused = parmap (lambda k: int r [r]. k) (iota pad) at r in
on (let a = parmap (lambda k: int r [r]. k + 1) (iota items) in
    let b = parmap (lambda k: int r [r]. k + 1) a in
    parmap (lambda k: int r [r]. k + 1) b)
at r
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--pads", default="0,4096,32768,131072,524288")
    parser.add_argument("--items", default="64",
                        help="the maps' lengths, each run at every pad (RUNNER_STEPS: 64)")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    free = replace(profile, gpu=replace(profile.gpu, launch=0.0))
    unit = free.gpu.unit_seconds
    session = DeviceSession(select_device(args.device))
    checked = check_program(parse(PADDED_STEPS, "<padded runner steps>"))
    print(f"device: {session.info.describe()}; profile {args.profile.name} ({free.gpu.mode}), "
          f"launch {profile.gpu.launch * unit * 1e6:.2f} µs")
    for pad, items in ((int(p), int(i)) for i in args.items.split(",")
                       for p in args.pads.split(",")):
        params = bind_parameters(checked, {"pad": pad, "items": items})
        collector = OffloadCollector()
        evaluate(checked, params, EvaluationOptions(profile=free, gpu_mode=free.gpu.mode,
                                                    observer=collector))
        (offload,) = collector.offloads
        assert offload.on is not None
        phases = [p for p in offload.on.info.box.phases if phase_launches(p)]
        walk = phases[0].walk * unit if phases else 0.0
        run = run_offload(session, offload, checked.types, params, repeats=args.repeats)
        measured = [run.kernels[step.kernel].median for step in run.plan.steps]
        work = [p.time * unit - (p.walk * unit if k == 0 else 0.0)
                for k, p in enumerate(phases)]
        beyond = [m - w for m, w in zip(measured, work, strict=False)]
        later = statistics.median(beyond[1:]) if len(beyond) > 1 else float("nan")
        print(f"{items:,} items, pad {pad:>8,} words: the model's walk for this heap {walk * 1e6:5.2f} µs"
              + "\n  steps (µs)       " + " ".join(f"{m * 1e6:6.2f}" for m in measured)
              + "\n  work, no walk    " + " ".join(f"{w * 1e6:6.2f}" for w in work)
              + "\n  beyond the work  " + " ".join(f"{b * 1e6:6.2f}" for b in beyond)
              + f"\n  median of the later steps beyond their work: {later * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
