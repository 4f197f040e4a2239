"""Calibrate only the local-staging overlap (`gpu.staging_overlap`) of existing device profiles:
time the backend's staging loop on a device and fit u (models.opencl.calibrate.fit_staging) with the
profile's own seconds per unit; write each profile back with u set and a note (a profile in the
paper's mode, which does not read u, is left as it is). `hetprof calibrate` measures the same as
part of a whole calibration.

    python benchmarks/calibrate_staging.py DEVICE PROFILE.json [PROFILE.json ...]
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.device_profile import load_profile, save_profile  # noqa: E402
from models.opencl.calibrate import fit_staging, time_staging  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402

if __name__ == "__main__":
    device, *paths = sys.argv[1:]
    session = DeviceSession(select_device(device))
    profiles = [(Path(p), load_profile(p)) for p in paths]
    group = profiles[0][1].gpu.work_group_size
    runs = time_staging(session, group, repeats=15)
    for path, profile in profiles:
        if profile.gpu.mode == "paper":
            print(f"{path}: left as it is (the paper's mode charges l per staging iteration)")
            continue
        overlap, fit = fit_staging(profile.gpu, group, runs)
        note = (f"staging_overlap {overlap} fitted on {date.today().isoformat()} by "
                f"benchmarks/calibrate_staging.py on {session.info.describe()}: mean error "
                f"{fit.mean_abs_pct_error:.1f}% over {len(runs)} loop lengths")
        save_profile(replace(profile, gpu=replace(profile.gpu, staging_overlap=overlap),
                             notes=(*profile.notes, note)), path)
        print(f"{path}: {note}")
        for k, measured, fitted in fit.points:
            print(f"  {k:5d} iterations: measured {measured:.3e} s, fit {fitted:.3e} s")
