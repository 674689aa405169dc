"""While a sweep runs, Tune's notes on trials the searcher has already told the study about are not logged;
its other messages are."""
import logging

from sensitivity.ray_cluster import ray_text_aside


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_tunes_notes_on_told_trials_are_dropped_and_its_other_warnings_kept(tmp_path):
    from ray.tune import tune
    from ray.tune.analysis import experiment_analysis  # Ray's own loggers, by their modules: a rename fails here

    kept = _Kept()
    for logger in (tune.logger, experiment_analysis.logger):
        logger.addHandler(kept)
    try:
        with ray_text_aside(tmp_path / "ray.txt"):
            experiment_analysis.logger.warning("Failed to fetch metrics for 1 trial(s):\n- trainable_1: "
                                               "FileNotFoundError")
            tune.logger.warning("Trials did not complete: [trainable_1]")
            experiment_analysis.logger.warning("another warning")
        experiment_analysis.logger.warning("Failed to fetch metrics after the sweep")  # the filter ends with it
    finally:
        for logger in (tune.logger, experiment_analysis.logger):
            logger.removeHandler(kept)
    assert kept.messages == ["another warning", "Failed to fetch metrics after the sweep"]
