"""The two placements of a program and their times as a size grows: the question of §7.1, "should
the `on` be there?", asked at several sizes.

The GPU placement is the program as written, each `on` a device box (Fig. 6, rule for `on`). The
CPU placement is the same program with every `on e at r` (and `on local [...] e at r`) replaced by
e: e already leaves its result in r (the checker's rule for `on`), so the rest of the program is
unchanged, and its parallel forms then run on the CPU under the PRAM model (§7.1.1), as
examples/zipmul_cpu.lg does by hand for examples/zipmul.lg. `time_by_size` evaluates both at each
size and schedules them on P processors; `graphs.crossings.interpolated_break_even` finds the
size where the two times cross.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphs.schedule import Policy, schedule_times
from graphs.semantics.explicit import evaluate
from graphs.semantics.options import EvaluationOptions
from profiler.checker import CheckedProgram
from profiler.syntax import Expr
from profiler.transform import has_on, remove_on

__all__ = ["SizePoint", "cpu_placement", "cpu_program", "has_on", "time_by_size"]

def cpu_placement(e: Expr) -> Expr:
    """e with every `on body at r` replaced by body: a new AST (the argument is not changed)."""
    return remove_on(e)


def cpu_program(checked: CheckedProgram) -> CheckedProgram:
    """The CPU placement of a checked program (its type is unchanged: Fig. 6 gives `on e at r`
    the type of e)."""
    return replace(checked, body=cpu_placement(checked.body))


@dataclass(frozen=True, slots=True)
class SizePoint:
    """Both placements at one size: time under the schedule, work and span."""

    size: int
    cpu_time: float
    gpu_time: float
    cpu_work: float
    gpu_work: float
    cpu_span: float
    gpu_span: float


def time_by_size(checked: CheckedProgram, parameter: str, sizes: list[int],
                 params: dict[str, int] | None = None,
                 options: EvaluationOptions | None = None, procs: int = 2,
                 policy: Policy | str = Policy.DEPTH_FIRST) -> list[SizePoint]:
    """Evaluate the GPU and the CPU placement with `parameter` set to each size (other parameters
    from `params` or their defaults) and schedule each on `procs` processors (§6.3)."""
    cpu = cpu_program(checked)
    options = options or EvaluationOptions()
    points = []
    for size in sizes:
        values = {**(params or {}), parameter: size}
        runs = []
        for program in (cpu, checked):
            graph = evaluate(program, values, options).graph
            runs.append((schedule_times(graph, [procs], policy)[0], graph.work(), graph.span()))
        (cpu_time, cpu_work, cpu_span), (gpu_time, gpu_work, gpu_span) = runs
        points.append(SizePoint(size, cpu_time, gpu_time, cpu_work, gpu_work, cpu_span,
                                gpu_span))
    return points
