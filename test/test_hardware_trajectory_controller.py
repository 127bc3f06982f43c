"""The hardware-like arm's in-cycle joint_trajectory_controller without ROS
(robot_identification.nodes._hardware.TrajectoryTracker in HardwareArm): brakes until the first
trajectory, the arm follows the trajectory it is given (against the trajectory itself), holds
its last point after the end and holds where it is on an empty trajectory; the loop is the
core closed loop of ``simulate`` (same law, gains and physics, no command delay), bad
trajectories are refused with one line."""
import warnings

import numpy as np
import pytest

from robot_identification.errors import ConfigError, DataError
from robot_identification.excitation import trajectory_from_config
from robot_identification.model import load_robot
from robot_identification.nodes._hardware import (NO_TRAJECTORY, HardwareArm,
                                                  TrajectoryTracker, make_physics)
from robot_identification.simulation import simulate

#: the hardware study's excitation (benchmarks/hardware_robot_study.py): 4 s, 5 harmonics
EXCITATION = {"type": "fourier", "base_frequency": 0.25, "harmonics": 5, "amplitude": 1.0,
              "seed": 1}


def arm_for(robot, rate, scale=1.0, offset=0.0):
    model = load_robot(robot)
    traj = trajectory_from_config(model, EXCITATION)
    q0 = traj.evaluate(0.0)[0][0] + offset
    tracker = TrajectoryTracker(model, rate, q0, scale)
    arm = HardwareArm(make_physics(model, rate), q0, tracker=tracker)
    arm.start(0.0)
    return model, traj, arm


def sampled(traj, period=0.01, lead=0.0):
    """The trajectory as a joint_trajectory_controller gets it: points every ``period`` s,
    the first ``lead`` s after the start (the excitation publisher's joint_trajectory)."""
    tau = np.arange(0.0, traj.duration + 1e-9, period)
    q, dq, ddq = traj.evaluate(tau)
    return tau + lead, q, dq, ddq


@pytest.mark.parametrize("robot, rate, scale", [("puma560", 1000.0, 1.0),
                                                ("zollo_planar", 250.0, 1.0),
                                                ("zollo_planar", 1000.0, 1.0)])
def test_arm_follows_the_trajectory_and_holds_its_last_point(robot, rate, scale):
    model, traj, arm = arm_for(robot, rate, scale, offset=0.05)
    q0 = arm.physics.state.q.copy()
    out = arm.advance(0.2)              # no trajectory yet: braked at the initial pose
    assert arm.braked == NO_TRAJECTORY
    assert all(np.all(s["dq"] == 0) and not np.any(s["effort"]) for s in out)
    np.testing.assert_array_equal(out[-1]["q"], q0)
    lead = 1.0                          # the first point 1 s after arrival: the move to it
    times, q, dq, ddq = sampled(traj, lead=lead)
    arm.trajectory(0.2, times, q, dq, ddq)
    out = arm.advance(0.2 + lead + traj.duration + 2.0)
    assert not arm.braked and arm.trajectories == 1
    t = np.array([s["t"] for s in out]) - arm.dt    # each state ends its period
    Q = np.array([s["q"] for s in out])
    v_max = np.array([j.limits.velocity for j in model.config.joints])
    assert np.max(np.abs([s["dq"] for s in out]) / v_max) < 1.0      # no runaway
    moving = (t >= 0.2 + lead) & (t <= 0.2 + lead + traj.duration)
    ref = traj.evaluate(t[moving] - 0.2 - lead)[0]
    span = np.ptp(ref, axis=0)
    # a PD's lag: well inside the motion (puma560 5 Hz design; zollo_planar's soft joint2,
    # the design that damps its elastic links, lags about half its span)
    bound = 0.1 if robot == "puma560" else 0.6
    assert np.all(np.max(np.abs(Q[moving] - ref), axis=0) < bound * np.maximum(span, 0.1))
    # after the end: its last point held (the reference), the arm there at rest; zollo_planar's
    # elastic links settle (with the config's 1 kHz gains they rang at ~2 Hz, 0.56 rad/s,
    # 1 % less after 2 s: the model's design damps them, 0.003 rad/s in the second second)
    np.testing.assert_array_equal(arm.tracker.reference(out[-1]["t"])[0], q[-1])
    if robot == "puma560":
        np.testing.assert_allclose(Q[-1], q[-1], atol=0.02)
        assert np.max(np.abs(out[-1]["dq"])) < 0.05
    else:
        after = t > 0.2 + lead + traj.duration
        ring = np.max(np.abs([s["dq"] for s in out]), axis=1)[after]
        assert np.max(ring[-int(rate):]) < 0.01 * np.min(v_max)       # settled in 1 s
        np.testing.assert_allclose(Q[-1], q[-1], atol=0.01)
    assert arm.tracker.holding


def test_empty_trajectory_holds_where_the_arm_is():
    model, traj, arm = arm_for("puma560", 1000.0)
    times, q, dq, ddq = sampled(traj, lead=1.0)
    arm.trajectory(0.0, times, q, dq, ddq)
    arm.advance(2.0)                    # 1 s into the trajectory: moving
    assert np.max(np.abs(arm.physics.state.dq)) > 0.2
    arm.trajectory(2.0)                 # cancel: hold here
    here = arm.physics.state.q.copy()
    arm.advance(4.0)
    np.testing.assert_allclose(arm.physics.state.q, here, atol=0.05)
    assert np.max(np.abs(arm.physics.state.dq)) < 0.01


@pytest.mark.parametrize("robot, rate", [("zollo_planar", 1000.0), ("puma560", 500.0)])
def test_the_loop_is_the_core_closed_loop(robot, rate):
    """In-cycle tracking of the trajectory started at a period's start is simulate's closed
    loop: the same states (positions exact, quantise off) and torques."""
    model, traj, arm = arm_for(robot, rate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # simulate's note on the gains
        ds = simulate(model, trajectory=traj, rate_hz=rate, quantise=False, torque="command")
    # the trajectory as one point per period (its own spline knots: the same reference)
    N = len(ds.t)
    q, dq, ddq = traj.evaluate(ds.t)
    arm.trajectory(0.0, ds.t, q, dq, ddq)
    out = arm.advance((N - 1) * arm.dt + 1e-9)
    Q = np.array([ds.q[0]] + [s["q"] for s in out])
    U = np.array([s["effort"] for s in out])
    np.testing.assert_allclose(Q, ds.q, atol=1e-9)
    np.testing.assert_allclose(U, ds.tau[:-1], atol=1e-6 * np.max(np.abs(ds.tau)))


def test_bad_trajectories_are_refused():
    model, traj, arm = arm_for("puma560", 1000.0)
    n = model.n
    with pytest.raises(DataError, match="strictly increasing"):
        arm.trajectory(0.0, [0.5, 0.5], np.zeros((2, n)), np.zeros((2, n)))
    with pytest.raises(DataError, match="positions and velocities"):
        arm.trajectory(0.0, [0.5], np.zeros((1, n)), [[]])
    with pytest.raises(DataError, match="non-finite"):
        arm.trajectory(0.0, [0.5], np.full((1, n), np.nan), np.zeros((1, n)))
    assert arm.trajectories == 0 and arm.braked == NO_TRAJECTORY
    with pytest.raises(DataError, match="effort commands only"):
        HardwareArm(make_physics(model, 1000.0), np.zeros(n)).trajectory(0.0)
    with pytest.raises(ConfigError, match="bandwidth scale"):
        TrajectoryTracker(model, 1000.0, np.zeros(n), 0.0)


@pytest.mark.parametrize("rate, offset", [(250.0, 0.0), (1000.0, 0.05)])
def test_a_trajectory_the_loop_cannot_follow_within_the_limits_is_refused(rate, offset):
    """szabo_3dof from the hardware study's excitation start: its joint-1 inertia there is
    tiny and the config's gains diverge (simulate: 79 x the limit). Forecast before the
    motion: refused, one line, the brakes hold the arm where it is (its loop would diverge
    there too) until a trajectory it can play. At 1 kHz from 0.05 rad beside the start (the
    hardware study's session) the loop is stable where the arm is and diverges at the start:
    the forecast linearises anew along the plan."""
    model, traj, arm = arm_for("szabo_3dof", rate, offset=offset)
    here = arm.physics.state.q.copy()
    times, q, dq, ddq = sampled(traj, lead=1.0)
    arm.trajectory(0.0, times, q, dq, ddq)
    arm.advance(2.0)
    assert arm.tracker.refused.startswith("trajectory refused: the closed loop on this "
                                          "trajectory") and "\n" not in arm.tracker.refused
    assert "velocity limit" in arm.tracker.refused or "diverges" in arm.tracker.refused
    assert arm.braked == arm.tracker.refused
    np.testing.assert_allclose(arm.physics.state.q, here, atol=1e-3)
    assert np.max(np.abs(arm.physics.state.dq)) == 0.0


def test_a_trajectory_it_can_play_releases_the_brakes_of_a_refusal():
    """zollo_planar at 250 Hz: the study's excitation played 3 x faster (velocities 2.7 x the
    limit) is refused, the brakes hold the arm; the excitation itself then plays."""
    model, traj, arm = arm_for("zollo_planar", 250.0)
    times, q, dq, ddq = sampled(traj, lead=1.0)
    arm.trajectory(0.0, times / 3, q, 3 * dq, 9 * ddq)
    arm.advance(0.5)
    assert arm.braked.startswith("trajectory refused: the closed loop on this trajectory "
                                 "reaches ") and np.max(arm.tracker.forecast_ratio) > 2.0
    arm.trajectory(0.5, times, q, dq, ddq)
    out = arm.advance(0.5 + times[-1] + 1.0)
    assert not arm.braked and not arm.tracker.refused
    v_max = np.array([j.limits.velocity for j in model.config.joints])
    assert 0.5 < np.max(np.abs([s["dq"] for s in out]) / v_max) < 1.0


def test_a_joint_beyond_its_velocity_limit_engages_the_brakes(monkeypatch):
    """Whatever the forecast said: the in-cycle controller's protective stop."""
    model, traj, arm = arm_for("szabo_3dof", 250.0)
    monkeypatch.setattr(TrajectoryTracker, "forecast", lambda self, t, meas: np.zeros(self.n))
    times, q, dq, ddq = sampled(traj, lead=1.0)
    arm.trajectory(0.0, times, q, dq, ddq)
    out = arm.advance(6.0)
    assert arm.braked.startswith("velocity limit: ") and arm.velocity_trips == 1
    v_max = np.array([j.limits.velocity for j in model.config.joints])
    ratio = np.max(np.abs([s["dq"] for s in out]) / v_max, axis=1)
    assert np.sum(ratio > 1.1) == 1     # the period that crossed it; then held at rest
    assert ratio[-1] == 0.0 and np.max(np.abs(arm.physics.state.dq)) == 0.0
