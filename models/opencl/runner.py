"""Running λG work on real OpenCL devices through PyOpenCL: the only module that imports it.

`list_devices` and `select_device` find devices; `DeviceSession` holds a context and a profiling
queue; `run_offload` lays the regions an `on` body (or a CPU `parmap`) uses out in one device
buffer, runs the plan of `models.opencl.codegen` on it, reads the value back, compares it with the
interpreter's, and times every transfer and kernel with OpenCL profiling events (after a warm-up,
repeated; medians and spreads are kept).
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphs.semantics.explicit import Offload
from graphs.semantics.inputs import Refs, RegionImage
from models.opencl.codegen import (
    ERR_DIVIDE,
    ERR_FULL,
    ERR_INDEX,
    WORK_GROUP,
    BackendError,
    Plan,
    compile_offload,
)
from profiler.errors import DeviceError
from profiler.regions import (
    Closure,
    FloatV,
    IntV,
    Loc,
    PairV,
    Region,
    RegionClosure,
    VecV,
    size_of,
)
from profiler.syntax import BoolT, Boxed, FloatS, FunS, IntS, On, PairS, RegionFunS, Type, VecS
from profiler.transform import free_variables

POINTER_PLACES = 32  # places the session's allocation pointers may lie at, a page apart
PLACE_BYTES = 4096
POINTER_SLOTS = PLACE_BYTES // 4
"""Regions whose allocation pointers one place holds (`DeviceSession.allocation_pointers`)."""

PLACE_PROBE = """
__kernel void place_probe(__global int* p, __global int* out, const int hops, const int mask) {
    int x = 0;
    for (int h = 0; h < hops; h++) x = atomic_add(p + (x & mask), 1);
    out[0] = x;
}
"""
"""One thread's chain of dependent atomic adds on a place's first word
(`DeviceSession.pointer_place`): each add's address waits for the last one's result (`mask` is
0, which the compiler cannot see), so a hop costs the atomic's latency. Until 2026-11-29 the
chain was `x += atomic_add(p, 1 + (x & 0))`, which the compiler unchains (x & 0 is 0): it timed
the adds' issue, 40-70 ns a hop on the H200 at every place, and chose a far place (304 ns an
allocation) as readily as a near one (201 ns; run 21, benchmarks/gpu_alloc_program_probe.py)."""
PLACE_HOPS = 256


@dataclass(frozen=True)
class AllocationPointers:
    """A kernel argument of `time_kernel` given as the session's allocation-pointer buffer set to
    `values` (int32, one per region), where the runner puts them."""

    values: np.ndarray


def _cl():
    try:
        import pyopencl
    except ImportError as error:  # pragma: no cover - pyopencl is a dependency
        raise DeviceError(f"PyOpenCL cannot be imported ({error}); install hetprof's "
                          "dependencies with `pip install -e .`") from None
    return pyopencl


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    index: int
    platform: str
    name: str
    type: str
    compute_units: int
    global_memory: int
    local_memory: int
    max_work_group_size: int
    version: str
    platform_version: str = ""
    max_allocation: int = 0  # CL_DEVICE_MAX_MEM_ALLOC_SIZE, bytes (0: not known)

    def describe(self) -> str:
        return f"{self.platform} / {self.name}"

    @property
    def local_words(self) -> int:
        """The 8-byte words of local memory a kernel may stage (some is kept for the runtime)."""
        return max(64, self.local_memory // 8 - 256)


def _platforms() -> list:
    cl = _cl()
    try:
        return cl.get_platforms()
    except cl.LogicError:
        return []  # no ICD or no platform: "platform not found"


def list_devices() -> list[DeviceInfo]:
    """Every OpenCL device of every platform, numbered in order."""
    cl = _cl()
    devices: list[DeviceInfo] = []
    for platform in _platforms():
        try:
            found = platform.get_devices()
        except cl.Error:
            continue
        for device in found:
            devices.append(DeviceInfo(
                len(devices), platform.name.strip(), device.name.strip(),
                cl.device_type.to_string(device.type), device.max_compute_units,
                device.global_mem_size, device.local_mem_size, device.max_work_group_size,
                device.version.strip(), platform.version.strip(), device.max_mem_alloc_size))
    return devices


def select_device(spec: str) -> DeviceInfo:
    """A device by index, or by a case-insensitive part of its platform or device name. Where
    the name matches several devices, the first that can build a kernel (`builds`): PoCL
    3.0's wheel cannot on a CPU its LLVM does not know (on an AMD EPYC that it names
    "generic", 2026-11-27) where Debian's PoCL beside it can."""
    devices = list_devices()
    if not devices:
        raise DeviceError("no OpenCL device found: no platform is installed (hetprof installs "
                          "PoCL, the CPU device, with `pip install -e .`; a GPU needs its vendor's "
                          "OpenCL driver and ICD file)")
    if spec.strip().isdigit():
        index = int(spec)
        if index < len(devices):
            return devices[index]
    else:
        wanted = spec.strip().lower()
        matches = [d for d in devices
                   if wanted in f"{d.platform} {d.platform_version} {d.name}".lower()]
        if len(matches) > 1:
            for device in matches:
                if builds(device):
                    return device
        if matches:
            return matches[0]
    names = "; ".join(f"{d.index}: {d.describe()}" for d in devices)
    raise DeviceError(f"no OpenCL device matches {spec!r}; the devices are {names}")


def builds(info: DeviceInfo) -> bool:
    """Whether the device can build a one-line kernel."""
    try:
        DeviceSession(info).program("__kernel void probe(__global long* a) { a[0] = 1; }\n")
    except (DeviceError, _cl().Error):
        return False
    return True


class DeviceSession:
    """An OpenCL context and an in-order queue with profiling on one device."""

    def __init__(self, info: DeviceInfo):
        cl = _cl()
        self.cl = cl
        self.info = info
        device = None
        for platform in _platforms():
            for candidate in platform.get_devices():
                if (platform.name.strip() == info.platform and candidate.name.strip() == info.name):
                    device = candidate
                    break
            if device is not None:
                break
        if device is None:
            raise DeviceError(f"the device {info.describe()} has gone")
        self.device = device
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        # the generated code's allocation pointers (see `allocation_pointers`)
        self.pointers = cl.Buffer(self.context, cl.mem_flags.READ_WRITE,
                                  POINTER_PLACES * PLACE_BYTES)
        self._place: tuple[int, float, Any] | None = None
        # each place's seconds per atomic, as `pointer_place` timed them (none off a GPU): on the
        # H200 near places take 140-170 ns and far ones 230-270 ns, so their slowest beside
        # their fastest says whether this process saw both kinds
        self.place_times: list[float] = []
        self.max_group = min(WORK_GROUP, device.max_work_group_size)
        self._programs: dict[str, Any] = {}
        self._kernels: dict[tuple[int, str], Any] = {}
        self._pinned: list[Any] = []
        if "GPU" in info.type:
            # before any other buffer is used (a late choice came out far: `pointer_place`)
            self.pointer_place()

    def pinned(self, words: int) -> np.ndarray:
        """A host array of `words` 64-bit words in page-locked memory (an ALLOC_HOST_PTR buffer,
        mapped): copies from and to it are DMA transfers, steady and fast, where pageable numpy
        memory goes through the driver's staging buffers and changes regime with size."""
        cl = self.cl
        words = max(1, words)
        largest = self.info.max_allocation
        if largest and 8 * words > largest:
            raise DeviceError(f"the work needs a heap of {words:,} words ({8 * words / 2**30:.1f} "
                              f"GiB), more than {self.info.describe()} allocates in one buffer "
                              f"({largest / 2**30:.1f} GiB): try a smaller size")
        try:
            buffer = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                               8 * words)
        except cl.Error as error:
            raise DeviceError(f"{self.info.describe()} could not allocate a heap of {words:,} "
                              f"words ({error})") from None
        array, _ = cl.enqueue_map_buffer(self.queue, buffer,
                                         cl.map_flags.READ | cl.map_flags.WRITE, 0, (words,),
                                         np.int64)
        self._pinned.append(buffer)  # keep the buffer alive as long as its mapping is used
        return array

    def pointer_place(self) -> tuple[int, float]:
        """The place of the session's pointer buffer where its allocation pointers live: on a
        GPU the fastest of `POINTER_PLACES` for one thread's chain of atomics (`PLACE_PROBE`,
        the slope between `PLACE_HOPS` hops and twice as many, at the fastest of three runs),
        chosen once, when the session is made (before any other buffer is used); elsewhere the
        first. Returns the place and its measured seconds per atomic (0.0 where nothing was
        measured).

        Chosen at once because when it was chosen mattered: on the H200 (run 21, 2026-11-29,
        cards GPU-25dac1b8 and GPU-1d0bc94b) a process that chose at its start found a place
        at 140 ns and allocated at 199-201 ns, and every one-thread loop of
        benchmarks/gpu_alloc_program_probe.py paid that; `hetprof calibrate`, choosing after
        its other microbenchmarks, found 242 ns at the best of eight places and allocated at
        304 ns, as did serial_loop's validation in three suite runs. Why is not measured (the
        driver may place a buffer at its first use; `place_times` keeps every place's figure
        to tell)."""
        if self._place is None:
            cl = self.cl
            best, seconds = 0, 0.0
            if "GPU" in self.info.type:
                kernel = self.kernel(self.program(PLACE_PROBE), "place_probe")
                out = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, 4)
                times = []
                for k in range(POINTER_PLACES):
                    place = self._sub_place(k)
                    run = [min(event_seconds(kernel(self.queue, (1,), (1,), place, out,
                                                    np.int32(hops), np.int32(0)))
                               for _ in range(3))
                           for hops in (PLACE_HOPS, 2 * PLACE_HOPS)]
                    times.append(max(0.0, run[1] - run[0]) / PLACE_HOPS)
                best = int(np.argmin(times))
                seconds = times[best]
                self.place_times = times
            self._place = (best, seconds, self._sub_place(best))
        return self._place[0], self._place[1]

    def _sub_place(self, k: int):
        """Place k of the pointer buffer as a buffer of its own (an OpenCL sub-buffer)."""
        try:
            return self.pointers.get_sub_region(k * PLACE_BYTES, PLACE_BYTES)
        except self.cl.Error as error:
            raise DeviceError(f"{self.info.describe()} could not make a sub-buffer at "
                              f"{k * PLACE_BYTES} bytes for the allocation pointers "
                              f"({error})") from None

    def allocation_pointers(self, aps: np.ndarray):
        """The device buffer holding the generated code's allocation pointers (`aps`, one int32
        per region), set to `aps`: the session's own place (`pointer_place`), where every run
        and the calibration's allocation microbenchmarks (models/opencl/calibrate_cache.py) bump
        them; a fresh buffer past `POINTER_SLOTS` regions.

        Why one place, and the fastest: an atomic's latency depends on its word's place
        (`ATOMIC_PLACES`), and a fresh buffer per run put the pointers wherever the driver's
        allocator left room after that run's heap. On the H200 (2026-11-28, cards GPU-d7b4bd9f
        and GPU-a6b7fc5c, benchmarks/gpu_alloc_runner_place_probe.py) one thread's allocation
        then cost 197-216 ns after heaps of 2^17-2^22 words and 316 ns after 2^24, the same in
        every trial and process; serial_loop came out -8..-18% at n = 10, 25, 50, 300 and
        +21..+40% at its other sizes in every suite run since run 10, against the mean over
        places that the calibration charged. A buffer made first in the session moved the
        place from process to process instead (card GPU-0cb315ed: 200 ns in three small
        processes, 304 ns in the calibration's), so the place is chosen by measuring."""
        if len(aps) > POINTER_SLOTS:
            flags = self.cl.mem_flags
            return self.cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                                  hostbuf=aps)
        self.pointer_place()
        assert self._place is not None
        buffer = self._place[2]
        self.cl.enqueue_copy(self.queue, buffer, aps).wait()
        return buffer

    def release_pinned(self) -> None:
        self._pinned.clear()

    def kernel(self, program, name: str):
        """One kernel object per program and name (retrieving it again is expensive)."""
        key = (id(program), name)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self.cl.Kernel(program, name)
        return kernel

    def program(self, source: str):
        cached = self._programs.get(source)
        if cached is not None:
            return cached
        try:
            program = self.cl.Program(self.context, source).build(options=["-cl-std=CL1.2"])
        except self.cl.RuntimeError as error:
            log = str(error).strip().splitlines()
            detail = "\n".join(log[:20])
            raise DeviceError(f"{self.info.describe()} could not build the generated kernel:\n"
                              f"{detail}") from None
        self._programs[source] = program
        return program

    def global_size(self, n: int) -> tuple[tuple[int], tuple[int] | None]:
        """An NDRange of at least n work items, in whole work groups."""
        group = max(1, min(self.max_group, n))
        return (max(1, -(-n // group) * group),), (group,)


def event_seconds(event) -> float:
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-9


@dataclass(slots=True)
class Timing:
    """Repeated measurements of one part, in seconds."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else 0.0

    @property
    def best(self) -> float:
        """The fastest run: noise only ever adds time (Chen and Revels, "Robust benchmarking in
        noisy environments", 2016), so this is the steadiest figure for comparing two programs."""
        return min(self.samples) if self.samples else 0.0

    @property
    def spread(self) -> float:
        """Relative spread: (max - min) / median."""
        if len(self.samples) < 2 or not self.median:
            return 0.0
        return (max(self.samples) - min(self.samples)) / self.median


@dataclass(slots=True)
class OffloadRun:
    """One offload run on a device: its value, whether it matches, and its times."""

    where: str
    device: str
    value: Any
    expected: Any  # the interpreter's value; None where the offload has none (unchecked)
    matches: bool | None  # None: unchecked, there was no interpreter value to compare with
    transfer_in: Timing
    transfer_out: Timing
    kernels: dict[str, Timing]  # step kernel name -> time (all levels of a reduce together)
    words_in: int
    words_out: int
    plan: Plan
    # step kernel name -> the most work items one launch of it had (1 for a serial kernel): the
    # widest kernel's work groups bound the compute units a CPU device runs it on
    work_items: dict[str, int] = field(default_factory=dict)
    # the words of each copy the transfers made, in order (words_in and words_out are their
    # sums): one copy in per region with words, and out one per region's words allocated on the
    # device and one per region's vectors the host reserved at its top; each copy pays the
    # transfer's latency (`validate` prices them so)
    copies_in: tuple[int, ...] = ()
    copies_out: tuple[int, ...] = ()
    # step kernel name -> how many times one run launched it (a reduce's levels each once)
    launches: dict[str, int] = field(default_factory=dict)

    @property
    def checked(self) -> bool:
        """Whether the value was compared with the interpreter's."""
        return self.matches is not None

    def kernel_time(self, statistic: str = "median") -> float:
        """The kernels' time by one of `Timing`'s statistics ("median" or "best")."""
        return sum(getattr(t, statistic) for t in self.kernels.values())

    def time(self, statistic: str = "median") -> float:
        """Transfers and kernels, by one of `Timing`'s statistics."""
        return (getattr(self.transfer_in, statistic) + self.kernel_time(statistic)
                + getattr(self.transfer_out, statistic))

    @property
    def kernel_total(self) -> float:
        return self.kernel_time()

    @property
    def total(self) -> float:
        return self.time()


# ---------------------------------------------------------------------------------------------------
# Laying regions out in device memory


def _device_size(value) -> int:
    """|v| on the device: the region model's size, plus a length word before each vector."""
    return len(value.items) + 1 if isinstance(value, VecV) else size_of(value)


@dataclass(slots=True)
class _Layout:
    region_ids: list[int]
    bases: list[int]
    used: list[int]
    capacity: list[int]
    offsets: list[dict[int, int]]  # per device region: interpreter offset -> device offset
    # Per device region given as a `RegionImage`: the offsets of its non-empty vectors, sorted
    # (each takes one header word more on the device than in the region model); None otherwise.
    vector_starts: list[np.ndarray | None] = field(default_factory=list)

    def location(self, loc: Loc) -> int:
        if loc.region not in self.region_ids:
            raise DeviceError("a value refers to a region that is not on the device")
        k = self.region_ids.index(loc.region)
        starts = self.vector_starts[k] if self.vector_starts else None
        if starts is not None:
            return self.bases[k] + loc.offset + int(np.searchsorted(starts, loc.offset))
        return self.bases[k] + self.offsets[k][loc.offset]

    def words(self, refs: Refs) -> np.ndarray:
        """`_word(v, layout, inside=True)` of many values at once (image regions only)."""
        region = refs.region
        if len(region) and region.min() == region.max():  # the common case: one region
            rid = int(region[0])
            if rid < 0:
                return refs.offset.copy()
            if rid not in self.region_ids:
                return np.zeros(len(region), np.int64)
            return self.in_region(self.region_ids.index(rid), refs.offset)
        out = np.where(region < 0, refs.offset, 0)
        for k, rid in enumerate(self.region_ids):
            chosen = region == rid
            if chosen.any():
                out[chosen] = self.in_region(k, refs.offset[chosen])
        return out

    def in_region(self, k: int, offsets: np.ndarray) -> np.ndarray:
        """Device words of offsets in device region k, a region image."""
        starts = self.vector_starts[k] if self.vector_starts else None
        if starts is None:
            raise AssertionError("a region image refers into a region that is not an image")
        shift: np.ndarray | int = 0
        if len(starts) and len(offsets):
            # Most arrays are one parmap's words, between two vectors: one shift for them all.
            low, high = np.searchsorted(starts, [offsets.min(), offsets.max()]).tolist()
            shift = low if low == high else np.searchsorted(starts, offsets)
        return offsets + (self.bases[k] + shift)


def _layout(regions: list[Region | RegionImage], extra: list[int]) -> _Layout:
    bases, used, capacity, offsets = [], [], [], []
    vector_starts: list[np.ndarray | None] = []
    base = 0
    for region, more in zip(regions, extra, strict=True):
        table = {}
        size = 0
        if isinstance(region, RegionImage):
            # Under hetprof's rules a region's values tile [0, ap) (Fig. 3, ap + |v|), so each
            # device offset is the region's plus one header word per non-empty vector before it.
            starts = np.sort(np.array([o for o, items in region.vectors() if len(items)],
                                      dtype=np.int64))
            vector_starts.append(starts)
            size = region.ap + len(starts)
        else:
            vector_starts.append(None)
            for offset in sorted(region.values):
                table[offset] = size
                size += _device_size(region.values[offset])
        room = size + more
        bases.append(base)
        used.append(size)
        capacity.append(room)
        offsets.append(table)
        base += room
    return _Layout([r.name for r in regions], bases, used, capacity, offsets, vector_starts)


def _word(value, layout: _Layout, inside: bool = False) -> int:
    """A value as a device word. A location inside a pushed region may point into a region the
    work does not use (its type says so, and its effect leaves that region out): the work never
    follows it, so it becomes 0."""
    if isinstance(value, bool):
        return int(value)
    if inside and value.region not in layout.region_ids:
        return 0
    return layout.location(value)


def _fill(heap: np.ndarray, regions: list[Region | RegionImage], layout: _Layout) -> None:
    as_float = heap.view(np.float64)
    for k, region in enumerate(regions):
        if isinstance(region, RegionImage):
            _fill_image(heap, k, region, layout)
            continue
        for offset, value in region.values.items():
            at = layout.bases[k] + layout.offsets[k][offset]
            match value:
                case IntV(v):
                    heap[at] = v
                case FloatV(v):
                    as_float[at] = v
                case PairV(a, b):
                    heap[at] = _word(a, layout, True)
                    heap[at + 1] = _word(b, layout, True)
                case VecV(items):
                    heap[at] = len(items)
                    for j, item in enumerate(items):
                        heap[at + 1 + j] = _word(item, layout, True)
                case Closure() | RegionClosure():
                    heap[at] = heap[at + 1] = 0  # code cannot travel; the plan never reads it


def _fill_image(heap: np.ndarray, k: int, image: RegionImage, layout: _Layout) -> None:
    """`_fill` of a region image: every block's words in a few numpy operations."""

    def at(offsets: np.ndarray) -> np.ndarray:
        return layout.in_region(k, offsets)

    for offsets, words in image.scalars():
        heap[at(offsets)] = words
    for block in image.pairs():
        where = at(block.offsets)
        heap[where] = layout.words(block.data[0])
        heap[where + 1] = layout.words(block.data[1])
    for offset, items in image.vectors():
        (where,) = at(np.array([offset], np.int64)).tolist()
        heap[where] = len(items)
        heap[where + 1:where + 1 + len(items)] = layout.words(items)


def heap_image(offload: Offload) -> np.ndarray:
    """The device heap's words as `run_offload` copies them in: every input region of the
    offload laid out and filled (no spare room), without a device."""
    regions = list(offload.inputs.values())
    layout = _layout(regions, [0] * len(regions))
    heap = np.zeros(max(1, sum(layout.used)), np.int64)
    _fill(heap, regions, layout)
    return heap


# ---------------------------------------------------------------------------------------------------
# Values, read back


def device_value(heap: np.ndarray, word: int, type_: Type, depth: int = 0) -> Any:
    """A device word of type τ as Python data (ints, floats, bools, tuples, lists)."""
    if isinstance(type_, BoolT):
        return bool(word)
    assert isinstance(type_, Boxed)
    shape = type_.shape
    if not 0 <= word < len(heap):
        return f"<bad location {word}>"
    match shape:
        case IntS():
            return int(heap[word])
        case FloatS():
            return float(heap[word:word + 1].view(np.float64)[0])
        case PairS(first, second):
            return (device_value(heap, int(heap[word]), first, depth + 1),
                    device_value(heap, int(heap[word + 1]), second, depth + 1))
        case VecS(element):
            n = int(heap[word])
            items = heap[word + 1:word + 1 + n]
            number = element.shape if isinstance(element, Boxed) else None
            if (isinstance(number, (IntS, FloatS)) and len(items) == n
                    and ((0 <= items) & (items < len(heap))).all()):
                words = heap[items]  # a vector of numbers, read at once
                return (words.view(np.float64) if isinstance(number, FloatS)
                        else words).tolist()
            return [device_value(heap, int(heap[word + 1 + i]), element, depth + 1)
                    for i in range(n)]
        case FunS() | RegionFunS():
            return "<function>"
    raise AssertionError(shape)


def value_difference(value: Any, reference: Any, where: str = "value") -> str | None:
    """Where two values read back from devices differ, exactly (floats bit for bit, NaN equal
    to NaN), as "value[3][1]: 1.5 against 1.25"; None where they are the same."""
    if isinstance(value, (list, tuple)) and isinstance(reference, (list, tuple)):
        if type(value) is not type(reference) or len(value) != len(reference):
            kind = "vector" if isinstance(value, list) else "pair"
            return (f"{where}: a {kind} of {len(value)} elements against "
                    f"{len(reference)} elements")
        for k, (a, b) in enumerate(zip(value, reference, strict=True)):
            found = value_difference(a, b, f"{where}[{k}]")
            if found:
                return found
        return None
    return None if _same(value, reference) else f"{where}: {value!r} against {reference!r}"


def check_runs(run: OffloadRun, reference: OffloadRun) -> str | None:
    """Compare the values of two runs of one offload (e.g. the GPU's against the OpenCL CPU
    device's, for an offload without an interpreter value): None where they are the same, else
    a sentence saying where they differ."""
    found = value_difference(run.value, reference.value)
    if found is None:
        return None
    return f"{run.device} and {reference.device} computed different values: {found}"


def interpreter_value(value, heap: dict[int, Region]) -> Any:
    """The interpreter's value as the same Python data."""
    if isinstance(value, bool):
        return value
    region = heap[value.region]
    stored = region.values[value.offset]
    match stored:
        case IntV(v) | FloatV(v):
            return v
        case PairV(a, b):
            return (interpreter_value(a, heap), interpreter_value(b, heap))
        case VecV(items):
            return [interpreter_value(item, heap) for item in items]
    return "<function>"


# ---------------------------------------------------------------------------------------------------


def plan_offload(offload: Offload, types: dict, params: dict[str, int],
                 local_words: int = 4096) -> tuple[Plan, list[str]]:
    """The plan of an offload, and the region variables it runs over (device region order)."""
    local: tuple[str, ...] = ()
    if isinstance(offload.node, On):
        assert offload.node.region is not None  # the checker writes every `on`'s region
        names = sorted(set(offload.node.uses) | {offload.node.region})
        local = offload.node.local
    else:
        names = sorted({name for name, rid in offload.regions.items()
                        if rid in offload.inputs})
    free = {name: None for name in free_variables(offload.body)}
    return compile_offload(offload.body, types, params, names, free, local, local_words), names


def _plan(session: DeviceSession, offload: Offload, types: dict,
          params: dict[str, int]) -> tuple[Plan, list[str]]:
    return plan_offload(offload, types, params, session.info.local_words)


def offload_key(session: DeviceSession, offload: Offload, types: dict,
                params: dict[str, int]) -> str:
    """A digest of what a run of the offload on this device computes: the device, the generated
    kernels, the input regions' words and the free variables. Two offloads with one key run the
    same kernels on the same data. (What the program allocates after the offload is left out:
    it only sizes the spare room of the device's heap.)"""
    plan, _ = _plan(session, offload, types, params)
    digest = hashlib.sha256()
    for part in (session.info.describe(), plan.source, sorted(params.items()),
                 sorted(offload.env.items(), key=lambda item: item[0]),
                 sorted((rid, r.ap, r.digest() if isinstance(r, RegionImage)
                         else sorted(r.values.items())) for rid, r in offload.inputs.items())):
        digest.update(repr(part).encode())
    return digest.hexdigest()


def _check_inputs(plan: Plan, offload: Offload, rids: list[int], names: list[str]) -> None:
    """Every location the `on` takes from its environment lies in a region it copies to the
    device. The checker lets an `on` pass on a value of a region it does not copy when the work
    never reads it (a kernel returning a closure's captured float, say); the backend would have
    to hand the kernel a pointer into host memory, so it sets such an `on` aside."""
    for name in plan.inputs:
        value = offload.env.get(name)
        if isinstance(value, Loc) and value.region not in rids:
            where = next((n for n, rid in offload.regions.items() if rid == value.region), None)
            raise BackendError(
                f"the `on` uses {name}, a value in region {where or '(unnamed)'}, which it does "
                f"not copy to the device (it copies {', '.join(names) or 'none'}); the backend "
                "cannot pass a reference to host memory through a kernel",
                offload.on.span if offload.on is not None else None)


def run_offload(session: DeviceSession, offload: Offload, types: dict, params: dict[str, int],
                repeats: int = 5, warmup: int = 1, where: str = "",
                room: Mapping[int, int] | None = None) -> OffloadRun:
    """Run an offload on the device `repeats` times after `warmup` runs; compare its value with
    the interpreter's (an offload without one, from graphs.semantics.inputs, is run unchecked:
    see `check_runs`).

    `room`: region id -> the words the work allocates there, for an offload without the
    interpreter's heap after the work (graphs.semantics.inputs.estimate_room). A region that
    fills up on the device makes its kernel go on with wrong locations, which can crash the
    device (PoCL's is the host process), so the room must be known before the first run."""
    plan, names = _plan(session, offload, types, params)
    rids = []
    for name in names:
        rid = offload.regions.get(name)
        if rid is None or rid not in offload.inputs:
            raise DeviceError(f"region {name} is not available to the device")
        if rid not in rids:
            rids.append(rid)
    regions = [offload.inputs[rid] for rid in rids]
    _check_inputs(plan, offload, rids, names)
    # The room each region needs for what the work allocates: from the interpreter's heap after
    # the work, or from `room`; a second attempt grows it by what the full run had asked for.
    if all(rid in offload.heap for rid in rids):
        grown = [max(0, offload.heap[rid].ap - offload.inputs[rid].ap) for rid in rids]
        extra = [4 * g + 4096 for g in grown]
    elif room is not None and all(rid in room for rid in rids):
        # The device allocated at most 1.21 times the interpreter's words on every suite program
        # and example (vector headers, a reduce's levels), and `estimate_room` falls short by up
        # to 7%: half as much again covers both, where 4x would put a 2^20-option blackscholes
        # (576 M words) past the 32-bit allocation pointers.
        extra = [3 * room[rid] // 2 + 4096 for rid in rids]
    else:
        raise DeviceError("the words this offload allocates on the device are unknown (no "
                          "interpreter heap after it, no room given)")
    program = session.program(plan.source)
    expected = (interpreter_value(offload.value, offload.heap) if offload.value is not None
                else None)
    result_type = plan.result_type
    transfer_in, transfer_out = Timing(), Timing()
    kernels: dict[str, Timing] = {step.kernel: Timing() for step in plan.steps}
    value = None
    copies_in: tuple[int, ...] = ()
    copies_out: tuple[int, ...] = ()
    work_items: dict[str, int] = {}
    launches: dict[str, int] = {}
    attempts = 3
    for attempt in range(attempts):
        layout = _layout(regions, extra)
        if max(layout.capacity, default=0) >= 2**31:
            raise DeviceError(f"a region of {max(layout.capacity):,} words is beyond the "
                              "backend's 32-bit allocation pointers")
        try:
            for run in range(warmup + repeats):
                outcome = _run_once(session, program, plan, offload, layout, regions)
                if run >= warmup:
                    transfer_in.samples.append(outcome["in"])
                    transfer_out.samples.append(outcome["out"])
                    for name, seconds in outcome["kernels"].items():
                        kernels[name].samples.append(seconds)
                value = device_value(outcome["heap"], outcome["result"], result_type)
                copies_in, copies_out = outcome["copies_in"], outcome["copies_out"]
                work_items = outcome["work_items"]
                launches = outcome["launches"]
            break
        except _RegionFull as full:
            extra = [max(2 * e + 4096, 5 * n // 4 + 4096)
                     for e, n in zip(extra, full.needed or [0] * len(extra), strict=True)]
            transfer_in, transfer_out = Timing(), Timing()
            kernels = {step.kernel: Timing() for step in plan.steps}
            if attempt == attempts - 1:
                raise DeviceError(f"a region filled up on the device even after growing it "
                                  f"{attempts - 1} times") from None
    matches = _same(value, expected) if expected is not None else None
    return OffloadRun(where, session.info.describe(), value, expected, matches,
                      transfer_in, transfer_out, kernels, sum(copies_in), sum(copies_out),
                      plan, work_items, copies_in, copies_out, launches)


class _RegionFull(Exception):
    """A region filled up on the device; `needed`: the words each region was asked for beyond
    what it held when the run started, as far as the run got (None where unknown)."""

    def __init__(self, needed: list[int] | None = None):
        super().__init__()
        self.needed = needed


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and (a == b or (a != a and b != b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b and type(a) is type(b)


def _run_once(session: DeviceSession, program, plan: Plan, offload: Offload, layout: _Layout,
              regions: list[Region | RegionImage]) -> dict:
    cl = session.cl
    queue, context = session.queue, session.context
    total = layout.bases[-1] + layout.capacity[-1] if layout.bases else 1
    heap = session.pinned(max(1, total))
    heap[:] = 0
    _fill(heap, regions, layout)
    caps = np.array(layout.capacity, dtype=np.int32)
    aps = np.array(layout.used, dtype=np.int32)
    bases = np.array(layout.bases, dtype=np.int64)
    slots = np.zeros(max(1, plan.slots), dtype=np.int64)
    for name, slot in plan.inputs.items():
        slots[slot] = _word(offload.env[name], layout) if name in offload.env else 0
    flags = cl.mem_flags
    heap_buf = cl.Buffer(context, flags.READ_WRITE, heap.nbytes)
    cl.enqueue_fill_buffer(queue, heap_buf, np.int64(0), 0, heap.nbytes).wait()
    caps_buf = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=caps)
    aps_buf = session.allocation_pointers(aps)
    bases_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=bases)
    err = np.zeros(1, dtype=np.int32)
    err_buf = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=err)
    slots_buf = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=slots)
    # δ*: each region's used words, one copy per region (§4.3: one copy call per region)
    seconds_in = 0.0
    copies_in: list[int] = []
    for k in range(len(layout.used)):
        if layout.used[k]:
            part = heap[layout.bases[k]:layout.bases[k] + layout.used[k]]
            seconds_in += event_seconds(cl.enqueue_copy(queue, heap_buf, part,
                                                        dst_offset=8 * layout.bases[k]))
            copies_in.append(layout.used[k])
    common = (heap_buf, bases_buf, caps_buf, aps_buf, err_buf, slots_buf)
    top = list(layout.capacity)  # the host reserves result vectors from each region's top

    def read_slot(slot: int) -> int:
        out = np.zeros(1, dtype=np.int64)
        cl.enqueue_copy(queue, out, slots_buf, src_offset=8 * slot).wait()
        return int(out[0])

    def read_word(index: int) -> int:
        out = np.zeros(1, dtype=np.int64)
        cl.enqueue_copy(queue, out, heap_buf, src_offset=8 * index).wait()
        return int(out[0])

    def write_slot(slot: int, value: int) -> None:
        cl.enqueue_copy(queue, slots_buf, np.array([value], dtype=np.int64),
                        dst_offset=8 * slot).wait()

    def needed(more: int = 0, region: int = -1) -> list[int]:
        aps = aps_now()
        return [aps[k] - layout.used[k] + layout.capacity[k] - top[k] + (more if k == region
                                                                          else 0)
                for k in range(len(layout.used))]

    def check_full() -> None:
        """A kernel that filled a region goes on with wrong locations (hp_alloc): stop after it,
        knowing how much the regions were asked for."""
        cl.enqueue_copy(queue, err, err_buf).wait()
        if err[0] & ERR_FULL:
            raise _RegionFull(needed())

    def reserve(region: int, words: int) -> int:
        if top[region] - words < aps_now()[region]:
            raise _RegionFull(needed(words, region))
        top[region] -= words
        cl.enqueue_copy(queue, caps_buf, np.array(top, dtype=np.int32)).wait()
        return layout.bases[region] + top[region]

    def aps_now() -> list[int]:
        out = np.zeros(len(layout.used), dtype=np.int32)
        cl.enqueue_copy(queue, out, aps_buf).wait()
        return [int(x) for x in out]

    times: dict[str, float] = {}
    widest: dict[str, int] = {}
    launches: dict[str, int] = {}

    def launch(kernel_name: str, n: int, *extra) -> None:
        kernel = session.kernel(program, kernel_name)
        global_size, local_size = session.global_size(n)
        event = kernel(queue, global_size, local_size, *common, *extra)
        times[kernel_name] = times.get(kernel_name, 0.0) + event_seconds(event)
        widest[kernel_name] = max(widest.get(kernel_name, 0), n)
        launches[kernel_name] = launches.get(kernel_name, 0) + 1

    for step in plan.steps:
        check_full()
        if step.kind == "serial":
            program_kernel = session.kernel(program, step.kernel)
            event = program_kernel(queue, (1,), None, *common)
            times[step.kernel] = times.get(step.kernel, 0.0) + event_seconds(event)
            widest[step.kernel] = max(widest.get(step.kernel, 0), 1)
            launches[step.kernel] = launches.get(step.kernel, 0) + 1
        elif step.kind in ("map", "iota"):
            source = read_slot(step.vector)
            n = read_word(source)
            if n < 0:
                raise DeviceError(f"iota of a negative count ({n})")
            out = reserve(step.region, n + 1)
            launch(step.kernel, max(n, 1), np.int64(n), np.int64(out))
        elif step.kind == "reduce":
            cur = read_slot(step.vector)
            n = read_word(cur)
            if n == 0:
                write_slot(step.result, read_slot(step.zero))
            elif n == 1:
                write_slot(step.result, read_word(cur + 1))
            else:
                length = n
                while length > 1:
                    half = (length + 1) // 2
                    out = reserve(step.region, half + 1)
                    launch(step.kernel, length // 2, np.int64(length), np.int64(cur),
                           np.int64(out), np.int32(1 if half == 1 else 0))
                    cur, length = out, half
    cl.enqueue_copy(queue, err, err_buf).wait()
    if err[0] & ERR_FULL:
        raise _RegionFull()
    if err[0] & ERR_DIVIDE:
        raise DeviceError("division by zero on the device")
    if err[0] & ERR_INDEX:
        raise DeviceError("an index out of bounds on the device")
    result = read_slot(plan.result)
    # δ†: what the device allocated in each region (bottom up, and the reserved vectors at the
    # top), copied back into the host's copy of the heap (Definition 4.3's merge)
    final_aps = aps_now()
    seconds_out = 0.0
    copies_out: list[int] = []
    for k in range(len(layout.used)):
        for start, end in ((layout.used[k], final_aps[k]), (top[k], layout.capacity[k])):
            if end > start:
                part = heap[layout.bases[k] + start:layout.bases[k] + end]  # pinned: DMA
                seconds_out += event_seconds(cl.enqueue_copy(
                    queue, part, heap_buf, src_offset=8 * (layout.bases[k] + start)))
                copies_out.append(end - start)
    heap = np.array(heap)  # a copy in ordinary memory: the pinned buffer goes back
    session.release_pinned()
    return {"in": seconds_in, "out": seconds_out, "kernels": times, "heap": heap,
            "result": result, "copies_in": tuple(int(w) for w in copies_in),
            "copies_out": tuple(int(w) for w in copies_out), "work_items": widest,
            "launches": launches}


# ---------------------------------------------------------------------------------------------------
# Microbenchmarks (what `hetprof calibrate` measures; models/opencl/calibrate.py generates and fits them)


def time_transfers(session: DeviceSession, words: int, repeats: int) -> tuple[Timing, Timing]:
    """Host→device and device→host copies of `words` 64-bit words of random data."""
    cl = session.cl
    data = session.pinned(words)
    data[:] = np.random.default_rng(words).integers(1, 2**40, size=len(data), dtype=np.int64)
    back = session.pinned(words)
    buffer = cl.Buffer(session.context, cl.mem_flags.READ_WRITE, data.nbytes)
    h2d, d2h = Timing(), Timing()
    for run in range(repeats + 1):
        up = event_seconds(cl.enqueue_copy(session.queue, buffer, data))
        down = event_seconds(cl.enqueue_copy(session.queue, back, buffer))
        if run:  # the first run is the warm-up
            h2d.samples.append(up)
            d2h.samples.append(down)
    if not np.array_equal(data, back):
        raise DeviceError(f"{session.info.describe()} corrupted a {words}-word transfer")
    session.release_pinned()
    return h2d, d2h


def time_kernel(session: DeviceSession, source: str, name: str, global_size: int,
                local_size: int | None, buffers: list[np.ndarray | AllocationPointers],
                scalars: list, repeats: int) -> tuple[Timing, list[np.ndarray]]:
    """Run one generated kernel `repeats` times after a warm-up; return its time and the
    buffers' contents after the last run (for checking the result). An `AllocationPointers`
    argument is the session's pointer buffer, as the runner passes it."""
    cl = session.cl
    program = session.program(source)
    kernel = session.kernel(program, name)
    flags = cl.mem_flags
    device_buffers = [session.allocation_pointers(b.values) if isinstance(b, AllocationPointers)
                      else cl.Buffer(session.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                                     hostbuf=b) for b in buffers]
    timing = Timing()
    local = (local_size,) if local_size else None
    for run in range(repeats + 1):
        event = kernel(session.queue, (global_size,), local, *device_buffers, *scalars)
        seconds = event_seconds(event)
        if run:
            timing.samples.append(seconds)
    results = []
    for host, device in zip(buffers, device_buffers, strict=True):
        out = np.empty_like(host.values if isinstance(host, AllocationPointers) else host)
        cl.enqueue_copy(session.queue, out, device).wait()
        results.append(out)
    return timing, results


def time_fill(session: DeviceSession, words: int, repeats: int) -> Timing:
    """Allocating and clearing `words` words on the device (Δa's measurement)."""
    cl = session.cl
    timing = Timing()
    for run in range(repeats + 1):
        buffer = cl.Buffer(session.context, cl.mem_flags.READ_WRITE, 8 * max(1, words))
        seconds = event_seconds(cl.enqueue_fill_buffer(session.queue, buffer, np.int64(0), 0,
                                                       8 * max(1, words)))
        if run:
            timing.samples.append(seconds)
    return timing
