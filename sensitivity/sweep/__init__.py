"""Sweeps: Ray Tune runs the trials, an Optuna study written by the driver alone keeps the record."""
