"""Validation of identified models: predicted vs measured torque on held-out data, and
model selection by cross-validation on the identification data.

- :func:`load_estimates` -- the models of a results.yaml (and the nominal one)
- :func:`check_held_out` -- the data checks of ``identify`` on held-out datasets
- :func:`validate` -- NRMSE per joint, file and model (``_validate``; the prediction and
  its friction model are :func:`robot_identification.identification.predict_torque` and
  :func:`~robot_identification.identification.filtered_coulomb`)
- :func:`validation_to_dict`, :func:`write_validation`, :func:`format_validation` --
  validation.yaml and its table
- :func:`rollout_validate`, :func:`rollout` -- ``validate --rollout``: the recorded torques
  (or the recording's PD loop) replayed through the identified and nominal models in MuJoCo
  over windows from the measured state; position/velocity tracking error (``_rollout``)
- :func:`select` -- ``identify --select``: cut-off, deadband, reversal rows and friction
  model chosen by cross-validation (``_selection``)
"""
from robot_identification.validation._validate import (  # noqa: F401
    PREFERENCE, check_held_out, cutoff_notes, format_validation, load_estimates,
    positions_cutoff_of, validate, validation_to_dict, write_validation)
from robot_identification.validation._rollout import (  # noqa: F401
    closed_loop_available, format_rollout, rollout, rollout_to_dict, rollout_validate)
from robot_identification.validation._selection import (  # noqa: F401
    CUTOFF_FACTORS, candidates, folds, format_selection, select, selection_diagnostics)
