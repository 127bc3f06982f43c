"""Modified recursive least squares (MRLS) of Lomakin & Deutscher.

Source: A. Lomakin, J. Deutscher, "Identification of Dynamic Parameters for Rigid Robots
based on Polynomial Approximation", Sec. V, eq. (38)-(53), Fig. 1 (reconstructed in the
seed notes ``seed-notes-rigid-friction-polynomial.md`` Sec. 1.4), box constraints Sec. VI
eq. (54).

Per data block the accumulated Gram matrix K is inverted by a forward Gauss elimination
whose pivots are the Gram-Schmidt squared norms <v_i, v_i> (eq. 43-45): a parameter whose
pivot is too small is removed from the inversion (row and column zeroed) and keeps its
previous value; it is flagged 0 (not excited: its own column norm K_ii is too small) or -1
(linearly dependent on earlier accepted columns). With every parameter accepted from the
first block on, the estimate equals batch OLS on all data seen so far (seed notes Sec. 1.4).

Implementation decisions (seed notes Sec. 1.9, A4-A6): the update of Fig. 1 line 37 uses
the new block with the accumulated K (``update='block'``, the paper's recursion). Because a
parameter that is frozen in early blocks and accepted later only sees the residuals of the
blocks after its acceptance, that recursion can end far from OLS; ``update='accumulated'``
(default) applies the same explicit inverse to the residual of *all* data so far,
K^-1 (b - K theta_k) with b = sum Y_j^T y_j, which gives the reduced OLS with the frozen
parameters held at their values (and exactly OLS once every parameter is accepted) whatever
the history. Both are identical while every parameter is accepted from the first block on.
The dependence test is scale-free: parameter i is dependent when its pivot
<= dependence_tol * K_ii (the squared sine of the angle between column i and the span of the
accepted earlier columns). "Not excited" cannot be scale-free (regressor columns of different
parameters have different units: the column of a joint stiffness K is a deflection of
milliradians, that of a rotor inertia a gear-scaled acceleration): by default a column is
unexcited when K_ii <= excitation_tol * max_j K_jj with excitation_tol = 1e-24 (column norms
12 orders of magnitude apart, i.e. numerically zero); give the paper's absolute per-column
floor ``sigma2`` (in each column's own units squared times rows) for a physical test.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_identification.errors import DataError

IDENTIFIED, NOT_EXCITED, DEPENDENT = 1, 0, -1


def modified_inverse(K, sigma2=None, excitation_tol=1e-24, dependence_tol=1e-10):
    """Inverse of the Gram matrix restricted to the identifiable parameters (Fig. 1, l. 7-35).

    Parameters
    ----------
    K : ndarray (p, p)
        Symmetric positive semi-definite Gram matrix Y^T Y.
    sigma2 : float or ndarray (p,), optional
        Absolute minimum squared column norm per parameter (the paper's sigma_j^2). When
        given it replaces the relative excitation threshold.
    excitation_tol, dependence_tol : float
        Relative thresholds (see module docstring).

    Returns
    -------
    K_inv : ndarray (p, p)
        inv(K[S, S]) embedded with zero rows/columns for parameters not in S.
    flags : ndarray of int (p,)
        1 identified, 0 not excited, -1 linearly dependent.
    pivots : ndarray (p,)
        Gram-Schmidt squared norms <v_i, v_i> (0 for rejected parameters).
    """
    K = np.asarray(K, dtype=float)
    p = K.shape[0]
    diag = np.diag(K).copy()
    if sigma2 is None:
        floor = excitation_tol * max(diag.max(initial=0.0), np.finfo(float).tiny)
        floor = np.full(p, floor)
    else:
        floor = np.broadcast_to(np.asarray(sigma2, dtype=float), (p,))
    # the elimination runs on the column-scaled matrix D K D (unit diagonal; the pivots
    # become the squared sines of eq. 43 divided by K_ii, and rounding no longer depends on
    # the parameters' units); the inverse is scaled back at the end
    excited = diag > floor
    d = np.where(excited, 1.0 / np.sqrt(np.where(excited, diag, 1.0)), 0.0)
    M = np.hstack([K * np.outer(d, d), np.eye(p)])
    flags = np.zeros(p, dtype=int)
    pivots = np.zeros(p)
    for i in range(p):
        piv = M[i, i]
        if excited[i] and piv > dependence_tol and piv * diag[i] > floor[i]:
            flags[i] = IDENTIFIED
            pivots[i] = piv * diag[i]
            if i + 1 < p:  # eliminate below (Fig. 1, l. 13)
                M[i + 1:] -= np.outer(M[i + 1:, i] / piv, M[i])
        else:
            flags[i] = DEPENDENT if excited[i] else NOT_EXCITED
            M[i, :] = 0.0
            M[:, i] = 0.0
    # back substitution (Fig. 1, l. 27-33)
    for i in range(p - 1, -1, -1):
        if M[i, i] > 0:
            M[i] /= M[i, i]
            if i > 0:
                M[:i] -= np.outer(M[:i, i], M[i])
    return M[:, p:] * np.outer(d, d), flags, pivots


def _as_rows(Y, y, p):
    Y = np.asarray(Y, dtype=float)
    y = np.asarray(y, dtype=float)
    if Y.ndim == 3:
        Y = Y.reshape(-1, Y.shape[-1])
        y = y.reshape(-1)
    if Y.ndim != 2 or Y.shape[1] != p or y.shape != (Y.shape[0],):
        raise DataError(f"MRLS block shapes Y {Y.shape}, y {y.shape} do not match (m, {p}) / (m,)")
    return Y, y


@dataclass
class MRLSResult:
    """Final state of :class:`MRLS`.

    Attributes
    ----------
    values : ndarray (p,)
    flags : ndarray of int (p,)
        1 identified, 0 not excited (initial value kept), -1 linearly dependent (kept).
    K_inv : ndarray (p, p)
    n_blocks, n_rows : int
    clipped : ndarray of bool (p,)
        Parameters at a bound after the last update.
    """

    values: np.ndarray
    flags: np.ndarray
    K_inv: np.ndarray
    n_blocks: int
    n_rows: int
    clipped: np.ndarray


class MRLS:
    """Modified recursive least squares on data blocks (Lomakin & Deutscher Fig. 1).

    Parameters
    ----------
    n_parameters : int
    theta0 : array_like (p,), optional
        Initial guess (kept for parameters never identified). Default zeros.
    lower, upper : array_like (p,), optional
        Box constraints (eq. 54): every iterate is clipped into [lower, upper]
        (Sec. VI; feasible but possibly suboptimal in the least-squares sense).
    sigma2, excitation_tol, dependence_tol :
        See :func:`modified_inverse`.
    names : list of str, optional
        Parameter names for messages.
    update : {'accumulated', 'block'}
        Residual used with the explicit inverse (see module docstring): all data so far
        (default) or only the new block (Fig. 1, line 37 as printed).

    Raises
    ------
    DataError
        Inconsistent shapes, lower > upper, or theta0 outside the bounds.
    """

    def __init__(self, n_parameters, theta0=None, lower=None, upper=None, sigma2=None,
                 excitation_tol=1e-24, dependence_tol=1e-10, names=None, update="accumulated"):
        if update not in ("accumulated", "block"):
            raise DataError(f"MRLS update must be 'accumulated' or 'block', got {update!r}")
        self.update_rule = update
        p = int(n_parameters)
        self.p = p
        self.names = list(names) if names is not None else [f"theta{i}" for i in range(p)]
        self.theta = np.zeros(p) if theta0 is None else np.array(theta0, dtype=float)
        self.lower = np.full(p, -np.inf) if lower is None else np.array(lower, dtype=float)
        self.upper = np.full(p, np.inf) if upper is None else np.array(upper, dtype=float)
        for nm, v in (("theta0", self.theta), ("lower", self.lower), ("upper", self.upper)):
            if v.shape != (p,):
                raise DataError(f"MRLS {nm} must have {p} values, got shape {v.shape}")
        bad = np.flatnonzero(self.lower > self.upper)
        if bad.size:
            raise DataError(f"MRLS bounds: lower > upper for {[self.names[i] for i in bad]}")
        out = np.flatnonzero((self.theta < self.lower) | (self.theta > self.upper))
        if out.size:
            raise DataError(f"MRLS initial guess outside the bounds for "
                            f"{[self.names[i] for i in out]}")
        self.K = np.zeros((p, p))
        self.b = np.zeros(p)
        self.sigma2 = sigma2
        self.excitation_tol = excitation_tol
        self.dependence_tol = dependence_tol
        self.flags = np.zeros(p, dtype=int)
        self.K_inv = np.zeros((p, p))
        self.n_blocks = 0
        self.n_rows = 0
        self.history = []

    def update(self, Y, y, keep_history=False):
        """Process one data block (Fig. 1, lines 7-38).

        Parameters
        ----------
        Y : ndarray (m, p) or (N, rows, p)
            Block of the (filtered, base) observation matrix.
        y : ndarray (m,) or (N, rows)
            Matching left-hand side.
        keep_history : bool
            Append (theta, flags) after this block to ``self.history``.

        Returns
        -------
        ndarray (p,)
            Updated parameters.
        """
        Y, y = _as_rows(Y, y, self.p)
        self.K += Y.T @ Y
        by = Y.T @ y
        self.b += by
        self.K_inv, self.flags, _ = modified_inverse(self.K, self.sigma2, self.excitation_tol,
                                                     self.dependence_tol)
        if self.update_rule == "block":   # Fig. 1, line 37
            self.theta = self.theta + self.K_inv @ (by - Y.T @ (Y @ self.theta))
        else:
            self.theta = self.theta + self.K_inv @ (self.b - self.K @ self.theta)
        self.theta = np.clip(self.theta, self.lower, self.upper)
        self.n_blocks += 1
        self.n_rows += Y.shape[0]
        if keep_history:
            self.history.append((self.theta.copy(), self.flags.copy()))
        return self.theta

    def update_normal_equations(self, K, b, n_rows):
        """Process a block given by its normal equations K = Y^T Y (p, p), b = Y^T y (p,)
        (the same update as :meth:`update`; the whole recording as one block gives the
        history-free result of the ``accumulated`` rule)."""
        K = np.asarray(K, dtype=float)
        b = np.asarray(b, dtype=float)
        if K.shape != (self.p, self.p) or b.shape != (self.p,):
            raise DataError(f"MRLS normal equations K {K.shape}, b {b.shape} do not match "
                            f"{self.p} parameters")
        self.K += K
        self.b += b
        self.K_inv, self.flags, _ = modified_inverse(self.K, self.sigma2, self.excitation_tol,
                                                     self.dependence_tol)
        if self.update_rule == "block":
            self.theta = self.theta + self.K_inv @ (b - K @ self.theta)
        else:
            self.theta = self.theta + self.K_inv @ (self.b - self.K @ self.theta)
        self.theta = np.clip(self.theta, self.lower, self.upper)
        self.n_blocks += 1
        self.n_rows += int(n_rows)
        return self.theta

    def result(self):
        """Current :class:`MRLSResult`."""
        clipped = (self.theta <= self.lower) | (self.theta >= self.upper)
        return MRLSResult(values=self.theta.copy(), flags=self.flags.copy(),
                          K_inv=self.K_inv.copy(), n_blocks=self.n_blocks, n_rows=self.n_rows,
                          clipped=clipped)


def mrls(blocks, n_parameters, **kwargs):
    """Run :class:`MRLS` over an iterable of ``(Y, y)`` blocks and return its result.

    Parameters
    ----------
    blocks : iterable of (Y, y)
        Shapes as in :meth:`MRLS.update`.
    n_parameters : int
    **kwargs
        Passed to :class:`MRLS`.

    Returns
    -------
    MRLSResult

    Raises
    ------
    DataError
        No block given, or shapes inconsistent.
    """
    est = MRLS(n_parameters, **kwargs)
    for Y, y in blocks:
        est.update(Y, y)
    if est.n_blocks == 0:
        raise DataError("MRLS received no data block")
    return est.result()
