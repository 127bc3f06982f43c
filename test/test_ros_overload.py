"""Overload on the real-time path, injected deterministically (no CPU load, no wall-clock
assertions): the nodes' clocks and callbacks are driven by the test.

- excitation_publisher follows the robot's clock (joint state stamps): a robot that slows
  down or stalls is driven along the trajectory in its own time; a stamp going back stops it;
- pd_controller: a stall of its own process does not trip the watchdog (states may be queued
  behind it) but is counted (missed periods); states missing while it runs do trip it; a
  reference that stopped arriving is held at zero velocity instead of driven on, counted;
- simulated_robot: a stall skips periods (one period per tick, never a long step with a stale
  command), counted on /diagnostics; a diverging integration engages the brakes instead of
  ending the node with a traceback;
- the reference's look-ahead (issue #24): the excitation publisher starved mid-excitation
  (robot, controller and publisher wired by hand, the references through a CDR round trip):
  the controller follows the trajectory the last reference carries, then its stop, then holds
  (counted); the publisher rejoins from where the controller is;
- the elastic arm's motor loop tolerates no period of command delay (test_command_delay.py):
  the controller acts on the motor state of the link state's stamp, whichever comes first,
  and the robot applies a command for one period only (``command_timeout`` auto), so a
  controller that answers late slows the robot's clock instead of destabilising the arm
  (with the former 0.01 s the same late controller trips the velocity limit).
"""
import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from conftest import ros_domain_id  # noqa: E402

pytestmark = pytest.mark.ros
DOMAIN_ID = ros_domain_id(150)
NAMES = ["joint1", "joint2"]          # zollo_planar


def state(t, q=(0.1, 0.2), dq=(0.0, 0.0)):
    msg = JointState(name=NAMES, position=list(q), velocity=list(dq))
    ns = int(round(t * 1e9))
    msg.header.stamp = Time(sec=ns // 10**9, nanosec=ns % 10**9)
    return msg


def stamp_of(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


class FakeClock:
    """The node clock [s] as the test sets it."""

    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t


def test_reference_follows_the_robot_clock(context):
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    exc = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=250.0),
        Parameter("require_ready", value=False), Parameter("hold_time", value=0.0),
        Parameter("controller_status", value=""), Parameter("lookahead", value=0.0)])
    refs = []
    exc.pub.publish = refs.append
    try:
        assert exc.robot_clock and exc.reference_clock == "states"
        q1 = exc.traj.evaluate(0.0)[0][0]
        exc.on_joint(state(5.0, q1))                     # at the first point: no move
        assert exc.on_start(Trigger.Request(), Trigger.Response()).success
        assert exc.move is None
        # 1 kHz states: a reference every 4th (250 Hz of robot time), stamped like the state
        for k in range(1, 13):
            exc.on_joint(state(5.0 + 0.001 * k, q1))
        assert [round(stamp_of(r), 6) for r in refs] == [5.001, 5.005, 5.009]
        # the robot stalls or slows down (its stamps advance less than the wall clock, which
        # this node never reads): the reference stays with the robot's time; without a
        # look-ahead (lookahead 0), a stamp more than max_reference_step (0.01 s) past the
        # last reference (this node was starved and missed the states between, or the robot
        # stalled): the trajectory resumes where it stopped, one period on, instead of
        # jumping 0.587 s ahead (with one: test_starved_excitation_publisher_...)
        exc.on_joint(state(5.013, q1))
        exc.on_joint(state(5.6, q1))
        exc.on_joint(state(5.604, q1))
        taus = [0.0, 0.004, 0.008, 0.012, 0.016, 0.020]
        for r, tau in zip(refs, taus):
            q, dq, _ = exc.traj.evaluate(tau)
            np.testing.assert_allclose(r.points[0].positions, q[0], atol=1e-12)
            np.testing.assert_allclose(r.points[0].velocities, dq[0], atol=1e-12)
        assert [round(stamp_of(r), 6) for r in refs[3:]] == [5.013, 5.6, 5.604]
        assert exc.reference_pauses == 1 and exc.reference_lag == pytest.approx(0.583)
        n = len(refs)
        exc.on_joint(state(5.604, q1))                   # a repeated stamp: nothing new
        assert len(refs) == n and exc.active
        exc.on_joint(state(1.0, q1))                     # the robot was restarted: stop
        assert not exc.active and exc.stamp_problems == 1
        assert len(refs) == n + 1                        # the last point, at rest
        assert list(refs[-1].points[0].positions) == list(refs[-2].points[0].positions)
        assert not any(refs[-1].points[0].velocities)
        n += 1
        # frozen stamps: start refused with the reason
        exc.on_joint(state(1.0, q1))
        exc.require_ready = True
        refused = exc.on_start(Trigger.Request(), Trigger.Response())
        assert not refused.success and "do not advance" in refused.message, refused.message
    finally:
        exc.destroy_node()


def make_controller(context, **params):
    from robot_identification.nodes.pd_controller import PDController
    ctrl = PDController(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=1000.0),
        Parameter("watchdog_timeout", value=0.05),
        *[Parameter(k, value=v) for k, v in params.items()]])
    clock = FakeClock()
    ctrl.now = clock
    sent = []
    ctrl.pub.publish = lambda m: sent.append(np.array(m.data))
    ctrl.pub_diag.publish = lambda m: None
    return ctrl, clock, sent


def feed(ctrl, clock, t0, n, dt=0.001, tick=True):
    """``n`` periods: a motor and joint state each (stamps from ``t0``), then a watchdog
    tick; the node clock advances ``dt`` per period."""
    for k in range(n):
        clock.t += dt
        ctrl.on_motor(state(t0 + k * dt))
        ctrl.on_joint(state(t0 + k * dt))
        if tick:
            ctrl.on_watchdog()


def test_own_stall_is_counted_not_tripped(context):
    ctrl, clock, sent = make_controller(context)
    try:
        feed(ctrl, clock, 1.0, 20)
        assert ctrl.state == "holding" and ctrl.fault is None
        # this process stalls 0.5 s (10 x the watchdog timeout): no callback ran; the states
        # the robot sent meanwhile are queued behind the stall
        clock.t += 0.5
        ctrl.on_watchdog()                               # the timer runs first after it
        clock.t += 0.001
        ctrl.on_watchdog()
        assert ctrl.fault is None
        assert ctrl.missed_periods == 499 and ctrl.longest_stall == pytest.approx(0.5)
        feed(ctrl, clock, 1.52, 5)                        # the queued (latest) state
        assert ctrl.fault is None and ctrl.fail_safe_commands == 0
        # states missing while this node runs: tripped by the first tick past the timeout
        ticks = 0
        while ctrl.fault is None:
            clock.t += 0.001
            ctrl.on_watchdog()
            ticks += 1
        assert ticks == 50 and "stale joint states" in ctrl.fault   # 0.05 s of 1 ms ticks
        assert ctrl.fail_safe_commands == 1 and ctrl.state_gaps == 1
    finally:
        ctrl.destroy_node()


def test_stale_reference_is_held_not_driven_on(context):
    ctrl, clock, sent = make_controller(context)
    try:
        feed(ctrl, clock, 1.0, 3)
        ref = JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(
            positions=[0.3, 0.1], velocities=[0.5, -0.2], accelerations=[0.0, 0.0])])
        ctrl.on_reference(ref)
        feed(ctrl, clock, 1.003, 1)
        meas = ctrl.measurement()
        np.testing.assert_allclose(sent[-1], ctrl.law(np.array([0.3, 0.1]),
                                                      np.array([0.5, -0.2]), meas))
        # the reference stops while the states go on: after the watchdog timeout the last
        # reference position is held at zero velocity
        feed(ctrl, clock, 1.004, 60)
        assert ctrl.fault is None and ctrl.stale_reference_commands >= 9
        np.testing.assert_allclose(sent[-1], ctrl.law(np.array([0.3, 0.1]), np.zeros(2),
                                                      ctrl.measurement()))
        stale = ctrl.stale_reference_commands
        ctrl.on_reference(ref)                            # flowing again: tracked again
        feed(ctrl, clock, 1.064, 1)
        assert ctrl.stale_reference_commands == stale
        np.testing.assert_allclose(sent[-1], ctrl.law(np.array([0.3, 0.1]),
                                                      np.array([0.5, -0.2]),
                                                      ctrl.measurement()))
    finally:
        ctrl.destroy_node()


def test_simulated_robot_skips_periods_and_brakes_on_divergence(context):
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    sim = SimulatedRobot(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=1000.0),
        Parameter("command_timeout", value=0.01)])
    states, diagnostics = [], []
    sim.pub_joint.publish = states.append
    sim.pub_diag.publish = lambda m: diagnostics.extend(m.status)
    try:
        u = sim.sim.dynamics.gravity(np.asarray(sim.q0, dtype=float))
        sim.on_command(Float64MultiArray(data=list(u)))
        sim.count_tick = lambda now: None                 # ticks counted below, by hand
        for now in (10.0, 10.001, 10.002, 10.302, 10.303):   # a 0.3 s stall of the process
            SimulatedRobot.count_tick(sim, now)
            sim.on_tick()
        # one period per tick: the robot's clock fell behind, no long step
        assert [round(stamp_of(s), 6) for s in states] == [0.001, 0.002, 0.003, 0.004, 0.005]
        assert sim.skipped == 299 and sim.longest_stall == pytest.approx(0.3)
        sim.publish_status()
        st = diagnostics[-1]
        values = {kv.key: kv.value for kv in st.values}
        assert st.name == "simulated_robot: real time" and st.level == DiagnosticStatus.WARN
        assert values["skipped_periods"] == "299"
        assert sim.real_time_factor() == pytest.approx(0.005 / 0.303)   # robot / wall time
        assert values["real_time_factor"] == f"{0.005 / 0.303:.3f}"
        # a command that makes the integration diverge: brakes (the last finite state held,
        # the clock runs), ERROR on /diagnostics, no exception out of the timer callback
        sim.on_command(Float64MultiArray(data=[1e200, -1e200]))
        sim.on_tick()
        sim.on_tick()
        assert sim.diverged and "diverged" in sim.diverged
        assert np.all(np.isfinite(states[-1].position))
        assert states[-1].position == states[-2].position
        assert stamp_of(states[-1]) > stamp_of(states[-2])
        sim.publish_status()
        assert diagnostics[-1].level == DiagnosticStatus.ERROR
        assert "brakes" in diagnostics[-1].message
        assert sim.on_reset(Trigger.Request(), Trigger.Response()).success
        assert sim.diverged is None
    finally:
        sim.destroy_node()


def test_simulated_robot_waits_for_a_starved_controller(context):
    """The latest command is applied for at most command_timeout of robot time: then the
    robot's clock waits (no state published, counted) until a command comes."""
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    sim = SimulatedRobot(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=1000.0),
        Parameter("command_timeout", value=0.003)])
    states = []
    sim.pub_joint.publish = states.append
    try:
        u = list(sim.sim.dynamics.gravity(np.asarray(sim.q0, dtype=float)))
        sim.on_command(Float64MultiArray(data=u))
        for _ in range(6):                                # the controller sends nothing more
            sim.on_tick()
        assert [round(stamp_of(s), 6) for s in states] == [0.001, 0.002, 0.003]
        assert sim.waited == 3 and sim.sim.t == pytest.approx(0.003)
        sim.on_command(Float64MultiArray(data=u))          # it caught up: the clock runs on
        sim.on_tick()
        assert round(stamp_of(states[-1]), 6) == 0.004 and sim.waited == 3
    finally:
        sim.destroy_node()


def test_elastic_controller_acts_on_the_motor_state_of_the_stamp(context):
    ctrl, clock, sent = make_controller(context)          # zollo_planar: elastic
    try:
        feed(ctrl, clock, 1.0, 3)
        assert len(sent) == 3
        # the link state of the next stamp arrives before its motor state: no command from
        # the previous period's motor state (a period of delay), one once the motor state
        # of this stamp is in
        clock.t += 0.001
        ctrl.on_joint(state(1.003, q=(0.1, 0.2)))
        assert len(sent) == 3
        ctrl.on_motor(state(1.003, q=(0.13, 0.24)))
        assert len(sent) == 4
        np.testing.assert_allclose(sent[-1], ctrl.law(ctrl.hold_q, np.zeros(2), {
            "q": np.array([0.1, 0.2]), "dq": np.zeros(2), "theta": np.array([0.13, 0.24]),
            "dtheta": np.zeros(2)}))
        ctrl.on_motor(state(1.004, q=(0.13, 0.24)))        # motor first: waits for the link
        assert len(sent) == 4
        ctrl.on_joint(state(1.004))
        assert len(sent) == 5
        # a motor topic that lags by more than the watchdog timeout is used as it is (the
        # commands go on; no silent stop)
        for k in range(40):                 # within 0.05 s of the motor state: waiting
            clock.t += 0.001
            ctrl.on_joint(state(1.005 + 0.001 * k))
        assert len(sent) == 5
        ctrl.on_joint(state(1.06))          # 0.056 s behind: computed with it
        assert len(sent) == 6
        assert ctrl.fault is None
    finally:
        ctrl.destroy_node()


def closed_loop(context, command_timeout, periods, answer_every=3):
    """simulated_robot (zollo_planar, real time) and pd_controller wired by hand: the robot
    ticks every period, the controller gets the newest states (keep-latest) and answers only
    every ``answer_every`` ticks (a starved process); its command reaches the robot at once.
    Returns the robot, the controller and the peak link speed [rad/s]."""
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    sim = SimulatedRobot(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=1000.0),
        Parameter("command_timeout", value=command_timeout)])
    ctrl, clock, sent = make_controller(context, watchdog_timeout=10.0)
    latest = {}
    sim.pub_motor.publish = lambda m: latest.__setitem__("motor", m)
    sim.pub_joint.publish = lambda m: latest.__setitem__("joint", m)
    sim.pub_clock = None
    ctrl.pub.publish = sim.on_command
    q0 = np.asarray(sim.q0, dtype=float)
    ctrl.on_reference(JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(
        positions=list(q0 + 0.02), velocities=[0.0, 0.0])]))
    peak = 0.0
    for k in range(periods):
        sim.on_tick()
        clock.t += 0.001
        ctrl.ref_time = clock.t                           # the reference is fresh
        if k % answer_every == 0 and latest:
            ctrl.on_motor(latest["motor"])
            ctrl.on_joint(latest["joint"])
        peak = max(peak, float(np.max(np.abs(sim.sim.state.dq))))
        if ctrl.fault is not None:
            break
    return sim, ctrl, peak


def test_late_controller_slows_the_elastic_robot_instead_of_destabilising_it(context):
    sim, ctrl, peak = closed_loop(context, -1.0, 900)
    try:
        assert sim.command_timeout == pytest.approx(0.001) and sim.tolerated_delay == 0
        assert ctrl.fault is None and peak < 1.5          # half the 3 rad/s limit
        # the robot's clock waited for the controller: 1 step per answer, so about a third
        # of the ticks stepped (the clock at about 1/3 of real time), counted
        assert sim.waited > 500 and sim.sim.t == pytest.approx(0.001 * (900 - sim.waited))
    finally:
        sim.destroy_node()
        ctrl.destroy_node()
    # the former fixed 0.01 s: the robot runs on with commands up to 2 periods old and the
    # motor loop diverges until the controller's velocity limit trips
    sim, ctrl, peak = closed_loop(context, 0.01, 900)
    try:
        assert ctrl.fault is not None and "velocity" in ctrl.fault, ctrl.fault
        # says why (its gains, scaled at start-up to tolerate the 1 period of a robot that
        # runs free of it, test_ros_gain_choice.py, not the 2 of this robot)
        assert "tolerates 1 periods of command delay" in ctrl.fault
    finally:
        sim.destroy_node()
        ctrl.destroy_node()


def starved_publisher(context, t0, starved, ticks, **exc_params):
    """zollo_planar at 1 kHz: simulated robot (real time, waiting for each command),
    pd_controller and excitation_publisher with their defaults, wired by hand (the test
    drives every callback; the references go through CDR serialization, the bytes DDS
    carries); the publisher misses the states stamped in [t0, t0 + starved) s (its process
    starved) while the robot and the controller run on. Returns the nodes' record: the
    controller's evaluated reference per state stamp, the peak link speed [rad/s], the
    references sent, and the nodes (destroyed)."""
    from rclpy.serialization import deserialize_message, serialize_message
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    exc = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=1000.0),
        Parameter("require_ready", value=False), Parameter("controller_status", value=""),
        *[Parameter(k, value=v) for k, v in exc_params.items()]])
    q0 = [float(x) for x in exc.traj.evaluate(0.0)[0][0]]
    sim = SimulatedRobot(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("rate_hz", value=1000.0),
        Parameter("initial_positions", value=q0)])
    ctrl, clock, sent = make_controller(context, watchdog_timeout=0.05)
    latest, refs, tracked = {}, [], []
    sim.pub_motor.publish = lambda m: latest.__setitem__("motor", m)
    sim.pub_joint.publish = lambda m: latest.__setitem__("joint", m)
    sim.pub_clock = None
    ctrl.pub.publish = sim.on_command

    def publish(msg):
        refs.append(deserialize_message(serialize_message(msg), JointTrajectory))
        ctrl.on_reference(refs[-1])
    exc.pub.publish = publish
    reference = ctrl.reference

    def record(r=None):
        out = reference(r)
        tracked.append((ctrl.joint[0], *out))
        return out
    ctrl.reference = record
    peak = 0.0
    try:
        sim.on_tick()                                       # brakes on: the first state
        exc.on_joint(latest["joint"])
        assert exc.on_start(Trigger.Request(), Trigger.Response()).success
        for _ in range(ticks):
            sim.on_tick()
            clock.t += 0.001
            if not t0 <= stamp_of(latest["joint"]) < t0 + starved - 1e-9:
                exc.on_joint(latest["joint"])
            ctrl.on_motor(latest["motor"])
            ctrl.on_joint(latest["joint"])
            ctrl.on_watchdog()
            peak = max(peak, float(np.max(np.abs(sim.sim.state.dq))))
            if ctrl.fault is not None:
                break
        return {"tracked": tracked, "peak": peak, "refs": refs, "exc": exc, "ctrl": ctrl,
                "sim": sim}
    finally:
        exc.destroy_node()
        sim.destroy_node()
        ctrl.destroy_node()


@pytest.mark.parametrize("t0, starved", [(1.0, 0.124), (1.5, 0.6), (2.0, 1.0)])
def test_starved_excitation_publisher_is_covered_by_the_lookahead(context, t0, starved):
    """The launch test's zollo_planar-1000Hz flake (docs/ros.md, "The reference's
    look-ahead"): the excitation publisher starved mid-excitation. Each reference carries the
    trajectory 1 s ahead (lookahead); the controller keeps it and evaluates it at each state's
    stamp, so while the publisher is silent the arm follows the excitation as planned: no
    fault, the arm within its velocity limit, the reference at every stamp the analytic one
    (the run's B-spline; quintic between its knots, which the look-ahead includes: exact),
    nothing held, and the publisher resumes in step. Before (one point per reference), the
    controller held the last point at zero velocity after watchdog_timeout while the
    trajectory paused: a reference unlike the analytic one at those stamps, the arm beyond
    its velocity limit (the flake's velocity trip)."""
    ticks = int((t0 + starved + 0.4) * 1000)
    out = starved_publisher(context, t0, starved, ticks)
    exc, ctrl, tracked = out["exc"], out["ctrl"], out["tracked"]
    assert ctrl.fault is None, ctrl.fault
    assert out["peak"] < 3.0, out["peak"]                  # zollo_planar's velocity limit
    assert ctrl.stale_reference_commands == 0
    assert ctrl.lookahead_commands == round((starved - 0.05) * 1000)   # after the timeout
    start = exc._start_stamp
    inside = [r for r in tracked if t0 <= r[0] < t0 + starved]
    assert len(inside) == round(starved * 1000)            # every starved stamp answered
    for stamp, q_ref, dq_ref, ddq_ref in inside:
        q, dq, ddq = exc.run.at(stamp - start)
        np.testing.assert_allclose(q_ref, q, atol=1e-9)
        np.testing.assert_allclose(dq_ref, dq, atol=1e-7)
        np.testing.assert_allclose(ddq_ref, ddq, atol=1e-5)
    assert max(np.max(np.abs(r[2])) for r in inside) > 0.5   # a moving stretch
    # the publisher resumes in step (1 s starved: its first state after is 1 ms beyond the
    # look-ahead, on its stop: it resumes there, a few microseconds behind)
    assert exc.reference_lag < 1e-5
    # the references carry the look-ahead: points[0] the current reference, then the
    # trajectory at the message's stamp + time_from_start, 1 s ahead (to the next step of
    # lookahead_spacing, 0.2 s, of the run's time), then its stop (lookahead_ramp 1 s later,
    # at rest on the path 0.5 s further in the run's time)
    for msg in out["refs"][-3:]:
        first = stamp_of(msg) - exc.t_start
        afters = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                  for p in msg.points]
        end = afters[-2]
        assert 1.0 <= end < 1.2 and round((first + end) / 0.2, 6) % 1 == 0
        for p, after in zip(msg.points[:-1], afters):
            np.testing.assert_allclose(p.positions, exc.run.at(first + after)[0],
                                       atol=1e-12)
        assert afters[-1] == pytest.approx(end + 1.0)
        np.testing.assert_allclose(msg.points[-1].positions,
                                   exc.run.at(first + end + 0.5)[0], atol=1e-12)
        assert not any(msg.points[-1].velocities) and len(msg.points) <= 1 + 6 + 2 + 1


def test_publisher_starved_beyond_the_lookahead_stops_and_rejoins(context):
    """Starved 2.5 s, longer than the look-ahead (1 s) and its stop (lookahead_ramp 1 s):
    the controller follows the trajectory 1 s, then the message's stop (the quintic from
    the look-ahead's last point to rest on the path), then holds that rest point (counted:
    stale_reference_commands); the publisher rejoins the trajectory from there, from rest
    (one pause). No fault, no runaway: the arm's peak speed is the excitation's own. Before
    (one point per reference: held after watchdog_timeout, resumed at full speed), the
    elastic arm swung to 4.28 rad/s (its limit 3, the trip 4.5; docs/ros.md)."""
    t0, starved = 2.0, 2.5
    out = starved_publisher(context, t0, starved, int((t0 + starved + 1.2) * 1000))
    exc, ctrl, tracked = out["exc"], out["ctrl"], out["tracked"]
    assert ctrl.fault is None, ctrl.fault
    assert out["peak"] < 3.0, out["peak"]
    from scipy.interpolate import BPoly
    start, t_last = exc._start_stamp, t0 - 0.001
    # the last reference's look-ahead: to the next 0.2 s of run time 1 s ahead; its stop
    tau_e = np.ceil((t_last - start + 1.0) / 0.2 - 1e-6) * 0.2
    ahead = tau_e - (t_last - start)
    q_e, dq_e, ddq_e = exc.run.at(tau_e)
    q_s = exc.run.at(tau_e + 0.5)[0]
    followed = [r for r in tracked if t0 <= r[0] <= t_last + ahead + 1e-9]
    stopping = [r for r in tracked if t_last + ahead + 1e-9 < r[0] <= t_last + ahead + 1.0
                + 1e-9]
    held = [r for r in tracked if t_last + ahead + 1.0 + 1e-9 < r[0] < t0 + starved]
    n = round(ahead * 1000)
    assert (len(followed), len(stopping), len(held)) == (n, 1000, 1500 - n)
    for stamp, q_ref, dq_ref, _ in followed:
        np.testing.assert_allclose(q_ref, exc.run.at(stamp - start)[0], atol=1e-9)
    for j in range(2):              # the stop: the quintic through both ends (scipy's)
        stop = BPoly.from_derivatives([0.0, 1.0], [[q_e[j], dq_e[j], ddq_e[j]],
                                                   [q_s[j], 0.0, 0.0]])
        for stamp, q_ref, dq_ref, _ in stopping:
            dt = stamp - t_last - ahead
            assert q_ref[j] == pytest.approx(float(stop(dt)), abs=1e-9)
            assert dq_ref[j] == pytest.approx(float(stop(dt, nu=1)), abs=1e-7)
    for stamp, q_ref, dq_ref, ddq_ref in held:
        np.testing.assert_allclose(q_ref, q_s, atol=1e-12)
        assert not np.any(dq_ref) and not np.any(ddq_ref)
    assert ctrl.stale_reference_commands == 1500 - n
    assert ctrl.lookahead_commands == 2500 - 50
    # rejoined from the rest point: behind the robot's clock by the silence after the
    # look-ahead (2.501 s - ahead; the stop's and the rejoin's half-speed halves cancel)
    assert exc.reference_pauses == 1
    assert exc.reference_lag == pytest.approx(2.501 - ahead)
    after = [r for r in out["refs"] if stamp_of(r) >= t0 + starved - 1e-9]
    np.testing.assert_allclose(after[0].points[0].positions, q_s, atol=1e-12)
    assert not any(after[0].points[0].velocities)
    speeds = [max(abs(v) for v in r.points[0].velocities) for r in after[:1100]]
    assert speeds[-1] > 0.5 and max(np.diff(speeds)) < 0.05     # ramped up, no step
