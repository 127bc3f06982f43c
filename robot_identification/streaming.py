"""Streaming identification of arbitrarily long recordings in bounded memory: thin callers
of the identification engine (:mod:`robot_identification.identification`) with its FIR
strategies.

Data arrive as an iterable of consecutive :class:`Dataset` chunks (from
:func:`iter_npz_chunks`, :func:`iter_npy_dir_chunks`, :func:`iter_bag_chunks` or
:func:`iter_dataset_chunks`) or a path. Each chunk is pre-processed by a causal FIR filter
bank -- the polynomial-approximation operator of Lomakin & Deutscher
(:class:`PolynomialApproximation`) or a Savitzky-Golay bank (:class:`SavitzkyGolay`) --
which yields positions, velocities and accelerations from positions only, and filters the
torques with the same smoothing kernel so that both sides of the regression refer to the
same delayed instant t - t_d (Lomakin & Deutscher eq. 28-37). The last L samples of each
chunk are carried over to the next, so chunk borders are exact.

The filtered states are optionally decimated (``decimate``): the FIR bank is a low-pass
(anti-alias) filter, and the regression equation holds at every instant, so evaluating the
regressor on every k-th filtered sample only drops strongly correlated equations.

Regressor composition: the regressor is evaluated on the PA estimates,
Y_B(q^, q^', q^''), i.e. the composition rule (21) of the paper is used for every column.
Columns linear in derivatives with constant coefficients (rotor inertia, viscous friction)
are then exact projections; columns with position-dependent coefficients carry an O(T^2)
composition error (seed notes Sec. 1.8).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from robot_identification.errors import DataError
from robot_identification.identification import (  # noqa: F401 - re-exported
    READ_CHUNK, FIRStates, NpyDirWriter, Recording, iter_bag_chunks, iter_chunks,
    iter_dataset_chunks, iter_npy_dir_chunks, iter_npz_chunks, make_bank,
    recording_normal_equations)
from robot_identification.identification import estimate_from as _estimate_from  # noqa: F401
from robot_identification.identification import identify as _identify
from robot_identification.regressor import CHUNK, regressor


def _settings(model, decimate, velocity_threshold):
    s = model.config.identification
    if int(decimate) != decimate or decimate < 1:
        raise DataError(f"decimate must be a positive integer, got {decimate}")
    return replace(s, decimate=int(decimate), velocity_threshold=(
        s.velocity_threshold if velocity_threshold is None else velocity_threshold))


def accumulate(model, chunks, bank, *, base=None, decimate=1, velocity_threshold=0.0,
               block=CHUNK, log=None, drop_reversals=None):
    """Normal equations of one recording streamed through the FIR ``bank``
    (:func:`recording_normal_equations` with that bank). ``drop_reversals``: drop the
    friction rows within one window of a velocity reversal or stop (default: the robot
    config's setting).

    Returns
    -------
    neq : NormalEquations
    info : dict
        ``n_input`` (raw samples), ``n_samples`` (regressor samples), ``t_regressor`` [s].

    Raises
    ------
    DataError
        Non-uniform sampling, NaN, wrong joints, no full window.
    """
    s = _settings(model, decimate, velocity_threshold or 0.0)
    if drop_reversals is not None:
        s = replace(s, drop_reversals=bool(drop_reversals))
    neq = recording_normal_equations(model, Recording.from_chunks(chunks), s,
                                     base=base, block=block, bank=bank, log=log)
    return neq, {"n_input": neq.n_input, "n_samples": neq.n_samples,
                 "t_regressor": neq.t_regressor}


def identify_streaming(model, chunks, *, bank=None, pa=None, decimate=1, estimator=None,
                       velocity_threshold=None, base=None, bounds=None, theta0=None,
                       mrls_options=None, block=CHUNK, log=None):
    """Identify base parameters from a recording streamed in chunks (bounded memory).

    Parameters
    ----------
    model : RobotModel
    chunks : iterable of Dataset, a path (see :func:`iter_chunks`) or a Recording
    bank : PolynomialApproximation or SavitzkyGolay, optional
        FIR pre-processing; default: a PA bank built from ``pa`` at the data's rate.
    pa : dict, optional
        Settings of the default PA bank: ``window`` [s] (default 0.044), ``N`` (1), ``alpha``,
        ``beta`` (3, 3), ``delay``.
    decimate : int
        Regressor on every k-th filtered sample (documented anti-alias decimation).
    estimator : {'ols', 'wls', 'irls', 'mrls', 'bounded', 'physical'}, optional
        Default: the robot config's ``identification.estimator`` (``wls`` unless the config
        says otherwise, as the batch engine). 'mrls': Lomakin & Deutscher Fig. 1 on the summed
        normal equations (flags in ``result.settings['flags']``); 'bounded': box-constrained
        LS on ``bounds``.
    velocity_threshold : float, optional
        Default: the robot config's identification setting.
    base : BaseParameters, optional
    bounds : (lower, upper), optional
        Box on the *base* parameters (see :func:`base_bounds`), used by 'mrls' and 'bounded'.
    theta0 : ndarray (p,), optional
        MRLS initial guess (default: the base values of the model's nominal parameters,
        clipped into the bounds).
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
    DataError, ExcitationError
    """
    from robot_identification.identification import ESTIMATORS
    if estimator is None:
        estimator = model.config.identification.estimator
    if estimator not in ESTIMATORS:
        raise DataError(f"unknown estimator '{estimator}' ({', '.join(ESTIMATORS)})")
    if estimator == "bounded" and bounds is None:
        raise DataError("estimator 'bounded' needs bounds=(lower, upper)")
    s = _settings(model, decimate, velocity_threshold)
    kw = {"window": 0.044, "N": 1, "alpha": 3.0, "beta": 3.0, "delay": None}
    kw.update(pa or {})
    s = replace(s, preprocessing="polynomial", estimator=estimator, extra_estimators=(),
                pa_window=kw["window"], pa_degree=kw["N"], pa_alpha=kw["alpha"],
                pa_beta=kw["beta"], pa_delay=kw["delay"])
    if isinstance(chunks, Recording):
        rec = chunks
    elif isinstance(chunks, (str, Path)):
        rec = Recording.from_path(chunks)
    else:
        rec = Recording.from_chunks(chunks)
    return _identify(model, [rec], s, base=base, block=block, bank=bank, log=log,
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


def pa_product_regressor(model, q, bank, n_star=2):
    """PA-filtered rigid regressor P{Y(q, dq, ddq)} built with the product rule (eq. 22-27).

    Y is split as Y(q, dq, ddq) = Y_g(q) + sum_j A_j(q) ddq_j + Y_v(q, dq) with
    Y_g = Y(q, 0, 0) (gravity, offsets), A_j = Y(q, 0, e_j) - Y_g (inertia and rotor
    columns) and Y_v the velocity terms (Coriolis/centripetal, friction). Then
    P{Y_g} is filtered directly (exact), P{A_j(q) ddq_j} by :meth:`apply_product`
    (exact when A_j(q(t)) is a polynomial of degree <= ``n_star`` over the window; no
    numerical differentiation) and P{Y_v} by composition (eq. 21) at the PA estimates.
    Costs n + 3 regressor evaluations per sample (whole array in memory: for moderate
    recordings; the streaming pipeline uses the composition rule throughout).

    Parameters
    ----------
    model : RobotModel
        Rigid model.
    q : ndarray (M, n)
        Measured positions, uniformly sampled at ``bank.fs``.
    bank : PolynomialApproximation
    n_star : int
        N* of eq. (22).

    Returns
    -------
    Y : ndarray (M - L, n, P)
        Filtered regressor, pairs with ``bank.apply(tau, 0)``.
    dq_hat : ndarray (M - L, n)
        PA velocity (for the velocity-threshold mask).

    Raises
    ------
    DataError
        Elastic model or too few samples.
    """
    if model.config.elastic:
        raise DataError("pa_product_regressor supports rigid models only")
    q = np.asarray(q, dtype=float)
    zeros = np.zeros_like(q)
    Yg = regressor(model, q, zeros, zeros)
    out = bank.apply(Yg, 0)
    for j in range(model.n):
        e = zeros.copy()
        e[:, j] = 1.0
        A = regressor(model, q, zeros, e) - Yg
        out += bank.apply_product(A, np.repeat(np.repeat(q[:, j, None, None], A.shape[1], 1),
                                               A.shape[2], 2), k=2, n_star=n_star)
    qh, dqh = bank.apply(q, 0), bank.apply(q, 1)
    zh = np.zeros_like(qh)
    out += regressor(model, qh, dqh, zh) - regressor(model, qh, zh, zh)
    return out, dqh


__all__ = ["iter_dataset_chunks", "iter_npz_chunks", "iter_npy_dir_chunks", "iter_bag_chunks",
           "iter_chunks", "NpyDirWriter", "FIRStates", "make_bank", "accumulate",
           "identify_streaming", "prediction_rms", "pa_product_regressor"]
