"""ros2_control files of the shipped robots: config/ros2_controllers/<robot>.yaml and
urdf/gazebo/<robot>.urdf.xacro are what robot_identification.model generates (in sync with
the robot configs); xacro of each gives a URDF that pinocchio and urdfdom (urdf_parser_py)
load, with the robot's joints, an effort <ros2_control> block and the gz_ros2_control plugin."""
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import xacro
import yaml
from urdf_parser_py.urdf import URDF

from robot_identification.model import available_robots, load_robot_config, robot_files
from robot_identification.model._ros2_control import shipped_files

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = available_robots()


@pytest.mark.parametrize("robot", ROBOTS)
def test_shipped_files_are_generated_from_the_config(robot):
    config = load_robot_config(robot_files(robot))
    for path, text in shipped_files(config, ROOT).items():
        assert path.read_text() == text, f"{path} is stale: regenerate (docs/ros.md)"
    doc = yaml.safe_load((ROOT / "config" / "ros2_controllers" / f"{robot}.yaml").read_text())
    for name in ("joint_state_broadcaster", "effort_controller", "joint_trajectory_controller"):
        assert doc[name]["ros__parameters"]["joints"] == list(config.joint_names)


@pytest.mark.parametrize("robot", ROBOTS)
def test_xacro_gives_a_urdf_pinocchio_and_urdfdom_load(robot):
    config = load_robot_config(robot_files(robot))
    controllers = ROOT / "config" / "ros2_controllers" / f"{robot}.yaml"
    xml = xacro.process_file(str(ROOT / "urdf" / "gazebo" / f"{robot}.urdf.xacro"),
                             mappings={"controllers": str(controllers)}).toxml()
    urdf = URDF.from_xml_string(xml)                          # urdfdom's Python parser
    model = pin.buildModelFromXML(xml)                        # pinocchio (urdfdom C++)
    plain = pin.buildModelFromUrdf(str(config.urdf_path))
    assert list(model.names) == list(plain.names)
    # the moving bodies' masses (body 0, the fixed base, gets the inertial Gazebo needs)
    np.testing.assert_allclose([i.mass for i in model.inertias][1:],
                               [i.mass for i in plain.inertias][1:])
    assert set(config.joint_names) <= {j.name for j in urdf.joints}
    from xml.etree import ElementTree
    root = ElementTree.fromstring(xml)
    block = root.find("ros2_control")
    assert block.get("type") == "system"
    assert block.find("hardware/plugin").text == "gz_ros2_control/GazeboSimSystem"
    joints = block.findall("joint")
    assert [j.get("name") for j in joints] == list(config.joint_names)
    for j in joints:
        assert [c.get("name") for c in j.findall("command_interface")] == ["effort"]
        assert {s.get("name") for s in j.findall("state_interface")} == {
            "position", "velocity", "effort"}
    params = root.find("gazebo/plugin/parameters")
    assert params.text == str(controllers)
