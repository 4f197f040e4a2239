"""The output formats of `hetprof profile --format`: one renderer per format, each with
`render(result) -> str | bytes` (after pyinstrument's renderers)."""

from __future__ import annotations

from graphs.render_cilkscale import CilkscaleRenderer
from graphs.render_csv import CsvRenderer
from graphs.render_dot import DotRenderer
from graphs.render_html import HtmlRenderer
from graphs.render_json import JsonRenderer
from graphs.render_speedscope import SpeedscopeRenderer
from graphs.render_text import TextRenderer
from graphs.render_trace import TraceRenderer

RENDERERS = {
    "text": TextRenderer,
    "json": JsonRenderer,
    "csv": CsvRenderer,
    "dot": DotRenderer,
    "trace": TraceRenderer,
    "html": HtmlRenderer,
    "speedscope": SpeedscopeRenderer,
    "cilkscale": CilkscaleRenderer,
}
