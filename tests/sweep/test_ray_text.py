"""While a sweep runs, Tune's notes on trials the searcher has already told the study about are not logged;
its other messages are. Its failed writes are a fault of its folder only where the folder takes no more writes,
and only when the storage was not lost first."""
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


def _logged_write_failure(logger, error: OSError) -> None:
    try:
        raise error
    except OSError:
        logger.error("Saving experiment state to storage at '/x' failed with exception: ", exc_info=True)


def test_a_full_tune_folder_is_a_fault_and_a_vanished_file_a_one_line_warning(tmp_path):
    """Tune's failed sync: ENOSPC (and the like) stops the sweep with one line; ENOENT (a file its own sync
    found gone, which once ended a CI sweep as if the folder were full) is a warning without the traceback."""
    import errno
    import os

    from ray.tune.execution import experiment_state  # Ray's own logger, by its module: a rename fails here

    logger = experiment_state.logger
    kept, faults = _Kept(), []
    logger.addHandler(kept)
    try:
        with ray_text_aside(tmp_path / "ray.txt", on_write_fault=faults.append):
            _logged_write_failure(logger, FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "/x/state.json"))
            _logged_write_failure(logger, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    finally:
        logger.removeHandler(kept)
    assert faults == [f"Ray Tune's folder {tmp_path} cannot be written (No space left on device)"]
    assert kept.messages == [f"Ray Tune could not save its files in {tmp_path} (No such file or directory); it "
                             "saves them again at its next sync, and the study holds every trial"]


def test_a_write_failing_after_the_storage_was_lost_is_not_the_reason_given():
    from sensitivity.studies import storage_health

    storage_health.reset_lost()
    try:
        storage_health.mark_lost("journal j: a write failed (No space left on device)")
        storage_health.mark_write_fault("Ray Tune's folder t cannot be written (No space left on device)")
        assert storage_health.write_fault() is None
        assert storage_health.lost_reason() == "journal j: a write failed (No space left on device)"
        storage_health.reset_lost()
        storage_health.mark_write_fault("trial log l cannot be written (No space left on device)")
        assert storage_health.write_fault() == storage_health.lost_reason() == \
            "trial log l cannot be written (No space left on device)"
    finally:
        storage_health.reset_lost()
