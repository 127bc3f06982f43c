"""Ordinary and weighted least squares on accumulated normal equations."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from robot_identification._threads import one_blas_thread
from robot_identification.errors import DataError


class NormalEquations:
    """Sufficient statistics of a linear observation system, accumulated block by block.

    For each row group j (one row of the per-sample regressor: a joint equation, or for
    elastic arms a link or motor equation) it keeps G_j = W_j^T W_j, b_j = W_j^T y_j,
    c_j = y_j^T y_j and the row count. OLS, WLS with per-group weights, residuals per
    group and covariances follow without keeping W, so memory is O(rows * p^2)
    whatever the recording length.

    Parameters
    ----------
    n_parameters : int
        p, columns of the (base) observation matrix.
    n_groups : int
        Rows per sample.
    structure : array_like (n_groups, n_parameters) of bool, optional
        Columns that can be non-zero in each group's rows
        (:func:`~robot_identification.regressor.regressor_structure`): the sums skip the
        others without looking at the data; default: the non-zero columns of each block.

    Attributes
    ----------
    G, b, c, count : ndarray
        (n_groups, p, p), (n_groups, p), (n_groups,), (n_groups,) sums.
    scale_sums : ndarray (n_groups,)
        Sum of psi(r / sigma)^2 sigma^2 over the rows of a Huber-weighted pass (the scale
        update of Huber's proposal 2, used by the ``irls`` estimator); 0 otherwise.

    Only sums: they add up with ``+=``, so the equations of many recordings are a sum (what
    the identification engine reports about the recordings behind them is
    :class:`robot_identification.identification.RecordingEquations`).
    """

    def __init__(self, n_parameters: int, n_groups: int, structure=None):
        self.p = n_parameters
        self.groups = n_groups
        self.G = np.zeros((n_groups, n_parameters, n_parameters))
        self.b = np.zeros((n_groups, n_parameters))
        self.c = np.zeros(n_groups)
        self.count = np.zeros(n_groups, dtype=np.int64)
        self.scale_sums = np.zeros(n_groups)
        # per group the columns that can be non-zero (None: found block by block)
        self.group_columns = None if structure is None else [
            np.flatnonzero(np.asarray(row, dtype=bool)) for row in structure]
        self._square = {}           # group -> (its columns, np.ix_ of them): _square_index
        self._flat = None           # (group_columns, their flat indices): _flat_columns

    def add(self, W, y, mask=None, weights=None):
        """Add a block.

        Parameters
        ----------
        W : ndarray, shape (N, n_groups, p)
        y : ndarray, shape (N, n_groups)
        mask : ndarray of bool, shape (N, n_groups), optional
            Rows to use (e.g. a velocity threshold applied to friction rows only).
        weights : ndarray, shape (N, n_groups), optional
            Non-negative row weights w (G += W^T diag(w) W, b += W^T diag(w) y,
            c += y^T diag(w) y), e.g. Huber weights of an IRLS pass.
        """
        W, y = self._checked(W, y)
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            self.count += mask.sum(axis=0)
        else:
            self.count += W.shape[0]
        if self.group_columns is not None:     # every group's rows gathered (a copy)
            self.add_groups(self.groups_of(W, y, mask, weights))
            return
        r = None if weights is None else np.sqrt(np.asarray(weights, dtype=float))
        with one_blas_thread():
            for j in range(self.groups):  # one BLAS product per group (einsum is ~10x slower)
                Wj, cols = self._group_block(W, j)
                yj = y[:, j]
                f = None if mask is None else mask[:, j].astype(float)
                if r is not None:
                    f = r[:, j] if f is None else f * r[:, j]
                if f is not None:        # masked rows and weights: rows scaled
                    if np.may_share_memory(Wj, W):
                        Wj = Wj * f[:, None]
                    else:                # the group's own copy (a gather): scaled in place
                        Wj *= f[:, None]
                    yj = yj * f
                self._add_group(j, Wj, yj, cols)

    def _add_group(self, j, Wj, yj, cols):
        """Group j's sums += the rows ``Wj`` (N, len(cols) or p), ``yj`` (N,) over its
        columns ``cols`` (None: all p)."""
        if cols is None:
            self.G[j] += Wj.T @ Wj
            self.b[j] += Wj.T @ yj
        else:
            self.G[j][self._square_index(j, cols)] += Wj.T @ Wj
            self.b[j][cols] += Wj.T @ yj
        self.c[j] += yj @ yj

    def _checked(self, W, y):
        """``W``, ``y`` as float arrays of :meth:`add`'s shapes, else DataError."""
        W = np.asarray(W, dtype=float)
        y = np.asarray(y, dtype=float)
        if W.ndim != 3 or W.shape[1:] != (self.groups, self.p) or y.shape != W.shape[:2]:
            raise DataError(f"block shapes W {W.shape}, y {y.shape} do not match "
                            f"(N, {self.groups}, {self.p}) / (N, {self.groups})")
        return W, y

    def groups_of(self, W, y, mask=None, weights=None):
        """:meth:`add`'s per-group products of a block where the group columns are known
        (``structure``): list of (W_j (N, k_j) its columns' rows, scaled by the mask and the
        square root of the weights (a copy), y_j (N,) scaled alike (a view of ``y`` without
        either)), for :meth:`add_groups` on all rows or on row slices: a block split into
        several sums (time blocks, :class:`~robot_identification.identification.
        RecordingEquations`) gathers and scales each group once instead of once per slice,
        the same numbers (issue #29). The counts are not added."""
        mask = None if mask is None else np.asarray(mask, dtype=float)
        r = None if weights is None else np.sqrt(np.asarray(weights, dtype=float))
        out = []
        index, bounds = self._flat_columns()
        # every group's columns in one gather by flat index (np.take along the rows of W
        # as (N, groups * p)), transposed into one copy (sum k_j, N): each group's W_j is
        # the transpose of its rows, the same (N, k_j) column-major copy that W[:, j, cols]
        # gives, so the products are the same to the bit, at ~60 % of the cost (issue #29:
        # 1.0 against 1.8 ms for the 12 groups of a 2048-sample elastic PUMA block)
        rows = np.take(W.reshape(W.shape[0], -1), index, axis=1).T.copy()
        for j, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            Wj, yj = rows[a:b].T, y[:, j]
            f = None if mask is None else mask[:, j]
            if r is not None:
                f = r[:, j] if f is None else f * r[:, j]
            if f is not None:
                Wj *= f[:, None]
                yj = yj * f
            out.append((Wj, yj))
        return out

    def _flat_columns(self):
        """The groups' columns as indices into a block's ``W.reshape(N, groups * p)``, group
        after group, and each group's bounds in them (groups + 1,); built once while
        :attr:`group_columns` stays the same list."""
        got = self._flat
        if got is None or got[0] is not self.group_columns:
            cols = self.group_columns
            got = self._flat = (cols, np.concatenate(
                [j * self.p + np.asarray(c, dtype=np.intp) for j, c in enumerate(cols)]),
                np.concatenate([[0], np.cumsum([len(c) for c in cols])]).astype(int))
        return got[1:]

    def add_groups(self, groups, rows=slice(None)):
        """Add the ``rows`` (a slice) of :meth:`groups_of`'s products to the sums (not the
        counts)."""
        with one_blas_thread():
            for j, ((Wj, yj), cols) in enumerate(zip(groups, self.group_columns)):
                Wj, yj = Wj[rows], yj[rows]
                self.G[j][self._square_index(j, cols)] += Wj.T @ Wj
                self.b[j][cols] += Wj.T @ yj
                self.c[j] += yj @ yj

    def _square_index(self, j, cols):
        """``np.ix_(cols, cols)`` for group j's columns, built once while they stay the
        same array (the structure's; issue #29: a block of 64 samples is added at a
        fifth of its cost more otherwise)."""
        got = self._square.get(j)
        if got is None or got[0] is not cols:
            got = self._square[j] = (cols, np.ix_(cols, cols))
        return got[1]

    def _group_block(self, W, j):
        """Group j's rows of W (N, p') and the columns they hold (None: all p): columns
        that are zero in this group's rows add nothing (a motor row of the elastic model
        has ~5 non-zero base columns of 60, a distal joint's row few)."""
        if self.group_columns is not None:
            cols = self.group_columns[j]
            return W[:, j, cols], cols                       # one gather (a copy)
        Wj = np.ascontiguousarray(W[:, j, :])
        cols = np.flatnonzero(np.any(Wj, axis=0))
        if len(cols) < 0.75 * self.p:
            return Wj[:, cols], cols
        return Wj, None

    def __iadd__(self, other):
        self.G += other.G
        self.b += other.b
        self.c += other.c
        self.count += other.count
        self.scale_sums += other.scale_sums
        return self

    @property
    def gram(self):
        """W^T W over all groups, shape (p, p)."""
        return self.G.sum(axis=0)

    def residual_sums(self, x):
        """Sum of squared residuals per group, shape (n_groups,)."""
        r = self.c - 2 * self.b @ x + np.einsum("i,jik,k->j", x, self.G, x)
        return np.maximum(r, 0.0)


class FixedDesign:
    """One observation matrix W with many left-hand sides: the normal equations of
    ``NormalEquations.add(W, y)`` for each y, W's part computed once.

    G_j = W_j^T W_j depends on W alone; per y only b_j = W_j^T y_j, c_j = y_j^T y_j are
    computed, from the same per-group blocks of W and by the same products as
    :meth:`NormalEquations.add` (no mask, no weights), so :meth:`equations` gives the same
    sums bit for bit at the cost of p x N instead of p^2 x N multiply-adds per group (a
    Monte-Carlo run on a fixed regressor, issue #29).

    Parameters
    ----------
    W : ndarray, shape (N, n_groups, p)
    structure : as :class:`NormalEquations`

    Raises
    ------
    DataError
        W is not three-dimensional.
    """

    def __init__(self, W, structure=None):
        W = np.asarray(W, dtype=float)
        if W.ndim != 3:
            raise DataError(f"observation matrix of shape {W.shape}: expected (N, n_groups, p)")
        self.shape = W.shape
        self._gram = NormalEquations(W.shape[2], W.shape[1], structure)
        with one_blas_thread():
            self._blocks = [self._gram._group_block(W, j) for j in range(W.shape[1])]
            for j, (Wj, cols) in enumerate(self._blocks):
                if cols is None:
                    self._gram.G[j] += Wj.T @ Wj
                else:
                    self._gram.G[j][np.ix_(cols, cols)] += Wj.T @ Wj
        self._gram.count += W.shape[0]

    def equations(self, y):
        """:class:`NormalEquations` of (W, ``y`` (N, n_groups)), as ``add(W, y)`` on empty
        equations gives them.

        Raises
        ------
        DataError
            ``y`` of another shape than W's first two axes.
        """
        y = np.asarray(y, dtype=float)
        if y.shape != self.shape[:2]:
            raise DataError(f"left-hand side of shape {y.shape} does not match the "
                            f"observation matrix {self.shape}")
        g = self._gram
        neq = NormalEquations(g.p, g.groups)
        neq.group_columns = g.group_columns
        neq.G = g.G.copy()
        neq.count = g.count.copy()
        with one_blas_thread():
            for j, (Wj, cols) in enumerate(self._blocks):
                yj = y[:, j]
                if cols is None:
                    neq.b[j] += Wj.T @ yj
                else:
                    neq.b[j][cols] += Wj.T @ yj
                neq.c[j] += yj @ yj
        return neq


@dataclass
class Estimate:
    """Result of a least-squares estimate.

    Attributes
    ----------
    values : ndarray (p,)
    covariance : ndarray (p, p)
    std : ndarray (p,)
        Standard deviations sqrt(diag(covariance)).
    relative_std : ndarray (p,)
        100 * std / |value| [%] (inf where the value is 0).
    residual_rms : ndarray (n_groups,)
        RMS of the residual per row group (same unit as the left-hand side).
    sigma2 : ndarray (n_groups,)
        Noise variance estimate per group used for the covariance.
    condition_number : float
        2-norm condition number of the observation matrix (from its Gram matrix).
    method : str
    n_rows : int
    weights : ndarray (n_groups,)
    details : dict
        Estimator-specific outcome (MRLS flags, active bounds, IRLS iterations, the
        physically consistent standard parameters, ...), plain Python values.
    """

    values: np.ndarray
    covariance: np.ndarray
    std: np.ndarray
    relative_std: np.ndarray
    residual_rms: np.ndarray
    sigma2: np.ndarray
    condition_number: float
    method: str
    n_rows: int
    weights: np.ndarray = field(default=None)
    details: dict = field(default_factory=dict)


def condition_number(gram):
    """2-norm condition number of W from G = W^T W (sqrt of the eigenvalue ratio)."""
    ev = np.linalg.eigvalsh(gram)
    if ev[0] <= 0:
        return float("inf")
    return float(np.sqrt(ev[-1] / ev[0]))


def _solve(G, b):
    d = np.sqrt(np.diag(G))
    if np.any(d == 0):
        raise DataError("observation matrix has a zero column: a parameter is not excited")
    D = 1.0 / d
    Gs = G * D[:, None] * D[None, :]
    try:
        cf = scipy.linalg.cho_factor(Gs)
        xs = scipy.linalg.cho_solve(cf, b * D)
        inv = scipy.linalg.cho_solve(cf, np.eye(len(b)))
    except np.linalg.LinAlgError:
        xs = np.linalg.lstsq(Gs, b * D, rcond=None)[0]
        inv = np.linalg.pinv(Gs)
    return xs * D, inv * D[:, None] * D[None, :]


def solve_gram(G, b):
    """Solution x (p,) of G x = b and G^-1 (p, p) for a symmetric positive (semi)definite
    Gram matrix, with column scaling (unit diagonal) and a Cholesky factorisation
    (least squares / pseudo-inverse when G is singular).

    Raises
    ------
    DataError
        A zero column (a parameter not excited).
    """
    return _solve(np.asarray(G, dtype=float), np.asarray(b, dtype=float))


def _finish(neq, x, inv, sigma2, method, weights, gram):
    n_rows = int(neq.count.sum())
    cov = inv if method != "ols" else inv * sigma2.mean()
    std = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * std / np.abs(x)
    rms = np.sqrt(neq.residual_sums(x) / np.maximum(neq.count, 1))
    return Estimate(values=x, covariance=cov, std=std, relative_std=rel, residual_rms=rms,
                    sigma2=sigma2, condition_number=condition_number(gram), method=method,
                    n_rows=n_rows, weights=weights)


def ols(neq: NormalEquations) -> Estimate:
    """Ordinary least squares beta = (W^T W)^-1 W^T y.

    Covariance sigma^2 (W^T W)^-1 with sigma^2 = |r|^2 / (M - p) (De Luca slides 10-13;
    Zollo et al. 2014, eq. 38, 42; Szabó & Gincsainé 2021, eq. 17-18).

    Raises
    ------
    DataError
        Fewer rows than parameters, or a zero column.
    """
    M = int(neq.count.sum())
    if M <= neq.p:
        raise DataError(f"{M} equations for {neq.p} base parameters: too few samples")
    G = neq.gram
    x, inv = _solve(G, neq.b.sum(axis=0))
    s2 = neq.residual_sums(x).sum() / (M - neq.p)
    return _finish(neq, x, inv, np.full(neq.groups, s2), "ols", np.ones(neq.groups), G)


#: Iterations of :func:`wls` with estimated variances: at most this many re-weightings,
#: stopping when no group's variance changes by more than WLS_TOLERANCE (relative).
WLS_ITERATIONS, WLS_TOLERANCE = 50, 1e-6


def wls(neq: NormalEquations, sigma=None, floor=1e-12, iterations=WLS_ITERATIONS,
        tol=WLS_TOLERANCE) -> Estimate:
    """Weighted least squares with one noise variance per row group.

    beta = (W^T S^-1 W)^-1 W^T S^-1 y with S = diag(sigma_j^2) per group (Szabó &
    Gincsainé 2021, eq. 19; Gautier's per-joint weighting). When ``sigma`` is not
    given, sigma_j^2 is estimated from the residuals of group j, |r_j|^2 / (M_j - p /
    n_groups): first those of OLS (Gautier's one-step WLS, ``iterations=1``), then those of
    the previous WLS fit until no variance changes by more than ``tol`` (iterated feasible
    GLS: its fixed point minimises sum_j (M_j - p / n_groups) log |r_j|^2, the Gaussian
    likelihood with one unknown variance per group profiled out, with the groups' degrees
    of freedom in place of their row counts M_j). The iteration matters
    where the joints' torques differ by orders of magnitude: OLS residuals of a joint with
    little torque (a wrist: 3e-4 N*m on a simulated UR10e, against model errors of 0.04
    N*m on the shoulder) hold mostly the parameters it shares with the large joints, and
    the one-step weights left its own rows outweighed (held-out wrist_3 torque NRMSE 9.9
    one-step, 0.025 iterated; docs/estimators.md). The covariance is (W^T S^-1 W)^-1, the
    Cramér-Rao bound for Gaussian noise of those variances.

    Parameters
    ----------
    neq : NormalEquations
    sigma : array_like (n_groups,), optional
        Known noise standard deviation per group (same unit as y): no iteration.
    floor : float
        Lower bound on sigma_j^2 relative to the largest, for groups fitted exactly. When
        every group is fitted exactly (all residuals 0), the estimate is the OLS one with
        zero covariance.
    iterations : int
        Most re-weightings with estimated variances (>= 1); ``details`` of the result
        give ``wls_iterations`` done and ``wls_converged``.
    tol : float
        Largest relative change of a group variance that counts as converged.

    Raises
    ------
    DataError
        Fewer rows than parameters; ``sigma`` not positive or of the wrong length.
    """
    M = int(neq.count.sum())
    if M <= neq.p:
        raise DataError(f"{M} equations for {neq.p} base parameters: too few samples")
    dof = np.maximum(neq.count - neq.p / neq.groups, 1.0)
    if sigma is None:
        x0, _ = _solve(neq.gram, neq.b.sum(axis=0))
        s2 = neq.residual_sums(x0) / dof
    else:
        s2 = np.asarray(sigma, dtype=float) ** 2
        if s2.shape != (neq.groups,) or np.any(s2 <= 0):
            raise DataError(f"sigma must hold {neq.groups} positive values, got {sigma!r}")
    if not s2.max() > 0:          # every group fitted exactly (noise-free data): WLS = OLS
        x, inv = _solve(neq.gram, neq.b.sum(axis=0))
        return _finish(neq, x, inv * 0.0, s2, "wls", np.ones(neq.groups), neq.gram)
    done, converged = 0, sigma is not None
    while True:
        s2 = np.maximum(s2, floor * s2.max())
        w = 1.0 / s2
        x, inv = _solve(np.einsum("j,jik->ik", w, neq.G), w @ neq.b)
        done += 1
        if converged or done >= max(int(iterations), 1):
            break
        new = neq.residual_sums(x) / dof
        if not new.max() > 0:     # fitted exactly: keep these weights
            converged = True
            break
        new = np.maximum(new, floor * new.max())
        converged = bool(np.all(np.abs(new - s2) <= tol * s2))
        s2 = new
    est = _finish(neq, x, inv, s2, "wls", w, neq.gram)
    if sigma is None:
        est.details.update(wls_iterations=done, wls_converged=converged)
    return est


#: Stretches of :func:`leave_block_out`: consecutive time blocks are merged into this many
#: groups of about equal row counts ...
LEAVE_OUT_GROUPS = 10
#: ... and with fewer groups than this there is no refit (None).
LEAVE_OUT_MIN_GROUPS = 5


def leave_block_out(blocks, weights=None, groups=LEAVE_OUT_GROUPS,
                    min_groups=LEAVE_OUT_MIN_GROUPS):
    """The (weighted) least-squares estimate refitted without each of K consecutive
    stretches of the data (delete-a-block refits), and each refit's standard deviation
    relative to the full fit's.

    With the K stretches' sums A_k, r_k and the estimate's row-group weights w_j fixed::

        beta_(k) = (A - A_k)^-1 (r - r_k),  A = sum_j w_j G_j,  r = sum_j w_j b_j
        ratio_(k) = sqrt(diag((A - A_k)^-1) / diag(A^-1))

    (the refit's std is the full fit's std x ratio: the same noise, fewer rows). These are
    the non-overlapping block deletions of Künsch's (1989) block jackknife ("The jackknife
    and the bootstrap for general stationary observations", Ann. Statist. 17(3),
    1217-1241) and the group-deletion diagnostics of Belsley, Kuh & Welsch (1980,
    "Regression Diagnostics", ch. 2): an estimate whose value rests on one stretch of the
    run (model error there) changes when that stretch is left out, while the
    least-squares std, which assumes white residuals, does not show it.

    Parameters
    ----------
    blocks : list of (G, b, c, count)
        Consecutive time blocks' sums, shapes (n_groups, p, p), (n_groups, p),
        (n_groups,), (n_groups,) (:meth:`RecordingEquations.time_blocks
        <robot_identification.identification.RecordingEquations.time_blocks>`).
    weights : array_like (n_groups,), optional
        Row-group weights of the estimate (``Estimate.weights``); default 1.
    groups : int
        Consecutive blocks are merged into about this many stretches of equal row counts.
    min_groups : int
        Fewer stretches (too few blocks), or a column zero in all of them: None.

    Returns
    -------
    (refits, ratio) : ndarray (K, p) each, or None
        Refitted values [units of each parameter] and std ratios (inf where leaving the
        stretch out leaves a parameter undetermined).
    """
    blocks = [bl for bl in (blocks or []) if np.sum(bl[3]) > 0]
    if not blocks:
        return None
    ng = blocks[0][1].shape[0]
    w = np.ones(ng) if weights is None else np.asarray(weights, dtype=float)
    rows = np.cumsum([float(np.sum(bl[3])) for bl in blocks])
    # stretch k: the blocks whose cumulative row count ends in the k-th equal share
    label = np.minimum((groups * (rows - 0.5) / rows[-1]).astype(int), groups - 1)
    A_k, r_k = [], []
    for k in np.unique(label):
        members = [bl for bl, lab in zip(blocks, label) if lab == k]
        A_k.append(sum(np.einsum("j,jik->ik", w, bl[0]) for bl in members))
        r_k.append(sum(w @ bl[1] for bl in members))
    K = len(A_k)
    if K < max(int(min_groups), 2):
        return None
    A, r = sum(A_k), sum(r_k)
    try:
        d0 = np.diag(_solve(A, r)[1])
    except DataError:             # a parameter not excited at all (e.g. mrls): no refits
        return None
    refits, ratio = np.empty((K, len(r))), np.empty((K, len(r)))
    for k in range(K):
        try:
            refits[k], inv = _solve(A - A_k[k], r - r_k[k])
        except DataError:         # a column zero without this stretch: undetermined
            refits[k], ratio[k] = np.nan, np.inf
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio[k] = np.sqrt(np.clip(np.diag(inv), 0, None) / d0)
    return refits, np.where(np.isfinite(ratio), ratio, np.inf)
