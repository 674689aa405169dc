"""Work on a table done in a forked process beside this one, so that a second core takes part of a report.

The process is forked before the table exists: while this process reads the study, the child imports what
its work needs (scikit-learn, for the importance: 1.5 s here). The table then goes to it pickled, through a
temporary file, and its result comes back through a pipe.

    beside = Beside(work, warm=("optuna.importance",))   # forked now
    beside.hand_over(table)                                # when the table is built
    result = beside.result()                               # work(table), from the child or made here

Where forking is unsafe (other threads in this process) or unavailable, or the child failed, `work` runs
here instead, at `result()`: a child's error is raised here, by this process's own run of `work`.
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
    def __init__(self, work, warm=()):
        self._work, self._table, self._pid = work, None, None
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

    def _child(self, warm, result_write) -> None:
        """Import `warm`, wait for the table, send back `work(table)` pickled; then out, without running
        this process's exit handlers."""
        code = 1
        try:
            os.close(self._result_read)
            os.close(self._ready_write)
            for module in warm:
                importlib.import_module(module)
            if os.read(self._ready_read, 1) == b"1":
                self._file.seek(0)
                result = pickle.dumps(self._work(pickle.load(self._file)), protocol=pickle.HIGHEST_PROTOCOL)
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
        """`work(table)`: the child's, or this process's own where the child failed or there is none."""
        if self._pid is not None:
            os.close(self._ready_write)
            with os.fdopen(self._result_read, "rb") as pipe:
                data = pipe.read()
            _, status = os.waitpid(self._pid, 0)
            self._pid = None
            self._file.close()
            if os.waitstatus_to_exitcode(status) == 0:
                return pickle.loads(data)
        return self._work(self._table)

    def stop(self) -> None:
        """End the child at once (nothing of it is wanted any more); `result()` then runs `work` here."""
        if self._pid is None:
            return
        os.kill(self._pid, signal.SIGKILL)
        os.close(self._ready_write)
        os.close(self._result_read)
        os.waitpid(self._pid, 0)
        self._pid = None
        self._file.close()
