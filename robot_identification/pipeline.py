"""Batch identification pipeline: dataset(s) -> pre-processing -> base parameters -> estimate.

Used by the CLI (``robot-identification identify``) and the identifier node.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from robot_identification.data import Dataset
from robot_identification.diagnostics import (
    collect_diagnostics, near_reversal, recording_summary)
from robot_identification.errors import DataError
from robot_identification.estimation import NormalEquations, ols, wls
from robot_identification.identifiability import base_parameters, check_excitation
from robot_identification.model import IdentificationSettings
from robot_identification.regressor import CHUNK, iter_regressor_blocks
from robot_identification.signal import (
    central_difference, lowpass_filtfilt, savgol_derivative)


def preprocess(model, dataset: Dataset, settings: IdentificationSettings | None = None,
               use_measured_derivatives: bool = True):
    """Filtered positions, velocities, accelerations and torques of a dataset.

    Positions (and torques) are low-pass filtered with a zero-phase Butterworth
    filter, then differentiated twice (central differences or Savitzky-Golay),
    as in Zollo et al. (2014, Sec. 6.1: 5th order, 20 Hz, numerical differentiation).
    Measured velocities/accelerations in the dataset are used (filtered) instead when
    ``use_measured_derivatives``.

    Returns
    -------
    states : dict
        Arrays (N, n): ``q, dq, ddq, tau`` and for elastic models ``theta, dtheta, ddtheta``.
    t : ndarray (N,)

    Raises
    ------
    DataError
        Invalid dataset (see :meth:`Dataset.validate`), filter settings incompatible
        with the sampling rate.
    """
    s = settings or model.config.identification
    ds = dataset.select_joints(model.joint_names).validate(min_samples=20,
                                                           elastic=model.config.elastic)
    if s.cutoff_hz == "auto":   # not resolved over all recordings: this one alone
        s = resolve_settings(model, s, [recording_summary(model, ds)])
    t = ds.t
    dt = np.diff(t)
    fs = 1.0 / np.median(dt)
    irregular = np.max(np.abs(dt - 1 / fs)) > 0.05 / fs
    if irregular:  # resample onto a uniform grid (filters assume uniform sampling)
        tu = np.arange(t[0], t[-1], 1.0 / fs)
        ds = _resample(ds, tu)
        t = tu

    def smooth(x):
        if x is None or s.cutoff_hz is None:
            return x
        return lowpass_filtfilt(x, fs, s.cutoff_hz, s.filter_order)

    def derive(x):
        if s.differentiation == "savgol":
            return savgol_derivative(x, fs, s.savgol_window, s.savgol_order, deriv=1)
        return central_difference(x, 1.0 / fs)

    def chain(pos, vel, acc):
        p = smooth(pos)
        v = smooth(vel) if (vel is not None and use_measured_derivatives) else derive(p)
        a = smooth(acc) if (acc is not None and use_measured_derivatives) else derive(v)
        return p, v, a

    states = {}
    states["q"], states["dq"], states["ddq"] = chain(ds.q, ds.dq, ds.ddq)
    if model.config.elastic:
        states["theta"], states["dtheta"], states["ddtheta"] = chain(ds.theta, ds.dtheta,
                                                                     ds.ddtheta)
    states["tau"] = smooth(ds.tau)
    if s.decimate > 1:
        states = {k: v[:: s.decimate] for k, v in states.items()}
        t = t[:: s.decimate]
    return states, t


#: Automatic cut-off = this factor x the excitation band (99 % of the motion's power).
CUTOFF_BAND_FACTOR = 5.0
#: Automatic Coulomb deadband = this factor x the velocity noise std.
DEADBAND_NOISE_FACTOR = 3.0


def resolve_settings(model, settings, recordings):
    """Settings with ``'auto'`` replaced by values measured on the recordings.

    - ``cutoff_hz: auto`` -> :data:`CUTOFF_BAND_FACTOR` x the widest excitation band
      (:func:`~robot_identification.diagnostics.excitation_band`, 99 % of the motion's
      spectral power), at least 0.5 Hz and at most 0.2 x the lowest sampling rate
      (static recordings only: 0.05 x the sampling rate);
    - ``friction_deadband: auto`` -> per joint :data:`DEADBAND_NOISE_FACTOR` x the std of
      the velocity noise left after the low-pass filter: the raw noise std
      (:func:`~robot_identification.diagnostics.noise_std`) x sqrt(2 f_c / f_s) for a
      measured velocity (white noise) or x (2 f_c / f_s)^1.5 for differentiated positions
      (noise spectrum ~ f^2); median over recordings, at least 1e-6 rad/s and at most
      0.1 x the velocity RMS (the Coulomb term must stay distinguishable from viscous).

    Parameters
    ----------
    recordings : list of dict
        :func:`~robot_identification.diagnostics.recording_summary` per recording.

    Returns
    -------
    IdentificationSettings
    """
    s = settings or model.config.identification
    fs = min(r["sample_rate"] for r in recordings)
    if s.cutoff_hz == "auto":
        band = max(r["band_hz"] for r in recordings)
        cut = 0.05 * fs if band <= 0 else min(max(CUTOFF_BAND_FACTOR * band, 0.5), 0.2 * fs)
        s = replace(s, cutoff_hz=float(f"{cut:.3g}"))
    if isinstance(s.friction_deadband, str):
        left = []
        for r in recordings:
            share = 1.0
            if s.cutoff_hz is not None:
                ratio = min(2.0 * s.cutoff_hz / r["sample_rate"], 1.0)
                share = ratio ** (0.5 if r["velocity_measured"] else 1.5)
            left.append(share * r["velocity_noise"])
        dead = DEADBAND_NOISE_FACTOR * np.median(np.stack(left), axis=0)
        vrms = np.median(np.stack([r["velocity_rms"] for r in recordings]), axis=0)
        dead = np.clip(dead, 1e-6, np.maximum(0.1 * vrms, 1e-6))
        s = replace(s, friction_deadband=tuple(float(f"{v:.3g}") for v in dead))
    return s


def _resample(ds, tu):
    kw = {}
    for k in ("q", "dq", "ddq", "theta", "dtheta", "ddtheta", "tau"):
        v = getattr(ds, k)
        if v is not None:
            kw[k] = np.column_stack([np.interp(tu, ds.t, v[:, j]) for j in range(v.shape[1])])
    return replace(ds, t=tu, **kw)


def row_mask(model, states, threshold):
    """Rows to use per sample, shape (N, rows): friction rows need |velocity| >= threshold.

    Rigid arms: row k needs |dq_k| >= threshold. Elastic arms: link rows are always
    used; motor row k needs |dtheta_k| >= threshold (the sign(dtheta) Coulomb model
    fails near zero velocity; Zollo et al. 2014 used 0.5 rad/s).
    """
    if threshold <= 0:
        return None
    if model.config.elastic:
        link = np.ones_like(states["dtheta"], dtype=bool)
        return np.concatenate([link, np.abs(states["dtheta"]) >= threshold], axis=1)
    return np.abs(states["dq"]) >= threshold


def row_labels(model):
    """Row-group labels: ``joint1`` (rigid) or ``joint1 link`` / ``joint1 motor`` (elastic)."""
    if model.config.elastic:
        return ([f"{j} link" for j in model.joint_names]
                + [f"{j} motor" for j in model.joint_names])
    return list(model.joint_names)


def true_base_values(model, base, true_parameters):
    """Base parameters (p,) of known standard parameters {name: value}; None when unknown.

    Standard parameters missing from the mapping count as 0.
    """
    if not true_parameters:
        return None
    pi = np.array([true_parameters.get(nm, 0.0) for nm in model.parameter_names])
    return base.base_values(pi)


@dataclass
class IdentificationResult:
    """Outcome of :func:`identify`.

    Attributes
    ----------
    robot : str
    names, expressions : list of str
        Base parameter names and their expressions in standard parameters.
    estimate : Estimate
    base : BaseParameters
    true_values : ndarray (p,) or None
        Base parameters of the dataset's true standard parameters, when known.
    row_labels : list of str
        Label of each regressor row group (``joint1`` or ``joint1 link``/``joint1 motor``).
    n_samples, n_used_rows : int
    elapsed : float
        Wall time [s].
    settings : dict
    normal_equations : NormalEquations or None
        The accumulated per-group normal equations (for further estimators, e.g. the
        physically consistent SDP).
    diagnostics : list of Diagnostic
        What makes this result doubtful (see :mod:`robot_identification.diagnostics`).
    """

    robot: str
    names: list
    expressions: list
    estimate: object
    base: object
    true_values: np.ndarray | None
    row_labels: list
    n_samples: int
    n_used_rows: int
    elapsed: float
    settings: dict = field(default_factory=dict)
    units: list = field(default_factory=list)
    normal_equations: object = None
    diagnostics: list = field(default_factory=list)

    def normalised_mean_error(self, exclude=()):
        """mean_i |est_i - true_i| / |true_i| (absolute error where true_i = 0).

        The error measure of Zollo et al. (2014), Sec. 6 (reverse-engineered in the
        notes: reproduces their 0.103). ``exclude`` lists drive keys (e.g. ``("coulomb",)``)
        whose base parameters are left out.
        """
        if self.true_values is None:
            return None
        keep = [i for i, nm in enumerate(self.names) if nm.rsplit(".", 1)[-1] not in exclude]
        est, tru = self.estimate.values[keep], self.true_values[keep]
        err = np.abs(est - tru)
        nz = np.abs(tru) > 1e-12
        err[nz] /= np.abs(tru[nz])
        return float(err.mean())

    # notebook API (robot_identification.report._notebook)
    def to_dataframe(self):
        """pandas DataFrame, one row per base parameter: expression, unit, estimate, std,
        relative_std [%], true, trust. Raises ImportError without pandas."""
        from robot_identification.report._notebook import to_dataframe
        return to_dataframe(self)

    def plot(self):
        """matplotlib figures: relative std per base parameter (trust colours) and, for
        simulated data, the relative error with +-2 std bars."""
        from robot_identification.report._notebook import plot
        return plot(self)

    def save(self, path, model=None):
        """Write results.yaml to ``path`` (the file other tools read); returns the path."""
        from robot_identification.report._notebook import save
        return save(self, path, model)

    def _repr_html_(self):
        from robot_identification.report._notebook import repr_html
        return repr_html(self)


def identify(model, datasets, settings: IdentificationSettings | None = None, *,
             estimator: str | None = None, base=None, chunk: int = CHUNK, log=None,
             use_measured_derivatives: bool = True) -> IdentificationResult:
    """Identify the base parameters of ``model`` from one or more datasets.

    Parameters
    ----------
    model : RobotModel
    datasets : Dataset or list of Dataset
    settings : IdentificationSettings, optional
        Default: the robot config's ``identification`` section.
    estimator : {'ols', 'wls'}, optional
        Overrides ``settings.estimator``.
    base : BaseParameters, optional
        Precomputed base parameters (default: :func:`base_parameters` of the model).
    chunk : int
        Samples per regressor block (memory bound).
    log : callable, optional
        Progress messages (str) go here.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    DataError
        Invalid data (NaN, mismatched lengths, too few samples, missing joints).
    ExcitationError
        The data do not excite some base parameters (named in the message).
    """
    t0 = time.perf_counter()
    s = settings or model.config.identification
    method = estimator or s.estimator
    if isinstance(datasets, Dataset):
        datasets = [datasets]
    if not datasets:
        raise DataError("no dataset given")
    base = base or base_parameters(model)
    rows = model.rows_per_sample
    neq = NormalEquations(len(base), rows)
    n_samples = 0
    recordings = [recording_summary(model, ds) for ds in datasets]
    s = resolve_settings(model, s, recordings)
    reversal = [0, 0]
    from robot_identification.progress import bar
    pbar = bar(total=sum(d.t.shape[0] for d in datasets), desc="identify", unit="sample",
               unit_scale=True)
    for d_i, ds in enumerate(datasets):
        states, _ = preprocess(model, ds, s, use_measured_derivatives)
        mask = row_mask(model, states, s.velocity_threshold)
        N = states["q"].shape[0]
        n_samples += N
        if s.cutoff_hz is not None:     # rows where the filter smears the Coulomb step
            v = states["dtheta" if model.config.elastic else "dq"]
            rate = recordings[d_i]["sample_rate"] / s.decimate
            near = near_reversal(v, int(round(rate / (2.0 * s.cutoff_hz))))
            used = np.abs(v) >= s.velocity_threshold
            reversal[0] += int((near & used).sum())
            reversal[1] += int(used.sum())
            if s.drop_reversals and "coulomb" in model.drive_parameter_keys():
                keep = ~near
                if model.config.elastic:
                    keep = np.concatenate([np.ones_like(keep), keep], axis=1)
                mask = keep if mask is None else mask & keep
        for start, Y, y in iter_regressor_blocks(model, states, chunk,
                                                 friction_deadband=s.friction_deadband):
            m = None if mask is None else mask[start: start + Y.shape[0]]
            neq.add(base.project(Y), y, m)
            pbar.update(Y.shape[0] * s.decimate)
            if log and N > 20 * chunk and (start // chunk) % 20 == 0:
                log(f"dataset {d_i + 1}/{len(datasets)}: {start + Y.shape[0]}/{N} samples")
    pbar.close()
    if neq.count.sum() <= len(base):
        raise DataError(f"only {int(neq.count.sum())} usable equations for {len(base)} base "
                        f"parameters (velocity threshold {s.velocity_threshold} rad/s); "
                        f"record longer or lower the threshold")
    check_excitation(neq.gram, base.names)
    est = ols(neq) if method == "ols" else wls(neq)
    true = true_base_values(model, base, datasets[0].true_parameters)
    labels = row_labels(model)
    units = [model.layout.units[i] for i in base.independent]
    result = IdentificationResult(
        robot=model.config.name, names=list(base.names), expressions=base.expressions(),
        estimate=est, base=base, true_values=true, row_labels=labels, n_samples=n_samples,
        n_used_rows=int(neq.count.sum()), elapsed=time.perf_counter() - t0,
        settings={"estimator": method, "filter_order": s.filter_order, "cutoff_hz": s.cutoff_hz,
                  "differentiation": s.differentiation,
                  "velocity_threshold": s.velocity_threshold, "decimate": s.decimate,
                  "friction_deadband": [float(v) for v in np.broadcast_to(
                      s.friction_deadband, (model.n,))],
                  "reversal_fraction": round(reversal[0] / max(reversal[1], 1), 4),
                  "drop_reversals": bool(s.drop_reversals)},
        units=units, normal_equations=neq)
    result.diagnostics = collect_diagnostics(model, result, recordings)
    return result
