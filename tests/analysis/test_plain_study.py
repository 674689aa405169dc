"""A study another program wrote with plain Optuna (Ishigami, QMC, no attributes of this tool): the table
invents no framework or regime, and `sensitivity report` and `findings` say once that it is not a sensitivity
study instead of grouping its trials under "unknown" and "canonical" (issue 30)."""
import html
import json
import re
import subprocess
import sys

import optuna
from analysis_data import make_study

from sensitivity.analysis.table import UNFRAMED, trials_table, unframed
from sensitivity.cli import main

SCRIPT = """
import math, sys, warnings
import optuna
warnings.simplefilter("ignore")
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(study_name="ishigami", storage=sys.argv[1], sampler=optuna.samplers.QMCSampler(seed=0))
study.optimize(lambda t: math.sin(t.suggest_float("x1", -math.pi, math.pi))
               + 7 * math.sin(t.suggest_float("x2", -math.pi, math.pi)) ** 2
               + 0.1 * t.suggest_float("x3", -math.pi, math.pi) ** 4 * math.sin(t.params["x1"]), n_trials=256)
"""


def _text(page: str) -> str:
    """The page's words, without its scripts and styles (plotly's own code names its own things)."""
    page = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_a_plain_optuna_study_is_said_to_have_no_framework_and_no_group_is_invented(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'plain.db'}"
    subprocess.run([sys.executable, "-c", SCRIPT, storage], check=True, timeout=300)
    table = trials_table(optuna.load_study(study_name="ishigami", storage=storage))
    assert len(table) == 256 and unframed(table)
    assert table["framework"].isna().all() and table["semantics"].isna().all()
    assert not unframed(trials_table(make_study(n_configs=3)))  # this tool's studies keep theirs

    out = tmp_path / "report.html"
    assert main(["report", "ishigami", "--storage", storage, "--out", out]) == 0
    words = _text(out.read_text())
    assert words.count(UNFRAMED) == 1 and "none recorded" in words
    assert "canonical" not in words.lower() and "unknown canonical" not in words and "Regime" not in words
    assert "sensitivity importance STUDY" in words and "Framework by dataset" not in words

    capsys.readouterr()
    assert main(["findings", "ishigami", "--storage", storage]) == 0
    printed = capsys.readouterr().out
    assert printed.count(UNFRAMED) == 1 and "canonical" not in printed.lower()
    assert main(["findings", "ishigami", "--storage", storage, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["note"] == UNFRAMED and record["claims"] == [] and record["comparisons"] == []

    for kind in ("seeds", "divergence", "isolation"):  # seeds raised IndexError over no groups
        assert main(["plot", "ishigami", "--storage", storage, "--kind", kind, "--out", tmp_path / "f.html"]) == 1
        assert capsys.readouterr().err.strip() == f"sensitivity plot: {kind}: {UNFRAMED}"
    assert not (tmp_path / "f.html").exists()
    assert main(["timing", "ishigami", "--storage", storage]) == 2  # was a KeyError on the trials' spec
    assert capsys.readouterr().err.strip() == f"sensitivity timing: study ishigami: {UNFRAMED}"
