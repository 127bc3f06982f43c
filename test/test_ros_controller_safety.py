"""pd_controller safety: stale states, NaN, limits -> zero torque within the documented periods;
excitation_publisher refuses trajectories beyond the limits; parameter validation."""
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.exceptions import InvalidParameterValueException  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from robot_identification.errors import ExcitationError  # noqa: E402

from conftest import ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(132)
RATE = 100.0          # Hz: 10 ms periods, robust on a loaded machine
WATCHDOG = 5          # periods


class Rig:
    """pd_controller (real-time mode) + a test node playing robot and reference."""

    def __init__(self, context):
        from robot_identification.nodes.pd_controller import PDController
        self.ctrl = PDController(context=context, parameter_overrides=[
            Parameter("lockstep", value=False), Parameter("rate_hz", value=RATE),
            Parameter("watchdog_periods", value=WATCHDOG)])
        self.node = rclpy.create_node("safety_rig", context=context)
        self.pub_joint = self.node.create_publisher(JointState, "joint_states", 10)
        self.pub_motor = self.node.create_publisher(JointState, "motor_states", 10)
        self.pub_ref = self.node.create_publisher(JointTrajectory, "reference", 10)
        self.commands = []
        self.node.create_subscription(Float64MultiArray, "effort_controller/commands",
                                      lambda m: self.commands.append(list(m.data)), 100)
        self.ex = SingleThreadedExecutor(context=context)
        self.ex.add_node(self.ctrl)
        self.ex.add_node(self.node)
        pubs = (self.pub_joint, self.pub_motor, self.pub_ref)
        self.spin_until(lambda: self.ctrl.pub.get_subscription_count() > 0 and all(
            p.get_subscription_count() > 0 for p in pubs))

    def spin_until(self, cond, timeout=5.0):
        end = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < end, "timed out"
            self.ex.spin_once(timeout_sec=0.005)

    def send(self, q=(0.1, 0.2), theta=(0.1, 0.2), q_ref=(0.3, 0.1), dq_ref=(0.0, 0.0)):
        now = self.node.get_clock().now().to_msg()
        names = ["joint1", "joint2"]
        ref = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
            positions=list(q_ref), velocities=list(dq_ref), accelerations=[0.0, 0.0])])
        ref.header.stamp = now
        t = now.sec + 1e-9 * now.nanosec
        # real-time mode computes on the joint state with the latest reference/motor state:
        # deliver them first
        self.pub_ref.publish(ref)
        self.spin_until(lambda: self.ctrl.ref is not None and self.ctrl.ref[0] == t)
        n = len(self.commands)
        for pub, pos in ((self.pub_motor, theta), (self.pub_joint, q)):
            msg = JointState(name=names, position=list(pos), velocity=[0.0, 0.0])
            msg.header.stamp = now
            pub.publish(msg)
            if pub is self.pub_motor:
                self.spin_until(lambda: self.ctrl.motor is not None and self.ctrl.motor[0] == t)
        computed = self.ctrl.commands
        self.spin_until(lambda: self.ctrl.commands > computed)
        # the command computed from this state is the last one on the wire once delivered (the
        # state is fresh, so the watchdog publishes nothing in between)
        end = time.monotonic() + 0.02
        self.spin_until(lambda: len(self.commands) > n and time.monotonic() > end)
        return np.array(self.commands[-1])

    def close(self):
        self.ex.shutdown()
        self.ctrl.destroy_node()
        self.node.destroy_node()


@pytest.fixture
def rig(context):
    r = Rig(context)
    yield r
    r.close()


def test_normal_command_then_stale_states(rig):
    u = rig.send()
    assert np.all(np.isfinite(u)) and np.any(u != 0)
    n = len(rig.commands)
    t0 = time.monotonic()
    rig.spin_until(lambda: len(rig.commands) > n and rig.commands[-1] == [0.0, 0.0])
    elapsed = time.monotonic() - t0
    # the watchdog trips after WATCHDOG periods, checked every period; the zero command goes
    # out in the same timer callback (wall slack for a loaded machine)
    assert "stale" in rig.ctrl.fault
    age = float(rig.ctrl.fault.split("(")[1].split()[0])
    assert WATCHDOG / RATE < age < (WATCHDOG + 1) / RATE + 0.08, rig.ctrl.fault
    assert elapsed < 0.5, elapsed
    assert np.all(rig.send() == 0.0)        # fault latches
    rig.ctrl.on_enable(SetBool.Request(data=True), SetBool.Response())
    assert np.any(rig.send() != 0.0)        # re-enabled


def test_nan_state_gives_zero_torque_at_once(rig):
    assert np.any(rig.send() != 0)
    assert np.all(rig.send(q=(np.nan, 0.2)) == 0.0)     # the same period
    assert "non-finite" in rig.ctrl.fault


def test_reference_beyond_limits_gives_zero_torque(rig):
    assert np.any(rig.send() != 0)
    assert np.all(rig.send(q_ref=(4.0, 0.0)) == 0.0)    # position limit 3.1416 rad
    assert "reference position" in rig.ctrl.fault
    rig.ctrl.on_enable(SetBool.Request(data=True), SetBool.Response())
    assert np.all(rig.send(dq_ref=(0.0, 3.5)) == 0.0)   # velocity limit 3 rad/s
    assert "reference velocity" in rig.ctrl.fault


def test_disable_gives_zero_torque(rig):
    rig.ctrl.on_enable(SetBool.Request(data=False), SetBool.Response())
    assert np.all(rig.send() == 0.0)


def test_excitation_refuses_trajectory_beyond_limits(context, tmp_path):
    from robot_identification.excitation import BSplineTrajectory, save_trajectory
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    fast = BSplineTrajectory(np.array([[0, 2.0, -2.0, 2.0, 0], [0, 0, 0, 0, 0]]).T, duration=1.0)
    path = save_trajectory(fast, tmp_path / "fast.yaml")
    with pytest.raises(ExcitationError, match="violates the velocity limit of joint 'joint1'"):
        ExcitationPublisher(context=context, parameter_overrides=[
            Parameter("trajectory_file", value=str(path)), Parameter("lockstep", value=False)])


def test_parameter_ranges_are_enforced(context):
    from robot_identification.nodes.pd_controller import PDController
    with pytest.raises(InvalidParameterValueException):
        PDController(context=context, parameter_overrides=[Parameter("rate_hz", value=-5.0)])


def test_lockstep_resends_command_for_a_repeated_state(context):
    """When the simulated robot re-publishes a state (its command was lost), the lockstep
    controller sends the same command again instead of stalling the loop."""
    from builtin_interfaces.msg import Time

    from robot_identification.nodes.pd_controller import PDController
    ctrl = PDController(context=context, parameter_overrides=[Parameter("lockstep", value=True)])
    sent = []
    ctrl.pub.publish = lambda m: sent.append(list(m.data))
    names = ["joint1", "joint2"]
    stamp = Time(sec=1, nanosec=0)
    try:
        ref = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
            positions=[0.3, 0.1], velocities=[0.0, 0.0], accelerations=[0.0, 0.0])])
        ref.header.stamp = stamp
        state = JointState(name=names, position=[0.1, 0.2], velocity=[0.0, 0.0])
        state.header.stamp = stamp
        ctrl.on_reference(ref)
        ctrl.on_motor(state)
        ctrl.on_joint(state)
        assert len(sent) == 1 and any(sent[0])
        ctrl.on_motor(state)            # the robot's idle re-publication of the same stamp
        ctrl.on_joint(state)
        ctrl.on_reference(ref)
        assert sent == [sent[0], sent[0]]
    finally:
        ctrl.destroy_node()
