"""Designed studies through Optuna: Ishigami's known indices read back from a study's trials by
sensitivity.analysis.rankings.designed and by `sensitivity importance` on a real SQLite storage; per framework, with
differences between them; missing points, diverged runs, and a study without a design refused in one line."""
import json
import math
import re
import subprocess

import numpy as np
import optuna
import pytest

from sensitivity.analysis.rankings.designed import designed_importance, importance_record
from sensitivity.analysis.rankings.plain import plain_importance
from sensitivity.cli import main
from sensitivity.config.design import Design, Param, configurations_of

A, B = 7.0, 0.1
S1 = {"x1": 0.314, "x2": 0.442, "x3": 0.0}
ST = {"x1": 0.558, "x2": 0.442, "x3": 0.244}
PARAMS = tuple(Param(f"x{i}", "float", -math.pi, math.pi) for i in (1, 2, 3))


def ishigami(c, a=A):
    return math.sin(c["x1"]) + a * math.sin(c["x2"]) ** 2 + B * c["x3"] ** 4 * math.sin(c["x1"])


def planted_study(storage, design, worlds, name="ishigami", diverged=(), skip=(), collapsed=()):
    """A study as `sweep --design` leaves it: the design attribute, one complete trial per point and world
    (a 'framework'), config_id design:WORLD:ROW; `diverged` rows recorded as diverged at chance level;
    `collapsed` rows finished with status ok, the final loss of a uniform guess over digits' 10 classes."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize")
    with pytest.warns(optuna.exceptions.ExperimentalWarning):
        study.set_metric_names(["y"])
    study.set_user_attr("design", design.attrs())
    if collapsed:
        study.set_user_attr("space", {"dataset": "digits"})
    distributions = {p.name: optuna.distributions.CategoricalDistribution(p.choices) if p.kind == "categorical" else
                     optuna.distributions.FloatDistribution(p.low, p.high) for p in design.params}
    distributions["framework"] = optuna.distributions.CategoricalDistribution(tuple(worlds))
    trials = []
    for world, f in worlds.items():
        for row, c in enumerate(configurations_of(design.params, design.rows())):
            if row in skip:
                continue
            status = "diverged" if row in diverged else "ok"
            trials.append(optuna.trial.create_trial(
                params={**c, "framework": world}, distributions=distributions,
                value=0.1 if status == "diverged" else f(c),
                user_attrs={"config_id": f"design:{world}:{row}", "seed": 0, "status": status,
                            **({"loss": math.log(10)} if row in collapsed else {})}))
    study.add_trials(trials)
    return study


def test_ishigami_indices_from_an_optuna_study_match_the_analytic_ones():
    design = Design("sobol", 1024, 0, PARAMS)  # 8,192 points (at N=256 x1's ST is 0.45 [0.32, 0.58] here)
    study = planted_study(None, design, {"ishigami": ishigami})
    found = designed_importance(study)
    (world,) = found.frameworks
    first = dict(zip(world.result.names, world.result.others["S1"]))
    total = dict(zip(world.result.names, world.result.estimates))
    for name in S1:
        assert abs(first[name].value - S1[name]) < 0.03, (name, first[name])
        assert abs(total[name].value - ST[name]) < 0.03, (name, total[name])
        assert first[name].low <= S1[name] <= first[name].high
        assert total[name].low <= ST[name] <= total[name].high
    record = importance_record(found)
    assert set(record["parameters"]) == {"x1", "x2", "x3"} and record["n"] == design.points
    s13 = record["interactions"]["x1:x3"]
    assert s13[1] < 0.244 < s13[2]  # Ishigami's only interaction: S13 = ST3 = 0.244
    assert abs(record["interactions"]["x1:x2"][0]) < 0.06
    assert world.verdict.top == "x1"
    print("\nIshigami through an Optuna study, N=1024: " + "; ".join(
        f"{n} S1 {first[n].value:.3f} ST {total[n].value:.3f}" for n in S1) + f"; {world.verdict.why}")


def test_two_frameworks_each_get_indices_and_their_difference_has_an_interval():
    design = Design("sobol", 256, 1, PARAMS)
    study = planted_study(None, design, {"strong": ishigami, "weak": lambda c: ishigami(c, a=2.0)})
    record = importance_record(designed_importance(study))
    assert set(record["per_framework"]) == {"strong", "weak"} and "parameters" not in record
    diff = record["differences"]["strong-weak"]
    assert diff["x2"][1] > 0  # x2's share is larger where its coefficient is: decided
    assert diff["x3"][2] < 0  # and x3's (an interaction with x1) smaller, as its share of a smaller variance


def test_missing_points_give_no_indices_and_diverged_runs_count_at_chance():
    design = Design("morris", 8, 0, PARAMS)
    study = planted_study(None, design, {"a": ishigami}, skip={3})
    (world,) = designed_importance(study).frameworks
    assert world.result is None and "1 of its 32 design points have no complete value" in world.why_not
    study = planted_study(None, design, {"a": ishigami}, name="d", diverged={0, 5})
    (world,) = designed_importance(study).frameworks
    assert world.diverged == 2 and world.result is not None  # counted at the chance level they recorded
    assert world.collapsed == 0
    study = planted_study(None, design, {"a": ishigami}, name="c", diverged={0}, collapsed={1, 2, 7})
    (world,) = designed_importance(study).frameworks
    assert (world.diverged, world.collapsed) == (1, 3) and world.result is not None  # counted apart, values kept
    assert importance_record(designed_importance(study))["per_framework"]["a"]["collapsed"] == 3
    record = importance_record(designed_importance(planted_study(None, design, {"a": ishigami}, name="m")))
    assert set(record["parameters"]["x1"]) == {"mu_star", "sigma"}


def test_importance_command_on_a_sqlite_study_and_a_plain_one(tmp_path, capsys):
    def cli(*args):
        code = main(list(args))
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)

    url = f"sqlite:///{tmp_path}/s.db"
    design = Design("sobol", 8, 0, PARAMS)  # 64 points: SQLite writes a trial in about 0.1 s
    study = planted_study(url, design, {"ishigami": ishigami})
    proc = cli("importance", "ishigami", "--storage", url)
    assert proc.returncode == 0, proc.stderr
    assert "Saltelli (Sobol' indices, second order) base N=8: N(2D+2) = 64 points" in proc.stdout
    assert "ishigami: 64 of 64 points" in proc.stdout and "ranking by ST" in proc.stdout
    record = json.loads(cli("importance", "ishigami", "--storage", url, "--json").stdout)
    assert record == json.loads(json.dumps(importance_record(designed_importance(study))))
    assert set(record["parameters"]["x1"]) == {"first", "total", "total_minus_first"}
    assert cli("importance", "ishigami", "--storage", url, "--out", str(tmp_path / "f.html")).returncode == 0
    assert (tmp_path / "f.html").stat().st_size > 1000
    proc = cli("importance", "ishigami", "--storage", url, "--out", str(tmp_path / "f.txt"))
    assert proc.returncode == 2 and "allowed endings" in proc.stderr and not (tmp_path / "f.txt").exists()
    plain = optuna.create_study(study_name="plain", storage=url, sampler=optuna.samplers.RandomSampler(seed=0))
    plain.optimize(lambda t: t.suggest_float("x", 0, 1) + 0.01 * t.suggest_float("y", 0, 1), n_trials=12)
    proc = cli("importance", "plain", "--storage", url)  # a study without a design: too few for given-data indices
    assert proc.returncode == 2 and "needs at least 50" in proc.stderr, proc.stderr
    assert cli("importance", "plain", "--storage", url, "--within", "x=0.5").returncode == 2
    proc = cli("importance", "ishigami", "--storage", url, "--objective", "z")
    assert proc.returncode == 2 and "allowed: y" in proc.stderr
    proc = cli("importance", "ishigami", "--storage", url, "--params", "x1")
    assert proc.returncode == 2 and "is a design, whose indices are of all its factors" in proc.stderr


def test_a_plain_optuna_study_is_one_group_with_its_own_parameters():
    """Issue 30: 1,024 QMC points of Ishigami written by a plain Optuna script, read with no attribute of
    this tool: one group, its own parameters; fANOVA puts x3 last (its S1 is 0), PED-ANOVA x1 first."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with pytest.warns(optuna.exceptions.ExperimentalWarning):
        sampler = optuna.samplers.QMCSampler(seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: ishigami({f"x{i}": t.suggest_float(f"x{i}", -math.pi, math.pi) for i in (1, 2, 3)}),
                   n_trials=1024)
    record = plain_importance(study)
    assert list(record["per_group"]) == ["all trials"] and record["n"] == 1024
    assert record["sampling"]["family"] == "qmc" and record["fits"] == "rbd_fast"
    fanova = {n: v["fanova"][0] for n, v in record["parameters"].items()}
    ped = {n: v["ped_anova"][0] for n, v in record["parameters"].items()}
    assert min(fanova, key=fanova.get) == "x3" and fanova["x1"] > 0.3 and fanova["x2"] > 0.3
    assert max(ped, key=ped.get) == "x1"
    print(f"\nplain Optuna Ishigami, 1,024 QMC trials: fANOVA {fanova}; PED-ANOVA {ped}")
    from sensitivity.analysis.rankings.importance import parameter_importance
    from sensitivity.analysis.table import NotEnoughData, trials_table
    with pytest.raises(NotEnoughData, match="none of these 1024 complete trials has") as caught:
        parameter_importance(trials_table(study))  # the report's section: not "needs at least 2 complete trials"
    assert "sensitivity importance STUDY" in str(caught.value)


def test_within_a_level_of_a_categorical_gives_fanova_and_ped_anova_of_the_others():
    params = PARAMS[:2] + (Param("opt", "categorical", choices=("adam", "sgd")),)
    design = Design("sobol", 16, 0, params)  # y depends on x2 under adam only, on x1 under sgd only
    study = planted_study(None, design, {"t": lambda c: math.sin(c["x2"] if c["opt"] == "adam" else c["x1"]) ** 2})
    adam = plain_importance(study, within=("opt", "adam"))
    sgd = plain_importance(study, within=("opt", "sgd"))
    assert set(adam["parameters"]) == {"x1", "x2"} and adam["within"] == "opt=adam"
    assert adam["parameters"]["x2"]["fanova"][0] > 0.8 and sgd["parameters"]["x1"]["fanova"][0] > 0.8
    assert "cannot be conditioned" in adam["note"]
    with pytest.raises(ValueError, match="allowed: adam, sgd"):
        plain_importance(study, within=("opt", "rms"))
    with pytest.raises(ValueError, match="not a parameter"):
        plain_importance(study, within=("nope", "1"))


def test_seeds_of_a_point_are_averaged():
    design = Design("sobol", 16, 0, PARAMS, seeds=2)
    one = planted_study(None, Design("sobol", 16, 0, PARAMS), {"a": ishigami}, name="one")
    two = planted_study(None, design, {"a": lambda c: ishigami(c) + 3 * c["x3"]}, name="two")
    other = [optuna.trial.create_trial(params=t.params, distributions=t.distributions,
                                       value=t.value - 6 * t.params["x3"], user_attrs={**t.user_attrs, "seed": 1})
             for t in two.get_trials()]
    two.add_trials(other)  # seed 0 at f + 3 x3, seed 1 at f - 3 x3: their mean is f, either alone is not
    a = importance_record(designed_importance(one))["parameters"]
    b = importance_record(designed_importance(two))["parameters"]
    assert a == b


def test_a_small_base_is_never_settled():
    design = Design("sobol", 2, 0, PARAMS)
    (world,) = designed_importance(planted_study(None, design, {"a": ishigami})).frameworks
    assert not world.verdict.settled and "too small for a bootstrap interval" in world.verdict.why
    assert np.isfinite(world.result.others["S1"][0].value)


def test_the_figure_draws_each_framework_s_indices_with_their_intervals():
    from sensitivity.analysis.figures.designed_indices import Info, plot

    design = Design("sobol", 64, 1, PARAMS)
    study = planted_study(None, design, {"strong": ishigami, "weak": lambda c: ishigami(c, a=2.0)})
    record = importance_record(designed_importance(study))
    fig = plot(Info(record, "t"))
    assert [t.name for t in fig.data] == ["S1 (alone)", "ST (with interactions)"] * 2
    st = record["per_framework"]["weak"]["parameters"]["x2"]["total"]
    trace = fig.data[3]
    assert list(trace.x) == ["x1", "x2", "x3"] and trace.y[1] == st[0]
    assert trace.error_y.array[1] == pytest.approx(st[2] - st[0])
    assert trace.error_y.arrayminus[1] == pytest.approx(st[0] - st[1])
    wide = importance_record(designed_importance(planted_study(None, Design("sobol", 2, 1, PARAMS), {"a": ishigami},
                                                               name="wide")))
    cut = plot(Info(wide, "t"))
    assert tuple(cut.layout.yaxis.range) == (-0.25, 1.25) and "intervals cut" in cut.layout.title.text


def test_the_report_leads_its_importance_with_the_designed_study_and_its_interaction_map(tmp_path):
    """Ishigami's only interaction is x1 with x3 (S2 = ST3 = 0.244): the heat map's largest cell, per framework."""
    from sensitivity.analysis.report.importance import designed_html
    from sensitivity.analysis.figures.designed_indices import Info
    from sensitivity.analysis.figures.designed_interactions import plot
    from sensitivity.analysis.report.page import write_report

    study = planted_study(None, Design("sobol", 256, 1, PARAMS), {"strong": ishigami,
                                                                   "weak": lambda c: ishigami(c, a=2.0)})
    record = importance_record(designed_importance(study))
    fig = plot(Info(record, "t"))
    cells = {}
    for trace, world in zip(fig.data, ("strong", "weak")):
        cells[world] = {(x, y): z for y, row in zip(trace.y, trace.z) for x, z in zip(trace.x, row) if z is not None}
        assert max(cells[world], key=cells[world].get) == ("x1", "x3"), cells
        assert cells[world][("x1", "x3")] == record["per_framework"][world]["interactions"]["x1:x3"][0]
    assert abs(cells["strong"][("x1", "x3")] - ST["x3"]) < 0.1  # the analytic S2 of the pair at a = 7
    section = designed_html("ishigami", record)
    assert re.search(r"<td>strong</td>\s*<td>x1</td>", section), section  # ST: x1 0.558 above x2 0.442
    assert section.count('data-kind="designed-') == 2 and "more sensitive" in section
    assert "below 0" not in section  # every S2 estimate of this study is at least 0
    strong = record["per_framework"]["strong"]["interactions"]
    strong["x1:x2"] = [-0.02, -0.05, 0.01]  # analytic 0: an estimate of it may fall below
    assert "1 S2 estimate(s) below 0 (strong x1:x2 -0.020 [-0.050, 0.010]), drawn as 0" in designed_html("ishigami",
                                                                                                        record)
    page = write_report(study, tmp_path / "r.html").read_text()
    importance = page.split('<section id="importance">')[1].split("</section>")[0]
    assert importance.index("Designed study ishigami") < importance.index("data-kind=\"designed-interactions\"")
    from analysis_data import make_study

    from sensitivity.analysis.report.findings import findings_html
    from sensitivity.analysis.table import trials_table

    findings = findings_html(trials_table(make_study(n_configs=6, seeds=1)), designed=[("ishigami", record)])
    assert "<h3>Sensitivity: designed study ishigami</h3>" in findings
    assert findings.count('<span class="verdict ') >= 3 and "frameworks differ in sensitivity" in findings


def test_the_findings_sensitivity_claims_name_the_top_parameter_and_where_frameworks_differ(tmp_path, capsys):
    """Ishigami at a = 7 and a = 2: at a = 2, x1 explains most of the variance (ST 0.93) and its ranking settles,
    the others below it; whether the two differ in sensitivity is the framework's ST - S1, which one seed a point
    cannot tell from the seeds' noise (tests/analysis/test_framework_factor.py decides it with two). Every claim's
    line fits the Findings' 240 characters."""
    from sensitivity.analysis.claims.sensitivity import sensitivity_claims

    worlds = {"strong": ishigami, "weak": lambda c: ishigami(c, a=2.0)}
    study = planted_study(None, Design("sobol", 256, 1, PARAMS), worlds)
    claims = sensitivity_claims("ishigami", importance_record(designed_importance(study)))
    assert all(len(f"  [{c['verdict']}] {c['claim']}: {c['headline']}") <= 240 for c in claims), claims
    by_subject = {c["subject"]: c for c in claims}
    weak = by_subject["weak"]
    assert weak["verdict"] == "settled" and weak["headline"].startswith("weak: x1 first, ST "), weak
    assert weak["headline"].endswith("below it") and "x3: S1 " in weak["details"]
    differ = by_subject[""]
    assert differ["claim"] == "frameworks differ in sensitivity" and differ["verdict"] == "not testable"
    assert differ["headline"].startswith("ST(framework) ") and "not testable with one seed a point" in \
        differ["headline"], differ
    assert "ST - S1" in differ["details"] and "--seeds 2" in differ["details"]
    small = planted_study(None, Design("sobol", 2, 1, PARAMS), {"a": ishigami}, name="small")
    [one, none] = sensitivity_claims("small", importance_record(designed_importance(small)))
    assert one["verdict"] == "not settled" and "too small for a bootstrap interval" in one["headline"]
    assert "--until-settled --max-trials" in one["details"] and none["verdict"] == "not tested"
    storage = f"sqlite:///{tmp_path}/s.db"
    planted_study(storage, Design("sobol", 8, 1, PARAMS), worlds, name="cli")
    assert main(["findings", "cli", "--storage", storage, "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "Sensitivity, designed study cli:\n  [" in out and "] frameworks differ in sensitivity: " in out
    assert "\n      strong (Saltelli base N=8, 64 points a framework" in out


def test_a_ranking_of_indices_that_interact_or_of_intervals_past_the_range_is_not_settled():
    """Two parameters that lead together through their interaction (overlapping intervals, ST - S1 large) are
    named together, the one below them apart; an ST interval holding the whole of [0, 1] ranks nothing."""
    from sensitivity.analysis.claims.sensitivity import interaction_note, sensitivity_claims

    def framework(lr, optimizer, batch, settled=False):
        return {"n": 256, "points": 256, "diverged": 0, "settled": settled, "top": "lr", "lead": 0.87,
                "why": "lr leads in only 87% of resamples (needs 90%); lr's interval overlaps optimizer's",
                "parameters": {name: {"first": [0.1, -0.4, 0.6], "total": total, "total_minus_first": total[0] - 0.1}
                               for name, total in (("lr", lr), ("optimizer", optimizer), ("batch_size", batch))}}

    record = {"design": {"kind": "sobol", "size": 32, "points": 256, "seeds": 1},
              "ranking": {"index": "ST", "key": "total", "label": "ST (with interactions)", "title": "Sobol'",
                          "article": "A Saltelli (Sobol' indices)", "interactions": True,
                          "words": "Saltelli base N=32"},
              "per_framework": {"torch": framework([1.05, 0.38, 1.72], [0.75, 0.35, 1.15], [0.11, -0.01, 0.22]),
                                "mxnet": framework([1.3, -19.2, 21.9], [0.75, -0.14, 1.65], [0.02, -0.06, 0.11]),
                                "tensorflow": framework([1.08, 0.4, 1.76], [0.64, 0.22, 1.07], [0.18, 0.01, 0.36])},
              "differences": {"torch-mxnet": {"lr": [-0.2, -21.2, 20.8], "optimizer": [0.0, -1.1, 1.1],
                                              "batch_size": [0.09, 0.01, 0.17]}}}
    torch, mxnet, tensorflow, differ = sensitivity_claims("d", record)
    assert torch["verdict"] == "not settled"
    assert torch["headline"] == ("torch: lr ST 1.05 [0.38, 1.72] and optimizer ST 0.75 [0.35, 1.15] lead, not "
                                 "separated (lr first in 87% of resamples); batch_size below them; ST-S1 0.95, 0.65: "
                                 "mostly interaction")
    assert "; batch_size below lr; " in tensorflow["headline"]  # below lr's interval, not optimizer's
    assert mxnet["verdict"] == "not settled" and "holding the whole of an index's range [0, 1]" in mxnet["headline"]
    note = interaction_note(record)  # mxnet leads with lr alone: an interval over all of [0, 1] overlaps nothing
    assert note.startswith("The leading parameters act mostly through their interaction: torch, ST - S1 of lr 0.95, "
                           "optimizer 0.65; tensorflow, ST - S1 of lr 0.98, optimizer 0.54. Which of them"), note
    record["per_framework"]["torch"]["parameters"]["lr"].update(first=[0.6, 0.3, 0.9], total_minus_first=0.45)
    assert "torch" not in interaction_note(record)
    assert not sensitivity_claims("d", record)[0]["headline"].endswith("mostly interaction")
    # a record without the framework as a factor (every framework on every row) decides nothing across frameworks
    assert differ["verdict"] == "not tested" and "every row of one design" in differ["headline"], differ
