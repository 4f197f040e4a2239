"""The output formats of `hetprof profile --format`: one renderer per format, each with
`render(result) -> str | bytes` (after pyinstrument's renderers)."""

from __future__ import annotations

from graphs.render_json import JsonRenderer
from graphs.render_text import TextRenderer

RENDERERS = {
    "text": TextRenderer,
    "json": JsonRenderer,
}
