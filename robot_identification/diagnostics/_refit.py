"""Readings of one recording decided by refitting every parameter (issue #27): a joint's
direction reversed, its torque's sign, two joints' columns swapped, refitted both ways and
compared on held-out data, independent of the URDF's inertial parameters.

For the data as recorded and for each reading (one joint's q, dq, ddq and torque negated; one
joint's torque negated alone; two joints' q, dq, ddq and torque columns exchanged; two joints'
torque columns exchanged), the rigid-body model with every standard parameter free (inertial
parameters, rotor inertia and the config's friction columns; :func:`rigid_regressor`) is fitted
by least squares on alternating blocks of the recording (an evenly spaced subsample of at
least :data:`FREE_SAMPLES` of its filtered samples) and scored on the others (both ways),
each joint's rows weighted by 1 / its torque's std. Rows within the low-pass filter's settling
time (0.6 / f_c) of a velocity reversal of that joint are left out: the zero-phase filter spreads
the Coulomb step there and no parameter set fits it. The score is sum_k e_k^2 of the held-out
normalised residuals.

A free fit is a relaxation of the physically consistent one (its residual is never above the
constrained fit's on the fitted half): a reading that the free fit explains clearly worse than
another cannot be rescued by constraints, and a reading the data can only tell apart through
the URDF's inertial values (a symmetry: the reversed arm is a mirrored arm with other inertial
parameters) ties here. Such a tie is said (``direction_undetermined``) instead of guessed.

The scores are those of one ``np.linalg.lstsq(A, b, rcond=1e-10)`` per reading and half (A the
weighted regressor of every standard parameter on the fitted rows), computed with shared
factorisations (issue #29; test/test_refit_fast.py holds that reference): the fits run in an
orthonormal basis of the directions the regressor reaches (:func:`_basis`: the structural
zeros left out, the same singular values), or where clearly well conditioned on the columns
of a subset that spans it (:func:`_columns`: computed alone, no projection), by the
Jacobi-scaled normal equations with one refinement step (:func:`_gram_factor`; the real UR10e
runs: scaled condition number ~500, scores within 2e-14 relative of the QR solve), else
through the triangular factor of [A | b]; the readings of the recorded regressor (torque
signs, torque columns swapped) share each joint's Gram matrix (or triangular factor) and
differ only in the joints' weights and right-hand sides, those with the same weights (the
recorded data and the torque signs) one solve.
"""
from __future__ import annotations

import weakref

import numpy as np
from scipy.linalg import cho_solve, cholesky, qr, solve_triangular
from scipy.linalg.lapack import dgeqrf, dtrtri

from robot_identification.identifiability import random_states
from robot_identification.regressor import rigid_regressor

#: A reading is an error-severity finding where its held-out score is at most this fraction of
#: the recorded one (noise-free CAD-error draws: a true reading scores 1e-4..1e-2 x the
#: recorded one, benchmarks/cad_error_reversals.py).
FREE_RATIO = 0.25
#: A joint's direction is undetermined where reversing it changes the held-out score by less
#: than this factor either way.
FREE_SEPARATION = 4.0
#: Readings within this factor of the best one explain the data equally well.
FREE_TIE = 2.0
#: The free refit judges a recording only where its best reading explains the held-out half:
#: mean over the joints of e_k^2 at most this (a motion that does not excite every parameter,
#: e.g. a point-to-point run, extrapolates to the other half by orders of magnitude).
FREE_EXPLAINED = 0.1
#: The free refit's states are low-pass filtered at this multiple of the URDF-based check's
#: cut-off (5 x the excitation band, at most 0.1 x the sampling rate): its misfit floor on
#: noise-free CAD-error simulations falls from 1.8e-3 to 7.9e-5 (puma560) and 1.0e-2 to
#: 3.5e-5 (test/arm7) from x1 to x4; on the real UR10e runs the scores barely move.
FREE_BAND = 4.0
#: The free refit's evenly spaced subsample of a recording: at least this many samples of
#: its filtered grid (fewer than twice as many; :func:`robot_identification.diagnostics.
#: _nominal._states`), against 600 for the URDF-based check: its cost is proportional to the
#: rows (a regressor and two Gram matrices per reading), and 400 samples still give each
#: half's fit ~14 rows per free parameter (UR10e: 64 parameters, 908-950 rows per half).
#: From 654 to 403 samples on the two real UR10e runs (issue #29): the recorded held-out
#: scores 0.0103 -> 0.0108 and 0.00712 -> 0.00775, each reading's ratio to the recorded
#: score within 9 % of before (shoulder_lift, elbow, wrist_1 reversed 39-330 x; shoulder_pan,
#: wrist_2, wrist_3 reversed 0.94-1.11 x: undetermined either way).
FREE_SAMPLES = 400
#: Held-out blocks (alternating halves), as :data:`robot_identification.diagnostics._nominal
#: .HELDOUT_BLOCKS`.
BLOCKS = 6


#: Rows of a joint slower than this fraction of its velocity RMS are left out (a joint near
#: rest chatters across zero velocity: its Coulomb torque flips faster than the filter).
SLOW = 0.1


def _kept_rows(dq, dt, fc):
    """(N, n) bool: rows outside 0.6 / fc [s] of a velocity sign change of that joint and
    faster than :data:`SLOW` x its velocity RMS."""
    win = int(np.ceil(0.6 / (fc * dt)))
    keep = np.abs(dq) >= SLOW * np.sqrt(np.mean(dq ** 2, axis=0))
    # rows i - win .. i + win + 1 of each sign change between rows i and i + 1 left out: a
    # row is within reach of a change where the changes counted up to its row + win differ
    # from those up to its row - win - 2 (one cumulative sum per joint instead of a slice
    # per change, issue #29)
    N = dq.shape[0]
    change = np.diff(np.sign(dq), axis=0) != 0                            # (N - 1, n)
    count = np.concatenate([np.zeros((1, dq.shape[1]), dtype=np.intp),
                            np.cumsum(change, axis=0)])                    # changes before i
    rows = np.arange(N)
    hi = count[np.minimum(rows + win + 1, N - 1)]     # changes at indices <= row + win
    lo = count[np.clip(rows - win - 1, 0, N - 1)]     # changes at indices < row - win - 1
    keep &= hi == lo
    return keep


#: Singular values of a free fit below this fraction of its largest are left out (the
#: minimum-norm least-squares solution of ``np.linalg.lstsq(..., rcond=RCOND)``).
RCOND = 1e-10
#: Directions of the standard parameters whose singular value on random states is below this
#: fraction of the largest are structural: no state reaches them (a zero column, a
#: regrouped parameter), left out of every fit (:func:`_basis`).
STRUCTURAL = 1e-13

_BASES = weakref.WeakKeyDictionary()


def _basis(model):
    """(P, r) orthonormal basis V of the directions of the standard parameters that the rigid
    regressor reaches (its row space), or None: Y = (Y V) V^T for every state, so a fit of
    Y V has the singular values of Y's (and the structural zeros of Y, which ``RCOND`` cuts,
    none) and the same minimum-norm prediction Y pi at a quarter to a half of the cost
    (ur10e: 64 of 90 columns). Found on random states by SVD (:data:`STRUCTURAL`) and checked
    on other random states with 10 x the velocities and accelerations; None where the check
    fails (every column kept)."""
    if model in _BASES:
        return _BASES[model]
    P = model.n_parameters
    rng = np.random.default_rng(0)
    samples = max(200, 4 * P // model.n)
    W = rigid_regressor(model, **random_states(model, samples, rng)).reshape(-1, P)
    _, s, vt = np.linalg.svd(W, full_matrices=False)
    V = vt[: int(np.sum(s > STRUCTURAL * s[0]))].T.copy()
    other = random_states(model, samples, rng)
    W = rigid_regressor(model, other["q"], 10 * other["dq"], 10 * other["ddq"]).reshape(-1, P)
    if not np.linalg.norm(W - (W @ V) @ V.T) <= 1e-11 * np.linalg.norm(W):
        V = None
    _BASES[model] = V
    return V


#: Largest condition number of the map M between the column subset of :func:`_columns` and
#: the orthonormal basis of :func:`_basis` (Y V = Y_S M).
SUBSET_COND = 10.0

_COLUMNS = weakref.WeakKeyDictionary()


def _columns(model):
    """(S, M): r columns S (int array) of the standard parameters whose regressor columns
    span those of the whole regressor (pivoted QR on random states), and the (r, r) map M
    with Y V = Y[..., S] M (:func:`_basis`'s V; M = T V with Y = Y_S T by least squares),
    or None. Checked like :func:`_basis` (Y = Y_S T within 1e-11 relative on other random
    states with 10 x the velocities and accelerations) and cond(M) <= :data:`SUBSET_COND`.

    The fits then run on Y_S: the same column space as Y V, so where a fit is clearly well
    conditioned (:func:`_gram_factor`, which bounds cond(Y_S M) by cond(Y_S) cond(M)) the
    same fitted and held-out values up to rounding, with the regressor's S columns computed
    alone (no projection: ur10e 64 of 90 columns; issue #29). Elsewhere the fit is made on
    Y_S M, the coordinates of :func:`_basis`."""
    if model in _COLUMNS:
        return _COLUMNS[model]
    V, got = _basis(model), None
    if V is not None:
        P, r = model.n_parameters, V.shape[1]
        rng = np.random.default_rng(1)
        samples = max(200, 4 * P // model.n)
        W = rigid_regressor(model, **random_states(model, samples, rng)).reshape(-1, P)
        S = np.sort(qr(W, mode="r", pivoting=True)[1][:r])
        T = np.linalg.lstsq(W[:, S], W, rcond=None)[0]
        other = random_states(model, samples, rng)
        W = rigid_regressor(model, other["q"], 10 * other["dq"], 10 * other["ddq"])
        W = W.reshape(-1, P)
        M = T @ V
        if (np.linalg.norm(W - W[:, S] @ T) <= 1e-11 * np.linalg.norm(W)
                and np.linalg.cond(M) <= SUBSET_COND):
            got = (S, M)
    _COLUMNS[model] = got
    return got


def _reduced(model, q, dq, ddq):
    """The rigid regressor (N, n, r) in the coordinates of the fits: the columns S of
    :func:`_columns`, else projected on :func:`_basis`, else whole."""
    cols = _columns(model)
    if cols is not None:       # the load-dependent Coulomb factor by Newton-Euler (issue #29)
        return rigid_regressor(model, q, dq, ddq, columns=cols[0], fast_load=True)
    Y = rigid_regressor(model, q, dq, ddq)
    V = _basis(model)
    return Y if V is None else (Y.reshape(-1, Y.shape[2]) @ V).reshape(*Y.shape[:2], -1)


def _to_basis(model):
    """M of :func:`_columns` (the fits' coordinates -> :func:`_basis`'s), or None."""
    cols = _columns(model)
    return None if cols is None else cols[1]


def _triangle(X, r):
    """Rows of the triangular factor R of X = Q R (Householder QR) that hold its first r
    columns: min(m, r) rows; ||X[:, :r] c - X[:, r:]||^2 = ||R[:, :r] c - R[:, r:]||^2 + a
    constant, and R[:, :r] has X[:, :r]'s singular values and right singular vectors (Q has
    orthonormal columns): the same minimum-norm least-squares solution.

    LAPACK's ``dgeqrf`` called directly: ``np.linalg.qr(X, mode="r")`` gives the same R (to
    the bit on this machine) at twice the CPU on the tall matrices here, ~1600 x 65 (issue
    #29; test/test_refit_fast.py compares the scores with the plain ``lstsq`` reference)."""
    X = np.asarray(X, dtype=float)
    if X.shape[0] == 0:
        return np.zeros((0, X.shape[1]))
    a, _, _, info = dgeqrf(X)
    if info != 0:
        raise np.linalg.LinAlgError(f"QR factorisation failed (dgeqrf info {info})")
    return np.triu(a[: min(X.shape[0], r)])


def _least_squares(X, r):
    """``np.linalg.lstsq(X[:, :r], X[:, r:], rcond=RCOND)[0]`` (r, k) through the triangular
    factor of X (:func:`_triangle`): where its singular values are all above twice the
    cut-off (none left out), the solution is unique and a triangular solve gives it;
    otherwise the SVD solve with the cut-off. The singular values are computed only where
    the cheap bound s_max / s_min <= ||A||_F ||A^-1||_F (A triangular: its inverse by
    ``dtrtri``) does not already show them above half that ratio (:func:`_well_conditioned`;
    the same decision, issue #29)."""
    R = _triangle(X, r)
    A, B = R[:, :r], R[:, r:]
    if A.shape[0] == r:
        if _well_conditioned(A):
            return solve_triangular(A, B, check_finite=False)
        s = np.linalg.svd(A, compute_uv=False)
        if s[-1] > 2 * RCOND * s[0]:
            return solve_triangular(A, B, check_finite=False)
    return np.linalg.lstsq(A, B, rcond=RCOND)[0]


def _well_conditioned(A):
    """True where the upper triangular A (r, r) has s_max / s_min below 1 / (4 RCOND), half
    the ratio :func:`_least_squares` allows, by the bound ||A||_F ||A^-1||_F (>= s_max /
    s_min); False where that bound is larger or A is singular (then the SVD decides)."""
    inv, info = dtrtri(A, lower=0)
    if info != 0:
        return False
    return bool(np.linalg.norm(A) * np.linalg.norm(inv) < 0.25 / RCOND)


#: The normal equations of a free fit are solved where the Jacobi-scaled fitted matrix A D
#: (columns scaled to unit norm) has condition number at most this (bound
#: ||R||_F ||R^-1||_F of its Cholesky factor): with one refinement step (corrected
#: semi-normal equations) the solution is that of the QR solve up to rounding (UR10e runs:
#: scaled bound ~500, coefficients within 1e-13 relative of :func:`_least_squares`).
GRAM_COND = 1e4


def _gram_factor(G, extra=1.0):
    """Jacobi-scaled Cholesky factor (R, d) of the Gram matrix G = A^T A (r, r) of a fit:
    D G D = R^T R with D = diag(d) = diag(G)^-1/2, or None where A is not clearly well
    conditioned. None where the bound of the scaled condition number exceeds
    :data:`GRAM_COND` or, unscaled (times max d / min d), half the ratio
    :func:`_least_squares` allows (then every singular value is above its cut-off and it
    solves by the triangular factor: the same unique solution; ``extra``: a factor on that
    bound, cond(M) of :func:`_columns`), or where G is not positive definite in floating
    point (issue #29)."""
    diag = np.diag(G)
    if not np.all(diag > 0):
        return None
    d = 1.0 / np.sqrt(diag)
    try:
        R = cholesky(G * d[:, None] * d[None, :], lower=False, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    inv, info = dtrtri(R, lower=0)
    if info != 0:
        return None
    bound = np.linalg.norm(R) * np.linalg.norm(inv)
    if not (bound <= GRAM_COND and bound * (d.max() / d.min()) * extra < 0.25 / RCOND):
        return None
    return R, d


def _gram_solve(factor, rhs):
    """G^-1 rhs through :func:`_gram_factor`'s (R, d)."""
    R, d = factor
    return d[:, None] * cho_solve((R, False), d[:, None] * rhs, check_finite=False)


def _fit_solve(X, r, M=None):
    """``_least_squares(X, r)`` (r, k): least squares of X[:, :r] c = X[:, r:]; by the
    normal equations X[:, :r]^T X[:, :r] (one product instead of a QR factorisation: a third
    of the CPU on the ~1500 x 65 fits here) with one refinement step on the residual where
    :func:`_gram_factor` finds them well conditioned, else :func:`_least_squares`. ``M``
    (r, r): X[:, :r] M are the coordinates of :func:`_basis` (:func:`_columns`): the bound
    includes cond(M), and :func:`_least_squares` fits in those coordinates (the solution
    mapped back by M)."""
    G = X.T @ X
    factor = _gram_factor(G[:r, :r], 1.0 if M is None else _cond(M))
    if factor is None:
        if M is None:
            return _least_squares(X, r)
        return M @ _least_squares(np.concatenate([X[:, :r] @ M, X[:, r:]], axis=1), r)
    A = X[:, :r]
    coef = _gram_solve(factor, G[:r, r:])
    return coef + _gram_solve(factor, A.T @ (X[:, r:] - A @ coef))


def _cond(M):
    """Condition number of M (cached on the array's identity for the model's M)."""
    key = id(M)
    if key not in _CONDS or _CONDS[key][0] is not M:
        _CONDS[key] = (M, float(np.linalg.cond(M)))
    return _CONDS[key][1]


_CONDS = {}


def _weights(tau):
    return 1.0 / np.maximum(np.std(tau, axis=0), 1e-12)


def _score(Yr, tau, keep, P, half, M=None, fitted=False):
    """Held-out score sum_k e_k^2 of the free least-squares fit tau ~ Y pi (``Yr`` (N, n, r):
    the regressor in the coordinates of :func:`_basis`, P the number of standard
    parameters); per half: the triangular factor of the fitted rows [Y w | tau w] and a
    least-squares solve on it (:func:`_triangle`). ``fitted``: the same sum over each fit's
    own (fitted) rows instead, the in-sample score (:func:`fitted_scores`)."""
    N, n, r = Yr.shape
    w = _weights(tau)
    res, cnt = np.zeros(n), np.zeros(n)
    Xw = np.empty((N, n, r + 1))       # [Y w | tau w] of every row, gathered per half
    np.multiply(Yr, w[:, None], out=Xw[..., :r])
    np.multiply(tau, w, out=Xw[..., r])
    for test in (half, ~half):
        fit = keep & ~test[:, None]
        if fit.sum() < P:
            return np.nan
        coef = _fit_solve(Xw[fit], r, M)[:, 0]
        e = (tau - (Yr.reshape(N * n, r) @ coef).reshape(N, n)) * w
        m = fit if fitted else keep & test[:, None]
        res += np.sum(np.where(m, e, 0.0) ** 2, axis=0)
        cnt += m.sum(axis=0)
    return float(np.sum(res / np.maximum(cnt, 1)))


def _scores_shared(Yr, tau, keep, P, half, readings, M=None):
    """Held-out scores of readings of the recorded regressor: ``readings`` a list of (p, s),
    the reading's torque tau[:, p] * s (p a permutation of the joints, s (n,) of +-1; the
    fitted and held-out rows ``keep`` those of the recording). Per half and joint j the Gram
    matrix G_j of that joint's fitted rows [Y_j | tau] (every torque column) is computed
    once: a reading's normal equations are sum_j w_j^2 G_j's block of Y_j and, on the
    right, its torques' columns of G_j times their signs (a torque negated only negates
    Y_j^T tau_j); solved as in :func:`_fit_solve` (one refinement step on the fitted rows).
    Where :func:`_gram_factor` finds them not clearly well conditioned: the triangular
    factor of each joint's rows (:func:`_triangle`) and the least-squares solve on the
    stacked factors scaled by the reading's weights, with the factor's columns of its
    torques (sum_j w_j^2 ||Y_j pi - tau'_j||^2 is that problem plus a constant, with the
    same singular values and minimum-norm solution). Readings with the same weights share
    one solve (several right-hand sides)."""
    N, n, r = Yr.shape
    taus = [tau[:, p] * s for p, s in readings]
    ws = [_weights(t) for t in taus]
    res, cnt = np.zeros((len(readings), n)), np.zeros(n)
    for test in (half, ~half):
        fit = keep & ~test[:, None]
        if fit.sum() < P:
            return [np.nan] * len(readings)
        rows = [np.concatenate([Yr[fit[:, j], j], tau[fit[:, j]]], axis=1) for j in range(n)]
        grams = [Z.T @ Z for Z in rows]
        blocks = None
        groups = {}
        for i, w in enumerate(ws):
            groups.setdefault(w.tobytes(), []).append(i)
        coef = np.empty((r, len(readings)))
        for idx in groups.values():
            w2 = ws[idx[0]] ** 2
            factor = _gram_factor(sum(w2[j] * G[:r, :r] for j, G in enumerate(grams)),
                                  1.0 if M is None else _cond(M))
            if factor is not None:      # the normal equations, one refinement step
                cols = [[r + readings[i][0][j] for i in idx] for j in range(n)]
                sgn = [np.array([readings[i][1][j] for i in idx]) for j in range(n)]
                c = _gram_solve(factor, sum(w2[j] * G[:r, cols[j]] * sgn[j]
                                            for j, G in enumerate(grams)))
                c += _gram_solve(factor, sum(
                    w2[j] * (Z[:, :r].T @ (Z[:, cols[j]] * sgn[j] - Z[:, :r] @ c))
                    for j, Z in enumerate(rows)))
                coef[:, idx] = c
                continue
            if blocks is None:        # in the coordinates of _basis (M of _columns)
                blocks = [_triangle(Z if M is None else np.concatenate(
                    [Z[:, :r] @ M, Z[:, r:]], axis=1), r) for Z in rows]
            w = ws[idx[0]]
            A = np.concatenate([w[j] * B[:, :r] for j, B in enumerate(blocks)])
            rhs = np.column_stack([
                np.concatenate([w[j] * readings[i][1][j] * B[:, r + readings[i][0][j]]
                                for j, B in enumerate(blocks)]) for i in idx])
            c = _least_squares(np.concatenate([A, rhs], axis=1), r)
            coef[:, idx] = c if M is None else M @ c
        pred = Yr @ coef                                        # (N, n, readings)
        m = keep & test[:, None]
        for i, (t, w) in enumerate(zip(taus, ws)):
            e = (t - pred[:, :, i]) * w
            res[i] += np.sum(np.where(m, e, 0.0) ** 2, axis=0)
        cnt += m.sum(axis=0)
    return [float(np.sum(x / np.maximum(cnt, 1))) for x in res]


#: The lower bound of a column swap's held-out score (:func:`_score_bounds`) fits every
#: BOUND_STEP-th sample of each held-out half (a quarter of the regressor rows).
BOUND_STEP = 4


def _score_bounds(model, readings, half, M=None):
    """Lower bounds of :func:`_score` of several readings, each at a fraction of its cost:
    ``readings`` a list of (q, dq, ddq, tau, keep) (N, n) of one recording (``half`` its
    held-out split); per reading, every :data:`BOUND_STEP`-th sample S_h of each held-out
    half T_h is fitted in-sample (the same weights, kept rows and coordinates,
    :func:`_fit_solve`), the regressor rows of all readings in one call.

    The score sums per joint k and half h the held-out residual R_hk(c_h) of the fit c_h on
    the other half, divided by cnt_k, the joint's kept rows (both halves); a residual over
    fewer rows (S_h within T_h) is not larger, 1 / cnt_k >= 1 / max cnt, and no c gives a
    smaller residual than the least-squares fit of those rows: score >= sum_h min_c
    R_{S_h}(c) / max_k cnt_k. The residual is evaluated at the computed fit (above the
    minimum by rounding only). Returns a list of (bound, slack), slack 1e-8 x the rows'
    weighted torque energy / max cnt, far above that rounding: the bound proves the score
    above x where bound - slack > x."""
    sub = [np.flatnonzero(test)[::BOUND_STEP] for test in (half, ~half)]
    rows = np.concatenate(sub)
    if not readings or not len(rows):
        return [(0.0, 0.0)] * len(readings)
    Yr = _reduced(model, *(np.concatenate([x[i][rows] for x in readings]) for i in range(3)))
    Yr = Yr.reshape(len(readings), len(rows), *Yr.shape[1:])
    r = Yr.shape[3]
    out = []
    for Y, (_, _, _, tau, keep) in zip(Yr, readings):
        w = _weights(tau)
        cnt = max(int(keep.sum(axis=0).max()), 1)
        X = np.empty(Y.shape[:2] + (r + 1,))
        np.multiply(Y, w[:, None], out=X[..., :r])
        np.multiply(tau[rows], w, out=X[..., r])
        res = energy = 0.0
        start = 0
        for part in sub:
            Z = X[start: start + len(part)][keep[part]]
            start += len(part)
            energy += float(Z[:, r] @ Z[:, r])
            if Z.shape[0] <= r:        # as many parameters as rows: a fit may be exact
                continue
            e = Z[:, r] - Z[:, :r] @ _fit_solve(Z, r, M)[:, 0]
            res += float(e @ e)
        out.append((res / cnt, 1e-8 * energy / cnt))
    return out


def _rows(st, live):
    """(live (n,) bool, kept rows (N, n) bool, held-out half (N,) bool) of the free refit of
    the recording's states ``st`` (:func:`free_readings`)."""
    dq = st["dq"]
    N, n = dq.shape
    live = np.ones(n, dtype=bool) if live is None else np.asarray(live, dtype=bool)
    dt = st["dt"] * max(1.0, float(np.median(np.diff(st["idx"]))))
    # a joint reversed keeps these rows: |dq| and dq's sign changes are those of -dq
    keep = _kept_rows(dq, dt, st["fc"]) & live[None, :]
    half = (np.arange(N) * BLOCKS // max(N, 1)) % 2 == 1
    return live, keep, half


def _swap(n, k, m):
    p = np.arange(n)
    p[[k, m]] = p[[m, k]]
    return p


def fitted_scores(model, st, readings, live=None):
    """In-sample scores of the free refit of :func:`free_readings`: for the data as recorded
    and each reading, the score of each half's fit on its own (fitted) rows instead of the
    held-out ones (sum over the joints of the mean e_k^2 of the fitted rows, both halves
    pooled; the same fits, weights and rows).

    A reading that explains the data leaves less model error in the fit itself: its fitted
    rows fit better than the recorded data's (one joint's torque negated or direction
    reversed on simulated 2 s and 10 s runs of the Unitree Z1 and xArm7, the reading named:
    6e-6..0.3 x the recorded in-sample score; the reversals and swaps of 4 CAD-error draws
    x 3 arms of benchmarks/cad_error_reversals.py: up to 0.56 x). A reading whose held-out
    score is lower but whose fitted rows fit worse has only moved the parameters the fitted
    half leaves undetermined (the first 2 s of the starter excitation of the Z1, xArm7 and
    test/arm7: the held-out score of the data as recorded is 100-2e5 x its in-sample score,
    1.4-2.1 x on 3 s of the Z1 and xArm7): an extrapolation that happens to land nearer,
    not evidence (issue #27).

    Parameters
    ----------
    model, st, live
        As :func:`free_readings`.
    readings : list of (str, tuple of int)
        (kind, joints) as :func:`free_readings` returns them.

    Returns
    -------
    (float, list of float)
        The recorded in-sample score and each reading's (NaN where the fit is too short).
    """
    q, dq, ddq, tau = st["q"], st["dq"], st["ddq"], st["tau"]
    n = q.shape[1]
    P = model.n_parameters
    live, keep, half = _rows(st, live)
    M = _to_basis(model)
    Yr = _reduced(model, q, dq, ddq)
    rec = _score(Yr, tau, keep, P, half, M, fitted=True)
    out = []
    for kind, g in readings:
        if kind in ("direction", "torque sign"):
            s = np.ones(n)
            s[list(g)] = -1.0
            args = ((_reduced(model, q * s, dq * s, ddq * s) if kind == "direction" else Yr),
                    tau * s, keep)
        else:
            p = _swap(n, *g)
            args = ((_reduced(model, q[:, p], dq[:, p], ddq[:, p]), tau[:, p], keep[:, p])
                    if kind == "columns swapped" else (Yr, tau[:, p], keep))
        out.append(_score(*args, P, half, M, fitted=True))
    return rec, out


def free_readings(model, st, live=None, decided=None):
    """Held-out scores of the free refit for the data as recorded and each reading.

    Parameters
    ----------
    model : RobotModel (rigid)
    st : dict
        Filtered states of one recording (``q``, ``dq``, ``ddq``, ``tau`` (N, n), ``dt``
        [s] of the grid, ``idx`` its kept samples, ``fc`` [Hz] the low-pass cut-off), from
        :func:`robot_identification.diagnostics._nominal._states`.
    live : ndarray (n,) of bool, optional
        Joints whose torque is read (a dead channel is left out of every reading).
    decided : (float, set of tuple of int), optional
        (x, groups): a column swap (``columns swapped``) whose held-out score a cheap lower
        bound (:func:`_score_bounds`) shows above x times the recorded one (and above the
        :data:`FREE_EXPLAINED` limit where the recorded score is not below it) is left out
        of the list unscored, except the pairs of joints in ``groups`` (issue #29: what
        :func:`robot_identification.diagnostics._nominal._decide` decides does not depend
        on such a score). Default: every reading scored.

    Returns
    -------
    (float, list of (float, str, tuple of int))
        The recorded score and, sorted by score, (score, kind, joints) with kind one of
        ``direction``, ``torque sign``, ``columns swapped``, ``torque columns swapped``;
        None where the recording is too short for the free fit.
    """
    q, dq, ddq, tau = st["q"], st["dq"], st["ddq"], st["tau"]
    n = q.shape[1]
    P = model.n_parameters
    live, keep, half = _rows(st, live)
    if keep.sum() < 2 * P:
        return None
    M = _to_basis(model)
    ident = np.arange(n)
    signs = [k for k in range(n) if live[k]]
    pairs = [(k, m) for k in range(n) for m in range(k + 1, n) if live[k] and live[m]]

    def swap(k, m):
        return _swap(n, k, m)

    # the readings of the recorded regressor first (the recorded score bounds the others)
    shared = ([(ident, np.ones(n))] + [(ident, np.where(ident == k, -1.0, 1.0)) for k in signs]
              + [(swap(k, m), np.ones(n)) for k, m in pairs])
    # the recorded regressor and those of the joints reversed in one call (the same rows
    # as one call each: the kernel fills each sample alone; issue #29: ~0.7 ms per call)
    flips = [np.where(ident == k, -1.0, 1.0) for k in signs]
    Ys = _reduced(model, *(np.concatenate([x] + [x * s for s in flips]) for x in (q, dq, ddq)))
    Ys = Ys.reshape(1 + len(flips), q.shape[0], *Ys.shape[1:])
    scores = _scores_shared(Ys[0], tau, keep, P, half, shared, M)
    rec = scores[0]
    limit = FREE_EXPLAINED * live.sum()
    out = []
    for i, (k, s) in enumerate(zip(signs, flips)):
        out.append((_score(Ys[1 + i], tau * s, keep, P, half, M), "direction", (k,)))
        out.append((scores[1 + i], "torque sign", (k,)))
    swaps = []
    for k, m in pairs:
        p = swap(k, m)
        swaps.append((q[:, p], dq[:, p], ddq[:, p], tau[:, p], keep[:, p]))
    scored = [True] * len(pairs)
    if decided is not None and np.isfinite(rec):
        ask = [i for i, g in enumerate(pairs) if g not in decided[1]]
        for i, (bound, slack) in zip(ask, _score_bounds(model, [swaps[i] for i in ask], half,
                                                        M)):
            # scored above anything decided on: left out
            scored[i] = not (bound - slack > decided[0] * rec
                             and (rec <= limit or bound - slack > limit))
    for i, (g, x) in enumerate(zip(pairs, swaps)):
        if scored[i]:
            out.append((_score(_reduced(model, *x[:3]), *x[3:], P, half, M),
                        "columns swapped", g))
        out.append((scores[1 + len(signs) + i], "torque columns swapped", g))
    out = [r for r in out if np.isfinite(r[0])]
    out.sort(key=lambda r: r[0])
    if not np.isfinite(rec) or min([rec] + [r[0] for r in out]) > limit:
        return None
    return rec, out
