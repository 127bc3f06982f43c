"""Instrumental variables with the simulator in the loop (IDIM-IV).

Janot, Vandanjon & Gautier (2014), "A generic instrumental variable approach for industrial
robot identification", IEEE Trans. Control Systems Technology 22(1), 132-145, Sec. III-IV:

    theta_0 = OLS (WLS) estimate;
    k = 0, 1, ...: simulate the closed loop -- the same reference q_r(t) and the same
    controller as the experiment -- with the model theta_k  ->  noise-free states
    (q_s, dq_s, ddq_s)_k; instruments Z_k = W(q_s, dq_s, ddq_s) (the base regressor of the
    simulated states, same rows and sample selection as the measured W);
    theta_{k+1} = (Z_k^T W)^-1 Z_k^T y                                         (eq. 24)
    until max |theta_{k+1} - theta_k| / max(|theta_{k+1}|, std) or the relative change of
    the residual norm ||y - W theta|| is small.

Z is correlated with W but not with the measurement noise (the simulation never sees it),
so the closed-loop correlation between noise and regressor that biases OLS (the controller
feeds the position noise back into the torque) drops out. Rows are weighted per joint by
1 / sigma_j^2 of the current residuals, as the paper's weighted form (eq. 27).
"""
from __future__ import annotations

import numpy as np

from robot_identification.errors import ConfigError, DataError, IdentificationError
from robot_identification.regressor import regressor
from robot_identification.signal import lowpass_filtfilt

#: IV iterations stop when no parameter moves by more than this fraction of
#: max(|value|, its IV std in the pass) ...
IV_TOLERANCE = 1e-3
#: ... or when the residual norm ||y - W theta|| changes by less than this fraction (the
#: weakly identified parameters keep moving by a few formal std from one simulated closed
#: loop to the next; the formal std ignores the row correlation of filtered data).
IV_RESIDUAL_TOLERANCE = 1e-3
#: The iteration is stopped (error) when the residual norm exceeds this factor x WLS's.
IV_DIVERGENCE = 2.0
#: Most IV iterations (then an ``iv_not_converged`` warning).
IV_MAX_ITERATIONS = 10

#: Dataset metadata the closed-loop simulation needs.
CLOSED_LOOP_KEYS = ("trajectory", "rate_hz", "kp", "kd", "controller")


def closed_loop_spec(metadata, name):
    """The experiment's closed loop from a recording's metadata, or a one-line ConfigError.

    Returns
    -------
    dict
        ``trajectory`` (object with ``evaluate``), ``rate_hz`` [Hz], ``kp``, ``kd`` (n,),
        ``substeps`` (int), ``duration`` [s] or None.
    """
    meta = metadata or {}
    missing = [k for k in CLOSED_LOOP_KEYS if meta.get(k) in (None, [], "")]
    if missing:
        raise ConfigError(
            f"estimator 'iv' simulates the experiment's closed loop, but recording '{name}' "
            f"does not carry {', '.join(missing)} in its metadata (recorded by `simulate` / "
            f"the demo; a real robot with an unknown controller has no closed loop to "
            f"simulate)")
    if meta["controller"] != "RigidPDController":
        raise ConfigError(f"estimator 'iv': recording '{name}' was taken with controller "
                          f"{meta['controller']!r}; the closed-loop simulation supports "
                          f"RigidPDController only")
    from robot_identification.excitation import trajectory_from_dict  # start-up: iv only
    return {"trajectory": trajectory_from_dict(meta["trajectory"]),
            "rate_hz": float(meta["rate_hz"]), "kp": np.asarray(meta["kp"], dtype=float),
            "kd": np.asarray(meta["kd"], dtype=float),
            "substeps": int(meta.get("substeps") or 1), "duration": meta.get("duration")}


class BaseModelDynamics:
    """Forward dynamics of a rigid arm whose model is the base-parameter vector ``theta``.

    tau = W(q, dq, ddq) theta is affine in ddq, so with h = W(q, dq, 0) theta and
    M[:, j] = W(q, dq, e_j) theta - h, ddq = M^-1 (u - h): the identified model itself
    (rigid body, rotor inertia, the configured friction with its deadband), whatever the
    standard parameters behind it. One regressor call of n + 1 samples per evaluation.

    Raises
    ------
    IdentificationError
        M(q) of ``theta`` is not positive definite (no simulable model).
    """

    def __init__(self, model, base, theta, friction_deadband=0.0):
        self._regressor = regressor
        self.model, self.base = model, base
        self.theta = np.asarray(theta, dtype=float)
        self.deadband = friction_deadband
        n = model.n
        self._dq = np.zeros((n + 1, n))
        self._ddq = np.vstack([np.zeros(n), np.eye(n)])

    def accelerations(self, q, dq, u):
        n = self.model.n
        Q = np.broadcast_to(q, (n + 1, n))
        self._dq[:] = dq
        Y = self._regressor(self.model, Q, self._dq, self._ddq,
                            friction_deadband=self.deadband)
        f = self.base.project(Y) @ self.theta          # (n + 1, n)
        h = f[0]
        M = (f[1:] - h).T
        M = 0.5 * (M + M.T)
        try:
            L = np.linalg.cholesky(M)
        except np.linalg.LinAlgError:
            raise IdentificationError("estimator 'iv': the model of the current estimate has "
                                      "an inertia matrix that is not positive definite at "
                                      f"q = {np.round(q, 3).tolist()}; it cannot be "
                                      "simulated") from None
        return np.linalg.solve(L.T, np.linalg.solve(L, u - h))


def simulate_closed_loop(model, base, theta, spec, friction_deadband=0.0, t_end=None):
    """Noise-free closed loop of the model ``theta``: reference -> PD -> base-model dynamics.

    The experiment of :func:`robot_identification.simulation.simulate`: start at rest at
    the reference's start point, command ``u_i`` from the state at ``t_i`` held over one
    control period, ``substeps`` semi-implicit Euler steps per period (one dynamics
    evaluation each: the instruments need states correlated with the measured ones, not
    a second-order match of the experiment's RK4).

    Returns
    -------
    t, q, dq, ddq : ndarray (N,), (N, n) x 3
        [s], [rad], [rad/s], [rad/s^2]; ddq under the command of the sample.
    """
    dyn = BaseModelDynamics(model, base, theta, friction_deadband)
    from robot_identification.simulation import make_controller  # start-up: iv only
    ctrl = make_controller(model, spec["kp"], spec["kd"])
    rate = spec["rate_hz"]
    dt = 1.0 / rate
    duration = float(t_end if t_end is not None else (spec["duration"]
                                                      or spec["trajectory"].duration))
    N = int(round(duration * rate)) + 1
    t = np.arange(N) * dt
    q_ref, dq_ref, _ = spec["trajectory"].evaluate(t)
    n = model.n
    q, dq, ddq = np.empty((N, n)), np.empty((N, n)), np.empty((N, n))
    x, v = q_ref[0].copy(), np.zeros(n)
    h = dt / spec["substeps"]
    for i in range(N):
        u = ctrl(q_ref[i], dq_ref[i], {"q": x, "dq": v})
        a = dyn.accelerations(x, v, u)
        q[i], dq[i], ddq[i] = x, v, a
        if i == N - 1:
            break
        for k in range(spec["substeps"]):      # semi-implicit Euler, u held
            if k:
                a = dyn.accelerations(x, v, u)
            v = v + h * a
            x = x + h * v
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
            raise IdentificationError(f"estimator 'iv': the closed-loop simulation of the "
                                      f"current estimate diverged at t = {t[i]:.3f} s")
    return t, q, dq, ddq


class ClosedLoopInstruments:
    """Instruments of one IV pass: per recording, the closed-loop simulation of ``theta``.

    Picklable (shipped to Dask workers); :meth:`for_recording` simulates, low-passes the
    states with the identification's zero-phase Butterworth (``cutoff_hz``, ``filter_order``;
    the same filter as the measured rows) and returns a function
    ``states(t) -> (q, dq, ddq)`` interpolating them at the sample times.
    """

    def __init__(self, base, theta, friction_deadband=0.0, cutoff_hz=None, filter_order=5):
        self.base = base
        self.theta = np.asarray(theta, dtype=float)
        self.deadband = friction_deadband
        self.cutoff_hz, self.filter_order = cutoff_hz, filter_order

    def for_recording(self, model, metadata, name, t_end=None):
        if model.config.elastic:
            raise ConfigError(f"estimator 'iv' supports rigid arms; robot "
                              f"'{model.config.name}' has elastic joints (the closed-loop "
                              f"simulation of an identified elastic model is not implemented)")
        spec = closed_loop_spec(metadata, name)
        ts, qs, dqs, ddqs = simulate_closed_loop(model, self.base, self.theta, spec,
                                                 self.deadband, t_end)
        if self.cutoff_hz is not None and self.cutoff_hz < 0.5 * spec["rate_hz"]:
            # the measured rows pass the zero-phase low-pass: so do the instruments (the
            # simulated Coulomb chatter at standstill would otherwise fill ddq_s with
            # +-F_c / M steps that the measured, filtered W does not have)
            qs, dqs, ddqs = (lowpass_filtfilt(x, spec["rate_hz"], self.cutoff_hz,
                                              self.filter_order) for x in (qs, dqs, ddqs))

        def states(t):
            t = np.asarray(t, dtype=float)
            if t.size and (t.min() < ts[0] - 1e-9 or t.max() > ts[-1] + 1e-9):
                raise DataError(f"recording '{name}': samples at t = {t.min():.6g}.."
                                f"{t.max():.6g} s lie outside the simulated closed loop "
                                f"(0..{ts[-1]:.6g} s)")
            out = []
            for x in (qs, dqs, ddqs):
                out.append(np.stack([np.interp(t, ts, x[:, k]) for k in range(x.shape[1])],
                                    axis=1))
            return out
        return states
