"""ExcitationRun (ROS-free): the move to the first point is a quintic rest-to-rest segment at
the given peak velocity, continuous with the trajectory; checked against finite differences of
its own positions and the trajectory's evaluate, not against stored values."""
import numpy as np
import pytest

from robot_identification.excitation import ExcitationRun, trajectory_from_config
from robot_identification.model import load_robot


def test_move_then_trajectory_then_hold():
    traj = trajectory_from_config(load_robot("zollo_planar"))
    q1 = traj.evaluate(0.0)[0][0]
    run = ExcitationRun(traj, q1 + np.array([0.5, -0.2]), np.array([0.25, 0.25]), 0.005, 0.5)
    q0, d, T = run.move
    assert T == pytest.approx(1.875 * 0.5 / 0.25)
    assert run.offset == T and run.planned == pytest.approx(T + traj.duration + 0.5)
    taus = np.linspace(0.0, T, 401)
    q, dq, ddq = (np.array(x) for x in zip(*(run.at(t) for t in taus)))
    np.testing.assert_allclose(q[0], q0)
    np.testing.assert_allclose(q[-1], q1, atol=1e-12)
    np.testing.assert_allclose(dq[[0, -1]], 0.0, atol=1e-12)       # rest to rest
    assert np.abs(dq).max() == pytest.approx(0.25, rel=1e-3)
    np.testing.assert_allclose(np.gradient(q, taus, axis=0), dq, atol=2e-3)
    np.testing.assert_allclose(np.gradient(dq, taus, axis=0), ddq, atol=5e-3)
    for tau in (T + 0.7, T + traj.duration + 0.3):                 # the trajectory, its end
        ref = traj.evaluate(tau - T)
        for got, want in zip(run.at(tau), ref):
            np.testing.assert_allclose(got, want[0])


def test_no_move_at_the_first_point_or_without_a_position():
    traj = trajectory_from_config(load_robot("zollo_planar"))
    q1 = traj.evaluate(0.0)[0][0]
    assert ExcitationRun(traj, q1 + 0.001, np.ones(2), start_tolerance=0.005).move is None
    run = ExcitationRun(traj, hold=0.25)
    assert run.move is None and run.planned == pytest.approx(traj.duration + 0.25)
    np.testing.assert_allclose(run.at(0.0)[0], q1)
