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
from robot_identification.simulation._simulator import ArmDynamics, Simulator

#: Bandwidth [Hz] of the default gains when the config gives none.
DEFAULT_BANDWIDTH_HZ = 5.0
#: Elastic default gains: the closed loop's bandwidth at most this fraction of each joint's
#: resonance sqrt(K / M_kk) (the link on its spring).
ELASTIC_BANDWIDTH_FRACTION = 1.0 / 3.0
#: Elastic default gains: K_D dt / (link-referred rotor inertia) at most this at the
#: control rate (zero-order hold on the motor loop; docs/simulation.md).
ELASTIC_KD_DT_MAX = 0.3
#: Elastic default gains: damping ratio kept when the K_D cap binds (K_P lowered with it).
ELASTIC_MIN_DAMPING = 0.7
#: Elastic gains designed from the model and the control period
#: (:func:`damped_elastic_gains`): the damping ratio every pole of the discrete closed loop
#: up to :data:`CHECKED_BAND_HZ` keeps.
DESIGN_DAMPING = 0.5
#: :func:`closed_loop_gains`: elastic gains (the config's or the default design's) whose
#: discrete closed loop at the run's rate is damped less than this (or has a growing pole) are
#: replaced by :func:`damped_elastic_gains`.
GIVEN_MIN_DAMPING = 0.05
#: [s] a pole of the linearised loop may grow no faster than e-fold in this time (a light
#: link's own mode beyond the controller's reach, which a motor PD under a hold slowly
#: destabilises and the drives' Coulomb friction, not in the linear model, outweighs).
LINK_MODE_GROWTH_TIME = 10.0
#: Where no gains reach :data:`DESIGN_DAMPING` (a link light against its rotor: the motor
#: hardly moves in the link's mode), the design keeps this share of the best damping reachable.
REACHABLE_SHARE = 0.8
#: The largest |z| of a pole near the Nyquist frequency (|arg z| > 0.9 pi): such a pole makes
#: the command alternate from one period to the next (a motor loop whose K_D dt / B nears 2).
CHATTER_RADIUS = 0.5
#: A forecast peak |dq| / velocity limit above this is said (:func:`velocity_message`): the
#: linearised forecast's own error (zollo_planar's config excitation at 250 Hz with the damped
#: gains: forecast 1.01, the nonlinear loop 0.86; the former loop: 3.32 for 3.31).
FORECAST_TOLERANCE = 1.05
#: [s] :class:`TrackingForecast` linearises the loop anew at the reference's position after
#: each segment this long: 0.25 s for arms of up to :data:`FORECAST_FINE_JOINTS` joints (a
#: linearisation takes milliseconds; zollo_planar's 4 s B-spline of +-2.7 rad at 1 kHz: 0.97
#: forecast for 0.94, 1.29 with 1 s segments), else 1 s (0.15-0.5 s each for six elastic
#: joints).
FORECAST_SEGMENT, FORECAST_FINE_SEGMENT, FORECAST_FINE_JOINTS = 1.0, 0.25, 3
#: [Hz] the poles whose damping the design and the check of configured gains require: the
#: excitation's band and well above it (faster poles: stable only).
CHECKED_BAND_HZ = 20.0
#: :func:`delay_tolerant_gains`: the bandwidth scales tried, 1, 0.8, 0.64, ... down to
#: :data:`MIN_GAIN_SCALE`.
GAIN_SCALE_STEP, MIN_GAIN_SCALE = 0.8, 1e-3
#: :meth:`ElasticPDController.feedforward`: reference samples taken on each side of the
#: instant (= refinements of the motor reference). 1: exact for the reduced model; the complete
#: one's S(q) ddtheta_d once refined (zollo_planar in MuJoCo at 1 kHz, bandwidth scale 1e-4 of
#: the closed loop's gains, friction off: largest |q - q_d| 0.018 rad over the study's 4 s
#: excitation, 0.22 rad with 2: a reference's jerk jump at its start, amplified by the second
#: refinement's differences, kicks the arm; the reduced model's, same du, 1.9 rad).
FEEDFORWARD_RADIUS = 1


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


def _loop_margins(A, Bm, C0, cols, gains, dt, w_check):
    """Per gain pair (kp, kd) (m, 2) of one joint: (damping, stable) of the discrete closed loop
    A + Bm (C0 - kp e_theta - kd e_dtheta) (the other joints' gains in C0). damping: the
    smallest zeta = -Re(s) / |s| of the poles s = ln(z) / dt with |s| <= ``w_check``; stable:
    every |z| <= exp(dt / :data:`LINK_MODE_GROWTH_TIME`), and |z| <= :data:`CHATTER_RADIUS`
    for the poles within 10 % of the Nyquist frequency (|arg z| > 0.9 pi)."""
    k, i_th, i_dth = cols
    M = np.repeat((A + Bm @ C0)[None], len(gains), axis=0)
    M[:, :, i_th] -= Bm[None, :, k] * gains[:, :1]
    M[:, :, i_dth] -= Bm[None, :, k] * gains[:, 1:]
    z = np.linalg.eigvals(M)
    r = np.abs(z)
    stable = r.max(axis=1) <= np.exp(dt / LINK_MODE_GROWTH_TIME)
    # a pole near the Nyquist frequency (z near the negative real axis): the command chatters
    stable &= np.where(np.abs(np.angle(z)) > 0.9 * np.pi, r, 0.0).max(axis=1) <= CHATTER_RADIUS
    s = np.log(z.astype(complex)) / dt
    w = np.abs(s)
    zeta = np.where(w <= w_check, -s.real / np.maximum(w, 1e-12), np.inf).min(axis=1)
    return zeta, stable


def loop_damping(model, kp, kd, rate_hz=None, q=None):
    """(damping, stable) of the elastic arm's whole linearised closed loop with the motor PD
    gains ``kp``, ``kd`` (n,) at ``rate_hz`` [Hz] (default the config's) about ``q`` (default
    the config's excitation start): the smallest damping ratio of its poles up to
    :data:`CHECKED_BAND_HZ` and whether no pole grows faster than the design allows
    (:func:`damped_elastic_gains`)."""
    rate = float(rate_hz or model.config.simulation.rate_hz)
    law = make_controller(model, kp, kd, saturate=False)
    loop = _LinearLoop(model, law, rate, q)
    n = model.n
    zeta, stable = _loop_margins(loop.A, loop.B, loop.feedback(law), (0, n, 3 * n),
                                 np.zeros((1, 2)), 1.0 / rate, 2 * np.pi * CHECKED_BAND_HZ)
    return float(zeta[0]), bool(stable[0])


def damped_elastic_gains(model, rate_hz=None, q=None, bandwidth_hz=DEFAULT_BANDWIDTH_HZ):
    """PD gains of :class:`ElasticPDController` that damp the whole loop, designed from the
    model and the control period (:func:`closed_loop_gains` where the config's or the default
    design's do not).

    The whole arm linearised at rest at ``q`` (:class:`_LinearLoop`: the complete or reduced
    elastic model with the drives' viscous friction, one control period dt = 1 / ``rate_hz``
    under a zero-order hold, the law's gravity terms) closed by the motor PD
    u = K_P (theta_d - theta) + K_D (dtheta_d - dtheta) + g(...) has poles z; s = ln(z) / dt.
    Joint by joint (two sweeps over the joints, each a 41 x 41 logarithmic grid in K_P, K_D
    refined once, the other joints' gains held), the gains are those whose loop has every
    pole up to :data:`CHECKED_BAND_HZ` damped by at least :data:`DESIGN_DAMPING`
    (zeta = -Re(s) / |s|), no pole growing faster than e-fold in
    :data:`LINK_MODE_GROWTH_TIME` (a light link's own mode beyond the loop's reach, which the
    drives' Coulomb friction outweighs), and the largest joint bandwidth
    sqrt(K_eff / J), K_eff = K_P K / (K_P + K) (the motor loop in series with the spring),
    J = M_kk(q) + B_k (link and link-referred rotor inertia), up to 2 pi
    :data:`DEFAULT_BANDWIDTH_HZ`. Where no gains reach that damping, the requirement is
    :data:`REACHABLE_SHARE` of the best damping on the grid.

    The link mode of a joint whose link inertia is large against its rotor's (Zollo's planar
    arm: M_11 = 19.9 kg m^2, B_1 = 0.21 kg m^2, the link alone on its spring at 2.0 Hz) is
    only damped through the motor: a stiff motor loop (K_P above K) leaves it nearly undamped
    (the config's 1 kHz gains: 1.7 Hz, zeta 0.006); a softer one with more damping damps it.
    docs/simulation.md, "Gains from the model and the control period".

    Parameters
    ----------
    model : RobotModel
        Elastic model.
    rate_hz : float, optional
        Control rate [Hz]; default the config's ``simulation.rate_hz``.
    q : array_like (n,), optional
        [rad] the linearisation pose; default the config's excitation start.
    bandwidth_hz : float
        [Hz] the joints' bandwidth sought at most.

    Returns
    -------
    kp, kd : ndarray (n,)
        [N*m/rad], [N*m*s/rad].

    Raises
    ------
    ConfigError
        A joint for which no stable gains are found.
    """
    rate = float(rate_hz or model.config.simulation.rate_hz)
    key = (model.config.name, model.config.source and str(model.config.source), rate,
           None if q is None else tuple(np.round(np.asarray(q, dtype=float), 12)),
           float(bandwidth_hz))
    if key in _DESIGNS:
        kp, kd = _DESIGNS[key]
        return kp.copy(), kd.copy()
    n, dt = model.n, 1.0 / rate
    drive = [j.drive for j in model.config.joints]
    B = np.maximum(np.array([d.get("rotor_inertia", 0.0) for d in drive])
                   * model.gear_ratios ** 2, 1e-9)
    K = np.array([d.get("stiffness", 0.0) for d in drive])
    law = make_controller(model, np.ones(n), np.ones(n), saturate=False)
    loop = _LinearLoop(model, law, rate, q)
    pm = model.pin_model
    M = np.diag(pin.crba(pm, pm.createData(), model.pin_configuration(loop.q)))[
        model.velocity_indices]
    J = np.maximum(M, 1e-9) + B
    C0 = loop.feedback(law)
    C0[:, n:2 * n] += np.eye(n)          # the gravity terms alone (kp = kd = 0)
    C0[:, 3 * n:] += np.eye(n)
    w_cap, w_check = 2 * np.pi * bandwidth_hz, 2 * np.pi * CHECKED_BAND_HZ
    kp, kd = J * (2 * np.pi * 0.2) ** 2, 2 * J * 2 * np.pi * 0.2       # slow and stable start
    for sweep in range(2):
        for k in range(n):
            lo = np.log10([J[k] * (2 * np.pi * 0.01) ** 2, J[k] * 2 * np.pi * 0.01])
            hi = np.log10([J[k] * (2 * w_cap) ** 2, 4 * J[k] * w_cap])
            need = None
            for rnd in range(2):
                m_ = 41 if rnd == 0 else 15
                P, D = np.meshgrid(np.linspace(lo[0], hi[0], m_), np.linspace(lo[1], hi[1], m_))
                g = 10.0 ** np.column_stack([P.ravel(), D.ravel()])
                C = C0.copy()
                C[:, n:2 * n] -= np.diag(kp) * (np.arange(n) != k)
                C[:, 3 * n:] -= np.diag(kd) * (np.arange(n) != k)
                zeta, stable = _loop_margins(loop.A, loop.B, C, (k, n + k, 3 * n + k), g, dt,
                                             w_check)
                if need is None:
                    if not stable.any():
                        raise ConfigError(
                            f"robot '{model.config.name}': no stable motor PD gains for "
                            f"{model.joint_names[k]} at {rate:g} Hz")
                    reach = float(np.minimum(zeta[stable], 10.0).max())
                    need = (DESIGN_DAMPING if reach >= DESIGN_DAMPING
                            else REACHABLE_SHARE * reach)
                keff = g[:, 0] * K[k] / (g[:, 0] + K[k])
                score = np.where(stable & (zeta >= need), np.minimum(
                    np.sqrt(keff / J[k]), w_cap) + 1e-3 * np.minimum(zeta, 1.0), -np.inf)
                i = int(np.argmax(score))
                if np.isfinite(score[i]):
                    kp[k], kd[k] = g[i]
                step = (hi - lo) / (m_ - 1) * 1.5
                lo, hi = np.log10([kp[k], kd[k]]) - step, np.log10([kp[k], kd[k]]) + step
    _DESIGNS[key] = (kp.copy(), kd.copy())
    return kp, kd


#: :func:`damped_elastic_gains` by (robot, config file, rate, pose, bandwidth)
_DESIGNS = {}


def elastic_default_gains(model, rotor, stiffness, rate_hz=None):
    """Default PD gains of :class:`ElasticPDController` when the config gives none.

    A critically damped design on the joint's whole inertia, link and rotor (the rigid
    approximation of the loop, below the joint's resonance):
    K_P = J w^2, K_D = 2 J w with J = M_kk(q = 0) + B_k (B: the link-referred rotor
    inertia), w = min(2 pi :data:`DEFAULT_BANDWIDTH_HZ`, sqrt(K_k / M_kk)
    :data:`ELASTIC_BANDWIDTH_FRACTION`). K_D is capped at
    :data:`ELASTIC_KD_DT_MAX` B_k / dt (dt = 1 / ``rate_hz``, default the config's
    ``simulation.rate_hz``: the motor loop under a zero-order hold); where that binds, K_P is
    lowered to keep the damping ratio :data:`ELASTIC_MIN_DAMPING` of the rigid approximation.
    A design on the rotor inertia alone (as before) puts the loop's link-side resonance at
    w sqrt(B / J) with damping ratio sqrt(B / J): 1.1 Hz and 0.22 for the starter's rotor
    inertia of 5 % of the link's, inside the excitation's band (tracking errors of 50-150 % on
    five of six arms, docs/simulation.md).

    Parameters
    ----------
    model : RobotModel
        Elastic model.
    rotor : ndarray (n,)
        Link-referred rotor inertias [kg*m^2].
    stiffness : ndarray (n,)
        Joint stiffness K [N*m/rad].
    rate_hz : float, optional
        Control rate [Hz]; default the config's ``simulation.rate_hz``.

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
    kd = np.minimum(2 * J * w, ELASTIC_KD_DT_MAX * rotor * float(
        rate_hz or model.config.simulation.rate_hz))
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
    rate_hz : float, optional
        Control rate [Hz] of the default design; default the config's ``simulation.rate_hz``.
    """

    def __init__(self, model, kp=None, kd=None, saturate=True, rate_hz=None):
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
            kp_d, kd_d = elastic_default_gains(model, rotor, self.K, rate_hz)
            kp = kp if kp is not None else (sim.kp if sim.kp is not None else kp_d)
            kd = kd if kd is not None else (sim.kd if sim.kd is not None else kd_d)
        self.kp, self.kd = _gains(model, kp, kd, np.maximum(rotor, 1e-6))
        self.B = rotor
        self.limits = _effort_limits(model) if saturate else np.full(model.n, np.inf)
        self._arm = ArmDynamics(model, "none")

    def link_torque(self, q, dq, ddq):
        """tau_J (n,) [N*m]: the joint torque the links need to move along q, dq, ddq (n,)
        [rad, rad/s, rad/s^2] (pinocchio ``rnea`` of the link model, gravity included)."""
        m = self.model
        tau = pin.rnea(self._pm, self._data, m.pin_configuration(np.asarray(q, dtype=float)),
                       m.to_pin_v(np.asarray(dq, dtype=float)),
                       m.to_pin_v(np.asarray(ddq, dtype=float)))
        return m.from_pin_v(tau)

    def feedforward(self, q_ref, dq_ref, ddq_ref, dt, radius=None):
        """The reference's feedforward (theta_d, dtheta_d, du), each (m - 2 r, n), for
        :meth:`__call__` at the samples r ... m - r - 1 of a reference sampled every ``dt``.

        An elastic joint follows q_d(t) when its spring carries the torque the arm needs,
        K (theta_d - q_d) + D (dtheta_d - dq_d) = tau_J, and the motor drives itself, the
        spring and, with rotor-link coupling, the links: u = tau_J + k_m tau_r, with (tau_J,
        tau_r) the inverse dynamics of the arm's model along (q_d, theta_d)
        (:meth:`ArmDynamics.inverse_dynamics
        <robot_identification.simulation._simulator.ArmDynamics.inverse_dynamics>`, the
        simulators' equations). Reduced model (Spong): tau_J = M(q) ddq + c + g of the links
        and u = tau_J + B ddtheta_d (De Luca 1998). Complete model (``coupling: complete``,
        both shipped elastic arms): the link equation holds S(q) ddtheta_d and velocity
        terms of the rotors, so theta_d depends on the reference's higher derivatives (De Luca
        & Lucibello 1998: the inverse dynamics of the complete model; exact after n - 1
        refinements because S is strictly upper triangular along a chain). Here the deflection
        e = theta_d - q_d starts at the rotors turning with their links (dtheta = dq) and is
        refined r times, e <- K^-1 (tau_J(dtheta_d = dq_d + e', ddtheta_d = ddq_d + e'') -
        D e') with e', e'' central differences of the previous e over one period (each
        refinement one sample less on each side); the last one gives theta_d = q_d + e,
        dtheta_d = dq_d + e' and u. du = u - g(theta_d - K^-1 g(q_d)): what the law adds to
        its gravity compensation at theta = theta_d, so that on the reference the law commands
        u (with du = u - g(q_d), as before, zollo_planar in MuJoCo, friction off, strayed
        0.31 rad from the study's excitation instead of 0.018 rad at 1 kHz and gain scale
        1e-4, 0.29 instead of 0.023 rad at 250 Hz and 0.01). At rest theta_d,
        dtheta_d are :meth:`references` and du = 0: the law is the regulator of De Luca,
        Siciliano & Zollo (2005).

        Sources: A. De Luca, "Decoupling and feedback linearization of robots with mixed
        rigid/elastic joints", Int. J. Robust Nonlinear Control 8 (1998); A. De Luca, P.
        Lucibello, "A general algorithm for dynamic feedback linearization of robots with
        elastic joints", IEEE ICRA 1998. The feedforward of the reference instead of the
        feedback's lead removes the loop's resonance from the tracking (docs/simulation.md,
        "Gains from the model and the control period").

        Parameters
        ----------
        q_ref, dq_ref, ddq_ref : array_like (m, n)
            The reference [rad, rad/s, rad/s^2] at t_i = t_0 + i ``dt``, m >= 2 r + 1.
        dt : float
            Sample period [s].
        radius : int, optional
            r >= 1; default :data:`FEEDFORWARD_RADIUS` (1: the reduced model exact, the
            complete one's S(q) ddtheta_d from the deflection at dtheta = dq).

        Returns
        -------
        theta_d, dtheta_d, du : ndarray (m - 2 r, n)
            [rad], [rad/s], [N*m].

        Raises
        ------
        ValueError
            Fewer than 2 r + 1 samples.
        """
        r = FEEDFORWARD_RADIUS if radius is None else int(radius)
        q, dq, ddq = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q_ref, dq_ref,
                                                                           ddq_ref))
        if r < 1 or q.shape[0] < 2 * r + 1:
            raise ValueError(f"the feedforward at radius {r} needs at least {2 * r + 1} "
                             f"samples, got {q.shape[0]}")
        inverse, K, D = self._arm.inverse_dynamics, self.K, self._arm.D
        e = np.array([inverse(a, a, v, v, c, c)[0] for a, v, c in zip(q, dq, ddq)]) / K
        for level in range(1, r + 1):
            de = (e[2:] - e[:-2]) / (2 * dt)
            dde = (e[2:] - 2 * e[1:-1] + e[:-2]) / dt ** 2
            sl = slice(level, q.shape[0] - level)
            qs, dqs, ddqs = q[sl], dq[sl], ddq[sl]
            out = [inverse(qs[i], qs[i] + e[i + 1], dqs[i], dqs[i] + de[i], ddqs[i],
                           ddqs[i] + dde[i]) for i in range(len(qs))]
            tau_j = np.array([o[0] for o in out])
            e = (tau_j - D * de) / K
        theta_d = qs + e
        # what the law adds to its gravity compensation at theta = theta_d
        du = np.array([o[1] - self.gravity(th - self.gravity(x) / K)
                       for o, th, x in zip(out, theta_d, qs)])
        return theta_d, dqs + de, du

    def feedforward_at(self, refs, dt):
        """:meth:`feedforward` at one instant from the reference sampled every ``dt`` [s]
        about it: ``refs`` 2 r + 1 (q_d, dq_d, ddq_d) (n,) x 3 [rad, rad/s, rad/s^2], the
        instant's in the middle (r = :data:`FEEDFORWARD_RADIUS` of them used, or fewer if
        fewer given, 1 at least). Returns (theta_d, dtheta_d, du) (n,) x 3.
        The in-cycle trajectory controller, the pd_controller node and the validation
        rollouts call it each period (:func:`sampled_feedforward`: along a whole sampled
        reference)."""
        q, dq, ddq = (np.array([x[k] for x in refs], dtype=float) for k in range(3))
        r = min(FEEDFORWARD_RADIUS, (len(refs) - 1) // 2)
        c = (len(refs) - 1) // 2
        sl = slice(c - r, c + r + 1)
        return tuple(x[0] for x in self.feedforward(q[sl], dq[sl], ddq[sl], dt, r))

    def references(self, q_d, dq_d):
        """Motor references theta_d (n,) and dtheta_d (n,) of link references q_d, dq_d."""
        q_d = np.asarray(q_d, dtype=float)
        dq_d = np.asarray(dq_d, dtype=float)
        theta_d = q_d + self.gravity(q_d) / self.K
        dtheta_d = dq_d + (self.gravity_jacobian(q_d) @ dq_d) / self.K
        return theta_d, dtheta_d

    def __call__(self, q_d, dq_d, measurement, feedforward=None):
        """Command u (n,) [N*m, link-referred] from references and a measurement dict.

        Parameters
        ----------
        q_d, dq_d : array_like (n,)
            Link position/velocity references [rad], [rad/s].
        measurement : mapping
            ``theta``, ``dtheta`` (n,): link-referred motor position/velocity.
        feedforward : tuple, optional
            (theta_d, dtheta_d, du) of :meth:`feedforward`: the motor references of the
            reference's inverse dynamics and the torque added (default: the regulator's
            references, :meth:`references`, nothing added).
        """
        try:
            theta = np.asarray(measurement["theta"], dtype=float)
            dtheta = np.asarray(measurement["dtheta"], dtype=float)
        except KeyError as exc:
            raise DataError(f"elastic PD controller needs motor states: missing {exc}") from None
        q_d = np.asarray(q_d, dtype=float)
        g_d = self.gravity(q_d)
        if feedforward is None:
            theta_d, dtheta_d = self.references(q_d, dq_d)
            du = 0.0
        else:
            theta_d, dtheta_d, du = feedforward
        u = (self.kp * self.position_error(theta_d, theta) + self.kd * (dtheta_d - dtheta)
             + self.gravity(theta - g_d / self.K) + du)
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
    rate_hz : float, optional
        Ignored (the rigid design does not depend on the control rate); accepted so that
        :func:`make_controller` calls both laws alike.
    """

    def __init__(self, model, kp=None, kd=None, saturate=True, rate_hz=None):
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


def sampled_feedforward(law, q_ref, dq_ref, ddq_ref, dt, after):
    """:meth:`ElasticPDController.feedforward` along references sampled each control period:
    (theta_d, dtheta_d, du), each (m, n).

    ``q_ref``, ``dq_ref``, ``ddq_ref`` (m, n) [rad, rad/s, rad/s^2] at t_i = t_0 + i dt;
    before the first sample the reference is taken as its first sample (held), ``after``
    = (q, dq, ddq) (n,) x 3 is the reference one period after the last sample, and held
    beyond (the :data:`FEEDFORWARD_RADIUS` samples each side the feedforward takes).
    """
    r = FEEDFORWARD_RADIUS
    ends = [(np.repeat(np.atleast_2d(x[0]), r, axis=0),
             np.repeat(np.atleast_2d(np.asarray(a, dtype=float)), r, axis=0))
            for x, a in zip((q_ref, dq_ref, ddq_ref), after)]
    q, dq, ddq = (np.concatenate([b, np.asarray(x, dtype=float), a])
                  for x, (b, a) in zip((q_ref, dq_ref, ddq_ref), ends))
    return law.feedforward(q, dq, ddq, dt, r)


def make_controller(model, kp=None, kd=None, saturate=True, rate_hz=None):
    """PD controller of the model: :class:`ElasticPDController` or :class:`RigidPDController`
    (``rate_hz``: the control rate of the elastic default design, default the config's)."""
    cls = ElasticPDController if model.config.elastic else RigidPDController
    return cls(model, kp, kd, saturate, rate_hz)


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


@dataclass(frozen=True)
class LoopGains:
    """Gains of a closed loop at a rate, chosen by :func:`closed_loop_gains`.

    ``kp``, ``kd`` (n,) [N*m/rad, N*m*s/rad]: the gains to use; ``source``: ``given`` (the
    caller's), ``config`` (``simulation.kp/kd``), ``design`` (the default design,
    :func:`elastic_default_gains` at the rate for elastic arms), ``damped design``
    (:func:`damped_elastic_gains`); ``damping``: the
    elastic loop's smallest damping ratio up to :data:`CHECKED_BAND_HZ` with these gains
    (:func:`loop_damping`; nan for rigid arms); ``scale``: the bandwidth scale of a fallback
    to :func:`delay_tolerant_gains` (1: none); ``note``: what changed and why ('' = the gains
    as they came).
    """

    kp: np.ndarray
    kd: np.ndarray
    source: str
    rate_hz: float
    damping: float = float("nan")
    scale: float = 1.0
    note: str = ""

    def describe(self, robot="") -> str:
        """One line: the gains, where they come from, what changed (for a log)."""
        def fmt(x):
            return "[" + ", ".join(f"{v:.4g}" for v in x) + "]"
        head = (f"{self.source} gains kp={fmt(self.kp)} kd={fmt(self.kd)}"
                + (f" of robot '{robot}'" if robot else "") + f" at {self.rate_hz:g} Hz")
        if np.isfinite(self.damping):
            head += f", damping {self.damping:.3g}"
        return head + (f" ({self.note})" if self.note else "")


def closed_loop_gains(model, kp=None, kd=None, rate_hz=None, q=None):
    """The PD gains of the closed loop at ``rate_hz`` without command delay (``simulate``,
    the hardware-like robot's in-cycle trajectory controller).

    Rigid arms: the given gains, else the config's, else the default design (unchanged).
    Elastic arms:

    - the config's gains (``simulation.kp/kd``, chosen for the config's rate), else
      :func:`elastic_default_gains` at ``rate_hz``: when their loop at ``rate_hz``
      (:func:`loop_damping`) has a pole that grows or a damping below
      :data:`GIVEN_MIN_DAMPING`, :func:`damped_elastic_gains` at ``rate_hz`` instead
      (``source`` 'damped design', ``note`` says both). Zollo's planar gains (K_P 10000,
      6000) leave its link modes at damping 0.004 at 250 Hz (a growing pole there) and 0.006
      at 1 kHz: the arm rang at 1.7 Hz after an excitation;
    - given gains (``kp``, ``kd``): as given.

    When the loop is nevertheless unstable, :func:`delay_tolerant_gains` at 0 periods scales
    the gains down (``scale``, ``note``).

    Parameters
    ----------
    model : RobotModel
    kp, kd : array_like (n,), optional
        [N*m/rad], [N*m*s/rad].
    rate_hz : float, optional
        [Hz]; default the config's ``simulation.rate_hz``.
    q : array_like (n,), optional
        [rad] the linearisation pose (default the config's excitation start).

    Returns
    -------
    LoopGains

    Raises
    ------
    ConfigError
        Gains that are not positive, or no stable design.
    """
    rate = float(rate_hz if rate_hz is not None else model.config.simulation.rate_hz)
    sim = model.config.simulation
    given = kp is not None or kd is not None
    configured = not given and sim.kp is not None and sim.kd is not None
    source = "given" if given else "config" if configured else "design"
    if not model.config.elastic:
        base = make_controller(model, kp, kd, saturate=False)
        return LoopGains(base.kp, base.kd, source, rate)
    base = make_controller(model, kp, kd, saturate=False, rate_hz=rate)
    kp, kd = base.kp, base.kd
    damping, stable = loop_damping(model, kp, kd, rate, q)
    note = ""
    if not given and not (stable and damping >= GIVEN_MIN_DAMPING):
        kp, kd = damped_elastic_gains(model, rate_hz=rate, q=q)
        before = "a growing pole" if not stable else f"damping {damping:.3g}"
        damping, stable = loop_damping(model, kp, kd, rate, q)
        whose = "the config's" if configured else "the default design's"
        source = "damped design"
        note = (f"{whose} gains kp={np.round(base.kp, 4).tolist()} "
                f"kd={np.round(base.kd, 4).tolist()} leave the loop at {rate:g} Hz {before} "
                f"(at least {GIVEN_MIN_DAMPING:g} needed): the model's design instead")
    if not stable:
        choice = delay_tolerant_gains(model, kp, kd, rate, 0, q=q)
        return LoopGains(choice.kp, choice.kd, source, rate,
                         loop_damping(model, choice.kp, choice.kd, rate, q)[0], choice.scale,
                         "; ".join(x for x in (note, choice.describe(model.config.name)) if x))
    return LoopGains(kp, kd, source, rate, damping, 1.0, note)


class TrackingForecast:
    """The closed loop's linearised response to a reference, before the motion: how fast the
    arm will move (Franklin, Powell & Workman 1998, the discrete state-space model of a loop).

    The arm linearised at rest at ``q`` with the law (:class:`_LinearLoop`: one control period
    under a zero-order hold, the drives' viscous friction) and the law linearised in its
    references (elastic: also in its feedforward, :meth:`ElasticPDController.feedforward`):
    x_{k+1} - x0 = (A + B C)(x_k - x0) + B (D_q (q_d,k - q) + D_v dq_d,k + ...), linearised
    anew at the reference's position every ``segment`` [s] (the state carried over). On
    zollo_planar's former gains without feedforward it forecast 3.32 x and 1.32 x the
    velocity limit where the nonlinear loop reached 3.31 x and 1.31 x (docs/simulation.md).

    Parameters
    ----------
    model : RobotModel
    law : callable
        ``law(q_d, dq_d, measurement[, feedforward]) -> u`` (:func:`make_controller`).
    rate_hz : float
        [Hz].
    q : array_like (n,)
        [rad] the first linearisation pose (the reference's start).
    segment : float, optional
        [s] the reference's span on one linearisation (inf: one only); default
        :data:`FORECAST_FINE_SEGMENT` for arms of up to :data:`FORECAST_FINE_JOINTS` joints,
        else :data:`FORECAST_SEGMENT`.
    """

    def __init__(self, model, law, rate_hz, q, segment=None):
        if segment is None:
            segment = (FORECAST_FINE_SEGMENT if model.n <= FORECAST_FINE_JOINTS
                       else FORECAST_SEGMENT)
        self.n = model.n
        self.model, self.law, self.rate = model, law, float(rate_hz)
        self.segment = (max(1, int(round(float(segment) * self.rate))) if np.isfinite(segment)
                        else 2 ** 62)
        self.elastic = bool(model.config.elastic) and hasattr(law, "feedforward")
        self.v = slice(2 * self.n, 3 * self.n) if model.config.elastic else slice(self.n,
                                                                                  2 * self.n)
        self.limits = np.array([j.limits.velocity if j.limits.velocity else np.inf
                                for j in model.config.joints], dtype=float)
        self._first = self._at(q)

    def _at(self, q):
        """The loop linearised at rest at ``q``: x0, q, A + B C and the reference's input
        matrices (elastic: q_d, theta_d, dtheta_d, du; rigid: q_d, dq_d) with their values
        at rest."""
        n, law = self.n, self.law
        loop = _LinearLoop(self.model, law, self.rate, q)
        meas0 = loop.measurement(loop.x0)
        zero = np.zeros(n)
        lin = {"x0": loop.x0, "q": loop.q, "Acl": loop.A + loop.B @ loop.feedback(law)}
        if self.elastic:        # the law in its feedforward (theta_d, dtheta_d, du)
            th0, dth0 = law.references(loop.q, zero)
            lin.update(ff0=(th0, dth0), Bu=loop.B, Bq=loop.B @ loop._jac(
                lambda r: law(r, zero, meas0, (th0, dth0, zero)), loop.q, n),
                Bth=loop.B @ loop._jac(lambda r: law(loop.q, zero, meas0, (r, dth0, zero)),
                                       th0, n),
                Bv=loop.B @ loop._jac(lambda v: law(loop.q, zero, meas0, (th0, v, zero)),
                                      dth0, n))
        else:
            lin.update(Bq=loop.B @ loop._jac(lambda r: law(r, zero, meas0), loop.q, n),
                       Bv=loop.B @ loop._jac(lambda v: law(loop.q, v, meas0), zero, n))
        return lin

    def velocities(self, q_ref, dq_ref, state=None, feedforward=None, stride=1):
        """Link velocities dq (m, n) [rad/s] at the samples of the references ``q_ref``,
        ``dq_ref`` (m, n) [rad, rad/s] (one every ``stride`` control periods: the state at
        each sample, before the command it answers; the reference held over the ``stride``
        periods), from ``state`` (mapping ``q``, ``dq``, elastic ``theta``, ``dtheta``;
        default at rest at the first linearisation pose); elastic laws with ``feedforward``
        ((theta_d, dtheta_d, du) (m, n) x 3, :func:`sampled_feedforward`) as the law runs with
        it; inf where the forecast diverges. The loop is linearised anew at the reference's
        position every ``segment`` s (the state carried over)."""
        q_ref, dq_ref = np.asarray(q_ref, dtype=float), np.asarray(dq_ref, dtype=float)
        stride = max(1, int(stride))
        lin = self._first
        if state is None:
            x = lin["x0"].copy()
        else:
            keys = ("q", "theta", "dq", "dtheta") if self.model.config.elastic else ("q", "dq")
            x = np.concatenate([np.asarray(state[k], dtype=float) for k in keys])
        ff = (None if not self.elastic else
              tuple(np.asarray(f, dtype=float) for f in feedforward) if feedforward is not None
              else tuple(np.array(f) for f in zip(*(self.law.references(q, v)
                                                    for q, v in zip(q_ref, dq_ref)))))
        out = np.empty((len(q_ref), self.n))
        per = max(1, self.segment // stride)        # samples per linearisation
        with np.errstate(over="ignore", invalid="ignore"):
            for i0 in range(0, len(q_ref), per):
                if i0:
                    if not np.all(np.isfinite(x)):
                        out[i0:] = np.inf
                        break
                    lin = self._at(q_ref[i0])
                A, S = self._lifted(lin, stride)
                sl = slice(i0, i0 + per)
                if self.elastic:
                    drive = ((q_ref[sl] - lin["q"]) @ lin["Bq"].T
                             + (ff[0][sl] - lin["ff0"][0]) @ lin["Bth"].T
                             + (ff[1][sl] - lin["ff0"][1]) @ lin["Bv"].T)
                    if len(ff) == 3:
                        drive = drive + ff[2][sl] @ lin["Bu"].T
                else:
                    drive = (q_ref[sl] - lin["q"]) @ lin["Bq"].T + dq_ref[sl] @ lin["Bv"].T
                drive = drive @ S.T
                dx = x - lin["x0"]
                for k, d in enumerate(drive):
                    out[i0 + k] = dx[self.v]
                    dx = A @ dx + d
                x = lin["x0"] + dx
        return np.where(np.isfinite(out), out, np.inf)

    @staticmethod
    def _lifted(lin, stride):
        """(A^stride, sum_{j < stride} A^j) of the linearisation's closed loop A."""
        key = ("lifted", stride)
        if key not in lin:
            A = lin["Acl"]
            P, S = np.eye(len(A)), np.zeros_like(A)
            for _ in range(stride):
                S = S + P
                P = A @ P
            lin[key] = (P, S)
        return lin[key]

    def ratio(self, q_ref, dq_ref, state=None, feedforward=None, stride=1):
        """Largest |dq| of :meth:`velocities` / each joint's velocity limit (n,) (0 where a
        joint has none)."""
        v = self.velocities(q_ref, dq_ref, state, feedforward, stride)
        return np.abs(v).max(axis=0) / self.limits

    def message(self, ratio, what="the reference", above=FORECAST_TOLERANCE):
        """:func:`velocity_message` of this arm."""
        return velocity_message(self.model.joint_names, self.limits, ratio, what, above)


def velocity_message(joint_names, limits, ratio, what="the reference",
                     above=FORECAST_TOLERANCE):
    """One line naming the joint with the largest forecast peak |dq| / velocity limit
    ``ratio`` (n,) when it is above ``above`` (``limits`` (n,) [rad/s]), or ''."""
    j = int(np.argmax(ratio))
    if not ratio[j] > above:
        return ""
    how = ("diverges" if not np.isfinite(ratio[j]) else
           f"reaches {ratio[j]:.3g} x the velocity limit of {joint_names[j]} "
           f"({limits[j]:g} rad/s)")
    return (f"the closed loop on {what} {how} (linearised forecast before the motion): "
            f"slow the excitation down (a longer period, smaller amplitudes) or lower the "
            f"gains")
