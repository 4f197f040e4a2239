"""The progress bar of `hetprof place` and `hetprof rewrite`, apart from cli.common so that the other
commands do not load rich (0.04 s of their start)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def verdict_progress(args: argparse.Namespace) -> Progress:
    """A progress bar on standard error under which `place` and `rewrite` print each verdict as
    it is decided (`progress.console.print`): on a terminal only, and not for --format json."""
    errors = Console(stderr=True, highlight=False)
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=errors, transient=True,
                    disable=not errors.is_terminal or args.format == "json")
