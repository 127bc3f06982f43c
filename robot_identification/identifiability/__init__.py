"""Identifiability: base parameters, grouping matrix, parameter categories, excitation checks.

- :func:`base_parameters` -- base parameters of a RobotModel from random samples
- :func:`base_parameters_from_matrix` -- the same from any observation matrix
- :class:`BaseParameters` -- selection, grouping matrix, categories, readable expressions
- :func:`independent_columns` -- ordered greedy column selection (Gauss-Jordan pivots)
- :func:`check_excitation` -- names the base parameters a dataset does not excite
"""
from robot_identification.identifiability._base import (  # noqa: F401
    DEPENDENCY_TOLERANCE, RANK_TOLERANCE, BaseParameters, base_parameters,
    base_parameters_from_matrix, check_excitation, independent_columns, random_states)
