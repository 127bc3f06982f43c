"""The friction model of prediction, in one place for identification and validation: the
Coulomb ramp at rest, the Coulomb column as the filtered measurement holds it, and the
pre-sliding (Dahl) state reset at stops with its in-sample selection
(``friction_presliding``)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robot_identification.data import Dataset
from robot_identification.diagnostics import Diagnostic
from robot_identification.errors import DataError
from robot_identification.identification._prediction import (
    _predict_with_scale, coulomb_scale, predict_torque, settings_from_results, torque_errors)
from robot_identification.identification._preprocessing import preprocess
from robot_identification.identification._sources import Recording, as_recording
from robot_identification.regressor import coulomb_sign
from robot_identification.signal import central_difference


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
    if "coulomb" not in model.drive_parameter_keys():
        return None
    if tuple(dataset.joint_names) != tuple(model.joint_names):
        dataset = dataset.select_joints(model.joint_names)
    column = coulomb_column(model, dataset, settings, width, direction)
    return filtered_torques(model, dataset, settings, [column])[1][0]


def coulomb_column(model, dataset, settings, width, direction=None, deltas=None):
    """The Coulomb column of :func:`filtered_coulomb` before the pre-processing, on the
    dataset's own samples, shape (N, n): the ramp ``coulomb_sign(v, width)`` of the recorded
    velocity, or the pre-sliding state (:func:`presliding_state`) where ``settings`` hold a
    pre-sliding displacement. ``dataset``'s joints in the model's order.

    ``deltas`` (K, n) [rad]: instead, the pre-sliding states of K displacements (with
    ``settings``' position jitter), shape (K, N, n), each the column of ``settings`` with
    that ``friction_presliding`` (:func:`presliding_states`: one pass over the motion's
    segments for all K)."""
    elastic = model.config.elastic
    x = dataset.theta if elastic else dataset.q
    if deltas is None:
        v = dataset.dtheta if elastic else dataset.dq
        if v is None:
            v = central_difference(x, dataset.t)
        column = coulomb_sign(v, width)
        delta = presliding_of(model, settings)
        if delta is None:
            return column
    if direction is None:
        direction = motion_direction(model, dataset, settings)
    jitter = np.broadcast_to(np.asarray(getattr(settings, "position_jitter", None)
                                        or 0.0, dtype=float), (model.n,))
    if deltas is not None:
        return presliding_states(x, direction, deltas, jitter)
    return presliding_state(x, direction, delta, jitter)


def filtered_torques(model, dataset, settings, columns):
    """Torque-like columns (each (N, n) on ``dataset``'s samples) passed through the
    pre-processing of :func:`preprocess` as its torque.

    Rigid models: every column validated and resampled as its own dataset would be
    (:func:`as_recording`), then all side by side through one pre-processing pass (the
    filters act on each column alone, so each result is the one of its own pass; the
    positions are filtered once instead of once per column). Elastic models (whose link
    positions may come from the torque): one pass per column.

    Parameters
    ----------
    dataset : Dataset
        Joints in the model's order.
    columns : list of ndarray (N, n)

    Returns
    -------
    (dict, list of ndarray (N', n))
        The states of ``preprocess(model, replace(dataset, tau=columns[0]), settings)`` and
        the filtered columns, aligned with them.

    Raises
    ------
    DataError
        As :func:`preprocess`.
    """
    if model.config.elastic or len(columns) == 1:
        # the first pass's states, the others' torque alone (issue #29: every pass's states
        # kept until the last held the peak memory of identify on 1.2 M samples)
        states = preprocess(model, replace(dataset, tau=columns[0]), settings)[0]
        return states, [states["tau"]] + [
            preprocess(model, replace(dataset, tau=c), settings)[0]["tau"]
            for c in columns[1:]]
    chunks = [next(iter(as_recording(replace(dataset, tau=c), model).chunks()))
              for c in columns]
    wide = replace(chunks[0], tau=np.hstack([ch.tau for ch in chunks]))
    states, _ = preprocess(model, Recording.from_chunks([wide]), settings)
    n = model.n
    taus = [states["tau"][:, i * n:(i + 1) * n] for i in range(len(columns))]
    states["tau"] = taus[0]
    return states, taus


#: Candidate pre-sliding displacements [rad] of ``friction_presliding: auto`` (besides none).
PRESLIDING_GRID = (1e-5, 3e-5, 1e-4, 2e-4, 5e-4, 1e-3, 3e-3)

#: ``friction_presliding: auto`` compares the candidates on at most this many samples of each
#: identification dataset, in :data:`PRESLIDING_WINDOWS` windows spread evenly over it, so
#: that its cost is bounded however long the recording (issue #29: the first 200 k-sample
#: chunk of the 20-minute 1 kHz elastic PUMA recording, 9 filtered torque columns and a
#: regressor pass over it, cost 2.6 s of the command's ~17 s CPU). 50 s at 1 kHz, several
#: periods of an excitation; the real UR10e runs (~5.4 k samples) are compared whole.
PRESLIDING_SAMPLES = 50_000
#: Windows of equal length (:data:`PRESLIDING_SAMPLES` in all) a longer dataset is compared
#: on: the first one at its start, the last one at its end; a recording that begins with a
#: long rest is not judged on that rest alone (each window is filtered on its own: the
#: filter's edges once per window, ~0.1 % of a 10 000-sample window at 1 kHz and 20 Hz).
PRESLIDING_WINDOWS = 5


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
        The dataset cannot be filtered (see :func:`preprocess`).
    """
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
    delta = np.broadcast_to(np.asarray(delta, dtype=float), (x.shape[1],))
    return presliding_states(x, direction, delta[None, :], jitter)[0]


def presliding_states(x, direction, deltas, jitter=0.0):
    """:func:`presliding_state` of several pre-sliding displacements at once: ``deltas``
    (K, n) [rad] -> (K, N, n), row k the state of ``deltas[k]``. Each joint's segments
    (moving, at rest) are found and its displacements computed once for all K; every state
    takes the same floating-point operations as alone (the candidates of
    :func:`select_presliding`, issue #29)."""
    x = np.asarray(x, dtype=float)
    N, n = x.shape
    deltas = np.asarray(deltas, dtype=float).reshape(-1, n)
    K = deltas.shape[0]
    jitter = np.broadcast_to(np.asarray(jitter, dtype=float), (n,))
    z = np.zeros((K, N, n))
    for j in range(n):
        d = np.asarray(direction[:, j])
        edges = np.flatnonzero(np.diff(d)) + 1
        starts = np.r_[0, edges]
        ends = np.r_[edges, N]
        dj = deltas[:, j, None]                  # (K, 1)
        last = np.zeros((K, 1))
        for a, b in zip(starts, ends):
            s = float(d[a])
            if s == 0:                   # at rest: reset, creep beyond the jitter
                u = x[a:b, j] - x[a, j]
                u = np.sign(u) * np.maximum(np.abs(u) - jitter[j], 0.0)
                seg = np.sign(u) * (1.0 - np.exp(-np.abs(u) / dj))
            else:                        # sliding: Dahl from the previous sample's state
                u = x[a:b, j] - x[max(a - 1, 0), j]
                travel = np.maximum.accumulate(np.maximum(s * u, 0.0))
                seg = s + (last - s) * np.exp(-travel / dj)
            z[:, a:b, j] = seg
            last = seg[:, -1:].copy()
    return z


def position_jitter(model, datasets, settings, directions=None):
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
    directions : list of ndarray, optional
        :func:`motion_direction` of each dataset, where already computed.

    Raises
    ------
    DataError
        A dataset lacks a joint of the model or cannot be filtered.
    """
    return _jitter_of([rest_steps(model, ds, settings,
                                  None if directions is None else directions[i])
                       for i, ds in enumerate(datasets)], model.n)


def rest_steps(model, ds, settings, direction=None):
    """The non-zero sample-to-sample position steps at rest of one dataset, one array per
    joint (the per-recording part of :func:`position_jitter`, a Dask map task);
    ``direction``: its :func:`motion_direction` where already computed."""
    ds = ds.select_joints(model.joint_names)
    x = ds.theta if model.config.elastic else ds.q
    rest = (motion_direction(model, ds, settings) if direction is None else direction) == 0
    dx = np.abs(np.diff(x, axis=0))
    both = rest[1:] & rest[:-1]
    out = []
    for j in range(model.n):
        got = dx[both[:, j], j]
        out.append(got[got > 0])
    return out


def _jitter_of(per_dataset, n):
    """:func:`position_jitter` from the :func:`rest_steps` of each dataset (in order)."""
    steps = [[d[j] for d in per_dataset] for j in range(n)]
    out = np.zeros(n)
    for j, parts in enumerate(steps):
        allj = np.concatenate(parts) if parts else np.zeros(0)
        if allj.size:
            out[j] = JITTER_FACTOR * float(np.percentile(allj, 90))
    return out


def _serial_map(fn, datasets, *args):
    return [fn(*args[:1], ds, *args[1:]) for ds in datasets]


def presliding_windows(n_samples, max_samples=None, windows=None):
    """The samples :func:`candidate_errors` compares on: list of slices, all ``n_samples``
    when at most ``max_samples`` (default :data:`PRESLIDING_SAMPLES`), else ``windows``
    (default :data:`PRESLIDING_WINDOWS`) windows of ``max_samples // windows`` samples
    spread evenly from the first sample to the last."""
    cap = int(PRESLIDING_SAMPLES if max_samples is None else max_samples)
    k = int(PRESLIDING_WINDOWS if windows is None else windows)
    if n_samples <= cap:
        return [slice(0, n_samples)]
    length = max(cap // max(k, 1), 1)
    if k <= 1:
        return [slice(0, length)]
    starts = np.round(np.linspace(0, n_samples - length, k)).astype(int)
    return [slice(int(a), int(a) + length) for a in starts]


def candidate_errors(model, ds, base, beta, settings, jitter, width, grid, direction=None,
                     max_samples=None):
    """Mean NRMSE over joints of one dataset's predicted torque for the Coulomb ramp and each
    pre-sliding candidate of ``grid`` (the per-recording part of
    :func:`select_presliding`, a Dask map task), list of len(grid) + 1 floats, over the
    dataset's :func:`presliding_windows` (at most ``max_samples`` samples in all, default
    :data:`PRESLIDING_SAMPLES`; each window filtered and predicted on its own, the errors
    over the windows' samples together); ``direction``: its :func:`motion_direction` where
    already computed (on the whole dataset)."""
    ds = ds.select_joints(model.joint_names)
    if direction is None:
        direction = motion_direction(model, ds, settings)
    parts = [_window_predictions(model, ds.slice(sl), direction[sl], base, beta, settings,
                                 jitter, width, grid)
             for sl in presliding_windows(ds.t.shape[0], max_samples)]
    measured = np.concatenate([m for m, _ in parts])
    return [torque_errors(measured, np.concatenate([p[i] for _, p in parts]),
                          model.joint_names)["nrmse_mean"] for i in range(len(grid) + 1)]


def _window_predictions(model, ds, direction, base, beta, settings, jitter, width, grid):
    """(filtered measured torque (N, n), [predicted torque (N, n) of the ramp, then of each
    candidate of ``grid``]) on one window ``ds`` of :func:`candidate_errors` (N, n:
    the motor rows of an elastic model)."""
    motor = slice(model.n, 2 * model.n) if model.config.elastic else slice(0, model.n)
    # the measured torque, the ramp and every candidate's Coulomb column through the
    # pre-processing together (rigid models: one pass, :func:`filtered_torques`)
    columns = [coulomb_column(model, ds, replace(settings, friction_presliding=None), width)]
    cands = [replace(settings, friction_presliding=tuple(np.maximum(c, jitter)),
                     position_jitter=tuple(jitter)) for c in grid]
    deltas = [presliding_of(model, s) for s in cands]
    if cands and all(d is not None for d in deltas):    # the candidates' states in one pass
        columns += list(coulomb_column(model, ds, cands[0], width, direction=direction,
                                       deltas=np.stack(deltas)))
    else:
        columns += [coulomb_column(model, ds, s, width, direction=direction) for s in cands]
    states, filtered = filtered_torques(model, ds, settings, [ds.tau, *columns])
    filtered = filtered[1:]
    ramp = filtered[0]
    if model.config.elastic:
        fc = coulomb_scale(model, base, beta, states)    # f_c (+ f_l |tau_0|)
        pred0 = predict_torque(model, base, beta, states, friction_deadband=width,
                               coulomb=ramp)[:, motor]
    else:       # the same f_c (+ f_l |tau_0|) from the prediction's regressor pass
        pred0, fc = _predict_with_scale(model, base, beta, states, friction_deadband=width,
                                        coulomb=ramp)
        pred0 = pred0[:, motor]
    out = []
    for c, col in zip([None] + list(grid), filtered):
        pred = pred0
        if c is not None:     # only the Coulomb columns change: no regressor pass
            pred = pred0 + (col - ramp) * fc
        out.append(pred)
    return states["tau"], out


def select_presliding(model, base, beta, datasets, settings, grid=PRESLIDING_GRID,
                      min_gain=PRESLIDING_MIN_GAIN, mapper=None):
    """Resolve ``friction_presliding: auto`` on the identification data.

    The torque of every identification dataset is predicted with the estimate ``beta``
    (fitted with the Coulomb ramp, the pre-sliding state only changes the prediction's
    Coulomb column) once with the ramp of :func:`prediction_deadband` and once per
    candidate delta (``grid``, one delta for all joints, at least each joint's position
    jitter); the candidate with the lowest mean NRMSE over joints and datasets is kept
    where it is at least ``min_gain`` below the ramp's. Nothing is chosen on validation
    data. One scalar over thousands of samples and a fixed estimate: in-sample selection,
    on at most :data:`PRESLIDING_SAMPLES` samples of each dataset in
    :data:`PRESLIDING_WINDOWS` windows spread over it (:func:`presliding_windows`; bounded
    cost; the position jitter on the whole dataset).

    Parameters
    ----------
    base : BaseParameters
    beta : ndarray (p,)
    datasets : list of Dataset
        The identification data.
    settings : IdentificationSettings
        Resolved (numbers; :func:`settings_from_results`).
    mapper : callable, optional
        ``mapper(fn, datasets, model, *args)`` -> ``[fn(model, ds, *args) for ds in
        datasets]`` (the default), e.g. on Dask workers that read each recording's head
        themselves (``datasets`` are then recordings); the client only reduces.

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
    width = prediction_deadband(model, settings)
    if ("coulomb" not in model.drive_parameter_keys() or not datasets
            or not settings.drop_reversals):
        return None, np.zeros(model.n), []
    cands = [None] + list(grid)
    if mapper is None:
        datasets = [ds.select_joints(model.joint_names) for ds in datasets]
        directions = [motion_direction(model, ds, settings) for ds in datasets]
        jitter = position_jitter(model, datasets, settings, directions)
        per = [candidate_errors(model, ds, base, beta, settings, jitter, width, tuple(grid),
                                direction) for ds, direction in zip(datasets, directions)]
    else:
        jitter = _jitter_of(mapper(rest_steps, datasets, model, settings), model.n)
        per = mapper(candidate_errors, datasets, model, base, beta, settings, jitter, width,
                     tuple(grid))
    errs = {c: [e[k] for e in per] for k, c in enumerate(cands)}
    table = [[c, float(np.mean(errs[c]))] for c in cands]
    best = min(table[1:], key=lambda r: r[1])
    if best[1] <= (1.0 - min_gain) * table[0][1]:
        return best[0], jitter, table
    return None, jitter, table


def resolve_presliding(model, result, datasets, settings, log=None, mapper=None):
    """Record the prediction's Coulomb friction state in ``result.settings``
    (``friction_presliding`` [rad] or None, ``position_jitter`` [rad] per joint and, for
    ``auto``, the in-sample table ``presliding_selection``: [delta or None, mean NRMSE]).

    ``auto`` is resolved by :func:`select_presliding` on the in-memory identification
    datasets with the primary estimate (at most :data:`PRESLIDING_SAMPLES` samples of each,
    windows spread over it, recorded as ``presliding_selection_samples``); recordings
    streamed from files (bags) are not held in memory: there ``auto`` stays the ramp (None).
    A number is kept as given.
    Only for models with Coulomb friction whose identification dropped the friction rows at
    reversals and stops (else None).
    """
    wanted = getattr(settings, "friction_presliding", None)
    sets = datasets if isinstance(datasets, (list, tuple)) else [datasets]
    if mapper is None:
        sets = [d for d in sets if isinstance(d, Dataset)]
    out = result.settings
    out["friction_presliding"] = None
    if (wanted is None or not sets or "coulomb" not in model.drive_parameter_keys()
            or not out.get("drop_reversals")):
        return
    resolved = settings_from_results(model, {"settings": out})
    try:
        if wanted == "auto":
            delta, jitter, table = select_presliding(
                model, result.base, result.estimate.values, sets, resolved, mapper=mapper)
            out["presliding_selection"] = [[None if d is None else float(d),
                                            round(e, 5)] for d, e in table]
            # the subsample the table is of: at most these samples of each dataset, in
            # PRESLIDING_WINDOWS windows spread over it
            out["presliding_selection_samples"] = PRESLIDING_SAMPLES
        else:
            delta = float(wanted)
            jitter = _jitter_of((mapper or _serial_map)(rest_steps, sets, model, resolved),
                                model.n)
    except (DataError, ValueError) as e:      # too short for the filter: keep the ramp
        if log:
            log(f"friction pre-sliding state not resolved ({e}); Coulomb ramp kept")
        return
    out["position_jitter"] = [float(f"{v:.3g}") for v in jitter]
    if delta is not None:
        out["friction_presliding"] = [float(f"{max(delta, v):.3g}") for v in jitter]
        if wanted == "auto":
            err = dict((d, e) for d, e in table)
            result.diagnostics.append(Diagnostic(
                "friction_presliding", "info",
                f"Coulomb friction predicted with a pre-sliding (Dahl) state, delta "
                f"{delta:g} rad, reset at stops: in-sample mean NRMSE {err[delta]:.4f} "
                f"(Coulomb ramp {err[None]:.4f}); friction_presliding: null keeps the ramp",
                "friction"))
    if log:
        log("friction pre-sliding state (Dahl, reset at stops): "
            + ("none (the Coulomb ramp)" if delta is None else f"delta {delta:g} rad"))
