"""Dask worker preload: start a long-lived worker ready for the engine's tasks.

The scheduler's address goes first, so that Dask passes the options after the module to it:

    dask worker SCHEDULER --nthreads 1 --preload robot_identification.dask_worker
    dask worker SCHEDULER --nthreads 1 --preload robot_identification.dask_worker --warm-up ur10e

Dask imports a ``--preload`` module in every worker process before it connects, and calls
its ``dask_setup(worker)`` (docs.dask.org, "Customize Initialization"). Importing this
module imports the engine (pinocchio, SciPy, the package); ``dask_setup`` then sets the
worker's allocator (:func:`~robot_identification._dask.tune_worker_memory`) and runs one
identification of a synthetic recording (``--warm-up ROBOT``, a shipped robot, default
``puma560_elastic``; ``none``: the imports only) on the thread the worker's tasks run on.
The worker's first job then does not pay what every process pays once: the first touch of
the memory its tasks' arrays use (page faults, system time) and the libraries' first calls.
Per-task CPU inside 2 external workers, 4 x 200 k samples of the elastic PUMA, load 5-8
(2026-11-29, on main 16ca304 with this module): the first job on workers preloaded with the
engine alone 10.7-12.2 s of task CPU per worker, 1.8-2.3 s of it system time (87-96 k page
faults); a later job on the same workers, files re-read, 10.1-10.6 s (0.1-0.4 s, 5-6 k);
the first job on workers preloaded with this module 9.5-10.8 s (0.1-0.5 s, 7-8 k).

The warm-up's data are synthetic (:func:`warm_up_dataset`: sines, no physics): nothing of
them reaches a job. A warm-up that fails is logged and the worker starts all the same.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time

import click
import numpy as np

from robot_identification._dask import tune_worker_memory
from robot_identification.data import Dataset
from robot_identification.identification import READ_CHUNK, identify
from robot_identification.model import load_robot

#: Under Dask's ``distributed`` logger: a worker's log shows the warm-up (Dask configures the
#: handlers of ``distributed`` only).
logger = logging.getLogger("distributed.preloading").getChild(__name__)

#: Robot of the default warm-up: the elastic PUMA's tasks (two torque rows per joint) touch
#: at least the memory of a rigid 6-dof arm's.
WARM_UP_ROBOT = "puma560_elastic"

#: The warm-ups this process ran: (robot, thread name, CPU seconds), e.g.
#: ``client.run(lambda: __import__("robot_identification.dask_worker").dask_worker.WARM_UPS)``
#: tells whether a cluster's workers were started with this preload.
WARM_UPS: list = []


def warm_up_dataset(model, samples=None, rate=1000.0):
    """A synthetic recording of ``model``: every joint a sum of two sines (link and motor
    positions), motor torques of sines, at ``rate`` [Hz].

    Parameters
    ----------
    model : RobotModel
    samples : int, optional
        Default :data:`~robot_identification.identification.READ_CHUNK` (one chunk of a
        file recording, the most a task holds at once).
    rate : float
        Sample rate [Hz].

    Returns
    -------
    Dataset
        ``t`` (N,) [s], ``q``, ``tau`` (N, n) [rad or m; N or N m], and ``theta`` (N, n)
        for an elastic model.
    """
    n = model.n
    t = np.arange(int(samples or READ_CHUNK)) / float(rate)
    k = np.arange(1, n + 1)[None, :]
    q = 0.5 * np.sin(2 * np.pi * 0.1 * k * t[:, None]) \
        + 0.2 * np.sin(2 * np.pi * 0.37 * k * t[:, None] + 1.0)
    tau = 5.0 * np.sin(2 * np.pi * 0.23 * k * t[:, None] + 0.5)
    theta = q + 1e-3 * np.sin(2 * np.pi * 0.5 * t[:, None] + k) if model.config.elastic \
        else None
    return Dataset(t=t, q=q, tau=tau, theta=theta, joint_names=tuple(model.joint_names))


def warm_up(robot=WARM_UP_ROBOT):
    """One identification of :func:`warm_up_dataset` for the shipped ``robot`` in this
    thread (its result is dropped; recorded in :data:`WARM_UPS`). Returns the CPU seconds
    it took.

    Raises
    ------
    ConfigError
        Unknown robot.
    Whatever :func:`~robot_identification.identification.identify` raises on the data.
    """
    t0 = time.thread_time()
    tune_worker_memory()
    model = load_robot(robot)
    identify(model, warm_up_dataset(model), estimator="ols")
    cpu = time.thread_time() - t0
    WARM_UPS.append((robot, threading.current_thread().name, cpu))
    return cpu


@click.command()
@click.option("--warm-up", "robot", default=WARM_UP_ROBOT, show_default=True,
              help="shipped robot of the worker's warm-up identification, or 'none'")
async def dask_setup(worker, robot):
    """Dask's preload hook: the allocator and the warm-up on the worker's task thread
    (awaited: the worker connects to its scheduler once it is done)."""
    tune_worker_memory()
    if robot == "none":
        return
    executor = getattr(worker, "executors", {}).get("default")
    try:
        cpu = (await asyncio.wrap_future(executor.submit(warm_up, robot))
               if executor is not None else warm_up(robot))
        logger.info("warm-up identification (%s): %.1f s of CPU", robot, cpu)
    except Exception as exc:  # noqa: BLE001 - a failed warm-up must not stop the worker
        logger.warning("warm-up identification (%s) failed: %s", robot, exc)
