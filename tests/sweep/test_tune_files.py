"""A --tune-dir that cannot be written is refused before anything is written."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


def cli(cwd, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def files_under(folder: Path) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def unwritable(tmp_path) -> Path:
    """A path whose nearest existing folder this process cannot write in: a folder made read-only, or for root
    (whom no mode stops) a process's folder of /proc."""
    if os.geteuid() == 0:
        return Path("/proc/1/tune")
    (tmp_path / "ro").mkdir(mode=0o500)
    return tmp_path / "ro" / "tune"


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_a_tune_dir_that_cannot_be_written_is_one_line_and_writes_nothing(tmp_path, kind):
    (tmp_path / "s.yaml").write_text("study: t\ndataset: digits\nframeworks: [torch]\n"
                                     "parameters: {lr: {type: float, low: 0.01, high: 0.1, log: true}}\n"
                                     "objectives: [{metric: val_accuracy, direction: maximize}]\n")
    if kind == "file":
        target, why = tmp_path / "tune", "a file, not a folder"
        target.write_text("x")
    else:
        target, why = unwritable(tmp_path), "is not writable"
    before = files_under(tmp_path)
    started = time.monotonic()
    proc = cli(tmp_path, "sweep", "s.yaml", "--trials", 1, "--tune-dir", target, "--no-progress", timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"--tune-dir {target}" in lines[0] and why in lines[0] and "allowed:" in lines[0]
    assert time.monotonic() - started < 60 and files_under(tmp_path) == before  # nothing written, Ray not started
    assert not (tmp_path / "results").exists()
