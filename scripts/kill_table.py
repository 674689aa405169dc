"""Kill the sweep driver with SIGKILL at random moments, rerun it each time, and print what the study holds.

Each row is one study of N trials (digits, the MLP, a small space) swept with `--parallel 2`. The driver is
killed K times, at a moment drawn from three kinds: start-up (0.5 to 8 s after launch), mid-trial (0 to 2 s
after a trial of the run is RUNNING) and right after a completion (as soon as one more trial is COMPLETE);
each kill is followed by a rerun of the same command, and the last run goes to its end. Printed per row:
final trials, COMPLETE, orphans retried once (of those that drew a configuration), duplicates (a
configuration and seed run to the end twice), RUNNING left, trials lost (COMPLETE before a kill, not
after), and the trials `studies rebuild` restores from the study's trial log into a new file (N expected).
Exit 1 if anything is lost, duplicated or left RUNNING, an orphan with a configuration is not retried
exactly once, or the final run fails.

    .venv/bin/python scripts/kill_table.py --rows 10:3,40:17 [--seed 1] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path



def space(study: str) -> str:
    """A small space of digits and the MLP, 3 epochs, two seeds (YAML reads JSON)."""
    return json.dumps({"study": study, "dataset": "digits", "model": "mlp", "frameworks": ["torch"],
                       "parameters": {"lr": {"type": "float", "low": 0.01, "high": 0.3, "log": True},
                                      "batch_size": {"type": "categorical", "choices": [32, 64]}},
                       "fixed": {"epochs": 3, "optimizer": "momentum", "momentum": 0.9},
                       "objectives": [{"metric": "val_accuracy", "direction": "maximize"}], "seeds": 2})


def trials(url: str, study: str) -> list:
    import optuna
    try:
        return optuna.load_study(study_name=study, storage=url).get_trials(deepcopy=False)
    except Exception:  # not created yet, or busy
        return []


def complete(ts) -> set:
    from optuna.trial import TrialState
    return {t.number for t in ts if t.state == TrialState.COMPLETE}


def kill_once(args, workdir: Path, url: str, study: str, rng: random.Random, seen: set) -> str | None:
    """Start a driver, kill it at a random moment; the moment's kind, or None when it ended by itself."""
    from optuna.trial import TrialState
    driver = subprocess.Popen(args, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kind = rng.choice(("start-up", "mid-trial", "after completion"))
    at_launch = trials(url, study)
    started, before, newest = time.monotonic(), len(complete(at_launch)), max((t.number for t in at_launch), default=-1)
    delay = rng.uniform(0.5, 8) if kind == "start-up" else rng.uniform(0, 2)
    while driver.poll() is None:
        if time.monotonic() - started > 600:
            break
        if kind == "start-up":
            if time.monotonic() - started >= delay:
                break
            time.sleep(0.1)
            continue
        ts = trials(url, study)
        seen |= complete(ts)
        if kind == "mid-trial" and any(t.state == TrialState.RUNNING and t.number > newest for t in ts):
            time.sleep(delay)
            break
        if kind == "after completion" and len(complete(ts)) > before:
            break
        time.sleep(0.2)
    if driver.poll() is not None:
        return None
    seen |= complete(trials(url, study))
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    return kind


def row(n: int, kills: int, workdir: Path, rng: random.Random) -> dict:
    from optuna.trial import TrialState

    from sensitivity.studies.records import is_final
    study = f"kill-{n}-{kills}-{os.getpid()}"
    space_file = workdir / f"{study}.yaml"
    space_file.write_text(space(study))
    url = f"sqlite:///{workdir}/results/optuna.db"
    args = [sys.executable, "-m", "sensitivity.cli", "sweep", str(space_file), "--trials", str(n), "--parallel", "2",
            "--no-progress"]
    seen, kinds = set(), Counter()
    for _ in range(kills):
        kind = kill_once(args, workdir, url, study, rng, seen)
        if kind is None:
            break
        kinds[kind] += 1
    last = subprocess.run(args, cwd=workdir, capture_output=True, text=True, timeout=1800)
    ts = trials(url, study)
    final = [t for t in ts if is_final(t)]
    from sensitivity.sweep.recovery import configuration
    orphans = [t for t in ts if t.user_attrs.get("orphaned")]
    drew_none = [t for t in orphans if configuration(t) is None]  # killed after ask, before its parameters
    orphans = [t for t in orphans if configuration(t) is not None]
    retries = Counter(t.user_attrs.get("retry_of") for t in ts if "retry_of" in t.user_attrs
                      and not t.user_attrs.get("surplus"))
    runs = Counter((t.user_attrs.get("config_id"), t.user_attrs.get("seed")) for t in final)
    now_complete = complete(ts)
    from sensitivity.sweep.trial_log import log_path, rebuild
    _, rebuilt = rebuild(workdir / log_path(study), f"sqlite:///{workdir}/rebuilt-{study}.db")
    return {"rebuilt": rebuilt, "N": n, "kills": sum(kinds.values()), "kinds": dict(kinds), "final": len(final),
            "complete": sum(t.state == TrialState.COMPLETE for t in final),
            "orphans": len(orphans), "drew_none": len(drew_none),
            "retried_once": sum(retries[t.number] == 1 for t in orphans),
            "duplicates": sum(c - 1 for c in runs.values() if c > 1),
            "running": sum(t.state == TrialState.RUNNING for t in ts), "lost": len(seen - now_complete),
            "last_rc": last.returncode, "last_err": last.stderr.strip().splitlines()[-1:] if last.returncode else []}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="10:3,40:17", help="N:KILLS,... (default 10:3,40:17: 20 kills)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workdir", help="default: a new temporary folder")
    a = p.parse_args()
    rng = random.Random(a.seed)
    workdir = Path(a.workdir or tempfile.mkdtemp(prefix="kill-table-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"workdir {workdir}", file=sys.stderr)
    rows = []
    for spec in a.rows.split(","):
        n, kills = (int(x) for x in spec.split(":"))
        rows.append(row(n, kills, workdir, rng))
        print(rows[-1], file=sys.stderr, flush=True)
    print("| run | final trials | COMPLETE | orphans retried once | duplicates | RUNNING left | lost "
          "| rebuilt from log |")
    print("|---|---|---|---|---|---|---|---|")
    bad = False
    for r in rows:
        print(f"| N={r['N']}, {r['kills']} kills ({', '.join(f'{v} {k}' for k, v in r['kinds'].items())}) | "
              f"{r['final']} | {r['complete']} | {r['retried_once']} of {r['orphans']}"
              f"{f' ({d} drew no configuration)' if (d := r['drew_none']) else ''} | {r['duplicates']} | "
              f"{r['running']} | {r['lost']} | {r['rebuilt']} |")
        bad |= (r["final"] != r["N"] or r["rebuilt"] != r["N"] or r["duplicates"] or r["running"] or r["lost"]
                or r["retried_once"] != r["orphans"] or r["last_rc"] != 0)
        if r["last_rc"]:
            print(f"final run of N={r['N']} exited {r['last_rc']}: {r['last_err']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
