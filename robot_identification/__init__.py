"""robot_identification: dynamic parameter identification of rigid and elastic-joint manipulators.

The ROS-free core is organised in subpackages:

- :mod:`robot_identification.model` -- robot configuration (YAML), :class:`RobotModel`
- :mod:`robot_identification.regressor` -- rigid and elastic-joint regressors
- :mod:`robot_identification.identifiability` -- base parameters, grouping, expressions
- :mod:`robot_identification.estimation` -- OLS / WLS estimators, covariance, condition number
- :mod:`robot_identification.signal` -- zero-phase filters, differentiation, sample selection
- :mod:`robot_identification.simulation` -- elastic/rigid arm simulator with PD control
- :mod:`robot_identification.data` -- datasets (NPZ, rosbag2)
- :mod:`robot_identification.report` -- results files
- :mod:`robot_identification.pipeline` -- batch identification used by the CLI and nodes

ROS 2 nodes live in :mod:`robot_identification.nodes` and are the only modules importing rclpy.
"""

__version__ = "0.1.0"
