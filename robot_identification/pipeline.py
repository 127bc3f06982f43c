"""Batch identification of in-memory datasets: a thin caller of the identification engine
(:mod:`robot_identification.identification`), kept for its call signature.

Used by the CLI (``robot-identification identify``), the identifier node and scripts.
"""
from __future__ import annotations

from dataclasses import replace

from robot_identification.errors import DataError
from robot_identification.identification import (  # noqa: F401 - re-exported
    CUTOFF_BAND_FACTOR, DEADBAND_NOISE_FACTOR, IdentificationResult, Recording,
    make_preprocessor, needs_resolving, preprocess, recording_summaries, resolve_presliding,
    resolve_settings, row_labels, row_mask, sample_rate, true_base_values)
from robot_identification.identification import identify as _identify
from robot_identification.model import IdentificationSettings
from robot_identification.regressor import CHUNK


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
