#!/usr/bin/env bash
# The main job on the offline dataset mnist5k: Caffe's LeNet with momentum SGD, one trial per framework
# usable here, then a table of accuracy against cost. Results (JSON lines) go to results/main_job.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
out=results/main_job.jsonl
mkdir -p results && : > "$out.tmp"
for framework in $(.venv/bin/python -c "from sensitivity import frameworks as f; print(' '.join(n for n in f.FRAMEWORKS if f.probe(n)[1]))"); do
    echo "== $framework" >&2
    .venv/bin/sensitivity trial --framework "$framework" --dataset mnist5k --model lenet5 --batch-size 64 \
        --lr 0.05 --optimizer momentum --momentum 0.9 --epochs 5 --json | tail -n 1 >> "$out.tmp" || true
done
mv "$out.tmp" "$out"
.venv/bin/python - "$out" <<'PY'
import json, sys
print(f"{'framework':<12} {'status':<9} {'accuracy':>8} {'train s':>8} {'compile s':>9} {'samples/s':>9} {'RSS MB':>7}")
for line in open(sys.argv[1]):
    r = json.loads(line)
    f = lambda v, p: "-" if v is None else f"{v:.{p}f}"
    print(f"{r['spec']['framework']:<12} {r['status']:<9} {f(r['accuracy'], 3):>8} {f(r['train_time_s'], 1):>8} "
          f"{f(r['compile_time_s'], 2):>9} {f(r['throughput'], 0):>9} {f(r['peak_rss_mb'], 0):>7}")
print(f"results: {sys.argv[1]}")
PY
