"""Physically consistent estimation (pseudo-inertia LMIs) and URDF export."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from robot_identification.estimation import (
    NormalEquations, ols, physically_consistent, pseudo_inertia)
from robot_identification.identifiability import base_parameters
from robot_identification.identifiability._base import random_states
from robot_identification.model import load_robot
from robot_identification.regressor import regressor
from robot_identification.report import export_urdf, urdf_torque

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ur10e():
    model = load_robot("ur10e")
    return model, base_parameters(model)


def _true_parameters(model):
    pi = model.nominal_parameters().copy()
    names = model.parameter_names
    for k, j in enumerate(model.joint_names):
        pi[names.index(f"{j}.rotor_inertia")] = 0.3 + 0.1 * k
        pi[names.index(f"{j}.viscous")] = 5.0 + k
        pi[names.index(f"{j}.coulomb")] = 2.0 + 0.5 * k
        pi[names.index(f"{j}.offset")] = 0.1 * (k - 2)
    return pi


def _normal_equations(model, base, pi, noise=0.0, seed=0, n=400):
    rng = np.random.default_rng(seed)
    st = random_states(model, n, rng)
    Y = regressor(model, **st)
    tau = Y @ pi + noise * rng.standard_normal((n, model.n))
    neq = NormalEquations(len(base), model.n)
    neq.add(base.project(Y), tau)
    return neq, st, Y


def test_pseudo_inertia_of_point_mass_and_box():
    # point mass m at c: J = m [c; 1][c; 1]^T (Wensing et al. 2018, eq. 4)
    m, c = 2.0, np.array([0.1, -0.2, 0.3])
    p = pin.Inertia(m, c, np.zeros((3, 3))).toDynamicParameters()
    v = np.append(c, 1.0)
    np.testing.assert_allclose(pseudo_inertia(p), m * np.outer(v, v), atol=1e-12)
    # a box violating nothing is PSD; an inertia breaking the triangle inequality is not
    box = pin.Inertia(1.0, np.zeros(3), np.diag([0.02, 0.03, 0.04])).toDynamicParameters()
    assert np.linalg.eigvalsh(pseudo_inertia(box))[0] > 0
    bad = pin.Inertia(1.0, np.zeros(3), np.diag([0.01, 0.01, 0.05])).toDynamicParameters()
    assert np.linalg.eigvalsh(pseudo_inertia(bad))[0] < 0


def test_consistent_truth_is_recovered(ur10e):
    model, base = ur10e
    pi = _true_parameters(model)
    neq, _, _ = _normal_equations(model, base, pi, noise=0.01)
    est = ols(neq)
    phys = physically_consistent(model, base, neq.gram / est.sigma2[0], est.values)
    beta_true = base.base_values(pi)
    assert phys.status.split(" (")[0] in ("optimal", "optimal_inaccurate")
    assert np.all(phys.min_eigenvalues >= 1e-6 * 0.99)
    np.testing.assert_allclose(phys.base, beta_true, atol=5e-3, rtol=1e-2)
    assert phys.cost_increase < 1e-6


def test_inconsistent_estimate_is_projected(ur10e):
    model, base = ur10e
    pi = _true_parameters(model)
    wrist3 = model.parameter_names.index("wrist_3_link.m")
    pi[wrist3 + 4: wrist3 + 10] = [-0.02, 0, -0.02, 0, 0, -0.02]   # negative inertia
    neq, _, _ = _normal_equations(model, base, pi)
    est = ols(neq)
    phys = physically_consistent(model, base, neq.gram, est.values)
    for k in range(model.n):
        J = pseudo_inertia(phys.standard[10 * k: 10 * k + 10])
        assert np.linalg.eigvalsh(J)[0] >= 1e-6 * 0.99
    assert phys.cost_increase > 0
    drive = [i for i, kd in enumerate(model.layout.kinds)
             if kd in ("rotor_inertia", "viscous", "coulomb")]
    assert np.all(phys.standard[drive] >= -1e-8)


def test_exported_urdf_reproduces_base_prediction(ur10e, tmp_path):
    model, base = ur10e
    pi = _true_parameters(model)
    neq, st, Y = _normal_equations(model, base, pi, noise=0.01, n=200)
    est = ols(neq)
    phys = physically_consistent(model, base, neq.gram, est.values)
    path = export_urdf(model, phys.standard, tmp_path / "ur10e_identified.urdf")
    pm = pin.buildModelFromUrdf(str(path))                  # loads in pinocchio
    assert pm.nv == 6
    tau_urdf = urdf_torque(path, model, phys.standard, st["q"], st["dq"], st["ddq"])
    tau_base = base.project(Y) @ phys.base
    np.testing.assert_allclose(tau_urdf, tau_base, atol=1e-6)


def test_export_of_a_dh_body_frame_robot_with_static_friction(tmp_path):
    # szabo_3dof: parameters about DH frames at the link tips (body_frame), static friction
    # (stiction, Stribeck) that URDF cannot hold: the rigid-body torques of the exported URDF
    # (pinocchio rnea) equal the model's regressor, the friction values go into the comment.
    model = load_robot("szabo_3dof")
    pi = model.nominal_parameters()
    rigid = np.where([k == "inertial" for k in model.layout.kinds], pi, 0.0)
    path = export_urdf(model, pi, tmp_path / "szabo.urdf")
    st = random_states(model, 30, np.random.default_rng(1))
    pm = pin.buildModelFromUrdf(str(path))
    data = pm.createData()
    tau = np.array([pin.rnea(pm, data, q, v, a)
                    for q, v, a in zip(st["q"], st["dq"], st["ddq"])])
    np.testing.assert_allclose(tau, (regressor(model, **st) @ rigid).reshape(30, -1), atol=1e-8)
    text = path.read_text()
    for j in model.joint_names:
        sti = pi[model.parameter_names.index(f"{j}.stiction")]
        assert f"{j}: {sti:.10g}" in text.split("static friction", 1)[1].split(";")[0]
    assert "Stribeck" in text


def test_log_det_prior_keeps_bodies_inside_where_plain_lmi_ends_on_the_bound(ur10e):
    """Lee, Wensing & Park (2020): with the log-det divergence toward the URDF bodies the
    estimate stays strictly physical where the plain LMI projection (Gaussian prior) puts
    bodies on the eigenvalue margin (physical truth, noisy data: the LS estimate is not
    physical in weakly excited directions, like the real UR10e runs)."""
    from robot_identification.diagnostics import physical_diagnostics
    from robot_identification.estimation._physical import (
        log_det_divergence, nominal_pseudo_inertias)
    model, base = ur10e
    pi = _true_parameters(model)
    neq, _, _ = _normal_equations(model, base, pi, noise=1.0, seed=1)
    est = ols(neq)
    info = neq.gram / est.sigma2[0]
    plain = physically_consistent(model, base, info, est.values, prior="gaussian")
    assert len(plain.on_bound) >= 2
    assert np.all(plain.min_eigenvalues[plain.on_bound] <= 1.01e-6)
    assert "body_on_bound" in [d.code for d in physical_diagnostics(model, plain)]
    geo = physically_consistent(model, base, info, est.values)
    assert geo.prior == "bregman" and geo.on_bound == []
    assert np.all(geo.min_eigenvalues > 100 * 1e-6)
    J0 = nominal_pseudo_inertias(model)
    for k in range(model.n):   # reported distance = independent evaluation of eq. 22
        J = pseudo_inertia(geo.standard[10 * k: 10 * k + 10])
        M = np.linalg.solve(J0[k], J)
        ref = -np.log(np.linalg.det(M)) + np.trace(M) - 4
        assert geo.prior_distance[k] == pytest.approx(ref, rel=1e-6, abs=1e-9)
        assert log_det_divergence(J0[k], J0[k]) == pytest.approx(0.0, abs=1e-9)
    assert "body_on_bound" not in [d.code for d in physical_diagnostics(model, geo)]
    masses, true_masses = geo.standard[0:60:10], pi[0:60:10]
    assert np.all(np.abs(np.log(masses / true_masses)) < np.log(1.5))
    # the data are explained about as well as by the plain projection
    assert geo.cost_increase < 2 * plain.cost_increase + 1e-6


def test_prior_given_as_an_array(ur10e):
    """A prior vector (P,) (e.g. a perturbed nominal) reaches the physical estimate."""
    from robot_identification.identification import load_prior
    model, _ = ur10e
    prior = model.nominal_parameters() * 1.1
    np.testing.assert_array_equal(load_prior(model, prior), prior)
    assert load_prior(model, "none") is None


@pytest.mark.parametrize("information_scale", [1.0, 1e12])
def test_prior_decides_the_null_space_even_for_noise_free_information(ur10e, information_scale):
    # ur10e: the shoulder link turns about the gravity axis, so its mass never reaches the
    # torques (a null-space direction of the grouping matrix K). With beta = K pi_true and the
    # prior equal to pi_true, the prior alone decides that direction. With the information of
    # nearly noise-free data (1e12) the single scaled SDP lost the prior below the solver's
    # tolerance: the shoulder link ended at 3115 kg (URDF 7.8 kg), log-det divergences
    # 1.3e5 / 17 / 38 / 33 / 7.7 / 47 (szabo_3dof's link 1 at 383 kg, URDF 1 kg).
    model, base = ur10e
    pi = _true_parameters(model)
    mass = model.parameter_names.index("shoulder_link.m")
    assert not np.any(base.grouping[:, mass])
    beta = base.grouping @ pi
    phys = physically_consistent(model, base, information_scale * np.eye(len(base)), beta,
                                 nominal=pi)
    masses = [10 * k for k in range(model.n)]
    assert phys.standard[mass] == pytest.approx(pi[mass], rel=1e-3)
    # not exactly pi: the nominal wrist_3 pseudo-inertia is conditioned (eigenvalue floor of
    # nominal_pseudo_inertias), so the divergence's minimiser moves it slightly
    np.testing.assert_allclose(phys.standard[masses], pi[masses], rtol=0.05)
    assert phys.prior_distance.sum() < 1.0
    assert "unrefined" not in phys.status
    np.testing.assert_allclose(phys.base, beta, rtol=0, atol=1e-4 * np.abs(beta).max())


def test_without_a_prior_a_feasible_least_squares_estimate_is_kept_in_every_direction(ur10e):
    # nearly noise-free data of a physically consistent arm: the least-squares estimate is
    # itself feasible, so the SDP's minimum is that estimate. The data term's scale (the
    # whole signal's chi-square) once left the small links' directions within the conic
    # solver's tolerance: a simulated UR10e's wrist_3 ended hundreds of standard
    # deviations from least squares (held-out wrist_3 NRMSE 54.9 against 0.025)
    model, base = ur10e
    pi = _true_parameters(model)
    neq, _, _ = _normal_equations(model, base, pi, noise=1e-3, n=2000)
    est = ols(neq)
    info = neq.gram / est.sigma2[0]
    std = np.sqrt(np.diag(np.linalg.inv(info)))
    P = model.n_parameters
    phys = physically_consistent(model, base, info, est.values, nominal=np.zeros(P),
                                 prior_scales=np.full(P, np.inf), prior="gaussian")
    assert np.all(phys.min_eigenvalues > 0)
    deviation = np.abs(phys.base - est.values) / std
    worst = int(np.argmax(deviation))
    assert deviation[worst] < 1.0, (base.names[worst], deviation[worst])


def test_a_failed_rescaled_solve_keeps_the_first_one(ur10e, monkeypatch):
    # the second, rescaled stage-1 solve only refines: when the solvers fail on it, the
    # estimate of the first solve is returned instead of an error
    import robot_identification.estimation._physical as ph
    model, base = ur10e
    pi = _true_parameters(model)
    neq, _, _ = _normal_equations(model, base, pi, noise=1e-3, n=2000)
    est = ols(neq)
    info = neq.gram / est.sigma2[0]
    kw = dict(nominal=np.zeros(model.n_parameters),
              prior_scales=np.full(model.n_parameters, np.inf), prior="gaussian")
    real = ph._solve

    def failing(problem, x, solver, what, fallback=True):
        if "rescaled" in what:
            raise ph.IdentificationError(f"{what} failed: test")
        return real(problem, x, solver, what, fallback)
    monkeypatch.setattr(ph, "RESCALE_SCALE", 0.0)
    monkeypatch.setattr(ph, "RESCALE_BELOW", np.inf)
    monkeypatch.setattr(ph, "_solve", failing)
    phys = physically_consistent(model, base, info, est.values, **kw)
    assert np.all(phys.min_eigenvalues > 0) and np.all(np.isfinite(phys.base))
