"""Forward dynamics of rigid and elastic-joint arms, integrated with fixed-step RK4 or IMEX."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from robot_identification.errors import ConfigError, DataError, ModelError
from robot_identification.model import spin_inertia_parameters
from robot_identification.simulation._friction import FrictionModel

#: Target omega_max * h of the RK4 sub-step (accurate to ~1e-4 per step on the fastest mode).
OMEGA_STEP = 0.5
#: Most automatic RK4 sub-steps per control period: more means a mode far faster than any real
#: arm's (a link of almost no inertia on a joint), refused rather than simulated for hours.
MAX_AUTO_SUBSTEPS = 2000
#: Longest step [s] of the IMEX integrator of elastic arms (1 step per period at 1 kHz, 4 at
#: 250 Hz): its error on the slow (arm) dynamics, second order, stays below 1e-7 rad without
#: friction; with Coulomb friction the same as with 0.5 ms steps (docs/simulation.md).
IMEX_STEP = 1e-3
#: ARS(2,3,2) of Ascher, Ruuth & Spiteri (1997, Sec. 2.5): gamma, delta of the double tableau
#: implicit [[0, 0, 0], [0, g, 0], [0, 1 - g, g]], explicit [[0, 0, 0], [g, 0, 0],
#: [d, 1 - d, 0]], weights (0, 1 - g, g) for both; L-stable implicit part.
_ARS_G = 1.0 - math.sqrt(0.5)
_ARS_D = -2.0 * math.sqrt(2.0) / 3.0


@dataclass
class State:
    """Simulator state, config joint order, SI units.

    Attributes
    ----------
    t : float
        Time [s].
    q, dq : ndarray (n,)
        Link positions [rad] and velocities [rad/s].
    theta, dtheta : ndarray (n,) or None
        Link-referred motor positions (motor angle / k_m) and velocities (elastic only).
    """

    t: float
    q: np.ndarray
    dq: np.ndarray
    theta: np.ndarray | None = None
    dtheta: np.ndarray | None = None

    def copy(self):
        return State(self.t, self.q.copy(), self.dq.copy(),
                     None if self.theta is None else self.theta.copy(),
                     None if self.dtheta is None else self.dtheta.copy())


class ArmDynamics:
    """Equations of motion x_dot = f(x, u) of a :class:`RobotModel`'s arm.

    The state x is ``[q, dq]`` (rigid) or ``[q, theta, dq, dtheta]`` (elastic), config
    order. The physical arm is the one whose standard parameters are
    ``model.nominal_parameters()``:

    - rigid: pinocchio ABA with ``armature = rotor_inertia * k_m^2`` and the joint
      torque ``u - F(dq)``;
    - elastic, ``coupling: complete`` (Zollo et al. 2014, eq. 2, 7-8): ABA on an
      augmented model with one rotor joint per joint (child of the joint's parent body,
      coordinate phi = k_m theta). Rotor k carries the massless spin inertia
      ``rotor_inertia * a a^T``; the same spin inertia is subtracted from the parent
      body, whose standard parameters already include it (eq. A.14). Generalised
      forces: link joint ``-K (q - theta) - D (dq - dtheta)``, rotor
      ``(u - F(dtheta) + K (q - theta) + D (dq - dtheta)) / k_m``;
    - elastic, ``coupling: reduced`` (Spong 1987): link ABA with the link inertias,
      motor ``rotor_inertia k_m^2 ddtheta = u - F(dtheta) + K (q - theta) + D (...)``.

    Parameters
    ----------
    model : RobotModel
    friction : {None, 'regressor', 'none'}
        Override the per-joint simulation friction laws (see :class:`FrictionModel`).
    """

    def __init__(self, model, friction=None):
        self.model = model
        self.n = n = model.n
        self.elastic = model.config.elastic
        self.friction = FrictionModel(model, friction)
        drive = [j.drive for j in model.config.joints]
        self.gear = model.gear_ratios.astype(float)
        self.rotor = np.array([d.get("rotor_inertia", 0.0) for d in drive])
        self.K = np.array([d.get("stiffness", 0.0) for d in drive])
        self.D = (np.array([d.get("damping", 0.0) for d in drive]) if model.config.damping
                  else np.zeros(n))
        if self.elastic and np.any(self.K <= 0):
            bad = [j.name for j, k in zip(model.config.joints, self.K) if k <= 0]
            raise ConfigError(f"robot '{model.config.name}': elastic joints {bad} need a "
                              f"positive drive stiffness K to be simulated")
        if self.elastic and np.any(self.rotor <= 0):
            bad = [j.name for j, r in zip(model.config.joints, self.rotor) if r <= 0]
            raise ConfigError(f"robot '{model.config.name}': elastic joints {bad} need a "
                              f"positive rotor_inertia to be simulated")
        self.complete = self.elastic and model.config.coupling == "complete"
        pm = model.pin_model
        if self.complete:
            am = model.rotor_model.copy()
            for k, jid in enumerate(model.joint_ids):
                rid = model.rotor_joint_ids[k]
                a = np.asarray(model.joint_axes[k], dtype=float)
                a = a / np.linalg.norm(a)
                am.inertias[rid] = pin.Inertia(0.0, np.zeros(3), self.rotor[k] * np.outer(a, a))
                parent = pm.parents[jid]
                if parent > 0:
                    axis = pm.jointPlacements[jid].rotation @ model.joint_axes[k]
                    p = am.inertias[parent].toDynamicParameters()
                    p -= spin_inertia_parameters(axis) * self.rotor[k]
                    am.inertias[parent] = pin.Inertia.FromDynamicParameters(p)
            self.pin_model = am
            self._ridx_q = np.array([am.joints[r].idx_q for r in model.rotor_joint_ids])
            self._ridx_v = model.rotor_velocity_indices
        else:
            self.pin_model = pm.copy()
            if not self.elastic:
                arm = np.zeros(pm.nv)
                arm[model.velocity_indices] = self.rotor * self.gear ** 2
                self.pin_model.armature = arm
        self.data = self.pin_model.createData()
        self._gdata = pm.createData()
        self._nograv = self.pin_model.copy()
        self._nograv.gravity = pin.Motion.Zero()
        self._nograv_data = self._nograv.createData()
        self._lidx_v = model.velocity_indices
        self._link_nq = pm.nq
        self._plain_q = not np.any(model.continuous_joints)
        self._link_idx_q = model.position_indices
        self._qbuf = pin.neutral(self.pin_model)
        # packed state -> pinocchio vectors in one gather (hot path: :meth:`derivative`):
        # [q; theta] -> configuration (rotor coordinate k_m theta), [dq; dtheta] -> velocity
        nv = self.pin_model.nv
        if self.complete:
            self._state_v = np.concatenate([self._lidx_v, self._ridx_v])
            self._state_q = (np.concatenate([self._link_idx_q, self._ridx_q])
                             if self._plain_q else None)
            self._scale = np.concatenate([np.ones(n), self.gear])
        else:
            self._state_v = np.asarray(self._lidx_v)
            self._state_q = np.asarray(self._link_idx_q) if self._plain_q else None
            self._scale = np.ones(n)
        self._qa = self._qbuf.copy()
        self._va = np.zeros(nv)
        self._tau = np.zeros(nv)

    # ----------------------------------------------------------------- model
    def _pin_q(self, q, theta=None):
        qa = self._qbuf.copy()
        if self._plain_q:
            qa[self._link_idx_q] = q
        else:
            qa[: self._link_nq] = self.model.pin_configuration(q)
        if theta is not None and self.complete:
            qa[self._ridx_q] = self.gear * theta
        return qa

    def _pin_v(self, dq, dtheta=None):
        v = np.zeros(self.pin_model.nv)
        v[self._lidx_v] = dq
        if dtheta is not None and self.complete:
            v[self._ridx_v] = self.gear * dtheta
        return v

    def accelerations(self, q, dq, u, theta=None, dtheta=None, friction=True):
        """Accelerations of the arm at a state under the held command ``u``.

        Parameters
        ----------
        q, dq : ndarray (n,)
            Link positions [rad] and velocities [rad/s].
        u : ndarray (n,)
            Rigid: joint torques; elastic: link-referred motor torques [N*m].
        theta, dtheta : ndarray (n,)
            Link-referred motor positions/velocities (elastic).
        friction : bool
            Apply the friction laws.

        Returns
        -------
        ddq : ndarray (n,)
        ddtheta : ndarray (n,) or None
        """
        n = self.n
        u = np.asarray(u, dtype=float)
        if not self.elastic:
            tau = u - (self.friction(dq) if friction else 0.0)
            a = pin.aba(self.pin_model, self.data, self._pin_q(q), self._pin_v(dq),
                        self._pin_v(tau))
            return a[self._lidx_v], None
        defl = q - theta
        spring = self.K * defl + self.D * (dq - dtheta)
        fr = self.friction(dtheta, theta) if friction else np.zeros(n)
        motor = u - fr + spring
        if self.complete:
            tau = np.zeros(self.pin_model.nv)
            tau[self._lidx_v] = -spring
            tau[self._ridx_v] = motor / self.gear
            a = pin.aba(self.pin_model, self.data, self._pin_q(q, theta),
                        self._pin_v(dq, dtheta), tau)
            return a[self._lidx_v], a[self._ridx_v] / self.gear
        a = pin.aba(self.pin_model, self.data, self._pin_q(q), self._pin_v(dq),
                    self._pin_v(-spring))
        return a[self._lidx_v], motor / (self.rotor * self.gear ** 2)

    def inverse_dynamics(self, q, theta, dq, dtheta, ddq, ddtheta):
        """Elastic arms: the joint and motor torques that give the accelerations ``ddq``,
        ``ddtheta`` at a state, friction left out - the inverse of :meth:`accelerations`
        (``friction=False``).

        Complete coupling: pinocchio ``rnea`` of the augmented model (the rotor-link inertial
        coupling S(q) and its velocity terms, Zollo et al. 2014, eq. 2, 7-8; De Luca &
        Lucibello 1998): link joints tau_J, rotors tau_r; reduced (Spong 1987): tau_J the link
        model's ``rnea``, tau_r = rotor_inertia k_m ddtheta.

        Parameters
        ----------
        q, theta, dq, dtheta, ddq, ddtheta : array_like (n,)
            Link positions, link-referred motor positions [rad], their velocities [rad/s]
            and accelerations [rad/s^2].

        Returns
        -------
        tau_j : ndarray (n,)
            The torque the joints transmit, K (theta - q) + D (dtheta - dq) [N*m].
        u : ndarray (n,)
            Link-referred motor torque [N*m]: tau_j + k_m tau_r.

        Raises
        ------
        ConfigError
            The arm is rigid.
        """
        if not self.elastic:
            raise ConfigError(f"robot '{self.model.config.name}' is rigid: no motor torque")
        q, theta, dq, dtheta, ddq, ddtheta = (np.asarray(x, dtype=float) for x in (
            q, theta, dq, dtheta, ddq, ddtheta))
        if self.complete:
            a = np.zeros(self.pin_model.nv)
            a[self._lidx_v], a[self._ridx_v] = ddq, self.gear * ddtheta
            tau = pin.rnea(self.pin_model, self.data, self._pin_q(q, theta),
                           self._pin_v(dq, dtheta), a)
            tau_j = tau[self._lidx_v]
            return tau_j, tau_j + self.gear * tau[self._ridx_v]
        tau = pin.rnea(self.pin_model, self.data, self._pin_q(q), self._pin_v(dq),
                       self._pin_v(ddq))
        tau_j = tau[self._lidx_v]
        return tau_j, tau_j + self.rotor * self.gear ** 2 * ddtheta

    def mass_matrix(self, qa):
        """Joint-space inertia matrix (nv, nv) of the simulated pinocchio model at ``qa``.

        Built column by column with RNEA (no gravity, zero velocity): ``crba`` assumes
        joint subtrees with contiguous velocity indices, which the rotor joints appended
        to the augmented model do not have.
        """
        nv = self._nograv.nv
        z = np.zeros(nv)
        M = np.empty((nv, nv))
        E = np.eye(nv)
        rnea, model, data = pin.rnea, self._nograv, self._nograv_data
        for j in range(nv):
            M[:, j] = rnea(model, data, qa, z, E[j])
        if not self.elastic:
            M -= np.diag(self._nograv.armature)   # rnea includes armature; added back below
        return 0.5 * (M + M.T)

    def derivative(self, x, u, friction=True):
        """x_dot = f(x, u) for the packed state (see class docstring).

        The same equations as :meth:`accelerations`, with the state moved into pinocchio's
        vectors by one gather each and no per-call allocation but the result (the
        integrators call it several times per control period).
        """
        n = self.n
        if self.elastic and not self.complete:        # Spong's reduced model
            q, th, dq, dth = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
            ddq, ddth = self.accelerations(q, dq, u, th, dth, friction)
            return np.concatenate([dq, dth, ddq, ddth])
        m = x.shape[0] // 2
        pos, vel = x[:m], x[m:]
        qa, va, tau = self._qa, self._va, self._tau
        if self._state_q is not None:
            qa[self._state_q] = pos * self._scale
        else:
            qa[:] = self._pin_q(pos[:n], pos[n:] if self.elastic else None)
        va[self._state_v] = vel * self._scale
        out = np.empty_like(x)
        out[:m] = vel
        if self.elastic:                              # complete coupling (Zollo eq. 2, 7-8)
            q, th, dq, dth = pos[:n], pos[n:], vel[:n], vel[n:]
            spring = self.K * (q - th) + self.D * (dq - dth)
            fr = self.friction(dth, th) if friction else 0.0
            gen = np.concatenate([-spring, (u - fr + spring) / self.gear])
        else:
            gen = u - self.friction(vel) if friction else u
        tau[self._state_v] = gen
        a = pin.aba(self.pin_model, self.data, qa, va, tau)
        np.divide(a[self._state_v], self._scale, out=out[m:])
        return out

    def energy(self, x):
        """Kinetic + gravity potential + elastic energy [J] of the packed state."""
        n = self.n
        if self.elastic:
            q, th, dq, dth = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
        else:
            q, dq = x[:n], x[n:]
            th = dth = None
        qa, va = self._pin_q(q, th), self._pin_v(dq, dth)
        M = self.mass_matrix(qa)
        if not self.elastic:
            M = M + np.diag(self.pin_model.armature)
        kin = 0.5 * va @ M @ va
        pot = pin.computePotentialEnergy(self.pin_model, self.data, qa)
        if self.elastic:
            kin += 0.0 if self.complete else 0.5 * np.sum(self.rotor * self.gear ** 2 * dth ** 2)
            pot += 0.5 * np.sum(self.K * (q - th) ** 2)
        return float(kin + pot)

    def gravity(self, q):
        """Link gravity torques g(q) (n,) [N*m] (pinocchio ``computeGeneralizedGravity``)."""
        g = pin.computeGeneralizedGravity(self.model.pin_model, self._gdata,
                                          self.model.pin_configuration(q))
        return self.model.from_pin_v(g)

    def coordinate_inertia(self, q, theta):
        """Elastic arms: the inertia matrix (2n, 2n) in the coordinates (q, theta) (link
        positions, link-referred motor positions) at a state; complete coupling: T M T of
        the augmented model's M with T = diag(1, k_m), reduced: diag(M_link, rotor k_m^2)."""
        n = self.n
        M = self.mass_matrix(self._pin_q(q, theta))
        if self.complete:
            idx = np.concatenate([self._lidx_v, self._ridx_v])
            T = np.concatenate([np.ones(n), self.gear])
            return T[:, None] * M[np.ix_(idx, idx)] * T[None, :]
        Ml = M[np.ix_(self._lidx_v, self._lidx_v)]
        return np.block([[Ml, np.zeros((n, n))],
                         [np.zeros((n, n)), np.diag(self.rotor * self.gear ** 2)]])

    def spring_operator(self, x, inverse=False):
        """Elastic arms: the joint springs' share of the accelerations, linearised at the
        packed state ``x``: d[ddq; ddtheta] = -(G [q; theta] + G_d [dq; dtheta]) with
        G = Mq^-1 [[K, -K], [-K, K]], G_d the same with the damping D (Mq:
        :meth:`coordinate_inertia` at ``x``). The stiff part of the elastic-joint dynamics
        (the fast modes of :meth:`natural_frequency`), integrated implicitly by
        :class:`Simulator`'s IMEX step.

        Returns
        -------
        G, G_d : ndarray (2n, 2n) [1/s^2], [1/s]
        Minv : ndarray (2n, 2n) [1/(kg m^2)]
            Only with ``inverse``: Mq^-1 (its columns n: map the motor torques, e.g. the
            friction, to accelerations).
        """
        n = self.n
        Minv = np.linalg.inv(self.coordinate_inertia(x[:n], x[n:2 * n]))
        A = Minv[:, :n] - Minv[:, n:]          # Mq^-1 [I; -I]
        G = np.hstack([A * self.K, -A * self.K])
        Gd = np.hstack([A * self.D, -A * self.D])
        return (G, Gd, Minv) if inverse else (G, Gd)

    def natural_frequency(self, q_samples):
        """Largest undamped natural frequency [rad/s] over configurations ``q_samples`` (m, n).

        Elastic: generalised eigenvalues of the stiffness [[K, -K], [-K, K]] against the
        inertia matrix in (q, theta) coordinates; plus the largest viscous decay rate
        (friction slope / inertia), which also limits explicit integration. Rigid: only
        the decay rate.
        """
        n = self.n
        best = 0.0
        fv = np.array([j.drive.get("viscous", 0.0) for j in self.model.config.joints])
        for lw, k in zip(self.friction.laws, range(n)):
            if lw["model"] == "zollo_stribeck":
                fv[k] = max(fv[k], lw["f1"])
        for q in np.atleast_2d(q_samples):
            if self.elastic:
                Mq = self.coordinate_inertia(q, q.copy())
                Kd = np.diag(self.K)
                S = np.block([[Kd, -Kd], [-Kd, Kd]])
                w2 = np.linalg.eigvals(np.linalg.solve(Mq, S)).real.max()
                best = max(best, math.sqrt(max(w2, 0.0)))
                inert = np.diag(Mq)[n:]
            else:
                M = self.mass_matrix(self._pin_q(q))
                inert = np.diag(M)[self._lidx_v] + self.pin_model.armature[self._lidx_v]
            best = max(best, float(np.max(fv / inert)))
        return best


def auto_substeps(model, dynamics, dt, omega_step):
    """Integration steps per control period ``dt`` [s] for h * omega_max <= ``omega_step``,
    omega_max the arm's fastest mode (:meth:`ArmDynamics.natural_frequency` over 9
    configurations).

    Raises
    ------
    ModelError
        A mode needing more than MAX_AUTO_SUBSTEPS RK4 steps (of h * omega = 0.5) per
        period, or a singular inertia matrix (a joint moving no inertia).
    """
    rng = np.random.default_rng(12345)
    lo, hi = np.full(model.n, -np.pi), np.full(model.n, np.pi)
    for k, j in enumerate(model.config.joints):
        if j.limits.position is not None:
            lo[k], hi[k] = j.limits.position
    qs = np.vstack([np.zeros(model.n), rng.uniform(lo, hi, (8, model.n))])
    with np.errstate(divide="ignore", invalid="ignore"):
        w = dynamics.natural_frequency(qs)
    if not math.isfinite(w) or w * dt / OMEGA_STEP > MAX_AUTO_SUBSTEPS:
        if math.isfinite(w):
            raise ModelError(
                f"robot '{model.config.name}' ({model.config.urdf_path}): its "
                f"fastest mode ({w:.3g} rad/s) would need more than {MAX_AUTO_SUBSTEPS} "
                f"RK4 sub-steps per {dt:.3g} s period: a joint moves almost no "
                f"inertia (a link without <inertial>, or of near-zero mass and inertia?); "
                f"give the links physical inertials")
        raise ModelError(f"robot '{model.config.name}' ({model.config.urdf_path}):"
                         f" a joint moves no inertia (a link with zero mass and inertia?): "
                         f"the joint-space inertia matrix is singular and cannot be "
                         f"simulated; give the links physical inertials")
    return int(math.ceil(w * dt / omega_step))


def noise_sigma(std, snr_db):
    """Noise std (n,) of a channel at a signal-to-noise ratio ``snr_db`` [dB]:
    std * 10^(-snr_db / 20), the signal being the channel's variation about its mean
    (``std``, (n,)), not its rms: an encoder's noise does not depend on where its zero lies,
    and a joint moving about pi (a Kinova Jaco2's shoulder, elbow and wrist: rms 3.2 rad,
    std 0.16 rad in 10 s of its default excitation) would otherwise get 20 x the noise of the
    same motion about 0. Before 2026-11-29 the rms was used (numbers in the docs measured
    before then at an SNR carry that larger noise on joints whose motion is off zero). A
    channel that does not vary gets no noise. Source: Zollo et al. 2014, Sec. 6.1 (noise at
    a signal-to-noise ratio; its dB reading, notes A.7.1).

    Parameters
    ----------
    std : array_like (n,)
        Each channel's standard deviation about its mean [the channel's unit: rad, rad/s,
        rad/s^2, m].
    snr_db : float
        [dB].

    Returns
    -------
    ndarray (n,)
        Noise standard deviation [the channel's unit]. Raises nothing.
    """
    return np.asarray(std, dtype=float) * 10.0 ** (-float(snr_db) / 20.0)


class _Encoders:
    """Encoder readings of a simulator (quantised positions, optional noise, the applied
    torque), shared by the engines. Needs ``state``, ``n``, ``elastic``, ``counts``,
    ``snr_db``, ``_u``, ``_rng``, ``_moments``, ``_count``."""

    def quantise(self, x):
        """Positions rounded to the encoder step 2 pi / encoder_counts [rad]."""
        if not self.counts:
            return np.asarray(x, dtype=float)
        step = 2 * np.pi / self.counts
        return np.round(np.asarray(x) / step) * step

    def measure(self):
        """Encoder readings of the current state.

        Returns
        -------
        dict
            ``t`` and arrays (n,): ``q``, ``dq`` and for elastic arms ``theta``,
            ``dtheta``; ``tau``: the torque applied over the last period (the held command
            u [N*m], link-referred motor torque for elastic arms), as a drive reports its
            effort. Positions are quantised; velocities are exact. With ``snr_db`` every
            position and velocity channel gets Gaussian noise (see class docstring).
        """
        s = self.state
        out = {"t": s.t, "q": self.quantise(s.q), "dq": s.dq, "tau": self._u.copy()}
        if self.elastic:
            out["theta"] = self.quantise(s.theta)
            out["dtheta"] = s.dtheta
        if self.snr_db is not None:
            self._count += 1
            for key in ("q", "dq", "theta", "dtheta"):
                if key not in out:
                    continue
                # running mean and sum of squared deviations (Welford's update)
                mean, m2 = self._moments.get(key, (0.0, 0.0))
                delta = out[key] - mean
                mean = mean + delta / self._count
                m2 = m2 + delta * (out[key] - mean)
                self._moments[key] = mean, m2
                sigma = noise_sigma(np.sqrt(m2 / self._count), self.snr_db)
                out[key] = out[key] + sigma * self._rng.standard_normal(self.n)
        return out


class Simulator(_Encoders):
    """Simulated arm with elastic or rigid joints, stepped one control period at a time.

    ``step(u)`` holds the command u over one control period 1 / rate_hz and integrates
    the equations of motion of :class:`ArmDynamics`:

    - ``integrator='rk4'`` (rigid arms; elastic arms given ``substeps``): ``substeps``
      classical RK4 steps;
    - ``integrator='imex'`` (the default of elastic arms with stiff springs): ``imex_steps``
      steps (of at most
      :data:`IMEX_STEP`) of the IMEX Runge-Kutta scheme ARS(2,3,2) (Ascher, Ruuth &
      Spiteri 1997), the joint springs implicit (:meth:`ArmDynamics.spring_operator`,
      linearised once per period), and so the motor friction's viscous and Coulomb parts
      (:meth:`FrictionModel.coulomb_viscous_split`): at each implicit stage the Coulomb
      friction is set-valued at v = 0, a motor sticks (velocity exactly 0) while the
      friction it needs stays within its Coulomb level and otherwise slides (Moreau's
      time-stepping of Coulomb friction; Karnopp's stick state), solved exactly by an
      active set per stage. Everything else is explicit. So neither the stiff spring
      modes nor the discontinuity of Coulomb friction sets the step. Only a step over
      which a velocity enters the steep band of an arctan friction term
      (:meth:`FrictionModel.arctan_band`), or crosses 0 on a law whose step at v = 0 stays
      explicit (a negative Coulomb coefficient, ``zollo_stribeck``'s position variant), is
      redone with RK4 steps of the ``rk4`` integrator's length (``rk4_periods`` counts
      the periods).

    ``measure()`` returns what encoders would read: positions quantised to
    ``2 pi / encoder_counts`` and optionally Gaussian noise at a signal-to-noise ratio.

    Parameters
    ----------
    model : RobotModel
    rate_hz : float, optional
        Control rate [Hz]; default the config's ``simulation.rate_hz``.
    substeps : int, optional
        RK4 steps per control period; default the config's ``simulation.substeps``, or
        when that is 0, chosen so that h * omega_max <= 0.5 for the highest natural
        frequency omega_max of the arm (e.g. the PUMA wrist with K = 2000 N m/rad needs
        ~10 kHz). With ``imex``: the RK4 steps per period on the steps redone with RK4.
    integrator : {None, 'imex', 'rk4'}
        Default: ``imex`` for elastic arms whose automatic RK4 steps would cost more than
        twice the dynamics evaluations of the IMEX steps (stiff springs: puma560_elastic,
        15 RK4 steps per ms), unless ``substeps`` (argument or config) is given; else
        ``rk4`` (e.g. zollo_planar: 2 RK4 steps per ms). ``imex`` is for elastic arms only.
    seed : int
        Seed of the measurement noise generator.
    snr_db : float, optional
        Signal-to-noise ratio [dB] of the noise added by :meth:`measure`:
        sigma = std * 10^(-snr_db / 20) per channel (each joint of q, dq, theta, dtheta),
        std the running standard deviation of that channel about its running mean over
        the measurements so far (Zollo et al. 2014, Sec. 6.1; the whole-run definition is
        :func:`add_measurement_noise`, the signal's definition :func:`noise_sigma`).
    quantise : bool
        Quantise positions to the encoder resolution (config ``encoder_counts``; 0
        disables).
    friction : {None, 'regressor', 'none'}
        Override the configured simulation friction laws.

    Raises
    ------
    ConfigError
        Elastic joints without stiffness or rotor inertia, bad rate.
    """

    #: name of the physics engine (:func:`make_simulator`)
    engine = "builtin"

    def __init__(self, model, rate_hz=None, substeps=None, seed=0, snr_db=None,
                 quantise=True, friction=None, integrator=None):
        self.model = model
        sim = model.config.simulation
        self.rate_hz = float(rate_hz or sim.rate_hz)
        if self.rate_hz <= 0:
            raise ConfigError(f"simulation rate must be > 0 Hz, got {rate_hz}")
        self.dt = 1.0 / self.rate_hz
        self.dynamics = ArmDynamics(model, friction)
        #: the simulation friction laws (:class:`FrictionModel`)
        self.friction = self.dynamics.friction
        self.elastic = self.dynamics.elastic
        self.n = model.n
        self.counts = int(sim.encoder_counts) if quantise else 0
        self.snr_db = snr_db
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        if substeps is None:
            substeps = sim.substeps
        if integrator not in (None, "imex", "rk4") or (integrator == "imex"
                                                        and not self.elastic):
            raise ConfigError(f"builtin integrator must be 'rk4' or (elastic arms) 'imex', "
                              f"got {integrator!r}")
        given = bool(substeps)
        if not substeps:
            substeps = self.auto_substeps()
        self.substeps = int(substeps)
        self.h = self.dt / self.substeps
        #: IMEX steps per control period (``integrator='imex'``)
        self.imex_steps = max(1, math.ceil(self.dt / IMEX_STEP - 1e-9))
        if integrator is None:      # IMEX where it saves half the dynamics evaluations
            imex_cost = 3 * self.imex_steps + 5        # 3 per step + the spring operator
            integrator = ("imex" if self.elastic and not given
                          and 4 * self.substeps > 2 * imex_cost else "rk4")
        #: ``imex`` or ``rk4`` (see the class docstring)
        self.integrator = integrator
        #: control periods so far with a step redone with RK4 (``imex``; class docstring)
        self.rk4_periods = 0
        if self.elastic:
            n = self.n
            self._fric_v = slice(3 * n, 4 * n)       # the friction acts on dtheta
            # IMEX: viscous + Coulomb implicit (set-valued at v = 0); the rest explicit,
            # redone with RK4 on steps that enter an arctan term's steep band or (a law
            # whose explicit rest steps at v = 0) cross v = 0
            self._fv, self._fc, self._jump = self.friction.coulomb_viscous_split()
            self._band = self.friction.arctan_band()
            self._implicit_friction = bool(np.any(self._fv) or np.any(self._fc))
            self._events = bool(np.any(self._band) or np.any(self._jump))
        self.reset()

    def auto_substeps(self):
        """RK4 sub-steps per control period for h * omega_max <= 0.5 (at least 2)."""
        return max(2, auto_substeps(self.model, self.dynamics, self.dt, OMEGA_STEP))

    # ----------------------------------------------------------------- state
    def reset(self, q0=None, dq0=None, theta0=None, t0=0.0):
        """Reset to rest at link positions ``q0`` (default zeros).

        Elastic arms start in static equilibrium: theta0 = q0 + K^-1 g(q0), unless
        ``theta0`` is given. Returns the new :class:`State`.
        """
        n = self.n
        q0 = np.zeros(n) if q0 is None else np.asarray(q0, dtype=float).reshape(n)
        dq0 = np.zeros(n) if dq0 is None else np.asarray(dq0, dtype=float).reshape(n)
        if not np.all(np.isfinite(q0)) or not np.all(np.isfinite(dq0)):
            raise DataError("reset: initial state must be finite")
        if self.elastic:
            if theta0 is None:
                theta0 = q0 + self.dynamics.gravity(q0) / self.dynamics.K
            self._x = np.concatenate([q0, np.asarray(theta0, float).reshape(n), dq0, dq0])
        else:
            self._x = np.concatenate([q0, dq0])
        self.t = float(t0)
        self._u = np.zeros(n)
        self._moments = {}
        self._count = 0
        self._rng = np.random.default_rng(self.seed)
        return self.state

    @property
    def state(self) -> State:
        """Exact (unquantised) state."""
        n, x = self.n, self._x
        if self.elastic:
            return State(self.t, x[:n].copy(), x[2 * n:3 * n].copy(), x[n:2 * n].copy(),
                         x[3 * n:].copy())
        return State(self.t, x[:n].copy(), x[n:].copy())

    def joint_torque(self):
        """Elastic arms: what joint torque sensors read, the torque the elastic joint
        transmits to the link, tau_J = K (theta - q) + D (dtheta - dq) (n,) [N*m] (Zollo et
        al. 2014, eq. 6: the link rows' -K (q - theta)), at the current exact state.

        Raises
        ------
        DataError
            A rigid arm (no joint elasticity, no joint torque sensor reading).
        """
        if not self.elastic:
            raise DataError("joint torque sensors measure the torque of elastic joints; "
                            "this arm is rigid")
        s = self.state
        return self.dynamics.K * (s.theta - s.q) + self.dynamics.D * (s.dtheta - s.dq)

    def accelerations(self, u=None):
        """Exact accelerations (ddq, ddtheta) at the current state under command u."""
        s = self.state
        return self.dynamics.accelerations(s.q, s.dq, self._u if u is None else u,
                                           s.theta, s.dtheta)

    def step(self, u):
        """Hold command ``u`` (n,) [N*m] for one control period; return the new state.

        Rigid arms: joint torques; elastic arms: link-referred motor torques.

        Raises
        ------
        DataError
            Wrong shape or non-finite command, or the integration diverged.
        """
        u = np.asarray(u, dtype=float).reshape(-1)
        if u.shape != (self.n,) or not np.all(np.isfinite(u)):
            raise DataError(f"command u must be {self.n} finite torques, got {u!r}")
        self._u = u
        if self.integrator == "imex":
            x = self._imex_period(self._x, u)
        else:
            x = self._rk4(self._x, u, self.h, self.substeps)
        if not np.all(np.isfinite(x)):
            raise DataError(f"simulation diverged at t = {self.t:.4g} s; increase substeps "
                            f"(now {self.substeps}) or lower the gains")
        self._x = x
        self.t += self.dt
        return self.state

    def _rk4(self, x, u, h, steps):
        f = self.dynamics.derivative
        for _ in range(steps):
            k1 = f(x, u)
            k2 = f(x + 0.5 * h * k1, u)
            k3 = f(x + 0.5 * h * k2, u)
            k4 = f(x + h * k3, u)
            x = x + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
        return x

    def _imex_period(self, x, u):
        """One control period of ARS(2,3,2) steps (class docstring). With the spring
        operator L y = [v; -(G p + G_d v)] for y = [p; v], the implicit stages solve
        (I - c L) Y = r + c [0; -B F], c = gamma h, B = Mq^-1[:, n:] (the motor torques'
        accelerations), F = f_v s + g the implicit friction at the stage's motor velocities
        s, g in f_c Sign(s) (:meth:`_stage_friction`): Y_v = W (r_v - c G r_p - c B F),
        Y_p = r_p + c Y_v with W = (I + c^2 G + c G_d)^-1; the explicit part is
        f - L y + B (f_v s + f_c sign(s)) (the rest of the friction, the rest of the
        dynamics)."""
        f = self.dynamics.derivative
        n = self.n
        m = x.shape[0] // 2
        k = self.imex_steps
        h = self.dt / k
        c = _ARS_G * h
        G, Gd, Minv = self.dynamics.spring_operator(x, inverse=True)
        W = np.linalg.inv(np.eye(m) + (c * c) * G + c * Gd)
        fv, fc, implicit = self._fv, self._fc, self._implicit_friction
        if implicit:
            B = Minv[:, n:]
            WB = W @ B
            cA = c * WB[n:]                      # (n, n), symmetric positive definite
            P = np.eye(n) + cA * fv
            cache = {None: np.diag(cA) * fc}     # + per stick pattern: its matrix inverse
            Bfull = np.zeros((2 * m, n))
            Bfull[m:] = B

        GG = -np.hstack([G, Gd])

        def spring(y):                           # L y
            out = np.empty_like(y)
            out[:m] = y[m:]
            out[m:] = GG @ y
            return out

        def explicit(y):                         # f - L y + B (f_v s + f_c sign(s))
            E = f(y, u) - spring(y)
            if implicit:
                s = y[self._fric_v]
                E[m:] += B @ (fv * s + fc * np.sign(s))
            return E

        def solve(r):                  # Y of (I - c L) Y = r + c [0; -B F]; F (None: failed)
            out = np.empty_like(r)
            v = W @ (r[m:] - c * (G @ r[:m]))
            F = None
            if implicit:
                F, stick = self._stage_friction(v[n:], cA, P, cache)
                if F is None:
                    return out, None
                v -= c * (WB @ F)
                v[n:][stick] = 0.0
            out[m:] = v
            out[:m] = r[:m] + c * v
            return out, F

        event = False
        for _ in range(k):
            E1 = explicit(x)
            Y2, F2 = solve(x + c * E1)
            ok = F2 is not None or not implicit
            if ok:
                E2 = explicit(Y2)
                K2 = spring(Y2)
                if implicit:
                    K2 -= Bfull @ F2
                Y3, F3 = solve(x + h * (_ARS_D * E1 + (1.0 - _ARS_D) * E2) + (h - c) * K2)
                ok = F3 is not None or not implicit
            if ok:
                K3 = spring(Y3)
                if implicit:
                    K3 -= Bfull @ F3
                x_new = x + h * ((1.0 - _ARS_G) * (E2 + K2) + _ARS_G * (explicit(Y3) + K3))
            if not ok or (self._events and self._friction_event(x, Y2, Y3, x_new)):
                event = True
                steps = max(1, math.ceil(self.substeps / k))    # RK4 steps <= self.h
                x_new = self._rk4(x, u, h / steps, steps)
            x = x_new
        self.rk4_periods += event
        return x

    def _stage_friction(self, s0, cA, P, cache, iterations=12):
        """Implicit viscous + Coulomb friction of one IMEX stage: s + cA (f_v s + g) = s0,
        g_i in f_c,i Sign(s_i) (Sign(0) = [-1, 1]: the joint sticks, s_i = 0, while the
        friction |g_i| <= f_c,i it needs to stay stuck is available; Moreau's time-stepping
        of Coulomb friction, Karnopp's stick state at the stage). s0 (n,) the motor velocities
        without friction [rad/s], cA (n, n) = c W B's motor rows (symmetric positive
        definite), P = I + cA diag(f_v). Solved by an active set (stick, or slip with a sign,
        per joint; one linear solve per iteration, its inverse kept in ``cache`` per stick
        pattern for the period).

        Returns
        -------
        F : ndarray (n,) or None
            The friction f_v s + g [N*m]; None when the active set did not settle.
        stick : ndarray (n,) of bool
        """
        fv, fc, coulomb = self._fv, self._fc, self._fc > 0.0
        sig = np.sign(s0)
        stick = coulomb & (np.abs(s0) <= cache[None])
        for it in range(iterations):
            key = stick.tobytes()
            inv = cache.get(key)
            if inv is None:
                Mx = P.copy()
                Mx[:, stick] = cA[:, stick]
                inv = cache[key] = np.linalg.inv(Mx)
            g = fc * sig
            g[stick] = 0.0
            z = inv @ (s0 - cA @ g)
            s = z.copy()
            s[stick] = 0.0
            g[stick] = z[stick]
            bad_stick = stick & (np.abs(g) > fc * (1.0 + 1e-12))
            bad_slip = coulomb & ~stick & (s * sig <= 0.0)
            bad = bad_stick | bad_slip
            if not bad.any():
                return fv * s + g, stick
            if it >= 4:                          # one change at a time (no cycling)
                one = np.zeros_like(bad)
                one[np.argmax(bad)] = True
                bad_stick &= one
                bad_slip &= one
            sig = np.where(bad_stick, np.sign(g), sig)
            stick = (stick & ~bad_stick) | bad_slip
        return None, stick

    def _friction_event(self, *states):
        """Whether, over the stages, a velocity enters the steep band of an arctan friction
        term or a velocity whose law steps at v = 0 outside the implicit part changes sign."""
        v = np.stack([y[self._fric_v] for y in states])
        if np.any(np.abs(v) < self._band):
            return True
        if not self._jump.any():
            return False
        sign = np.sign(v[:, self._jump])
        return bool(np.any(sign != sign[0]) or not np.all(sign[0]))
