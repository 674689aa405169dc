"""Ray Tune's files and robustness's surrogates go beside their study, and go once the study holds them: a real
transfer study whose storage is in another folder than the current one, attacked by real workers; a --tune-dir
that cannot be written is refused before anything is."""
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest

from sensitivity import frameworks
from sensitivity.experiments.robustness_weights import REMOVED_ATTR

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
PROTOCOL = "eps: [0.1]\nsurrogate: {framework: torch, epochs: 1}\n"


def cli(cwd, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


class Seen:
    """Polls in a thread, while a command runs, which of `paths` exist at some moment."""

    def __init__(self, *paths):
        self.paths, self.seen, self._stop = paths, set(), threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self):
        while not self._stop.wait(0.05):
            self.seen |= {p for p in self.paths if p.exists()}

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.seen


def files_under(folder: Path) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_a_study_in_another_folder_leaves_no_tune_files_nor_surrogates_in_the_current_one(tmp_path):
    here, store = tmp_path / "here", tmp_path / "store"
    here.mkdir(), store.mkdir()
    url = f"sqlite:///{store}/s.db"
    (here / "protocol.yaml").write_text(PROTOCOL)
    seen = Seen(store / "ray-tune", here / "results" / "ray-tune")
    proc = cli(here, "transfer", "--frameworks", "torch", "--datasets", "digits", "--defaults",
               "torch-train-on-mnist,mxnet-train-mnist", "--budget-epochs", 2, "--keep-weights", "--study", "d",
               "--storage", url, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seen.stop() == {store / "ray-tune"}  # Tune's files were beside the study while it ran
    assert not (store / "ray-tune").exists()  # and went once the study held every trial
    assert {p.name for p in (here / "results").iterdir()} == {"trial-logs", "ray-processes", "weights"}, \
        files_under(here)

    weights = [Path(t.user_attrs["weights"]) for t in optuna.load_study(study_name="d", storage=url).trials]
    assert len(weights) == 2 and all(w.exists() for w in weights)
    seen = Seen(store / "robustness" / "d" / "surrogate-digits-0.npz", here / "results" / "robustness")
    attacked = cli(here, "robustness", "d", "--storage", url, "--protocol", "protocol.yaml", "--samples", 30)
    assert attacked.returncode == 0, attacked.stderr[-3000:]
    assert seen.stop() == {store / "robustness" / "d" / "surrogate-digits-0.npz"}  # beside the study
    assert "weights files removed" in attacked.stderr
    assert not any(w.exists() for w in weights) and not (store / "robustness").exists()
    assert not (here / "results" / "weights" / "d").exists()  # the study's folder, left empty, went too
    study = optuna.load_study(study_name="d", storage=url)
    assert study.user_attrs[REMOVED_ATTR]["models"] == 2 and len(
        [k for k, v in study.user_attrs.items() if k.startswith("robustness:") and v]) == 2  # the records stay

    again = cli(here, "robustness", "d", "--storage", url)
    lines = again.stderr.strip().splitlines()
    assert again.returncode == 2 and len(lines) == 1, again.stderr
    assert "were removed after its robustness run" in lines[0] and "--keep-checkpoints" in lines[0]
    command = lines[0].split("train them into a new study: ")[1].split(", then ")[0]
    assert command == ("sensitivity transfer --frameworks torch --datasets digits --defaults "
                       "mxnet-train-mnist,torch-train-on-mnist --seeds 1 --semantics native --budget-epochs 2 "
                       "--keep-weights --study d-retrained")
    assert dict(optuna.load_study(study_name="d", storage=url).user_attrs) == dict(study.user_attrs)


def test_robustness_refuses_a_study_without_building_its_trials_through_optuna(tmp_path, monkeypatch):
    """Both refusals, no kept weights and weights removed, read the trials in bulk (`trial_rows`): through
    Optuna's ORM a study of 10,000 trials took 13.6 s before its one line."""
    from sensitivity.experiments.robustness import RobustnessError, attack_study

    url = f"sqlite:///{tmp_path}/s.db"
    plain = optuna.create_study(study_name="plain", storage=url)
    plain.add_trial(optuna.trial.create_trial(value=0.5, user_attrs={"status": "ok"}))
    removed = optuna.create_study(study_name="removed", storage=url)
    removed.add_trial(optuna.trial.create_trial(value=0.5, user_attrs={
        "status": "ok", "weights": str(tmp_path / "gone.npz"), "spec": {"framework": "torch", "dataset": "digits"}}))
    removed.set_user_attr(REMOVED_ATTR, {"models": 1, "files": 1, "time": 0})
    monkeypatch.setattr(optuna.study.Study, "get_trials", lambda *args, **kw: pytest.fail("read through the ORM"))
    with pytest.raises(RobustnessError, match=r"^study plain has no completed trials \(native\) with kept weights"):
        attack_study(plain)
    with pytest.raises(RobustnessError, match="were removed after its robustness run .* the sweep that made study "
                                              "removed, run again with --keep-weights --study removed-retrained"):
        attack_study(removed)


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
