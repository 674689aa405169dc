"""Transfer of defaults (Liu et al. 2018): every source default run on every target framework and dataset,
and the studies' two questions answered with differences and their intervals, per regime (native first).

`transfer_matrix` gives one row per (default, target framework, target dataset, regime) with the mean
accuracy over seeds and its interval (`intervals`), train time, n, both relative to the target's own default
in the same regime (ratio; 1 is as good as its own), and the budget scale the default ran at.
`transfer_comparisons` answers the questions:
- across datasets: each framework's own default on a dataset it was not tuned for (another dataset family:
  mnist5k is MNIST's) against the best configuration known for that dataset on the same framework and regime,
  chosen on validation accuracy among everything run there (its own default, other defaults run on it, the
  sweep's configurations of `references`), compared on test accuracy. A default cut to a budget
  (budget_scale < 1) is judged only against the other defaults of its study, cut alike: a sweep's full runs
  would measure the budget, not the transfer;
- across frameworks: framework A's default run on framework B, against the same default on A and against B's
  own default on B, per dataset.
Each difference is Welch's (`intervals.difference`); with under 3 seeds on a side there is no interval.
`plot_transfer` draws the matrix as heatmaps; every title names the budget scale where it is below 1.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.intervals import difference, group_intervals, interval_text, mean_interval
from sensitivity.analysis.table import (REGIME, NotEnoughData, derived, regime_sorted, regimes_of, trained,
                                        trials_table)

KEYS = ["default", "default_source", "source_dataset", "framework", "dataset", REGIME]
ORIGIN = {"mnist5k": "mnist"}  # a dataset drawn from another: a default tuned on the origin was tuned for it
COMPARISON_COLUMNS = [REGIME, "question", "dataset", "framework", "default", "source_framework", "source_dataset",
                      "subject", "reference", "subject_mean", "reference_mean", "estimate", "low", "high", "p",
                      "n_a", "n_b", "sd", "method", "budget_scale", "subject_text", "reference_text"]


def family(dataset) -> str:
    return ORIGIN.get(dataset, dataset)


def transfer_matrix(table) -> pd.DataFrame:
    """Computed once per table (`table.derived`): the report's findings and its transfer section share it."""
    return derived(trials_table(table), _transfer_matrix)


def _transfer_matrix(table: pd.DataFrame) -> pd.DataFrame:
    runs = _default_runs(table)
    cells = (runs.groupby(KEYS, dropna=False)
             .agg(accuracy=("accuracy", "mean"), train_time_s=("train_time_s", "mean"), n_seeds=("accuracy", "size"),
                  own=("own_default", "max"), diverged=("outcome", lambda o: int((o == "diverged").sum())),
                  budget_scale=("budget_scale", "min"))
             .reset_index())
    spread = group_intervals(runs, KEYS, "accuracy").drop(columns=["accuracy_mean", "accuracy_n"])
    cells = cells.merge(spread, on=KEYS, how="left")
    target = ["framework", "dataset", REGIME]  # the target's own default in the same regime
    own = cells[cells["own"].eq(True)][target + ["default", "accuracy", "train_time_s"]]
    own = own.rename(columns={"default": "own_default", "accuracy": "own_accuracy", "train_time_s": "own_time_s"})
    cells = cells.merge(own, on=target, how="left")
    cells["relative_accuracy"] = cells["accuracy"] / cells["own_accuracy"]
    cells["relative_time"] = cells["train_time_s"] / cells["own_time_s"]
    cells = cells.rename(columns={"framework": "target_framework", "dataset": "target_dataset",
                                  "default_source": "source_framework"}).drop(columns="own")
    return regime_sorted(cells, [REGIME, "default", "target_framework", "target_dataset"])


def richest_transfer(sources) -> tuple:
    """(source, its transfer matrix) of the source whose defaults span the most datasets, then frameworks,
    then cells: the study of `sensitivity transfer` rather than a sweep's few defaults on its own dataset.
    NotEnoughData (the first source's reason) when none has defaults."""
    found, reasons = [], []
    for source in sources:
        try:
            cells = transfer_matrix(source)
        except NotEnoughData as reason:
            reasons.append(str(reason))
            continue
        found.append(((cells["target_dataset"].nunique(), cells["target_framework"].nunique(), len(cells)),
                      len(found), source, cells))
    if not found:
        raise NotEnoughData(reasons[0] if reasons else "transfer needs a study")
    _, _, source, cells = max(found, key=lambda item: (item[0], -item[1]))
    return source, cells


def _default_runs(table: pd.DataFrame) -> pd.DataFrame:
    if "default" not in table or table["default"].isna().all():
        raise NotEnoughData("transfer needs the trials of sensitivity transfer (or sensitivity defaults)")
    runs = trained(table)
    runs = runs[runs["default"].notna()].copy()
    if runs.empty:
        raise NotEnoughData("transfer needs completed trials of framework defaults")
    for column in ("own_default", "default_source", "source_dataset"):
        if column not in runs:
            runs[column] = None
    runs["budget_scale"] = pd.to_numeric(runs["budget_scale"], errors="coerce") if "budget_scale" in runs else np.nan
    return runs


def budget_note(scales) -> str:
    """" (budget cut: each default ran 0.04 to 0.5 of its published training steps)" where a scale is below 1."""
    scales = pd.to_numeric(pd.Series(scales, dtype=object), errors="coerce").dropna()
    scales = scales[scales < 1]
    if scales.empty:
        return ""
    low, high = scales.min(), scales.max()
    span = f"{low:.2g}" if math.isclose(low, high) else f"{low:.2g} to {high:.2g}"
    return f" (budget cut: each default ran {span} of its published training steps)"


def transfer_comparisons(table, references=()) -> pd.DataFrame:
    """The two questions of the module, one row per comparison: question ("datasets" or "frameworks"),
    subject and reference (what is compared with what), their means, the difference `estimate` (subject -
    reference) with `low`, `high`, Welch's `p`, the seeds `n_a`, `n_b`, the pooled `sd`, and texts of both
    means with their intervals. `references` are further trial tables (a sweep) whose configurations count as
    known ones."""
    runs = _default_runs(trials_table(table))
    runs = runs.assign(label="default " + runs["default"].astype(str))
    known = [runs]
    for i, other in enumerate(references):
        rows = trained(trials_table(other))
        study = rows.attrs.get("study") or f"study {i + 2}"
        named = ("default " + rows["default"].astype(str)) if "default" in rows else None
        label = rows["config_id"].astype(str) if named is None else named.where(rows["default"].notna(),
                                                                                  rows["config_id"].astype(str))
        known.append(rows.assign(label=f"{study}: " + label, budget_scale=np.nan))
    known = pd.concat(known, ignore_index=True)
    out = _across_datasets(runs, known) + _across_frameworks(runs)
    frame = pd.DataFrame(out, columns=COMPARISON_COLUMNS)
    return regime_sorted(frame, [REGIME, "question", "dataset", "framework", "default"])


def _row(regime, question, dataset, framework, default, source, source_dataset, subject, reference, a, b,
         scales) -> dict:
    diff = difference(a, b)
    ia, ib = mean_interval(a), mean_interval(b)
    return {REGIME: regime, "question": question, "dataset": dataset, "framework": framework, "default": default,
            "source_framework": source, "source_dataset": source_dataset, "subject": subject,
            "reference": reference, "subject_mean": ia.mean, "reference_mean": ib.mean, "estimate": diff.estimate,
            "low": diff.low, "high": diff.high, "p": diff.p, "n_a": diff.n_a, "n_b": diff.n_b, "sd": diff.sd,
            "method": diff.method, "budget_scale": _least(scales),
            "subject_text": interval_text(ia.mean, ia.low, ia.high, ia.n),
            "reference_text": interval_text(ib.mean, ib.low, ib.high, ib.n)}


def _least(scales) -> float:
    values = np.asarray(scales, float)
    values = values[np.isfinite(values)]
    return float(values.min()) if len(values) else math.nan


class _Runs:
    """The runs of each (regime, framework, dataset, label) as arrays (accuracy, val_accuracy, budget_scale):
    comparisons are look-ups, not scans."""

    def __init__(self, rows: pd.DataFrame):
        columns = {c: rows[c].to_numpy(float) for c in ("accuracy", "val_accuracy", "budget_scale")}
        self.groups = {key: {c: values[index] for c, values in columns.items()} for key, index in
                       rows.groupby([REGIME, "framework", "dataset", "label"], sort=True).indices.items()}

    def get(self, regime, framework, dataset, label):
        return self.groups.get((regime, framework, dataset, label))

    def labels(self, regime, framework, dataset) -> list:
        return [k[3] for k in self.groups if k[:3] == (regime, framework, dataset)]


def _arm(runs: dict) -> np.ndarray:
    values = runs["accuracy"]
    return values[np.isfinite(values)]


def _across_datasets(runs: pd.DataFrame, known: pd.DataFrame) -> list:
    """Each framework's own default on each dataset outside its family, against the best configuration known
    there on that framework and regime (chosen on validation accuracy, compared on test accuracy)."""
    own = runs[runs["is_default"].eq(True)] if "is_default" in runs else runs.iloc[0:0]
    index, out = _Runs(known), []
    firsts = own.groupby([REGIME, "framework", "dataset", "default"])[["default_source", "source_dataset"]].first()
    for (regime, framework, dataset, default), (source, source_dataset) in firsts.iterrows():
        if source_dataset is None or source_dataset != source_dataset or family(source_dataset) == family(dataset):
            continue
        subject = index.get(regime, framework, dataset, f"default {default}")
        cut = bool((subject["budget_scale"] < 1).any())  # a cut default is judged against runs cut alike only
        candidates = [label for label in index.labels(regime, framework, dataset) if label != f"default {default}"
                      and (label.startswith("default ") or not cut)]
        if not candidates:
            continue

        def chosen_on(label):
            part = index.get(regime, framework, dataset, label)
            values = part["val_accuracy"] if np.isfinite(part["val_accuracy"]).any() else part["accuracy"]
            return float(np.nanmean(values)) if np.isfinite(values).any() else -math.inf
        best = max(candidates, key=chosen_on)
        reference = index.get(regime, framework, dataset, best)
        out.append(_row(regime, "datasets", dataset, framework, default, source, source_dataset,
                        f"{default} on {framework}, {dataset}", f"{best} on {framework}, {dataset}",
                        _arm(subject), _arm(reference), [*subject["budget_scale"], *reference["budget_scale"]]))
    return out


def _across_frameworks(runs: pd.DataFrame) -> list:
    """Framework A's default run on B, against the same default on A and against B's own default on B."""
    frameworks = set(runs["framework"])
    index, out = _Runs(runs), []
    owns = runs[runs["own_default"].eq(True)].groupby([REGIME, "dataset", "framework"])["default"].first().to_dict()
    targets = runs.groupby([REGIME, "dataset", "default"])["framework"].unique().to_dict()
    firsts = runs.groupby([REGIME, "dataset", "default"])[["default_source", "source_dataset"]].first()
    for (regime, dataset, default), (home, source_dataset) in firsts.iterrows():
        if home not in frameworks:
            continue  # Caffe's or DLBench's defaults have no home framework here
        label = f"default {default}"
        at_home = index.get(regime, home, dataset, label)
        for target in sorted(set(targets[(regime, dataset, default)]) - {home}):
            moved = index.get(regime, target, dataset, label)
            common = dict(regime=regime, question="frameworks", dataset=dataset, framework=target, default=default,
                          source=home, source_dataset=source_dataset, subject=f"{default} on {target}, {dataset}")
            if at_home is not None:
                out.append(_row(**common, reference=f"{default} on {home}, {dataset}", a=_arm(moved),
                                b=_arm(at_home), scales=[*moved["budget_scale"], *at_home["budget_scale"]]))
            name = owns.get((regime, dataset, target))
            own = index.get(regime, target, dataset, f"default {name}") if name and name != default else None
            if own is not None:
                out.append(_row(**common, reference=f"{name} on {target}, {dataset}", a=_arm(moved), b=_arm(own),
                                scales=[*moved["budget_scale"], *own["budget_scale"]]))
    return out


def plot_transfer(cells: pd.DataFrame):
    """Per regime (a column, native first), two kinds of heatmap: accuracy of each framework's own defaults
    across datasets; accuracy relative to the target's own default across frameworks, one panel per
    dataset. Each cell's text gives n seeds; the titles name the budget scale where it is below 1."""
    from plotly.subplots import make_subplots

    regimes = regimes_of(cells)
    datasets = sorted(cells["target_dataset"].unique())
    budget = budget_note(cells["budget_scale"]) if "budget_scale" in cells else ""
    short = " (cut budget)" if budget else ""
    titles = [title for kind in ["within"] + datasets for regime in regimes for title in [
        f"Across datasets within a framework ({regime}){short}:<br>accuracy of its defaults" if kind == "within" else
        f"Across frameworks on {kind} ({regime}){short}:<br>accuracy relative to the target's own default"]]
    fig = make_subplots(rows=1 + len(datasets), cols=len(regimes), vertical_spacing=0.12 / max(1, len(datasets)) + 0.06,
                        horizontal_spacing=0.15, subplot_titles=titles)
    for col, regime in enumerate(regimes, start=1):
        part = cells[cells[REGIME].eq(regime)]
        fig.add_trace(_within(part, first=col == 1), row=1, col=col)
        for row, dataset in enumerate(datasets, start=2):
            fig.add_trace(_across(part[part["target_dataset"].eq(dataset)], first=(row, col) == (2, 1)),
                          row=row, col=col)
    fig.update_yaxes(automargin=True)
    title = (f"Transfer of default configurations ({', '.join(regimes)}, kept apart)" if len(regimes) > 1
             else f"Transfer of default configurations (regime: {regimes[0]})")
    fig.update_layout(height=380 * (1 + len(datasets)) + 80, width=max(760, 600 * len(regimes)),
                      title=dict(text=title + ("<br><sub>" + budget.strip(" ()") + "</sub>" if budget else ""),
                                 y=1, yref="container", yanchor="top", pad=dict(t=12)),
                      margin=dict(t=150 if budget else 110))
    return fig


def _within(cells: pd.DataFrame, first: bool):
    """Heatmap: each framework's own defaults (and Caffe's, DLBench's) on each dataset."""
    import plotly.graph_objects as go

    own = cells[cells["source_framework"].eq(cells["target_framework"])
                | cells["source_framework"].isin(["caffe", "dlbench"])]
    values = own.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="accuracy")
    counts = own.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="n_seeds")
    return go.Heatmap(z=values.values, x=list(values.columns), y=[f"{f}: {d}" for f, d in values.index],
                      text=_cell_text(values, counts), texttemplate="%{text}", colorscale="Viridis", zmin=0, zmax=1,
                      showscale=first, colorbar=dict(title="accuracy", y=0.85, len=0.3))


def _across(cells: pd.DataFrame, first: bool):
    """Heatmap: each default (row) on each target framework (column), relative to the target's own."""
    import plotly.graph_objects as go

    values = cells.pivot_table(index="default", columns="target_framework", values="relative_accuracy")
    counts = cells.pivot_table(index="default", columns="target_framework", values="n_seeds")
    return go.Heatmap(z=values.values, x=list(values.columns), y=list(values.index), text=_cell_text(values, counts),
                      texttemplate="%{text}", colorscale="RdBu", zmin=0, zmax=2, showscale=first,
                      colorbar=dict(title="relative to own", y=0.35, len=0.3))


def _cell_text(values: pd.DataFrame, counts: pd.DataFrame):
    counts = counts.reindex_like(values)
    return [[("" if pd.isna(v) else f"{v:.2f} (n={int(c)})") for v, c in zip(row_v, row_c)]
            for row_v, row_c in zip(values.values, counts.values)]
