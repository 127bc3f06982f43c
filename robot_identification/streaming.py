"""Streaming identification of long recordings with the polynomial-approximation strategy:
thin callers of the identification engine (:mod:`robot_identification.identification`),
kept for scripts written against them. New code calls
:func:`robot_identification.identification.identify` with ``preprocessing: polynomial``
(``identify --preprocessing polynomial`` on the command line); the readers are the engine's.

Each chunk is pre-processed by a causal FIR filter bank -- the polynomial-approximation
operator of Lomakin & Deutscher (:class:`PolynomialApproximation`) or a Savitzky-Golay bank
(:class:`SavitzkyGolay`) -- which yields positions, velocities and accelerations from
positions only, and filters the torques with the same smoothing kernel (Lomakin & Deutscher
eq. 28-37); the last L samples of each chunk are carried over to the next, so chunk borders
are exact. The regressor is evaluated on the PA estimates (composition rule, eq. 21;
:func:`~robot_identification.identification.pa_product_regressor` is the product rule).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from robot_identification.choices import AUTO_ESTIMATOR
from robot_identification.errors import DataError
from robot_identification.identification import (  # noqa: F401 - re-exported
    ESTIMATORS, READ_CHUNK, FIRStates, NpyDirWriter, Recording, identify, iter_bag_chunks,
    iter_chunks, iter_dataset_chunks, iter_npy_dir_chunks, iter_npz_chunks, make_bank,
    pa_product_regressor, polynomial_settings, recording_normal_equations)
from robot_identification.identification import estimate_from as _estimate_from  # noqa: F401
from robot_identification.regressor import CHUNK


def accumulate(model, chunks, bank, *, base=None, decimate=1, velocity_threshold=0.0,
               block=CHUNK, log=None, drop_reversals=None):
    """Normal equations of one recording streamed through the FIR ``bank``:
    :func:`~robot_identification.identification.recording_normal_equations` with that bank.
    ``drop_reversals``: drop the friction rows within one window of a velocity reversal or
    stop (default: the robot config's setting).

    Returns
    -------
    neq : RecordingEquations
    info : dict
        ``n_input`` (raw samples), ``n_samples`` (regressor samples), ``t_regressor`` [s].

    Raises
    ------
    DataError
        Non-uniform sampling, NaN, wrong joints, no full window, bad ``decimate``.
    """
    s = polynomial_settings(model.config.identification, decimate=decimate,
                            velocity_threshold=velocity_threshold or 0.0,
                            drop_reversals=drop_reversals)
    neq = recording_normal_equations(model, Recording.from_chunks(chunks), s,
                                     base=base, block=block, bank=bank, log=log)
    return neq, {"n_input": neq.n_input, "n_samples": neq.n_samples,
                 "t_regressor": neq.t_regressor}


def identify_streaming(model, chunks, *, bank=None, pa=None, decimate=1, estimator=None,
                       velocity_threshold=None, base=None, bounds=None, theta0=None,
                       mrls_options=None, block=CHUNK, log=None):
    """:func:`robot_identification.identification.identify` of one recording with the
    ``polynomial`` strategy and one estimator.

    Parameters
    ----------
    model : RobotModel
    chunks : iterable of Dataset, a path (see :func:`iter_chunks`) or a Recording
    bank : PolynomialApproximation or SavitzkyGolay, optional
        A ready FIR bank; default: the robot config's ``pa_*`` settings at the data's rate.
    pa : dict, optional
        Overrides of the config's PA settings: ``window`` [s], ``N``, ``alpha``, ``beta``,
        ``delay`` [s].
    decimate : int
        Regressor on every k-th filtered sample (documented anti-alias decimation).
    estimator : str, optional
        One of :data:`~robot_identification.identification.ESTIMATORS`, or ``auto`` (wls or
        physical by their held-out score, the other computed too:
        :func:`~robot_identification.identification.resolve_estimator`); default the robot
        config's ``identification.estimator``; its extra estimators are not computed.
    velocity_threshold : float, optional
        Default: the robot config's identification setting [rad/s].
    base : BaseParameters, optional
    bounds : (lower, upper), optional
        Box on the *base* parameters (see :func:`base_bounds`), used by 'mrls' and 'bounded'.
    theta0 : ndarray (p,), optional
        MRLS initial guess (default: the prior's base values, clipped into the bounds).
    mrls_options : dict, optional
        ``sigma2``, ``excitation_tol``, ``dependence_tol`` of :class:`MRLS`.
    block : int
        Regressor block size [samples].
    log : callable, optional

    Returns
    -------
    IdentificationResult

    Raises
    ------
    DataError
        Unknown estimator, 'bounded' without ``bounds``, bad data.
    ExcitationError
    """
    estimator = estimator or model.config.identification.estimator
    if estimator not in ESTIMATORS and estimator != AUTO_ESTIMATOR:
        raise DataError(f"unknown estimator '{estimator}' ({AUTO_ESTIMATOR}, "
                        f"{', '.join(ESTIMATORS)})")
    if estimator == "bounded" and bounds is None:
        raise DataError("estimator 'bounded' needs bounds=(lower, upper)")
    kw = {"window": "pa_window", "N": "pa_degree", "alpha": "pa_alpha", "beta": "pa_beta",
          "delay": "pa_delay"}
    s = polynomial_settings(model.config.identification, decimate=decimate,
                            velocity_threshold=velocity_threshold,
                            **{kw[k]: v for k, v in (pa or {}).items()})
    s = replace(s, estimator=estimator, extra_estimators=())
    if isinstance(chunks, (str, Path)):
        rec = Recording.from_path(chunks)
    else:
        rec = chunks if isinstance(chunks, Recording) else Recording.from_chunks(chunks)
    return identify(model, rec, s, base=base, block=block, bank=bank, log=log,
                    options={"bounds": bounds, "theta0": theta0, "mrls": mrls_options})


def prediction_rms(model, chunks, values, bank, *, base=None, decimate=1, velocity_threshold=0.0):
    """RMS torque-prediction error per row group of base parameters ``values`` on (held-out)
    data, filtered by the same FIR bank, streamed; every row with |velocity| >=
    ``velocity_threshold`` counts (rows near reversals and stops too: a prediction metric).

    Returns
    -------
    ndarray (rows,)
        sqrt(mean((tau* - Y_B* values)^2)) per joint (rigid) or link/motor row (elastic).
    """
    neq, _ = accumulate(model, chunks, bank, base=base, decimate=decimate,
                        velocity_threshold=velocity_threshold, drop_reversals=False)
    return np.sqrt(neq.residual_sums(np.asarray(values, dtype=float)) / np.maximum(neq.count, 1))


__all__ = ["iter_dataset_chunks", "iter_npz_chunks", "iter_npy_dir_chunks", "iter_bag_chunks",
           "iter_chunks", "NpyDirWriter", "FIRStates", "make_bank", "accumulate",
           "identify_streaming", "prediction_rms", "pa_product_regressor"]
