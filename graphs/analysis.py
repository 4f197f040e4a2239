"""From an evaluation to a profile: work, span, time and space under a schedule (§6.3, §6.7),
costs per `on`, per cost centre and per source span.

`ProfileResult` is the serialisable object between analysis and rendering (to_json/from_json), so
a profile can be saved and rendered again without re-running the program.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from graphs.costgraph import (
    CostGraph,
    EdgeKind,
    NodeKind,
    cyclic_gc_paused,
    longest_path_of_edges,
)
from graphs.numbers import json_text
from graphs.picture import cost_picture
from graphs.schedule import Policy, ScheduleResult, schedule
from graphs.semantics.explicit import Evaluation
from graphs.timeline import Timeline, build_timeline, space_samples
from profiler.errors import SavedProfileError
from profiler.syntax import Expr, Span, World, children

SCHEMA_VERSION = 1
"""The version of `ProfileResult`'s JSON (its `schema_version`): raised when a field changes its
meaning or goes, so that `--load` refuses a profile it would misread."""


@dataclass(frozen=True, slots=True)
class OnCost:
    """One `on`: the parts of its device-box edge and what the device box counted."""

    location: str
    grow: float
    transfer_in: float
    kernel: float
    transfer_out: float
    merge: float
    total: float
    bank_conflicts: int
    broadcasts: int
    multicasts: int
    threads: int
    work_groups: int
    rounds: int
    max_conflict_degree: int
    gpu_work: float
    pushed_words: int
    gpu_words: int
    regions: list[str]
    notes: list[str]


@dataclass(frozen=True, slots=True)
class CentreCost:
    """A cost centre `profile "name" e` (Sansom and Peyton Jones 1995): what e cost alone."""

    name: str
    work: float
    span: float
    time: float
    space: int
    gpu_time: float
    edges: int


@dataclass(frozen=True, slots=True)
class SpanCost:
    """A node of the source tree with its cost: `inclusive` counts its sub-expressions too."""

    location: str
    label: str
    exclusive: float
    inclusive: float
    children: list[SpanCost]


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """Everything `hetprof profile` reports, in the program's units."""

    file: str
    params: dict[str, int]
    value: str
    units: str
    gpu_mode: str
    procs: int
    schedule: str
    work: float
    span: float
    parallelism: float
    time: float
    paper_time: float  # work / P, §7.1's division, for comparison with the real schedule
    space: dict[str, int]  # cpu, gpu, peak
    on: list[OnCost]
    cost_centres: list[CentreCost]
    spans: list[SpanCost]
    nodes: int
    edges: int
    regions: dict[str, int]  # the outermost regions' final sizes (ap) in words
    steps: int
    profile_name: str
    seconds_per_unit: dict[str, float | None] = field(default_factory=dict)
    # For pictures and exports (JSON data, see graphs.timeline and graphs.draw); None when the
    # profile was made without them.
    timeline: dict[str, Any] | None = None
    cost_graph: dict[str, Any] | None = None
    # Symbolic formulas (name -> formula text), filled by symbolic profiling when it runs; the
    # HTML report shows them when present.
    formulas: dict[str, str] | None = None
    # The processors the schedule ran on where fewer than `procs`: the graph's width, beyond
    # which processors change nothing (graphs.schedule.WIDTH_CHECKED); None where all ran.
    procs_used: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"schema_version": SCHEMA_VERSION, **asdict(self)}
        if self.procs_used is None:
            del data["procs_used"]  # written only where the processors were capped
        return data

    def dumps(self) -> str:
        return json_text(self.to_json(), default=str)

    @staticmethod
    def from_json(data: dict[str, Any]) -> ProfileResult:
        """The result `to_json` wrote (a profile saved before `schema_version` has none)."""
        data = dict(data)
        version = data.pop("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise SavedProfileError(f"the profile was saved with schema_version {version!r}, and "
                                    f"this hetprof reads schema_version {SCHEMA_VERSION}: "
                                    "profile the program again")
        data["on"] = [OnCost(**o) for o in data["on"]]
        data["cost_centres"] = [CentreCost(**c) for c in data["cost_centres"]]
        data["spans"] = [_span_from_json(s) for s in data["spans"]]
        return ProfileResult(**data)


def load_result(text: str, where: str) -> ProfileResult:
    """A profile saved by `hetprof profile --format json` (`where` names it in errors): a
    SavedProfileError, never a traceback, for any other text, another schema version, or a JSON
    that lacks a field or has one of the wrong kind."""
    def refuse(why: str) -> SavedProfileError:
        return SavedProfileError(f"{where}: {why}; save one with `hetprof profile FILE.lg "
                                 "--format json -o PROFILE.json`")

    try:
        data = json.loads(text)
    except RecursionError:
        raise refuse("not a saved hetprof profile (JSON nested too deeply)") from None
    except ValueError as error:
        raise refuse(f"not a saved hetprof profile (not JSON: {error})") from None
    if not isinstance(data, dict):
        raise refuse("not a saved hetprof profile (not a JSON object)")
    if "symbolic" in data and "schema_version" not in data:
        raise refuse("a symbolic profile (formulas), which --load cannot render")
    if "schema_version" not in data:
        raise refuse("not a saved hetprof profile (it has no schema_version)")
    if data["schema_version"] != SCHEMA_VERSION:
        raise refuse(f"saved with schema_version {data['schema_version']!r}, and this hetprof "
                     f"reads schema_version {SCHEMA_VERSION}: profile the program again")
    wrong = [name for name in ("work", "span", "parallelism", "time", "paper_time")
             if not isinstance(data.get(name), int | float) or isinstance(data[name], bool)]
    if wrong:
        raise refuse(f"not a saved hetprof profile ({', '.join(wrong)}: not a number)")
    try:
        result = ProfileResult.from_json(data)
        result.to_json()  # every nested field is read again here: a wrong kind shows now
    except SavedProfileError as error:
        raise refuse(error.message) from None
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise refuse(f"not a saved hetprof profile (a field is missing or of the wrong kind: "
                     f"{error})") from None
    return result


def _span_from_json(data: dict[str, Any]) -> SpanCost:
    return SpanCost(data["location"], data["label"], data["exclusive"], data["inclusive"],
                    [_span_from_json(c) for c in data["children"]])


def analyse(evaluation: Evaluation, procs: int = 2, policy: Policy | str = Policy.DEPTH_FIRST,
            file: str = "<input>", params: dict[str, int] | None = None,
            body: Expr | None = None, source: str = "", units: str = "abstract",
            profile_name: str = "",
            seconds_per_unit: dict[str, float | None] | None = None,
            pictures: bool = True, graph_picture: bool = True,
            timeline_picture: bool = True,
            timeline_made: Callable[[Timeline], object] | None = None,
            space_made: Callable[[list[list[float]]], object] | None = None,
            measured: Callable[[], GraphMeasures] | None = None) -> ProfileResult:
    """Work, span, time(e, ⊴) and space(⊴) (eqs. 5, 8, 9) of an evaluation, and attribution.

    With `pictures`, the result also carries the schedule's timeline (unless not
    `timeline_picture`: the DOT picture draws none) and a summary of the cost graph (unless not
    `graph_picture`: a timeline's plot or trace needs none), both bounded in size, for
    `hetprof profile --format dot|trace|html`. `space_made(samples)` is called as soon as the
    timeline's space samples are made (before the rest of the timeline), `timeline_made(timeline)`
    as soon as the timeline is, both before the rest is analysed (a command can draw them
    meanwhile). `measured()`, where given, is what `graph_measures` would make of the evaluation
    (computed elsewhere: `hetprof profile --format html` has a child compute it while this
    process schedules), asked for once the schedule and its timeline are made."""
    # Millions of small objects live through the analysis (see cyclic_gc_paused).
    with cyclic_gc_paused():
        graph = evaluation.graph
        # The schedule's steps and intervals are read by the timeline and by cost centres' times
        # only.
        timeline_picture = pictures and timeline_picture
        graph_picture = pictures and graph_picture
        result: ScheduleResult = schedule(graph, procs, policy,
                                          record=timeline_picture or graph.edge_centres.any(),
                                          keep_steps=False)

        def describe(span: Span) -> str:
            return snippet(source, span, 32) if source else ""

        timeline = cost_graph = None
        if timeline_picture:
            space = space_samples(result)
            if space_made is not None:
                space_made(space)
            timeline = build_timeline(graph, result, describe, units, space)
            if timeline_made is not None:
                timeline_made(timeline)
        # The pictures' critical path needs each node's best in-edge: found in the same pass.
        work, span, spans = (measured() if measured is not None else
                             graph_measures(evaluation, body, source, graph_picture))
        ons = [_on_cost(record) for record in evaluation.ons]
        centres = _centres(evaluation, result)
        regions = {r.label: r.ap for r in evaluation.regions.values()}
        if graph_picture:
            cost_graph = cost_picture(graph, describe)
        return ProfileResult(
            file=file,
            params=dict(params or {}),
            value=evaluation.render_value(),
            units=units,
            gpu_mode=evaluation.gpu_mode,
            procs=procs,
            procs_used=result.procs if result.procs < procs else None,
            schedule=Policy(policy).value,
            work=work,
            span=span,
            parallelism=work / span if span else 1.0,
            time=result.time,
            paper_time=work / procs,
            space={"cpu": result.peak_space_cpu, "gpu": result.peak_space_gpu,
                   "peak": result.peak_space},
            on=ons,
            cost_centres=centres,
            spans=spans,
            nodes=graph.number_of_nodes(),
            edges=graph.number_of_edges(),
            regions=regions,
            steps=evaluation.steps,
            profile_name=profile_name,
            seconds_per_unit=dict(seconds_per_unit or {}),
            timeline=timeline,
            cost_graph=cost_graph,
        )


class GraphMeasures(NamedTuple):
    """What a profile reads of the cost graph alone, whatever the schedule: work (eq. 5's
    W), span (the longest path) and the costs by source span (`_span_tree`)."""

    work: float
    span: float
    spans: list[SpanCost]


def graph_measures(evaluation: Evaluation, body: Expr | None, source: str,
                   best_edges: bool = False) -> GraphMeasures:
    """The evaluation's `GraphMeasures` (no span tree without the program's `body`); with
    `best_edges`, the longest path's pass also finds each node's best in-edge (which the cost
    graph's picture reads)."""
    graph = evaluation.graph
    return GraphMeasures(graph.work(), graph.longest_path(best_edges=best_edges).length,
                         _span_tree(evaluation, body, source) if body is not None else [])


def location(span: Span | None) -> str:
    if span is None:
        return "?"
    return f"{span.file}:{span.line}:{span.column}"


def _on_cost(record) -> OnCost:
    info, box = record.info, record.box
    kernels = [p for p in box.phases if p.parallel]
    return OnCost(
        location=location(record.span),
        grow=info.grow,
        transfer_in=info.transfer_in,
        kernel=info.kernel,
        transfer_out=info.transfer_out,
        merge=info.merge,
        total=info.total,
        bank_conflicts=box.conflicts,
        broadcasts=box.broadcasts,
        multicasts=box.multicasts,
        threads=sum(p.threads for p in kernels),
        work_groups=sum(p.work_groups for p in kernels),
        rounds=max((p.rounds for p in kernels), default=0),
        max_conflict_degree=max((p.conflict_degree_max for p in box.phases), default=1),
        gpu_work=box.work,
        pushed_words=record.pushed_words,
        gpu_words=record.gpu_words,
        regions=list(info.regions),
        notes=list(info.notes),
    )


def centre_times(evaluation: Evaluation, result: ScheduleResult) -> dict[str, float]:
    """Each cost centre's time under a schedule: from the start of its first edge to the end of
    its last (eq. 5's steps between them)."""
    graph = evaluation.graph
    edge_centres = graph.edge_centres
    spans: dict[str, tuple[float, float]] = {}
    tasks = result.tasks
    if tasks is None or not edge_centres.any():
        return {}
    codes, centres = edge_centres.codes, edge_centres.values  # edge e's: centres[codes[e]]
    # By processor, each in the order it ran its tasks (the order of ScheduleResult.intervals).
    for processor in range(len(tasks.edges)):
        for start, end, e in tasks.run(processor):
            for name in centres[codes[e]]:
                first, last = spans.get(name, (start, end))
                spans[name] = (min(first, start), max(last, end))
    return {name: last - first for name, (first, last) in spans.items()}


def _centres(evaluation: Evaluation, result: ScheduleResult) -> list[CentreCost]:
    """Inclusive costs of each cost centre: its edges' work, the longest path through them, the
    time from its first edge's start to its last edge's end in the schedule, and the words it
    allocated."""
    graph = evaluation.graph
    edge_centres = graph.edge_centres
    # Edges in networkx's adjacency order, as the sums below ran before (floating point).
    order = graph.adjacency().order
    marked = edge_centres.true_at(order)
    names: list[str] = []
    for centres in edge_centres.at(marked):
        for name in centres:
            if name not in names:
                names.append(name)
    device_only: dict[str, float] = {}
    for record in evaluation.ons:
        # A phase's time is in the GPU model's units; the kernel's, in the profile's (a
        # calibrated profile's seconds): the box's phases scale as its kernel does.
        box_time = record.box.time
        scale = record.info.kernel / box_time if box_time else 1.0
        for phase in record.box.phases:
            for name in phase.centres:
                if name not in record.centres:
                    device_only[name] = device_only.get(name, 0.0) + phase.time * scale
    times = centre_times(evaluation, result) if names else {}
    marked_nodes = graph.node_centres.true_at()
    sources, targets = graph.edge_source, graph.edge_target
    marked_centres = list(edge_centres.at(marked))
    marked_weights = list(graph.edge_weight.at(marked))
    marked_kinds = list(graph.edge_kind.at(marked))
    node_centres = list(graph.node_centres.at(marked_nodes))
    node_kinds = list(graph.node_kind.at(marked_nodes))
    node_spaces = list(graph.node_space.at(marked_nodes))
    costs = []
    for name in names:
        edges = []
        work = 0.0
        gpu_time = 0.0
        for e, centres, weight, kind in zip(marked, marked_centres, marked_weights, marked_kinds,
                                            strict=True):
            if name not in centres:
                continue
            edges.append((sources[e], targets[e], weight))
            work += weight
            if kind is EdgeKind.DEVICE_BOX:
                gpu_time += graph.edge_extra[e]["box"].kernel
        space = sum(delta for centres, kind, changes in zip(node_centres, node_kinds, node_spaces,
                                                            strict=True)
                    if name in centres and kind is NodeKind.WRITE
                    for world, delta in changes if world is World.CPU)
        space += sum(r.gpu_words for r in evaluation.ons if name in r.centres)
        costs.append(CentreCost(name, work, longest_path_of_edges(edges),
                                times.get(name, 0.0), space, gpu_time, len(edges)))
    for name, time in device_only.items():
        if name in names:
            continue
        # A centre inside an `on`: its cost is the device time of the phases (kernels) it covers.
        space = sum(r.gpu_words for r in evaluation.ons
                    if any(name in p.centres for p in r.box.phases))
        costs.append(CentreCost(name, time, time, time, space, time, 0))
    return costs


def snippet(source: str, span: Span, width: int = 40) -> str:
    """The first line of a span's source text, shortened to `width` characters."""
    lines = source.splitlines()
    if not 1 <= span.line <= len(lines):
        return ""
    line = lines[span.line - 1]
    end = span.end_column - 1 if span.end_line == span.line else len(line)
    text = " ".join(line[span.column - 1:end].split())
    if span.end_line != span.line:
        text += " ..."
    return text if len(text) <= width else text[: width - 3] + "..."


def _span_tree(evaluation: Evaluation, body: Expr, source: str) -> list[SpanCost]:
    """Costs by source span: exclusive (edges made by that node's rule) and inclusive (its
    sub-expressions too), lexically, like a profiler's tree by line."""
    graph = evaluation.graph
    # By source position: the sum of its edges' weights (in networkx's adjacency order, as the
    # sums ran before: floating point).
    exclusive = graph.weight_totals([
        None if span is None else (span.line, span.column, span.end_line, span.end_column)
        for span in graph.edge_span.values])
    if exclusive is None:
        exclusive = _span_totals(graph)

    def build(e: Expr) -> SpanCost | None:
        kids = [k for k in (build(c) for c in children(e)) if k is not None]
        key = (e.span.line, e.span.column, e.span.end_line, e.span.end_column)
        own = exclusive.pop(key, 0.0)
        inclusive = own + sum(k.inclusive for k in kids)
        if inclusive == 0:
            return None
        if own == 0 and len(kids) == 1:
            return kids[0]
        label = snippet(source, e.span) if source else type(e).__name__
        return SpanCost(location(e.span), label or type(e).__name__, own, inclusive, kids)

    root = build(body)
    return [root] if root else []


def _span_totals(graph: CostGraph) -> dict[Hashable, float]:
    """`CostGraph.weight_totals` by source position, one edge at a time, for weights it leaves
    to its caller."""
    order = graph.adjacency().order
    totals: dict[tuple, list[float]] = {}  # by source position: [the sum of its edges' weights]
    by_span: dict[int, list[float]] = {}  # by id(span): the evaluator shares one per expression
    for span, weight in zip(graph.edge_span.at(order), graph.edge_weight.at(order), strict=True):
        if span is None:
            continue
        total = by_span.get(id(span))
        if total is None:
            key = (span.line, span.column, span.end_line, span.end_column)
            total = by_span[id(span)] = totals.setdefault(key, [0.0])
        total[0] += weight
    return {key: total[0] for key, total in totals.items()}
