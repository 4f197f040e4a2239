"""Pictures: the cost-graph summary and drawing (graphs.draw), the plots (graphs.plots), the
placements (graphs.placement), the lock-step record of device boxes, and the picture commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import networkx as nx
import pytest
from conftest import EXAMPLES, ROOT, run

from graphs import plots
from graphs.analysis import analyse, snippet
from graphs.costgraph import CostGraph, EdgeKind, NodeKind
from graphs.crossings import interpolated_break_even as break_even
from graphs.draw import SUMMARY_FONT, draw_cost_graph, label_size
from graphs.picture import cost_picture, count_elements, critical_path, element_label, walk
from graphs.placement import SizePoint, cpu_placement, cpu_program, has_on
from graphs.render_dot import graphviz_picture
from graphs.semantics.explicit import evaluate
from profiler.checker import check_program
from profiler.parser import parse
from profiler.syntax import On, children

SMALL = {"matvec": {"rows": 3, "cols": 4}, "strided": {"n": 64, "s": 32}, "dc_sum": {"n": 16}}
SVG = "{http://www.w3.org/2000/svg}"


def example(name: str):
    """(source, checked program, evaluation) of an example at a small size."""
    source = (ROOT / "examples" / f"{name}.lg").read_text()
    params = SMALL.get(name, {"n": 8})
    checked = check_program(parse(source, f"examples/{name}.lg"))
    return source, checked, run(source, params)


def count_ons(expr) -> int:
    return int(isinstance(expr, On)) + sum(count_ons(child) for child in children(expr))


def chain_totals(chain) -> tuple[float, float]:
    """Work and span of a summary chain from its elements and edges alone."""
    work = sum(item["weight"] if item["t"] == "edge" else item["work"] for item in chain)
    span = sum(item["weight"] if item["t"] == "edge" else item["span"] for item in chain)
    return work, span


def svg_ids(data: bytes) -> list[str]:
    root = ElementTree.fromstring(data)
    return [element.get("id") for element in root.iter() if element.get("id")]


# -- the summary --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_summary_keeps_work_span_and_every_device_box(path):
    source, checked, evaluation = example(path.stem)
    graph = evaluation.graph
    for max_nodes in (60, 12, 5):
        picture = cost_picture(graph, lambda span: snippet(source, span), max_nodes)
        work, span = chain_totals(picture["chain"])
        assert work == pytest.approx(graph.work()) and picture["work"] == pytest.approx(work)
        assert span == pytest.approx(graph.span())
        boxes = [item for item in walk(picture["chain"]) if item["t"] == "device-box"]
        assert len(boxes) == count_ons(checked.body) == len(evaluation.ons)
        assert any(item.get("critical") for item in picture["chain"])
        json.dumps(picture)  # plain JSON data


def test_critical_path_weighs_the_span():
    _, _, evaluation = example("dc_sum")
    graph = evaluation.graph
    nodes, edges = critical_path(graph)
    assert graph.source in nodes and graph.sink in nodes
    assert sum(graph.graph.edges[e]["weight"] for e in edges) == graph.span()
    assert len(edges) == len(nodes) - 1


def networkx_critical_path(graph: CostGraph) -> tuple[set[int], set[tuple[int, int]]]:
    """The critical path as networkx finds it: the longest path, then the shortest way on to the
    sink where it stops short of it."""
    path = nx.dag_longest_path(graph.graph, weight="weight", default_weight=0)
    if path[-1] != graph.sink:
        path += nx.shortest_path(graph.graph, path[-1], graph.sink)[1:]
    return set(path), set(zip(path, path[1:], strict=False))


def tied_graph(last_weight: float) -> CostGraph:
    """Two equally long branches (one of them a ⊗ of two equal threads), then a ⊗ of two
    branches of weight `last_weight` before the sink."""
    graph = CostGraph()
    left = graph.step(graph.node(), 1, EdgeKind.WRITE, NodeKind.WRITE)
    inner = graph.par(graph.step(None, 1, EdgeKind.READ, NodeKind.READ),
                      graph.step(None, 1, EdgeKind.READ, NodeKind.READ), weight=0)
    middle = graph.par(left, graph.seq(inner, graph.node(), 0))
    last = graph.par(graph.step(None, last_weight, EdgeKind.OP, NodeKind.POINT),
                     graph.step(None, last_weight, EdgeKind.OP, NodeKind.POINT), last_weight)
    graph.finish(graph.seq(middle, last, last_weight))
    graph.self_check()
    return graph


@pytest.mark.parametrize("last_weight", [0, 1, 2.5])
def test_critical_path_is_the_one_networkx_finds(last_weight):
    graph = tied_graph(last_weight)
    assert critical_path(graph) == networkx_critical_path(graph)


@pytest.mark.parametrize("name", ["dc_sum", "dot", "nbody", "strided"])
def test_critical_path_of_an_example_is_the_one_networkx_finds(name):
    graph = example(name)[2].graph
    assert critical_path(graph) == networkx_critical_path(graph)


def test_identical_threads_become_one_node_with_their_multiplicity():
    graph = CostGraph()
    branches = [graph.step(graph.node(), 1, EdgeKind.WRITE, NodeKind.WRITE) for _ in range(5)]
    graph.finish(graph.par_all(branches))
    graph.self_check()
    (threads,) = cost_picture(graph)["chain"]
    assert threads["t"] == "threads" and threads["count"] == 5
    assert threads["work_each"] == [1, 1] and threads["work"] == 5 + 4 * 4
    assert threads["span"] == graph.span() == 1 + 2 * 3  # 3 levels of ⊗, each fork and join


def test_a_parmap_is_one_node_at_any_size():
    source = "letregion r in parmap (lambda i: int r [r]. i + 1 at r) (iota n at r) at r"
    program = "param n : int = 4\n" + source
    for n in (4, 300):
        picture = cost_picture(run(program, {"n": n}).graph)
        counts = sorted(item["count"] for item in walk(picture["chain"])
                        if item["t"] == "threads")
        assert counts == [n, n]  # iota's writes and the parmap's bodies
        assert picture["detail"] == "every node"


def test_a_pair_of_different_branches_stays_a_fork_and_join():
    evaluation = run("letregion r in fst (1 || 2 + 3 at r)")
    (par,) = [item for item in cost_picture(evaluation.graph)["chain"] if item["t"] == "par"]
    assert len(par["branches"]) == 2 and par["threads"] == 2


def test_large_graphs_are_summarised():
    source = (ROOT / "examples" / "dc_sum.lg").read_text()
    graph = run(source, {"n": 512}).graph
    picture = cost_picture(graph, max_nodes=40)
    assert graph.graph.number_of_nodes() > 20_000
    assert count_elements(picture["chain"]) <= 40
    assert "collapsed" in picture["detail"]
    assert chain_totals(picture["chain"])[0] == pytest.approx(graph.work())


# -- the drawing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_draws_to_png_and_svg(path):
    source, checked, evaluation = example(path.stem)
    picture = cost_picture(evaluation.graph, lambda span: snippet(source, span))
    png = draw_cost_graph(picture, "png", title=path.name)
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    svg = draw_cost_graph(picture, "svg", expand_gpu=True, title=path.name)
    ids = svg_ids(svg)
    boxes = [i for i in ids if i.startswith("device-box-")]
    assert len(boxes) == count_ons(checked.body)
    assert any(i.startswith("critical-path") for i in ids)
    assert path.name in svg.decode()
    if boxes:
        assert any(i.startswith("warp-box-") for i in ids)


def test_bank_conflicts_are_highlighted_only_where_they_happen():
    source = (ROOT / "examples" / "strided.lg").read_text()
    for stride, conflicts in ((32, True), (1, False)):
        picture = cost_picture(run(source, {"n": 64, "s": stride}).graph)
        ids = svg_ids(draw_cost_graph(picture, "svg", expand_gpu=True))
        assert any(i.startswith("bank-conflict-") for i in ids) is conflicts


def test_lockstep_record_adds_up_to_the_group_time():
    _, _, evaluation = example("zipmul")
    (record,) = evaluation.ons
    kernel = next(p for p in record.box.phases if p.parallel)
    steps = kernel.lockstep[0]
    assert len(steps) == kernel.steps
    assert sum(s.weight for s in steps) == pytest.approx(kernel.group_times[0])
    assert kernel.round_times and sum(kernel.round_times) + kernel.launch == kernel.time
    _, _, strided = example("strided")
    degrees = [s.degree for p in strided.ons[0].box.phases for g in p.lockstep for s in g
               if s.conflicts]
    assert degrees and max(degrees) == 32


# -- placements ---------------------------------------------------------------------------------


def test_cpu_placement_is_zipmul_cpu():
    gpu = check_program(parse((ROOT / "examples" / "zipmul.lg").read_text(), "zipmul.lg"))
    cpu_by_hand = check_program(parse((ROOT / "examples" / "zipmul_cpu.lg").read_text(), "c.lg"))
    cpu = cpu_program(gpu)
    assert has_on(gpu.body) and not has_on(cpu.body)
    assert count_ons(gpu.body) == 1  # the original AST is not changed
    a, b = evaluate(cpu, {"n": 16}), evaluate(cpu_by_hand, {"n": 16})
    assert a.render_value() == b.render_value()
    assert (a.graph.work(), a.graph.span()) == (b.graph.work(), b.graph.span())
    assert cpu_placement(cpu_by_hand.body) == cpu_by_hand.body  # nothing to remove


def test_break_even():
    points = [SizePoint(n, 10 * n, 1000 + n, 0, 0, 0, 0) for n in (10, 100, 1000)]
    assert break_even(points) == pytest.approx(1000 / 9)  # where 10 n = 1000 + n
    assert break_even(points[:2]) is None
    assert break_even([SizePoint(1, 5, 5, 0, 0, 0, 0), SizePoint(2, 5, 5, 0, 0, 0, 0)]) is None


# -- plots --------------------------------------------------------------------------------------


def test_plots_hold_what_they_should():
    source, checked, evaluation = example("dot")
    result = analyse(evaluation, 4, "1df", source=source)
    graph = evaluation.graph
    space = plots.space_plot(plots.space_series(graph, 4), "svg").decode()
    assert "1DF (peak" in space and "BF (peak" in space and "GPU world" in space
    timeline = plots.timeline_plot(result.timeline, "svg").decode()
    for text in ("CPU processor 0", "CPU processor 3", "GPU work group 0", "transfers"):
        assert text in timeline
    points = plots.speedup_points(graph, [1, 2, 4, 8])
    assert points[0][1] == graph.work() and points[-1][1] >= graph.span()
    speedup = plots.speedup_plot(graph.work(), graph.span(), points, "svg").decode()
    assert "work law" in speedup and "span law" in speedup and "Brent" in speedup
    sizes = [SizePoint(n, 10 * n, 1000 + n, 0, 0, 0, 0) for n in (10, 100, 1000)]
    assert "break-even" in plots.sizes_plot(sizes, "n", "svg").decode()
    for data in (plots.sizes_plot(sizes, "n", "png"),
                 plots.space_plot(plots.space_series(graph, 2), "png")):
        assert data.startswith(b"\x89PNG") and len(data) > 10_000


def test_validation_plot_reads_the_report_format():
    report = {"cases": [
        {"program": "zipmul", "n": 1024, "part": "kernel", "predicted_s": 2e-5, "measured_s": 3e-5},
        {"program": "zipmul", "n": 1024, "part": "transfer_in", "predicted_s": 1e-4,
         "measured_s": 8e-5},
        {"program": "dot", "n": 4096, "part": "kernel", "predicted_s": 5e-5, "measured_s": 5e-5},
    ]}
    svg = plots.validation_plot(plots.validation_cases(report), "svg").decode()
    assert "predicted = measured" in svg and "transfer_in" in svg and "dot n=4096" in svg
    for bad in ({}, {"cases": []}, {"cases": [{"program": "x"}]},
                {"cases": [dict(report["cases"][0], measured_s=0)]}):
        with pytest.raises(ValueError):
            plots.validation_cases(bad)


# -- the commands -------------------------------------------------------------------------------


def hetprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_graph_command_writes_svg_png_and_dot(tmp_path):
    svg, dot = tmp_path / "g.svg", tmp_path / "g.dot"
    for layout in ("auto", "matplotlib"):  # auto: graphviz's where `dot` is installed
        result = hetprof("graph", "examples/zipmul.lg", "--param", "n=8", "--expand-gpu",
                         "--layout", layout, "-o", str(svg))
        assert result.returncode == 0, result.stderr
        assert "device-box-1" in svg_ids(svg.read_bytes())
    assert hetprof("graph", "examples/zipmul.lg", "--param", "n=8", "-o", str(dot)).returncode == 0
    assert dot.read_text().startswith("digraph")
    bad = hetprof("graph", "examples/zipmul.lg", "-o", str(tmp_path / "g.gif"))
    assert bad.returncode == 2 and "suffix" in bad.stderr


def test_a_calibrated_profiles_picture_labels_costs_in_its_units(tmp_path):
    """Issue 19: under a profile in seconds the cost graph's labels and tooltips said
    `weight 8.017e-06`; they say µs, ns, as the text reports do, in either layout."""
    for layout in ("auto", "matplotlib"):
        svg = tmp_path / f"{layout}.svg"
        result = hetprof("graph", "examples/zipmul.lg", "--param", "n=64", "--device-profile",
                         "profiles/nvidia-h200-serial.json", "--layout", layout, "-o", str(svg))
        assert result.returncode == 0, result.stderr
        titles = re.findall(r"<title>([^<]*)</title>", svg.read_text())
        weights = [t for t in titles if " edge, weight " in t]
        assert weights and all(re.search(r"weight [\d.,]+ (ns|µs|ms|s)\b", t) for t in weights)
        assert not [t for t in titles if re.search(r"\de-\d", t)]


def test_without_graphviz_the_pictures_fall_back_to_matplotlib(tmp_path):
    """Where `dot` is not installed, `--layout auto` draws with hetprof's own layout and
    `--layout graphviz` says what is missing, for `graph` and `report` alike."""
    env = {**os.environ, "PATH": str(tmp_path)}  # no `dot` on it
    for command, out in (("graph", tmp_path / "g.svg"), ("report", tmp_path / "r.html")):
        def run_it(layout: str, command=command, out=out) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "cli", command, "examples/zipmul.lg",
                                   "--param", "n=8", "--layout", layout, "-o", str(out)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300,
                                  env=env)
        done = run_it("auto")
        assert done.returncode == 0, done.stderr
        assert "seq edge, weight 1" in out.read_text() and "graph0" not in out.read_text()
        done = run_it("graphviz")
        assert done.returncode == 2 and "graphviz's `dot` is not installed" in done.stderr
        assert "Traceback" not in done.stderr


def test_plot_commands(tmp_path):
    report = tmp_path / "validation.json"
    report.write_text(json.dumps({"cases": [
        {"program": "zipmul", "n": 64, "part": "kernel", "predicted_s": 1e-5, "measured_s": 2e-5}]}))
    for args in (("sizes", "examples/map_map.lg", "--sizes", "8,32"),
                 ("validation", str(report))):
        out = tmp_path / f"{args[0]}.png"
        result = hetprof("plot", *args, "-o", str(out))
        assert result.returncode == 0, result.stderr
        assert out.read_bytes().startswith(b"\x89PNG")
    report.write_text("{}")
    result = hetprof("plot", "validation", str(report), "-o", str(tmp_path / "v.png"))
    assert result.returncode == 2 and "cases" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["map_map", "zipmul", "dot", "nbody"])
def test_the_space_plot_peaks_are_the_report_peaks(name):
    """Issue 19: map_map's GPU peak plotted as 2,049 (1DF) and 0 (BF) while `profile` said 8,193:
    the plot sampled only steps, and a device box's push happens between them."""
    source, checked, evaluation = example(name)
    series = plots.space_series(evaluation.graph, 2)
    for policy, samples in series.items():
        result = analyse(evaluation, 2, policy, source=source)
        assert max(s[2] for s in samples) == result.space["cpu"], policy
        assert max(s[3] for s in samples) == result.space["gpu"], policy
        assert max(s[2] + s[3] for s in samples) == result.space["peak"], policy


def titles(svg: bytes) -> list[str]:
    return [element.text or "" for element in ElementTree.fromstring(svg).iter(f"{SVG}title")]


def test_svg_elements_carry_their_labels_as_titles():
    source, _, evaluation = example("dc_sum")
    picture = cost_picture(evaluation.graph, lambda span: snippet(source, span))
    runs = [item for item in walk(picture["chain"]) if item["t"] == "run"]
    label = element_label(runs[0]).replace("\n", "; ")
    assert label.startswith(f"{runs[0]['edges']} steps (")
    shown = titles(draw_cost_graph(picture, "svg"))
    assert any(label in title for title in shown)
    assert any(title.startswith("seq edge, weight 1") for title in shown)
    drawn = graphviz_picture(picture, "svg")
    if drawn is not None:  # graphviz is installed
        assert label in titles(drawn)


def test_graphviz_falls_back_to_none_without_dot(monkeypatch):
    monkeypatch.setattr("graphs.render_dot.shutil.which", lambda name: None)
    _, _, evaluation = example("zipmul")
    assert graphviz_picture(cost_picture(evaluation.graph), "svg") is None


def test_labels_fit_their_boxes():
    """dc_sum's `26 steps (1 op, 13 read, 5 seq, 7 write)` spilled out of a box 3 units wide: the
    box is now as wide as matplotlib draws the label."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from graphs.draw import SCALE, _size

    source, _, evaluation = example("dc_sum")
    picture = cost_picture(evaluation.graph, lambda span: snippet(source, span))
    figure = Figure(dpi=72)
    canvas = FigureCanvasAgg(figure)
    renderer = canvas.get_renderer()
    for item in walk(picture["chain"]):
        if item["t"] in ("run", "block", "threads"):
            text = figure.text(0, 0, element_label(item), fontsize=SUMMARY_FONT, linespacing=1.3)
            extent = text.get_window_extent(renderer)  # points, at 72 dpi
            width, height = _size(item, False)
            assert extent.width < (width - 0.2) * SCALE * 72, element_label(item)
            assert extent.height < (height - 0.1) * SCALE * 72, element_label(item)
            assert label_size(element_label(item), SUMMARY_FONT)[0] <= width


def test_plot_sizes_keeps_the_sizes_done(tmp_path):
    """A size that fails (here the step limit) after others succeeded: the plot is drawn from
    those, and the message names the size that failed."""
    out = tmp_path / "sizes.svg"
    result = hetprof("plot", "sizes", "examples/zipmul.lg", "--sizes", "4,8,4096",
                     "--max-steps", "20000", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "n=4,096 failed" in result.stderr
    text = out.read_text()
    assert "n=4,096 failed" in text and "examples/zipmul.lg" in text
    failing = hetprof("plot", "sizes", "examples/zipmul.lg", "--sizes", "4096",
                      "--max-steps", "20000", "-o", str(out))
    assert failing.returncode == 1 and "step" in failing.stderr


def test_timeline_kinds_have_distinct_colours():
    assert len(set(plots.KIND_COLOURS.values())) == len(plots.KIND_COLOURS)
