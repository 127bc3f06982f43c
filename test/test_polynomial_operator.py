"""Polynomial-approximation operator (Lomakin & Deutscher eq. 12-20; seed notes Sec. 1.8, 1.10)."""
import numpy as np
import pytest
import scipy.integrate

from robot_identification.errors import DataError
from robot_identification.signal import (PolynomialApproximation, SavitzkyGolay,
                                         jacobi_orthonormal)


def test_jacobi_orthonormal_under_weight():
    a, b = 3.0, 2.5
    p = jacobi_orthonormal(3, a, b)
    for i in range(4):
        for j in range(4):
            val = scipy.integrate.quad(lambda s: np.polyval(p[i][::-1], s) * np.polyval(
                p[j][::-1], s) * (1 - s) ** a * (1 + s) ** b, -1, 1)[0]
            assert val == pytest.approx(float(i == j), abs=1e-10)


def test_paper_delay_and_closed_form_kernel():
    # T = 44 ms, N = 1, alpha = beta = 3: zero of P_2 at 1/3 -> t_d = T/3 = 14.667 ms (notes 1.8)
    pa = PolynomialApproximation(0.044, 250.0)
    assert pa.s_d == pytest.approx(1 / 3)
    assert pa.delay == pytest.approx(0.044 / 3)
    T = 0.044
    tau = np.linspace(0, T, 7)
    s = 1 - 2 * tau / T
    rw = 35 / 32 * (1 + 3 * s) * (1 - s ** 2) ** 3
    drw = -105 / 32 * (s - 1) ** 2 * (s + 1) ** 2 * (7 * s ** 2 + 2 * s - 1)
    ddrw = -105 / 16 * (s - 1) * (s + 1) * (21 * s ** 3 + 5 * s ** 2 - 9 * s - 1)
    np.testing.assert_allclose(pa.continuous_kernel(tau, 0), 2 / T * rw, atol=1e-9)
    np.testing.assert_allclose(pa.continuous_kernel(tau, 1), -(2 / T) ** 2 * drw, atol=1e-6)
    np.testing.assert_allclose(pa.continuous_kernel(tau, 2), (2 / T) ** 3 * ddrw, rtol=1e-12,
                               atol=1e-3)


def test_continuous_kernel_moments():
    pa = PolynomialApproximation(0.044, 250.0)
    td = pa.delay
    mom = {(k, m): scipy.integrate.quad(lambda u: u ** m * pa.continuous_kernel(u, k), 0, 0.044)[0]
           for k in range(3) for m in range(3)}
    assert mom[0, 0] == pytest.approx(1)
    assert mom[0, 1] == pytest.approx(td)
    assert mom[0, 2] == pytest.approx(td ** 2)
    assert mom[1, 0] == pytest.approx(0, abs=1e-9)
    assert mom[1, 1] == pytest.approx(-1)
    assert mom[1, 2] == pytest.approx(-2 * td)
    assert mom[2, 2] == pytest.approx(2)


@pytest.mark.parametrize("N,alpha,beta,fs,T", [(1, 3, 3, 250.0, 0.044), (2, 3, 4, 1000.0, 0.03),
                                               (3, 2.5, 3.5, 500.0, 0.05), (0, 3, 3, 100.0, 0.1)])
def test_discrete_kernels_exact_on_polynomials(N, alpha, beta, fs, T):
    """Discrete P^(k) returns x^(k)(t - t_d) exactly for polynomials of degree <= N + 1 + k,
    at coarse sampling (continuous exactness orders of the notes, Sec. 1.8)."""
    pa = PolynomialApproximation(T, fs, N=N, alpha=alpha, beta=beta)
    rng = np.random.default_rng(0)
    t = np.arange(200) / fs
    tq = t[pa.L:] - pa.delay
    for k in range(3):
        deg = N + 1 + k
        c = rng.normal(size=deg + 1)
        x = np.polyval(c, t)
        want = np.polyval(np.polyder(c, k), tq) if k else np.polyval(c, tq)
        got = pa.apply(x, k)
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8 * np.abs(want).max())


def test_naive_discretisation_would_fail_but_ours_is_exact():
    # notes 1.8: x = 1 + 3t + 50t^2 at t = 1 s, Ts = 4 ms: true x'(t-td) = 101.5333, x'' = 100
    pa = PolynomialApproximation(0.044, 250.0)
    t = np.arange(0, 1.0 + 1e-9, 0.004)
    x = 1 + 3 * t + 50 * t ** 2
    assert pa.apply(x, 1)[-1] == pytest.approx(3 + 100 * (1 - 0.044 / 3), rel=1e-10)
    assert pa.apply(x, 2)[-1] == pytest.approx(100, rel=1e-8)


def test_explicit_delay_and_decimation():
    pa = PolynomialApproximation(0.02, 1000.0, N=2, delay=0.01)
    assert pa.delay == 0.01
    x = np.sin(np.arange(500) / 1000.0 * 7)
    full = pa.apply(x, 1)
    np.testing.assert_allclose(pa.apply(x, 1, stride=7, offset=3), full[3::7])
    # sine is smooth: derivative estimate close to 7 cos(7 (t - td))
    t = np.arange(500) / 1000.0
    np.testing.assert_allclose(full, 7 * np.cos(7 * (t[pa.L:] - 0.01)), atol=2e-3)


def test_savgol_bank_matches_scipy():
    import scipy.signal
    fs = 250.0
    sg = SavitzkyGolay(11, 2, fs)
    x = np.random.default_rng(1).normal(size=100).cumsum()
    ref = scipy.signal.savgol_filter(x, 11, 2, deriv=1, delta=1 / fs)
    np.testing.assert_allclose(sg.apply(x, 1), ref[5:-5], rtol=1e-10, atol=1e-10)
    assert sg.delay == pytest.approx(5 / fs)


def test_bad_settings_raise():
    with pytest.raises(DataError, match="alpha"):
        PolynomialApproximation(0.044, 250.0, alpha=1.0)
    with pytest.raises(DataError, match="sample periods"):
        PolynomialApproximation(0.008, 250.0)
    with pytest.raises(DataError, match="delay"):
        PolynomialApproximation(0.044, 250.0, delay=0.1)
    pa = PolynomialApproximation(0.044, 250.0)
    with pytest.raises(DataError, match="fewer than"):
        pa.apply(np.zeros(5))
    with pytest.raises(DataError, match="odd"):
        SavitzkyGolay(10, 2, 250.0)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_product_rule_exact_for_polynomial_first_factor(k):
    """eq. (22)-(27): P{x1 x2^(k)} = sum_i c_i{x1} P~_i^(k){x2}, exact for deg x1 <= N*,
    checked against the continuous operator integrated by quadrature (coarse sampling)."""
    fs, T = 250.0, 0.044
    pa = PolynomialApproximation(T, fs)
    t = np.arange(60) / fs
    c1 = [0.7, -1.3, 2.0]                 # x1: quadratic (N* = 2)
    c2 = np.random.default_rng(2).normal(size=2 + k + 1)   # x2: degree N + 1 + k
    got = pa.apply_product(np.polyval(c1, t), np.polyval(c2, t), k=k, n_star=2)
    d2 = np.polyder(c2, k) if k else c2
    g = pa.continuous_kernel
    for idx in (0, 17, len(got) - 1):
        tn = t[pa.L + idx]
        ref = scipy.integrate.quad(lambda u: np.polyval(c1, tn - u) * np.polyval(d2, tn - u)
                                   * g(u, 0), 0, pa.window, epsabs=1e-12)[0]
        assert got[idx] == pytest.approx(ref, rel=1e-8, abs=1e-9)


def test_product_rule_beats_composition_on_trig_coefficient():
    """cos(q) * q'' (an inertia-like term): the product rule error is far below the
    composition rule's cos(q^) q^'' error (both against the continuous P{cos q q''})."""
    fs, T = 250.0, 0.044
    pa = PolynomialApproximation(T, fs)
    t = np.arange(200) / fs
    q = 1.5 * np.sin(2 * np.pi * 1.5 * t)
    ddq = -(2 * np.pi * 1.5) ** 2 * q
    prod = pa.apply_product(np.cos(q), q, k=2, n_star=2)
    comp = np.cos(pa.apply(q, 0)) * pa.apply(q, 2)
    ref = pa.apply(np.cos(q) * ddq, 0)    # P applied to the exact product
    assert np.abs(prod - ref).max() < 0.2 * np.abs(comp - ref).max()
