"""OLS/WLS on accumulated normal equations against direct dense formulas."""
import numpy as np
import pytest

from robot_identification.errors import DataError
from robot_identification.estimation import NormalEquations, ols, wls


def _system(seed=0, N=400, groups=3, p=5):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(N, groups, p)) * np.array([1, 10, 0.1, 5, 1])
    x = rng.normal(size=p)
    sig = np.array([0.1, 1.0, 0.3])[:groups]
    y = W @ x + rng.normal(size=(N, groups)) * sig
    return W, y, x, sig


def test_ols_matches_dense_lstsq_in_chunks():
    W, y, _, _ = _system()
    neq = NormalEquations(5, 3)
    for s in range(0, 400, 97):
        neq.add(W[s:s + 97], y[s:s + 97])
    est = ols(neq)
    A, b = W.reshape(-1, 5), y.reshape(-1)
    ref, *_ = np.linalg.lstsq(A, b, rcond=None)
    np.testing.assert_allclose(est.values, ref, rtol=1e-10)
    r = b - A @ ref
    s2 = r @ r / (A.shape[0] - 5)
    np.testing.assert_allclose(est.covariance, s2 * np.linalg.inv(A.T @ A), rtol=1e-8)
    np.testing.assert_allclose(est.condition_number, np.linalg.cond(A), rtol=1e-8)
    np.testing.assert_allclose(est.residual_rms, np.sqrt(np.mean((y - W @ ref) ** 2, axis=0)),
                               rtol=1e-8)
    np.testing.assert_allclose(est.relative_std, 100 * est.std / np.abs(ref))


def test_wls_with_known_sigma_is_gls():
    W, y, _, sig = _system(1)
    neq = NormalEquations(5, 3)
    neq.add(W, y)
    est = wls(neq, sigma=sig)
    A = (W / sig[None, :, None]).reshape(-1, 5)
    b = (y / sig).reshape(-1)
    ref, *_ = np.linalg.lstsq(A, b, rcond=None)
    np.testing.assert_allclose(est.values, ref, rtol=1e-10)
    np.testing.assert_allclose(est.covariance, np.linalg.inv(A.T @ A), rtol=1e-8)


def test_wls_estimates_group_variances():
    W, y, x, sig = _system(2, N=5000)
    neq = NormalEquations(5, 3)
    neq.add(W, y)
    est = wls(neq)
    np.testing.assert_allclose(np.sqrt(est.sigma2), sig, rtol=0.05)
    assert np.all(np.abs(est.values - x) < 5 * est.std)


def _joints_of_unequal_torque(seed=0, N=2000, p=4):
    """Two row groups sharing parameters: a large joint whose rows carry an error of std 1
    (model error) and a small one (torques 1e-3 of it) measured to 1e-5; the last
    parameter (a wrist's own) is seen by the large joint 1e-3 as strongly as the others."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(N, 2, p))
    W[:, 1] *= 1e-3
    W[:, 0, -1] *= 1e-3
    x = rng.normal(size=p)
    y = W @ x + rng.normal(size=(N, 2)) * np.array([1.0, 1e-5])
    neq = NormalEquations(p, 2)
    neq.add(W, y)
    return neq, W, y, x


def test_iterated_wls_is_the_likelihood_optimum_with_unknown_group_variances():
    # independent reference: scipy minimises sum_j dof_j log RSS_j (Gaussian likelihood
    # with one unknown variance per group, the variances profiled out) from the OLS start
    from scipy.optimize import minimize
    neq, W, y, x = _joints_of_unequal_torque()
    dof = neq.count - neq.p / neq.groups

    def nll(beta):
        r = y - W @ beta
        rss = np.sum(r ** 2, axis=0)
        grad = -2.0 * np.einsum("j,nj,njk->k", dof / rss, r, W)
        return float(dof @ np.log(rss)), grad

    est = wls(neq)
    assert est.details["wls_converged"] and est.details["wls_iterations"] > 2
    ref = minimize(nll, ols(neq).values, jac=True, method="BFGS",
                   options={"gtol": 1e-10, "maxiter": 10000}).x
    assert nll(est.values)[0] <= nll(ref)[0] + 1e-6
    np.testing.assert_allclose(est.values, ref, atol=1e-7)
    # the small joint's own rows decide: its residual at its noise (1e-5), not at the large
    # joint's error leaking through the shared parameters (as one-step WLS leaves it)
    small = lambda beta: np.sqrt(np.mean((y[:, 1] - W[:, 1] @ beta) ** 2))  # noqa: E731
    assert small(est.values) < 2e-5
    assert small(wls(neq, iterations=1).values) > 2 * small(est.values)   # 2.75e-5


def test_row_mask_excludes_rows():
    W, y, _, _ = _system(3)
    mask = np.ones((400, 3), bool)
    mask[::3, 1] = False
    neq = NormalEquations(5, 3)
    neq.add(W, y, mask)
    A, b = W[mask], y[mask]
    ref, *_ = np.linalg.lstsq(A, b, rcond=None)
    np.testing.assert_allclose(ols(neq).values, ref, rtol=1e-10)
    assert neq.count.tolist() == [400, 400 - 134, 400]


def test_too_few_rows_and_bad_shapes():
    neq = NormalEquations(5, 1)
    neq.add(np.ones((3, 1, 5)), np.ones((3, 1)))
    with pytest.raises(DataError, match="too few samples"):
        ols(neq)
    with pytest.raises(DataError, match="do not match"):
        neq.add(np.ones((3, 2, 5)), np.ones((3, 2)))


def test_normal_equations_with_zero_columns_equal_direct_products():
    # groups whose rows leave some columns zero (like motor rows of the elastic model) are
    # accumulated on their non-zero columns only; the sums must equal W_j^T W_j exactly
    from robot_identification.estimation import NormalEquations
    rng = np.random.default_rng(4)
    N, p = 300, 12
    W = rng.normal(size=(N, 3, p))
    W[:, 1, 3:] = 0.0                   # group 1: 3 non-zero columns
    W[:, 2, ::2] = 0.0                  # group 2: every other column zero
    y = rng.normal(size=(N, 3))
    mask = rng.random((N, 3)) > 0.2
    neq = NormalEquations(p, 3)
    neq.add(W[:150], y[:150], mask[:150])
    neq.add(W[150:], y[150:], mask[150:])
    for j in range(3):
        Wj, yj = W[mask[:, j], j], y[mask[:, j], j]
        np.testing.assert_allclose(neq.G[j], Wj.T @ Wj, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(neq.b[j], Wj.T @ yj, rtol=1e-12, atol=1e-12)
        assert neq.count[j] == mask[:, j].sum()


def test_fixed_design_equals_adding_each_left_hand_side():
    # FixedDesign (a Monte-Carlo run's normal equations, W's Gram matrices computed once)
    # must give the sums of NormalEquations.add(W, y) bit for bit, with zero columns too,
    # and the same OLS and WLS estimates; independent reference: the dense products
    from robot_identification.estimation import FixedDesign
    rng = np.random.default_rng(7)
    N, p = 250, 12
    W = rng.normal(size=(N, 3, p))
    W[:, 1, 3:] = 0.0                   # group 1: 3 non-zero columns (gathered)
    W[:, 2, ::2] = 0.0
    design = FixedDesign(W)
    for seed in range(3):
        y = rng.normal(size=(N, 3))
        neq = NormalEquations(p, 3)
        neq.add(W, y)
        fixed = design.equations(y)
        for name in ("G", "b", "c", "count"):
            assert np.array_equal(getattr(fixed, name), getattr(neq, name)), name
        assert np.array_equal(ols(fixed).values, ols(neq).values)
        assert np.array_equal(wls(fixed).values, wls(neq).values)
        for j in range(3):
            np.testing.assert_allclose(fixed.G[j], W[:, j].T @ W[:, j], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(fixed.b[j], W[:, j].T @ y[:, j], rtol=1e-12, atol=1e-12)
    with pytest.raises(DataError, match="does not match"):
        design.equations(np.zeros((N, 2)))


def test_wls_that_did_not_settle_says_so(monkeypatch):
    """A WLS whose re-weighting stopped before the variances settled carries the warning
    ``wls_not_converged`` (here forced: one re-weighting allowed on data whose joints'
    torques differ by orders of magnitude)."""
    import robot_identification.identification._estimators as est
    from robot_identification.identification import identify
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("szabo_3dof")
    data = simulate(model, seed=0, duration=4.0)
    real = est.wls
    monkeypatch.setattr(est, "wls", lambda neq: real(neq, iterations=2, tol=0.0))
    result = identify(model, data, estimators=("wls",))
    assert result.estimates["wls"].details["wls_converged"] is False
    assert "wls_not_converged" in {d.code for d in result.diagnostics}
    monkeypatch.setattr(est, "wls", real)
    result = identify(model, data, estimators=("wls",))
    assert result.estimates["wls"].details["wls_converged"] is True
    assert "wls_not_converged" not in {d.code for d in result.diagnostics}
