"""Recorded joint data against the URDF's nominal model: faults of real robot data that are
syntactically valid (a reversed joint direction, two joints' columns swapped, an encoder zero
offset, torques in other units or scaled by a drive gain, a dead torque channel) and give a
silently wrong identification otherwise.

Per recording (:func:`check_against_nominal`, called by
:func:`robot_identification.diagnostics.recording_summary`): the positions and torques are
resampled onto a uniform grid and low-pass filtered alike (4th-order zero-phase Butterworth at
5 x the excitation band, 1 Hz to 0.1 x the sampling rate), velocities and accelerations are
differentiated, and the torque the URDF's inertial parameters (and the config's rotor
inertia) predict, tau_0 = Y(q, dq, ddq) pi_0, is compared with the measured torque of each
joint k by least squares on the columns [tau_0k, sign(dq_k), dq_k, 1] (friction and offset
are free: a URDF has none). Per joint: the normalised residual
e_k = |res_k| / |tau_k - mean(tau_k)| and the scale c_k of the nominal column. Where a joint
whose torque matters (its nominal or measured variation above 2 % of the largest joint's
nominal variation and 3 x its noise) is explained badly (e_k > 0.5) or has a scale off the
other joints' (outside [1/1.6, 1.6] x their median), alternative readings of the data are
tried - one joint's direction reversed, two joints' columns swapped, a zero offset of one
joint's encoder (a grid from -0.8 to 0.8 rad, refined by a parabola), a payload at the last
body (its mass and first moments fitted with all joints together) - and the one that explains
the data is named: score sum_k e_k^2 + log(c_k / median c)^2 over those joints at most a
third of the recorded one, every such joint then fitted with e_k <= 0.5. A common scale of
all joints outside [1/3, 3] tells torques in other units or motor currents; one joint's
scale, its gear ratio or drive gain. Reversals and swaps are then decided first by a refit of
every parameter, compared on held-out data (:mod:`robot_identification.diagnostics._refit`,
:func:`_decide`).
"""
from __future__ import annotations

import numpy as np

from robot_identification.data import uniform_grid
from robot_identification.diagnostics._checks import STILL_VELOCITY
from robot_identification.diagnostics._diagnostic import Diagnostic
from robot_identification.diagnostics._refit import (
    FREE_BAND, FREE_RATIO, FREE_SAMPLES, FREE_SEPARATION, FREE_TIE, fitted_scores,
    free_readings)
from robot_identification.errors import DataError
from robot_identification.regressor import (
    nominal_rigid_parameters, rigid_regressor, rigid_torque)
from robot_identification.signal import lowpass_filtfilt

#: Normalised residual above which a joint counts as unexplained by the nominal model.
UNEXPLAINED = 0.5
#: An alternative reading must bring the summed squared normalised residual below this
#: fraction of the recorded one.
IMPROVEMENT = 0.5
#: Scale of the nominal torque beyond which a unit / drive gain problem is said (one joint).
SCALE = 3.0
#: ... and for the common scale of all joints (units, drive gain, another arm).
COMMON_SCALE = 2.0
#: A scale (common or one joint's) beyond this factor is an error, not a warning: a unit
#: (mN*m: 1000 x) or a missing drive gain, never CAD errors of the URDF (20 % masses, 2 cm
#: centres of mass) nor another arm of the same class (the UR5's data on the UR10e: 0.4 x).
#: A UR5 run of example-robot-data with its torques in mN*m was identified with exit 0 and
#: masses of 6204 kg (a warning only).
SCALE_ERROR = 10.0


def _scale_severity(scale):
    """``torque_scale``'s severity for a measured / URDF torque scale: error beyond
    :data:`SCALE_ERROR` either way, else warning."""
    return "warning" if 1 / SCALE_ERROR <= scale <= SCALE_ERROR else "error"


#: Largest delay of the torque behind (or ahead of) the positions searched [s].
MAX_DELAY = 0.05
#: A delay is said when it lowers the summed squared misfit by this fraction and spans at
#: least DELAY_SAMPLES samples.
DELAY_GAIN, DELAY_SAMPLES = 0.02, 2
#: Fewest grid samples used / the URDF-based check's cap (:func:`_states`; the free refit's:
#: :data:`robot_identification.diagnostics._refit.FREE_SAMPLES`).
MIN_SAMPLES, MAX_SAMPLES = 200, 600


def _diag(code, severity, message, subject=""):
    return Diagnostic(code, severity, message, subject)


def _states(model, t, q, tau, dq, band_hz, source=None, samples=MAX_SAMPLES, memo=None):
    """Uniform grid, zero-phase low-pass of q (or dq) and tau alike, derivatives; of the
    grid's samples outside the filter's end transients every k-th is kept, k the largest
    step that keeps at least ``samples`` of them (so fewer than 2 x ``samples``; all where
    there are fewer): an evenly spaced subsample of the whole recording (None where it has
    fewer than :data:`MIN_SAMPLES`). ``memo``: a dict shared by the calls on the same
    ``t, q, tau, dq`` (the URDF-based check's and the free refit's), which keeps the grid
    and the signals resampled onto it (issue #29)."""
    memo = {} if memo is None else memo
    if "grid" not in memo:
        dt = float(np.median(np.diff(t)))
        grid = uniform_grid(t, dt, f"'{source}'" if source else None)
        memo["grid"] = dt, grid[grid < t[-1]]
    dt, grid = memo["grid"]
    fs = 1.0 / dt
    fc = float(np.clip(5.0 * band_hz, 1.0, 0.1 * fs))
    if grid.shape[0] < MIN_SAMPLES:
        return None

    def interp(key, x):
        if key not in memo:
            memo[key] = np.column_stack([np.interp(grid, t, x[:, k])
                                         for k in range(x.shape[1])])
        return memo[key]

    qf = lowpass_filtfilt(interp("q", q), fs, fc, order=4)
    tf = lowpass_filtfilt(interp("tau", tau), fs, fc, order=4)
    if dq is not None:
        dqf = lowpass_filtfilt(interp("dq", dq), fs, fc, order=4)
    else:
        dqf = np.gradient(qf, dt, axis=0)
    ddq = np.gradient(dqf, dt, axis=0)
    # leave out the filter's end transients and room for the delay search, keep at most
    # 2 x samples rows
    shift = int(round(MAX_DELAY / dt))
    edge = min(max(int(np.ceil(1.0 / (fc * dt))), shift), grid.shape[0] // 10)
    shift = min(shift, edge)
    idx = np.arange(edge, grid.shape[0] - edge)
    idx = idx[:: max(1, idx.shape[0] // samples)]
    if idx.shape[0] < MIN_SAMPLES:
        return None
    return {"q": qf[idx], "dq": dqf[idx], "ddq": ddq[idx], "tau": tf[idx],
            "tau_grid": tf, "idx": idx, "shift": shift, "dt": dt, "fc": fc}


def _nominal_torque(model, q, dq, ddq):
    """tau_0 (N, n): the URDF inertials and the config's rotor inertia, no friction
    (:func:`~robot_identification.regressor.nominal_rigid_parameters`), by
    :func:`robot_identification.regressor.rigid_torque` (Newton-Euler with the compiled
    kernel: the regressor's torque up to rounding at about half its cost, issue #29)."""
    return rigid_torque(model, q, dq, ddq, nominal_rigid_parameters(model))


def _nominal_of(model, st, key, q, dq, ddq):
    """:func:`_nominal_torque` of a reading of the states ``st``, computed once per
    recording: ``key`` names the reading (e.g. ``("direction", (k,))``); the readings of
    the recording's checks share it (``st["nominal"]``)."""
    cache = st.setdefault("nominal", {})
    if key not in cache:
        cache[key] = _nominal_torque(model, q, dq, ddq)
    return cache[key]


#: Offsets [rad] at which the URDF torque under a revolute joint's encoder offset is
#: evaluated to interpolate it (:func:`_offset_nominal`): 5 equispaced angles.
_OFFSET_NODES = 2 * np.pi * np.arange(5) / 5
#: ... and the offset where that interpolation is checked against a direct evaluation.
_OFFSET_CHECK = 0.3


def _offset_nominal(model, st, k, off):
    """URDF torque tau_0 (N, n) with joint k's recorded position offset by ``off`` [rad].

    For a revolute joint the rigid-body torque is a trigonometric polynomial of degree 2 in
    its angle (the subtree beyond it rotates with the angle: its inertias R I R^T are
    quadratic, its velocities, gravity and the axes beyond linear in cos and sin; the
    joint's own axis is fixed in its parent's frame), so 5 evaluations at equispaced angles
    give it at every offset exactly (trigonometric interpolation, Lebesgue constant < 2:
    rounding only). The interpolation is checked once per joint and model (on the first
    recording) against a direct evaluation at :data:`_OFFSET_CHECK` rad (relative 1e-9 of
    the torque's magnitude); a prismatic joint, or a model where the check fails, is
    evaluated directly at every offset."""
    q, dq, ddq = st["q"], st["dq"], st["ddq"]

    def direct(x):
        if x == 0.0:
            return _nominal_of(model, st, "recorded", q, dq, ddq)
        dlt = np.zeros(q.shape[1])
        dlt[k] = x
        return _nominal_of(model, st, ("offset", k, float(x)), q + dlt, dq, ddq)

    bases = st.setdefault("offset_basis", {})
    checked = model.__dict__.setdefault("_offset_interpolation", {})   # joint -> bool
    if k not in bases:
        basis = None
        if model.joint_types[k] == "revolute" and checked.get(k, True):
            basis = np.stack([direct(x) for x in _OFFSET_NODES])
            if k not in checked:
                want = direct(_OFFSET_CHECK)
                got = np.tensordot(_offset_weights(_OFFSET_CHECK), basis, axes=1)
                checked[k] = bool(np.max(np.abs(got - want)) <= 1e-9 * max(
                    float(np.max(np.abs(want))), 1e-300))
            if not checked[k]:
                basis = None
        bases[k] = basis
    if bases[k] is None:
        return direct(off)
    return np.tensordot(_offset_weights(off), bases[k], axes=1)


def _offset_fits(model, st, meas, dq, k, offsets):
    """:func:`_fit` of ``meas`` on the URDF torque with joint k's position offset by each
    of ``offsets`` [rad]: list of (e (n,), c (n,)), or None where the torque is not
    interpolated (:func:`_offset_nominal`) or a fit is degenerate.

    The same least squares, all offsets at once: the fixed columns [sign(dq_j), dq_j, 1] of
    every joint are projected out once (orthonormal basis from their SVD, lstsq's cut-off),
    so the scale c_j of the nominal column x_j is (x_j^r . y_j^r) / |x_j^r|^2 with ^r the
    residuals of that projection (Frisch-Waugh-Lovell) and the fitted residual y_j^r - c_j
    x_j^r; x_j^r is linear in the interpolation weights, so the 5 nodes' torques are
    projected instead of each offset's."""
    _offset_nominal(model, st, k, 0.0)                 # the nodes (or no interpolation)
    basis = st["offset_basis"][k]
    if basis is None:
        return None
    if "fixed_projection" not in st:
        Z = np.stack([np.sign(dq).T, dq.T, np.ones_like(dq.T)], axis=-1)     # (n, N, 3)
        u, sv, _ = np.linalg.svd(Z, full_matrices=False)
        keep = sv > np.finfo(float).eps * max(Z.shape[1], 3) * sv[:, :1]
        Q = u * keep[:, None, :]
        y = np.ascontiguousarray(meas.T)
        yr = y - np.einsum("jnr,jr->jn", Q, np.einsum("jnr,jn->jr", Q, y))
        sst = np.sum((y - y.mean(axis=1, keepdims=True)) ** 2, axis=1)
        st["fixed_projection"] = (Q, yr, sst, meas, dq)
    Q, yr, sst, m0, d0 = st["fixed_projection"]
    if m0 is not meas or d0 is not dq:
        return None
    B = np.ascontiguousarray(basis.transpose(2, 0, 1))                     # (n, 5, N)
    Br = B - np.matmul(np.matmul(B, Q), Q.transpose(0, 2, 1))
    W = np.stack([_offset_weights(o) for o in offsets])                    # (K, 5)
    Xr = np.matmul(W[None], Br)                                            # (n, K, N)
    den = np.sum(Xr * Xr, axis=2)
    x2 = np.sum(np.matmul(W[None], B) ** 2, axis=2)
    if not np.all(den > 1e-20 * x2):
        return None           # a nominal column in the span of the fixed ones: lstsq's
    c = np.matmul(Xr, yr[:, :, None])[..., 0] / den                       # (n, K)
    res = yr[:, None, :] - c[..., None] * Xr
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.where(sst[:, None] > 0, np.sqrt(np.sum(res * res, axis=2)
                                               / np.where(sst > 0, sst, 1.0)[:, None]), np.nan)
    return [(e[:, i], c[:, i]) for i in range(len(offsets))]


def _offset_weights(off):
    """Weights of the 5 nodes of :data:`_OFFSET_NODES` for the value at ``off`` [rad] of a
    trigonometric polynomial of degree 2 (Dirichlet kernel)."""
    d = off - _OFFSET_NODES
    return (1.0 + 2.0 * np.cos(d) + 2.0 * np.cos(2.0 * d)) / 5.0


def _fit(tau, nominal, dq):
    """Per joint least squares of tau_k on [nominal_k, sign(dq_k), dq_k, 1]: normalised
    residual e (n,) (NaN for a constant torque) and scale c (n,) of the nominal column."""
    return _fit_design(*_design(tau, nominal, dq))


def _fits(problems):
    """:func:`_fit` of each (tau, nominal, dq) of ``problems`` (the same number of samples),
    in one stack: a problem's numbers do not depend on the others of the stack
    (:func:`_lstsq`), the same to the bit as one :func:`_fit` each (a per-reading loop of
    :func:`_alternatives` in one call, issue #29). List of (e, c)."""
    if not problems:
        return []
    X, y = zip(*(_design(*pr) for pr in problems))
    e, c = _fit_design(np.concatenate(X), np.concatenate(y))
    cuts = np.cumsum([len(b) for b in y])[:-1]
    return list(zip(np.split(e, cuts), np.split(c, cuts)))


def _fit_design(X, y):
    """:func:`_fit` of the problems of :func:`_design` (X (B, N, 4), y (B, N)): e (B,),
    c (B,)."""
    coef = _lstsq(X, y)
    res = y - np.einsum("knp,kp->kn", X, coef)
    sst = np.sum((y - y.mean(axis=1, keepdims=True)) ** 2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.where(sst > 0, np.sqrt(np.sum(res * res, axis=1) / np.where(sst > 0, sst, 1.0)),
                     np.nan)
    return e, coef[:, 0].copy()


def _fit_of(st, key, tau, nominal, dq, heldout=False):
    """:func:`_fit` (``heldout``: :func:`_heldout_fit`) of a reading of the recording's
    states ``st``, computed once per recording: ``key`` names the reading (``"recorded"``,
    ``("direction", joints)``: those joints reversed, ``("torque sign", joints)``: their
    torques negated; the checks that score the same reading share its numbers, issue #29),
    None where the arrays are not a reading of ``st``'s torque and URDF torque (computed
    every time)."""
    if key is None:
        return _heldout_fit(tau, nominal, dq) if heldout else _fit(tau, nominal, dq)
    cache = st.setdefault("fits", {})
    if (key, heldout) not in cache:
        cache[key, heldout] = (_heldout_fit(tau, nominal, dq) if heldout
                               else _fit(tau, nominal, dq))
    return cache[key, heldout]


def _readings_of(st, meas, nom):
    """Whether ``meas`` and ``nom`` are the recording's own torque and URDF torque (its
    readings' fits can then be shared, :func:`_fit_of`)."""
    return meas is st["tau"] and nom is st.get("nominal", {}).get("recorded")


def _design(tau, nominal, dq):
    """The per-joint least-squares problems of :func:`_fit`: columns [nominal_k, sign(dq_k),
    dq_k, 1] of every joint k, shape (n, N, 4), and the torques, shape (n, N)."""
    nominal, dq = np.asarray(nominal, float), np.asarray(dq, float)
    X = np.stack([nominal.T, np.sign(dq).T, dq.T, np.ones_like(dq.T)], axis=-1)
    return X, np.ascontiguousarray(np.asarray(tau, float).T)


def _lstsq(X, y):
    """Least squares of every problem of a stack at once: X (B, N, p), y (B, N) -> (B, p),
    the minimum-norm solution as ``np.linalg.lstsq(X[b], y[b], rcond=None)`` gives it
    (singular values below max(N, p) x machine epsilon x the largest are dropped).

    Each problem that is clearly well conditioned (:func:`_gram_lstsq`) by its normal
    equations: the same unique solution to rounding at half the CPU of the SVD (issue #29);
    the others by the SVD with that cut-off. Either way a problem's solution does not depend
    on the others of the stack."""
    coef, ok = _gram_lstsq(X, y)
    if ok.all():
        return coef
    bad = np.flatnonzero(~ok)
    u, sv, vt = np.linalg.svd(X[bad], full_matrices=False)
    keep = sv > np.finfo(float).eps * max(X.shape[1], X.shape[2]) * sv[:, :1]
    inv = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
    coef[bad] = np.einsum("bqp,bq->bp", vt, inv * np.einsum("bnq,bn->bq", u, y[bad]))
    return coef


#: The per-joint fits go through their normal equations where the Jacobi-scaled Gram matrix
#: has condition number at most this (bound ||L||_F ||L^-1||_F of its Cholesky factor), as
#: :data:`robot_identification.diagnostics._refit.GRAM_COND`.
GRAM_COND = 1e4


def _gram_lstsq(X, y):
    """:func:`_lstsq` by the normal equations X^T X c = X^T y with one refinement step on the
    residual (corrected semi-normal equations: the least-squares solution to rounding where
    X is well conditioned): (coef (B, p), ok (B,) bool), ok False (coef not set) where a
    problem is not clearly well conditioned: its Jacobi-scaled Gram matrix not positive
    definite in floating point, its condition bound above :data:`GRAM_COND`, or the unscaled
    bound not below a quarter of the ratio at which :func:`_lstsq`'s cut-off drops a
    singular value (then every singular value is kept and the solution is unique)."""
    B, N, p = X.shape
    coef = np.zeros((B, p))
    ok = np.zeros(B, dtype=bool)
    if B == 0 or N < p:
        return coef, ok
    Xt = X.transpose(0, 2, 1)
    G = Xt @ X
    diag = np.diagonal(G, axis1=1, axis2=2)
    ok = np.all(diag > 0, axis=1)
    d = 1.0 / np.sqrt(np.where(ok[:, None], diag, 1.0))
    Gs = G * d[:, :, None] * d[:, None, :]
    Gs[~ok] = np.eye(p)
    try:
        L = np.linalg.cholesky(Gs)
    except np.linalg.LinAlgError:      # some problem not positive definite: find which
        L = np.empty_like(Gs)
        for b in range(B):
            try:
                L[b] = np.linalg.cholesky(Gs[b])
            except np.linalg.LinAlgError:
                ok[b] = False
                L[b] = np.eye(p)
                Gs[b] = np.eye(p)
    Li = np.linalg.inv(L)
    bound = np.sqrt(np.sum(L * L, axis=(1, 2)) * np.sum(Li * Li, axis=(1, 2)))
    cut = 0.25 / (np.finfo(float).eps * max(N, p))
    ok &= (bound <= GRAM_COND) & (bound * d.max(axis=1) / d.min(axis=1) < cut)
    if not ok.any():
        return coef, ok
    Gs[~ok] = np.eye(p)            # solved too, not used
    try:
        c = d * np.linalg.solve(Gs, (d * (Xt @ y[:, :, None])[..., 0])[:, :, None])[..., 0]
        r = y - (X @ c[:, :, None])[..., 0]
        c += d * np.linalg.solve(Gs, (d * (Xt @ r[:, :, None])[..., 0])[:, :, None])[..., 0]
    except np.linalg.LinAlgError:
        return coef, np.zeros(B, dtype=bool)
    coef[ok] = c[ok]
    return coef, ok


def _score(e, c, use):
    """Sum over the joints ``use`` of e_k^2 + log(c_k / common scale)^2."""
    e, c = e[use], np.maximum(c[use], 0.05)
    if not len(e):
        return 0.0
    common = np.exp(_median(np.log(c)))
    return float(np.nansum(np.minimum(e, 2.0) ** 2) + np.sum(_scale_terms(c, common)))


#: Largest cost of one joint's scale in :func:`_score` and :func:`_heldout_score`: that of a
#: scale 20 x off the common one, as much as a negative scale costs (clipped at 0.05) where
#: the common scale is 1. Without it a joint whose torque is 1000 x the URDF's (one column
#: in mN*m) cost log(1000)^2 = 48 as recorded and 9 negated: that joint's torque read as
#: "sign reversed", an error naming the wrong cause (UR5 of example-robot-data, MuJoCo).
SCALE_COST = float(np.log(20.0) ** 2)


def _scale_terms(c, common):
    """Per-joint scale cost min(log(max(c_k, 0.05) / common)^2, :data:`SCALE_COST`)."""
    return np.minimum(np.log(np.maximum(c, 0.05) / common) ** 2, SCALE_COST)


def _median(x):
    """``np.median`` of a short 1-d array (the same value: the middle one, or the mean of
    the middle two; NaN where one is), without its per-call overhead (issue #29)."""
    s = np.sort(x)
    n = len(s)
    if np.isnan(s[-1]):
        return np.nan
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def check_against_nominal(model, t, q, tau, dq=None, band_hz=1.0, source="",
                          torque_noise=None):
    """Diagnostics of one recording against the URDF's nominal torques: see
    :func:`_check` (a numerical failure of the check, e.g. a singular fit on degenerate
    data, leaves the recording unchecked instead of failing the identification)."""
    try:
        memo = {}           # the resampled signals, shared by the two _states calls
        out, info = _check(model, t, q, tau, dq, band_hz, source, torque_noise, memo)
        if not info:
            return out, info
        st = _states(model, np.asarray(t, float), np.asarray(q, float),
                     np.asarray(tau, float), None if dq is None else np.asarray(dq, float),
                     FREE_BAND * band_hz, source, FREE_SAMPLES, memo)
        return _decide(model, st, out, info, f"{source}: " if source else ""), info
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, DataError):
        return [], {}


def _check(model, t, q, tau, dq, band_hz, source, torque_noise, memo=None):
    """Diagnostics of one recording against the URDF's nominal torques (module docstring).

    Parameters
    ----------
    model : RobotModel
        Rigid models only (elastic: no check, an empty list).
    t : ndarray (N,) [s]; q, tau : ndarray (N, n) [rad, N*m]; dq : ndarray (N, n) or None
    band_hz : float
        Excitation band of the motion [Hz] (:func:`robot_identification.signal.excitation_band`).
    source : str
        Recording label for the messages.
    memo : dict, optional
        :func:`_states`' memo of these arrays.

    Returns
    -------
    (list of Diagnostic, dict)
        The findings (codes ``torque_sign``, ``joints_swapped``, ``encoder_offset``,
        ``unmodelled_payload``, ``torque_dead``, ``torque_scale``, ``torque_unexplained``,
        ``torque_lag``) and the
        per-joint numbers (``fit``: e_k, ``scale``: c_k).
    """
    if model.config.elastic or np.asarray(q).ndim != 2:
        return [], {}
    st = _states(model, np.asarray(t, float), np.asarray(q, float), np.asarray(tau, float),
                 None if dq is None else np.asarray(dq, float), band_hz, source, memo=memo)
    if st is None:          # too short: the other checks speak for the data
        return [], {}
    names = list(model.joint_names)
    n = len(names)
    nom = _nominal_of(model, st, "recorded", st["q"], st["dq"], st["ddq"])
    meas = st["tau"]
    e, c = _fit_of(st, "recorded", meas, nom, st["dq"])
    info = {"fit": e.tolist(), "scale": c.tolist()}
    src = f"{source}: " if source else ""
    moving = _moving(st)
    nom_rms = np.sqrt(np.mean((nom - nom.mean(axis=0)) ** 2, axis=0))
    meas_rms = np.sqrt(np.mean((meas - meas.mean(axis=0)) ** 2, axis=0))
    # joints where the nominal or the measured torque varies by more than 2 % of the
    # largest joint's nominal variation and 3 x the torque noise
    matters = nom_rms > 0.02 * max(float(np.max(nom_rms)), 1e-12)
    if torque_noise is not None:
        matters &= np.maximum(nom_rms, meas_rms) > 3 * np.asarray(torque_noise, dtype=float)
    # a reversal also shows on a small joint (a wrist) whose URDF torque is a fair part of
    # its own measured torque (REVERSAL_SHARE), not only on those of the size of the largest
    # (scored apart: their misfit under CAD errors would drown the large joints' evidence)
    reversal_use = matters | (nom_rms >= REVERSAL_SHARE * meas_rms)
    if torque_noise is not None:
        reversal_use &= nom_rms > 3 * np.asarray(torque_noise, dtype=float)
    out = []

    # a dead channel: (about) constant torque while the model predicts a varying one
    # (a recorded torque exactly constant while the joint moves is dead whatever the URDF
    # predicts: a real sensor has noise)
    raw = np.asarray(tau, dtype=float)
    frozen = np.ptp(raw, axis=0) <= 1e-12 * max(1.0, float(np.max(np.abs(raw))))
    # (a small torque that the scaled URDF torque explains is not dead but in other units:
    # torque_scale below; motor currents of an elastic UR5 at 0.01 x read "dead" on every
    # joint)
    dead = [k for k in range(n) if moving[k] and (
        matters[k] and meas_rms[k] < 0.02 * nom_rms[k]
        and not (e[k] < UNEXPLAINED and c[k] > 0) or frozen[k])]
    for k in dead:
        out.append(_diag("torque_dead", "error",
                         f"{src}joint {names[k]}: the measured torque is constant (RMS "
                         f"variation {meas_rms[k]:.3g} N*m) while the joint moves and the "
                         f"URDF's model predicts {nom_rms[k]:.3g} N*m: a dead torque or "
                         f"current channel, or a column that is not this joint's?",
                         names[k]))
    live = np.array([k not in dead for k in range(n)])
    use = live & matters
    bad = [k for k in range(n) if use[k] and e[k] > UNEXPLAINED]
    common = np.exp(np.median(np.log(np.maximum(c[use], 0.05)))) if use.any() else 1.0
    base_score = _score(e, c, use)
    found = None
    if use.any() and base_score > 0.01:
        hyp = _alternatives(model, st, meas, use, names)
        for code, text, e_alt, c_alt, data in hyp:
            s = _score(e_alt, c_alt, use)
            ok = np.all(~use | (e_alt <= UNEXPLAINED))
            if s <= IMPROVEMENT * base_score and ok and (found is None or s < found[0]):
                found = (s, code, text, e_alt, c_alt, data)
    # a reversal is decided on held-out data, over every joint it could show on (also where
    # another reading fits in-sample best: a reversed wrist can look like a swap)
    rev, rev_score, rev_best = None, np.inf, np.inf
    for joints in (use, live & reversal_use & ~use):   # the large joints, then the small
        if joints.any():
            got, best, _ = _verify_reversal(model, st, meas, nom, joints, names, src,
                                            explain=use, scales=joints is use, scores=True)
            if joints is use:
                rev_best = best
            if got is not None and (rev is None or got.severity == "error"):
                rev, rev_score = got, (best if joints is use else np.inf)
            if rev is not None and rev.severity == "error":
                break
    if found is None or found[1] == "torque_sign":
        if rev is not None:
            out.append(rev)
            if rev.severity == "error" or found is not None:
                return out, info
    if found is not None and found[1] != "torque_sign":
        s, code, text, e_alt, c_alt, data = found
        severity = "warning"
        if data is not None:       # swapped columns, an encoder offset: scored held out
            e_rec = _fit_of(st, "recorded", meas, nom, st["dq"], heldout=True)
            e_ho = _heldout_fit(*data)
            rec_ho, alt_ho = _heldout_score(e_rec, use, c), _heldout_score(e_ho, use, c_alt)
            # a swap is a discrete reading: an error where it explains the held-out half
            # far better; an offset is fitted (a continuous reading), and CAD errors of the
            # URDF give offsets that fit as well (20 % masses, 2 cm centres of mass: 0.2-0.8
            # rad on wrists, held-out score down to 0.06 x): always a warning
            if code == "joints_swapped" and alt_ho <= REVERSAL_RATIO * rec_ho:
                severity = "error"
            if code == "joints_swapped" and rev_best <= TIE * alt_ho:
                severity = "warning"  # a reversal explains the held-out half about as well
            if rev is not None and rev.severity == "error" and rev_score <= TIE * alt_ho:
                if code != "joints_swapped" or alt_ho > rev_score / TIE:
                    out.append(rev)   # a reversal explains the held-out half as well
                    return out, info
                # both explain it about equally (wrists of a CAD-error arm: a swap of j6 and
                # j7 read as j7 reversed, j6 reversed as the swap): neither is an error
                out.append(_diag(
                    "torque_sign", "warning",
                    f"{src}two readings explain the data about equally (held-out score as "
                    f"recorded {rec_ho:.3g}): {rev.subject} reversed ({rev_score:.3g}) or "
                    f"{text} ({alt_ho:.3g}); the URDF's model cannot tell them apart: check "
                    f"the encoder and torque sign conventions and the column order of these "
                    f"joints", f"{rev.subject} or {text.split(':')[0].split(' ', 1)[1]}"))
                return out, info
        gain = (np.minimum(e, 2.0) ** 2 - np.minimum(e_alt, 2.0) ** 2
                + np.log(np.maximum(c, 0.05) / common) ** 2)
        top = [k for k in np.argsort(-np.where(use, gain, -np.inf))[:3] if use[k]]
        worst = ", ".join(f"{names[k]} {e[k]:.2f} (scale {c[k]:.2g}) -> {e_alt[k]:.2f} "
                          f"({c_alt[k]:.2g})" for k in top)
        maybe = ("" if severity == "error" or code == "unmodelled_payload" else
                 f" (held-out score as recorded {rec_ho:.3g}, this reading {alt_ho:.3g}): "
                 f"CAD errors of the URDF can look like this; a warning, not an error")
        out.append(_diag(code, severity,
                         f"{src}{text}: the URDF's model then explains the measured "
                         f"torques (normalised residual and scale of the URDF's torque: "
                         f"{worst}){maybe}", text.split(":")[0].split(" ", 1)[1]
                         if code != "unmodelled_payload" else model.body_names[-1]))
        return out, info
    # a delay of the torque, where no other reading explains the data (a shifted torque
    # also lowers the misfit of a reversed, swapped or offset joint a little)
    # and where the URDF's model otherwise fits (another arm's data fit a shift too)
    if not bad and 1 / COMMON_SCALE <= common <= COMMON_SCALE:
        out += _check_delay(st, nom, use, src)
    if use.any() and base_score > 0.01:
        for k in bad:
            out.append(_diag(
                "torque_unexplained", "warning",
                f"{src}joint {names[k]}: the URDF's model with fitted friction explains "
                f"only {100 * max(0.0, 1 - e[k] ** 2):.0f} % of the measured torque's "
                f"variation (normalised residual {e[k]:.2f}, scale {c[k]:.2g}): another "
                f"robot, a payload or "
                f"a URDF far from this arm, or a column of another quantity?", names[k]))
    # a sign reversal visible on the scale alone (no single reading explains everything):
    # the joints whose URDF torque enters with a negative scale, reversed together
    sign = [k for k in range(n) if use[k] and moving[k] and c[k] < -0.3
            and e[k] <= UNEXPLAINED]
    if sign:
        got = _verify_reversal(model, st, meas, nom, live & reversal_use, names, src,
                               candidates=[tuple(sign)], explain=use)
        if got is not None and got.severity == "error":     # replaces a single-joint note
            out = [d for d in out if d.code != "torque_sign"]
        if got is not None and not any(d.code == "torque_sign" for d in out):
            out.append(got)
    # scale: all joints alike (units, drive gain) or one joint
    ok = [k for k in range(n) if live[k] and matters[k] and c[k] > 0 and e[k] < UNEXPLAINED]
    if ok:
        # the median: one joint's torque in mN*m (1000 x) pulled a mean weighted by the
        # URDF torque to 45 x "on every joint" (UR5 shoulder_lift_joint, the largest)
        common = float(np.exp(np.median(np.log(c[ok]))))
        if not 1 / COMMON_SCALE <= common <= COMMON_SCALE and len(ok) >= max(2, n // 2):
            out.append(_diag("torque_scale", _scale_severity(common),
                             f"{src}the measured torques are {common:.3g}x what the URDF's "
                             f"model predicts on every joint (per joint "
                             f"{', '.join(f'{c[k]:.3g}' for k in ok)}): torque units (mN*m?) "
                             f"or motor currents (A) given as torque - a drive gain missing? "
                             f"Or the data of another arm than the URDF's?"))
        else:
            for k in ok:
                r = c[k] / (common if len(ok) >= 3 else 1.0)
                if not 1 / SCALE <= c[k] <= SCALE:
                    out.append(_diag("torque_scale", _scale_severity(c[k]),
                                     f"{src}joint {names[k]}: the measured torque is "
                                     f"{c[k]:.3g}x what the URDF's model predicts (the other "
                                     f"joints about {common:.3g}x; ratio {r:.3g}): this "
                                     f"joint's gear ratio, drive gain or torque unit?",
                                     names[k]))
    return out, info


#: Blocks of the held-out split of :func:`_heldout_fit` (alternating: even blocks fit, odd
#: blocks tested, and the other way round).
HELDOUT_BLOCKS = 6
#: A reversal is an error where the reversed reading's held-out score is at most this
#: fraction of the recorded one (20 CAD-error draws of ur10e, puma560 and test/arm7, correct
#: data: no single-joint reversal below 0.55; observable reversals 0.001-0.39), a note up to
#: REVERSAL_NOTE.
REVERSAL_RATIO, REVERSAL_NOTE = 0.4, 0.8
#: A reading is an error (the free refit's, :func:`_decide`, and the URDF-based one's,
#: :func:`_verify_reversal`) only where it also fits the data it is fitted to better: its
#: in-sample score below this fraction of the recorded data's. A reading that explains the
#: data leaves less model error in the fit itself; a lower held-out score with a worse
#: in-sample fit is the extrapolation of a fit its half leaves undetermined (issue #27: the
#: first 2 s of the Unitree Z1's and xArm7's starter excitation; docs/diagnostics.md).
FITTED_RATIO = 1.0
#: Joints scored for a reversal: those that count for the other readings, and any whose
#: URDF torque varies by at least this fraction of its measured torque.
REVERSAL_SHARE = 0.2
#: Readings whose held-out score is within this factor of the best one explain the data
#: equally (a symmetry of the URDF's model, e.g. a planar pair of parallel joints): all are
#: named.
TIE = 2.0


def _heldout_fit(tau, nominal, dq, blocks=HELDOUT_BLOCKS):
    """Normalised residual e (n,) of the per-joint fit of :func:`_fit`, refitted on half of
    the samples (alternating contiguous blocks) and evaluated on the other half, both ways
    (the residuals of the two test halves pooled)."""
    return _heldout_design(*_design(tau, nominal, dq), blocks)


def _heldout_fits(problems, blocks=HELDOUT_BLOCKS):
    """:func:`_heldout_fit` of each (tau, nominal, dq) of ``problems`` (the same number of
    samples) in one stack, the same to the bit (as :func:`_fits`): list of e. One joint per
    problem: one call each (numpy sums a single problem's held-out rows, contiguous, in
    another order than a stack's, strided: the last bit would differ)."""
    if not problems or np.shape(problems[0][0])[1] == 1:
        return [_heldout_fit(*pr) for pr in problems]
    X, y = zip(*(_design(*pr) for pr in problems))
    e = _heldout_design(np.concatenate(X), np.concatenate(y), blocks)
    return np.split(e, np.cumsum([len(b) for b in y])[:-1])


def _heldout_design(X, Y, blocks=HELDOUT_BLOCKS):
    """:func:`_heldout_fit` of the problems of :func:`_design` (X (B, N, 4), Y (B, N)):
    e (B,)."""
    B, N = Y.shape
    half = (np.arange(N) * blocks // max(N, 1)) % 2 == 1
    res = np.zeros(B)
    sst = np.zeros(B)
    for test in (half, ~half):
        train = ~test
        coef = _lstsq(X[:, train], Y[:, train])
        y = Y[:, test]
        r = y - np.einsum("knp,kp->kn", X[:, test], coef)
        res += np.sum(r * r, axis=1)
        sst += np.sum((y - y.mean(axis=1, keepdims=True)) ** 2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sst > 0, np.sqrt(res / np.where(sst > 0, sst, 1.0)), np.nan)


def _heldout_score(e, use, c=None):
    """Sum over the joints ``use`` of held-out e_k^2, plus with scales c the scale terms
    log(max(c_k, 0.05) / common)^2 with common the median magnitude |c| (a negative scale,
    a torque running against the URDF's, costs log(0.05 / common)^2 ~ 9)."""
    score = float(np.nansum(np.minimum(e[use], 2.0) ** 2))
    if c is not None and use.any():
        common = np.exp(np.median(np.log(np.maximum(np.abs(c[use]), 0.05))))
        score += float(np.sum(_scale_terms(c[use], common)))
    return score


def _verify_reversal(model, st, meas, nom, use, names, src, candidates=None, explain=None,
                     scales=True, scores=False):
    """``torque_sign`` of one recording, decided on held-out data (:func:`_heldout_fit`).

    Every candidate reading - a joint's direction reversed (its q, dq, ddq and torque
    negated) or its torque alone negated (the torque's sign convention), for each joint
    alone or for the given groups of joints together - is refitted and scored on the
    held-out half, as is the data as recorded, over the joints ``use``. An error only where
    the best reading explains every joint of ``explain`` (held-out e_k <=
    :data:`UNEXPLAINED`, or no worse than as recorded; default ``use``) at
    :data:`REVERSAL_RATIO` x the recorded score or less; the readings within :data:`TIE` of
    the best are all named (the URDF's model cannot tell them apart). A reading that
    explains them at up to :data:`REVERSAL_NOTE` x: an info note naming both readings;
    otherwise nothing (None).

    Parameters
    ----------
    candidates : list of tuple of int, optional
        Groups of joints read together (default: each joint alone).
    scales : bool
        Score the scale of the URDF's torque too (:func:`_heldout_score`): a torque
        negated alone changes no residual, only the sign of its scale. Off for small
        joints, whose URDF torque CAD errors can turn around.

    Returns
    -------
    Diagnostic or None; with ``scores``: (Diagnostic or None, best reading's held-out score,
    the recorded one's)
    """
    diag, best, rec = _reversal(model, st, meas, nom, use, names, src, candidates, explain,
                                scales)
    return (diag, best, rec) if scores else diag


def _moving(st):
    """(n,) of bool: the joints that move in the recording's states (velocity RMS at least
    :data:`STILL_VELOCITY`). A joint that stands still has no direction to reverse: its
    position negated is another static pose, which may fit a torque column that is not
    this joint's (a UR5 with a constant shoulder_lift_joint position read as "direction
    reversed or torque sign reversed")."""
    return np.sqrt(np.mean(st["dq"] ** 2, axis=0)) >= STILL_VELOCITY


def _reversal(model, st, meas, nom, use, names, src, candidates, explain, scales):
    """:func:`_verify_reversal` with its scores (the default candidates: each joint that
    moves, :func:`_moving`)."""
    n = len(names)
    q, dq, ddq = st["q"], st["dq"], st["ddq"]
    if candidates is None:
        candidates = [(k,) for k in np.flatnonzero(_moving(st))]
    if not candidates:
        return None, np.inf, np.inf

    shared = _readings_of(st, meas, nom)

    def score(key, tau, nominal, v):
        key = key if shared else None
        e = _fit_of(st, key, tau, nominal, v, heldout=True)
        return _heldout_score(e, use, _fit_of(st, key, tau, nominal, v)[1] if scales
                              else None), e

    rec, e_rec = score("recorded", meas, nom, dq)
    if not rec > 1e-3:          # the recorded reading explains the data (no misfit to halve)
        return None, np.inf, rec
    readings = []
    for group in candidates:
        s = np.ones(n)
        s[list(group)] = -1.0
        nom_dir = _nominal_of(model, st, ("direction", tuple(group)), q * s, dq * s, ddq * s)
        readings.append(("direction", group, meas * s, nom_dir, dq * s))
        readings.append(("torque sign", group, meas * s, nom, dq))
    if shared:                 # the readings' fits in one stack each (_fit_of's cache)
        cache = st.setdefault("fits", {})
        for heldout in (True, False) if scales else (True,):
            todo = {(kd, tuple(g)): arrays for kd, g, *arrays in readings
                    if ((kd, tuple(g)), heldout) not in cache}
            fits = (_heldout_fits if heldout else _fits)(list(todo.values()))
            for key, got in zip(todo, fits):
                cache[key, heldout] = got

    def fitted(key, tau, nominal, v):
        """In-sample score of a reading: the whole recording fitted and scored."""
        e, c = _fit_of(st, key if shared else None, tau, nominal, v)
        return _heldout_score(e, use, c if scales else None)

    scored, arrays_of = [], {}
    for kd, group, *arrays in readings:
        sc, e = score((kd, tuple(group)), *arrays)
        scored.append((sc, kd, group, e))
        arrays_of[kd, tuple(group)] = arrays
    scored.sort(key=lambda x: x[0])
    best, kind, group, e_best = scored[0]
    tied = sorted({g for sc, _, g, _ in scored if sc <= TIE * best + 1e-12})
    kinds = sorted({kd for sc, kd, _, _ in scored if sc <= TIE * best + 1e-12})
    who = " or ".join(", ".join(names[k] for k in g) for g in tied)
    what = " or ".join(f"{kd} reversed" for kd in kinds)
    explain = use if explain is None else explain
    # the reading explains every joint the recorded one does, and none worse than that
    # (a joint the URDF misses anyway, e.g. by a CAD error, may stay unexplained)
    explains = bool(np.all(~explain | (e_best <= np.maximum(UNEXPLAINED, e_rec))))
    # ... and fits the whole recording better too: a held-out gain without one is the
    # extrapolation of a fit that its half leaves undetermined (a short recording)
    fit_rec = fit_best = None
    if explains and best <= REVERSAL_RATIO * rec:
        fit_rec = fitted("recorded", meas, nom, dq)
        fit_best = fitted((kind, tuple(group)), *arrays_of[kind, tuple(group)])
    joint = "joints" if len(group) > 1 else "joint"
    numbers = ", ".join(f"{names[k]} {e_rec[k]:.2f} -> {e_best[k]:.2f}"
                        for k in np.argsort(-np.where(use, e_rec - e_best, -np.inf))[:3]
                        if use[k])
    if explains and best <= REVERSAL_RATIO * rec and fit_best < FITTED_RATIO * fit_rec:
        tie = (f" (the URDF's model explains the readings {who} equally: one of them)"
               if len(tied) > 1 else "")
        cause = ("the encoder or torque sign against the URDF axis" if kind == "direction"
                 else "the torque or current column's sign convention")
        return _diag("torque_sign", "error",
                     f"{src}{joint} {who}: {what} ({cause})?{tie}: refitted on half of the "
                     f"recording, the URDF's model with that reading explains the other half "
                     f"(held-out score {rec:.3g} -> {best:.3g}; normalised residual "
                     f"{numbers})", who), best, rec
    if not (explains and best <= REVERSAL_NOTE * rec):
        return None, best, rec
    fitted_worse = ("" if fit_best is None else
                    f"; fitted to the whole recording it fits no better ({fit_rec:.3g} "
                    f"against {fit_best:.3g} reversed): the held-out gain is the extrapolation "
                    f"of a fit its half leaves undetermined, a recording too short or too "
                    f"little excited to decide")
    return _diag("torque_sign", "info",
                 f"{src}{joint} {who}: the data as recorded and with the {what} both remain "
                 f"possible readings (held-out score of the URDF's model refitted on half of "
                 f"the recording: as recorded {rec:.3g}, reversed {best:.3g}; normalised "
                 f"residual {numbers}{fitted_worse}): not an error; where other findings "
                 f"point at this joint, check its encoder and torque sign conventions",
                 who), best, rec


def _alternatives(model, st, meas, use, names):
    """Alternative readings of the data: list of (code, text, e_alt (n,), c_alt (n,), data)
    with data = (measured torque, URDF torque, velocity) of the reading (None: the payload,
    fitted with all joints together)."""
    n = len(names)
    q, dq, ddq = st["q"], st["dq"], st["ddq"]
    nom = _nominal_of(model, st, "recorded", q, dq, ddq)
    out = []
    shared = _readings_of(st, meas, nom)
    # a joint reversed: q, dq, ddq and tau of joint k negated
    signs = [np.where(np.arange(n) == k, -1.0, 1.0) for k in range(n)]
    noms = [_nominal_of(model, st, ("direction", (k,)), q * s, dq * s, ddq * s)
            for k, s in enumerate(signs)]
    cache = st.setdefault("fits", {})
    todo = [k for k in range(n) if not shared or (("direction", (k,)), False) not in cache]
    got = dict(zip(todo, _fits([(meas * signs[k], noms[k], dq * signs[k]) for k in todo])))
    moving = _moving(st)
    for k in range(n):
        if shared:                      # shared with the reversal check (_fit_of)
            got[k] = cache.setdefault((("direction", (k,)), False), got.get(k))
        if not moving[k]:               # no direction to reverse
            continue
        e_alt, c_alt = got[k]
        out.append(("torque_sign", f"joint {names[k]}: direction reversed (encoder or torque "
                    f"sign against the URDF axis)?", e_alt, c_alt, None))
    # two joints' columns swapped (their fits in one stack)
    pairs = [(k, m) for k in range(n) for m in range(k + 1, n)]
    perms = []
    for k, m in pairs:
        p = np.arange(n)
        p[[k, m]] = p[[m, k]]
        perms.append(p)
    noms = [_nominal_of(model, st, ("swap", k, m), q[:, p], dq[:, p], ddq[:, p])
            for (k, m), p in zip(pairs, perms)]
    fits = _fits([(meas[:, p], nom_p, dq[:, p]) for p, nom_p in zip(perms, noms)])
    # ... or only their torque (current) columns: the other joints' problems are the
    # recorded ones (a fit does not depend on the other joints', _lstsq), the exchanged
    # pairs in one stack
    torque = (_fits([(meas[:, [m, k]], nom[:, [k, m]], dq[:, [k, m]]) for k, m in pairs])
              if shared and dq is st["dq"] else [None] * len(pairs))
    for (k, m), p, nom_p, (e_alt, c_alt), pair in zip(pairs, perms, noms, fits, torque):
        out.append(("joints_swapped", f"joints {names[k]} and {names[m]}: columns "
                    f"swapped (data joint order vs URDF)?", e_alt, c_alt,
                    (meas[:, p], nom_p, dq[:, p])))
        e_alt, c_alt = _swapped_torque_fit(st, meas, nom, dq, k, m, p, pair)
        out.append(("joints_swapped", f"joints {names[k]} and {names[m]}: torque columns "
                    f"swapped (torque or current columns vs joint order)?", e_alt, c_alt,
                    (meas[:, p], nom, dq)))
    # an encoder zero offset of one joint: the best of a grid of offsets, refined by a
    # parabola through its neighbours (the chosen offsets' fits in one stack)
    grid = np.array([-0.8, -0.5, -0.3, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8])

    def at(k, off):
        e_alt, c_alt = _fit(meas, _offset_nominal(model, st, k, off), dq)
        return _score(e_alt, c_alt, use)

    offs = []
    for k in range(n):
        fits = _offset_fits(model, st, meas, dq, k, grid)
        scores = ([_score(e_alt, c_alt, use) for e_alt, c_alt in fits] if fits is not None
                  else [at(k, off) for off in grid])
        i = int(np.argmin(scores))
        off = grid[i]
        if 0 < i < len(grid) - 1:
            x, y = grid[i - 1: i + 2], np.array(scores[i - 1: i + 2])
            A = np.polyfit(x, y, 2)
            if A[0] > 0:
                off = float(np.clip(-A[1] / (2 * A[0]), x[0], x[2]))
        offs.append(off)
    noms = [_offset_nominal(model, st, k, off) for k, off in enumerate(offs)]
    for k, (off, nom_o, (e_alt, c_alt)) in enumerate(zip(
            offs, noms, _fits([(meas, nom_o, dq) for nom_o in noms]))):
        out.append(("encoder_offset", f"joint {names[k]}: encoder zero offset: the recorded "
                    f"position is {-off:+.3g} rad from the URDF's (q_URDF = q_recorded "
                    f"{off:+.3g} rad)?",
                    e_alt, c_alt, (meas, nom_o, dq)))
    # a payload at the last body that the URDF lacks: its mass and first moments (m, m c)
    # fitted together with each joint's scale and friction
    payload = _payload_fit(model, st, meas)
    if payload is not None:
        mass, com, e_alt, c_alt = payload
        out.append(("unmodelled_payload", f"the last body {model.body_names[-1]}: a payload "
                    f"of {mass:.3g} kg that the URDF does not have (centre of mass "
                    f"{np.round(com, 3).tolist()} m in the body's parameter frame)?",
                    e_alt, c_alt, None))
    return out


def _swapped_torque_fit(st, meas, nom, dq, k, m, p, pair=None):
    """:func:`_fit` of ``meas[:, p]`` (joints k and m's torque columns exchanged, ``p`` that
    permutation) on the recording's URDF torque ``nom`` and velocity: the recorded fit's
    numbers for the other joints (the same problems, :func:`_fit_of`), a fit of the two
    exchanged columns for k and m (issue #29; ``pair``: that fit's (e, c) where already
    computed)."""
    if not _readings_of(st, meas, nom) or dq is not st["dq"]:
        return _fit(meas[:, p], nom, dq)
    e, c = _fit_of(st, "recorded", meas, nom, dq)
    e, c = e.copy(), c.copy()
    pair_idx = [k, m]
    e[pair_idx], c[pair_idx] = (pair if pair is not None else
                                _fit(meas[:, [m, k]], nom[:, pair_idx], dq[:, pair_idx]))
    return e, c


def _payload_fit(model, st, meas):
    """Fit tau_k = c_k tau_0k + friction_k + Y_k(m, m c of the last body) p, all joints
    together (each weighted by 1 / its torque's std): (mass, com, e (n,), c (n,)) or None."""
    n = model.n
    q, dq, ddq = st["q"], st["dq"], st["ddq"]
    cols = [10 * (n - 1) + i for i in range(4)]       # m, mx, my, mz of the last body
    Y = rigid_regressor(model, q, dq, ddq, columns=cols)    # those columns alone
    nom = _nominal_of(model, st, "recorded", q, dq, ddq)
    N = q.shape[0]
    A = np.zeros((N * n, 4 * n + 4))
    y = np.empty(N * n)
    w = 1.0 / np.maximum(np.std(meas, axis=0), 1e-12)
    for k in range(n):
        rows = slice(k * N, (k + 1) * N)
        A[rows, 4 * k: 4 * k + 4] = w[k] * np.column_stack(
            [nom[:, k], np.sign(dq[:, k]), dq[:, k], np.ones(N)])
        A[rows, 4 * n:] = w[k] * Y[:, k]
        y[rows] = w[k] * meas[:, k]
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    p = coef[4 * n:]
    if not p[0] > 0:
        return None
    res = (y - A @ coef).reshape(n, N).T / w
    e = np.array([np.sqrt(float(res[:, k] @ res[:, k])
                          / max(float(np.sum((meas[:, k] - meas[:, k].mean()) ** 2)), 1e-300))
                  for k in range(n)])
    return float(p[0]), p[1:] / p[0], e, coef[0: 4 * n: 4]


def _check_delay(st, nom, use, src):
    """``torque_lag`` (warning): shifting the measured torque back by d samples of the
    recording (d up to MAX_DELAY) against the positions lowers the summed squared misfit of the
    joints ``use`` by at least DELAY_GAIN, with |d| >= DELAY_SAMPLES."""
    if not use.any() or st["shift"] < DELAY_SAMPLES:
        return []
    idx, tf, dq = st["idx"], st["tau_grid"], st["dq"]
    # lags only: position noise differentiated into the nominal torque's inertial part
    # makes a small lead fit better (puma560 at 40 dB: 'lead' with nothing delayed)
    shifts = np.arange(0, st["shift"] + 1)
    fits = _fits([(tf[idx + d][:, use], nom[:, use], dq[:, use]) for d in shifts])
    score = np.array([float(np.nansum(np.minimum(e, 2.0) ** 2)) for e, _ in fits])
    i = int(np.argmin(score))
    d, zero = int(shifts[i]), float(score[0])
    if d < DELAY_SAMPLES or not zero > 0 or score[i] > (1 - DELAY_GAIN) * zero:
        return []
    ms = 1e3 * d * st["dt"]
    return [_diag("torque_lag", "warning",
                  f"{src}the measured torques lag the positions by "
                  f"{ms:.3g} ms ({d} samples): shifted back, the URDF's model fits "
                  f"them {100 * (1 - score[i] / zero):.0f} % better (summed squared "
                  f"normalised residual {zero:.3g} -> {score[i]:.3g}): a delayed torque or "
                  f"current channel, or stamps from another clock? The identification "
                  f"pairs torques and positions of different instants")]


#: Findings of the URDF-based check that a reading found by the free refit explains (they
#: follow from the fault): replaced by that reading.
_FOLLOWS = ("torque_sign", "joints_swapped", "encoder_offset", "unmodelled_payload",
            "torque_unexplained")


def _reading_text(kind, group, names):
    who = " and ".join(names[k] for k in group)
    if kind == "direction":
        return f"joint {who}: direction reversed (encoder or torque sign against the URDF axis)"
    if kind == "torque sign":
        return f"joint {who}: torque sign reversed (the torque or current column's convention)"
    if kind == "columns swapped":
        return f"joints {who}: columns swapped (data joint order vs URDF)"
    return f"joints {who}: torque columns swapped (torque or current columns vs joint order)"


def _decide(model, st, out, info, src):
    """The sign and swap findings decided by the free refit (:mod:`._refit`).

    - A reading whose held-out score is at most :data:`FREE_RATIO` x the recorded one and
      whose fitted rows fit better than the recorded data's too (in-sample score,
      :func:`robot_identification.diagnostics._refit.fitted_scores`): an error naming it
      (``torque_sign`` for a reversed direction or torque sign, ``joints_swapped`` for
      exchanged columns; the readings within :data:`FREE_TIE` of the best that fit better
      in-sample are all named; a reversal and a swap tied: a ``torque_sign`` warning naming
      both). It replaces the URDF-based check's findings the fault explains.
    - Where the best reading's held-out score is that low but its fitted rows fit worse (a
      short recording: the free fit of one half extrapolates to the other, and another
      reading moves the parameters it leaves undetermined; the Unitree Z1's and xArm7's
      first 2 s, issue #27): a warning naming the reading and the data as recorded, the
      recording too short or too little excited to decide; the rest as below.
    - Otherwise an error of the URDF-based check stays an error only where the free refit
      cannot tell its reading from the recorded one (within :data:`FREE_SEPARATION`); where
      the recorded reading is clearly better it becomes an info note naming both readings.
    - Joints whose reversal changes the free held-out score by less than
      :data:`FREE_SEPARATION` x either way and that no error names: one info note
      ``direction_undetermined`` (the data cannot tell their direction; only the URDF's
      inertial values could).
    """
    if st is None:
        return out
    names = list(model.joint_names)
    n = len(names)
    dead = {d.subject for d in out if d.code == "torque_dead"}
    live = np.array([nm not in dead for nm in names]) & _moving(st)
    # a column swap scored above FREE_TIE x FREE_RATIO x the recorded score is neither an
    # error nor tied with one, and only the swaps an URDF-based finding names are compared
    # with FREE_SEPARATION: the others are left unscored where a bound shows them above it
    named = {tuple(sorted(names.index(x) for x in part.split(" and ")))
             for d in out if d.code == "joints_swapped" for part in d.subject.split(" or ")
             if all(x in names for x in part.split(" and "))}
    got = free_readings(model, st, live, decided=(FREE_TIE * FREE_RATIO, named))
    if got is None:
        return out
    rec, readings = got
    # best: of the readings scored (a swap left out scores above FREE_TIE x FREE_RATIO x rec)
    info["free_refit"] = {"recorded": rec, "best": readings[0][0] if readings else None}
    if not readings or not rec > 1e-9:
        return out
    best = readings[0][0]
    doubt = None
    if best <= FREE_RATIO * rec:
        tied = [r for r in readings if r[0] <= FREE_TIE * best]
        fit_rec, fits = fitted_scores(model, st, [(kd, g) for _, kd, g in tied], live)
        if not fits[0] < FITTED_RATIO * fit_rec:
            doubt = _undecided(tied, fits, rec, fit_rec, names, src)
        else:
            tied = [r for r, f in zip(tied, fits) if f < FITTED_RATIO * fit_rec]
    if best <= FREE_RATIO * rec and doubt is None:
        swaps = [r for r in tied if "swapped" in r[1]]
        signs = [r for r in tied if "swapped" not in r[1]]
        numbers = (f"refitted with every parameter free on half of the recording, the model "
                   f"with that reading explains the other half (held-out score "
                   f"{rec:.3g} -> {best:.3g})")
        keep = [d for d in out if d.code not in _FOLLOWS]
        if not swaps:
            joints = sorted({k for _, _, g in signs for k in g})
            kinds = sorted({kd for _, kd, _ in signs})
            who = " or ".join(names[k] for k in joints)
            cause = ("the encoder or torque sign against the URDF axis" if kinds == ["direction"]
                     else "the torque or current column's sign convention"
                     if kinds == ["torque sign"] else "encoder, axis or torque convention")
            tie = (f" (the freely refitted model explains the readings {who} equally: one of "
                   f"them; a symmetry of the arm's kinematics)" if len(joints) > 1 else "")
            return keep + [_diag(
                "torque_sign", "error",
                f"{src}joint {who}: "
                f"{' or '.join(k + ' reversed' for k in kinds)} ({cause})?{tie}: {numbers}",
                who)]
        if not signs:
            pairs = sorted({g for _, _, g in swaps})
            who = " or ".join(f"{names[a]} and {names[b]}" for a, b in pairs)
            kinds = sorted({kd for _, kd, _ in swaps})
            return keep + [_diag(
                "joints_swapped", "error",
                f"{src}joints {who}: {' or '.join(kinds)} (data joint order vs URDF)?: "
                f"{numbers}", who)]
        texts = "; or ".join(f"{_reading_text(kd, g, names)} ({sc:.3g})"
                             for sc, kd, g in tied)
        subject = " or ".join(" and ".join(names[k] for k in g) for _, _, g in tied)
        return keep + [_diag(
            "torque_sign", "warning",
            f"{src}readings that explain the data about equally (held-out score of a refit "
            f"with every parameter free, as recorded {rec:.3g}): {texts}; the data cannot "
            f"tell them apart: check the encoder and torque sign conventions and the column "
            f"order of these joints", subject)]

    def free_scores(d):
        """The free refit's readings (score, kind, joints) that an URDF-based finding names;
        None where it names a reading the free refit does not try (joints reversed together:
        all torques negated is the same free fit with every parameter negated)."""
        parts = d.subject.split(" or ")
        if d.code == "joints_swapped":
            groups = [tuple(sorted(names.index(x) for x in p.split(" and ")))
                      if all(x in names for x in p.split(" and ")) else None for p in parts]
        else:
            groups = [(names.index(p),) if p in names else None for p in parts]
        got = [r for r in readings
               if ("swapped" in r[1]) == (d.code == "joints_swapped") and r[2] in groups]
        return got if got and None not in groups else None

    def worse(got):
        """(held-out, in-sample score) of the best of the readings ``got`` where the free
        refit fits the data as recorded clearly better than each (by :data:`FREE_SEPARATION`
        held out, or in-sample: a reading whose fitted rows fit that much worse has only
        moved the parameters its half leaves undetermined), else None."""
        if all(sc >= FREE_SEPARATION * rec for sc, _, _ in got):
            return min(sc for sc, _, _ in got), None
        fit_rec, fits = fitted_scores(model, st, [(kd, g) for _, kd, g in got], live)
        if all(sc >= FREE_SEPARATION * rec or f >= FREE_SEPARATION * fit_rec
               for (sc, _, _), f in zip(got, fits)):
            return min(sc for sc, _, _ in got), (fit_rec, min(fits))
        return None

    result, named = [], set()
    if doubt is not None:
        named.update(x for p in doubt.subject.split(" or ") for x in p.split(" and "))
    for d in out:
        if d.code in ("torque_sign", "joints_swapped") and d.severity == "error":
            got = free_scores(d)
            got = None if got is None else worse(got)
            if got is not None:
                sc, fit = got
                d = _diag(d.code, "info",
                          f"{d.message}; but refitted with every parameter free, the data as "
                          f"recorded explain the held-out half better ({rec:.3g} against "
                          f"{sc:.3g} with that reading)" if fit is None else
                          f"{d.message}; but refitted with every parameter free, the data as "
                          f"recorded fit better (in-sample score {fit[0]:.3g} against "
                          f"{fit[1]:.3g} with that reading; held out {rec:.3g} against "
                          f"{sc:.3g}: a recording too short or too little excited to "
                          f"decide)", d.subject)
                d = _diag(d.code, "info", f"{d.message}: not an error, only the URDF's "
                          f"inertial values point at it", d.subject)
            else:
                named.update(x for p in d.subject.split(" or ") for x in p.split(" and "))
        result.append(d)
    direction = {g[0]: sc for sc, kd, g in readings if kd == "direction"}
    undetermined = [k for k in range(n) if k in direction and names[k] not in named
                    and max(direction[k], rec) < FREE_SEPARATION * min(direction[k], rec)]
    if undetermined:
        who = ", ".join(names[k] for k in undetermined)
        scores = ", ".join(f"{names[k]} {direction[k]:.3g}" for k in undetermined)
        result.append(_diag(
            "direction_undetermined", "info",
            f"{src}{'joints' if len(undetermined) > 1 else 'joint'} {who}: the direction "
            f"cannot be determined from these data: refitted with every parameter free on "
            f"half of the recording, the model explains the other half about as well with "
            f"the joint reversed (held-out score as recorded {rec:.3g}, reversed {scores}; "
            f"the reversed arm moves like a mirrored arm with other inertial parameters); "
            f"only the URDF's inertial values could tell, a sign error of these joints would "
            f"go unseen: check their encoder and torque signs with a motion test", who))
    return result + ([doubt] if doubt is not None else [])


def _undecided(tied, fits, rec, fit_rec, names, src):
    """``torque_sign`` (``joints_swapped`` where every reading is a swap) warning of
    :func:`_decide`: the free refit's best readings ``tied`` (score, kind, joints) explain the
    held-out half better than the data as recorded (``rec``) but their fitted rows worse
    (``fits`` against ``fit_rec``)."""
    texts = "; or ".join(f"{_reading_text(kd, g, names)} (held-out {sc:.3g}, in-sample "
                         f"{f:.3g})" for (sc, kd, g), f in zip(tied, fits))
    subject = " or ".join(" and ".join(names[k] for k in g) for _, _, g in tied)
    code = ("joints_swapped" if all("swapped" in kd for _, kd, _ in tied) else "torque_sign")
    return _diag(
        code, "warning",
        f"{src}the data as recorded (held-out score of a refit with every parameter free "
        f"{rec:.3g}, in-sample {fit_rec:.3g}) or {texts}? Refitted on half of the recording, "
        f"the reading explains the other half better but fits its own half worse: the gain "
        f"is extrapolation into parameters the fitted half leaves undetermined (the data as "
        f"recorded score {rec / max(fit_rec, 1e-300):.3g} x worse held out than in-sample), "
        f"not evidence of a fault; the recording is too short or too little excited to "
        f"decide: record longer (whole periods of the excitation), or check the encoder and "
        f"torque sign conventions of these joints with a motion test", subject)
