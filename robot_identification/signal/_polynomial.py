"""Polynomial approximation (PA) operator of Lomakin & Deutscher as a bank of FIR filters.

Source: A. Lomakin, J. Deutscher, "Identification of Dynamic Parameters for Rigid Robots
based on Polynomial Approximation", Sec. III-IV, eq. (12)-(20); implementation decisions
(mapping s = 1 - 2 tau / T, alpha = beta = 3 default, discretisation) follow the seed notes
``seed-notes-rigid-friction-polynomial.md`` Sec. 1.8-1.9.

The operator projects the last T seconds of a signal onto Jacobi polynomials of degree
<= N (weight w(s) = (1 - s)^alpha (1 + s)^beta on s in [-1, 1]) and evaluates the
projection, or its k-th derivative, at the delayed instant t - t_d. As a convolution,
P^(k){x}(t) = int_0^T x(t - tau) g^(k)(tau) dtau (eq. 16, 19-20), with s = 1 - 2 tau / T
(s = +1 is the newest sample). t_d is placed at the zero of P_{N+1} closest to s = +1
(smallest delay), which raises the exactness order by one (Mboup, Join & Fliess).

Discretisation (not specified by the paper; the seed notes show that the naive
trapezoidal rule is useless for k = 2 at coarse sampling): taps are the exact integrals of
the kernel against the piecewise-linear interpolation ("hat") basis of the samples, then
minimally corrected so that the discrete filter reproduces the continuous operator exactly
on polynomials of degree <= N + 1 + k (for which the continuous operator returns
x^(k)(t - t_d) exactly). Hence every discrete kernel is exact on polynomials of that degree,
whatever the sample time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import numpy as np
import scipy.signal
import scipy.special
from numpy.polynomial import polynomial as npoly

from robot_identification.errors import DataError

#: Most taps of a differentiating FIR filter (100 s at 1 kHz): bounds the kernels'
#: memory and time before they are computed.
MAX_TAPS = 100_000


def jacobi_orthonormal(N, alpha, beta):
    """Orthonormal Jacobi polynomials p_0..p_N under w(s) = (1-s)^alpha (1+s)^beta.

    Parameters
    ----------
    N : int
        Highest degree.
    alpha, beta : float
        Weight exponents, > -1.

    Returns
    -------
    list of ndarray
        Power-series coefficients (lowest degree first) of p_i, i = 0..N, with
        int_{-1}^{1} p_i p_j w ds = delta_ij (Lomakin & Deutscher eq. 12-14; Szegő Sec. 4.3).
    """
    out = []
    for i in range(N + 1):
        c = scipy.special.jacobi(i, alpha, beta).coeffs[::-1].astype(float)
        # squared norm of the classical P_i^(alpha, beta)
        lg = ((alpha + beta + 1) * np.log(2.0) - np.log(2 * i + alpha + beta + 1)
              + scipy.special.gammaln(i + alpha + 1) + scipy.special.gammaln(i + beta + 1)
              - scipy.special.gammaln(i + alpha + beta + 1) - scipy.special.gammaln(i + 1))
        if i == 0 and abs(alpha + beta + 1) < 1e-14:  # degenerate formula, not reached for >-1
            lg = (alpha + beta + 1) * np.log(2.0)
        out.append(c / np.sqrt(np.exp(lg)))
    return out


def _weight_derivative(s, alpha, beta, k):
    """k-th derivative of w(s) = (1-s)^alpha (1+s)^beta (Leibniz rule)."""
    s = np.asarray(s, dtype=float)
    a = 1.0 - s
    b = 1.0 + s
    total = np.zeros_like(s)
    for i in range(k + 1):
        # d^i/ds^i (1-s)^alpha = (-1)^i alpha (alpha-1) .. (alpha-i+1) (1-s)^(alpha-i)
        fa = np.prod([alpha - m for m in range(i)]) * (-1) ** i
        fb = np.prod([beta - m for m in range(k - i)])
        with np.errstate(divide="ignore", invalid="ignore"):
            term = comb(k, i) * fa * fb * np.power(a, alpha - i) * np.power(b, beta - (k - i))
        total = total + np.where(np.isfinite(term), term, 0.0)
    return total


@dataclass
class PolynomialApproximation:
    """FIR kernels of the polynomial approximation operator P_{N, t_d} and its derivatives.

    Parameters
    ----------
    window : float
        T, window length [s]; rounded to an integer number L of sample periods
        (``self.window`` holds the used T = L / fs; the filter has L + 1 taps).
    fs : float
        Sample rate [Hz].
    N : int
        Projection degree (Lomakin & Deutscher used N = 1).
    alpha, beta : float
        Jacobi weight exponents; must exceed max_derivative - 1 so that the boundary terms of
        the k-fold integration by parts of eq. (19) vanish (the paper states the stricter
        k < alpha, beta, which the default satisfies). Default 3, 3 (reproduces the paper's
        t_d = 14.7 ms at T = 44 ms; seed notes Sec. 1.8).
    delay : float, optional
        t_d [s]. Default: at the zero of P_{N+1}^(alpha, beta) closest to s = +1.
    max_derivative : int
        Highest derivative kernel built (0, 1 or 2).

    Attributes
    ----------
    kernels : list of ndarray (L + 1,)
        kernels[k][j] multiplies x(t - j / fs): y^(k)(t) = sum_j h_j x(t - j / fs)
        estimates x^(k)(t - t_d) [unit of x / s^k].
    delay : float
        t_d [s].
    length : int
        L + 1 taps.

    Raises
    ------
    DataError
        Window shorter than N + 2 samples, alpha/beta too small, bad delay.
    """

    window: float
    fs: float
    N: int = 1
    alpha: float = 3.0
    beta: float = 3.0
    delay: float | None = None
    max_derivative: int = 2
    kernels: list = field(init=False, repr=False)
    length: int = field(init=False)

    def __post_init__(self):
        if not (0 < self.fs < np.inf and 0 < self.window < np.inf):
            raise DataError(f"PA window {self.window} s and rate {self.fs} Hz must be positive")
        if self.N < 0 or int(self.N) != self.N:
            raise DataError(f"PA degree N must be a non-negative integer, got {self.N}")
        ab = min(self.alpha, self.beta)
        if not (self.max_derivative - 1 < ab < np.inf and ab > -1) or not np.isfinite(
                max(self.alpha, self.beta)):
            raise DataError(f"PA weight exponents alpha={self.alpha}, beta={self.beta} must "
                            f"exceed {self.max_derivative - 1} for derivative order "
                            f"{self.max_derivative} (the boundary terms of the integration by "
                            f"parts in eq. 19 vanish only then)")
        L = int(round(self.window * self.fs))
        if L > MAX_TAPS:                        # bound the kernels before computing them
            raise DataError(f"PA window {self.window:g} s is {L} sample periods at "
                            f"{self.fs:g} Hz, above {MAX_TAPS} taps: a differentiating "
                            f"filter window is tens of milliseconds; shorten it")
        need = self.N + 2 + self.max_derivative
        if L < need:
            raise DataError(f"PA window {self.window} s has {L} sample periods at {self.fs} Hz; "
                            f"need at least {need} for N={self.N}: lengthen the window to "
                            f">= {need / self.fs:.3g} s")
        self.L = L
        self.window = L / self.fs
        T = self.window
        if self.delay is None:
            zeros = np.sort(scipy.special.roots_jacobi(self.N + 1, self.alpha, self.beta)[0])
            self.s_d = float(zeros[-1])
            self.delay = T * (1 - self.s_d) / 2
        else:
            if not 0 <= self.delay <= T:
                raise DataError(f"PA delay {self.delay} s must lie in [0, T = {T}] s")
            self.s_d = 1 - 2 * self.delay / T
        self.delay = float(self.delay)
        p = jacobi_orthonormal(self.N, self.alpha, self.beta)
        self._p = p
        R = np.zeros(self.N + 1)
        for pi in p:
            R = npoly.polyadd(R, pi * npoly.polyval(self.s_d, pi))[: self.N + 1]
        self._R = R  # R_{N,t_d}(s), eq. (17)
        self.length = L + 1
        self.kernels = [self._discrete_kernel(k) for k in range(self.max_derivative + 1)]

    # --- continuous kernel -------------------------------------------------------------
    def continuous_kernel(self, tau, k=0, poly=None):
        """g^(k)(tau) of eq. (18)/(20) [1/s^(k+1)], tau in [0, T] (0 outside).

        ``poly`` (power-series coefficients in s) replaces R_{N,t_d} of eq. (17): p_i gives
        the coefficient kernel g_{c_i} of eq. (27) (k = 0), p_i R the product kernel g~_i of
        eq. (25) (and its k-th derivative form).
        """
        T = self.window
        poly = self._R if poly is None else np.asarray(poly, dtype=float)
        tau = np.asarray(tau, dtype=float)
        s = 1 - 2 * tau / T
        out = np.zeros_like(s)
        for i in range(k + 1):  # Leibniz: (R w)^(k) = sum C(k,i) R^(k-i) w^(i)
            Rd = npoly.polyder(poly, k - i) if k - i > 0 else poly
            wd = _weight_derivative(s, self.alpha, self.beta, i)
            out = out + comb(k, i) * npoly.polyval(s, Rd) * wd
        out = (-1) ** k * (2 / T) ** (k + 1) * out
        return np.where((tau >= 0) & (tau <= T), out, 0.0)

    def _moments(self, k, degree, poly=None):
        """Continuous targets int_0^T tau^m g^(k)(tau) dtau for m = 0..degree.

        By integration by parts (eq. 19) the operator applied to x(t - tau) = tau^m returns
        int ((-d/dtau)^k tau^m) g(tau) dtau, computed exactly by Gauss-Jacobi quadrature.
        """
        T = self.window
        poly = self._R if poly is None else np.asarray(poly, dtype=float)
        nodes, wts = scipy.special.roots_jacobi(len(poly) + degree + 4, self.alpha, self.beta)
        tau = T * (1 - nodes) / 2
        Rv = npoly.polyval(nodes, poly)
        out = np.zeros(degree + 1)
        for m in range(degree + 1):
            if m < k:
                continue
            fac = (-1) ** k * np.prod(np.arange(m - k + 1, m + 1, dtype=float))
            out[m] = fac * np.sum(wts * Rv * tau ** (m - k))
        return out

    def _discrete_kernel(self, k, poly=None, degree=None):
        L, T = self.L, self.window
        ts = T / L
        # hat-basis integrals: 24-point Gauss-Legendre on every sample interval
        gx, gw = np.polynomial.legendre.leggauss(24)
        h = np.zeros(L + 1)
        lam_right = (gx + 1) / 2  # hat of node j+1 rises over [j, j+1]
        for j in range(L):
            tau = ts * (j + (gx + 1) / 2)
            gval = self.continuous_kernel(tau, k, poly) * gw * ts / 2
            h[j] += np.sum(gval * (1 - lam_right))
            h[j + 1] += np.sum(gval * lam_right)
        # minimal correction to exact moments up to degree N + 1 + k (scaled by T)
        deg = min(self.N + 1 + k if degree is None else degree, L)
        u = np.arange(L + 1) / L  # tau / T
        A = np.vander(u, deg + 1, increasing=True).T  # (deg+1, L+1)
        target = self._moments(k, deg, poly) / T ** np.arange(deg + 1)
        r = target - A @ h
        h = h + A.T @ np.linalg.solve(A @ A.T, r)
        return h

    # --- product rule (eq. 22-27) --------------------------------------------------------
    def product_kernels(self, n_star=2, k=0):
        """Discrete kernels of the partial approximation of a product (eq. 22-27).

        Parameters
        ----------
        n_star : int
            N*, degree assumed for the first factor over each window.
        k : int
            Derivative order applied to the second factor.

        Returns
        -------
        coefficient : list of ndarray (L + 1,)
            g_{c_i}, i = 0..N* (eq. 27): the projection coefficients c_i of x_1 on the window.
        product : list of ndarray (L + 1,)
            g~_i^(k), i = 0..N* (eq. 25, derivative moved onto the kernel as in eq. 20).
        """
        key = (n_star, k)
        cache = self.__dict__.setdefault("_product_cache", {})
        if key not in cache:
            coef = [self._discrete_kernel(0, p, degree=max(n_star, self.N + 1))
                    for p in jacobi_orthonormal(n_star, self.alpha, self.beta)]
            prod = [self._discrete_kernel(k, npoly.polymul(p, self._R))
                    for p in jacobi_orthonormal(n_star, self.alpha, self.beta)]
            cache[key] = (coef, prod)
        return cache[key]

    def apply_product(self, x1, x2, k=0, n_star=2, stride=1, offset=0):
        """P{x1 * x2^(k)} by the product rule (eq. 23): sum_i c_i{x1} * P~_i^(k){x2}.

        Exact when x1 is a polynomial of degree <= ``n_star`` over each window (any x2 in the
        discrete kernels' exactness class); otherwise an approximation that, unlike the
        composition rule (21), never differentiates a measured signal.

        Parameters
        ----------
        x1, x2 : array_like, shape (M, ...)
            Same shapes; time along axis 0.

        Returns
        -------
        ndarray
            Same layout as :meth:`apply`.
        """
        coef, prod = self.product_kernels(n_star, k)
        x1 = np.asarray(x1, dtype=float)
        x2 = np.asarray(x2, dtype=float)
        if x1.shape != x2.shape:
            raise DataError(f"product factors have shapes {x1.shape} and {x2.shape}")
        if x1.shape[0] < self.length:
            raise DataError(f"{x1.shape[0]} samples are fewer than the {self.length} taps of "
                            f"the polynomial-approximation filter (T = {self.window} s)")
        w1 = np.lib.stride_tricks.sliding_window_view(x1, self.length, axis=0)[offset::stride]
        w2 = np.lib.stride_tricks.sliding_window_view(x2, self.length, axis=0)[offset::stride]
        return sum((w1 @ c[::-1]) * (w2 @ g[::-1]) for c, g in zip(coef, prod))

    # --- application -------------------------------------------------------------------
    def apply(self, x, k=0, stride=1, offset=0):
        """Filter x with kernel k over all full windows ('valid' part).

        Parameters
        ----------
        x : array_like, shape (M, ...)
            Uniformly sampled at ``fs``, time along axis 0.
        k : int
            Derivative order.
        stride : int
            Keep every ``stride``-th output (decimation after the low-pass FIR).
        offset : int
            Index of the first output in the valid output sequence.

        Returns
        -------
        ndarray, shape (ceil((M - L - offset) / stride), ...)
            Output i refers to input sample ``L + offset + i*stride`` and estimates the
            k-th derivative at that sample's time minus ``delay``.

        Raises
        ------
        DataError
            Fewer samples than taps.
        """
        x = np.asarray(x, dtype=float)
        if x.shape[0] < self.length:
            raise DataError(f"{x.shape[0]} samples are fewer than the {self.length} taps of the "
                            f"polynomial-approximation filter (T = {self.window} s)")
        win = np.lib.stride_tricks.sliding_window_view(x, self.length, axis=0)
        win = win[offset::stride]
        # win[..., j] = x[i + j]; kernel tap j multiplies x(t - j), i.e. reversed
        return win @ self.kernels[k][::-1]

    def noise_gain(self, k=0):
        """sqrt(sum h_j^2): standard deviation of the output for unit white noise input."""
        return float(np.sqrt(np.sum(self.kernels[k] ** 2)))


@dataclass
class SavitzkyGolay:
    """Zero-phase Savitzky-Golay smoother/differentiator as an FIR bank (the baseline of
    Lomakin & Deutscher Table I: window L = 11, order 2).

    Same interface as :class:`PolynomialApproximation`: ``kernels[k]`` (taps in delay order),
    ``delay`` = (L - 1) / 2 sample periods, ``length`` = L, ``apply``.

    Parameters
    ----------
    length : int
        Window in samples (odd).
    order : int
        Polynomial order (>= max_derivative).
    fs : float
        Sample rate [Hz].
    """

    length: int
    order: int
    fs: float
    max_derivative: int = 2
    kernels: list = field(init=False, repr=False)

    def __post_init__(self):
        if self.length > MAX_TAPS:
            raise DataError(f"Savitzky-Golay window {self.length} samples is above {MAX_TAPS} "
                            f"taps: a differentiating filter window is tens of milliseconds; "
                            f"shorten it")
        if self.length % 2 == 0 or self.length <= self.order:
            raise DataError(f"Savitzky-Golay window {self.length} must be odd and longer than "
                            f"the order {self.order}")
        if self.order < self.max_derivative:
            raise DataError(f"Savitzky-Golay order {self.order} < derivative "
                            f"{self.max_derivative}")
        self.L = self.length - 1
        self.window = self.L / self.fs
        self.delay = self.L / 2 / self.fs
        self.kernels = [scipy.signal.savgol_coeffs(self.length, self.order, deriv=k,
                                                   delta=1 / self.fs, use="conv")
                        for k in range(self.max_derivative + 1)]

    apply = PolynomialApproximation.apply
    noise_gain = PolynomialApproximation.noise_gain
