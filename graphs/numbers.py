"""How hetprof writes a number for people: one style in every report, table, label and picture."""

from __future__ import annotations

import json
import math
from typing import Any

from profiler.errors import ParameterError


def number(x: float | None) -> str:
    """A cost, a count or a time: whole numbers with thousands separators (`1,645,626`); from 1 on,
    others to at most 4 decimals, enough for the quarter units of abstract profiles
    (`1,645,625.75`); below 1, 4 significant digits (`0.0006541`, seconds); None (no value) as
    `-`."""
    if x is None:
        return "-"
    if not math.isfinite(x):
        return str(x)
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1:
        return f"{x:,.4f}".rstrip("0").rstrip(".")
    return f"{x:.4g}"


TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
"""The units `duration` writes a time in, largest first."""


def duration(seconds: float | None) -> str:
    """A time in seconds for people: in s, ms, µs or ns, whichever puts it from 1 to 999, to 4
    significant digits (6.541e-4 -> `654.1 µs`, 0.0123 -> `12.3 ms`, 2 -> `2 s`); from 1,000 s
    on, `number` in seconds (`40,389.25 s`); below 1 ns, in ns (`0.0012 ns`); None as `-`."""
    if seconds is None:
        return "-"
    if not math.isfinite(seconds):
        return f"{seconds} s"
    if seconds == 0:
        return "0 s"
    size = float(f"{abs(seconds):.4g}")  # rounded first: 0.99996 s is `1 s`, not `1000 ms`
    if size >= 1000:
        return f"{number(round(seconds, 2))} s"
    scale, unit = next(((scale, unit) for scale, unit in TIME_UNITS if size >= scale),
                       TIME_UNITS[-1])
    text = f"{seconds / scale:.4g}"
    if "e" in text:  # below 1e-13 s: g would switch to an exponent
        text = f"{seconds / scale:.4f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def amount(x: float | None, units: str) -> str:
    """A cost in a profile's units: `duration` where they are seconds (a calibrated device
    profile, e.g. profiles/nvidia-h200.json), else `number` (abstract units)."""
    return duration(x) if units == "seconds" else number(x)


def signed(x: float, units: str = "") -> str:
    """A change: `+1,024`, `-3.5` or `0`; in seconds (`units`) `+12.3 µs`, `-1.5 ms`."""
    text = amount(abs(x), units)
    return f"+{text}" if x > 0 else f"-{text}" if x < 0 else "0"


def json_text(data: Any, indent: int | None = 2, separators: tuple[str, str] | None = None,
              default: Any = None) -> str:
    """`data` as standard JSON (every JSON writer of hetprof's goes through here): a number that
    is not finite (NaN, Infinity: not JSON) is a ParameterError, never written."""
    try:
        return json.dumps(data, indent=indent, separators=separators, default=default,
                          allow_nan=False)
    except ValueError:
        raise ParameterError("a result is not a finite number (a cost overflowed), and hetprof "
                             "writes only standard JSON: lower the model parameters or the "
                             "sizes") from None
