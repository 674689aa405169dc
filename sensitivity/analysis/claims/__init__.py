"""The claims of the benchmarks, each judged from the studies' data: comparisons, verdicts and their sentences."""
