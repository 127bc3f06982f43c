"""pd_controller's loop (``ControlLoop``, ROS-free) on an elastic arm in real time: the command
is the core closed loop's, the regulator plus the reference's feed-forward of De Luca 1998
(``ElasticPDController.feedforward``), as ``simulate`` applies it (``sampled_feedforward``
on the analytic excitation one period before, at and after the state's stamp) - here from
the look-ahead trajectory the node receives (quintic Hermite points every 10 ms) or from a
single reference point (extended at its constant acceleration)."""
import numpy as np
import pytest

from robot_identification.excitation import trajectory_from_config
from robot_identification.model import load_robot
from robot_identification.nodes._control_loop import ControlLoop
from robot_identification.simulation import make_controller, sampled_feedforward

RATE = 250.0
STAMP0 = 1000.0         # [s] the trajectory's header stamp, on the states' clock
#: the hardware-robot study's excitation (benchmarks/hardware_robot_study.py)
EXCITATION = {"type": "fourier", "base_frequency": 0.25, "harmonics": 5, "amplitude": 1.0,
              "seed": 1}


@pytest.fixture(scope="module")
def arm():
    model = load_robot("zollo_planar")
    return model, trajectory_from_config(model, EXCITATION)


def make_loop(model, feedforward=True):
    loop = ControlLoop()
    law = make_controller(model, [2000.0, 30.0], [70.0, 7.0])
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
    reference (sampled one period before, at and after ``t``)."""
    dt = 1.0 / RATE
    q, dq, ddq = traj.evaluate(t + dt * np.array([-1.0, 0.0, 1.0]))
    after = [x[0] for x in traj.evaluate(np.array([t + 2 * dt]))]
    ff = sampled_feedforward(law, q, dq, ddq, dt, after)
    return law(q[1], dq[1], meas, tuple(f[1] for f in ff))


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
