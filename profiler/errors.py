"""hetprof's errors: one root, a subclass per stage, each carrying the span it is about.

The library never prints; `cli/` renders an error with `format_error`, which shows
`file:line:col: kind: message`, the source line and a caret under the offending text
(after lark's `get_context`).
"""

from __future__ import annotations

from profiler.syntax import Span


class HetprofError(Exception):
    """Root of every error caused by the user's input (program, parameters, profiles, devices)."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, rule: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.rule = rule


class ParseError(HetprofError):
    kind = "syntax error"


class CheckError(HetprofError):
    """A type error: the program breaks a typing rule of Fig. 2 or Figs. 14-17."""

    kind = "type error"


class RegionError(CheckError):
    """A region used out of scope, or an effect that does not cover what a function touches."""

    kind = "region error"


class WorldError(CheckError):
    """Code that the world it runs on cannot run (letregion or `on` inside `on`, ...)."""

    kind = "world error"


class EvaluationError(HetprofError):
    """The program went wrong while running: a step limit, a region that cannot grow on the GPU
    (NoExpandWE, Fig. 9), a division by zero, an index out of bounds."""

    kind = "evaluation error"


class ParameterError(HetprofError):
    kind = "parameter error"


class ProfileError(HetprofError):
    """A device profile that is missing a field or has one of the wrong kind."""

    kind = "profile error"


class SavedProfileError(HetprofError):
    """A saved profile (`--load FILE.json`) that is not one hetprof wrote, or one written with
    another schema version."""

    kind = "saved profile error"


class DeviceError(HetprofError):
    kind = "device error"


def format_error(error: HetprofError, source: str | None) -> str:
    """`file:line:col: kind: message`, then the source line and a caret under the span."""
    message = error.message
    if error.rule:
        message += f" [{error.rule}]"
    span = error.span
    if span is None or span.line <= 0:
        return f"{error.kind}: {message}"
    head = f"{span}: {error.kind}: {message}"
    if source is None:
        return head
    lines = source.splitlines() or [""]  # an empty file still has a first line, for the caret
    if not 1 <= span.line <= len(lines):
        return head
    text = lines[span.line - 1].expandtabs(1)
    if len(text) > 200:
        start = max(0, span.column - 80)
        text = text[start : start + 160]
        column = span.column - start
    else:
        column = span.column
    width = 1
    if span.end_line == span.line and span.end_column > span.column:
        width = span.end_column - span.column
    elif span.end_line > span.line:
        width = len(text) - column + 1  # the span goes on past this line
    width = max(1, min(width, len(text) - column + 2))
    return f"{head}\n    {text}\n    {' ' * (column - 1)}{'^' * width}"
