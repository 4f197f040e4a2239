"""Every example runs, and its value equals the same computation done directly in Python."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, ROOT, run

from profiler.regions import FloatV, IntV, PairV, VecV


def tree_sum(values):
    """reduce's order: neighbours paired level by level (graphs.semantics.explicit._reduce)."""
    values = list(values)
    if not values:
        return 0
    while len(values) > 1:
        paired = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


def python_value(evaluation):
    """Read the program's value out of its regions as Python data."""
    regions = evaluation._heap_lookup

    def read(value):
        if isinstance(value, bool):
            return value
        heap = regions[value.region].values[value.offset]
        match heap:
            case IntV(v) | FloatV(v):
                return v
            case PairV(a, b):
                return (read(a), read(b))
            case VecV(items):
                return [read(i) for i in items]
        raise AssertionError(heap)

    return read(evaluation.value)


def source(name):
    return (ROOT / "examples" / f"{name}.lg").read_text()


@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_zipmul(n):
    for name in ("zipmul", "zipmul_cpu"):
        assert python_value(run(source(name), {"n": n})) == [i * (i + 1) for i in range(n)]


@pytest.mark.parametrize("n", [1, 3, 16, 33])
def test_dot(n):
    assert python_value(run(source("dot"), {"n": n})) == tree_sum((i + 1) * 2 * i
                                                                  for i in range(n))


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 5), (8, 8)])
def test_matvec(rows, cols):
    expected = [tree_sum((i + j) * (j + 1) for j in range(cols)) for i in range(rows)]
    assert python_value(run(source("matvec"), {"rows": rows, "cols": cols})) == expected


@pytest.mark.parametrize("n", [1, 4, 9])
def test_nbody(n):
    xs = [0.5 if i < 2 else 1.5 for i in range(n)]
    expected = []
    for i in range(n):
        terms = []
        for j in range(n):
            d = xs[j] - xs[i]
            terms.append(d / (d * d + 0.01))
        expected.append(tree_sum(terms))
    assert python_value(run(source("nbody"), {"n": n})) == expected


@pytest.mark.parametrize("n", [1, 4, 10])
def test_normalize_inc(n):
    data = [1.0 if i < 3 else 2.0 for i in range(n)]
    total = tree_sum(data)
    assert python_value(run(source("normalize_inc"), {"n": n})) == [(a + 1.0) / total
                                                                      for a in data]


@pytest.mark.parametrize("n", [1, 5])
def test_map_map(n):
    assert python_value(run(source("map_map"), {"n": n})) == [3 * x + 1 for x in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 10, 64])
def test_dc_sum(n):
    evaluation = run(source("dc_sum"), {"n": n})
    assert python_value(evaluation) == n * (n - 1) // 2
    if n >= 4:  # the recursion forks: the span is well below the work
        assert evaluation.graph.span() < evaluation.graph.work() / 2


@pytest.mark.parametrize("s", [1, 3, 32])
def test_strided(s):
    assert python_value(run(source("strided"), {"n": 8, "s": s})) == [i * s + 1 for i in range(8)]


def test_every_example_is_covered_and_runs_with_defaults():
    names = {path.stem for path in EXAMPLES}
    assert names == {"zipmul", "zipmul_cpu", "dot", "matvec", "nbody", "normalize_inc",
                     "map_map", "dc_sum", "strided"}
    for path in EXAMPLES:
        text = path.read_text()
        assert text.startswith("#"), f"{path.name} has no header comment"
        evaluation = run(text)
        assert evaluation.graph.work() > 0
