"""The definitions of a published budget (issue 29): a default's budget on another dataset is either its source's
epochs or its source's optimizer steps (`config.defaults`), and every run records which (`budget`). Here, free of
the configuration's imports, for the analysis that reads them."""

BUDGETS = ("epochs", "steps")
