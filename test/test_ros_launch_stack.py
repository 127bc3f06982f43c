"""Whether the launch tests (test_launch_*.py, launch_pytest) run here: they need launch,
launch_ros, launch_pytest and ament_index_python (a ROS 2 installation, or the wheels that .ci/run
installs from ../shared/ros-launch-stack). Skipped with the reason when they are missing."""
import os
from pathlib import Path

import pytest

from conftest import LAUNCH_SKIP_REASON, NODE_EXECUTABLES


def test_checkout_is_launchable_from_its_ament_prefix():
    if LAUNCH_SKIP_REASON:
        pytest.skip(f"launch tests not collected: {LAUNCH_SKIP_REASON}")
    from ament_index_python import get_package_prefix, get_package_share_directory
    prefix = Path(get_package_prefix("robot_identification"))
    for node in NODE_EXECUTABLES:
        assert os.access(prefix / "lib" / "robot_identification" / node, os.X_OK), node
    share = Path(get_package_share_directory("robot_identification"))
    assert (share / "launch" / "identification_robot.launch.py").is_file()
