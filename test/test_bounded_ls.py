"""Box constraints: interval transfer to base parameters and bounded LS ([LD] Sec. VI)."""
import itertools

import numpy as np
import pytest
import scipy.optimize

from robot_identification.errors import DataError
from robot_identification.estimation import NormalEquations, base_bounds, bounded_ls, ols


def test_base_bounds_are_tight_interval_image():
    rng = np.random.default_rng(0)
    G = rng.normal(size=(3, 4))
    G[0, 1] = 0.0
    lo = np.array([-1.0, 0.0, 2.0, -3.0])
    hi = np.array([1.0, 0.5, 4.0, -1.0])
    blo, bhi = base_bounds(G, lo, hi)
    corners = np.array([G @ np.array(c) for c in itertools.product(*zip(lo, hi))])
    np.testing.assert_allclose(blo, corners.min(axis=0))
    np.testing.assert_allclose(bhi, corners.max(axis=0))


def test_base_bounds_infinite_and_zero_coefficients():
    G = np.array([[1.0, 0.0], [2.0, -1.0]])
    blo, bhi = base_bounds(G, [0.0, -np.inf], [1.0, np.inf])
    assert (blo[0], bhi[0]) == (0.0, 1.0)
    assert blo[1] == -np.inf and bhi[1] == np.inf
    with pytest.raises(DataError, match="lower bound above"):
        base_bounds(G, [1.0, 0.0], [0.0, 1.0], names=["a", "b"])


def _neq(Y, y):
    neq = NormalEquations(Y.shape[1], 1)
    neq.add(Y[:, None, :], y[:, None])
    return neq


def test_bounded_ls_respects_bounds_and_matches_scipy_on_raw_data():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(2000, 4)) * [1, 10, 0.1, 1]
    y = Y @ np.array([2.0, -3.0, 0.5, 1.0]) + 0.01 * rng.normal(size=2000)
    lo, hi = np.array([0.0, -1.0, -5.0, -5.0]), np.array([1.0, 5.0, 5.0, 5.0])
    x, active = bounded_ls(_neq(Y, y), lo, hi)
    assert np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
    ref = scipy.optimize.lsq_linear(Y, y, bounds=(lo, hi), method="bvls", tol=1e-12).x
    np.testing.assert_allclose(x, ref, rtol=1e-7, atol=1e-9)
    assert list(active) == [True, True, False, False]


def test_bounded_ls_inactive_bounds_equal_ols():
    rng = np.random.default_rng(2)
    Y = rng.normal(size=(500, 3))
    y = Y @ np.array([1.0, 2.0, 3.0]) + 0.1 * rng.normal(size=500)
    neq = _neq(Y, y)
    x, active = bounded_ls(neq, [-10] * 3, [10] * 3)
    np.testing.assert_allclose(x, ols(neq).values, rtol=1e-9)
    assert not active.any()
    with pytest.raises(DataError, match="3 values"):
        bounded_ls(neq, [0, 0], [1, 1])
