"""Names the command line, the robot YAML and the ROS nodes share, importable without
pinocchio (the command-line parsers are built before any model is loaded)."""

#: Pre-processing strategies of the identification engine (robot_identification.identification).
PREPROCESSING = ("butterworth", "savgol", "polynomial")

#: Former names of pre-processing strategies (accepted, with a deprecation note).
PREPROCESSING_ALIASES = {"pa": "polynomial"}

#: Estimators of the identification engine, by name (robot_identification.identification.
#: ESTIMATORS maps each to its function; the command line, the robot YAML, the identifier
#: node and the Monte-Carlo study read these names).
ESTIMATORS = ("ols", "wls", "irls", "mrls", "bounded", "physical", "iv")

#: ``estimator: auto``: the primary estimate chosen on the identification data, ``wls`` or
#: ``physical`` by their held-out score (robot_identification.identification.
#: resolve_estimator); the default primary.
AUTO_ESTIMATOR = "auto"

#: What the command line, the robot YAML and the nodes accept as an estimator: the
#: engine's, and ``auto`` (first only: it chooses the primary).
ESTIMATOR_CHOICES = (AUTO_ESTIMATOR,) + ESTIMATORS

#: Estimators that read the recordings again (irls: reweighted passes; iv: closed-loop
#: instruments): they need recordings, not only summed normal equations.
NEEDS_RECORDINGS = ("irls", "iv")

#: Estimators of a Monte-Carlo run on a fixed regressor: the engine's that work on summed
#: normal equations, and ``wls_known`` (WLS with the true noise sigma, Szabó eq. 19).
MONTE_CARLO_ESTIMATORS = tuple(e for e in ESTIMATORS if e not in NEEDS_RECORDINGS) + (
    "wls_known",)
