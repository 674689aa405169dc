"""Findings: what the studies in hand say about each claim of Liu et al. (2018) and DLBench, per regime (native
first): one `Verdict` per claim of `registry.CLAIMS` and regime, with its effect, 95% interval, the seeds and
trials behind it, the anchor of its figure, a one-line `headline` and its sentence; and beneath each claim the
`Comparison`s it rests on, each judged on its own (`judge`: Holm within a claim, TOST, seeds needed).

Each claim is a module of this room (tunability, dataset_transfer, framework_transfer, robustness, runtime; how
each is tested is in its docstring); this module only runs them in the registry's order, adds what concerns every claim (the
CPU kernels of the hosts the runs came from), and caches the result beside a study's table. The JSON of
`sensitivity findings --json` is the records of its `Verdict`s and `Comparison`s (`findings_records`).
"""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import Comparison, Verdict
from sensitivity.analysis.claims.judge import judge
from sensitivity.analysis.claims.registry import CLAIMS
from sensitivity.analysis.claims.text import cache_name
from sensitivity.analysis.statistics import EFFECT, REGIME
from sensitivity.analysis.table import UNFRAMED, regimes_of, trained, trials_table, unframed
from sensitivity.core.correctness import unpack
from sensitivity.studies.trial_rows import cached_beside


class Findings(NamedTuple):
    """Fields:
    - claims: one row per regime and claim (the fields of `Verdict`)
    - comparisons: one row per comparison (`Comparison.RECORD`, then `detail`: its own record)
    - summary: the first line: which of Liu et al.'s claims replicate here, natively, and at what scale
    """
    claims: pd.DataFrame
    comparisons: pd.DataFrame
    summary: str = ""

    def verdicts(self) -> list:
        return [Verdict(**row) for row in self.claims[Verdict.columns()].astype(object).to_dict("records")]

    def comparison_list(self) -> list:
        columns = [*Comparison.RECORD, "detail"]
        return [Comparison(**row) for row in self.comparisons[columns].astype(object).to_dict("records")]


def findings(table, others=(), effect: float = EFFECT) -> Findings:
    """The findings of the main study `table` (its frontier) and of `others` (studies of `sensitivity transfer`,
    `crossover`, and robustness records), read together. Those of a study alone are cached beside its table
    (`trial_rows.cached_beside`), with their records (`findings_records`): `sensitivity findings` after a
    report reads the report's."""
    table = trials_table(table)
    if others:
        return _findings(table, [trials_table(o) for o in others], effect)
    found = cached_beside(table, f"findings-{effect!r}", lambda: _findings(table, [], effect))
    cached_beside(table, cache_name(effect), lambda: _noted(findings_records(found), [table]))
    return found


def study_findings_records(study, others=(), effect: float = EFFECT) -> dict:
    """`findings_records` of the findings of `study` (or its table) with `others`, and "note": `table.UNFRAMED`
    where none of them records a framework: for a study alone, the records a report cached beside its table, read
    without the findings' frames (`sensitivity findings` finds them by the study's state, `text.cached_records`)."""
    tables = [trials_table(s) for s in [study, *others]]  # once each: a table is read (or unpickled) per call
    if others:
        return _noted(findings_records(findings(tables[0], tables[1:], effect)), tables)
    return cached_beside(tables[0], cache_name(effect),
                         lambda: _noted(findings_records(findings(tables[0], effect=effect)), tables))


def _noted(records: dict, tables: list) -> dict:
    return {**records, "note": UNFRAMED} if all(unframed(t) for t in tables) else records


def findings_records(found: Findings) -> dict:
    """{"claims": [...], "comparisons": [...]}: the findings as JSON-ready records (`Verdict.record`,
    `Comparison.record`), which `sensitivity findings` prints (`text.findings_text`) or prints as JSON."""
    return {"summary": found.summary, "claims": [v.record() for v in found.verdicts()],
            "comparisons": [c.record() for c in found.comparison_list()]}


def _findings(table: pd.DataFrame, others: list, effect: float) -> Findings:
    sources = [table, *others]
    comparisons = judge(CLAIMS, sources, effect)
    # the main study's regimes and those any comparison has (an ablation study's knobs are not claims)
    regimes = regimes_of(pd.concat([table[[REGIME]], comparisons[[REGIME]]]))
    contexts = {claim.name: claim.context(sources) for claim in CLAIMS}
    verdicts = []
    for regime in regimes:
        for claim in CLAIMS:
            every_regime = comparisons[comparisons["claim"].eq(claim.name)]
            rows = every_regime[every_regime[REGIME].eq(regime)]
            found = claim.verdict(regime, rows, every_regime, effect, contexts[claim.name])
            verdicts.append(Verdict(**{REGIME: regime, "claim": claim.name, "margin": claim.margin(effect),
                                       "n_comparisons": len(rows), "anchor": claim.anchor, **found}))
    mixed = kernel_warning(sources)
    for verdict in verdicts:
        if verdict.verdict != "not tested" and mixed:  # a difference may then be the machines' kernels'
            verdict.kernel_warning = mixed
            verdict.sentence = verdict.sentence.rstrip(".") + "; " + mixed + "."
        verdict.headline = sentences.headline(verdict.record())
        if verdict.note:
            verdict.sentence = verdict.sentence.rstrip(".") + verdict.note + "."
    claims = pd.DataFrame([{name: getattr(v, name) for name in Verdict.columns()} for v in verdicts],
                          columns=Verdict.columns())
    return Findings(claims, comparisons, summary(verdicts, comparisons, sources))


def kernel_set(summary: str) -> frozenset:
    """The libraries and instruction sets of a kernel summary ("oneDNN AVX2; OpenBLAS Haswell"), as a set: the
    order a process listed them in says nothing."""
    return frozenset(part.strip() for part in str(summary).split(";") if part.strip())


def kernel_warning(sources: list):
    """"the runs of mxnet come from hosts whose CPU kernels differ (a: ...; b: ...)" where a framework's trained
    runs across the studies record more than one set of kernels (`trial.kernels`; compared as sets), naming the
    hosts; else None."""
    frames = [trained(s)[[c for c in ("framework", "env_kernel_isa", "env_host") if c in s.columns]] for s in sources
              if {"framework", "env_kernel_isa"} <= set(s.columns)]
    if not frames:
        return None
    runs = pd.concat(frames).dropna(subset=["env_kernel_isa"])
    runs = runs.assign(kernels=runs["env_kernel_isa"].map(kernel_set),
                       host=runs["env_host"].fillna("unknown host") if "env_host" in runs else "unknown host")
    mixed = {}
    for framework, part in runs.groupby("framework"):
        if part["kernels"].nunique() > 1:
            by_host = part.groupby("host")["kernels"].agg(lambda k: sorted({"; ".join(sorted(x)) for x in k}))
            mixed[framework] = "; ".join(f"{host}: {' / '.join(kinds)}" for host, kinds in by_host.items())
    if not mixed:
        return None
    listed = "; ".join(f"{fw} on {hosts}" for fw, hosts in sorted(mixed.items()))
    return (f"the runs of {', '.join(sorted(mixed))} come from hosts whose CPU kernels differ ({listed}): a "
            "difference may be the kernels', so compare runs of one host")


LIU = ("dataset transfer", "framework transfer", "robustness")  # Liu et al.'s claims among the registry's
REPLICATES = {"supported": "replicates", "not supported": "does not replicate", "not tested": "not tested here",
              "not testable": "not testable here"}


def summary(verdicts: list, comparisons: pd.DataFrame, sources: list) -> str:
    """"Liu et al. 2018, natively here (digits, 359 test images; ...): ...": which of the paper's claims replicate,
    with the scale of the data they rest on (the placebo's halves aside)."""
    native = {v.claim: v for v in verdicts if v.semantics == "native"}
    statements = {claim.name: claim.statement for claim in CLAIMS}
    said = [f"{statements[name]}: " + (REPLICATES.get(native[name].verdict, "inconclusive") if name in native
                                        else "not tested here") for name in LIU]
    rows = comparisons[comparisons[REGIME].eq("native") & comparisons["claim"].isin(LIU)
                       & comparisons["role"].ne("placebo") & comparisons["verdict"].ne("not compared")]
    datasets = sorted({str(d.get(k)) for d in rows["detail"] if isinstance(d, dict)
                       for k in ("dataset", "dataset_a", "dataset_b") if d.get(k)})
    sizes = _test_images(sources)
    scale = ", ".join(f"{d} ({sizes[d]} test images)" if d in sizes else d for d in datasets) or "no data"
    budgets = sorted({str(b) for b in rows["budget"].dropna()}) or ["epochs"]
    return (f"Liu et al. 2018, natively here ({scale}; at the published {' and '.join(budgets)}): "
            + "; ".join(said) + ".")


def _test_images(sources: list) -> dict:
    """{dataset: the size of the test set its models were scored on}, from the runs that recorded correctness."""
    sizes = {}
    for source in sources:
        if "test_correct" not in source or "dataset" not in source:
            continue
        packed = source[["dataset", "test_correct"]].dropna().drop_duplicates("dataset")
        for dataset, text in zip(packed["dataset"], packed["test_correct"]):
            vector = unpack(text)
            if vector is not None:
                sizes.setdefault(str(dataset), len(vector))
    return sizes
