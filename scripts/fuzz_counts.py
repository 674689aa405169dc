"""Run the fuzz suite (tests/fuzz) and print its counts per input kind: cases, exit codes, tracebacks, cases
not refused in one line, files created, cases that wrote before their refusal, hangs (past their time), and the
tests that failed, if any. Kinds: the hostile inputs (space, cli, prototxt, dataset, edge, environment, storage,
rebuild, yaml), bounded waits (waits), and faults met by a running sweep (signals, full disk: a fault there ends
in its one line, exit 143 or 130 for a signal, 1, or 0 where the study already held N). `--json FILE` also keeps
every case's one-line message there.

    .venv/bin/python scripts/fuzz_counts.py [--json results/fuzz.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the counts and every case's message here")
    args = parser.parse_args()
    out = Path(args.json) if args.json else Path(tempfile.mkdtemp()) / "fuzz.json"
    env = {**os.environ, "SENSITIVITY_FUZZ_SUMMARY": str(out.resolve())}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "tests/fuzz"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    if not out.exists():
        print(run.stdout[-3000:] + run.stderr[-3000:], file=sys.stderr)
        return 1
    counts = json.loads(out.read_text())["counts"]
    print(f"{'kind':<11} {'cases':>6}  {'exit codes':<24} {'tracebacks':>10} {'not one line':>12} "
          f"{'files created':>13} {'writes before refusal':>21} {'hangs':>5}")
    for kind, row in counts.items():
        exits = ", ".join(f"{code}: {n}" for code, n in sorted(row["exit_codes"].items()))
        print(f"{kind:<11} {row['cases']:>6}  {exits:<24} {row['tracebacks']:>10} {row['not_one_line']:>12} "
              f"{row['files_created']:>13} {row['writes_before_refusal']:>21} {row['hangs']:>5}")
    lines = run.stdout.strip().splitlines()
    for line in lines:
        if line.startswith(("FAILED", "ERROR")):  # which tests, where some failed
            print(line)
    print(lines[-1])
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
