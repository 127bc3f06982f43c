"""Box constraints on base parameters and batch bounded least squares.

Source: Lomakin & Deutscher, Sec. VI, eq. (54): bounds on the standard parameters are
transferred to the base parameters "by set arithmetic" (interval arithmetic on the linear
regrouping beta = G pi, seed notes Sec. 1.5), then enforced in MRLS (clipping) or, here, in
a batch bounded least-squares problem solved with scipy.optimize.lsq_linear.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.optimize

from robot_identification.errors import DataError


def _check_bounds(lower, upper, size, what, names=None):
    """Bounds as float arrays (size,); DataError on a wrong length or lower > upper."""
    lo = np.asarray(lower, dtype=float)
    hi = np.asarray(upper, dtype=float)
    if lo.shape != (size,) or hi.shape != (size,):
        raise DataError(f"bounds must have {size} values ({what}), got {lo.shape} and "
                        f"{hi.shape}")
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        nm = [names[i] for i in bad] if names is not None else list(bad)
        raise DataError(f"lower bound above upper bound for {nm}")
    return lo, hi


def base_bounds(grouping, lower, upper, names=None):
    """Interval bounds of beta = grouping @ pi for pi in the box [lower, upper].

    Parameters
    ----------
    grouping : ndarray (p, P)
        Regrouping matrix of :class:`BaseParameters` (``base.grouping``).
    lower, upper : array_like (P,)
        Bounds on the standard parameters (+-inf allowed).
    names : list of str, optional
        Standard parameter names, for messages.

    Returns
    -------
    lo, hi : ndarray (p,)
        Tightest box containing {grouping @ pi : lower <= pi <= upper} (exact for a linear
        map: lo_i = sum_j min(c_ij l_j, c_ij u_j)).

    Raises
    ------
    DataError
        Shape mismatch or lower > upper.
    """
    G = np.asarray(grouping, dtype=float)
    lo, hi = _check_bounds(lower, upper, G.shape[1], "standard parameters", names)
    with np.errstate(invalid="ignore"):
        a = np.where(G != 0, G * lo[None, :], 0.0)
        b = np.where(G != 0, G * hi[None, :], 0.0)
    return np.minimum(a, b).sum(axis=1), np.maximum(a, b).sum(axis=1)


def standard_bounds(model, nominal=None, mass_range=(0.5, 2.0), first_moment=None,
                    inertia_range=(0.0, 3.0), drive_range=(0.0, 3.0)):
    """Simple physically motivated box on the standard parameters of ``model``.

    Masses in [mass_range[0] m0, mass_range[1] m0]; first moments |m c| <= m_max * r_max
    with r_max from ``first_moment`` [m] (default: the nominal |c| * 2 + 0.05 m); diagonal
    inertias in [0, inertia_range[1] * nominal + 1e-3]; products of inertia bounded by the
    largest diagonal bound; drive parameters (rotor inertia, friction) in
    [0, drive_range[1] * nominal] (offsets ``fo`` and signed terms unbounded).

    Parameters
    ----------
    model : RobotModel
    nominal : ndarray (P,), optional
        Default ``model.nominal_parameters()``.

    Returns
    -------
    lower, upper : ndarray (P,)
    """
    pi = model.nominal_parameters() if nominal is None else np.asarray(nominal, dtype=float)
    names = model.parameter_names
    lo = np.full(len(names), -np.inf)
    hi = np.full(len(names), np.inf)
    by_link = {}
    for i, nm in enumerate(names):
        link, key = nm.rsplit(".", 1)
        by_link.setdefault(link, {})[key] = i
    for link, keys in by_link.items():
        if "m" in keys:
            m = pi[keys["m"]]
            mmax = mass_range[1] * m
            lo[keys["m"]], hi[keys["m"]] = mass_range[0] * m, mmax
            c = np.array([pi[keys[k]] for k in ("mx", "my", "mz")]) / m if m > 0 else np.zeros(3)
            r = first_moment if first_moment is not None else 2 * np.linalg.norm(c) + 0.05
            for k in ("mx", "my", "mz"):
                lo[keys[k]], hi[keys[k]] = -mmax * r, mmax * r
            dmax = max(inertia_range[1] * max(pi[keys[k]] for k in ("Ixx", "Iyy", "Izz")) + 1e-3,
                       mmax * r * r)
            for k in ("Ixx", "Iyy", "Izz"):
                lo[keys[k]], hi[keys[k]] = 0.0, dmax
            for k in ("Ixy", "Ixz", "Iyz"):
                lo[keys[k]], hi[keys[k]] = -dmax, dmax
        else:
            for key, i in keys.items():
                if key in ("rotor_inertia", "stiffness", "damping", "viscous", "coulomb",
                           "coulomb_load", "stiction"):
                    lo[i], hi[i] = 0.0, drive_range[1] * max(abs(pi[i]), 1e-3)
    return lo, hi


def bounded_ls(neq, lower, upper, names=None):
    """Batch least squares with box constraints on the (base) parameters.

    Minimises |W x - y|^2 subject to lower <= x <= upper using only the accumulated normal
    equations (so it works on streamed data): with G = W^T W = R^T R (Cholesky of the
    column-scaled Gram matrix, eigen-square-root when singular) the problem equals
    min |R x - R^-T W^T y|^2, solved by scipy.optimize.lsq_linear (BVLS/TRF).

    Parameters
    ----------
    neq : NormalEquations
    lower, upper : array_like (p,)
    names : list of str, optional

    Returns
    -------
    x : ndarray (p,)
    active : ndarray of bool (p,)
        Parameters at a bound.

    Raises
    ------
    DataError
        Shape mismatch, lower > upper, or an empty system.
    """
    G = neq.gram
    b = neq.b.sum(axis=0)
    p = G.shape[0]
    lo, hi = _check_bounds(lower, upper, p, "base parameters", names)
    if not np.any(np.diag(G) > 0):
        raise DataError("bounded least squares on an empty system")
    d = np.sqrt(np.where(np.diag(G) > 0, np.diag(G), 1.0))
    Gs = G / np.outer(d, d)
    bs = b / d
    w, V = scipy.linalg.eigh(Gs)
    keep = w > w.max() * 1e-14
    R = (V[:, keep] * np.sqrt(w[keep])).T          # Gs = R^T R
    z = (V[:, keep].T @ bs) / np.sqrt(w[keep])     # R^-T bs in the kept subspace
    res = scipy.optimize.lsq_linear(R, z, bounds=(lo * d, hi * d), method="bvls",
                                    tol=1e-12, lsmr_tol=None)
    x = res.x / d
    span = np.maximum(np.abs(hi - lo), 1.0)
    active = (np.abs(x - lo) <= 1e-9 * span) | (np.abs(hi - x) <= 1e-9 * span)
    return x, active
