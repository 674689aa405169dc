"""The words every claim shares: a comparison's numbers and its sentence, the seeds that would settle it, a
claim's one-line headline, and what a claim that was not tested says. Each sentence names what was compared, the
regime, the budget, the seeds, the effect with its interval, and what would settle it where nothing is settled;
what only one claim says is in its own module."""
from __future__ import annotations

import re

from sensitivity.analysis.claims.base import none_if_missing


def signed(x) -> str:
    return f"{x:+.3f}"


def numbers(row: dict) -> str:
    """"-0.104 [-0.128, -0.080] (95% interval, with the test set's error; Holm p=0.003; 5 and 5 seeds)", or
    "-0.104 (2 and 2 seeds: no interval, no test)"."""
    if none_if_missing(row["low"]) is None:
        test = row.get("test") or "none"
        if test == "none" or none_if_missing(row.get("p")) is None:
            return f"{signed(row['estimate'])} ({row['n_a']} and {row['n_b']} seeds: no interval, no test)"
        p = (f"Holm p={row['p_holm']:.2g}" if none_if_missing(row.get("p_holm")) is not None else f"p={row['p']:.2g}")
        return (f"{signed(row['estimate'])} ({row['n_a']} and {row['n_b']} seeds, no spread or under 3: no "
                f"interval; {test} test over seeds, {p})")
    detail = row.get("detail") or {}
    error = {"welch+test-set": "with the test set's error", "paired bootstrap": "paired bootstrap over seeds and "
             "samples", "paired t": "paired by seed"}.get(detail.get("method"), "seeds' error only")
    p = (f"Holm p={row['p_holm']:.2g}" if none_if_missing(row.get("p_holm")) is not None else
         f"p={row['p']:.2g}" if none_if_missing(row.get("p")) is not None else "no test")
    return (f"{signed(row['estimate'])} [{signed(row['low'])}, {signed(row['high'])}] "
            f"(95% interval, {error}; {p}; {row['n_a']} and {row['n_b']} seeds)")


def needed(row: dict, margin: float) -> str:
    """How many seeds would settle an inconclusive comparison, planned with the SD's upper bound."""
    count, observed = none_if_missing(row["seeds_needed"]), none_if_missing(row.get("seeds_for_observed"))
    if count is None:
        text = (f"the spread is unknown, or the test set too small, to say how many seeds would detect {margin:g}")
    else:
        text = (f"about {int(count)} seeds per side would detect {margin:g} with 80% power (planned with the SD's "
                "80% upper bound)")
    if observed is not None and (count is None or observed < count):
        text += f" ({int(observed)} would detect one as large as this, {abs(row['estimate']):.3f})"
    return text


HEADLINE_LIMIT = 240  # characters of a claim's whole line, "  [verdict] claim: headline"
SHORT_UNITS = {"home advantage": "home advantage", "accuracy": "accuracy", "robust AUC": "robust AUC"}


def headline(row: dict) -> str:
    """A claim's one line after "[verdict] claim: ": the effect [interval] and its test, the seeds, the budget's
    definitions and the control's result; the claim's sentence holds the details."""
    verdict, parts = row["verdict"], []
    estimate = none_if_missing(row.get("estimate"))
    if estimate is not None:
        low = none_if_missing(row.get("low"))
        spread = f" [{signed(low)}, {signed(row['high'])}]" if low is not None else " (no interval)"
        unit = SHORT_UNITS.get(row.get("unit") or "", row.get("unit") or "")
        p = none_if_missing(row.get("p_holm"))
        p = p if p is not None else none_if_missing(row.get("p"))
        parts.append(f"{signed(estimate)}{spread} {unit}".rstrip() + (f", p={p:.2g}" if p is not None else ""))
    n_a, n_b = int(row.get("n_a") or 0), int(row.get("n_b") or 0)
    if n_a or n_b:
        parts.append(f"{n_a} seeds a side" if n_a == n_b else f"{n_a} and {n_b} seeds")
    if none_if_missing(row.get("budgets")):
        parts.append(row["budgets"])
    if none_if_missing(row.get("control")):
        parts.append(row["control"])
    if verdict == "not testable" and none_if_missing(row.get("seeds_needed")) is not None:
        parts.append(f"about {int(row['seeds_needed'])} seeds needed")
    elif verdict == "inconclusive" and none_if_missing(row.get("seeds_needed")) is not None:
        parts.append(f"about {int(row['seeds_needed'])} seeds a side would settle it")
    if verdict == "not tested":
        parts.append(_untested_reason(str(row.get("sentence") or "")))
    if none_if_missing(row.get("kernel_warning")):
        parts.append("CPU kernels differ between hosts")
    room = HEADLINE_LIMIT - len(f"  [{verdict}] {row['claim']}: ")
    text = "; ".join(parts) or "see the details"
    return text if len(text) <= room else text[:room - 1].rstrip() + "…"


def _untested_reason(sentence: str) -> str:
    """The reason a claim's sentence gives for "not tested", without the command (the details keep it)."""
    found = re.search(r"[Nn]ot tested[^:]*: (.*?)(?: \(to test it|\.$|$)", sentence)
    return found.group(1) if found else "nothing in these studies tests it"


def not_testable(row: dict) -> str:
    """"not testable with 5 seeds (about 6 needed)": the seeds' test cannot reach significance."""
    seeds = min(int(row["n_a"]), int(row["n_b"])) if row["n_b"] else int(row["n_a"])
    needed_ = none_if_missing(row.get("seeds_needed"))
    about = f" (about {int(needed_)} needed)" if needed_ is not None else ""
    return f"not testable with {seeds} seeds{about}"


def untrained(detail: dict, side: str) -> int:
    """Runs of side "a" or "b" of a comparison's detail that did not train: diverged or collapsed."""
    return int(detail.get(f"diverged_{side}") or 0) + int(detail.get(f"collapsed_{side}") or 0)


def _diverged(detail: dict) -> str:
    if not detail or not (untrained(detail, "a") or untrained(detail, "b")):
        return ""
    p = none_if_missing(detail.get("p_diverged"))
    words = ("diverged" if not (detail.get("collapsed_a") or detail.get("collapsed_b")) else
             "did not train (diverged or collapsed at chance)")
    return (f"; {words} {untrained(detail, 'a')} of {detail['runs_a']} against {untrained(detail, 'b')} of "
            f"{detail['runs_b']} (Fisher p={p:.2g}), accuracy over converged runs" if p is not None else "")


def comparison(row: dict, margin: float, claim) -> str:
    """One sentence per comparison of `claim`: what was compared, the difference with its interval, the verdict,
    and the claim's own words (`comparison_words`)."""
    verdict, detail = row["verdict"], row["detail"] or {}
    if verdict == "not compared":
        if not str(detail.get("note", "")).startswith("clean accuracies"):
            return f"{row['label']}: not compared: {detail.get('note') or 'nothing to compare'}."
        return (f"{row['label']}: not compared, their {detail['note']}, so a difference under attack would reflect "
                "training, not the framework.")
    if verdict == "described":
        return f"On the frontier: {row['subject'] or 'no framework'}."
    if verdict == "cut budget":
        ending = f"not tested: cut to {row['budget_scale']:.2g} of the published epochs"
    elif verdict == "inconclusive":
        ending = "inconclusive: " + needed(row, margin)
    elif verdict == "not testable":
        ending = not_testable(row)
    else:
        ending = {"lower": "lower", "higher": "higher", "equivalent": f"equivalent within +-{margin:g} (TOST)"}[verdict]
    extra, after = claim.comparison_words(row)
    ending += after
    return f"{row['label']}: {numbers(row)}{extra}{_diverged(detail)}; {ending}."


def untested(claim, regime: str) -> str:
    return f"{regime.capitalize()}: {claim.question} is not tested: the studies hold no comparison for it " \
           f"(to test it: {claim.would_test})."


def cut(claim, regime: str, scale) -> str:
    shown = f"{scale:.2g}" if scale is not None else "below 1"
    return (f"{regime.capitalize()}: {claim.question} is not tested at the published budget (scale {shown}): every "
            "comparison ran cut below its published epochs, so it measures early learning; rerun without "
            "--budget-epochs or --budget-fraction to test it.")


