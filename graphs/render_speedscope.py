"""The speedscope renderer (`--format speedscope`): the cost-by-source tree as an "evented"
profile for speedscope (https://www.speedscope.app), the interactive flame-graph viewer that
py-spy and pyinstrument export to.

Each node of the source tree (`ProfileResult.spans`, work attributed to the expression whose
evaluation did it, inclusive of its sub-expressions) is a frame named by its label and located by
file, line and column. The flame graph's x-axis is work, not time: a node opens at the work done
before it, its children follow one another, its exclusive work comes last, and it closes after
its inclusive work. The unit is "none" for abstract model units and "seconds" for a calibrated
profile. Roots are laid out one after another; the profile ends at their total (the program's
work).
"""

from __future__ import annotations

import json
from typing import Any

from graphs.analysis import ProfileResult, SpanCost

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


class SpeedscopeRenderer:
    """render(result) -> str: a speedscope file (JSON), one evented profile."""

    def render(self, result: ProfileResult) -> str:
        frames: list[dict[str, Any]] = []
        index: dict[tuple[str, str], int] = {}
        events: list[dict[str, Any]] = []

        def frame(node: SpanCost) -> int:
            key = (node.label, node.location)
            if key not in index:
                index[key] = len(frames)
                entry: dict[str, Any] = {"name": node.label or node.location}
                file, line, column = _location(node.location)
                if file:
                    entry.update(file=file, line=line, col=column)
                frames.append(entry)
            return index[key]

        def emit(node: SpanCost, at: float) -> float:
            number = frame(node)
            events.append({"type": "O", "frame": number, "at": at})
            cursor = at
            for child in node.children:
                cursor = emit(child, cursor)
            end = max(at + node.inclusive, cursor)
            events.append({"type": "C", "frame": number, "at": end})
            return end

        end = 0.0
        for root in result.spans:
            end = emit(root, end)
        values = ", ".join(f"{k}={v}" for k, v in result.params.items())
        name = f"{result.file} ({values})" if values else result.file
        data = {
            "$schema": SCHEMA,
            "name": f"{name}: work by source",
            "exporter": "hetprof",
            "activeProfileIndex": 0,
            "shared": {"frames": frames},
            "profiles": [{
                "type": "evented",
                "name": f"work by source ({result.units} units)",
                "unit": "seconds" if result.units == "seconds" else "none",
                "startValue": 0,
                "endValue": end,
                "events": events,
            }],
        }
        return json.dumps(data, indent=1, allow_nan=False) + "\n"


def _location(location: str) -> tuple[str, int, int]:
    """`file:line:col` -> (file, line, col); ("", 0, 0) where it is not one."""
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return "", 0, 0
