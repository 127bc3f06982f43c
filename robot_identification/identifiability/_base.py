"""Base parameters: numerical column selection, grouping matrix, readable expressions."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_identification.errors import ExcitationError
from robot_identification.regressor import regressor

#: Relative residual below which a column counts as a combination of earlier ones
#: (:func:`independent_columns`, :func:`base_parameters_from_matrix`), and relative norm
#: below which a column counts as zero (unidentifiable).
RANK_TOLERANCE = 1e-7
#: Relative residual (distance of a normalised regressor column from the span of the
#: others, on random states) below which :func:`base_parameters` groups a parameter with
#: others. A column this close to the others is not a parameter any data can separate:
#: :func:`check_excitation` refuses data whose columns are within this distance
#: (``tol = DEPENDENCY_TOLERANCE**2`` on the normalised Gram matrix). It comes from
#: rounded geometry: a URDF ``rpy="1.5708 0 0"`` is pi/2 + 3.7e-6 rad and leaves a rotor
#: inertia 4e-6 away from its link's inertia (Kinova Gen3), which the old 1e-7 kept as a
#: base parameter that no excitation can identify. Genuine base parameters of the shipped
#: and tested robots lie 1e-2 or more from the others.
DEPENDENCY_TOLERANCE = 1e-4


def independent_columns(W, tol=RANK_TOLERANCE, order=None, null_tol=None):
    """Greedy, ordered selection of linearly independent columns.

    Walks the columns in ``order`` and keeps a column when its distance from the
    span of the columns kept so far exceeds ``tol`` times its norm (Gram-Schmidt
    with re-orthogonalisation). This is the pivot set of Gauss-Jordan elimination
    (Zollo et al. 2014, Sec. 5; Szabó & Gincsainé 2021, Sec. 4.1, ``rref``), made
    robust to round-off by column normalisation.

    Parameters
    ----------
    W : ndarray, shape (M, P)
        Observation matrix.
    tol : float
        Relative residual threshold.
    order : sequence of int, optional
        Column preference order; default ``range(P)``.
    null_tol : float, optional
        Relative column norm at or below which a column is zero; default ``tol``.

    Returns
    -------
    independent : ndarray of int
        Kept columns, in preference order.
    null : ndarray of int
        Columns whose norm is below ``null_tol`` times the largest column norm.
    """
    W = np.asarray(W, dtype=float)
    null_tol = tol if null_tol is None else null_tol
    norms = np.linalg.norm(W, axis=0)
    scale = norms.max() if norms.size and norms.max() > 0 else 1.0
    null = np.flatnonzero(norms <= null_tol * scale)
    Q = np.zeros((W.shape[0], 0))
    kept = []
    for j in (range(W.shape[1]) if order is None else order):
        if norms[j] <= null_tol * scale:
            continue
        v = W[:, j] / norms[j]
        for _ in range(2):
            v = v - Q @ (Q.T @ v)
        r = np.linalg.norm(v)
        if r > tol:
            Q = np.column_stack([Q, v / r])
            kept.append(j)
    return np.array(kept, dtype=int), null


@dataclass(frozen=True)
class BaseParameters:
    """Base parameters as a selection of standard parameters plus a grouping matrix.

    ``beta = grouping @ pi`` maps standard parameters pi (P,) to base parameters
    beta (p,), and ``W_base = W[:, independent]`` is the base observation matrix with
    ``W @ pi = W_base @ beta`` (De Luca slide 6: a = pi_indep + T pi_dep; Zollo et al.
    2014, eq. 39-41: Pi* = Pi_L + A Pi_K).

    Attributes
    ----------
    standard_names : tuple of str
    independent : ndarray of int, shape (p,)
        Standard parameters whose columns form the base observation matrix.
    grouping : ndarray, shape (p, P)
    categories : tuple of str, shape (P,)
        Per standard parameter: ``unidentifiable`` (null column), ``combination``
        (identifiable only in combination), ``identifiable`` (independently).
    """

    standard_names: tuple
    independent: np.ndarray
    grouping: np.ndarray
    categories: tuple

    @property
    def names(self) -> tuple:
        """Base parameter names: the leading standard parameter of each group."""
        return tuple(self.standard_names[i] for i in self.independent)

    def __len__(self):
        return len(self.independent)

    def base_values(self, pi):
        """Base parameters (p,) of standard parameters ``pi`` (P,)."""
        return self.grouping @ np.asarray(pi, dtype=float)

    def project(self, Y):
        """Base regressor: the independent columns of ``Y`` (..., P) -> (..., p)."""
        return np.take(np.asarray(Y), self.independent, axis=-1)   # 2-3x faster than [..., idx]

    def expressions(self, digits=6) -> list:
        """Readable expression of each base parameter in standard parameters.

        Example: ``'link1.m - 4*link1.Izz + 4*link2.Izz'`` (Zollo et al. 2014, Table 1, pi3*).
        """
        out = []
        for row in self.grouping:
            terms = []
            for j in np.flatnonzero(row):
                c = row[j]
                name = self.standard_names[j]
                mag = abs(c)
                if abs(mag - 1.0) <= 1e-9:     # np.isclose(mag, 1, rtol=1e-9, atol=0), 5x cheaper
                    body = name
                else:
                    body = f"{_fmt(mag, digits)}*{name}"
                sign = "-" if c < 0 else "+"
                terms.append((sign, body))
            s = ("-" if terms[0][0] == "-" else "") + terms[0][1]
            for sign, body in terms[1:]:
                s += f" {sign} {body}"
            out.append(s)
        return out

    def summary(self) -> dict:
        """Counts per category."""
        return {c: self.categories.count(c)
                for c in ("identifiable", "combination", "unidentifiable")}


def _fmt(x, digits):
    r = round(x)
    if r != 0 and abs(x - r) <= 1e-9 * abs(x):
        return str(int(r))
    return f"{x:.{digits}g}"


def base_parameters_from_matrix(W, standard_names, tol=RANK_TOLERANCE, order=None,
                                zero_tol=1e-9, null_tol=None):
    """Base parameters of an observation matrix ``W`` (M, P).

    Parameters
    ----------
    W : ndarray, shape (M, P)
        Stacked regressor of exciting (e.g. random) samples.
    standard_names : sequence of str, length P
    tol : float
        Rank tolerance of :func:`independent_columns`.
    order : sequence of int, optional
        Preference order of the columns (which standard parameters lead a group).
    zero_tol : float
        Grouping coefficients below ``zero_tol`` (relative to the column scales) are 0.
    null_tol : float, optional
        Relative norm of a zero column (:func:`independent_columns`); default ``tol``.

    Returns
    -------
    BaseParameters
    """
    W = np.asarray(W, dtype=float)
    P = W.shape[1]
    if len(standard_names) != P:
        raise ValueError(f"{len(standard_names)} names for {P} columns")
    indep, null = independent_columns(W, tol, order, null_tol)
    dep = np.setdiff1d(np.setdiff1d(np.arange(P), indep), null)
    grouping = np.zeros((len(indep), P))
    grouping[np.arange(len(indep)), indep] = 1.0
    if dep.size:
        norms = np.linalg.norm(W, axis=0)
        # solve with unit-norm columns: column scales differ by many orders of magnitude
        # (e.g. k_m^2 rotor columns vs wrist inertias) and round-off would otherwise leave
        # spurious ~1e-12 coefficients that turn identifiable parameters into combinations
        A, B = W[:, indep] / norms[indep], W[:, dep] / norms[dep]
        Tn, *_ = np.linalg.lstsq(A, B, rcond=None)
        # a column only nearly dependent (residual above round-off, below ``tol``: rounded
        # geometry such as rpy 1.5708) spreads its residual over every column in tiny
        # coefficients; keep only the coefficients of at least ``tol`` and refit on them
        for k in np.flatnonzero(np.linalg.norm(A @ Tn - B, axis=0) > 1e-9):
            keep = np.abs(Tn[:, k]) >= tol
            for _ in range(5):
                Tk = np.zeros(len(indep))
                if keep.any():
                    Tk[keep] = np.linalg.lstsq(A[:, keep], B[:, k], rcond=None)[0]
                if np.array_equal(np.abs(Tk) >= tol, keep):
                    break
                keep = np.abs(Tk) >= tol
            Tn[:, k] = Tk
        # relative size of a coefficient: its contribution to the dependent column
        rel = np.abs(Tn)
        T = Tn * norms[dep][None, :] / norms[indep][:, None]
        T[rel < zero_tol] = 0.0
        grouping[:, dep] = T
    categories = []
    for j in range(P):
        if j in null:
            categories.append("unidentifiable")
        elif j in dep:
            categories.append("combination")
        else:
            row = grouping[list(indep).index(j)]
            categories.append("combination" if np.count_nonzero(row) > 1 else "identifiable")
    return BaseParameters(tuple(standard_names), indep, grouping, tuple(categories))


def random_states(model, n_samples, rng):
    """Random joint states within the model limits, for structural rank analysis.

    Returns a dict of arrays (n_samples, n): q, dq, ddq and, for elastic models,
    theta, dtheta, ddtheta (independent of the link states).
    """
    n = model.n
    lo, hi = np.full(n, -np.pi), np.full(n, np.pi)
    for k, j in enumerate(model.config.joints):
        if j.limits.position is not None:
            lo[k], hi[k] = j.limits.position
    st = {"q": rng.uniform(lo, hi, (n_samples, n)),
          "dq": rng.uniform(-2, 2, (n_samples, n)),
          "ddq": rng.uniform(-5, 5, (n_samples, n))}
    if model.config.elastic:
        st["theta"] = st["q"] + rng.uniform(-0.05, 0.05, (n_samples, n))
        st["dtheta"] = rng.uniform(-2, 2, (n_samples, n))
        st["ddtheta"] = rng.uniform(-5, 5, (n_samples, n))
    return st


def base_parameters(model, n_samples=None, seed=0, tol=DEPENDENCY_TOLERANCE, order=None):
    """Base parameters of a :class:`RobotModel` from random samples.

    The structural rank of the regressor is found on random states within the
    joint limits (numerical alternative to Khalil's symbolic rules; De Luca slide 6:
    "p can be checked numerically").

    Parameters
    ----------
    model : RobotModel
    n_samples : int, optional
        Random samples; default max(200, 4 P / rows).
    seed : int
    tol : float
        Distance of a normalised column from the span of the columns before it below
        which the parameter is grouped with them (:data:`DEPENDENCY_TOLERANCE`); a column
        whose norm is below :data:`RANK_TOLERANCE` times the largest is unidentifiable.
    order : sequence of int, optional
        Column preference order; default the standard parameter order (inertial
        parameters body by body, then drive parameters), which for Zollo's planar arm
        gives the base set of Table 1.

    Returns
    -------
    BaseParameters
    """
    rng = np.random.default_rng(seed)
    rows = model.rows_per_sample
    if n_samples is None:
        n_samples = max(200, 4 * model.n_parameters // rows)
    st = random_states(model, n_samples, rng)
    Y = regressor(model, **st)
    return base_parameters_from_matrix(Y.reshape(-1, model.n_parameters), model.parameter_names,
                                       tol, order, null_tol=min(tol, RANK_TOLERANCE))


def check_excitation(gram, names, tol=DEPENDENCY_TOLERANCE ** 2):
    """Raise :class:`ExcitationError` naming the base parameters the data do not excite.

    Parameters
    ----------
    gram : ndarray, shape (p, p)
        W^T W of the base observation matrix of the data.
    names : sequence of str
        Base parameter names.
    tol : float
        Relative residual (after column normalisation) below which a column counts
        as unexcited or dependent.

    Raises
    ------
    ExcitationError
    """
    d = np.sqrt(np.clip(np.diag(gram), 0, None))
    unexcited = [names[i] for i in np.flatnonzero(d <= 1e-12 * max(d.max(), 1e-300))]
    if unexcited:
        kinds = {str(n).rsplit(".", 1)[-1] for n in unexcited}
        hint = ("the motor positions equal the link positions (theta recorded on the link "
                "side, or rigid-arm data?)" if kinds <= {"stiffness", "damping"}
                else "move those joints")
        raise ExcitationError(f"the data do not excite base parameter(s) {unexcited} "
                              f"(their regressor columns are zero); {hint}")
    Dn = 1.0 / d
    Gn = gram * Dn[:, None] * Dn[None, :]
    # greedy rank test on the normalised Gram matrix via Cholesky residuals
    dependent = []
    kept = []
    for j in range(len(names)):
        idx = kept + [j]
        sub = Gn[np.ix_(idx, idx)]
        if kept:
            a = Gn[np.ix_(kept, kept)]
            b = Gn[kept, j]
            resid = sub[-1, -1] - b @ np.linalg.solve(a, b)
        else:
            resid = sub[-1, -1]
        if resid > tol:
            kept.append(j)
        else:
            dependent.append(names[j])
    if dependent:
        raise ExcitationError(f"the data do not excite base parameter(s) {dependent} "
                              f"independently of the others (rank-deficient observation "
                              f"matrix); use a richer excitation trajectory")
