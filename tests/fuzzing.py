"""Mutation fuzzing of hetprof (issue 17, "Guard it for good"): λG programs mutated at the token
level and run in-process through the pipeline the command line runs, each outcome classified.

Imported by tests/test_fuzz.py (a bounded run in the suite) and benchmarks/fuzz_campaign.py (the
long campaign). Everything is deterministic from a seed.

- The corpus (`default_corpus`): examples/*.lg, tests/programs/**/*.lg and programs drawn from
  tests/generate.py's well-typed generator, each drawn from a seeded `random.Random` through
  hypothesis's `ConjectureData` (an internal API of hypothesis, used outside `@given` so that a
  seed gives the same programs on every run).
- The mutations (`Mutator`): delete, duplicate, swap or insert tokens; replace a name, a region, a
  keyword, an operator or a number with one from the same or another program, or with an extreme
  literal (0, -1, 2^63, a 5 000-digit integer, 1e308, 9.9e999, ...); splice a subexpression of one
  program into another; wrap a subexpression in `on`, `letregion`, `profile`, a closure, `fix`,
  `||`, a parmap, hundreds of parentheses, or a long `+` or `let` chain.
- The stages (`Campaign.trial`): `check` (parse and check_program, as `hetprof check`); `run`
  (evaluate at small sizes, 0, 1, 3 or 17, with a step and a depth limit, under either GPU model,
  sometimes with --strict-gpu-regions, and render the value and the regions, as `hetprof run`);
  `profile` (analyse and render the report in a random format, as `hetprof profile`); `symbolic`
  (symbolic_profile, report and its text or JSON, with the explicit time where the graph is small,
  as `hetprof profile --symbolic`). Each runs in one worker thread with a deep stack, as
  cli/main.py runs the command, under a time limit (`Sandbox`).
- The outcomes (`Outcome`): ok; located (a HetprofError whose span points into the program and
  whose message `format_error` renders, or a ParameterError about a size given on the command
  line, which has no place in the program); not regular (`--symbolic` declines and the command
  profiles explicitly instead); crash (any other exception, a HetprofError without a location, a
  report that is not standard JSON); timeout (the stage ran past its time limit).
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import functools
import json
import os
import queue
import random
import re
import resource
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis.internal.conjecture.data import ConjectureData

from cli.main import RECURSION_LIMIT, STACK_BYTES
from cli.symbolic import EXPLICIT_NODES
from graphs.analysis import analyse
from graphs.render_symbolic import render_symbolic
from graphs.render_text import TextRenderer
from graphs.renderers import RENDERERS
from graphs.semantics.explicit import Evaluation, evaluate
from graphs.semantics.options import EvaluationOptions
from graphs.semantics.symbolic import NotRegular
from graphs.symbolic_profile import report, symbolic_profile
from profiler.checker import CheckedProgram, bind_parameters, check_program
from profiler.errors import HetprofError, ParameterError, format_error
from profiler.parser import parse
from profiler.printer import pretty
from profiler.syntax import Expr, children
from tests.generate import well_typed_programs

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("profiler", "models", "graphs", "cli")
FILE = "fuzz.lg"
"""The file name every mutant is parsed under (reproducers are written under other names)."""

STAGES = ("check", "run", "profile", "symbolic")
SIZES = (0, 1, 3, 17)
PROCS = (1, 2, 3, 8)
SCHEDULES = ("1df", "bf", "ws")
FORMATS = ("text", "json", "csv", "dot", "trace")  # html draws pictures: the CLI mode tries it
MAX_STEPS = 20_000
MAX_DEPTH = 500
GPU_MODES = (None, None, "paper", "cache")
TIME_LIMITS = {"check": 10.0, "run": 10.0, "profile": 20.0, "symbolic": 30.0}
"""Seconds each stage may run on one mutant before it counts as a timeout."""


# --------------------------------------------------------------------------------------------------
# Tokens


KEYWORDS = (
    "lambda letregion let in if then else fix on at profile local fst snd length parmap iota "
    "reduce True False param int float bool Vec forall".split()
)
OPERATORS = ("+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "||", "->", "=", ".", ":", ",",
             "(", ")", "[", "]")

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<comment>\#[^\n]*)
      | (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<float>[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?)
      | (?P<int>[0-9]+)
      | (?P<name>[A-Za-z_][A-Za-z0-9_']*)
      | (?P<operator>\|\||<=|>=|==|!=|->|[-+*/<>=()\[\],.:])
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # space, comment, string, float, int, name, keyword, operator, other
    text: str


def tokenize(source: str) -> list[Token]:
    """The source as tokens, whitespace and comments included (joining them gives it back)."""
    tokens = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "other"
        text = match.group()
        if kind == "name" and text in KEYWORDS:
            kind = "keyword"
        tokens.append(Token(kind, text))
    return tokens


def significant(tokens: list[Token]) -> list[int]:
    """Indices of the tokens that are neither whitespace nor comments."""
    return [i for i, token in enumerate(tokens) if token.kind not in ("space", "comment")]


def join(tokens: list[Token]) -> str:
    return "".join(token.text for token in tokens)


def abbreviate(source: str, limit: int = 1500) -> str:
    """The source for a message: tokens over 60 characters cut to their ends and a count, runs of
    one repeated token or space cut the same way, at most `limit` characters in all."""
    text = re.sub(r"([^\s]{20})[^\s]{41,}([^\s]{20})",
                  lambda m: f"{m.group(1)}...({len(m.group())} chars)...{m.group(2)}", source)
    text = re.sub(r"(.{1,12}?)\1{20,}", lambda m: f"{m.group(1)}...({len(m.group())} chars "
                  f"of {m.group(1)!r})...", text)
    return text if len(text) <= limit else text[:limit] + f"...({len(text)} chars)"


_REGION_BEFORE = {"at", "letregion", "int", "float", "local"}


def region_indices(tokens: list[Token]) -> list[int]:
    """Indices of the names that stand for regions: after `at`, `letregion`, `int`, `float`, in
    `local [...]`, in an effect `[...]` after a type, and before the `)` of a boxed type."""
    indices = []
    order = significant(tokens)
    for position, i in enumerate(order):
        if tokens[i].kind != "name":
            continue
        before = tokens[order[position - 1]].text if position else ""
        after = tokens[order[position + 1]].text if position + 1 < len(order) else ""
        if before in _REGION_BEFORE or re.fullmatch(r"r\d*|s\d*", tokens[i].text) or (
                before in ("[", ",") and after in ("]", ",") and _in_effect(tokens, order,
                                                                           position)):
            indices.append(i)
    return indices


def _in_effect(tokens: list[Token], order: list[int], position: int) -> bool:
    """The name at `position` is inside `[...]` that follows a type or `>=` (an effect)."""
    for back in range(position - 1, -1, -1):
        text = tokens[order[back]].text
        if text == "[":
            previous = tokens[order[back - 1]] if back else None
            return previous is not None and (previous.kind == "name" or previous.text in
                                             (")", ">=", "]", "local"))
        if text not in (",",) and tokens[order[back]].kind != "name":
            return False
    return False


# --------------------------------------------------------------------------------------------------
# Subexpressions (for splicing and wrapping)


def _expressions(root: Expr) -> Iterator[Expr]:
    """Every expression node under `root`, itself included, without recursion."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(children(node))


@functools.lru_cache(maxsize=4096)
def subtrees(source: str) -> tuple[tuple[int, int], ...]:
    """The (start, end) offsets of the program's subexpressions, from the parser's spans; for a
    source that does not parse, its bracketed groups and single tokens."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    try:
        program = parse(source, FILE)
    except Exception:  # noqa: BLE001 - a mutant that does not parse: use its brackets
        return _bracket_groups(source)
    found = []
    for node in _expressions(program.body):
        span = node.span
        if span.line <= 0 or span.end_line > len(starts) - 1:
            continue
        start = starts[span.line - 1] + span.column - 1
        end = starts[span.end_line - 1] + span.end_column - 1
        if 0 <= start < end <= len(source):
            found.append((start, end))
    return tuple(sorted(set(found))) or _bracket_groups(source)


def _bracket_groups(source: str) -> tuple[tuple[int, int], ...]:
    groups, open_at, offset = [], [], 0
    for token in tokenize(source):
        if token.text in ("(", "["):
            open_at.append(offset)
        elif token.text in (")", "]") and open_at:
            groups.append((open_at.pop(), offset + 1))
        elif token.kind in ("name", "int", "float", "keyword"):
            groups.append((offset, offset + len(token.text)))
        offset += len(token.text)
    return tuple(groups)


# --------------------------------------------------------------------------------------------------
# The corpus


@dataclass(frozen=True, slots=True)
class Seed:
    name: str
    source: str


def file_seeds(root: Path = ROOT) -> list[Seed]:
    """examples/*.lg and tests/programs/**/*.lg."""
    paths = sorted((root / "examples").glob("*.lg")) + sorted(
        (root / "tests" / "programs").rglob("*.lg"))
    return [Seed(str(p.relative_to(root)), p.read_text(encoding="utf-8")) for p in paths]


def generated_seeds(count: int, seed: int) -> list[Seed]:
    """`count` programs of tests/generate.py, the i-th drawn from random.Random((seed, i))."""
    seeds = []
    for i in range(count):
        data = ConjectureData(random=random.Random(f"{seed}/{i}"))
        try:
            program = data.draw(well_typed_programs())
        except Exception:  # noqa: BLE001 - hypothesis gave up on this draw (too many choices)
            continue
        seeds.append(Seed(f"generated/{seed}/{i}", pretty(program)))
    return seeds


def default_corpus(generated: int, seed: int) -> list[Seed]:
    return file_seeds() + generated_seeds(generated, seed)


# --------------------------------------------------------------------------------------------------
# Mutations


EXTREME_INTS = (
    "0", "1", "2", "3", "17", "255", "256", "257", "1023", "65536", "2147483647", "2147483648",
    "4294967296", "9223372036854775807", "9223372036854775808", "18446744073709551616",
    "1" + "0" * 30, "9" * 400, "9" * 5000, "-1", "-9223372036854775809", "(0 - 1)",
    "(0 - 9223372036854775807)",
)
EXTREME_FLOATS = (
    "0.0", "0.1", "3.0", "1.0e18", "1.0e308", "1.7976931348623157e308", "9.9e999", "1.0e-320",
    "5.0e-324", "(0.0 - 1.0)", "(0.0 - 1.0e308)",
)
PARENS = (1, 2, 3, 8, 50, 200, 399, 401, 1000)
CHAINS = (2, 3, 10, 100, 3000)

# Wrappers of a subexpression X; {r} is a region of the program, {s} another one.
WRAPPERS = (
    "on ({x}) at {r}",
    "on ({x})",
    "on local [{r}] ({x}) at {r}",
    "letregion {s} in ({x})",
    "letregion rz in ({x})",
    'profile "fz" ({x})',
    "(let v = {x} in v)",
    "(lambda z: int {r} [{r}]. {x}) (0 at {r})",
    "(let f = lambda z: int {r} [{r}]. {x} in f (1 at {r}))",
    "(let f = lambda z: int {r} [{r}]. {x} in on (f (1 at {r})) at {r})",
    "(let f = lambda z: int {r}. {x} in on (parmap f (iota 3 at {r}) at {r}) at {r})",
    "(let f = lambda z: int {r} [{r}]. letregion q in ({x}) in on (f (1 at {r})) at {r})",
    "(lambda g: (int {r} -> int {r} [{r}], {r}) [{r}]. on (g (1 at {r})) at {r}) "
    "(lambda z: int {r} [{r}]. {x})",
    "(fix f: (int {r} -> int {r} [{r}], {r}). lambda z: int {r} [{r}]. {x}) (1 at {r})",
    "({x} || {x} at {r})",
    "fst ({x}, {x}) at {r}",
    "if True then ({x}) else ({x})",
    "if 0 < 1 then ({x}) else ({x})",
    "[{x}, {x}] at {r}",
    "parmap (lambda z: int {r}. {x}) (iota 3 at {r}) at {r}",
    "on (parmap (lambda z: int {r}. {x}) (iota 3 at {r}) at {r}) at {r}",
    "({x})[0 at {r}]",
    "length ({x})",
    "iota ({x}) at {r}",
    "reduce (lambda p: ((int {r}, int {r}), {r}). fst p + snd p at {r}) (0 at {r}) ({x}) at {r}",
    "(lambda q >= [{r}]. {x} at {r})[{s}]",
)


class Mutator:
    """Mutants of a corpus, deterministic from the random generator given."""

    OPERATIONS = (
        ("delete", 3), ("duplicate", 2), ("swap", 2), ("insert", 2), ("name", 3), ("region", 3),
        ("keyword", 2), ("operator", 1), ("number", 4), ("splice", 3), ("wrap", 4),
        ("parens", 1), ("chain", 1),
    )

    def __init__(self, corpus: list[Seed], rng: random.Random):
        self.corpus = corpus
        self.rng = rng
        self.tokens = [tokenize(seed.source) for seed in corpus]
        pool: dict[str, set[str]] = {"name": set(), "region": set(), "string": set(),
                                     "int": set(), "float": set()}
        for tokens in self.tokens:
            regions = {tokens[i].text for i in region_indices(tokens)}
            pool["region"] |= regions
            for token in tokens:
                if token.kind in pool:
                    pool[token.kind].add(token.text)
            pool["name"] -= regions
        self.pool = {kind: sorted(texts) for kind, texts in pool.items()}
        self.all_tokens = sorted({token.text for tokens in self.tokens for token in tokens
                                  if token.kind not in ("space", "comment")
                                  and len(token.text) < 40})
        self.snippets = [seed.source[start:end] for seed in corpus
                         for start, end in subtrees(seed.source) if end - start < 400]
        self._seed_weights = [1 if "/bad/" in seed.name else 3 for seed in corpus]
        self._names = [name for name, _ in self.OPERATIONS]
        self._weights = [weight for _, weight in self.OPERATIONS]

    def mutant(self) -> tuple[str, str]:
        """(a mutant's source, how it was made: the seed's name and the operations). Programs
        that check are drawn three times as often as the bad ones (tests/programs/bad)."""
        index = self.rng.choices(range(len(self.corpus)), self._seed_weights)[0]
        source = self.corpus[index].source
        steps = []
        for _ in range(self.rng.choice((1, 1, 1, 2, 2, 3, 4))):
            operation = self.rng.choices(self._names, self._weights)[0]
            source = getattr(self, "_" + operation)(source)
            steps.append(operation)
        return source, f"{self.corpus[index].name}: {', '.join(steps)}"

    def mutants(self) -> Iterator[tuple[str, str]]:
        """Distinct mutants, for ever (a duplicate is drawn again)."""
        seen: set[int] = set()
        while True:
            source, how = self.mutant()
            key = hash(source)
            if key not in seen:
                seen.add(key)
                yield source, how

    # -- helpers ------------------------------------------------------------------------------------
    def _choose(self, tokens: list[Token], kinds: tuple[str, ...]) -> int | None:
        indices = [i for i in significant(tokens) if tokens[i].kind in kinds]
        return self.rng.choice(indices) if indices else None

    def _regions_of(self, source: str) -> list[str]:
        tokens = tokenize(source)
        own = sorted({tokens[i].text for i in region_indices(tokens)})
        return own or self.pool["region"] or ["r"]

    def _from_pool(self, kind: str, source: str, tokens: list[Token]) -> str:
        """A token of `kind`: one from the same program half of the time, else from any."""
        own = sorted({t.text for t in tokens if t.kind == kind})
        if own and self.rng.random() < 0.5:
            return self.rng.choice(own)
        return self.rng.choice(self.pool[kind] or own or ["x"])

    def _subtree(self, source: str) -> tuple[int, int] | None:
        spans = subtrees(source)
        return self.rng.choice(spans) if spans else None

    # -- the operations (each: source -> source) ----------------------------------------------------
    def _delete(self, source: str) -> str:
        tokens = tokenize(source)
        order = significant(tokens)
        if not order:
            return source
        start = self.rng.randrange(len(order))
        for i in reversed(order[start:start + self.rng.choice((1, 1, 1, 2, 3))]):
            del tokens[i]
        return join(tokens)

    def _duplicate(self, source: str) -> str:
        tokens = tokenize(source)
        i = self._choose(tokens, ("name", "keyword", "int", "float", "string", "operator",
                                  "other"))
        if i is None:
            return source
        tokens[i + 1:i + 1] = [Token("space", " "), tokens[i]]
        return join(tokens)

    def _swap(self, source: str) -> str:
        tokens = tokenize(source)
        order = significant(tokens)
        if len(order) < 2:
            return source
        a = self.rng.randrange(len(order))
        b = min(len(order) - 1, a + 1) if self.rng.random() < 0.5 else self.rng.randrange(
            len(order))
        tokens[order[a]], tokens[order[b]] = tokens[order[b]], tokens[order[a]]
        return join(tokens)

    def _insert(self, source: str) -> str:
        tokens = tokenize(source)
        order = significant(tokens) or [0]
        at = self.rng.choice(order)
        text = self.rng.choice(self.all_tokens + list(KEYWORDS) + list(OPERATORS))
        tokens[at:at] = [Token("other", text), Token("space", " ")]
        return join(tokens)

    def _name(self, source: str) -> str:
        tokens = tokenize(source)
        i = self._choose(tokens, ("name",))
        if i is None:
            return source
        tokens[i] = Token("name", self._from_pool("name", source, tokens))
        return join(tokens)

    def _region(self, source: str) -> str:
        tokens = tokenize(source)
        indices = region_indices(tokens)
        if not indices:
            return source
        i = self.rng.choice(indices)
        choices = self._regions_of(source) if self.rng.random() < 0.6 else self.pool["region"]
        tokens[i] = Token("name", self.rng.choice(choices + ["undeclared"]))
        return join(tokens)

    def _keyword(self, source: str) -> str:
        tokens = tokenize(source)
        i = self._choose(tokens, ("keyword",))
        if i is None:
            return source
        tokens[i] = Token("keyword", self.rng.choice(KEYWORDS))
        return join(tokens)

    def _operator(self, source: str) -> str:
        tokens = tokenize(source)
        i = self._choose(tokens, ("operator",))
        if i is None:
            return source
        tokens[i] = Token("operator", self.rng.choice(OPERATORS))
        return join(tokens)

    def _number(self, source: str) -> str:
        tokens = tokenize(source)
        i = self._choose(tokens, ("int", "float"))
        if i is None:
            return source
        kind = tokens[i].kind
        if self.rng.random() < 0.3:
            text = self._from_pool(kind, source, tokens)
        else:
            text = self.rng.choice(EXTREME_INTS if kind == "int" else EXTREME_FLOATS)
        tokens[i] = Token(kind, text)
        return join(tokens)

    def _splice(self, source: str) -> str:
        where = self._subtree(source)
        if where is None or not self.snippets:
            return source
        if self.rng.random() < 0.3:  # from the same program
            start, end = self._subtree(source) or where
            donor = source[start:end]
        else:
            donor = self.rng.choice(self.snippets)
        start, end = where
        return source[:start] + donor + source[end:]

    def _wrap(self, source: str) -> str:
        where = self._subtree(source)
        if where is None:
            return source
        start, end = where
        regions = self._regions_of(source)
        text = self.rng.choice(WRAPPERS).format(
            x=source[start:end], r=self.rng.choice(regions), s=self.rng.choice(regions))
        return source[:start] + text + source[end:]

    def _parens(self, source: str) -> str:
        where = self._subtree(source)
        if where is None:
            return source
        start, end = where
        depth = self.rng.choice(PARENS)
        return source[:start] + "(" * depth + source[start:end] + ")" * depth + source[end:]

    def _chain(self, source: str) -> str:
        """A long `+` chain after a subexpression, or a long chain of `let`s around it: deep
        nesting without brackets."""
        where = self._subtree(source)
        if where is None:
            return source
        start, end = where
        x, count = source[start:end], self.rng.choice(CHAINS)
        if self.rng.random() < 0.5:
            text = f"({x})" + " + 1" * count
        else:
            text = f"let v0 = ({x}) in " + "".join(
                f"let v{i} = v{i - 1} in " for i in range(1, count)) + f"v{count - 1}"
        return source[:start] + text + source[end:]


# --------------------------------------------------------------------------------------------------
# Running a mutant: stages, outcomes, crash signatures


class Outcome(enum.Enum):
    OK = "ok"
    LOCATED = "located"
    NOT_REGULAR = "not regular"
    CRASH = "crash"
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class Settings:
    """The command-line choices of one trial: sizes, processors, schedule, report format, GPU
    model (None: the profile's, DMM) and whether a region that fills up on the GPU is an error."""

    params: tuple[tuple[str, int], ...]
    procs: int
    schedule: str
    format: str
    gpu_mode: str | None = None
    strict_regions: bool = False

    def options(self) -> EvaluationOptions:
        return EvaluationOptions(max_steps=MAX_STEPS, max_depth=MAX_DEPTH,
                                 gpu_mode=self.gpu_mode,
                                 grow_gpu_regions=not self.strict_regions)

    def only(self, names: list[str]) -> Settings:
        """These settings for a program that declares `names` (a size it lacks dropped, one it
        has and these lack: 1)."""
        given = dict(self.params)
        return dataclasses.replace(self, params=tuple((n, given.get(n, 1)) for n in names))

    def values(self, checked: CheckedProgram) -> dict[str, int]:
        """The sizes, bound as the command line binds --param values."""
        return bind_parameters(checked, dict(self.params))

    def command(self, stage: str, path: str) -> str:
        """The `hetprof` command that runs `stage` of the trial on the file `path`."""
        if stage == "check":
            return f"python3 -m cli check {path}"
        words = ["python3 -m cli", "run" if stage == "run" else "profile", path]
        words += [f"--param {name}={value}" for name, value in self.params]
        words += [f"--max-steps {MAX_STEPS}", f"--max-depth {MAX_DEPTH}"]
        words += [f"--gpu-mode {self.gpu_mode}"] if self.gpu_mode else []
        words += ["--strict-gpu-regions"] if self.strict_regions else []
        if stage == "profile":
            words += [f"--procs {self.procs}", f"--schedule {self.schedule}",
                      f"--format {self.format}"]
        if stage == "symbolic":
            words += ["--symbolic", f"--procs {self.procs}", f"--schedule {self.schedule}",
                      f"--format {'json' if self.format == 'json' else 'text'}"]
        return " ".join(words)


@dataclass(slots=True)
class StageResult:
    stage: str
    outcome: Outcome
    signature: str = ""  # crashes and timeouts: exception type and innermost hetprof frame
    message: str = ""
    traceback: str = ""


@dataclass(slots=True)
class Trial:
    source: str
    how: str
    settings: Settings | None = None
    results: list[StageResult] = field(default_factory=list)

    def crashes(self) -> list[StageResult]:
        return [r for r in self.results if r.outcome in (Outcome.CRASH, Outcome.TIMEOUT)]


class InvalidJson(Exception):
    """A report written as JSON that standard JSON readers reject (NaN, Infinity)."""


class StageTimeout(BaseException):  # noqa: N818 - raised in the worker thread, never caught there
    """A stage ran past its time limit (raised asynchronously in the worker thread)."""


def innermost_frame(error: BaseException) -> str:
    """`package/module.py:function` of the innermost frame in hetprof's packages, looking first
    into the exception this one was raised while handling (lark's VisitError wraps the error of
    the parser's own callback)."""
    chain = []
    while error is not None and error not in chain:
        chain.append(error)
        error = None if error.__suppress_context__ else error.__context__
    for link in reversed(chain):
        for frame in reversed(traceback.extract_tb(link.__traceback__)):
            parts = Path(frame.filename).parts
            for k in range(len(parts) - 1, -1, -1):
                if parts[k] in PACKAGES:
                    return f"{'/'.join(parts[k:])}:{frame.name}"
    frames = traceback.extract_tb(chain[0].__traceback__)
    return f"{Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "?"


def signature(error: BaseException, unlocated: bool = False) -> str:
    kind = type(error).__name__
    return f"{'unlocated ' if unlocated else ''}{kind} in {innermost_frame(error)}"


def located(error: HetprofError, source: str) -> bool:
    """The error points into the program (or is about a command-line size, which has no place
    there), and `format_error` renders it."""
    span = error.span
    if span is None or span.line <= 0:
        return isinstance(error, ParameterError) and span is None
    if span.file != FILE or span.line > source.count("\n") + 2:
        return False
    format_error(error, source)
    return True


def _strict_json(text: str) -> None:
    def refuse(constant: str) -> None:
        raise InvalidJson(f"the report contains {constant}, which is not JSON")

    json.loads(text, parse_constant=refuse)


# --------------------------------------------------------------------------------------------------
# The sandbox: a worker thread with a deep stack, a time limit per call


class _Job:
    def __init__(self, function: Callable[[], Any]):
        self.function = function
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class Sandbox:
    """Runs functions in one worker thread with cli/main.py's stack size and recursion limit, each
    under a time limit: past it, StageTimeout is raised in the worker (between bytecodes); a worker
    stuck in C code past the grace time is abandoned and a new one started."""

    GRACE = 10.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: _Job | None = None
        self._old_limit = sys.getrecursionlimit()
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.abandoned = 0

    def __enter__(self) -> Sandbox:
        sys.setrecursionlimit(RECURSION_LIMIT)
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._jobs.put(None)
        if self._thread is not None:
            self._thread.join(timeout=self.GRACE)
        sys.setrecursionlimit(self._old_limit)

    def _start(self) -> None:
        self._jobs = queue.Queue()
        old_size = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            self._thread = threading.Thread(target=self._work, args=(self._jobs,), daemon=True)
            self._thread.start()
        finally:
            threading.stack_size(old_size)

    def _work(self, jobs: queue.Queue[_Job | None]) -> None:
        job = None
        while True:
            try:
                job = jobs.get()
                if job is None:
                    return
                try:
                    with self._lock:
                        self._current = job
                    job.value = job.function()
                except BaseException as error:  # noqa: BLE001 - every failure is the result
                    job.error = error
                finally:
                    with self._lock:
                        self._current = None
                    job.done.set()
            except StageTimeout:  # delivered just after its job ended
                if job is not None and not job.done.is_set():
                    job.error = StageTimeout()
                    job.done.set()

    def call(self, function: Callable[[], Any], seconds: float) -> Any:
        """function() in the worker thread: its value, or the exception it raised (StageTimeout
        past `seconds`)."""
        job = _Job(function)
        self._jobs.put(job)
        if not job.done.wait(seconds):
            with self._lock:
                if self._current is job:
                    assert self._thread is not None and self._thread.ident is not None
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(self._thread.ident), ctypes.py_object(StageTimeout))
            if not job.done.wait(self.GRACE):
                self.abandoned += 1  # stuck in C code: leave it, start another worker
                self._start()
                raise StageTimeout()
        if job.error is not None:
            raise job.error
        return job.value


# --------------------------------------------------------------------------------------------------
# The stages


def _check(source: str) -> CheckedProgram:
    return check_program(parse(source, FILE))


def _run(checked: CheckedProgram, settings: Settings) -> Evaluation:
    """`hetprof run`: evaluate, then render the value and the regions (cli/commands.py)."""
    evaluation = evaluate(checked, settings.values(checked), settings.options())
    lines = [evaluation.render_value(limit=64)]
    lines += [f"region {region.label}: {region.ap:,} words used, {region.size:,} words reserved"
              for region in evaluation.regions.values()]
    return evaluation


def _profile(checked: CheckedProgram, evaluation: Evaluation, settings: Settings) -> None:
    """`hetprof profile` after the evaluation: analyse, render (cli/commands.py)."""
    profile = settings.options().profile
    result = analyse(
        evaluation, settings.procs, settings.schedule, file=FILE, params=settings.values(checked),
        body=checked.body, source=checked.program.source, units=profile.units,
        profile_name=profile.name, pictures=settings.format != "text",
        seconds_per_unit={"cpu": profile.cpu.seconds_per_unit,
                          "gpu": profile.gpu.seconds_per_unit},
    )
    if settings.format == "text":
        TextRenderer(color=False).render(result)
        return
    output = RENDERERS[settings.format]().render(result)
    if settings.format in ("json", "trace"):
        _strict_json(output if isinstance(output, str) else output.decode())


def _symbolic(checked: CheckedProgram, settings: Settings) -> None:
    """What `hetprof profile --symbolic` does (cli/symbolic.py, command_symbolic_profile)."""
    values = settings.values(checked)
    options = settings.options()
    profile = symbolic_profile(checked, options, values)
    result = report(profile, values, settings.procs)
    result["file"] = FILE
    result["schedule"] = settings.schedule
    result["explicit_time"] = None
    if result["values"]["nodes"] <= EXPLICIT_NODES:
        evaluation = evaluate(checked, values, options)
        result["explicit_time"] = analyse(evaluation, settings.procs, settings.schedule,
                                          pictures=False).time
    if settings.format == "json":
        _strict_json(json.dumps(result, indent=2, default=str))
    else:
        render_symbolic(result)


class Campaign:
    """Runs mutants through the stages and keeps the figures and one reproducer per crash."""

    def __init__(self, sandbox: Sandbox, rng: random.Random,
                 stages: tuple[str, ...] = STAGES,
                 time_limits: dict[str, float] | None = None):
        self.sandbox = sandbox
        self.rng = rng
        self.stages = stages
        self.time_limits = {**TIME_LIMITS, **(time_limits or {})}
        self.counts = {stage: {outcome: 0 for outcome in Outcome} for stage in STAGES}
        self.crashes: dict[tuple[str, str], list[Trial]] = {}

    def _attempt(self, stage: str, function: Callable[[], Any], source: str,
                 results: list[StageResult]) -> tuple[bool, Any]:
        """Run one stage; record its outcome. (True, value) when it succeeded."""
        try:
            value = self.sandbox.call(function, self.time_limits[stage])
        except StageTimeout as error:
            results.append(StageResult(stage, Outcome.TIMEOUT, f"timeout in {stage}",
                                       f"ran past {self.time_limits[stage]} s",
                                       "".join(traceback.format_exception(error))))
            return False, None
        except NotRegular as error:
            results.append(StageResult(stage, Outcome.NOT_REGULAR, message=error.message))
            return False, None
        except HetprofError as error:
            try:
                fine = located(error, source)
            except Exception as rendering:  # noqa: BLE001 - format_error failed: a crash
                results.append(StageResult(stage, Outcome.CRASH, signature(rendering),
                                           str(rendering)[:300],
                                           "".join(traceback.format_exception(rendering))))
                return False, None
            if fine:
                results.append(StageResult(stage, Outcome.LOCATED, message=error.message[:300]))
            else:
                results.append(StageResult(stage, Outcome.CRASH, signature(error, True),
                                           error.message[:300],
                                           "".join(traceback.format_exception(error))))
            return False, None
        except BaseException as error:  # noqa: BLE001 - everything else is a crash
            if isinstance(error, KeyboardInterrupt):
                raise
            results.append(StageResult(stage, Outcome.CRASH, signature(error),
                                       str(error)[:300],
                                       "".join(traceback.format_exception(error))))
            return False, None
        results.append(StageResult(stage, Outcome.OK))
        return True, value

    def trial(self, source: str, how: str = "", settings: Settings | None = None,
              stages: tuple[str, ...] | None = None, record: bool = True) -> Trial:
        """Run a source through the stages (each after `check` only if `check` passed; `profile`
        only if `run` did), with `settings` or ones drawn from the campaign's generator."""
        stages = stages or self.stages
        trial = Trial(source, how, settings)
        passed, checked = self._attempt("check", functools.partial(_check, source), source,
                                        trial.results)
        if passed and len(stages) > 1:
            names = [p.name for p in checked.program.params]
            if trial.settings is None:
                trial.settings = Settings(
                    tuple((name, self.rng.choice(SIZES)) for name in names),
                    self.rng.choice(PROCS), self.rng.choice(SCHEDULES), self.rng.choice(FORMATS),
                    self.rng.choice(GPU_MODES), self.rng.random() < 0.2)
            else:  # a reproducer being minimised may have lost a parameter
                trial.settings = trial.settings.only(names)
            self._later_stages(trial, checked, stages)
        if record:
            self._record(trial)
        return trial

    def _later_stages(self, trial: Trial, checked: CheckedProgram,
                      stages: tuple[str, ...]) -> None:
        settings, source = trial.settings, trial.source
        assert settings is not None
        if "run" in stages or "profile" in stages:
            ran, evaluation = self._attempt("run", lambda: _run(checked, settings), source,
                                            trial.results)
            if ran and "profile" in stages:
                self._attempt("profile", lambda: _profile(checked, evaluation, settings),
                              source, trial.results)
        if "symbolic" in stages:
            self._attempt("symbolic", lambda: _symbolic(checked, settings), source,
                          trial.results)

    def _record(self, trial: Trial) -> None:
        for result in trial.results:
            self.counts[result.stage][result.outcome] += 1
            if result.outcome in (Outcome.CRASH, Outcome.TIMEOUT):
                self.crashes.setdefault((result.stage, result.signature), []).append(trial)

    def crash_count(self) -> int:
        return sum(len(trials) for trials in self.crashes.values())

    # -- minimal reproducers ------------------------------------------------------------------------
    def reproduces(self, source: str, stage: str, wanted: str, settings: Settings | None) -> bool:
        trial = self.trial(source, settings=settings, stages=stages_up_to(stage), record=False)
        return any(r.stage == stage and r.signature == wanted for r in trial.crashes())

    def minimise(self, source: str, stage: str, wanted: str, settings: Settings | None,
                 budget: int = 3000, seconds: float = 120.0) -> tuple[str, Settings | None]:
        """A smaller source with the same crash at the same stage, in at most `budget` trials and
        about `seconds`: comments dropped, then in turn a subexpression replaced by one inside it
        (or deleted), largest first, and ddmin over the tokens, until neither helps."""
        left = [budget]
        deadline = time.monotonic() + seconds

        def crashes(candidate: str) -> bool:
            if left[0] <= 0 or time.monotonic() > deadline or not candidate.strip():
                return False
            left[0] -= 1
            return self.reproduces(candidate, stage, wanted, settings)

        text = join(_squeeze([t for t in tokenize(source) if t.kind != "comment"])).strip() + "\n"
        if not crashes(text):
            text = source
        changed = True
        while changed and left[0] > 0:
            hoisted, changed = _hoist(text, crashes)
            text, reduced = _ddmin(hoisted, crashes)
            changed = changed or reduced
        final = self.trial(text, settings=settings, stages=stages_up_to(stage), record=False)
        return text, final.settings


def _hoist(text: str, crashes: Callable[[str], bool]) -> tuple[str, bool]:
    """One subexpression (largest first) replaced by one of the three largest inside it, or
    deleted, where the crash stays."""
    spans = sorted(subtrees(text), key=lambda span: span[0] - span[1])
    for start, end in spans:
        inner = [(a, b) for a, b in spans if start <= a and b <= end and (a, b) != (start, end)]
        for a, b in inner[:3] + [(start, start)]:
            candidate = text[:start] + text[a:b] + text[end:]
            if crashes(candidate):
                return candidate, True
    return text, False


_WORDLIKE = re.compile(r"[A-Za-z0-9_'\"]")


def _ddmin(text: str, crashes: Callable[[str], bool]) -> tuple[str, bool]:
    """ddmin over the tokens: chunks of tokens deleted where the crash stays (each token keeps
    the space or newline after it, so that no two words run together)."""
    words: list[tuple[str, str]] = []
    for token in tokenize(text):
        if token.kind == "space":
            if words:
                words[-1] = (words[-1][0], "\n" if "\n" in token.text else " ")
        elif token.kind != "comment":
            words.append((token.text, ""))

    def spell(items: list[tuple[str, str]]) -> str:
        out = []
        for k, (word, after) in enumerate(items):
            out.append(word)
            following = items[k + 1][0] if k + 1 < len(items) else ""
            if not after and _WORDLIKE.match(word[-1:]) and _WORDLIKE.match(following[:1]):
                after = " "
            out.append(after)
        return "".join(out).strip() + "\n"

    reduced_any = False
    chunks = 2
    while len(words) >= 2:
        size = max(1, len(words) // chunks)
        reduced = False
        for start in range(0, len(words), size):
            candidate = words[:start] + words[start + size:]
            if crashes(spell(candidate)):
                words, reduced, reduced_any = candidate, True, True
                chunks = max(chunks - 1, 2)
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(len(words), chunks * 2)
    return spell(words), reduced_any


def stages_up_to(stage: str) -> tuple[str, ...]:
    """The stages a trial runs to reach `stage`."""
    return {"check": ("check",), "run": ("check", "run"), "profile": ("check", "run", "profile"),
            "symbolic": ("check", "symbolic")}[stage]


def _squeeze(tokens: list[Token]) -> list[Token]:
    """Whitespace runs as one space or one newline; no two in a row."""
    out: list[Token] = []
    for token in tokens:
        if token.kind == "space":
            text = "\n" if "\n" in token.text else " "
            if out and out[-1].kind == "space":
                if text == "\n":
                    out[-1] = Token("space", "\n")
                continue
            out.append(Token("space", text))
        else:
            out.append(token)
    return out


# --------------------------------------------------------------------------------------------------
# Bad command lines: `python3 -m cli` in a subprocess


COMMAND_TIME_LIMIT = 30.0
COMMAND_MEMORY_BYTES = 4 * 1024**3
"""Each command's address space is capped (RLIMIT_AS) so that a runaway one fails, not the host."""

BAD_VALUES: dict[str, tuple[str, ...]] = {
    "--procs": ("0", "-1", "99999999999999999999", "100000000", "1e3", "abc", "", "3"),
    "--param": ("garbage", "n=", "=3", "n=10**9", "n=\u0663", "n=-1", "n=0", "n=3=4", "n=0x10",
                "n=1e3", "n= 5", "n=99999999999999999999", "m=3", "n=1_000", "n=100000000"),
    "--max-steps": ("0", "-5", "1000000000000", "abc", "1"),
    "--max-depth": ("0", "10000000", "1", "-3"),
    "--global-latency": ("1e308", "nan", "inf", "-1", "0", "1e-308", "-inf"),
    "--warp-width": ("0", "3", "99999999999", "-32", "1"),
    "--work-group-size": ("0", "1", "7", "99999999999999"),
    "--banks": ("0", "-1", "1000000000000"),
    "--threads-at-once": ("0", "1" + "0" * 30, "1"),
    "--bsize": ("0", "-1", "1000000000000000000", "1"),
    "--schedule": ("xx", "1df", "ws"),
    "--format": ("xx", "json", "csv", "dot", "trace", "html", "text"),
    "--gpu-mode": ("x", "paper", "dmm", "cache"),
    "--size-param": ("zz", "", "n"),
    "--max-n": ("0", "-5", "1" + "0" * 30, "10**12"),
    "--sizes": ("", "a,b", "0", "-1,2", "1e9", "99999999999999999999", ",,", "1,1,1"),
    "--max-nodes": ("0", "-1", "1000000000"),
    "--max-procs": ("0", "-1", "1000000000"),
    "--apply": ("garbage", "x@1:1", "insert-on@0:0", "remove-on@99999:1", "@:"),
    "--beam": ("0", "-1", "1000000"),
    "--depth": ("0", "-1", "1000000"),
    "--ladder-max": ("0", "-1", "1" + "0" * 30),
}
"""Values of each option (bad ones mostly, a few good ones to combine with)."""

FLAGS = ("--symbolic", "--expand-gpu", "--strict-gpu-regions", "--search", "--no-break-even")
_MODEL = ("--device-profile", "--gpu-mode", "--warp-width", "--work-group-size",
          "--global-latency", "--banks", "--threads-at-once", "--bsize", "--strict-gpu-regions")
_RUN = ("--param", "--max-steps", "--max-depth", *_MODEL)
OPTIONS_OF: dict[str, tuple[str, ...]] = {
    "check": (),
    "run": _RUN,
    "profile": (*_RUN, "--procs", "--schedule", "--format", "-o", "--symbolic"),
    "place": (*_RUN, "--procs", "--size-param", "--max-n", "--format", "-o"),
    "graph": (*_RUN, "-o", "--expand-gpu", "--max-nodes"),
    "plot space": (*_RUN, "-o", "--procs", "--schedule"),
    "plot speedup": (*_RUN, "-o", "--procs", "--schedule", "--max-procs"),
    "plot sizes": (*_RUN, "-o", "--procs", "--sizes", "--size-param"),
    "report": (*_RUN, "-o", "--procs", "--schedule", "--max-procs", "--sizes", "--expand-gpu"),
    "rewrite": (*_RUN, "--procs", "--schedule", "--apply", "-o", "--search", "--beam", "--depth",
                "--size-param", "--ladder-max", "--no-break-even", "--format"),
}
COMMAND_WEIGHTS = {"check": 1, "run": 3, "profile": 6, "place": 2, "graph": 1, "plot space": 1,
                   "plot speedup": 1, "plot sizes": 1, "report": 1, "rewrite": 2}
OUTPUT_REQUIRED = {"graph": "graph.svg", "plot space": "space.svg", "plot speedup": "speedup.svg",
                   "plot sizes": "sizes.svg", "report": "report.html"}


_DELETE = object()
"""A field to leave out of a bad profile."""


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def bad_profiles() -> dict[str, str]:
    """Device profiles (JSON text) that are wrong in one way each, by name."""
    base = json.loads((ROOT / "profiles" / "default.json").read_text(encoding="utf-8"))

    def changed(path: tuple[str, ...], value: Any) -> str:
        data = json.loads(json.dumps(base))
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return json.dumps(data, allow_nan=True)

    profiles = {
        "good": json.dumps(base),
        "not-json": "{ this is not json",
        "empty": "",
        "list": "[1, 2, 3]",
        "nested": _nested(200_000),
        "nested-object": '{"a":' * 50_000 + "1" + "}" * 50_000,
        "latin1": "\xe9",
    }
    wrong = {
        "transfer-list": (("transfer", "host_to_device"), [1, 2]),
        "transfer-string": (("transfer", "host_to_device"), "fast"),
        "transfer-number": (("transfer", "device_to_host"), 3),
        "pieces-string": (("transfer", "host_to_device", "pieces"), "x"),
        "pieces-bad": (("transfer", "host_to_device", "pieces"), [{"up_to_words": -1}]),
        "latency-huge": (("gpu", "global_latency"), 1e308),
        "latency-nan": (("gpu", "global_latency"), float("nan")),
        "latency-inf": (("gpu", "global_latency"), float("inf")),
        "warp-string": (("gpu", "warp_width"), "32"),
        "warp-zero": (("gpu", "warp_width"), 0),
        "warp-float": (("gpu", "warp_width"), 31.5),
        "warp-bool": (("gpu", "warp_width"), True),
        "banks-huge": (("gpu", "banks"), 10**30),
        "threads-zero": (("gpu", "threads_at_once"), 0),
        "bsize-negative": (("region", "bsize"), -64),
        "bsize-huge": (("region", "bsize"), 10**18),
        "word-bytes-zero": (("region", "word_bytes"), 0),
        "cpu-missing": (("cpu",), _DELETE),
        "cpu-list": (("cpu",), []),
        "mode-bad": (("gpu", "mode"), "quantum"),
        "units-bad": (("units",), 7),
        "name-object": (("name",), {"a": 1}),
        "seconds-negative": (("cpu", "seconds_per_unit"), -1.0),
        "allocation-null": (("allocation",), None),
        "notes-number": (("notes",), 5),
    }
    for name, (path, value) in wrong.items():
        profiles[name] = changed(path, value)
    return profiles


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    outcome: str  # clean (exit 1 or 2 with a message), accepted (exit 0), crash, timeout
    code: int | None
    signature: str = ""
    detail: str = ""


class CommandLines:
    """Random bad command lines over a work folder of programs and profiles (written there)."""

    def __init__(self, workdir: Path, rng: random.Random):
        self.workdir = workdir
        self.rng = rng
        workdir.mkdir(parents=True, exist_ok=True)
        files = {}
        for name in ("zipmul", "dc_sum", "strided", "dot", "zipmul_cpu"):
            files[f"{name}.lg"] = (ROOT / "examples" / f"{name}.lg").read_text(encoding="utf-8")
        files["empty.lg"] = ""
        files["comments.lg"] = "# only a comment\n"
        files["closure_on.lg"] = ("letregion r in\nlet f = lambda x: int r [r]. on (x + 1 at r) "
                                  "at r in\non (f (1 at r)) at r\n")
        files["huge_literal.lg"] = "letregion r in\n" + "9" * 100_000 + " at r\n"
        files["plus_chain.lg"] = "letregion r in\n" + " + ".join(["1"] * 100_000) + " at r\n"
        for name, text in files.items():
            (workdir / name).write_text(text, encoding="utf-8")
        (workdir / "binary.lg").write_bytes(b"\x00\xff\xfe letregion")
        (workdir / "latin1.lg").write_bytes("letregion r in 1 at r # \xe9\n".encode("latin-1"))
        (workdir / "folder.lg").mkdir(exist_ok=True)
        self.programs = sorted(files) + ["binary.lg", "latin1.lg", "folder.lg", "missing.lg"]
        self.good_programs = ["zipmul.lg", "dc_sum.lg", "strided.lg", "dot.lg", "zipmul_cpu.lg"]
        self.profiles = []
        for name, text in bad_profiles().items():
            path = workdir / f"profile-{name}.json"
            path.write_text(text, encoding="utf-8")
            self.profiles.append(str(path))
        self.profiles.append(str(workdir / "profile-missing.json"))
        self.outputs = ["", "/nonexistent/folder/out.txt", str(workdir), "/dev/full",
                        str(workdir / "out.txt")]

    def command_line(self) -> list[str]:
        """One command line: a sub-command, a program (mostly good), 1-3 bad options."""
        names = list(COMMAND_WEIGHTS)
        command = self.rng.choices(names, [COMMAND_WEIGHTS[n] for n in names])[0]
        program = (self.rng.choice(self.good_programs) if self.rng.random() < 0.75
                   else self.rng.choice(self.programs))
        options = OPTIONS_OF[command]
        chosen = self.rng.sample(options, min(len(options), self.rng.choice((1, 1, 2, 3))))
        return self.build(command, program, [(option, self._value(option)) for option in chosen])

    def sweep(self) -> Iterator[list[str]]:
        """Every bad value of every option once (on the first sub-command that takes it), every
        device profile once, and every program once: the command lines to try first."""
        for option, values in [*BAD_VALUES.items(), ("--device-profile", tuple(self.profiles)),
                               ("-o", tuple(self.outputs))]:
            command = next(c for c in ("profile", "place", "rewrite", "plot speedup",
                                       "plot sizes", "graph") if option in OPTIONS_OF[c])
            program = "strided.lg" if option == "--size-param" else "zipmul.lg"
            for value in values:
                yield self.build(command, program, [(option, value)])
        for program in self.programs:
            yield self.build("profile", program, [])

    def build(self, command: str, program: str, options: list[tuple[str, str | None]]
              ) -> list[str]:
        """`command program options...`, with what the sub-command requires added (an output,
        sizes, a rewrite to apply before -o)."""
        argv = [*command.split(), str(self.workdir / program)]
        for option, value in options:
            argv += [option] if value is None else [option, value]
        given = {option for option, _ in options}
        if command in OUTPUT_REQUIRED and "-o" not in given:
            argv += ["-o", str(self.workdir / OUTPUT_REQUIRED[command])]
        if command == "plot sizes" and "--sizes" not in given:
            argv += ["--sizes", "1,4"]
        if command == "rewrite" and "-o" in given and "--apply" not in given:
            argv += ["--apply", "insert-on@1:1"]
        return argv

    def _value(self, option: str) -> str | None:
        if option in FLAGS:
            return None
        if option == "-o":
            return self.rng.choice(self.outputs)
        if option == "--device-profile":
            return self.rng.choice(self.profiles)
        return self.rng.choice(BAD_VALUES[option])

    def run(self, argv: list[str]) -> CommandResult:
        """Run `python3 -m cli ARGV` (memory capped, time limited) and classify the outcome."""
        try:
            done = subprocess.run(
                [sys.executable, "-m", "cli", *argv], cwd=ROOT, capture_output=True,
                timeout=COMMAND_TIME_LIMIT, preexec_fn=_cap_memory,
                env={**os.environ, "PYTHONIOENCODING": "utf-8"})
        except subprocess.TimeoutExpired:
            return CommandResult(tuple(argv), "timeout", None, "timeout",
                                 f"ran past {COMMAND_TIME_LIMIT} s")
        stderr = done.stderr.decode("utf-8", "replace")
        stdout = done.stdout.decode("utf-8", "replace")
        if "Traceback (most recent call last)" in stderr + stdout:
            return CommandResult(tuple(argv), "crash", done.returncode,
                                 traceback_signature(stderr + stdout), stderr[-3000:])
        if done.returncode not in (0, 1, 2):
            return CommandResult(tuple(argv), "crash", done.returncode,
                                 f"exit code {done.returncode}", stderr[-3000:])
        if done.returncode == 0:
            if "--format" in argv and argv[argv.index("--format") + 1] in ("json", "trace") \
                    and "-o" not in argv:
                try:
                    _strict_json(stdout)
                except (InvalidJson, ValueError) as error:
                    return CommandResult(tuple(argv), "crash", 0, "invalid JSON on stdout",
                                         str(error)[:300])
            return CommandResult(tuple(argv), "accepted", 0)
        if not stderr.strip():
            return CommandResult(tuple(argv), "crash", done.returncode, "exit without a message")
        return CommandResult(tuple(argv), "clean", done.returncode,
                             detail=stderr.strip().splitlines()[0][:300])


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (COMMAND_MEMORY_BYTES, COMMAND_MEMORY_BYTES))


_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')


def traceback_signature(text: str) -> str:
    """Exception type and innermost hetprof frame of a printed traceback."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if re.match(r"^[A-Za-z_.]+(Error|Exception|"
                                                              r"Interrupt|Exit)\b", line)),
                lines[-1] if lines else "?")
    kind = last.split(":")[0]
    where = "?"
    for filename, function in _FRAME.findall(text):
        parts = Path(filename).parts
        for k in range(len(parts) - 1, -1, -1):
            if parts[k] in PACKAGES:
                where = f"{'/'.join(parts[k:])}:{function}"
                break
    return f"{kind} in {where}"
