"""Sensor sets of elastic-joint arms: which signals a recording holds, the equations and base
parameters they identify, and the joint stiffness where those equations leave it out
(docs/elastic.md).

=====  ==========================================  =========================================
set    signals                                     identifies
=====  ==========================================  =========================================
a      link + motor encoders, motor torque         Zollo et al. (2014): link rows [0], motor
       (q, theta, u)                               rows [u]; every parameter, K in the same
                                                   least squares
b      motor encoders + joint torque sensors       link rows [tau_J] (link dynamics), motor
       (theta, tau_J) [+ motor torque u]           rows [u - tau_J] (rotor inertia, motor
       [+ link encoders q]                         friction; only with u); K from the spring
                                                   tau_J = K (theta - q) with link encoders,
                                                   else by separable nonlinear least squares
                                                   over q = theta - tau_J / K
c      motor encoders + motor torque only          refused (:func:`check_signals`): the
                                                   deflection is not measured
=====  ==========================================  =========================================
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from robot_identification.diagnostics import Diagnostic
from robot_identification.errors import DataError
from robot_identification.estimation import NormalEquations, wls
from robot_identification.identifiability import (
    DEPENDENCY_TOLERANCE, RANK_TOLERANCE, BaseParameters, base_parameters,
    base_parameters_from_matrix, random_states)
from robot_identification.regressor import regressor

#: Relative standard deviation of a joint stiffness identified from the link dynamics alone
#: (sensor set b without link encoders) above which it is reported as not identified.
STIFFNESS_STD_LIMIT = 0.02
#: Gauss-Newton iterations of the stiffness search (sensor set b without link encoders) and
#: the relative compliance step below which it stops.
STIFFNESS_ITERATIONS, STIFFNESS_TOLERANCE = 12, 1e-5
#: Finite-difference step of the stiffness search, relative to each compliance 1 / K.
COMPLIANCE_STEP = 1e-3
#: Cut-off of the stiffness search: at most this factor x the excitation band (docs/elastic.md).
STIFFNESS_BAND_FACTOR = 10.0


@dataclass(frozen=True)
class SensorSet:
    """The signals of a recording (docs/elastic.md).

    Attributes
    ----------
    link_positions : bool
        Link encoders (``q`` measured; False when q is reconstructed from joint torques).
    motor_positions : bool
        Motor encoders (``theta``).
    motor_torque : bool
        Motor torques (or currents times drive gains, ``tau``).
    joint_torque : bool
        Joint torque sensors (``tau_joint``).
    """

    link_positions: bool = True
    motor_positions: bool = True
    motor_torque: bool = True
    joint_torque: bool = False

    @property
    def name(self) -> str:
        """``a`` (link + motor encoders, motor torque) or ``b`` (joint torque sensors)."""
        return "b" if self.joint_torque else "a"

    def describe(self) -> str:
        parts = [k for k, on in (("link encoders", self.link_positions),
                                 ("motor encoders", self.motor_positions),
                                 ("motor torque", self.motor_torque),
                                 ("joint torque sensors", self.joint_torque)) if on]
        return f"({self.name}) " + " + ".join(parts)

    def to_dict(self) -> dict:
        return {"set": self.name, "link_positions": self.link_positions,
                "motor_positions": self.motor_positions, "motor_torque": self.motor_torque,
                "joint_torque": self.joint_torque}


#: Metadata key of a chunk whose link positions were reconstructed (q = theta - c tau_J) and
#: whose motor torque was filled with zeros (not recorded).
RECONSTRUCTED = "sensors"


def sensor_set(model, dataset) -> SensorSet:
    """The sensor set of a dataset (rigid arms: always ``a``)."""
    if not model.config.elastic:
        return SensorSet()
    made = (dataset.metadata or {}).get(RECONSTRUCTED) or {}
    return SensorSet(
        link_positions=dataset.q is not None and not made.get("link_positions_from_torque"),
        motor_positions=dataset.theta is not None,
        motor_torque=dataset.tau is not None and not made.get("motor_torque_missing"),
        joint_torque=dataset.tau_joint is not None)


def common_sensor_set(model, heads, names) -> SensorSet:
    """The one sensor set of several recordings (their first chunks ``heads``).

    Raises
    ------
    DataError
        Recordings with different sensor sets (one system of equations needs one).
    """
    sets = [sensor_set(model, h) for h in heads]
    if any(s != sets[0] for s in sets[1:]):
        listed = "; ".join(f"'{nm}': {s.describe()}" for nm, s in zip(names, sets))
        raise DataError(f"the recordings hold different signals ({listed}); identify each "
                        f"sensor set on its own (docs/elastic.md)")
    return sets[0]


def link_positions_from_joint_torque(dataset, compliance):
    """The dataset with link positions q = theta - c tau_J (``c`` = 1 / K per joint) and,
    when no motor torque was recorded, ``tau`` = 0 (its rows are not used).

    An elastic arm without link encoders: the joint torque sensor measures
    tau_J = K (theta - q) (the joint damping D is neglected), so the link positions follow
    from the motor positions for a given stiffness (docs/elastic.md, sensor set b).

    Parameters
    ----------
    dataset : Dataset
        With ``theta`` and ``tau_joint``.
    compliance : array_like (n,)
        1 / K [rad / (N*m)].
    """
    made = dict((dataset.metadata or {}).get(RECONSTRUCTED) or {})
    kw = {}
    if dataset.q is None or made.get("link_positions_from_torque"):
        c = np.asarray(compliance, dtype=float)
        kw["q"] = dataset.theta - c * dataset.tau_joint
        kw["dq"] = kw["ddq"] = None
        made["link_positions_from_torque"] = True
        made["compliance"] = [float(x) for x in c]
    if dataset.tau is None:
        kw["tau"] = np.zeros_like(dataset.tau_joint)
        made["motor_torque_missing"] = True
    if not kw:
        return dataset
    return replace(dataset, metadata=dict(dataset.metadata or {}, **{RECONSTRUCTED: made}),
                   **kw)


def nominal_compliance(model):
    """1 / K (n,) of the config's nominal joint stiffness."""
    K = np.array([j.drive.get("stiffness", 0.0) for j in model.config.joints], dtype=float)
    if np.any(K <= 0):
        bad = [j.name for j, k in zip(model.config.joints, K) if k <= 0]
        raise DataError(f"joints {bad} have no nominal stiffness (drive.stiffness): the link "
                        f"positions of an arm without link encoders start from it")
    return 1.0 / K


def _spring_keys(model):
    return ("stiffness", "damping") if model.config.damping else ("stiffness",)


def spring_indices(model):
    """Standard-parameter indices (n, 1 or 2) of the joint stiffness (and damping)."""
    names = model.parameter_names
    return np.array([[names.index(f"{j}.{k}") for k in _spring_keys(model)]
                     for j in model.joint_names])


def sensor_base(model, sensors, n_samples=None, seed=0):
    """Base parameters of the equations a sensor set gives.

    Set ``a``: :func:`~robot_identification.identifiability.base_parameters`. Set ``b``:
    the same random-state regressor without the stiffness (and damping) columns, whose
    terms the joint torque sensors measure, and without the motor rows when no motor
    torque is recorded (then the parameters acting on the motor side only, rotor inertia
    and motor friction, are not base parameters).

    Returns
    -------
    BaseParameters
    """
    if not sensors.joint_torque:
        return base_parameters(model)
    rng = np.random.default_rng(seed)
    if n_samples is None:
        n_samples = max(200, 4 * model.n_parameters // model.rows_per_sample)
    Y = regressor(model, **random_states(model, n_samples, rng))
    Y[:, :, spring_indices(model).ravel()] = 0.0
    if not sensors.motor_torque:
        Y = Y[:, :model.n, :]
    tol = DEPENDENCY_TOLERANCE
    return base_parameters_from_matrix(Y.reshape(-1, model.n_parameters),
                                       model.parameter_names, tol,
                                       null_tol=min(tol, RANK_TOLERANCE))


class SpringSums:
    """Sufficient statistics of the spring equations tau_J = K (theta - q) [+ D (dtheta -
    dq)] per joint (sensor set b with link encoders), accumulated block by block; additive
    (``+``) like the normal equations they travel with."""

    def __init__(self, n, m):
        self.G = np.zeros((n, m, m))
        self.b = np.zeros((n, m))
        self.c = np.zeros(n)
        self.count = np.zeros(n, dtype=np.int64)

    def add(self, states):
        x = [states["theta"] - states["q"]]
        if self.G.shape[1] > 1:
            x.append(states["dtheta"] - states["dq"])
        X = np.stack(x, axis=-1)                   # (N, n, m)
        y = states["tau_joint"]
        self.G += np.einsum("tni,tnj->nij", X, X)
        self.b += np.einsum("tni,tn->ni", X, y)
        self.c += np.einsum("tn,tn->n", y, y)
        self.count += X.shape[0]

    def __add__(self, other):
        out = SpringSums(*self.b.shape)
        for k in ("G", "b", "c", "count"):
            setattr(out, k, getattr(self, k) + getattr(other, k))
        return out

    def solve(self):
        """K (and D) per joint with their covariance: values (n, m), covariance (n, m, m).

        Raises
        ------
        DataError
            A joint whose deflection is 0 throughout (motor and link positions equal).
        """
        n, m = self.b.shape
        values, cov = np.zeros((n, m)), np.zeros((n, m, m))
        for k in range(n):
            G = self.G[k]
            if not np.all(np.diag(G) > 0):
                raise DataError(f"joint {k + 1}: the deflection theta - q is 0 throughout; "
                                f"the motor positions equal the link positions")
            x = np.linalg.solve(G, self.b[k])
            dof = max(int(self.count[k]) - m, 1)
            s2 = max(self.c[k] - self.b[k] @ x, 0.0) / dof
            values[k], cov[k] = x, s2 * np.linalg.inv(G)
        return values, cov


class StiffnessColumns:
    """``columns`` hook of the engine for the stiffness search (sensor set b without link
    encoders): the base regressor W(c) and, per joint k, the derivative of the predicted
    torques W(c) beta with respect to the compliance c_k = 1 / K_k,
    (W(c + h e_k) - W(c)) beta / h, where q(c + h e_k) = q(c) - h tau_J,k e_k (and its
    filtered derivatives: the pre-processing is linear). The Gauss-Newton step of the
    separable least-squares problem min over (beta, c) of |y - W(c) beta|^2 (Golub &
    Pereyra 1973; for a linear-in-beta regressor the variable projection's Jacobian)."""

    needs_states = True

    def __init__(self, model, base, beta, compliance, deadband):
        self.model, self.base = model, base
        self.beta = np.asarray(beta, dtype=float)
        self.c = np.asarray(compliance, dtype=float)
        self.deadband = deadband
        self.width = len(base) + model.n

    def __call__(self, Y, W, y, states):
        n = self.model.n
        pred = W @ self.beta
        J = np.empty(W.shape[:2] + (n,))
        motor = {k: states[k] for k in ("theta", "dtheta", "ddtheta")}
        for k in range(n):
            h = COMPLIANCE_STEP * self.c[k]
            moved = {}
            for key, tj in (("q", "tau_joint"), ("dq", "dtau_joint"), ("ddq", "ddtau_joint")):
                x = states[key].copy()
                x[:, k] -= h * states[tj][:, k]
                moved[key] = x
            Yk = regressor(self.model, moved["q"], moved["dq"], moved["ddq"], **motor,
                                friction_deadband=self.deadband)
            J[:, :, k] = (self.base.project(Yk) @ self.beta - pred) / h
        return np.concatenate([W, J], axis=-1), y


def stiffness_names(model):
    return [f"{j}.stiffness" for j in model.joint_names]


@dataclass
class StiffnessEstimate:
    """Joint stiffness (and damping) identified outside the base-parameter equations.

    Attributes
    ----------
    names : list of str
        Standard parameter names (``joint.stiffness``, ``joint.damping``).
    values : ndarray (m,)
    covariance : ndarray (m, m)
    method : str
        ``spring`` (tau_J = K (theta - q), link encoders) or ``link_dynamics`` (separable
        least squares over q = theta - tau_J / K).
    details : dict
    """

    names: list
    values: np.ndarray
    covariance: np.ndarray
    method: str
    details: dict


def result_base(model, sensors):
    """The base parameters of a result identified from ``sensors``: those of its equations
    (:func:`sensor_base`) with the joint stiffness (and, with link encoders, damping)
    appended as parameters of their own, ordered as :func:`merge_estimate` orders them.

    Returns
    -------
    BaseParameters
    """
    base = sensor_base(model, sensors)
    if not sensors.joint_torque:
        return base
    keys = spring_indices(model)
    if not sensors.link_positions:
        keys = keys[:, :1]
    names = [model.parameter_names[i] for i in keys.ravel()]
    zero = np.zeros(len(base))
    extra = StiffnessEstimate(names, np.zeros(len(names)), np.zeros((len(names),) * 2), "", {})
    est = _Values(zero, np.zeros((len(base), len(base))))
    return merge_estimate(model, base, est, extra)[0]


@dataclass
class _Values:
    values: np.ndarray
    covariance: np.ndarray
    std: np.ndarray = None
    relative_std: np.ndarray = None


def merge_estimate(model, base, est, extra):
    """Base parameters and an estimate with the separately identified stiffness appended,
    rows ordered like :func:`base_parameters` (standard order of their leading parameter).

    Returns
    -------
    BaseParameters, Estimate
    """
    names = list(model.parameter_names)
    idx = np.array([names.index(nm) for nm in extra.names], dtype=int)
    independent = np.concatenate([np.asarray(base.independent, dtype=int), idx])
    order = np.argsort(independent, kind="stable")
    P, p, m = len(names), len(base), len(idx)
    grouping = np.zeros((p + m, P))
    grouping[:p] = base.grouping
    grouping[p + np.arange(m), idx] = 1.0
    categories = list(base.categories)
    for i in idx:
        categories[i] = "identifiable"
    merged = BaseParameters(base.standard_names, independent[order], grouping[order],
                            tuple(categories))
    values = np.concatenate([est.values, extra.values])[order]
    cov = np.zeros((p + m, p + m))
    cov[:p, :p] = est.covariance
    cov[p:, p:] = extra.covariance
    cov = cov[np.ix_(order, order)]
    std = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * std / np.abs(values)
    return merged, replace(est, values=values, covariance=cov, std=std, relative_std=rel)


def sensor_diagnostics(model, sensors, result, stiffness=None):
    """What a sensor set leaves unidentified (docs/elastic.md), as diagnostics.

    - ``not_identified`` (warning): parameters of the full elastic model that the sensor
      set's equations do not contain (set b without motor torque: rotor inertia and motor
      friction act on the motor side only; without link encoders: the joint damping),
      naming the missing signal;
    - ``stiffness_not_identified`` (warning): a joint stiffness identified from the link
      dynamics alone (set b without link encoders) with a relative standard deviation
      above :data:`STIFFNESS_STD_LIMIT`, or a search that did not converge.

    Returns
    -------
    list of Diagnostic
    """
    out = []
    if not sensors.joint_torque:
        return out
    full = base_parameters(model)
    here = set(result.base.standard_names[i] for i in range(len(result.base.standard_names))
               if result.base.categories[i] != "unidentifiable")
    lost = [nm for nm, cat in zip(full.standard_names, full.categories)
            if cat != "unidentifiable" and nm not in here]
    if lost:
        why = []
        if not sensors.motor_torque:
            why.append("no motor torque (current) is recorded: the rotor inertia and the "
                       "motor friction act on the motor equations only; record motor "
                       "currents (csv: torque or current + drive_gains; bag: motor_states "
                       "effort)")
        if not sensors.link_positions and model.config.damping:
            why.append("without link encoders the joint damping is not separated from the "
                       "joint torque (q = theta - tau_J / K neglects D)")
        out.append(Diagnostic("not_identified", "warning",
                              f"{sensors.describe()}: {len(lost)} parameter(s) are not "
                              f"identified ({', '.join(lost[:8])}"
                              f"{' ...' if len(lost) > 8 else ''}): " + "; ".join(why),
                              ", ".join(lost)))
    if not sensors.motor_torque:
        seen = [nm for nm in result.names if nm.endswith(".rotor_inertia")]
        if seen:
            out.append(Diagnostic(
                "rotor_inertia_coupling_only", "warning",
                f"without motor torques {', '.join(seen)} are seen only through the "
                f"rotor-link coupling of the link equations (Upsilon k_m, 1 / k_m of the "
                f"rotor's effect on its motor, Zollo et al. 2014 eq. 8): weakly identified; "
                f"record motor currents", ", ".join(seen)))
    if stiffness is not None and stiffness.method == "link_dynamics":
        names = list(result.names)
        est = result.estimate
        for nm in stiffness.names:
            i = names.index(nm)
            rel = est.std[i] / abs(est.values[i]) if est.values[i] else np.inf
            if not stiffness.details.get("converged", True) or not rel <= STIFFNESS_STD_LIMIT:
                out.append(Diagnostic(
                    "stiffness_not_identified", "warning",
                    f"{nm} = {est.values[i]:.4g} N*m/rad with relative std "
                    f"{100 * rel:.2g} %"
                    + ("" if stiffness.details.get("converged", True)
                       else " (the search did not converge)")
                    + ": without link encoders the stiffness is seen only through the "
                      "link dynamics of q = theta - tau_J / K, which this motion barely "
                      "excites; record link positions (the spring tau_J = K (theta - q) "
                      "gives K directly) or excite the joint near its link-side resonance",
                    nm))
    return out


#: A gear ratio the data fit better than the configured one is reported when the estimate
#: differs by more than this fraction and by more than :data:`GEAR_Z` standard deviations.
GEAR_TOLERANCE, GEAR_Z = 0.25, 4.0


class GearColumns:
    """``columns`` hook of the gear-ratio check (complete coupling, docs/elastic.md): the base
    regressor W and, per joint k, the rotor-link coupling part of its rotor-inertia column,
    C_k / k_m = (Y_rotor,k - k_m^2 ddtheta_k e_motor,k) / k_m. The rotor inertia enters
    the motor row as Upsilon k_m^2 ddtheta and the coupling B_d (both rows) as
    Upsilon k_m (Zollo et al. 2014, eq. 8): with a free coefficient on the coupling part
    the data give k_m = (motor coefficient) / (coupling coefficient)."""

    needs_states = True

    def __init__(self, model):
        names = model.parameter_names
        self.model = model
        self.rotor = [names.index(f"{j}.rotor_inertia") for j in model.joint_names]

    def __call__(self, Y, W, y, states):
        n = self.model.n
        k = self.model.gear_ratios
        E = Y[:, :, self.rotor].copy()                       # (N, rows, n)
        idx = np.arange(n)
        E[:, n + idx, idx] -= k ** 2 * states["ddtheta"]
        return np.concatenate([W, E / k], axis=-1), y


def coupled_joints(model, n_samples=50, seed=0):
    """Joints whose rotor couples to the link dynamics (complete model): the coupling part of
    their rotor-inertia column is not zero on random states (:class:`GearColumns`). The
    others (a rotor on the base, an axis perpendicular to its parent's rotation) give the
    data no handle on their gear ratio."""
    if not model.config.elastic or model.config.coupling != "complete":
        return []
    st = random_states(model, n_samples, np.random.default_rng(seed))
    Y = regressor(model, **st)
    cols = GearColumns(model)
    E = cols(Y, Y[:, :, :0], None, st)[0]
    rotor = np.linalg.norm(Y[:, :, cols.rotor], axis=(0, 1))
    coupling = np.linalg.norm(E, axis=(0, 1)) * model.gear_ratios
    return [j for j, c, r in zip(model.joint_names, coupling, rotor) if c > 1e-9 * r]


def gear_ratio_check(model, base, neq):
    """Gear ratios the data fit, from the equations of :class:`GearColumns`.

    Returns
    -------
    list of dict
        Per joint whose coupling the data excite: ``joint``, ``configured``, ``fitted``
        (motor coefficient / coupling coefficient), ``std`` (its delta-method standard
        deviation: meaningful only where the coupling coefficient is resolved),
        ``coupling_z`` (the free coupling coefficient a in standard deviations from 0, the
        value the configured ratio gives: the test); joints without coupling (a rotor on
        the base, an axis perpendicular to its parent's rotation) are left out: the data
        cannot tell their ratio.
    """
    p, n = len(base), model.n
    names = list(base.names)
    k = model.gear_ratios
    G = neq.gram
    d = np.diag(G)
    if not np.all(np.isfinite(G)):
        return []
    # coupling columns the data excite independently of the others (a rotor on the base,
    # or an axis perpendicular to its parent's rotation, has none: its ratio is not seen);
    # base columns the data leave at 0 (every row of a friction column dropped) carry none
    keep = [i for i in range(p) if d[i] > 0]
    if not keep:
        return []
    p_kept = len(keep)
    for j in range(n):
        e = p + j
        if not d[e] > 1e-12 * d[:p].max() or f"{model.joint_names[j]}.rotor_inertia" \
                not in names:
            continue
        A = G[np.ix_(keep, keep)] / np.sqrt(np.outer(d[keep], d[keep]))
        g = G[keep, e] / np.sqrt(d[keep] * d[e])
        if 1.0 - g @ np.linalg.lstsq(A, g, rcond=None)[0] > 1e-6:
            keep.append(e)
    if len(keep) == p_kept:
        return []
    sub = NormalEquations(len(keep), neq.groups)
    sub.G, sub.b = neq.G[:, keep][:, :, keep], neq.b[:, keep]
    sub.c, sub.count = neq.c, neq.count
    try:
        est = wls(sub)
    except DataError:
        return []
    out = []
    for col, e in enumerate(keep[p_kept:], start=p_kept):
        j = e - p
        jn = model.joint_names[j]
        i = names.index(f"{jn}.rotor_inertia")
        if i not in keep:               # the rotor inertia's own column left at 0
            continue
        i = keep.index(i)
        x, a = est.values[i], est.values[col]
        coupling = x * k[j] + a                 # Upsilon k (coupling coefficient)
        motor = x * k[j] ** 2                   # Upsilon k^2 (motor coefficient)
        if not coupling > 0 or not motor > 0:
            fitted, std = np.nan, np.nan
        else:
            fitted = motor / coupling
            # delta method on (x, a)
            g = np.array([k[j] ** 2 / coupling - motor * k[j] / coupling ** 2,
                          -motor / coupling ** 2])
            C = est.covariance[np.ix_([i, col], [i, col])]
            std = float(np.sqrt(max(g @ C @ g, 0.0)))
        # the test itself is on a, linear in the data: the configured ratio is a = 0 (the
        # delta-method std of the ratio motor / coupling is far too small where the coupling
        # coefficient is not resolved, and a ratio 1 +- 4 then reads 20 std from 100)
        sd_a = float(np.sqrt(max(est.covariance[col, col], 0.0)))
        z = float(abs(a) / sd_a) if sd_a > 0 else float("inf")
        out.append({"joint": jn, "configured": float(k[j]), "fitted": float(fitted),
                    "std": std, "coupling_z": z})
    return out


def gear_ratio_diagnostics(checks, deflection_in_noise=()):
    """``gear_ratio_mismatch`` for each joint whose data fit another gear ratio clearly
    better (:func:`gear_ratio_check`): more than :data:`GEAR_TOLERANCE` relative, and the
    coupling coefficient more than :data:`GEAR_Z` standard deviations from the value of the
    configured ratio (``coupling_z``). A warning; an info note for a joint in
    ``deflection_in_noise`` (the joints ``deflection_below_noise`` names): its motor-side
    parameters, the coupling among them, rest on position noise (differentiated twice into
    the accelerations the coupling multiplies: errors in the variables, a bias the
    least-squares std does not count), so the fitted ratio is no evidence of a wrong
    ``gear_ratio`` (correct simulated data at 60 dB: ``test/elastic_arm4.yaml`` with 10 x its
    stiffness fitted j3's 80 as 1.7, 44-52 std; ``init --model elastic`` UR5 and TwoDofs
    arms, both engines, 1.07-1.24 and 0.59 for 100, up to 107 std).

    Parameters
    ----------
    checks : list of dict
        :func:`gear_ratio_check`'s entries.
    deflection_in_noise : iterable of str
        Joint names whose deflection is within the noise.

    Returns
    -------
    list of Diagnostic
    """
    noisy = set(deflection_in_noise)
    out = []
    for c in checks:
        f, k, z = c["fitted"], c["configured"], c["coupling_z"]
        if not np.isfinite(f):
            continue
        if abs(f / k - 1) > GEAR_TOLERANCE and z > GEAR_Z:
            said = (f"joint '{c['joint']}': the data fit gear ratio {f:.3g} (from the "
                    f"rotor-link coupling, complete model; its coefficient is {z:.1f} std from "
                    f"what the config's {k:g} gives)")
            if c["joint"] in noisy:
                out.append(Diagnostic(
                    "gear_ratio_mismatch", "info",
                    f"{said}, but the joint's deflection is within the position noise "
                    f"(deflection_below_noise): the coupling, like its other motor-side "
                    f"parameters, rests on noise; this is no evidence of a wrong gear_ratio",
                    c["joint"]))
                continue
            out.append(Diagnostic(
                "gear_ratio_mismatch", "warning",
                f"{said}: the rotor inertia and the coupling are wrong with a wrong ratio; "
                f"CHECK gear_ratio (motor angle / joint angle, docs/elastic.md)",
                c["joint"]))
    return out
