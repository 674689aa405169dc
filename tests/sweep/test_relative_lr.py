"""lr relative to each optimizer (issue 41, point 5): the study samples lr_decades, each trial's spec holds the
absolute lr = lr_reference[optimizer] x 10^lr_decades; a space that cannot make an lr is refused in one line,
exit 2, before anything is written."""
from pathlib import Path

import optuna
import pytest

from sensitivity import frameworks
from sensitivity.cli import main
from sensitivity.config.spaces import SpaceError, load_space

ROOT = Path(__file__).resolve().parents[2]
SPACE = (ROOT / "search_spaces" / "digits-relative.yaml").read_text()


def test_the_spec_holds_the_absolute_lr_of_each_optimizer():
    space = load_space(ROOT / "search_spaces" / "digits-relative.yaml")
    for optimizer, reference in (("adam", 1e-3), ("momentum", 1e-2), ("sgd", 1e-1)):
        for decades in (-1.5, 0.0, 1.0):
            spec = space.trial_spec({"framework": "torch", "lr_decades": decades, "optimizer": optimizer,
                                     "batch_size": 32}, seed=0)
            assert spec.lr == pytest.approx(reference * 10 ** decades) and spec.optimizer == optimizer
    assert "lr_decades" in space.distributions() and "lr" not in space.distributions()


@pytest.mark.parametrize("old, new, message", [
    ("lr_reference: {adam: 0.001, momentum: 0.01, sgd: 0.1}\n", "lr_reference: {adam: 0.001, sgd: 0.1}\n",
     "lr_reference: optimizer momentum has no reference; give one for each of sgd, momentum, adam"),
    ("adam: 0.001,", "adam: -0.001,", "lr_reference.adam: -0.001 is not a positive learning rate"),
    ("adam: 0.001,", "adam: 0,", "lr_reference.adam: 0.0 is not a positive learning rate"),
    ("adam: 0.001,", "adam: 0.001, lbfgs: 1.0,", "lr_reference.lbfgs: not an optimizer; allowed: sgd, momentum"),
    ("lr_reference: {adam: 0.001, momentum: 0.01, sgd: 0.1}\n", "",
     "lr_decades needs lr_reference: the lr each optimizer's lr_decades = 0 stands for"),
    ("  epochs: 5\n", "  epochs: 5\n  lr: 0.1\n", "lr and lr_decades both given"),
    ("low: -1.5, high: 1.5", "low: -1.5, high: 400", "lr_decades: 400.0 is not a number of decades within +-12"),
    ("  lr_decades: {type: float, low: -1.5, high: 1.5}\n", "  lr: {type: float, low: 0.001, high: 1.0}\n",
     "lr_reference without lr_decades"),
])
def test_a_space_that_cannot_make_an_lr_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, old, new, message):
    path = tmp_path / "relative.yaml"
    assert old in SPACE
    path.write_text(SPACE.replace(old, new, 1))
    with pytest.raises(SpaceError, match="relative.yaml: "):
        load_space(path)
    url = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["sweep", str(path), "--trials", "2", "--storage", url, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["relative.yaml"]


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_a_sweep_of_the_relative_space_stores_decades_and_trains_at_the_absolute_lr(tmp_path):
    path = tmp_path / "relative.yaml"
    path.write_text(SPACE.replace("frameworks: [torch, tensorflow]", "frameworks: [torch]").replace("epochs: 5",
                                                                                                    "epochs: 1"))
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert main(["sweep", str(path), "--trials", "3", "--sampler", "random", "--seed", "0", "--storage", url,
                 "--no-progress"]) == 0
    trials = optuna.load_study(study_name="digits-relative", storage=url).get_trials()
    reference = {"adam": 1e-3, "momentum": 1e-2, "sgd": 1e-1}
    assert len(trials) == 3
    for trial in trials:
        assert "lr" not in trial.params and -1.5 <= trial.params["lr_decades"] <= 1.5
        spec = trial.user_attrs["spec"]
        assert spec["lr"] == pytest.approx(reference[trial.params["optimizer"]] * 10 ** trial.params["lr_decades"])
