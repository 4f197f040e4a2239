"""The JSON renderer of a profile (`--format json`): the serialised `ProfileResult`."""

from __future__ import annotations

from graphs.analysis import ProfileResult


class JsonRenderer:
    """render(result) -> str."""

    def render(self, result: ProfileResult) -> str:
        return result.dumps() + "\n"
