"""Regressors: tau = Y(q, dq, ddq[, theta, dtheta, ddtheta]) @ pi (standard parameters).

- :func:`regressor` -- dispatch on the model type
- :func:`rigid_regressor` -- pinocchio torque regressor + rotor inertia + friction
- :func:`rigid_torque` -- Y @ pi of inertial / rotor parameters (Newton-Euler)
- :func:`elastic_regressor` -- Zollo et al. (2014) elastic-joint regressor, 2n rows per sample
- :func:`friction_columns` -- Coulomb/viscous/static (Szabó) friction and offset columns
- :func:`coulomb_sign` -- the Coulomb column: sign(v) with a linear ramp in a deadband
- :func:`torque_vector` -- matching left-hand side rows
- :func:`iter_regressor_blocks` -- chunked observation system for long recordings
- :func:`regressor_structure` -- the entries of the rows that can be non-zero
- :func:`nominal_rigid_parameters` -- the URDF's inertials and rotor inertia (standard)
"""
from robot_identification.regressor._regressor import (  # noqa: F401
    CHUNK, coulomb_sign, elastic_regressor, friction_columns, iter_regressor_blocks, nominal_load,
    nominal_rigid_parameters, regressor, regressor_structure, rigid_regressor, rigid_torque,
    torque_vector)
