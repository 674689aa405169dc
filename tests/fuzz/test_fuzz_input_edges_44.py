"""Issue 44's input edges, in-process (Ray, study creation and trials forbidden by the `refused` fixture; the
dataset cache inside the working folder, so a parsed dataset written before a refusal counts as a write): each is
one line, exit 2 (a closed stdout: exit 1), nothing written.

- tracebacks: a journal record of an operation Optuna does not know (`studies list`), a trial log whose study line
  nests 200,000 `[` (`studies rebuild`);
- writes before refusing: the dataset cache before `defaults --budget-fraction 1e-9`, `transfer --budget-epochs
  1e-9`, `crossover --tuned digits-a=../x` or `--default digits-a=nosuch`; `-wal` and `-shm` files beside an
  SQLite file refused for an unknown schema or for being cut in half;
- silently accepted: a trailing '/' on a file's path (the space, `--storage journal:jdir/`, `--out newdir/`, ...),
  `--stepvalues 1,,2`, a trial log with the study lines of two studies, `import-caffe --out FIFO`, a closed
  stdout, `model: lenet5` on digits' 8x8 images, an ablation from a setup to itself.
"""
import json
import os
import sqlite3
import subprocess
import sys

import optuna
import pytest
from fuzz_runner import OUTCOMES, check, files_in

from fuzz_cases import SOLVER_FILES, _space_text
from sensitivity.studies.storage import open_storage

STUDY = {"kind": "study", "study": "d", "directions": ["MAXIMIZE"], "metric_names": None, "user_attrs": {}}


@pytest.fixture
def edge(refused, tmp_path, monkeypatch):
    """refused(...) with the dataset cache inside the working folder."""
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "work" / "cache"))

    def run(name, argv, files=None, setup=None):
        if setup is not None:
            setup(tmp_path / "work")
        return refused("edge", name, argv, files or {})
    return run


def _journal(work, extra: str = ""):
    storage = open_storage(f"journal:{work / 'j.journal'}")
    storage.create_new_study([optuna.study.StudyDirection.MAXIMIZE], "a")
    with open(work / "j.journal", "a") as f:
        f.write(extra)


def _sqlite(work, damage):
    storage = open_storage(f"sqlite:///{work / 's.db'}")  # in WAL mode, which the file's header keeps
    optuna.study.create_study(study_name="a", storage=storage)
    storage.engine.dispose()  # the last connection closed: -wal and -shm removed
    for sidecar in ("s.db-wal", "s.db-shm"):
        assert not (work / sidecar).exists()
    damage(work / "s.db")


def _unknown_schema(path):
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = 'zzz'")


def _cut_in_half(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


TRACEBACKS = [
    ("studies list: a journal record of op_code 99", ["studies", "--storage", "journal:j.journal"],
     lambda w: _journal(w, '{"op_code": 99, "worker_id": "x"}\n'), "an operation Optuna does not know"),
    ("studies rebuild: a study line nested 200,000 deep", ["studies", "rebuild", "deep.jsonl", "--storage",
                                                           "sqlite:///r.db"],
     lambda w: (w / "deep.jsonl").write_text(json.dumps(STUDY)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000
                                             + "}\n"), "line 1 is not a trial-log record"),
]
WRITES = [  # each would have written the parsed dataset into the cache (or -wal, -shm) before refusing
    ("defaults --budget-fraction 1e-9", ["defaults", "--frameworks", "torch", "--datasets", "digits",
                                         "--budget-fraction", "1e-9"], None, "below one step"),
    ("transfer --budget-epochs 1e-9", ["transfer", "--frameworks", "torch", "--datasets", "digits",
                                       "--budget-epochs", "1e-9"], None, "below one step"),
    ("crossover --tuned digits-a=../x", ["crossover", "--framework", "torch", "--datasets", "digits-a,digits-b",
                                         "--tuned", "digits-a=../x"], None, "study name '../x'"),
    ("crossover --default digits-a=nosuch", ["crossover", "--framework", "torch", "--datasets", "digits-a,digits-b",
                                             "--default", "digits-a=nosuch"], None, "no such entry"),
    ("studies list: an unknown schema version", ["studies", "--storage", "sqlite:///s.db"],
     lambda w: _sqlite(w, _unknown_schema), "unknown Optuna schema version 'zzz'"),
    ("studies list: an SQLite file cut in half", ["studies", "--storage", "sqlite:///s.db"],
     lambda w: _sqlite(w, _cut_in_half), "corrupt"),
]
SPACE = {"space.yaml": _space_text()}
SWEEP = ["sweep", "space.yaml", "--trials", "1"]
SLASHES = [  # a file's path with a trailing '/'
    ("sweep space.yaml/", ["sweep", "space.yaml/", "--trials", "1"], SPACE),
    ("sweep --storage journal:jdir/", SWEEP + ["--storage", "journal:jdir/"], SPACE),
    ("sweep --storage sqlite:///x.db/", SWEEP + ["--storage", "sqlite:///x.db/"], SPACE),
    ("export --out newdir/", ["export", "x", "--out", "newdir/"], {}),
    ("plot --out x.html/", ["plot", "x", "--kind", "slice", "--out", "x.html/"], {}),
    ("report --out r.html/", ["report", "x", "--out", "r.html/"], {}),
    ("trial --config c.yaml/", ["trial", "--config", "c.yaml/"], {"c.yaml": "framework: torch\n"}),
    ("import-caffe solver.prototxt/", ["import-caffe", "solver.prototxt/"], SOLVER_FILES),
    ("import-caffe --out x.yaml/", ["import-caffe", "solver.prototxt", "--out", "x.yaml/"], SOLVER_FILES),
    ("studies rebuild x.jsonl/", ["studies", "rebuild", "x.jsonl/"], {"x.jsonl": json.dumps(STUDY) + "\n"}),
    ("robustness --protocol p.yaml/", ["robustness", "x", "--protocol", "p.yaml/"], {"p.yaml": "eps: [0.1]\n"}),
]
ACCEPTED = [  # were silently accepted
    *[(f"trial --stepvalues {v}", ["trial", "--framework", "torch", "--dataset", "digits", "--lr-policy",
                                   "multistep", "--stepvalues", v], None, "(an empty value)")
      for v in ("1,,2", "1,2,", ",1", ",")],
    ("studies rebuild: the study lines of two studies", ["studies", "rebuild", "two.jsonl", "--storage",
                                                         "sqlite:///r.db"],
     lambda w: (w / "two.jsonl").write_text(json.dumps(STUDY) + "\n" + json.dumps({**STUDY, "study": "e"}) + "\n"),
     "a log holds one study"),
    ("studies rebuild: one study's lines, other directions", ["studies", "rebuild", "two.jsonl", "--storage",
                                                              "sqlite:///r.db"],
     lambda w: (w / "two.jsonl").write_text(json.dumps(STUDY) + "\n" +
                                            json.dumps({**STUDY, "directions": ["MINIMIZE"]}) + "\n"),
     "a log holds one study"),
    ("import-caffe --out FIFO", ["import-caffe", "solver.prototxt", "--out", "fifo.yaml"],
     lambda w: [(w / k).write_text(v) for k, v in SOLVER_FILES.items()] and os.mkfifo(w / "fifo.yaml"),
     "a FIFO, not a regular file"),
    ("sweep: model lenet5 on digits", SWEEP, lambda w: (w / "space.yaml").write_bytes(
        _space_text((("model",), "lenet5"))), "model lenet5 does not fit the 1x8x8 inputs of digits"),
    ("sweep --model lenet5 on digits", SWEEP + ["--model", "lenet5"], lambda w: (w / "space.yaml").write_bytes(
        _space_text()), "allowed on digits: cifar10_quick, mlp, tf_mnist_deep"),
    ("ablate --from torch:native --to torch:native", ["ablate", "--from", "torch:native", "--to", "torch:native",
                                                      "--dataset", "digits"], None, "a path from a setup to itself"),
    ("ablate --from torch --to torch:native", ["ablate", "--from", "torch", "--to", "torch:native", "--dataset",
                                               "digits"], None, "a path from a setup to itself"),
]
CASES = [(n, a, s, w) for n, a, s, w in TRACEBACKS + WRITES + ACCEPTED] + \
    [(n, a, (lambda files: lambda w: [(w / k).write_bytes(v if isinstance(v, bytes) else v.encode())
                                      for k, v in files.items()])(f), "ends in '/'") for n, a, f in SLASHES]


def test_case_names_are_unique():
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,argv,setup,wanted", CASES, ids=[c[0] for c in CASES])
def test_refused_in_one_line_and_nothing_written(edge, tmp_path, name, argv, setup, wanted):
    outcome = edge(name, argv, setup=setup)
    check(outcome)
    assert wanted in outcome["stderr"], outcome["stderr"]
    if "FIFO" in name:
        assert (tmp_path / "work" / "fifo.yaml").is_fifo()


def test_the_same_study_line_twice_is_one_log(tmp_path, monkeypatch):
    """Each run of a driver appends the study's line: two of one study (and directions) are a log, as before."""
    from sensitivity.sweep import trial_log
    log = tmp_path / "twice.jsonl"
    log.write_text(json.dumps(STUDY) + "\n" + json.dumps({**STUDY, "user_attrs": {"k": 1}}) + "\n")
    header, trials = trial_log.read(log)
    assert header["study"] == "d" and header["user_attrs"] == {"k": 1} and trials == []


def test_a_closed_stdout_is_one_line_exit_1(refused, monkeypatch):
    monkeypatch.setattr(sys, "stdout", None)
    outcome = refused("edge", "frameworks >&- (in-process)", ["frameworks"], {})
    assert (outcome["exit"], outcome["stderr_lines"], outcome["created"]) == (1, 1, []), outcome
    assert "standard output is closed" in outcome["stderr"]


def test_a_closed_stdout_of_the_real_command_is_exit_1(tmp_path):
    """`sensitivity frameworks >&-` exited 0 and printed nothing."""
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "frameworks"], cwd=tmp_path, text=True,
                          stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1),
                          timeout=120)
    OUTCOMES["subprocess"].append({"name": "frameworks >&-", "exit": proc.returncode, "created": [],
                                   "traceback": "Traceback" in proc.stderr or None,
                                   "stderr_lines": len(proc.stderr.splitlines()), "stderr": proc.stderr[:300]})
    assert proc.returncode == 1 and proc.stderr.strip() == ("sensitivity: standard output is closed; give the "
                                                            "command an output (a file, a pipe, /dev/null)")
    assert files_in(tmp_path) == set()
