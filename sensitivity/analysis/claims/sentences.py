"""The findings in words: one sentence per comparison and per claim, made from the numbers alone (`findings`
computes them). Every sentence names what was compared, the regime, the budget, the seeds, the effect with
its interval, and what would settle it where nothing is settled."""
from __future__ import annotations

import re

import pandas as pd

from sensitivity.analysis.claims.comparisons import none_if_missing

REGIME = "semantics"
CLAIMS = {"dataset transfer": "defaults do not transfer across datasets",
          "framework transfer": "defaults do not transfer across frameworks",
          "robustness": "frameworks differ in robustness",
          "runtime-accuracy": "more accuracy costs more runtime"}
QUESTIONS = {"dataset transfer": "whether defaults transfer across datasets",
             "framework transfer": "whether defaults transfer across frameworks",
             "robustness": "whether frameworks differ in robustness",
             "runtime-accuracy": "whether more accuracy costs more runtime"}
WOULD_TEST = {"dataset transfer": "sensitivity crossover --framework F --datasets A,B, with a published default or "
                                  "--tuned DATASET=SWEEP_STUDY for each side",
              "framework transfer": "sensitivity transfer on two or more frameworks",
              "robustness": "sensitivity robustness of the kept models of two or more frameworks (sensitivity "
                            "transfer --keep-checkpoints)"}


def _signed(x) -> str:
    return f"{x:+.3f}"


def numbers(row: dict) -> str:
    """"-0.104 [-0.128, -0.080] (95% interval, with the test set's error; Holm p=0.003; 5 and 5 seeds)", or
    "-0.104 (2 and 2 seeds: no interval, no test)"."""
    if none_if_missing(row["low"]) is None:
        test = row.get("test") or "none"
        if test == "none" or none_if_missing(row.get("p")) is None:
            return f"{_signed(row['estimate'])} ({row['n_a']} and {row['n_b']} seeds: no interval, no test)"
        p = (f"Holm p={row['p_holm']:.2g}" if none_if_missing(row.get("p_holm")) is not None else f"p={row['p']:.2g}")
        return (f"{_signed(row['estimate'])} ({row['n_a']} and {row['n_b']} seeds, no spread or under 3: no "
                f"interval; {test} test over seeds, {p})")
    detail = row.get("detail") or {}
    error = {"welch+test-set": "with the test set's error", "paired bootstrap": "paired bootstrap over seeds and "
             "samples"}.get(detail.get("method"), "seeds' error only")
    p = (f"Holm p={row['p_holm']:.2g}" if none_if_missing(row.get("p_holm")) is not None else
         f"p={row['p']:.2g}" if none_if_missing(row.get("p")) is not None else "no test")
    return (f"{_signed(row['estimate'])} [{_signed(row['low'])}, {_signed(row['high'])}] "
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
        spread = f" [{_signed(low)}, {_signed(row['high'])}]" if low is not None else " (no interval)"
        unit = SHORT_UNITS.get(row.get("unit") or "", row.get("unit") or "")
        p = none_if_missing(row.get("p_holm"))
        p = p if p is not None else none_if_missing(row.get("p"))
        parts.append(f"{_signed(estimate)}{spread} {unit}".rstrip() + (f", p={p:.2g}" if p is not None else ""))
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


def _diverged(detail: dict) -> str:
    if not detail or not (detail.get("diverged_a") or detail.get("diverged_b")):
        return ""
    p = none_if_missing(detail.get("p_diverged"))
    return (f"; diverged {detail['diverged_a']} of {detail['runs_a']} against {detail['diverged_b']} of "
            f"{detail['runs_b']} (Fisher p={p:.2g}), accuracy over converged runs" if p is not None else "")


def comparison(row: dict, margin: float) -> str:
    """One sentence per comparison: what was compared, the difference with its interval, the verdict."""
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
    extra = ""
    if row["claim"] == "runtime-accuracy":
        extra = f", at {detail['time_ratio']:.2f}x the train time"
    if row["claim"] == "dataset transfer":
        extra = (f" (tuned for {detail['dataset_a']}: {detail['config_a']}; for {detail['dataset_b']}: "
                 f"{detail['config_b']}){_time(detail)}{crossover_divergence(detail)}")
        if detail.get("vacuous"):
            ending += "; vacuous: both halves' tuned configurations are the same"
    return f"{row['label']}: {numbers(row)}{extra}{_diverged(detail)}; {ending}."


def crossover_divergence(detail: dict) -> str:
    """"; on mnist5k the configuration tuned for digits diverged in 5 of 5 runs against 0 of 5 (Fisher p=0.0079):
    its accuracy there is the chance level of the models it left"."""
    parts = []
    for item in detail.get("divergence") or ():
        text = (f"on {item['dataset']} the configuration tuned for {item['visitor']} diverged in "
                f"{item['visitor_diverged']} of {item['visitor_runs']} runs against {item['home_diverged']} of "
                f"{item['home_runs']}")
        if none_if_missing(item.get("p")) is not None:
            text += f" (Fisher p={item['p']:.2g})"
        if item["all_diverged"]:
            tuned = " and ".join(f"the one tuned for {name}" for name in item["all_diverged"])
            text += f": every run of {tuned} diverged there, so that side has no accuracy"
        parts.append(text)
    if detail.get("summed") in (False,) and detail.get("carried_by"):
        parts.append(f"the home advantage is not summed: its estimate is the side of {detail['carried_by']} alone "
                     "(home minus visitor there), the other side's evidence is its divergence")
    elif detail.get("summed") in (False,):
        parts.append("neither side has accuracies on both configurations: no home advantage, divergence only")
    return "".join(f"; {part}" for part in parts)


def _time(detail: dict) -> str:
    if none_if_missing(detail.get("time_ratio")) is None:
        cells = "; ".join(f"{name} {text}" for name, text in (detail.get("cells") or {}).items())
        return f"; no train-time ratio (a cell has no converged run): test accuracy and train time, {cells}"
    low = none_if_missing(detail.get("time_low"))
    spread = f" [{low:.2f}, {detail['time_high']:.2f}]" if low is not None else ""
    return f"; each dataset's own configuration took {detail['time_ratio']:.2f}x{spread} the other's train time there"


def untested(regime: str, claim: str) -> str:
    return f"{regime.capitalize()}: {QUESTIONS[claim]} is not tested: the studies hold no comparison for it " \
           f"(to test it: {WOULD_TEST[claim]})."


def cut(regime: str, claim: str, scale) -> str:
    shown = f"{scale:.2g}" if scale is not None else "below 1"
    return (f"{regime.capitalize()}: {QUESTIONS[claim]} is not tested at the published budget (scale {shown}): every "
            "comparison ran cut below its published epochs, so it measures early learning; rerun without "
            "--budget-epochs or --budget-fraction to test it.")


def _pooled(pooled, margin: float, p_tost, how: str = "random-effects mean") -> str:
    if pooled.low is None:
        return f"{_signed(pooled.estimate)} (no interval)"
    spread = f"; between-comparison SD {pooled.tau:.3f}" if pooled.k > 1 else ""
    tost = f", equivalence within +-{margin:g}: TOST p={p_tost:.2g}" if p_tost is not None and p_tost < 0.5 else ""
    return (f"{_signed(pooled.estimate)} [{_signed(pooled.low)}, {_signed(pooled.high)}] (95% interval"
            f"{', ' + how + ' of ' + str(pooled.k) if pooled.k > 1 else ''}{spread}; p={pooled.p:.2g}{tost})")


SHARED_ARMS = "mean, as one contrast of the arms (a home arm shared by pairs counted once),"


def transfer_claim(regime: str, claim: str, verdict: str, pooled, p_tost, margin: float, counted, differ, head: dict,
                   placebos, control, mixed: bool = False) -> str:
    lead = {"supported": f"{CLAIMS[claim]} here", "not supported": f"defaults transfer within +-{margin:g} here",
            "inconclusive": f"not settled {QUESTIONS[claim]}"}[verdict]
    if mixed:
        lead = (f"{QUESTIONS[claim]} depends on the comparison: on average within +-{margin:g}, but "
                f"{len(differ)} of {len(counted)} differ after Holm")
    fewest, most = int(counted[["n_a", "n_b"]].min().min()), int(counted[["n_a", "n_b"]].max().max())
    seeds = f"{fewest} seeds a cell" if fewest == most else f"{fewest} to {most} seeds a cell"
    if claim == "dataset transfer":
        detail = head["detail"]
        what = (f"over {len(counted)} crossover{'s' if len(counted) != 1 else ''} at the published budget "
                f"(budget scale 1.0; {seeds}), the configuration tuned for a dataset against the other's there, "
                f"summed over both datasets where both have accuracies (home advantage): "
                f"{_pooled(pooled, margin, p_tost)}; the largest, "
                f"{head['label']} "
                f"(tuned for {detail['dataset_a']}: {detail['config_a']}; for {detail['dataset_b']}: "
                f"{detail['config_b']}): {numbers(head)}{_time(detail)}{crossover_divergence(detail)}")
    else:
        defaults = counted["label"].str.extract(r"'s (\S+) on")[0].nunique()
        what = (f"over {len(counted)} pairs ({defaults} default{'s' if defaults != 1 else ''} each moved from its home "
                f"framework to another, at the published budget (budget scale 1.0), {seeds}), moved minus at home: "
                f"{_pooled(pooled, margin, p_tost, SHARED_ARMS)}; {len(differ)} of {len(counted)} pairs differ after "
                f"Holm; the "
                f"largest loss, {head['label']}: {numbers(head)}")
        if control is not None and control.k:
            what += (f"; the canonical control (the same formulas in every framework): "
                     f"{_pooled(control, margin, None, SHARED_ARMS)}")
        if regime == "canonical":
            what += "; this is the control regime: with the same formulas, what remains is numerics"
    ending = f"; {needed(head, margin)}" if verdict == "inconclusive" and not mixed else ""
    return f"{regime.capitalize()}: {lead}: {what}{ending}{placebo(placebos, margin)}."


def placebo(rows, margin: float) -> str:
    """". Placebo (...): its home advantage and what it shows", or "" without one."""
    if rows is None or rows.empty:
        return ""
    row = rows.iloc[0].to_dict()
    tost = f" (TOST p={row['p_tost']:.2g})" if none_if_missing(row.get("p_tost")) is not None else ""
    state = {"equivalent": f"no home advantage within +-{margin:g}{tost}, as it must be",
             "lower": "a home advantage where none can exist: the design is not to be trusted here",
             "higher": "a home advantage where none can exist: the design is not to be trusted here",
             "inconclusive": "not shown equivalent to 0 (too few seeds or test samples)",
             "cut budget": "cut below its budget"}.get(row["verdict"], row["verdict"])
    if row["detail"].get("vacuous"):
        state += "; vacuous: both halves' tuned configurations are the same"
    held = " (so the claim is not called supported)" if row["verdict"] in ("lower", "higher") else ""
    return f". Placebo ({row['label']}): {numbers(row)}: {state}{held}"


def not_compared(regime: str, claim: str, rows) -> str:
    if not len(rows):
        return untested(regime, claim)
    example = f" (e.g. {rows.iloc[0]['label']}: {rows.iloc[0]['detail']['note']})"
    return (f"{regime.capitalize()}: {QUESTIONS[claim]} is not tested: every pair of frameworks differs in clean "
            f"accuracy by more than the margin{example}.")


def _robustness_pair(head: dict) -> str:
    """The headline pair: frameworks, dataset, configuration, state, clean accuracies, attack, grid and areas."""
    d = head["detail"]
    state = (f"at matched clean accuracy (each model's checkpoint nearest the target validation accuracy "
             f"{d['target']:.3f})" if d["role"] == "matched" else "as trained (no checkpoints kept: not matched)")
    source = ("the seed's surrogate (the same examples for both)" if d.get("surrogate")
              else "the other frameworks' models of the same seed")
    attack = (f"{d['attack'].upper()} examples made on {source}"
              if d["kind"] == "transfer" else f"white-box {d['attack'].upper()} (no transferred examples)")
    grid = ", ".join(f"{e:g}" for e in (d.get("eps") or [])[1:])
    models = {"own": "each framework's own default", "config": f"the same configuration ({d.get('default')})",
              "all": "all models"}.get(d["set_kind"], d["set_kind"])
    return (f"{d['framework_a']} against {d['framework_b']} on {d['dataset']}, {models} {state}, clean test "
            f"accuracy {d['clean_a']:.3f} against {d['clean_b']:.3f}; {attack}, at eps {grid} (the pre-registered "
            f"grid); area under the robust-accuracy curve on the {d['shared']:.0f} test samples both classify "
            f"correctly: {d['auc_a']:.3f} against {d['auc_b']:.3f}, difference {numbers(head)}")


def _tally(tested) -> str:
    counts = tested["verdict"].value_counts()
    return (f"{len(tested)} same-configuration comparison{'s' if len(tested) != 1 else ''}: "
            + ", ".join(f"{k} {name}" for name, k in counts.items()))


def robustness_native(regime: str, verdict: str, head: dict, tested, excess, beside, effect: float,
                      why: str = "") -> str:
    """The robustness claim in a regime of frameworks as shipped: the largest native difference of the same
    configuration on two frameworks, and its excess over the canonical control on the same pair."""
    lead = {"supported": f"{CLAIMS['robustness']} here, beyond the canonical control",
            "not supported": f"frameworks are as robust within +-{effect:g} of robust AUC, beyond the control",
            "inconclusive": f"not settled {QUESTIONS['robustness']}"}[verdict]
    text = f"{regime.capitalize()}: {lead}: {_robustness_pair(head)} ({_tally(tested)})"
    if excess is not None:
        low = none_if_missing(excess.get("low"))
        spread = f" [{_signed(low)}, {_signed(excess['high'])}]" if low is not None else " (no interval)"
        p = none_if_missing(excess.get("p_holm"))
        text += (f"; native minus the canonical control on the same pair ({excess['label']}): "
                 f"{_signed(excess['estimate'])}{spread}" + (f", Holm p={p:.2g}" if p is not None else "")
                 + f" (native {_signed(excess['native_estimate'])}, canonical {_signed(excess['control_estimate'])})")
    if why:
        text += f"; {why}"
    return text + _beside(beside, head)


def robustness_control(verdict: str, head: dict, tested, differ, beside) -> str:
    """The canonical regime's robustness: a check of the pipeline, since its frameworks are identical."""
    state = ("held: identical models, as they must be" if verdict == "control held" else
             "failed: pairs differ where frameworks are identical by construction, so the pipeline (attacks, "
             "matching, seeds) is not to be trusted for a native verdict")
    return (f"Canonical: the control (the same formulas and initial weights on every framework, so the frameworks "
            f"are identical by construction; a check of the pipeline, never a finding about frameworks) {state}: "
            f"{len(differ)} of {len(tested)} same-configuration pairs differ after Holm; the largest, "
            f"{_robustness_pair(head)}" + _beside(beside, head))


def _beside(beside, head: dict) -> str:
    """"; beside it: as trained, ...; white-box, ...; each framework's own default, ..." (tests unadjusted), in
    the claim's sets and kinds."""
    if beside is None or beside.empty:
        return ""
    d = head["detail"]
    details = beside["detail"]
    config = details.map(lambda x: x["set_kind"] != "own")
    groups = [("as trained", config & details.map(lambda x: x["role"] == "published" and x["kind"] == d["kind"])),
              ("white-box", config & details.map(lambda x: x["role"] == d["role"] and x["kind"] == "white-box")),
              ("each framework's own default (the defaults' effect: configuration and framework together)",
               ~config & details.map(lambda x: x["kind"] == d["kind"] and x["role"] == d["role"]))]
    parts = []
    for name, chosen in groups:
        rows = beside[chosen.astype(bool)]
        if rows.empty or (name == "white-box" and d["kind"] == "white-box"):
            continue
        top = rows.loc[rows["estimate"].abs().idxmax()]
        below = int((_numeric(rows["p"]) < 0.05).sum())
        parts.append(f"{name}, {below} of {len(rows)} pair{'s' if len(rows) != 1 else ''} with p < 0.05 "
                     f"unadjusted, the largest {top['label']} {_signed(top['estimate'])}")
    return "; beside it: " + "; ".join(parts) if parts else ""


def _numeric(values):
    return pd.to_numeric(values, errors="coerce")


def checks(frame) -> str:
    """"; the checks held on all 30 attacked models (...)", or what failed, of `robustness_checks` rows."""
    if frame is None or len(frame) == 0:
        return ""
    failed = frame[frame["failed"].map(bool)]
    zero = _numeric(frame["zero_gradient"]).max()
    floor = _numeric(frame["accuracy_at_check"]).max()
    held = (f"zero input gradient on at most {zero:.1%} of samples; PGD no weaker than FGSM; accuracy at eps "
            f"{frame['check_eps'].max():g} at most {floor:.3f}")
    if failed.empty:
        return f"; the attack checks held on all {len(frame)} attacked models ({held})"
    first = failed.iloc[0]
    where = f"trial {first['trial']}" + (f" after epoch {first['epoch']}" if first["epoch"] == first["epoch"]
                                         and first["epoch"] is not None else "")
    return (f"; attack checks failed on {len(failed)} of {len(frame)} attacked models (e.g. {first['framework']} "
            f"{where}: {first['failed'][0]}), so their robustness may be overstated")


def runtime_claim(on: str, verdict: str, head: dict, judged: str, effect: float) -> str:
    """The runtime claim: the deciding pair's accuracy difference and train-time ratio, and what they show."""
    d = head["detail"]
    low, high = none_if_missing(d.get("time_low")), none_if_missing(d.get("time_high"))
    ratio = f"{d['time_ratio']:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if low is not None else " (no interval)")
    top, other = head["subject"], head["reference"]
    ending = {"costs": f"{top} buys its accuracy with runtime: more accurate, and its train-time ratio's interval "
                       "lies above 1",
              "faster": f"{top} is more accurate and faster: no trade-off",
              "no cost": f"{other} is as accurate within +-{effect:g}: no accuracy to pay for",
              "open": "inconclusive: " + (needed(head, effect) if head["verdict"] == "inconclusive" else
                                         "more accurate, but whether it is slower is not settled (the ratio's "
                                         "interval spans 1)")}[judged]
    if d.get("timed") == "contended" and judged == "open" and head["verdict"] == "higher":
        ending = ("inconclusive: more accurate, but its train times come from the sweep's trials running side by "
                  "side (contended), which stretch frameworks unequally; the cost is judged on times measured "
                  "alone only (sensitivity timing SWEEP)")
    if d.get("fixed_cost_dominated"):
        ending += (f"; a mean train time below {d['fixed_cost_floor_s']:g} s is dominated by fixed costs (start of "
                   "epochs, timers), so the ratio says little of the frameworks' speed")
    lead = {"supported": "more accuracy costs more runtime here",
            "not supported": "more accuracy does not cost runtime here",
            "inconclusive": "not settled whether more accuracy costs more runtime"}[verdict]
    chosen = ""
    if d.get("chooser") == "val_accuracy":
        chosen = f" on validation accuracy ({d['chosen_a']:.3f} against {d['chosen_b']:.3f})"
    if d.get("diverged_a") or d.get("diverged_b"):
        chosen += (f" (over converged runs; diverged, left out: {d.get('diverged_a', 0)} of {top}'s, "
                   f"{d.get('diverged_b', 0)} of {other}'s)")
    timed = {"alone": "timed alone", "contended": "contended: the sweep's, side by side"}.get(d.get("timed"), "")
    return (f"{on}; {lead}: the best configuration of {top}, the most accurate framework{chosen}, against that of "
            f"{other}: test accuracy {d['accuracy_a']:.3f} against {d['accuracy_b']:.3f}, {numbers(head)}; {top}'s "
            f"train time {ratio} {other}'s ({timed}); {ending}")
