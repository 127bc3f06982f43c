"""Readings of one recording decided by refitting every parameter (issue #27): a joint's
direction reversed, its torque's sign, two joints' columns swapped, refitted both ways and
compared on held-out data, independent of the URDF's inertial parameters.

For the data as recorded and for each reading (one joint's q, dq, ddq and torque negated; one
joint's torque negated alone; two joints' q, dq, ddq and torque columns exchanged; two joints'
torque columns exchanged), the rigid-body model with every standard parameter free (inertial
parameters, rotor inertia and the config's friction columns; :func:`rigid_regressor`) is fitted
by least squares on alternating blocks of the recording and scored on the others (both ways),
each joint's rows weighted by 1 / its torque's std. Rows within the low-pass filter's settling
time (0.6 / f_c) of a velocity reversal of that joint are left out: the zero-phase filter spreads
the Coulomb step there and no parameter set fits it. The score is sum_k e_k^2 of the held-out
normalised residuals.

A free fit is a relaxation of the physically consistent one (its residual is never above the
constrained fit's on the fitted half): a reading that the free fit explains clearly worse than
another cannot be rescued by constraints, and a reading the data can only tell apart through
the URDF's inertial values (a symmetry: the reversed arm is a mirrored arm with other inertial
parameters) ties here. Such a tie is said (``direction_undetermined``) instead of guessed.
"""
from __future__ import annotations

import numpy as np

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
    for k in range(dq.shape[1]):
        for i in np.flatnonzero(np.diff(np.sign(dq[:, k])) != 0):
            keep[max(0, i - win): i + win + 2, k] = False
    return keep


def _score(Y, tau, keep):
    """Held-out score sum_k e_k^2 of the free least-squares fit tau ~ Y pi (Y (N, n, P))."""
    N, n, P = Y.shape
    w = 1.0 / np.maximum(np.std(tau, axis=0), 1e-12)
    A = (Y * w[None, :, None]).reshape(N * n, P)
    b = (tau * w).reshape(N * n)
    rows = keep.reshape(-1)
    half = (np.arange(N) * BLOCKS // max(N, 1)) % 2 == 1
    res, cnt = np.zeros(n), np.zeros(n)
    for test in (half, ~half):
        fit = np.repeat(~test, n) & rows
        if fit.sum() < P:
            return np.nan
        coef = np.linalg.lstsq(A[fit], b[fit], rcond=1e-10)[0]
        r = (b - A @ coef).reshape(N, n)
        m = keep & test[:, None]
        res += np.sum(np.where(m, r, 0.0) ** 2, axis=0)
        cnt += m.sum(axis=0)
    return float(np.sum(res / np.maximum(cnt, 1)))


def free_readings(model, st, live=None):
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

    Returns
    -------
    (float, list of (float, str, tuple of int))
        The recorded score and, sorted by score, (score, kind, joints) with kind one of
        ``direction``, ``torque sign``, ``columns swapped``, ``torque columns swapped``;
        None where the recording is too short for the free fit.
    """
    q, dq, ddq, tau = st["q"], st["dq"], st["ddq"], st["tau"]
    N, n = q.shape
    live = np.ones(n, dtype=bool) if live is None else np.asarray(live, dtype=bool)
    dt = st["dt"] * max(1.0, float(np.median(np.diff(st["idx"]))))
    keep = _kept_rows(dq, dt, st["fc"]) & live[None, :]
    Y0 = rigid_regressor(model, q, dq, ddq)
    if keep.sum() < 2 * Y0.shape[2]:
        return None
    rec = _score(Y0, tau, keep)
    out = []
    for k in range(n):
        if not live[k]:
            continue
        s = np.ones(n)
        s[k] = -1.0
        out.append((_score(rigid_regressor(model, q * s, dq * s, ddq * s), tau * s,
                           _kept_rows(dq * s, dt, st["fc"]) & live[None, :]),
                    "direction", (k,)))
        out.append((_score(Y0, tau * s, keep), "torque sign", (k,)))
    for k in range(n):
        for m in range(k + 1, n):
            if not (live[k] and live[m]):
                continue
            p = np.arange(n)
            p[[k, m]] = p[[m, k]]
            out.append((_score(rigid_regressor(model, q[:, p], dq[:, p], ddq[:, p]),
                               tau[:, p], keep[:, p]), "columns swapped", (k, m)))
            out.append((_score(Y0, tau[:, p], keep), "torque columns swapped", (k, m)))
    out = [r for r in out if np.isfinite(r[0])]
    out.sort(key=lambda r: r[0])
    if not np.isfinite(rec) or min([rec] + [r[0] for r in out]) > FREE_EXPLAINED * live.sum():
        return None
    return rec, out
