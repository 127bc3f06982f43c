"""Excitation trajectories: boundary conditions, analytic derivatives, limits, YAML I/O."""
import numpy as np
import pytest

from robot_identification.errors import ConfigError, ExcitationError
from robot_identification.excitation import (
    BSplineTrajectory, FourierTrajectory, check_limits, load_trajectory, save_trajectory,
    trajectory_from_config, trajectory_from_dict)
from robot_identification.model import load_robot


@pytest.fixture(scope="module")
def planar():
    return load_robot("zollo_planar")


def _examples():
    rng = np.random.default_rng(0)
    yield BSplineTrajectory(rng.uniform(-1, 1, (8, 3)), 4.0, start=[0.1, -0.2, 0.3],
                            end=[0.0, 0.1, 0.2])
    yield FourierTrajectory(rng.uniform(-1, 1, (3, 5)), rng.uniform(-1, 1, (3, 5)), 0.25,
                            q0=[0.1, 0.2, -0.3], periods=2)


@pytest.mark.parametrize("traj", list(_examples()), ids=["bspline", "fourier"])
def test_rest_at_both_ends_and_shapes(traj):
    q, dq, ddq = traj.evaluate([0.0, traj.duration])
    assert q.shape == dq.shape == ddq.shape == (2, 3)
    np.testing.assert_allclose(dq, 0, atol=1e-12)
    np.testing.assert_allclose(ddq, 0, atol=1e-10)


@pytest.mark.parametrize("traj", list(_examples()), ids=["bspline", "fourier"])
def test_derivatives_match_finite_differences(traj):
    t = np.linspace(0.1, traj.duration - 0.1, 7)
    h = 1e-5
    qp, dqp, _ = traj.evaluate(t + h)
    qm, dqm, _ = traj.evaluate(t - h)
    _, dq, ddq = traj.evaluate(t)
    np.testing.assert_allclose((qp - qm) / (2 * h), dq, atol=1e-6)
    np.testing.assert_allclose((dqp - dqm) / (2 * h), ddq, atol=1e-5)


def test_fourier_is_szabo_eq22_plus_offset():
    a = np.array([[0.3, -0.1, -0.2]])
    b = np.array([[0.2, 0.1, -0.4 / 3]])       # sum a = 0, sum l b = 0: unchanged
    tr = FourierTrajectory(a, b, 0.5, q0=[0.7])
    t = np.array([0.3, 1.1])
    w = 2 * np.pi * 0.5
    ref = 0.7 + sum(a[0, l - 1] / (w * l) * np.sin(w * l * t)
                    - b[0, l - 1] / (w * l) * (np.cos(w * l * t) - 1) for l in (1, 2, 3))
    np.testing.assert_allclose(tr.evaluate(t)[0][:, 0], ref, atol=1e-14)


@pytest.mark.parametrize("traj", list(_examples()), ids=["bspline", "fourier"])
def test_yaml_round_trip(traj, tmp_path):
    path = save_trajectory(traj, tmp_path / "traj.yaml")
    back = load_trajectory(path)
    t = np.linspace(0, traj.duration, 33)
    for x, y in zip(traj.evaluate(t), back.evaluate(t)):
        np.testing.assert_allclose(x, y, atol=1e-12)
    assert trajectory_from_dict(traj.to_dict()).duration == traj.duration


def test_bad_trajectory_input():
    with pytest.raises(ConfigError, match="type must be"):
        trajectory_from_dict({"type": "spiral"})
    with pytest.raises(ConfigError, match="missing key"):
        trajectory_from_dict({"type": "bspline", "duration": 1.0})
    with pytest.raises(ConfigError, match="unknown key"):
        trajectory_from_dict({"type": "bspline", "duration": 1.0, "control_points": [[0]],
                              "speed": 2})
    with pytest.raises(ConfigError, match="duration"):
        BSplineTrajectory([[0.0]], -1.0)
    with pytest.raises(ConfigError, match="does not exist"):
        load_trajectory("/nonexistent/traj.yaml")


def test_check_limits_names_joint_and_limit(planar):
    fast = BSplineTrajectory([[2.0, 0.0], [-2.0, 0.0]], 1.0)
    with pytest.raises(ExcitationError, match=r"velocity limit of joint 'joint1'"):
        check_limits(planar, fast)
    far = BSplineTrajectory([[0.0, 9.0]] * 3, 100.0)
    with pytest.raises(ExcitationError, match=r"position limit of joint 'joint2'"):
        check_limits(planar, far)
    with pytest.raises(ExcitationError, match="3 joints"):
        check_limits(planar, BSplineTrajectory(np.zeros((2, 3)), 1.0))


@pytest.mark.parametrize("spec", [
    None,
    {"type": "fourier", "base_frequency": 0.2, "harmonics": 4, "amplitude": 3.0, "seed": 1},
    {"type": "bspline", "duration": 3.0, "segments": 9, "amplitude": [5.0, 5.0]},
])
def test_trajectory_from_config_respects_limits(planar, spec):
    tr = trajectory_from_config(planar, spec)
    assert tr.n_joints == 2
    check_limits(planar, tr, dt=1e-3)


def test_trajectory_from_config_rejects_unknown_keys(planar):
    with pytest.raises(ConfigError, match="unknown key"):
        trajectory_from_config(planar, {"type": "bspline", "harmonics": 3})
    with pytest.raises(ConfigError, match="bspline' or 'fourier"):
        trajectory_from_config(planar, {"type": "chirp"})
