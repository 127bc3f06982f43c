"""pd_controller's loop (``ControlLoop``, ROS-free) on an elastic arm in real time: the command
is the core closed loop's, the regulator plus the reference's feed-forward of De Luca 1998
(``ElasticPDController.feedforward``), as ``simulate`` applies it (``sampled_feedforward``
on the analytic excitation one period before, at and after the state's stamp), plus the
drives' friction at the motor reference velocity (``FrictionModel``) - here from
the look-ahead trajectory the node receives (quintic Hermite points every 10 ms) or from a
single reference point (extended at its constant acceleration)."""
import numpy as np
import pytest

from robot_identification.excitation import trajectory_from_config
from robot_identification.model import load_robot
from robot_identification.nodes._control_loop import ControlLoop
from robot_identification.simulation import FrictionModel, make_controller, sampled_feedforward

RATE = 250.0
STAMP0 = 1000.0         # [s] the trajectory's header stamp, on the states' clock
#: the hardware-robot study's excitation (benchmarks/hardware_robot_study.py)
EXCITATION = {"type": "fourier", "base_frequency": 0.25, "harmonics": 5, "amplitude": 1.0,
              "seed": 1}


@pytest.fixture(scope="module")
def arm():
    model = load_robot("zollo_planar")
    return model, trajectory_from_config(model, EXCITATION)


def make_loop(model, feedforward=True, gains=([2000.0, 30.0], [70.0, 7.0])):
    """The loop of an elastic arm in real time at ``RATE`` (``gains`` None: the robot
    config's)."""
    loop = ControlLoop()
    law = make_controller(model, *(gains or (None, None)))
    loop.model, loop.law_for = model, lambda s: make_controller(model, law.kp * s * s,
                                                                 law.kd * s)
    loop.lockstep, loop.period, loop.max_age = False, 1.0 / RATE, 1e3
    loop.fail_safe, loop.factor, loop.enabled, loop.scale = "hold", 1.5, True, 1.0
    loop.margin_factor, loop.deadline, loop.stamps_on_clock = 0.0, 0.0, True
    loop.feedforward, loop.tolerated_delay, loop.required_delay = feedforward, None, 1
    loop.clock, loop.sent = STAMP0, []
    loop.now = lambda: loop.clock
    loop.send = lambda u, state_ns, deadline_ns: loop.sent.append(np.array(u))
    loop.warn = loop.error = loop.info = lambda text: None
    loop.publish_status = lambda: None
    loop.init_loop()
    loop.measure_delay = lambda stamp: None
    return loop


def core_command(law, traj, t, meas):
    """The core loop's command at ``t`` [s]: ``simulate``'s feed-forward of the analytic
    reference (sampled one period before, at and after ``t``) plus the drives' friction at
    its motor velocity (the simulator's ``FrictionModel``: the real-time loop adds it)."""
    dt = 1.0 / RATE
    q, dq, ddq = traj.evaluate(t + dt * np.array([-1.0, 0.0, 1.0]))
    after = [x[0] for x in traj.evaluate(np.array([t + 2 * dt]))]
    theta_d, dtheta_d, du = (f[1] for f in sampled_feedforward(law, q, dq, ddq, dt, after))
    return law(q[1], dq[1], meas, (theta_d, dtheta_d,
                                   du + FrictionModel(law.model)(dtheta_d)))


def state_at(loop, traj, t, dq=None):
    """Feed the loop the link and motor states stamped STAMP0 + ``t`` (the arm a little off the
    reference); returns the measurement."""
    q_ref, dq_ref, _ = (x[0] for x in traj.evaluate(t))
    meas = {"q": q_ref + [0.01, -0.02], "dq": dq_ref + 0.05 if dq is None else dq,
            "theta": q_ref + [0.03, -0.01], "dtheta": dq_ref - 0.04}
    loop.clock = STAMP0 + t + 0.002
    stamp = STAMP0 + t
    loop.joint_state(stamp, int(round(stamp * 1e9)), meas["q"], meas["dq"])
    loop.motor_state(stamp, meas["theta"], meas["dtheta"])
    return meas


@pytest.mark.parametrize("t", [0.7, 1.9, 3.3])
def test_the_loop_commands_the_core_feedforward_on_a_lookahead(arm, t):
    model, traj = arm
    loop = make_loop(model)
    times = np.arange(0.0, 4.0 + 1e-9, 0.01)
    q, dq, ddq = traj.evaluate(times)
    loop.reference_trajectory(STAMP0, times, q, dq, ddq)
    meas = state_at(loop, traj, t)
    expected = core_command(loop.law, traj, t, meas)
    regulator = loop.law(*(x[0] for x in traj.evaluate(t)[:2]), meas)
    assert loop.feedforward_commands == 1
    # the feed-forward moves the command by tens of N*m (without it: the regulator)
    assert np.max(np.abs(expected - regulator)) > 5.0
    np.testing.assert_allclose(loop.sent[-1], expected, rtol=0, atol=1e-3 * np.max(np.abs(
        expected - regulator)))


def test_a_single_reference_point_is_extended_at_its_acceleration(arm):
    model, traj = arm
    loop = make_loop(model)
    t = 1.9
    loop.reference_point(STAMP0 + t, *(x[0] for x in traj.evaluate(t)))
    meas = state_at(loop, traj, t)
    expected = core_command(loop.law, traj, t, meas)
    regulator = loop.law(*(x[0] for x in traj.evaluate(t)[:2]), meas)
    # without the jerk of the reference (a point carries none; the excitation publisher
    # sends a look-ahead in real time): within 5 % of the feed-forward's part (3.8 % here)
    np.testing.assert_allclose(loop.sent[-1], expected, rtol=0,
                               atol=0.05 * np.max(np.abs(expected - regulator)))


def test_off_or_at_rest_the_law_is_the_regulator_and_fast_it_is_not(arm):
    model, traj = arm
    t = 1.9
    q_ref, dq_ref, ddq_ref = (x[0] for x in traj.evaluate(t))
    off = make_loop(model, feedforward=False)
    off.reference_point(STAMP0 + t, q_ref, dq_ref, ddq_ref)
    meas = state_at(off, traj, t)
    np.testing.assert_allclose(off.sent[-1], off.law(q_ref, dq_ref, meas), atol=1e-9)
    assert off.feedforward_commands == 0
    # joint 1 at 0.93 and 1.2 x its velocity limit (the excitation's own peak is 0.9 x):
    # still the feed-forward (a gate left the weak-gained arm swinging on its springs)
    for speed in (2.8, 3.6):
        fast = make_loop(model)
        fast.reference_point(STAMP0 + t, q_ref, dq_ref, ddq_ref)
        meas = state_at(fast, traj, t, dq=np.array([speed, 0.0]))
        full, plain = core_command(fast.law, traj, t, meas), fast.law(q_ref, dq_ref, meas)
        # (a single point: within 5 % of the feed-forward's part, as above)
        np.testing.assert_allclose(fast.sent[-1], full,
                                   atol=0.05 * np.max(np.abs(full - plain)))
        assert fast.feedforward_commands == 1
    # a reference at rest: the feed-forward is the regulator's references
    rest = make_loop(model)
    rest.reference_point(STAMP0 + t, q_ref, 0 * dq_ref, 0 * ddq_ref)
    meas = state_at(rest, traj, t)
    np.testing.assert_allclose(rest.sent[-1], rest.law(q_ref, 0 * dq_ref, meas), atol=1e-6)


def test_gains_scaled_for_a_long_delay_keep_the_feedforward(arm):
    """Gains the loop delay scaled to 0.0015 (zollo_planar at 250 Hz, 10 periods): the
    complete model's feed-forward (benchmarks/elastic_feedforward_delay.py: 0.89 x the
    velocity limit, largest |q - q_ref| 0.28 rad; the reduced model's, gated below scale 0.1
    before, 1.90 x)."""
    model, traj = arm
    t = 1.9
    q_ref, dq_ref, ddq_ref = (x[0] for x in traj.evaluate(t))
    loop = make_loop(model)
    loop.gain_scale = 0.0015
    loop.law = loop.law_for(loop.gain_scale)
    loop.reference_point(STAMP0 + t, q_ref, dq_ref, ddq_ref)
    meas = state_at(loop, traj, t)
    plain = loop.law(q_ref, dq_ref, meas)
    assert np.max(np.abs(loop.sent[-1] - plain)) > 5.0
    assert loop.feedforward_commands == 1


EPOCH = 1.7e9           # [s] stamps on an epoch clock, as drivers stamp states


def publisher_lookahead(traj, tau, spacing=0.2, ahead=1.0, ramp=1.0):
    """The excitation publisher's reference at run time ``tau`` [s] (its ``lookahead_points``
    with the defaults ``lookahead_spacing`` 0.2 s, ``lookahead`` 1 s, ``lookahead_ramp`` 1 s):
    the current point, the run's grid points to the look-ahead's end, then the stop at rest
    where the run is half a ramp on. Returns times (m,) [s] after ``tau`` and q, dq, ddq (m,
    n)."""
    end = np.ceil((tau + ahead) / spacing - 1e-6) * spacing
    grid = np.arange(np.ceil(tau / spacing + 1e-6) * spacing, end + 1e-9, spacing)
    times = np.concatenate([[tau], grid[grid > tau + 1e-6]])
    q, dq, ddq = traj.evaluate(times)
    stop = traj.evaluate(np.array([end + ramp / 2]))[0]
    zero = np.zeros((1, q.shape[1]))
    return (np.append(times - tau, end + ramp - tau), np.vstack([q, stop]),
            np.vstack([dq, zero]), np.vstack([ddq, zero]))


def publisher_run(traj, rate, seconds, lag=0.0, seed=0, switch=None):
    """``seconds`` s of the excitation from 0.5 s: per state (stamps on the control grid + up
    to 0.3 periods of jitter) its run time t [s], the publisher's reference stamped ``lag``
    periods before it (0: the reference that answers this very state; run time, message) and
    the state's measurement (the arm a little off the reference); ``switch`` = (t, traj2):
    from run time t the references are traj2's."""
    rng = np.random.default_rng(seed)
    m = int(seconds * rate)
    out = []
    for t in 0.5 + np.arange(m) / rate + rng.uniform(0.0, 0.3, m) / rate:
        source = traj if switch is None or t < switch[0] else switch[1]
        q_ref, dq_ref, _ = (x[0] for x in source.evaluate(t))
        n = len(q_ref)
        meas = {"q": q_ref + np.resize([0.01, -0.02], n), "dq": dq_ref + 0.05,
                "theta": q_ref + np.resize([0.03, -0.01], n), "dtheta": dq_ref - 0.04}
        t_ref = t - lag / rate
        out.append((t, t_ref, publisher_lookahead(source, t_ref), meas))
    return out


def feed(loops, run):
    """Each state of ``run`` (:func:`publisher_run`) to ``loops``: the reference, then the
    link and motor states (stamps on an epoch clock); each loop commands once per state."""
    for t, t_ref, message, meas in run:
        for loop in loops:
            loop.clock = EPOCH + t + 0.002
            loop.reference_trajectory(EPOCH + t_ref, *message)
            loop.joint_state(EPOCH + t, int(round((EPOCH + t) * 1e9)), meas["q"], meas["dq"])
            loop.motor_state(EPOCH + t, meas["theta"], meas["dtheta"])


def run_with_publisher(loops, traj, rate, seconds, lag=0.0, seed=0, switch=None):
    """:func:`publisher_run` fed to ``loops``; returns its run times (m,) and measurements."""
    run = publisher_run(traj, rate, seconds, lag, seed, switch)
    feed(loops, run)
    return np.array([r[0] for r in run]), [r[3] for r in run]


@pytest.mark.parametrize("rate", [250.0, 1000.0])
@pytest.mark.parametrize("lag", [0.0, 1.5])
def test_the_tabled_feedforward_is_the_core_loops_on_the_publishers_lookahead(arm, rate, lag,
                                                                             monkeypatch):
    """The node's feed-forward from its table (nodes every 12 ms made from the look-ahead,
    interpolated at each state) against the core loop's of the analytic excitation
    (``sampled_feedforward``: ``ArmDynamics.inverse_dynamics``, equal to MuJoCo's
    ``mj_inverse``, test_elastic_feedforward_complete.py), over 2 s with the publisher's
    references (0.2 s points): within 1 % of the feed-forward's part of the command in the
    median and 5 N*m at most (the jerk of the quintic look-ahead jumps at its points; 3.4
    N*m measured at both rates), one table for the whole run. The on-line computation
    (the fallback) on a reference older than its state is closer still (lag 1.5 periods:
    median 1e-4 of the part); on the reference of the state itself it is not, it misses the
    jerk before the reference's first point (250 Hz: 38 N*m in the median, 1 kHz: 185)."""
    model, traj = arm
    monkeypatch.setitem(globals(), "RATE", rate)
    table, online, off = make_loop(model), make_loop(model), make_loop(model, False)
    online.feedforward_table = False
    assert table.period == 1.0 / rate
    times, states = run_with_publisher([table, online, off], traj, rate, 2.0, lag)
    part, err, err_online = [], [], []
    for k, (t, meas) in enumerate(zip(times, states)):
        core = core_command(table.law, traj, t, meas)
        part.append(np.max(np.abs(core - off.sent[k])))
        err.append(np.max(np.abs(table.sent[k] - core)))
        err_online.append(np.max(np.abs(online.sent[k] - core)))
    part, err, err_online = map(np.array, (part, err, err_online))
    assert table.tabled_feedforward_commands == table.feedforward_commands == len(times)
    assert table._ff_table.rebuilds == 1 and online.tabled_feedforward_commands == 0
    assert np.median(part) > 100.0          # N*m: the feed-forward matters
    assert np.median(err / part) < 0.01 and err.max() < 5.0
    if lag:
        assert np.median(err_online / part) < 1e-3
    else:
        assert np.median(err_online / part) > 0.1     # the on-line one at the first point


def test_another_trajectory_makes_the_table_anew(arm):
    """References of another trajectory from 1 s (a rejoin, a new run): the table's last node
    disagrees with them, the table is made anew from the new references, and the commands
    stay those of the on-line feed-forward (lag 1.5 periods, where that is exact)."""
    model, traj = arm
    other = trajectory_from_config(model, {**EXCITATION, "seed": 2})
    table, online = make_loop(model), make_loop(model)
    online.feedforward_table = False
    times, states = run_with_publisher([table, online], traj, RATE, 1.0, lag=1.5,
                                       switch=(1.0, other))
    assert table._ff_table.rebuilds == 2
    part = np.array([np.max(np.abs(a - b)) for a, b in zip(table.sent, online.sent)])
    late = times > 1.0 + 2.0 / RATE
    assert late.sum() > 100 and part[late].max() < 5.0


def test_a_state_before_the_references_stamp_keeps_the_table(arm):
    """States a period older than their reference (the controller's executor took the
    publisher's answer first): their reference is its first point, held, not the trajectory
    at the state (``quintic_hermite`` before the first point); the table, made from the
    trajectory, is kept (once it was made anew on each: a hardware-robot session at 250 Hz),
    its feed-forward that of the state's time."""
    model, traj = arm
    table, online = make_loop(model), make_loop(model)
    online.feedforward_table = False
    times, states = run_with_publisher([table, online], traj, RATE, 1.0, lag=-1.0)
    assert table._ff_table.rebuilds == 1
    assert table.tabled_feedforward_commands == len(times)


@pytest.mark.parametrize("friction", [True, False])
def test_the_drives_friction_carries_a_weak_gained_arm_in_mujoco(friction, monkeypatch):
    """puma560_elastic at 250 Hz in MuJoCo (an engine of its own: ``frictionloss`` and
    damping on the rotors), the loop's gains scaled to 0.107 (what the measured loop delay
    left them in a hardware-robot session), each command applied one period after its state,
    the study's 4 s excitation as a look-ahead: with the drives' friction in the feed-forward
    every joint follows the reference within 0.1 rad; without it (the law's inverse dynamics
    alone) joint 1's torque stays below its 24.7 N*m Coulomb friction and the joint does not
    move (measured: 0.012 rad of the reference's 0.55 rad; a hardware-robot session's bag
    0.014 rad)."""
    pytest.importorskip("mujoco")
    from robot_identification.simulation import closed_loop_gains
    from robot_identification.simulation._run import make_simulator
    model = load_robot("puma560_elastic")
    traj = trajectory_from_config(model, EXCITATION)
    gains = closed_loop_gains(model, None, None, rate_hz=RATE)
    loop = make_loop(model, gains=(gains.kp, gains.kd))
    loop.gain_scale = 0.107
    loop.law = loop.law_for(loop.gain_scale)
    if not friction:
        monkeypatch.setattr(loop, "drive_friction", lambda v: np.zeros(model.n))
    times = np.arange(0.0, 4.0 + 1e-9, 0.01)
    loop.reference_trajectory(STAMP0, times, *traj.evaluate(times))
    sim = make_simulator(model, "mujoco", rate_hz=RATE, seed=0, quantise=False)
    sim.reset(traj.evaluate(0.0)[0][0])
    u, q, q_ref = np.zeros(model.n), [], []
    for k in range(int(4.0 * RATE)):
        meas = sim.measure()
        q.append(meas["q"])
        q_ref.append(traj.evaluate(k / RATE)[0][0])
        stamp = STAMP0 + k / RATE
        loop.clock = stamp + 0.002
        loop.joint_state(stamp, int(round(stamp * 1e9)), meas["q"], meas["dq"])
        loop.motor_state(stamp, meas["theta"], meas["dtheta"])
        sim.step(u)                     # the command of the state before
        u = loop.sent[-1]
    q, q_ref = np.array(q), np.array(q_ref)
    assert loop.fault is None and loop.tabled_feedforward_commands == len(q)
    if friction:
        assert np.max(np.abs(q - q_ref)) < 0.1
    else:
        assert np.ptp(q[:, 0]) < 0.05 < 0.5 < np.ptp(q_ref[:, 0])
