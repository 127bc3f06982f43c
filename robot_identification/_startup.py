"""The start-up of a command-line process: the cyclic garbage collector paused while the
engine is imported.

Importing the engine (:mod:`robot_identification.identification`: scipy.signal, scipy.stats,
scipy.optimize, pinocchio and the project's modules) allocates about a million objects, none
of them garbage; with the collector on it ran ~200 collections that found nothing, 41 ms of
the ~1 s import (issue #29). Where the process is the command line's (:data:`FREEZE`, set by
:mod:`robot_identification.cli`), the collector is paused during that import and the objects
then alive are frozen (:func:`gc.freeze`: moved to the permanent generation, never scanned
again: the modules, classes and functions of the import, and the command's parsed
arguments); afterwards the collector runs as before. In any other process (a script, a node,
a notebook importing the package) nothing changes: freezing would keep its cyclic garbage of
before the import for good, and a pause alone only moves the scans to later collections.
"""
from __future__ import annotations

import contextlib
import gc

#: True in a process of the command line (:func:`robot_identification.cli.main`).
FREEZE = False


@contextlib.contextmanager
def paused_collector():
    """Context manager: with :data:`FREEZE`, the cyclic garbage collector disabled inside
    and the objects alive at its end frozen (:func:`gc.freeze`), the collector then enabled
    as it was; without, nothing."""
    if not FREEZE:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
