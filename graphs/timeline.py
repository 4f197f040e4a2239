"""A schedule as a timeline (§6.3, §6.4, §6.7): what each simulated CPU processor ran when, what each
GPU work group of a device box ran when, the transfers, and space over the schedule's steps.

The timeline is plain JSON data (lists, dicts, numbers and strings), so it travels inside the
serialisable `ProfileResult` and is drawn or exported later (`graphs.plots`, `graphs.render_trace`)
without the cost graph. It is bounded: contiguous tasks of one source expression on a processor
become one interval, and past `MAX_INTERVALS` a processor's tasks are gathered into time windows,
first only tasks that follow each other without idle time, then, if that is not enough, across it
(`tasks` says how many tasks each interval holds); space is sampled at most `MAX_SPACE_SAMPLES` times,
keeping each window's peak.

A device box (the dvb edge of Fig. 4) occupies the CPU processor that runs it for its whole weight,
grow + δ* + kernel + δ† + merge, in that order. Its kernel time is laid out as the device box
builds it (`graphs.devicebox`): phases one after another, each starting with its launch, then
rounds of `groups_at_once` work groups, a round lasting as long as its slowest work group.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from graphs.costgraph import CHUNK, NUMBER, NUMBER_DTYPE, CostGraph, DeviceBoxInfo, EdgeKind
from graphs.passes import compiled_passes
from graphs.schedule import Clock, ScheduleResult, SpaceTrace, Tasks
from profiler.syntax import Span

if TYPE_CHECKING:  # numpy is imported where used (start-up time)
    import numpy as np

MAX_INTERVALS = 1500  # CPU intervals kept in all (device boxes always kept)
MAX_SPACE_SAMPLES = 600
MAX_GROUP_TRACKS = 32  # work groups of a kernel with a track of their own; the rest share one

Timeline = dict[str, Any]
_DEVICE_BOX = EdgeKind.DEVICE_BOX  # a global: Python 3.11 looks up an Enum member slowly


def build_timeline(graph: CostGraph, result: ScheduleResult,
                   describe: Callable[[Span], str] | None = None,
                   units: str = "abstract", space: list[list[float]] | None = None) -> Timeline:
    """The timeline of `graph` under the schedule `result`, as JSON data. `describe` names a
    source span (e.g. by its text); tasks are named by their edge kind and that name. `space`:
    `space_samples(result)`, where the caller made them already.

    Keys: `units`, `procs`, `schedule`, `makespan`; `processors`: per processor a list of
    [start, end, name, kind, location, tasks]; `device`: per device box run, its parts and its
    phases' work groups; `space`: [step, time, cpu words, gpu words] samples (eq. 8);
    `coarsened`: whether processor intervals were gathered into windows.
    """
    # Each processor's runs of tasks that follow each other without idle time under one name,
    # kept as the numbers of their first and last task and their label, in typed arrays (12
    # bytes a run: a million-task schedule's runs as lists cost about 170 MB), and made into
    # [start, end, name, kind, location, tasks] lists only as they are written or coarsened.
    # They are found with numpy, a processor at a time, from each task's edge record: its label
    # (labels are known by the ids of span and kind: the evaluator shares one span object per
    # expression), its name and its weight.
    import numpy as np

    kinds, spans = graph.edge_kind.values, graph.edge_span.values
    boxes = np.array([kind is _DEVICE_BOX for kind in kinds], dtype=bool)
    label_keys: dict[tuple[int, int], int] = {}  # (id(span), id(kind)) -> its number
    key_of_record = np.array([label_keys.setdefault((id(span), id(kind)), len(label_keys))
                              for span, kind in zip(spans, kinds, strict=True)], dtype=np.int32)
    label_of_key = np.full(len(label_keys), -1, dtype=np.int32)  # its label, once made
    rows: list[tuple[str, str, str, int]] = []  # by label: name, kind, location, the name's id
    name_ids: dict[str, int] = {}
    runs: list[tuple[array[int], array[int], array[int]]] = []  # firsts, lasts, labels
    device: list[dict[str, Any]] = []
    box_numbers = {id(box): i + 1 for i, box in enumerate(graph.device_boxes())}
    tasks = result.tasks
    in_doubles = _in_doubles(tasks) if tasks is not None else None
    for processor in range(len(tasks.edges) if tasks is not None else 0):
        assert tasks is not None
        firsts: list[np.ndarray] = []  # the tasks that start a run, and their labels
        labels: list[np.ndarray] = []
        last_name = -1  # the name of the task before the chunk (-1: none, or a device box)
        count = len(tasks.edges[processor])
        # A chunk of tasks at a time, with the task before it: a few MB of temporaries.
        for low in range(0, count, CHUNK):
            high = min(low + CHUNK, count)
            before = max(low - 1, 0)
            edges = np.frombuffer(tasks.edges[processor], dtype=NUMBER_DTYPE)[before:high]
            with memoryview(graph.edge_records.codes) as memory:
                codes = np.frombuffer(memory, dtype=f"u{memory.itemsize}")[edges]
            del edges
            chunk = codes[low - before:]
            box = boxes[chunk]
            keys = key_of_record[chunk]
            # The labels that the chunk makes first, and its device boxes' rows, in task order:
            # each key's first task by a minimum over its tasks (np.unique's sort took a third
            # of zipmul 10^5's timeline).
            plain = np.flatnonzero(~box)
            first_of_key = np.full(len(label_of_key), len(chunk), dtype=np.int64)
            np.minimum.at(first_of_key, keys[plain], plain)
            made = np.flatnonzero(first_of_key < len(chunk))
            first_tasks = first_of_key[made][label_of_key[made] < 0]
            task_rows = np.full(len(chunk), -1, dtype=np.int32)  # a device box's own row
            for task in np.sort(np.concatenate((first_tasks, np.flatnonzero(box)))).tolist():
                kind, span = kinds[chunk[task]], spans[chunk[task]]
                if box[task]:
                    location = _location(span)
                    info: DeviceBoxInfo = graph.edge_extra[tasks.edges[processor][low + task]][
                        "box"]
                    number = box_numbers[id(info)]
                    task_rows[task] = len(rows)
                    rows.append((f"on #{number} (device box)", kind.value, location, -1))
                    device.append(_device_run(
                        info, number, tasks.times[tasks.instants[processor][low + task]],
                        location))
                    continue
                text = describe(span) if describe is not None and span is not None else ""
                name = f"{kind.value}: {text}" if text else kind.value
                label_of_key[keys[task]] = len(rows)
                rows.append((name, kind.value, _location(span),
                             name_ids.setdefault(name, len(name_ids))))
            chunk_labels = np.where(box, task_rows, label_of_key[keys])
            del keys, task_rows, box, chunk
            names = np.array([row[3] for row in rows], dtype=np.int32)[chunk_labels]
            # A task goes on the run before it where it has that run's name and starts as the
            # task before it ends (a device box, name -1, is a run of its own).
            goes_on = names >= 0
            goes_on[0] &= names[0] == last_name
            goes_on[1:] &= names[1:] == names[:-1]
            if low:
                goes_on &= _follows_at_once(tasks, processor, before, high, codes, in_doubles)
            else:
                goes_on[1:] &= _follows_at_once(tasks, processor, 0, high, codes, in_doubles)
            last_name = int(names[-1])
            starting = np.flatnonzero(~goes_on)
            firsts.append(starting + low)
            labels.append(chunk_labels[starting])
            del names, goes_on, codes, chunk_labels, starting
        started = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
        runs.append((_numbers(started), _numbers(np.append(started[1:] - 1, count - 1)
                                                 if count else started),
                     _numbers(np.concatenate(labels) if labels else started)))
    processors: list[list[list[Any]]] = [[] for _ in range(result.procs)]

    def track(processor: int) -> Iterator[list[Any]]:
        """Processor `processor`'s runs as [start, end, name, kind, location, tasks]."""
        assert tasks is not None
        times, weight_codes, weights = tasks.times, tasks.weight_codes, tasks.weights
        instants, edges = tasks.instants[processor], tasks.edges[processor]
        for first, last, label in zip(*runs[processor], strict=True):
            name, kind, location, _ = rows[label]
            yield [times[instants[first]], times[instants[last]] + weights[weight_codes[edges[last]]],
                   name,
                   kind, location, last - first + 1]

    coarsened = sum(len(firsts) for firsts, _, _ in runs) > MAX_INTERVALS
    if coarsened:
        window = max(result.time, 1e-12) / max(1, MAX_INTERVALS // max(1, result.procs))
        # First without hiding idle time; if that is not enough, across gaps too. Compiled
        # where the times are exact in doubles and there are enough runs to pay.
        assert tasks is not None
        compiled = (compiled_passes(sum(len(firsts) for firsts, _, _ in runs))
                    if in_doubles is not None else None)
        if compiled is not None:
            assert in_doubles is not None
            coarsen = _CompiledCoarsen(compiled, tasks, runs, rows, graph, in_doubles)
            gathered = [coarsen.processor(p, window, False) for p in range(len(runs))]
            if sum(len(t) for t in gathered) > MAX_INTERVALS:
                gathered = [coarsen.processor(p, window, True) for p in range(len(runs))]
        else:
            gathered = [_coarsen(track(p), window, across_gaps=False)
                        for p in range(len(runs))]
            if sum(len(t) for t in gathered) > MAX_INTERVALS:
                gathered = [_coarsen(track(p), window, across_gaps=True)
                            for p in range(len(runs))]
        processors[:len(gathered)] = gathered
    else:
        processors[:len(runs)] = [list(track(p)) for p in range(len(runs))]
    return {
        "units": units,
        "procs": result.procs,
        "schedule": result.policy.value,
        "makespan": result.time,
        "processors": processors,
        "device": device,
        "space": space_samples(result) if space is None else space,
        "coarsened": coarsened,
    }


class _CompiledCoarsen:
    """`_coarsen` of each processor's runs by `graphs.compiled.coarsen`: the runs' starts and
    ends as doubles (`_in_doubles`, exact), their names and kinds as numbers; the intervals it
    makes are written as `_coarsen` writes them, each start and end the Python number that
    `track` gives (read from the schedule's times, added as it adds them)."""

    def __init__(self, compiled: Any, tasks: Tasks,
                 runs: list[tuple[array[int], array[int], array[int]]],
                 rows: list[tuple[str, str, str, int]], graph: CostGraph,
                 in_doubles: tuple[np.ndarray, np.ndarray]) -> None:
        import numpy as np

        self.compiled, self.tasks, self.runs, self.rows = compiled, tasks, runs, rows
        self.graph, self.in_doubles = graph, in_doubles
        kind_numbers: dict[str, int] = {}
        self.names = np.array([row[3] for row in rows], dtype=np.int32)  # -1: a device box
        self.kinds = np.array([kind_numbers.setdefault(row[1], len(kind_numbers))
                               for row in rows], dtype=np.int32)
        self.name_of = {row[3]: row[0] for row in rows if row[3] >= 0}
        self.name_count = max(self.name_of, default=-1) + 1

    def processor(self, processor: int, window: float, across_gaps: bool) -> list[list[Any]]:
        import numpy as np

        tasks, rows = self.tasks, self.rows
        firsts, lasts, labels = self.runs[processor]
        all_times, all_weights = self.in_doubles
        with memoryview(self.graph.edge_records.codes) as memory:
            first, last, total, mixed, main, distinct, box = self.compiled.coarsen(
                *(np.frombuffer(numbers, dtype=NUMBER_DTYPE)
                  for numbers in (firsts, lasts, labels, tasks.instants[processor],
                                  tasks.edges[processor])),
                np.frombuffer(memory, dtype=f"u{memory.itemsize}"), all_times, all_weights,
                self.names, self.kinds, float(window), across_gaps, self.name_count)
        times, weight_codes, weights = tasks.times, tasks.weight_codes, tasks.weights
        task_instants, task_edges = tasks.instants[processor], tasks.edges[processor]
        out: list[list[Any]] = []
        for run, last_run, count, kinds_mixed, name, names_in, device_box in zip(
                first.tolist(), last.tolist(), total.tolist(), mixed.tolist(), main.tolist(),
                distinct.tolist(), box.tolist(), strict=True):
            label_name, kind, location, _ = rows[labels[run]]
            end_task = lasts[last_run]
            start = times[task_instants[firsts[run]]]
            end = times[task_instants[end_task]] + weights[weight_codes[task_edges[end_task]]]
            if device_box:
                out.append([start, end, label_name, kind, location, count])
                continue
            main_name = self.name_of[name]
            out.append([start, end, main_name if names_in == 1
                        else f"{main_name} (+{names_in - 1} more)",
                        "mixed" if kinds_mixed else kind, location, count])
        return out


def _follows_at_once(tasks: Tasks, processor: int, low: int, high: int, codes: np.ndarray,
                     in_doubles: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Whether each of the processor's tasks low + 1 .. high - 1 starts when the one before it
    ends (its start, as the simulation added it, equals the other's start plus its weight;
    `codes` holds tasks low .. high - 1's edge records): with numpy where `in_doubles` gives
    the times and weights as doubles (`_in_doubles`), else in Python."""
    import numpy as np

    times, weights, instants = tasks.times, tasks.weights, tasks.instants[processor]
    if in_doubles is not None:
        all_times, all_weights = in_doubles
        starts = all_times[np.frombuffer(instants, dtype=NUMBER_DTYPE)[low:high]]
        return starts[1:] == starts[:-1] + all_weights[codes[:-1]]
    return np.array([times[instants[i - 1]] + weights[codes[i - 1 - low]] == times[instants[i]]
                     for i in range(low + 1, high)], dtype=bool)


def _in_doubles(tasks: Tasks) -> tuple[np.ndarray, np.ndarray] | None:
    """The schedule's times and the weights as doubles, where doubles add them as Python does
    (floats, and ints below 2^52); None elsewhere."""
    import numpy as np

    weights = tasks.weights
    if not all(type(w) is float or (type(w) is int and w < 2**52) for w in weights):
        return None
    # The clock only moves on: its last time is its largest.
    if any(type(w) is int for w in weights) and tasks.times and tasks.times[-1] >= 2**52:
        return None
    times = tasks.times
    doubles = times.doubles if isinstance(times, Clock) else np.array(times, dtype=np.float64)
    return doubles, np.array(weights, dtype=np.float64)


def _numbers(values: np.ndarray) -> array[int]:
    """A numpy array of task or label numbers as a typed array of `NUMBER`s."""
    return array(NUMBER, values.astype(NUMBER_DTYPE).tobytes())


def space_samples(result: ScheduleResult, limit: int = MAX_SPACE_SAMPLES) -> list[list[float]]:
    """[step index, time, CPU words, GPU words] at every instant where the schedule's space
    changes (eq. 8; `ScheduleResult.space_trace`), from 0 words at time 0 to the end: at most
    `limit` of them. Past it, each window keeps its instant of largest total space, so that the
    maxima plotted are eq. 9's peaks."""
    recorded = result.space_trace
    last = recorded[-1] if len(recorded) else (0, 0.0, 0, 0)
    end = (max(0, result.step_count - 1), result.time, *last[2:])
    ends = last[:2] != end[:2]
    count = 1 + len(recorded) + ends  # 0 words at time 0, the recorded entries, the end

    def entry(i: int) -> tuple:
        """The i-th of the trace from 0 words at time 0 to the end (read, not copied: a large
        schedule records hundreds of thousands of entries)."""
        if i == 0:
            return (0, 0.0, 0, 0)
        return recorded[i - 1] if i <= len(recorded) else end

    chosen: range | list[int]
    if count <= limit:
        chosen = range(count)
    else:
        import numpy as np

        # Each entry's total space, windows of `size` entries as rows (the last padded below
        # any total), and each row's first largest (as `max` finds it).
        size = math.ceil(count / limit)
        totals = np.full(-(-count // size) * size, np.iinfo(np.int64).min, dtype=np.int64)
        totals[0] = 0
        if isinstance(recorded, SpaceTrace):
            totals[1:1 + len(recorded)] = (np.frombuffer(recorded.cpu, dtype=np.int64)
                                           + np.frombuffer(recorded.gpu, dtype=np.int64))
        else:
            totals[1:1 + len(recorded)] = [entry[2] + entry[3] for entry in recorded]
        if ends:
            totals[count - 1] = end[2] + end[3]
        peaks: list[int] = (np.argmax(totals.reshape(-1, size), axis=1)
                            + np.arange(0, len(totals), size)).tolist()
        if peaks[-1] != count - 1:
            peaks.append(count - 1)
        chosen = peaks
    return [list(entry(i)) for i in chosen]


def _coarsen(track: Iterable[list[Any]], window: float, across_gaps: bool) -> list[list[Any]]:
    """Gather a processor's intervals into time windows (device boxes stay on their own);
    unless `across_gaps`, only intervals that follow each other without idle time."""
    out: list[list[Any]] = []
    current: list[Any] | None = None
    weights: dict[str, float] = {}
    device_box = _DEVICE_BOX.value
    for interval in track:
        start, end, name, kind, _, _ = interval
        if kind == device_box:
            if current is not None:
                out.append(_close(current, weights))
                current = None
            out.append(interval)
            continue
        bucket = int(start // window)
        if current is not None and current[6] == bucket and (across_gaps or current[1] == start):
            current[1] = end
            current[5] += interval[5]
            if current[3] != kind:
                current[3] = "mixed"
        else:
            if current is not None:
                out.append(_close(current, weights))
            current = [start, end, name, kind, interval[4], interval[5], bucket]
            weights = {}
        weights[name] = weights.get(name, 0.0) + (end - start)
    if current is not None:
        out.append(_close(current, weights))
    return out


def _close(current: list[Any], weights: dict[str, float]) -> list[Any]:
    main = max(weights, key=weights.__getitem__)
    name = main if len(weights) == 1 else f"{main} (+{len(weights) - 1} more)"
    return [current[0], current[1], name, current[3], current[4], current[5]]


def _device_run(info: DeviceBoxInfo, number: int, start: float, location: str) -> dict[str, Any]:
    """The parts of one device box started at `start` (Fig. 6, rule for `on`)."""
    t = start
    parts: dict[str, Any] = {"on": number, "location": location, "start": start,
                             "end": start + info.total, "regions": list(info.regions)}
    for name, length in (("grow", info.grow), ("transfer_in", info.transfer_in),
                         ("kernel", info.kernel), ("transfer_out", info.transfer_out),
                         ("merge", info.merge)):
        parts[name] = [t, t + length]
        t += length
    box = info.box
    phases: list[dict[str, Any]] = []
    if box is not None:
        scale = info.kernel / box.time if box.time else 1.0
        t = parts["kernel"][0]
        for phase in box.phases:
            phases.append(_phase_run(phase, t, scale))
            t += phase.time * scale
    parts["phases"] = phases
    return parts


def _phase_run(phase, start: float, scale: float) -> dict[str, Any]:
    """Rounds of resident work groups, each round as long as its slowest group (§7.1.2)."""
    groups: list[list[float]] = []
    others: list[list[float]] = []
    t = start + phase.launch * scale
    per_round = max(1, phase.groups_at_once)
    for r, round_time in enumerate(phase.round_times):
        first = r * per_round
        last = min(phase.work_groups, first + per_round)
        for g in range(first, min(last, MAX_GROUP_TRACKS)):
            length = phase.group_times[g] if g < len(phase.group_times) else round_time
            groups.append([g, t, t + length * scale])
        hidden = last - max(first, MAX_GROUP_TRACKS)
        if hidden > 0:
            others.append([t, t + round_time * scale, hidden])
        t += round_time * scale
    return {"start": start, "end": start + phase.time * scale, "launch": phase.launch * scale,
            "parallel": phase.parallel, "threads": phase.threads,
            "work_groups": phase.work_groups, "rounds": phase.rounds, "groups": groups,
            "other_groups": others}


def _location(span) -> str:
    if span is None:
        return "?"
    return f"{span.file}:{span.line}:{span.column}"

