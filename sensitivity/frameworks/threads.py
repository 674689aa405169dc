"""Thread counts as in effect, read back from the libraries that do the work, for the adapters that have no
getter of their own: the OpenBLAS (or MKL) and the OpenMP runtime this process has loaded.

A setter can be refused (TensorFlow and torch's inter-op count are settable once per process, so a warm
worker keeps its first trial's) or take no effect (a library loaded without one): a result records what a
getter reads after the setters ran, never the count asked for. None where no library can be read.
"""
from __future__ import annotations

import ctypes
import os
from typing import Optional


def available() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _loaded(*names: str) -> list:
    """The shared libraries of this process whose path holds one of `names` (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            return sorted({line.split()[-1] for line in maps if any(name in line for name in names)})
    except OSError:
        return []


def _call(names: tuple, symbols: tuple, *args) -> list:
    """The value of the first of `symbols` each loaded library of `names` exports, called with `args`."""
    values = []
    for path in _loaded(*names):
        library = ctypes.CDLL(path)
        for symbol in symbols:
            if hasattr(library, symbol):
                values.append(getattr(library, symbol)(*(ctypes.c_int(a) for a in args)))
                break
    return values


def blas(threads: Optional[int] = None) -> Optional[int]:
    """Set (unless None) the thread count of every OpenBLAS or MKL loaded (numpy's among them), then
    return the count read back: the largest among them, None where none is loaded or readable."""
    names = ("openblas", "libmkl_rt")
    if threads:
        _call(names, ("openblas_set_num_threads64_", "openblas_set_num_threads", "MKL_Set_Num_Threads"), threads)
    counts = _call(names, ("openblas_get_num_threads64_", "openblas_get_num_threads", "MKL_Get_Max_Threads"))
    return max(counts) if counts else None


def openmp() -> Optional[int]:
    """omp_get_max_threads() of the OpenMP runtime loaded (GNU's or Intel's): the team size a parallel
    region gets, as set by OMP_NUM_THREADS when the runtime was loaded. None where none is loaded."""
    counts = _call(("libgomp", "libiomp"), ("omp_get_max_threads",))
    return max(counts) if counts else None


def tensorflow() -> int:
    """TensorFlow's intra-op pool size as it reports it; 0 (its default) is one thread per core it may use."""
    # lazy: tensorflow
    import tensorflow as tf
    return tf.config.threading.get_intra_op_parallelism_threads() or available()
