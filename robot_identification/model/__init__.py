"""Robot model: configuration YAML + URDF -> pinocchio model and parameter layout.

- :func:`load_robot_config`, :func:`parse_robot_config` -- validated robot configuration
  (:class:`RobotConfigFile`: the file's pydantic models; :func:`config_json_schema`)
- :class:`RobotModel` -- pinocchio model, drive data, standard parameter layout
- :func:`load_robot` -- a shipped robot by name, or config/URDF files
- :func:`transform_standard_parameters` -- standard parameters under a change of frame
- :func:`cad_error_urdf` -- a URDF with CAD-error-sized inertial errors (studies)
"""
from robot_identification.model._cad import cad_error_urdf  # noqa: F401
from robot_identification.model._config import (  # noqa: F401
    BAG_SIGNALS, DRIVE_PARAMETERS, ESTIMATORS, FRICTION_MODELS, PREPROCESSING,
    RENAMED_DRIVE_PARAMETERS, DRIVE_PARAMETER_DESCRIPTIONS, DRIVE_PARAMETER_UNITS,
    MAX_EXCITATION_S, MAX_HARMONICS, csv_zero_based_hint, current_parameter_name,
    current_parameter_names,
    FrictionConfig, IdentificationSettings, JointConfig, JointLimits, RobotConfig,
    SimulationSettings)
from robot_identification.model._config_file import (  # noqa: F401
    RobotConfigFile, config_json_schema, load_robot_config, parse_robot_config)
from robot_identification.model._inertia import (  # noqa: F401
    INERTIAL_NAMES, frame_change_matrix, spin_inertia_parameters,
    transform_standard_parameters)
from robot_identification.model._robot_model import (  # noqa: F401
    RIGHT_ANGLE_TOLERANCE, ParameterLayout, RobotModel, build_pinocchio_model,
    check_urdf_tree, parser_urdf, read_urdf, snap_right_angles)
from robot_identification.model._ros2_control import (  # noqa: F401
    gazebo_urdf, gazebo_xacro, ros2_controllers_config, ros2_controllers_yaml)
from robot_identification.model._robots import (  # noqa: F401
    available_robots, load_robot, robot_files, share_directory)
