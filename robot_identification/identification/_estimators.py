"""Estimator registry: name -> function(EstimationContext) -> Estimate (with covariance).

=========  =====================================================================  ==========
name       estimate                                                               source
=========  =====================================================================  ==========
ols        (W^T W)^-1 W^T y, covariance sigma^2 (W^T W)^-1                        Zollo eq. 38
wls        one noise variance per row group (joint), covariance = Cramér-Rao      Szabó eq. 19
irls       Huber M-estimate by iteratively reweighted LS (outlier-robust),        Huber 1981
           weights per row, per-group scale by Huber's proposal 2; one pass over
           the recordings per iteration
mrls       modified inverse of the summed normal equations with identifiability   Lomakin &
           flags (1 identified, 0 not excited, -1 dependent); unidentified        Deutscher
           parameters keep the prior's value and have unknown (NaN) std           Fig. 1
bounded    box-constrained LS; the box on standard parameters around the prior    Lomakin &
           (:func:`standard_bounds`) transferred to base parameters               Deutscher
           (:func:`base_bounds`), or ``options['bounds']``                        eq. 54
physical   pseudo-inertia LMIs (cvxpy + Clarabel) started from WLS, regularised   Wensing
           by the prior (none: no prior term); covariance: the WLS one            et al. 2018
iv         instrumental variables, instruments = regressor of the closed loop     Janot et al.
           simulated with the previous estimate (IDIM-IV), started from WLS;      2014, eq.
           rigid arms, recordings that carry their reference and PD gains         24, 27
=========  =====================================================================  ==========
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats

from robot_identification.choices import ESTIMATORS as ESTIMATOR_NAMES
from robot_identification.diagnostics import Diagnostic, check_prior_bodies, physical_diagnostics
from robot_identification.errors import ConfigError, DataError, IdentificationError
from robot_identification.estimation import (
    MRLS, Estimate, base_bounds, bounded_ls, condition_number, ols, physically_consistent,
    solve_gram, standard_bounds, wls)
from robot_identification.identification._iv import (
    IV_DIVERGENCE, IV_MAX_ITERATIONS, IV_RESIDUAL_TOLERANCE, IV_TOLERANCE, ClosedLoopInstruments)


@dataclass
class EstimationContext:
    """What an estimator may use: the summed normal equations, the base parameters, the
    settings, the prior (standard parameters or None), a re-accumulation callback for
    estimators that need another pass over the data, options, and a cache of results."""

    model: object
    base: object
    neq: object
    settings: object
    prior: np.ndarray | None
    reaccumulate: object = None
    options: dict = None
    log: object = None

    def __post_init__(self):
        self.cache = {}
        self.options = self.options or {}
        self.diagnostics = []

    def wls(self):
        if "wls" not in self.cache:
            est = self.cache["wls"] = wls(self.neq)
            if not est.details.get("wls_converged", True):
                self.diagnostics.append(Diagnostic(
                    "wls_not_converged", "warning",
                    f"WLS: the joints' noise variances did not settle within "
                    f"{est.details.get('wls_iterations')} re-weightings (a variance still "
                    f"moved by more than 1e-6 of itself): the weights, hence the estimate "
                    f"and its standard deviations, depend on where the iteration stopped; "
                    f"compare with ols", "wls"))
        return self.cache["wls"]

    def prior_base(self):
        """Base parameters of the prior (zeros without one)."""
        if self.prior is None:
            return np.zeros(len(self.base))
        return self.base.base_values(self.prior)


def estimate_from(neq, x, cov_unscaled, method, flags=None, details=None):
    """:class:`Estimate` of values ``x`` with covariance ``cov_unscaled * s^2`` (s^2 the
    residual variance of ``x``); parameters with ``flags != 1`` get NaN (unknown) std."""
    M = int(neq.count.sum())
    p = len(x)
    s2 = neq.residual_sums(x).sum() / max(M - p, 1)
    cov = np.array(cov_unscaled, dtype=float) * s2
    if flags is not None:      # not identified -> unknown (NaN) uncertainty, not zero
        bad = np.asarray(flags) != 1
        cov[bad, :] = np.nan
        cov[:, bad] = np.nan
    with np.errstate(invalid="ignore"):
        std = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * std / np.abs(x)
    rms = np.sqrt(neq.residual_sums(x) / np.maximum(neq.count, 1))
    return Estimate(values=np.asarray(x, dtype=float), covariance=cov, std=std,
                    relative_std=rel, residual_rms=rms, sigma2=np.full(neq.groups, s2),
                    condition_number=condition_number(neq.gram), method=method, n_rows=M,
                    weights=np.ones(neq.groups), details=dict(details or {}))


def _ols(ctx):
    return ols(ctx.neq)


def _wls(ctx):
    return ctx.wls()


def huber_consistency(c):
    """E[psi_c(Z)^2] for Z ~ N(0, 1): the constant of Huber's proposal-2 scale."""
    phi, Phi = scipy.stats.norm.pdf(c), scipy.stats.norm.cdf(c)
    return float((2 * Phi - 1) - 2 * c * phi + 2 * c * c * (1 - Phi))


#: IRLS stops when no parameter moves by more than this fraction of max(|value|, WLS std).
IRLS_TOLERANCE = 1e-6


def _irls(ctx):
    if ctx.reaccumulate is None:
        raise ConfigError("estimator 'irls' needs the recordings for its reweighted passes "
                          "(use identify(), not solve() on summed equations)")
    s = ctx.settings
    c = float(s.huber_threshold)
    kappa = huber_consistency(c)
    start = ctx.wls()
    beta, sigma = start.values.copy(), np.sqrt(start.sigma2)
    p, groups = len(beta), ctx.neq.groups
    it, change = 0, np.inf
    for it in range(1, int(s.irls_iterations) + 1):
        neq_w = ctx.reaccumulate(HuberWeights(beta, sigma, c))
        w = 1.0 / sigma ** 2
        Gw = np.einsum("j,jik->ik", w, neq_w.G)
        new, inv = solve_gram(Gw, w @ neq_w.b)
        dof = np.maximum(neq_w.count - p / groups, 1.0)
        sigma = np.sqrt(np.maximum(neq_w.scale_sums / (kappa * dof), 1e-30))
        # change relative to the parameter or its standard deviation, whichever is larger
        change = np.max(np.abs(new - beta) / np.maximum(np.abs(new), start.std + 1e-300))
        beta = new
        if ctx.log:
            ctx.log(f"irls pass {it}: relative change {change:.3g}")
        if change < IRLS_TOLERANCE:
            break
    est = estimate_from(ctx.neq, beta, np.zeros((p, p)), "irls",
                        details={"iterations": it, "converged": bool(change < IRLS_TOLERANCE),
                                 "huber_threshold": c,
                                 "sigma": [float(v) for v in sigma]})
    cov = inv                     # (sum_j W_j^T diag(w) W_j / sigma_j^2)^-1
    est.covariance = cov
    est.std = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        est.relative_std = 100.0 * est.std / np.abs(beta)
    est.sigma2 = sigma ** 2
    est.weights = 1.0 / sigma ** 2
    return est


def _bounds(ctx):
    if "bounds" in ctx.options and ctx.options["bounds"] is not None:
        lo, hi = (np.asarray(b, dtype=float) for b in ctx.options["bounds"])
        p = len(ctx.base)
        if lo.shape != (p,) or hi.shape != (p,):
            raise DataError(f"bounds must hold {p} base-parameter values each")
        return lo, hi
    if ctx.prior is None:
        return None
    return base_bounds(ctx.base.grouping, *standard_bounds(ctx.model, nominal=ctx.prior),
                       names=ctx.model.parameter_names)


def _mrls(ctx):
    opts = ctx.options
    bounds = _bounds(ctx) if opts.get("bounds") is not None else None
    lo, hi = bounds if bounds is not None else (None, None)
    theta0 = opts.get("theta0")
    theta0 = ctx.prior_base() if theta0 is None else np.asarray(theta0, dtype=float)
    if lo is not None:
        theta0 = np.clip(theta0, lo, hi)
    m = MRLS(len(ctx.base), theta0=theta0, lower=lo, upper=hi, names=ctx.base.names,
             **(opts.get("mrls") or {}))
    m.update_normal_equations(ctx.neq.gram, ctx.neq.b.sum(axis=0), int(ctx.neq.count.sum()))
    r = m.result()
    details = {"flags": [int(f) for f in r.flags]}
    if lo is not None:
        details["active_bounds"] = [bool(c) for c in r.clipped]
    return estimate_from(ctx.neq, r.values, r.K_inv, "mrls", flags=r.flags, details=details)


def _bounded(ctx):
    bounds = _bounds(ctx)
    if bounds is None:
        raise ConfigError("estimator 'bounded' builds its box around a prior: give --prior "
                          "nominal or --prior FILE (identification.prior in the robot YAML)")
    x, active = bounded_ls(ctx.neq, *bounds, ctx.base.names)
    if np.any(active):
        names = [n for n, a in zip(ctx.base.names, active) if a]
        ctx.diagnostics.append(Diagnostic(
            "bounds_active", "warning",
            f"bounded estimate: {len(names)} base parameter(s) sit on the box built around the "
            f"prior ({', '.join(names[:6])}{' ...' if len(names) > 6 else ''}): the data pull "
            f"them outside it; check the prior (nominal friction 0 gives a box [0, 3e-3])",
            "bounded"))
    return estimate_from(ctx.neq, x, np.linalg.pinv(ctx.neq.gram), "bounded",
                         details={"active_bounds": [bool(a) for a in active]})


def _physical(ctx):
    w = ctx.wls()
    info = np.einsum("j,jik->ik", w.weights, ctx.neq.G)
    P = ctx.model.n_parameters
    model = ctx.model
    if ctx.prior is None:       # no prior term: LMIs and sign constraints only
        phys = physically_consistent(model, ctx.base, info, w.values, nominal=np.zeros(P),
                                     prior_scales=np.full(P, np.inf), prior="gaussian")
        phys.prior_distance = None
    else:                       # log-det divergence toward the prior's bodies
        weight = float(ctx.options.get("prior_weight", 1.0) or 1.0)
        phys = physically_consistent(model, ctx.base, info, w.values, nominal=ctx.prior,
                                     weight=weight)
        urdf = np.array_equal(np.asarray(ctx.prior, dtype=float), model.nominal_parameters())
        ctx.diagnostics += check_prior_bodies(model.body_names, ctx.prior,
                                              "the URDF" if urdf else "the prior file")
    ctx.diagnostics += physical_diagnostics(model, phys)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * w.std / np.abs(phys.base)
    est = Estimate(values=np.asarray(phys.base, dtype=float), covariance=w.covariance,
                   std=w.std, relative_std=rel,
                   residual_rms=np.sqrt(ctx.neq.residual_sums(phys.base)
                                        / np.maximum(ctx.neq.count, 1)),
                   sigma2=w.sigma2, condition_number=w.condition_number, method="physical",
                   n_rows=w.n_rows, weights=w.weights,
                   details={"standard_parameters": {
                       nm: float(v) for nm, v in zip(ctx.model.parameter_names, phys.standard)},
                       "min_pseudo_inertia_eigenvalues": {
                           b: float(e) for b, e in zip(ctx.model.body_names,
                                                       phys.min_eigenvalues)},
                       "cost_increase": float(phys.cost_increase), "status": phys.status,
                       "prior": phys.prior,
                       "prior_weight": float(ctx.options.get("prior_weight", 1.0) or 1.0),
                       "prior_distance": None if phys.prior_distance is None else {
                           b: float(d) for b, d in zip(model.body_names, phys.prior_distance)},
                       "bodies_on_bound": [model.body_names[k] for k in phys.on_bound or []]})
    return est


def _lmi_values(ctx):
    """Base parameters of the WLS fit under the pseudo-inertia LMIs, without a prior term."""
    w = ctx.wls()
    info = np.einsum("j,jik->ik", w.weights, ctx.neq.G)
    P = ctx.model.n_parameters
    phys = physically_consistent(ctx.model, ctx.base, info, w.values, nominal=np.zeros(P),
                                 prior_scales=np.full(P, np.inf), prior="gaussian")
    return np.asarray(phys.base, dtype=float)


def _iv(ctx):
    """IDIM-IV (see :mod:`robot_identification.identification._iv`)."""
    if ctx.reaccumulate is None:
        raise ConfigError("estimator 'iv' needs the recordings to simulate their closed loop "
                          "(use identify(), not solve() on summed equations)")
    if ctx.model.config.elastic:
        raise ConfigError(f"estimator 'iv' supports rigid arms; robot "
                          f"'{ctx.model.config.name}' has elastic joints")
    start = ctx.wls()
    p, neq = len(ctx.base), ctx.neq
    theta, w = start.values.copy(), start.weights.copy()
    history, change, it, origin, halvings = [], np.inf, 0, "wls", 0
    residual_changes, res_change = [], np.inf
    res_norm = start_norm = float(np.sqrt(neq.residual_sums(theta).sum()))
    # instruments filtered like the measured rows (butterworth strategy; the FIR strategies
    # smooth the measured rows only)
    cutoff = (ctx.settings.cutoff_hz if ctx.settings.preprocessing == "butterworth"
              else None)
    step = None          # last step theta_k - theta_{k-1}, halved while not simulable
    for it in range(1, IV_MAX_ITERATIONS + 1):
        while True:
            try:
                pas = ctx.reaccumulate(instruments=ClosedLoopInstruments(
                    ctx.base, theta, ctx.settings.friction_deadband, cutoff,
                    ctx.settings.filter_order))
                break
            except IdentificationError as exc:
                if step is None:
                    if origin != "wls":
                        raise
                    # the WLS model cannot be simulated (M(q) not positive definite): start
                    # from the LMI-constrained estimate (pseudo-inertias >= 0, no prior)
                    if ctx.log:
                        ctx.log(f"iv: {exc}; starting from the physically consistent "
                                f"estimate")
                    theta, origin = _lmi_values(ctx), "physical (no prior)"
                    continue
                halvings += 1        # the IV update is not simulable: halve the step
                if halvings > 4:
                    raise IdentificationError(
                        f"{exc} (iteration {it}, step halved 4 times): the data do not "
                        f"excite the closed loop enough for IV; use ols/wls") from None
                step = 0.5 * step
                theta = theta - step
        halvings = 0
        A = np.einsum("j,jik->ik", w, pas.G[:, p:, :p])           # sum_j w_j Z_j^T W_j
        try:
            new = np.linalg.solve(A, w @ pas.b[:, p:])               # eq. 24 / 27
        except np.linalg.LinAlgError:
            raise IdentificationError("estimator 'iv': Z^T W is singular (the simulated "
                                      "closed loop does not excite the base parameters)") \
                from None
        Ainv = np.linalg.inv(A)       # IV covariance of this pass (docstring of _iv.py)
        std = np.sqrt(np.clip(np.diag(Ainv @ np.einsum("j,jik->ik", w, pas.G[:, p:, p:])
                                      @ Ainv.T), 0, None))
        ratio = np.abs(new - theta) / np.maximum(np.abs(new), std + 1e-300)
        change = float(np.max(ratio))
        step, theta = new - theta, new
        history.append(change)
        moved = ctx.base.names[int(np.argmax(ratio))]
        dof = np.maximum(neq.count - p / neq.groups, 1.0)
        res = neq.residual_sums(theta)
        w = 1.0 / np.maximum(res / dof, 1e-300)   # 1 / sigma_j^2
        norm = float(np.sqrt(res.sum()))
        res_change = abs(norm - res_norm) / max(res_norm, 1e-300)
        res_norm = norm
        if norm > IV_DIVERGENCE * start_norm:
            raise IdentificationError(
                f"estimator 'iv' diverges: at iteration {it} the residual norm is "
                f"{norm / start_norm:.3g} x that of WLS (cond(Z^T W) = "
                f"{np.linalg.cond(A):.3g}): the instruments of the simulated closed loop "
                f"determine the parameters too weakly; use ols/wls or a richer excitation")
        residual_changes.append(res_change)
        if ctx.log:
            ctx.log(f"iv iteration {it}: relative change {change:.3g} ({moved}), residual "
                    f"norm change {res_change:.3g}")
        if change < IV_TOLERANCE or res_change < IV_RESIDUAL_TOLERANCE:
            break
    converged = change < IV_TOLERANCE or res_change < IV_RESIDUAL_TOLERANCE
    if not converged:
        ctx.diagnostics.append(Diagnostic(
            "iv_not_converged", "warning",
            f"estimator 'iv' stopped after {it} iterations with a relative change of "
            f"{change:.3g} of the estimate (tolerance {IV_TOLERANCE:g}) and "
            f"{res_change:.3g} of the residual norm (tolerance {IV_RESIDUAL_TOLERANCE:g}): "
            f"the closed-loop simulation of the estimate does not settle; compare with "
            f"ols/wls", "iv"))
    # asymptotic IV covariance (A^-1 (sum_j w_j Z_j^T Z_j) A^-T, w_j = 1 / sigma_j^2)
    Ainv = np.linalg.inv(np.einsum("j,jik->ik", w, pas.G[:, p:, :p]))
    cov = Ainv @ np.einsum("j,jik->ik", w, pas.G[:, p:, p:]) @ Ainv.T
    est = estimate_from(neq, theta, np.zeros((p, p)), "iv",
                        details={"iterations": it, "converged": bool(converged),
                                 "relative_changes": history,
                                 "residual_norm_changes": residual_changes, "start": origin})
    est.covariance = cov
    est.std = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        est.relative_std = 100.0 * est.std / np.abs(theta)
    est.sigma2 = 1.0 / w
    est.weights = w
    return est


_FUNCTIONS = {"ols": _ols, "wls": _wls, "irls": _irls, "mrls": _mrls, "bounded": _bounded,
              "physical": _physical, "iv": _iv}
#: Estimators by name (see the module docstring), in the order of the one list of names
#: (:data:`robot_identification.choices.ESTIMATORS`) that the CLI, YAML and nodes read.
ESTIMATORS = {name: _FUNCTIONS[name] for name in ESTIMATOR_NAMES}


class HuberWeights:
    """Row weights of one IRLS pass: Huber's psi with threshold ``c`` noise std.

    w = min(1, c / |r / sigma_j|) with r = y - W beta, per row group j (Huber 1981,
    Sec. 7.8); the pass also sums psi(r / sigma_j)^2 sigma_j^2 for the scale update
    (Huber's proposal 2).

    Parameters
    ----------
    beta : ndarray (p,)
        Current estimate.
    sigma : ndarray (groups,)
        Current noise standard deviation per row group (unit of the torques).
    c : float
        Threshold in standard deviations (1.345: 95 % efficiency at Gaussian noise).
    """

    def __init__(self, beta, sigma, c):
        self.beta = np.asarray(beta, dtype=float)
        self.sigma = np.maximum(np.asarray(sigma, dtype=float), 1e-300)
        self.c = float(c)

    def __call__(self, W, y, mask):
        u = (y - W @ self.beta) / self.sigma
        a = np.abs(u)
        w = np.where(a <= self.c, 1.0, self.c / np.maximum(a, 1e-300))
        psi2 = np.minimum(a, self.c) ** 2 * self.sigma ** 2
        if mask is not None:
            psi2 = psi2 * mask
        return w, psi2.sum(axis=0)
