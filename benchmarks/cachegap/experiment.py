"""Investigation tool (branch cachegap, against dc83c79; docs/validation/cachegap.md). Run:
    PYTHONPATH=. python benchmarks/cachegap/experiment.py gemm 16

What the cache mode would predict if the cost paths had the generated code's memory operations:
CELL: the vector cell loads (Index's heap[v+1+k], a parmap thread's element, a reduce pair's two
cells); LEVEL: an in-thread reduce's per-level vector allocation (an atomic); NOCLOS: no closure
read on a GPU application (the backend inlines known functions); NOBOOK: no device charge for a
top-level parallel form's bookkeeping (the host reserves the result vector).
Explicit evaluator only, by monkeypatching; scratch."""
import sys

import graphs.devicebox as db
import graphs.semantics.explicit as ex
from benchmarks.cachegap.count import suite_offloads
from graphs.costgraph import EdgeKind
from graphs.semantics.explicit import _GPU, _READ
from profiler.regions import PairV, VecV
from profiler.syntax import App, Index

FLAGS = set()
E = ex.Evaluator
orig_eval, orig_parmap_rule, orig_reduce, orig_phase_cost = E.eval, E._parmap_rule, E._reduce, db.phase_cost

def cell_read(self, before, vec_loc, k, span):
    region, _ = self._peek(_GPU, vec_loc, span)
    return self._mem(before, _GPU, _READ, region, vec_loc.offset + k, span)

def new_eval(self, e, env, regions, world, outermost=False):
    if world is _GPU and isinstance(e, Index) and "CELL" in FLAGS:
        vec_loc, c1 = self.eval(e.vector, env, regions, world)
        idx_loc, c2 = self.eval(e.index, env, regions, world)
        idx, c = self._read(self._seq(world, c1, c2, e.span), world, idx_loc, e.span)
        vec, c = self._read(c, world, vec_loc, e.span)
        c = cell_read(self, c, vec_loc, idx.value, e.span)
        return vec.items[idx.value], c
    if world is _GPU and isinstance(e, App) and "NOCLOS" in FLAGS:
        f_loc, c1 = self.eval(e.func, env, regions, world)
        _, closure = self._peek(world, f_loc, e.span)
        a_loc, c2 = self.eval(e.arg, env, regions, world)
        value, c3 = self.eval(closure.body, {**closure.env, closure.param: a_loc}, closure.regions, world)
        return value, self._seq(world, self._seq(world, c1, c2, e.span), c3, e.span)
    return orig_eval(self, e, env, regions, world, outermost)

def new_parmap_rule(self, func, vector, region, span, env, regions, world):
    if world is not _GPU or "CELL" not in FLAGS:
        return orig_parmap_rule(self, func, vector, region, span, env, regions, world)
    closure, c_f = self._function(func, env, regions, world, span)
    vec_loc, c_v = self.eval(vector, env, regions, world)
    _, vec = self._peek(world, vec_loc, span)
    items, threads = [], []
    with self._kernel(world) as staged:
        for k, item in enumerate(vec.items):
            c0 = cell_read(self, None, vec_loc, k, span)
            v, c = self.eval(closure.body, {**closure.env, closure.param: item}, closure.regions, world)
            items.append(v)
            threads.append(self.paths.then(c0, c))
    c_par = self._par(world, threads, span, staged)
    with self._bookkeeping():
        c = self._read_into(world, self._seq(world, c_f, c_v, span), vec_loc, c_par, span)
        c = self._op(world, c, span, EdgeKind.MERGE, self._merge_cost(world))
        return self._alloc(c, world, regions, region, VecV(tuple(items)), span)

def new_reduce(self, func, zero, vector, region, span, env, regions, world):
    if world is not _GPU or not ({"CELL", "CELLR", "LEVEL"} & FLAGS):
        return orig_reduce(self, func, zero, vector, region, span, env, regions, world)
    in_thread = self.kernel_depth > 0
    closure, c_f = self._function(func, env, regions, world, span)
    z_loc, c_z = self.eval(zero, env, regions, world)
    vec_loc, c_v = self.eval(vector, env, regions, world)
    with self._bookkeeping():
        vec, cost = self._read(self._seq_all(world, [c_f, c_z, c_v], span), world, vec_loc, span)
    if not vec.items:
        return z_loc, cost
    items = list(vec.items)
    cells = vec_loc  # the level vector's cells (level 0: the input's; later: approximated by it)
    while len(items) > 1:
        if in_thread and "LEVEL" in FLAGS:
            _, lc = self._alloc(None, world, regions, region, VecV(tuple(items[:(len(items) + 1) // 2])), span)
            cost = self._seq(world, cost, lc, span)
        combined, branches = [], []
        with self._kernel(world) as staged, self._branches(world):
            for i in range(0, len(items) - 1, 2):
                c0 = None
                if {"CELL", "CELLR"} & FLAGS:
                    c0 = cell_read(self, None, cells, i, span)
                    c0 = cell_read(self, c0, cells, i + 1, span)
                pair, c_pair = self._alloc(c0, world, regions, region, PairV(items[i], items[i + 1]), span)
                value, c_body = self.eval(closure.body, {**closure.env, closure.param: pair}, closure.regions, world)
                combined.append(value)
                branches.append(self._seq(world, c_pair, c_body, span))
        if len(items) % 2:
            combined.append(items[-1])
        with self._bookkeeping():
            level = self._op(world, self._par(world, branches, span, staged), span, EdgeKind.MERGE, self._merge_cost(world))
        cost = self._seq(world, cost, level, span)
        items = combined
    return items[0], cost

def new_phase_cost(phase, model, p, moved=None):
    cost = orig_phase_cost(phase, model, p, moved)
    if "NOBOOK" in FLAGS and not phase.parallel and phase.threads and all(
            e.bookkeeping or e.kind is EdgeKind.SEQ for e in phase.threads[0]):
        cost.time = 0.0
    return cost

E.eval, E._parmap_rule, E._reduce = new_eval, new_parmap_rule, new_reduce
db.phase_cost = new_phase_cost

def predict(name, n, flags):
    FLAGS.clear()
    FLAGS.update(flags)
    _, _, col = suite_offloads(name, n)  # under the patches above
    return [o.on.box.time for o in col.offloads]

if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        raise SystemExit(__doc__)
    name, n = sys.argv[1], int(sys.argv[2])
    variants = [(), ("CELL",), ("CELLR",), ("LEVEL",), ("NOCLOS",), ("NOBOOK",), ("CELL", "LEVEL", "NOCLOS", "NOBOOK"), ("CELLR", "LEVEL", "NOCLOS", "NOBOOK")]
    base = None
    out = []
    for v in variants:
        t = predict(name, n, v)
        tot = sum(t)
        base = base or tot
        out.append(f"{'+'.join(v) or 'base'} {tot/1e3:.2f}us ({100*(tot-base)/base:+.1f}%)")
    print(name, n, "per-on kernels summed;", " | ".join(out))
