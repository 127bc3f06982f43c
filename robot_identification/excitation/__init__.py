"""Excitation trajectories for identification experiments.

- :class:`FourierTrajectory` -- finite Fourier series (Swevers; Szabó & Gincsainé 2021, eq. 22)
- :class:`BSplineTrajectory` -- quintic B-spline per joint (Zollo et al. 2014; Rackl et al. 2012)
- :func:`trajectory_from_config` -- random, limit-scaled trajectory from a robot config
- :func:`check_limits`, :func:`scale_to_limits` -- joint position/velocity/acceleration limits
- :func:`trajectory_from_dict`, :func:`save_trajectory`, :func:`load_trajectory` -- YAML I/O
  (:func:`trajectory_label` names the file a trajectory was read from)
- :class:`ExcitationRun` -- a streamed run's reference: move to the first point, trajectory, hold
"""
from robot_identification.excitation._trajectories import (  # noqa: F401
    LIMIT_MARGIN, BSplineTrajectory, FourierTrajectory, check_limits, load_trajectory,
    save_trajectory, scale_to_limits, trajectory_from_config, trajectory_from_dict,
    trajectory_label)
from robot_identification.excitation._run import ExcitationRun  # noqa: F401,E402
from robot_identification.excitation._optimize import (  # noqa: F401,E402
    BSplineParametrisation, FourierParametrisation, OptimisationResult, criterion_value,
    optimise_excitation)
