"""One BLAS thread in the compute paths.

The identification works on many small matrix products (10x10 frame changes, p x p
normal-equation updates). Multi-threaded BLAS on such products only adds wake-up and
spin costs, and on a shared machine it oversubscribes the cores: with OpenBLAS's default
threads on 2 shared cores streaming identification ran 22-30x the bare pinocchio loop,
with one thread 3.2x (issue #9). Parallelism belongs one level up (recordings on Dask
workers), so the compute paths run with one BLAS thread.
"""
from __future__ import annotations

import contextlib
import functools

from threadpoolctl import ThreadpoolController

_CONTROLLER = None


def _controller():
    global _CONTROLLER
    if _CONTROLLER is None:     # built once (~0.5 ms): it scans the loaded libraries
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


@contextlib.contextmanager
def one_blas_thread():
    """Context manager limiting the BLAS thread pools (OpenBLAS, MKL, BLIS) to one thread.

    Where every BLAS pool already runs one thread (``OPENBLAS_NUM_THREADS=1``, or inside
    another such block) there is nothing to limit or restore: the pools' thread counts are
    read (one call each) instead of threadpoolctl's limiter, which collects every library's
    description on entry (~12 us; ~600 entries per identification of the real UR10e runs,
    issue #29)."""
    controller = _controller()
    if all(lib.num_threads == 1 for lib in controller.lib_controllers
           if lib.user_api == "blas"):
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


def blas_single_threaded(function):
    """Decorator: run ``function`` inside :func:`one_blas_thread`."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return function(*args, **kwargs)
    return wrapper
