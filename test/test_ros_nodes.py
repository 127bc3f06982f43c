"""simulated_robot lockstep/reset and excitation_publisher streaming/trajectory-controller output,
in process (ROS_DOMAIN_ID 138)."""
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import patience, ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(138)


def spin_until(ex, cond, timeout=10.0):
    end = time.monotonic() + patience(timeout)
    while not cond():
        assert time.monotonic() < end, "timed out"
        ex.spin_once(timeout_sec=0.01)


def test_simulated_robot_lockstep_and_reset(context):
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    sim = SimulatedRobot(context=context, parameter_overrides=[
        Parameter("initial_positions", value=[0.3, -0.2])])
    node = rclpy.create_node("sim_client", context=context)
    states, motors = [], []
    node.create_subscription(JointState, "joint_states", states.append, 100)
    node.create_subscription(JointState, "motor_states", motors.append, 100)
    pub = node.create_publisher(Float64MultiArray, "effort_controller/commands", 100)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(sim)
    ex.add_node(node)
    try:
        spin_until(ex, lambda: states)                 # initial state re-published while idle
        first = states[-1]
        assert first.header.stamp.sec == 0 and first.header.stamp.nanosec == 0
        np.testing.assert_allclose(first.position, [0.3, -0.2], atol=1e-5)
        n = len(states)
        u = list(sim.sim.dynamics.gravity(np.array([0.3, -0.2])))   # hold still
        for _ in range(5):
            pub.publish(Float64MultiArray(data=u))
        spin_until(ex, lambda: sim.commands == 5)
        spin_until(ex, lambda: any(s.header.stamp.nanosec == 5_000_000 for s in states[n:]))
        assert sim.sim.state.t == pytest.approx(0.005)   # one period per command
        assert list(motors[-1].effort) == pytest.approx(u)
        pub.publish(Float64MultiArray(data=[float("nan"), 0.0]))   # ignored
        pub.publish(Float64MultiArray(data=[1.0]))                  # ignored
        for _ in range(30):
            ex.spin_once(timeout_sec=0.01)
        assert sim.commands == 5 and sim.sim.state.t == pytest.approx(0.005)
        res = sim.on_reset(Trigger.Request(), Trigger.Response())
        assert res.success and sim.sim.state.t == 0.0
    finally:
        ex.shutdown()
        sim.destroy_node()
        node.destroy_node()


def test_excitation_streams_per_clock_tick_and_sends_the_trajectory(context):
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    exc = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("trajectory_controller_topic", value="/jtc/joint_trajectory"),
        Parameter("trajectory_sample_period", value=0.1), Parameter("hold_time", value=0.0)])
    node = rclpy.create_node("exc_client", context=context)
    refs, jtc = [], []
    node.create_subscription(JointTrajectory, "reference", refs.append, 1000)
    node.create_subscription(JointTrajectory, "/jtc/joint_trajectory", jtc.append, 10)
    clock = node.create_publisher(Clock, "/clock", 1000)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(exc)
    ex.add_node(node)
    traj = exc.traj
    try:
        spin_until(ex, lambda: clock.get_subscription_count() > 0
                   and exc.pub_jtc.get_subscription_count() > 0)
        clock.publish(Clock())
        for _ in range(20):
            ex.spin_once(timeout_sec=0.01)
        assert not refs                                   # nothing before ~/start
        assert exc.on_start(Trigger.Request(), Trigger.Response()).success
        spin_until(ex, lambda: jtc)
        points = jtc[0].points
        assert len(points) == int(traj.duration / 0.1) + 1
        # the controller moves to the first point in move_to_start_min_time (1 s by default)
        first, last = points[0].time_from_start, points[-1].time_from_start
        assert first.sec + 1e-9 * first.nanosec == pytest.approx(1.0)
        assert last.sec + 1e-9 * last.nanosec == pytest.approx(1.0 + traj.duration)
        np.testing.assert_allclose(points[5].positions, traj.evaluate(0.5)[0][0])
        for k in range(3):                                # ticks at 2.000, 2.001, 2.002 s
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = 2, k * 1_000_000
            clock.publish(msg)
            clock.publish(msg)                            # a repeated tick re-sends
        spin_until(ex, lambda: len(refs) >= 3)
        for _ in range(20):
            ex.spin_once(timeout_sec=0.01)
        stamps = [r.header.stamp.nanosec for r in refs]     # the same reference again
        assert sorted(set(stamps)) == [0, 1_000_000, 2_000_000] and len(stamps) == 6
        assert refs[-1].points[0].positions == refs[-2].points[0].positions
        q, dq, ddq = traj.evaluate(0.002)
        last = [r for r in refs if r.header.stamp.nanosec == 2_000_000][0]
        np.testing.assert_allclose(last.points[0].positions, q[0])
        np.testing.assert_allclose(last.points[0].accelerations, ddq[0])
        msg = Clock()
        msg.clock.sec = 2 + int(traj.duration) + 1        # past the end: stops
        clock.publish(msg)
        spin_until(ex, lambda: not exc.active)
    finally:
        ex.shutdown()
        exc.destroy_node()
        node.destroy_node()


def test_move_to_start_segment_at_limited_velocity(context):
    """Away from the first point, the reference first moves there on a quintic whose peak
    velocity is move_to_start_velocity, then plays the trajectory shifted by its duration."""
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    exc = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("move_to_start_velocity", value=0.25)])
    try:
        q1 = exc.traj.evaluate(0.0)[0][0]
        exc.q_now = q1 + np.array([0.5, -0.2])
        assert exc.on_start(Trigger.Request(), Trigger.Response()).success
        q0, d, T = exc.move
        assert T == pytest.approx(1.875 * 0.5 / 0.25)
        taus = np.linspace(0.0, T, 201)
        pts = [exc.point(t) for t in taus]
        pos = np.array([p.positions for p in pts])
        vel = np.array([p.velocities for p in pts])
        np.testing.assert_allclose(pos[0], exc.q_now)
        np.testing.assert_allclose(pos[-1], q1, atol=1e-12)
        assert np.abs(vel).max() == pytest.approx(0.25, rel=1e-3)
        np.testing.assert_allclose(np.gradient(pos, taus, axis=0), vel, atol=2e-3)
        later = exc.point(T + 0.7).positions
        np.testing.assert_allclose(later, exc.traj.evaluate(0.7)[0][0])
    finally:
        exc.destroy_node()


def test_hardware_robot_stamps_its_1khz_periods_exactly(context):
    """hardware_robot stamps each period with the system clock, exactly 1 ms apart at 1 kHz
    in integer nanoseconds (from one float64 of seconds since 1970 they were 999680-1000192
    ns apart: the stanford_arm --jtc session at 1 kHz of benchmarks/hardware_robot_study.py
    identified joint3.rotor_inertia -4.3e-4 kg from that noise and the identifier refused)."""
    from robot_identification.nodes.hardware_robot import HardwareRobot
    robot = HardwareRobot(context=context, parameter_overrides=[
        Parameter("robot", value="stanford_arm"), Parameter("rate_hz", value=1000.0),
        Parameter("trajectory_controller_topic", value="joint_trajectory_controller/"
                  "joint_trajectory")])
    node = rclpy.create_node("hw_stamp_client", context=context)
    stamps = []
    node.create_subscription(JointState, "joint_states", lambda m: stamps.append(
        m.header.stamp.sec * 10**9 + m.header.stamp.nanosec), 1000)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(robot)
    ex.add_node(node)
    try:
        spin_until(ex, lambda: len(stamps) >= 300, timeout=30.0)
        gaps = np.diff(stamps)
        assert np.all(gaps > 0) and np.all(gaps % 1_000_000 == 0), sorted(set(gaps.tolist()))
    finally:
        ex.shutdown()
        robot.destroy_node()
        node.destroy_node()
