"""The two framework environments: each starts a worker, and the legacy one reads the driver's data."""
import subprocess

import pytest

from sensitivity import datasets
from sensitivity.core import envs
from sensitivity.trial.runner import Worker

needs_legacy = pytest.mark.skipif(not envs.is_available("legacy"), reason="no .venv-legacy here")


@pytest.mark.parametrize("env, numpy_major", [("modern", "2"), pytest.param("legacy", "1", marks=needs_legacy)])
def test_worker_starts_in_its_environment(env, numpy_major):
    worker = Worker(env)
    try:
        worker.start()
        assert worker.alive() and worker.info["numpy"].split(".")[0] == numpy_major
    finally:
        worker.close()
    assert not worker.alive()


@needs_legacy
def test_legacy_interpreter_reads_a_prepared_dataset():
    path = datasets.prepare("digits")
    code = (f"from sensitivity.datasets.base import Dataset; d = Dataset.load_npz({str(path)!r}); "
            "import numpy; print(numpy.__version__, d.x_train.shape, d.classes)")
    proc = subprocess.run([str(envs.interpreter("legacy")), "-c", code], capture_output=True, text=True,
                          env=envs.worker_environ("legacy"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "1.23.5" and "(1438, 1, 8, 8) 10" in proc.stdout


def test_an_environment_whose_interpreter_is_a_folder_or_not_executable_is_missing(tmp_path, monkeypatch):
    """A folder where the interpreter should be (CI once had a /nonexistent folder) is no environment."""
    monkeypatch.setenv("SENSITIVITY_PYTHON_LEGACY", str(tmp_path))
    assert not envs.is_available("legacy")
    plain = tmp_path / "python"
    plain.write_text("")
    monkeypatch.setenv("SENSITIVITY_PYTHON_LEGACY", str(plain))
    assert not envs.is_available("legacy")
    plain.chmod(0o755)
    assert envs.is_available("legacy")
