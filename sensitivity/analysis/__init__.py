"""Analysis of a study: pure functions over the trial table (`table.trials_table`) that return data frames
or named tuples, thin `plot_*` functions that draw them with plotly (`plots`), and the HTML report
(`report`). Nothing is imported here, so `import sensitivity.analysis` stays light.

Modules: table (the trial table, grouping and binning), frontier, importance, divergence, isolation, seeds,
resources, summary, curves (learning curves, slice, contour), style (colours, labels, default markers),
export (html, png, svg, pdf), plots (one plot per kind and the KINDS registry), report.
"""
