"""Where the analysis's compiled passes come from (`graphs.compiled`): the module numba builds
from them ahead of time, or numba's just-in-time compiler, or neither.

`graphs.compiled` is built once into an extension module (numba's `pycc`, a C compiler) kept
beside this file in `__pycache__` (or in the user's cache where that is read-only), under a
key of its source, the interpreter and numpy's version. A process that finds it loads it in
about a millisecond, with no numba and no LLVM: just in time, loading numba and the compiled
code from numba's cache costs about 0.25 s and 90 MiB once per process. The first large profile
of a fresh checkout builds it (about 20 s, in a separate process); where it cannot be built (no
compiler, no numba, nowhere to write), the passes run just in time from numba's cache, and
where numba cannot run them either, in Python.
"""

from __future__ import annotations

from typing import Any

COMPILED_FROM = 20_000
"""From this many edges on, the passes over every node or edge of the analysis run compiled
where they give the very same numbers: the longest path (`graphs.costgraph`), the depth-first
numbering and the 1df and bf simulations (`graphs.schedule`). Below, the Python passes run
(the reference the compiled ones are tested against): a small graph's Python passes take less
than loading the compiled ones (and numba, when it must compile or load them itself)."""

_passes: list[Any] = []  # the passes once loaded (see `compiled_passes`), or None


def compiled_passes(size: int) -> Any:
    """The compiled passes for a pass over `size` edges, where that many pay for loading them
    and they load: the built module (`_Built`), else `graphs.compiled` itself, just in time;
    else None. numba is imported only here, lazily, like pyopencl and matplotlib: most runs are
    small, and `hetprof --help` loads none of it."""
    if size < COMPILED_FROM:
        return None
    if not _passes:
        _passes.append(_built() or _just_in_time())
    return _passes[0]


class _Built:
    """The built module's functions, under `graphs.compiled`'s names: each takes the export made
    for the item sizes of its codes (a cost graph numbers its records in 1, 2 or 4 bytes)."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def depth_first_numbers(self, *arguments: Any) -> Any:
        return self.module.depth_first_numbers(*arguments)

    def longest_path(self, *arguments: Any) -> Any:
        codes = arguments[4]
        return getattr(self.module, f"longest_path_{codes.dtype.str[1:]}")(*arguments)

    def fork_tree(self, *arguments: Any) -> Any:
        codes, node_codes = arguments[3], arguments[5]
        name = f"fork_tree_{codes.dtype.str[1:]}_{node_codes.dtype.str[1:]}"
        return getattr(self.module, name)(*arguments)

    def coarsen(self, *arguments: Any) -> Any:
        codes = arguments[5]
        return getattr(self.module, f"coarsen_{codes.dtype.str[1:]}")(*arguments)

    def simulate_by_priority(self, *arguments: Any) -> Any:
        codes, spaces = arguments[4], arguments[7]
        name = f"simulate_by_priority_{codes.dtype.str[1:]}_{spaces.dtype.str[1:]}"
        return getattr(self.module, name)(*arguments)


_BUILT = "hetprof_passes"  # graphs.compiled.BUILT, which imports numba


def built_path() -> str | None:
    """The built module's file, where it has been built for this source, interpreter and numpy;
    else None (`benchmarks/explicit_speed.py` says which)."""
    import importlib.machinery
    import os

    file_name = _BUILT + importlib.machinery.EXTENSION_SUFFIXES[0]
    return next((os.path.join(place, file_name) for place in _build_places()
                 if os.path.exists(os.path.join(place, file_name))), None)


def _built() -> _Built | None:
    """The built module, built first where it is not yet (see the module's docstring)."""
    import importlib.machinery
    import importlib.util
    import os

    found = built_path()
    if found is None:
        file_name = _BUILT + importlib.machinery.EXTENSION_SUFFIXES[0]
        for place in _build_places():  # the first that can be made and written to
            try:
                os.makedirs(place, exist_ok=True)
            except OSError:
                continue
            if os.access(place, os.W_OK):
                found = _build(place, file_name)
                break
    if found is None:
        return None
    try:
        spec = importlib.util.spec_from_file_location(_BUILT, found)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)  # the extension's init is by its name
        spec.loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return _Built(module)


def _build_places() -> list[str]:
    """Where the built module is kept: `__pycache__` beside this file, then the user's cache,
    each in a folder named by a key of `graphs.compiled`'s source, the interpreter and numpy
    (none of them made here)."""
    import hashlib
    import os
    import sys

    import numpy as np

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(here, "compiled.py"), "rb") as source:
            key = hashlib.sha256(source.read())
    except OSError:
        return []
    key.update(f"{sys.version} {np.__version__}".encode())
    folder = f"passes-{key.hexdigest()[:16]}"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [os.path.join(parent, folder)
            for parent in (os.path.join(here, "__pycache__"), os.path.join(cache, "hetprof"))]


def _build(place: str, file_name: str) -> str | None:
    """Build the module into `place` (in a separate process, `python -m graphs.compiled`, then
    moved in whole, so that a process that finds it finds it complete); its path, or None where
    it could not be built."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    environment = {**os.environ,
                   "PYTHONPATH": os.pathsep.join(filter(None, [root,
                                                               os.environ.get("PYTHONPATH")]))}
    try:
        scratch = tempfile.mkdtemp(dir=place)
    except OSError:
        return None
    try:
        subprocess.run([sys.executable, "-m", "graphs.compiled", scratch], env=environment,
                       cwd=scratch, capture_output=True, check=True, timeout=900)
        built = os.path.join(place, file_name)
        os.replace(os.path.join(scratch, file_name), built)
        return built
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _just_in_time() -> Any:
    """`graphs.compiled`, its functions compiled by numba or loaded from numba's cache, or None
    where numba is missing or has nowhere to cache (it refuses `cache=True` then)."""
    import sys

    # numba's first call loads every registry of its own, one of which looks for a BLAS by
    # importing scipy.linalg (0.15 s and 17 MiB here): these passes use none, so scipy is
    # hidden until that is over, where nothing has imported it yet.
    hide_scipy = "scipy" not in sys.modules
    _give_back_free_memory()
    if hide_scipy:
        sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        import graphs.compiled as compiled

        compiled.warm_up()
    except (ImportError, RuntimeError):  # RuntimeError: numba has nowhere to cache
        return None
    finally:
        if hide_scipy and sys.modules.get("scipy", False) is None:
            del sys.modules["scipy"]
    return compiled


def _give_back_free_memory() -> None:
    """Return the C heap's free memory to the system (glibc's malloc_trim), where there is such
    a call: before numba and LLVM load (about 90 MiB that cannot reuse it: code, and Python
    objects in arenas of their own), the temporaries that building the graph's index freed
    (tens of MB) would otherwise stay in the process beside them."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
