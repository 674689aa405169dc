"""Every figure of the analysis: one module per kind, each holding its typed data (`Info`, a NamedTuple of named,
documented fields), the `compute` that returns it and the `plot(info)` that draws it; `style` and `layout` hold
what they share, `export` writes a figure or its data. The table of kinds is `analysis.figure_table.FIGURES`.
Nothing is imported here, so that naming a figure module imports only what it needs."""
