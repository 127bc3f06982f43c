"""Automatic settings: ``auto`` values of the identification settings measured on the
recordings (a summary of each recording's raw data) before anything is filtered."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robot_identification.diagnostics import recording_summary
from robot_identification.errors import DataError
from robot_identification.identification._settings import ResolvedSettings
from robot_identification.identification._sources import as_recording, concat_chunks, model_key
from robot_identification.signal import noise_std, signal_band


#: The automatic cut-off is at least this factor x the excitation band (99 % of the motion's
#: power).
CUTOFF_BAND_FACTOR = 5.0
#: Automatic stop velocity = this fraction of the velocity RMS (per joint).
STOP_VELOCITY_FRACTION = 0.02
#: Automatic Coulomb deadband = this factor x the velocity noise std.
DEADBAND_NOISE_FACTOR = 3.0
#: Samples at the start of a streamed recording summarised for the diagnostics and the
#: automatic settings (an in-memory dataset is summarised whole): 50 s at 1 kHz, several
#: periods of an excitation. Its first chunks are read (:meth:`Recording.peek`, 200 000
#: samples each), only these samples summarised (issue #29: the whole first chunk of the
#: 20-minute 1 kHz elastic PUMA recording cost 1.4 s of the command's ~15 s CPU, these
#: 0.36 s; its resolved settings the same).
SUMMARY_SAMPLES = 50_000


def needs_resolving(settings) -> bool:
    """Whether ``settings`` still hold ``'auto'`` values (see :func:`resolve_settings`)."""
    return (settings.cutoff_hz == "auto" or isinstance(settings.friction_deadband, str)
            or isinstance(settings.stop_velocity, str))


def resolve_settings(model, settings, recordings):
    """Settings with ``'auto'`` replaced by values measured on the recordings.

    - ``cutoff_hz: auto`` -> the signal band of the noisiest recording
      (:func:`~robot_identification.signal.signal_band`: where the spectrum of the
      signals the regressor differentiates falls to 10 x their white-noise floor), but at
      least :data:`CUTOFF_BAND_FACTOR` x the widest excitation band
      (:func:`~robot_identification.signal.excitation_band`, 99 % of the motion's
      spectral power) and 0.5 Hz, at most 0.2 x the lowest sampling rate (static
      recordings only: 0.05 x the sampling rate). Low noise: a high cut-off that keeps the
      fast torque transients of friction (stick-slip, reversals) which a filter near the
      excitation band smears into the whole fit; noisy data: the excitation band;
    - ``friction_deadband: auto`` -> per joint :data:`DEADBAND_NOISE_FACTOR` x the std of
      the velocity noise left after the low-pass filter: the raw noise std
      (:func:`~robot_identification.signal.noise_std`) x sqrt(2 f_c / f_s) for a
      measured velocity with noise of its own (white noise) or x (2 f_c / f_s)^1.5 for
      differentiated positions (noise spectrum ~ f^2), also where the recorded velocity
      is itself a derivative of the recorded positions
      (:func:`~robot_identification.signal.velocity_noise_from_positions`: with the
      white-noise share its deadband was f_s / (2 f_c) x too wide, e.g. 170 x at 3 Hz and
      1 kHz); median over recordings, at least 1e-6 rad/s and at most
      0.1 x the velocity RMS (the Coulomb term must stay distinguishable from viscous);
    - ``stop_velocity: auto`` -> per joint :data:`STOP_VELOCITY_FRACTION` x the velocity RMS
      (median over recordings), at least the deadband: below it the joint stops or sticks,
      its friction is anywhere in [-f_c, f_c] (see :class:`ReversalWindow`).

    Parameters
    ----------
    recordings : list of dict
        :func:`~robot_identification.diagnostics.recording_summary` per recording (a
        recording without a summary is left out).

    Returns
    -------
    ResolvedSettings

    Without any summary (recordings shorter than 20 samples) ``auto`` becomes no filter and
    no deadband; such data are refused by the pre-processing anyway.
    """
    s = settings or model.config.identification
    recordings = [r for r in recordings if r]
    if not needs_resolving(s):
        return ResolvedSettings.of(s)
    if not recordings:   # too short to measure anything: the filter refuses it later
        return ResolvedSettings.of(replace(
            s, cutoff_hz=None if s.cutoff_hz == "auto" else s.cutoff_hz,
            friction_deadband=0.0 if isinstance(s.friction_deadband, str)
            else s.friction_deadband,
            stop_velocity=0.0 if isinstance(s.stop_velocity, str) else s.stop_velocity))
    if s.cutoff_hz == "auto":
        s = replace(s, cutoff_hz=_auto_cutoff(recordings, "signal_hz"))
    if isinstance(s.friction_deadband, str):
        left = []
        for r in recordings:
            share = 1.0
            if s.cutoff_hz is not None:
                ratio = min(2.0 * s.cutoff_hz / r["sample_rate"], 1.0)
                white = r.get("velocity_noise_white", r["velocity_measured"])
                share = ratio ** np.where(white, 0.5, 1.5)
            left.append(share * r["velocity_noise"])
        dead = DEADBAND_NOISE_FACTOR * np.median(np.stack(left), axis=0)
        vrms = np.median(np.stack([r["velocity_rms"] for r in recordings]), axis=0)
        dead = np.clip(dead, 1e-6, np.maximum(0.1 * vrms, 1e-6))
        s = replace(s, friction_deadband=tuple(float(f"{v:.3g}") for v in dead))
    if isinstance(s.stop_velocity, str):
        vrms = np.median(np.stack([r["velocity_rms"] for r in recordings]), axis=0)
        stop = np.maximum(STOP_VELOCITY_FRACTION * vrms,
                          np.broadcast_to(s.friction_deadband, vrms.shape))
        s = replace(s, stop_velocity=tuple(float(f"{v:.3g}") for v in stop))
    return ResolvedSettings.of(s)


def _auto_cutoff(recordings, key):
    """``cutoff_hz: auto`` (:func:`resolve_settings`) from the summaries' signal band
    ``key``."""
    fs = min(r["sample_rate"] for r in recordings)
    band = max(r["band_hz"] for r in recordings)
    signal = min(r.get(key, r.get("signal_hz", 0.0)) for r in recordings)
    cut = 0.05 * fs if band <= 0 else min(max(CUTOFF_BAND_FACTOR * band, signal, 0.5), 0.2 * fs)
    return float(f"{cut:.3g}")


def positions_cutoff(model, settings, resolved, recordings, datasets):
    """The cut-off [Hz] that ``cutoff_hz: auto`` gives for the identification recordings'
    positions alone, where it is below the resolved one (measured velocities, whose noise is
    not the positions' differentiated twice, let the cut-off rise), else None.

    Validation filters held-out data without measured velocities at this cut-off: their
    velocities and accelerations are differentiated from the positions, and at the cut-off
    of clean measured velocities they are mostly noise (an ``init`` UR5 identified from a
    CSV with velocities at 60 dB: 28.8 Hz instead of 3 Hz; every model's held-out error on
    a file of positions only, the URDF's included, read 1.06 instead of 0.025). Resolved on
    the identification data, never on held-out data.

    Parameters
    ----------
    model : RobotModel
    settings : IdentificationSettings
        As configured (``cutoff_hz`` ``auto`` or not).
    resolved : ResolvedSettings
    recordings : list of dict
        :func:`~robot_identification.diagnostics.recording_summary` per recording.
    datasets : list of Dataset or None
        The summarised part of each recording (:func:`_head`); None (e.g. on a Dask
        cluster, whose workers hold the recordings): not resolved.

    Returns
    -------
    float or None
    """
    if (settings.cutoff_hz != "auto" or resolved.cutoff_hz is None or not datasets
            or len(datasets) != len(recordings)):
        return None
    sums = []
    for r, ds in zip(recordings, datasets):
        if not r or ds is None:
            continue
        if ds.dq is None and not (model.config.elastic and ds.dtheta is not None):
            sums.append(r)          # positions only: its signal band is the positions'
            continue
        positions = [ds.q] + ([ds.theta] if model.config.elastic else [])
        sums.append(dict(r, signal_hz_positions=min(
            signal_band(ds.t, x, noise_std(x), r["band_hz"]) for x in positions)))
    if not sums or all("signal_hz_positions" not in r for r in sums):
        return None
    cut = _auto_cutoff(sums, "signal_hz_positions")
    return cut if cut < resolved.cutoff_hz else None


def _head(rec):
    """The part of a recording that is summarised: all of an in-memory dataset, the first
    :data:`SUMMARY_SAMPLES` samples of a streamed one."""
    if rec.dataset is not None:
        return rec.dataset
    head = rec.peek(SUMMARY_SAMPLES)
    if not head:
        raise DataError(f"recording '{rec.name}' holds no samples")
    return concat_chunks(head)


def _summary(model, rec, ds):
    """Summary of ``ds`` = ``_head(rec)`` (of a streamed recording its first
    :data:`SUMMARY_SAMPLES` samples), computed once per recording and model."""
    cached = rec.summary_cache
    if cached is not None and (cached[0] is model or (isinstance(cached[0], tuple)
                                                      and cached[0] == model_key(model))):
        return cached[1]
    if rec.dataset is None and ds.t.shape[0] > SUMMARY_SAMPLES:
        ds = ds.slice(slice(0, SUMMARY_SAMPLES))
    summary = None
    if ds.t.shape[0] >= 20:
        try:
            summary = recording_summary(model, ds, label=rec.name)
        except DataError:    # e.g. NaN: the pre-processing names the chunk and refuses it
            summary = None
    rec.summary_cache = (model, summary)
    return summary


def recording_summaries(model, recordings):
    """:func:`~robot_identification.diagnostics.recording_summary` of each recording (an
    in-memory dataset whole, a streamed recording its first :data:`SUMMARY_SAMPLES`
    samples): what :func:`resolve_settings` needs before the recordings are mapped to
    normal equations in parallel."""
    out = []
    for r in recordings:
        rec = as_recording(r, model)
        out.append(_summary(model, rec, _head(rec)))
    return out
