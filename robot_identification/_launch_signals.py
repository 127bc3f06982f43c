"""Signals from `ros2 launch` to its nodes without reaping them (CPython gh-87744, Python < 3.13).

``launch`` runs each node through an asyncio subprocess transport and forwards Ctrl-C / SIGTERM
to it with ``transport.send_signal``. Before Python 3.13 that calls
``subprocess.Popen.send_signal``, which first polls the child (``waitpid(pid, WNOHANG)``,
bpo-38630). In a terminal Ctrl-C reaches every node of the process group directly as well;
a node that has already exited when ``launch`` forwards its own SIGINT is then reaped by that
poll instead of by asyncio's child watcher, whose ``waitpid`` gets ECHILD: asyncio logs
"Unknown child process pid N, will report returncode 255" and ``launch`` reports a node that
exited cleanly as "process has died [..., exit code 255]" (seen under load in
test/test_launch_sigint.py). CPython fixed it in 3.13 (gh-87744, python/cpython#121126): the
transport sends the signal with ``os.kill`` and leaves the reaping to the watcher.
:func:`use_watcher_safe_signals` gives the transports of this process that behaviour; the
launch files call it (it changes nothing on Python >= 3.13 or on Windows).
"""
from __future__ import annotations

import os
import sys
from asyncio import base_subprocess


def _send_signal(self, sig):
    """``BaseSubprocessTransport.send_signal`` as in CPython 3.13 on POSIX: the signal by
    ``os.kill`` (no poll of the child; a child already gone is not an error)."""
    self._check_proc()
    try:
        os.kill(self._proc.pid, sig)
    except ProcessLookupError:
        pass


def use_watcher_safe_signals():
    """Make asyncio subprocess transports signal their child without polling it (Python <
    3.13, POSIX; idempotent). Returns True where the behaviour was changed."""
    if sys.version_info >= (3, 13) or sys.platform == "win32":
        return False
    base_subprocess.BaseSubprocessTransport.send_signal = _send_signal
    return True
