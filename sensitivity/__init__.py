"""sensitivity: hyper-parameter and configuration sensitivity explorer for deep-learning frameworks."""
__version__ = "0.1.0"
