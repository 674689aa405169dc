"""`sensitivity crossover`: each side's tuned configuration, found before anything runs (or refused in one line),
run on both datasets at its own budget on fresh seeds."""
import optuna
import pytest

from sensitivity import frameworks
from sensitivity.cli import main
from sensitivity.sweep.crossover import FIRST_SEED, CrossoverError, crossover_plan, resolve
from sensitivity.sweep.plans import defaults_space

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
SPACE = """
study: {name}
dataset: {dataset}
frameworks: [torch]
parameters: {{lr: {{type: float, low: 0.01, high: 0.5, log: true}}}}
fixed: {{epochs: 2, optimizer: momentum}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
"""


def sweep(tmp_path, url, name, dataset, trials=3):
    (tmp_path / f"{name}.yaml").write_text(SPACE.format(name=name, dataset=dataset))
    assert main(["sweep", str(tmp_path / f"{name}.yaml"), "--trials", trials, "--storage", url, "--seed", 0,
                 "--sampler", "random", "--no-progress"]) == 0


def test_a_side_without_a_tuned_configuration_is_refused_before_anything_is_written(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'none.db'}"
    cases = [(["--datasets", "mnist5k,digits"], "no configuration tuned for digits on torch: no published default "
                                                "of torch is tuned for digits; give --tuned digits=SWEEP_STUDY"),
             (["--datasets", "mnist5k,digits", "--tuned", "digits=nosuch"], "--tuned digits=nosuch: "),
             (["--datasets", "mnist5k,digits", "--tuned", "cifar10=x"], "expected DATASET=NAME with DATASET one of"),
             (["--datasets", "mnist5k,digits", "--default", "mnist5k=dlbench-shared"], "a shared setting"),
             (["--datasets", "mnist5k,digits", "--default", "mnist5k=caffe-cifar10-quick"], "tuned for cifar10"),
             (["--datasets", "digits,digits"], "give two different datasets"),
             (["--datasets", "mnist5k,mnist5k-a"], "both are drawn from mnist and overlap"),
             (["--datasets", "mnist5k,imagenet"], "--datasets: unknown 'imagenet'"),
             (["--datasets", "mnist5k,digits", "--model", "resnet"], "--model: unknown 'resnet'; allowed: ")]
    for extra, message in cases:
        assert main(["crossover", "--framework", "torch", *extra, "--storage", url, "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "none.db").exists() and not (tmp_path / "results").exists()


def test_the_plan_runs_each_side_on_both_datasets_at_its_own_budget_on_fresh_seeds(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    sweep(tmp_path, url, "dsweep", "digits")
    sides = [resolve("torch", "mnist5k", "native", default="caffe-lenet"),
             resolve("torch", "digits", "native", tuned_study="dsweep", storage=url)]
    assert sides[0].label == "default caffe-lenet" and sides[1].label.startswith("best of dsweep (")
    with pytest.raises(CrossoverError, match="that study swept digits, not mnist5k"):
        resolve("torch", "mnist5k", "native", tuned_study="dsweep", storage=url)
    space = defaults_space("c", ["torch"], ["mnist5k", "digits"], 2)
    plan = crossover_plan(space, "torch", sides, 2)
    assert len(plan) == 2 * 2 * 2 and {p.attrs["seed"] for p in plan} == {FIRST_SEED, FIRST_SEED + 1}
    lenet = {p.planned["dataset"]: p for p in plan if p.attrs["tuned_for"] == "mnist5k"}
    assert lenet["digits"].attrs["run_epochs"] == pytest.approx(10000 * 64 / 60000, abs=0.1)  # its 10.7 epochs
    assert lenet["digits"].planned["model"] == "mlp" and lenet["mnist5k"].planned["model"] == "lenet5"
    swept = [p for p in plan if p.attrs["tuned_for"] == "digits"]
    assert {p.attrs["run_epochs"] for p in swept} == {2.0} and {p.attrs["budget_scale"] for p in plan} == {1.0}
    assert all(p.planned["record_correct"] and not p.attrs["placebo"] for p in plan)
    one_model = crossover_plan(space, "torch", sides, 2, model="mlp")  # every run trains the model given
    assert {p.planned["model"] for p in one_model} == {"mlp"}
    assert {p.attrs["crossover"] for p in one_model} == {"torch/native: mnist5k x digits (mlp)"}


def test_a_placebo_crossover_runs_and_reads_back(tmp_path, capsys):
    """Two halves of digits, each side tuned by a sweep on its half: the crossover study holds the four cells
    and the findings report it as the placebo."""
    url = f"sqlite:///{tmp_path / 'p.db'}"
    sweep(tmp_path, url, "half-a", "digits-a", trials=2)
    sweep(tmp_path, url, "half-b", "digits-b", trials=2)
    assert main(["crossover", "--framework", "torch", "--datasets", "digits-a,digits-b", "--tuned", "digits-a=half-a",
                 "--tuned", "digits-b=half-b", "--model", "mlp", "--seeds", 3, "--storage", url, "--study", "placebo", "--parallel", 2,
                 "--no-progress"]) == 0
    trials = optuna.load_study(study_name="placebo", storage=url).trials
    assert len(trials) == 12 and all(t.user_attrs["placebo"] and t.user_attrs["test_correct"] for t in trials)
    capsys.readouterr()
    assert main(["findings", "placebo", "--storage", url, "--all", "--verbose"]) == 0  # the details: the placebo
    out = capsys.readouterr().out
    assert "[not tested] dataset transfer" in out and "- placebo, torch: digits-a x digits-b (mlp): " in out
    assert "Placebo (placebo, torch: digits-a x digits-b (mlp))" in out  # said beside the claim it controls
