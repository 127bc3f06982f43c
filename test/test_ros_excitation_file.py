"""The excitation_publisher node plays a file written by `robot-identification excite`
(issue 5), in process (ROS_DOMAIN_ID 140)."""
import os
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from robot_identification import cli  # noqa: E402
from robot_identification.excitation import load_trajectory  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import patience, ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(140)


def test_excitation_publisher_plays_optimised_file(tmp_path):
    path = tmp_path / "excitation.yaml"
    assert cli.main(["excite", "--robot", "zollo_planar", "--criterion", "frobenius",
                     "--output", str(path), "--maxiter", "3", "--samples", "40",
                     "--harmonics", "3"]) == 0
    traj = load_trajectory(path)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    exc = ExcitationPublisher(context=ctx, parameter_overrides=[
        Parameter("robot", value="zollo_planar"), Parameter("trajectory_file", value=str(path)),
        Parameter("hold_time", value=0.0)])
    node = rclpy.create_node("excitation_file_client", context=ctx)
    refs = []
    node.create_subscription(JointTrajectory, "reference", refs.append, 1000)
    clock = node.create_publisher(Clock, "/clock", 1000)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(exc)
    ex.add_node(node)

    def spin_until(cond, timeout=10.0):
        end = time.monotonic() + patience(timeout)
        while not cond():
            assert time.monotonic() < end, "timed out"
            ex.spin_once(timeout_sec=0.01)

    try:
        spin_until(lambda: clock.get_subscription_count() > 0
                   and exc.pub.get_subscription_count() > 0)
        assert exc.on_start(Trigger.Request(), Trigger.Response()).success
        ticks = [0.0, 0.001, 0.5, 1.25]
        for t in ticks:
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = int(t), int(round((t % 1) * 1e9))
            clock.publish(msg)
            spin_until(lambda: len(refs) >= ticks.index(t) + 1)
        for r, t in zip(refs, ticks):
            q, dq, ddq = traj.evaluate(t)
            p = r.points[0]
            np.testing.assert_allclose(p.positions, q[0], atol=1e-12, err_msg=f"t={t}")
            np.testing.assert_allclose(p.velocities, dq[0], atol=1e-12, err_msg=f"t={t}")
            np.testing.assert_allclose(p.accelerations, ddq[0], atol=1e-12, err_msg=f"t={t}")
    finally:
        ex.shutdown()
        exc.destroy_node()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
