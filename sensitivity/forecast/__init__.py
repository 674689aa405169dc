"""Cost forecasts before a launch: a throughput probe per framework, model, device and batch size
(`probe`, run in the framework's own environment; it imports neither Ray nor Optuna), its cache per host and
framework version (`throughput`), and the forecast of a plan from both (`estimate`)."""
