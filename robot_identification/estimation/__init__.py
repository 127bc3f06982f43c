"""Estimators of base parameters.

- :class:`NormalEquations` -- per-row-group sufficient statistics, accumulated in blocks
- :class:`FixedDesign` -- the normal equations of one observation matrix with many left-hand sides
- :func:`ols`, :func:`wls` -- ordinary / weighted least squares with covariance
- :func:`leave_block_out` -- the LS estimate refitted without each stretch of the data
- :class:`Estimate` -- values, covariance, standard deviations, relative std [%], residuals
- :func:`condition_number` -- of the observation matrix
- :func:`physically_consistent` -- pseudo-inertia LMI (SDP) estimate of standard parameters
- :func:`mrls`, :class:`MRLS` -- modified recursive LS with flags (Lomakin & Deutscher)
- :func:`bounded_ls`, :func:`base_bounds` -- box-constrained LS on base parameters
"""
from robot_identification.estimation._least_squares import (  # noqa: F401
    Estimate, FixedDesign, NormalEquations, condition_number, leave_block_out,
    ols, solve_gram, wls)
from robot_identification.estimation._physical import (  # noqa: F401,E402
    PhysicalEstimate, default_prior_scales, physically_consistent, pseudo_inertia)
from robot_identification.estimation._mrls import (  # noqa: F401,E402
    MRLS, MRLSResult, modified_inverse, mrls)
from robot_identification.estimation._bounded import (  # noqa: F401,E402
    base_bounds, bounded_ls, standard_bounds)
