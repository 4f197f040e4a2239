"""The output formats of `hetprof profile --format`: one renderer per format, each with
`render(result) -> str | bytes` (after pyinstrument's renderers).

`RENDERERS` maps a format to its renderer class and imports that renderer's module only when the
format is asked for: the HTML report draws plots, so importing it brings matplotlib and sympy,
which the text report does not need (issue 19: start-up time)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

_WHERE = {
    "text": ("graphs.render_text", "TextRenderer"),
    "json": ("graphs.render_json", "JsonRenderer"),
    "csv": ("graphs.render_csv", "CsvRenderer"),
    "dot": ("graphs.render_dot", "DotRenderer"),
    "trace": ("graphs.render_trace", "TraceRenderer"),
    "html": ("graphs.render_html", "HtmlRenderer"),
    "speedscope": ("graphs.render_speedscope", "SpeedscopeRenderer"),
    "cilkscale": ("graphs.render_cilkscale", "CilkscaleRenderer"),
}


class _Renderers(Mapping[str, Any]):
    """The formats, in the order above; a renderer's module is imported on first lookup."""

    def __getitem__(self, name: str) -> Any:
        module, attribute = _WHERE[name]
        return getattr(importlib.import_module(module), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


RENDERERS: Mapping[str, Any] = _Renderers()
