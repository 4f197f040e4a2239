"""§7.1 of the specification, reproduced: zipmul on the CPU and on the GPU.

The paper's figures, hetprof's exact counts, and where they differ:

- CPU (§7.1.1, P = 2, δr = δw = 1). Each f e_i costs 6 (5 memory edges and one ⊕ between fst and
  snd: Fig. 10), the ⊗ tree adds 4(n-1): the parmap part is 4(n-1) + 6n = 10n - 4. The cost centre
  "gray" (the grayed parmap) adds what §7.1 leaves out: the read of the vector `arrs` (1, it ends
  at the fork) and the parmap rule's own merge and allocation (⊕δm [u1] ⊕δa [u2], 2): 10n - 1.
- The paper's time is work / P = (4(n-1) + 6n) / 2. A real greedy 1DF schedule cannot beat the
  span; its time lies between the bounds `--symbolic` reports (graphs.symbolic_profile.time_bounds).
- Space: the paper counts 3n for the grayed code (a 2-word closure per element, as its semantics
  allocates the closure for every f e_i, plus 1 per result). hetprof uses the lambda written in
  place, as Fig. 10 does, so it allocates no closure: n results plus the n-word result vector, 2n.
- GPU (§7.1.2), global memory only, `paper` mode: each thread costs 5l + 1; hetprof's kernel adds
  the vector's read before the threads and the merge and the result vector's write after them
  (2l + 1), and counts rounds as ⌈groups / (H / work-group size)⌉. The paper's ⌈(n/H)/k⌉ with
  k = n/(w·p) work groups equals ⌈w·p/H⌉, which is 1 for any n: a typo for ⌈n/H⌉, which is what
  hetprof's rounds are when H is a multiple of the work-group size.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import ROOT, run

from graphs.schedule import schedule
from models.device_profile import DeviceProfile

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
    # loads r0, wg words per global access of cost l: the paper's l·k (k work groups), paid once
    # per group, in parallel; the last group is launched whole, so it loads with wg threads too. The paper assumes no bank conflicts; here the input pairs lie 4
    # words apart (each element of the input allocated 1, i + 1 and the pair), so with more
    # than 8 threads in a warp, reading the pairs (fst, snd) and the second integers conflicts:
    # three steps cost 2 instead of 1.
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
