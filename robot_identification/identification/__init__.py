"""The identification engine: one way from recordings to estimates.

recordings (each an iterator of chunks; a dataset = one chunk)
  -> pre-processing strategy by name (``butterworth`` | ``savgol`` | ``polynomial``)
  -> regressor blocks -> sample selection (velocity threshold per row)
  -> normal equations per recording (:func:`recording_normal_equations`), summed
  -> estimators by name (:data:`ESTIMATORS`: ols, wls, irls, mrls, bounded, physical)
  -> :class:`IdentificationResult` with every estimate, covariances and diagnostics.

- :func:`identify` -- all of it, for any number of recordings
- :func:`recording_normal_equations` -- the equations of one recording (map step)
- :func:`solve` -- estimates from summed equations (reduce step)
- :class:`Recording` -- a re-readable source of chunks (dataset, .npz, .npy directory, bag)
- :func:`make_preprocessor` -- the strategies (:data:`PREPROCESSING`)
- :func:`identify_drive_gains`, :func:`payload_parameters` -- drive gains from a known
  payload (Gautier & Briot 2011), the currents as extra columns of the same equations

The CLI (``identify``, ``identify-stream``), :func:`robot_identification.pipeline.identify`,
:func:`robot_identification.streaming.identify_streaming`, drive-gain identification and the
identifier node all call these.
"""
from robot_identification.identification._engine import (  # noqa: F401
    CUTOFF_BAND_FACTOR, DEADBAND_NOISE_FACTOR, SETTLE_TOLERANCE, STOP_VELOCITY_FRACTION,
    SUMMARY_SAMPLES, HuberWeights, ReversalWindow, accumulate_states, fir_reversal_window,
    identify,
    match_true_parameters, truth_diagnostics,
    load_prior, needs_resolving, recording_normal_equations, recording_summaries,
    resolve_settings, reversal_window, row_labels, row_mask, solve, true_base_values,
    with_overrides)
from robot_identification.identification._drive_gains import (  # noqa: F401
    DriveGainResult, identify_drive_gains, payload_parameters)
from robot_identification.identification._estimators import (  # noqa: F401
    ESTIMATORS, EstimationContext, estimate_from)
from robot_identification.identification._preprocessing import (  # noqa: F401
    PREPROCESSING, FIRStates, ZeroPhaseStates, make_bank, make_preprocessor, sample_rate)
from robot_identification.identification._result import IdentificationResult  # noqa: F401
from robot_identification.identification._sources import (  # noqa: F401
    READ_CHUNK, NpyDirWriter, Recording, as_recording, iter_bag_chunks, iter_chunks,
    iter_dataset_chunks, iter_npy_dir_chunks, iter_npz_chunks, resample_uniform)
