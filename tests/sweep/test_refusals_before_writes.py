"""Every command that runs trials refuses bad input before it writes anything: arguments, files, the storage
URL, --address and the results folder are checked, in that order, before the dataset cache, the storage, Ray
and results/ are touched. The walk runs each command with an invalid value of each kind in-process through
`main(argv)`, and a sample through real processes; each must exit 2 with one line naming what is wrong, and
leave the working folder, the storage's folder, the cache and /tmp/ray-* as they were."""
import glob
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sensitivity.cli import main
from sensitivity.sweep.tuning import CURRENT_CLUSTER

REPO = Path(__file__).resolve().parents[2]
SPACE = str(REPO / "search_spaces" / "digits.yaml")
CONFIGURATION = ["--dataset", "digits", "--lr", "0.05", "--batch-size", "64", "--epochs", "1"]

# Commands that run trials into a study, each with arguments that are otherwise valid.
COMMANDS = {
    "sweep": ["sweep", SPACE, "--trials", "1", "--no-progress"],
    "sweep --dry-run": ["sweep", SPACE, "--trials", "1", "--dry-run"],
    "defaults": ["defaults", "--frameworks", "torch", "--datasets", "digits"],
    "transfer": ["transfer", "--frameworks", "torch", "--datasets", "digits"],
    "crossover": ["crossover", "--framework", "torch", "--datasets", "mnist5k,digits", "--default",
                  "digits=caffe-lenet"],
    "reproduce": ["reproduce", "liu2018", "--scale", "0.02", "--frameworks", "torch"],
    "ablate": ["ablate", "--from", "torch:canonical", "--to", "torch:native", *CONFIGURATION],
}
# Commands that read a study first: refused by the storage before anything else.
READERS = {
    "timing": ["timing", "a-sweep"],
    "ablate --largest-from": ["ablate", "--largest-from", "a-transfer"],
    "studies": ["studies"],
    "report": ["report", "a-sweep"],
    "findings": ["findings", "a-sweep"],
    "export": ["export", "a-sweep"],
}


def storage_cases(tmp: Path) -> dict:
    return {"foo://bar": "unknown kind of storage", "mysql://u@h/db": "unknown kind of storage",
            "postgresql://[::1": "not a valid database URL", "::::": "unknown kind of storage",
            "sqlite://": "in-memory", "sqlite:///:memory:": "in-memory",
            f"sqlite:///{tmp}/missing/x.db": "no folder", f"journal:{tmp}/missing/f.log": "no folder",
            "postgresql://postgres@127.0.0.1:1/x": "cannot be opened",
            f"sqlite:///{tmp}/garbage.db": "not an SQLite database"}


ADDRESSES = {"ray://127.0.0.1:1": "Ray Client", "127.0.0.1:0": "expected auto or HOST:PORT",
             ":65536": "expected auto or HOST:PORT", "[::1]:x": "expected auto or HOST:PORT",
             "localhost": "expected auto or HOST:PORT", ":-5": "expected auto or HOST:PORT",
             "127.0.0.1:1": "no Ray cluster reachable"}


def cases(tmp: Path) -> list:
    """(command, kind, argv, what the one line must say)."""
    addresses = dict(ADDRESSES)
    if not CURRENT_CLUSTER.exists() and not os.environ.get("RAY_ADDRESS"):  # no cluster on this machine now
        addresses["auto"] = "no running Ray cluster found"
    found = []
    for command, argv in COMMANDS.items():
        found.append((command, "argument", [*argv, "--parallel", "0"], "--parallel"))
        found.append((command, "empty value", [*argv, "--storage", " "], "--storage: empty"))
        for url, says in storage_cases(tmp).items():
            found.append((command, "storage", [*argv, "--storage", url], says))
        for address, says in addresses.items():
            found.append((command, "address", [*argv, "--address", address, "--storage", f"sqlite:///{tmp}/s.db"],
                          says))
        found.append((command, "results folder", [*argv, "--storage", f"sqlite:///{tmp}/s.db"], "results"))
    found.append(("sweep", "file", ["sweep", str(tmp / "missing.yaml"), "--trials", "1"], "missing.yaml"))
    for command, argv in READERS.items():
        for url, says in storage_cases(tmp).items():
            if says == "no folder" or url.endswith(":memory:"):
                says = "no such file"  # a reader needs the file itself
            found.append((command, "storage", [*argv, "--storage", url], says))
    return found


def snapshot(*folders) -> dict:
    """Every path under `folders` with its size and modification time, and the Ray folders in /tmp."""
    seen = {"ray": sorted(glob.glob("/tmp/ray-*"))}
    for folder in folders:
        seen.update({str(p): (p.is_dir(), p.stat().st_size, p.stat().st_mtime_ns) for p in Path(folder).rglob("*")})
    return seen


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A working folder with a garbage 'database' and a regular file named results (the tree a refusal must
    leave alone), and a cache folder that must not come into being."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "garbage.db").write_bytes(b"not a database at all, " * 100)
    monkeypatch.chdir(work)
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SENSITIVITY_STORAGE", raising=False)
    return work


def test_every_command_refuses_each_kind_of_bad_input_in_one_line_before_any_write(workspace, capsys):
    counts = Counter()
    failures = []
    for command, kind, argv, says in cases(workspace):
        results = workspace / "results"
        if kind == "results folder":
            results.write_text("a regular file where the results folder should be")
        before = snapshot(workspace)
        try:
            code = main(argv)
        except Exception as exc:  # a traceback: counted as a failure of the walk
            code = f"{type(exc).__name__}: {exc}"
        err = capsys.readouterr().err.strip()
        lines = [line for line in err.splitlines() if line.strip()]
        after = snapshot(workspace)
        created = sorted(set(after) - set(before)) + (["cache"] if (workspace.parent / "cache").exists() else [])
        if code != 2 or len(lines) != 1 or says not in err or after != before or created:
            failures.append(f"{command} [{kind}] {argv[-1]!r}: exit {code}, {len(lines)} lines, created {created}: "
                            f"{err[-300:]}")
        counts[(command, kind)] += 1
        results.unlink(missing_ok=True)
    print("\nrefusal walk (in-process):", ", ".join(f"{c} [{k}] {n}" for (c, k), n in sorted(counts.items())))
    print(f"refusal walk: {sum(counts.values())} cases, {len(failures)} failed, 0 tracebacks allowed")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("argv, says", [
    (["sweep", SPACE, "--trials", "1", "--storage", "sqlite:////nonexistent-sensitivity/dir/x.db"], "no folder"),
    (["sweep", SPACE, "--trials", "1", "--address", "ray://127.0.0.1:1"], "Ray Client"),
    (["defaults", "--frameworks", "torch", "--datasets", "digits", "--storage", "sqlite://"], "in-memory"),
    (["sweep", SPACE, "--trials", "1", "--frameworks", ""], "--frameworks: empty"),
])
def test_a_sample_of_refusals_through_real_processes(workspace, argv, says):
    before = snapshot(workspace)
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", *argv], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SENSITIVITY_CACHE_DIR": os.environ["SENSITIVITY_CACHE_DIR"]})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr, proc.stderr
    assert snapshot(workspace) == before and not (workspace.parent / "cache").exists()
    assert not Path("/nonexistent-sensitivity").exists()


def test_a_results_file_refused_by_a_sweep_with_its_storage_elsewhere(workspace, capsys):
    """Case 1 of the edges: a regular file named results gave a traceback after the storage was created."""
    (workspace / "results").write_text("")
    code = main(["sweep", SPACE, "--trials", "1", "--storage", f"sqlite:///{workspace}/elsewhere.db"])
    err = capsys.readouterr().err
    assert code == 2 and "results is not a folder" in err and len(err.strip().splitlines()) == 1, err
    assert not (workspace / "elsewhere.db").exists()
