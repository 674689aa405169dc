"""Analysis of studies, in rooms (docs/architecture.md, "The analysis, as rooms"), top to bottom:

- report/: the HTML page and its sections, and its check in a browser;
- figure_table: FIGURES, every figure kind and the module that draws it (plot --kind, export --figure, the report);
- figures/: one module per figure kind (its typed data, compute and plot); claims/: one module per claim, the
  registry, each comparison judged, the Findings and their words;
- rankings/: one Evaluator interface returning one Ranking (fANOVA, PED-ANOVA, Sobol', Morris) and the designed
  study as one object;
- tables/: pure functions from the trial table to data frames and named tuples;
- intervals, table (the trial table), statistics (what every claim shares: ALPHA, the margin, quantiles, tests).

Nothing is imported here, so `import sensitivity.analysis` stays light.
"""
