"""robot_identification: dynamic parameter identification of rigid and elastic-joint manipulators.

The ROS-free core is organised in subpackages:

- :mod:`robot_identification.model` -- robot configuration (YAML), :class:`RobotModel`
- :mod:`robot_identification.regressor` -- rigid and elastic-joint regressors
- :mod:`robot_identification.identifiability` -- base parameters, grouping, expressions
- :mod:`robot_identification.estimation` -- OLS / WLS estimators, covariance, condition number
- :mod:`robot_identification.signal` -- zero-phase filters, differentiation, sample selection,
  spectra and noise levels
- :mod:`robot_identification.simulation` -- elastic/rigid arm simulator with PD control
- :mod:`robot_identification.data` -- datasets (NPZ, rosbag2)
- :mod:`robot_identification.report` -- results files
- :mod:`robot_identification.diagnostics` -- the checks every result carries
- :mod:`robot_identification.identification` -- the engine: recordings -> estimates, the
  friction model of prediction, on-line and Lin's identification
- :mod:`robot_identification.validation` -- held-out validation, cross-validation

ROS 2 nodes live in :mod:`robot_identification.nodes` and are the only modules importing rclpy.
"""

__version__ = "0.1.0"
