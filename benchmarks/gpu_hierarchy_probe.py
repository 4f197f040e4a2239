"""Run the memory-hierarchy microbenchmarks (models/opencl/calibrate_cache.py) on one OpenCL
device and print them as JSON: what the `cache` GPU mode's calibration reads, shown raw.

    python benchmarks/gpu_hierarchy_probe.py [--device nvidia] [--quick] [-o FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.opencl.calibrate_cache import hierarchy_to_json, measure_hierarchy  # noqa: E402
from models.opencl.runner import DeviceSession, select_device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--max-bytes", type=int, default=None)
    parser.add_argument("-o", "--output", default=None)
    args = parser.parse_args()
    session = DeviceSession(select_device(args.device))
    result = measure_hierarchy(session, args.quick, args.max_bytes,
                               lambda text: print(text, file=sys.stderr, flush=True))
    device = session.device
    data = {"device": session.info.describe(),
            "attributes": {name: getattr(device, name, None) for name in (
                "global_mem_cache_size", "global_mem_cacheline_size", "local_mem_size",
                "max_compute_units", "max_clock_frequency")},
            **hierarchy_to_json(result)}
    text = json.dumps(data, indent=1)
    if args.output:
        Path(args.output).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
