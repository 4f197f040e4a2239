"""§7.1 of the specification, reproduced: zipmul on the CPU and on the GPU.

Two parts. The first runs hetprof's calibrated rules (the default) and states where they differ
from §7.1's arithmetic; the second runs the paper's own rules (`--rules paper`,
graphs/semantics/options.py) and asserts §7.1's formulas exactly as the paper prints them, at
n = 1..64 and symbolically, and shows where the paper's own arithmetic is inconsistent.

Under the calibrated rules (every difference from §7.1; the README's table has the reasons):

- CPU (§7.1.1, P = 2, δr = δw = 1). Each f e_i costs 6 (5 memory edges and one ⊕ between fst and
  snd: Fig. 10), the ⊗ tree adds 4(n-1): the parmap part is 4(n-1) + 6n = 10n - 4. The cost centre
  "gray" (the grayed parmap) adds what §7.1 leaves out: the read of the vector `arrs` (1, it ends
  at the fork) and the parmap rule's own merge and allocation (⊕δm [u1] ⊕δa [u2], 2): 10n - 1.
- The paper's time is work / P = (4(n-1) + 6n) / 2. A real greedy 1DF schedule cannot beat the
  span; its time lies between the bounds `--symbolic` reports (graphs.symbolic_profile.time_bounds).
- Space: the paper counts 3n for the grayed code (a 2-word closure per element, as its semantics
  allocates the closure for every f e_i, plus 1 per result). The calibrated rules use the lambda
  written in place, as Fig. 10 does, so they allocate no closure: n results plus the n-word result
  vector, 2n.
- Region growth: r0 starts at BSIZE = 64 words and grows (ExpandW, Δa = 1 each) from n = 8 on
  (§7.1 assumes it never does); that is in the program's work, not the grayed code's.
- GPU (§7.1.2), global memory only, `paper` mode: each thread costs 5l + 1; hetprof's kernel adds
  the vector's read before the threads and the merge and the result vector's write after them
  (2l + 1), and counts rounds as ⌈groups / (H / work-group size)⌉. The paper's ⌈(n/H)/k⌉ with
  k = n/(w·p) work groups equals ⌈w·p/H⌉, which is 1 for any n: a typo for ⌈n/H⌉, which is what
  hetprof's rounds are when H is a multiple of the work-group size. The `on` edge also holds a
  merge step of 1 per region (Def. 4.3's update of ap and s), which the paper folds into δ†. The
  default GPU mode, `dmm`, prices the kernel by Nakano's DMM/UMM instead (365 at n = 1000 with the
  default profile, against `paper` mode's (5l + 1) + 2l + 1 = 226).
- GPU space: both copies of r0 are alive at the merge, 2·(r0 + 2n) words, where §7.1 counts 6n.
- Local memory: a kernel first stages r0's words as they are into each work group's local memory
  (⌈staged words / wg⌉·l per group, growing with the whole region: 896 at n = 1000), its reads of
  those words cost 1 and its writes (fresh words, not staged) l. That is not the paper's l·k (one
  thread per group writing results back), nor its 9n of space.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp
from conftest import ROOT, run

from graphs.schedule import schedule
from graphs.semantics.explicit import evaluate
from graphs.semantics.options import EvaluationOptions
from graphs.semantics.symbolic import size_symbol
from graphs.symbolic_profile import symbolic_profile
from models.device_profile import PAPER_PROFILE, DeviceProfile
from profiler.checker import check_program
from profiler.errors import EvaluationError
from profiler.parser import parse
from profiler.regions import VecV, size_of
from profiler.syntax import Lambda, ParMap, Span, children

ZIPMUL = (ROOT / "examples" / "zipmul.lg").read_text()
ZIPMUL_CPU = (ROOT / "examples" / "zipmul_cpu.lg").read_text()


def gray_edges(evaluation):
    return [(u, v, d) for u, v, d in evaluation.graph.graph.edges(data=True)
            if "gray" in d["centres"]]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 32, 100])
def test_gray_work_is_ten_n_minus_one(n):
    evaluation = run(ZIPMUL_CPU, {"n": n})
    work = sum(d["weight"] for _, _, d in gray_edges(evaluation))
    parmap_part = 4 * (n - 1) + 6 * n  # §7.1.1
    assert parmap_part == 10 * n - 4
    assert work == parmap_part + 3


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 32])
def test_each_thread_costs_six_on_the_cpu(n):
    evaluation = run(ZIPMUL_CPU, {"n": n})
    edges = gray_edges(evaluation)
    kinds = [d["kind"].value for _, _, d in edges]
    assert kinds.count("fork") == 2 * (n - 1) and kinds.count("join") == 2 * (n - 1)
    thread_edges = [d for _, _, d in edges
                    if d["kind"].value in ("read", "write", "expand", "seq")]
    # per thread: fst read, ⊕, snd read, 2 reads, 1 write = 6; plus the vector read and the write
    assert len(thread_edges) == 6 * n + 2


def test_gray_time_under_1df_with_two_processors():
    for n, expected in [(1, 9), (2, 11)]:
        evaluation = run(ZIPMUL_CPU, {"n": n})
        gray = [c for c in _centres(evaluation, 2) if c.name == "gray"][0]
        assert gray.time == expected  # n = 1: a chain of 9; n = 2: the two threads side by side
    for n in (8, 32, 100):
        evaluation = run(ZIPMUL_CPU, {"n": n})
        gray = [c for c in _centres(evaluation, 2) if c.name == "gray"][0]
        paper = (4 * (n - 1) + 6 * n) / 2
        assert gray.work == 10 * n - 1
        assert max(gray.work / 2, gray.span) <= gray.time <= gray.work / 2 + gray.span
        assert gray.time >= paper  # the paper's division is a lower bound a schedule cannot beat


def _centres(evaluation, procs):
    from graphs.analysis import _centres as centres

    return centres(evaluation, schedule(evaluation.graph, procs, "1df"))


@pytest.mark.parametrize("n", [1, 4, 8, 50])
def test_region_sizes(n):
    # iota: the count literal 1 + n ints + n-word vector; input: per element the literal 1, the
    # sum and the pair (4 words) + the n-word vector; the closure of `arrs` 2; gray: 2n
    for program in (ZIPMUL, ZIPMUL_CPU):
        evaluation = run(program, {"n": n})
        (region,) = evaluation.regions.values()
        assert region.label == "r0"
        assert region.ap == (1 + 2 * n) + 5 * n + 2 + 2 * n


@pytest.mark.parametrize("n", [1, 8, 50])
def test_gray_space_is_two_n(n):
    evaluation = run(ZIPMUL_CPU, {"n": n})
    gray = [c for c in _centres(evaluation, 2) if c.name == "gray"][0]
    assert gray.space == 2 * n  # the paper's 3n counts a closure per element; see module doc


def paper_profile(threads_at_once: int = 64) -> DeviceProfile:
    return DeviceProfile().with_gpu(mode="paper", warp_width=32, work_group_size=32,
                                    global_latency=32, threads_at_once=threads_at_once)


@pytest.mark.parametrize("n", [1, 8, 32, 33, 64, 65, 200])
def test_gpu_global_memory_only(n):
    profile = paper_profile()
    evaluation = run(ZIPMUL, {"n": n}, profile=profile)
    (on,) = evaluation.ons
    latency = profile.gpu.global_latency
    groups = math.ceil(n / profile.gpu.work_group_size)
    rounds = math.ceil(groups / (profile.gpu.threads_at_once // profile.gpu.work_group_size))
    assert on.box.time == (5 * latency + 1) * rounds + 2 * latency + 1
    # δ*(r0): r0 as it is when the `on` starts: iota (1 + 2n), input (5n), closure (2)
    pushed = (1 + 2 * n) + 5 * n + 2
    assert on.pushed_words == pushed
    assert on.info.transfer_in == profile.host_to_device.latency + pushed / 4
    # δ†(r0): what the GPU allocated: n products and the n-word vector
    assert on.gpu_words == 2 * n
    assert on.info.transfer_out == profile.device_to_host.latency + 2 * n / 4


LOCAL = ZIPMUL.replace("on profile", "on local [r0] profile")


@pytest.mark.parametrize("n", [1, 8, 32, 64])
def test_gpu_local_memory_variant(n):
    profile = paper_profile(threads_at_once=1024)
    evaluation = run(LOCAL, {"n": n}, profile=profile)
    (on,) = evaluation.ons
    latency = profile.gpu.global_latency
    wg = profile.gpu.work_group_size
    # The kernel's reads of r0 are local (1): a thread costs 5, and its result's write, to a
    # word the kernel allocates (not staged), global memory's l. The serial code after it reads
    # the vector and writes the result from global memory: l + 1 + l. Each work group first
    # loads r0, wg words per global access of cost l, paid once per group, in parallel (this is
    # hetprof's staging, not the paper's l·k: see the second part); the last group is launched
    # whole, so it loads with wg threads too. The paper assumes no bank conflicts; here the
    # input pairs lie 4 words apart (each element of the input allocated 1, i + 1 and the pair),
    # so with more than 8 threads in a warp, reading the pairs (fst, snd) and the second
    # integers conflicts: three steps cost 2 instead of 1.
    pushed = (1 + 2 * n) + 5 * n + 2
    staging = math.ceil(pushed / wg) * latency
    conflicting_steps = 3 if n > 8 else 0
    assert on.box.time == 5 + latency + conflicting_steps + staging + 2 * latency + 1
    assert (on.box.conflicts > 0) == (n > 8)


def test_gpu_space_holds_both_copies_at_the_merge():
    n = 16
    evaluation = run(ZIPMUL, {"n": n}, profile=paper_profile())
    result = schedule(evaluation.graph, 2, "1df")
    pushed = (1 + 2 * n) + 5 * n + 2
    # while the results are copied back both the GPU copy and the grown CPU region are alive
    assert result.peak_space_gpu == pushed + 2 * n
    assert result.peak_space_cpu == pushed + 2 * n
    assert result.peak_space == 2 * (pushed + 2 * n)


def test_zipmul_listing_is_the_papers():
    text = Path(ROOT / "examples" / "zipmul.lg").read_text()
    for line in ["letregion r0 in",
                 "lambda arrs : (Vec (int r0, int r0), r0) [r0].",
                 "parmap (lambda p:((int r0, int r0), r0) [r0].(fst p * snd p) at r0) arrs at r0",
                 "at r0"]:
        assert line in text


# -- the paper's rules ---------------------------------------------------------------------------
#
# Under `--rules paper` each f e_i is the application rule's (Fig. 6: `E; σ; 𝒯; f e_i ⇓ ...`):
# the lambda written in place is evaluated per element, so each thread writes its closure (δw,
# |clos| + 1 = 3 words), reads it (δr), ⊕ into the body, and runs Fig. 10's body (6, 5l + 1 on the
# GPU). That is where §7.1's space 3n comes from ("2 for the closure and 1 for the allocation of
# the result for each element"), and it is not in its work 6n: the paper's three CPU numbers
# cannot all hold under one rule. The tests below assert each printed formula on the part of the
# graph it counts, and the rest exactly.

SIZES = range(1, 65)


def paper_options(**gpu) -> EvaluationOptions:
    profile = PAPER_PROFILE.with_gpu(**gpu) if gpu else PAPER_PROFILE
    return EvaluationOptions(profile=profile)


def paper_run(program: str, n: int, **gpu):
    evaluation = evaluate(check_program(parse(program, "zipmul.lg")), {"n": n},
                          paper_options(**gpu))
    evaluation.graph.self_check()
    return evaluation


def gray_spans(program: str) -> tuple[Span, Span]:
    """The spans of the grayed lambda `lambda p: ... (fst p * snd p) at r0` and of its body:
    Fig. 10's graph is the body's."""
    checked = check_program(parse(program, "zipmul.lg"))
    todo = [checked.body]
    while todo:
        node = todo.pop()
        if isinstance(node, ParMap) and isinstance(node.func, Lambda) and node.func.param == "p":
            return node.func.span, node.func.body.span
        todo.extend(children(node))
    raise AssertionError("no grayed parmap")


def inside(span: Span | None, outer: Span) -> bool:
    return (span is not None and (span.line, span.column) >= (outer.line, outer.column)
            and (span.end_line, span.end_column) <= (outer.end_line, outer.end_column))


def gray_parts(evaluation, program: str) -> dict[str, list[float]]:
    """The grayed code's CPU edge weights split as §7.1 counts them: Fig. 10's bodies, the ⊗
    tree's unit edges; and what the parmap rule adds: the closure's writes (the lambda's own
    edges), the reads and ⊕ edges outside the body (the closure's reads, the ⊕ into each body, the
    vector's read into the fork), and ⊕δm [u1] ⊕δa [u2]."""
    function, body = gray_spans(program)
    parts: dict[str, list[float]] = {"fig10": [], "fork_join": [], "closure_write": [],
                                     "read_or_seq": [], "merge_and_vector": []}
    for _, _, d in gray_edges(evaluation):
        kind = d["kind"].value
        if inside(d["span"], body):
            parts["fig10"].append(d["weight"])
        elif kind in ("fork", "join"):
            parts["fork_join"].append(d["weight"])
        elif kind == "write" and d["span"] == function:
            parts["closure_write"].append(d["weight"])
        elif kind in ("read", "seq"):
            parts["read_or_seq"].append(d["weight"])
        else:
            parts["merge_and_vector"].append(d["weight"])
    return parts


@pytest.mark.parametrize("n", SIZES)
def test_paper_rules_gray_cpu_work_is_printed_formula_plus_the_rules_own_terms(n):
    evaluation = paper_run(ZIPMUL_CPU, n)
    parts = gray_parts(evaluation, ZIPMUL_CPU)
    # §7.1.1 as printed: 4(n-1) for the ⊗ tree, 6 for each f e_i's Fig. 10 graph
    assert sum(parts["fork_join"]) == 4 * (n - 1)
    assert sum(parts["fig10"]) == 6 * n
    # what Fig. 6's rule adds: per element the closure's write, its read and the ⊕ into the body
    # (the application rule c1 ⊕δr c2 ⊕ c3); once the read of `arrs` into the fork (it is not a
    # literal; §7.1 assumes it evaluated) and ⊕δm [u1] ⊕δa [u2]
    assert parts["closure_write"] == [1] * n
    assert parts["read_or_seq"] == [1] * (2 * n + 1)
    assert parts["merge_and_vector"] == [1, 1]
    work = sum(d["weight"] for _, _, d in gray_edges(evaluation))
    assert work == 4 * (n - 1) + 6 * n + 3 * n + 3 == 13 * n - 1


@pytest.mark.parametrize("n", SIZES)
def test_paper_rules_gray_time_on_two_processors(n):
    """§7.1.1's time, (4(n-1) + 6n) / 2, is the printed work over P. A greedy schedule of the
    rule's graph takes at least its work over P and its span, so more: at n = 1 the paper's 3 is
    less than Fig. 10's own chain of 6 edges, which no schedule shortens (the paper divides by P
    a graph with no parallelism)."""
    evaluation = paper_run(ZIPMUL_CPU, n)
    gray = [c for c in _centres(evaluation, 2) if c.name == "gray"][0]
    printed = (4 * (n - 1) + 6 * n) / 2
    assert gray.work == 13 * n - 1
    assert max(gray.work / 2, gray.span) <= gray.time <= gray.work / 2 + gray.span
    assert gray.time > printed
    if n == 1:
        assert printed == 3 and gray.span >= 6


@pytest.mark.parametrize("n", SIZES)
def test_paper_rules_gray_cpu_space_counts_three_n_as_printed(n):
    """§7.1.1's space 3n: "2 for the closure and 1 for the allocation of the result for each
    element". Σ|v| of the grayed code's per-element values is exactly that. What the rule also
    allocates: one word more per allocation (Fig. 3: ap + |v| + 1; 2n + 1 allocations) and the
    result vector [ℓ1, ..., ℓn] (δa, |v| = n), which §7.1 does not count: 6n + 1 words."""
    evaluation = paper_run(ZIPMUL_CPU, n)
    gray = [c for c in _centres(evaluation, 2) if c.name == "gray"][0]
    assert gray.space == 6 * n + 1
    (region,) = evaluation.regions.values()
    start = region.ap - gray.space
    values = [v for o, v in region.values.items() if o >= start]
    per_element = [v for v in values if not isinstance(v, VecV)]
    assert len(per_element) == 2 * n
    assert sum(size_of(v) for v in per_element) == 3 * n  # §7.1's 3n
    (vector,) = [v for v in values if isinstance(v, VecV)]
    assert size_of(vector) == n
    assert 3 * n + (2 * n + 1) + n == gray.space


def test_the_papers_three_cpu_numbers_cannot_all_hold():
    """Work 4(n-1) + 6n counts no closure per element; space 3n counts one. Under the paper's
    rule (a closure per element) the space part holds and the work has 3n more; under the
    calibrated rule (the lambda used in place) the work part holds and Σ|v| is n."""
    for n in (1, 8, 64):
        paper = paper_run(ZIPMUL_CPU, n)
        parts = gray_parts(paper, ZIPMUL_CPU)
        assert sum(map(sum, parts.values())) - (4 * (n - 1) + 6 * n) == 3 * n + 3
        calibrated = run(ZIPMUL_CPU, {"n": n})
        gray = [c for c in _centres(calibrated, 2) if c.name == "gray"][0]
        assert gray.work - (4 * (n - 1) + 6 * n) == 3  # no per-element term
        assert gray.space - n == n  # n results of one word, and the n-word vector: no 3n


# §7.1.2 on a small GPU, so that rounds come at n = 1..64: w = 4 threads per warp, p = 2 warps per
# work group (k = ⌈n/8⌉ work groups), H = 16 threads at once (2 work groups a round), l = 32. The
# input's pairs lie 10 words apart and its ints 2 and 10 apart, so a warp of 4 threads reads 4
# distinct banks: §7.1.2's "no bank conflicts" holds and Fig. 9's BankConf rules never fire.
SMALL_GPU = {"warp_width": 4, "work_group_size": 8, "threads_at_once": 16, "global_latency": 32}


def printed_rounds(n: int) -> int:
    """§7.1.2's ⌈(n/H)/k⌉ with k = n/(w·p): ⌈w·p/H⌉, 1 for every n here."""
    w, p, h = 4, 2, 16
    k = n / (w * p)
    return math.ceil((n / h) / k)


def pushed_words(n: int) -> int:
    """r0 when the `on` starts, each allocation moving ap by |v| + 1: iota (the count 2, n ints of
    2, its vector n + 1), the input (per element the closure 3, the literal 1 2, i + 1 2, the pair
    3; its vector n + 1) and the closure of `arrs` (3): 14n + 7."""
    return (2 + 2 * n + n + 1) + (10 * n + n + 1) + 3


@pytest.mark.parametrize("n", SIZES)
def test_paper_rules_gpu_global_memory(n):
    """δ*(r0) + δ†(r0) + (5l + 1)·⌈(n/H)/k⌉, with the paper's rules: each thread runs Fig. 10's
    5l + 1 and the application rule's closure write, read and ⊕ (2l + 1); the parmap rule's
    vector read, δm and δa (2l + 1) run once around the kernel; rounds are ⌈n/H⌉ (here H is a
    multiple of the work-group size). The printed ⌈(n/H)/k⌉ is 1 at every n: it agrees with the
    device box up to n = H and not beyond (the paper's typo for ⌈n/H⌉)."""
    evaluation = paper_run(ZIPMUL, n, **SMALL_GPU)
    (on,) = evaluation.ons
    latency = 32
    rounds = math.ceil(n / 16)
    transfer_in = 10000 + pushed_words(n) / 4
    transfer_out = 10000 + (6 * n + 1) / 4  # the GPU's closures (3), products (2), vector (n + 1)
    assert on.pushed_words == pushed_words(n) and on.gpu_words == 6 * n + 1
    assert on.info.transfer_in == transfer_in and on.info.transfer_out == transfer_out
    assert on.info.merge == 0 and on.info.grow == 0  # δ† is the merge's cost (Fig. 6)
    assert on.box.conflicts == 0
    printed = transfer_in + transfer_out + (5 * latency + 1) * printed_rounds(n)
    per_element = (2 * latency + 1) * rounds
    once = 2 * latency + 1
    assert on.info.total == transfer_in + transfer_out + (5 * latency + 1) * rounds \
        + per_element + once
    assert printed_rounds(n) == 1
    if n <= 16:
        assert on.info.total - printed == per_element + once
    else:
        assert rounds > printed_rounds(n)


LOCAL = ZIPMUL.replace("on profile", "on local [r0] profile")


@pytest.mark.parametrize("n", SIZES)
def test_paper_rules_gpu_local_memory(n):
    """δ*(r0) + δ†(r0) + (5·1 + 1)·⌈(n/H)/k⌉ + l·k: every access to r0 costs 1 (the region is in
    local memory), and after the kernel one thread per work group writes the group's results to
    global memory, l for each of the k = ⌈n/(w·p)⌉ work groups. The rule's per-element closure
    write, read and ⊕ (3) and its vector read, δm and δa (3, here local) come on top, as above."""
    evaluation = paper_run(LOCAL, n, **SMALL_GPU)
    (on,) = evaluation.ons
    latency = 32
    k = math.ceil(n / 8)
    rounds = math.ceil(n / 16)
    transfer_in = 10000 + pushed_words(n) / 4
    transfer_out = 10000 + (6 * n + 1) / 4
    assert on.box.conflicts == 0
    assert on.box.time == (5 * 1 + 1) * rounds + latency * k + 3 * rounds + 3
    printed = transfer_in + transfer_out + (5 * 1 + 1) * printed_rounds(n) + latency * k
    assert on.info.total == printed + (6 * rounds - 6 * printed_rounds(n)) + 3 * rounds + 3


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("local, copies", [(False, 2), (True, 3)])
def test_paper_rules_gpu_space_six_n_and_nine_n(n, local, copies):
    """§7.1.2: "6n and 9n space respectively – since during the transfer process from the GPU to
    the CPU both regions need to be alive, and since the local version will replicate the local
    memory state to global memory". At the merge the grayed code's words are held twice (the CPU's
    r0 and its GPU copy), and with local memory three times (also the local copy): 2 and 3 times
    its 3n, as for the CPU, plus the rule's +1 per allocation and result vector (3n + 1 more), and
    r0's words from before the `on`, copied as many times."""
    evaluation = paper_run(LOCAL if local else ZIPMUL, n, **SMALL_GPU)
    result = schedule(evaluation.graph, 2, "1df")
    gray_words = 6 * n + 1
    assert result.peak_space == copies * (pushed_words(n) + gray_words)
    assert copies * 3 * n == (6 * n if not local else 9 * n)  # the printed figures
    assert result.peak_space_cpu == pushed_words(n) + gray_words
    assert result.peak_space_gpu == (copies - 1) * (pushed_words(n) + gray_words)


def test_paper_rules_need_room_on_the_gpu():
    """NoExpandWE (Fig. 9): with the calibrated BSIZE of 64 words r0 has no room for the
    kernel's words, which the paper's GPU cannot grow; the calibrated rules grow it before the
    push (Harlan's retry)."""
    with pytest.raises(EvaluationError, match="full on the GPU"):
        evaluate(check_program(parse(ZIPMUL, "zipmul.lg")), {"n": 64},
                 EvaluationOptions(rules="paper"))
    assert run(ZIPMUL, {"n": 64}).ons[0].info.grow > 0


# -- the same at large n, symbolically -----------------------------------------------------------

N = size_symbol("n")


def paper_symbolic(program: str, **gpu):
    return symbolic_profile(check_program(parse(program, "zipmul.lg")), paper_options(**gpu))


def test_paper_rules_symbolic_cpu_formulas():
    """§7.1.1 at every n: the grayed code's work is 4(n-1) + 6n and the rule's 3n + 3."""
    profile = paper_symbolic(ZIPMUL_CPU)
    work = profile.evaluation.centres["gray"].work
    assert sp.expand(work - (4 * (N - 1) + 6 * N) - (3 * N + 3)) == 0
    # the whole program's space: r0 before the grayed code (14n + 7) and its 6n + 1
    assert sp.expand(profile.formulas()["space_cpu"] - (pushed_words(N) + 6 * N + 1)) == 0
    for n in (10**3, 10**6, 10**9):
        assert profile.at({"n": n})["space"]["cpu"] == pushed_words(n) + 6 * n + 1


@pytest.mark.parametrize("local", [False, True])
def test_paper_rules_symbolic_gpu_formulas(local):
    """§7.1.2 at every n: the device box's kernel is the thread's time per round, ⌈n/H⌉ rounds,
    (with local memory) l·k for k = ⌈n/(w·p)⌉ work groups, and the rule's once-only 2l + 1 (3
    locally); the `on` adds δ*(r0) and δ†(r0); space is 2 (3) copies of r0 with the 6n + 1
    words the GPU allocated."""
    profile = paper_symbolic(LOCAL if local else ZIPMUL, **SMALL_GPU)
    formulas = profile.formulas({"n": 64})  # work-group times priced at n = 64 (8 groups)
    latency = 32
    rounds = sp.ceiling(sp.ceiling(N / 8) / 2)  # ⌈groups / (H / wg)⌉ = ⌈n/H⌉
    if local:
        kernel = (5 * 1 + 1) * rounds + 3 * rounds + latency * sp.ceiling(N / 8) + 3
    else:
        kernel = (5 * latency + 1) * rounds + (2 * latency + 1) * rounds + 2 * latency + 1
    assert sp.expand(formulas["on0.kernel"] - kernel) == 0
    transfer_in = 10000 + pushed_words(N) / sp.Integer(4)
    transfer_out = 10000 + (6 * N + 1) / sp.Integer(4)
    assert sp.expand(formulas["on0.transfer_in"] - transfer_in) == 0
    assert sp.expand(formulas["on0.transfer_out"] - transfer_out) == 0
    assert formulas["on0.merge"] == 0 and formulas["on0.grow"] == 0
    copies = 3 if local else 2
    assert sp.expand(formulas["space_peak"] - copies * (pushed_words(N) + 6 * N + 1)) == 0
    for n in (100, 500):  # the formulas' values are the explicit evaluator's
        (on,) = paper_run(LOCAL if local else ZIPMUL, n, **SMALL_GPU).ons
        assert on.box.time == int(kernel.subs(N, n))
        assert profile.at({"n": n})["on"][0]["kernel"] == on.box.time


def test_hetprof_profile_rules_paper_symbolic_prints_section_71s_formulas():
    """The command of issue 16, with the paper preset's profile (l = 32, w = 32, work groups of
    256, H = 65 536): the kernel is (5l + 1) + (2l + 1) = 226 per round of ⌈⌈n/256⌉/256⌉ = ⌈n/H⌉
    and 2l + 1 = 65 once, the GPU allocates 6n + 1 words, and the grayed code on the CPU costs
    4(n-1) + 6n + 3n + 3 = 13n - 1."""
    gpu = subprocess.run([sys.executable, "-m", "cli", "profile", str(ROOT / "examples" /
                                                                       "zipmul.lg"),
                          "--rules", "paper", "--symbolic"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    kernel = re.search(r"^on #1 kernel +(.+?)  +", gpu, re.MULTILINE).group(1)
    assert kernel == "226*⌈⌈n/256⌉/256⌉ + 65"  # the text report writes ⌈x⌉ (JSON: ceiling)
    assert re.search(r"^on #1 words allocated on the GPU +6\*n \+ 1 ", gpu, re.MULTILINE)
    assert re.search(r"^on #1 grow +0 ", gpu, re.MULTILINE)
    assert re.search(r"^on #1 merge +0 ", gpu, re.MULTILINE)
    cpu = subprocess.run([sys.executable, "-m", "cli", "profile", str(ROOT / "examples" /
                                                                       "zipmul_cpu.lg"),
                          "--rules", "paper", "--symbolic"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert re.search(r'^centre "gray" work +13\*n - 1 ', cpu, re.MULTILINE)
