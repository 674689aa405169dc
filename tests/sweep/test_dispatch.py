"""The Ray Tune side's driver callback, on a real Tune Trial."""
import pytest

pytest.importorskip("ray.tune")


def test_forget_finished_keeps_only_the_scalars_of_a_completed_trials_last_result():
    from ray.tune.experiment import Trial

    from sensitivity.sweep.dispatch import ForgetFinished

    trial = Trial("trainable", stub=True)
    trial.update_last_result({"val_accuracy": 0.9, "epoch": 3, "final": True, "training_iteration": 3,
                              "result_json": '{"curve": []}', "point_json": '{"epoch": 3}'})
    assert trial.run_metadata.metric_analysis["val_accuracy"]["max"] == 0.9  # what Tune keeps per trial
    ForgetFinished().on_trial_complete(iteration=1, trials=[trial], trial=trial)
    kept = {k: v for k, v in trial.last_result.items() if k != "trial_id"}  # Tune adds the trial's id
    assert kept == {"val_accuracy": 0.9, "epoch": 3, "final": True, "training_iteration": 3}
    assert trial.run_metadata.metric_analysis == {} and trial.run_metadata.metric_n_steps == {}
    assert "result_json" not in trial.get_json_state()  # nor in Tune's experiment checkpoint
