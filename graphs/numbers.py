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


def signed(x: float) -> str:
    """A change: `+1,024`, `-3.5` or `0`."""
    text = number(abs(x))
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
