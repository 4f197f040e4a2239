"""The region memory model of §4: heap values, locations, regions, region stacks and the
configuration table 𝒯 = {ℂ ↦ 𝒮1, 𝔾 ↦ 𝒮2}, with allocation and reading (Fig. 3) and region merging
(Definition 4.3, Theorem 4.4). Costs are not decided here: the evaluator prices what these
functions report (whether a write expanded its region, by how much).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import NamedTuple

from profiler.errors import EvaluationError
from profiler.syntax import Expr, Span, World


@dataclass(frozen=True, slots=True)
class Loc:
    """ℓ = (r, o): region name and offset. A region's GPU copy keeps its CPU name (§3.2)."""

    region: int
    offset: int


Value = Loc | bool  # what an expression evaluates to: a location, or an unboxed boolean


@dataclass(frozen=True, slots=True)
class IntV:
    value: int


@dataclass(frozen=True, slots=True)
class FloatV:
    value: float


@dataclass(frozen=True, slots=True)
class PairV:
    first: Value
    second: Value


@dataclass(frozen=True, slots=True)
class VecV:
    items: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class Closure:
    """clos(x, e, E): E maps variables to values and region variables to region names."""

    param: str
    body: Expr
    env: dict
    regions: dict


@dataclass(frozen=True, slots=True)
class RegionClosure:
    param: str
    body: Expr
    env: dict
    regions: dict


HeapValue = IntV | FloatV | PairV | VecV | Closure | RegionClosure


def size_of(value: HeapValue) -> int:
    """|v| in words: scalars 1, a pair 2 (two locations), a closure 2 (code and environment
    pointers), a vector one word per element (at least 1, so that every value has an offset)."""
    match value:
        case IntV() | FloatV():
            return 1
        case PairV() | Closure() | RegionClosure():
            return 2
        case VecV(items):
            return max(1, len(items))
    raise AssertionError(value)


@dataclass(slots=True)
class Region:
    """R = (ap, s, refcnt, v) (Definition 4.1), with its name, source label and world."""

    name: int
    label: str
    ap: int = 0
    size: int = 0
    refcnt: int = 1
    values: dict[int, HeapValue] = field(default_factory=dict)
    world: World = World.CPU
    local: bool = False  # a GPU copy staged in local memory

    def copy_to(self, world: World, local: bool = False, shared: bool = False) -> Region:
        """This region in `world`. With `shared`, the copy allocates into this region's own
        table instead of a copy of it: for a GPU copy that is merged back before anything reads
        or allocates in this region again (hetprof's rules for `on`; see `merge`), where the
        merge would take the copy's table anyway. A copy of the table cost dot n = 10^5 about
        20 MiB at its evaluation's peak (2026-11-27)."""
        return Region(self.name, self.label, self.ap, self.size, self.refcnt,
                      self.values if shared else dict(self.values), world, local)


class Allocation(NamedTuple):
    """The outcome of R; v ↓ o@R' (Fig. 3/Fig. 9): where v went and how much the region grew.

    A named tuple rather than a frozen dataclass, like graphs.costgraph.Sub: every allocation
    makes one."""

    location: Loc
    words: int
    expanded_by: int  # 0 for NoExpandW; n = max(BSIZE, |v| + ap - |R|) for ExpandW


def slots_maker(cls: type) -> Callable:
    """A function making an instance of a frozen slotted dataclass from its fields, in about half
    the time of calling the class: a frozen dataclass's __init__ sets each field through
    object.__setattr__; this sets the slots directly, which is all that __init__ does (as
    graphs.schedule's `_step_maker` does for a `Step`). For `Loc`, and for the values the
    batched evaluator (graphs.semantics.batched) makes by the million."""
    new = object.__new__
    # The slots' member descriptors, read from the class dict: mypy takes `Loc.region` for an int.
    setters = [vars(cls)[name].__set__ for name in cls.__slots__]  # type: ignore[attr-defined]
    if len(setters) == 1:
        (set_first,) = setters

        def make_one(first):
            instance = new(cls)
            set_first(instance, first)
            return instance

        return make_one
    set_first, set_second = setters

    def make_two(first, second):
        instance = new(cls)
        set_first(instance, first)
        set_second(instance, second)
        return instance

    return make_two


_new_loc = slots_maker(Loc)
# Allocation(...) runs the named tuple's Python-level __new__; this makes the same tuple in C.
_new_allocation = partial(tuple.__new__, Allocation)


def allocate(region: Region, value: HeapValue, bsize: int, gap: int = 0) -> Allocation:
    """Bump allocation (Fig. 3). A full region grows by max(BSIZE, what is missing) (ExpandW).

    ap moves by |v| + `gap`: hetprof's rules take gap 0 (ap + |v|, a region's words are its
    values'); the paper's rules take gap 1, as Fig. 3 and Fig. 9 write ap + |v| + 1 (whether the
    word is a header or a typo the paper does not say). The fullness test stays Fig. 3's
    |v| + ap > |R|. `Allocation.words` is how far ap moved."""
    words = size_of(value)
    offset = region.ap
    expanded = 0
    if words + offset > region.size:
        expanded = max(bsize, words + offset - region.size)
        region.size += expanded
    region.values[offset] = value
    region.ap = offset + words + gap
    return _new_allocation((_new_loc(region.name, offset), words + gap, expanded))


def read(region: Region, location: Loc, span: Span) -> HeapValue:
    """𝒮; ℓ ↑ v (Fig. 3): o < ap and o ∈ dom(v)."""
    value = region.values.get(location.offset)
    if location.offset >= region.ap or value is None:
        raise EvaluationError(f"read of an unallocated location ({region.label}, "
                              f"{location.offset})", span, "Fig. 3, read")
    return value


@dataclass(frozen=True, slots=True)
class MergeResult:
    region: Region
    new_words: int  # words the GPU allocated, copied back by ω†β


def _same_start(shorter: Iterable, longer: Iterable, chunk: int = 1 << 16) -> bool:
    """Whether `longer` begins with the items of `shorter`, each the same object or equal (==),
    compared a chunk at a time as lists, in C (a list's == takes an item that `is` the other as
    equal before it asks ==): at dot n = 10^5 the merge compares 500 000 pairs, about 0.03 s one
    at a time in Python; chunks keep the lists to a few MB."""
    first, second = iter(shorter), iter(longer)
    while True:
        part = list(islice(first, chunk))
        if part != list(islice(second, len(part))):
            return False
        if len(part) < chunk:
            return True


def merge(cpu: Region, gpu: Region, span: Span, base: int | None = None) -> MergeResult:
    """R1; R1' ▶ R2; δ (Definition 4.3): the CPU region gains what the GPU copy allocated.

    Reconstructed (the definition's body is lost in the text): R2 = (max(ap1, ap1'),
    max(s1, s1'), refcnt1, v1 ∪ v1'); δ is priced by the caller as ω†β of the words the GPU added
    (from `base`, the ap the copy was made with; default: the CPU side's ap).

    Merge-conflict freedom (Theorem 4.4: every value of R1 and of R1' is in R2, and offsets both
    sides hold hold one value) is checked, and holds exactly when the words the two sides added
    since the copy (offsets from `base` on) do not disagree: when at most one side grew, always;
    when both grew, only if they added the same values at the same offsets. Both sides allocate by
    bumping their own ap from `base` (Fig. 3), so two sides that both grew collide from `base` on
    and, holding different values, conflict: the theorem's proof ("by immutability") does not
    cover them, and nothing in Def. 4.3 relocates one side's words. hetprof's calibrated rules
    never let the CPU side grow while its GPU copy exists (an `on` runs to its merge before
    anything else allocates); under the paper's rules a sibling branch can (see
    graphs.semantics.explicit, `_Branches`). Such a merge raises an EvaluationError.
    """
    cpu_values, gpu_values = cpu.values, gpu.values
    # Mostly the GPU copy's offsets begin with the CPU region's, in its order, holding the very
    # values it was pushed with (the CPU side did not change while the copy existed): then
    # v1 ∪ v1' is the copy's own table, in the same order, and is taken without a copy (the
    # copy is dropped after the merge). Anything else, or a value that differs, is checked as
    # below, which reports the conflict.
    prefix = len(cpu_values) <= len(gpu_values) and _same_start(
        cpu_values.keys(), gpu_values.keys()) and _same_start(cpu_values.values(),
                                                             gpu_values.values())
    for offset in () if prefix else cpu_values.keys() & gpu_values.keys():
        # The GPU copy holds the very values it was pushed with, so most pairs are one object.
        cpu_value, gpu_value = cpu_values[offset], gpu_values[offset]
        if cpu_value is not gpu_value and cpu_value != gpu_value:
            raise EvaluationError(f"merge conflict in region {cpu.label} at offset {offset}: the "
                                  "CPU region and its GPU copy both allocated there", span,
                                  "Theorem 4.4")
    start = cpu.ap if base is None else base
    if cpu.ap > start and gpu.ap > start:
        cpu_new = {o: v for o, v in cpu_values.items() if o >= start}
        gpu_new = {o: v for o, v in gpu_values.items() if o >= start}
        if cpu_new != gpu_new:
            raise EvaluationError(f"merge conflict in region {cpu.label}: the CPU region and its "
                                  f"GPU copy both grew from offset {start} (bump allocation "
                                  "collides; Def. 4.3 relocates nothing)", span, "Theorem 4.4")
    new_words = max(0, gpu.ap - start)
    merged = Region(cpu.name, cpu.label, max(cpu.ap, gpu.ap), max(cpu.size, gpu.size),
                    cpu.refcnt, gpu_values if prefix else {**cpu_values, **gpu_values},
                    World.CPU)
    return MergeResult(merged, new_words)
