"""Excitation trajectories: finite Fourier series and quintic B-splines, with limit checks.

Both trajectory types start and end at rest (zero velocity and acceleration), so a
controller can take the arm onto and off them without jumps, and both evaluate
positions, velocities and accelerations analytically (no numerical differentiation).
They serialise to a small YAML mapping (``type: fourier | bspline``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from scipy.interpolate import BSpline

from robot_identification._yaml import read_yaml_file
from robot_identification.errors import ConfigError, ExcitationError
from robot_identification.model import MAX_EXCITATION_S, MAX_HARMONICS
from robot_identification.outputs import write_text_atomic

#: Fraction of the velocity/acceleration limits used by :func:`trajectory_from_config`.
LIMIT_MARGIN = 0.9


def _matrix(name, x, n=None):
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or (n is not None and x.shape[0] != n):
        raise ConfigError(f"{name}: expected shape ({n if n else 'n_joints'}, ...), got "
                          f"{np.shape(x)}")
    if not np.all(np.isfinite(x)):
        raise ConfigError(f"{name}: non-finite entries")
    return x


class FourierTrajectory:
    """Finite Fourier series per joint (Swevers et al. 1997; Park 2006).

    Parametrisation of Szabó & Gincsainé (2021), eq. 22, plus a position offset:

    .. math::
        q_i(t) = q_{0,i} + \\sum_{l=1}^{M} \\frac{a_{il}}{\\omega_f l}\\sin(\\omega_f l t)
                 - \\frac{b_{il}}{\\omega_f l}(\\cos(\\omega_f l t) - 1)

    so that q(0) = q(T) = q0. Velocity and acceleration vanish at t = 0 and at every
    full period (eq. 21 boundary conditions) when sum_l a_il = 0 and sum_l l b_il = 0;
    the constructor enforces this by the minimum-norm correction of a and b
    (``enforce_rest=True``).

    Parameters
    ----------
    a, b : array_like, shape (n, M)
        Sine/cosine velocity amplitudes [rad/s] of joint i, harmonic l.
    base_frequency : float
        Fundamental frequency f_f [Hz] (omega_f = 2 pi f_f).
    q0 : array_like, shape (n,), optional
        Start/end position [rad]; default zeros.
    periods : int
        Number of full periods; ``duration = periods / base_frequency``.
    enforce_rest : bool
        Project a, b onto the zero boundary velocity/acceleration constraints.
    joint_names : sequence of str, optional
    """

    kind = "fourier"

    def __init__(self, a, b, base_frequency, q0=None, periods=1, enforce_rest=True,
                 joint_names=None):
        a = _matrix("fourier a", a)
        b = _matrix("fourier b", b, a.shape[0])
        if b.shape != a.shape:
            raise ConfigError(f"fourier a and b must have the same shape, got {a.shape} "
                              f"and {b.shape}")
        if not base_frequency or base_frequency <= 0:
            raise ConfigError(f"fourier base_frequency must be > 0 Hz, got {base_frequency}")
        if int(periods) < 1:
            raise ConfigError(f"fourier periods must be >= 1, got {periods}")
        n, M = a.shape
        _check_size(M, "harmonics", int(periods) / float(base_frequency))
        harm = np.arange(1, M + 1, dtype=float)
        if enforce_rest:
            a = a - a.mean(axis=1, keepdims=True)
            b = b - np.outer(b @ harm, harm) / (harm @ harm)
        self.a, self.b = a, b
        self.base_frequency = float(base_frequency)
        self.periods = int(periods)
        self.q0 = np.zeros(n) if q0 is None else np.asarray(q0, dtype=float).reshape(n)
        self.joint_names = None if joint_names is None else tuple(joint_names)

    @property
    def n_joints(self) -> int:
        return self.a.shape[0]

    @property
    def harmonics(self) -> int:
        return self.a.shape[1]

    @property
    def duration(self) -> float:
        """Length [s]: ``periods / base_frequency``."""
        return self.periods / self.base_frequency

    def evaluate(self, t):
        """Positions, velocities and accelerations at times ``t``.

        Parameters
        ----------
        t : float or array_like, shape (N,)
            Times [s]; outside [0, duration] the trajectory holds its end point.

        Returns
        -------
        q, dq, ddq : ndarray, shape (N, n)
            [rad], [rad/s], [rad/s^2].
        """
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self.duration)
        w = 2 * np.pi * self.base_frequency
        wl = w * np.arange(1, self.harmonics + 1)   # (M,)
        s, c = np.sin(np.outer(t, wl)), np.cos(np.outer(t, wl))   # (N, M)
        q = self.q0 + (s / wl) @ self.a.T - ((c - 1) / wl) @ self.b.T
        dq = c @ self.a.T + s @ self.b.T
        ddq = (-s * wl) @ self.a.T + (c * wl) @ self.b.T
        return q, dq, ddq

    def scaled(self, factor):
        """Copy with the excursion about q0 scaled by ``factor`` (same timing; a scalar or
        one factor per joint)."""
        f = np.asarray(factor, dtype=float)
        f = f[:, None] if f.ndim == 1 else f              # per joint (n,)
        return FourierTrajectory(self.a * f, self.b * f, self.base_frequency,
                                 self.q0, self.periods, False, self.joint_names)

    def to_dict(self) -> dict:
        d = {"type": self.kind, "base_frequency": self.base_frequency,
             "periods": self.periods, "q0": self.q0.tolist(), "a": self.a.tolist(),
             "b": self.b.tolist()}
        if self.joint_names:
            d["joint_names"] = list(self.joint_names)
        return d

    def __repr__(self):
        return (f"FourierTrajectory(n_joints={self.n_joints}, harmonics={self.harmonics}, "
                f"base_frequency={self.base_frequency} Hz, duration={self.duration} s)")


class BSplineTrajectory:
    """Quintic B-spline per joint with rest at both ends (Rackl et al. 2012; Zollo et al. 2014).

    The spline has degree 5 on a clamped, uniform knot vector over [0, duration]. Its
    control points are ``[start]*3 + control_points + [end]*3``: three equal control
    points at each end make velocity and acceleration zero there.

    Parameters
    ----------
    control_points : array_like, shape (m, n)
        Free (interior) control points [rad], m >= 1; the knot vector has m + 1 spans.
    duration : float
        [s].
    start, end : array_like, shape (n,), optional
        Rest positions at t = 0 and t = duration [rad]; default: ``start`` zeros,
        ``end = start``.
    joint_names : sequence of str, optional
    """

    kind = "bspline"
    degree = 5

    def __init__(self, control_points, duration, start=None, end=None, joint_names=None):
        c = np.asarray(control_points, dtype=float)
        if c.ndim == 1:
            c = c[:, None]
        if c.ndim != 2 or c.shape[0] < 1 or not np.all(np.isfinite(c)):
            raise ConfigError(f"bspline control_points: expected a finite (m >= 1, n) array, "
                              f"got shape {np.shape(control_points)}")
        if not duration or duration <= 0:
            raise ConfigError(f"bspline duration must be > 0 s, got {duration}")
        _check_size(c.shape[0], "control points", float(duration))
        n = c.shape[1]
        self.control_points = c
        self.start = np.zeros(n) if start is None else np.asarray(start, float).reshape(n)
        self.end = self.start.copy() if end is None else np.asarray(end, float).reshape(n)
        self._duration = float(duration)
        self.joint_names = None if joint_names is None else tuple(joint_names)
        k = self.degree
        m = c.shape[0]
        inner = np.linspace(0.0, self._duration, m + 2)[1:-1]
        knots = np.concatenate([np.zeros(k + 1), inner, np.full(k + 1, self._duration)])
        coeffs = np.vstack([np.tile(self.start, (3, 1)), c, np.tile(self.end, (3, 1))])
        self._spline = BSpline(knots, coeffs, k, extrapolate=False)
        self._d1 = self._spline.derivative(1)
        self._d2 = self._spline.derivative(2)

    @property
    def n_joints(self) -> int:
        return self.control_points.shape[1]

    @property
    def duration(self) -> float:
        return self._duration

    @property
    def knots(self):
        """Interior knots (m,) [s]: where the quintic pieces join (the trajectory is a single
        polynomial of degree 5 between two of them)."""
        return np.unique(self._spline.t[(self._spline.t > 0) & (self._spline.t < self._duration)])

    def evaluate(self, t):
        """Positions, velocities and accelerations at times ``t``.

        Parameters
        ----------
        t : float or array_like, shape (N,)
            Times [s]; outside [0, duration] the trajectory holds its end point.

        Returns
        -------
        q, dq, ddq : ndarray, shape (N, n)
            [rad], [rad/s], [rad/s^2].
        """
        t = np.clip(np.atleast_1d(np.asarray(t, dtype=float)), 0.0, self._duration)
        return self._spline(t), self._d1(t), self._d2(t)

    def scaled(self, factor):
        """Copy with the control points' excursion from the start scaled by ``factor`` (a
        scalar or one factor per joint)."""
        return BSplineTrajectory(self.start + factor * (self.control_points - self.start),
                                 self._duration, self.start,
                                 self.start + factor * (self.end - self.start), self.joint_names)

    def to_dict(self) -> dict:
        d = {"type": self.kind, "duration": self._duration, "start": self.start.tolist(),
             "end": self.end.tolist(), "control_points": self.control_points.tolist()}
        if self.joint_names:
            d["joint_names"] = list(self.joint_names)
        return d

    def __repr__(self):
        return (f"BSplineTrajectory(n_joints={self.n_joints}, "
                f"control_points={self.control_points.shape[0]}, duration={self.duration} s)")


# ----------------------------------------------------------------- serialisation
def _check_size(count, what, duration):
    """Bound a trajectory before it is sampled: 1e8 periods or harmonics (a typo, a file of
    another tool) ended in "out of memory" when the limits check sampled it at 1 kHz.

    Raises
    ------
    ConfigError
        More than MAX_HARMONICS harmonics / control points, or longer than
        MAX_EXCITATION_S.
    """
    if count > MAX_HARMONICS:
        raise ConfigError(f"{count} {what}, above {MAX_HARMONICS}")
    if not duration <= MAX_EXCITATION_S:
        raise ConfigError(f"it lasts {duration:.3g} s, above "
                          f"{MAX_EXCITATION_S:g} s (1 h): periods, base_frequency or "
                          f"duration wrong?")


def trajectory_from_dict(d):
    """Build a trajectory from the mapping written by ``to_dict`` / a YAML file.

    Raises
    ------
    ConfigError
        Unknown ``type``, missing or malformed keys, non-numeric or non-finite values.
    """
    if not isinstance(d, dict):
        raise ConfigError(f"trajectory: expected a mapping, got {type(d).__name__}")
    kind = d.get("type")
    for key in ("base_frequency", "periods", "q0", "a", "b", "duration", "start", "end",
                "control_points"):
        if d.get(key) is None:
            continue
        try:
            values = np.asarray(d[key], dtype=float)
        except (TypeError, ValueError):
            raise ConfigError(f"{kind} trajectory: '{key}' must hold numbers, got "
                              f"{d[key]!r:.60}") from None
        if not np.all(np.isfinite(values)):
            raise ConfigError(f"{kind} trajectory: '{key}' holds non-finite values (NaN or "
                              f"inf): {values.tolist()!r:.80}")
    try:
        if kind == "fourier":
            allowed = {"type", "base_frequency", "periods", "q0", "a", "b", "joint_names"}
            _no_extra(d, allowed)
            return FourierTrajectory(d["a"], d["b"], d["base_frequency"], d.get("q0"),
                                     d.get("periods", 1), enforce_rest=False,
                                     joint_names=d.get("joint_names"))
        if kind == "bspline":
            allowed = {"type", "duration", "start", "end", "control_points", "joint_names"}
            _no_extra(d, allowed)
            return BSplineTrajectory(d["control_points"], d["duration"], d.get("start"),
                                     d.get("end"), joint_names=d.get("joint_names"))
    except KeyError as exc:
        raise ConfigError(f"{kind} trajectory: missing key {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{kind} trajectory: {exc}") from None
    raise ConfigError(f"trajectory type must be 'fourier' or 'bspline', got {kind!r}")


def _no_extra(d, allowed):
    extra = sorted(set(d) - allowed)
    if extra:
        raise ConfigError(f"{d.get('type')} trajectory: unknown key(s) {extra}; allowed "
                          f"{sorted(allowed)}")


def save_trajectory(traj, path, inputs=()):
    """Write ``traj.to_dict()`` to a YAML file atomically; returns the path.

    Raises
    ------
    ConfigError
        ``path`` is one of ``inputs`` or lies in a rosbag2 directory.
    """
    return write_text_atomic(path, yaml.safe_dump(traj.to_dict(), sort_keys=False),
                             inputs=inputs)


def load_trajectory(path):
    """Read a trajectory YAML written by :func:`save_trajectory`.

    Raises
    ------
    ConfigError
        Missing file, invalid YAML or content.
    """
    path = Path(path)
    d = read_yaml_file(path, "trajectory file", ConfigError)
    try:
        traj = trajectory_from_dict(d)
    except ConfigError as exc:
        raise ConfigError(f"trajectory file '{path}': {exc}") from None
    traj.source = str(path)         # named by the joint checks (a file of another robot)
    return traj


def trajectory_label(traj) -> str:
    """``trajectory file 'x.yaml'`` for a trajectory read from a file, else ``trajectory``."""
    src = getattr(traj, "source", None)
    return f"trajectory file '{src}'" if src else "trajectory"


# ----------------------------------------------------------------- limits
def _limit_arrays(model):
    n = model.n
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    vmax, amax = np.full(n, np.inf), np.full(n, np.inf)
    for k, j in enumerate(model.config.joints):
        lim = j.limits
        if lim.position is not None:
            lo[k], hi[k] = lim.position
        if lim.velocity is not None:
            vmax[k] = lim.velocity
        if lim.acceleration is not None:
            amax[k] = lim.acceleration
    return lo, hi, vmax, amax


def check_limits(model, traj, dt=1e-3):
    """Check a trajectory against the joint limits of ``model`` on a time grid.

    Parameters
    ----------
    model : RobotModel
    traj : FourierTrajectory or BSplineTrajectory
    dt : float
        Grid step [s].

    Raises
    ------
    ExcitationError
        Wrong number of joints, or a position, velocity or acceleration limit
        violated; the message names the joint, the limit, the value and the time.
    """
    if traj.n_joints != model.n:
        raise ExcitationError(f"{trajectory_label(traj)} has {traj.n_joints} joints, robot "
                              f"'{model.config.name}' has {model.n}")
    t = np.arange(0.0, traj.duration + 0.5 * dt, dt)
    q, dq, ddq = traj.evaluate(t)
    lo, hi, vmax, amax = _limit_arrays(model)
    checks = [("position", q < lo - 1e-12, q, "rad"), ("position", q > hi + 1e-12, q, "rad"),
              ("velocity", np.abs(dq) > vmax * (1 + 1e-9), dq, "rad/s"),
              ("acceleration", np.abs(ddq) > amax * (1 + 1e-9), ddq, "rad/s^2")]
    for what, bad, x, unit in checks:
        if bad.any():
            i, k = np.argwhere(bad)[0]
            if what == "position":
                limit = f"[{lo[k]:.6g}, {hi[k]:.6g}]"
            else:
                limit = f"{(vmax if what == 'velocity' else amax)[k]:.6g}"
            if getattr(model, "joint_types", None) and model.joint_types[k] == "prismatic":
                unit = unit.replace("rad", "m")
            raise ExcitationError(
                f"trajectory violates the {what} limit of joint '{model.joint_names[k]}': "
                f"{x[i, k]:.6g} {unit} at t = {t[i]:.4g} s (limit {limit} {unit})")


def scale_to_limits(model, traj, margin=LIMIT_MARGIN, dt=1e-3, per_joint=False):
    """Largest scaled copy (factor <= 1) of ``traj`` within ``margin`` of the limits.

    The excursion about the start point is scaled, so velocity and acceleration
    scale with it; the position range is kept inside the limits (shrunk by
    ``(1 - margin) / 2`` of the range at each end). One factor for all joints (the shape
    of an optimised trajectory is kept), or with ``per_joint`` one factor per joint (each
    joint as large as its own limits allow).

    Raises
    ------
    ExcitationError
        The start point itself lies outside the position limits.
    """
    lo, hi, vmax, amax = _limit_arrays(model)
    t = np.arange(0.0, traj.duration + 0.5 * dt, dt)
    q, dq, ddq = traj.evaluate(t)
    start = q[0]
    with np.errstate(invalid="ignore"):          # continuous joints: infinite limits
        span = hi - lo
        lo_m = np.where(np.isfinite(span), lo + (1 - margin) / 2 * span, lo)
        hi_m = np.where(np.isfinite(span), hi - (1 - margin) / 2 * span, hi)
    if np.any(start < lo_m) or np.any(start > hi_m):
        k = int(np.flatnonzero((start < lo_m) | (start > hi_m))[0])
        unit = "m" if getattr(model, "joint_types", None) and \
            model.joint_types[k] == "prismatic" else "rad"
        raise ExcitationError(f"excitation start {start[k]:.4g} {unit} of joint "
                              f"'{model.joint_names[k]}' is outside its position limits "
                              f"[{lo[k]:.4g}, {hi[k]:.4g}] {unit} (with margin)")
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = q - start
        up = np.where(dev > 0, (hi_m - start) / dev, np.inf)
        down = np.where(dev < 0, (lo_m - start) / dev, np.inf)
        factors = np.fmin.reduce([
            np.ones(q.shape[1]), np.nanmin(up, axis=0), np.nanmin(down, axis=0),
            margin * vmax / np.abs(dq).max(axis=0), margin * amax / np.abs(ddq).max(axis=0)])
    factors = np.where(np.isnan(factors), 1.0, factors)
    if per_joint:
        return traj.scaled(factors) if np.any(factors < 1.0) else traj
    factor = float(factors.min())
    return traj.scaled(factor) if factor < 1.0 else traj


def _default_amplitude(lower, upper, margin=LIMIT_MARGIN):
    """Default excursion per joint of :func:`trajectory_from_config` [rad or m].

    Parameters
    ----------
    lower, upper : ndarray (n,)
        Position limits [rad or m]; infinite for unlimited (continuous) joints.
    margin : float
        Fraction of the position range the excitation may use.

    Returns
    -------
    ndarray (n,)
        ``min(1, margin * (upper - lower) / 2)``: 1 rad for revolute joints with a range
        of a few radians (and unlimited ones), half the usable stroke of a prismatic joint.
        :func:`scale_to_limits` scales all joints by one factor, so an excursion of 1 on
        a joint with a 0.2 m stroke would shrink every joint's motion five-fold.
    """
    with np.errstate(invalid="ignore"):
        half = 0.5 * margin * (np.asarray(upper, float) - np.asarray(lower, float))
    return np.where(np.isfinite(half) & (half > 0), np.minimum(1.0, half), 1.0)


def trajectory_from_config(model, spec=None):
    """Excitation trajectory from a robot config's ``simulation.excitation`` mapping.

    Random coefficients (seeded) are scaled to stay within ``margin`` (default 0.9)
    of the position, velocity and acceleration limits (:func:`scale_to_limits`), by one
    common factor or (``scaling: joint``, what ``init`` writes) each joint by its own.

    Parameters
    ----------
    model : RobotModel
    spec : mapping, optional
        Default ``model.config.simulation.excitation``. Keys:

        - ``type``: ``bspline`` (default) or ``fourier``;
        - ``seed`` (int, default 0); ``margin`` (default 0.9);
        - ``scaling``: ``common`` (default: one factor, the shape is kept) or ``joint``
          (each joint as large as its own limits allow);
        - ``start``: rest position per joint [rad] (default: middle of the position
          limits, 0 for unlimited joints);
        - ``amplitude``: per-joint (list) or common excursion before scaling [rad or m],
          default per joint the smaller of 1 and half the joint's position range within
          the margin (a prismatic joint's 0.2 m stroke or a narrow revolute joint must not
          scale down the excursion of every other joint);
        - bspline: ``duration`` [s] (default 10), ``segments`` (knot spans, default 10);
        - fourier: ``base_frequency`` [Hz] (default 0.1), ``harmonics`` (default 5),
          ``periods`` (default 1).
        A ``file`` key loads a saved trajectory instead (path relative to the config).

    Returns
    -------
    FourierTrajectory or BSplineTrajectory

    Raises
    ------
    ConfigError
        Unknown keys or bad values.
    """
    spec = dict(model.config.simulation.excitation if spec is None else spec)
    if "file" in spec:
        path = Path(spec["file"])
        if not path.is_absolute() and model.config.source is not None:
            path = Path(model.config.source).parent / path
        return load_trajectory(path)
    kind = spec.pop("type", "bspline")
    common = {"seed", "margin", "start", "amplitude", "scaling"}
    allowed = common | ({"duration", "segments"} if kind == "bspline" else
                        {"base_frequency", "harmonics", "periods"})
    if kind not in ("bspline", "fourier"):
        raise ConfigError(f"simulation.excitation.type must be 'bspline' or 'fourier', "
                          f"got {kind!r}")
    extra = sorted(set(spec) - allowed)
    if extra:
        raise ConfigError(f"simulation.excitation ({kind}): unknown key(s) {extra}; allowed "
                          f"{sorted(allowed)}")
    try:
        n = model.n
        rng = np.random.default_rng(int(spec.get("seed", 0)))
        margin = float(spec.get("margin", LIMIT_MARGIN))
        lo, hi, _, _ = _limit_arrays(model)
        if spec.get("amplitude") is None:
            amp = _default_amplitude(lo, hi, margin)
        else:
            amp = np.broadcast_to(np.asarray(spec["amplitude"], dtype=float), (n,)).copy()
        if spec.get("start") is not None:
            start = np.broadcast_to(np.asarray(spec["start"], float), (n,)).copy()
        else:
            with np.errstate(invalid="ignore"):  # continuous joints: infinite limits
                start = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), 0.0)
        names = model.joint_names
        if kind == "bspline":
            segments = int(spec.get("segments", 10))
            if segments < 2:
                raise ConfigError(f"simulation.excitation.segments must be >= 2, got {segments}")
            ctrl = start + amp * rng.uniform(-1.0, 1.0, (segments - 1, n))
            traj = BSplineTrajectory(ctrl, float(spec.get("duration", 10.0)), start,
                                     joint_names=names)
        else:
            M = int(spec.get("harmonics", 5))
            if M < 1:
                raise ConfigError(f"simulation.excitation.harmonics must be >= 1, got {M}")
            ff = float(spec.get("base_frequency", 0.1))
            w = 2 * np.pi * ff * np.arange(1, M + 1)
            # velocity amplitudes giving position excursions ~ amp (a_l / (w l) ~ amp / M)
            a = rng.uniform(-1, 1, (n, M)) * w * amp[:, None] / M
            b = rng.uniform(-1, 1, (n, M)) * w * amp[:, None] / M
            traj = FourierTrajectory(a, b, ff, start, int(spec.get("periods", 1)),
                                     joint_names=names)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"simulation.excitation ({kind}) {spec}: {exc} (amplitude and start "
                          f"take one value or one per joint, {model.n} here)") from None
    scaling = spec.get("scaling", "common")
    if scaling not in ("common", "joint"):
        raise ConfigError(f"simulation.excitation.scaling must be 'common' or 'joint', got "
                          f"{scaling!r}")
    return scale_to_limits(model, traj, margin, per_joint=scaling == "joint")
