"""Issue 30's block of hostile input: `sweep --design` and `importance`, each refused cleanly (0 tracebacks,
one line on stderr, exit 2, nothing created, no Ray, no study), in-process with the fuzz suite's runner.
Kept apart from fuzz_cases.py, whose generated cases other issues extend."""
import pytest
from fuzz_cases import _space_text
from fuzz_runner import check

SWEEP = ["sweep", "space.yaml"]  # fuzz_cases' BASE_SPACE: 3 factors (lr log, batch_size, epochs int)
CASES = [
    ("design with --sampler", SWEEP + ["--trials", "40", "--design", "sobol", "--sampler", "tpe"]),
    ("design with --sampler random", SWEEP + ["--trials", "40", "--design", "morris", "--sampler", "random"]),
    ("design with --with-defaults", SWEEP + ["--trials", "40", "--design", "sobol", "--with-defaults"]),
    ("design with --pruner", SWEEP + ["--trials", "40", "--design", "sobol", "--pruner", "asha"]),
    ("sobol below one base sample", SWEEP + ["--trials", "7", "--design", "sobol"]),
    ("sobol one base sample short with seeds", SWEEP + ["--trials", "15", "--design", "sobol", "--seeds", "2"]),
    ("morris below two trajectories", SWEEP + ["--trials", "7", "--design", "morris"]),
    ("morris odd levels", SWEEP + ["--trials", "40", "--design", "morris", "--levels", "3"]),
    ("morris levels 0", SWEEP + ["--trials", "40", "--design", "morris", "--levels", "0"]),
    ("morris levels huge", SWEEP + ["--trials", "40", "--design", "morris", "--levels", "1e9"]),
    ("morris levels 65", SWEEP + ["--trials", "40", "--design", "morris", "--levels", "65"]),
    ("unknown design", SWEEP + ["--trials", "40", "--design", "fast"]),
    ("design in capitals", SWEEP + ["--trials", "40", "--design", "SOBOL"]),
    ("empty design", SWEEP + ["--trials", "40", "--design", ""]),
    ("design without a value", SWEEP + ["--trials", "40", "--design"]),
    ("design bad --study", SWEEP + ["--trials", "40", "--design", "sobol", "--study", "../x"]),
    ("design bad --frameworks", SWEEP + ["--trials", "40", "--design", "sobol", "--frameworks", "caffe"]),
    ("importance missing storage", ["importance", "nosuch", "--storage", "sqlite:///missing.db"]),
    ("importance missing journal", ["importance", "nosuch", "--storage", "journal:missing.journal"]),
    ("importance no study", ["importance"]),
    ("importance --json with a value", ["importance", "x", "--json", "yes"]),
]


@pytest.mark.parametrize("name,argv", CASES, ids=[c[0] for c in CASES])
def test_design_input_refused_cleanly(refused, name, argv):
    files = {"space.yaml": _space_text()} if argv[:2] == SWEEP else {}
    check(refused("cli", f"design: {name}", argv, files))
