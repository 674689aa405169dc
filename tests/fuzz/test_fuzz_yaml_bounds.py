"""Issue 44: every YAML the tool reads is bounded. An alias inside the collection it names (`junk: &a [1, *a]`,
which PyYAML builds as a list holding itself: the old YAML 1.1 walk followed it to 19 GB), a document past
MAX_NODES values, and tags beyond YAML's core schema (`!!set`, `!!omap`, `!!binary`, a date) are refused in one
line naming the file and the key, exit 2, nothing written, allocating under 32 MB on the way (the old walk took
1.3 GB a second; a walk that hangs is stopped after 5 s); the real entry point refuses the alias with a peak
resident memory under 200 MB, measured here (the VmHWM of that process since its exec). How long a refusal
takes is not asserted here: it depends on the machine's load (0.02-0.4 s alone, 2 s once in CI)."""
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
from fuzz_runner import OUTCOMES, Hang, check, files_in, hang_guard, hung

from fuzz_cases import _space_text
from sensitivity.config import files

HANG_S = 5.0
ALLOCATED_MB = 32
PEAK_MB = 200
RECURSIVE = {  # appended to a valid file: each names a collection it is inside
    "the issue's list": "junk: &a [1, *a]\n",
    "a mapping": "junk: &a {b: *a}\n",
    "a merge key": "junk: &a {<<: *a}\n",
    "three levels down": "junk: &a [[[1, *a]]]\n",
    "a key": "junk: &a [{? *a : 1}]\n",
    "two anchors": "junk: &a [&b [*a, *b]]\n",
}
TAGS = {  # beyond the core schema (str, int, float, bool, null, seq, map)
    "!!set": "junk: !!set {torch: null}\n",
    "!!omap": "junk: !!omap [{a: 1}]\n",
    "!!pairs": "junk: !!pairs [{a: 1}]\n",
    "!!binary": "junk: !!binary aGVsbG8=\n",
    "!!timestamp": "junk: !!timestamp 2020-01-01\n",
    "a date": "junk: 2020-01-01\n",
    "!foo": "junk: !foo 1\n",
    "!!python/name": "junk: !!python/name:os.system\n",
}
# the same text where each reader takes a YAML file: a space, a configuration, a robustness protocol
READERS = {
    "sweep": (["sweep", "f.yaml", "--trials", "1"], lambda tail: _space_text().decode() + tail),
    "trial --config": (["trial", "--config", "f.yaml"], lambda tail: "framework: torch\ndataset: digits\n" + tail),
    "robustness --protocol": (["robustness", "x", "--protocol", "f.yaml"], lambda tail: "eps: [0.1]\n" + tail),
}
CASES = [[f"{reader}: {what}", argv, {"f.yaml": body(tail)}, wanted]
         for cases, wanted in ((RECURSIVE, "recursive YAML"), (TAGS, "core schema"))
         for what, tail in cases.items() for reader, (argv, body) in READERS.items()]
for case in CASES:
    if case[0].endswith(("a date", "!!timestamp")):
        case[3:] = ["a date in YAML 1.1"]
CASES.append(("sweep: 50,001 values", ["sweep", "f.yaml", "--trials", "1"],
              {"f.yaml": _space_text().decode() + "junk: [" + ",".join(["1"] * files.MAX_NODES) + "]\n"},
              f"more than {files.MAX_NODES:,} values"))
CASES.append(("sweep: 10 aliases of 10,000", ["sweep", "f.yaml", "--trials", "1"],
              {"f.yaml": _space_text().decode() + "a: &a [" + ",".join(["1"] * 10_000) + "]\nb: [" +
               ",".join(["*a"] * 10) + "]\n"}, f"more than {files.MAX_NODES:,} values"))


def test_case_names_are_unique():
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,argv,given,wanted", CASES, ids=[c[0] for c in CASES])
def test_refused_in_one_line_naming_the_file_with_bounded_memory(refused, name, argv, given, wanted):
    refused("yaml", "warm-up", [a.replace("f.yaml", "missing.yaml") for a in argv], {}, record=False)  # imports
    tracemalloc.start()
    try:
        with hang_guard(HANG_S, name):
            outcome = refused("yaml", name, argv, given)
    except Hang:
        outcome = hung("yaml", name)
    finally:
        peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    assert not outcome.get("hang"), f"{name}: past {HANG_S:g} s"
    check(outcome)
    line = outcome["stderr"].strip()
    assert "f.yaml: " in line and wanted in line, line
    assert peak_mb < ALLOCATED_MB, f"{name}: {peak_mb:.1f} MB allocated at the peak"


def test_a_set_and_a_date_name_their_key_and_what_is_allowed(refused):
    space = _space_text().decode().replace("frameworks:\n- torch\n", "frameworks: !!set {torch}\n")  # the issue's
    assert "!!set" in space
    out = refused("yaml", "sweep: frameworks: !!set {torch}", READERS["sweep"][0], {"f.yaml": space})["stderr"]
    assert "f.yaml: frameworks: tag '!!set' at line" in out and "allowed: the core schema's !!bool" in out, out
    out = refused("yaml", "sweep: a date names its key", READERS["sweep"][0], {"f.yaml": READERS["sweep"][1](
        TAGS["a date"])}, record=False)["stderr"]
    assert "f.yaml: junk: '2020-01-01' at line" in out and "quote it" in out, out


def test_core_tags_aliases_of_finished_values_and_merge_keys_are_still_read(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("a: &a [1, 2]\nb: [*a, *a]\nc: !!str 3\nd: &d {x: 1}\ne: {<<: *d, y: 2}\nf: '2020-01-01'\n")
    assert files.read_mapping(path) == {"a": [1, 2], "b": [[1, 2], [1, 2]], "c": "3", "d": {"x": 1},
                                        "e": {"x": 1, "y": 2}, "f": "2020-01-01"}


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))  # had the walk regressed: MemoryError, not 19 GB


# the real entry point, reporting at its exit its own peak resident memory: VmHWM of the memory it has since its exec
# (ru_maxrss would count the pytest process it was forked from, at times larger than the bound itself)
MEASURED = """
import atexit, runpy, sys
def peak():
    with open(sys.argv.pop(1), "w") as out:
        out.write(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
atexit.register(peak)
sys.argv = ["sensitivity", *sys.argv[1:]]
runpy.run_module("sensitivity.cli", run_name="__main__")
"""


def run_measured(argv, cwd, timeout_s=60) -> tuple:
    """(exit code, stdout, stderr, peak resident MB) of `sensitivity ARGV` in `cwd`, under a 4 GiB address-space
    limit."""
    env = {k: v for k, v in os.environ.items() if k not in ("SENSITIVITY_STORAGE", "RAY_ADDRESS")}
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        wrapper = [sys.executable, "-c", MEASURED.replace("sys.argv.pop(1)", repr(str(peak)))]
        proc = subprocess.run([*wrapper, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, preexec_fn=_limit_memory, timeout=timeout_s)
        return proc.returncode, proc.stdout, proc.stderr, int(peak.read_text()) / 1024


@pytest.mark.parametrize("reader", ["sweep", "trial --config"])
def test_the_real_entry_point_refuses_the_alias_under_200_mb(tmp_path, reader):
    """As the issue ran it: `junk: &a [1, *a]` appended, then `sensitivity sweep space.yaml --trials 1`."""
    argv, body = READERS[reader]
    (tmp_path / "f.yaml").write_text(body(RECURSIVE["the issue's list"]))
    before = files_in(tmp_path)
    started = time.monotonic()
    code, out, err, peak_mb = run_measured(argv, tmp_path)
    elapsed = time.monotonic() - started
    created = sorted(files_in(tmp_path) - before)
    OUTCOMES["subprocess"].append({"name": f"{reader}: the issue's alias", "exit": code, "created": created,
                                   "traceback": "Traceback" in err or None, "stderr_lines": len(err.splitlines()),
                                   "stderr": err[:300]})
    print(f"{reader}: exit {code} in {elapsed:.2f} s (interpreter start-up included), peak {peak_mb:.0f} MB: "
          f"{err.strip()}")
    assert code == 2 and len(err.splitlines()) == 1 and "recursive YAML" in err, err[-2000:]
    assert created == [] and out == ""
    assert peak_mb < PEAK_MB, f"peak resident memory {peak_mb:.0f} MB"
