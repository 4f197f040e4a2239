"""Exports of a profile: `--format json|csv|dot|trace` (graphs.render_*) and the timeline they
read (graphs.timeline)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest
from conftest import ROOT, run

from graphs import timeline as timeline_module
from graphs.analysis import ProfileResult, analyse
from graphs.costgraph import CostGraph, EdgeKind, NodeKind
from graphs.render_csv import CsvRenderer, neutralised
from graphs.render_dot import DotRenderer, picture_to_dot, quote
from graphs.render_trace import TraceRenderer
from graphs.renderers import RENDERERS
from graphs.schedule import schedule
from graphs.timeline import build_timeline, space_samples
from profiler.checker import check_program
from profiler.parser import parse


def profile(name: str, params: dict[str, int], procs: int = 2, policy: str = "1df"):
    source = (ROOT / "examples" / f"{name}.lg").read_text()
    evaluation = run(source, params)
    body = check_program(parse(source, f"examples/{name}.lg")).body
    result = analyse(evaluation, procs, policy, file=f"examples/{name}.lg", params=params,
                     body=body, source=source)
    return evaluation, result


def test_formats_are_registered():
    assert {"text", "json", "csv", "dot", "trace", "html"} <= set(RENDERERS)


def test_json_round_trips_with_timeline_and_cost_graph():
    _, result = profile("zipmul", {"n": 16})
    data = json.loads(result.dumps())
    assert {"timeline", "cost_graph", "formulas"} <= set(data)
    assert data["formulas"] is None
    again = ProfileResult.from_json(data)
    assert again.to_json() == data
    assert again.timeline == result.timeline and again.cost_graph == result.cost_graph
    old = {k: v for k, v in data.items() if k not in ("timeline", "cost_graph", "formulas")}
    assert ProfileResult.from_json(old).timeline is None  # a profile saved before them


def test_csv_rows():
    _, result = profile("zipmul", {"n": 16})
    rows = list(csv.DictReader(io.StringIO(CsvRenderer().render(result))))
    assert list(rows[0]) == ["section", "name", "location", "parent", "measure", "value"]

    def value(section, measure, name=None):
        (row,) = [r for r in rows if r["section"] == section and r["measure"] == measure
                  and (name is None or r["name"] == name)]
        return row["value"]

    assert float(value("summary", "work")) == result.work
    assert float(value("on", "kernel")) == result.on[0].kernel
    assert value("param", "value", "n") == "16"
    assert float(value("centre", "work", "gray")) == result.cost_centres[0].work
    roots = [r for r in rows if r["section"] == "source" and r["parent"] == ""
             and r["measure"] == "inclusive"]
    assert len(roots) == 1 and float(roots[0]["value"]) == result.spans[0].inclusive
    children = [r for r in rows if r["section"] == "source" and r["parent"] == roots[0]["location"]]
    assert children


def test_dot_structure():
    evaluation, result = profile("strided", {"n": 64, "s": 32})
    text = DotRenderer(expand_gpu=True).render(result)
    assert text.startswith("digraph cost_graph {") and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")
    assert len(re.findall(r"subgraph cluster_device_box_\d+ \{", text)) == len(evaluation.ons)
    assert 'class="critical-path"' in text and 'class="bank-conflict"' in text
    for line in text.splitlines()[3:-1]:  # each statement ends as DOT wants
        assert line.rstrip().endswith((";", "{", "}")), line


def test_dot_quotes_any_text():
    assert quote('say "hi"\\n\nnow') == '"say \\"hi\\"\\\\n\\nnow"'
    picture = {"work": 1, "span": 1, "nodes": 2, "edges": 1, "detail": "every node",
               "chain": [{"t": "block", "nodes": 2, "work": 1, "span": 1, "critical": True,
                          "boxes": 0, "location": "1:1", "text": "", "label": '"}; evil -> x ['}]}
    text = picture_to_dot(picture, title='a "title"')
    assert '\\"}; evil -> x [' in text and 'a \\"title\\"' in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz is not installed")
def test_graphviz_reads_the_dot(tmp_path):
    _, result = profile("nbody", {"n": 8})
    out = subprocess.run(["dot", "-Tsvg"], input=DotRenderer(True).render(result),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "<svg" in out.stdout, out.stderr


def complete_events(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def track_names(trace):
    names = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    return names


@pytest.mark.parametrize("procs", [1, 3])
def test_trace_tracks(procs):
    evaluation, result = profile("zipmul", {"n": 300}, procs=procs)
    trace = json.loads(TraceRenderer().render(result))
    names = track_names(trace)
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert processes[1].startswith("CPU") and processes[2] == "GPU"
    assert processes[3] == "transfers"
    cpu = sorted(name for (pid, _), name in names.items() if pid == 1)
    assert cpu == [f"processor {i}" for i in range(procs)]
    groups = [name for (pid, _), name in names.items() if pid == 2 and "work group" in name]
    on = result.on[0]
    assert len(groups) == on.work_groups == 2  # 300 threads, 256 to a work group
    assert [name for (pid, _), name in names.items() if pid == 3] == ["transfers"]
    events = complete_events(trace)
    transfers = [e for e in events if e["pid"] == 3]
    assert [e["dur"] for e in transfers] == [on.transfer_in, on.transfer_out]
    # The CPU tracks hold every task: their durations add up to the work.
    assert sum(e["dur"] for e in events if e["pid"] == 1) == pytest.approx(result.work)
    assert max(e["ts"] + e["dur"] for e in events) == pytest.approx(result.time)
    by_track = defaultdict(list)
    for e in events:
        assert e["dur"] >= 0
        by_track[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for intervals in by_track.values():  # complete events on one track never overlap
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
            assert start >= end - 1e-9
    assert any(e["ph"] == "C" for e in trace["traceEvents"])


@pytest.mark.parametrize("limit", [300, 40])
def test_timeline_is_bounded_and_keeps_the_peak(monkeypatch, limit):
    monkeypatch.setattr(timeline_module, "MAX_INTERVALS", limit)
    source = (ROOT / "examples" / "dc_sum.lg").read_text()
    graph = run(source, {"n": 128}).graph
    result = schedule(graph, 4, "bf")
    timeline = build_timeline(graph, result)
    assert timeline["coarsened"]
    tracks = timeline["processors"]
    assert sum(len(track) for track in tracks) <= limit + 2 * 4
    assert sum(i[5] for track in tracks for i in track) == len(result.intervals)
    busy = sum(i[1] - i[0] for track in tracks for i in track)
    if limit == 300:  # gathered without hiding idle time: the tasks' time is the work
        assert busy == graph.work()
    else:
        assert busy >= graph.work()
    samples = space_samples(result, 50)
    assert len(samples) <= 51
    assert max(s[2] + s[3] for s in samples) == result.peak_space  # eq. 9, as the report says


@pytest.mark.parametrize("limit", [2, 3, 7, 50])
def test_space_samples_keep_each_windows_first_peak(limit):
    """Past `limit` entries, each window of the space curve keeps its first entry of largest
    total space (eq. 9's maxima), and the curve's end."""
    source = (ROOT / "examples" / "dc_sum.lg").read_text()
    result = schedule(run(source, {"n": 64}).graph, 2, "1df")
    everything = space_samples(result, 10**9)
    size = math.ceil(len(everything) / limit)
    expected = [max(everything[first:first + size], key=lambda entry: entry[2] + entry[3])
                for first in range(0, len(everything), size)]
    if expected[-1] != everything[-1]:
        expected.append(everything[-1])
    assert len(everything) > limit
    assert space_samples(result, limit) == expected


def test_a_timeline_with_weights_past_a_doubles_range():
    """Times too large for doubles: the timeline joins a processor's tasks in Python numbers."""
    graph = CostGraph()
    current = graph.node()
    for weight in (1, 10**400, 2):
        current = graph.step(current, weight, EdgeKind.OP, NodeKind.POINT)
    graph.finish(current)
    timeline = build_timeline(graph, schedule(graph, 2, "1df"))
    assert timeline["processors"][0] == [[0, 10**400 + 3, "op", "op", "?", 3]]


def hetprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_profile_formats_from_the_command_line(tmp_path):
    out = tmp_path / "z.trace.json"
    result = hetprof("profile", "examples/zipmul.lg", "--param", "n=32", "--format", "trace",
                     "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert complete_events(json.loads(out.read_text()))
    result = hetprof("profile", "examples/dc_sum.lg", "--param", "n=8", "--format", "csv")
    assert result.returncode == 0 and result.stdout.startswith("section,name,")


def test_csv_cells_that_start_like_a_formula_are_neutralised():
    # Cost-centre names come from the program: a spreadsheet must not run them (OWASP).
    source = ('letregion r in\n(profile "=HYPERLINK(1)" (1 at r)) + '
              '(profile "@SUM" (profile "+x" (profile "-2" (2 at r)))) at r\n')
    evaluation = run(source)
    result = analyse(evaluation, 2, "1df", file="=cmd.lg", body=check_program(
        parse(source, "=cmd.lg")).body, source=source)
    rows = list(csv.reader(io.StringIO(CsvRenderer().render(result))))
    names = {row[1] for row in rows if row[0] == "centre"}
    assert names == {"'=HYPERLINK(1)", "'@SUM", "'+x", "'-2"}
    assert all(row[1] == "'=cmd.lg" for row in rows if row[0] == "summary")
    text_cells = [cell for row in rows[1:] for cell in row[:5]]
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in text_cells)
    # Numbers keep their sign: only text is quoted.
    assert neutralised(-3.5) == -3.5 and neutralised("-3.5") == "'-3.5"
    assert neutralised("work") == "work"
