"""Analysis of a study: pure functions over the trial table (`table.trials_table`) that return data frames
or named tuples, thin `plot_*` functions that draw them with plotly (`plots`), and the HTML report
(`report`). Nothing is imported here, so `import sensitivity.analysis` stays light.

Modules: table (the trial table, grouping and binning), intervals (the one interval helper: means, differences,
Holm, seeds needed), frontier, importance, divergence, isolation, seeds, resources, summary, curves (learning
curves, slice, contour), transfer, robustness, ablation, findings (a verdict per claim of the studies), style
(colours, labels, default markers), export (html, png, svg, pdf), plots (one plot per kind and the KINDS
registry), pages and claims (the report's HTML pieces and its sections on the claims), report.
"""
