"""All checks on an assembled identification result, in one list."""
from __future__ import annotations

import numpy as np

from robot_identification.diagnostics._checks import (
    check_bodies, check_condition, check_coulomb_smear, check_cutoff, check_locked_joints,
    check_parameter_std, check_recording_length, check_residual_noise, check_samples_dropped,
    check_signs, check_torque_against_nominal, check_truth, check_unfiltered_noise,
    check_velocity_threshold, scaled_condition_number)
from robot_identification.diagnostics._diagnostic import Diagnostic
from robot_identification.estimation import default_prior_scales, leave_block_out


#: Codes of the per-recording check against the URDF's model
#: (:func:`robot_identification.diagnostics.check_against_nominal`).
NOMINAL_CODES = ("torque_sign", "torque_scale", "joints_swapped", "encoder_offset",
                 "torque_dead", "torque_unexplained", "unmodelled_payload", "torque_lag")


def _said_per_recording(d, said):
    """The per-recording check already named this joint (or every joint's scale)."""
    return ((d.code, d.subject) in said
            or (d.code == "torque_scale" and ("torque_scale", "") in said)
            or any(c in ("joints_swapped", "encoder_offset", "torque_dead")
                   and d.subject in s.split(" and ") for c, s in said))


def _sign_scales(model, names):
    """The scale (p,) [SI] of each base parameter that is a standard parameter alone: the
    physical estimate's prior std (:func:`default_prior_scales`), NaN for the others."""
    prior = dict(zip(model.parameter_names, default_prior_scales(model)))
    return [float(prior.get(nm, np.nan)) for nm in names]


def sign_left_out(result, estimate=None):
    """The result's estimate refitted without each of K consecutive stretches of its data
    (:func:`~robot_identification.estimation.leave_block_out` over the time blocks of its
    normal equations, with the estimate's row-group weights): ``(values, std)``, each
    (K, p), the evidence of the sign checks that a sign does not rest on one stretch (for
    an estimate that is not a least-squares one, e.g. ``mrls``, the least-squares refits
    with its weights stand in for it).
    None where the equations carry no time blocks (plain sums, equations whose columns
    differ from the result's, e.g. with joint stiffness appended), the blocks do not add
    up to the sums, or there are too few of them."""
    est = result.estimate if estimate is None else estimate
    neq = result.normal_equations
    blocks = neq.time_blocks() if hasattr(neq, "time_blocks") else None
    if (not blocks or getattr(neq, "base", None) is not None or neq.p != len(est.values)
            or not np.allclose(sum(bl[0] for bl in blocks), neq.G, rtol=1e-9,
                               atol=1e-12 * max(float(np.abs(neq.G).max()), 1.0))):
        return None
    w = getattr(est, "weights", None)
    refits = leave_block_out(blocks, None if w is None or np.shape(w) != (neq.groups,)
                             else w)
    if refits is None:
        return None
    return refits[0], refits[1] * np.asarray(est.std, dtype=float)


def collect_diagnostics(model, result, recordings=()):
    """All checks on an assembled identification result, in one list.

    Parameters
    ----------
    model : RobotModel
    result : IdentificationResult
        With ``estimate``, ``names``, ``expressions``, ``settings``, ``true_values``.
    recordings : list of dict
        :func:`recording_summary` of each recording.

    Returns
    -------
    list of Diagnostic
    """
    est = result.estimate
    s = result.settings or {}
    out = check_locked_joints(getattr(model, "locked_joints", ()))
    for rec in recordings:
        out += rec["diagnostics"]
    neq = result.normal_equations
    cond = est.condition_number if neq is None else scaled_condition_number(neq.gram)
    # the recordings' length where the summaries cover all of their samples (a streamed
    # recording is summarised on its first chunks only)
    covered = bool(recordings) and sum(r.get("n_samples", 0) for r in recordings) >= 0.9 * int(
        getattr(result, "n_samples", 0) or 0)
    short = (check_recording_length(model.joint_names, cond, len(result.names), recordings)
             if covered else [])
    out += short or check_condition(cond)
    out += check_signs(result.names, result.expressions, est.values, est.std, result.units,
                       _sign_scales(model, result.names),
                       left_out=sign_left_out(result))
    if neq is not None and getattr(result, "base", None) is not None:
        nominal = np.array(model.nominal_parameters(), dtype=float)
        said = {(d.code, d.subject) for d in out if d.code in NOMINAL_CODES}
        # the per-recording check fits friction and offset, the normal equations cannot:
        # where it ran, their scale is not repeated (friction-dominated wrists and payloads
        # gave 'torque units?' on single joints), nor a sign the URDF cannot judge
        checked = bool(recordings) and all(r.get("nominal_checked") for r in recordings)
        base = getattr(neq, "base", None) or result.base    # the equations' own columns
        out += [d for d in check_torque_against_nominal(
                    result.row_labels, neq, base.base_values(np.nan_to_num(nominal)),
                    fitted_elsewhere=checked)
                if not _said_per_recording(d, said)]
    out += check_parameter_std(result.names, est.values, est.relative_std)
    if recordings:
        # the noise floor where it is known (white); NaN (unknown) where a recording's torque
        # is smoother than white noise (pre-smoothed, noise-free)
        noise = np.median(np.stack([r.get("torque_noise_floor", r["torque_noise"])
                                    for r in recordings]), axis=0)
        rms = np.median(np.stack([r["torque_rms"] for r in recordings]), axis=0)
        if model.config.elastic:
            noise = np.concatenate([np.full(model.n, np.nan), noise])
            rms = np.concatenate([np.full(model.n, np.nan), rms])
        out += check_residual_noise(result.row_labels, est.residual_rms, noise, rms)
        band = max(r["band_hz"] for r in recordings)
        fs = min(r["sample_rate"] for r in recordings)
        signal = min(r.get("signal_hz", np.inf) for r in recordings)
        out += check_cutoff(s.get("cutoff_hz"), fs, band,
                            None if not np.isfinite(signal) else signal)
        out += check_unfiltered_noise(
            s.get("cutoff_hz"), s.get("preprocessing"), model.joint_names,
            np.median(np.stack([r["velocity_noise"] for r in recordings]), axis=0),
            np.median(np.stack([r["velocity_rms"] for r in recordings]), axis=0), signal)
    kinds = set(model.drive_parameter_keys())
    if "reversal_fraction" in s:
        out += check_coulomb_smear(s.get("cutoff_hz"), s.get("velocity_threshold"), kinds,
                                   s["reversal_fraction"], bool(s.get("drop_reversals")),
                                   s.get("reversal_window_s"),
                                   fir=s.get("preprocessing") if s.get("preprocessing")
                                   in ("polynomial", "savgol") else None)
    out += check_velocity_threshold(s.get("velocity_threshold"), s.get("friction_deadband"),
                                    kinds)
    if neq is not None and s.get("velocity_threshold"):
        total = int(result.n_samples) * int(neq.groups)
        out += check_samples_dropped(int(neq.count.sum()), total, s["velocity_threshold"])
    if result.true_values is not None:
        out += check_truth(result.normalised_mean_error(), est.values, result.true_values,
                           est.std, result.names, est.relative_std,
                           result.negligible_parameters())
    return out


def physical_diagnostics(model, physical):
    """Checks of a physically consistent estimate
    (:class:`~robot_identification.estimation.PhysicalEstimate`): ``body_on_bound``,
    ``mass_far_from_nominal`` (:func:`check_bodies`), ``prior_distance`` (info: the
    log-det divergence of the bodies from the URDF, total and largest),
    ``solver_inaccurate`` (warning: a solve ended ``optimal_inaccurate``) and
    ``null_space_unrefined`` (warning: the second, prior-only solve over the directions the
    data do not determine failed, so those directions are not pulled toward the prior)."""
    pi = np.asarray(physical.standard)
    pi0 = model.nominal_parameters()
    masses = pi[0: 10 * model.n: 10]
    out = check_bodies(model.body_names, physical.min_eigenvalues, physical.epsilon,
                       masses, pi0[0: 10 * model.n: 10])
    dist = physical.prior_distance
    if dist is not None and len(dist):
        k = int(np.argmax(dist))
        out.append(Diagnostic("prior_distance", "info",
                              f"log-det divergence of the bodies from the URDF: total "
                              f"{float(np.sum(dist)):.3g}, largest {float(dist[k]):.3g} "
                              f"({model.body_names[k]})", "physical"))
    if "inaccurate" in str(physical.status):
        out.append(Diagnostic("solver_inaccurate", "warning",
                              f"the conic solver stopped short of its tolerances (status "
                              f"'{physical.status}'): the physical estimate may miss the "
                              f"optimum; compare its cost_increase and held-out error with "
                              f"wls", "physical"))
    if "unrefined" in str(physical.status):
        out.append(Diagnostic("null_space_unrefined", "warning",
                              "the prior-only solve over the parameter directions the data do "
                              "not determine failed: the standard parameters (export-urdf) may "
                              "be far from the URDF there although the base parameters fit",
                              "physical"))
    return out
