"""Work done in forked processes beside this one, so that a command uses the machine's second core
(issue 19: answers in seconds on a 2-core machine).

- `Beside`: one computation in a child while this process does something else (a picture's data
  while matplotlib loads; the report's formulas while its pictures are drawn).
- `forked_map`: the rows of `hetprof rewrite` and the sites of `hetprof place`, shared between this
  process and children as each takes the next undone item.

Both give the answers and errors that doing the work here gives: a child sends back pickled
results only, and whatever a child did not deliver (it failed, it was killed, the system cannot
fork) is computed here, in order, so that an error in the program is raised here as it would have
been. What was computed before the fork (a scorer's caches, the written program's time curve) is
shared by all; what is computed after it stays in the process that computed it.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

WORKERS = 2  # this process and one child: the examples' rows are too few to pay for more


class Beside(Generic[T]):
    """`work()`, computed in a child process forked now, beside this one, while this one goes
    on; `result()` waits for it. On two cores the report's formulas and its plots' data (the
    speedup curve, the space plot's other schedule) are computed while its pictures are drawn:
    together they take about half of its time. Where there is no
    fork, or the child fails (an error in the program then shows here as it would have), `work`
    runs here, in `result()`."""

    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work
        self.pid = 0
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
