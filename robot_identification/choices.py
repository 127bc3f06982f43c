"""Names the command line, the robot YAML and the ROS nodes share, importable without
pinocchio (the command-line parsers are built before any model is loaded)."""

#: Pre-processing strategies of the identification engine (robot_identification.identification).
PREPROCESSING = ("butterworth", "savgol", "polynomial")

#: Estimators of the identification engine, by name.
ESTIMATORS = ("ols", "wls", "irls", "mrls", "bounded", "physical", "iv")
