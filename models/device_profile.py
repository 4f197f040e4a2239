"""Device profiles: the parameters the machine models and primitive cost providers read (§5, §6.6).

A profile is JSON. Every field has a documented default (`DeviceProfile()` is hetprof's default
profile, in abstract units: one CPU PRAM step = 1); a calibrated profile (`hetprof calibrate`) sets
`units` to "seconds" and gives seconds per unit on each world. `load_profile` validates a file and
names the offending field in a ProfileError.

Schema (all numbers finite, non-negative and at most 10^15; see docs/device-profile.md):

    {
      "name": str,                   "units": "abstract" | "seconds",
      "cpu": {"read": δr, "write": δw, "op": 1, "merge": δ of ▶, "seconds_per_unit": null|float,
              by operation class, in seconds (models/cpu.py; 0 = not calibrated, the PRAM):
              "read_s", "write_s", "alloc_s" (a region's atomic bump), "op_s", "task_s" (a
              parmap's per-task overhead), "launch_s" (a CPU kernel), "contended_alloc_s" (an
              allocation while every compute unit allocates; "contended_alloc_2_s", "_4_s",
              "_8_s": while 2, 4 or 8 do), "bytes_per_s" (the socket's bandwidth),
              "processors" (the compute units measured), "serial_step_s" (one work item's
              dependent step alone), "launch_after_16_s", "_19_s", "_22_s" (a launch after
              the host moved 2^16, 2^19, 2^22 words in), "unit_step_1_s", "_2_s", "_4_s",
              "_8_s", "unit_step_all_s" (the map step per unit while 1, 2, 4, 8 or all units
              run it)},
      "gpu": {"warp_width": w, "work_group_size": threads per work group, "global_latency": l,
              "local_latency": 1, "conflict_cost": 2 (paper mode), "banks": 32,
              "threads_at_once": H, "op": 1, "launch": cost of one kernel launch,
              "mode": "paper" | "dmm" | "cache", "seconds_per_unit": null|float,
              "staging_overlap": u, iterations of a local-staging loop in flight at once (1),
              "dram_bytes_per_s": global-memory bandwidth, "ops_per_s": arithmetic issue rate
              (the roofline baseline's rates, models/roofline.py; 0 = not calibrated),
              "memory_bytes": the card's global memory (0 = not known),
              the cache mode's (models/gpu_cache.py): "l1_latency", "l2_latency",
              "atomic_latency", "warp_atomic_latency" (the units far from the allocation
              pointer), "atomic_latency_near", "warp_atomic_latency_near", "near_unit_share"
              (the near units' and their share; 0 = one figure), "group_atomic_latencies"
              (a list: one lane's allocation as one process's work group k paid it, set by
              `validate`; [] = the expectation), "sector_bytes", "line_bytes",
              "line_time", "l1_bytes", "l2_bytes",
              "threads_per_compute_unit",
              "l2_bytes_per_s" (0 = no L2 ceiling), "walk_16", "_21", "_24", "_26", "_27",
              "_28", "_30" (the first kernel after a copy of a 2^k-byte heap: its page walks),
              "copy_step" (the first kernel after data was copied in: beyond its launch),
              "lockstep": "edge" | "point" (how a warp's divergent lanes line up)},
      "allocation": {"latency": Δa(0), "per_word": slope of Δa(n)},
      "transfer": {"host_to_device": {"latency": .., "words_per_unit": .., "pieces": [..]},
                   "device_to_host": {...}},
      "region": {"bsize": BSIZE in words, "word_bytes": 4},
      "rules": "calibrated" | "paper"   the rule set (graphs/semantics/options.py); "paper" is
                                       the paper's own rules, §7.1 reproduced
    }

A profile without the CPU's by-class fields (every profile before issue 15) prices the CPU world
as before: PRAM units times `cpu.seconds_per_unit`.

`pieces` (optional) make a transfer piecewise linear: a list of {"up_to_words", "latency",
"words_per_unit"}, used for sizes up to each bound in turn.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from profiler.errors import ProfileError

GPU_MODES = ("paper", "dmm", "cache")
LOCKSTEPS = ("edge", "point")  # how a warp's threads line up in lock-step (graphs/devicebox.py)
CPU_READS = ("pattern", "uniform")  # how the CPU prices an indexing site's read (models/cpu.py)
WALK_BYTES = (16, 21, 24, 26, 27, 28, 30)  # log2 of the heaps whose page walks are measured
RULES = ("calibrated", "paper")
MAX_PARAMETER = 1e15
"""The largest number a profile (or a command-line model option) may give a parameter: costs are
sums of products of parameters and counts, and must stay far from float overflow (about 1e308)."""
DEFAULT_NAME = "default (abstract units)"
PAPER_BSIZE = 1 << 20
"""BSIZE of `PAPER_PROFILE`: §7.1 assumes that r0 never needs resizing, and the paper's GPU cannot
grow a region (NoExpandWE, Fig. 9); a million words keeps every example at every size up to about
10^5 within its first block. The paper gives no value."""


@dataclass(frozen=True, slots=True)
class CpuParameters:
    read: float = 1.0
    write: float = 1.0
    op: float = 1.0
    merge: float = 1.0
    seconds_per_unit: float | None = None
    # The CPU world by operation class, in seconds (models/cpu.py), each measured by a
    # microbenchmark on the OpenCL CPU device (models/opencl/calibrate_cpu.py). 0 means not
    # calibrated: without a read, a write and a step the PRAM prices the CPU (`by_class`).
    read_s: float = 0.0  # a load, stride 1
    read_stride_s: float = 0.0  # a load a cache line after the last, past the caches
    read_cached_s: float = 0.0  # a load of a line in the L1
    # how an indexing site's read is priced: "pattern" (by profiler/access.py's pattern, where
    # read_stride_s and read_cached_s are measured) or "uniform" (every read read_s)
    reads: str = "pattern"
    write_s: float = 0.0  # a store
    alloc_s: float = 0.0  # a region's bump (an atomic add), one core alone
    op_s: float = 0.0  # an integer operation, a ⊕ step
    task_s: float = 0.0  # a parmap's per-task overhead (one work item)
    launch_s: float = 0.0  # a CPU kernel's launch and join
    contended_alloc_s: float = 0.0  # an allocation while every compute unit allocates at once
    # the same with only 2, 4 or 8 compute units allocating (0: not measured; models/cpu.py)
    contended_alloc_2_s: float = 0.0
    contended_alloc_4_s: float = 0.0
    contended_alloc_8_s: float = 0.0
    bytes_per_s: float = 0.0  # the socket's memory bandwidth, all compute units copying
    processors: int = 0  # the compute units these were measured with
    # one work item's dependent chain step (2 loads, multiply-add, bump, store), alone on the
    # device (0: not measured; models/cpu.py's `serial_scale`)
    serial_step_s: float = 0.0
    # a kernel's launch after the host copied 2^16, 2^19, 2^22 words in (0: not measured;
    # models/cpu.py's `launch_after`); launch_s is the same after 2^10
    launch_after_16_s: float = 0.0
    launch_after_19_s: float = 0.0
    launch_after_22_s: float = 0.0
    # the generated code's map step per compute unit (two loads, a multiply-add, a bump of the
    # work group's own counter, a store) while only 1, 2, 4 or 8 units run it, and while all do
    # (0: not measured; models/cpu.py's `busy_scale`)
    unit_step_1_s: float = 0.0
    unit_step_2_s: float = 0.0
    unit_step_4_s: float = 0.0
    unit_step_8_s: float = 0.0
    unit_step_all_s: float = 0.0

    @property
    def by_class(self) -> bool:
        """Whether the by-class fields are calibrated (a read, a write and a step)."""
        return self.read_s > 0 and self.write_s > 0 and self.op_s > 0

    @property
    def unit_seconds(self) -> float:
        """Seconds per model unit where calibrated, else 1 (the model's own units)."""
        return self.seconds_per_unit or 1.0


@dataclass(frozen=True, slots=True)
class GpuParameters:
    warp_width: int = 32
    work_group_size: int = 256
    global_latency: float = 32.0
    local_latency: float = 1.0
    conflict_cost: float = 2.0
    banks: int = 32
    threads_at_once: int = 65536
    op: float = 1.0
    launch: float = 0.0
    atomic: float = 0.0
    local_words: int = 12288
    mode: str = "dmm"
    seconds_per_unit: float | None = None
    staging_overlap: int = 1  # iterations of a staging loop whose loads are in flight at once
    # The roofline baseline's two rates (models/roofline.py), measured by microbenchmarks; 0 means
    # not calibrated, and then no roofline prediction is made.
    dram_bytes_per_s: float = 0.0
    ops_per_s: float = 0.0
    # The card's global memory in bytes (CL_DEVICE_GLOBAL_MEM_SIZE, recorded by `hetprof
    # calibrate`): `hetprof place` looks for crossings only at sizes whose `on` heap fits it.
    # 0: not known, no bound.
    memory_bytes: float = 0.0
    # The `cache` mode's memory hierarchy (models/gpu_cache.py), measured by
    # models/opencl/calibrate_cache.py. The defaults, in abstract units, keep the H200's ratios
    # with the L2's latency at l: L1 5, L2 32, DRAM 74, an allocation's atomic 32.
    l1_latency: float = 5.0
    l2_latency: float = 32.0
    dram_latency: float = 74.0
    atomic_latency: float = 32.0
    warp_atomic_latency: float = 0.0  # a write step where several lanes allocate; 0: as above
    # The same two from the compute units near the allocation pointer's L2 partition (the two
    # above are the far units'), and the share of units that are near: models/gpu_cache.py's
    # `allocation_latencies`. 0: one figure for every unit (the above).
    atomic_latency_near: float = 0.0
    warp_atomic_latency_near: float = 0.0
    near_unit_share: float = 0.0
    # What a kernel's work group k (k = 0, 1, ...) pays for an allocation where one lane
    # allocates, as `hetprof validate` measured it in its own process with the calibration's
    # microbenchmark, run by each group of a kernel in turn (which units are near the pointer
    # is a draw of the process: models/gpu_cache.py's `allocation_latencies`); a step where
    # several lanes allocate follows it by the ratio of the two far figures above. (): not
    # measured, the expectation over the draw. `calibrate` never writes it.
    group_atomic_latencies: tuple[float, ...] = ()
    sector_bytes: int = 32
    line_bytes: int = 128
    line_time: float = 1.0  # a compute unit's load unit: time per 128-byte line requested
    l1_bytes: int = 32768  # one compute unit's L1, shared by the work groups resident on it
    l2_bytes: int = 4 << 20
    threads_per_compute_unit: int = 2048
    l2_bytes_per_s: float = 0.0  # 0 = not calibrated: no L2 ceiling
    # Address translation (models/gpu_cache.py's `page_walk`): what the first kernel after the
    # host copied a heap of 2^k bytes in pays beyond the same kernel run again, one warp's reads
    # spread evenly over the heap (models/opencl/calibrate_cache.py's `measure_page_walks`), for
    # k in WALK_BYTES; all 0: not measured, no walk charged.
    walk_16: float = 0.0
    walk_21: float = 0.0
    walk_24: float = 0.0
    walk_26: float = 0.0
    walk_27: float = 0.0
    walk_28: float = 0.0
    walk_30: float = 0.0
    # The first kernel after the host copied data in that the box reads: what it takes beyond its
    # work, the launch and its walk (models/opencl/calibrate.py's `runner_copy_step`, the
    # calibration's runner program with its first vector copied in); the cache mode charges it
    # once to a device box that pushes words and launches a kernel (`gpu_cache.CacheGpu.walk`).
    # 0: not measured, none charged.
    copy_step: float = 0.0
    # How the lanes of a warp line up step by step where their paths differ (graphs/devicebox.py's
    # `warp_columns`): "edge", edge by edge as §6.4 steps them (the paper's); "point", by program
    # point, as a SIMT warp runs divergent branches one after the other and reconverges after them.
    lockstep: str = "edge"

    @property
    def unit_seconds(self) -> float:
        """Seconds per model unit where calibrated, else 1 (the model's own units)."""
        return self.seconds_per_unit or 1.0


@dataclass(frozen=True, slots=True)
class AllocationParameters:
    latency: float = 1.0
    per_word: float = 0.0


@dataclass(frozen=True, slots=True)
class TransferPiece:
    up_to_words: float
    latency: float
    words_per_unit: float


@dataclass(frozen=True, slots=True)
class TransferParameters:
    latency: float = 10000.0
    words_per_unit: float = 4.0
    pieces: tuple[TransferPiece, ...] = ()


@dataclass(frozen=True, slots=True)
class RegionParameters:
    bsize: int = 64
    word_bytes: int = 4


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """Everything the cost semantics needs to know about a machine."""

    name: str = DEFAULT_NAME
    units: str = "abstract"
    cpu: CpuParameters = field(default_factory=CpuParameters)
    gpu: GpuParameters = field(default_factory=GpuParameters)
    allocation: AllocationParameters = field(default_factory=AllocationParameters)
    host_to_device: TransferParameters = field(default_factory=TransferParameters)
    device_to_host: TransferParameters = field(default_factory=TransferParameters)
    region: RegionParameters = field(default_factory=RegionParameters)
    notes: tuple[str, ...] = ()
    rules: str = "calibrated"  # the rule set, RULES (graphs.semantics.options)

    def with_gpu(self, **changes: Any) -> DeviceProfile:
        return replace(self, gpu=replace(self.gpu, **changes))

    def with_cpu(self, **changes: Any) -> DeviceProfile:
        return replace(self, cpu=replace(self.cpu, **changes))

    def unit_scales(self) -> tuple[float, float]:
        """What one model unit is worth on the CPU and on the GPU: seconds in a calibrated profile
        (units "seconds"), 1 and 1 in abstract units. The primitive cost providers are calibrated
        in seconds directly and need no scale."""
        if self.units != "seconds":
            return 1.0, 1.0
        return self.cpu.unit_seconds, self.gpu.unit_seconds

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["transfer"] = {
            "host_to_device": data.pop("host_to_device"),
            "device_to_host": data.pop("device_to_host"),
        }
        data["notes"] = list(self.notes)
        return data


def in_abstract_units(profile: DeviceProfile) -> DeviceProfile:
    """`profile` in the model's own units (`hetprof --units abstract`): hetprof's profile in
    abstract units, the paper's PRAM at unit cost on the CPU (§5.1) and DMM steps on the GPU,
    with the calibrated GPU's shape (warp width, work-group size, banks, threads at once, local
    memory), which decides how its threads fall into warps and groups; every number measured in
    seconds dropped. A profile in abstract units is returned as it is."""
    if profile.units != "seconds":
        return profile
    shape = {name: getattr(profile.gpu, name) for name in
             ("warp_width", "work_group_size", "banks", "threads_at_once", "local_words")}
    abstract = DeviceProfile()
    return replace(abstract, name=f"{profile.name}, in abstract units",
                   gpu=replace(abstract.gpu, **shape))


def profile_from_json(data: Any, where: str = "profile") -> DeviceProfile:
    """Build a profile from parsed JSON, validating every field."""
    if not isinstance(data, dict):
        raise ProfileError(f"{where}: expected a JSON object at the top level")
    known = {"name", "units", "cpu", "gpu", "allocation", "transfer", "region", "notes",
             "rules"}
    for key in data:
        if key not in known:
            raise ProfileError(f"{where}: unknown field '{key}' (known: {', '.join(sorted(known))})")
    name = _string(data, "name", where, DEFAULT_NAME)
    units = _string(data, "units", where, "abstract")
    if units not in ("abstract", "seconds"):
        raise ProfileError(f"{where}: field 'units' must be \"abstract\" or \"seconds\", "
                           f"not {units!r}")
    rules = _string(data, "rules", where, "calibrated")
    if rules not in RULES:
        raise ProfileError(f"{where}: field 'rules' must be one of {', '.join(RULES)}, "
                           f"not {rules!r}")
    cpu = _section(data, "cpu", CpuParameters, where)
    gpu = _section(data, "gpu", GpuParameters, where)
    if cpu.reads not in CPU_READS:
        raise ProfileError(f"{where}: field 'cpu.reads' must be one of {', '.join(CPU_READS)}, "
                           f"not {_shown(cpu.reads)}")
    if gpu.mode not in GPU_MODES:
        raise ProfileError(f"{where}: field 'gpu.mode' must be one of {', '.join(GPU_MODES)}, "
                           f"not {gpu.mode!r}")
    if gpu.lockstep not in LOCKSTEPS:
        raise ProfileError(f"{where}: field 'gpu.lockstep' must be one of "
                           f"{', '.join(LOCKSTEPS)}, not {_shown(gpu.lockstep)}")
    for name_ in ("warp_width", "work_group_size", "banks", "threads_at_once", "staging_overlap",
                  "sector_bytes", "line_bytes", "threads_per_compute_unit"):
        if getattr(gpu, name_) < 1:
            raise ProfileError(f"{where}: field 'gpu.{name_}' must be at least 1")
    if gpu.work_group_size % gpu.warp_width:
        raise ProfileError(f"{where}: field 'gpu.work_group_size' ({gpu.work_group_size}) must be a"
                           f" multiple of 'gpu.warp_width' ({gpu.warp_width})")
    allocation = _section(data, "allocation", AllocationParameters, where)
    region = _section(data, "region", RegionParameters, where)
    if region.bsize < 1 or region.word_bytes < 1:
        raise ProfileError(f"{where}: fields 'region.bsize' and 'region.word_bytes' must be >= 1")
    transfer = data.get("transfer", {})
    if not isinstance(transfer, dict):
        raise ProfileError(f"{where}: field 'transfer' must be an object")
    for key in transfer:
        if key not in ("host_to_device", "device_to_host"):
            raise ProfileError(f"{where}: unknown field 'transfer.{key}'")
    h2d = _transfer(transfer, "host_to_device", where)
    d2h = _transfer(transfer, "device_to_host", where)
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ProfileError(f"{where}: field 'notes' must be a list of strings")
    if units == "seconds" and (cpu.seconds_per_unit is None or gpu.seconds_per_unit is None):
        raise ProfileError(f"{where}: a profile in seconds needs 'cpu.seconds_per_unit' and "
                           "'gpu.seconds_per_unit'")
    return DeviceProfile(name, units, cpu, gpu, allocation, h2d, d2h, region, tuple(notes), rules)


PAPER_PROFILE = DeviceProfile(
    name="paper (Fig. 9, abstract units)", gpu=GpuParameters(mode="paper"),
    region=RegionParameters(bsize=PAPER_BSIZE), rules="paper",
    notes=("the paper's rules (graphs/semantics/options.py): Fig. 9's GPU, NoExpandWE, "
           "ap + |v| + 1, f e_i per element, branches from one configuration, §7.1.2's local "
           "memory",))
"""The `paper` preset's profile (`hetprof ... --rules paper` without --device-profile): hetprof's
default numbers in abstract units (δr = δw = 1, l = 32, w = 32, ...), Fig. 9's GPU, and a BSIZE of
`PAPER_BSIZE` words."""


def load_profile(path: str | Path) -> DeviceProfile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ProfileError(f"cannot read device profile {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a text file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfileError(f"{path}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}") \
            from None
    except ValueError:  # an integer too long for Python to read
        raise ProfileError(f"{path}: malformed device profile: a number of more than "
                           f"{sys.get_int_max_str_digits()} digits") from None
    except RecursionError:
        raise ProfileError(f"{path}: malformed device profile: its JSON is nested too deeply "
                           "(a profile is an object of objects, at most four levels deep)") \
            from None
    return profile_from_json(data, str(path))


def save_profile(profile: DeviceProfile, path: str | Path) -> None:
    try:
        text = json.dumps(profile.to_json(), indent=2, allow_nan=False)
    except ValueError:
        raise ProfileError(f"{path}: a parameter of the profile is not a finite number, and a "
                           "profile is standard JSON") from None
    profile_from_json(json.loads(text), str(path))  # never write a profile that cannot be read
    Path(path).write_text(text + "\n", encoding="utf-8")


def _shown(value: Any) -> str:
    """A JSON value for an error message, cut short."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = json.dumps(value)
    except (RecursionError, ValueError):
        return "a deeply nested value"
    return text if len(text) <= 40 else text[:37] + "..."


def _string(data: dict, key: str, where: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ProfileError(f"{where}: field '{key}' must be a string")
    return value


def _number(value: Any, name: str, where: str, integer: bool) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where}: field '{name}' must be a number, not {_shown(value)}")
    if value != value or not 0 <= value <= MAX_PARAMETER:
        raise ProfileError(f"{where}: field '{name}' must be a finite non-negative number of at "
                           f"most 10^15, not {_shown(value)}")
    if integer:
        if int(value) != value:
            raise ProfileError(f"{where}: field '{name}' must be a whole number")
        return int(value)
    return float(value)


def _section(data: dict, key: str, cls: type, where: str, shown: str | None = None):
    """The fields of `data[key]` as a `cls`; `shown` is the section's name in messages (default
    `key`)."""
    section = data.get(key, {})
    key = shown or key
    if not isinstance(section, dict):
        raise ProfileError(f"{where}: field '{key}' must be an object, not {_shown(section)}")
    names = {f.name: f for f in fields(cls)}
    values: dict[str, Any] = {}
    for name, value in section.items():
        if name not in names:
            raise ProfileError(f"{where}: unknown field '{key}.{name}' (known: "
                               f"{', '.join(sorted(names))})")
        default = getattr(cls(), name)
        if isinstance(default, tuple):
            if not isinstance(value, list):
                raise ProfileError(f"{where}: field '{key}.{name}' must be a list of numbers, "
                                   f"not {_shown(value)}")
            values[name] = tuple(_number(v, f"{key}.{name}[{i}]", where, False)
                                 for i, v in enumerate(value))
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise ProfileError(f"{where}: field '{key}.{name}' must be a string")
            values[name] = value
        elif name == "seconds_per_unit":
            values[name] = None if value is None else _number(value, f"{key}.{name}", where, False)
        else:
            values[name] = _number(value, f"{key}.{name}", where, isinstance(default, int)
                                   and not isinstance(default, bool))
    return cls(**values)


def _transfer(transfer: dict, key: str, where: str) -> TransferParameters:
    section = transfer.get(key, {})
    if not isinstance(section, dict):
        raise ProfileError(f"{where}: field 'transfer.{key}' must be an object, not "
                           f"{_shown(section)}")
    section = dict(section)
    pieces_data = section.pop("pieces", [])
    base = _section({key: section}, key, TransferParameters, where, f"transfer.{key}")
    if base.words_per_unit <= 0:
        raise ProfileError(f"{where}: field 'transfer.{key}.words_per_unit' must be positive")
    if not isinstance(pieces_data, list):
        raise ProfileError(f"{where}: field 'transfer.{key}.pieces' must be a list")
    pieces = []
    for i, piece in enumerate(pieces_data):
        if not isinstance(piece, dict) or set(piece) != {"up_to_words", "latency",
                                                         "words_per_unit"}:
            raise ProfileError(f"{where}: 'transfer.{key}.pieces[{i}]' needs exactly up_to_words, "
                               "latency and words_per_unit")
        values = [_number(piece[k], f"transfer.{key}.pieces[{i}].{k}", where, False)
                  for k in ("up_to_words", "latency", "words_per_unit")]
        if values[2] <= 0:
            raise ProfileError(f"{where}: 'transfer.{key}.pieces[{i}].words_per_unit' must be "
                               "positive")
        pieces.append(TransferPiece(*values))
    return replace(base, pieces=tuple(pieces))
