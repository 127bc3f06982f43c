"""Optimal excitation trajectories: criteria on the base regressor and their optimisation.

Trajectory families (parameter-vector interfaces, ``x`` a flat float vector, on top of
the trajectory classes of :mod:`robot_identification.excitation._trajectories`):

- :class:`FourierParametrisation` -> :class:`FourierTrajectory`: finite Fourier series of
  Swevers et al. (1997) in the form of Szabó & Gincsainé (2021), eq. 22, with offset q0;
  dq and ddq vanish at both ends (eq. 21) by eliminating the first harmonic's
  coefficients (a_1 = -sum_{l>1} a_l, b_1 = -sum_{l>1} l b_l).
- :class:`BSplineParametrisation` -> :class:`BSplineTrajectory`: quintic B-spline of
  Zollo et al. (2014, Sec. 6.1), interior control points free.

Criteria (lower is better) of the stacked base regressor ``W`` (M, p), columns scaled to
unit norm first so that parameter units do not matter:

- ``cond``: 2-norm condition number of W (Gautier & Khalil 1992; Swevers et al. 1997);
- ``frobenius``: CondF(W^T W) = ||A||_F ||A^-1||_F, A = W^T W (Szabó & Gincsainé 2021, eq. 20);
- ``logdet``: -log det(W^T W / M) (D-optimality).

Joint position, velocity and acceleration limits of the robot config are enforced as
inequality constraints on a dense time grid (Szabó eq. 21) and solved with
:func:`scipy.optimize.minimize` (SLSQP).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.optimize

from robot_identification.errors import ConfigError, ExcitationError
from robot_identification.excitation._trajectories import BSplineTrajectory, FourierTrajectory
from robot_identification.identifiability import base_parameters
from robot_identification.model import RobotModel
from robot_identification.progress import bar
from robot_identification.regressor import regressor

CRITERIA = ("cond", "frobenius", "logdet")


# --------------------------------------------------------------------------- trajectories
@dataclass
class FourierParametrisation:
    """Parameter-vector interface to :class:`FourierTrajectory` with rest-to-rest ends.

    Szabó & Gincsainé (2021), eq. 21-22 (with the offset q0, so q(0) = q(t_f) = q0):
    q_i(t) = q0_i + sum_{l=1}^{M} a_il/(w l) sin(w l t) - b_il/(w l) (cos(w l t) - 1),
    w = 2 pi / period. Free parameters per joint: a_il, b_il for l = 2..M [rad/s];
    a_i1 = -sum_{l>1} a_il and b_i1 = -sum_{l>1} l b_il make dq = ddq = 0 at t = 0 and
    t = period exactly, so the end conditions of eq. 21 need no constraint.

    Parameters
    ----------
    n : int
        Joints.
    harmonics : int
        M >= 2.
    period : float
        t_f [s].
    q0 : array_like (n,), optional
        Start and end position [rad]; default zeros.
    joint_names : sequence of str, optional
    """

    n: int
    harmonics: int
    period: float
    q0: np.ndarray = None
    joint_names: tuple = None

    def __post_init__(self):
        if self.harmonics < 2:
            raise ConfigError(f"Fourier excitation needs at least 2 harmonics, "
                              f"got {self.harmonics}")
        if not self.period > 0:
            raise ConfigError(f"Fourier period must be > 0 s, got {self.period}")
        self.q0 = np.zeros(self.n) if self.q0 is None else np.asarray(self.q0, float)

    @property
    def size(self) -> int:
        return 2 * self.n * (self.harmonics - 1)

    @property
    def duration(self) -> float:
        return self.period

    def coefficients(self, x):
        """Full coefficient arrays a, b (n, M) [rad/s] of parameter vector ``x``."""
        x = np.asarray(x, float).reshape(2, self.n, self.harmonics - 1)
        order = np.arange(2, self.harmonics + 1)
        a = np.concatenate([-x[0].sum(axis=1, keepdims=True), x[0]], axis=1)
        b = np.concatenate([-(x[1] * order).sum(axis=1, keepdims=True), x[1]], axis=1)
        return a, b

    def trajectory(self, x):
        """The :class:`FourierTrajectory` of parameter vector ``x``."""
        a, b = self.coefficients(x)
        return FourierTrajectory(a, b, 1.0 / self.period, self.q0, 1, enforce_rest=False,
                                 joint_names=self.joint_names)

    def evaluate(self, x, t):
        """Positions, velocities, accelerations (N, n) at times ``t`` (N,) [s] (eq. 22)."""
        return self.trajectory(x).evaluate(t)

    def initial(self, rng, scale=0.3):
        """Random start vector (velocity amplitudes ~ ``scale`` rad/s)."""
        return rng.normal(0.0, scale, self.size)


@dataclass
class BSplineParametrisation:
    """Parameter-vector interface to :class:`BSplineTrajectory` (quintic, rest-to-rest).

    Zollo et al. (2014, Sec. 6.1). The free parameters are the ``segments - 1`` interior
    control points per joint, as offsets from ``q0`` [rad]; three control points equal
    to ``q0`` at each end give zero velocity and acceleration there.
    """

    n: int
    segments: int
    duration: float
    q0: np.ndarray = None
    joint_names: tuple = None

    def __post_init__(self):
        if self.segments < 2:
            raise ConfigError(f"B-spline excitation needs at least 2 segments, "
                              f"got {self.segments}")
        if not self.duration > 0:
            raise ConfigError(f"B-spline duration must be > 0 s, got {self.duration}")
        self.q0 = np.zeros(self.n) if self.q0 is None else np.asarray(self.q0, float)

    @property
    def size(self) -> int:
        return self.n * (self.segments - 1)

    def trajectory(self, x):
        """The :class:`BSplineTrajectory` of parameter vector ``x``."""
        ctrl = self.q0 + np.asarray(x, float).reshape(self.segments - 1, self.n)
        return BSplineTrajectory(ctrl, self.duration, self.q0, joint_names=self.joint_names)

    def evaluate(self, x, t):
        return self.trajectory(x).evaluate(t)

    def initial(self, rng, scale=0.5):
        return rng.normal(0.0, scale, self.size)


# ------------------------------------------------------------------------------ criteria
def criterion_value(W, criterion="cond"):
    """Excitation criterion of a base observation matrix (lower is better).

    Parameters
    ----------
    W : ndarray, shape (M, p)
        Stacked base regressor (rows: samples x joints).
    criterion : {'cond', 'frobenius', 'logdet'}
        ``cond``: 2-norm condition number of W; ``frobenius``: CondF(W^T W) of Szabó &
        Gincsainé (2021), eq. 20; ``logdet``: -log det(W^T W / M). W's columns are scaled
        to unit RMS first (the criterion then does not depend on parameter units).

    Returns
    -------
    float
        ``inf`` when W is rank deficient.

    Raises
    ------
    ConfigError
        Unknown criterion.
    """
    if criterion not in CRITERIA:
        raise ConfigError(f"unknown excitation criterion '{criterion}'; "
                          f"choose one of {list(CRITERIA)}")
    W = np.asarray(W, float)
    M = W.shape[0]
    d = np.linalg.norm(W, axis=0) / np.sqrt(M)
    if np.any(d <= 1e-12 * max(d.max(), 1e-300)):
        return float("inf")
    Ws = W / d
    if criterion == "cond":
        s = np.linalg.svd(Ws, compute_uv=False)
        return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
    A = Ws.T @ Ws / M
    if criterion == "frobenius":
        try:
            Ai = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            return float("inf")
        return float(np.linalg.norm(A) * np.linalg.norm(Ai))
    sign, logdet = np.linalg.slogdet(A)
    return float(-logdet) if sign > 0 else float("inf")


def design_model(model):
    """The model an excitation is designed for: ``model`` itself if rigid; for elastic
    joints its rigid limit (theta = q: same links, rotor inertia and friction, no
    stiffness), whose regressor is what the link trajectory alone can excite."""
    if not model.config.elastic:
        return model
    return RobotModel(replace(model.config, model="rigid"), urdf_xml=model.urdf_xml)


def base_regressor_function(model, base):
    """Return ``f(q, dq, ddq) -> W`` (N*n, p), the stacked base regressor of a rigid model."""

    def f(q, dq, ddq):
        return base.project(regressor(model, q, dq, ddq)).reshape(-1, len(base))
    return f


def model_limits(model, margin=1.0, acceleration_limit=None):
    """Position (n, 2), velocity (n,), acceleration (n,) limits of ``model`` (inf if absent;
    ``acceleration_limit`` [rad/s^2] for joints without one)."""
    n = model.n
    pos = np.tile([-np.inf, np.inf], (n, 1))
    vel, acc = np.full(n, np.inf), np.full(n, np.inf)
    for k, j in enumerate(model.config.joints):
        lim = j.limits
        if lim.position is not None:
            mid, half = np.mean(lim.position), 0.5 * (lim.position[1] - lim.position[0])
            pos[k] = mid - margin * half, mid + margin * half
        if lim.velocity is not None:
            vel[k] = margin * lim.velocity
        if lim.acceleration is not None:
            acc[k] = margin * lim.acceleration
        elif acceleration_limit is not None:
            acc[k] = margin * acceleration_limit
    return pos, vel, acc


def limit_violation(q, dq, ddq, limits):
    """Largest limit violation (0 if within limits) in each of position, velocity, acceleration."""
    pos, vel, acc = limits
    vp = np.max(np.maximum(q - pos[:, 1], pos[:, 0] - q), initial=-np.inf)
    vv = np.max(np.abs(dq) - vel, initial=-np.inf)
    va = np.max(np.abs(ddq) - acc, initial=-np.inf)
    return max(vp, 0.0), max(vv, 0.0), max(va, 0.0)


@dataclass
class OptimisationResult:
    """Outcome of :func:`optimise_excitation`.

    Attributes
    ----------
    x0, x : ndarray
        Initial and optimised parameter vectors.
    before, after : float
        Criterion of the initial and optimised trajectory.
    cond_before, cond_after : float
        2-norm condition numbers of the (column-scaled) base regressor.
    seconds : float
        Wall time of the optimisation.
    within_limits : bool
    message : str
        Solver message.
    """

    parametrisation: object
    criterion: str
    x0: np.ndarray
    x: np.ndarray
    before: float
    after: float
    cond_before: float
    cond_after: float
    seconds: float
    within_limits: bool
    iterations: int
    message: str
    history: list = field(default_factory=list)

    def evaluate(self, t):
        return self.parametrisation.evaluate(self.x, t)


def optimise_excitation(model, parametrisation, criterion="cond", n_samples=120, x0=None,
                        seed=0, maxiter=60, base=None, margin=0.95, acceleration_limit=None):
    """Optimise an excitation trajectory for the base regressor of ``model``.

    Minimises :func:`criterion_value` of the base regressor stacked at ``n_samples``
    equidistant times, subject to the joint position, velocity and acceleration limits
    of the robot config (times ``margin``) checked on a 4x denser grid (Szabó &
    Gincsainé 2021, eq. 21; Swevers et al. 1997). Solver: SLSQP with finite-difference
    gradients. The start vector is scaled down until it is within the limits.

    Parameters
    ----------
    model : RobotModel
    parametrisation : FourierParametrisation or BSplineParametrisation
    criterion : {'cond', 'frobenius', 'logdet'}
    n_samples : int
        Samples of the criterion grid.
    x0 : ndarray, optional
        Start vector; default random (``seed``).
    maxiter : int
    base : BaseParameters, optional
        Default :func:`~robot_identification.identifiability.base_parameters` of ``model``.
    margin : float
        Fraction of the limits used as constraint (safety margin).
    acceleration_limit : float, optional
        [rad/s^2] for joints whose config gives no acceleration limit.

    Returns
    -------
    OptimisationResult

    Raises
    ------
    ConfigError
        Unknown criterion.
    ExcitationError
        No start vector within the limits was found.
    """
    if criterion not in CRITERIA:
        raise ConfigError(f"unknown excitation criterion '{criterion}'; "
                          f"choose one of {list(CRITERIA)}")
    model = design_model(model)
    base = base if base is not None else base_parameters(model)
    f_W = base_regressor_function(model, base)
    par = parametrisation
    T = par.duration
    t_obj = np.linspace(0.0, T, n_samples, endpoint=False)
    t_con = np.linspace(0.0, T, 4 * n_samples + 1)
    limits = model_limits(model, margin, acceleration_limit)
    pos, vel, acc = limits

    rng = np.random.default_rng(seed)
    x0 = par.initial(rng) if x0 is None else np.asarray(x0, float)
    for _ in range(60):
        if max(limit_violation(*par.evaluate(x0, t_con), limits)) == 0:
            break
        x0 = 0.8 * x0
    else:
        raise ExcitationError("could not find an initial excitation within the joint limits")

    def objective(x):
        v = criterion_value(f_W(*par.evaluate(x, t_obj)), criterion)
        if not np.isfinite(v):
            return 1e6
        return v if criterion == "logdet" else np.log(v)

    scale_p = np.where(np.isfinite(pos[:, 1] - pos[:, 0]), pos[:, 1] - pos[:, 0], 1.0)

    def constraints(x):
        q, dq, ddq = par.evaluate(x, t_con)
        parts = []
        fin = np.isfinite(pos[:, 0])
        parts.append(((q[:, fin] - pos[fin, 0]) / scale_p[fin]).ravel())
        parts.append(((pos[fin, 1] - q[:, fin]) / scale_p[fin]).ravel())
        fv = np.isfinite(vel)
        parts.append((1.0 - np.abs(dq[:, fv]) / vel[fv]).ravel())
        fa = np.isfinite(acc)
        parts.append((1.0 - np.abs(ddq[:, fa]) / acc[fa]).ravel())
        return np.concatenate(parts)

    history = []
    full = model_limits(model, 1.0, acceleration_limit)

    # feasibility of the result on a 1 kHz grid (the constraints use the coarser t_con),
    # the grid on which check_limits and the excitation publisher test the trajectory
    t_dense = np.linspace(t_con[0], t_con[-1], max(len(t_con),
                                                   int((t_con[-1] - t_con[0]) * 1000) + 1))

    def feasible(x):
        return max(limit_violation(*par.evaluate(x, t_dense), full)) == 0

    pbar = bar(total=maxiter, desc=f"excite ({criterion})", unit="iteration")

    def callback(xk):
        history.append((objective(xk), xk.copy()))
        pbar.update(1)
        pbar.set_postfix_str(f"{criterion} {history[-1][0]:.4g}", refresh=False)

    start = time.perf_counter()
    with pbar:
        res = scipy.optimize.minimize(objective, x0, method="SLSQP",
                                      constraints=[{"type": "ineq", "fun": constraints}],
                                      options={"maxiter": maxiter, "ftol": 1e-6},
                                      callback=callback)
    seconds = time.perf_counter() - start
    # SLSQP may stop at a point slightly outside the limits: keep the best feasible iterate
    candidates = [(objective(res.x), res.x)] + history[::-1] + [(objective(x0), x0)]

    def shrunk(x):          # violations between the constraint points: shrink slightly
        for _ in range(30):
            if feasible(x):
                return x
            x = 0.99 * x
        return None

    good = [(objective(xs), xs) for xs in (shrunk(c[1]) for c in candidates[:10] + candidates[-1:])
            if xs is not None]
    x = min(good, key=lambda c: c[0])[1] if good else x0
    ok = feasible(x)
    W0, W1 = f_W(*par.evaluate(x0, t_obj)), f_W(*par.evaluate(x, t_obj))
    return OptimisationResult(
        parametrisation=par, criterion=criterion, x0=x0, x=x,
        before=criterion_value(W0, criterion), after=criterion_value(W1, criterion),
        cond_before=criterion_value(W0, "cond"), cond_after=criterion_value(W1, "cond"),
        seconds=seconds, within_limits=ok, iterations=int(res.get("nit", 0)),
        message=str(res.message), history=[h[0] for h in history])
