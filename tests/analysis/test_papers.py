"""The papers' numbers beside ours: each paper cell finds our runs of its default, or says why there are none."""
import pandas as pd
import pytest

from sensitivity.analysis.report.papers import forecast_html, load_papers, paper_rows, papers_html


def _table(scale=0.02):
    rows = []
    for seed, acc in enumerate([0.97, 0.98, 0.99]):
        rows.append({"default": "caffe-lenet", "framework": "torch", "dataset": "mnist5k", "outcome": "ok",
                     "accuracy": acc, "train_time_s": 10.0 + seed, "env_model": "lenet5", "env_cpu": "Xeon",
                     "env_threads": 1, "state": "COMPLETE"})
    rows.append({**rows[0], "outcome": "diverged", "accuracy": 0.1})  # never in the mean
    table = pd.DataFrame(rows)
    table.attrs.update(study="r", reproduce={"preset": "liu2018", "scale": scale, "seeds": 3,
                                             "frameworks": ["tensorflow", "torch"], "device": "cpu",
                                             "datasets": {"mnist": "run on mnist5k (stand-in)",
                                                          "cifar10": "not run: files absent"}},
                       forecast={"train_s": 40.0, "wall_s": 30.0, "slots": 2, "sampled": False, "trials": 4},
                       last_run={"wall_s": 36.0, "trials": 4})
    return table


def test_every_cell_of_the_paper_is_a_row_with_ours_or_why_not():
    rows = paper_rows([_table()])
    cells = [c for c in load_papers()["cells"] if c["paper"] == "gtdlbench"]
    assert len(rows) >= len(cells)
    caffe = rows[(rows["framework"] == "Caffe") & (rows["dataset"] == "mnist") & (rows["device"] == "cpu")]
    on_torch = caffe[caffe["ours on"] == "torch"].iloc[0]
    assert on_torch["paper accuracy %"] == 99.03 and on_torch["paper train s"] == "512"
    assert on_torch["our accuracy %"].startswith("98.00 [") and on_torch["our accuracy %"].endswith("n=3")
    assert on_torch["our train s"] == "11" and on_torch["our network"] == "lenet5"
    assert caffe[caffe["ours on"] == "tensorflow"].iloc[0]["our accuracy %"] == "no converged run (0 runs)"
    gpu = rows[(rows["framework"] == "Caffe") & (rows["dataset"] == "mnist") & (rows["device"] == "gpu")]
    assert set(gpu["our accuracy %"]) == {"not run here: another device"}
    cifar = rows[rows["dataset"] == "cifar10"]
    assert set(cifar[cifar["framework"] != "Theano"]["our accuracy %"]) == {"not run: files absent"}


def test_a_rehearsal_says_its_numbers_are_not_comparable():
    assert "not comparable with the paper" in papers_html([_table()])
    assert "not comparable" not in papers_html([_table(scale=1.0).assign(dataset="mnist").pipe(_full)])
    assert "sensitivity reproduce" in papers_html([pd.DataFrame()])


def _full(table):
    table.attrs["reproduce"] = {**table.attrs["reproduce"], "datasets": {"mnist": "run", "cifar10": "run"}}
    return table


def test_the_forecast_stands_beside_the_measured_train_time():
    html = forecast_html([_table()])
    assert "40" in html and "43" in html and "1.075" in html  # 10 + 11 + 12 + the diverged run's 10
    assert "measured wall s" in html and "36" in html and "1.2" in html  # the last run's wall, 36 / 30


def test_a_resumed_run_has_no_measured_wall_beside_the_forecast():
    from sensitivity.analysis.report.papers import measured_beside
    table = _table()
    table.attrs["last_run"] = {"wall_s": 5.0, "trials": 1}  # a rerun that ran 1 of the forecast's 4
    found = measured_beside(table.attrs["forecast"], table)
    assert found["measured_wall_s"] is None and found["wall_ratio"] is None
