"""The interchange formats of `hetprof profile`: speedscope (py-spy's and pyinstrument's viewer)
and Cilkscale's CSV, checked against the profile they render."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import ROOT, run

from cli.arguments import PROFILE_FORMATS
from graphs.analysis import analyse, graph_measures
from graphs.render_cilkscale import CilkscaleRenderer
from graphs.render_speedscope import SpeedscopeRenderer
from graphs.renderers import RENDERERS
from profiler.checker import check_program
from profiler.parser import parse


def profile(name: str, n: int = 64):
    source = (ROOT / "examples" / f"{name}.lg").read_text()
    checked = check_program(parse(source, f"examples/{name}.lg"))
    evaluation = run(source, {"n": n})
    return analyse(evaluation, 2, "1df", file=f"examples/{name}.lg", params={"n": n},
                   body=checked.body, source=source)


@pytest.mark.parametrize("name", ["zipmul", "dot", "dc_sum"])
def test_speedscope_events_nest_and_add_up_to_the_work(name):
    result = profile(name)
    data = json.loads(SpeedscopeRenderer().render(result))
    assert data["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    (evented,) = data["profiles"]
    frames = data["shared"]["frames"]
    stack: list[int] = []
    last = 0.0
    for event in evented["events"]:
        assert 0 <= event["frame"] < len(frames)
        assert event["at"] >= last  # events in order
        last = event["at"]
        if event["type"] == "O":
            stack.append(event["frame"])
        else:
            assert stack.pop() == event["frame"]  # closes what it opened, innermost first
    assert not stack
    assert evented["endValue"] == pytest.approx(sum(s.inclusive for s in result.spans))
    assert evented["unit"] == "none"
    assert frames[0]["file"] == f"examples/{name}.lg" and frames[0]["line"] >= 1


def test_cilkscale_rows_are_the_program_and_each_cost_centre():
    result = profile("zipmul")
    rows = list(csv.reader(io.StringIO(CilkscaleRenderer().render(result))))
    assert rows[0] == ["tag", "work", "span", "parallelism", "burdened_span",
                       "burdened_parallelism"]
    program = rows[1]
    assert program[0] == ""
    assert float(program[1]) == result.work and float(program[2]) == result.span
    assert float(program[3]) == pytest.approx(result.work / result.span)
    gray = next(r for r in rows[2:] if r[0] == "gray")
    centre = next(c for c in result.cost_centres if c.name == "gray")
    assert float(gray[1]) == centre.work and float(gray[2]) == centre.span
    assert len(rows) == 2 + len(result.cost_centres)


def test_the_command_line_offers_every_renderer():
    assert sorted(PROFILE_FORMATS) == sorted(RENDERERS)


def test_a_profile_with_its_graph_measured_elsewhere_is_the_same():
    """`analyse`'s hooks (what `profile --format html` uses to draw and measure beside it):
    `space_made` is handed the timeline's own space samples before the timeline is made, and
    work, span and span tree given by `measured` make the profile the one analysed here."""
    source = (ROOT / "examples" / "dot.lg").read_text()
    checked = check_program(parse(source, "examples/dot.lg"))
    evaluation = run(source, {"n": 40})
    here = analyse(evaluation, 2, "1df", file="examples/dot.lg", params={"n": 40},
                   body=checked.body, source=source)
    seen: list[str] = []
    measures = graph_measures(run(source, {"n": 40}), checked.body, source)
    hooked = analyse(evaluation, 2, "1df", file="examples/dot.lg", params={"n": 40},
                     body=checked.body, source=source,
                     space_made=lambda space: seen.append(json.dumps(space)),
                     timeline_made=lambda timeline: seen.append(json.dumps(timeline["space"])),
                     measured=lambda: measures)
    assert len(seen) == 2 and seen[0] == seen[1] and json.loads(seen[0])
    assert (hooked.work, hooked.span) == (here.work, here.span) and here.work > here.span > 0
    assert hooked.spans and hooked.spans == here.spans
    assert hooked == here
