"""The HTML report (graphs.render_html, `hetprof report`): self-contained, escaped, and loaded in
headless Chromium without console errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from conftest import ROOT, run

from graphs.analysis import analyse
from graphs.placement import SizePoint
from graphs.render_html import HtmlRenderer, ReportExtras
from profiler.checker import check_program
from profiler.parser import parse

NASTY = '<script>alert("x")</script> & \'co\''
PROGRAM = ("param n : int = 8\nletregion r in\nlet xs = iota n at r in\n"
           f"on profile {json.dumps(NASTY)} "
           "(parmap (lambda x: int r [r]. x * 3 at r) xs at r)\nat r\n")


def report(layout: str = "matplotlib", **extras) -> tuple[str, object]:
    evaluation = run(PROGRAM)
    body = check_program(parse(PROGRAM, "a<b>&c.lg")).body
    result = analyse(evaluation, 2, "1df", file="a<b>&c.lg", params={"n": 8}, body=body,
                     source=PROGRAM)
    return HtmlRenderer(ReportExtras(**extras), layout=layout).render(result), result


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_user_strings_are_escaped():
    html, result = report()
    assert result.cost_centres[0].name == NASTY
    assert "<script" not in html and "alert(" in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;co&#x27;" in html
    assert "a&lt;b&gt;&amp;c.lg" in html and "<b>" not in html
    assert [t for t, _ in tags(html)].count("script") == 0


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed")
def test_the_cost_graph_is_laid_out_by_graphviz_where_it_is_installed():
    html, _ = report(layout="auto")
    assert [t for t, _ in tags(html)].count("svg") == 1
    assert 'id="cost-graph-zoom"' in html and '<g id="graph0" class="graph"' in html
    # Tooltips say what an element is, not graphviz's names for it (n1, n1->n2, cluster_…).
    titles = re.findall(r"<title>([^<]*)</title>", html)
    assert "seq edge, weight 1" in titles and "push r" in titles
    assert "device box of on #1 at 4:1" in titles
    assert not [t for t in titles if re.fullmatch(r"n\d+(&#45;&gt;n\d+)?|cluster_\w+", t)]
    assert [t for t, _ in tags(html)].count("script") == 0


def test_self_contained():
    html, _ = report(speedup=[(1, 100.0), (2, 60.0)],
                     sizes=[SizePoint(8, 10, 20, 0, 0, 0, 0), SizePoint(64, 80, 40, 0, 0, 0, 0)])
    images = [a for t, a in tags(html) if t == "img"]
    assert {a["alt"] for a in images} == {"timeline", "space", "speedup", "sizes"}
    assert all(a["src"].startswith("data:image/svg+xml;base64,") for a in images)
    # The cost graph is in the page, so that it zooms and its tooltips show.
    assert [t for t, _ in tags(html)].count("svg") == 1
    assert 'id="cost-graph-zoom"' in html and "<title>seq edge, weight 1" in html
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for section in ("Summary", "<code>on</code> forms (device boxes)", "Pictures",
                    "Cost centres", "Cost by source"):
        assert f">{section}</h2>" in html


def test_formulas_only_when_the_profile_has_them():
    html, result = report()
    assert "Symbolic formulas" not in html
    with_formulas = replace(result, formulas={"work": "10*n + 3 < n**2"})
    html = HtmlRenderer().render(with_formulas)
    assert "Symbolic formulas" in html and "10*n + 3 &lt; n**2" in html


CHROMIUM = shutil.which("chromium")


def chromium(page, tmp_path, name: str) -> tuple[str, bytes]:
    """Load `page` in headless Chromium; return its console messages and a screenshot."""
    shot = tmp_path / f"{name}.png"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / name}",
               "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
               "--window-size=1200,2000", page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    console = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                        if "CONSOLE" in line or "Uncaught" in line)
    return console, shot.read_bytes() if shot.exists() else b""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_loads_in_chromium_without_console_errors(tmp_path):
    page = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "cli", "report", "examples/zipmul.lg",
                           "--param", "n=16", "--sizes", "8,64", "--max-procs", "4",
                           "--expand-gpu", "-o", str(page)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    console, screenshot = chromium(page, tmp_path, "report")
    assert console == ""
    assert screenshot.startswith(b"\x89PNG") and len(screenshot) > 20_000
    # The check itself works: a page with a script error is caught.
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction()</script></body></html>")
    console, _ = chromium(broken, tmp_path, "broken")
    assert "Uncaught ReferenceError" in console


def test_figures_drawn_ahead_make_the_same_page():
    """`hetprof report` draws some figures while it computes what the others show."""
    html, result = report(speedup=[(1, 10.0), (2, 6.0)])
    renderer = HtmlRenderer(ReportExtras(speedup=[(1, 10.0), (2, 6.0)]), layout="matplotlib")
    drawn = {name: renderer.figure(result, name) for name in ("cost-graph", "timeline", "space")}
    assert all(drawn.values())
    # The report's child draws the cost graph from its picture, without the profile.
    assert renderer.cost_graph_figure(result.cost_graph, result.file) == drawn["cost-graph"]
    assert renderer.figure(result, "sizes") == ""
    assert renderer.render(result, drawn) == html
