"""Work on a table shared with a forked process beside this one, so that a second core takes part of a report.

The process is forked before the table exists: while this process reads the study, the child imports what
its work needs (scikit-learn, for the importance: 1.5 s here). The table then goes to it pickled, through a
temporary file, and its result comes back through a pipe. Work both processes can do is shared as numbered
items, each taken by whichever process is free first (`claim`), so that neither waits on the other however
the machine's load falls.

    beside = Beside(work, warm=("optuna.importance",), shared=3)  # forked now
    beside.hand_over(table)                 # when the table is built: the child runs work(table, beside.claim)
    for item in iter(beside.claim, None):   # meanwhile, here: items 0, 1, 2, those the child has not taken
        ...
    result = beside.result()                # work(table, claim): the child's, or made here

Where forking is unsafe (other threads in this process) or unavailable, or the child failed, `work` runs
here instead, at `result()`: a child's error is raised here, by this process's own run of `work`. Items the
child took are then lost to `claim`: whoever reads the result does what it lacks.
"""
from __future__ import annotations

import gc
import importlib
import os
import pickle
import signal
import tempfile
import threading


class Beside:
    def __init__(self, work, warm=(), shared: int = 0):
        self._work, self._table, self._pid = work, None, None
        self._queue, queue_write = os.pipe()  # one byte per shared item: a read of one byte takes one
        os.write(queue_write, bytes(range(shared)))
        os.close(queue_write)
        if not hasattr(os, "fork") or threading.active_count() > 1:
            return
        self._file = tempfile.TemporaryFile()  # the table, written here and read there (one open file)
        self._ready_read, self._ready_write = os.pipe()  # a byte: the table is in the file
        self._result_read, result_write = os.pipe()
        gc.freeze()  # this process's objects out of the child's garbage collection: it would copy their pages
        pid = os.fork()
        if pid == 0:
            self._child(warm, result_write)
        gc.unfreeze()
        os.close(result_write)
        os.close(self._ready_read)
        self._pid = pid

    def claim(self):
        """The number of the next shared item, taken for this process; None when every item is taken."""
        if self._queue is None:
            return None
        item = os.read(self._queue, 1)
        return item[0] if item else None

    def _child(self, warm, result_write) -> None:
        """Import `warm`, wait for the table, send back `work(table, claim)` pickled; then out, without running
        this process's exit handlers."""
        code = 1
        try:
            os.close(self._result_read)
            os.close(self._ready_write)
            for module in warm:
                importlib.import_module(module)
            if os.read(self._ready_read, 1) == b"1":
                self._file.seek(0)
                result = self._work(pickle.load(self._file), self.claim)
                result = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(result_write, "wb") as pipe:
                    pipe.write(result)
                code = 0
        finally:
            os._exit(code)

    def hand_over(self, table) -> None:
        """Give the child `table`; kept here too, for `work` to run here where the child cannot."""
        self._table = table
        if self._pid is None:
            return
        try:
            pickle.dump(table, self._file, protocol=pickle.HIGHEST_PROTOCOL)
            self._file.flush()
            os.write(self._ready_write, b"1")
        except (pickle.PicklingError, TypeError, AttributeError, OSError):
            self.stop()  # a table that cannot travel: `work` runs here

    def result(self):
        """`work(table, claim)`: the child's, or this process's own where the child failed or there is none."""
        if self._pid is not None:
            os.close(self._ready_write)
            with os.fdopen(self._result_read, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(self._pid, 0)
            self._pid = None
            self._file.close()
            if os.waitstatus_to_exitcode(status) == 0:
                self._close_queue()
                return pickle.loads(data)
        try:
            return self._work(self._table, self.claim)
        finally:
            self._close_queue()

    def stop(self) -> None:
        """End the child at once (nothing of it is wanted any more), and the sharing: `claim` gives None from now
        on, and `result()` runs `work` here."""
        self._close_queue()
        if self._pid is None:
            return
        os.kill(self._pid, signal.SIGKILL)
        os.close(self._ready_write)
        os.close(self._result_read)
        os.waitpid(self._pid, 0)
        self._pid = None
        self._file.close()

    def _close_queue(self) -> None:
        if self._queue is not None:
            os.close(self._queue)
            self._queue = None
