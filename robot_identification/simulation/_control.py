"""Joint-space controllers of the simulated (or a real) arm: PD with gravity compensation.

Pure, ROS-free classes: ``controller(q_d, dq_d, measurement) -> u``. The pd_controller
node wraps them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from robot_identification.errors import ConfigError, DataError
from robot_identification.excitation import trajectory_from_config
from robot_identification.simulation._simulator import Simulator

#: Bandwidth [Hz] of the default gains when the config gives none.
DEFAULT_BANDWIDTH_HZ = 5.0
#: Elastic default gains: the closed loop's bandwidth at most this fraction of each joint's
#: resonance sqrt(K / M_kk) (the link on its spring).
ELASTIC_BANDWIDTH_FRACTION = 1.0 / 3.0
#: Elastic default gains: K_D dt / (link-referred rotor inertia) at most this at the
#: config's control rate (zero-order hold on the motor loop; docs/simulation.md).
ELASTIC_KD_DT_MAX = 0.3
#: Elastic default gains: damping ratio kept when the K_D cap binds (K_P lowered with it).
ELASTIC_MIN_DAMPING = 0.7
#: :func:`delay_tolerant_gains`: the bandwidth scales tried, 1, 0.8, 0.64, ... down to
#: :data:`MIN_GAIN_SCALE`.
GAIN_SCALE_STEP, MIN_GAIN_SCALE = 0.8, 1e-3


def _effort_limits(model):
    return np.array([j.limits.effort if j.limits.effort is not None else np.inf
                     for j in model.config.joints])


class _GravityMixin:
    def _init_gravity(self, model):
        self.model = model
        self._pm = model.pin_model
        self._data = self._pm.createData()

    def position_error(self, reference, measured):
        """``reference - measured`` (n,); for continuous joints the shortest angle, in
        [-pi, pi): a driver reporting their angle in [-pi, pi) must not turn a small error
        into a 2 pi one (a full-effort command)."""
        e = np.asarray(reference, dtype=float) - np.asarray(measured, dtype=float)
        cont = self.model.continuous_joints
        if cont.any():
            e = e.copy()
            e[cont] = (e[cont] + np.pi) % (2 * np.pi) - np.pi
        return e

    def gravity(self, q):
        """Gravity torques g(q) (n,) [N*m] of the link model (``computeGeneralizedGravity``)."""
        g = pin.computeGeneralizedGravity(self._pm, self._data, self.model.pin_configuration(q))
        return self.model.from_pin_v(g)

    def gravity_jacobian(self, q):
        """dg/dq (n, n) [N*m/rad] (``computeGeneralizedGravityDerivatives``), config order."""
        G = pin.computeGeneralizedGravityDerivatives(self._pm, self._data,
                                                     self.model.pin_configuration(q))
        idx = self.model.velocity_indices
        return G[np.ix_(idx, idx)]


def _gains(model, kp, kd, inertia):
    n = model.n
    sim = model.config.simulation
    w = 2 * np.pi * DEFAULT_BANDWIDTH_HZ
    kp = np.asarray(kp if kp is not None else (sim.kp if sim.kp is not None
                                               else inertia * w ** 2), dtype=float)
    kd = np.asarray(kd if kd is not None else (sim.kd if sim.kd is not None
                                               else 2 * inertia * w), dtype=float)
    kp, kd = np.broadcast_to(kp, (n,)).copy(), np.broadcast_to(kd, (n,)).copy()
    if np.any(kp <= 0) or np.any(kd < 0) or not np.all(np.isfinite(kp + kd)):
        raise ConfigError(f"PD gains must be kp > 0, kd >= 0 per joint, got kp={kp}, kd={kd}")
    return kp, kd


def _inertia_diagonal_at_zero(model):
    """Diagonal (n,) [kg*m^2] of the joint-space inertia matrix M(q = 0) (pinocchio
    ``crba``), config order: the inertia each default gain design works on."""
    pm = model.pin_model
    M = pin.crba(pm, pm.createData(), model.pin_configuration(np.zeros(model.n)))
    return np.diag(M)[model.velocity_indices]


def elastic_default_gains(model, rotor, stiffness):
    """Default PD gains of :class:`ElasticPDController` when the config gives none.

    A critically damped design on the joint's whole inertia, link and rotor (the rigid
    approximation of the loop, below the joint's resonance):
    K_P = J w^2, K_D = 2 J w with J = M_kk(q = 0) + B_k (B: the link-referred rotor
    inertia), w = min(2 pi :data:`DEFAULT_BANDWIDTH_HZ`, sqrt(K_k / M_kk)
    :data:`ELASTIC_BANDWIDTH_FRACTION`). K_D is capped at
    :data:`ELASTIC_KD_DT_MAX` B_k / dt (dt = 1 / ``simulation.rate_hz``: the motor loop under
    a zero-order hold); where that binds, K_P is lowered to keep the damping ratio
    :data:`ELASTIC_MIN_DAMPING` of the rigid approximation. A design on the rotor inertia
    alone (as before) puts the loop's link-side resonance at w sqrt(B / J) with damping ratio
    sqrt(B / J): 1.1 Hz and 0.22 for the starter's rotor inertia of 5 % of the link's, inside
    the excitation's band (tracking errors of 50-150 % on five of six arms, docs/simulation.md).

    Parameters
    ----------
    model : RobotModel
        Elastic model.
    rotor : ndarray (n,)
        Link-referred rotor inertias [kg*m^2].
    stiffness : ndarray (n,)
        Joint stiffness K [N*m/rad].

    Returns
    -------
    kp, kd : ndarray (n,)
        [N*m/rad], [N*m*s/rad].
    """
    link = np.maximum(_inertia_diagonal_at_zero(model), 1e-9)
    rotor = np.maximum(np.asarray(rotor, dtype=float), 1e-9)
    J = link + rotor
    w = np.minimum(2 * np.pi * DEFAULT_BANDWIDTH_HZ,
                   ELASTIC_BANDWIDTH_FRACTION * np.sqrt(np.asarray(stiffness) / link))
    kd = np.minimum(2 * J * w, ELASTIC_KD_DT_MAX * rotor * float(model.config.simulation.rate_hz))
    kp = np.minimum(J * w ** 2, (kd / (2 * ELASTIC_MIN_DAMPING)) ** 2 / J)
    return kp, kd


class ElasticPDController(_GravityMixin):
    """PD on motor positions with on-line gravity compensation for elastic joints.

    De Luca, Siciliano & Zollo (2005), Automatica 41(10), the regulator used by
    Zollo et al. (2014):

        u = K_P (theta_d - theta) + K_D (dtheta_d - dtheta) + g(theta_tilde),
        theta_tilde = theta - K^-1 g(q_d),   theta_d = q_d + K^-1 g(q_d),

    with dtheta_d = dq_d + K^-1 (dg/dq)(q_d) dq_d (zero for a set point). At the
    set point q = q_d, theta = theta_d, theta_tilde = q_d and u = g(q_d) = K (theta - q):
    the equilibrium of the arm, so regulation has no steady-state error (without
    friction). The paper's stability condition lambda_min(K) > alpha,
    alpha >= ||dg/dq||, is checked by :meth:`stability_margin`.

    Parameters
    ----------
    model : RobotModel
        Elastic model (stiffness ``drive.stiffness`` per joint).
    kp, kd : array_like (n,), optional
        Gains [N*m/rad], [N*m*s/rad]; default the config's ``simulation.kp/kd``, else
        :func:`elastic_default_gains` (the link and rotor inertia, below the joint's
        resonance, K_D within the motor loop's zero-order-hold limit).
    saturate : bool
        Clip u to the joints' effort limits.
    """

    def __init__(self, model, kp=None, kd=None, saturate=True):
        if not model.config.elastic:
            raise ConfigError(f"robot '{model.config.name}' is rigid; use RigidPDController")
        self._init_gravity(model)
        drive = [j.drive for j in model.config.joints]
        self.K = np.array([d.get("stiffness", 0.0) for d in drive])
        if np.any(self.K <= 0):
            raise ConfigError(f"robot '{model.config.name}': the elastic PD controller needs "
                              f"a positive stiffness K for every joint")
        rotor = np.array([d.get("rotor_inertia", 0.0) for d in drive]) * model.gear_ratios ** 2
        sim = model.config.simulation
        if (kp is None and sim.kp is None) or (kd is None and sim.kd is None):
            kp_d, kd_d = elastic_default_gains(model, rotor, self.K)
            kp = kp if kp is not None else (sim.kp if sim.kp is not None else kp_d)
            kd = kd if kd is not None else (sim.kd if sim.kd is not None else kd_d)
        self.kp, self.kd = _gains(model, kp, kd, np.maximum(rotor, 1e-6))
        self.limits = _effort_limits(model) if saturate else np.full(model.n, np.inf)

    def references(self, q_d, dq_d):
        """Motor references theta_d (n,) and dtheta_d (n,) of link references q_d, dq_d."""
        q_d = np.asarray(q_d, dtype=float)
        dq_d = np.asarray(dq_d, dtype=float)
        theta_d = q_d + self.gravity(q_d) / self.K
        dtheta_d = dq_d + (self.gravity_jacobian(q_d) @ dq_d) / self.K
        return theta_d, dtheta_d

    def __call__(self, q_d, dq_d, measurement):
        """Command u (n,) [N*m, link-referred] from references and a measurement dict.

        Parameters
        ----------
        q_d, dq_d : array_like (n,)
            Link position/velocity references [rad], [rad/s].
        measurement : mapping
            ``theta``, ``dtheta`` (n,): link-referred motor position/velocity.
        """
        try:
            theta = np.asarray(measurement["theta"], dtype=float)
            dtheta = np.asarray(measurement["dtheta"], dtype=float)
        except KeyError as exc:
            raise DataError(f"elastic PD controller needs motor states: missing {exc}") from None
        q_d = np.asarray(q_d, dtype=float)
        g_d = self.gravity(q_d)
        theta_d, dtheta_d = self.references(q_d, dq_d)
        u = (self.kp * self.position_error(theta_d, theta) + self.kd * (dtheta_d - dtheta)
             + self.gravity(theta - g_d / self.K))
        return np.clip(u, -self.limits, self.limits)

    def stability_margin(self, q_samples):
        """lambda_min(K) - max ||dg/dq||_2 over configurations (m, n); > 0 is required."""
        alpha = max(np.linalg.norm(self.gravity_jacobian(q), 2)
                    for q in np.atleast_2d(q_samples))
        return float(self.K.min() - alpha)


class RigidPDController(_GravityMixin):
    """PD with gravity compensation for rigid joints (Takegaki & Arimoto 1981).

        u = K_P (q_d - q) + K_D (dq_d - dq) + g(q),

    clipped to the effort limits (q_d - q: the shortest angle for continuous joints).

    Parameters
    ----------
    model : RobotModel
    kp, kd : array_like (n,), optional
        Default the config's gains, else a 5 Hz critically damped design on the diagonal
        of the inertia matrix at q = 0 plus the link-referred rotor inertia.
    saturate : bool
    """

    def __init__(self, model, kp=None, kd=None, saturate=True):
        self._init_gravity(model)
        rotor = np.array([j.drive.get("rotor_inertia", 0.0) for j in model.config.joints])
        inertia = _inertia_diagonal_at_zero(model) + rotor * model.gear_ratios ** 2
        self.kp, self.kd = _gains(model, kp, kd, np.maximum(inertia, 1e-6))
        self.limits = _effort_limits(model) if saturate else np.full(model.n, np.inf)

    def __call__(self, q_d, dq_d, measurement):
        """Joint torques u (n,) [N*m] from references and a measurement (``q``, ``dq``)."""
        try:
            q = np.asarray(measurement["q"], dtype=float)
            dq = np.asarray(measurement["dq"], dtype=float)
        except KeyError as exc:
            raise DataError(f"PD controller needs joint states: missing {exc}") from None
        u = (self.kp * self.position_error(q_d, q) + self.kd * (np.asarray(dq_d) - dq)
             + self.gravity(q))
        return np.clip(u, -self.limits, self.limits)


def make_controller(model, kp=None, kd=None, saturate=True):
    """PD controller of the model: :class:`ElasticPDController` or :class:`RigidPDController`."""
    cls = ElasticPDController if model.config.elastic else RigidPDController
    return cls(model, kp, kd, saturate)


def tolerated_command_delay(model, controller=None, rate_hz=None, q=None, max_periods=40):
    """Largest command delay, in whole control periods, the linearised closed loop tolerates.

    The arm (:class:`~robot_identification.simulation.Simulator` with the drives' viscous
    friction only: the sign laws have no derivative at rest, and only add damping about a
    moving state) is linearised at
    rest at link positions ``q`` (elastic: theta = q + K^-1 g(q)), held by ``controller``
    with the reference q: x_{k+1} = A x_k + B u_{k-d}, u_k = C x_k (central differences of
    one control period under a zero-order hold). The loop with d periods of delay is
    stable when the spectral radius of the augmented map on (x_k, u_{k-1}, ..., u_{k-d})
    is at most 1 (+1e-7); d = 0 is a command computed from the state at the start of the
    period it is held over (the lockstep simulation). A command held over the period
    after the one it answers, e.g. because a simulator stepped on before the controller
    answered, or a controller combined a new link state with the previous motor state, is
    d = 1.

    Parameters
    ----------
    model : RobotModel
    controller : callable, optional
        ``controller(q_d, dq_d, measurement) -> u`` (:func:`make_controller`); default
        the model's PD with the config's gains, unsaturated.
    rate_hz : float, optional
        Control rate [Hz]; default the config's ``simulation.rate_hz``.
    q : array_like (n,), optional
        Link positions [rad] of the linearisation; default the start of the config's
        excitation.
    max_periods : int
        Largest delay tried.

    Returns
    -------
    int
        The largest d <= ``max_periods`` for which the loops with 0..d periods of delay are
        all stable; -1 when even d = 0 is unstable.

    Source: the discrete-time delay augmentation, e.g. Franklin, Powell & Workman,
    *Digital Control of Dynamic Systems* (1998), Sec. 4.3.4.
    """
    law = controller if controller is not None else make_controller(model, saturate=False)
    loop = _LinearLoop(model, law, rate_hz, q)
    C = loop.feedback(law)
    for d in range(max_periods + 1):
        if not loop.stable(C, d):
            return d - 1
    return max_periods


class _LinearLoop:
    """The arm of :func:`tolerated_command_delay` linearised at rest (A, B: one control
    period under a zero-order hold, central differences) with the command ``law`` holds it
    with; :meth:`feedback` C of any law with the same equilibrium command (e.g. the same
    gains scaled), :meth:`stable` with d periods of delay."""

    def __init__(self, model, law, rate_hz, q):
        n = self.n = model.n
        sim = Simulator(model, rate_hz=rate_hz, quantise=False, friction="regressor",
                        integrator="rk4")
        # the viscous terms only (linear in velocity)
        sim.dynamics.friction = sim.friction = sim.dynamics.friction.viscous_only()
        if q is None:
            q = trajectory_from_config(model).evaluate(0.0)[0][0]
        self.q = q = np.asarray(q, dtype=float).reshape(n)
        sim.reset(q)
        self.x0 = x0 = sim._x.copy()
        self.nx = nx = x0.size
        self.elastic = sim.elastic

        def step(x, u):
            sim._x, sim.t = x.copy(), 0.0
            sim.step(u)
            return sim._x.copy()

        u0 = law(q, np.zeros(n), self.measurement(x0))
        self.A = self._jac(lambda x: step(x, u0), x0, nx)
        self.B = self._jac(lambda u: step(x0, u), u0, n)

    @staticmethod
    def _jac(f, x, m, eps=1e-6):
        return np.column_stack([(f(x + eps * e) - f(x - eps * e)) / (2 * eps)
                                for e in np.eye(m)])

    def measurement(self, x):
        n = self.n
        if self.elastic:
            return {"q": x[:n], "theta": x[n:2 * n], "dq": x[2 * n:3 * n],
                    "dtheta": x[3 * n:]}
        return {"q": x[:n], "dq": x[n:]}

    def feedback(self, law):
        """C (n, nx): the law's command about the rest state, u_k = C x_k."""
        zero = np.zeros(self.n)
        return self._jac(lambda x: law(self.q, zero, self.measurement(x)), self.x0, self.nx)

    def stable(self, C, d):
        """Spectral radius <= 1 (+1e-7) of the loop with d periods of command delay (the
        map on (x_k, u_{k-1}, ..., u_{k-d}))."""
        n, nx, A, B = self.n, self.nx, self.A, self.B
        m = nx + d * n
        M = np.zeros((m, m))
        if d == 0:
            M[:, :] = A + B @ C
        else:
            M[:nx, :nx] = A
            M[:nx, m - n:] = B                    # the command of d periods ago
            M[nx:nx + n, :nx] = C                 # u_k becomes u_{k-1} of the next period
            for i in range(1, d):
                M[nx + i * n:nx + (i + 1) * n, nx + (i - 1) * n:nx + i * n] = np.eye(n)
        return bool(np.max(np.abs(np.linalg.eigvals(M))) <= 1.0 + 1e-7)


@dataclass(frozen=True)
class GainChoice:
    """Gains chosen by :func:`delay_tolerant_gains`.

    ``kp``, ``kd`` (n,) [N*m/rad, N*m*s/rad]: the gains to use (``given_kp``, ``given_kd``
    scaled by ``scale``: kp s^2, kd s); ``tolerated``, ``given_tolerated``: the command
    delay [periods] their linearised loop tolerates (:func:`tolerated_command_delay`; -1:
    unstable even without delay); ``required``: the delay asked for; ``rate_hz`` [Hz];
    ``ok``: ``tolerated >= required``; ``changed``: ``scale < 1``.
    """

    kp: np.ndarray
    kd: np.ndarray
    scale: float
    tolerated: int
    given_kp: np.ndarray
    given_kd: np.ndarray
    given_tolerated: int
    required: int
    rate_hz: float

    @property
    def ok(self) -> bool:
        return self.tolerated >= self.required

    @property
    def changed(self) -> bool:
        return self.scale < 1.0

    def describe(self, robot="", source="the gains") -> str:
        """One line: which gains, why, the margin (for a log or a warning)."""
        def fmt(x):
            return "[" + ", ".join(f"{v:.4g}" for v in x) + "]"
        given = (f"{source} kp={fmt(self.given_kp)} kd={fmt(self.given_kd)}"
                 + (f" of robot '{robot}'" if robot else ""))
        if not self.changed:
            return (f"{given} tolerate {'at least ' if self.ok else ''}{self.tolerated} "
                    f"period(s) of command delay at {self.rate_hz:g} Hz (required "
                    f"{self.required})")
        why = (f"tolerate {self.given_tolerated} period(s) of command delay at "
               f"{self.rate_hz:g} Hz" + (" (unstable even without delay)"
                                         if self.given_tolerated < 0 else "")
               + f", {self.required} required")
        if self.ok:
            return (f"{given} {why}: using kp={fmt(self.kp)} kd={fmt(self.kd)} (bandwidth "
                    f"scale {self.scale:.3g}: kp s^2, kd s), which tolerate at least "
                    f"{self.tolerated}")
        return (f"{given} {why}; no bandwidth scale down to {MIN_GAIN_SCALE:g} tolerates it: "
                f"the most tolerant, kp={fmt(self.kp)} kd={fmt(self.kd)} (scale "
                f"{self.scale:.3g}), tolerate {self.tolerated}")


def delay_tolerant_gains(model, kp=None, kd=None, rate_hz=None, periods=0, q=None):
    """PD gains whose loop tolerates ``periods`` of command delay at ``rate_hz``.

    The given gains (default: the config's, else the default design of
    :func:`make_controller`) when :func:`tolerated_command_delay` of their loop is at least
    ``periods``; otherwise the same gains at the largest bandwidth scale s (kp s^2, kd s)
    that is: scales 1, :data:`GAIN_SCALE_STEP`, its square, ... down to
    :data:`MIN_GAIN_SCALE` are tried and the first one that tolerates the delay is taken
    (up to 1 / :data:`GAIN_SCALE_STEP` below the edge of stability, which the loop at the
    edge would sit on: a margin, not a refinement). A scale keeps the ratio
    kp / kd^2 (the damping ratio of the PD on a pure inertia) and divides the loop's
    bandwidth by 1 / s: the motor loop of an elastic arm, whose stiff motor-side modes
    (the rotor on its spring) a control period of delay destabilises, slows below them.
    When no scale tolerates the delay, the most tolerant one tried (the largest scale of
    the largest tolerated delay) is returned with ``ok`` false: the caller decides (e.g.
    a fast mode above the Nyquist frequency, which no PD at that rate damps).

    Parameters
    ----------
    model : RobotModel
    kp, kd : array_like (n,), optional
        Gains [N*m/rad], [N*m*s/rad], as for :func:`make_controller`.
    rate_hz : float, optional
        Control rate [Hz]; default the config's ``simulation.rate_hz``.
    periods : int
        Command delay [control periods] to tolerate: 0 for a command applied over the
        period of the state it answers (a lockstep simulation), at least 1 on a robot that
        runs free of its controller (the command answering a state is applied from the next
        period on).
    q : array_like (n,), optional
        Link positions [rad] of the linearisation (:func:`tolerated_command_delay`).

    Returns
    -------
    GainChoice
        (``ok`` false: no scale tolerates ``periods``.)
    """
    base = make_controller(model, kp, kd, saturate=False)
    rate = float(rate_hz if rate_hz is not None else model.config.simulation.rate_hz)
    periods = int(periods)
    loop = _LinearLoop(model, base, rate, q)

    def tolerated(s):
        C = loop.feedback(make_controller(model, base.kp * s * s, base.kd * s,
                                          saturate=False))
        for d in range(periods + 1):
            if not loop.stable(C, d):
                return d - 1
        return periods

    def choice(s, d):
        return GainChoice(base.kp * s * s, base.kd * s, float(s), int(d), base.kp.copy(),
                          base.kd.copy(), given, periods, rate)

    given = tolerated(1.0)
    if given >= periods:
        return choice(1.0, given)
    best, s = (1.0, given), 1.0
    while s * GAIN_SCALE_STEP >= MIN_GAIN_SCALE * (1 - 1e-9):
        s *= GAIN_SCALE_STEP
        d = tolerated(s)
        if d >= periods:
            return choice(s, d)
        if d > best[1]:
            best = (s, d)
    return choice(*best)
