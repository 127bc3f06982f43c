"""The identification engine: one way from recordings to estimates.

recordings (each an iterator of chunks; a dataset = one chunk)
  -> pre-processing strategy by name (``butterworth`` | ``savgol`` | ``polynomial``)
  -> regressor blocks -> sample selection (velocity threshold per row)
  -> normal equations per recording (:func:`recording_normal_equations`), summed
  -> estimators by name (:data:`ESTIMATORS`: ols, wls, irls, mrls, bounded, physical)
  -> :class:`IdentificationResult` with every estimate, covariances and diagnostics.

- :func:`identify` -- all of it, for any number of recordings
- :func:`recording_normal_equations` -- the equations of one recording (map step)
- :func:`solve` -- estimates from summed equations (reduce step); the equations of
  recordings are :class:`RecordingEquations` (the sums of
  :class:`~robot_identification.estimation.NormalEquations` and the engine's account of the
  recordings behind them: samples, summaries, truth, pre-processing, spring sums)
- :class:`Recording` -- a re-readable source of chunks (dataset, .npz, .npy directory, bag)
- :func:`make_preprocessor` -- the strategies (:data:`PREPROCESSING`)
- :func:`identify_drive_gains`, :func:`payload_parameters` -- drive gains from a known
  payload (Gautier & Briot 2011), the currents as extra columns of the same equations
- :func:`preprocess` -- a whole dataset through the pre-processing strategy
- :func:`resolve_settings` -- ``auto`` settings measured on the recordings (``_auto``):
  :class:`ResolvedSettings`; :func:`strategy_settings` -- the typed settings of each
  pre-processing strategy (:class:`ButterworthSettings`, :class:`SavgolSettings`,
  :class:`PolynomialSettings`; ``_settings``)
- :func:`predict_torque` -- the torque of identified base parameters (``_prediction``)
- the friction model of prediction (``_friction``): :func:`prediction_deadband`,
  :func:`filtered_coulomb`, the pre-sliding state :func:`presliding_state` and its
  selection :func:`select_presliding` / :func:`resolve_presliding`
- sensor sets of elastic arms (``_sensors``, docs/elastic.md): :class:`SensorSet`,
  :func:`sensor_set`, :func:`sensor_base`, :func:`result_base`, the joint stiffness from
  joint torque sensors (:class:`StiffnessEstimate`), the gear-ratio check
  (:func:`gear_ratio_check`, :func:`coupled_joints`)
- :class:`OnlineIdentification` -- recursive identification of samples arriving in pieces
  (``_online``)
- :func:`lin_identify` -- Lin's one-joint-at-a-time procedure (``_lin``)
- :func:`monte_carlo` -- bias and spread of the estimators over noise seeds vs the
  Cramér-Rao bound (:func:`simulated_observations`: exact regressor of a noise-free run;
  Dask workers) (``_montecarlo``)

The CLI (``identify``, ``identify-stream``), the identifier node (one call for all
estimators), drive-gain identification, the Monte-Carlo study and the thin former entry
points (:mod:`robot_identification.pipeline`, :mod:`robot_identification.streaming`) all
call these.
"""
from robot_identification._startup import paused_collector

# the collector paused while the engine is imported from the command line (_startup)
with paused_collector():
    from robot_identification.identification._sources import (  # noqa: F401
        READ_CHUNK, NpyDirWriter, Recording, as_recording, concat_chunks, irregular,
        iter_bag_chunks, iter_chunks, iter_dataset_chunks, iter_npy_dir_chunks, iter_npz_chunks,
        resample_uniform)
    from robot_identification.identification._settings import (  # noqa: F401
        AUTO_FIELDS, ButterworthSettings, PolynomialSettings, ResolvedSettings, SavgolSettings,
        strategy_settings)
    from robot_identification.identification._auto import (  # noqa: F401
        CUTOFF_BAND_FACTOR, DEADBAND_NOISE_FACTOR, STOP_VELOCITY_FRACTION, SUMMARY_SAMPLES,
        needs_resolving, positions_cutoff, recording_summaries, resolve_settings)
    from robot_identification.identification._preprocessing import (  # noqa: F401
        PREPROCESSING, FIRStates, ZeroPhaseStates, make_bank, make_preprocessor,
        pa_product_regressor, preprocess, sample_rate)
    from robot_identification.identification._result import IdentificationResult  # noqa: F401
    from robot_identification.identification._equations import RecordingEquations  # noqa: F401
    from robot_identification.identification._sensors import (  # noqa: F401
        SensorSet, StiffnessEstimate, coupled_joints, gear_ratio_check,
        link_positions_from_joint_torque,
        result_base, sensor_base, sensor_set)
    from robot_identification.identification._engine import (  # noqa: F401
        SETTLE_TOLERANCE, ReversalWindow, accumulate_states, fir_reversal_window,
        identify, load_prior, match_true_parameters, recording_normal_equations,
        polynomial_settings, reversal_window, row_labels, row_mask, solve, true_base_values,
        truth_diagnostics, with_overrides)
    from robot_identification.identification._estimators import (  # noqa: F401
        ESTIMATORS, EstimationContext, HuberWeights, estimate_from)
    from robot_identification.identification._drive_gains import (  # noqa: F401
        DriveGainResult, identify_drive_gains, payload_parameters)
    from robot_identification.identification._prediction import (  # noqa: F401
        PLAIN_DEADBAND, PREDICTORS, REST_VELOCITY, coulomb_coefficients, coulomb_scale,
        load_coefficients, plain_coulomb, predict_torque, settings_from_results,
        torque_errors)
    from robot_identification.identification._friction import (  # noqa: F401
        BRIDGE_CUTOFF_PERIODS, JITTER_FACTOR, PRESLIDING_GRID, PRESLIDING_MIN_GAIN,
        PRESLIDING_SAMPLES, PRESLIDING_WINDOWS, filtered_coulomb, motion_direction,
        position_jitter, presliding_windows,
        prediction_deadband, presliding_of, presliding_state, resolve_presliding,
        select_presliding)
    from robot_identification.identification._montecarlo import (  # noqa: F401
        RUN_ESTIMATORS, MonteCarloResult, cramer_rao_bound, monte_carlo, run_seeds,
        simulated_observations, torque_noise_sigma)
    from robot_identification.identification._prior_weight import (  # noqa: F401
        ESTIMATOR_TIE, PRIOR_WEIGHTS, fold_equations, format_estimator_selection, heldout_score,
        least_squares_check, record_estimator_selection, record_least_squares_check,
        record_prior_weight, resolve_estimator, resolve_prior_weight, select_prior_weight,
        time_halves)
    from robot_identification.identification._online import (  # noqa: F401
        SETTINGS_WINDOW, OnlineIdentification)
    from robot_identification.identification._lin import (  # noqa: F401
        ROTATIONAL_UNKNOWNS, TRANSLATIONAL_UNKNOWNS, CompositeConstants, LinResult,
        check_persistent_excitation, composite_constants, composite_direct, excitation_report,
        exciting_directions, lin_identify, minimal_set, moving_axis_geometry, moving_joint_rows,
        rnea_torques, rotational_rows, step_profile, translational_rows, varying_parts)
