"""Excitation design: Fourier (Szabó eq. 21-22) / quintic B-spline parametrisations, criteria
(condition number, Frobenius condition number eq. 20, -log det), SLSQP optimisation within
the joint limits, the saved file loading like the excitation_publisher node loads it, and
the ``excite`` command."""
import numpy as np
import pytest

from robot_identification import cli
from robot_identification.errors import ConfigError
from robot_identification.excitation import check_limits, load_trajectory, save_trajectory
from robot_identification.excitation._optimize import (
    BSplineParametrisation, FourierParametrisation, criterion_value, design_model,
    optimise_excitation)
from robot_identification.model import load_robot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zollo():
    return load_robot("zollo_planar")


def test_fourier_rest_to_rest_and_eq22_derivatives():
    par = FourierParametrisation(3, 4, 8.0, np.array([0.1, -0.2, 0.3]))
    x = par.initial(np.random.default_rng(0), 0.5)
    q, dq, ddq = par.evaluate(x, np.array([0.0, 8.0]))
    np.testing.assert_allclose(q, [par.q0, par.q0], atol=1e-12)
    np.testing.assert_allclose(dq, 0.0, atol=1e-12)
    np.testing.assert_allclose(ddq, 0.0, atol=1e-12)
    # eq. 22 written out for joint 0 at t = 1.3 s
    a, b = par.coefficients(x)
    w, t = 2 * np.pi / 8.0, 1.3
    h = np.arange(1, 5)
    dq_ref = np.sum(a[0] * np.cos(w * h * t) + b[0] * np.sin(w * h * t))
    ddq_ref = np.sum(-a[0] * w * h * np.sin(w * h * t) + b[0] * w * h * np.cos(w * h * t))
    _, dq1, ddq1 = par.evaluate(x, np.array([t]))
    assert dq1[0, 0] == pytest.approx(dq_ref, abs=1e-12)
    assert ddq1[0, 0] == pytest.approx(ddq_ref, abs=1e-12)


def test_bspline_rest_to_rest():
    par = BSplineParametrisation(2, 6, 5.0, np.array([0.5, -0.5]))
    x = par.initial(np.random.default_rng(1))
    q, dq, ddq = par.evaluate(x, np.array([0.0, 5.0]))
    np.testing.assert_allclose(q, [par.q0, par.q0], atol=1e-12)
    np.testing.assert_allclose(dq, 0.0, atol=1e-9)
    np.testing.assert_allclose(ddq, 0.0, atol=1e-9)


def test_criteria_analytic():
    # orthogonal columns of different scales: column scaling makes W^T W / M = I
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(50, 4)))
    W = Q * np.array([1.0, 10.0, 0.1, 3.0]) * np.sqrt(50)
    assert criterion_value(W, "cond") == pytest.approx(1.0)
    assert criterion_value(W, "frobenius") == pytest.approx(4.0)       # ||I||_F^2 (eq. 20)
    assert criterion_value(W, "logdet") == pytest.approx(0.0, abs=1e-12)
    # 2x2 case by hand: A = [[1, c], [c, 1]], CondF = ||A||_F ||A^-1||_F = 2 (1 + c^2) / (1 - c^2)
    c = 0.6
    L = np.linalg.cholesky(np.array([[1.0, c], [c, 1.0]]))
    W2 = np.linalg.qr(rng.normal(size=(40, 2)))[0] @ L.T * np.sqrt(40)
    assert criterion_value(W2, "frobenius") == pytest.approx(2 * (1 + c * c) / (1 - c * c))
    assert criterion_value(W2, "cond") == pytest.approx(np.sqrt((1 + c) / (1 - c)))
    assert criterion_value(np.column_stack([W2, W2[:, 0]]), "cond") > 1e6
    assert criterion_value(np.column_stack([W2, np.zeros(40)]), "cond") == np.inf
    with pytest.raises(ConfigError, match="criterion 'det'"):
        criterion_value(W2, "det")


@pytest.mark.parametrize("criterion", ["cond", "frobenius", "logdet"])
def test_optimisation_improves_within_limits(zollo, criterion):
    par = FourierParametrisation(2, 4, 6.0, joint_names=zollo.joint_names)
    res = optimise_excitation(zollo, par, criterion, n_samples=60, maxiter=15, seed=3)
    assert res.after < res.before
    assert res.within_limits
    check_limits(zollo, par.trajectory(res.x), dt=1e-3)        # raises on a violation


def test_bspline_optimisation(zollo):
    par = BSplineParametrisation(2, 6, 6.0)
    res = optimise_excitation(zollo, par, "cond", n_samples=60, maxiter=10, seed=1)
    assert res.cond_after < res.cond_before and res.within_limits


def test_elastic_robot_designed_on_rigid_limit(zollo):
    rigid = design_model(zollo)
    assert not rigid.config.elastic and rigid.n == 2
    assert "joint1.stiffness" not in rigid.parameter_names


def test_saved_file_loads_like_the_excitation_publisher(zollo, tmp_path):
    """The excitation_publisher node (ros branch) does ``traj = load_trajectory(path)`` and
    ``check_limits(model, traj, 1 / rate_hz)``; the node itself needs rclpy and is not on a
    branch merged here, so the test checks that round trip."""
    par = FourierParametrisation(2, 3, 4.0, np.array([0.2, -0.1]), zollo.joint_names)
    res = optimise_excitation(zollo, par, "cond", n_samples=40, maxiter=5)
    path = save_trajectory(par.trajectory(res.x), tmp_path / "exc.yaml")
    traj = load_trajectory(path)
    check_limits(zollo, traj, 1.0 / zollo.config.simulation.rate_hz)
    t = np.linspace(0, 4.0, 57)
    for got, ref in zip(traj.evaluate(t), res.evaluate(t)):
        np.testing.assert_allclose(got, ref, atol=1e-12)
    assert traj.joint_names == zollo.joint_names


def test_saved_file_plays_in_simulator(tmp_path):
    from robot_identification.simulation import simulate
    model = load_robot("szabo_3dof")
    par = FourierParametrisation(3, 3, 2.0, np.array([0.0, -1.0, 1.5]), model.joint_names)
    res = optimise_excitation(model, par, "frobenius", n_samples=30, maxiter=3)
    path = save_trajectory(par.trajectory(res.x), tmp_path / "exc.yaml")
    ds = simulate(model, trajectory=str(path), quantise=False)
    ref = load_trajectory(path).evaluate(ds.t)[0]
    assert np.max(np.abs(ds.q - ref)) < 0.05                  # PD tracking of the reference


def test_excite_command(tmp_path, capsys):
    out = tmp_path / "z.yaml"
    rc = cli.main(["excite", "--robot", "zollo_planar", "--criterion", "frobenius",
                   "--output", str(out), "--maxiter", "5", "--samples", "40",
                   "--harmonics", "3"])
    text = capsys.readouterr().out
    assert rc == 0 and out.is_file()
    assert "before" in text and "after" in text and "optimisation time" in text
    load_trajectory(out)


def test_excite_command_bad_start(tmp_path, capsys):
    rc = cli.main(["excite", "--robot", "zollo_planar", "--output", str(tmp_path / "x.yaml"),
                   "--start", "0", "0", "0"])
    assert rc != 0
    assert "--start needs 2 values" in capsys.readouterr().err
