"""Physically consistent standard parameters from a base-parameter least-squares problem.

Default (``prior='bregman'``): the geometric identification of Lee, Wensing & Park (2020,
"Geometric robot dynamic identification: a convex programming approach", IEEE T-RO 36(2),
eq. 22-27): the data term below plus gamma * sum_k D(J_k || J0_k), the log-det (Bregman)
divergence of each body's pseudo-inertia from the nominal one,

    D(J || J0) = -log det(J0^-1 J) + tr(J0^-1 J) - 4     (>= 0, = 0 iff J = J0),

which is convex in J, invariant to the choice of body frame and infinite on the boundary
of the physically consistent set: every body ends strictly inside (strict triangle
inequalities, positive mass) and no longer on the LMI margin, and directions the data do
not determine are pulled toward the URDF/CAD body instead of a degenerate one (line or
point masses). Drive parameters keep the Gaussian prior below; stiffness, damping, rotor
inertia, viscous and Coulomb friction are >= 0.

The problem is solved in two stages. Stage 1 minimises data term + prior, scaled to O(1)
for the conic solver; with nearly noise-free data the data term is ~1e12 times the prior,
which then falls below the solver's tolerance everywhere -- also in the null space of K,
where nothing else decides (a body turning about the gravity axis ended at 400x its URDF
mass). The scale (the whole signal's chi-square over p) also leaves the conic solver's
relative tolerance, ~1e-8, at chi-square increases of ~1e5 in the directions of small links:
when the cost reached is far below the scale, stage 1 is solved again with the objective
scaled by that cost (at most 1e6 finer) and kept where the solver reaches its tolerances
(a simulated UR10e's wrist_3, held-out torque NRMSE 0.246 -> 0.025 at prior weight 1).
Stage 2 minimises the prior alone over the standard parameters whose base
parameters equal stage 1's (K pi = K pi_1) under the same constraints: the lexicographic
optimum "best fit, then closest to the prior". If stage 2 fails, stage 1 is kept and the
status says ``(null space unrefined)`` (diagnostic ``null_space_unrefined``).

``prior='gaussian'`` is the earlier formulation only:

Semidefinite program (Wensing, Kim & Slotine 2018, "Linear matrix inequalities for
physically consistent inertial parameter identification", IEEE RA-L 3(1), eq. 8-12;
Sousa & Cortesão 2014 for the LMI-constrained least squares):

    minimise   || R (K pi - beta_ls) ||^2 + sum_i ((pi_i - pi0_i) / s_i)^2
    subject to J(pi_k) - eps * 1 >= 0            (pseudo-inertia, per body)
               rotor inertia, f_v, f_c >= 0      (per joint)

with K the base grouping matrix (beta = K pi), beta_ls the unconstrained (O/W)LS
estimate and R the triangular factor of the information matrix W^T S^-1 W: the
observation matrix is *compressed* to p x p before the SDP (its QR factor equals the
Cholesky factor of the Gram matrix up to row signs, so ||W beta - y||^2 =
||R (beta - beta_ls)||^2 + const). The second term is a weak Gaussian prior around
the nominal (URDF) parameters pi0 with standard deviations s (by default 100 % of the
nominal mass, mass * 0.3 m for first moments, mass * (0.3 m)^2 for inertias): it
only selects a point in the null space of K, where the data carry no information.

The pseudo-inertia of a body with mass m, first moment h = m c and inertia I about
the frame origin is J = [[tr(I)/2 * 1 - I, h], [h^T, m]]; J >= 0 is equivalent to a
positive mass with an inertia satisfying the triangle inequalities for a mass
distribution (Wensing et al. 2018, Theorem 1).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from robot_identification.errors import DataError, IdentificationError

#: Characteristic length [m] of the default prior scales of first moments / inertias.
PRIOR_LENGTH = 0.3


@dataclass
class PhysicalEstimate:
    """Physically consistent estimate.

    Attributes
    ----------
    standard : ndarray (P,)
        Standard parameters (``model.parameter_names`` order).
    base : ndarray (p,)
        Their base parameters ``K @ standard``.
    min_eigenvalues : ndarray (n,)
        Smallest eigenvalue of each body's pseudo-inertia [kg*m^2 | kg].
    cost_increase : float
        Relative increase of the weighted residual sum of squares over the
        unconstrained estimate (0: the LS estimate was already consistent).
    status : str
        Solver status.
    prior_distance : ndarray (n,)
        Log-det divergence D(J_k || J0_k) of each body from its nominal pseudo-inertia
        [-] (module docstring; 0: the nominal body).
    on_bound : list of int
        Bodies whose smallest pseudo-inertia eigenvalue is within 1 % of ``epsilon``
        (degenerate: a line or point mass), and drive parameters at 0 are not included.
    epsilon : ndarray (n,)
        LMI margin used per body [kg*m^2 | kg] (:func:`body_margins`).
    prior : str
        ``bregman`` or ``gaussian``.
    """

    standard: np.ndarray
    base: np.ndarray
    min_eigenvalues: np.ndarray
    cost_increase: float
    status: str
    prior_distance: np.ndarray = None
    on_bound: list = None
    epsilon: np.ndarray | float = 1e-6
    prior: str = "bregman"


def pseudo_inertia(pi10):
    """Pseudo-inertia matrix J (4, 4) of standard parameters
    ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (Wensing et al. 2018, eq. 4)."""
    m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz = np.asarray(pi10, dtype=float)
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    sigma = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J = np.zeros((4, 4))
    J[:3, :3] = sigma
    J[:3, 3] = J[3, :3] = (hx, hy, hz)
    J[3, 3] = m
    return J


def nominal_pseudo_inertias(model, nominal=None, floor=1e-3):
    """Positive definite nominal pseudo-inertias J0_k (n, 4, 4).

    A nominal body that is not strictly physical (e.g. a URDF link with zero mass or
    inertia) is replaced by J0 + delta * 1 with delta = ``floor`` x its largest eigenvalue
    (at least 1e-6): the log-det divergence needs J0 > 0.
    """
    pi0 = model.nominal_parameters() if nominal is None else np.asarray(nominal, dtype=float)
    out = np.empty((model.n, 4, 4))
    for k in range(model.n):
        J0 = pseudo_inertia(pi0[10 * k: 10 * k + 10])
        ev = np.linalg.eigvalsh(J0)
        delta = max(floor * max(ev[-1], 0.0), 1e-6)
        if ev[0] < delta:
            J0 = J0 + (delta - min(ev[0], 0.0)) * np.eye(4)
        out[k] = J0
    return out


#: A body's LMI margin is at most this fraction of its nominal pseudo-inertia's smallest
#: eigenvalue (:func:`body_margins`).
MARGIN_FRACTION = 1e-2


def body_margins(J0, epsilon=1e-6):
    """LMI margin per body: min(``epsilon``, :data:`MARGIN_FRACTION` x the smallest
    eigenvalue of its nominal pseudo-inertia J0_k).

    A fixed margin of 1e-6 kg*m^2 is larger than the bodies of a micro arm (10-30 g links,
    centimetres: smallest eigenvalues 1e-5 to 3e-5): the LMI J_k >= 1e-6 * 1 then forces
    masses of 8 x the URDF's onto noise-free data. Bodies of arm size (smallest nominal
    eigenvalue >= 1e-4, all shipped robots) keep ``epsilon``.

    Parameters
    ----------
    J0 : ndarray (n, 4, 4)
        Positive definite nominal pseudo-inertias (:func:`nominal_pseudo_inertias`).
    epsilon : float
        The largest margin [kg*m^2 | kg].

    Returns
    -------
    ndarray (n,)
    """
    low = np.array([np.linalg.eigvalsh(J)[0] for J in J0])
    return np.minimum(epsilon, MARGIN_FRACTION * low)


def log_det_divergence(J, J0):
    """D(J || J0) = -log det(J0^-1 J) + tr(J0^-1 J) - 4 (Lee, Wensing & Park 2020, eq. 22);
    inf when J is not positive definite."""
    M = np.linalg.solve(J0, J)
    sign, logdet = np.linalg.slogdet(M)
    if sign <= 0:
        return float("inf")
    return float(-logdet + np.trace(M) - 4.0)


def _pseudo_basis():
    """Matrices A_i (10, 4, 4) with J = sum_i pi_i A_i."""
    return np.stack([pseudo_inertia(e) for e in np.eye(10)])


def default_prior_scales(model, nominal=None):
    """Prior standard deviations s (P,) around the nominal parameters (module docstring)."""
    pi0 = model.nominal_parameters() if nominal is None else np.asarray(nominal)
    s = np.empty(model.n_parameters)
    for i, kind in enumerate(model.layout.kinds):
        if kind == "inertial":
            k = model.layout.joints[i]
            mass = max(abs(pi0[10 * k]), 0.1)
            which = i - 10 * k
            s[i] = mass * (1.0 if which == 0 else PRIOR_LENGTH if which < 4
                           else PRIOR_LENGTH ** 2)
        elif kind == "rotor_inertia":
            s[i] = 1.0
        elif kind in ("viscous", "coulomb", "coulomb_load", "stiction", "stribeck", "stiffness",
                      "damping"):
            s[i] = 10.0 * max(1.0, abs(pi0[i]))
        else:
            s[i] = 1.0
    return s


#: Stage 1 of :func:`physically_consistent` is solved again, with its objective scaled by
#: the data cost it reached (but at most RESCALE_STEP x finer than the first scale), when
#: its first scale exceeds RESCALE_SCALE (the conic solver's tolerances, ~1e-8 relative,
#: then hide chi-square increases above ~0.1 in the directions of small links; below it the
#: second solve changed nothing that predicts: the real UR10e's and a 30 dB puma560
#: Monte-Carlo run's scales are 1e6-2e6) and the cost reached is below RESCALE_BELOW x
#: that scale.
RESCALE_SCALE, RESCALE_BELOW, RESCALE_STEP = 1e7, 1e-3, 1e-6


def physically_consistent(model, base, information, beta_ls, *, nominal=None,
                          prior_scales=None, epsilon=1e-6,
                          nonnegative=("rotor_inertia", "viscous", "coulomb", "coulomb_load",
                                       "stiffness", "damping"),
                          solver="CLARABEL", prior="bregman",
                          weight=1.0, refine=True, fallback=True) -> PhysicalEstimate:
    """Physically consistent standard parameters closest (in the data metric) to a LS fit.

    Parameters
    ----------
    model : RobotModel
    base : BaseParameters
    information : ndarray (p, p)
        W^T S^-1 W of the estimate (``Gram`` for OLS scaled by 1/sigma^2, or the WLS
        weighted Gram); only its shape matters up to a scalar for the data term, but
        its scale sets the strength of the prior.
    beta_ls : ndarray (p,)
        Unconstrained base-parameter estimate.
    nominal : ndarray (P,), optional
        Prior mean; default ``model.nominal_parameters()``.
    prior_scales : ndarray (P,), optional
        Prior standard deviations; default :func:`default_prior_scales`.
    epsilon : float
        Margin of the pseudo-inertia LMIs [kg*m^2 | kg], at most; a body whose nominal
        pseudo-inertia is smaller gets a smaller one (:func:`body_margins`).
    nonnegative : tuple of str
        Drive parameter kinds constrained to be >= 0.
    prior : {'bregman', 'gaussian'}
        Regulariser of the inertial parameters: the log-det divergence toward the nominal
        pseudo-inertias (Lee, Wensing & Park 2020) or the Gaussian prior with
        ``prior_scales`` (Wensing, Kim & Slotine 2018 with a weak prior).
    weight : float
        gamma, the weight of the log-det divergence, in units of the data term (which is a
        chi-square when ``information`` is W^T S^-1 W): 1.0 makes doubling a body's
        pseudo-inertia cost as much as moving the fit by ~1.1 standard deviations, so the
        prior decides only where the data carry (almost) no information.
    refine : bool
        Run the second, prior-only solve over the null space of K (module docstring);
        False keeps the first solve's standard parameters (their base parameters, all a
        prediction needs, are the same): for cross-validation.
    fallback : bool
        Where ``solver`` fails, solve with SCS (its first-order iterations: up to 100000,
        ~10 s on a 7-joint arm); False: the failure is raised (cross-validation drops the
        candidate: on noise-free simulated arms these fallbacks made ``estimator: auto``
        take 32 s instead of 3 s).

    Returns
    -------
    PhysicalEstimate

    Raises
    ------
    DataError
        Shapes do not match the base parameters.
    IdentificationError
        The SDP solver fails.
    """
    import cvxpy as cp  # cvxpy: ~1 s, physical only

    G = np.asarray(information, dtype=float)
    b = np.asarray(beta_ls, dtype=float)
    p = len(base)
    if G.shape != (p, p) or b.shape != (p,):
        raise DataError(f"information {G.shape} / estimate {b.shape} do not match the "
                        f"{p} base parameters")
    pi0 = model.nominal_parameters() if nominal is None else np.asarray(nominal, dtype=float)
    s = default_prior_scales(model, pi0) if prior_scales is None else np.asarray(prior_scales)
    # compression: R^T R = G (scaled Cholesky, robust to badly scaled columns)
    d = np.sqrt(np.maximum(np.diag(G), 1e-300))
    Gs = G / np.outer(d, d)
    L = np.linalg.cholesky(Gs + 1e-12 * np.eye(p))
    R = L.T * d[None, :]
    K = base.grouping
    P = model.n_parameters
    if prior not in ("bregman", "gaussian"):
        raise DataError(f"prior must be 'bregman' or 'gaussian', not {prior!r}")
    inertial = np.array([k == "inertial" for k in model.layout.kinds])
    keep = np.ones(P, dtype=bool) if prior == "gaussian" else ~inertial
    keep &= np.isfinite(s)
    A = _pseudo_basis()
    J0 = nominal_pseudo_inertias(model, pi0)
    margins = body_margins(J0, epsilon)

    def constraints_and_prior(x):
        """LMIs, sign constraints and the prior term of the standard parameters ``x``."""
        cons, reg = [], 0.0
        if keep.any():
            idx = np.flatnonzero(keep)
            reg = cp.sum_squares(cp.multiply(1.0 / s[idx], x[idx] - pi0[idx]))
        for k in range(model.n):
            J = sum(x[10 * k + i] * A[i] for i in range(10))
            cons.append(J - margins[k] * np.eye(4) >> 0)
            if prior == "bregman":
                J0inv = np.linalg.inv(J0[k])
                reg = reg + weight * (-cp.log_det(J) + cp.trace(J0inv @ J)
                                      - np.linalg.slogdet(J0inv)[1] - 4.0)
        for i, kind in enumerate(model.layout.kinds):
            if kind in nonnegative:
                cons.append(x[i] >= 0)
        return cons, reg

    x = cp.Variable(P)
    data = cp.sum_squares(R @ (K @ x) - R @ b)
    cons, reg = constraints_and_prior(x)
    # the same minimiser, scaled to O(1) for the conic solver (the information matrix of
    # nearly noise-free data makes the data term ~1e12 beside log-det terms ~1)
    scale = max(1.0, float(np.sum((R @ b) ** 2)) / max(p, 1))
    status = _solve(cp.Problem(cp.Minimize((data + reg) / scale), cons), x, solver,
                    "physical-consistency SDP", fallback)
    got = float(np.sum((R @ (K @ np.asarray(x.value, dtype=float) - b)) ** 2))
    if scale > RESCALE_SCALE and got < RESCALE_BELOW * scale:
        # the cost reached is below what the solver resolves at this scale (its tolerances
        # are relative to an O(1) objective): parameters of small links, whose columns
        # carry little of the signal, were left anywhere within it - e.g. a simulated
        # UR10e's wrist_3 load-dependent Coulomb coefficient 36.5 against 0.004 +- 0.045
        # by WLS, which is itself feasible there. Solved again with the objective scaled
        # by the cost reached, at most RESCALE_STEP finer (issue #27: held-out wrist_3
        # NRMSE 0.246 -> 0.025 at weight 1), kept where the solver reaches its tolerances
        # (noise-free data of a 10-30 g arm: cost 1e-9 of the scale, the unscaled
        # objective left Clarabel 'optimal_inaccurate' and a body on its LMI margin).
        first = np.array(x.value, dtype=float)
        rescaled = max(1.0, got, RESCALE_STEP * scale)
        try:
            again = _solve(cp.Problem(cp.Minimize((data + reg) / rescaled), cons), x,
                           solver, "physical-consistency SDP (rescaled)", fallback)
        except IdentificationError:       # both solvers failed there: the first solve stands
            again = "failed"
        if again == "optimal":
            status = again
        else:
            x.value = first
    refined = False
    if refine and (prior == "bregman" or keep.any()):
        # Stage 2, the null space of K: after the scaling above the prior is below the
        # solver's tolerance wherever the data are informative, and so it is also lost
        # in the directions the data do not see at all (e.g. the mass of a body that
        # only rotates about the gravity axis ended at 383x its URDF value). With the base
        # parameters held at the stage-1 values, the prior alone picks the standard
        # parameters among those that fit the data equally well.
        x2 = cp.Variable(P)
        cons2, reg2 = constraints_and_prior(x2)
        beta1 = K @ np.asarray(x.value, dtype=float)
        try:
            status2 = _solve(cp.Problem(cp.Minimize(reg2), cons2 + [K @ x2 == beta1]), x2,
                             solver, "null-space refinement")
            if status2 != "optimal":
                status += f" (null space {status2})"
            refined = True
            x = x2
        except IdentificationError:
            pass          # keep stage 1 (still consistent, the null space unregularised)
    pi = np.asarray(x.value, dtype=float)
    beta = K @ pi
    r_opt = R @ (beta - b)
    ref = max(float(b @ G @ b), 1e-300)
    Js = [pseudo_inertia(pi[10 * k: 10 * k + 10]) for k in range(model.n)]
    eig = np.array([np.linalg.eigvalsh(J)[0] for J in Js])
    dist = np.array([log_det_divergence(J, J0[k]) for k, J in enumerate(Js)])
    return PhysicalEstimate(standard=pi, base=beta, min_eigenvalues=eig,
                            cost_increase=float(r_opt @ r_opt) / ref,
                            status=status + ("" if refined or not refine
                                             else " (null space unrefined)"),
                            prior_distance=dist,
                            on_bound=[k for k in range(model.n)
                                      if eig[k] <= 1.01 * margins[k]],
                            epsilon=margins, prior=prior)


def _solve(problem, x, solver, what, fallback=True):
    """Solve with the interior-point ``solver``, then (``fallback``) SCS; returns the solver
    status.

    An ``optimal_inaccurate`` status is returned, not printed: cvxpy's UserWarning about it
    is silenced here and the status becomes the ``solver_inaccurate`` diagnostic
    (:func:`robot_identification.diagnostics.physical_diagnostics`).
    A solver that panics (clarabel on a problem with overflowing numbers) counts as a failed
    attempt. Raises IdentificationError when neither finds an (inaccurate) optimum."""

    import cvxpy as cp  # cvxpy: ~1 s, physical only
    errors = []
    for name in dict.fromkeys((solver, "SCS") if fallback else (solver,)):
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                        category=UserWarning)
                problem.solve(solver=name)
        except (cp.error.SolverError, cp.error.DCPError) as exc:
            errors.append(f"{name}: {exc}")
            continue
        except BaseException as exc:  # noqa: B036 - a Rust solver's panic (pyo3 PanicException
            if type(exc).__name__ != "PanicException":  # derives from BaseException)
                raise
            errors.append(f"{name}: the solver crashed ({' '.join(str(exc).split())})")
            continue
        if x.value is not None and problem.status in ("optimal", "optimal_inaccurate"):
            return problem.status
        errors.append(f"{name}: status {problem.status}")
    raise IdentificationError(f"{what} failed: " + "; ".join(errors))
