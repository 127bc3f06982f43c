"""Ctrl-C through ``ros2 launch``: a node that exits before launch forwards its SIGINT is still
reported with its own exit code, not as "process has died [..., exit code 255]" (CPython
gh-87744 on Python < 3.13: the transport's ``send_signal`` polled, and so reaped, the child
before asyncio's child watcher could; robot_identification._launch_signals).

The race is made deterministic: a child watcher whose ``waitpid`` waits until the test lets it
go, a child that is already a zombie when the signal is sent.
"""
import asyncio
import importlib.util
import os
import signal
import sys
import threading
import time
import warnings
from asyncio import base_subprocess
from pathlib import Path

import pytest

from robot_identification import _launch_signals

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 13) or sys.platform == "win32",
    reason="CPython >= 3.13 signals without polling (gh-87744); no child watchers to set")
ROOT = Path(__file__).resolve().parents[1]


class HeldWatcher(asyncio.ThreadedChildWatcher):
    """asyncio's default watcher (Python 3.8-3.12), its waitpid held until ``go`` is set."""

    def __init__(self):
        super().__init__()
        self.go = threading.Event()

    def _do_waitpid(self, loop, expected_pid, callback, args):
        self.go.wait(60)
        super()._do_waitpid(loop, expected_pid, callback, args)


def _zombie(pid, timeout=60.0):
    """Wait (polling /proc, no waitpid) until process ``pid`` has exited, not been reaped."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} did not exit")


def _exit_code_after_late_signal():
    """Exit code the transport reports for a child killed by SIGTERM (-15) to which a
    SIGINT is forwarded after it exited, before the watcher reaped it."""
    watcher = HeldWatcher()
    loop = asyncio.new_event_loop()
    try:
        with warnings.catch_warnings():       # deprecated in 3.12 (child watchers go in 3.14)
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_child_watcher(watcher)
        watcher.attach_loop(loop)

        async def run():
            transport, _ = await loop.subprocess_exec(
                asyncio.SubprocessProtocol, sys.executable, "-c", "import time; time.sleep(60)")
            pid = transport.get_pid()
            os.kill(pid, signal.SIGTERM)       # Ctrl-C reaching the node directly
            _zombie(pid)
            transport.send_signal(signal.SIGINT)     # launch forwarding its own
            watcher.go.set()
            for _ in range(6000):
                if transport.get_returncode() is not None:
                    break
                await asyncio.sleep(0.01)
            code = transport.get_returncode()
            transport.close()
            return code

        return loop.run_until_complete(run())
    finally:
        watcher.go.set()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_child_watcher(None)
        loop.close()


def test_a_late_signal_does_not_reap_the_node(monkeypatch):
    monkeypatch.setattr(base_subprocess.BaseSubprocessTransport, "send_signal",
                        base_subprocess.BaseSubprocessTransport.send_signal)
    assert _launch_signals.use_watcher_safe_signals()
    assert _exit_code_after_late_signal() == -signal.SIGTERM


def test_without_the_fix_the_node_is_reported_as_255(monkeypatch):
    """The race the fix removes, shown on this interpreter (the reference)."""
    monkeypatch.setattr(base_subprocess.BaseSubprocessTransport, "send_signal",
                        _stdlib_send_signal)
    assert _exit_code_after_late_signal() == 255


def _stdlib_send_signal(self, sig):       # CPython 3.8-3.12's BaseSubprocessTransport
    self._check_proc()
    self._proc.send_signal(sig)


@pytest.mark.parametrize("name", ["identification_sim.launch.py",
                                  "identification_robot.launch.py"])
def test_launch_files_use_it(monkeypatch, name):
    pytest.importorskip("launch_ros")
    monkeypatch.setattr(base_subprocess.BaseSubprocessTransport, "send_signal",
                        _stdlib_send_signal)
    spec = importlib.util.spec_from_file_location(name.split(".")[0], ROOT / "launch" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate_launch_description()
    assert base_subprocess.BaseSubprocessTransport.send_signal is _launch_signals._send_signal
