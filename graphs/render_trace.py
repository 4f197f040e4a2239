"""The trace renderer (`--format trace`): a profile's timeline in the Chrome trace-event format
(JSON), which Perfetto (ui.perfetto.dev), chrome://tracing and speedscope open.

Three processes: "CPU (simulated)" with one track per simulated processor of the schedule (§6.3),
"GPU" with a track of kernels (the device boxes' phases) and one track per work group (§6.4;
work groups past `graphs.timeline.MAX_GROUP_TRACKS` share one track per round), and "transfers"
with the δ* and δ† copies of each `on` (§6.6). A counter "space" gives the words live on each
world over time (eq. 8). Times are the profile's: in seconds for a calibrated device profile, and
otherwise one abstract unit is shown as one microsecond (`otherData.units` says which). Complete
events ("X") on one track never overlap: when two would (two `on`s running at once on different
processors), the second goes on another lane of that track.
"""

from __future__ import annotations

from typing import Any

from graphs.analysis import ProfileResult
from graphs.numbers import json_text

CPU, GPU, TRANSFERS = 1, 2, 3


class _Tracks:
    """Thread ids for named tracks, with extra lanes where complete events would overlap."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, str, int], int] = {}
        self.ends: dict[tuple[int, str], list[float]] = {}
        self.order: list[tuple[int, str, int]] = []

    def tid(self, pid: int, name: str, start: float, end: float) -> int:
        lanes = self.ends.setdefault((pid, name), [])
        free = [lane for lane, busy_until in enumerate(lanes) if busy_until <= start]
        lane = free[0] if free else len(lanes)
        if not free:
            lanes.append(start)
        lanes[lane] = max(end, start)
        key = (pid, name, lane)
        if key not in self.ids:
            self.ids[key] = len(self.ids) + 1
            self.order.append(key)
        return self.ids[key]

    def metadata(self) -> list[dict[str, Any]]:
        events = []
        for index, (pid, name, lane) in enumerate(self.order):
            label = name if lane == 0 else f"{name} ({lane + 1})"
            tid = self.ids[(pid, name, lane)]
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"name": label}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"sort_index": index}})
        return events


class TraceRenderer:
    """render(result) -> str: the Chrome trace-event JSON of the result's timeline."""

    def render(self, result: ProfileResult) -> str:
        return json_text(trace_events(result), indent=None, separators=(",", ":")) + "\n"


def trace_events(result: ProfileResult) -> dict[str, Any]:
    """The trace as a JSON object: {"traceEvents": [...], "displayTimeUnit", "otherData"}."""
    timeline = result.timeline
    if timeline is None:
        raise ValueError("this profile carries no timeline: save it with `profile --format json --pictures`")
    scale = 1e6 if timeline["units"] == "seconds" else 1.0  # to microseconds
    tracks = _Tracks()
    events: list[dict[str, Any]] = []

    def complete(pid: int, track: str, name: str, start: float, end: float, category: str,
                 args: dict[str, Any]) -> None:
        if end <= start:
            return
        tid = tracks.tid(pid, track, start, end)
        events.append({"name": name, "cat": category, "ph": "X", "ts": start * scale,
                       "dur": (end - start) * scale, "pid": pid, "tid": tid, "args": args})

    for index, track in enumerate(timeline["processors"]):
        tracks.tid(CPU, f"processor {index}", 0.0, 0.0)  # every processor gets a track
        for start, end, name, kind, location, tasks in track:
            complete(CPU, f"processor {index}", name, start, end, kind,
                     {"location": location, "tasks": tasks})
    for run in timeline["device"]:
        on = f"on #{run['on']}"
        for part, label in (("transfer_in", "δ* transfer in"), ("transfer_out", "δ† transfer out")):
            start, end = run[part]
            complete(TRANSFERS, "transfers", f"{on} {label}", start, end, "transfer",
                     {"location": run["location"], "regions": run["regions"], "cost": end - start})
        for number, phase in enumerate(run["phases"], start=1):
            kind = "kernel" if phase["parallel"] else "serial"
            complete(GPU, "kernels", f"{on} {kind} {number} ({phase['threads']:,} threads)",
                     phase["start"], phase["end"], "kernel",
                     {"location": run["location"], "work_groups": phase["work_groups"],
                      "rounds": phase["rounds"], "launch": phase["launch"]})
            for group, start, end in phase["groups"]:
                complete(GPU, f"work group {group}", f"{on} {kind} {number}: work group {group}",
                         start, end, "work-group", {"location": run["location"]})
            for start, end, count in phase["other_groups"]:
                complete(GPU, "other work groups", f"{on} {kind} {number}: {count:,} work groups",
                         start, end, "work-group", {"work_groups": count})
    for _, time, cpu, gpu in timeline["space"]:
        events.append({"name": "space (words)", "ph": "C", "ts": time * scale, "pid": CPU,
                       "args": {"CPU": cpu, "GPU": gpu}})
    names = {CPU: f"CPU (simulated, {timeline['schedule'].upper()}, P={timeline['procs']})",
             GPU: "GPU", TRANSFERS: "transfers"}
    metadata = []
    for pid, name in names.items():
        metadata.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        metadata.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                         "args": {"sort_index": pid}})
    units = ("seconds" if timeline["units"] == "seconds"
             else "abstract units (one unit is shown as one microsecond)")
    return {
        "traceEvents": metadata + tracks.metadata() + events,
        "displayTimeUnit": "ns",
        "otherData": {"program": result.file, "units": units, "work": result.work,
                      "span": result.span, "time": result.time,
                      "params": {k: str(v) for k, v in result.params.items()}},
    }
