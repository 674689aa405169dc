"""`sensitivity ablate` end to end: real torch trials on a local Ray into a study, the path printed with
its intervals, a rerun that runs nothing new, the figure, and one-line refusals."""
import subprocess
import sys

import optuna
import pytest

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
ARGS = ["ablate", "--from", "torch:canonical", "--to", "torch:native", "--dataset", "digits", "--model", "mlp",
        "--epochs", 1, "--lr", 0.05, "--optimizer", "momentum", "--lr-policy", "step", "--stepsize", 5,
        "--seeds", 3, "--parallel", 2, "--study", "abl", "--no-progress"]


def cli(cwd, *args, timeout=900):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def ablated(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("ablate")
    proc = cli(cwd, *ARGS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cwd, proc.stdout, optuna.load_study(study_name="abl", storage=f"sqlite:///{cwd}/results/optuna.db")


def test_the_path_walks_every_relevant_knob_from_canonical_to_native(ablated):
    _, out, study = ablated
    record = study.user_attrs["ablation"]
    assert [s["knob"] for s in record["steps"]][0] == ""
    assert sorted(s["knob"] for s in record["steps"][1:]) == ["init", "schedule", "update"]
    assert record["inert"] == ["weight_decay", "eps_rho"]
    assert record["steps"][0]["knobs"] == {k: "canonical" for k in record["steps"][0]["knobs"]}
    assert record["steps"][-1]["knobs"] == {k: "torch" for k in record["steps"][-1]["knobs"]}
    assert all(len(s["trials"]) == 3 for s in record["steps"])  # n seeds per point
    last = study.trials[record["steps"][-1]["trials"][0]]
    assert last.user_attrs["env"]["semantics"]["optimizer"].startswith("torch.optim.SGD")  # the end is stock
    assert last.user_attrs["env"]["semantics"]["schedule"].startswith("StepLR")
    first = study.trials[record["steps"][0]["trials"][0]]
    assert "rule_update" in first.user_attrs["env"]["semantics"]["optimizer"]
    assert "ablation path torch canonical -> torch native" in out
    assert out.count(" n=3") >= 4 * 3  # every step's accuracies and time with a 95% interval of 3 seeds
    assert "init: canonical -> torch" in out and "not walked: weight_decay, eps_rho" in out


def test_the_points_run_what_their_knobs_say(ablated):
    _, _, study = ablated
    record = study.user_attrs["ablation"]
    for step in record["steps"]:
        for number in step["trials"]:
            trial = study.trials[number]
            assert trial.state == optuna.trial.TrialState.COMPLETE
            assert trial.user_attrs["env"]["semantics"]["knobs"] == step["knobs"]


def test_a_rerun_reuses_the_points_and_the_figure_draws_them(ablated):
    cwd, out, study = ablated
    before = len(study.trials)
    again = cli(cwd, *ARGS)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(optuna.load_study(study_name="abl", storage=f"sqlite:///{cwd}/results/optuna.db").trials) == before
    assert again.stdout == out  # the same path from the same trials
    figure = cli(cwd, "plot", "abl", "--kind", "ablation", "--out", cwd / "ablation.html")
    assert figure.returncode == 0, figure.stderr
    assert "Ablation path: torch canonical to torch native" in (cwd / "ablation.html").read_text()


@pytest.mark.parametrize("args, message", [
    (["--from", "caffe:native"], "--from caffe:native: unknown framework 'caffe'"),
    (["--to", "torch:shipped"], "--to torch:shipped: regime 'shipped'"),
    (["--optimizer", "nesterov", "--momentum", "0"], "nesterov with --momentum 0"),
])
def test_bad_input_is_one_line_and_creates_nothing(tmp_path, args, message):
    base = ["ablate", "--from", "torch:canonical", "--to", "torch:native", "--dataset", "digits", *args]
    proc = cli(tmp_path, *base)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "results").exists()


def test_largest_from_picks_the_largest_native_pair_at_the_published_budget(tmp_path):
    """--largest-from reads a transfer study's framework-transfer pairs: the native one with the largest
    difference at the published budget gives --from, --to, the dataset and the default's configuration."""
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "analysis"))
    from planted import as_study, transfer_rows

    from sensitivity.commands.ablate import largest_difference
    from sensitivity.commands.common import UsageError

    url = f"sqlite:///{tmp_path / 't.db'}"
    rows = [dict(r, default={"tensorflow-default": "tensorflow-mnist-deep", "torch-default": "torch-train-on-mnist",
                             "jax-default": "caffe-lenet"}[r["default"]])
            for r in transfer_rows(__import__("numpy").random.default_rng(0), seeds=(4, 4))]
    as_study(rows, "t", url)
    source, target, fields = largest_difference("t", url)
    assert (source, target, fields["dataset"]) == ("tensorflow:native", "torch:native", "mnist5k")  # the -0.10 pair
    assert fields["lr"] == 0.0001 and fields["optimizer"] == "adam"  # tensorflow-mnist-deep's own configuration
    assert abs(largest_difference("t", url, fraction=0.5)[2]["iterations"] - fields["iterations"] / 2) <= 1
    with pytest.raises(UsageError, match="no study 'nosuch'"):
        largest_difference("nosuch", url)


@pytest.mark.parametrize("extra, message", [
    (["--largest-from", "t", "--from", "torch:native"], "--largest-from chooses --from and --to"),
    (["--budget-fraction", "0.5", "--from", "torch:native", "--to", "mxnet:native", "--dataset", "digits"],
     "--budget-fraction goes with --largest-from"),
    ([], "give --from and --to, or --largest-from STUDY")])
def test_largest_from_refusals_are_one_line(tmp_path, extra, message):
    proc = cli(tmp_path, "ablate", *extra, "--storage", f"sqlite:///{tmp_path / 'none.db'}", timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "none.db").exists()
