"""Investigation tool (branch cachegap, written against dc83c79; see
docs/validation/cachegap.md). Run from the repository root:
    PYTHONPATH=. python benchmarks/cachegap/count.py gemm 16

Run a suite program's `on`s on PoCL with the generated kernels instrumented: per kernel, the
global loads (by kind), stores, slot reads and allocation atomics each thread does, on average.
Side by side, the same thread's cost path from the explicit evaluator (cache mode)."""
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

import models.opencl.codegen as cg
import models.opencl.runner as runner
from graphs.semantics.explicit import OffloadCollector, evaluate
from graphs.semantics.options import EvaluationOptions
from models.device_profile import load_profile
from models.opencl.validate import _variants, size_params
from profiler.checker import bind_parameters, check_program
from profiler.parser import parse

CATS = ["val", "pair", "idx", "hdr", "cell", "count", "slot", "st", "slotst", "alloc", "threads"]
NC = len(CATS)
# codegen.py line of each `self.load(...)` call -> what it loads (fails loudly if codegen moved)
LINES = {326: "pair", 332: "idx", 333: "hdr", 335: "cell", 341: "hdr", 355: "count", 367: "hdr",
         373: "cell", 460: "val", 461: "val", 463: "val", 464: "val", 486: "hdr", 644: "cell"}
_orig_load = cg._Emitter.load
def load(self, address, node):
    line = sys._getframe(1).f_lineno
    cat = LINES.get(line)
    assert cat, f"unknown load site {line}"
    return f"LD_{cat.upper()}({address})"
cg._Emitter.load = load

def _brackets(src, start):
    depth = 0
    for k in range(start, len(src)):
        if src[k] == "[":
            depth += 1
        elif src[k] == "]":
            depth -= 1
            if depth == 0:
                return k
    raise ValueError

def instrument(src, base):
    # rvalue heap[...] still raw: vector cells (reduce pairs, the map element); stores counted
    out, k = [], 0
    while True:
        m = re.compile(r"\b(heap|slots)\[").search(src, k)
        if not m:
            out.append(src[k:])
            break
        end = _brackets(src, m.end() - 1)
        inner = src[m.end():end]
        after = src[end + 1:end + 4]
        out.append(src[k:m.start()])
        inner_i = instrument(inner, base) if ("heap[" in inner or "slots[" in inner) else inner
        if after.startswith(" = "):
            cat = "ST" if m.group(1) == "heap" else "SLOTST"
            out.append(f"(C[{CATS.index(cat.lower())}]++), {m.group(1)}[{inner_i}]")
        else:
            cat = "cell" if m.group(1) == "heap" else "slot"
            out.append(f"(C[{CATS.index(cat)}]++, {m.group(1)}[{inner_i}])")
        k = end + 1
    return "".join(out)

def instrument_source(source, base):
    head, _, rest = source.partition("#define ALLOC(r, words) hp_alloc(bases, caps, aps, err, (r), (words))\n")
    macros = "".join(f"#define LD_{c.upper()}(a) (C[{CATS.index(c)}]++, heap[a])\n"
                     for c in ["val", "pair", "idx", "hdr", "cell", "count"])
    macros += f"#define ALLOC(r, words) (C[{CATS.index('alloc')}]++, hp_alloc(bases, caps, aps, err, (r), (words)))\n"
    kernels = rest.split("\n\n")
    done = []
    for ki, kern in enumerate(kernels):
        lines = kern.strip("\n").split("\n")
        if not lines[0].startswith("__kernel"):
            done.append(kern)
            continue
        body = instrument("\n".join(lines[1:-1]), base)
        dump = (f"    C[{NC-1}] = 1; for (int q = 0; q < {NC}; q++) "
                f"atom_add(&slots[{base} + {ki * NC} + q], C[q]);")
        done.append("\n".join([lines[0], f"    long C[{NC}] = {{0}};", body, dump, "}"]))
    src = "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n" + head + macros + "\n\n".join(done)
    return src, len(kernels)

captured = {}
class CLProxy:
    def __init__(self, cl): self._cl = cl
    def __getattr__(self, k):
        if k == "Buffer":
            def Buffer(*a, **kw):
                b = self._cl.Buffer(*a, **kw)
                h = kw.get("hostbuf")
                if h is not None and h.dtype == np.int64 and h.size == captured.get("size"):
                    captured["buf"] = b
                return b
            return Buffer
        return getattr(self._cl, k)

def suite_offloads(name, n):
    """A suite program's GPU placement evaluated explicitly under the suite's cache profile:
    the checked program, its parameters, and the collector of its offloads."""
    path = Path(f"benchmarks/suite/{name}.lg")
    checked = check_program(parse(path.read_text(), str(path)))
    gpu_checked, _ = _variants(checked)
    params = bind_parameters(checked, size_params(checked, n, name))
    profile = load_profile("profiles/nvidia-h200-suite.cache.json")
    col = OffloadCollector()
    evaluate(gpu_checked, params, EvaluationOptions(profile=profile, gpu_mode="cache", observer=col))
    return gpu_checked, params, col


def main(name, n, show=False):
    gpu_checked, params, col = suite_offloads(name, n)
    session = runner.DeviceSession(runner.select_device("0"))
    session.cl = CLProxy(session.cl)
    orig_plan = runner._plan
    results = []
    for k, off in enumerate(col.offloads):
        plan, names = orig_plan(session, off, gpu_checked.types, params)
        base = plan.slots
        src, nk = instrument_source(plan.source, base)
        plan.source = src
        plan.slots = base + nk * NC
        captured["size"] = plan.slots
        runner._plan = lambda *a, _p=plan, _n=names, **kw: (_p, _n)
        try:
            run = runner.run_offload(session, off, gpu_checked.types, params, repeats=1, warmup=0)
        finally:
            runner._plan = orig_plan
        assert run.matches is not False
        out = np.zeros(plan.slots, np.int64)
        session.cl.enqueue_copy(session.queue, out, captured["buf"]).wait()
        results.append((k, plan, out, base, off))
    return results, col

if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        raise SystemExit(__doc__)
    name, n = sys.argv[1], int(sys.argv[2])
    results, col = main(name, n)
    for k, plan, out, base, off in results:
        names = re.findall(r"__kernel void (\w+)\(", plan.source)
        print(f"== {name} n={n} on #{k}  steps {[(s.kind, s.kernel) for s in plan.steps]}")
        for ph in off.on.paths:
            c = Counter()
            for t in ph.threads:
                for e in t:
                    if e.access is not None:
                        c["R" if e.access.kind.name == "READ" else "W"] += 1
                    else:
                        c[e.kind.name] += 1
            T = len(ph.threads)
            print(f"  model phase parallel={ph.parallel} threads={T}: " + ", ".join(f"{k2} {v/T:.2f}" for k2, v in sorted(c.items())))
        rows = [c for c in range(0, (plan.slots - base) // NC)]
        for ki in rows:
            c = out[base + ki * NC: base + (ki + 1) * NC]
            if c[-1] == 0:
                continue
            t = c[-1]
            print(f"  code {names[ki] if ki < len(names) else ki} threads {t:6d}: " + ", ".join(f"{CATS[j]} {c[j]/t:.2f}" for j in range(NC - 1) if c[j]))
