"""Modified recursive least squares (Lomakin & Deutscher Fig. 1; seed notes Sec. 1.4, 1.10)."""
import numpy as np
import pytest

from robot_identification.errors import DataError
from robot_identification.estimation import MRLS, modified_inverse, mrls


def _blocks(Y, y, n):
    return list(zip(np.array_split(Y, n), np.array_split(y, n)))


def test_mrls_equals_ols_on_fully_excited_data():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(20000, 8)) * np.logspace(-2, 2, 8)
    x = rng.normal(size=8)
    y = Y @ x + 0.1 * rng.normal(size=20000)
    ref = np.linalg.lstsq(Y, y, rcond=None)[0]
    for theta0 in (None, rng.normal(size=8) * 100):
        res = mrls(_blocks(Y, y, 20), 8, theta0=theta0)
        np.testing.assert_allclose(res.values, ref, rtol=1e-10, atol=1e-12)
        assert np.all(res.flags == 1)
        np.testing.assert_allclose(res.K_inv, np.linalg.inv(Y.T @ Y), rtol=1e-9)


def test_pivots_are_gram_schmidt_norms():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(50, 5))
    _, _, piv = modified_inverse(Y.T @ Y)
    # Gram-Schmidt squared norms = squared diagonal of R in Y = QR
    r = np.linalg.qr(Y, mode="r")
    np.testing.assert_allclose(piv, np.diag(r) ** 2, rtol=1e-10)


def test_flags_on_unexcited_and_dependent_columns():
    rng = np.random.default_rng(2)
    m = 3000
    A = rng.normal(size=(m, 4))
    # columns: a0, zero, a1, 2*a0 - a1 (dependent), a2, a3
    Y = np.column_stack([A[:, 0], np.zeros(m), A[:, 1], 2 * A[:, 0] - A[:, 1], A[:, 2], A[:, 3]])
    truth = np.array([1.0, 5.0, -2.0, 0.5, 3.0, -1.0])
    y = Y @ truth + 0.01 * rng.normal(size=m)
    theta0 = np.array([0.0, 7.0, 0.0, 4.0, 0.0, 0.0])
    res = mrls(_blocks(Y, y, 10), 6, theta0=theta0)
    np.testing.assert_array_equal(res.flags, [1, 0, 1, -1, 1, 1])
    assert res.values[1] == 7.0 and res.values[3] == 4.0  # frozen at the initial guess
    # the others equal OLS of (y - Y_frozen theta0_frozen) on the accepted columns
    acc = [0, 2, 4, 5]
    ref = np.linalg.lstsq(Y[:, acc], y - Y[:, [1, 3]] @ theta0[[1, 3]], rcond=None)[0]
    np.testing.assert_allclose(res.values[acc], ref, rtol=1e-9)
    # K^-1 equals inv(K[S,S]) embedded with zeros
    K = Y.T @ Y
    emb = np.zeros((6, 6))
    emb[np.ix_(acc, acc)] = np.linalg.inv(K[np.ix_(acc, acc)])
    np.testing.assert_allclose(res.K_inv, emb, rtol=1e-8, atol=1e-15)


def test_unexcited_then_excited_becomes_identified():
    rng = np.random.default_rng(3)
    Y1 = rng.normal(size=(500, 3))
    Y1[:, 2] = 0.0
    Y2 = rng.normal(size=(500, 3))
    truth = np.array([1.0, 2.0, 3.0])
    est = MRLS(3)
    est.update(Y1, Y1 @ truth)
    assert list(est.flags) == [1, 1, 0] and est.theta[2] == 0.0
    est.update(Y2, Y2 @ truth)
    assert list(est.flags) == [1, 1, 1]
    np.testing.assert_allclose(est.theta, truth, rtol=1e-10)


def test_rank_deficient_rigid_regressor_like_stack():
    """(N, rows, p) blocks and an absolute sigma2 floor."""
    rng = np.random.default_rng(4)
    Y = rng.normal(size=(400, 2, 4))
    Y[..., 3] = Y[..., 0] + Y[..., 1]
    y = Y @ np.array([1.0, 2.0, 3.0, 0.0])
    res = mrls([(Y[:200], y[:200]), (Y[200:], y[200:])], 4, sigma2=1e-6)
    assert list(res.flags) == [1, 1, 1, -1]
    np.testing.assert_allclose(res.values, [1, 2, 3, 0], atol=1e-10)


def test_box_constraints_respected_in_every_iterate():
    rng = np.random.default_rng(5)
    Y = rng.normal(size=(4000, 3))
    y = Y @ np.array([2.0, -3.0, 0.5]) + 0.01 * rng.normal(size=4000)
    lo, hi = np.array([0.0, -1.0, -10.0]), np.array([1.0, 10.0, 10.0])
    est = MRLS(3, lower=lo, upper=hi)
    for Yb, yb in _blocks(Y, y, 20):
        th = est.update(Yb, yb)
        assert np.all(th >= lo) and np.all(th <= hi)
    assert est.result().clipped[:2].all()
    # inactive bounds: unchanged
    free = mrls(_blocks(Y, y, 20), 3, lower=[-10] * 3, upper=[10] * 3)
    np.testing.assert_allclose(free.values, np.linalg.lstsq(Y, y, rcond=None)[0], rtol=1e-10)


def test_bad_input():
    with pytest.raises(DataError, match="lower > upper"):
        MRLS(2, lower=[0, 1], upper=[1, 0], names=["a", "b"])
    with pytest.raises(DataError, match="outside the bounds"):
        MRLS(2, theta0=[5, 0], lower=[0, 0], upper=[1, 1])
    with pytest.raises(DataError, match="do not match"):
        MRLS(2).update(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(DataError, match="no data block"):
        mrls([], 2)


def test_late_acceptance_accumulated_equals_ols_block_rule_does_not():
    """A parameter below the excitation floor sigma2 in the first block, identifiable later:
    the accumulated update ends at OLS; the paper's block update (Fig. 1 line 37) misses the
    first block's information on it (documented)."""
    rng = np.random.default_rng(6)
    Y1 = rng.normal(size=(400, 3))
    Y1[:, 2] *= 0.1                      # weakly excited: K_22 ~ 4 < sigma2 = 10
    Y2 = rng.normal(size=(400, 3))
    truth = np.array([1.0, 2.0, 3.0])
    Y = np.vstack([Y1, Y2])
    y = Y @ truth + 0.3 * rng.normal(size=800)
    ref = np.linalg.lstsq(Y, y, rcond=None)[0]
    blocks = [(Y1, y[:400]), (Y2, y[400:])]
    acc = MRLS(3, sigma2=10.0)
    acc.update(*blocks[0])
    assert list(acc.flags) == [1, 1, 0]
    acc.update(*blocks[1])
    assert list(acc.flags) == [1, 1, 1]
    np.testing.assert_allclose(acc.theta, ref, rtol=1e-10)
    blk = mrls(blocks, 3, update="block", sigma2=10.0)
    assert np.abs(blk.values - ref).max() > 1e-2
    with pytest.raises(DataError, match="update"):
        MRLS(3, update="paper")


def test_scale_invariant_default_thresholds():
    """Badly scaled but independent columns (norm ratio 1e9) are all identified."""
    rng = np.random.default_rng(7)
    Y = rng.normal(size=(1000, 3)) * np.array([1e6, 1.0, 1e-3])
    y = Y @ np.array([1e-6, 1.0, 1e3])
    res = mrls([(Y, y)], 3)
    assert list(res.flags) == [1, 1, 1]
    np.testing.assert_allclose(res.values, [1e-6, 1.0, 1e3], rtol=1e-8)
