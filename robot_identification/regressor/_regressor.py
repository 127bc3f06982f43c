"""Rigid and elastic-joint regressors (observation-matrix rows) of a RobotModel."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from robot_identification.errors import DataError

#: Default number of samples processed per block by :func:`iter_regressor_blocks`.
CHUNK = 2048


def _as_samples(name, x, n, N=None):
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != n:
        raise DataError(f"{name}: expected shape (n_samples, {n}), got {np.shape(x)}")
    if N is not None and x.shape[0] != N:
        raise DataError(f"{name}: {x.shape[0]} samples, expected {N} like q")
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        raise DataError(f"{name}: non-finite value (NaN/inf) at sample {bad[0]}, "
                        f"joint {bad[1]}")
    return x


def coulomb_sign(velocity, deadband=0.0):
    """sign(v) outside a deadband, the linear ramp v / deadband inside it.

    At rest the friction torque is undetermined (stiction balances the load) and the
    measured velocity flickers at its noise level (e.g. +-1e-4 rad/s on a UR10e), so
    sign(v) would switch the full Coulomb torque on noise. Inside |v| < ``deadband`` the
    Coulomb column ramps linearly through 0 (used identically in identification and
    prediction).

    Parameters
    ----------
    velocity : ndarray (N, n) [rad/s]
    deadband : float or ndarray (n,)
        Half-width [rad/s] per joint; 0: plain sign(v).
    """
    v = np.asarray(velocity, dtype=float)
    d = np.broadcast_to(np.asarray(deadband, dtype=float), v.shape[-1:])
    if not np.any(d > 0):
        return np.sign(v)
    safe = np.where(d > 0, d, 1.0)
    return np.where(d > 0, np.clip(v / safe, -1.0, 1.0), np.sign(v))


def friction_columns(model, velocity, deadband=0.0):
    """Friction and offset columns of the configured friction model.

    Parameters
    ----------
    model : RobotModel
    velocity : ndarray, shape (N, n)
        Joint velocity (rigid) or link-referred motor velocity theta_dot (elastic) [rad/s].
    deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`); 0: sign(v).

    Returns
    -------
    dict
        Drive key -> ndarray (N, n): ``fv``: v; ``fc``: sign(v); ``fs``: (2/pi) atan(K_v v);
        ``fsc``: (2/pi) atan(delta v) (Szabó & Gincsainé 2021, eq. 7-9); ``fo``: 1.
    """
    fr = model.config.friction
    v = velocity
    cols = {"viscous": v, "coulomb": coulomb_sign(v, deadband), "offset": np.ones_like(v)}
    if fr.model == "static":
        cols["stiction"] = (2.0 / np.pi) * np.arctan(fr.stiction_sharpness * v)
        cols["stribeck"] = (2.0 / np.pi) * np.arctan(fr.stribeck_sharpness * v)
    return cols


def _inertial_map(model, n_cols):
    """Matrix (n_cols, 10n) taking pinocchio regressor columns to the inertial columns of
    ``model`` (body selection in config order and change to each body's parameter frame)."""
    cache = model.__dict__.setdefault("_inertial_map_cache", {})
    if n_cols not in cache:
        M = np.zeros((n_cols, 10 * model.n))
        for k, jid in enumerate(model._jids):
            A = model._frame_change[k]
            M[10 * (jid - 1): 10 * jid, 10 * k: 10 * k + 10] = np.eye(10) if A is None else A
        cache[n_cols] = M
    return cache[n_cols]


def _inertial_block(model, R, rows):
    """Inertial columns (N, len(rows), 10n) of pinocchio regressor blocks R, in config order.

    One matrix product with :func:`_inertial_map` (a single BLAS call per block).
    """
    N, _, C = R.shape
    if not np.array_equal(rows, np.arange(R.shape[1])):
        R = R[:, rows, :]
    return (R.reshape(-1, C) @ _inertial_map(model, C)).reshape(N, len(rows), 10 * model.n)


def _drive_column_index(model):
    keys = model.drive_parameter_keys()
    base = 10 * model.n
    return {(k, key): base + k * len(keys) + i
            for k in range(model.n) for i, key in enumerate(keys)}


def rigid_regressor(model, q, dq, ddq, friction_deadband=0.0):
    """Regressor of a rigid arm with rotor inertia and friction.

    tau = Y(q, dq, ddq) @ pi for the standard parameters pi of ``model``
    (``model.parameter_names``): the pinocchio joint torque regressor (inertial part,
    De Luca slides 5-6), plus per joint k a rotor-inertia column k_m^2 ddq_k (the
    link-referred rotor inertia, pinocchio's ``armature``) and the friction columns
    of :func:`friction_columns` evaluated on dq_k.

    Parameters
    ----------
    model : RobotModel
        A rigid model (``config.model == 'rigid'``).
    q, dq, ddq : array_like, shape (N, n)
        Joint positions [rad|m], velocities [rad/s|m/s], accelerations [rad/s^2|m/s^2],
        config joint order.
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`); 0: sign(dq).

    Returns
    -------
    ndarray, shape (N, n, P)
        Regressor rows per sample; P = ``model.n_parameters``.

    Raises
    ------
    DataError
        Wrong shapes or non-finite values.
    """
    n = model.n
    q = _as_samples("q", q, n)
    N = q.shape[0]
    dq = _as_samples("dq", dq, n, N)
    ddq = _as_samples("ddq", ddq, n, N)
    pm = model.pin_model
    data = pm.createData()
    qp = model.pin_configuration(q)
    vp = model.to_pin_v(dq)
    ap = model.to_pin_v(ddq)
    R = np.empty((N, pm.nv, 10 * (pm.njoints - 1)))
    for i in range(N):
        R[i] = pin.computeJointTorqueRegressor(pm, data, qp[i], vp[i], ap[i])
    Y = np.zeros((N, n, model.n_parameters))
    Y[:, :, : 10 * n] = _inertial_block(model, R, model._idx_v)
    idx = _drive_column_index(model)
    fric = friction_columns(model, dq, friction_deadband)
    rows = np.arange(n)
    for key in model.drive_parameter_keys():
        cols = [idx[(k, key)] for k in range(n)]
        if key == "rotor_inertia":   # 0 for joints without a rotor (rotor_inertia: null)
            rotor = np.array([j.rotor for j in model.config.joints], dtype=float)
            Y[:, rows, cols] = rotor * model.gear_ratios ** 2 * ddq
        else:
            Y[:, rows, cols] = fric[key]
    return Y


def elastic_regressor(model, q, dq, ddq, theta, dtheta, ddtheta, friction_deadband=0.0):
    """Regressor of an arm with elastic joints (Zollo et al. 2014, eq. 13-34).

    With q the link positions and theta the link-referred motor positions
    (motor angle / k_m), the 2n equations per sample are

    - link rows 1..n:  B_L(q) ddq + B_d(q) ddtheta + c_L + g(q) + K (q - theta)
      [+ D (dq - dtheta)] = 0 (free space: zero left-hand side);
    - motor rows n+1..2n: B_d^T ddq + Upsilon k_m^2 ddtheta + c_M + friction(dtheta)
      - K (q - theta) [- D (dq - dtheta)] = u.

    The rotor of joint k spins about joint k's axis and its stator is fixed to the
    parent body (Zollo Sec. 3, assumptions 2-3). With ``coupling: complete`` the
    rotor-link inertial coupling B_d of eq. 8 and its Coriolis terms (eq. 22-28) are
    included: they are computed by pinocchio's torque regressor on a model augmented
    with one rotor joint per joint (coordinate k_m theta_k), minus the rotor's
    transverse share, which belongs to the parent body's standard parameters (eq.
    A.14). ``coupling: reduced`` is Spong's model (B_d = 0). Friction acts on the
    motor rows as a function of dtheta (eq. 5).

    Parameters
    ----------
    model : RobotModel
        An elastic model.
    q, dq, ddq : array_like, shape (N, n)
        Link positions [rad], velocities [rad/s], accelerations [rad/s^2].
    theta, dtheta, ddtheta : array_like, shape (N, n)
        Link-referred motor positions, velocities, accelerations.

    Returns
    -------
    ndarray, shape (N, 2n, P)
        Rows 0..n-1 link equations, n..2n-1 motor equations (config joint order).

    Raises
    ------
    DataError
        Wrong shapes or non-finite values.
    """
    n = model.n
    q = _as_samples("q", q, n)
    N = q.shape[0]
    dq, ddq = _as_samples("dq", dq, n, N), _as_samples("ddq", ddq, n, N)
    theta = _as_samples("theta", theta, n, N)
    dtheta = _as_samples("dtheta", dtheta, n, N)
    ddtheta = _as_samples("ddtheta", ddtheta, n, N)
    gear = model.gear_ratios
    am = model.rotor_model
    data = am.createData()
    nv = model.pin_model.nv
    qa = np.empty((N, am.nq))
    qa[:, : model.pin_model.nq] = model.pin_configuration(q)
    va, aa = np.empty((N, am.nv)), np.empty((N, am.nv))
    va[:, :nv], aa[:, :nv] = model.to_pin_v(dq), model.to_pin_v(ddq)
    ridx_q = [am.joints[r].idx_q for r in model._rotor_jids]
    qa[:, ridx_q] = gear * theta
    va[:, model._rotor_idx_v] = gear * dtheta
    aa[:, model._rotor_idx_v] = gear * ddtheta
    R = np.empty((N, am.nv, 10 * (am.njoints - 1)))
    for i in range(N):
        R[i] = pin.computeJointTorqueRegressor(am, data, qa[i], va[i], aa[i])

    Y = np.zeros((N, 2 * n, model.n_parameters))
    Y[:, :n, : 10 * n] = _inertial_block(model, R, model._idx_v)
    idx = _drive_column_index(model)
    rows_l, rows_m = np.arange(n), n + np.arange(n)
    keys = model.drive_parameter_keys()
    complete = model.config.coupling == "complete"
    pmodel = model.pin_model
    for k in range(n):
        c = idx[(k, "rotor_inertia")]
        rid = model._rotor_jids[k]
        spin = model._spin[k]
        rotor_cols = slice(10 * (rid - 1), 10 * rid)
        if complete:
            motor = R[:, model._rotor_idx_v[k], rotor_cols] @ spin
            Y[:, n + k, c] = gear[k] * motor
            link = R[:, model._idx_v, rotor_cols] @ spin
            parent = pmodel.parents[model._jids[k]]
            if parent > 0:
                rot = pmodel.jointPlacements[model._jids[k]].rotation
                spin_parent = _spin_about(rot @ model.joint_axes[k])
                link = link - R[:, model._idx_v, 10 * (parent - 1): 10 * parent] @ spin_parent
            Y[:, :n, c] = link
        else:
            Y[:, n + k, c] = gear[k] ** 2 * ddtheta[:, k]
    defl, ddefl = q - theta, dq - dtheta
    fric = friction_columns(model, dtheta, friction_deadband)
    for key in keys:
        cols = [idx[(k, key)] for k in range(n)]
        if key == "stiffness":
            Y[:, rows_l, cols] = defl
            Y[:, rows_m, cols] = -defl
        elif key == "damping":
            Y[:, rows_l, cols] = ddefl
            Y[:, rows_m, cols] = -ddefl
        elif key != "rotor_inertia":
            Y[:, rows_m, cols] = fric[key]
    return Y


def _spin_about(axis):
    from robot_identification.model._inertia import spin_inertia_parameters
    return spin_inertia_parameters(axis)


def regressor(model, q, dq, ddq, theta=None, dtheta=None, ddtheta=None, friction_deadband=0.0):
    """Regressor of ``model``: :func:`elastic_regressor` or :func:`rigid_regressor`.

    Returns
    -------
    ndarray, shape (N, rows, P)
        ``rows = model.rows_per_sample``.

    Raises
    ------
    DataError
        Elastic model without motor-side states, bad shapes or non-finite values.
    """
    if model.config.elastic:
        if theta is None or dtheta is None or ddtheta is None:
            raise DataError(f"robot '{model.config.name}' has elastic joints: the regressor "
                            f"needs motor positions, velocities and accelerations (theta)")
        return elastic_regressor(model, q, dq, ddq, theta, dtheta, ddtheta, friction_deadband)
    return rigid_regressor(model, q, dq, ddq, friction_deadband)


def torque_vector(model, tau):
    """Left-hand side rows matching :func:`regressor`.

    Parameters
    ----------
    tau : array_like, shape (N, n)
        Joint torques (rigid) or motor torques u (elastic), link-referred [N*m].

    Returns
    -------
    ndarray, shape (N, rows)
        Rigid: tau. Elastic: [0 (link rows, free space), u] (Zollo eq. 2, 35-37).
    """
    tau = np.atleast_2d(np.asarray(tau, dtype=float))
    if not model.config.elastic:
        return tau
    return np.concatenate([np.zeros_like(tau), tau], axis=1)


def iter_regressor_blocks(model, states, chunk=CHUNK, friction_deadband=0.0):
    """Yield ``(start, Y, y)`` blocks of the stacked observation system in chunks.

    Parameters
    ----------
    model : RobotModel
    states : mapping
        ``q, dq, ddq, tau`` and, for elastic models, ``theta, dtheta, ddtheta``;
        arrays (N, n).
    chunk : int
        Samples per block (bounds memory: chunk * rows * P doubles).
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`).
    """
    N = np.asarray(states["q"]).shape[0]
    for s in range(0, N, chunk):
        sl = slice(s, min(s + chunk, N))
        extra = {}
        if model.config.elastic:
            extra = {k: states[k][sl] for k in ("theta", "dtheta", "ddtheta")}
        Y = regressor(model, states["q"][sl], states["dq"][sl], states["ddq"][sl], **extra,
                      friction_deadband=friction_deadband)
        yield s, Y, torque_vector(model, states["tau"][sl])
