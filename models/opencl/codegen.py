"""λG → OpenCL C: the code an `on` body (or a CPU `parmap`) becomes (Harlan, OOPSLA 2014, §4-5).

Pure: this module builds text and a plan and imports no OpenCL; `models/opencl/runner.py` runs them.

The device memory is one buffer of 64-bit words, `heap`, holding every region the work uses, each
at its base with a capacity; a location (r, o) is a word index into `heap`. As in the region model
(§4), an int or float takes one word, a pair two (two locations), a vector one word per element —
plus one header word holding its length, which the device needs and the model leaves implicit.
Allocation bumps the region's allocation pointer with an atomic add, as Harlan's kernels do.
Booleans are unboxed (0 or 1).

An `on` body becomes a *plan* of steps run in order by the host:
- `parmap f v` at the top of the body: an NDRange kernel, one work item per element, the result
  vector reserved by the host;
- `iota e` likewise, and `reduce f z v` one kernel per level of its tree;
- any other expression: a kernel of one work item (the serial code around the kernels), those
  that follow one another with no parallel step between them in one kernel;
- `let x = e1 in e2` at the top sequences them; x's location passes through a slot buffer.
Inside a work item, every construct compiles to straight-line C: a `parmap`, `iota` or `reduce`
inside a thread becomes a loop (the GPU cannot launch kernels from a kernel), and applications of
known lambdas are inlined. A `fix` whose function calls itself only in tail position (issue 13:
mandelbrot's escape loop, serial loops) becomes a loop too: its argument is the loop variable, a
tail call assigns it and goes round again, any other result leaves the loop. What the backend
cannot compile (other recursion, functions as values, region abstractions, `letregion`) raises a
BackendError naming the construct, its source position and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from profiler.errors import DeviceError
from profiler.syntax import (
    App,
    BinaryOperator,
    BinOp,
    BoolLit,
    BoolT,
    Boxed,
    Expr,
    Fix,
    FloatLit,
    FloatS,
    Fst,
    If,
    Index,
    IntLit,
    Iota,
    Lambda,
    Length,
    Let,
    LetRegion,
    On,
    Pair,
    Par,
    ParMap,
    Profile,
    Reduce,
    RegionApp,
    RegionLambda,
    Snd,
    Span,
    Type,
    Var,
    VecLit,
    children,
)


class BackendError(DeviceError):
    """A program (or part) the OpenCL backend does not support."""

    kind = "OpenCL backend"


WORK_GROUP = 256
"""The work items of a kernel's work groups, at most (or the device's largest group): the OpenCL
CPU device runs a work group on one compute unit, so a kernel of n items keeps at most ⌈n/256⌉
of them busy (models/opencl/predict.py)."""


PRELUDE = """\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

#define COMMON __global long* restrict heap, __global const long* restrict bases, \\
    __global const int* restrict caps, __global int* restrict aps, __global int* restrict err, \\
    __global long* restrict slots

/* Bump allocation in region r (Fig. 3): an atomic add on its allocation pointer. A region that
   fills up sets err bit 1: regions cannot grow on the GPU (NoExpandWE, Fig. 9). */
inline long hp_alloc(__global const long* bases, __global const int* caps, __global int* aps,
                     __global int* err, int r, int words) {
    int offset = atomic_add(&aps[r], words);
    if (offset + words > caps[r]) { atomic_or(err, 1); return bases[r]; }
    return bases[r] + offset;
}
#define ALLOC(r, words) hp_alloc(bases, caps, aps, err, (r), (words))
"""

ERR_FULL, ERR_DIVIDE, ERR_INDEX = 1, 2, 4


def ld_macro(k: int) -> str:
    """The read of a word of the k-th staged region (`on local`): from local memory where it was
    staged (L{k}, from heap index lb{k}, ls{k} words), else from the heap. The calibration times
    reads through this very macro (models/opencl/calibrate_cache.LOCAL_LD)."""
    return (f"#define LD{k}(a) (((a) - lb{k}) < ls{k} && ((a) - lb{k}) >= 0 ? "
            f"L{k}[(a) - lb{k}] : heap[a])\n")


@dataclass(frozen=True, slots=True)
class Step:
    """One kernel launch of a plan.

    kind: "serial" (one work item), "map" (one per element of the vector in slot `vector`),
    "iota" (one per integer below the int in slot `vector`), "reduce" (the levels of a tree
    over the vector in slot `vector`, `zero` the slot of z).
    """

    kind: str
    kernel: str
    result: int  # the slot the step's value goes to
    vector: int = -1
    zero: int = -1
    region: int = -1  # the device region the host reserves the result vector in
    span: Span | None = None


@dataclass(slots=True)
class Plan:
    """The OpenCL C source of an offload and the steps that run it."""

    source: str
    steps: list[Step]
    inputs: dict[str, int]  # free variable -> slot
    slots: int
    result: int
    result_type: Type
    regions: list[str]  # device region index -> region variable
    kernels: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Fun:
    """A lambda known at compile time, with the environment it closes over."""

    node: Lambda
    env: dict


@dataclass(frozen=True, slots=True)
class _Loop:
    """A tail-recursive `fix f: τ. lambda x: τ'. e` known at compile time: applied, it becomes a
    loop whose variable is x (checked by `tail_recursion_error` before it is emitted)."""

    node: Fix
    env: dict

    @property
    def function(self) -> Lambda:
        assert isinstance(self.node.body, Lambda)
        return self.node.body


def known_function(bound: Expr, env: dict) -> _Fun | _Loop | None:
    """The compile-time function a `let` binds, if it binds one (a lambda or a `fix`)."""
    match bound:
        case Lambda():
            return _Fun(bound, env)
        case Fix():
            return _Loop(bound, env)
        case Profile(_, inner, _):
            return known_function(inner, env)
    return None


def tail_recursion_error(fix: Fix) -> tuple[str, Span] | None:
    """Why `fix` cannot become a loop, and where; None when it can: its body is a lambda that
    uses its own name only as the function of a call in tail position (through `if` branches,
    `let` bodies and cost centres), never as a value, inside another function, or in an
    argument."""
    name = fix.name
    if not isinstance(fix.body, Lambda):
        return (f"`fix {name}` abstracts over a region; the OpenCL backend compiles only a "
                "recursive lambda, as a loop", fix.span)
    if fix.body.param == name:
        return None

    def not_tail(e: Expr, where: str) -> tuple[str, Span] | None:
        found = _occurrence(e, name)
        if found is None:
            return None
        span, called = found
        if called:
            return (f"`{name}` is called {where}, where its result is still needed after the "
                    "call returns: the OpenCL backend compiles only tail recursion, as a loop",
                    span)
        return (f"`{name}` is used as a value {where}: the OpenCL backend compiles a `fix` only "
                "as a loop, called in tail position", span)

    def tail(e: Expr) -> tuple[str, Span] | None:
        match e:
            case App(Var(var, _), arg, _) if var == name:
                return not_tail(arg, f"in the argument of a call of `{name}`")
            case If(cond, then, orelse, _):
                return not_tail(cond, "in the condition of an `if`") or tail(then) or tail(orelse)
            case Let(bound_name, Lambda() | Fix() as bound, _, _) if _occurrence(bound, name):
                inside = _occurrence(bound, name)
                assert inside is not None
                return (f"`{name}` is used inside the function `{bound_name}`: the OpenCL backend "
                        f"compiles `{name}` only as a loop, called in tail position of its own "
                        "body", inside[0])
            case Let(bound_name, bound, body, _):
                return (not_tail(bound, f"in the value bound to `{bound_name}`")
                        or (None if bound_name == name else tail(body)))
            case Profile(_, inner, _):
                return tail(inner)
        construct = _construct(e)
        return not_tail(e, f"inside {'an' if construct[0] in 'aeiou' else 'a'} {construct}"
                        if " " in construct or construct == "application"
                        else f"inside `{construct}`")

    return tail(fix.body.body)


def _occurrence(e: Expr, name: str) -> tuple[Span, bool] | None:
    """The first free occurrence of the variable `name` in e, and whether it is called there."""
    match e:
        case App(Var(var, _), _, span) if var == name:
            return span, True
        case Var(var, span):
            return (span, False) if var == name else None
        case Lambda(param=param) if param == name:
            return None
        case Fix(name=bound) if bound == name:
            return None
        case Let(bound_name, bound, body, _):
            return _occurrence(bound, name) or (None if bound_name == name
                                                else _occurrence(body, name))
    for child in children(e):
        found = _occurrence(child, name)
        if found is not None:
            return found
    return None


class _Emitter:
    """Compiles one expression into C statements inside a work item (one `match`)."""

    def __init__(self, compiler: Compiler, lines: list[str], staged: bool = False):
        self.compiler = compiler
        self.lines = lines
        self.indent = 1
        self.staged = staged  # this kernel staged the local regions into local memory

    def load(self, address: str, node: Expr) -> str:
        """The word at `address`, where `node` is the expression whose value lives there: from
        local memory when its region is staged there (`on local [ρ]`), else from the heap."""
        k = self.compiler.local_index(node) if self.staged else None
        return f"heap[{address}]" if k is None else f"LD{k}({address})"

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def temp(self) -> str:
        return self.compiler.fresh("t")

    def region(self, name: str | None, span: Span) -> int:
        return self.compiler.region_index(name, span)

    def value(self, e: Expr, env: dict) -> str:
        """Emit e; return the C name of a long holding its location (or its boolean)."""
        match e:
            case IntLit(value, region, span):
                number = self.compiler.params[value] if isinstance(value, str) else value
                t = self.temp()
                self.line(f"long {t} = ALLOC({self.region(region, span)}, 1);")
                self.line(f"heap[{t}] = {number}L;")
                return t
            case FloatLit(value, region, span):
                t = self.temp()
                self.line(f"long {t} = ALLOC({self.region(region, span)}, 1);")
                self.line(f"heap[{t}] = as_long({_double(value)});")
                return t
            case BoolLit(value):
                return "1L" if value else "0L"
            case Var(name, span):
                bound = env.get(name)
                if bound is None:
                    raise BackendError(f"the OpenCL backend does not know the variable {name}",
                                       span)
                if isinstance(bound, (_Fun, _Loop)):
                    raise BackendError("the OpenCL backend cannot pass a function as a value; "
                                       "apply it or give it to parmap or reduce", span)
                if isinstance(bound, tuple):  # a value computed by an earlier step
                    t = self.temp()
                    self.line(f"long {t} = slots[{bound[1]}];")
                    return t
                return bound
            case BinOp(op, left, right, region, span):
                return self.binop(op, left, right, region, span, env)
            case If(cond, then, orelse, _):
                c = self.value(cond, env)
                t = self.temp()
                self.line(f"long {t};")
                self.line(f"if ({c}) {{")
                self.indent += 1
                self.line(f"{t} = {self.value(then, env)};")
                self.indent -= 1
                self.line("} else {")
                self.indent += 1
                self.line(f"{t} = {self.value(orelse, env)};")
                self.indent -= 1
                self.line("}")
                return t
            case Let(name, bound, body, _):
                known = known_function(bound, env)
                if known is not None:
                    return self.value(body, {**env, name: known})
                v = self.value(bound, env)
                return self.value(body, {**env, name: v})
            case Lambda(span=span):
                raise BackendError("the OpenCL backend cannot build closures on the device; "
                                   "apply the function or give it to parmap or reduce", span)
            case App(func, arg, span):
                fun = self.function(func, env, span)
                return self.apply(fun, self.value(arg, env))
            case Pair(first, second, region, span) | Par(first, second, region, span):
                a = self.value(first, env)
                b = self.value(second, env)
                t = self.temp()
                self.line(f"long {t} = ALLOC({self.region(region, span)}, 2);")
                self.line(f"heap[{t}] = {a}; heap[{t} + 1] = {b};")
                return t
            case Fst(inner, _) | Snd(inner, _):
                p = self.value(inner, env)
                t = self.temp()
                self.line(f"long {t} = "
                          f"{self.load(p + ('' if isinstance(e, Fst) else ' + 1'), inner)};")
                return t
            case Index(vector, index, _):
                v = self.value(vector, env)
                i = self.value(index, env)
                k, t = self.temp(), self.temp()
                self.line(f"long {k} = {self.load(i, index)};")
                self.line(f"if ({k} < 0 || {k} >= {self.load(v, vector)}) {{ "
                          f"atomic_or(err, {ERR_INDEX}); {k} = 0; }}")
                self.line(f"long {t} = {self.load(f'{v} + 1 + {k}', vector)};")
                return t
            case Length(inner, region, span):
                v = self.value(inner, env)
                t = self.temp()
                self.line(f"long {t} = ALLOC({self.region(region, span)}, 1);")
                self.line(f"heap[{t}] = {self.load(v, inner)};")
                return t
            case VecLit(elements, region, span):
                items = [self.value(element, env) for element in elements]
                t = self.temp()
                self.line(f"long {t} = ALLOC({self.region(region, span)}, {len(items) + 1});")
                self.line(f"heap[{t}] = {len(items)};")
                for j, item in enumerate(items):
                    self.line(f"heap[{t} + {j + 1}] = {item};")
                return t
            case Iota(count, region, span):
                c = self.value(count, env)
                r = self.region(region, span)
                n, t, i = self.temp(), self.temp(), self.temp()
                self.line(f"long {n} = {self.load(c, count)};")
                self.line(f"long {t} = ALLOC({r}, (int)({n} + 1));")
                self.line(f"heap[{t}] = {n};")
                self.line(f"for (long {i} = 0; {i} < {n}; {i}++) {{")
                self.line(f"    long cell = ALLOC({r}, 1); heap[cell] = {i}; "
                          f"heap[{t} + 1 + {i}] = cell;")
                self.line("}")
                return t
            case ParMap(func, vector, region, span):
                fun = self.function(func, env, span)
                v = self.value(vector, env)
                n, t, i = self.temp(), self.temp(), self.temp()
                self.line(f"long {n} = {self.load(v, vector)};")
                self.line(f"long {t} = ALLOC({self.region(region, span)}, (int)({n} + 1));")
                self.line(f"heap[{t}] = {n};")
                self.line(f"for (long {i} = 0; {i} < {n}; {i}++) {{")
                self.indent += 1
                x = self.temp()
                self.line(f"long {x} = {self.load(f'{v} + 1 + {i}', vector)};")
                mapped = self.apply(fun, x)
                self.line(f"heap[{t} + 1 + {i}] = {mapped};")
                self.indent -= 1
                self.line("}")
                return t
            case Reduce(func, zero, vector, region, span):
                return self.reduce(func, zero, vector, region, span, env)
            case Profile(_, inner, _):
                return self.value(inner, env)
        raise BackendError(f"`{_construct(e)}` cannot be compiled to OpenCL C (on the device "
                           "hetprof runs first-order code: literals, arithmetic, pairs, vectors, "
                           "let, if, parmap, iota, reduce, applied lambdas and applied "
                           "tail-recursive `fix`)", e.span)

    def function(self, func: Expr, env: dict, span: Span) -> _Fun | _Loop:
        if isinstance(func, (Lambda, Fix)):
            known = known_function(func, env)
            assert known is not None
            return known
        if isinstance(func, Var) and isinstance(env.get(func.name), (_Fun, _Loop)):
            return env[func.name]
        if isinstance(func, Profile):
            return self.function(func.expr, env, span)
        raise BackendError("the OpenCL backend needs a lambda (or a `fix`) written in place or "
                           "bound by `let` here", func.span)

    def apply(self, fun: _Fun | _Loop, argument: str) -> str:
        """The C name of the value of `fun` applied to the value named `argument`: a lambda's
        body inlined, a `fix` as a loop."""
        if isinstance(fun, _Fun):
            return self.value(fun.node.body, {**fun.env, fun.node.param: argument})
        return self.loop(fun, argument)

    def loop(self, fun: _Loop, argument: str) -> str:
        """A tail-recursive function applied: `for (;;)` over its body, the parameter a C
        variable that each tail call assigns before going round again."""
        error = tail_recursion_error(fun.node)
        if error is not None:
            raise BackendError(*error)
        param, result = self.temp(), self.temp()
        self.line(f"long {param} = {argument};")
        self.line(f"long {result};")
        self.line("for (;;) {")
        self.indent += 1
        env = {**fun.env, fun.node.name: fun, fun.function.param: param}
        self.tail(fun.function.body, env, fun, param, result)
        self.indent -= 1
        self.line("}")
        return result

    def tail(self, e: Expr, env: dict, fun: _Loop, param: str, result: str) -> None:
        """Emit e in tail position of `fun`'s body: a call of `fun` goes round the loop again,
        any other value leaves it."""
        match e:
            case App(Var(name, _), arg, _) if env.get(name) is fun:
                a = self.value(arg, env)
                self.line(f"{param} = {a};")
                self.line("continue;")
            case If(cond, then, orelse, _):
                c = self.value(cond, env)
                self.line(f"if ({c}) {{")
                self.indent += 1
                self.tail(then, env, fun, param, result)
                self.indent -= 1
                self.line("} else {")
                self.indent += 1
                self.tail(orelse, env, fun, param, result)
                self.indent -= 1
                self.line("}")
            case Let(name, bound, body, _):
                known = known_function(bound, env)
                value = known if known is not None else self.value(bound, env)
                self.tail(body, {**env, name: value}, fun, param, result)
            case Profile(_, inner, _):
                self.tail(inner, env, fun, param, result)
            case _:
                self.line(f"{result} = {self.value(e, env)};")
                self.line("break;")

    def binop(self, op: BinaryOperator, left: Expr, right: Expr, region: str | None, span: Span,
              env: dict) -> str:
        a = self.value(left, env)
        b = self.value(right, env)
        is_float = self.compiler.is_float(left)
        x, y = self.temp(), self.temp()
        if is_float:
            self.line(f"double {x} = as_double({self.load(a, left)});")
            self.line(f"double {y} = as_double({self.load(b, right)});")
        else:
            self.line(f"long {x} = {self.load(a, left)};")
            self.line(f"long {y} = {self.load(b, right)};")
        if op.is_comparison:
            t = self.temp()
            self.line(f"long {t} = ({x} {op.value} {y}) ? 1L : 0L;")
            return t
        if op is BinaryOperator.DIV and not is_float:
            self.line(f"if ({y} == 0) {{ atomic_or(err, {ERR_DIVIDE}); {y} = 1; }}")
        t = self.temp()
        self.line(f"long {t} = ALLOC({self.region(region, span)}, 1);")
        result = f"{x} {op.value} {y}"
        self.line(f"heap[{t}] = {'as_long(' + result + ')' if is_float else result};")
        return t

    def reduce(self, func: Expr, zero: Expr, vector: Expr, region: str | None, span: Span,
               env: dict) -> str:
        """The same tree as the interpreter's reduce: neighbours paired level by level."""
        fun = self.function(func, env, span)
        z = self.value(zero, env)
        v = self.value(vector, env)
        r = self.region(region, span)
        t, cur, length = self.temp(), self.temp(), self.temp()
        self.line(f"long {t} = {z};")
        self.line(f"long {cur} = {v}; long {length} = {self.load(v, vector)};")
        self.line(f"if ({length} > 0) {{")
        self.indent += 1
        self.line(f"while ({length} > 1) {{")
        self.indent += 1
        m, nxt, i = self.temp(), self.temp(), self.temp()
        self.line(f"long {m} = {length} / 2;")
        self.line(f"long {nxt} = ALLOC({r}, (int)(({length} + 1) / 2 + 1));")
        self.line(f"heap[{nxt}] = ({length} + 1) / 2;")
        self.line(f"for (long {i} = 0; {i} < {m}; {i}++) {{")
        self.indent += 1
        pair = self.temp()
        self.line(f"long {pair} = ALLOC({r}, 2);")
        self.line(f"heap[{pair}] = heap[{cur} + 1 + 2 * {i}]; "
                  f"heap[{pair} + 1] = heap[{cur} + 2 + 2 * {i}];")
        result = self.apply(fun, pair)
        self.line(f"heap[{nxt} + 1 + {i}] = {result};")
        self.indent -= 1
        self.line("}")
        self.line(f"if ({length} % 2) heap[{nxt} + 1 + {m}] = heap[{cur} + {length}];")
        self.line(f"{cur} = {nxt}; {length} = ({length} + 1) / 2;")
        self.indent -= 1
        self.line("}")
        self.line(f"{t} = heap[{cur} + 1];")
        self.indent -= 1
        self.line("}")
        return t


class Compiler:
    """Compiles one offload (an `on` body or a CPU parmap) into a Plan."""

    def __init__(self, types: dict[int, Type], params: dict[str, int], regions: list[str],
                 free: Mapping[str, Type | None], local: tuple[str, ...] = (),
                 local_words: int = 4096):
        self.local = [self.regions_index_of(regions, name) for name in local]
        self.local_words = max(1, local_words // max(1, len(local)))
        self.types = types
        self.params = params
        self.regions = list(regions)
        self.free = free
        self.counter = 0
        self.kernels: list[str] = []
        self.steps: list[Step] = []
        self.slots = 0
        self.inputs: dict[str, int] = {}
        self.vector_nodes: dict[int, Expr] = {}  # slot -> the expression whose vector it holds

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    def region_index(self, name: str | None, span: Span) -> int:
        if name is None or name not in self.regions:
            raise BackendError(f"region {name} is not among the regions pushed to the device",
                               span)
        return self.regions.index(name)

    @staticmethod
    def regions_index_of(regions: list[str], name: str) -> int:
        return list(regions).index(name)

    def local_index(self, e: Expr) -> int | None:
        """The position among the staged regions of the region e's value lives in, if staged."""
        t = self.types.get(id(e))
        if not isinstance(t, Boxed) or t.region not in self.regions:
            return None
        index = self.regions.index(t.region)
        return self.local.index(index) if index in self.local else None

    def staging(self) -> list[str]:
        """C lines that copy the staged regions into local memory, cooperatively, in every work
        group (§7.1.2's local variant); reads fall back to the heap past what was staged."""
        lines = []
        for k, r in enumerate(self.local):
            lines += [
                f"    __local long L{k}[{self.local_words}];",
                f"    long lb{k} = bases[{r}];",
                f"    int ls{k} = min(aps[{r}], {self.local_words});",
                f"    for (int w = get_local_id(0); w < ls{k}; w += get_local_size(0)) "
                f"L{k}[w] = heap[lb{k} + w];",
            ]
        if self.local:
            lines.append("    barrier(CLK_LOCAL_MEM_FENCE);")
        return lines

    def local_macros(self) -> str:
        return "".join(ld_macro(k) for k in range(len(self.local)))

    def is_float(self, e: Expr) -> bool:
        t = self.types.get(id(e))
        return isinstance(t, Boxed) and isinstance(t.shape, FloatS)

    def compile(self, body: Expr) -> Plan:
        env: dict = {}
        for name in sorted(self.free):
            slot = self.slot()
            self.inputs[name] = slot
            env[name] = ("slot", slot)
        result = self.top(body, env)
        source = PRELUDE + self.local_macros() + "\n" + "\n\n".join(self.kernels) + "\n"
        result_type = self.types.get(id(body), BoolT())
        return Plan(source, self.steps, self.inputs, self.slots, result, result_type,
                    self.regions, [s.kernel for s in self.steps])

    # -- the top of a body: kernels -------------------------------------------------------------
    def top(self, e: Expr, env: dict) -> int:
        """Plan e; return the slot its value ends in."""
        match e:
            case Let(name, bound, body, _):
                known = known_function(bound, env)
                if known is not None:
                    return self.top(body, {**env, name: known})
                slot = self.top(bound, env)
                return self.top(body, {**env, name: ("slot", slot)})
            case Profile(_, inner, _):
                return self.top(inner, env)
            case ParMap(func, vector, region, span):
                vec = self.top(vector, env)
                self.vector_nodes[vec] = vector
                return self.map_kernel(func, vec, region, span, env)
            case Iota(count, region, span):
                c = self.top(count, env)
                return self.iota_kernel(c, region, span)
            case Reduce(func, zero, vector, region, span):
                z = self.top(zero, env)
                vec = self.top(vector, env)
                return self.reduce_kernel(func, z, vec, region, span, env)
            case Var(name, _) if isinstance(env.get(name), tuple):
                return env[name][1]
        return self.serial_kernel(e, env)

    def serial_kernel(self, e: Expr, env: dict) -> int:
        """One work item computes e into a new slot. Serial expressions one after another with
        no parallel step between them (a reduction's zero and its vector's count, say) go into
        one kernel: the cost semantics makes them one serial stretch of the device box, priced
        as one launch (graphs.devicebox.launches_kernel), and on a GPU each launch of a
        one-item kernel costs microseconds. Their slots are written in order, so a later
        expression reads an earlier one's slot as it would after a launch of its own."""
        result = self.slot()
        if self.steps and self.steps[-1].kind == "serial":
            previous = self.steps.pop()
            name = previous.kernel
            reopened = self.kernels.pop()
            assert reopened.startswith(f"__kernel void {name}("), "a step's kernel comes last"
            lines = reopened.split("\n")[:-1]  # its closing brace goes
            span = previous.span
        else:
            name = self.fresh("serial")
            lines = [f"__kernel void {name}(COMMON) {{",
                     "    if (get_global_id(0) != 0) return;"]
            span = e.span
        value = _Emitter(self, lines).value(e, env)
        lines += [f"    slots[{result}] = {value};", "}"]
        self.kernels.append("\n".join(lines))
        self.steps.append(Step("serial", name, result, span=span))
        return result

    def map_kernel(self, func: Expr, vec: int, region: str | None, span: Span, env: dict) -> int:
        fun = _Emitter(self, []).function(func, env, span)
        name = self.fresh("map")
        result = self.slot()
        lines = [f"__kernel void {name}(COMMON, const long n, const long out) {{",
                 "    long i = get_global_id(0);",
                 f"    if (i == 0) {{ heap[out] = n; slots[{result}] = out; }}",
                 *self.staging(),
                 "    if (i >= n) return;"]
        emitter = _Emitter(self, lines, staged=bool(self.local))
        vector_node = self.vector_nodes.get(vec)
        element = emitter.load(f"slots[{vec}] + 1 + i", vector_node) if vector_node is not None \
            else f"heap[slots[{vec}] + 1 + i]"
        lines.append(f"    long x = {element};")
        value = emitter.apply(fun, "x")
        lines += [f"    heap[out + 1 + i] = {value};", "}"]
        self.kernels.append("\n".join(lines))
        self.steps.append(Step("map", name, result, vector=vec,
                               region=self.region_index(region, span), span=span))
        return result

    def iota_kernel(self, count: int, region: str | None, span: Span) -> int:
        name = self.fresh("iota")
        result = self.slot()
        r = self.region_index(region, span)
        lines = [f"__kernel void {name}(COMMON, const long n, const long out) {{",
                 "    long i = get_global_id(0);",
                 f"    if (i == 0) {{ heap[out] = n; slots[{result}] = out; }}",
                 "    if (i >= n) return;",
                 f"    long cell = ALLOC({r}, 1);",
                 "    heap[cell] = i;",
                 "    heap[out + 1 + i] = cell;", "}"]
        self.kernels.append("\n".join(lines))
        self.steps.append(Step("iota", name, result, vector=count, region=r, span=span))
        return result

    def reduce_kernel(self, func: Expr, zero: int, vec: int, region: str | None, span: Span,
                      env: dict) -> int:
        fun = _Emitter(self, []).function(func, env, span)
        name = self.fresh("level")
        result = self.slot()
        r = self.region_index(region, span)
        lines = [f"__kernel void {name}(COMMON, const long len, const long cur, const long out, "
                 "const int last) {",
                 "    long i = get_global_id(0);",
                 "    long m = len / 2;",
                 "    if (i == 0) { heap[out] = (len + 1) / 2; "
                 "if (len % 2) heap[out + 1 + m] = heap[cur + len]; }",
                 *self.staging(),
                 "    if (i >= m) return;"]
        lines += [f"    long p = ALLOC({r}, 2);",
                  "    heap[p] = heap[cur + 1 + 2 * i]; heap[p + 1] = heap[cur + 2 + 2 * i];"]
        emitter = _Emitter(self, lines, staged=bool(self.local))
        value = emitter.apply(fun, "p")
        lines += ["    heap[out + 1 + i] = " + value + ";",
                  f"    if (last) slots[{result}] = {value};", "}"]
        self.kernels.append("\n".join(lines))
        self.steps.append(Step("reduce", name, result, vector=vec, zero=zero, region=r,
                               span=span))
        return result


def compile_offload(body: Expr, types: dict[int, Type], params: dict[str, int],
                    regions: list[str], free: Mapping[str, Type | None],
                    local: tuple[str, ...] = (), local_words: int = 4096) -> Plan:
    """The plan for running `body` on a device (pure: text and steps, no OpenCL). `local` names
    the regions to stage in local memory, `local_words` how many words fit there."""
    return Compiler(types, params, regions, free, local, local_words).compile(body)


def _double(value: float) -> str:
    """An exact OpenCL C literal for a double (hexadecimal floating point)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise BackendError(f"the float {value} has no OpenCL C literal")
    return f"({float(value).hex()})"


def _construct(e: Expr) -> str:
    if isinstance(e, BinOp):
        return e.op.value
    names = {On: "on", Lambda: "lambda", App: "application", VecLit: "vector literal",
             Index: "indexing", Par: "||", ParMap: "parmap", LetRegion: "letregion",
             RegionLambda: "region lambda", RegionApp: "region application"}
    return names.get(type(e), type(e).__name__.lower())
