"""`studies rebuild` refuses a hostile trial log cleanly (one line, exit 2, nothing created, within 10 s): no
study name, bad directions, names the name rule refuses, malformed lines, a FIFO, /dev/zero, a folder, a file
over the size limit, a line over the line limit; and a storage whose kind is only its suffix, or a journal
over a file that is not one. In-process (the `refused` fixture: Ray and study creation forbidden)."""
import json
import os
import time

import pytest
from fuzz_runner import check

from sensitivity.studies import torn
from sensitivity.sweep import trial_log

STUDY = {"kind": "study", "study": "d", "directions": ["MAXIMIZE"], "metric_names": None, "user_attrs": {}}
DIST = '{"name": "FloatDistribution", "attributes": {"log": false, "step": null, "low": 0.0, "high": 1.0}}'


def log(*records, tail=""):
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records) + tail


def trial(**changes):
    record = {"kind": "trial", "key": "d:0", "number": 0, "state": "COMPLETE", "values": [0.5], "params": {"x": 0.5},
              "distributions": {"x": DIST}, "user_attrs": {"config_id": "c", "seed": 0},
              "intermediate_values": {}, "datetime_complete": "2026-01-01T00:00:00"}
    return {**record, **changes}


LOGS = {
    "no study name": log({k: v for k, v in STUDY.items() if k != "study"}),
    "study name null": log({**STUDY, "study": None}),
    "study name sql": log({**STUDY, "study": "a'; DROP TABLE studies;--"}),
    "study name ../../x": log({**STUDY, "study": "../../x"}),
    "study name /etc/passwd": log({**STUDY, "study": "/etc/passwd"}),
    "study name NUL": log({**STUDY, "study": "a\x00b"}),
    "study name newline": log({**STUDY, "study": "a\nb"}),
    "study name 5000 chars": log({**STUDY, "study": "a" * 5000}),
    "directions UP": log({**STUDY, "directions": ["UP"]}),
    "directions empty": log({**STUDY, "directions": []}),
    "directions a string": log({**STUDY, "directions": "maximize"}),
    "directions numbers": log({**STUDY, "directions": [1]}),
    "directions missing": log({k: v for k, v in STUDY.items() if k != "directions"}),
    "metric names too many": log({**STUDY, "metric_names": ["a", "b"]}),
    "user attrs a list": log({**STUDY, "user_attrs": [1]}),
    "no study line": log(trial()),
    "empty file": "",
    "not JSON": "hello world\n",
    "a JSON list": log([1, 2]),
    "unknown kind": log(STUDY, {"kind": "oops"}),
    "trial without key": log(STUDY, {k: v for k, v in trial().items() if k != "key"}),
    "trial without user attrs": log(STUDY, {k: v for k, v in trial().items() if k != "user_attrs"}),
    "trial bad state": log(STUDY, trial(state="DANCING")),
    "trial values of 2 objectives": log(STUDY, trial(values=[0.1, 0.2])),
    "trial param outside its distribution": log(STUDY, trial(params={"x": 7.0})),
    "trial intermediate not a dict": log(STUDY, trial(intermediate_values=[1])),
    "binary": b"\xff\xfe\x00garbage\n",
    "torn tail that is no record": log(STUDY, tail="garbage"),
}


def _timed(refused, name, argv, files=None):
    started = time.monotonic()
    outcome = refused("rebuild", name, argv, files or {})
    assert time.monotonic() - started < 10, f"{name}: {time.monotonic() - started:.1f} s"
    return outcome


@pytest.mark.parametrize("name", sorted(LOGS))
def test_a_hostile_log_is_refused_cleanly(refused, name):
    outcome = _timed(refused, name, ["studies", "rebuild", "d.jsonl", "--storage", "sqlite:///r.db"],
                     {"d.jsonl": LOGS[name]})
    check(outcome)
    assert "d.jsonl" in outcome["stderr"]


def test_names_the_rule_refuses_say_so(refused):
    outcome = refused("rebuild", "sql name said", ["studies", "rebuild", "d.jsonl", "--storage", "sqlite:///r.db"],
                      {"d.jsonl": LOGS["study name sql"]}, record=False)
    assert "study name \"a'; DROP TABLE studies;--\": allowed letters" in outcome["stderr"]
    outcome = refused("rebuild", "no name said", ["studies", "rebuild", "d.jsonl", "--storage", "sqlite:///r.db"],
                      {"d.jsonl": LOGS["no study name"]}, record=False)
    assert "no study name" in outcome["stderr"]
    outcome = refused("rebuild", "directions said", ["studies", "rebuild", "d.jsonl", "--storage", "sqlite:///r.db"],
                      {"d.jsonl": LOGS["directions UP"]}, record=False)
    assert "directions ['UP']: allowed a list of minimize or maximize" in outcome["stderr"]


def test_a_fifo_dev_zero_and_a_folder_are_refused_without_reading(refused, tmp_path):
    os.mkfifo("fifo.jsonl")  # the fixture's folder; nobody writes to it: opening it would hang
    os.mkdir("folder.jsonl")
    for name, path in (("FIFO", "fifo.jsonl"), ("/dev/zero", "/dev/zero"), ("a folder", "folder.jsonl")):
        outcome = _timed(refused, name, ["studies", "rebuild", path, "--storage", "sqlite:///r.db"])
        check(outcome)
        assert "not a regular file" in outcome["stderr"], outcome["stderr"]


def test_a_file_over_the_size_limit_and_a_line_over_the_line_limit_are_refused(refused):
    with open("huge.jsonl", "wb") as f:  # sparse: costs no disk
        f.write(log(STUDY).encode())
        f.truncate(trial_log.MAX_LOG_BYTES + 1)
    outcome = _timed(refused, "over the size limit", ["studies", "rebuild", "huge.jsonl", "--storage",
                                                      "sqlite:///r.db"])
    check(outcome)
    assert f"more than the {trial_log.MAX_LOG_BYTES:,} allowed" in outcome["stderr"]
    with open("long.jsonl", "wb") as f:
        f.write(log(STUDY).encode() + b"x" * (torn.MAX_LINE + 10) + b"\n")
    outcome = _timed(refused, "a line over the limit", ["studies", "rebuild", "long.jsonl", "--storage",
                                                        "sqlite:///r.db"])
    check(outcome)
    assert "line 2 is longer than 16 MiB" in outcome["stderr"]


@pytest.mark.parametrize("storage, body, message", [
    ("journal:j.jsonl", b'{"kind": "study"}\n{"a": 1}\n', "not an Optuna journal"),
    ("journal:text.journal", b"some notes\nof a person\n", "not an Optuna journal"),
    ("journal:random.journal", bytes(range(256)) * 8, "not an Optuna journal"),
    ("journal:one.journal", b'{"op_code": "x", "worker_id": 1}\n', "not an Optuna journal"),
    ("x.journal", None, "unknown kind of storage"),
    ("results.log", None, "unknown kind of storage"),
])
def test_a_storage_is_known_by_its_scheme_and_a_journal_must_be_one(refused, storage, body, message):
    files = {"d.jsonl": log(STUDY, trial())}
    if body is not None:
        files[storage.removeprefix("journal:")] = body
    outcome = _timed(refused, f"storage {storage}", ["studies", "rebuild", "d.jsonl", "--storage", storage], files)
    check(outcome)
    assert message in outcome["stderr"], outcome["stderr"]
    if body is not None:
        with open(storage.removeprefix("journal:"), "rb") as f:
            assert f.read() == body  # untouched


def test_a_study_that_has_trials_is_refused_from_one_row(tmp_path, monkeypatch):
    """Rebuilding into a study that holds trials is refused without reading them (Optuna's get_trials built
    every trial first: 10 s for a study of 10,000)."""
    import optuna

    url = f"sqlite:///{tmp_path / 's.db'}"
    optuna.create_study(study_name="d", storage=url).add_trial(optuna.trial.create_trial(value=1.0))
    path = tmp_path / "d.jsonl"
    path.write_text(log(STUDY, trial()))
    monkeypatch.setattr(optuna.study.Study, "get_trials", lambda *args, **kw: pytest.fail("read every trial"))
    with pytest.raises(trial_log.LogError, match="study d already has trials"):
        trial_log.rebuild(str(path), url, None)
