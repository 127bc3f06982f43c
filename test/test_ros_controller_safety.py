"""pd_controller safety over DDS: stale states, frozen or backward stamps, NaN, limits -> the
configured fail-safe at the first control period that can see the fault, an ERROR entry on
/diagnostics, excitation refused until re-enabled; armed once states flow (holds before a
reference); parameter validation; excitation_publisher refuses trajectories beyond the limits."""
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.exceptions import InvalidParameterValueException  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from robot_identification.errors import ExcitationError  # noqa: E402

from conftest import patience, ros_domain_id, wait_until  # noqa: E402
DOMAIN_ID = ros_domain_id(132)
RATE = 100.0          # Hz: 10 ms periods, robust on a loaded machine
TIMEOUT = 0.3         # s, watchdog (a loaded 2-core machine stalls a process ~0.1 s)
NAMES = ["joint1", "joint2"]


class Rig:
    """pd_controller (real-time mode) + excitation_publisher + a test node playing the robot
    (joint and motor states with chosen stamps) and the reference."""

    def __init__(self, context, fail_safe="hold"):
        from robot_identification.nodes.excitation_publisher import ExcitationPublisher
        from robot_identification.nodes.pd_controller import PDController
        self.ctrl = PDController(context=context, parameter_overrides=[
            Parameter("lockstep", value=False), Parameter("rate_hz", value=RATE),
            Parameter("watchdog_timeout", value=TIMEOUT),
            Parameter("fail_safe", value=fail_safe),
            Parameter("diagnostics_period", value=0.05)])
        self.exc = ExcitationPublisher(context=context, parameter_overrides=[
            Parameter("lockstep", value=False), Parameter("state_timeout", value=1.0)])
        self.node = rclpy.create_node("safety_rig", context=context)
        self.pub_joint = self.node.create_publisher(JointState, "joint_states", 10)
        self.pub_motor = self.node.create_publisher(JointState, "motor_states", 10)
        self.pub_ref = self.node.create_publisher(JointTrajectory, "reference", 10)
        self.commands, self.diagnostics = [], []
        self.node.create_subscription(Float64MultiArray, "effort_controller/commands",
                                      lambda m: self.commands.append(list(m.data)), 100)
        self.node.create_subscription(
            DiagnosticArray, "/diagnostics",
            lambda m: self.diagnostics.extend(s for s in m.status
                                              if s.name == "pd_controller: control loop"), 100)
        self.ex = SingleThreadedExecutor(context=context)
        for n in (self.ctrl, self.exc, self.node):
            self.ex.add_node(n)
        pubs = (self.pub_joint, self.pub_motor, self.pub_ref, self.ctrl.pub_diag)
        self.spin_until(lambda: self.ctrl.pub.get_subscription_count() > 0 and all(
            p.get_subscription_count() > 0 for p in pubs))
        self.t = 1.0                  # robot time [s] of the last state
        self.last = None              # (q, theta) of the last state
        self.alive = True             # re-publish the last state every 20 ms (next stamp)
        self.node.create_timer(0.02, self.keep_alive)

    def keep_alive(self):
        if self.alive and self.last is not None:
            self.publish(*self.last, self.next_stamp())

    def next_stamp(self):
        self.t = round(self.t + 1.0 / RATE, 9)
        return self.t

    def publish(self, q, theta, stamp, which=("motor", "joint")):
        st = Time(sec=int(stamp), nanosec=int(round(stamp % 1 * 1e9)))
        pubs = {"motor": (self.pub_motor, theta), "joint": (self.pub_joint, q)}
        for pub, pos in (pubs[w] for w in which):
            msg = JointState(name=NAMES, position=list(pos), velocity=[0.0, 0.0])
            msg.header.stamp = st
            pub.publish(msg)

    def spin_until(self, cond, timeout=5.0):
        end = time.monotonic() + patience(timeout)
        while not cond():
            assert time.monotonic() < end, "timed out"
            self.ex.spin_once(timeout_sec=0.005)

    def reference(self, q_ref=(0.3, 0.1), dq_ref=(0.0, 0.0)):
        """Publish a reference and wait until the controller has it."""
        ref = JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(
            positions=list(q_ref), velocities=list(dq_ref), accelerations=[0.0, 0.0])])
        ref.header.stamp = Time(sec=int(self.t), nanosec=int(round(self.t % 1 * 1e9)))
        self.pub_ref.publish(ref)
        self.spin_until(lambda: self.ctrl.ref is not None
                        and np.array_equal(self.ctrl.ref[1], q_ref, equal_nan=True))

    def state(self, q=(0.1, 0.2), theta=(0.1, 0.2), stamp=None):
        """Motor then joint state with ``stamp`` (default: the next period); returns the
        command computed from it."""
        n, computed = len(self.commands), self.ctrl.commands
        self.last = (q, theta)
        stamp = self.next_stamp() if stamp is None else stamp
        # one exchange at a time, awaited: no keep-alive state until this one is taken (the
        # controller keeps the latest state only, depth 1: a keep-alive could replace it -
        # the stamp-going-back test failed that way under load), and the motor state taken
        # before the joint state is sent (the command is computed on the joint state with
        # the latest motor state; the two topics' delivery order is not guaranteed)
        alive, self.alive = self.alive, False
        for which in ("motor", "joint"):
            before = getattr(self.ctrl, which)      # a new tuple per message taken
            self.publish(q, theta, stamp, [which])
            self.spin_until(lambda: getattr(self.ctrl, which) is not before
                            and abs(getattr(self.ctrl, which)[0] - stamp) < 1e-9)
        self.alive = alive
        assert self.ctrl.commands > computed
        # await the command computed from this state on the wire, however late it arrives
        # (under load the previous one may still be in flight: the last received is not it)
        u = list(self.ctrl.last_u)
        self.spin_until(lambda: u in self.commands[n:])
        return np.array(u)

    def send(self, q=(0.1, 0.2), theta=(0.1, 0.2), q_ref=(0.3, 0.1), dq_ref=(0.0, 0.0)):
        self.reference(q_ref, dq_ref)
        return self.state(q, theta)

    def hold_command(self, q, theta):
        """Fail-safe 'hold' from the core controller law: PD to ``q`` at zero velocity +
        gravity compensation, measured at rest."""
        meas = {"q": np.array(q), "dq": np.zeros(2), "theta": np.array(theta),
                "dtheta": np.zeros(2)}
        return self.ctrl.law(np.array(q), np.zeros(2), meas)

    def error_status(self):
        self.spin_until(lambda: any(s.level == DiagnosticStatus.ERROR
                                    for s in self.diagnostics))
        return next(s for s in self.diagnostics if s.level == DiagnosticStatus.ERROR)

    def enable(self):
        self.ctrl.on_enable(SetBool.Request(data=True), SetBool.Response())

    def start_excitation(self):
        return self.exc.on_start(Trigger.Request(), Trigger.Response())

    def close(self):
        self.ex.shutdown()
        for n in (self.ctrl, self.exc, self.node):
            n.destroy_node()


@pytest.fixture
def rig(context):
    r = Rig(context)
    yield r
    r.close()


def fault_reaction(rig, q=(0.1, 0.2), theta=(0.1, 0.2)):
    """The fault is latched, reported as an ERROR on /diagnostics, the fail-safe holds, and
    the excitation is refused until ~/enable; after it, the excitation may start."""
    assert rig.ctrl.fault
    status = rig.error_status()
    assert rig.ctrl.fault in status.message
    rig.last = (q, theta)          # keep-alive states: finite, within the limits
    rig.alive = True
    values = {kv.key: kv.value for kv in status.values}
    assert values["state"] == "fault" and int(values["faults"]) == 1
    rig.spin_until(lambda: rig.exc.status is not None
                   and rig.exc.status[0] == DiagnosticStatus.ERROR)
    refused = rig.start_excitation()
    assert not refused.success and rig.ctrl.fault in refused.message
    # (re-enabled on stale states the watchdog would trip again at once; on a faulty state
    # still in flight the check would: once a good one is taken, none is behind it)
    rig.spin_until(lambda: rig.ctrl.state_age() < TIMEOUT / 2
                   and np.array_equal(rig.ctrl.joint[1], q))
    rig.enable()
    u = rig.state(q, theta)                    # fresh state, no reference yet: holding
    np.testing.assert_allclose(u, rig.hold_command(q, theta), rtol=1e-9, atol=1e-9)
    # (the excitation publisher's reference follows the state stamps: it starts once it has
    # seen them advance again)
    rig.spin_until(lambda: rig.exc.status is not None and rig.exc.stamps_advance
                   and rig.exc.status[0] == DiagnosticStatus.OK)
    assert rig.start_excitation().success, rig.exc.not_ready()
    rig.exc.on_stop(Trigger.Request(), Trigger.Response())


def test_holds_once_states_flow_then_tracks(rig):
    assert not rig.start_excitation().success          # no states yet
    assert rig.ctrl.state == "waiting" and rig.commands == []
    u = rig.state()
    np.testing.assert_allclose(u, rig.hold_command((0.1, 0.2), (0.1, 0.2)), atol=1e-9)
    assert np.any(u != 0)                               # gravity compensation (vertical arm)
    assert rig.ctrl.state == "holding"
    u = rig.send(q_ref=(0.3, 0.1))
    assert not np.allclose(u, rig.hold_command((0.1, 0.2), (0.1, 0.2)))
    assert rig.ctrl.state == "running" and rig.ctrl.zero_commands == 0


def test_stale_states_trip_at_the_first_period_past_the_timeout(rig):
    rig.send()
    rig.alive = False
    n = rig.ctrl.fail_safe_commands
    rig.spin_until(lambda: rig.ctrl.fail_safe_commands > n)
    sent = rig.ctrl.commands
    rig.spin_until(lambda: len(rig.commands) >= sent)     # delivered
    assert "stale" in rig.ctrl.fault
    age = float(rig.ctrl.fault.split("(")[1].split()[0])
    stale_for = float(rig.ctrl.fault.split("none for ")[1].split()[0])
    # tripped by the first watchdog tick past the timeout, counted on the controller's own
    # running time (a stall of this process counts as at most 3 periods)
    assert TIMEOUT < stale_for <= age, rig.ctrl.fault
    assert stale_for - TIMEOUT <= min(rig.ctrl.watchdog_gap, 3 / RATE) + 1e-4, (
        rig.ctrl.fault, rig.ctrl.watchdog_gap)
    # the fail-safe command went out in the same timer callback: hold the last state
    np.testing.assert_allclose(rig.commands[-1], rig.hold_command((0.1, 0.2), (0.1, 0.2)),
                               atol=1e-9)
    fault_reaction(rig)


def test_frozen_stamps_trip(rig):
    rig.send()
    rig.alive = False
    rig.state()                                # the stamp advanced once: the robot runs
    frozen = rig.t
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        rig.state(stamp=frozen)
    time.sleep(0.005)
    u = rig.state(stamp=frozen)                # past the timeout: this state trips
    assert "frozen" in rig.ctrl.fault
    np.testing.assert_allclose(u, rig.hold_command((0.1, 0.2), (0.1, 0.2)), atol=1e-9)
    fault_reaction(rig)


def test_stamp_going_back_trips(rig):
    rig.send()
    u = rig.state(stamp=rig.t - 0.5)
    assert "went back" in rig.ctrl.fault
    np.testing.assert_allclose(u, rig.hold_command((0.1, 0.2), (0.1, 0.2)), atol=1e-9)
    fault_reaction(rig)


def test_nan_state_gives_fail_safe_in_the_same_period(rig):
    assert np.any(rig.send() != 0)
    u = rig.state(q=(np.nan, 0.2))             # hold with the last finite state
    assert "non-finite" in rig.ctrl.fault
    np.testing.assert_allclose(u, rig.hold_command((0.1, 0.2), (0.1, 0.2)), atol=1e-9)
    fault_reaction(rig)


def test_limit_violations_give_fail_safe_in_the_same_period(rig):
    assert np.any(rig.send() != 0)
    u = rig.send(q_ref=(4.0, 0.0))             # position limit 3.1416 rad
    assert "reference position" in rig.ctrl.fault
    np.testing.assert_allclose(u, rig.hold_command((0.1, 0.2), (0.1, 0.2)), atol=1e-9)
    fault_reaction(rig)
    rig.send(dq_ref=(0.0, 3.5))                # velocity limit 3 rad/s
    assert "reference velocity" in rig.ctrl.fault
    rig.enable()
    u = rig.send(q=(3.2, 0.2), theta=(3.2, 0.2))   # measured position beyond the limit
    assert "position [3.2" in rig.ctrl.fault
    np.testing.assert_allclose(u, rig.hold_command((3.2, 0.2), (3.2, 0.2)),
                               atol=1e-9)


def test_zero_torque_fail_safe(context):
    r = Rig(context, fail_safe="zero")
    try:
        assert np.any(r.send() != 0)
        assert np.all(r.state(q=(np.nan, 0.2)) == 0.0)
        assert r.ctrl.zero_commands == r.ctrl.fail_safe_commands >= 1
    finally:
        r.close()


def test_disable_gives_fail_safe(rig):
    rig.send()
    rig.ctrl.on_enable(SetBool.Request(data=False), SetBool.Response())
    np.testing.assert_allclose(rig.send(), rig.hold_command((0.1, 0.2), (0.1, 0.2)),
                               atol=1e-9)
    assert not rig.start_excitation().success


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
    with pytest.raises(ValueError, match="fail_safe"):
        PDController(context=context, parameter_overrides=[
            Parameter("fail_safe", value="brake")])


def test_lockstep_resends_command_for_a_repeated_state(context):
    """When the simulated robot re-publishes a state (its command was lost), the lockstep
    controller sends the same command again instead of stalling the loop."""
    from robot_identification.nodes.pd_controller import PDController
    ctrl = PDController(context=context, parameter_overrides=[Parameter("lockstep", value=True)])
    sent = []
    ctrl.pub.publish = lambda m: sent.append(list(m.data))
    stamp = Time(sec=1, nanosec=0)
    try:
        ref = JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(
            positions=[0.3, 0.1], velocities=[0.0, 0.0], accelerations=[0.0, 0.0])])
        ref.header.stamp = stamp
        state = JointState(name=NAMES, position=[0.1, 0.2], velocity=[0.0, 0.0])
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


def test_a_command_held_open_loop_stays_within_the_velocity_limits(context):
    """Root cause of the runaways under load (hardware_robot_study, puma560 at 250 Hz with two
    busy loops: 1.116 and 1.092 x the velocity limit in 2 of 80 sessions): the robot braked
    (a starved controller's command came past its deadline) while the reference ran on; the
    controller's next command - a large torque towards the reference the arm now lagged - was
    the last it sent for a while, and the robot applied it open loop for the whole 0.1 s
    deadline (30 N*m on joint 3: from rest to 1.116 x its limit). A command's deadline is now
    the time its torque, held from the state it answers, takes to bring a joint to its limit
    (checked against pinocchio's ABA with the rotor inertia as armature), and the velocity
    the law asks of a joint is clipped to 0.9 x its limit (Khatib's velocity limiting). The
    arm at rest, the reference 0.3 rad ahead and moving at 0.9 x the limit (the lag after a
    brake): held until its deadline the command keeps every joint within its limit; held for
    the 0.1 s deadline of before, the unclipped law's command does not."""
    import pinocchio as pin

    from robot_identification.model import load_robot
    from robot_identification.nodes._common import command_deadline_ns, command_state_ns
    from robot_identification.nodes._hardware import HardwareArm, make_physics
    from robot_identification.nodes.pd_controller import PDController
    model = load_robot("puma560")
    rate, names = 250.0, list(model.joint_names)
    ctrl = PDController(context=context, parameter_overrides=[
        Parameter("robot", value="puma560"), Parameter("lockstep", value=False),
        Parameter("rate_hz", value=rate), Parameter("watchdog_timeout", value=1.0),
        Parameter("feedforward", value=True),
        Parameter("joint_states_topic", value="openloop/joint_states"),
        Parameter("reference_topic", value="openloop/reference"),
        Parameter("command_topic", value="openloop/commands")])
    node = rclpy.create_node("openloop_rig", context=context)
    pub_joint = node.create_publisher(JointState, "openloop/joint_states", 10)
    pub_ref = node.create_publisher(JointTrajectory, "openloop/reference", 10)
    commands = []
    node.create_subscription(Float64MultiArray, "openloop/commands", commands.append, 100)
    ex = SingleThreadedExecutor(context=context)
    for n in (ctrl, node):
        ex.add_node(n)
    v_max = np.array([j.limits.velocity for j in model.config.joints])
    q = np.array([0.1, 0.6, -0.4, 0.2, -0.3, 0.1])
    ahead = np.array([1, -1, 1, 1, -1, 1])
    q_ref, dq_ref = q + 0.3 * ahead, 0.9 * v_max * ahead
    try:
        wait_until(ex, lambda: ctrl.pub.get_subscription_count() > 0
                   and pub_joint.get_subscription_count() > 0
                   and pub_ref.get_subscription_count() > 0, "discovery")
        stamp = node.get_clock().now()
        ref = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
            positions=q_ref.tolist(), velocities=dq_ref.tolist(), accelerations=[0.0] * 6)])
        ref.header.stamp = stamp.to_msg()
        pub_ref.publish(ref)
        wait_until(ex, lambda: ctrl.ref is not None, "the reference")
        state = JointState(name=names, position=q.tolist(), velocity=[0.0] * 6)
        state.header.stamp = stamp.to_msg()
        pub_joint.publish(state)
        wait_until(ex, lambda: any(command_state_ns(m) == stamp.nanoseconds
                                   for m in commands), "the command answering the state")
        law, base = ctrl.law, ctrl.law_for(ctrl.gain_scale)
    finally:
        ex.shutdown()
        for n in (node, ctrl):
            n.destroy_node()
    msg = next(m for m in commands if command_state_ns(m) == stamp.nanoseconds)
    u = np.array(msg.data)
    held = (command_deadline_ns(msg) - stamp.nanoseconds) * 1e-9
    # the velocity limiting at rest: u = kd * (+-0.9 v_max) + g(q) where the clip applies
    g = law.gravity(q)
    v_d = dq_ref + law.kp / law.kd * 0.3 * ahead
    expected = law.kp * 0.3 * ahead + law.kd * dq_ref + g
    clipped = np.abs(v_d) > 0.9 * v_max
    expected[clipped] = (law.kd * 0.9 * v_max * np.sign(v_d) + g)[clipped]
    pm = pin.Model(model.pin_model)
    idx = np.asarray(model.velocity_indices)
    pm.armature[idx] = [j.drive["rotor_inertia"] * r ** 2
                        for j, r in zip(model.config.joints, model.gear_ratios)]
    # + the feed-forward (on here): the reference's inverse dynamics without gravity
    # (pinocchio rnea, zero reference acceleration) and the simulator's friction at dq_ref
    from robot_identification.simulation import FrictionModel
    v = np.zeros(pm.nv)
    v[idx] = dq_ref
    qc = model.pin_configuration(q_ref)
    rd = pm.createData()
    ff = (pin.rnea(pm, rd, qc, v, np.zeros(pm.nv))
          - pin.computeGeneralizedGravity(pm, rd, qc))[idx] + FrictionModel(model)(dq_ref)
    np.testing.assert_allclose(u, np.clip(expected + ff, -law.limits, law.limits), rtol=1e-9)
    # the deadline: the first joint to reach its limit under u held (independent: ABA)
    tau = np.zeros(pm.nv)
    tau[idx] = u
    a = pin.aba(pm, pm.createData(), model.pin_configuration(q), np.zeros(pm.nv), tau)[idx]
    assert held == pytest.approx(min(0.1, np.min(v_max / np.abs(a)) - 1 / rate), abs=1e-6)

    def peak(command, seconds):
        """Largest |dq| / limit with ``command`` held open loop from rest for ``seconds``."""
        arm = HardwareArm(make_physics(model, rate), q)
        arm.start(0.0)
        arm.command(command, 0.0, deadline=seconds)
        states = arm.advance(0.3)
        return max(float(np.max(np.abs(s["dq"]) / v_max)) for s in states)
    assert peak(u, held) <= 1.0
    unclipped = base(q_ref, dq_ref, {"q": q, "dq": np.zeros(6)})
    assert peak(unclipped, 0.1) > 1.0
