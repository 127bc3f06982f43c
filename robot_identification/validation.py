"""Validation of identified models on held-out data: predicted vs measured joint torque.

For every validation file and every model (the nominal URDF and each estimate stored
in results.yaml) the torque predicted by the base model, tau = W_base(q, dq, ddq) beta,
is compared with the measured torque (both after the same zero-phase Butterworth
filter as in identification) per joint:

- ``rms``   = sqrt(mean((tau_pred - tau_meas)^2))                      [N*m]
- ``nrmse`` = rms / sqrt(mean(tau_meas^2))                             [-]

and ``nrmse_mean`` is the mean over joints. Validation needs no excitation: static
runs (no motion) are evaluated too (they test gravity and offsets).

validation.yaml (version 1)::

    robot: ur10e
    primary: physical            # the estimate reported in files[*].joints
    files:
      - file: validation/run.csv
        estimate: physical
        joints: [{name: shoulder_pan_joint, rms: 1.2, nrmse: 0.06}, ...]
        nrmse_mean: 0.08
        moving: true
        models:                  # every model, same layout
          nominal: {joints: [...], nrmse_mean: ...}
          ols: {...}
          wls: {...}
          physical: {...}
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from robot_identification.errors import ConfigError, DataError

#: Order in which estimates are preferred as the primary validated model.
PREFERENCE = ("physical", "wls", "ols")


def load_estimates(path, model, base=None):
    """Base-parameter vectors of the models in a results.yaml, plus the nominal model.

    Returns
    -------
    base : BaseParameters
    models : dict
        name -> beta (p,); always ``nominal`` first, then ``estimates`` of the file (or
        its single ``base_parameters`` estimate under the file's estimator name).
    doc : dict
        The parsed file.

    Raises
    ------
    DataError
        Missing file, invalid results file (:func:`robot_identification.report.read_results`),
        wrong robot, or base parameters that do not match the model's.
    """
    from robot_identification.identifiability import base_parameters
    from robot_identification.report import read_results
    path = Path(path)
    doc = read_results(path, model.config.name)
    from robot_identification.model import current_parameter_name
    names = [current_parameter_name(e["name"]) for e in doc["base_parameters"]]  # fv -> viscous
    base = base or base_parameters(model)
    if list(base.names) != names:
        extra = [n for n in names if n not in base.names][:3]
        lack = [n for n in base.names if n not in names][:3]
        diff = (f"the file has {extra} the model lacks" if extra else "") + \
            ("; " if extra and lack else "") + \
            (f"the model has {lack} the file lacks" if lack else "") or \
            "the same names in another order"
        raise DataError(f"base parameters of '{path}' do not match robot "
                        f"'{model.config.name}' (different model or friction settings): "
                        f"{diff}")
    models = {"nominal": base.base_values(model.nominal_parameters())}
    ests = doc.get("estimates") or {}
    if ests:
        for name, e in ests.items():
            models[name] = np.asarray(e["values"], dtype=float)
    else:
        models[doc.get("estimator", "estimate")] = np.array(
            [e["estimate"] for e in doc["base_parameters"]], dtype=float)
    return base, models, doc


#: Velocities below this magnitude count as rest when predicting [rad/s]: the Coulomb
#: term sign(dq) of a joint at rest is undetermined (stiction balances the load), and the
#: UR logs resolve velocity to 1e-4 rad/s, so quantisation noise would flip it.
REST_VELOCITY = 1e-3


def settings_from_results(model, doc):
    """The robot config's identification settings with the pre-processing actually used in
    identification (results.yaml ``settings``: ``cutoff_hz``, ``filter_order``,
    ``friction_deadband``, ``stop_velocity``), so that validation filters and predicts like
    identification did and never resolves an automatic setting on held-out data (the stop
    velocity, which only selects identification rows, is 0 when the file has none)."""
    from dataclasses import replace
    s = model.config.identification
    got = (doc or {}).get("settings") or {}
    kw = {}
    if "cutoff_hz" in got:
        kw["cutoff_hz"] = None if got["cutoff_hz"] is None else float(got["cutoff_hz"])
    if isinstance(got.get("filter_order"), int):
        kw["filter_order"] = got["filter_order"]
    dead = got.get("friction_deadband")
    if isinstance(dead, list) and len(dead) == model.n:
        kw["friction_deadband"] = tuple(float(v) for v in dead)
    elif isinstance(dead, (int, float)):
        kw["friction_deadband"] = float(dead)
    stop = got.get("stop_velocity")
    kw["stop_velocity"] = (tuple(float(v) for v in stop)
                           if isinstance(stop, list) and len(stop) == model.n else 0.0)
    if isinstance(got.get("drop_reversals"), bool):
        kw["drop_reversals"] = got["drop_reversals"]
    pre, jit = got.get("friction_presliding"), got.get("position_jitter")
    kw["friction_presliding"] = (tuple(float(v) for v in pre) if isinstance(pre, list)
                                 and len(pre) == model.n else None)
    kw["position_jitter"] = (tuple(float(v) for v in jit) if isinstance(jit, list)
                             and len(jit) == model.n else None)
    return replace(s, **kw)


def prediction_deadband(model, settings):
    """Width of the Coulomb ramp for predicting torque [rad/s], shape (n,).

    The identification's ``friction_deadband`` and, where identification dropped the friction
    rows of a joint at rest (``drop_reversals`` with a low-pass filter and Coulomb friction:
    |filtered v| below ``stop_velocity`` is a stop, its friction anywhere in [-f_c, f_c];
    :class:`robot_identification.identification.ReversalWindow`), at least that joint's stop
    velocity. Below it the data say nothing about the sign of the friction, so the
    prediction ramps v / stop_velocity to 0 at rest instead of switching f_c on the sign of a
    velocity that flickers at its noise. On every row identification used (|v| >= the stop
    velocity) the ramp is sign(v), the same column the estimate was fitted with.

    Parameters
    ----------
    model : RobotModel
    settings : IdentificationSettings
        Resolved (numbers, not ``auto``; see :func:`settings_from_results`); an ``auto``
        deadband or stop velocity counts as 0.

    Returns
    -------
    ndarray (n,)
    """
    n = model.n
    dead = settings.friction_deadband
    dead = np.zeros(n) if isinstance(dead, str) else np.broadcast_to(
        np.asarray(dead, dtype=float), (n,))
    stop = settings.stop_velocity
    dropped = (bool(settings.drop_reversals) and not isinstance(stop, str)
               and "coulomb" in model.drive_parameter_keys()
               and (settings.cutoff_hz is not None or settings.preprocessing != "butterworth"))
    if not dropped:
        return dead.copy()
    return np.maximum(dead, np.broadcast_to(np.asarray(stop, dtype=float), (n,)))


def filtered_coulomb(model, dataset, settings, width, direction=None):
    """The Coulomb column as the measured torque sees it, shape (N, n), or None.

    The measured torque is low-pass filtered before it is compared (zero-phase Butterworth,
    or the FIR bank of ``savgol`` / ``polynomial``): its Coulomb part f_c sign(v) is smeared
    over the filter's settling time at every reversal, start and stop, and a velocity that
    flickers at rest is averaged. So the Coulomb ramp is evaluated on the recorded velocity
    (measured, else central differences of the recorded positions; motor side for elastic
    joints) and passed through the same pre-processing as the torque (:func:`preprocess` of
    a copy whose torque is that ramp): the column the filtered measurement holds, not the
    ramp of the filtered velocity. Gautier's parallel filtering of the model, for the one
    column that is not a smooth function of the filtered states.

    Parameters
    ----------
    dataset : Dataset
    settings : IdentificationSettings
        Resolved pre-processing (as :func:`validate` uses it).
    width : ndarray (n,)
        Ramp half-width [rad/s] (:func:`prediction_deadband`).
    direction : ndarray (N, n), optional
        :func:`motion_direction` of the dataset, where ``settings`` hold a pre-sliding
        displacement (computed when not given).

    Returns
    -------
    ndarray (N, n) aligned with ``preprocess(model, dataset, settings)``, or None when the
    model has no Coulomb friction.
    """
    from dataclasses import replace
    from robot_identification.pipeline import preprocess
    from robot_identification.regressor._regressor import coulomb_sign
    from robot_identification.signal import central_difference
    if "coulomb" not in model.drive_parameter_keys():
        return None
    elastic = model.config.elastic
    if tuple(dataset.joint_names) != tuple(model.joint_names):
        dataset = dataset.select_joints(model.joint_names)
    x = dataset.theta if elastic else dataset.q
    v = dataset.dtheta if elastic else dataset.dq
    if v is None:
        v = central_difference(x, dataset.t)
    column = coulomb_sign(v, width)
    delta = presliding_of(model, settings)
    if delta is not None:
        if direction is None:
            direction = motion_direction(model, dataset, settings)
        jitter = np.broadcast_to(np.asarray(getattr(settings, "position_jitter", None)
                                            or 0.0, dtype=float), (model.n,))
        column = presliding_state(x, direction, delta, jitter)
    states, _ = preprocess(model, replace(dataset, tau=column), settings)
    return states["tau"]


#: Candidate pre-sliding displacements [rad] of ``friction_presliding: auto`` (besides none).
PRESLIDING_GRID = (1e-5, 3e-5, 1e-4, 2e-4, 5e-4, 1e-3, 3e-3)
#: Below-stop-velocity intervals shorter than this many cutoff periods between two moving
#: intervals are reversals, not stops (:func:`motion_direction`; the reversal window of
#: identification, 0.6 / f_c for orders 4-5).
BRIDGE_CUTOFF_PERIODS = 0.6
#: Position jitter at rest = this factor x the typical non-zero position step there.
JITTER_FACTOR = 2.0
#: ``auto`` keeps the pre-sliding state only where it lowers the in-sample NRMSE by this
#: fraction (else the ramp of :func:`prediction_deadband`).
PRESLIDING_MIN_GAIN = 0.02


def presliding_of(model, settings):
    """The resolved pre-sliding displacement delta [rad], shape (n,), or None (no state:
    the Coulomb ramp). ``auto`` (not resolved by :func:`select_presliding`) is None."""
    d = getattr(settings, "friction_presliding", None)
    if d is None or isinstance(d, str):
        return None
    d = np.broadcast_to(np.asarray(d, dtype=float), (model.n,))
    return d if np.all(np.isfinite(d)) and np.all(d > 0) else None


def motion_direction(model, dataset, settings):
    """Per sample and joint on the dataset's own time grid: +1 / -1 where the joint moves
    (|filtered velocity| >= the identification's stop velocity, motor side for elastic
    joints), 0 where it stops. Shape (N, n) int8.

    A reversal passes below the stop velocity too; an interval below it shorter than the
    filter's settling time (0.6 / cutoff, :data:`BRIDGE_CUTOFF_PERIODS`) between two moving
    intervals is a reversal or a slow-down, not a stop: its first half keeps the direction
    before, its second half the direction after (:func:`presliding_state` then carries the
    pre-sliding state through it instead of resetting it).

    Parameters
    ----------
    dataset : Dataset
        Recorded on its own time grid ``t`` (N,) [s]; its joints named by the model.
    settings : IdentificationSettings
        Resolved: ``stop_velocity`` [rad/s] per joint or one number, ``cutoff_hz`` [Hz].

    Raises
    ------
    DataError
        The dataset cannot be filtered (see :func:`robot_identification.pipeline.preprocess`).
    """
    from dataclasses import replace
    from robot_identification.pipeline import preprocess
    states, t = preprocess(model, dataset, replace(settings, decimate=1))
    v = states["dtheta" if model.config.elastic else "dq"]
    stop = np.broadcast_to(np.asarray(settings.stop_velocity if not isinstance(
        settings.stop_velocity, str) else 0.0, dtype=float), (model.n,))
    vi = np.stack([np.interp(dataset.t, t, v[:, j]) for j in range(model.n)], axis=1)
    d = np.where(np.abs(vi) >= np.maximum(stop, 1e-12), np.sign(vi), 0).astype(np.int8)
    cut = settings.cutoff_hz if isinstance(settings.cutoff_hz, (int, float)) else None
    dt = float(np.median(np.diff(dataset.t))) if len(dataset.t) > 1 else 1.0
    bridge = (BRIDGE_CUTOFF_PERIODS / cut) if cut else 10 * dt
    for j in range(model.n):
        col = d[:, j]
        edges = np.flatnonzero(np.diff(col)) + 1
        starts, ends = np.r_[0, edges], np.r_[edges, len(col)]
        for a, b in zip(starts, ends):
            if (col[a] == 0 and a > 0 and b < len(col)
                    and dataset.t[b - 1] - dataset.t[a] < bridge):
                mid = (a + b) // 2
                col[a:mid] = col[a - 1]
                col[mid:b] = col[b]
    return d


def presliding_state(x, direction, delta, jitter=0.0):
    """Normalised Coulomb friction state z in [-1, 1] with pre-sliding memory, shape (N, n):
    the Coulomb column f_c z of the prediction (f_c sign(v) in the sliding limit).

    A Dahl model (P. R. Dahl, "A solid friction model", Aerospace Corp. TOR-158, 1968;
    exponent 1, as reviewed by Olsson, Astrom, Canudas de Wit, Gafvert and Lischinsky,
    Eur. J. Control 4(3), 1998: dz/dx = (1 - z sign(dx)) / delta, solved exactly between
    reversals) driven by the recorded position x: after a
    reversal the friction crosses zero over a displacement of a few delta instead of
    switching with the sign of the velocity, and a joint that creeps while it is still
    (other joints moving) mobilises its friction in the direction it creeps. Where the
    joint stops (``direction`` falls to 0) the state is reset to 0: the friction a stopped
    joint holds is anywhere in [-f_c, f_c] and did not follow the direction of the last
    motion on the real UR10e (docs/ur10e.md); at rest the state is driven by the
    displacement since the stop less ``jitter`` (position quantisation / noise), so an
    encoder count flickering at rest does not mobilise it.

    Parameters
    ----------
    x : ndarray (N, n)
        Recorded positions [rad] (motor side for elastic joints).
    direction : ndarray (N, n)
        +1 / -1 moving, 0 at rest (:func:`motion_direction`).
    delta : float or ndarray (n,)
        Pre-sliding displacement [rad] (> 0).
    jitter : float or ndarray (n,)
        Position jitter at rest [rad] (>= 0), see :func:`position_jitter`.

    Returns
    -------
    ndarray (N, n)
    """
    x = np.asarray(x, dtype=float)
    N, n = x.shape
    delta = np.broadcast_to(np.asarray(delta, dtype=float), (n,))
    jitter = np.broadcast_to(np.asarray(jitter, dtype=float), (n,))
    z = np.zeros((N, n))
    for j in range(n):
        d = np.asarray(direction[:, j])
        edges = np.flatnonzero(np.diff(d)) + 1
        starts = np.r_[0, edges]
        ends = np.r_[edges, N]
        last = 0.0
        for a, b in zip(starts, ends):
            s = float(d[a])
            if s == 0:                   # at rest: reset, creep beyond the jitter
                u = x[a:b, j] - x[a, j]
                u = np.sign(u) * np.maximum(np.abs(u) - jitter[j], 0.0)
                seg = np.sign(u) * (1.0 - np.exp(-np.abs(u) / delta[j]))
            else:                        # sliding: Dahl from the previous sample's state
                u = x[a:b, j] - x[max(a - 1, 0), j]
                travel = np.maximum.accumulate(np.maximum(s * u, 0.0))
                seg = s + (last - s) * np.exp(-travel / delta[j])
            z[a:b, j] = seg
            last = float(seg[-1])
    return z


def position_jitter(model, datasets, settings):
    """Position jitter at rest per joint [rad], shape (n,): :data:`JITTER_FACTOR` x the
    90th percentile of the non-zero sample-to-sample steps of the recorded position (motor
    side for elastic joints) where the joint is at rest (:func:`motion_direction`), over
    all datasets: a count flickering back and forth (or a resampled count, split over two
    steps) stays inside it on quantised logs, so does white position noise; 0 where no
    joint rests or its position never steps there.

    Parameters
    ----------
    datasets : list of Dataset
        The identification recordings (extra joints are left out).
    settings : IdentificationSettings
        Resolved, as :func:`motion_direction` needs them.

    Raises
    ------
    DataError
        A dataset lacks a joint of the model or cannot be filtered.
    """
    steps = [[] for _ in range(model.n)]
    for ds in datasets:
        ds = ds.select_joints(model.joint_names)
        x = ds.theta if model.config.elastic else ds.q
        rest = motion_direction(model, ds, settings) == 0
        dx = np.abs(np.diff(x, axis=0))
        both = rest[1:] & rest[:-1]
        for j in range(model.n):
            got = dx[both[:, j], j]
            steps[j].append(got[got > 0])
    out = np.zeros(model.n)
    for j, parts in enumerate(steps):
        allj = np.concatenate(parts) if parts else np.zeros(0)
        if allj.size:
            out[j] = JITTER_FACTOR * float(np.percentile(allj, 90))
    return out


def select_presliding(model, base, beta, datasets, settings, grid=PRESLIDING_GRID,
                      min_gain=PRESLIDING_MIN_GAIN):
    """Resolve ``friction_presliding: auto`` on the identification data.

    The torque of every identification dataset is predicted with the estimate ``beta``
    (fitted with the Coulomb ramp, the pre-sliding state only changes the prediction's
    Coulomb column) once with the ramp of :func:`prediction_deadband` and once per
    candidate delta (``grid``, one delta for all joints, at least each joint's position
    jitter); the candidate with the lowest mean NRMSE over joints and datasets is kept
    where it is at least ``min_gain`` below the ramp's. Nothing is chosen on validation
    data. One scalar over thousands of samples and a fixed estimate: in-sample selection.

    Parameters
    ----------
    base : BaseParameters
    beta : ndarray (p,)
    datasets : list of Dataset
        The identification data.
    settings : IdentificationSettings
        Resolved (numbers; :func:`settings_from_results`).

    Returns
    -------
    (delta or None, jitter ndarray (n,), table list of [delta or None, nrmse])
        delta [rad]; jitter [rad] (:func:`position_jitter`); the table's mean NRMSE is
        dimensionless.

    Raises
    ------
    DataError
        A dataset lacks a joint of the model or cannot be filtered.
    """
    from dataclasses import replace
    from robot_identification.pipeline import preprocess
    width = prediction_deadband(model, settings)
    if ("coulomb" not in model.drive_parameter_keys() or not datasets
            or not settings.drop_reversals):
        return None, np.zeros(model.n), []
    jitter = position_jitter(model, datasets, settings)
    motor = slice(model.n, 2 * model.n) if model.config.elastic else slice(0, model.n)
    cands = [None] + list(grid)
    errs = {c: [] for c in cands}
    fc = coulomb_coefficients(model, base, beta)
    for ds in datasets:
        states, _ = preprocess(model, ds, settings)
        direction = motion_direction(model, ds, settings)
        ramp = filtered_coulomb(model, ds, replace(settings, friction_presliding=None), width)
        pred0 = predict_torque(model, base, beta, states, friction_deadband=width,
                               coulomb=ramp)[:, motor]
        for c in cands:
            pred = pred0
            if c is not None:     # only the Coulomb columns change: no regressor pass
                s = replace(settings, friction_presliding=tuple(np.maximum(c, jitter)),
                            position_jitter=tuple(jitter))
                col = filtered_coulomb(model, ds, s, width, direction=direction)
                pred = pred0 + (col - ramp) * fc
            errs[c].append(torque_errors(states["tau"], pred, model.joint_names)["nrmse_mean"])
    table = [[c, float(np.mean(errs[c]))] for c in cands]
    best = min(table[1:], key=lambda r: r[1])
    if best[1] <= (1.0 - min_gain) * table[0][1]:
        return best[0], jitter, table
    return None, jitter, table


def predict_torque(model, base, beta, states, chunk=2048, rest_velocity=0.0,
                   friction_deadband=0.0, coulomb=None):
    """Torque predicted by base parameters, shape (N, rows).

    Parameters
    ----------
    states : mapping
        ``q, dq, ddq`` (N, n) [rad, rad/s, rad/s^2].
    beta : ndarray (p,)
    rest_velocity : float
        |dq| below this is set to 0 before evaluating the model [rad/s]
        (see :data:`REST_VELOCITY`; for results without a ``friction_deadband``).
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s], as in identification
        (:func:`robot_identification.regressor.coulomb_sign`).
    coulomb : ndarray (N, n), optional
        Values of the Coulomb columns replacing coulomb_sign(v, friction_deadband)
        (:func:`filtered_coulomb`).
    """
    from robot_identification.regressor import iter_regressor_blocks
    from robot_identification.regressor._regressor import coulomb_sign
    out = []
    st = dict(states)
    if rest_velocity > 0:
        for key in ("dq", "dtheta"):
            if key in st:
                st[key] = np.where(np.abs(st[key]) < rest_velocity, 0.0, st[key])
    st.setdefault("tau", np.zeros_like(st["q"]))
    for _, Y, _ in iter_regressor_blocks(model, st, chunk, friction_deadband=friction_deadband):
        out.append(base.project(Y) @ beta)
    pred = np.concatenate(out, axis=0)
    if coulomb is not None:
        n = model.n
        v = st["dtheta" if model.config.elastic else "dq"]
        old = coulomb_sign(v, friction_deadband)
        rows = n if model.config.elastic else 0
        pred[:, rows:rows + n] += (coulomb - old) * coulomb_coefficients(model, base, beta)
    return pred


def coulomb_coefficients(model, base, beta):
    """Per joint the base parameter multiplying its Coulomb column, shape (n,): f_c where
    the column is a base column of its own, else 0 (no Coulomb term, or one merged with
    other columns, which a replacement column cannot change)."""
    index = {int(k): b for b, k in enumerate(base.independent)}
    names = list(model.parameter_names)
    out = np.zeros(model.n)
    for j, joint in enumerate(model.joint_names):
        k = names.index(f"{joint}.coulomb") if f"{joint}.coulomb" in names else -1
        if k in index:
            out[j] = beta[index[k]]
    return out


def torque_errors(measured, predicted, names):
    """Per-joint RMS error [N*m] and NRMSE of predicted vs measured torque (N, n)."""
    err = predicted - measured
    rms = np.sqrt(np.mean(err ** 2, axis=0))
    ref = np.sqrt(np.mean(measured ** 2, axis=0))
    nrmse = rms / np.maximum(ref, 1e-12)
    joints = [{"name": nm, "rms": float(r), "nrmse": float(e)}
              for nm, r, e in zip(names, rms, nrmse)]
    return {"joints": joints, "nrmse_mean": float(np.mean(nrmse))}


def validate(model, base, models, datasets, settings=None, labels=None, keep_signals=False,
             rest_velocity=None, filter_coulomb=None):
    """Validate base-parameter models on held-out datasets.

    Parameters
    ----------
    model : RobotModel
        Rigid: the joint torques are compared; elastic: the motor torques (the motor-side
        rows of Zollo et al. 2014, eq. 13; the link rows have no measured right-hand side).
    base : BaseParameters
    models : dict
        name -> beta (p,) (see :func:`load_estimates`).
    datasets : list of Dataset
    settings : IdentificationSettings, optional
        Filtering and the Coulomb ramp (:func:`prediction_deadband`); default the robot
        config's.
    labels : list of str, optional
        File label per dataset (default ``metadata['source']``).
    keep_signals : bool
        Also return the time, measured and predicted torques per file (for plots).
    rest_velocity : float, optional
        See :func:`predict_torque`; default 0 when ``settings.friction_deadband`` is a
        number (the identification's deadband is used), else :data:`REST_VELOCITY`
        [rad/s].
    filter_coulomb : bool or None
        True: predict the Coulomb column as the filtered measurement holds it
        (:func:`filtered_coulomb`); False: the ramp of the filtered velocity (what a plain
        script does; the benchmarks' references). None (default): True where identification
        dropped the friction rows at reversals and stops (``settings.drop_reversals``) - on
        the rows it used the filtered column equals the fitted one up to the filter's
        settling tolerance, on the dropped rows the fitted column says nothing -, else False:
        without ``drop_reversals`` identification fitted the ramp of the filtered velocity on
        every row, and prediction uses that same column.

    Returns
    -------
    list of dict
        Per file: ``file``, ``moving``, ``models`` {name: {joints, nrmse_mean}} and, with
        ``keep_signals``, ``signals`` {t, measured, predicted: {name: (N, n)}}.

    Raises
    ------
    DataError
        Invalid dataset (missing joints, NaN, too short).
    ConfigError
        A ``rest_velocity`` that is not a finite number >= 0.
    """
    from robot_identification.pipeline import preprocess
    n = model.n
    motor = slice(n, 2 * n) if model.config.elastic else slice(0, n)
    s = settings or model.config.identification
    dead = None if isinstance(s.friction_deadband, str) else prediction_deadband(model, s)
    if rest_velocity is not None and not 0 <= rest_velocity < np.inf:
        raise ConfigError(f"rest velocity must be a finite number >= 0 rad/s, got "
                          f"{rest_velocity!r}")
    if rest_velocity is None:
        rest_velocity = REST_VELOCITY if dead is None else 0.0
    out = []
    for i, ds in enumerate(datasets):
        states, t = preprocess(model, ds, s)
        meas = states["tau"]
        label = (labels[i] if labels else ds.metadata.get("source", f"dataset{i + 1}"))
        entry = {"file": str(label), "moving": bool(ds.metadata.get(
            "moving", np.abs(states["dq"]).max() > 0.01)), "models": {}}
        preds = {}
        coulomb = (filtered_coulomb(model, ds, s, dead)
                   if dead is not None and (s.drop_reversals if filter_coulomb is None
                                            else filter_coulomb) else None)
        for name, beta in models.items():
            pred = predict_torque(model, base, beta, states, rest_velocity=rest_velocity,
                                  friction_deadband=0.0 if dead is None else dead,
                                  coulomb=coulomb)[:, motor]
            preds[name] = pred
            entry["models"][name] = torque_errors(meas, pred, model.joint_names)
        if keep_signals:
            entry["signals"] = {"t": t, "measured": meas, "predicted": preds, "q": states["q"]}
        out.append(entry)
    return out


def validation_to_dict(robot, files, primary=None) -> dict:
    """validation.yaml mapping (schema in the module docstring)."""
    names = list(files[0]["models"]) if files else []
    if primary is None:
        primary = next((p for p in PREFERENCE if p in names), names[-1] if names else None)
    doc = {"robot": robot, "primary": primary, "files": []}
    for f in files:
        m = f["models"][primary]
        doc["files"].append({"file": f["file"], "estimate": primary,
                             "joints": [dict(j) for j in m["joints"]],
                             "nrmse_mean": m["nrmse_mean"], "moving": f["moving"],
                             "models": f["models"]})
    return doc


def write_validation(path, robot, files, primary=None, inputs=()):
    """Write validation.yaml atomically (``inputs`` are refused as ``path``); returns its
    path."""
    from robot_identification.outputs import write_text_atomic
    return write_text_atomic(path, yaml.safe_dump(validation_to_dict(robot, files, primary),
                                                  sort_keys=False), inputs=inputs)


def format_validation(files) -> str:
    """Text table: NRMSE per joint and mean, per file and model."""
    lines = []
    for f in files:
        names = [j["name"] for j in next(iter(f["models"].values()))["joints"]]
        short = [n.replace("_joint", "") for n in names]
        lines.append(f"{f['file']}" + ("" if f["moving"] else "  (static)"))
        head = f"  {'model':<10}" + "".join(f"{s:>14}" for s in short) + f"{'mean':>9}"
        lines.append(head)
        for name, m in f["models"].items():
            cells = "".join(f"{j['rms']:7.3f}/{j['nrmse']:<6.3f}" for j in m["joints"])
            lines.append(f"  {name:<10}{cells}{m['nrmse_mean']:9.4f}")
        lines.append("  (cells: RMS error [N*m] / NRMSE)")
    return "\n".join(lines)
