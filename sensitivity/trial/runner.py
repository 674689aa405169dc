"""Driver side of a trial: start a worker under the framework environment's interpreter, send it the
trial, follow its events, and turn every way it can end into a TrialResult.

An exception inside the trial comes back from the worker as a failed result. A crash (segfault, an
out-of-memory kill, SIGKILL) ends the worker's output without a result: the trial is failed with the
signal and the tail of stderr. Past the spec's timeout the worker's whole process group is killed and the
trial is timeout. Never a hang, never a lost result.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

from sensitivity import datasets, frameworks
from sensitivity.core import envs
from sensitivity.core.spec import TrialResult, TrialSpec
from sensitivity.frameworks import gpu
from sensitivity.trial import environment
from sensitivity.trial.worker import STDERR_END

STDERR_TAIL_LINES = 40
READY_TIMEOUT_S = 120.0  # the worker imports only numpy, pydantic and psutil before it is ready
STDERR_WAIT_S = 5.0  # how long a result waits for the worker's stderr to catch up with it
TEST_WORKER = "SENSITIVITY_TEST_WORKER"  # names a test worker in tests/ (`worker_command`)
INHERITED = ("OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")  # what Ray sets per actor, which a worker inherits


def worker_setup(spec: TrialSpec, gpu_share=None) -> tuple:
    """(environment, start-up variables) of the worker that runs `spec`, the one recipe of every path that
    starts one (a trial, the sweep, robustness, timing, the forecast's probe): what Ray set for this process's
    resources, the framework's variables (a backend chosen before import, determinism), the trial's threads
    and its GPU share."""
    variables = {k: os.environ[k] for k in INHERITED if k in os.environ}
    variables.update(frameworks.worker_variables(spec))
    if spec.threads:  # OpenMP's pool is sized at import: a trial of N CPUs should not start more threads
        variables["OMP_NUM_THREADS"] = str(spec.threads)
    if gpu_share:
        variables.update(gpu.allocator_variables(gpu_share))
    return frameworks.FRAMEWORKS[spec.framework].env, variables


class WorkerError(Exception):
    """The worker process could not be started or did not become ready."""


def worker_command(python) -> list:
    """The worker's command line: `python -m sensitivity.trial.worker`. A test facility: where
    SENSITIVITY_TEST_WORKER=NAME is set, the checkout's `tests/NAME.py` runs instead (a worker wrapping the real
    one, such as `tests/fault_worker.py`). Only a file in the tests/ folder beside the package can be named, code
    its user can run already; any other value is a WorkerError."""
    name = os.environ.get(TEST_WORKER)
    if not name:
        return [str(python), "-m", "sensitivity.trial.worker"]
    path = envs.REPO_ROOT / "tests" / f"{name}.py"
    if not name.isidentifier() or not path.is_file():
        raise WorkerError(f"{TEST_WORKER}={name!r}: not a test worker of {path.parent} (a file name without .py, "
                          f"such as fault_worker); it is for the tests only, unset it")
    return [str(python), str(path)]


class WorkerStartTimeout(WorkerError):
    """The worker was not ready by the trial's deadline."""


class Worker:
    """One worker process of one environment (and of one set of start-up variables, such as the Keras
    backend), kept warm across trials."""

    def __init__(self, env: str, variables: Optional[dict] = None, echo_stderr: bool = False):
        self.env = env
        self.variables = dict(variables or {})
        self.echo_stderr = echo_stderr
        self.proc: Optional[subprocess.Popen] = None
        self.info: Optional[dict] = None  # the worker's ready event: pid, python, numpy
        self.start_s = 0.0  # seconds its last start took, to its ready event
        self.stderr_tail = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_ends = 0  # end-of-request markers (worker.STDERR_END) read from the worker's stderr
        self._stderr_eof = False
        self._stderr_seen = threading.Condition()
        self._stderr_reader: Optional[threading.Thread] = None

    @staticmethod
    def for_spec(spec: TrialSpec, gpu_share=None, echo_stderr: bool = False) -> "Worker":
        """A worker (not yet started) set up to run `spec` (`worker_setup`)."""
        env, variables = worker_setup(spec, gpu_share)
        return new_worker(env, variables, echo_stderr)

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, deadline: Optional[float] = None) -> None:
        """Start the worker and wait until it is ready: READY_TIMEOUT_S at most, and never past `deadline`
        (a time.monotonic() value, the trial's), which raises WorkerStartTimeout."""
        started = time.perf_counter()
        python = envs.interpreter(self.env)
        if not python.exists():
            raise WorkerError(f"environment {self.env!r} is missing: {python} does not exist "
                              f"(run scripts/setup.sh {self.env})")
        self.proc = subprocess.Popen(
            worker_command(python), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1, env=envs.worker_environ(self.env, self.variables),
            start_new_session=True)
        # each process gets its own queue: a killed process's reader may still put its end (None) after this
        self.events: queue.Queue = queue.Queue()
        self.stderr_tail.clear()
        self._stderr_ends, self._stderr_eof = 0, False
        threading.Thread(target=self._read_stdout, args=(self.proc, self.events), daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True)
        self._stderr_reader.start()
        ready_by = time.monotonic() + READY_TIMEOUT_S
        event = self._next_event(ready_by if deadline is None else min(ready_by, deadline))
        if event == "timeout" and deadline is not None and deadline < ready_by:
            self.kill()
            raise WorkerStartTimeout(f"the worker of environment {self.env!r} was not ready within the timeout")
        if event is None or event == "timeout" or event.get("event") != "ready":
            tail = self.tail()
            self.kill()
            raise WorkerError(f"worker of environment {self.env!r} did not start: {tail or event}")
        self.info = event
        self.start_s = time.perf_counter() - started

    def run(self, spec: TrialSpec, on_event: Optional[Callable[[dict], None]] = None) -> TrialResult:
        """Run one trial to its end, whatever that end is. A trial that ended without the worker's full
        record (failed, timeout) gets the environment the driver knows, and the curve of the epochs it
        reported before it ended (a killed worker's trial keeps what it trained)."""
        curve = []

        def follow(event: dict) -> None:
            if event.get("event") == "epoch":
                curve.append({k: v for k, v in event.items() if k != "event"})
            if on_event is not None:
                on_event(event)

        result = self._run(spec, follow)
        if result.status not in ("ok", "diverged"):
            known = environment.for_failure(spec, self.env, str(envs.interpreter(self.env)), self.info or {})
            result.env = {**known, **result.env}
            result.curve = result.curve or curve
        return result

    def _run(self, spec: TrialSpec, on_event: Callable[[dict], None]) -> TrialResult:
        if not frameworks.worker_variables(spec).items() <= self.variables.items():
            raise ValueError(f"this worker was started with {self.variables}, the trial needs "
                             f"{frameworks.worker_variables(spec)}")
        deadline = time.monotonic() + spec.timeout if spec.timeout else None  # bounds the start too
        data_path = datasets.prepare(spec.dataset, spec.data_dir)
        model = spec.model or datasets.REGISTRY[spec.dataset].default_model
        if not self.alive():
            try:
                self.start(deadline)
            except WorkerStartTimeout as exc:
                return TrialResult.failure("timeout", f"no result within the {spec.timeout:g} s timeout: {exc}",
                                           spec, self.tail())
            except WorkerError as exc:
                return TrialResult.failure("failed", str(exc), spec)
        self.stderr_tail.clear()
        ends = self._stderr_ends + 1
        request = {"spec": spec.model_dump(mode="json"), "data": str(data_path), "model": model}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker died: the loop below reports how
        while True:
            event = self._next_event(deadline)
            if event == "timeout":
                self.kill()
                self._await_stderr(None)
                return TrialResult.failure("timeout", f"no result within the {spec.timeout:g} s timeout",
                                           spec, self.tail())
            if event is None:
                reason = self._death_reason()
                self._await_stderr(None)
                return TrialResult.failure("failed", reason, spec, self.tail())
            if event.get("event") == "result":
                self._await_stderr(ends)
                result = TrialResult.from_dict(event["result"])
                if result.status != "ok":
                    result.stderr_tail = self.tail()
                return result
            on_event(event)

    def attack(self, request: dict, timeout: Optional[float] = None) -> dict:
        """Run one attack request (`sensitivity.trial.attacks.run_request`); raises WorkerError if it fails."""
        if not self.alive():
            self.start()
        self.stderr_tail.clear()
        ends = self._stderr_ends + 1
        try:
            self.proc.stdin.write(json.dumps({"attack": request}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker died: the next event says so
        event = self._next_event(time.monotonic() + timeout if timeout else None)
        if event == "timeout":
            self.kill()
            raise WorkerError(f"attack gave no result within {timeout:g} s")
        if event is None:
            reason = self._death_reason()
            self._await_stderr(None)
            raise WorkerError(f"{reason}: {self.tail()[-1000:]}")
        self._await_stderr(ends)
        if "error" in event:
            raise WorkerError(event["error"])
        return event["result"]

    def kill(self) -> None:
        """End the worker and everything it started (its own process group)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> None:
        if self.alive():
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def tail(self) -> str:
        return "".join(self.stderr_tail)[-4000:]

    def _next_event(self, deadline: Optional[float]):
        """The next protocol event, None at end of output, or "timeout" past the deadline."""
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return "timeout"

    def _death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            return "worker closed its output without a result and did not exit"
        if code < 0:
            name = signal.Signals(-code).name
            hint = " (the kernel's out-of-memory killer sends SIGKILL)" if -code == signal.SIGKILL else ""
            return f"worker killed by signal {-code} ({name}){hint} before reporting a result"
        return f"worker exited with code {code} before reporting a result"

    def _read_stdout(self, proc, events: queue.Queue) -> None:
        for line in proc.stdout:
            try:
                events.put(json.loads(line))
            except json.JSONDecodeError:
                if proc is self.proc:
                    self.stderr_tail.append("[stdout] " + line)
        events.put(None)

    def _await_stderr(self, ends: Optional[int]) -> None:
        """Wait (STDERR_WAIT_S at most) until the stderr reader has read `ends` end markers, or, with
        None, the end of the stream: the tail then holds all the worker wrote before its result."""
        if self._stderr_reader is None:
            return
        with self._stderr_seen:
            self._stderr_seen.wait_for(lambda: self._stderr_eof or (ends is not None and self._stderr_ends >= ends),
                                       timeout=STDERR_WAIT_S)

    def _read_stderr(self, proc) -> None:
        """Read `proc`'s stderr; once the worker has started another process, this one's lines are dropped."""
        for line in proc.stderr:
            if proc is not self.proc:
                continue
            if line == STDERR_END:
                with self._stderr_seen:
                    self._stderr_ends += 1
                    self._stderr_seen.notify_all()
                continue
            self._stderr_line(line)
        with self._stderr_seen:
            if proc is self.proc:
                self._stderr_eof = True
            self._stderr_seen.notify_all()

    def _stderr_line(self, line: str) -> None:
        self.stderr_tail.append(line)
        if self.echo_stderr:
            sys.stderr.write(line)


def new_worker(env: str, variables: Optional[dict] = None, echo_stderr: bool = False) -> Worker:
    """A worker of environment `env` and start-up `variables`, not yet started: the one factory of workers
    (`Worker.for_spec`, and `pool.WorkerPool`, which the keeper and robustness keep theirs in)."""
    return Worker(env, variables, echo_stderr)


def run_trial(spec: TrialSpec, on_event=None, echo_stderr: bool = False) -> TrialResult:
    """One trial in a fresh worker of its framework's environment."""
    worker = Worker.for_spec(spec, echo_stderr=echo_stderr)
    try:
        return worker.run(spec, on_event)
    finally:
        worker.close()
