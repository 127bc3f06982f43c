"""Batch identification of in-memory datasets: a thin caller of the identification engine
(:mod:`robot_identification.identification`), kept for its call signature.

Used by the CLI (``robot-identification identify``), the identifier node and scripts.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.identification import (  # noqa: F401 - re-exported
    CUTOFF_BAND_FACTOR, DEADBAND_NOISE_FACTOR, IdentificationResult, Recording,
    make_preprocessor, needs_resolving, recording_summaries, resolve_settings, row_labels,
    row_mask, sample_rate, true_base_values)
from robot_identification.identification import identify as _identify
from robot_identification.model import IdentificationSettings
from robot_identification.regressor import CHUNK


def preprocess(model, dataset: Dataset, settings: IdentificationSettings | None = None,
               use_measured_derivatives: bool = True):
    """Filtered positions, velocities, accelerations and torques of a whole dataset.

    The engine's pre-processing strategy (``settings.preprocessing``; default
    ``butterworth``: zero-phase Butterworth then numerical differentiation, as in Zollo et
    al. 2014, Sec. 6.1: 5th order, 20 Hz) applied to the dataset as one chunk. Irregular
    time stamps are resampled onto a uniform grid first.

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
    rec = Recording.from_dataset(dataset, model)
    if needs_resolving(s):   # not resolved over all recordings: this one alone
        s = resolve_settings(model, s, recording_summaries(model, [rec]))
    (ds,) = rec.chunks()
    pre = make_preprocessor(model, s, sample_rate(ds.t),
                            use_measured_derivatives=use_measured_derivatives)
    parts = [out for out in (pre.push(ds), pre.finish()) if out is not None]
    if not parts:
        raise DataError(f"{ds.t.shape[0]} samples are too few for the {pre.name} filter")
    states = {k: np.concatenate([st[k] for st, _ in parts], axis=0) for k in parts[0][0]}
    return states, np.concatenate([t for _, t in parts])


def identify(model, datasets, settings: IdentificationSettings | None = None, *,
             estimator: str | None = None, base=None, chunk: int = CHUNK, log=None,
             use_measured_derivatives: bool = True, estimators=None,
             prior=None, workers: int = 1, scheduler=None) -> IdentificationResult:
    """Identify the base parameters of ``model`` from one or more datasets.

    Parameters
    ----------
    model : RobotModel
    datasets : Dataset, Recording or path, or a list of them
    settings : IdentificationSettings, optional
        Default: the robot config's ``identification`` section.
    estimator : str, optional
        Primary estimator (see :data:`robot_identification.identification.ESTIMATORS`);
        overrides ``settings.estimator`` (the settings' extra estimators are still computed).
    estimators : sequence of str, optional
        All estimators, primary first (overrides ``estimator`` and the settings).
    prior : str, optional
        ``nominal`` | ``none`` | YAML file; default ``settings.prior``.
    base : BaseParameters, optional
        Precomputed base parameters (default: :func:`base_parameters` of the model).
    chunk : int
        Samples per regressor block (memory bound).
    log : callable, optional
        Progress messages (str) go here.
    workers, scheduler :
        Dask map-reduce over the datasets (see
        :func:`robot_identification.identification.identify`).

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
    s = settings or model.config.identification
    if estimator is not None and estimators is None:
        s = replace(s, estimator=estimator)
    if isinstance(datasets, (list, tuple)) and not datasets:
        raise DataError("no dataset given")
    result = _identify(model, datasets, s, estimators=estimators, prior=prior, base=base,
                       block=chunk, use_measured_derivatives=use_measured_derivatives,
                       log=log, workers=workers, scheduler=scheduler)
    resolve_presliding(model, result, datasets, s, log=log)
    return result


def resolve_presliding(model, result, datasets, settings, log=None):
    """Record the prediction's Coulomb friction state in ``result.settings``
    (``friction_presliding`` [rad] or None, ``position_jitter`` [rad] per joint and, for
    ``auto``, the in-sample table ``presliding_selection``: [delta or None, mean NRMSE]).

    ``auto`` is resolved by :func:`robot_identification.validation.select_presliding` on
    the in-memory identification datasets with the primary estimate; recordings streamed
    from files (bags) are not held in memory: there ``auto`` stays the ramp (None). A
    number is kept as given. Only for models with Coulomb friction whose identification
    dropped the friction rows at reversals and stops (else None).
    """
    from robot_identification.validation import (
        position_jitter, select_presliding, settings_from_results)
    wanted = getattr(settings, "friction_presliding", None)
    sets = datasets if isinstance(datasets, (list, tuple)) else [datasets]
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
                model, result.base, result.estimate.values, sets, resolved)
            out["presliding_selection"] = [[None if d is None else float(d),
                                            round(e, 5)] for d, e in table]
        else:
            delta, jitter = float(wanted), position_jitter(model, sets, resolved)
    except (DataError, ValueError) as e:      # too short for the filter: keep the ramp
        if log:
            log(f"friction pre-sliding state not resolved ({e}); Coulomb ramp kept")
        return
    out["position_jitter"] = [float(f"{v:.3g}") for v in jitter]
    if delta is not None:
        out["friction_presliding"] = [float(f"{max(delta, v):.3g}") for v in jitter]
        if wanted == "auto":
            from robot_identification.diagnostics import Diagnostic
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
