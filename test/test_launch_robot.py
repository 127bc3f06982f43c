"""launch_pytest: launch/identification_robot.launch.py (no simulator) starts its four nodes
with topic names from launch arguments. Skipped where launch_ros / launch_pytest or an installed
package (ament index) are absent."""
import os
import time
from pathlib import Path

import pytest

launch_pytest = pytest.importorskip("launch_pytest")
pytest.importorskip("launch_ros")
ament_index_python = pytest.importorskip("ament_index_python")
try:
    ament_index_python.get_package_prefix("robot_identification")
except (KeyError, ValueError, OSError, LookupError):
    pytest.skip("robot_identification is not installed in an ament prefix",
                allow_module_level=True)

import rclpy  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_pytest.actions import ReadyToTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
from conftest import ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(136)

pytestmark = pytest.mark.launch


@launch_pytest.fixture
def launch_description():
    return LaunchDescription([
        SetEnvironmentVariable("ROS_DOMAIN_ID", str(DOMAIN_ID)),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(ROOT / "launch" / "identification_robot.launch.py")),
            launch_arguments={"robot": "zollo_planar",
                              "joint_states_topic": "/arm/joint_states",
                              "command_topic": "/arm/effort_controller/commands"}.items()),
        ReadyToTest(),
    ])


@pytest.mark.launch(fixture=launch_description)
def test_robot_launch_uses_the_topic_arguments():
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    node = rclpy.create_node("launch_test_client", context=ctx)
    try:
        deadline = time.monotonic() + 30.0
        while True:
            names = set(node.get_node_names())
            topics = dict(node.get_topic_names_and_types())
            if {"excitation_publisher", "pd_controller", "recorder", "identifier"} <= names \
                    and "/arm/effort_controller/commands" in topics:
                break
            assert time.monotonic() < deadline, (names, topics)
            time.sleep(0.2)
        assert "simulated_robot" not in names
        assert topics["/arm/effort_controller/commands"] == ["std_msgs/msg/Float64MultiArray"]
        assert "/arm/joint_states" in topics
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)
