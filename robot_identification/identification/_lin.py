"""Lin's one-joint-at-a-time identification of the minimal inertia constants.

Lin, S.-K. (1991), "Minimal linear combinations of the inertia parameters of a
manipulator", with the identification procedure of its Sec. 3 (Algorithm 2) and the
Stanford-arm example of Sec. 4 (Tables I-II). Equation numbers (L-n) follow the seed
notes (``docs/szabo-lin-reproduction.md`` lists the printed typos we correct).

Frames are Lin's "normal driving-axis" frames E_i (Craig's modified DH): the URDF joint
frames of the robot must be E_i (joint i about/along z_i), as in
``urdf/stanford_arm.urdf``. Composite body i = links i..n; its first moment about origin
i is c_hat_i = k_i + l_i and its inertia about origin i is J_hat_i = U_i + V_i (Lemma 1),
with k_i, U_i constant (the *inertia constants*) and l_i, V_i depending on the joint
variables of the outer joints. Only rotational joint r (the first rotational joint,
normally joint 1) moves during an experiment, all other joints locked, and each
composite body's torque is linear in its unknown constants (L-56, L-57/L-61, L-58).

Implemented: the Lemma-1 recursion (true constants from link parameters, and Algorithm
1: the varying parts l_j, V_j from already identified outer constants), the regressor
rows (L-56), (L-61), (L-58), Algorithm 2 Steps 2-3 for arms whose first joint is
rotational and parallel to gravity and whose second joint is rotational and not
parallel to it (r = 1, s = 2, the Stanford-arm case), and the persistent-excitation
conditions of Property 1 for given configurations. Torques come from any inverse
dynamics function, by default pinocchio's rnea (noise-free, exact derivatives, as in
Lin's example).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from robot_identification.errors import ExcitationError, ModelError
from robot_identification.estimation import NormalEquations, solve_gram

#: Names of the per-body unknowns of (L-56), in column order.
ROTATIONAL_UNKNOWNS = ("U11-U22", "U33", "U12", "U13", "U23", "kx", "ky")
#: Unknowns of (L-61) (translational body).
TRANSLATIONAL_UNKNOWNS = ("kx", "ky", "kz", "m")


_skew = pin.skew        # [v x] (pinocchio)


def _M(U):
    """M(U) of Lemma 1: [[U11 - U22, U12, U13], [U12, 0, U23], [U13, U23, 0]]."""
    return np.array([[U[0, 0] - U[1, 1], U[0, 1], U[0, 2]],
                     [U[0, 1], 0.0, U[1, 2]],
                     [U[0, 2], U[1, 2], 0.0]])


@dataclass
class CompositeConstants:
    """Lemma-1 split of composite bodies 1..n (0-based arrays).

    Attributes
    ----------
    mass : ndarray (n,)      m_hat_i [kg]
    k, l : ndarray (n, 3)    constant and varying first moments about origin i, in E_i [kg m]
    U, V : ndarray (n, 3, 3) constant and varying inertia about origin i, in E_i [kg m^2]
    """

    mass: np.ndarray
    k: np.ndarray
    l: np.ndarray
    U: np.ndarray
    V: np.ndarray


def _check_chain(model):
    pm = model.pin_model
    jids = list(model.joint_ids)
    if jids != list(range(1, model.n + 1)) or any(pm.parents[j] != j - 1 for j in jids):
        raise ModelError(f"Lin's method needs a serial chain whose configured joints are "
                         f"pinocchio joints 1..n in order; '{model.config.name}' is not")
    for k, axis in enumerate(model.joint_axes):
        if not np.allclose(axis, [0, 0, 1]):
            raise ModelError(f"joint '{model.joint_names[k]}' must act along z of its frame "
                             f"(Lin's normal driving-axis frames); its axis is {axis}")


def _kinematics(model, q):
    """Relative rotations R[i] = ^{i}_{i+1}R and offsets s[i] (origin i+1 in E_i), i = 0..n-2,
    plus the absolute rotations and positions of every E_i (pinocchio forward kinematics)."""
    pm = model.pin_model
    data = pm.createData()
    pin.forwardKinematics(pm, data, model.pin_configuration(q))
    Ro = np.array([data.oMi[j].rotation for j in model.joint_ids])
    po = np.array([data.oMi[j].translation for j in model.joint_ids])
    R = np.array([Ro[i].T @ Ro[i + 1] for i in range(model.n - 1)])
    s = np.array([Ro[i].T @ (po[i + 1] - po[i]) for i in range(model.n - 1)])
    return R, s, Ro, po


def _link_parameters(model, pi=None):
    """Per link: mass, CoM c_i in E_i, inertia about the CoM in E_i (from the URDF or ``pi``)."""
    pm = model.pin_model
    out = []
    for k, jid in enumerate(model.joint_ids):
        if pi is None:
            Y = pm.inertias[jid]
        else:
            p = model.inertial_to_joint_frame(pi)[10 * k: 10 * k + 10]
            Y = pin.Inertia.FromDynamicParameters(p)
        out.append((Y.mass, np.array(Y.lever), np.array(Y.inertia)))
    return out


def _step_lv(kind, R, s, mass_next, k_next, l_next, U_next, V_next):
    """Varying parts l_i, V_i from composite body i+1 (Lemma 1, L-19/L-21, L-23/L-25)."""
    if kind == "revolute":
        l_i = R @ (l_next + np.array([k_next[0], k_next[1], 0.0]))
        V_i = R @ (V_next + _M(U_next)) @ R.T - _skew(s) @ _skew(l_i) - _skew(l_i) @ _skew(s)
        return l_i, V_i
    d = np.array([0.0, 0.0, (R.T @ s)[2]])            # whole d_{i+1} (L-28), in E_{i+1}
    bi1 = R.T @ np.array([s[0], 0.0, 0.0])            # b^{<i+1>} (L-27)
    c_next = k_next + l_next
    l_i = R @ (l_next + mass_next * d)
    D, B, C, L = _skew(d), _skew(bi1), _skew(c_next), _skew(l_next)
    inner = (V_next - mass_next * (D @ D + D @ B + B @ D) - D @ C - C @ D - B @ L - L @ B)
    return l_i, R @ inner @ R.T                         # (L-25), parentheses corrected


def composite_constants(model, q, pi=None):
    """Lemma 1: inertia constants k, U and varying parts l, V of all composite bodies.

    Parameters
    ----------
    model : RobotModel
        Serial chain in Lin's frames (see module docstring).
    q : array_like (n,)
        Joint positions [rad, m] (k and U do not depend on them).
    pi : array_like (P,), optional
        Standard parameters; default the URDF's.

    Returns
    -------
    CompositeConstants

    Notes
    -----
    (L-14)-(L-25) with the typos of the paper corrected (k_n = m_n c_n; parentheses of
    L-25). Rotational joint i+1: k_i = m_i c_i + m_hat s + R_b (k_{i+1})_z,
    U_i = I_i - m_i [c_i x]^2 - m_hat [s x]^2 + R diag(U22, U22, U33) R^T
    - [s x][(R_b k_z) x] - [(R_b k_z) x][s x]. Translational: k_i = m_i c_i + m_hat [b,0,0]
    + R k_{i+1}, U_i = I_i - m_i [c_i x]^2 + R U R^T - m_hat [b x]^2 - [b x][(R k) x]
    - [(R k) x][b x].
    """
    _check_chain(model)
    n = model.n
    R, s, _, _ = _kinematics(model, q)
    links = _link_parameters(model, pi)
    mass, k, l = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3))  # noqa: E741
    U, V = np.zeros((n, 3, 3)), np.zeros((n, 3, 3))
    m_n, c_n, I_n = links[-1]
    mass[-1], k[-1], U[-1] = m_n, m_n * c_n, I_n - m_n * _skew(c_n) @ _skew(c_n)
    for i in range(n - 2, -1, -1):
        m_i, c_i, I_i = links[i]
        kind = model.joint_types[i + 1]
        Ri, si = R[i], s[i]
        mh = mass[i + 1]
        mass[i] = m_i + mh
        own = I_i - m_i * _skew(c_i) @ _skew(c_i)
        if kind == "revolute":
            Rb = Ri[:, 2]
            kz = Rb * k[i + 1, 2]
            k[i] = m_i * c_i + mh * si + kz
            Ud = np.diag([U[i + 1, 1, 1], U[i + 1, 1, 1], U[i + 1, 2, 2]])
            U[i] = (own - mh * _skew(si) @ _skew(si) + Ri @ Ud @ Ri.T
                    - _skew(si) @ _skew(kz) - _skew(kz) @ _skew(si))
        else:
            b = np.array([si[0], 0.0, 0.0])
            Rk = Ri @ k[i + 1]
            k[i] = m_i * c_i + mh * b + Rk
            U[i] = (own + Ri @ U[i + 1] @ Ri.T - mh * _skew(b) @ _skew(b)
                    - _skew(b) @ _skew(Rk) - _skew(Rk) @ _skew(b))
        l[i], V[i] = _step_lv(kind, Ri, si, mh, k[i + 1], l[i + 1], U[i + 1], V[i + 1])
    return CompositeConstants(mass, k, l, U, V)


def composite_direct(model, q, pi=None):
    """Composite mass, first moment c_hat_i and inertia J_hat_i about origin i in E_i, by
    direct summation over links i..n (L-5)-(L-7); the reference for Lemma 1.

    Returns
    -------
    mass : ndarray (n,), c_hat : ndarray (n, 3), J_hat : ndarray (n, 3, 3)
    """
    _check_chain(model)
    _, _, Ro, po = _kinematics(model, q)
    links = _link_parameters(model, pi)
    n = model.n
    mass, c, J = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3))
    for i in range(n):
        for j in range(i, n):
            m_j, c_j, I_j = links[j]
            Rij = Ro[i].T @ Ro[j]
            r = Ro[i].T @ (po[j] - po[i]) + Rij @ c_j
            mass[i] += m_j
            c[i] += m_j * r
            J[i] += Rij @ I_j @ Rij.T - m_j * _skew(r) @ _skew(r)
    return mass, c, J


def varying_parts(model, q, constants, start):
    """Algorithm 1: l_j, V_j for j >= ``start`` from the (identified) outer constants.

    Parameters
    ----------
    model : RobotModel
    q : array_like (n,)
    constants : CompositeConstants
        Only ``mass`` (translational joints), ``k`` and ``U`` of bodies > start are read;
        U may hold U11 - U22 in its (0, 0) entry and 0 in (1, 1) (M(U) is what enters).
    start : int
        0-based body index j.

    Returns
    -------
    l : ndarray (n, 3), V : ndarray (n, 3, 3)
        Filled for bodies start..n-1 (l_n = 0, V_n = 0).
    """
    R, s, _, _ = _kinematics(model, q)
    n = model.n
    l, V = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for i in range(n - 2, start - 1, -1):
        l[i], V[i] = _step_lv(model.joint_types[i + 1], R[i], s[i], constants.mass[i + 1],
                              constants.k[i + 1], l[i + 1], constants.U[i + 1], V[i + 1])
    return l, V


def moving_axis_geometry(model, q, moving, body):
    """u = axis of joint ``moving`` in E_body, offset of origin ``body`` from origin
    ``moving`` in E_body, gravity in E_body (all 0-based).

    Returns
    -------
    u : ndarray (3,), s : ndarray (3,) [m], g : ndarray (3,) [m/s^2]
    """
    _, _, Ro, po = _kinematics(model, q)
    Rb = Ro[body]
    u = Rb.T @ Ro[moving][:, 2]
    s = Rb.T @ (po[body] - po[moving])
    g = Rb.T @ np.asarray(model.config.gravity, float)
    return u, s, g


def exciting_directions(model, q, moving=0):
    """u_r^{<j>}: the moving joint's axis in every frame E_j (Lin, Table I), array (n, 3)."""
    return np.array([moving_axis_geometry(model, q, moving, j)[0] for j in range(model.n)])


def rotational_rows(u, s, g, dq, ddq):
    """Regressor rows (L-56) of a rotational body j while rotational joint i moves alone.

    tau_j = phi . [J11 - J22, J33, J12, J13, J23, c_x, c_y] with J = U_j + V_j, c = k_j + l_j.

    Parameters
    ----------
    u : (3,) axis of the moving joint in E_j; s : (3,) origin j minus origin i in E_j [m];
    g : (3,) gravity in E_j [m/s^2]; dq, ddq : (N,) moving joint velocity, acceleration.

    Returns
    -------
    ndarray (N, 7)
        (L-56) with the sign typo of (L-51) corrected (+ u_x u_z dq^2 in the J23 column).
    """
    dq, ddq = np.atleast_1d(dq), np.atleast_1d(ddq)
    ux, uy, uz = u
    w2 = dq ** 2
    a = np.outer(ddq, np.cross(u, s)) + np.outer(w2, np.cross(u, np.cross(u, s)))
    ag = a - g
    return np.column_stack([-ux * uy * w2, uz * ddq, (ux ** 2 - uy ** 2) * w2,
                            ux * ddq - uy * uz * w2, uy * ddq + ux * uz * w2,
                            ag[:, 1], -ag[:, 0]])


def translational_rows(u, s, g, dq, ddq):
    """Regressor rows (L-57)/(L-61) of a translational body k while rotational joint i moves.

    tau_k = phi . [c_x, c_y, c_z, m_hat] with c = k_k + l_k (a_i^{<k>} -> a_k^{<k>} typo fixed).

    Returns
    -------
    ndarray (N, 4)
    """
    dq, ddq = np.atleast_1d(dq), np.atleast_1d(ddq)
    ux, uy, uz = u
    w2 = dq ** 2
    a = np.outer(ddq, np.cross(u, s)) + np.outer(w2, np.cross(u, np.cross(u, s)))
    return np.column_stack([-uy * ddq + ux * uz * w2, ux * ddq + uy * uz * w2,
                            -(ux ** 2 + uy ** 2) * w2, (a - g)[:, 2]])


def moving_joint_rows(g, ddq):
    """Rows (L-58) of the moving rotational joint itself: [ddq, -g_y, g_x] . [J33, c_x, c_y]."""
    ddq = np.atleast_1d(ddq)
    return np.column_stack([ddq, np.full_like(ddq, -g[1]), np.full_like(ddq, g[0])])


def step_profile(t, start, amplitude=np.pi / 6, sigma=10.0):
    """Critically damped step (Lin L-64..L-66): q, dq, ddq of the moving joint at ``t`` [s].

    q(t) = amplitude [1 - (1 + sigma t) e^{-sigma t}] + start.
    """
    t = np.asarray(t, float)
    e = np.exp(-sigma * t)
    return (amplitude * (1 - (1 + sigma * t) * e) + start,
            amplitude * sigma ** 2 * t * e,
            amplitude * (1 - sigma * t) * sigma ** 2 * e)


def rnea_torques(model):
    """Inverse dynamics ``f(q, dq, ddq) -> tau`` (N, n) with pinocchio's rnea (rigid bodies)."""
    pm = model.pin_model
    data = pm.createData()

    def f(q, dq, ddq):
        return np.array([model.from_pin_v(pin.rnea(pm, data, model.pin_configuration(a),
                                                   model.to_pin_v(b), model.to_pin_v(c)))
                         for a, b, c in zip(q, dq, ddq)])
    return f


def _joint_motion(model, q_cfg, joint, times, amplitude, sigma):
    n = model.n
    qj, dqj, ddqj = step_profile(times, q_cfg[joint], amplitude, sigma)
    N = len(times)
    q = np.tile(q_cfg, (N, 1))
    q[:, joint] = qj
    dq, ddq = np.zeros((N, n)), np.zeros((N, n))
    dq[:, joint], ddq[:, joint] = dqj, ddqj
    return q, dq, ddq


@dataclass
class LinResult:
    """Outcome of :func:`lin_identify`.

    Attributes
    ----------
    constants : dict
        Minimal-set constant name -> value, e.g. ``'body4.U11-U22'``, ``'body3.m'``,
        ``'body1.U33'`` (bodies 1-based).
    condition : dict
        Body (1-based) -> condition number of its (column-scaled) regression.
    rank : dict
        Body -> (rank, columns) of its regression.
    configurations : dict
        Body -> list of configurations (n,) used.
    """

    constants: dict
    condition: dict = field(default_factory=dict)
    rank: dict = field(default_factory=dict)
    configurations: dict = field(default_factory=dict)


def _parallel(a, b, tol=1e-9):
    return np.linalg.norm(np.cross(a, b)) <= tol * np.linalg.norm(a) * np.linalg.norm(b)


def _special_joints(model, q):
    types = model.joint_types
    rot = [i for i, t in enumerate(types) if t == "revolute"]
    if not rot:
        raise ModelError("Lin's procedure needs at least one rotational joint")
    r = rot[0]
    _, _, Ro, _ = _kinematics(model, q)
    s = next((i for i in rot if i > r and not _parallel(Ro[i][:, 2], Ro[r][:, 2])), None)
    return r, s, Ro


def _lstsq(A, y, body, result, names):
    """Least squares of one body's rows through the engine's normal equations
    (:class:`~robot_identification.estimation.NormalEquations`,
    :func:`~robot_identification.estimation.solve_gram`) on unit-norm columns; columns
    that are zero in every row (constants this body's motion does not reach) are left at
    0. The rank of the scaled rows is checked first (SVD)."""
    d = np.linalg.norm(A, axis=0)
    keep = d > 1e-12 * max(d.max(), 1e-300)
    As = A[:, keep] / d[keep]
    sv = np.linalg.svd(As, compute_uv=False)
    rank = int(np.sum(sv > 1e-10 * sv[0]))
    result.rank[body] = (rank, int(keep.sum()))
    result.condition[body] = float(sv[0] / sv[-1]) if sv[-1] > 0 else float("inf")
    if rank < keep.sum():
        raise ExcitationError(f"body {body}: the one-joint motions do not excite "
                              f"{[n for n, k in zip(names, keep) if k]} independently "
                              f"(rank {rank} < {keep.sum()}); choose other configurations")
    neq = NormalEquations(int(keep.sum()), 1)
    neq.add(As[:, None, :], np.asarray(y, dtype=float)[:, None])
    x = np.zeros(A.shape[1])
    x[keep] = solve_gram(neq.gram, neq.b.sum(axis=0))[0] / d[keep]
    return x, keep


def lin_identify(model, base_configuration, values=(0.7, -0.7, -0.6), times=(0.2, 0.3, 0.4),
                 amplitude=np.pi / 6, sigma=10.0, torque=None, translational_values=(-0.7,)):
    """Lin's Algorithm 2: identify the minimal inertia constants moving one joint at a time.

    For composite bodies j = n..s (s: nearest rotational joint not parallel to the first
    rotational joint r): l_j, V_j from the constants already identified (Algorithm 1);
    for rotational j, configurations equal to ``base_configuration`` except
    q_j in ``values``; for translational j, ``base_configuration`` and copies with q_s in
    ``translational_values``; in each, joint r rotates alone along the critically damped
    step (L-64) sampled at ``times`` and (L-56) / (L-61) are stacked and solved by least
    squares. (U_s)_33 when joint s is perpendicular to r, and (U_r)_33, come from
    (L-58) with joint s (resp. r) moving alone from ``base_configuration``.

    Parameters
    ----------
    model : RobotModel
        Serial chain in Lin's frames, first joint rotational and parallel to gravity,
        second joint rotational and not parallel to it (Stanford-arm structure).
    base_configuration : array_like (n,)
        (L-62) [rad, m].
    values : sequence of float
        q_j of the exciting configurations (>= 3 for 7 unknowns from 3 samples each).
    times : sequence of float
        Sample times [s] of each motion.
    amplitude, sigma : float
        Step size [rad] and 1/time constant [1/s] of (L-64).
    torque : callable, optional
        ``f(q, dq, ddq) -> tau`` (N, n), the "measurements"; default :func:`rnea_torques`.
    translational_values : sequence of float
        q_s of the extra configurations of a translational body.

    Returns
    -------
    LinResult

    Raises
    ------
    ModelError
        Chain structure not covered (see above).
    ExcitationError
        A regression is rank deficient (persistent-excitation condition violated).
    """
    _check_chain(model)
    torque = torque or rnea_torques(model)
    q0 = np.asarray(base_configuration, float)
    n = model.n
    if q0.shape != (n,):
        raise ModelError(f"base configuration needs {n} values, got {q0.shape}")
    r, s, Ro = _special_joints(model, q0)
    g0 = np.asarray(model.config.gravity, float)
    if r != 0 or s != 1 or not _parallel(Ro[0][:, 2], g0):
        raise ModelError("lin_identify covers arms whose joint 1 is rotational and parallel "
                         "to gravity and whose joint 2 is rotational and not parallel to "
                         "joint 1 (Lin's Stanford-arm example); Steps 3(b), 3(c), 3.2 of "
                         "Algorithm 2 are not implemented")
    times = np.asarray(times, float)
    est = CompositeConstants(np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3)),
                             np.zeros((n, 3, 3)), np.zeros((n, 3, 3)))
    result = LinResult(constants={})
    for j in range(n - 1, s - 1, -1):
        A, y, cfgs = [], [], []
        if model.joint_types[j] == "revolute":
            cfg_values = [(j, v) for v in values]
        else:
            cfg_values = [(None, None)] + [(s, v) for v in translational_values]
        for idx, v in cfg_values:
            qc = q0.copy()
            if idx is not None:
                qc[idx] = v
            cfgs.append(qc)
            q, dq, ddq = _joint_motion(model, qc, r, times, amplitude, sigma)
            tau = torque(q, dq, ddq)[:, j]
            for k in range(len(times)):
                l, V = varying_parts(model, q[k], est, j)
                u, sv, g = moving_axis_geometry(model, q[k], r, j)
                if model.joint_types[j] == "revolute":
                    row = rotational_rows(u, sv, g, dq[k, r], ddq[k, r])[0]
                    known = np.array([V[j, 0, 0] - V[j, 1, 1], V[j, 2, 2], V[j, 0, 1],
                                      V[j, 0, 2], V[j, 1, 2], l[j, 0], l[j, 1]])
                else:
                    row = translational_rows(u, sv, g, dq[k, r], ddq[k, r])[0]
                    known = np.array([l[j, 0], l[j, 1], l[j, 2], 0.0])
                A.append(row)
                y.append(tau[k] - row @ known)
        rot = model.joint_types[j] == "revolute"
        names = ROTATIONAL_UNKNOWNS if rot else TRANSLATIONAL_UNKNOWNS
        x, keep = _lstsq(np.array(A), np.array(y), j + 1, result, names)
        result.configurations[j + 1] = cfgs
        if model.joint_types[j] == "revolute":
            est.U[j, 0, 0], est.U[j, 0, 1], est.U[j, 0, 2], est.U[j, 1, 2] = x[[0, 2, 3, 4]]
            est.U[j, 1, 0], est.U[j, 2, 0], est.U[j, 2, 1] = x[2], x[3], x[4]
            est.U[j, 2, 2] = x[1]
            est.k[j, :2] = x[5:7]
            for nm, val, kept in zip(names, x, keep):
                if kept:
                    result.constants[f"body{j + 1}.{nm}"] = float(val)
        else:
            est.k[j] = x[:3]
            est.mass[j] = x[3]
            for nm, val in zip(names, x):
                result.constants[f"body{j + 1}.{nm}"] = float(val)
    # (U_s)_33 when joint s is perpendicular to r (its L-56 column vanished), then (U_r)_33
    for j in ([s] if f"body{s + 1}.U33" not in result.constants else []) + [r]:
        q, dq, ddq = _joint_motion(model, q0, j, times, amplitude, sigma)
        tau = torque(q, dq, ddq)[:, j]
        A, y = [], []
        for k in range(len(times)):
            l, V = varying_parts(model, q[k], est, j)
            g = moving_axis_geometry(model, q[k], j, j)[2]
            row = moving_joint_rows(g, ddq[k, j])[0]
            A.append(row[0])
            y.append(tau[k] - row[0] * V[j, 2, 2] - row[1:] @ (est.k[j, :2] + l[j, :2]))
        A = np.array(A)[:, None]
        x, _ = _lstsq(A, np.array(y), j + 1, _Scratch(), ("U33",))
        est.U[j, 2, 2] = x[0]
        result.constants[f"body{j + 1}.U33"] = float(x[0])
    missing = sorted(set(minimal_set(model)) - set(result.constants))
    if missing:
        raise ExcitationError(f"the one-joint motions at this base configuration do not "
                              f"identify {missing} (their regressor columns vanish); choose "
                              f"configurations where the joints are neither parallel nor "
                              f"perpendicular to the moving joint (Lin, Property 1)")
    return result


class _Scratch:
    def __init__(self):
        self.rank, self.condition = {}, {}


def minimal_set(model, q=None, pi=None):
    """True values of Lin's minimal set for the Stanford-arm structure (r = 1, s = 2),
    keyed like :attr:`LinResult.constants`, from the link parameters via Lemma 1."""
    q = np.zeros(model.n) if q is None else np.asarray(q, float)
    cc = composite_constants(model, q, pi)
    out = {}
    for j in range(model.n - 1, 0, -1):
        U, k = cc.U[j], cc.k[j]
        if model.joint_types[j] == "revolute":
            vals = [U[0, 0] - U[1, 1], U[2, 2], U[0, 1], U[0, 2], U[1, 2], k[0], k[1]]
            for nm, v in zip(ROTATIONAL_UNKNOWNS, vals):
                out[f"body{j + 1}.{nm}"] = float(v)
        else:
            for nm, v in zip(TRANSLATIONAL_UNKNOWNS, [k[0], k[1], k[2], cc.mass[j]]):
                out[f"body{j + 1}.{nm}"] = float(v)
    out["body1.U33"] = float(cc.U[0, 2, 2])
    return out


def check_persistent_excitation(model, configurations, moving=0, body=None, tol=1e-6):
    """Lin's sufficient persistent-excitation conditions (Property 1) for given configurations.

    For each configuration and each body j > moving: u = u_moving^{<j>} and the checks
    of Algorithm 2 Step 2.1 — all components of u non-zero and u_x != u_y (rotational
    body, joint j neither parallel nor perpendicular to the moving joint), or at least two
    non-zero components (translational body, Step 2.2).

    Parameters
    ----------
    model : RobotModel
    configurations : array_like (K, n)
    moving : int
        0-based index of the joint rotated alone.
    body : int, optional
        Only this 0-based body.
    tol : float
        |component| <= tol counts as zero.

    Returns
    -------
    list of dict
        One per (configuration, body): ``configuration``, ``body`` (1-based), ``u``,
        ``kind`` ('parallel', 'perpendicular', 'general'), ``ok`` (bool), ``reason``.
    """
    out = []
    bodies = range(moving + 1, model.n) if body is None else [body]
    for c, qc in enumerate(np.atleast_2d(configurations)):
        for j in bodies:
            u = moving_axis_geometry(model, qc, moving, j)[0]
            nz = np.abs(u) > tol
            if model.joint_types[j] == "revolute":
                if abs(abs(u[2]) - 1) <= tol:
                    kind, ok, why = "parallel", False, "u parallel to joint axis (Property 1c/1d)"
                elif abs(u[2]) <= tol:
                    kind, ok, why = "perpendicular", False, "(U)_33 not excited (Property 1b)"
                else:
                    kind = "general"
                    ok = bool(nz.all() and abs(u[0] - u[1]) > tol)
                    why = "" if ok else "a component of u is zero or u_x = u_y"
            else:
                kind, ok = "translational", bool(nz.sum() >= 2)
                why = "" if ok else "fewer than two non-zero components of u"
            out.append({"configuration": c, "body": j + 1, "u": u, "kind": kind, "ok": ok,
                        "reason": why})
    return out


def excitation_report(model, base_configuration, values=(0.7, -0.7, -0.6), times=(0.2, 0.3, 0.4),
                      amplitude=np.pi / 6, sigma=10.0, translational_values=(-0.7,)):
    """Persistent-excitation report of a planned Lin experiment (no measurements needed).

    Runs the per-body regressions of :func:`lin_identify` on zero torques and collects
    their rank and condition number, plus the Property-1 configuration checks of
    :func:`check_persistent_excitation` for every configuration used.

    Returns
    -------
    dict
        ``ok`` (bool: every regression has full column rank), ``rank``, ``condition``
        (body -> value, as in :class:`LinResult`), ``error`` (message of the first
        rank-deficient body, or ``None``), ``properties`` (list of dict).
    """
    q0 = np.asarray(base_configuration, float)

    def zero(q, dq, ddq):
        return np.zeros_like(np.asarray(q, float))

    report = {"ok": True, "error": None, "rank": {}, "condition": {}, "properties": []}
    try:
        res = lin_identify(model, q0, values, times, amplitude, sigma, torque=zero,
                           translational_values=translational_values)
        report["rank"], report["condition"] = res.rank, res.condition
        cfgs = {tuple(c) for cs in res.configurations.values() for c in cs}
    except ExcitationError as exc:
        report["ok"], report["error"] = False, str(exc)
        cfgs = {tuple(q0)}
    report["properties"] = check_persistent_excitation(model, sorted(cfgs))
    return report
