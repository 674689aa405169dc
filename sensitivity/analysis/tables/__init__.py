"""Tables computed from the trial table: pure functions that return data frames or named tuples (frontier,
seeds, resources, divergence, isolation, curves, transfer, crossover, robustness, runtime, ablation). Claims,
figures and the report read them; nothing here judges or draws."""
