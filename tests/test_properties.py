"""Properties of generated well-typed programs (tests/generate.py), checked with hypothesis.

- Soundness in practice: a well-typed program checks and runs without any HetprofError (no
  region or world error in particular), and its cost graph satisfies its invariants.
- The pretty printer round-trips generated programs, parsed and elaborated.
- The GPU model prices memory but does not compute: the value is the same under `--gpu-mode paper`
  and `--gpu-mode dmm`, and a program without `on` costs the same CPU work under both.
"""

from hypothesis import HealthCheck, given, note, settings

from graphs.semantics.explicit import evaluate
from graphs.semantics.options import EvaluationOptions
from profiler.checker import check_program
from profiler.parser import parse
from profiler.printer import pretty
from profiler.syntax import On, Program, children
from tests.generate import well_typed_programs

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ALL_ELEMENTS = 10**6  # render whole vectors when comparing values


def has_on(program: Program) -> bool:
    todo = [program.body]
    while todo:
        node = todo.pop()
        if isinstance(node, On):
            return True
        todo.extend(children(node))
    return False


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_generated_programs_check_and_run(program):
    note(pretty(program))
    checked = check_program(program)
    evaluation = evaluate(checked, {})
    evaluation.graph.self_check()
    assert evaluation.graph.work() > 0
    assert evaluation.steps > 0


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_generated_programs_print_and_parse_back(program):
    text = pretty(program)
    note(text)
    again = parse(text)
    assert again.params == program.params
    assert again.body == program.body
    assert pretty(again) == text
    original = evaluate(check_program(program), {})
    reparsed = evaluate(check_program(again), {})
    assert reparsed.render_value(ALL_ELEMENTS) == original.render_value(ALL_ELEMENTS)
    assert reparsed.graph.work() == original.graph.work()


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_generated_programs_print_elaborated_and_check_back(program):
    checked = check_program(program)
    text = pretty(Program(program.params, checked.body))
    note(text)
    rechecked = check_program(parse(text))
    assert rechecked.body == checked.body
    assert rechecked.type == checked.type


@PROPERTY_SETTINGS
@given(well_typed_programs())
def test_value_does_not_depend_on_the_gpu_mode(program):
    note(pretty(program))
    checked = check_program(program)
    paper = evaluate(checked, {}, EvaluationOptions(gpu_mode="paper"))
    dmm = evaluate(checked, {}, EvaluationOptions(gpu_mode="dmm"))
    assert paper.render_value(ALL_ELEMENTS) == dmm.render_value(ALL_ELEMENTS)
    assert len(paper.ons) == len(dmm.ons)


@PROPERTY_SETTINGS
@given(well_typed_programs(allow_on=False))
def test_cpu_work_does_not_depend_on_the_gpu_mode(program):
    note(pretty(program))
    assert not has_on(program)
    checked = check_program(program)
    paper = evaluate(checked, {}, EvaluationOptions(gpu_mode="paper"))
    dmm = evaluate(checked, {}, EvaluationOptions(gpu_mode="dmm"))
    assert paper.render_value(ALL_ELEMENTS) == dmm.render_value(ALL_ELEMENTS)
    assert paper.graph.work() == dmm.graph.work()
    assert paper.graph.span() == dmm.graph.span()
