"""launch_pytest: launch/identification_sim.launch.py brings up the five nodes and runs a full
(short) experiment: record the whole excitation in lockstep, identify. Not collected where the
launch stack is absent (conftest.py; test_ros_launch_stack.py says why)."""
import os
import time
from pathlib import Path

import pytest

import launch_pytest

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_pytest.actions import ReadyToTest  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from robot_identification.data import read_bag  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
from conftest import (call_service, patience, ros_domain_id,  # noqa: E402
                      run_lockstep_excitation)
DOMAIN_ID = ros_domain_id(135)
DATA = Path(os.environ.get("TMPDIR", "/tmp")) / f"ri_launch_sim_{os.getpid()}"

pytestmark = pytest.mark.launch


#: a short full experiment: 3 s quintic B-spline excitation of zollo_planar (+ 0.5 s hold)
EXCITATION = {"type": "bspline", "duration": 3.0, "segments": 6, "amplitude": [1.0, 1.0],
              "seed": 2}


def trajectory_file():
    from robot_identification.excitation import save_trajectory, trajectory_from_config
    from robot_identification.model import load_robot
    traj = trajectory_from_config(load_robot("zollo_planar"), EXCITATION)
    return str(save_trajectory(traj, DATA.parent / f"{DATA.name}_excitation.yaml"))


@launch_pytest.fixture
def launch_description():
    DATA.parent.mkdir(parents=True, exist_ok=True)
    path = trajectory_file()
    return LaunchDescription([
        SetEnvironmentVariable("ROS_DOMAIN_ID", str(DOMAIN_ID)),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(ROOT / "launch" / "identification_sim.launch.py")),
            # robot_config:= (a YAML path, what `init` writes for any arm) rather than
            # robot:=; the recorder must still see that the config is elastic
            launch_arguments={"robot_config": str(ROOT / "config" / "robots" /
                                                  "zollo_planar.yaml"),
                              "robot": "no_such_robot", "data_directory": str(DATA),
                              "trajectory_file": path}.items()),
        ReadyToTest(),
    ])


def call(executor, node, name, timeout=60.0):
    return call_service(lambda: executor.spin_once(timeout_sec=0.05), node, name,
                        timeout=timeout)


@pytest.mark.launch(fixture=launch_description)
def test_sim_launch_runs_an_experiment():
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    node = rclpy.create_node("launch_test_client", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        # five Python processes start (load: slow)
        deadline = time.monotonic() + patience(120.0)
        expected = {"simulated_robot", "excitation_publisher", "pd_controller", "recorder",
                    "identifier"}
        while not expected <= set(node.get_node_names()):
            assert time.monotonic() < deadline, node.get_node_names()
            time.sleep(0.2)
        assert call(ex, node, "/recorder/start").success
        # the lockstep run takes seconds: start it once the recorder receives the states
        # (a late discovery on a loaded machine would cut the start of the bag)
        run_lockstep_excitation(ex, node, call)
        assert call(ex, node, "/recorder/stop").success
        ds = read_bag(next(DATA.glob("run_*")))
        assert ds.t[-1] - ds.t[0] > 3.0                   # the full excitation + hold
        np.testing.assert_allclose(np.diff(ds.t), 1e-3, atol=1e-9)       # lockstep, no gaps
        res = call(ex, node, "/identifier/identify", timeout=120.0)
        assert res.success, res.message
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
