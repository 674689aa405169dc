#!/usr/bin/env bash
# The main job, offline, on mnist5k and digits: a small complete study, then its report. Every trial runs
# native (each framework's own optimizers, schedulers and initialisers; docs/semantics.md).
#   1. transfer: every framework's default (search_spaces/defaults.yaml) on every framework and dataset,
#      three seeds (the fewest with an interval and a test), cut to one epoch (recorded as budget_scale); each framework's own defaults are among them;
#   2. a short sweep of search_spaces/mnist5k.yaml, three seeds per configuration, the defaults first;
#   3. robustness: FGSM and PGD against each framework's own default models, white-box and transferred;
#   4. ablation: from the first framework's native set-up to the second's, one semantics knob at a time
#      (LeNet on mnist5k, momentum 0.9, lr 0.05, batch 64, 3 epochs, 3 seeds per point);
#   5. the report of the sweep, with the transfer matrix, robustness and ablation path from their studies,
#      its findings printed, and a check that its figures render in Chromium (without Chromium that check
#      fails the job, unless SENSITIVITY_SKIP_BROWSER_CHECK=1 skips it).
# Each sweep shows a progress bar on stderr.
# Usage: scripts/main_job.sh [--frameworks torch,tensorflow,mxnet | all] [--trials N (default: the defaults + 12)]
# Results: the studies in results/optuna.db, the report at results/main-report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
frameworks=torch,tensorflow,mxnet
trials=  # default: the defaults of the frameworks on mnist5k, then 4 sampled configurations, all x 3 seeds
while [ $# -gt 0 ]; do
    case "$1" in
        --frameworks) frameworks="$2"; shift 2 ;;
        --trials) trials="$2"; shift 2 ;;
        *) echo "scripts/main_job.sh: unknown option $1; allowed: --frameworks LIST|all, --trials N" >&2; exit 2 ;;
    esac
done
sensitivity=.venv/bin/sensitivity
if [ "$frameworks" = all ]; then
    frameworks=$(.venv/bin/python -c "from sensitivity import frameworks as f; print(','.join(n for n in f.FRAMEWORKS if f.probe(n)[1]))")
fi
if [ -z "$trials" ]; then  # 51 for torch,tensorflow,mxnet: 13 defaults and 4 configurations, x 3 seeds
    trials=$(.venv/bin/python -c "import sys; from sensitivity.spaces import load_space
from sensitivity.sweep.plans import default_plan
space = load_space('search_spaces/mnist5k.yaml', frameworks=sys.argv[1].split(','), seeds=3)
print(len(default_plan(space, space.frameworks, [space.dataset], 3, space.fixed['epochs'])) + 4 * 3)" "$frameworks")
fi
tag=$(echo "$frameworks" | tr ',' '-')
transfer="main-transfer-$tag" sweep="main-sweep-$tag" ablation="main-ablation-$tag"
first=$(echo "$frameworks" | cut -d, -f1) second=$(echo "$frameworks" | cut -d, -f2)
echo "== frameworks: $frameworks" >&2

echo "== 1/5 defaults and their transfer between frameworks and datasets" >&2
$sensitivity transfer --frameworks "$frameworks" --datasets mnist5k,digits --seeds 3 --budget-epochs 1 \
    --keep-weights --parallel 2 --study "$transfer"
echo "== 2/5 a short sweep on mnist5k, the defaults first" >&2
$sensitivity sweep search_spaces/mnist5k.yaml --frameworks "$frameworks" --seeds 3 --trials "$trials" \
    --with-defaults --parallel 2 --sampler random --seed 0 --study "$sweep"
echo "== 3/5 robustness of each framework's own defaults" >&2
$sensitivity robustness "$transfer" --defaults-only --samples 300
if [ "$first" != "$second" ]; then
    echo "== 4/5 ablation from $first native to $second native on mnist5k" >&2
    $sensitivity ablate --from "$first:native" --to "$second:native" --dataset mnist5k --model lenet5 \
        --batch-size 64 --lr 0.05 --optimizer momentum --momentum 0.9 --epochs 3 --seeds 3 --parallel 2 \
        --study "$ablation"
    with_ablation=(--with-study "$ablation")
else
    echo "== 4/5 ablation: one framework only, skipped" >&2
    with_ablation=()
fi
echo "== 5/5 report" >&2
$sensitivity report "$sweep" --with-study "$transfer" "${with_ablation[@]}" --out results/main-report.html
$sensitivity findings "$sweep" --with-study "$transfer"  # the report's first section, as text
.venv/bin/python -m sensitivity.analysis.browser results/main-report.html
