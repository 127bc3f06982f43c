"""`ros2 launch robot_identification identification_robot.launch.py` with bad argument values:
one line naming the argument or the problem, never a traceback (launch-level checks end the
launch; a node refusing a value exits with one line while the others run). Runs the ros2 CLI of
this interpreter's environment on conftest's ament prefix; not collected without the launch
stack (conftest.py)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import patience, ros_domain_id

DOMAIN_ID = ros_domain_id(145)
ROS2 = Path(sys.executable).parent / "ros2"

pytestmark = pytest.mark.skipif(not ROS2.exists(), reason=f"no ros2 CLI at {ROS2}")


def env():
    root = str(Path(__file__).resolve().parents[1])          # the launch file imports it
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    e = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
             PYTHONUNBUFFERED="1", PYTHONPATH=path)
    e.setdefault("ROS_LOG_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "ri_ros_log"))
    return e


def launch(*args):
    return [str(ROS2), "launch", "robot_identification", "identification_robot.launch.py",
            *args]


@pytest.mark.parametrize("args, expected", [
    (["rate_hz:=abc"], "rate_hz:='abc' is not a number"),
    (["watchdog_timeout:=nan"], "watchdog_timeout:='nan' must be a finite number > 0"),
    (["robot:=no_such_robot"], "unknown robot 'no_such_robot'"),
    (["use_pd_controller:=maybe"], "use_pd_controller"),
    (["params_file:=/no/such/file.yaml"], "is not a file"),
])
def test_bad_launch_argument_is_one_line(args, expected, tmp_path):
    out = subprocess.run(launch(*args, f"data_directory:={tmp_path}"), env=env(),
                         capture_output=True, text=True, timeout=patience(120))
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert expected in text, text
    assert "Traceback" not in text, text


def test_bad_node_parameter_is_one_line(tmp_path):
    """command_topic:='bad topic' (not a topic name): the pd_controller exits with one line."""
    proc = subprocess.Popen(launch("command_topic:=bad topic", "robot:=puma560",
                                   f"data_directory:={tmp_path}"), env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines = []
    try:
        end = time.monotonic() + patience(120)
        while time.monotonic() < end:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "process has died" in line and "pd_controller" in line:
                break
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=patience(30))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rest, _ = proc.communicate()
    text = "".join(lines)        # before our Ctrl-C (launch itself may print one on SIGINT)
    assert "PDController: error: Invalid topic name" in text, text + (rest or "")
    assert "Traceback" not in text, text
