"""Shipped parameter files: keyed by node name with ros__parameters, every key declared by its
node (a typo would otherwise be ignored silently), values accepted; ros2_controllers.yaml joints
match the robot."""
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[1]
from conftest import ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(139)
NODES = {"simulated_robot": "SimulatedRobot", "excitation_publisher": "ExcitationPublisher",
         "pd_controller": "PDController", "recorder": "Recorder", "identifier": "Identifier",
         "online_identifier": "OnlineIdentifier", "lifecycle_manager": "LifecycleManager"}


@pytest.mark.parametrize("name", sorted(NODES))
def test_parameter_file_matches_the_node(context, name, tmp_path):
    import importlib
    doc = yaml.safe_load((ROOT / "config" / f"{name}.yaml").read_text())
    assert list(doc) == [name]
    params = doc[name]["ros__parameters"]
    if "data_directory" in params:
        params["data_directory"] = str(tmp_path)
    cls = getattr(importlib.import_module(f"robot_identification.nodes.{name}"), NODES[name])
    node = cls(context=context,
               parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    try:
        undeclared = [k for k in params if not node.has_parameter(k)]
        assert not undeclared, f"config/{name}.yaml sets undeclared parameters {undeclared}"
        for k, v in params.items():
            assert node.get_parameter(k).value == v, k
    finally:
        node.destroy_node()


def test_ros2_controllers_yaml():
    from robot_identification.model import load_robot
    doc = yaml.safe_load((ROOT / "config" / "ros2_controllers.yaml").read_text())
    cm = doc["controller_manager"]["ros__parameters"]
    assert cm["effort_controller"]["type"] == "forward_command_controller/ForwardCommandController"
    assert cm["joint_state_broadcaster"]["type"] == \
        "joint_state_broadcaster/JointStateBroadcaster"
    assert doc["effort_controller"]["ros__parameters"]["interface_name"] == "effort"
    joints = list(load_robot("zollo_planar").joint_names)
    assert doc["effort_controller"]["ros__parameters"]["joints"] == joints
    assert doc["joint_state_broadcaster"]["ros__parameters"]["joints"] == joints


def test_unset_gains_and_threshold_mean_the_robot_config(context):
    """No sentinels: unset kp/kd are the config's gains (whatever their values), unset
    velocity_threshold is the config's; given values are checked (one-line errors)."""
    import numpy as np
    from robot_identification.nodes.online_identifier import OnlineIdentifier
    from robot_identification.nodes.pd_controller import PDController
    from robot_identification.simulation import make_controller
    node = PDController(context=context)
    try:
        ref = make_controller(node.model)
        np.testing.assert_array_equal(node.law.kp, ref.kp)
        np.testing.assert_array_equal(node.law.kd, ref.kd)
        assert node.has_parameter("kp")
    finally:
        node.destroy_node()
    given = [Parameter("kp", value=[1.0, 2.0]), Parameter("kd", value=[0.5, 0.25])]
    node = PDController(context=context, parameter_overrides=given)
    try:
        np.testing.assert_array_equal(node.law.kp, [1.0, 2.0])
        np.testing.assert_array_equal(node.law.kd, [0.5, 0.25])
    finally:
        node.destroy_node()
    for bad, match in (([1.0], "has 1 values; expected 2"), ([-1.0, 2.0], r"\[0.0, ")):
        with pytest.raises(ValueError, match=match):
            PDController(context=context, parameter_overrides=[Parameter("kp", value=bad)])
    node = OnlineIdentifier(context=context)
    try:
        assert node.threshold is None
    finally:
        node.destroy_node()
    with pytest.raises(ValueError, match="velocity_threshold"):
        OnlineIdentifier(context=context,
                         parameter_overrides=[Parameter("velocity_threshold", value=-1.0)])


def test_identifier_ends_its_trigger_thread_on_destroy(context, tmp_path):
    """The Trigger service's helper thread has ended when destroy_node returns: a thread
    still spinning when the context shuts down aborted the process at exit (exit code 134,
    'terminate called without an active exception', seen with `demo`)."""
    from robot_identification.nodes.identifier import Identifier
    node = Identifier(context=context, parameter_overrides=[
        Parameter("data_directory", value=str(tmp_path))])
    thread = node._helper_thread
    assert thread.is_alive()
    node.destroy_node()
    assert not thread.is_alive()


def test_identifier_optional_parameters_checked_at_start_and_on_change(context, tmp_path):
    """The identifier's estimator / velocity_threshold use the shared declare_optional: unset
    = the robot config's (None), bad values refused at start (one line) and on change."""
    from robot_identification.nodes.identifier import Identifier
    where = Parameter("data_directory", value=str(tmp_path))
    node = Identifier(context=context, parameter_overrides=[where])
    try:
        assert node.estimator is None and node.threshold is None
        for name, bad in (("estimator", "magic"), ("velocity_threshold", -1.0)):
            result = node.set_parameters([Parameter(name, value=bad)])[0]
            assert not result.successful and name in result.reason
        assert node.set_parameters([Parameter("estimator", value="wls")])[0].successful
        node._refresh()
        assert node.estimator == "wls" and node.threshold is None
    finally:
        node.destroy_node()
    with pytest.raises(ValueError, match=r"velocity_threshold.*\[0.0, 100.0\]"):
        Identifier(context=context, parameter_overrides=[
            where, Parameter("velocity_threshold", value=101.0)])


def test_path_parameters_say_what_empty_means(context):
    """'' is 'not given' for path parameters: their descriptions say what that means, and a
    bag_player without a bag names the missing parameter (Path('') would be '.')."""
    from robot_identification.errors import DataError
    from robot_identification.nodes.bag_player import BagPlayer
    from robot_identification.nodes.online_identifier import OnlineIdentifier
    node = OnlineIdentifier(context=context)
    try:
        for name in ("robot_config", "urdf"):
            described = node.describe_parameters([name])[0].description
            assert "'' = not given" in described, (name, described)
    finally:
        node.destroy_node()
    with pytest.raises(DataError, match="parameter 'bag' is not given"):
        BagPlayer(context=context)
