"""What the checks need from one recording, measured on the raw data."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robot_identification.diagnostics._checks import (
    check_deflection, check_excitation_complete, check_joint_limits, check_motor_positions,
    check_outliers, check_recording_counts, check_samples_dropped, check_saturation,
    check_stamp_order, check_time_jumps, check_unclosed, check_velocity_limits,
    direction_reversals, span_velocity)
from robot_identification.diagnostics._nominal import check_against_nominal
from robot_identification.model import RobotModel
from robot_identification.signal import (excitation_band, noise_floor, noise_std, signal_band,
                                         velocity_noise_from_positions)


def rigid_twin(model):
    """The rigid model of an elastic ``model``'s arm (the same URDF, joints and drives, no
    joint stiffness: rotor inertia on the link side, Zollo et al. 2014's model with K -> inf),
    built once per model. The URDF-based check per recording judges an elastic arm's motor
    torques [N*m] (N, n) on its link positions [rad] (N, n) against it.

    Parameters
    ----------
    model : RobotModel

    Returns
    -------
    RobotModel
        ``model`` itself is not changed but for the cached twin.

    Raises
    ------
    ConfigError
        A config the rigid model refuses (as ``RobotModel``).
    """
    twin = getattr(model, "_rigid_twin", None)
    if twin is None:
        twin = RobotModel(replace(model.config, model="rigid"))
        try:
            model._rigid_twin = twin
        except AttributeError:       # a model that takes no attributes: built each time
            pass
    return twin


def recording_summary(model, dataset, label=None):
    """What the checks need from one recording, computed from the raw data (cheap, O(N)).

    Returns
    -------
    dict
        ``source`` (label), ``sample_rate`` [Hz], ``band_hz`` (:func:`excitation_band` of
        q), ``signal_hz`` (:func:`signal_band` of the signals the regressor differentiates:
        measured velocities when recorded, else positions), ``velocity_noise``,
        ``velocity_rms`` (n,) (of the motor velocity for elastic joints), ``n_samples``,
        ``duration_s`` [s], ``reversals`` (n,) (:func:`direction_reversals` of q),
        ``range_share`` (n,) (q's travel over its limits' range; NaN without limits),
        ``velocity_measured`` (bool), ``velocity_noise_white`` (n,) of bool (a measured
        velocity whose noise is its own, not the positions' differentiated:
        :func:`~robot_identification.signal.velocity_noise_from_positions`), ``torque_noise``
        (n,) (:func:`noise_std` of the measured torque), ``torque_noise_floor`` (n,)
        (:func:`noise_floor`: NaN where the torque is smoother than white noise) and
        ``diagnostics`` (joint limits, torque outliers, malformed rows of this recording).

    Raises
    ------
    DataError
        Invalid dataset (:meth:`Dataset.validate`).
    """
    ds = dataset.select_joints(model.joint_names).validate(min_samples=20,
                                                           elastic=model.config.elastic)
    if hasattr(model, "unwrap_positions"):       # continuous joints' wrapped angles
        ds = replace(ds, q=model.unwrap_positions(ds.q), theta=None if ds.theta is None
                     else model.unwrap_positions(ds.theta))
    src = label or str(ds.metadata.get("source", "") or "")
    limits = [j.limits.position for j in model.config.joints]
    diags = check_joint_limits(model.joint_names, ds.q, limits, src,
                               getattr(model, "joint_types", None))
    diags += check_outliers(src or "recording", model.joint_names, ds.tau)
    diags += check_saturation(model.joint_names, ds.tau,
                              [j.limits.effort for j in model.config.joints], src)
    diags += check_time_jumps(ds.t, src)
    diags += check_stamp_order(ds.metadata, src)
    diags += check_unclosed(ds.metadata, src)
    diags += check_recording_counts(ds.metadata.get("recording"), src)
    diags += check_excitation_complete(ds.metadata.get("excitation"), src)
    malformed = ds.metadata.get("malformed_rows") or []
    if malformed:
        diags += check_samples_dropped(0, 0, 0.0, malformed=len(malformed), source=src)
    measured = ds.dtheta if model.config.elastic else ds.dq
    pos = ds.theta if model.config.elastic else ds.q
    vel = measured if measured is not None else np.gradient(pos, ds.t, axis=0)
    band = excitation_band(ds.t, ds.q)
    diags += check_velocity_limits(model.joint_names, span_velocity(ds.t, ds.q, ds.dq, band),
                                   [j.limits.velocity for j in model.config.joints], src)
    if model.config.elastic and ds.theta is not None and ds.q is not None:
        mismatch = check_motor_positions(model.joint_names, ds.q, ds.theta,
                                         [j.gear_ratio for j in model.config.joints], src)
        diags += mismatch
        if not mismatch:
            diags += check_deflection(model.joint_names, ds.q, ds.theta, src)
    torque_noise = noise_std(ds.tau)
    checked = False
    if not model.config.elastic:
        found, info = check_against_nominal(model, ds.t, ds.q, ds.tau, ds.dq, band, src,
                                            torque_noise)
        diags += found
        checked = bool(info)
    elif ds.tau is not None and ds.q is not None and not any(
            d.code == "motor_position_mismatch" for d in diags):
        # elastic joints: the motor torque against the rigid twin of the model (link and
        # rotor inertia on the link positions; a deflection is a small part of the motion,
        # the check fits friction, offset and scale per joint): a torque sign, a reversed
        # joint, swapped columns or a torque in other units were identified with exit 0 or
        # stopped on a negative stiffness that named another cause (held-out UR5 from
        # init --model elastic; test/test_elastic_encoder_faults.py)
        found, info = check_against_nominal(rigid_twin(model), ds.t, ds.q, ds.tau, ds.dq,
                                            band, src, torque_noise)
        diags += found
        checked = bool(info)
    # the signals the regressor differentiates: measured velocities when recorded, else
    # positions (link and, for elastic joints, motor)
    diff = [ds.dq if ds.dq is not None else ds.q]
    if model.config.elastic:
        diff.append(ds.dtheta if ds.dtheta is not None else ds.theta)
    # each signal's noise_std computed once (issue #29): the measured velocity is also
    # the first signal differentiated, the torque's is the first estimate of its floor
    vel_noise = noise_std(vel)
    signal_hz = min(signal_band(ds.t, x, vel_noise if x is vel else noise_std(x), band)
                    for x in diff)
    return {"source": src, "sample_rate": ds.sample_rate, "band_hz": band,
            "signal_hz": signal_hz,
            "velocity_noise": vel_noise, "velocity_measured": measured is not None,
            # per joint: the measured velocity's noise is white (its own), not the positions'
            # differentiated (a velocity computed from the encoder: filtered, a much smaller
            # share of it is left, resolve_settings)
            "velocity_noise_white": (np.zeros(vel.shape[1], dtype=bool) if measured is None
                                     else ~velocity_noise_from_positions(measured, pos, ds.t)),
            "velocity_rms": np.sqrt(np.mean(vel ** 2, axis=0)),
            "torque_noise": torque_noise,
            "torque_noise_floor": noise_floor(ds.tau, std=torque_noise),
            "torque_rms": np.sqrt(np.mean(ds.tau ** 2, axis=0)), "diagnostics": diags,
            "nominal_checked": checked, "n_samples": ds.n_samples,
            "duration_s": float(ds.t[-1] - ds.t[0]),
            "reversals": direction_reversals(ds.t, ds.q, band),
            "range_share": np.array([np.ptp(ds.q[:, k]) / (lim[1] - lim[0])
                                     if lim and lim[1] > lim[0] else np.nan
                                     for k, lim in enumerate(limits)])}
