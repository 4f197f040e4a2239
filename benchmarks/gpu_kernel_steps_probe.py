"""Each kernel of an `on`, measured and predicted apart (issue 14: the suite's small kernels,
a few µs each beyond a launch, were predicted 10-30% fast on the H200 even with the page walks
after a copy).

For each program and size: the GPU placement evaluated explicitly under the profile (its device
boxes under the profile's GPU mode), each `on` run on the device `--repeats` times as `validate`
runs it (models/opencl/runner.py's run_offload: its kernels one after another, the runner's small
blocking copies between them), and printed side by side: every kernel step of the backend's plan
(its name, the most work items one launch had, the median and fastest event time) and every
phase of the device box that launches a kernel (threads, predicted time, the launch and page
walks in it, what bounds it). A reduction's levels are one step of the plan (their times summed)
and one phase each in the box. Nothing is fitted.

    python benchmarks/gpu_kernel_steps_probe.py --profile PROFILE.json [--device nvidia]
        [--repeats 15] PROGRAM:N ...
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphs.devicebox import phase_launches  # noqa: E402
from graphs.semantics.explicit import OFFLOAD_CENTRE  # noqa: E402
from graphs.semantics.options import EvaluationOptions  # noqa: E402
from models.device_profile import load_profile  # noqa: E402
from models.opencl.runner import DeviceSession, run_offload, select_device  # noqa: E402
from models.opencl.validate import (  # noqa: E402
    SQUARE,
    _variants,
    explicit_predictions,
    size_params,
)
from profiler.checker import bind_parameters, check_program  # noqa: E402
from profiler.parser import parse  # noqa: E402
from profiler.transform import centre_names  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def case_offloads(case: str, profile) -> tuple:
    """A `PROGRAM:N` case (a suite program or an example) evaluated explicitly under `profile`
    as `validate` evaluates it: (name, n, its GPU and CPU placements, their parameters, the GPU
    placement's offloads, the CPU placement's)."""
    name, _, n_text = case.partition(":")
    path = next(p for p in (ROOT / "benchmarks" / "suite" / f"{name}.lg",
                            ROOT / "examples" / f"{name}.lg") if p.exists())
    checked = check_program(parse(path.read_text(), str(path)))
    gpu, cpu = _variants(checked)
    n = int(n_text)
    size = int(n ** 0.5) if name in SQUARE else n
    params = bind_parameters(checked, size_params(checked, size, name))
    options = EvaluationOptions(profile=profile, gpu_mode=profile.gpu.mode)
    offloads, cpu_offloads, _ = explicit_predictions(gpu, cpu, params, options, {}, 0)
    return name, n, gpu, cpu, params, offloads, cpu_offloads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--conditions", metavar="CPU_DEVICE",
                        help="also time each `on`'s kernels (the sum of their medians, and every "
                        "sample) right after the same `on` ran on this OpenCL CPU device, as "
                        "`validate` runs them, and after the host idled 2 s")
    parser.add_argument("cases", nargs="+", help="PROGRAM:N (a suite program or an example)")
    args = parser.parse_args()
    cpu_session = (DeviceSession(select_device(args.conditions)) if args.conditions else None)
    profile = load_profile(args.profile)
    unit = profile.gpu.unit_seconds
    session = DeviceSession(select_device(args.device))
    print(f"device: {session.info.describe()}; profile {args.profile.name} "
          f"({profile.gpu.mode}), launch {profile.gpu.launch * unit * 1e6:.2f} µs")
    for case in args.cases:
        name, n, gpu, cpu, params, offloads, cpu_offloads = case_offloads(case, profile)
        for k, offload in enumerate(offloads):
            assert offload.on is not None
            run = run_offload(session, offload, gpu.types, params, repeats=args.repeats)
            measured = sum(t.median for t in run.kernels.values())
            predicted = offload.on.info.kernel
            print(f"\n{name} n={n} on{k}: kernels measured {measured * 1e6:.2f} µs (median "
                  f"sum), predicted {predicted * 1e6:.2f} µs ({predicted / measured - 1:+.1%})")
            for step in run.plan.steps:
                timing = run.kernels[step.kernel]
                print(f"  measured  {step.kernel:<12} {step.kind:<7} items "
                      f"{run.work_items.get(step.kernel, 0):>8,}  median "
                      f"{timing.median * 1e6:8.2f} µs  fastest {timing.best * 1e6:8.2f} µs")
            for phase in offload.on.info.box.phases:
                if not phase_launches(phase):
                    continue
                print(f"  predicted {'parallel' if phase.parallel else 'serial':<20} threads "
                      f"{phase.threads:>8,}  {phase.time * unit * 1e6:8.2f} µs  (walk "
                      f"{phase.walk * unit * 1e6:.2f} µs; bound {phase.bound or '-'}; "
                      f"steps {phase.steps})")
            if cpu_session is not None:
                conditions(session, cpu_session, offload, cpu_offloads, k, gpu, cpu, params,
                           offloads)


def conditions(session, cpu_session, offload, cpu_offloads, k, gpu, cpu, params,
               gpu_offloads) -> None:
    """The `on`'s kernels timed as `validate` times them (7 runs after one warm-up), right after
    the same `on` ran on the CPU device, and after the host idled 2 s."""
    # the CPU run of the same `on` as this run (the centre's runs are in the `on`'s order)
    centre = centre_names(gpu.body, OFFLOAD_CENTRE).get(offload.node.span)
    index = sum(1 for o in gpu_offloads[:k] if o.node.span == offload.node.span)
    units = [o for o in cpu_offloads if getattr(o.node, "name", "") == centre]
    unit = units[index] if index < len(units) else None
    for label in ("after the CPU device", "after 2 s idle", "at once again"):
        if label == "after the CPU device":
            if unit is None:
                continue
            run_offload(cpu_session, unit, cpu.types, params, repeats=7)
        elif label == "after 2 s idle":
            time.sleep(2.0)
        run = run_offload(session, offload, gpu.types, params, repeats=7)
        samples = [sum(t.samples[i] for t in run.kernels.values()) for i in range(7)]
        print(f"  {label:<22} kernels {sum(t.median for t in run.kernels.values()) * 1e6:8.2f}"
              f" µs; runs " + " ".join(f"{x * 1e6:.1f}" for x in samples))


if __name__ == "__main__":
    main()
