"""Work done in forked processes beside this one, so that a command uses the machine's second core
(issue 19: answers in seconds on a 2-core machine).

- `Beside`: one computation in a child while this process does something else (a picture's data
  while matplotlib loads; the report's formulas while its pictures are drawn).
- `Helpers`: children forked early that make themselves ready (load matplotlib) while this process
  works, then take jobs handed to them later (the HTML profile's plots, once their data exists).
- `forked_map`: the rows of `hetprof rewrite` and the sites of `hetprof place`, shared between this
  process and children as each takes the next undone item.

Both give the answers and errors that doing the work here gives: a child sends back pickled
results only, and whatever a child did not deliver (it failed, it was killed, the system cannot
fork) is computed here, in order, so that an error in the program is raised here as it would have
been. What was computed before the fork (a scorer's caches, the written program's time curve) is
shared by all; what is computed after it stays in the process that computed it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
from collections.abc import Callable
from typing import Any, BinaryIO, Generic, NoReturn, TypeVar

T = TypeVar("T")

WORKERS = 2  # this process and one child: the examples' rows are too few to pay for more


class Beside(Generic[T]):
    """`work()`, computed in a child process forked now, beside this one, while this one goes
    on; `result()` waits for it. On two cores the report's formulas and its plots' data (the
    speedup curve, the space plot's other schedule) are computed while its pictures are drawn:
    together they take about half of its time. Where there is no
    fork, or the child fails (an error in the program then shows here as it would have), `work`
    runs here, in `result()`. `result()` asked again gives the same result (the work is not done
    again)."""

    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work
        self.pid = 0
        self.done: list[T] = []  # the result, once had
        if not hasattr(os, "fork"):  # Windows
            return
        read, write = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if self.pid == 0:  # the child: its result through the pipe, and nothing else
            os.close(read)
            code = 1
            try:
                with os.fdopen(write, "wb") as pipe:
                    pickle.dump(work(), pipe)
                code = 0
            finally:
                os._exit(code)  # no clean-up of the parent's: its buffers, atexit, threads
        os.close(write)
        self.pipe = os.fdopen(read, "rb")

    def result(self) -> T:
        if not self.done:
            self.done.append(self._result())
        return self.done[0]

    def _result(self) -> T:
        if self.pid:
            with self.pipe:
                data = self.pipe.read()
            _, status = os.waitpid(self.pid, 0)
            self.pid = 0
            if status == 0:
                return pickle.loads(data)
        return self.work()

    def cancel(self) -> None:
        """Stop the child, where this process stops before it asks for the result."""
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            self.pipe.close()
            os.waitpid(self.pid, 0)
            self.pid = 0


class Helpers:
    """`copies` children that run `prepare()` (loading matplotlib, say) while this process goes
    on, then the jobs `submit` hands them, each job a picklable callable, in turn: the first
    child is forked now and forks the others once prepared, so that each starts ready and this
    process pays one fork. `result(handle)` is the job's value. A job that fails in its child,
    or whose child died, could not be forked or hand a job to, runs here in `result`, so that
    its error is raised here as it would have been; so does every job where the system cannot
    fork or has one core."""

    def __init__(self, prepare: Callable[[], object], copies: int = 2) -> None:
        self.pid = 0
        # per copy: the pipe its jobs go down, the pipe its results come up (None once gone)
        self.copies: list[tuple[BinaryIO, BinaryIO] | None] = []
        self.jobs: list[tuple[int, Callable[[], object]]] = []  # handle -> (copy, job)
        self.done: dict[int, object] = {}
        self.waiting: list[list[int]] = []  # per copy: the handles sent whose results are due
        if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 or copies < 1:
            return
        pipes = [(os.pipe(), os.pipe()) for _ in range(copies)]
        try:
            pid = os.fork()
        except OSError:
            for (jobs_read, jobs_write), (results_read, results_write) in pipes:
                for fd in (jobs_read, jobs_write, results_read, results_write):
                    os.close(fd)
            return
        if pid == 0:
            _helper(prepare, pipes)
        for (jobs_read, jobs_write), (results_read, results_write) in pipes:
            os.close(jobs_read)
            os.close(results_write)
            self.copies.append((os.fdopen(jobs_write, "wb"), os.fdopen(results_read, "rb")))
            self.waiting.append([])
        self.pid = pid

    def submit(self, job: Callable[[], T]) -> int:
        """Hand `job` to the copy with the fewest jobs due; its handle."""
        handle = len(self.jobs)
        alive = [k for k, copy in enumerate(self.copies) if copy is not None]
        copy = min(alive, key=lambda k: len(self.waiting[k])) if alive else -1
        self.jobs.append((copy, job))
        if copy >= 0:
            pipes = self.copies[copy]
            assert pipes is not None
            try:
                pickle.dump(job, pipes[0])
                pipes[0].flush()
            except (OSError, pickle.PicklingError, AttributeError, TypeError):
                self._lose(copy)
            else:
                self.waiting[copy].append(handle)
        return handle

    def result(self, handle: int) -> Any:
        copy, job = self.jobs[handle]
        while handle not in self.done and copy >= 0 and handle in self.waiting[copy]:
            pipes = self.copies[copy]
            assert pipes is not None
            try:
                ok, value = pickle.load(pipes[1])
            except (OSError, EOFError, pickle.UnpicklingError):
                self._lose(copy)
                break
            first = self.waiting[copy].pop(0)
            if ok:
                self.done[first] = value
        if handle in self.done:
            return self.done.pop(handle)
        return job()

    def close(self, kill: bool = False) -> None:
        """Let the children go (killed where this process stops early, `kill`) and wait for the
        first."""
        for copy in range(len(self.copies)):
            self._lose(copy)
        if self.pid:
            if kill:
                os.kill(self.pid, signal.SIGKILL)
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = 0

    def _lose(self, copy: int) -> None:
        """No more from `copy`: its pipes closed (it ends when it reads their end); its jobs
        due run here."""
        pipes = self.copies[copy]
        if pipes is None:
            return
        self.copies[copy] = None
        self.waiting[copy].clear()
        for pipe in pipes:
            with contextlib.suppress(OSError):
                pipe.close()


def _helper(prepare: Callable[[], object],
            pipes: list[tuple[tuple[int, int], tuple[int, int]]]) -> NoReturn:
    """A `Helpers` child: prepared, it forks the other copies, and each serves its own pipes:
    (ok, value) for each job, in order, until its jobs' pipe ends."""
    code = 1
    try:
        for (_, jobs_write), (results_read, _) in pipes:
            os.close(jobs_write)
            os.close(results_read)
        prepare()
        mine = 0
        children: list[int] = []
        for k in range(1, len(pipes)):
            try:
                child = os.fork()
            except OSError:
                break
            if child == 0:
                mine, children = k, []
                break
            children.append(child)
        for k, ((jobs_read, _), (_, results_write)) in enumerate(pipes):
            if k != mine:
                os.close(jobs_read)
                os.close(results_write)
        (jobs_read, _), (_, results_write) = pipes[mine]
        with os.fdopen(jobs_read, "rb") as jobs, os.fdopen(results_write, "wb") as results:
            while True:
                try:
                    job = pickle.load(jobs)
                except EOFError:
                    break
                try:
                    answer = (True, job())
                except Exception:  # noqa: BLE001 - the parent runs it again, for its error
                    answer = (False, None)
                pickle.dump(answer, results)
                results.flush()
        for child in children:
            os.waitpid(child, 0)
        code = 0
    finally:
        os._exit(code)  # no clean-up of the parent's: its buffers, atexit, threads


def forked_map(work: Callable[[int], T], count: int,
               done: Callable[[int, T], None] | None = None,
               workers: int = WORKERS, forked: Callable[[], None] | None = None) -> list[T]:
    """[work(0), ..., work(count - 1)], each item computed by whichever of this process and
    `workers - 1` forked children takes it first; `done(i, result)` is called here for each, in
    the order they finish. A child's item that fails is computed again here (after the others),
    so an error is raised here, as the serial loop would raise it; so is every item of a child
    that dies. Serial where there is no fork, one core, or at most one item.

    `forked()` is called once the children exist (at once where there are none): a progress
    display's thread is started there, after the fork, so that no child starts with a lock the
    thread held at that moment (a child that then printed a warning would wait for it forever)."""
    results: dict[int, T] = {}

    def finish(index: int, value: T) -> None:
        results[index] = value
        if done is not None:
            done(index, value)

    children = _fork_workers(work, count, workers) if count > 1 else None
    if forked is not None:
        forked()
    if children is None:
        for index in range(count):
            finish(index, work(index))
        return [results[i] for i in range(count)]
    counter, pipes = children
    buffers = {pipe: b"" for pipe in pipes}
    finished = False
    try:
        while (taken := _take(counter, count)) is not None:
            try:
                value = work(taken)
            except Exception:  # noqa: BLE001 - computed again below, in order
                pass
            else:
                finish(taken, value)
            _collect(buffers, finish, block=False)
        while buffers:
            _collect(buffers, finish, block=True)
        finished = True
    finally:
        _reap(pipes, kill=not finished)
    # What failed, here or in a child, and what a child did not deliver, in order: the first
    # error is raised here, as the serial loop would raise it.
    for index in range(count):
        if index not in results:
            finish(index, work(index))
    return [results[i] for i in range(count)]


def _fork_workers(work: Callable[[int], T], count: int, workers: int):
    """The shared counter of items taken and a pipe from each child forked; None where this
    system cannot fork or has one core."""
    if not hasattr(os, "fork") or workers < 2 or (os.cpu_count() or 1) < 2:
        return None
    import multiprocessing  # its shared memory, only where there are children to share it

    counter = multiprocessing.get_context("fork").Value("l", 0)
    pipes: dict[int, int] = {}  # read end -> child's pid
    for _ in range(workers - 1):
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            break
        if pid == 0:  # the child: (index, ok, pickled result) records, and nothing else
            os.close(read)
            code = 0
            try:
                while (index := _take(counter, count)) is not None:
                    try:
                        value = work(index)
                        payload, ok = pickle.dumps(value), 1
                    except BaseException:  # noqa: BLE001 - the parent computes it again
                        payload, ok = b"", 0
                    _write_all(write, struct.pack("<qqq", index, ok, len(payload)) + payload)
            except BaseException:  # noqa: BLE001 - whatever is left, the parent computes
                code = 1
            finally:
                os._exit(code)  # no clean-up of the parent's: its buffers, atexit, threads
        os.close(write)
        pipes[read] = pid
    if not pipes:
        return None
    return counter, pipes


def _take(counter, count: int) -> int | None:
    """The next item no process has taken; None when all are."""
    with counter.get_lock():
        index = counter.value
        if index >= count:
            return None
        counter.value = index + 1
    return index


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


HEADER = struct.calcsize("<qqq")


def _collect(buffers: dict[int, bytes], finish: Callable[[int, T], None], block: bool) -> None:
    """Read what the children have sent (waiting for some where `block`), and finish each whole
    record that succeeded; a pipe at its end is dropped from `buffers`."""
    ready, _, _ = select.select(list(buffers), [], [], None if block else 0)
    for pipe in ready:
        chunk = os.read(pipe, 1 << 20)
        if not chunk:
            del buffers[pipe]
            continue
        data = buffers[pipe] + chunk
        while len(data) >= HEADER:
            index, ok, size = struct.unpack_from("<qqq", data)
            if len(data) < HEADER + size:
                break
            if ok:
                finish(index, pickle.loads(data[HEADER:HEADER + size]))
            data = data[HEADER + size:]
        buffers[pipe] = data


def _reap(pipes: dict[int, int], kill: bool) -> None:
    """Close the pipes and wait for the children, killing them first where this process stops
    early (an interrupt) while they may still be at work."""
    for pipe, pid in pipes.items():
        os.close(pipe)
        if kill:
            os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
