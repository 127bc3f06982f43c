"""Standard inertial parameters and their change of reference frame.

Parameter order per body is pinocchio's ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``:
mass, first moment of mass (m * centre of mass) and the inertia tensor about the
frame origin, all expressed in the body's reference frame (De Luca, slides 2-4;
Zollo et al. 2014, eq. 14 with the tensor entries I_xy = -int(xy) dm).
"""
from __future__ import annotations

import numpy as np

INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
INERTIAL_UNITS = ("kg", "kg*m", "kg*m", "kg*m") + ("kg*m^2",) * 6


def _sym(p):
    return np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])


def _unsym(I):
    return np.array([I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


def transform_standard_parameters(pi_frame, rotation, translation):
    """Express standard parameters given in frame F in the frame J holding F.

    Parameters
    ----------
    pi_frame : array_like, shape (10,)
        Standard parameters about the origin of F, in F axes.
    rotation : array_like, shape (3, 3)
        Rotation of F in J (``p_J = R p_F + t``).
    translation : array_like, shape (3,)
        Origin of F in J [m].

    Returns
    -------
    ndarray, shape (10,)
        Standard parameters about the origin of J, in J axes.

    Notes
    -----
    Linear in ``pi_frame``: with r = t + R s, the inertia about J is
    R I_F R^T + m (|t|^2 E - t t^T) + 2 (t . R c) E - t (R c)^T - (R c) t^T,
    the parallel-axis theorem written for first moments (Zollo et al. 2014, eq. A.2).
    """
    p = np.asarray(pi_frame, dtype=float)
    R = np.asarray(rotation, dtype=float)
    t = np.asarray(translation, dtype=float)
    m = p[0]
    c = R @ p[1:4]
    inertia = (R @ _sym(p) @ R.T + m * (t @ t * np.eye(3) - np.outer(t, t))
               + 2.0 * (t @ c) * np.eye(3) - np.outer(t, c) - np.outer(c, t))
    return np.concatenate([[m], m * t + c, _unsym(inertia)])


def frame_change_matrix(rotation, translation):
    """Matrix A (10, 10) with ``pi_J = A @ pi_F`` (see :func:`transform_standard_parameters`)."""
    return np.column_stack([transform_standard_parameters(e, rotation, translation)
                            for e in np.eye(10)])


def spin_inertia_parameters(axis):
    """Standard parameters (10,) of a massless unit inertia about ``axis`` (a a^T)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    return np.concatenate([np.zeros(4), _unsym(np.outer(a, a))])
