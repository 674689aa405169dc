"""Findings against known truth: synthetic studies with planted effects (tests/analysis/planted.py) must be
recovered, planted nulls must not be reported as effects, and the 95% intervals must cover the planted values
95% of the time."""
import json
import re

import numpy as np
import pandas as pd
import pytest
from planted import (EPS, KEEPS, NULL_KEEPS, NULL_TRUE, as_frame, as_study, robustness_records, sweep_rows,
                     transfer_rows, true_accuracy)

from sensitivity.analysis.findings import CLAIMS, findings
from sensitivity.analysis.importance import parameter_importance
from sensitivity.analysis.robustness import robustness_comparisons
from sensitivity.analysis.transfer import transfer_comparisons, transfer_matrix

STUDIES = 200
LABEL = re.compile(r"(?:default )?(\S+) on (\S+), (\S+)$")


def planted_difference(row: dict) -> float:
    """The true difference behind a transfer comparison, from the defaults, frameworks and datasets it names."""
    subject, reference = LABEL.search(row["subject"]).groups(), LABEL.search(row["reference"]).groups()
    return true_accuracy(*subject, row["semantics"]) - true_accuracy(*reference, row["semantics"])


def coverage_table(studies: int, first_seed: int = 1000):
    """`studies` independent synthetic studies (3 to 6 seeds per arm), each its own regime ("study007") in one
    table: the analysis never pools regimes (test_regimes.py), so each study's numbers are its own, and one
    call analyses them all in seconds instead of a minute."""
    rows, records = [], {}
    for k in range(studies):
        rng = np.random.default_rng(first_seed + k)
        part = transfer_rows(rng, seeds=(3, 6), regimes=(f"study{k:03d}",))
        records.update({len(rows) + number: record for number, record in robustness_records(rng, part).items()})
        rows += part
    return as_frame(rows, "coverage", records)


def covered(table) -> dict:
    """{kind: [covered?]} for every 95% interval of the table's analysis against its planted value."""
    hits = {"difference of means (transfer)": [], "difference of shares kept under attack": [],
            "mean over seeds": []}
    for row in transfer_comparisons(table).to_dict("records"):
        if row["low"] is not None and row["low"] == row["low"]:
            hits["difference of means (transfer)"].append(row["low"] <= planted_difference(row) <= row["high"])
    for row in robustness_comparisons(table).to_dict("records"):
        if row["comparable"] and row["low"] is not None and row["low"] == row["low"]:
            at = EPS.index(row["eps"])
            truth = KEEPS[row["framework_a"]][at] - KEEPS[row["framework_b"]][at]
            hits["difference of shares kept under attack"].append(row["low"] <= truth <= row["high"])
    for row in transfer_matrix(table).to_dict("records"):
        truth = true_accuracy(row["default"], row["target_framework"], row["target_dataset"], row["semantics"])
        hits["mean over seeds"].append(row["accuracy_low"] <= truth <= row["accuracy_high"])
    return hits


def test_95_percent_intervals_cover_the_planted_values_95_percent_of_the_time_across_200_studies():
    hits = covered(coverage_table(STUDIES))
    every = [hit for kind in hits.values() for hit in kind]
    report = "; ".join(f"{kind}: {np.mean(h):.1%} of {len(h)}" for kind, h in hits.items())
    coverage = float(np.mean(every))
    print(f"\ncoverage of the 95% intervals across {STUDIES} synthetic studies: {coverage:.1%} of {len(every)} "
          f"intervals ({report})")
    assert 0.93 <= coverage <= 0.97, f"coverage {coverage:.1%} of {len(every)} intervals ({report})"
    assert all(0.93 <= np.mean(h) <= 0.97 for h in hits.values()), report


def test_studies_batched_as_regimes_give_the_numbers_each_gives_alone():
    batched = transfer_comparisons(coverage_table(3)).set_index(["semantics", "subject", "reference"])
    for k in range(3):
        rng = np.random.default_rng(1000 + k)
        rows = transfer_rows(rng, seeds=(3, 6), regimes=(f"study{k:03d}",))
        alone = transfer_comparisons(as_frame(rows, "alone")).set_index(["semantics", "subject", "reference"])
        pd.testing.assert_frame_equal(alone, batched.loc[alone.index], check_dtype=False)


# planted effects -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def planted():
    """A sweep (lr matters, momentum and batch size do not; the defaults planned first) and a transfer study
    with robustness records, both regimes, 5 seeds per default."""
    rng = np.random.default_rng(7)
    rows = transfer_rows(rng, seeds=(5, 5), regimes=("native", "canonical"), budget_scale=0.25)
    transfer = as_frame(rows, "planted-transfer", robustness_records(rng, rows))
    sweep = as_frame(sweep_rows(rng, configs=60, seeds=3, regimes=("native", "canonical")), "planted-sweep")
    return sweep, transfer


@pytest.fixture(scope="module")
def found(planted):
    return findings(*planted[:1], [planted[1]])


def comparison(found, regime, label) -> dict:
    rows = found.comparisons[found.comparisons["semantics"].eq(regime) & found.comparisons["label"].eq(label)]
    assert len(rows) == 1, f"no single comparison {label!r} in {regime}"
    return rows.iloc[0].to_dict()


def claim(found, regime, name) -> dict:
    return found.claims.set_index(["semantics", "claim"]).loc[(regime, name)].to_dict()


@pytest.mark.parametrize("regime", ["native", "canonical"])
def test_a_default_that_loses_10_points_on_another_dataset_is_found(found, regime):
    lost = comparison(found, regime, "torch: torch-default on digits vs the best known there")
    assert lost["verdict"] == "lower" and lost["low"] <= -0.10 <= lost["high"]
    assert "jax-default on torch" in lost["reference"]
    for framework in ("tensorflow", "jax"):  # planted nulls
        kept = comparison(found, regime, f"{framework}: {framework}-default on digits vs the best known there")
        assert kept["verdict"] not in ("lower", "higher") and kept["low"] <= 0 <= kept["high"]
    head = claim(found, regime, "dataset transfer")
    assert head["verdict"] == "supported" and head["estimate"] == pytest.approx(lost["estimate"])
    assert "as little as 0.25 of their published training steps" in head["sentence"]


@pytest.mark.parametrize("regime", ["native", "canonical"])
def test_a_default_moved_between_frameworks_loses_what_was_planted_and_a_null_pair_shows_nothing(found, regime):
    moved = comparison(found, regime, "mnist5k: tensorflow's default on torch vs on tensorflow")
    assert moved["verdict"] == "lower" and moved["low"] <= -0.06 <= moved["high"]
    null = comparison(found, regime, "mnist5k: tensorflow's default on jax vs on tensorflow")
    assert null["verdict"] not in ("lower", "higher") and null["low"] <= 0 <= null["high"]
    assert claim(found, regime, "framework transfer")["verdict"] == "supported"


@pytest.mark.parametrize("regime", ["native", "canonical"])
def test_robustness_differences_are_found_only_between_comparable_models(found, regime):
    weaker = comparison(found, regime, "mnist5k, FGSM eps 0.1: jax vs torch")
    assert weaker["verdict"] == "lower" and weaker["low"] <= -0.2 <= weaker["high"]
    null = comparison(found, regime, "mnist5k, FGSM eps 0.1: tensorflow vs torch")
    assert null["verdict"] not in ("lower", "higher")
    apart = comparison(found, regime, "digits, FGSM eps 0.1: tensorflow vs torch")  # clean 0.93 against 0.85
    assert apart["verdict"] == "not compared" and "differ by more than 0.02" in apart["sentence"]
    assert claim(found, regime, "robustness")["verdict"] == "supported"


def test_the_frontier_and_the_cost_of_accuracy_are_stated(found):
    head = claim(found, "native", "runtime-accuracy")
    assert "on the runtime-accuracy frontier: " in head["sentence"] and "jax" in head["sentence"]
    pairs = found.comparisons[found.comparisons["claim"].eq("runtime-accuracy") & found.comparisons["unit"].ne(
        "frontier")]
    assert "x the train time" in pairs.iloc[0]["sentence"]


def test_every_claim_has_one_entry_per_regime_native_first(found):
    assert found.claims[["semantics", "claim"]].values.tolist() == [
        [regime, name] for regime in ("native", "canonical") for name in CLAIMS]
    assert found.claims["sentence"].str.len().min() > 40 and found.claims["anchor"].notna().all()
    assert (found.comparisons["p_holm"].dropna() >= found.comparisons["p"].dropna()).all()


def test_importance_recovers_lr_and_leaves_the_planned_defaults_out(planted):
    importance = parameter_importance(planted[0], resamples=20)
    native = importance[importance["semantics"].eq("native")]
    for evaluator, rows in native.groupby("evaluator"):
        rows = rows.set_index("parameter")
        assert rows["importance"].idxmax() == "lr", evaluator
        assert rows.loc["lr", "low"] > rows.loc["momentum", "high"], evaluator  # beyond its interval
    assert (native["n_trials"] == 180).all() and importance.attrs["planned"] == 18  # 3 defaults x 3 seeds x 2


def test_a_study_with_nothing_planted_reports_no_effect():
    """The test that can fail: nulls everywhere, 5 seeds a side; no comparison may be called an effect."""
    rng = np.random.default_rng(11)
    rows = transfer_rows(rng, seeds=(5, 5), regimes=("native",), truth=NULL_TRUE)
    transfer = as_frame(rows, "null-transfer", robustness_records(rng, rows, keeps=NULL_KEEPS))
    sweep = as_frame(sweep_rows(rng, seeds=3, peaks={"jax": 0.97, "tensorflow": 0.97, "torch": 0.97}), "null-sweep")
    found = findings(sweep, [transfer])
    effects = found.comparisons[found.comparisons["verdict"].isin(("lower", "higher"))]
    assert effects.empty, effects["sentence"].tolist()
    assert not found.claims["verdict"].eq("supported").any(), found.claims["sentence"].tolist()


# the command ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    """The planted studies in an SQLite file, written as the sweep writes them (fewer seeds: it is a file)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('findings') / 'studies.db'}"
    rng = np.random.default_rng(3)
    rows = transfer_rows(rng, seeds=(4, 4), budget_scale=0.25)
    as_study(rows, "transfer", url, robustness_records(rng, rows))
    as_study(sweep_rows(rng, configs=24, seeds=3), "sweep", url)
    return url


def test_findings_command_prints_a_verdict_per_claim(storage, capsys):
    from sensitivity.cli import main

    assert main(["findings", "sweep", "--with-study", "transfer", "--storage", storage]) == 0
    out = capsys.readouterr().out
    assert "[supported] dataset transfer: Native: defaults do not transfer across datasets here: torch's" in out
    assert "[supported] robustness:" in out and "runtime-accuracy: Native: on the runtime-accuracy frontier" in out
    assert main(["findings", "sweep", "--with-study", "transfer", "--storage", storage, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    verdicts = {c["claim"]: c["verdict"] for c in data["claims"]}
    assert verdicts["dataset transfer"] == "supported" and verdicts["framework transfer"] == "supported"
    assert {"sentence", "p_holm", "low", "high", "n_a", "n_trials", "anchor"} <= set(data["claims"][0])
    assert any(c["verdict"] == "not compared" for c in data["comparisons"])


def test_findings_command_names_a_missing_study(storage, capsys):
    from sensitivity.cli import main

    assert main(["findings", "nothing", "--storage", storage]) == 2
    assert "no study 'nothing'" in capsys.readouterr().err


def test_the_report_opens_with_the_findings_and_shows_every_dataset_of_the_transfer_study(storage, tmp_path):
    from sensitivity.analysis.report import write_report
    from sensitivity.sweep.studies import load

    sweep, transfer = load("sweep", storage), load("transfer", storage)
    text = write_report(sweep, tmp_path / "report.html", others=[transfer]).read_text()
    sections = re.findall(r'<section id="([a-z-]+)">', text)
    assert sections[0] == "findings"
    findings_part = text.split('<section id="study">')[0]
    assert "defaults do not transfer across datasets here" in findings_part
    transfer_part = text.split('<section id="transfer">')[1].split("</section>")[0]
    assert "From study transfer." in transfer_part  # not the sweep's own defaults on mnist5k
    assert "digits" in transfer_part and "mnist5k" in transfer_part
    assert "Budget cut: each default ran 0.25 of its published training steps" in transfer_part
