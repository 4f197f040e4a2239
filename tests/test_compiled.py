"""Tests for graphs.compiled: the compiled depth-first numbering, 1df / bf simulations, longest
path, timeline coarsening and fork-tree walks give the Python passes' results exactly
(graphs.schedule, graphs.costgraph, graphs.timeline, graphs.picture), number for number and type
for type.

Each graph is analysed twice, with `COMPILED_FROM` at 0 (every graph compiled) and past its size
(the Python passes, the reference), and every field of the two results compared."""

import math
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

import graphs.passes as passes
import graphs.schedule as schedule_module
import graphs.timeline as timeline_module
from graphs.costgraph import CostGraph, DeviceBoxInfo, EdgeKind, NodeKind, Sub
from graphs.picture import cost_picture
from graphs.schedule import Policy, ScheduleResult, _depth_first, _GraphIndex, schedule
from graphs.semantics.explicit import evaluate
from graphs.semantics.options import EvaluationOptions
from models.device_profile import load_profile
from profiler.checker import check_program
from profiler.parser import parse_file
from profiler.syntax import World

POLICIES = [Policy.DEPTH_FIRST, Policy.BREADTH_FIRST]
H200 = ROOT / "profiles" / "nvidia-h200.json"  # seconds: float weights


def typed(value):
    """A number with its type, so that 3 and 3.0 differ."""
    return (type(value), value)


def fingerprint(result: ScheduleResult) -> tuple:
    """Every field of a schedule, each number with its type."""
    tasks = None
    if result.tasks is not None:
        tasks = ([list(a) for a in result.tasks.instants], [list(a) for a in result.tasks.edges],
                 [typed(t) for t in result.tasks.times],
                 [[(typed(s), typed(e), edge) for s, e, edge in result.tasks.run(p)]
                  for p in range(len(result.tasks.edges))])
    steps = [(typed(s.time), typed(s.weight), s.nodes, s.space_cpu, s.space_gpu, s.busy)
             for s in result.steps]
    trace = [(step, typed(time), cpu, gpu) for step, time, cpu, gpu in result.space_trace]
    return (result.policy, result.procs, typed(result.time), steps, result.peak_space_cpu,
            result.peak_space_gpu, result.peak_space, tasks, trace, result.step_count)


LOADERS = {"built": passes._built, "just in time": passes._just_in_time}


@pytest.fixture(params=list(LOADERS))
def loaded(request, monkeypatch):
    """The compiled passes from the built module (where a C compiler builds it), or numba's
    just-in-time ones."""
    if request.param == "built" and not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    found = LOADERS[request.param]()
    assert found is not None, f"no {request.param} passes"
    monkeypatch.setattr(passes, "_passes", [found])


def both(graph: CostGraph, procs: int, policy: Policy, monkeypatch, **options) -> None:
    """The schedule compiled and in Python, the same (and the compiled one really compiled)."""
    ran = []
    real = schedule_module._run_compiled

    def spy(*args):
        ran.append(True)
        return real(*args)

    with monkeypatch.context() as patched:
        patched.setattr(passes, "COMPILED_FROM", 0)
        patched.setattr(schedule_module, "_run_compiled", spy)
        compiled = schedule(graph, procs, policy, **options)
    assert ran, "the compiled simulation did not run"
    with monkeypatch.context() as patched:
        patched.setattr(passes, "COMPILED_FROM", 10**12)
        python = schedule(graph, procs, policy, **options)
    assert fingerprint(compiled) == fingerprint(python)


def longest_both(graph: CostGraph, monkeypatch) -> None:
    """The longest path compiled and in Python, the same: length (and its type), end, best
    edges."""
    found = []
    for threshold in (0, 10**12):
        with monkeypatch.context() as patched:
            patched.setattr(passes, "COMPILED_FROM", threshold)
            graph._longest = None  # not the one kept
            path = graph.longest_path(best_edges=True)
        found.append((typed(path.length), path.end, list(path.best_edge or [])))
    assert found[0] == found[1]


def typed_tree(value):
    """JSON-like data with every number's type kept (so that 3 and 3.0 differ)."""
    if isinstance(value, dict):
        return {key: typed_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [typed_tree(item) for item in value]
    return typed(value) if isinstance(value, int | float) else value


def timelines_both(graph: CostGraph, procs: int, policy: Policy, monkeypatch,
                   intervals: int | None = None) -> bool:
    """The timeline (its coarsened intervals compiled, and in Python) the same; whether it was
    coarsened. `intervals` lowers `MAX_INTERVALS`, so that small graphs are coarsened too."""
    found = []
    for threshold in (0, 10**12):
        with monkeypatch.context() as patched:
            patched.setattr(passes, "COMPILED_FROM", threshold)
            if intervals is not None:
                patched.setattr(timeline_module, "MAX_INTERVALS", intervals)
            result = schedule(graph, procs, policy, keep_steps=False)
            found.append(typed_tree(timeline_module.build_timeline(
                graph, result, lambda span: f"{span.line}:{span.column}")))
    assert found[0] == found[1]
    return found[0]["coarsened"]


def pictures_both(graph: CostGraph, monkeypatch) -> None:
    """The cost-graph summary (its fork trees walked compiled, and in Python) the same."""
    found = []
    for threshold in (0, 10**12):
        with monkeypatch.context() as patched:
            patched.setattr(passes, "COMPILED_FROM", threshold)
            found.append(typed_tree(cost_picture(graph, lambda span: f"{span.line}")))
    assert found[0] == found[1]


def evaluated(example: str, n: int, profile=None) -> CostGraph:
    checked = check_program(parse_file(ROOT / "examples" / f"{example}.lg"))
    params = {p.name: n for p in checked.program.params}
    options = EvaluationOptions(profile=load_profile(profile)) if profile else EvaluationOptions()
    return evaluate(checked, params, options).graph


EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.lg"))


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("profile", [None, H200], ids=["default", "h200"])
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.value)
def test_examples_schedule_the_same_compiled(example, profile, policy, loaded, monkeypatch):
    graph = evaluated(example, 9, profile)
    for procs in (1, 2, 3, 8, 100):
        both(graph, procs, policy, monkeypatch)
        both(graph, procs, policy, monkeypatch, keep_steps=False)
        both(graph, procs, policy, monkeypatch, record=False)


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("profile", [None, H200], ids=["default", "h200"])
def test_examples_longest_paths_are_the_same_compiled(example, profile, loaded, monkeypatch):
    longest_both(evaluated(example, 9, profile), monkeypatch)


@pytest.mark.parametrize("example", ["zipmul", "dc_sum", "dot", "normalize_inc"])
@pytest.mark.parametrize("profile", [None, H200], ids=["default", "h200"])
@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.value)
def test_examples_timelines_are_the_same_compiled(example, profile, policy, loaded,
                                                  monkeypatch):
    graph = evaluated(example, 2000, profile)
    for procs in (1, 2, 5):
        assert timelines_both(graph, procs, policy, monkeypatch)
        timelines_both(graph, procs, policy, monkeypatch, intervals=20)  # across gaps too


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("profile", [None, H200], ids=["default", "h200"])
def test_examples_pictures_are_the_same_compiled(example, profile, loaded, monkeypatch):
    for n in (1, 9, 300):
        pictures_both(evaluated(example, n, profile), monkeypatch)


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_are_numbered_the_same_compiled(example, loaded, monkeypatch):
    index = _GraphIndex(evaluated(example, 9))
    monkeypatch.setattr(passes, "COMPILED_FROM", 0)
    compiled = _depth_first(index)
    monkeypatch.setattr(passes, "COMPILED_FROM", 10**12)
    assert compiled == _depth_first(index)


def test_a_large_example_schedules_the_same_compiled(loaded, monkeypatch):
    """Past `COMPILED_FROM` as it is: the path a profile takes."""
    graph = evaluated("dot", 3000)
    assert graph.number_of_edges() > passes.COMPILED_FROM
    for policy in POLICIES:
        both(graph, 2, policy, monkeypatch, keep_steps=False)
    longest_both(graph, monkeypatch)


# -- generated graphs -----------------------------------------------------------------------------
WEIGHTS = st.sampled_from([0, 1, 2, 3, 7, 0.0, 0.5, 1.0, 2.5, 1e-3, 3.25, 1e6, 1e20])
SPACES = st.sampled_from([(), ((World.CPU, 1),), ((World.CPU, -1),), ((World.GPU, 3),),
                          ((World.CPU, 2), (World.GPU, -5))])


@st.composite
def sub_graphs(draw, graph: CostGraph, depth: int = 4) -> Sub:
    """A random series-parallel sub-graph: chains, ⊗ of two or more parts, ⊕, device boxes."""
    shape = draw(st.sampled_from(["chain", "par", "par_all", "seq", "box"] if depth else
                                 ["chain"]))
    if shape == "chain":
        current = graph.node(space=draw(SPACES))
        for weight in draw(st.lists(WEIGHTS, min_size=0, max_size=4)):
            current = graph.step(current, weight, EdgeKind.OP, NodeKind.POINT,
                                 space=draw(SPACES))
        return current
    if shape == "par":
        return graph.par(draw(sub_graphs(graph, depth - 1)), draw(sub_graphs(graph, depth - 1)),
                         weight=draw(WEIGHTS))
    if shape == "par_all":
        parts = [draw(sub_graphs(graph, depth - 1)) for _ in range(draw(st.integers(2, 5)))]
        whole = graph.par_all(parts, weight=draw(WEIGHTS))  # type: ignore[arg-type]
        assert whole is not None
        return whole
    if shape == "seq":
        whole = graph.seq(draw(sub_graphs(graph, depth - 1)), draw(sub_graphs(graph, depth - 1)),
                          weight=draw(WEIGHTS))
        assert whole is not None
        return whole
    info = DeviceBoxInfo(transfer_in=draw(WEIGHTS), kernel=draw(WEIGHTS),
                         transfer_out=draw(WEIGHTS), merge=0, regions=("r",))
    return graph.device_box(draw(sub_graphs(graph, depth - 1)), info, centres=(),
                            space_start=draw(SPACES), space_end=draw(SPACES),
                            space_after=draw(SPACES))


@st.composite
def cost_graphs(draw) -> CostGraph:
    graph = CostGraph()
    graph.finish(draw(sub_graphs(graph)))
    return graph


@settings(max_examples=150, deadline=None)
@given(graph=cost_graphs(), procs=st.integers(1, 5), policy=st.sampled_from(POLICIES))
def test_generated_graphs_schedule_the_same_compiled(graph, procs, policy):
    with pytest.MonkeyPatch.context() as monkeypatch:
        both(graph, procs, policy, monkeypatch)
        longest_both(graph, monkeypatch)
        for intervals in (1, 3, 8):
            timelines_both(graph, procs, policy, monkeypatch, intervals)
        pictures_both(graph, monkeypatch)


# -- where the compiled pass is not exact, Python runs --------------------------------------------
@pytest.mark.parametrize("weights, fits", [
    ([1, 2, 3], True),
    ([0.5, 2**52, 3], True),  # an int past 2^53 in all: a double would round the clock
    ([2**52, 2**52, 1], False),
    ([10**400, 1], False),
    ([math.inf, 1], False),
    ([math.nan, 1], False),
])
def test_the_compiled_simulation_runs_only_where_it_is_exact(weights, fits, monkeypatch):
    graph = CostGraph()
    current = graph.node()
    for weight in weights:
        current = graph.step(current, weight, EdgeKind.OP, NodeKind.POINT)
    graph.finish(current)
    monkeypatch.setattr(passes, "COMPILED_FROM", 0)
    assert schedule_module._fits_compiled(_GraphIndex(graph)) is fits
    if fits:
        both(graph, 2, Policy.DEPTH_FIRST, monkeypatch)


def test_small_graphs_load_no_numba():
    """A small profile runs the Python passes and never imports numba."""
    code = ("import sys\nfrom cli.main import main\n"
            "main(['profile', 'examples/zipmul.lg', '--param', 'n=100', '-o', '/dev/null'])\n"
            "assert 'numba' not in sys.modules, 'numba was imported'\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)


LARGE_PROFILE = ("from cli.main import main\n"
                 "main(['profile', 'examples/dot.lg', '--param', 'n=3000', '-o', sys.argv[1]])\n")


def profile_with(tmp_path, setup: str, check: str) -> None:
    """A large profile in a fresh process, after `setup` and then asserting `check`: the same
    report as a profile in Python alone (COMPILED_FROM past the graph)."""
    output, reference = tmp_path / "out.txt", tmp_path / "reference.txt"
    code = f"import sys\nimport graphs.passes as passes\n{setup}\n{LARGE_PROFILE}{check}\n"
    run = subprocess.run([sys.executable, "-c", code, str(output)], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    python = "import sys\nimport graphs.passes as passes\npasses.COMPILED_FROM = 10**12\n"
    subprocess.run([sys.executable, "-c", python + LARGE_PROFILE, str(reference)], cwd=ROOT,
                   check=True, capture_output=True)
    assert output.read_text() == reference.read_text()


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_the_built_passes_load_without_numba(tmp_path):
    """Where the module can be built (numba and a C compiler here), a large profile loads it,
    and not numba."""
    profile_with(tmp_path, "", "assert type(passes._passes[0]) is passes._Built\n"
                               "assert 'numba' not in sys.modules")


def test_without_the_built_module_the_passes_run_just_in_time(tmp_path):
    profile_with(tmp_path, "passes._built = lambda: None",
                 "import graphs.compiled\nassert passes._passes[0] is graphs.compiled")


def test_without_a_place_for_numba_s_cache_the_python_passes_run(tmp_path):
    """Where numba finds nowhere to write its cache (it then refuses `cache=True`) and nothing
    was built, a large profile runs the Python passes."""
    setup = ("passes._built = lambda: None\n"
             "import numba.core.caching as caching\n"
             "def nowhere(self):\n"
             "    raise PermissionError('read-only')\n"
             "caching._CacheLocator.ensure_cache_path = nowhere\n")
    profile_with(tmp_path, setup, "assert passes._passes == [None]\n"
                                  "assert 'graphs.compiled' not in sys.modules")
