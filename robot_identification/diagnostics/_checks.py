"""The checks: each returns a list of :class:`Diagnostic` (empty when nothing is doubtful)."""
from __future__ import annotations

import numpy as np
from scipy.ndimage import median_filter

from robot_identification.diagnostics._diagnostic import Diagnostic
from robot_identification.estimation import pseudo_inertia
from robot_identification.signal import lowpass_filtfilt, noise_std, robust_std


# --------------------------------------------------------------------------------------------
# Checks. Each returns a list of Diagnostic (empty when nothing is doubtful); they take plain
# numbers and arrays so that every caller (batch pipeline, streaming, nodes) can use them.
# collect_diagnostics() runs them all on an assembled result.
# --------------------------------------------------------------------------------------------

#: Relative standard deviation [%] above which a base parameter is "poorly identified".
POORLY_IDENTIFIED_PERCENT = 10.0
#: ... and above which it is "unidentifiable" (the data do not determine its sign).
UNIDENTIFIABLE_PERCENT = 100.0
#: Condition number of the base observation matrix above which the estimate is flagged.
CONDITION_LIMIT = 1.0e3
#: Residual RMS / measurement-noise std above which model error dominates.
RESIDUAL_NOISE_RATIO = 10.0
#: Cut-off / excitation band above which the filter passes mostly noise.
CUTOFF_BAND_RATIO = 10.0
#: Cut-off / sampling rate above which the cut-off is near the Nyquist frequency (0.5).
CUTOFF_NYQUIST_FRACTION = 0.4
#: Without a low-pass filter, a velocity noise std above this share of the velocity RMS is
#: reported (``unfiltered_noise``).
UNFILTERED_NOISE_RATIO = 0.05
#: A sample is an outlier when it deviates from its neighbours by more than this many robust
#: standard deviations (MAD of the second differences).
OUTLIER_SIGMAS = 50.0
#: Normalised mean error (simulated data) above which the estimate is far from the truth
#: (warning) ...
TRUTH_NME_LIMIT = 0.2
#: ... and above which it misses the accuracy target of noise-free data (info).
TRUTH_NME_TARGET = 0.05
#: Error / std of the parameters that carry the error above which it is a bias, not scatter.
BIAS_STD_RATIO = 3.0

#: A negative mass or rotor inertia within this many std of 0 is consistent with 0 (info) ...
SIGN_INFO_SIGMAS = 2.0
#: ... and an error only beyond this many std (and not negligible), else a warning.
SIGN_ERROR_SIGMAS = 3.0
#: A negative mass or rotor inertia smaller than this fraction of its scale (the physical
#: estimate's prior std) is negligible: a warning, not an error.
NEGLIGIBLE_FRACTION = 1e-4

_STIFFNESS = ("K", "stiffness")
_ROTOR = ("rotor_inertia",)
_SIGN_FRICTION = ("fc", "coulomb")


def _kind(name):
    return name.rsplit(".", 1)[-1]


def check_parameter_std(names, values, relative_std):
    """``poorly_identified`` (info): relative std (in %) per base parameter above
    :data:`POORLY_IDENTIFIED_PERCENT`; above :data:`UNIDENTIFIABLE_PERCENT` the data do not
    distinguish the parameter from 0 (``unidentifiable``: info when finite — a parameter
    whose true value is 0 always looks like this —, warning when the std is not finite).
    """
    out = []
    for nm, v, r in zip(names, values, relative_std):
        if not np.isfinite(r):
            out.append(Diagnostic("unidentifiable", "warning",
                                  f"{nm} = {v:.4g} has no finite standard deviation: "
                                  f"not determined by the data", nm))
        elif r > UNIDENTIFIABLE_PERCENT:
            out.append(Diagnostic("unidentifiable", "info",
                                  f"{nm} = {v:.4g} with relative std {r:.0f} %: "
                                  f"indistinguishable from 0", nm))
        elif r > POORLY_IDENTIFIED_PERCENT:
            out.append(Diagnostic("poorly_identified", "info",
                                  f"{nm} = {v:.4g} with relative std {r:.0f} % "
                                  f"(> {POORLY_IDENTIFIED_PERCENT:.0f} %)", nm))
    return out


def check_signs(names, expressions, values, std, units=None, scales=None, left_out=None):
    """Physically impossible signs of base parameters that stand alone (expression = name).

    ``negative_stiffness``, ``negative_mass``, ``negative_rotor_inertia``; the message says
    how many std the value lies below 0. A stiffness cannot be 0: significantly below 0 (see
    below) it is an error; otherwise the data do not determine it (a deflection within the
    noise): a warning. A mass or a rotor inertia may be 0 (a massless link, no motor), so
    its severity follows the evidence that it is below 0:

    - within :data:`SIGN_INFO_SIGMAS` std of 0: info ("consistent with 0");
    - an error only when significantly negative and not negligible, more than
      :data:`NEGLIGIBLE_FRACTION` x its scale (``scales``: the magnitude of a plausible
      value, e.g. the physical estimate's prior std,
      :func:`~robot_identification.estimation.default_prior_scales`; ``None`` or NaN: no
      negligibility test);
    - a warning in between (a 2.1 std, -8e-6 kg*m^2 rotor inertia of a simulated ur10e,
      whose true rotor inertia is 0, stopped the identification as an error).

    Significantly negative: beyond :data:`SIGN_ERROR_SIGMAS` std below 0, and, where
    ``left_out`` gives the estimate refitted without each of K consecutive stretches of the
    data (:func:`~robot_identification.estimation.leave_block_out`), beyond as many of its
    own std in every one of those refits. The least-squares std assumes white residuals;
    where model error leaves them correlated in time (a run that ends mid-motion, a
    friction or filter bias) it understates the error of a biased fit many times, and a sign
    may rest on one stretch of the run: the Kinova Jaco2 run cut to 3 s (correct data)
    stopped with a rotor inertia 5.9 std below 0 (true +0.0016 kg*m^2) that was 3.2 std
    above 0 without its last 0.3 s. A reversed joint's negative rotor inertia holds in every
    stretch (the Kinova's joint 6 reversed: 19-43 std below 0 in each of the ten refits)
    and stays an error. The rule is the group-deletion diagnostic of Belsley, Kuh & Welsch
    (1980, "Regression Diagnostics", ch. 2) over the non-overlapping blocks of Künsch's
    (1989) block jackknife (Ann. Statist. 17(3), 1217-1241): a conclusion that one block
    overturns is not evidence.

    Parameters
    ----------
    names, expressions : sequence of str (p,)
    values, std : array_like (p,)
        Estimates and their standard deviations [SI units of each parameter].
    units : sequence of str (p,), optional
    scales : array_like (p,), optional
        [SI] magnitude below whose :data:`NEGLIGIBLE_FRACTION` a negative value is negligible.
    left_out : (values, std), each array_like (K, p), optional
        The estimate refitted without each of K stretches of the data and those refits'
        standard deviations (inf: undetermined without the stretch); None: no such test.
    """
    out = []
    units = units or [""] * len(names)
    scales = [np.nan] * len(names) if scales is None else scales
    if left_out is not None and np.shape(left_out[0])[-1:] != (len(names),):
        left_out = None
    for i, (nm, ex, v, s, u, scale) in enumerate(zip(names, expressions, values, std, units,
                                                     scales)):
        kind = _kind(nm)
        if v >= 0 or ex.strip() != nm:
            continue
        code = ("negative_stiffness" if kind in _STIFFNESS else "negative_mass" if kind == "m"
                else "negative_rotor_inertia" if kind in _ROTOR else None)
        if code is None:
            continue
        known = bool(s > 0 and np.isfinite(s))
        sig = f"{-v / s:.1f} std below 0" if known else "std unknown"
        if known and -v <= SIGN_INFO_SIGMAS * s and code != "negative_stiffness":
            out.append(Diagnostic(code, "info", f"{nm} = {v:.4g} {u} < 0 ({sig}): "
                                                f"consistent with 0, not significantly "
                                                f"negative (the physical estimate keeps it "
                                                f">= 0)", nm))
            continue
        significant = not known or -v > SIGN_ERROR_SIGMAS * s
        rests = ""                  # the stretch without which the sign is not significant
        if significant and left_out is not None:
            vk = np.asarray(left_out[0], dtype=float)[:, i]
            sk = np.asarray(left_out[1], dtype=float)[:, i]
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(np.isfinite(vk) & (sk > 0), -vk / sk, -np.inf)
            k = int(np.argmin(z))
            if not z[k] > SIGN_ERROR_SIGMAS:
                significant = False
                rests = (f"; refitted without stretch {k + 1} of {len(z)} of the data it is "
                         + (f"{vk[k]:.4g} {u} ({abs(z[k]):.1f} std "
                            f"{'below' if z[k] > 0 else 'above'} 0)" if np.isfinite(z[k])
                            else "undetermined")
                         + ": the sign rests on that stretch (model error there, e.g. a run "
                           "that ends mid-motion)")
        if code == "negative_stiffness":
            if not significant:
                # within the noise: the data do not determine K (a deflection below the
                # encoder resolution: puma560_elastic joint 6, -331 N*m/rad at 0.1 std of a
                # true 2000, stopped identify as an error)
                out.append(Diagnostic(code, "warning", f"{nm} = {v:.4g} {u} < 0 ({sig}"
                                                       f"{rests}), not significantly below "
                                                       f"0: the data do not determine this "
                                                       f"stiffness (deflection within the "
                                                       f"noise: a joint this stiff is rigid "
                                                       f"for this excitation and encoder; "
                                                       f"excite it more or model it rigid)",
                                      nm))
            else:
                out.append(Diagnostic(code, "error", f"{nm} = {v:.4g} {u} < 0 ({sig}): "
                                                     f"physically impossible: link and motor "
                                                     f"positions swapped, or an offset "
                                                     f"between the two encoders (theta - q "
                                                     f"must be the deflection)?", nm))
            continue
        negligible = bool(np.isfinite(scale) and -v <= NEGLIGIBLE_FRACTION * scale)
        if significant and not negligible:
            out.append(Diagnostic(code, "error", f"{nm} = {v:.4g} {u} < 0 ({sig}): "
                                                 f"physically impossible", nm))
            continue
        why = (f"negligible: below {NEGLIGIBLE_FRACTION:g} x its scale {scale:.3g} {u}"
               if negligible else "not significantly below 0" if rests
               else f"within {SIGN_ERROR_SIGMAS:g} std of 0")
        out.append(Diagnostic(code, "warning", f"{nm} = {v:.4g} {u} < 0 ({sig}{rests}), "
                                               f"{why}: 0 as far as the data tell (the "
                                               f"physical estimate keeps it >= 0)", nm))
    return out


def scaled_condition_number(gram):
    """Condition number of the observation matrix W with unit-norm columns, from
    G = W^T W (p, p): independent of the parameters' units (a stiffness column in
    rad and an inertia column in rad/s^2 do not make a problem ill-conditioned)."""
    G = np.asarray(gram, dtype=float)
    d = np.sqrt(np.diag(G))
    if np.any(d <= 0):
        return float("inf")
    ev = np.linalg.eigvalsh(G / np.outer(d, d))
    return float(np.sqrt(ev[-1] / ev[0])) if ev[0] > 0 else float("inf")


def check_condition(condition_number):
    """``ill_conditioned``: condition number of the (column-scaled, see
    :func:`scaled_condition_number`) base observation matrix above :data:`CONDITION_LIMIT`
    (warning; infinite: error)."""
    c = float(condition_number)
    if not np.isfinite(c):
        return [Diagnostic("ill_conditioned", "error",
                           "observation matrix is singular: some base parameters are not "
                           "excited")]
    if c > CONDITION_LIMIT:
        return [Diagnostic("ill_conditioned", "warning",
                           f"condition number {c:.3g} (unit-norm columns) > "
                           f"{CONDITION_LIMIT:.0f}: noise is amplified up to {c:.3g}x; excite "
                           f"more (robot-identification excite)")]
    return []


#: Share of a joint's travel (peak to peak of its low-passed position) by which it must move
#: back from an extreme to count as a reversal of direction (:func:`direction_reversals`):
#: well above encoder noise, below the excitation's smaller swings.
TURN_SHARE = 0.05


def direction_reversals(t, q, band_hz):
    """Reversals of direction per joint: how often each joint turns back by at least
    :data:`TURN_SHARE` of its travel, on its position low-passed at 5 x the motion's
    band (1 Hz at least; :func:`~robot_identification.signal.excitation_band`).

    Parameters
    ----------
    t : ndarray (N,) [s]
    q : ndarray (N, n) [rad; m]
    band_hz : float

    Returns
    -------
    ndarray (n,) of int
        0: the joint moved one way only (a recording shorter than half a period of its
        motion). The starter excitation (10 s Fourier, 0.1 Hz base) reverses each joint
        3-8 times over 10 s and 0-1 times in its first second (UR5, xArm7, SO-101, Panda,
        PUMA 560, Stanford arm; docs/diagnostics.md).
    """
    t, q = np.asarray(t, dtype=float), np.asarray(q, dtype=float)
    n = q.shape[1]
    fs = (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 and t[-1] > t[0] else 0.0
    fc = max(5.0 * float(band_hz or 0.0), 1.0)
    if len(t) > 30 and fc < 0.4 * fs:
        q = lowpass_filtfilt(q, fs, fc, order=2)
        q = q[::max(1, int(fs / (20 * fc)))]         # 20 samples per cut-off period
    out = np.zeros(n, dtype=int)
    for j in range(n):
        x = q[:, j]
        h = TURN_SHARE * float(np.ptp(x))
        if not h > 0:
            continue
        lo = hi = x[0]
        way, turns = 0, 0
        for v in x[1:]:
            if way == 0:
                lo, hi = min(lo, v), max(hi, v)
                way = 1 if v - lo >= h else -1 if hi - v >= h else 0
                ext = v
            elif way * (v - ext) > 0:
                ext = v
            elif way * (ext - v) >= h:
                turns, way, ext = turns + 1, -way, v
        out[j] = turns
    return out


def one_way_joints(recordings):
    """Indices of the joints that move one way only (no reversal of direction,
    :func:`direction_reversals`, in any recording) where they are most of the joints that
    move (velocity RMS at least :data:`STILL_VELOCITY`), else [] (also where a recording
    has no summary).

    Parameters
    ----------
    recordings : list of dict
        :func:`~robot_identification.diagnostics.recording_summary` of each recording.
    """
    recordings = list(recordings or ())
    recs = [r for r in recordings if r is not None and "reversals" in r]
    if not recs or len(recs) < len(recordings):
        return []
    moving = np.max([np.asarray(r["velocity_rms"], float) for r in recs], axis=0) \
        >= STILL_VELOCITY
    turns = np.sum([np.asarray(r["reversals"], int) for r in recs], axis=0)
    one_way = [int(k) for k in np.flatnonzero(moving) if turns[k] == 0]
    return one_way if 2 * len(one_way) > int(moving.sum()) else []


def one_way_hint(joint_names, recordings):
    """"; joint(s) ... move one way only ... in 'FILE' (1 s): too short ..." where
    :func:`one_way_joints` finds them, else "": the cause beside "the data do not excite
    base parameter(s) [...]" (a Panda's and a UR10e's first second of the starter
    excitation)."""
    one_way = one_way_joints(recordings)
    if not one_way:
        return ""
    files = ", ".join(f"'{r['source']}' ({r['duration_s']:.3g} s)" if r.get("source")
                      else f"{r['duration_s']:.3g} s" for r in recordings)
    return (f"; joint(s) {', '.join(joint_names[k] for k in one_way)} move one way only (no "
            f"reversal of direction) in {files}: a recording too short, a fraction of one "
            f"period of the motion: record longer (whole periods of the excitation)")


#: Condition number of well-excited recordings: the starter excitation's 10 s runs of the
#: arms of :func:`check_recording_length` have 9-200 (PUMA 560: 1.6e4).
GOOD_CONDITION = 100.0


def check_recording_length(joint_names, condition_number, n_base, recordings):
    """``recording_too_short`` (error): the recordings are too short to identify ``n_base``
    base parameters: the observation matrix is ill-conditioned (scaled condition number
    above :data:`CONDITION_LIMIT`) and most joints that move, move one way only (no reversal
    of direction, :func:`direction_reversals`, in any recording): the data hold a fraction
    of one period of the motion, whose smooth stretch the parameters fit in many ways.

    Measured (docs/diagnostics.md): the starter excitation of UR5, xArm7, SO-101, Panda,
    double pendulum (example-robot-data) and the shipped PUMA 560, Stanford arm, Szabo arm
    and UR10e, simulated 10 s and cut to 1 s: condition numbers 4.2e3-3.1e6 (or a
    rank-deficient matrix), 5 of 6 joints or more moving one way, estimates 11-38 std from
    0 with negative rotor inertias or exit 0 with a warning only; cut to 2 s at most 2 of 6
    joints move one way (condition 88-6.1e5: the ``ill_conditioned`` warning); the whole
    10 s: every joint reverses 3-8 times (condition 9-1.6e4).

    Parameters
    ----------
    joint_names : list of str
    condition_number : float
        Of the base observation matrix with unit-norm columns
        (:func:`scaled_condition_number`).
    n_base : int
        Base parameters identified.
    recordings : list of dict
        :func:`~robot_identification.diagnostics.recording_summary` of each recording
        (``reversals``, ``velocity_rms``, ``duration_s``, ``range_share``, ``source``).

    Returns
    -------
    list of Diagnostic
        One error naming the files, their length, the joints that move one way and what
        would be enough, or nothing.
    """
    c = float(condition_number)
    one_way = one_way_joints(recordings) if c > CONDITION_LIMIT else []
    if not one_way:
        return []
    recs = recordings
    total = float(sum(r["duration_s"] for r in recs))
    share = np.nanmax([np.asarray(r["range_share"], float) for r in recs], axis=0)
    share = share[one_way][np.isfinite(share[one_way])]
    ranges = (f", over {100 * share.min():.2g}-{100 * share.max():.2g} % of their ranges"
              if share.size else "")
    files = ", ".join(f"'{r['source']}' ({r['duration_s']:.3g} s)" if r.get("source")
                      else f"{r['duration_s']:.3g} s" for r in recs)
    # the condition number of a stretch of a smooth motion falls about as its length to the
    # 2.6-5.2th power (1 -> 3 s of the starter excitation, measured): the length at which it
    # would reach GOOD_CONDITION at the 4th power, and 3 x at least
    enough = total * max(3.0, (c / GOOD_CONDITION) ** 0.25 if np.isfinite(c) else 3.0)
    names = ", ".join(joint_names[k] for k in one_way)
    return [Diagnostic(
        "recording_too_short", "error",
        f"{files}: too short to identify {n_base} base parameters: joint(s) {names} move "
        f"one way only (no reversal of direction){ranges}, a fraction of one period of the "
        f"motion (condition number {c:.3g} > {CONDITION_LIMIT:.0f}); the estimate is not "
        f"determined by the data: record >= {enough:.2g} s (its condition number would be "
        f"~{GOOD_CONDITION:.0f} then, falling about as the 4th power of the length), better "
        f"whole periods of an excitation that moves every joint back and forth",
        ", ".join(str(r.get("source", "")) for r in recs))]


def check_residual_noise(labels, residual_rms, noise, signal_rms=None, measured=None):
    """``residual_above_noise``: residual RMS far above the measurement noise.

    Parameters
    ----------
    labels : list of str
        Row-group labels.
    residual_rms, noise : array_like (groups,)
        Residual RMS of the fit and the noise floor of the measured left-hand side
        (:func:`robot_identification.signal.noise_floor` of the raw torque). NaN: unknown
        (a torque smoother than white noise: pre-smoothed, or noise-free) where the group
        is measured, else (elastic link rows) no measurement.
    signal_rms : array_like (groups,), optional
        RMS of the measured left-hand side; residuals below 1 % of it are not reported
        (noise-free simulations: the noise estimate is round-off). NaN: the group has no
        measured torque.
    measured : array_like of bool (groups,), optional
        Which groups carry a measured torque (default: those with a finite ``signal_rms``;
        without ``signal_rms``, those with a finite ``noise``).

    When the ratio exceeds :data:`RESIDUAL_NOISE_RATIO` the residual is model error (or
    position noise propagated through the derivatives into the observation matrix), not
    torque noise, and the standard deviations (which assume white noise) understate the
    error (warning). Groups whose noise floor is unknown are named in one info note: the
    residual is not compared with a floor that the differences of a smoothed signal would
    put orders of magnitude too low.
    """
    out = []
    sig = [None] * len(labels) if signal_rms is None else signal_rms
    if measured is None:
        measured = ([np.isfinite(a) for a in sig] if signal_rms is not None
                    else [np.isfinite(s) for s in noise])
    unknown = []
    for lb, r, s, a, m in zip(labels, residual_rms, noise, sig, measured):
        if not np.isfinite(r) or not m:
            continue
        if a is not None and np.isfinite(a) and r < 0.01 * a:
            continue
        if not np.isfinite(s) or s <= 0:
            unknown.append(f"{lb} ({r:.3g})")
            continue
        if r > RESIDUAL_NOISE_RATIO * s:
            out.append(Diagnostic("residual_above_noise", "warning",
                                  f"residual RMS {r:.3g} is {r / s:.0f}x the measurement noise "
                                  f"{s:.3g}: model error (or noise in the positions, amplified "
                                  f"by differentiation) dominates, the standard deviations "
                                  f"understate the error", lb))
    if unknown:
        out.append(Diagnostic("residual_above_noise", "info",
                              f"noise floor unknown: the measured torque of {_names(unknown)} "
                              f"(residual RMS in brackets) is smoother than white noise at the "
                              f"sampling rate (pre-smoothed by the drive or the logger, or "
                              f"simulated without noise), so the residual is not compared "
                              f"with a noise level"))
    return out


def _names(names, limit=8):
    names = list(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def check_truth_coverage(missing, extra, unknown_base, n_base):
    """Simulated data whose true parameters do not match the model one to one:
    ``truth_incomplete``.

    Parameters
    ----------
    missing : list of str
        Standard parameters of the model without a true value.
    extra : dict
        True parameters ``{name: value}`` that name no parameter of the model (data
        simulated for another robot or drive configuration).
    unknown_base : list of str
        Base parameters whose true value is therefore unknown (NaN: left out of the
        normalised mean error and of ``far_from_truth``/``std_understates_error``).
    n_base : int
        Number of base parameters.

    Severity: warning when base parameters lose their truth or unmatched true values are
    non-zero (the data hold effects the model cannot represent); info when only
    parameters that no base parameter depends on are missing or the unmatched values are 0.
    """
    out = []
    if missing:
        if unknown_base:
            also = ("no base parameter has a known true value: no comparison with the truth"
                    if len(unknown_base) == n_base else
                    f"the true value of {len(unknown_base)} of {n_base} base parameters is "
                    f"unknown ({_names(unknown_base)}) and left out of the normalised mean "
                    f"error and the truth checks")
        else:
            also = "no base parameter depends on them"
        out.append(Diagnostic(
            "truth_incomplete", "warning" if unknown_base else "info",
            f"the data's true parameters lack {len(missing)} model parameter(s) "
            f"({_names(missing)}): {also}", "true_parameters"))
    if extra:
        nonzero = {}
        for k, v in extra.items():
            try:
                if float(v) != 0.0:
                    nonzero[k] = v
            except (TypeError, ValueError):
                nonzero[k] = v
        msg = (f"the data's true parameters name {len(extra)} parameter(s) the model does "
               f"not have ({_names(extra)}); ")
        msg += ("the data were simulated with effects this model cannot represent (another "
                "robot or drive configuration?): estimates and truth are not comparable "
                f"one to one ({len(nonzero)} non-zero)" if nonzero else
                "all are 0, so the model's assumption that they are absent holds")
        out.append(Diagnostic("truth_incomplete", "warning" if nonzero else "info", msg,
                              "true_parameters"))
    return out


def _percent(value):
    """A percentage for a message: whole numbers from 10 on, two digits below (a relative
    std of 0.4 % printed as '0 %' read as exact)."""
    v = float(value)
    return f"{v:.0f}" if not np.isfinite(v) or abs(v) >= 10 else f"{v:.2g}"


#: A true parameter below this fraction of the largest true parameter is numerically 0
#: (check_truth: its relative error is no measure of the estimate).
NUMERICAL_ZERO = 1e-6


def check_truth(nme, values, true_values, std, names=None, relative_std=None,
                negligible=None):
    """Simulated data: ``far_from_truth`` (normalised mean error above
    :data:`TRUTH_NME_LIMIT`: warning, above :data:`TRUTH_NME_TARGET`: info), naming the base
    parameters that dominate it with their error in standard deviations, and the error of
    the well-identified ones (relative std < :data:`POORLY_IDENTIFIED_PERCENT`): biased
    (pre-processing) or not (the error sits in poorly excited parameters); and
    ``std_understates_error`` (median |error| / std > 10: a bias, not noise).

    Base parameters whose true value is NaN (unknown, :func:`check_truth_coverage`) are
    left out of both. ``negligible`` (bool per base parameter, optional): those whose true
    value contributes a negligible share of the torque
    (:meth:`~robot_identification.identification.IdentificationResult.negligible_parameters`);
    without it, those below :data:`NUMERICAL_ZERO` x the largest true parameter. Where they
    carry at least half the NME, its severity follows the NME of the others (products of
    inertia of about 1e-8 kg m^2 in a small arm's CAD URDF, estimated within 0.5-1.2 std, made
    a warning of a noise-free MuJoCo run of example-robot-data's SO-100)."""
    out = []
    if nme is None or true_values is None:
        return out
    tru = np.asarray(true_values, dtype=float)
    keep = ~np.isnan(tru)
    if not keep.any():
        return out
    if not keep.all():
        idx = np.flatnonzero(keep)
        names = None if names is None else [names[i] for i in idx]
        relative_std = None if relative_std is None else np.asarray(relative_std)[idx]
        return check_truth(nme, np.asarray(values, dtype=float)[idx], tru[idx],
                           np.asarray(std, dtype=float)[idx], names, relative_std,
                           None if negligible is None else np.asarray(negligible)[idx])
    est = np.asarray(values, dtype=float)
    err = np.abs(est - tru)
    rel = err.copy()
    nz = np.abs(tru) > 1e-12
    rel[nz] /= np.abs(tru[nz])
    sd = np.asarray(std, dtype=float)
    if nme > TRUTH_NME_TARGET:
        limit = TRUTH_NME_LIMIT if nme > TRUTH_NME_LIMIT else TRUTH_NME_TARGET
        severity = "warning" if nme > TRUTH_NME_LIMIT else "info"
        msg = (f"normalised mean error {nme:.3g} against the simulator's true parameters "
               f"(> {limit})")
        if names is not None:
            top = np.argsort(-rel)[:3]
            share = rel[top].sum() / max(rel.sum(), 1e-300)
            parts = [f"{names[i]} (true {tru[i]:.3g}, estimate {est[i]:.3g}"
                     + (f", relative std {_percent(relative_std[i])} %"
                        if relative_std is not None
                        else "")
                     + (f", error {err[i] / sd[i]:.1f} std" if np.isfinite(sd[i]) and sd[i] > 0
                        else "") + ")" for i in top]
            msg += f"; {100 * share:.0f} % of it from " + ", ".join(parts)
            sds = [err[i] / sd[i] for i in top if np.isfinite(sd[i]) and sd[i] > 0]
            k = float(np.median(sds)) if sds else 0.0
            if negligible is None:
                zero = np.abs(tru) < NUMERICAL_ZERO * np.abs(tru).max()
                what = (f"whose true values are numerically 0 (below {NUMERICAL_ZERO:g} x "
                        f"the largest true parameter)")
            else:
                zero = np.asarray(negligible, dtype=bool)
                what = "whose true values contribute a negligible share of the torque"
            if rel[zero].sum() >= 0.5 * rel.sum() and (~zero).any():
                # products of inertia of 6e-9 kg m^2 in a CAD URDF (Kinova Gen3): a relative
                # error on a parameter that is (about) 0 is no measure of the estimate
                rest = float(rel[~zero].mean())
                severity = "warning" if rest > TRUTH_NME_LIMIT else "info"
                msg += (f"; {100 * rel[zero].sum() / rel.sum():.0f} % of it from "
                        f"{int(zero.sum())} parameters {what}: a relative error on them "
                        f"says nothing about the estimate; the other {int((~zero).sum())} "
                        f"parameters have mean error {rest:.3g} (judge the "
                        f"model by those, or by its torque prediction: `validate`)")
            elif relative_std is not None:
                good = np.asarray(relative_std) < POORLY_IDENTIFIED_PERCENT
                if good.any():
                    gm = rel[good].mean()
                    msg += (f"; the {int(good.sum())} well-identified parameters (relative "
                            f"std < {POORLY_IDENTIFIED_PERCENT:.0f} %) have mean error "
                            f"{gm:.3g}: ")
                    if gm > TRUTH_NME_LIMIT or k > BIAS_STD_RATIO:
                        msg += ("a bias of the pre-processing (cut-off, derivatives of noisy "
                                "positions, friction at reversals and stops)")
                    else:
                        msg += ("the error sits in poorly excited parameters, within "
                                f"{BIAS_STD_RATIO:g} std (excite more or longer: "
                                "`robot-identification excite` optimises the condition "
                                "number)")
        out.append(Diagnostic("far_from_truth", severity, msg))
    ok = np.isfinite(sd) & (sd > 0)
    if ok.any():
        ratio = float(np.median(err[ok] / sd[ok]))
        if ratio > 10.0:
            out.append(Diagnostic("std_understates_error", "warning",
                                  f"the true errors are typically {ratio:.0f}x the printed "
                                  f"standard deviations: the model or the pre-processing is "
                                  f"biased"))
    return out


#: Above this fraction of dropped friction rows ``samples_dropped`` is a warning.
DROPPED_FRICTION_LIMIT = 0.5


def check_coulomb_smear(cutoff_hz, velocity_threshold, parameter_kinds, reversal_fraction,
                        dropped=False, window_s=None, fir=None):
    """``coulomb_filter_smear``: sign-based friction, a low-pass filter and rows near velocity
    reversals or stops. The zero-phase filter spreads the Coulomb step of the measured torque
    over ``window_s`` (its 5 % settling time, about 0.6 / f_c) on each side of a reversal
    while sign(v) of the filtered velocity stays a step; a causal FIR bank (polynomial
    approximation, Lomakin & Deutscher eq. 28-37; Savitzky-Golay) mixes it into the
    estimates of its window length T. At a stop the friction is anywhere in [-f_c, f_c]:
    those rows contradict the model (a bias no amount of data removes). Reported when more
    than 5 % of the used rows lie within that window (warning).

    Parameters
    ----------
    cutoff_hz : float or None
        Butterworth cut-off [Hz]; None with ``fir``: an FIR bank, else no filter (nothing to
        report).
    reversal_fraction : float
        Fraction of the used friction rows within ``window_s`` of a velocity sign change or
        a stop.
    dropped : bool
        Those rows were dropped (``identification.drop_reversals``): info only.
    window_s : float, optional
        [s]; default 1 / (2 f_c) (FIR: needed).
    fir : str, optional
        Name of the FIR pre-processing (``polynomial``, ``savgol``) when ``cutoff_hz`` is None.
    """
    if not any(k in _SIGN_FRICTION for k in parameter_kinds):
        return []
    if cutoff_hz is None and (fir is None or window_s is None):
        return []
    if reversal_fraction <= 0.05:
        return []
    ms = 1e3 * (window_s if window_s is not None else 1.0 / (2 * cutoff_hz))
    what = (f"{cutoff_hz:g} Hz filter" if cutoff_hz is not None
            else f"{fir} filter bank (window {ms:.0f} ms)")
    if dropped:
        if reversal_fraction <= DROPPED_FRICTION_LIMIT:
            return [Diagnostic("samples_dropped", "info",
                               f"{100 * reversal_fraction:.0f} % of the friction rows lie "
                               f"within {ms:.0f} ms of a velocity reversal or stop, where the "
                               f"{what} smears the Coulomb step: dropped", "drop_reversals")]
        return [Diagnostic("samples_dropped", "warning",
                           f"{100 * reversal_fraction:.0f} % of the friction rows lie within "
                           f"{ms:.0f} ms of a velocity reversal or stop, where the {what} "
                           f"smears the Coulomb step: dropped; the friction and inertial "
                           f"estimates rest on the remaining "
                           f"{100 * (1 - reversal_fraction):.0f} % (a noisy velocity crossing "
                           f"zero everywhere, slow motion or a low cut-off: excite faster "
                           f"motion, or compare with drop_reversals: false)",
                           "drop_reversals")]
    fix = ("raise the cut-off" if cutoff_hz is not None
           else "set drop_reversals: true, shorten the window")
    return [Diagnostic("coulomb_filter_smear", "warning",
                       f"{100 * reversal_fraction:.0f} % of the friction rows lie within "
                       f"{ms:.0f} ms of a velocity reversal or stop, where the "
                       f"{what} smears the Coulomb step of the torque: raise "
                       f"velocity_threshold (now {velocity_threshold or 0:g} rad/s), {fix} "
                       f"or use the static (smooth) friction model",
                       "cutoff_hz" if cutoff_hz is not None else "drop_reversals")]


def check_cutoff(cutoff_hz, sample_rate, band_hz, signal_hz=None):
    """``cutoff_above_excitation`` (info: cut-off > :data:`CUTOFF_BAND_RATIO` x the
    excitation band and above the signal band ``signal_hz`` (:func:`signal_band`, when
    known), the filter passes mostly noise — unless torque steps such as Coulomb friction
    need it; ``identify --select`` decides on left-out data) and ``cutoff_near_nyquist``
    (warning: cut-off above :data:`CUTOFF_NYQUIST_FRACTION` x the sampling rate)."""
    out = []
    if cutoff_hz is None:
        return out
    if band_hz and band_hz > 0 and cutoff_hz > CUTOFF_BAND_RATIO * band_hz and (
            signal_hz is None or cutoff_hz > 1.05 * signal_hz):
        out.append(Diagnostic("cutoff_above_excitation", "info",
                              f"cut-off {cutoff_hz:.3g} Hz is {cutoff_hz / band_hz:.0f}x the "
                              f"excitation band {band_hz:.3g} Hz (99 % of the motion's power): "
                              f"the filter passes mostly noise; try "
                              f"{max(5 * band_hz, signal_hz or 0.0):.2g} Hz",
                              "cutoff_hz"))
    if sample_rate and cutoff_hz > CUTOFF_NYQUIST_FRACTION * sample_rate:
        out.append(Diagnostic("cutoff_near_nyquist", "warning",
                              f"cut-off {cutoff_hz:.3g} Hz is near the Nyquist frequency "
                              f"{sample_rate / 2:.3g} Hz (sampling {sample_rate:.3g} Hz)",
                              "cutoff_hz"))
    return out


def check_unfiltered_noise(cutoff_hz, preprocessing, joint_names, velocity_noise,
                           velocity_rms, signal_hz=None):
    """``unfiltered_noise`` (warning): no low-pass filter (``cutoff_hz: null`` with the
    ``butterworth`` strategy) on recordings whose velocity noise std (measured, or of the
    differentiated positions) is more than :data:`UNFILTERED_NOISE_RATIO` x the velocity RMS
    on some joint: the second derivative amplifies it into the accelerations and biases
    every parameter (szabo_3dof, whose config sets no filter for the paper's analytic
    derivatives, simulated with 80 dB position noise: torque-weighted parameter error 26,
    the velocity noise 9-41 % of the RMS; ``cutoff_hz: auto`` filters it).

    Parameters
    ----------
    velocity_noise, velocity_rms : array_like, shape (n,)
        Per joint [rad/s or m/s] (:func:`recording_summary`, median over recordings).
    signal_hz : float, optional
        Where the signal meets its noise floor [Hz] (the automatic cut-off's start).
    """
    if cutoff_hz is not None or (preprocessing or "butterworth") != "butterworth":
        return []
    noise = np.asarray(velocity_noise, dtype=float)
    rms = np.asarray(velocity_rms, dtype=float)
    ratio = np.where(rms > 0, noise / np.where(rms > 0, rms, 1.0), 0.0)
    bad = np.flatnonzero(ratio > UNFILTERED_NOISE_RATIO)
    if not bad.size:
        return []
    where = (f"; the signal meets its noise floor at {signal_hz:.2g} Hz"
             if signal_hz is not None and np.isfinite(signal_hz) else "")
    n = len(joint_names)      # elastic arms: link signals, then motor signals
    label = [str(j) for j in joint_names] + [f"motor {j}" for j in joint_names]
    names = ", ".join(label[k] if k < 2 * n else str(k) for k in bad[:4]) + (
        f" and {bad.size - 4} more" if bad.size > 4 else "")
    return [Diagnostic("unfiltered_noise", "warning",
                       f"no low-pass filter (cutoff_hz: null) on noisy data: the velocity "
                       f"noise is {100 * ratio[bad].min():.0f}-{100 * ratio[bad].max():.0f} % "
                       f"of the velocity RMS on {names}; differentiating it into "
                       f"accelerations biases every parameter: set cutoff_hz: auto{where}",
                       "cutoff_hz")]


def check_velocity_threshold(velocity_threshold, friction_deadband, parameter_kinds):
    """``no_velocity_threshold``: sign-based (Coulomb) friction with neither a velocity
    threshold nor a sign deadband: at rest sign(v) flips on velocity noise (warning)."""
    if not any(k in _SIGN_FRICTION for k in parameter_kinds):
        return []
    deadband = np.asarray(0.0 if friction_deadband is None else friction_deadband, dtype=float)
    if (velocity_threshold or 0.0) > 0 or np.all(deadband > 0):
        return []
    return [Diagnostic("no_velocity_threshold", "warning",
                       "Coulomb friction sign(v) with velocity threshold 0 and no deadband: "
                       "samples at rest flip the sign on velocity noise; set "
                       "identification.velocity_threshold or leave friction_deadband automatic",
                       "velocity_threshold")]


def check_joint_limits(joint_names, q, limits, source="", kinds=None):
    """``beyond_joint_limits``: recorded positions outside the configured limits.

    Parameters
    ----------
    joint_names : list of str
    q : ndarray (N, n)
        Positions [rad | m].
    limits : list of (lower, upper) or None
    source : str
        Recording name (subject).
    kinds : list of str, optional
        ``revolute`` or ``prismatic`` per joint (the hint's units); default revolute.

    Beyond twice the range: error (degrees given as radians? millimetres as metres?);
    otherwise warning.
    """
    out = []
    q = np.asarray(q, dtype=float)
    for j, (nm, lim) in enumerate(zip(joint_names, limits)):
        if lim is None:
            continue
        lo, hi = lim
        qmin, qmax = float(q[:, j].min()), float(q[:, j].max())
        tol = 1e-3 * (hi - lo)
        if qmin >= lo - tol and qmax <= hi + tol:
            continue
        far = max(lo - qmin, qmax - hi) > (hi - lo)
        prismatic = kinds is not None and kinds[j] == "prismatic"
        hint = ("" if not far else "; millimetres given as metres?" if prismatic
                else "; degrees given as radians?")
        out.append(Diagnostic("beyond_joint_limits", "error" if far else "warning",
                              f"{nm} moves over [{qmin:.4g}, {qmax:.4g}] outside its limits "
                              f"[{lo:.4g}, {hi:.4g}]{hint}",
                              f"{source}:{nm}" if source else nm))
    return out


#: Factor over the velocity limit (of the 99th percentile of |velocity|) that is an error:
#: time stamps in minutes (60 x) or positions in degrees (57 x) rather than a fast motion.
#: Motions a little beyond the limits are common (the shipped robots' simulated excitations
#: reach 2.2 x with 60 dB noise on the differentiated positions): no diagnostic below it.
VELOCITY_LIMIT_FACTOR = 10.0


#: The velocity the limit check judges is averaged over 1 / (this x the excitation band) s
#: (:func:`span_velocity`): a twentieth of the motion's period leaves the motion's velocity
#: (sinc(pi / 20) = 0.996 at the band) and averages the measurement noise that a
#: sample-to-sample difference amplifies (40 dB position noise at 1 kHz: a 99th percentile of
#: 10.6 x a UR3's velocity limit on a motion within it, example-robot-data's ur3_robot).
VELOCITY_SPAN_PER_BAND = 20.0


def span_velocity(t, q, dq=None, band_hz=None):
    """Velocities averaged over a span of 1 / (:data:`VELOCITY_SPAN_PER_BAND` x ``band_hz``)
    s: the measured ``dq`` by a centred moving average, else the positions ``q`` by a central
    difference across the span (samples at the ends dropped); the sample-to-sample
    derivative where the span is one sample or less, or ``band_hz`` is not given.

    Parameters
    ----------
    t : ndarray (N,) [s]; q : ndarray (N, n) [rad | m]; dq : ndarray (N, n) or None
    band_hz : float or None
        The motion's excitation band [Hz] (:func:`robot_identification.signal.excitation_band`).

    Returns
    -------
    ndarray (N', n) [rad/s | m/s]
    """
    t = np.asarray(t, dtype=float)
    m = 0
    if band_hz and np.isfinite(band_hz) and band_hz > 0 and t.shape[0] > 2:
        dt = float(np.median(np.diff(t)))
        if dt > 0:
            m = int(round(0.5 / (VELOCITY_SPAN_PER_BAND * band_hz * dt)))
    if dq is not None:
        x = np.asarray(dq, dtype=float)
        if m < 1 or x.shape[0] <= 2 * m + 1:
            return x
        c = np.cumsum(np.vstack([np.zeros((1, x.shape[1])), x]), axis=0)
        return (c[2 * m + 1:] - c[:-2 * m - 1]) / (2 * m + 1)
    q = np.asarray(q, dtype=float)
    if m < 1 or q.shape[0] <= 2 * m:
        return np.gradient(q, t, axis=0)
    return (q[2 * m:] - q[:-2 * m]) / (t[2 * m:] - t[:-2 * m])[:, None]


def check_velocity_limits(joint_names, velocity, limits, source=""):
    """``beyond_velocity_limits`` (error): the 99th percentile of a joint's |velocity|
    (measured, or differentiated from the positions; averaged over a short span by
    :func:`span_velocity`, so that measurement noise is not read as speed) above 10 x its
    configured velocity limit: time stamps in minutes (velocities 60 x too large) or
    positions in degrees (57 x) rather than a fast arm.

    Parameters
    ----------
    joint_names : list of str
    velocity : ndarray (N, n) [rad/s | m/s]
    limits : list of float or None
    source : str
    """
    out = []
    v = np.abs(np.asarray(velocity, dtype=float))
    for j, (nm, lim) in enumerate(zip(joint_names, limits)):
        if not lim or not np.isfinite(lim) or lim <= 0:
            continue
        top = float(np.percentile(v[:, j], 99))
        if top > VELOCITY_LIMIT_FACTOR * lim:
            out.append(Diagnostic(
                "beyond_velocity_limits", "error",
                f"{nm} moves at {top:.4g} (99th percentile of |velocity|), {top / lim:.3g} x "
                f"its velocity limit {lim:.4g}: time stamps in minutes or positions in "
                f"degrees?", f"{source}:{nm}" if source else nm))
    return out


#: A joint whose velocity RMS stays below this [rad/s; m/s] in a recording stands still
#: (``identify`` names such joints when the data do not excite their parameters;
#: :func:`check_still_joints` on held-out data).
STILL_VELOCITY = 1e-3


def check_still_joints(joint_names, velocity_rms, source=""):
    """``joint_still``: joints that stand still in a held-out recording (velocity RMS below
    :data:`STILL_VELOCITY`), while ``validate`` scores their torque. A warning where other
    joints move: a joint that does not move tests none of its velocity-dependent parameters
    (inertia, friction), and a position column that is constant while the arm moves may not
    be that joint's (a frozen encoder, a column mapped twice): the URDF-based check read
    such a UR5 recording (example-robot-data, shoulder_lift_joint held constant) as
    "direction reversed or torque sign reversed". An info note where every joint stands
    still: a static hold, which tests the gravity and offset terms only (the real UR10e's
    validation runs p1 and p2 are such holds; an error there stopped their validation).
    ``identify`` stops on data that do not excite a joint's parameters already.

    Parameters
    ----------
    joint_names : list of str
    velocity_rms : array (n,)
        RMS velocity per joint [rad/s; m/s] (measured, or differentiated positions).
    source : str
        The recording's file (named in the message and the subject).
    """
    rms = np.asarray(velocity_rms, dtype=float)
    still = [nm for nm, v in zip(joint_names, rms) if v < STILL_VELOCITY]
    if not still:
        return []
    where = f"'{source}'" if source else "the held-out data"
    subject = f"{source}:{','.join(still)}" if source else ",".join(still)
    if len(still) == len(rms):
        return [Diagnostic("joint_still", "info",
                           f"every joint stands still (velocity RMS < {STILL_VELOCITY:g} "
                           f"rad/s) in {where}: a static hold, which tests the gravity and "
                           f"offset terms only", subject)]
    return [Diagnostic("joint_still", "warning",
                       f"joint(s) {', '.join(still)} stand still (velocity RMS < "
                       f"{STILL_VELOCITY:g} rad/s) in {where} while the others move: held-out "
                       f"data that do not move a joint do not test its inertia and friction "
                       f"(a frozen or constant position column?)", subject)]


def count_outliers(x, sigmas=OUTLIER_SIGMAS):
    """Spikes per column of ``x`` (N, n): samples whose distance to the running median of
    their 5 neighbours exceeds both ``sigmas`` robust standard deviations of that distance
    and a quarter of the column's robust range (1st-99th percentile), so that quantised or
    switching signals (PD torques) are not flagged. Returns the count per column (n,)."""
    x = np.asarray(x, dtype=float)
    if x.shape[0] < 5:
        return np.zeros(x.shape[1], dtype=int)
    dev = np.abs(x - median_filter(x, size=(5, 1), mode="nearest"))
    scale = robust_std(dev, axis=0)
    lo, hi = np.percentile(x, [1, 99], axis=0)
    limit = np.maximum(sigmas * scale, 0.25 * (hi - lo))
    limit = np.where(limit > 0, limit, np.finfo(float).tiny)
    return (dev > limit).sum(axis=0)


def check_outliers(source, joint_names, tau, sigmas=OUTLIER_SIGMAS):
    """``torque_outliers``: per-recording report of torque spikes (:func:`count_outliers`)."""
    counts = count_outliers(tau, sigmas)
    if not counts.any():
        return []
    where = ", ".join(f"{nm}: {c}" for nm, c in zip(joint_names, counts) if c)
    return [Diagnostic("torque_outliers", "warning",
                       f"{int(counts.sum())} torque spike(s) beyond {sigmas:.0f} robust std "
                       f"({where}); they bias least squares: remove them or use a robust "
                       f"estimator (irls)", source)]


def check_samples_dropped(used_rows, total_rows, velocity_threshold, malformed=0, source=""):
    """``samples_dropped``: rows removed by the velocity threshold (info; warning above
    half) and malformed rows dropped by a loader (warning)."""
    out = []
    if total_rows > 0 and used_rows < total_rows:
        frac = 1.0 - used_rows / total_rows
        if frac > 0.05:
            out.append(Diagnostic("samples_dropped", "warning" if frac > 0.5 else "info",
                                  f"{total_rows - used_rows} of {total_rows} equations "
                                  f"({100 * frac:.0f} %) dropped by the velocity threshold "
                                  f"{velocity_threshold:g} rad/s", source))
    if malformed:
        out.append(Diagnostic("samples_dropped", "warning",
                              f"{malformed} malformed row(s) dropped while loading", source))
    return out


def check_bodies(body_names, min_eigenvalues, epsilon, masses=None, nominal_masses=None,
                 mass_factor=3.0):
    """Physically consistent estimate: ``body_on_bound`` (pseudo-inertia's smallest
    eigenvalue within 1 % of the LMI margin ``epsilon``, one for all bodies or (n,): a
    degenerate body, e.g. a line or point mass), ``body_not_physical`` (smallest eigenvalue
    below -``epsilon``: the solver's answer violates the pseudo-inertia LMI J_k >= epsilon 1
    of :func:`~robot_identification.estimation.physically_consistent` - no rigid body, e.g.
    a negative mass, typically with ``solver_inaccurate``) and ``mass_far_from_nominal``
    (mass outside [1/f, f] x the URDF's)."""
    out = []
    eps = np.broadcast_to(np.asarray(epsilon, dtype=float), (len(body_names),))
    for k, (nm, ev) in enumerate(zip(body_names, min_eigenvalues)):
        if ev < -eps[k]:
            out.append(Diagnostic("body_not_physical", "warning",
                                  f"smallest pseudo-inertia eigenvalue {ev:.3g} < 0: the "
                                  f"solver's answer violates the physical constraint (margin "
                                  f"{eps[k]:.3g}), this is no rigid body; use the wls "
                                  f"estimate, and better excitation or filtering", nm))
        elif ev <= 1.01 * eps[k]:
            out.append(Diagnostic("body_on_bound", "warning",
                                  f"smallest pseudo-inertia eigenvalue {ev:.3g} is on the bound "
                                  f"{eps[k]:.3g}: a degenerate body (line or point mass)", nm))
        if masses is not None and nominal_masses is not None and nominal_masses[k] > 0:
            r = masses[k] / nominal_masses[k]
            if not (1.0 / mass_factor <= r <= mass_factor):
                out.append(Diagnostic("mass_far_from_nominal", "warning",
                                      f"mass {masses[k]:.4g} kg is {r:.3g}x the URDF's "
                                      f"{nominal_masses[k]:.4g} kg", nm))
    return out


#: Slope of the motor on the link position (link side) outside which the two encoders of an
#: elastic joint disagree (``motor_position_mismatch``): a deflection is a small part of the
#: motion, so the slope of correct data is close to 1.
MOTOR_SLOPE_RANGE = (0.5, 2.0)


def check_motor_positions(joint_names, q, theta, gear_ratios, source=""):
    """``motor_position_mismatch`` (error), elastic joints: the motor position theta (link
    side: the motor angle divided by the gear ratio, Zollo et al. 2014, eq. 1-2) must follow
    the link position q up to the small joint deflection. Per joint whose link moves, the
    least-squares slope of theta on q (both detrended) outside :data:`MOTOR_SLOPE_RANGE`
    names the likely cause: negative (a motor encoder counting the other way), about the
    gear ratio (the motor angle not divided by it), about 57.3 (degrees), else the factor.
    Without this check such data were identified with exit 0: motor angles on the motor
    side (100 x) gave stiffnesses of -1e-8 N*m/rad with warnings only; one reversed motor
    encoder a viscous friction of -20 (held-out UR5 from ``init --model elastic``).

    Parameters
    ----------
    joint_names : list of str
    q, theta : ndarray (N, n)
        Link and motor positions [rad], link side.
    gear_ratios : sequence of float (n,)
        The config's gear ratios (motor angle / joint angle).
    source : str

    Returns
    -------
    list of Diagnostic
        One per such joint, subject the joint.
    """
    q = np.asarray(q, dtype=float)
    theta = np.asarray(theta, dtype=float)
    if q.ndim != 2 or q.shape != theta.shape or q.shape[0] < 8:
        return []
    dq, dth = q - q.mean(axis=0), theta - theta.mean(axis=0)
    var = np.einsum("ij,ij->j", dq, dq)
    noise = noise_std(q)
    out = []
    lo, hi = MOTOR_SLOPE_RANGE
    for j, nm in enumerate(joint_names):
        spread = np.sqrt(var[j] / q.shape[0])
        if not spread > max(10.0 * noise[j], 1e-9):     # the link does not move: no slope
            continue
        slope = float(dq[:, j] @ dth[:, j] / var[j])
        if lo <= slope <= hi:
            continue
        g = float(gear_ratios[j]) if gear_ratios is not None else 1.0
        gear = g > 2.0 and abs(abs(slope) / g - 1.0) <= 0.25
        degrees = abs(abs(slope) / np.degrees(1.0) - 1.0) <= 0.1
        if slope < -lo:
            why = "the motor encoder counts the other way (its sign reversed?)"
        elif gear and degrees:      # a gear ratio near 57.3: both readings named
            why = (f"motor-side angles (divide the motor position by the gear ratio {g:g}) "
                   f"or the motor position in degrees instead of radians?")
        elif gear:
            why = (f"motor-side angles: divide the motor position by the gear ratio {g:g} "
                   f"(theta is the motor angle referred to the link side)")
        elif degrees:
            why = "the motor position in degrees instead of radians?"
        else:
            why = ("another joint's motor, another unit or gear ratio (theta is the motor "
                   "angle divided by the gear ratio, in rad)?")
        out.append(Diagnostic("motor_position_mismatch", "error",
                              f"{source + ': ' if source else ''}the motor position moves "
                              f"{slope:.3g} x the link position (a deflection leaves about "
                              f"1 x): {why}", nm))
    return out


#: Joint deflection RMS / its noise below which ``deflection_below_noise`` is raised.
DEFLECTION_NOISE_RATIO = 5.0


def check_deflection(joint_names, q, theta, source=""):
    """``deflection_below_noise`` (warning), elastic joints: the joint deflection
    theta - q (motor minus link position, link side), which carries the elastic torque
    K (theta - q) (Zollo et al. 2014, eq. 2), has an RMS below :data:`DEFLECTION_NOISE_RATIO`
    times its measurement noise (:func:`noise_std`): K (theta - q) in that joint's link and
    motor equations is then mostly noise (a stiff joint with light torques, coarse or noisy
    encoders), and the stiffness, the motor-side parameters and the link parameters of those
    equations come out biased (measured on a Unitree Z1 from ``init --model elastic`` at
    60 dB, MuJoCo, the base link's Izz 0.123 for a true 0.518, joint 1's K 1182 for 1990; a
    rigid model on the same data 0.550 for link + rotor inertia 0.557).

    Parameters
    ----------
    joint_names : list of str
    q, theta : ndarray (N, n)
        Link and motor positions [rad], link side.
    source : str

    Returns
    -------
    list of Diagnostic
        One per such joint, subject the joint.
    """
    x = np.asarray(theta, dtype=float) - np.asarray(q, dtype=float)
    if x.ndim != 2 or x.shape[0] < 8:
        return []
    rms = np.sqrt(np.mean(x ** 2, axis=0))
    noise = noise_std(x)
    out = []
    for nm, r, s in zip(joint_names, rms, noise):
        if s > 0 and r < DEFLECTION_NOISE_RATIO * s:
            out.append(Diagnostic("deflection_below_noise", "warning",
                                  f"{source + ': ' if source else ''}the joint deflection "
                                  f"theta - q has RMS {r:.3g} rad, only {r / s:.2g} x its "
                                  f"noise {s:.3g} rad: the stiffness, the motor-side and "
                                  f"the link parameters of this joint's equations rest on "
                                  f"noise and are biased (finer encoders, larger torques, or "
                                  f"a rigid model for this arm: link + rotor inertia, no "
                                  f"stiffness)", nm))
    return out


def check_prior_bodies(body_names, prior, source="the URDF"):
    """``prior_not_physical``: bodies of the physical estimate's prior (standard parameters)
    whose pseudo-inertia (Wensing et al. 2018, eq. 4) has a negative eigenvalue, i.e. no
    rigid body has them (a principal moment above the sum of the other two, the triangle
    inequality; a centre of mass far outside the inertia ellipsoid). The log-det divergence
    (Lee, Wensing & Park 2020, eq. 22) needs a positive definite prior, so such a body is
    replaced by a shifted one (:func:`~robot_identification.estimation._physical.
    nominal_pseudo_inertias`): the estimate is pulled toward a body that is not the URDF's.

    Parameters
    ----------
    body_names : list of str
        (n,)
    prior : array_like (10 n + drive parameters,)
        Standard parameters [kg, kg*m, kg*m^2] of the prior, body by body.
    source : str
        What the prior is, for the message.

    Returns
    -------
    list of Diagnostic
        One warning per such body, subject the body.
    """
    prior = np.asarray(prior, dtype=float)
    out = []
    for k, nm in enumerate(body_names):
        ev = np.linalg.eigvalsh(pseudo_inertia(prior[10 * k: 10 * k + 10]))
        if ev[0] < -1e-9 * max(abs(ev[-1]), 1e-12):
            out.append(Diagnostic("prior_not_physical", "warning",
                                  f"the prior body from {source} is no rigid body (pseudo-"
                                  f"inertia eigenvalue {ev[0]:.3g} < 0: a principal moment "
                                  f"above the sum of the other two?); the physical estimate's "
                                  f"log-det prior uses a shifted body: fix its <inertia>, or "
                                  f"give --prior none or a prior file", nm))
    return out


def check_saturation(joint_names, tau, effort_limits, source="", fraction=0.01):
    """``effort_saturated``: torques at the effort limit in more than ``fraction`` of the
    samples (within 0.5 %), where the drive clips the command and the measured torque no
    longer follows the model.

    Parameters
    ----------
    joint_names : list of str
    tau : ndarray (N, n)
        Measured torques [N*m | N].
    effort_limits : list of float or None
        Per joint; ``None`` skips the joint.
    """
    out = []
    tau = np.asarray(tau, dtype=float)
    for j, (nm, lim) in enumerate(zip(joint_names, effort_limits)):
        if not lim or not np.isfinite(lim) or tau.shape[0] == 0:
            continue
        at = np.abs(tau[:, j]) >= 0.995 * lim
        share = float(at.mean())
        if share > fraction:
            out.append(Diagnostic("effort_saturated", "warning",
                                  f"{nm}: {int(at.sum())} of {at.size} samples "
                                  f"({100 * share:.1f} %) at the effort limit {lim:.4g}: "
                                  f"the drive clips; drop those samples or lower the excitation",
                                  f"{source}:{nm}" if source else nm))
    return out


#: A step between samples larger than this many median steps is a time jump.
TIME_JUMP_STEPS = 10.0


def check_time_jumps(t, source="", steps=TIME_JUMP_STEPS):
    """``time_jump``: steps between time stamps above ``steps`` median steps (lost samples,
    a paused recording or a clock jump); the filters and numerical derivatives bridge them
    with wrong values. Loaders refuse far larger jumps (DataError)."""
    t = np.asarray(t, dtype=float)
    if t.shape[0] < 3:
        return []
    dt = np.diff(t)
    step = float(np.median(dt))
    big = np.flatnonzero(dt > steps * step) if step > 0 else np.array([], dtype=int)
    if big.size == 0:
        return []
    k = int(big[np.argmax(dt[big])])
    return [Diagnostic("time_jump", "warning",
                       f"{big.size} jump(s) in the time stamps larger than {steps:g} sample "
                       f"periods; the largest: {dt[k]:.6g} s at t = {t[k]:.6g} s (median step "
                       f"{step:.3g} s): split the recording there", source)]


#: ``recording_losses`` (error) above this share of a state topic's samples lost or missing
RECORDING_LOSS_ERROR = 0.05
#: ... or with a gap in the stamps longer than this many sample periods
RECORDING_GAP_ERROR_PERIODS = 50
#: the identifier node refuses a bag above this share of lost or missing state samples ...
RECORDING_LOSS_LIMIT = 0.25
#: ... or with a gap in the stamps longer than this [s]
RECORDING_GAP_LIMIT_S = 1.0


def recording_losses(recording):
    """Per state topic of a bag's recorder counts (``Dataset.metadata['recording']``):
    ``{topic: (share, gap)}``, the share of the expected samples lost in transport or missing
    from the stamps and the longest gap in the stamps [s] (0 where not counted)."""
    out = {}
    for topic, c in sorted((recording or {}).items()) if isinstance(recording, dict) else []:
        if not isinstance(c, dict) or not c.get("expected"):
            continue
        lost = int(c.get("lost") or 0) + int(c.get("missing") or 0)
        out[topic] = (lost / (int(c["expected"]) + int(c.get("lost") or 0)),
                      float(c.get("longest_gap_s") or 0.0))
    return out


def check_recording_counts(recording, source=""):
    """``messages_lost`` and ``samples_missing``: the recorder's counts of a bag
    (``Dataset.metadata['recording']``, written by the recorder node: per topic ``recorded``,
    ``lost`` and for state topics ``expected``/``missing`` at ``expected_rate_hz`` and the
    arrival rate on the recorder's clock: the wall clock, or ``/clock`` with ``use_sim_time``).

    - ``messages_lost`` (warning): messages a publisher sent during the recording (DDS
      publication sequence numbers) that never reached the recorder.
    - ``samples_missing``: state samples absent from the header stamps at the expected rate
      (never published - the robot's loop skipped them - or lost); warning above 1 %, info
      below. Info when the stamps are complete but arrived below 0.9 x the expected rate on
      the recorder's clock (a publisher whose clock runs slower than real time, e.g. a
      free-running simulator that cannot keep up: the data are consistent in its own time; a
      lockstep simulation recorded on its ``/clock`` is not reported).
    - ``recording_losses`` (error): a state topic with more than
      :data:`RECORDING_LOSS_ERROR` of its samples lost or missing, or a gap in its stamps
      longer than :data:`RECORDING_GAP_ERROR_PERIODS` sample periods (the identifier node
      refuses bags beyond :data:`RECORDING_LOSS_LIMIT` / :data:`RECORDING_GAP_LIMIT_S`).

    Parameters
    ----------
    recording : dict
        Topic -> counts (:meth:`robot_identification.nodes._recording.TopicCount.summary`).
    """
    out = []
    if not isinstance(recording, dict):
        return out
    for topic, c in sorted(recording.items()):
        if not isinstance(c, dict):
            continue
        recorded, lost = int(c.get("recorded") or 0), c.get("lost")
        if lost:
            total = recorded + int(lost)
            out.append(Diagnostic(
                "messages_lost", "warning",
                f"{topic}: {lost} of {total} messages published during the recording "
                f"({100 * lost / total:.1f} %) never reached the recorder (gaps in the "
                f"publishers' sequence numbers)", f"{source}:{topic}" if source else topic))
        expected, missing = c.get("expected"), c.get("missing")
        rate = c.get("expected_rate_hz")
        if not expected or missing is None or not rate:
            continue
        subject = f"{source}:{topic}" if source else topic
        if missing > 0:
            share = missing / expected
            origin = (f"{lost} of them lost in transport, the rest never published"
                      if lost else "never published (e.g. periods the robot's loop skipped)")
            out.append(Diagnostic(
                "samples_missing", "warning" if share > 0.01 else "info",
                f"{topic}: {missing} of {expected} samples at {rate:g} Hz "
                f"({100 * share:.1f} %) are absent from the header stamps "
                f"({c.get('stamp_span_s', 0):.3f} s): {origin}", subject))
        arrival = c.get("arrival_rate_hz")
        if missing == 0 and arrival and arrival < 0.9 * rate:
            out.append(Diagnostic(
                "samples_missing", "info",
                f"{topic}: stamps complete at {rate:g} Hz ({recorded} samples over "
                f"{c.get('stamp_span_s', 0):.3f} s of stamps) but they arrived at "
                f"{arrival:.0f} Hz over {c.get('arrival_span_s', 0):.2f} s of the recorder's "
                f"clock: the publisher's clock ran at {arrival / rate:.2f} x real time; "
                f"{round(c.get('arrival_span_s', 0) * rate) + 1 - recorded} fewer samples "
                f"than real time at {rate:g} Hz", subject))
    for topic, (share, gap) in recording_losses(recording).items():
        rate = float(recording[topic].get("expected_rate_hz") or 0.0)
        if share > RECORDING_LOSS_ERROR or (rate and gap > RECORDING_GAP_ERROR_PERIODS / rate):
            out.append(Diagnostic(
                "recording_losses", "error",
                f"{topic}: {100 * share:.1f} % of the samples lost or missing, longest gap in "
                f"the stamps {gap:.3f} s (limits: {100 * RECORDING_LOSS_ERROR:g} %, "
                f"{RECORDING_GAP_ERROR_PERIODS} sample periods): the filtered derivatives "
                f"and the fit across the gaps are not to be trusted",
                f"{source}:{topic}" if source else topic))
    return out


def check_stamp_order(metadata, source=""):
    """``stamps_reordered`` (warning): a bag's messages whose header stamps lie before an
    earlier message's (the reader sorts them by stamp) or repeat one (dropped), from the
    reader's ``metadata['out_of_order']`` and ``['duplicates_dropped']`` (a message re-published
    unchanged, e.g. a lockstep simulator's keep-alive, is no stamping fault: not counted). Ten
    messages stamped 5 ms early in 1000 at 1 kHz moved a Stribeck estimate from -0.21 to 0.80
    without a word: a driver's stamping jitter makes the derivatives across them wrong."""
    back = int((metadata or {}).get("out_of_order") or 0)
    dup = int((metadata or {}).get("duplicates_dropped") or 0)
    if not back and not dup:
        return []
    parts = ([f"{back} message(s) stamped before an earlier one (sorted by stamp)"]
             if back else []) + ([f"{dup} with a repeated stamp (dropped)"] if dup else [])
    return [Diagnostic("stamps_reordered", "warning",
                       f"{' and '.join(parts)}: header stamps that jitter or go back bias "
                       f"the derivatives; check the driver's time stamping", source)]


def check_unclosed(metadata, source=""):
    """``recording_unclosed`` (warning): a rosbag2 directory without metadata.yaml, read up to
    its last complete chunk: its recorder was killed or is still recording, so the end of
    the run may be missing from the identification."""
    if not (metadata or {}).get("unclosed"):
        return []
    return [Diagnostic("recording_unclosed", "warning",
                       "the bag has no metadata.yaml: its recorder was killed or is still "
                       "recording; read up to its last complete chunk, the end of the run may "
                       "be missing (identify it again once the recorder has stopped)", source)]


#: A run stopped before this share of its planned duration makes ``recording_incomplete``
#: an error: too little of the designed excitation to identify from.
MIN_EXCITATION_SHARE = 0.5


def check_excitation_complete(excitation, source=""):
    """``recording_incomplete``: the recorder found that the bag does not hold the whole
    excitation run (``Dataset.metadata['excitation']``, written by the recorder node from the
    excitation publisher's ``/diagnostics`` status,
    :func:`robot_identification.nodes._recording.excitation_coverage`): the run was stopped
    before its end (a controller fault, ``~/stop``) or the recording starts after its first
    reference or ends before its planned end. The identification uses what was recorded;
    the excitation it was designed with was not played in full: a warning, and an error
    (nothing written without ``--force``; the Identify action fails) for a run stopped
    before :data:`MIN_EXCITATION_SHARE` of its planned duration: the hardware-like robot's
    controller heartbeat stopped a 5 s PUMA 560 run after 0.82 s, whose identified model
    predicted the held-out torque with mean NRMSE 13.3 against 0.077 for the whole run
    (docs/ros.md)."""
    if not isinstance(excitation, dict):
        return []
    out = []
    for name, c in sorted(excitation.items()):
        if not isinstance(c, dict) or c.get("complete") is not False:
            continue
        played, planned = c.get("played_s"), c.get("planned_s")
        share = (played / planned if c.get("state") == "stopped"
                 and isinstance(played, (int, float)) and isinstance(planned, (int, float))
                 and planned > 0 else None)
        if share is not None and share < MIN_EXCITATION_SHARE:
            out.append(Diagnostic(
                "recording_incomplete", "error",
                f"{name}: {c.get('why') or 'incomplete'}: the identification data hold "
                f"{100 * share:.0f} % of the designed excitation, too little to identify "
                f"from (below {100 * MIN_EXCITATION_SHARE:.0f} %): run it again", source))
        else:
            out.append(Diagnostic(
                "recording_incomplete", "warning",
                f"{name}: {c.get('why') or 'incomplete'}: the identification data hold "
                f"only part of the designed excitation", source))
    return out


#: |correlation| above which the measured torque is compared with the nominal prediction.
NOMINAL_CORRELATION = 0.5
#: Ratio measured / nominal torque beyond which the ``torque_scale`` error is given.
NOMINAL_SCALE = 10.0


def negated_refit_gain(neq, j):
    """Weighted residual sum of squares of the least-squares refit with row group ``j``'s
    torque negated, over that of the data as recorded (< 1: the negated reading fits better).

    From the normal equations alone (G_j, b_j, c_j per group): groups weighted by 1 / their
    measured energy per row (``c_j / count_j``, so that small joints count), negating group
    j's torque changes b_j to -b_j; the refit residual is c - b' G^+ b.

    Parameters
    ----------
    neq : NormalEquations
        Per-group ``G`` (groups, p, p), ``b`` (groups, p), ``c`` (groups,), optional ``count``.
    j : int

    Returns
    -------
    float (inf when the recorded reading leaves no residual)
    """
    G, b, c = (np.asarray(x, dtype=float) for x in (neq.G, neq.b, neq.c))
    count = np.asarray(getattr(neq, "count", np.ones(len(c))), dtype=float)
    w = np.where(c > 0, np.maximum(count, 1.0) / np.where(c > 0, c, 1.0), 0.0)
    Gw = np.einsum("j,jik->ik", w, G)
    cw = float(w @ c)

    def residual(bw):
        x = np.linalg.lstsq(Gw, bw, rcond=None)[0]
        return max(cw - float(bw @ x), 0.0)

    bw = w @ b
    rec = residual(bw)
    if not rec > 0:
        return float("inf")
    return residual(bw - 2.0 * w[j] * b[j]) / rec


def check_torque_against_nominal(labels, neq, nominal_base, fitted_elsewhere=False):
    """Measured torques against the torques the URDF's nominal parameters predict on the same
    motion, per row group j, from the normal equations alone: with the nominal base
    parameters beta0, ``a = beta0' G_j beta0`` (predicted energy), ``b = b_j' beta0``
    (cross term) and ``c = c_j`` (measured energy), the correlation is b / sqrt(a c) and the
    least-squares slope of measured on predicted is b / a.

    ``torque_sign``: correlation below -0.5, the measured torque runs against the
    prediction (an opposite sign convention of a torque or position column, another joint's
    column); an error where refitting the whole model with that group's torque negated
    (:func:`negated_refit_gain`, from the same normal equations) at least halves the
    weighted residual sum of squares, else a warning (a correlation alone does not tell a
    reversed column from a URDF far from the arm). Where the per-recording check ran
    (``fitted_elsewhere``) a warning at most: its readings are refitted and scored on held-out
    halves (issue #27: an error only where the reading explains held-out data better), this
    refit is in-sample and cannot tell a second joint's reading from one that check already
    named (a Unitree Z1 CAD-error draw, joint6's torque negated: the per-recording check named
    joint6, and negating jointGripper's torque too, whose URDF torque runs against the
    measured one at correlation -0.90 on the correct data, "left 0.03 x the residual": a
    second error naming the wrong joint). ``torque_scale`` (error, as the per-recording
    check's beyond its ``SCALE_ERROR``: CAD errors of the URDF are never that far): correlation
    above 0.5 but a slope outside [1/10, 10] (torque in mN*m or in amperes, a gear ratio
    missing; elastic arms, whose motor torques only this check compares: an
    ``init --model elastic`` UR5 with motor-side torques, 0.01 x on every joint, was
    identified with exit 0 and warnings). Groups without measured
    torque (elastic link equations) or without a nominal prediction (a URDF without
    inertials) are skipped.

    Parameters
    ----------
    labels : list of str
        Row-group labels (``joint1``, ``joint1 motor``).
    neq : NormalEquations
        With per-group ``G`` (groups, p, p), ``b`` (groups, p), ``c`` (groups,).
    nominal_base : ndarray (p,)
        Nominal base parameters.
    fitted_elsewhere : bool
        The per-recording check (:func:`check_against_nominal`: friction, offset and scale fitted
        per joint) ran on every recording: no ``torque_scale`` here, and ``torque_sign`` only as
        a warning and where
        the URDF's torque is within :data:`NOMINAL_SCALE` x of the measured (on a friction-
        dominated joint a weak negative correlation says nothing: a real UR10e Fourier run of the
        dataset's authors, ur-20_02_06-20sec_10harm, had wrist_2 at correlation -0.54 with a URDF
        torque 1/25 of the measured).
    """
    beta = np.nan_to_num(np.asarray(nominal_base, dtype=float))
    out = []
    for label, G, b, c in zip(labels, neq.G, neq.b, neq.c):
        a = float(beta @ G @ beta)
        if not (a > 0 and c > 0) or not np.isfinite(a * c):
            continue
        cross = float(b @ beta)
        r, slope = cross / np.sqrt(a * c), cross / a
        if r < -NOMINAL_CORRELATION:
            if fitted_elsewhere and not 1 / NOMINAL_SCALE <= abs(slope) <= NOMINAL_SCALE:
                continue
            gain = negated_refit_gain(neq, list(labels).index(label))
            sure = gain <= 0.5 and not fitted_elsewhere
            why = ("" if sure else " (not confirmed: a warning)" if gain > 0.5 else
                   " (in-sample only; the held-out check per recording did not name it: a "
                   "warning)")
            out.append(Diagnostic(
                "torque_sign", "error" if sure else "warning",
                f"the measured torque runs against the torque the URDF's nominal parameters "
                f"predict (correlation {r:.2f}, slope {slope:.3g}): an opposite sign "
                f"convention of the torque or position, or another joint's column? The model "
                f"refitted with this torque negated leaves {gain:.2g} x the residual" + why,
                label))
        elif (r > NOMINAL_CORRELATION and not fitted_elsewhere
              and not 1 / NOMINAL_SCALE <= slope <= NOMINAL_SCALE):
            out.append(Diagnostic(
                "torque_scale", "error",
                f"the measured torque is {slope:.3g}x the torque the URDF's nominal "
                f"parameters predict (correlation {r:.2f}): torque units (mN*m, A instead of "
                f"N*m?), a missing gear ratio or drive gain, or a URDF far from the arm?",
                label))
    return out


def check_locked_joints(locked):
    """Joints of the URDF that the configuration leaves out (gripper fingers, passive or
    mimic joints): locked, their links identified as part of the body they hang on.

    Parameters
    ----------
    locked : sequence of (str, float or None)
        Joint name and locked position [rad or m], None for a multi-dof joint locked at
        the identity pose (``RobotModel.locked_joints``).

    Returns
    -------
    list of Diagnostic
        One ``joints_locked`` info naming them, or none.
    """
    if not locked:
        return []
    text = ", ".join(f"{name} at {pos:.4g}" if pos is not None else
                     f"{name} (multi-dof) at the identity pose" for name, pos in locked[:8])
    more = f" and {len(locked) - 8} more" if len(locked) > 8 else ""
    return [Diagnostic("joints_locked", "info",
                       f"{len(locked)} URDF joint(s) not in the config are locked: {text}{more} "
                       f"(rad or m); the links they carry are identified as part of the body "
                       f"they hang on: list a joint under joints: to identify it")]
