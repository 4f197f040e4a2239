"""graphs/semantics/inputs.py: the inputs of an `on` without the interpreter equal the inputs the
explicit evaluator's OffloadCollector records; what it cannot evaluate is refused with a reason."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

from graphs.semantics.explicit import OffloadCollector, evaluate
from graphs.semantics.inputs import NotVectorised, RegionImage, offload_inputs
from graphs.semantics.options import EvaluationOptions
from models.opencl.validate import _variants
from profiler.checker import bind_parameters, check_program
from profiler.errors import EvaluationError
from profiler.parser import parse
from profiler.syntax import On, Profile

PROGRAMS = sorted((ROOT / "benchmarks" / "suite").glob("*.lg")) + sorted(
    (ROOT / "examples").glob("*.lg"))
# What the interpreter must run: a loop (`fix`) or a vector per thread before the `on`, an `on`
# that is not at the top of the program, or two `on`s.
REFUSED = {"bfs": "a vector built inside a parmap's threads",
           "matvec": "a vector built inside a parmap's threads",
           "jacobi1d": "the `on` is not at the top of the program",
           "jacobi2d": "the `on` is not at the top of the program",
           "zipmul": "the `on` is not at the top of the program",
           "mandelbrot": "`Fix` is not evaluated without the interpreter",
           "zipmul_cpu": "the program has 2 `on`s"}
NOTHING = {"dc_sum"}  # no parmap, no `on`: nothing to offload under either placement


@pytest.fixture(autouse=True)
def deep_recursion():
    """blackscholes' CPU placement nests its loops deeper than Python's default stack allows
    the interpreter (the CLI raises the limit the same way)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20_000))
    yield
    sys.setrecursionlimit(old)


def _checked(path):
    return check_program(parse(path.read_text(), str(path.relative_to(ROOT))))


def _interpreter_offloads(checked, params):
    collector = OffloadCollector()
    evaluate(checked, params, EvaluationOptions(observer=collector))
    # An `on`, or validate's CPU placement's cost centre (its prelude's parmaps are offloads
    # too, in a program without `on`; validate picks the centres by name)
    return [o for o in collector.offloads if isinstance(o.node, (On, Profile))]


def assert_same_offload(fast, slow):
    assert fast.node == slow.node and fast.body == slow.body
    assert fast.env == slow.env
    assert fast.regions == slow.regions
    assert sorted(fast.inputs) == sorted(slow.inputs)
    for rid, image in fast.inputs.items():
        assert isinstance(image, RegionImage)
        region = image.to_region()
        assert region.ap == slow.inputs[rid].ap
        assert region.size == slow.inputs[rid].size
        assert region.values == slow.inputs[rid].values
        assert region == slow.inputs[rid]
    assert fast.value is None and fast.heap == {} and fast.on is None


@pytest.mark.parametrize("placement", ["gpu", "cpu"])
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_offloads_equal_the_interpreters_or_are_refused_with_a_reason(path, placement):
    checked = _checked(path)
    gpu, cpu = _variants(checked)
    program = gpu if placement == "gpu" else cpu
    params = bind_parameters(checked, {})
    if path.stem in REFUSED:
        with pytest.raises(NotVectorised, match=REFUSED[path.stem]) as refused:
            offload_inputs(program, params)
        assert refused.value.span is not None and refused.value.span.line > 0
        return
    fast = offload_inputs(program, params)
    slow = _interpreter_offloads(program, params)
    assert len(fast) == len(slow) == (0 if path.stem in NOTHING else 1)
    for one, other in zip(fast, slow, strict=True):
        assert_same_offload(one, other)


def _source(prelude: str, body: str = "on parmap (lambda t: int r [r]. a[t] + 1) (iota n) at r",
            n: int = 8) -> str:
    return f"param n : int = {n}\nletregion r in\n{prelude}\n{body}\n"


@pytest.mark.parametrize("prelude", [
    # threads that take different branches allocate different numbers of words
    "let a = parmap (lambda t: int r [r]. if t / 3 * 3 == t then t * 2 + 1 else 7) "
    "(iota n) at r in",
    # pairs, projections and booleans in pairs, negative division and subtraction
    "let a = parmap (lambda t: int r [r]. let p = (t - 5, (t < 4, 0 - 7)) in "
    "if fst (snd p) then fst p / 2 else snd (snd p) / (fst p + 10)) (iota n) at r in",
    # a vector of pairs, read back through indexing, and length
    "let ps = parmap (lambda t: int r [r]. (t, 1.5 * 2.0)) (iota n) at r in\n"
    "let a = parmap (lambda t: int r [r]. fst ps[n - 1 - t] + length ps) (iota n) at r in",
    # a parmap over a vector literal, floats and a top-level scalar
    "let k = 3 * n in\nlet v = [1, 2, 3, 4, 5, 6, 7, 8] at r in\n"
    "let a = parmap (lambda x: int r [r]. x * k - 100) v at r in",
])
def test_small_preludes_equal_the_interpreter(prelude):
    checked = check_program(parse(_source(prelude), "test.lg"))
    params = bind_parameters(checked, {})
    (fast,) = offload_inputs(checked, params)
    (slow,) = _interpreter_offloads(checked, params)
    assert_same_offload(fast, slow)


@pytest.mark.parametrize("prelude, message", [
    ("let a = parmap (lambda t: int r [r]. 10 / (t - 3)) (iota n) at r in", "division by zero"),
    ("let a = parmap (lambda t: int r [r]. t * 1000000000000 * 1000000000000) (iota n) at r in",
     "integer overflow: 1000000000000000000000000 does not fit in 64 bits"),
    ("let v = [1, 2, 3] at r in\nlet a = parmap (lambda t: int r [r]. v[t - 1]) (iota n) at r in",
     "index -1 is out of bounds for a vector of 3 elements"),
    ("let a = iota (0 - 2) at r in", "iota of a negative count"),
])
def test_errors_are_the_interpreters(prelude, message):
    checked = check_program(parse(_source(prelude), "test.lg"))
    params = bind_parameters(checked, {})
    with pytest.raises(EvaluationError, match=message) as slow:
        evaluate(checked, params)
    with pytest.raises(EvaluationError, match=message) as fast:
        offload_inputs(checked, params)
    assert fast.value.message == slow.value.message and fast.value.span == slow.value.span


def test_refusals_name_the_construct():
    source = _source("let f = lambda x: int r [r]. x + 1 at r in",
                     "on parmap f (iota n) at r")
    checked = check_program(parse(source, "test.lg"))
    with pytest.raises(NotVectorised, match="`Lambda` is not evaluated") as refused:
        offload_inputs(checked, {})
    assert (refused.value.span.line, refused.value.span.column) == (3, 9)
    with pytest.raises(NotVectorised, match="paper's rules"):
        offload_inputs(check_program(parse(_source("let a = iota n at r in"), "t.lg")), {},
                       EvaluationOptions(rules="paper"))


def test_a_program_without_on_has_no_offload():
    checked = check_program(parse("letregion r in 1 + 2 at r", "t.lg"))
    assert offload_inputs(checked, {}) == []


def test_large_sizes_keep_arrays_not_objects():
    """nn at n = 2^16: a region image of a few numpy blocks holding every word."""
    path = ROOT / "benchmarks" / "suite" / "nn.lg"
    gpu, _ = _variants(_checked(path))
    (offload,) = offload_inputs(gpu, {"n": 2**16})
    (image,) = offload.inputs.values()
    assert isinstance(image, RegionImage) and len(image.blocks) < 50
    # vals (13 floats, its vector 13 words), then per parmap: iota's count, its n ints and
    # vector, 11 words per thread (k: 4, k mod 13: 5, the + or *: 2) and the result vector
    n = 2**16
    assert image.ap == 26 + 2 * (1 + 2 * n + 11 * n + n)
