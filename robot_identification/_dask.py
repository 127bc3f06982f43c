"""Dask clients for map-reduce over recordings and Monte-Carlo runs.

Normal equations are additive (sum over recordings), and Monte-Carlo runs are independent,
so both are a map on workers and a sum or a stack on the client. ``workers=1`` without a
scheduler runs in this process (no cluster); otherwise a local cluster (one thread per
worker process: the per-sample pinocchio loop holds the GIL) or an existing scheduler.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import signal
import sys
import threading

from robot_identification.errors import ConfigError


#: Dask settings of the local cluster (its scheduler, nannies and workers): no statistical
#: profiler in the workers (it samples the task thread's stack every 10 ms, holding the
#: GIL), system and memory monitors and the event-loop tick at seconds instead of 0.5 s,
#: 0.1 s and 20 ms. Measured on the shared 2-core machine, an idle 2-worker cluster for 20 s
#: (load ~17): client (scheduler + nannies) 0.56 -> 0.12 s of CPU, each worker 0.4 ->
#: 0.05 s; a 400-s identification on a loaded machine paid ~10 s of client CPU for them.
#: An external cluster gets them from its environment (docs/performance.md).
QUIET = {"distributed.worker.profile.enabled": False,
         "distributed.admin.system-monitor.interval": "5s",
         "distributed.worker.memory.monitor-interval": "1s",
         "distributed.admin.tick.interval": "1s"}


def start_method():
    """How the local cluster starts its worker processes: ``"fork"`` on Linux when the
    calling process runs no thread but its main thread (the CLI, a plain script), else
    Dask's configured method (``distributed.worker.multiprocessing-method``, ``spawn`` by
    default).

    A spawned worker is a fresh interpreter: it imports Dask and, with its first task, the
    engine (~1.2 s of CPU per worker and ~2.3 s of wall time before the first task, measured
    on 4 x 1 M samples of the elastic PUMA, load ~2), while the client waits. A forked
    worker starts with the client's imports: its first task began 0.04 s after the cluster
    was up. Forking a process whose other threads may hold locks can deadlock the child, so
    a caller with threads of its own (a ROS node's executor, a notebook, a test runner with
    background threads) keeps ``spawn``; Dask's own threads (event loop, process watchers)
    are its documented ``fork`` configuration. A method set to something other than
    ``spawn`` in Dask's configuration is kept.
    """
    import dask  # optional: dask
    configured = dask.config.get("distributed.worker.multiprocessing-method", "spawn")
    if (configured == "spawn" and sys.platform.startswith("linux")
            and threading.active_count() == 1):
        return "fork"
    return configured


#: True while this process runs a local cluster of forked workers: a forked worker resets
#: SIGINT and SIGTERM to the handlers of a fresh interpreter (the CLI's handlers unwind the
#: CLI's outputs, which a worker does not own) and keeps the caller's allocator settings
#: (the nanny's ``MALLOC_TRIM_THRESHOLD_`` only reaches a process that starts glibc afresh:
#: :func:`tune_worker_memory` has nothing to undo there).
_FORKING = []


def _after_fork_in_child():
    if _FORKING:
        _FORKING.clear()
        _tuned.append(True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def max_local_workers() -> int:
    """Most local Dask worker processes accepted: 4 per CPU, at least 8."""
    return max(8, 4 * (os.cpu_count() or 1))


def check_workers(workers, scheduler=None):
    """Validate ``--workers`` / ``--scheduler``.

    Raises
    ------
    ConfigError
        ``workers`` not a positive integer, more local workers than
        :func:`max_local_workers` (each is a Python process: 100000 of them exhaust the
        machine for minutes), or ``scheduler`` not ``tcp://HOST:PORT``-like.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    if scheduler is None and workers > max_local_workers():
        raise ConfigError(f"workers {workers} is more than {max_local_workers()} local worker "
                          f"processes (4 per CPU; this machine has {os.cpu_count() or 1} "
                          f"CPUs); use fewer, or a cluster with --scheduler")
    if scheduler is not None and "://" not in str(scheduler):
        raise ConfigError(f"scheduler must be an address like tcp://HOST:PORT, got "
                          f"{scheduler!r}")


@contextlib.contextmanager
def dask_client(workers=1, scheduler=None, processes=True, timeout=10.0):
    """Context manager yielding a ``distributed.Client``, or None for in-process work.

    Parameters
    ----------
    workers : int
        Local worker count (ignored with ``scheduler``); 1 without a scheduler -> None.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://HOST:PORT``).
    processes : bool
        Local cluster of worker processes (True) or threads (False).
    timeout : float
        Seconds to wait for ``scheduler``.

    Raises
    ------
    ConfigError
        Bad arguments, or the scheduler cannot be reached within ``timeout``.
    """
    check_workers(workers, scheduler)
    if scheduler is None and workers == 1:
        yield None
        return
    from distributed import Client, LocalCluster   # optional: dask
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach Dask scheduler {scheduler}: {exc}") from None
        try:
            yield client
        finally:
            client.close()
        return
    import dask  # optional: dask
    method = start_method()
    forking = processes and method == "fork"
    if forking:
        _FORKING.append(True)
        # the objects the workers inherit are left out of the cyclic garbage collector while
        # the cluster runs (Python's gc.freeze documentation, for fork without exec): a
        # collection in a forked worker then does not touch, and so copy, the client's
        # pages; Monte-Carlo tasks of puma560's physical estimate, 40 runs on 2 forked
        # workers: 8.2-8.3 s of task CPU instead of 8.7-8.8 s (load ~10; issue #29)
        gc.freeze()
    try:
        with dask.config.set({**QUIET, "distributed.worker.multiprocessing-method": method}), \
                LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                             dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
                Client(cluster) as client:
            yield client
    finally:
        if forking:
            _FORKING.clear()
            gc.unfreeze()


def map_sum(client, function, items, *args, **kwargs):
    """``sum(function(item, *args, **kwargs) for item in items)``, mapped on ``client``.

    The results are added with ``+=`` in the order of ``items`` on the caller's side, so
    the floating-point sum is the same bit for bit with any number of workers (and with
    ``client=None``, which runs the loop here). ``args``/``kwargs`` go with every task:
    scatter large ones first (``client.scatter(x, broadcast=True)``, e.g. the robot model)
    so that each worker receives them once.

    Raises
    ------
    ValueError
        No items.
    Whatever ``function`` raises (re-raised here from the worker).
    """
    items = list(items)
    if not items:
        raise ValueError("map_sum: no items")
    if client is None:
        results = (function(item, *args, **kwargs) for item in items)
    else:
        futures = [client.submit(on_worker, function, item, *args, pure=False, **kwargs)
                   for item in items]
        results = client.gather(futures)
    total = None
    for r in results:
        if total is None:
            total = r
        else:
            total += r
    return total


def map_list(client, function, items, *args, **kwargs):
    """``[function(item, *args, **kwargs) for item in items]``, mapped on ``client`` (in
    this process with ``client=None``), in the order of ``items``.

    Raises
    ------
    Whatever ``function`` raises (re-raised here from the worker).
    """
    items = list(items)
    if client is None:
        return [function(item, *args, **kwargs) for item in items]
    return client.gather([client.submit(on_worker, function, item, *args, pure=False,
                                        **kwargs) for item in items])


#: glibc ``mallopt`` parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_tuned = []


def tune_worker_memory():
    """Undo, in a Dask worker process, the allocator setting its nanny starts it with.

    Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-
    environ``), which fixes glibc's thresholds: every array above 128 KiB is then mapped
    fresh from the operating system and zeroed page by page when touched. Measured on the
    identification of 2 x 200 k samples of the elastic PUMA in one process: 8.5 s CPU
    without, 13.0 s with it (system time 1.1 -> 5.5 s). Here the thresholds are set to the
    largest values glibc's own dynamic rule reaches (mmap above 32 MiB, trim above
    64 MiB), as in a plain process after its first large arrays. Once per process; without
    glibc (other C libraries, other systems) nothing is done.
    """
    if _tuned:
        return
    _tuned.append(True)
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(_M_TRIM_THRESHOLD, 64 << 20)
    except (OSError, AttributeError):
        pass


def on_worker(function, *args, **kwargs):
    """``function(*args, **kwargs)`` as a Dask task: the worker's allocator tuned first
    (:func:`tune_worker_memory`)."""
    tune_worker_memory()
    return function(*args, **kwargs)
