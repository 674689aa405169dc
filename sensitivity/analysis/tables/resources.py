"""Resource use per framework: train time, throughput, CPU, peak memory and, where a GPU was used, its
utilisation, memory and energy. Medians over the trials that trained (timings on a shared machine are
noisy, and a median is not pulled by one slow run)."""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.table import BY_FRAMEWORK, NotEnoughData, defaults_of, grouped, trained, trials_table

RESOURCES = ("train_time_s", "throughput", "cpu_percent", "peak_rss_mb", "gpu_utilization_percent",
             "gpu_peak_memory_mb", "gpu_energy_j")
UNITS = {"train_time_s": "s", "throughput": "samples/s", "cpu_percent": "%", "peak_rss_mb": "MB",
         "gpu_utilization_percent": "%", "gpu_peak_memory_mb": "MB", "gpu_energy_j": "J"}
ALL_TRIALS, DEFAULTS = "all trials", "framework defaults"


def resource_use(table, keys=BY_FRAMEWORK, with_defaults: bool = True) -> pd.DataFrame:
    """One row per group of `keys` (framework and regime unless told; and `subset`: all trials, then
    framework defaults when the table marks them, unless `with_defaults` is False): n_trials, n_seeds and
    the median of each resource recorded (metrics never recorded are left out)."""
    table = trials_table(table)
    rows = trained(table)
    present = [m for m in RESOURCES if rows[m].notna().any()]
    if rows.empty or not present:
        raise NotEnoughData("resource figures need complete trials with a train time, throughput, CPU or "
                            "memory figure")
    subsets = [rows.assign(subset=ALL_TRIALS)]
    if with_defaults and defaults_of(rows).any():
        subsets.append(rows[defaults_of(rows)].assign(subset=DEFAULTS))
    return grouped(pd.concat(subsets), keys=(*keys, "subset") if with_defaults else keys,
                   **{m: (m, "median") for m in present})
