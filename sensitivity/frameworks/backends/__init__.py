"""What more than one adapter needs of a framework, kept out of the adapters so that no adapter imports another.

One module per framework that Keras can run on (torch, tensorflow, jax): its numeric and determinism flags and
its GPU set-up, placement report and peak memory, used by that framework's own adapter and by the keras
adapter on that backend (jax's also by the pytensor adapter, which reaches a GPU through JAX); and
`keras_optimizers`, Keras' optimizers and learning-rate schedules, used by the keras and tensorflow adapters.
Each module imports its framework: import it only where that framework is loaded anyway, or lazily.
"""
