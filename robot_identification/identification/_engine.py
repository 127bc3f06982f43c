"""The identification engine: recordings -> pre-processing -> regressor -> sample selection ->
normal equations (per recording, summed) -> estimators -> IdentificationResult.

:func:`recording_normal_equations` holds the one normal-equation accumulation loop of the
package; :func:`solve` turns summed equations into a result; :func:`identify` does both for
any number of recordings. Normal equations are additive, so recordings can be mapped to
equations in parallel (e.g. on Dask workers) and summed before :func:`solve`.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import scipy.signal

from robot_identification._dask import check_workers, dask_client, map_list, map_sum
from robot_identification._yaml import read_yaml_file
from robot_identification.choices import AUTO_ESTIMATOR
from robot_identification.data import Dataset
from robot_identification.diagnostics import (
    STILL_VELOCITY, Diagnostic, base_scales, check_truth_coverage, collect_diagnostics,
    one_way_hint, parameter_trust)
from robot_identification.errors import (
    ConfigError, DataError, ExcitationError, IdentificationError)
from robot_identification.estimation import wls
from robot_identification.identifiability import base_parameters, check_excitation
from robot_identification.identification._auto import (
    _head, _summary, needs_resolving, positions_cutoff, recording_summaries, resolve_settings)
from robot_identification.identification._equations import RecordingEquations, StopDifference
from robot_identification.identification._estimators import ESTIMATORS, EstimationContext
from robot_identification.identification._friction import resolve_presliding
from robot_identification.identification._preprocessing import make_preprocessor, sample_rate
from robot_identification.identification._prior_weight import (
    ESTIMATE_SIGN_CODES, least_squares_check, record_estimator_selection,
    record_least_squares_check, record_prior_weight, resolve_estimator, wls_sign_note)
from robot_identification.identification._result import IdentificationResult
from robot_identification.identification._stop_selection import (
    SELECTION_DECIMATE, select_stop_velocity, stop_selection_diagnostics, stop_velocity_candidates)
from robot_identification.identification._sensors import (
    STIFFNESS_BAND_FACTOR, STIFFNESS_ITERATIONS, STIFFNESS_TOLERANCE, GearColumns, SpringSums,
    StiffnessColumns, StiffnessEstimate, common_sensor_set, coupled_joints, gear_ratio_check,
    gear_ratio_diagnostics, link_positions_from_joint_torque, merge_estimate,
    nominal_compliance, sensor_base, sensor_diagnostics, sensor_set, spring_indices,
    stiffness_names)
from robot_identification.identification._sources import Recording, as_recording
from robot_identification.model import current_parameter_names
from robot_identification.progress import bar
from robot_identification.regressor import (
    CHUNK, regressor, regressor_structure, torque_vector)


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


def match_true_parameters(model, true_parameters):
    """The model's standard parameters from a dataset's true parameters ``{name: value}``.

    Old drive keys are renamed first (``joint1.fv`` -> ``joint1.viscous``,
    :func:`~robot_identification.model.current_parameter_names`).

    Returns
    -------
    pi : ndarray (P,)
        In :attr:`RobotModel.parameter_names` order; NaN where the mapping has no finite
        number for the parameter (its truth is unknown, never taken as 0).
    missing : list of str
        Model parameters without a true value.
    extra : dict
        Entries that name no parameter of the model (another robot or drive
        configuration), ``{name: value}``.
    """
    truth = current_parameter_names(dict(true_parameters or {}))
    pi = np.full(model.n_parameters, np.nan)
    for i, name in enumerate(model.parameter_names):
        try:
            pi[i] = float(truth[name])
        except (KeyError, TypeError, ValueError):
            continue
    pi[~np.isfinite(pi)] = np.nan
    known = set(model.parameter_names)
    missing = [nm for nm, v in zip(model.parameter_names, pi) if np.isnan(v)]
    extra = {k: v for k, v in truth.items() if k not in known}
    return pi, missing, extra


def true_base_values(model, base, true_parameters):
    """Base parameters (p,) of a dataset's true standard parameters ``{name: value}``.

    A base parameter whose expression involves a standard parameter without a true value
    (:func:`match_true_parameters`) is NaN: unknown, left out of the normalised mean error
    and the truth checks (a missing value is never taken as 0). Returns None without true
    parameters or when no base parameter has a known truth.
    """
    if not true_parameters:
        return None
    pi, _, _ = match_true_parameters(model, true_parameters)
    return _base_truth(base, pi)


def _base_truth(base, pi):
    unknown = np.isnan(pi)
    G = np.asarray(base.grouping, dtype=float)
    values = G[:, ~unknown] @ pi[~unknown]
    values[(G[:, unknown] != 0).any(axis=1)] = np.nan
    return None if np.isnan(values).all() else values


def truth_diagnostics(model, base, true_parameters):
    """``truth_incomplete`` diagnostics of a dataset's true parameters (empty when they
    are absent or match the model's standard parameters one to one); see
    :func:`~robot_identification.diagnostics.check_truth_coverage`."""
    if not true_parameters:
        return []
    pi, missing, extra = match_true_parameters(model, true_parameters)
    values = _base_truth(base, pi)
    unknown = list(base.names) if values is None else [
        nm for nm, v in zip(base.names, values) if np.isnan(v)]
    return check_truth_coverage(missing, extra, unknown, len(base))


#: Friction rows are dropped until the filtered Coulomb step of a reversal or a stop has
#: settled to this fraction of the step: 0.6 / f_c (a longer window lowers the bias on
#: noise-free data but drops most rows of slow motion at a low cut-off; docs/diagnostics.md).
SETTLE_TOLERANCE = 0.05


def reversal_window(fs, cutoff_hz, order, tolerance=SETTLE_TOLERANCE):
    """Samples on each side of a torque step that the zero-phase Butterworth filter leaves
    unsettled: the largest |t| where the forward-backward (``sosfiltfilt``) step response
    differs from the step by more than ``tolerance`` x its height.

    About 0.6 / f_c for orders 4-5 at 5 %, 1.0 / f_c at 2 %, 1.2 / f_c at 1 %.

    Parameters
    ----------
    fs, cutoff_hz : float
        [Hz].
    order : int
    tolerance : float
        Fraction of the step.

    Returns
    -------
    int
    """
    return _settling(fs, cutoff_hz, order, tolerance, impulse=False)


def stop_window(fs, cutoff_hz, order, tolerance=SETTLE_TOLERANCE):
    """Samples on each side of a sudden stop (a velocity step: a brake that holds a moving
    arm at once) that the zero-phase Butterworth filter leaves unsettled in the
    acceleration: the velocity step is an acceleration impulse, and the filtered
    acceleration is that impulse's forward-backward (``sosfiltfilt``) response; the window
    is the largest |t| where that response exceeds ``tolerance`` x its peak. About twice
    :func:`reversal_window` (17 against 8 samples at 250 Hz, 65 against 32 at 1 kHz, cut-off
    20 Hz, order 5, 5 %): the step window left the stops of a braked hardware robot in the
    data (docs/ros.md, "Braked periods in the bag").

    Parameters and returns as :func:`reversal_window`.
    """
    return _settling(fs, cutoff_hz, order, tolerance, impulse=True)


@functools.lru_cache(maxsize=64)
def _settling(fs, cutoff_hz, order, tolerance, impulse):
    """:func:`reversal_window` (``impulse`` False) or :func:`stop_window` (True): a function
    of its numbers alone, computed once per process for each (issue #29: 12 filter designs
    and forward-backward passes per identification of the two real UR10e runs)."""
    half = int(np.ceil(20.0 * fs / cutoff_hz))
    x = np.zeros(2 * half)
    if impulse:
        x[half] = 1.0
    else:
        x[half:] = 1.0
    sos = scipy.signal.butter(order, cutoff_hz, fs=fs, output="sos")
    y = scipy.signal.sosfiltfilt(sos, x)
    if impulse:
        e = np.abs(y) / np.abs(y).max()
        e[half] = 0.0               # the impulse's own sample
    else:
        e = np.abs(y - x)
    bad = np.flatnonzero(e > tolerance)
    return int(max(half - bad.min(), bad.max() - half + 1)) if bad.size else 0


def reversal_window_samples(settings, fs):
    """Samples on each side of a reversal or stop whose friction rows are dropped with a
    zero-phase Butterworth filter: ``settings.reversal_window`` [s] x ``fs`` [Hz] rounded,
    or with ``auto`` the filter's settling time (:func:`reversal_window`).

    Raises
    ------
    ConfigError
        ``reversal_window`` neither ``auto`` nor a finite number >= 0.
    """
    w = getattr(settings, "reversal_window", "auto")
    if isinstance(w, str):
        if w != "auto":
            raise ConfigError(f"reversal_window must be 'auto' or a number of seconds >= 0, "
                              f"got {w!r}")
        return reversal_window(fs, settings.cutoff_hz, settings.filter_order)
    if not (np.isfinite(w) and w >= 0):
        raise ConfigError(f"reversal_window must be 'auto' or a number of seconds >= 0, "
                          f"got {w!r}")
    return int(round(float(w) * fs))


def fir_reversal_window(bank, decimate=1):
    """Filtered samples around a torque step that a causal FIR bank (polynomial
    approximation, Lomakin & Deutscher eq. 28-37, or Savitzky-Golay) mixes into its
    estimates: the output at t - t_d projects the raw samples of [t - T, t], so a Coulomb step
    at t_r reaches the outputs from t_r - t_d to t_r + T - t_d, while the filtered velocity
    changes sign near t_r: a sample is marked by the flips of the T - t_d before and the t_d
    after it (one window T in all).

    Parameters
    ----------
    bank : PolynomialApproximation or SavitzkyGolay
        ``L`` (window [samples]), ``delay`` t_d [s], ``fs`` [Hz].
    decimate : int
        Every ``decimate``-th filtered sample is kept.

    Returns
    -------
    before, after : int
        Samples of the (decimated) output (``window`` and ``ahead`` of
        :class:`ReversalWindow`).
    """
    d = min(max(int(round(float(bank.delay) * float(bank.fs))), 0), int(bank.L))
    dec = int(decimate)
    return int(np.ceil((int(bank.L) - d) / dec)), int(np.ceil(d / dec))


class ReversalWindow:
    """Streamed marking of the samples within ``window`` samples of a velocity sign change
    or a stop (:func:`robot_identification.signal.near_reversal` over the whole
    recording, with the same zero padding at its ends), so that chunking does not change
    which rows are dropped. States are held back until ``window`` later samples have
    arrived.

    The zero-phase filter spreads the Coulomb step of the measured torque over
    :func:`reversal_window` samples on each side of a reversal while sign(v) of the filtered
    velocity stays a step. Where |v| < ``stop`` the joint stops or sticks (stick-slip of a
    slowly driven joint, a hold): its friction is anywhere in [-f_c, f_c], not f_c sign(v),
    and the filter spreads the stick-slip torque transients just as far. With
    ``drop_reversals`` those friction rows are not used. A causal FIR bank (polynomial
    approximation, Savitzky-Golay) mixes the step into the estimates of one window length,
    t_d before and T - t_d after it (:func:`fir_reversal_window`, ``ahead``).

    Parameters
    ----------
    model : RobotModel
    window : int
        Samples on each side (with ``ahead``: a sample is marked by the flips of the
        ``window`` samples before it).
    stop : float or array_like (n,)
        Stop velocity [rad/s] (link velocity, motor velocity for elastic joints); 0: sign
        changes only.
    ahead : int, optional
        A sample is marked by the flips of the ``ahead`` samples after it (default
        ``window``; a causal FIR bank smears a step asymmetrically,
        :func:`fir_reversal_window`).
    more_stops : sequence of array_like (n,), optional
        Further stop velocities [rad/s] marked in the same pass: the emitted states then
        also hold ``near_stops`` (N, len(more_stops), n), their marks.
    """

    def __init__(self, model, window, stop=0.0, ahead=None, more_stops=()):
        self.key = "dtheta" if model.config.elastic else "dq"
        self.w = int(window)
        self.ahead = self.w if ahead is None else int(ahead)
        self.stop = np.broadcast_to(np.asarray(stop, dtype=float), (model.n,))
        self.more = len(more_stops)
        # the stop velocities (n,), or with more_stops (1 + len(more_stops), n)
        self._stops = self.stop if not self.more else np.stack(
            [self.stop] + [np.broadcast_to(np.asarray(v, dtype=float), (model.n,))
                           for v in more_stops])
        shape = (0,) + self._stops.shape
        self.pending = None          # states not yet emitted
        self.flips = np.zeros(shape, dtype=np.uint8)   # flips of pending samples
        self.hist = np.zeros(shape, dtype=np.uint8)    # flips of the last w emitted
        self.last_v = None

    def _flips(self, v):
        if v.shape[0] == 0:          # an empty push (a subsample of a short chunk)
            return np.zeros((0,) + self._stops.shape, dtype=np.uint8)
        prev = v[:1] if self.last_v is None else self.last_v
        f = (np.signbit(v) != np.signbit(np.concatenate([prev, v[:-1]])))
        if self.more:
            f = f[:, None, :] | (np.abs(v)[:, None, :] < self._stops)
        else:
            f |= np.abs(v) < self.stop
        self.last_v = v[-1:]
        return f.astype(np.uint8)

    def _emit(self, k):
        F = np.concatenate([self.hist, self.flips])
        L = F.shape[0]
        c = np.zeros((L + 1,) + F.shape[1:], dtype=np.int32)   # counts < 2^31: half the
        np.cumsum(F, axis=0, dtype=np.int32, out=c[1:])        # memory of int64 (#29)
        h = len(self.hist)        # flips in [g - w, g + ahead] of g = h .. h + k - 1, zero padded
        lo, hi = h - self.w, h + self.ahead + 1
        if lo >= 0 and hi + k - 1 <= L:           # within F: slices, not gathers
            near = c[hi:hi + k] > c[lo:lo + k]
        else:
            g = h + np.arange(k)
            near = c[np.minimum(g + self.ahead + 1, L)] > c[np.maximum(g - self.w, 0)]
        out = {key: v[:k] for key, v in self.pending.items()}
        if self.more:
            out["near_reversal"], out["near_stops"] = near[:, 0], near[:, 1:]
        else:
            out["near_reversal"] = near
        emitted = self.flips[:k]
        self.hist = np.concatenate([self.hist, emitted])[-self.w:] if self.w else self.hist
        self.pending = {key: v[k:] for key, v in self.pending.items()}
        self.flips = self.flips[k:]
        return out

    def push(self, states):
        f = self._flips(states[self.key])
        if self.pending is None:
            self.pending = dict(states)
        else:
            self.pending = {k: np.concatenate([self.pending[k], states[k]])
                            for k in self.pending}
        self.flips = np.concatenate([self.flips, f])
        k = self.flips.shape[0] - self.ahead
        return self._emit(k) if k > 0 else None

    def finish(self):
        if self.pending is None or self.flips.shape[0] == 0:
            return None
        return self._emit(self.flips.shape[0])


#: A sample whose every joint's measured effort is exactly 0.0 counts as "drives off / braked"
#: when some joint moves faster than this [rad/s] (measured velocity, else the backward
#: difference of the positions), or, at rest, when the nominal model needs more than
#: ``DRIVES_OFF_GRAVITY`` [N*m] on some joint to hold the arm against gravity (a brake holds
#: it, not the drives); an arm at rest with zero effort that needs none (a horizontal arm, a
#: gravity-free simulation) is left alone. docs/diagnostics.md, ``drives_off_rows``.
DRIVES_OFF_REST_VELOCITY = 1e-3
DRIVES_OFF_GRAVITY = 1e-6
#: Share of the samples above which the drives-off exclusion is an error, not a warning.
DRIVES_OFF_ERROR_SHARE = 0.95


class DrivesOff:
    """Streamed marking of the filtered samples near "drives off / braked" raw samples:
    every joint's measured effort exactly 0.0 while the arm moves, or at rest where the
    nominal model needs a torque to hold it against gravity (a braked hardware robot - the
    project's stand-in stops the arm at once - or a real arm whose drives are off: no motor
    torque while an unmodelled brake torque acts). The filtered torque near them is smeared,
    so a filtered sample is marked when a braked raw sample lies within ``before`` samples
    before or ``after`` samples after the raw sample it stands for (the filter's settling
    window: zero-phase Butterworth the longer of :func:`reversal_window`, the torque's step,
    and :func:`stop_window`, the acceleration impulse of an arm stopped at once; a causal FIR
    bank: its window, :func:`fir_reversal_window`).

    Raw chunks go to :meth:`scan` before the pre-processor sees them; the pre-processor
    emits a sample only after ``after`` later raw samples (its margin), so :meth:`mark` of
    its output needs nothing held back and chunking does not change the marks.

    Parameters
    ----------
    model : RobotModel
    fs : float
        Sample rate [Hz].
    before, after : int
        Raw samples on each side.
    delay : float
        Output time = raw time - ``delay`` [s] (a causal FIR bank's t_d; 0 zero-phase).
    enabled : bool
        False where the recording has no motor torque (its ``tau`` a placeholder:
        docs/elastic.md, sensor set b): nothing is marked.
    """

    def __init__(self, model, fs, before, after, delay=0.0, enabled=True):
        self.model = model
        self.enabled = bool(enabled)    # False: no motor torque recorded (elastic set b)
        self._pin = None
        self.names = list(model.joint_names)
        self.fs = float(fs)
        self.before, self.after = int(before), int(after)
        self.delay = float(delay)
        self.t0 = None
        self.n = 0                  # raw samples scanned
        self.starts, self.ends = [], []   # braked runs, raw indices (inclusive)
        self.last_q = None

    def scan(self, ds):
        """Find the braked raw samples of a chunk (a :class:`Dataset`)."""
        ds = ds.select_joints(self.names)
        m = ds.t.shape[0]
        if m == 0:
            return
        if self.t0 is None:
            self.t0 = float(ds.t[0])
        tau = None if ds.tau is None or not self.enabled else \
            np.asarray(ds.tau, dtype=float)
        q = np.asarray(ds.q, dtype=float)
        if ds.dq is not None:
            v = np.asarray(ds.dq, dtype=float)
        else:
            prev = q[:1] if self.last_q is None else self.last_q
            v = np.diff(q, axis=0, prepend=prev) * self.fs
        self.last_q = q[-1:]
        if tau is None:
            self.n += m
            return
        zero = (tau == 0.0).all(axis=1)
        off = zero & (np.abs(v) > DRIVES_OFF_REST_VELOCITY).any(axis=1)
        rest = np.flatnonzero(zero & ~off)
        if rest.size:               # at rest: braked where the arm needs a holding torque
            off[rest] = [np.abs(self._gravity(q[i])).max() > DRIVES_OFF_GRAVITY
                         for i in rest]
        if off.any():
            d = np.diff(np.concatenate([[0], off.astype(np.int8), [0]]))
            for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1):
                a, b = int(a) + self.n, int(b) + self.n
                if self.ends and self.ends[-1] + 1 == a:
                    self.ends[-1] = b
                else:
                    self.starts.append(a)
                    self.ends.append(b)
        self.n += m

    def _gravity(self, q):
        """Nominal gravity torques g(q) (n,) [N*m] (pinocchio ``computeGeneralizedGravity``)."""
        if self._pin is None:
            self._pin = (self.model.pin_model, self.model.pin_model.createData())
        pm, data = self._pin
        g = pin.computeGeneralizedGravity(pm, data, self.model.pin_configuration(q))
        return self.model.from_pin_v(g)

    def mark(self, t):
        """Marks (N,) bool of filtered samples at times ``t`` (N,) [s]."""
        if not self.starts:
            return np.zeros(t.shape[0], dtype=bool)
        g = np.rint((np.asarray(t, dtype=float) + self.delay - self.t0) * self.fs)
        g = g.astype(np.int64)
        k = np.searchsorted(np.asarray(self.starts), g + self.after, side="right") - 1
        ends = np.asarray(self.ends)
        return (k >= 0) & (ends[np.maximum(k, 0)] >= g - self.before)

    @property
    def margin_s(self):
        return max(self.before, self.after) / self.fs


def drives_off_diagnostic(neq, margin_s=None):
    """The ``drives_off_rows`` warning of equations with drives-off / braked samples left out
    (``neq.drives_off`` of ``neq.n_samples``; :class:`DrivesOff`), for the batch engine and
    the on-line identification alike.

    Parameters
    ----------
    neq : RecordingEquations or NormalEquations
    margin_s : float, optional
        [s] left out on either side; default ``neq.preprocessing['drives_off_margin_s']``.

    Returns
    -------
    Diagnostic or None
        None without such samples.

    Raises
    ------
    DataError
        :data:`DRIVES_OFF_ERROR_SHARE` or more of the samples left out.
    """
    if not neq.drives_off:
        return None
    share = neq.drives_off / max(int(neq.n_samples), 1)
    margin = ((neq.preprocessing or {}).get("drives_off_margin_s", 0.0) if margin_s is None
              else margin_s)
    what = (f"{neq.drives_off} of {int(neq.n_samples)} samples ({100 * share:.1f} %) "
            f"excluded as drives off / braked: every joint's measured effort exactly 0 "
            f"while the arm moves, with {margin:.3g} s either side (the filter's "
            f"settling)")
    if share >= DRIVES_OFF_ERROR_SHARE:
        raise DataError(f"{what}: too few samples with the drives on; record with "
                        f"the drives enabled (docs/diagnostics.md, drives_off_rows)")
    return Diagnostic("drives_off_rows", "warning", f"{what}; the efforts there are not the "
                      f"motor torque of the model", "drives_off")


def recording_normal_equations(model, recording, settings=None, *, base=None, block=CHUNK,
                               use_measured_derivatives=True, bank=None, robust=None,
                               columns=None, instruments=None, log=None, also=None,
                               stops=None):
    """Normal equations of ONE recording: chunks -> pre-processing -> regressor blocks ->
    sample selection -> per-row-group sums (the package's one accumulation loop).

    Parameters
    ----------
    model : RobotModel
    recording : Recording, Dataset, path or iterable of Dataset chunks
        See :class:`Recording`.
    settings : IdentificationSettings, optional
        Default: the robot config's ``identification`` section.
    base : BaseParameters, optional
        Default :func:`base_parameters` of the model.
    block : int
        Samples per regressor block (memory: block * rows * P doubles).
    use_measured_derivatives : bool
        ``butterworth``: filter measured velocities/accelerations instead of
        differentiating positions.
    bank : PolynomialApproximation or SavitzkyGolay, optional
        A ready FIR bank (overrides ``settings.preprocessing``).
    robust : HuberWeights, optional
        Row weights of an IRLS pass.
    columns : (int, callable), optional
        ``(p', f)``: equations over p' unknowns with per-block rows ``f(Y, W, y) -> (W', y')``
        from the standard regressor Y (N, rows, P), its base columns W and the measured
        left-hand side y (e.g. drive gains: currents as extra columns, payload torque on the
        right); ``f(Y, W, y, states)`` with the block's filtered states when ``f`` has a
        true attribute ``needs_states`` (the stiffness search of docs/elastic.md).
    instruments : ClosedLoopInstruments, optional
        An IV pass (estimator ``iv``): the equations are over ``[W, Z]`` (2p columns), Z
        the base regressor of the closed-loop simulation of the recording, so ``G[:, p:,
        :p]`` holds Z^T W and ``b[:, p:]`` Z^T y per row group.
    log : callable, optional
        Progress messages.
    also : list of (columns, IdentificationSettings), optional
        Further equations accumulated in the same pass over the recording (no second read,
        filtering or regressor pass): each with its ``columns`` (as above, or None) on every
        ``decimate``-th sample of its settings (a multiple of this pass's ``decimate``;
        ``velocity_threshold``, ``friction_deadband``, ``stop_velocity`` of its own), the same
        equations as a pass of their own; ``butterworth`` strategy only. E.g. the elastic
        arm's gear-ratio check on the whitened samples. An entry may be a triple
        ``(columns, settings, stops)``: ``stops`` as below, for that entry.
    stops : list of array_like (n,), optional
        Larger stop velocities [rad/s] (each at least ``settings.stop_velocity`` per joint:
        nested row sets): per each, the sums of the rows it drops that these equations keep
        (the joints' friction row groups, :class:`StopDifference`) are accumulated in the
        same pass, on the same regressor blocks, into ``stop_differences`` of the
        equations; :meth:`RecordingEquations.with_stop_choice` then gives the equations of
        any per-joint choice among them without a second pass (``stop_velocity: auto``,
        :func:`~robot_identification.identification._stop_selection.select_stop_velocity`).
        Not with ``robust`` or ``instruments``.

    Returns
    -------
    RecordingEquations, or EquationSet (with ``also``: the main equations, then one per entry)
        Sums over the base parameters (for a robust pass with ``scale_sums``) and the
        account of the recording: ``n_samples``, ``n_input``, ``true_parameters``,
        ``preprocessing`` (dict: the strategy), ``spring`` (joint torque sensors).

    Raises
    ------
    DataError
        Invalid data (NaN, missing joints, non-uniform sampling across chunks, too few
        samples for the filter).
    ValueError
        ``also`` or ``stops`` that the pass cannot give (see above).
    """
    s = settings or model.config.identification
    if stops and (robust is not None or instruments is not None):
        raise ValueError("stops: not with a robust or an instrumental-variables pass")
    rec = as_recording(recording, model)
    summary_ds = _head(rec)
    sensors = sensor_set(model, summary_ds)
    base = base or sensor_base(model, sensors)
    if sensors.joint_torque and set(base.independent) & set(spring_indices(model).ravel()):
        raise DataError(f"recording '{rec.name}' holds joint torques: its equations have no "
                        f"stiffness columns; use the base parameters of its sensor set "
                        f"(sensor_base)")
    neq = RecordingEquations(len(base) if columns is None else int(columns[0]),
                             model.rows_per_sample,
                             structure=None if columns is not None else
                             regressor_structure(model, base.independent))
    if sensors.joint_torque and sensors.link_positions:   # tau_J = K (theta - q) [+ D ...]
        neq.spring = SpringSums(model.n, spring_indices(model).shape[1])
    if instruments is not None:
        neq = RecordingEquations(2 * len(base), model.rows_per_sample)
        instruments = instruments.for_recording(
            model, summary_ds.metadata, rec.name,
            None if rec.dataset is None else float(rec.dataset.t[-1]))
    summary = _summary(model, rec, summary_ds) if robust is None or needs_resolving(s) \
        else None
    if needs_resolving(s):   # alone: measured on this recording (identify() resolves on all)
        s = resolve_settings(model, s, [summary])
    if robust is None and summary is not None:
        neq.recordings = [summary]
    neq.true_parameters = dict(summary_ds.true_parameters or {}) or None
    try:
        fs = sample_rate(summary_ds.t)
    except DataError as exc:
        where = (summary_ds.metadata or {}).get("file")
        if where:
            raise DataError(f"'{where}': {exc}") from None
        raise
    pre = make_preprocessor(model, s, fs, bank=bank,
                            use_measured_derivatives=use_measured_derivatives)
    # low-pass filter + Coulomb friction: mark (and drop) rows near velocity reversals and
    # stops (zero-phase Butterworth: its settling time; FIR banks: their window)
    rev = None
    if pre.name == "butterworth" and s.cutoff_hz is not None:
        window = reversal_window_samples(s, fs)
        rev = ReversalWindow(model, int(np.ceil(window / s.decimate)), s.stop_velocity,
                             more_stops=stops or ())
    elif pre.name != "butterworth":
        before, after = fir_reversal_window(pre.bank, s.decimate)
        rev = ReversalWindow(model, before, s.stop_velocity, ahead=after,
                             more_stops=stops or ())
    if stops:
        if rev is None:
            raise ValueError("stops: no reversal window (a filter without a cut-off)")
        neq.stop_differences = _stop_differences(model, base, columns, s, stops)
    drop = bool(s.drop_reversals) and "coulomb" in model.drive_parameter_keys()
    if pre.name == "butterworth":     # drives off / braked samples with the torque's smear
        # the torque steps (a step) and the arm's stop (an acceleration impulse)
        settle = 0 if s.cutoff_hz is None else max(
            reversal_window(fs, s.cutoff_hz, s.filter_order),
            stop_window(fs, s.cutoff_hz, s.filter_order))
        brakes = DrivesOff(model, fs, settle, settle, enabled=sensors.motor_torque)
    else:
        brakes = DrivesOff(model, fs, int(pre.bank.L), 0, delay=float(pre.bank.delay),
                           enabled=sensors.motor_torque)
    extra = []              # (equations, settings, every k-th emitted state, reversal window)
    if also and pre.name != "butterworth":
        raise ValueError("also: only with the butterworth strategy (its outputs are every "
                         "decimate-th sample from the first)")
    for cols, s2, *more in also or ():
        stops2 = more[0] if more else None
        k = int(s2.decimate) // int(s.decimate)
        if k < 1 or k * int(s.decimate) != int(s2.decimate):
            raise ValueError(f"also: decimate {s2.decimate} is no multiple of {s.decimate}")
        if pre.name == "butterworth" and s.cutoff_hz is not None:
            rows = reversal_window_samples(s, fs)
            rev2 = ReversalWindow(model, int(np.ceil(rows / s2.decimate)), s2.stop_velocity,
                                  more_stops=stops2 or ())
        elif pre.name != "butterworth":
            before, after = fir_reversal_window(pre.bank, s2.decimate)
            rev2 = ReversalWindow(model, before, s2.stop_velocity, ahead=after,
                                  more_stops=stops2 or ())
        else:
            rev2 = None
        if stops2 and rev2 is None:
            raise ValueError("also: stops without a reversal window (no cut-off)")
        eq = RecordingEquations(len(base) if cols is None else int(cols[0]),
                                model.rows_per_sample, structure=None if cols is not None else
                                regressor_structure(model, base.independent))
        if stops2:
            eq.stop_differences = _stop_differences(model, base, cols, s2, stops2)
        extra.append((eq, s2, k, rev2, None if cols is None else cols[1]))
    emitted = [0]           # states emitted so far (every s.decimate-th sample)
    # entries on the base columns with this pass's friction deadband take their regressor
    # rows from this pass's blocks (the same samples: every k-th; issue #29): a Borrowed
    # queue each, fed block by block, so only a window's rows wait
    same = columns is None and instruments is None
    borrowed = [Borrowed(k, block) if same and f is None and
                str(s2.friction_deadband) == str(s.friction_deadband) else None
                for _, s2, k, _, f in extra]
    # regressor blocks of the same samples computed once, where several other entries share
    # them (kept for a whole chunk: with one such entry nothing is kept, issue #29)
    sharing = sum(f is None and b is None for (*_, f), b in zip(extra, borrowed)) > 1

    def take(states):
        if states is not None:
            n_out = states["t"].shape[0]
            if any(b is not None for b in borrowed):   # the samples' index in this pass
                states = dict(states, index=np.arange(emitted[0], emitted[0] + n_out))
            shared = {}
            for (eq, s2, k, rev2, f), b in zip(extra, borrowed):
                sub = {key: v[(-emitted[0]) % k::k] for key, v in states.items()}
                _take(sub, eq, s2, rev2, f, shared if f is None and sharing else None, b)
            emitted[0] += n_out
        else:
            shared = {}
            for (eq, s2, k, rev2, f), b in zip(extra, borrowed):
                _take(None, eq, s2, rev2, f, shared if f is None and sharing else None, b)
        _take(states, neq, s, rev, None if columns is None else columns[1],
              on_rows=feed if any(b is not None for b in borrowed) else None)
        if states is None:
            for (eq, s2, *_), b in zip(extra, borrowed):
                if b is not None and b.pending:      # not in this pass's rows (none expected)
                    for st in b.pending:
                        _accumulate(model, base, eq, st, s2, block, robust, drop, None,
                                    instruments=instruments, motor_rows=sensors.motor_torque,
                                    differences=eq.stop_differences)
                    b.pending = []

    def feed(index, W):         # a block of this pass's rows to the entries that borrow them
        for (eq, s2, *_), b in zip(extra, borrowed):
            if b is not None:
                b.feed(index, W, lambda st, rows, eq=eq, s2=s2: _accumulate(
                    model, base, eq, st, s2, block, robust, drop, None,
                    instruments=instruments, motor_rows=sensors.motor_torque,
                    differences=eq.stop_differences, rows=rows))

    def _take(states, eq, st, window, cols, shared=None, borrow=None, on_rows=None):
        if window is not None:
            states = window.push(states) if states is not None else window.finish()
        if states is not None and borrow is not None:
            if states["t"].shape[0]:
                borrow.pending.append(states)        # accumulated as this pass's rows come
        elif states is not None:
            _accumulate(model, base, eq, states, st, block, robust, drop, cols,
                        instruments=instruments, motor_rows=sensors.motor_torque,
                        shared=shared, differences=eq.stop_differences, on_rows=on_rows)

    try:
        with bar(desc="identify", unit="sample", unit_scale=True) as pbar:
            for ds in rec.chunks():
                neq.n_input += ds.t.shape[0]
                brakes.scan(ds)
                out = pre.push(ds)
                if out is not None:
                    take(dict(out[0], t=out[1], drives_off=brakes.mark(out[1])))
                    if log and neq.n_input > 20 * block:
                        log(f"{rec.name}: {neq.n_input} samples read, {neq.n_samples} used")
                pbar.update(ds.t.shape[0])
            out = pre.finish()
            if out is not None:
                take(dict(out[0], t=out[1], drives_off=brakes.mark(out[1])))
            if rev is not None or extra:
                take(None)
    except DataError as exc:        # name the recording (a chunk's fault: the clock, NaN)
        if rec.name in str(exc):
            raise
        raise type(exc)(f"recording '{rec.name}': {exc}") from None
    if neq.n_samples == 0:
        raise DataError(f"recording '{rec.name}': no complete filter window: the recording "
                        f"has {neq.n_input} samples, the {pre.name} filter needs "
                        f"{pre.min_samples}")
    neq.preprocessing = dict(pre.describe(), friction_deadband=[
        float(v) for v in np.broadcast_to(s.friction_deadband, (model.n,))])
    if neq.drives_off:
        neq.preprocessing.update(drives_off_margin_s=round(brakes.margin_s, 6))
    if rev is not None:
        neq.preprocessing.update(
            stop_velocity=[float(v) for v in rev.stop],
            reversal_window_s=round(max(rev.w, rev.ahead) * s.decimate / fs, 6))
    if also is None:
        return neq
    for eq, _, _, rev2, _ in extra:
        eq.n_input = neq.n_input
        eq.true_parameters = neq.true_parameters
        eq.preprocessing = dict(neq.preprocessing)
        if rev2 is not None:
            eq.preprocessing.update(stop_velocity=[float(v) for v in rev2.stop])
    return EquationSet([neq] + [eq for eq, *_ in extra])


def _stop_differences(model, base, columns, settings, stops):
    """Empty :class:`StopDifference` equations, one per stop velocity of ``stops`` (each at
    least ``settings.stop_velocity``, per joint), for equations over the base columns or
    ``columns``: one row group per joint (its friction rows: the last n row groups)."""
    own = np.broadcast_to(np.asarray(settings.stop_velocity, dtype=float), (model.n,))
    g0 = model.rows_per_sample - model.n
    structure = None if columns is not None else \
        np.asarray(regressor_structure(model, base.independent))[g0:]
    out = []
    for v in stops:
        v = np.broadcast_to(np.asarray(v, dtype=float), (model.n,))
        if np.any(v < own):
            raise ValueError(f"stops: {v.tolist()} below the stop velocity {own.tolist()} "
                             f"(the row sets must be nested)")
        out.append(StopDifference(len(base) if columns is None else int(columns[0]),
                                  model.n, structure=structure))
    return out


class Borrowed:
    """The base regressor rows of a pass, on every ``k``-th of its samples, for further
    equations of that pass (``also`` of :func:`recording_normal_equations`: the
    stop-velocity selection on every k-th sample) instead of a regressor of their own
    (issue #29: 0.3 M of the 1.5 M samples whose regressor the 1.2 M-sample elastic
    recording's pass computed). The entry's states wait in :attr:`pending` (its reversal
    window emits them later than the pass's) until :meth:`feed` has brought their rows: only
    about a block and a window of rows are held.

    Parameters
    ----------
    k : int
        The entry keeps the samples of the pass whose index (``states['index']``, from 0
        over the pass's emitted samples) is a multiple of k.
    block : int
        The entry's regressor blocks: each pending states' rows are handed on in whole
        blocks from their start (or all of them), the blocks a regressor of their own would
        have had, so the entry's sums are the same to the bit.
    """

    def __init__(self, k, block):
        self.k = int(k)
        self.block = int(block)
        self.pending = []           # the entry's emitted states (with 'index'), in order
        self._buf = None            # the pass's rows at multiples of k not yet used: [0, _n)
        self._index = None          # ... and their indices
        self._n = 0

    def _keep(self, index, W):
        """Append the rows ``W[i]`` of the block whose ``index[i]`` is a multiple of k."""
        sel = np.flatnonzero(index % self.k == 0)
        need = self._n + sel.size
        if sel.size == 0:
            return
        if self._buf is None or need > self._buf.shape[0] or \
                self._buf.shape[1:] != W.shape[1:]:
            buf = np.empty((max(need, 2 * self.block),) + W.shape[1:])
            index_buf = np.empty(buf.shape[0], dtype=np.int64)
            if self._n:
                buf[:self._n], index_buf[:self._n] = self._buf[:self._n], \
                    self._index[:self._n]
            self._buf, self._index = buf, index_buf
        # a copy (W's memory is reused); mode "clip" (the indices are valid): numpy buffers
        # ``out`` with "raise", 3x the cost
        np.take(W, sel, axis=0, out=self._buf[self._n:need], mode="clip")
        self._index[self._n:need] = index[sel]
        self._n = need

    def feed(self, index, W, accumulate):
        """Take the rows of a block of the pass (``index`` (M,), ``W`` (M, rows, p)) and
        call ``accumulate(states, rows)`` for the pending states they complete (in order;
        ``rows`` a view valid during the call, or None: rows missing, the callee computes
        them)."""
        self._keep(index, W)
        used = 0                                     # rows [0, used) consumed
        while self.pending and self._n:
            idx, rows = self._index[:self._n], self._buf[:self._n]
            st = self.pending[0]
            i = st["index"]
            n = int(np.searchsorted(i, idx[-1], side="right"))
            if n < len(i):
                n -= n % self.block         # whole blocks (the last one: all that is left)
            if n == 0:
                break
            part = st if n == len(i) else {key: v[:n] for key, v in st.items()}
            pos = np.searchsorted(idx, i[:n])
            ok = bool(np.all(pos < len(idx))) and np.array_equal(
                idx[np.minimum(pos, len(idx) - 1)], i[:n])
            if ok and pos[-1] - pos[0] == n - 1:
                accumulate(part, rows[pos[0]:pos[0] + n])
            else:
                accumulate(part, rows[pos] if ok else None)
            if ok:
                used = max(used, int(pos[-1]) + 1)
            if n < len(i):
                self.pending[0] = {key: v[n:] for key, v in st.items()}
                break
            self.pending.pop(0)
        if used:                                     # the rest to the front
            rest = self._n - used
            self._buf[:rest] = self._buf[used:self._n]
            self._index[:rest] = self._index[used:self._n]
            self._n = rest


class EquationSet(list):
    """Equations of one pass (:func:`recording_normal_equations` with ``also``): the main
    ones, then the further ones; added element by element (``+=``), so they sum over
    recordings like :class:`NormalEquations`."""

    def __iadd__(self, other):
        for mine, theirs in zip(self, other):
            mine += theirs
        return self


def accumulate_states(model, base, neq, states, settings, *, block=CHUNK, robust=None,
                      drop_reversals=False, columns=None, on_block=None):
    """Add filtered states to normal equations: regressor blocks -> base columns -> sample
    selection -> ``neq.add`` (the accumulation step of :func:`recording_normal_equations`,
    public for callers that get their states piece by piece, e.g. the on-line identifier).

    Parameters
    ----------
    states : mapping
        ``q, dq, ddq, tau`` (N, n) [+ ``theta, dtheta, ddtheta``; ``near_reversal``].
    settings : IdentificationSettings
        ``velocity_threshold`` and ``friction_deadband`` (numbers, not ``auto``) are used.
    on_block : callable, optional
        ``f(W, y, mask)`` after each block (e.g. a recursive estimator's update).
    """
    _accumulate(model, base, neq, states, settings, block, robust, drop_reversals, columns,
                on_block)


def _accumulate(model, base, neq, states, s, block, robust, drop_reversals=False,
                columns=None, on_block=None, instruments=None, motor_rows=True,
                shared=None, differences=None, rows=None, on_rows=None):
    """``shared``: a dict that keeps the base regressor blocks of these states for further
    calls on the same samples (keyed by their times, the block and the friction deadband;
    e.g. the stop-velocity candidates, which differ only in the rows they keep).
    ``differences``: :class:`StopDifference` equations, one per mark of the states'
    ``near_stops`` (:class:`ReversalWindow` with ``more_stops``), that get the rows kept
    here that the mark drops, from the same regressor blocks. ``rows``: the base regressor
    of these states (M, rows, p), computed elsewhere (:class:`Borrowed`); ``on_rows``:
    ``f(states['index'][block], W)`` with each block's base regressor W."""
    M = states["q"].shape[0]
    mask = row_mask(model, states, s.velocity_threshold or 0.0)
    if not motor_rows:              # no motor torque recorded (docs/elastic.md, set b)
        keep = np.ones((M, model.rows_per_sample), dtype=bool)
        keep[:, model.n:] = False
        mask = keep if mask is None else mask & keep
    if neq.spring is not None:
        neq.spring.add(states)
    off = states.get("drives_off")
    if off is not None and off.any():   # drives off / braked: no row of these samples
        neq.drives_off += int(off.sum())
        keep = np.repeat(~off[:, None], model.rows_per_sample, axis=1)
        mask = keep if mask is None else mask & keep
    near = states.get("near_reversal")
    if near is not None:
        v = states["dtheta" if model.config.elastic else "dq"]
        used = np.abs(v) >= s.velocity_threshold
        neq.reversal_counts += (int((near & used).sum()), int(used.sum()))
        if drop_reversals:
            keep = ~near
            if model.config.elastic:
                keep = np.concatenate([np.ones_like(keep), keep], axis=1)
            mask = keep if mask is None else mask & keep
    g0 = model.rows_per_sample - model.n        # the joints' friction row groups
    dmasks = []
    if differences:
        # the rows kept here that a larger stop velocity drops (its marks hold these)
        kept = np.ones((M, model.n), dtype=bool) if mask is None else mask[:, g0:]
        for i, d in enumerate(differences):
            marks = states["near_stops"][:, i]
            d.near_used += (marks & used).sum(axis=0) - (near & used).sum(axis=0)
            dmasks.append(kept & marks if drop_reversals else np.zeros_like(kept))
            d.n_samples += M
    elastic = model.config.elastic
    for i in range(0, M, block):
        sl = slice(i, min(i + block, M))
        extra = {k: states[k][sl] for k in ("theta", "dtheta", "ddtheta")} if elastic else {}
        tr = time.perf_counter()
        key = None if shared is None or columns is not None or instruments is not None else (
            float(states["t"][sl.start]), float(states["t"][sl.stop - 1]), sl.stop - sl.start,
            str(s.friction_deadband))
        if rows is not None:
            W = rows[sl]
        elif key is not None and key in shared:
            W = shared[key]
        elif columns is None and instruments is None:    # only the base columns are needed
            W = regressor(model, states["q"][sl], states["dq"][sl], states["ddq"][sl],
                          **extra, friction_deadband=s.friction_deadband,
                          columns=base.independent)
            if key is not None:
                shared[key] = W
        else:
            Y = regressor(model, states["q"][sl], states["dq"][sl], states["ddq"][sl],
                          **extra, friction_deadband=s.friction_deadband)
            W = base.project(Y)
        neq.t_regressor += time.perf_counter() - tr
        if on_rows is not None and columns is None and instruments is None:
            on_rows(states["index"][sl], W)
        tj = states.get("tau_joint")
        y = torque_vector(model, states["tau"][sl], None if tj is None else tj[sl])
        if columns is not None:
            if getattr(columns, "needs_states", False):
                W, y = columns(Y, W, y, {k: v[sl] for k, v in states.items()})
            else:
                W, y = columns(Y, W, y)
        if instruments is not None:       # IV pass: [W, Z], Z of the simulated closed loop
            Z = base.project(regressor(model, *instruments(states["t"][sl]),
                                       friction_deadband=s.friction_deadband))
            W = np.concatenate([W, Z], axis=-1)
        m = None if mask is None else mask[sl]
        w = None
        if robust is not None:
            w, psi2 = robust(W, y, m)
            neq.scale_sums += psi2
        neq.add(W, y, m, w)
        for d, dm in zip(differences or (), dmasks):
            d.add(W[:, g0:], y[:, g0:], dm[sl])
        if on_block is not None:
            on_block(W, y, m)
    neq.n_samples += M


def load_prior(model, prior):
    """Standard parameters (P,) of a prior: ``'nominal'`` (the robot config's), ``'none'``
    (None), or a YAML file with ``standard_parameters: {name: value}`` (top level, or under
    ``estimates: physical:`` of a results.yaml; old drive keys such as ``joint1.fv`` are
    renamed).

    Raises
    ------
    ConfigError
        Unknown file, not a mapping, or names missing / unknown.
    """
    if isinstance(prior, np.ndarray):      # before the string tests (array == str)
        return np.asarray(prior, dtype=float)
    if prior is None or prior == "none":
        return None
    if prior == "nominal":
        return model.nominal_parameters()
    path = Path(prior)
    doc = read_yaml_file(path, "prior file", ConfigError)
    values = None
    if isinstance(doc, dict):
        values = doc.get("standard_parameters")
        if values is None:
            values = ((doc.get("estimates") or {}).get("physical") or {}).get(
                "standard_parameters")
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: expected 'standard_parameters: {{name: value}}' (or a "
                          f"results.yaml with a physical estimate)")
    values = current_parameter_names(values)        # files of earlier versions: joint1.fv
    names = model.parameter_names
    missing = [n for n in names if n not in values]
    unknown = [n for n in values if n not in names]
    if missing or unknown:
        raise ConfigError(f"{path}: standard_parameters do not match robot "
                          f"'{model.config.name}' (missing {missing[:5]}, unknown "
                          f"{unknown[:5]})")
    try:
        return np.array([float(values[n]) for n in names])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: standard_parameters must be numbers ({exc})") from None


def _still_hint(model, neq) -> str:
    """The joints that stand still in every recording, with the recordings' files: "the data
    do not excite base parameter(s) [...]" alone named neither (a UR5 run of
    example-robot-data with shoulder_lift_joint held constant named eight parameters of
    upper_arm_link)."""
    recs = [r for r in neq.recordings or () if r.get("velocity_rms") is not None]
    if not recs:
        return ""
    rms = np.max([np.asarray(r["velocity_rms"], float) for r in recs], axis=0)
    still = [model.joint_names[k] for k in np.flatnonzero(rms < STILL_VELOCITY)]
    if not still:
        return ""
    files = ", ".join(f"'{r['source']}'" for r in recs if r.get("source"))
    return (f"; joint(s) {', '.join(still)} stand still (velocity RMS < {STILL_VELOCITY:g} "
            f"rad/s) in {files or 'the data'}")


#: Largest joint travel (share of the joint's limit range) in every recording below which the
#: arm hardly moved (:func:`_cutoff_hint`): an excitation moves its widest joint over a fair
#: part of its range (the starter excitations of example-robot-data's UR3, SO-100, Kinova,
#: Z1 and xArm7 and the shipped PUMA 560 and UR10e: 0.12-0.55; a 0.1 rad swing of a joint
#: limited to +-2 pi: 0.008), a saturated arm's chatter a fraction of a per mille
#: (test_robot_kinds_edge_cases, the millimetre URDF at 60 dB: 0.0006).
STILL_RANGE_SHARE = 0.005


def _cutoff_hint(neq) -> str:
    """Why data may look unexciting: a low-pass cut-off below the motion's band (the filter
    removed the motion; ``--cutoff 0.001`` read as "move those joints")."""
    cutoff = (neq.preprocessing or {}).get("cutoff_hz")
    bands = [r.get("band_hz") for r in neq.recordings if r.get("band_hz")]
    noise = [r for r in neq.recordings if r.get("band_hz") and r.get("sample_rate")
             and r["band_hz"] > 0.2 * r["sample_rate"]]
    if noise:          # a "band" up to near Nyquist is noise: the arm hardly moved
        return (f"; the recorded positions vary at up to {noise[0]['band_hz']:.3g} Hz of "
                f"{noise[0]['sample_rate']:.4g} Hz sampling, like noise, not an excitation: "
                f"does the robot move? (a simulated run warns when it cannot follow its "
                f"excitation)")
    # the band counts the motion above the positions' noise floor only (excitation_band),
    # so a saturated arm's chatter reads as a high band, not as noise: judge its travel
    shares = [np.asarray(r["range_share"], float) for r in neq.recordings
              if r.get("range_share") is not None]
    shares = [s[np.isfinite(s)] for s in shares]
    if shares and all(s.size for s in shares) and max(float(s.max()) for s in shares) \
            < STILL_RANGE_SHARE:
        top = max(float(s.max()) for s in shares)
        return (f"; no joint travels more than {100 * top:.2g} % of its range, like noise, "
                f"not an excitation: does the robot move? (a simulated run warns when it "
                f"cannot follow its excitation)")
    if isinstance(cutoff, (int, float)) and bands and cutoff < max(bands):
        return (f"; the filter cut-off {cutoff:g} Hz lies below the motion's band "
                f"({max(bands):.3g} Hz): the filter removes the motion, raise the cut-off")
    return ""


def _dropped_hint(exc, neq, settings) -> str:
    """Why friction parameters may look unexcited: most friction rows fell within the
    reversal / stop windows and were dropped. Noisy positions (example-robot-data's Kinova
    Jaco 2 with 40 dB noise on joints near 3.3 rad) give a velocity that crosses zero
    everywhere, and "use a richer excitation trajectory" alone points the wrong way."""
    near, rows = (int(x) for x in neq.reversal_counts)
    text = str(exc)
    if (not settings.drop_reversals or rows <= 0 or near < 0.5 * rows
            or not any(f".{k}'" in text for k in ("coulomb", "viscous", "stiction"))):
        return ""
    return (f"; {near} of {rows} friction rows ({100 * near / rows:.0f} %) lie at velocity "
            f"reversals or stops and were dropped (drop_reversals): a velocity that crosses "
            f"zero that often is noisy - check the position noise and the cut-off, or set "
            f"drop_reversals: false")


def solve(model, neq, settings=None, *, base=None, estimators=None, prior=None,
          reaccumulate=None, options=None, log=None, t_start=None,
          stiffness=None) -> IdentificationResult:
    """Estimates from summed normal equations.

    Parameters
    ----------
    model : RobotModel
    neq : RecordingEquations or NormalEquations
        Summed over the recordings (see :func:`recording_normal_equations`); plain sums
        (no account of recordings: no summaries, no truth) are taken as they are.
    settings : IdentificationSettings, optional
    base : BaseParameters, optional
    estimators : str or sequence of str, optional
        Names from :data:`~robot_identification.identification.ESTIMATORS`; default
        ``settings.estimators``. The first is the primary estimate.
    prior : str or ndarray, optional
        Default ``settings.prior`` (see :func:`load_prior`).
    reaccumulate : callable, optional
        ``f(robust=None, instruments=None) -> RecordingEquations``: the recordings' equations
        again with row weights (``irls``) or instruments (``iv``); :func:`identify`
        provides it.
    options : dict, optional
        Estimator options: ``bounds`` (lower, upper) on base parameters, ``theta0``,
        ``mrls`` (keyword arguments of :class:`MRLS`).
    log : callable, optional
    stiffness : StiffnessEstimate, optional
        Joint stiffness identified outside these equations (sensor set b,
        docs/elastic.md): appended to every estimate as base parameters of their own.

    Returns
    -------
    IdentificationResult
        ``estimates`` holds every estimate; an extra estimator that fails leaves a
        ``estimator_failed`` diagnostic instead.

    Raises
    ------
    DataError
        Too few usable equations.
    ExcitationError
        The data do not excite some base parameters (named).
    ConfigError
        Unknown estimator, ``auto`` (chosen on the recordings by :func:`identify`), or an
        estimator without what it needs (e.g. ``bounded`` without a prior).
    IdentificationError
        The primary estimator fails.
    """
    t0 = time.perf_counter() if t_start is None else t_start
    neq = RecordingEquations.of(neq)
    s = settings or model.config.identification
    base = base or base_parameters(model)
    names = s.estimators if estimators is None else (
        (estimators,) if isinstance(estimators, str) else tuple(dict.fromkeys(estimators)))
    if not names:
        raise ConfigError("no estimator given")
    if AUTO_ESTIMATOR in names:
        raise ConfigError(f"estimator '{AUTO_ESTIMATOR}' is chosen on the recordings by "
                          f"identify(); solve() needs named estimators ({list(ESTIMATORS)})")
    unknown = [e for e in names if e not in ESTIMATORS]
    if unknown:
        raise ConfigError(f"unknown estimator(s) {unknown}; choose from {list(ESTIMATORS)}")
    p = len(base)
    diagnostics = []
    if neq.drives_off:
        diagnostics.append(drives_off_diagnostic(neq))
    if neq.count.sum() <= p:
        near, rows = (int(x) for x in neq.reversal_counts)
        why = [f"velocity threshold {s.velocity_threshold} rad/s"]
        if near and s.drop_reversals:
            why.append(f"{near} of {rows} rows at velocity reversals or stops dropped")
        raise DataError(f"only {int(neq.count.sum())} usable equations for {p} base "
                        f"parameters ({'; '.join(why)}); "
                        + ("record longer or lower the threshold" if s.velocity_threshold
                           else "record longer; does the robot move? (a simulated run "
                                "warns when it cannot follow its excitation)"))
    prior_spec = s.prior if prior is None else prior
    ctx = EstimationContext(model=model, base=base, neq=neq, settings=s,
                            prior=load_prior(model, prior_spec), reaccumulate=reaccumulate,
                            options=dict(options or {}), log=log)
    if names[0] != "mrls":      # MRLS flags what the data do not excite instead
        try:
            check_excitation(neq.gram, base.names)
        except ExcitationError as exc:
            raise ExcitationError(f"{exc}{_still_hint(model, neq)}{_cutoff_hint(neq)}"
                                  f"{_dropped_hint(exc, neq, s)}"
                                  f"{one_way_hint(model.joint_names, neq.recordings)}") \
                from None
    estimates = {}
    for i, name in enumerate(names):
        try:
            estimates[name] = ESTIMATORS[name](ctx)
        except (IdentificationError, ConfigError) as exc:
            if i == 0:
                raise
            diagnostics.append(Diagnostic("estimator_failed", "warning",
                                          f"estimator '{name}' failed: {exc}", name))
    if stiffness is not None:     # K (and D) identified outside the equations: appended
        neq.base = base
        merged = None
        for name in list(estimates):
            merged, estimates[name] = merge_estimate(model, base, estimates[name], stiffness)
        base = merged
    true = true_base_values(model, base, neq.true_parameters)
    diagnostics += truth_diagnostics(model, base, neq.true_parameters)
    prior_label = prior_spec if isinstance(prior_spec, str) else "given"
    if true is not None and ctx.prior is not None and neq.true_parameters and any(
            e in estimates for e in ("mrls", "bounded", "physical")):
        truth = match_true_parameters(model, neq.true_parameters)[0]
        known = ~np.isnan(truth)
        if np.allclose(truth[known], np.asarray(ctx.prior)[known], rtol=1e-9, atol=1e-12):
            diagnostics.append(Diagnostic(
                "prior_is_truth", "warning",
                f"the prior ({prior_label}) equals the simulator's true parameters: "
                f"mrls/bounded/physical estimates are pulled towards the answer; use "
                f"--prior none or a perturbed prior file to judge them", "prior"))
    settings_out = {"estimator": names[0], "estimators": list(names),
                    "velocity_threshold": s.velocity_threshold, "prior": prior_label,
                    **(neq.preprocessing or {}),
                    "n_input": int(neq.n_input), "t_regressor": float(neq.t_regressor),
                    "reversal_fraction": round(int(neq.reversal_counts[0])
                                               / max(int(neq.reversal_counts[1]), 1), 4),
                    "drop_reversals": bool(s.drop_reversals)}
    for name, est in estimates.items():
        if name == names[0]:
            for k, v in est.details.items():
                if k in ("flags", "active_bounds"):
                    settings_out[k] = v
    result = IdentificationResult(
        robot=model.config.name, names=list(base.names), expressions=base.expressions(),
        estimate=estimates[names[0]], base=base, true_values=true,
        row_labels=row_labels(model), n_samples=int(neq.n_samples),
        n_used_rows=int(neq.count.sum()), elapsed=time.perf_counter() - t0,
        settings=settings_out, units=[model.layout.units[i] for i in base.independent],
        normal_equations=neq, estimates=estimates)
    result.diagnostics = (collect_diagnostics(model, result, neq.recordings) + diagnostics
                          + ctx.diagnostics)
    result.trusts = {name: _trust(model, base, est, ctx.prior)
                     for name, est in estimates.items()}
    return result


def _trust(model, base, estimate, prior):
    """Trust per base parameter of ``estimate`` (:func:`parameter_trust`), the prior's base
    parameters as the reference; [] where the base has columns the model's grouping lacks."""
    try:
        scales = base_scales(model, base)
        ref = None if prior is None else base.base_values(np.asarray(prior, dtype=float))
    except (ValueError, IndexError):
        return []
    if len(scales) != len(estimate.values):
        return []
    return parameter_trust(base.names, base.expressions(), estimate.values, estimate.std,
                           scales, ref)


def identify(model, recordings, settings=None, *, estimator=None, estimators=None, prior=None,
             base=None, block=CHUNK, use_measured_derivatives=True, bank=None, options=None,
             log=None, workers=1, scheduler=None, processes=True) -> IdentificationResult:
    """Identify the base parameters of ``model`` from one or more recordings: the one entry
    of the engine (CLI ``identify`` and ``identify-stream``, the identifier node, scripts).

    Parameters
    ----------
    model : RobotModel
    recordings : Recording, Dataset, path, or a list of them
    settings : IdentificationSettings, optional
        Default: the robot config's ``identification`` section.
    estimator : str, optional
        Primary estimator; overrides ``settings.estimator`` (the settings' extra estimators
        are still computed). ``auto`` (the default of the settings): ``wls`` or ``physical``,
        whichever predicts held-out identification data better, the other computed too
        (:func:`~robot_identification.identification.resolve_estimator`; results.yaml
        ``settings: estimator_selection``).
    estimators, prior, options :
        See :func:`solve` (``estimators`` overrides ``estimator`` and the settings; ``auto``
        only first).
    base, block, use_measured_derivatives, bank, log :
        See :func:`recording_normal_equations`.
    workers : int
        Dask workers: the equations of the recordings are computed on a local cluster of
        ``workers`` processes (``processes=False``: threads) and summed here in recording
        order, so the estimates are the same bit for bit as with ``workers=1`` (this
        process, no cluster).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://HOST:PORT``) instead of a local
        cluster; its workers must read the same files.

    Returns
    -------
    IdentificationResult
        With the prediction's Coulomb friction state resolved on the identification data
        (:func:`~robot_identification.identification.resolve_presliding`: an in-memory
        recording whole, a streamed one its first chunks, at least
        :data:`~robot_identification.identification.SUMMARY_SAMPLES` samples).

    Raises
    ------
    DataError, ExcitationError, ConfigError, IdentificationError
        See :func:`recording_normal_equations` and :func:`solve`; ConfigError also for bad
        ``workers``/``scheduler`` or an unreachable scheduler.
    """
    t0 = time.perf_counter()
    s = settings or model.config.identification
    if estimator is not None and estimators is None:
        s = replace(s, estimator=estimator)
    requested = s
    if isinstance(recordings, (Dataset, Recording, str, Path)):
        recordings = [recordings]
    recordings = [as_recording(r, model) for r in recordings]
    if not recordings:
        raise DataError("no dataset given")
    check_workers(workers, scheduler)
    if workers > 1 or scheduler is not None:
        streams = [r.name for r in recordings if r.single_use]
        if streams:
            raise ConfigError(f"recording(s) {streams} are iterators of chunks and cannot be "
                              f"sent to Dask workers; give datasets or files")
    with dask_client(workers, scheduler, processes) as client:
        # on a cluster every recording's task reads its own head, summary and selection
        # statistics; this process only reduces (the model is shipped to each worker once)
        shipped = model if client is None else client.scatter(model, broadcast=True)
        if client is None:
            heads = [_head(r) for r in recordings]
            sensors = common_sensor_set(model, heads, [r.name for r in recordings])
        else:
            infos = map_list(client, _recording_info, recordings, shipped)
            for r, (_, summary) in zip(recordings, infos):
                r.summary_cache = (model, summary)
            sensors = common_sensor_set(model, [i[0] for i in infos],
                                        [r.name for r in recordings])
        base = base or sensor_base(model, sensors)
        cutoff_positions = None
        if needs_resolving(s):
            configured = s
            s = resolve_settings(model, s, recording_summaries(model, recordings))
            cutoff_positions = positions_cutoff(
                model, configured, s, recording_summaries(model, recordings),
                heads if client is None else None)
        current = [recordings]

        def equations(robust=None, instruments=None, columns=None, settings=None, also=None,
                      stops=None):
            return map_sum(client, _recording_equations, current[0], shipped, settings or s,
                           base=base, block=block, bank=bank, robust=robust,
                           instruments=instruments, columns=columns, also=also, stops=stops,
                           use_measured_derivatives=use_measured_derivatives,
                           log=log if client is None else None)   # map, ordered sum
        stiffness = None
        stop_record = None
        auto_s = s            # the settings the prediction uses (automatic stop velocity)
        # the elastic arm's gear-ratio check: accumulated in the identification's pass
        gear = (model.config.elastic and sensors.motor_torque and coupled_joints(model))
        gear_eq = None
        if gear:
            whitened = _whitened(s, recording_summaries(model, current[0]))
            gear_also = [((len(base) + model.n, GearColumns(model)), whitened)]
        if sensors.joint_torque and not sensors.link_positions:
            search = _search_settings(s, recording_summaries(model, current[0]))
            stiffness = _stiffness_search(model, current, base, search, equations, log)
            neq = equations()
        else:
            # stop_velocity: auto: candidates accumulated in the same pass, one chosen
            stops = stop_velocity_candidates(model, requested, s)
            # each candidate's equations are the automatic one's less the rows it drops
            # (few rows, accumulated from the same regressor blocks: StopDifference): for
            # the selection on every SELECTION_DECIMATE-th sample, for the fit at full rate
            more = [c.stop_velocity for c in stops] or None
            extra = [(None, replace(s, decimate=int(s.decimate) * SELECTION_DECIMATE), more)
                     ] if stops else []
            if (gear and s.preprocessing == "butterworth"
                    and int(whitened.decimate) % int(s.decimate) == 0):
                cols, _ = gear_also[0]     # the gear check on the same rows as the fit
                out = equations(also=[(cols, whitened, more)] + extra, stops=more)
                neq, gear_eq, rest = out[0], out[1], list(out[2:])
            elif extra:
                out = equations(also=extra, stops=more)
                neq, rest = out[0], list(out[1:])
            else:
                neq, rest = equations(), []
            if rest:   # the fit's rows; the prediction keeps the automatic stop velocity
                rest = [rest[0].with_stop_choice(np.full(model.n, i))
                        for i in range(len(stops) + 1)]
                k, stop_record = select_stop_velocity(rest, [s] + stops)
                if k:                          # per joint: its chosen candidate
                    per_joint = stop_record["per_joint"]
                    s = replace(s, stop_velocity=tuple(
                        float(stop_record["candidates"][c][j])
                        for j, c in enumerate(per_joint)))
                    neq = neq.with_stop_choice(per_joint, s.stop_velocity)
                    if gear:                   # the gear check on the same rows as the fit
                        whitened = _whitened(s, recording_summaries(model, current[0]))
                        gear_also = [((len(base) + model.n, GearColumns(model)), whitened)]
                    if gear_eq is not None:
                        gear_eq = gear_eq.with_stop_choice(per_joint, s.stop_velocity)
                    neq.preprocessing = dict(neq.preprocessing, stop_velocity=[
                        float(v) for v in np.broadcast_to(auto_s.stop_velocity, (model.n,))],
                        fit_stop_velocity=[float(v) for v in np.broadcast_to(
                            s.stop_velocity, (model.n,))])
                neq.stop_differences = []
                if gear_eq is not None:
                    gear_eq.stop_differences = []
            if sensors.joint_torque:
                stiffness = _spring_estimate(model, neq.spring)

        wls_signs = []

        def screen():        # auto: the data's error diagnostics, from a WLS result
            first = solve(model, neq, s, base=base, estimators=("wls",), prior=prior,
                          options=options, stiffness=stiffness)
            errors = [d for d in first.diagnostics if d.severity == "error"]
            # an impossible sign of WLS's own estimate (a rotor inertia or a mass below 0)
            # is about that estimate, which the physically consistent one keeps >= 0: the
            # two are compared all the same, and the sign is said beside a physical choice
            # (a 2.5 s stanford_arm run, correct data: joint3.rotor_inertia 19.9 std below
            # 0 stopped identify, the physical estimate predicted held-out motions better)
            wls_signs[:] = [d for d in errors if d.code in ESTIMATE_SIGN_CODES]
            return [d.code for d in errors if d.code not in ESTIMATE_SIGN_CODES]
        names, weight, chosen, selection = resolve_estimator(
            model, current[0], neq, s, estimators, prior, base, log, load=load_prior,
            equations=recording_normal_equations, screen=screen)
        used = {**weight, **(options or {})}
        result = solve(model, neq, s, base=base, estimators=names, prior=prior,
                       reaccumulate=equations, options=used,
                       log=log, t_start=t0, stiffness=stiffness)
        if stop_record is not None:
            result.settings["stop_velocity_selection"] = stop_record
            result.diagnostics += stop_selection_diagnostics(stop_record, model.joint_names)
        if "physical" in result.estimates:      # the weight the physical estimate used
            result.settings["prior_weight"] = float(used["prior_weight"])
        if chosen is not None:
            result.settings["prior_weight_folds"] = (
                selection["fold_kind"] if selection is not None
                else "recordings" if len(recordings) > 1 else "halves")
            record_prior_weight(result, *chosen, warn=names[0] == "physical")
        if selection is not None:
            record_estimator_selection(result, selection)
            if names[0] == "physical":
                result.diagnostics += [wls_sign_note(d) for d in wls_signs]
        if chosen is None and "heldout_check" not in result.settings:
            # a least-squares primary: the same held-out comparison with the URDF
            check = least_squares_check(model, neq, s, names, base)
            if check is not None:
                record_least_squares_check(result, check)
        if cutoff_positions is not None:     # for held-out files without velocities
            result.settings["cutoff_hz_positions"] = cutoff_positions
        if model.config.elastic:
            result.settings["sensors"] = dict(sensors.to_dict(),
                                              description=sensors.describe())
            result.diagnostics += sensor_diagnostics(model, sensors, result, stiffness)
            if gear:
                if gear_eq is None and any(r.single_use for r in current[0]):
                    # not accumulated in the identification's pass; a second pass cannot read
                    # a recording that can be read only once
                    result.settings["gear_ratio_check"] = "not run: a recording read once"
                else:
                    if gear_eq is None:
                        gear_eq = equations(columns=gear_also[0][0], settings=whitened)
                    checks = gear_ratio_check(model, base, gear_eq)
                    result.settings["gear_ratio_check"] = checks
                    result.diagnostics += gear_ratio_diagnostics(checks, {
                        d.subject for d in result.diagnostics
                        if d.code == "deflection_below_noise"})
        if client is None:
            resolve_presliding(model, result, heads, auto_s, log=log)
        else:
            def mapper(fn, recs, model_, *args):
                return map_list(client, _on_head, recs, fn, shipped, *args)
            resolve_presliding(model, result, recordings, auto_s, log=log, mapper=mapper)
    return result


def _recording_info(recording, model):
    """(sensor set stand-in, summary) of a recording's head (a Dask map task): the head's
    signals as a dataset without samples, and its
    :func:`~robot_identification.diagnostics.recording_summary`."""
    head = _head(recording)
    empty = {k: None if getattr(head, k) is None else getattr(head, k)[:0]
             for k in ("q", "theta", "tau", "tau_joint")}
    return replace(head, t=head.t[:0], dq=None, ddq=None, dtheta=None, ddtheta=None,
                   **empty), _summary(model, recording, head)


def _on_head(recording, fn, model, *args):
    """``fn(model, head, *args)`` on a recording's head (a Dask map task)."""
    return fn(model, _head(recording), *args)


def _spring_estimate(model, spring):
    """:class:`StiffnessEstimate` of the spring equations (link encoders + joint torques)."""
    values, cov = spring.solve()
    keys = spring_indices(model)
    m = keys.shape[1]
    names = [model.parameter_names[i] for i in keys.ravel()]
    full = np.zeros((len(names), len(names)))
    for k in range(model.n):
        full[k * m:(k + 1) * m, k * m:(k + 1) * m] = cov[k]
    return StiffnessEstimate(names, values.ravel(), full, "spring", {})


def _whitened(settings, summaries):
    """``settings`` keeping every k-th filtered sample, k = fs / (2 f_c): neighbouring
    filtered samples carry the same noise, and standard deviations that decide a diagnostic
    must not assume independent rows."""
    fs = min((r["sample_rate"] for r in summaries if r), default=None)
    if fs is None or not settings.cutoff_hz:
        return settings
    # k rounded down, but not below an integer by a rounding error of the sample rate
    # (1 kHz measured as 999.99999999522 Hz on 200 000 stamps: k 24 for 25 at 20 Hz)
    k = int(np.floor(fs / (2.0 * settings.cutoff_hz) * (1.0 + 1e-9)))
    return replace(settings, decimate=max(int(settings.decimate), k))


def _search_settings(settings, summaries):
    """Settings of the stiffness search: the cut-off at most
    :data:`STIFFNESS_BAND_FACTOR` x the excitation band (the filtered joint torque is
    differentiated twice and its noise enters the regressor: a bias that grows with the
    cut-off cubed), every k-th filtered sample kept (:func:`_whitened`)."""
    summaries = [r for r in summaries if r]
    if not summaries:
        return settings
    band = max(r["band_hz"] for r in summaries)
    cut = settings.cutoff_hz
    if band > 0:
        cut = min(cut or np.inf, STIFFNESS_BAND_FACTOR * band)
    if cut is None or not np.isfinite(cut):
        return settings
    return _whitened(replace(settings, cutoff_hz=float(f"{cut:.3g}")), summaries)


def _stiffness_search(model, current, base, settings, equations, log=None):
    """Joint stiffness of an arm without link encoders (sensor set b): Gauss-Newton on the
    separable least-squares problem min over (beta, c) of the weighted residual of the
    equations with link positions q = theta - c tau_J (c = 1 / K), one pass over the
    recordings per iteration (:class:`StiffnessColumns`); ``current[0]`` is left holding
    the recordings at the final compliance (for estimators that read them again).

    Returns
    -------
    StiffnessEstimate
        ``method='link_dynamics'``; covariance of K from the Gauss-Newton system
        (K = 1 / c: cov_K = K^2 cov_c K^2), details: iterations, converged, the search's
        cut-off and decimation; ``current[0]`` holds the recordings at the final
        compliance.

    Raises
    ------
    DataError
        A recording that can be read only once (the search reads it several times).
    """
    once = [r.name for r in current[0] if r.single_use]
    if once:
        raise DataError(f"recording(s) {once} can be read only once, but the joint stiffness "
                        f"of an arm without link encoders is searched over several passes "
                        f"(docs/elastic.md): give datasets or files")
    raw = [r.raw for r in current[0]]

    def at(c):
        return [r.map(lambda ds, c=c: link_positions_from_joint_torque(ds, c)) for r in raw]

    p, n = len(base), model.n
    c = nominal_compliance(model)
    current[0] = at(c)
    beta = wls(equations(settings=settings)).values
    converged = False
    for it in range(1, STIFFNESS_ITERATIONS + 1):
        hook = StiffnessColumns(model, base, beta, c, settings.friction_deadband)
        aug = equations(columns=(p + n, hook), settings=settings)
        est = wls(aug)
        beta = est.values[:p]
        step = np.clip(est.values[p:], -0.5 * c, c)     # K at most halved / doubled per step
        if log:
            log(f"stiffness search {it}: K = {np.round(1 / (c + step), 1).tolist()} N*m/rad")
        if np.max(np.abs(step) / c) < STIFFNESS_TOLERANCE:
            converged = True
            break
        c = c + step
        current[0] = at(c)
    c = c + step
    current[0] = at(c)
    K = 1.0 / c
    cov = est.covariance[p:, p:] * np.outer(K ** 2, K ** 2)
    return StiffnessEstimate(stiffness_names(model), K, cov, "link_dynamics",
                             {"iterations": it, "converged": converged,
                              "cutoff_hz": settings.cutoff_hz,
                              "decimate": int(settings.decimate)})


def _recording_equations(recording, model, settings, **kw):
    """:func:`recording_normal_equations` with the recording first (a Dask map task)."""
    return recording_normal_equations(model, recording, settings, **kw)


def with_overrides(settings, **changes):
    """``settings`` with the given fields replaced, ``None`` values ignored (an unset
    command-line option or ROS parameter keeps the robot config's value).

    Raises
    ------
    ConfigError
        A ``cutoff_hz`` that is not a finite number > 0 (or ``'auto'``), a
        ``velocity_threshold`` that is not a finite number >= 0, a ``decimate`` that is not
        a positive integer.
    """
    dec = changes.get("decimate")
    if dec is not None and (isinstance(dec, bool) or int(dec) != dec or dec < 1):
        raise ConfigError(f"decimate must be a positive integer, got {dec!r}")
    for key, low, strict, unit in (("cutoff_hz", 0.0, True, "Hz"),
                                   ("velocity_threshold", 0.0, False, "rad/s")):
        v = changes.get(key)
        if v is None or isinstance(v, str):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or (v <= low if strict else v < low):
            raise ConfigError(f"{key.replace('_hz', '')} must be a finite number "
                              f"{'>' if strict else '>='} {low:g} {unit}, got {v!r}")
    return replace(settings, **{k: v for k, v in changes.items() if v is not None})


def polynomial_settings(settings, **changes):
    """``settings`` with the ``polynomial`` strategy (the polynomial-approximation FIR bank of
    Lomakin & Deutscher, eq. 28-37, with the settings' ``pa_*``) and the given changes
    (:func:`with_overrides`: ``None`` keeps the settings' value).

    Raises
    ------
    ConfigError
        See :func:`with_overrides`.
    """
    return with_overrides(settings, preprocessing="polynomial", **changes)
