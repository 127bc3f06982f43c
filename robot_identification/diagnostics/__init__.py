"""Diagnostics that travel with every result: what makes a result doubtful, said out loud.

A :class:`Diagnostic` is data (code, severity, message, optional subject). Results carry a list
of them (``IdentificationResult.diagnostics``, results.yaml ``diagnostics:``); the CLI prints
them, the report shows them, the nodes log and publish them. Codes are stable strings that
tests and other tools match on (e.g. ``negative_stiffness``, ``poorly_identified``); the
message is for people and names the numbers.

- :class:`Diagnostic`, :func:`worst` -- the record (``_diagnostic``)
- ``check_*`` -- the checks; each takes plain numbers and arrays and returns a list of
  Diagnostic (empty when nothing is doubtful), so every caller can use them (``_checks``)
- :func:`check_against_nominal` -- recorded torques against the URDF's nominal model
  (``_nominal``)
- :func:`recording_summary` -- what the checks need from one recording (``_summary``)
- :func:`collect_diagnostics`, :func:`physical_diagnostics` -- all checks on an assembled
  result (``_collect``)
- :func:`parameter_trust`, :func:`model_verdict` -- trust per base parameter (precision,
  distance from the prior, physical plausibility) and the held-out verdict against the
  nominal URDF (``_trust``)

The spectra and noise levels the checks use are in :mod:`robot_identification.signal`
(:func:`~robot_identification.signal.noise_std`, ``excitation_band``, ``signal_band``).
"""
from robot_identification.diagnostics._diagnostic import (  # noqa: F401
    SEVERITIES, Diagnostic, worst)
from robot_identification.diagnostics._checks import (  # noqa: F401
    BIAS_STD_RATIO, CONDITION_LIMIT, CUTOFF_BAND_RATIO, CUTOFF_NYQUIST_FRACTION,
    DEFLECTION_NOISE_RATIO, DROPPED_FRICTION_LIMIT, GOOD_CONDITION, NOMINAL_CORRELATION,
    NOMINAL_SCALE, NUMERICAL_ZERO, OUTLIER_SIGMAS, POORLY_IDENTIFIED_PERCENT,
    RECORDING_GAP_ERROR_PERIODS, RECORDING_GAP_LIMIT_S, RECORDING_LOSS_ERROR,
    RECORDING_LOSS_LIMIT, RESIDUAL_NOISE_RATIO, STILL_VELOCITY, TIME_JUMP_STEPS,
    TRUTH_NME_LIMIT, TRUTH_NME_TARGET, TURN_SHARE, UNIDENTIFIABLE_PERCENT,
    VELOCITY_LIMIT_FACTOR, check_bodies, check_condition, check_coulomb_smear, check_cutoff,
    check_deflection, check_excitation_complete, check_joint_limits, check_locked_joints,
    check_motor_positions, check_outliers, check_parameter_std, check_prior_bodies,
    check_recording_counts, check_recording_length, check_residual_noise, check_samples_dropped,
    check_saturation, check_signs, check_stamp_order, check_still_joints, check_time_jumps,
    check_torque_against_nominal, check_truth, check_truth_coverage, check_unclosed,
    check_velocity_limits, check_velocity_threshold, count_outliers, direction_reversals,
    one_way_hint, one_way_joints, recording_losses, scaled_condition_number)
from robot_identification.diagnostics._nominal import check_against_nominal  # noqa: F401
from robot_identification.diagnostics._summary import recording_summary  # noqa: F401
from robot_identification.diagnostics._collect import (  # noqa: F401
    NOMINAL_CODES, collect_diagnostics, physical_diagnostics)
from robot_identification.diagnostics._trust import (  # noqa: F401
    PRECISION_LEVELS, PRIOR_FRACTION, PRIOR_SIGMAS, SCALE_FLOOR, VERDICT_MARGIN, base_scales,
    model_verdict, parameter_trust, verdict_of)
