"""ctypes loader of the compiled regressor kernel (``_kernel.cpp``, issue #9).

The kernel runs the per-sample loop of pinocchio's ``computeJointTorqueRegressor`` and the
sparse linear map from its entries to the observation rows (link row/column selection,
frame change A_k, rotor columns of the complete elastic model) in C++, for all samples of a
block in one call. It is optional: ``scripts/build_kernel.sh`` (run by
``scripts/setup.sh``) compiles ``build/libregressor_kernel.so`` beside this file; without
it (colcon/ROS installs, a failed compile, ``RI_REGRESSOR_KERNEL=0`` in the environment,
or a model with a joint type the kernel does not build) :mod:`._regressor` uses its
pure-Python path, which gives the same matrix (tested to 1e-12 against each other and
pinocchio's rnea).
"""
from __future__ import annotations

import ctypes
import os
import weakref

import numpy as np

#: False: always use the pure-Python path (``RI_REGRESSOR_KERNEL=0`` sets it at import).
ENABLED = os.environ.get("RI_REGRESSOR_KERNEL", "1") != "0"

#: ``ri_kernel_version()`` of the library this loader was written for (a library built from
#: an older ``_kernel.cpp``, e.g. before ``git pull`` without re-running setup, is not used).
VERSION = 2

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build", "libregressor_kernel.so")
_LIB = None
_LOAD_ERROR = None

# joint type codes of ri_kernel_create
_JOINT_CODES = {"JointModelRX": 0, "JointModelRY": 1, "JointModelRZ": 2,
                "JointModelRevoluteUnaligned": 3, "JointModelPX": 4, "JointModelPY": 5,
                "JointModelPZ": 6, "JointModelPrismaticUnaligned": 7}

_d = ctypes.POINTER(ctypes.c_double)
_i = ctypes.POINTER(ctypes.c_int)
_l = ctypes.POINTER(ctypes.c_long)


def _library():
    """The loaded ``libregressor_kernel.so``, or None (not built or not loadable)."""
    global _LIB, _LOAD_ERROR
    if _LIB is None and _LOAD_ERROR is None:
        if not os.path.exists(_PATH):
            _LOAD_ERROR = "not built (scripts/build_kernel.sh)"
            return None
        try:
            lib = ctypes.CDLL(_PATH)
        except OSError as exc:
            _LOAD_ERROR = f"cannot load {os.path.basename(_PATH)}: {exc}"
            return None
        try:
            version = lib.ri_kernel_version()
        except AttributeError:
            version = None
        if version != VERSION:
            _LOAD_ERROR = (f"built from another version of _kernel.cpp ({version}, expected "
                           f"{VERSION}): run scripts/build_kernel.sh")
            return None
        lib.ri_kernel_create.restype = ctypes.c_void_p
        lib.ri_kernel_create.argtypes = [ctypes.c_int, _i, _i, _d, _d, _d, ctypes.c_long,
                                         _l, _l, _d]
        lib.ri_kernel_free.restype = None
        lib.ri_kernel_free.argtypes = [ctypes.c_void_p]
        lib.ri_kernel_nv.restype = ctypes.c_int
        lib.ri_kernel_nv.argtypes = [ctypes.c_void_p]
        lib.ri_kernel_regressor.restype = ctypes.c_int
        lib.ri_kernel_regressor.argtypes = [ctypes.c_void_p, ctypes.c_long, _d, _d, _d,
                                            ctypes.c_long, _d]
        _LIB = lib
    return _LIB


def status():
    """One line: whether the regressor uses the compiled kernel, and why not."""
    if not ENABLED:
        return "pure Python (RI_REGRESSOR_KERNEL=0)"
    if _library() is None:
        return f"pure Python (compiled kernel {_LOAD_ERROR})"
    return "compiled kernel"


def _ptr(array, kind):
    return array.ctypes.data_as(kind)


class Kernel:
    """A kernel handle for one pinocchio model and one column map.

    Parameters
    ----------
    pin_model : pinocchio.Model
        The model pinocchio evaluates (rigid model, or the rotor-augmented elastic model);
        only its kinematic tree and gravity are passed (the torque regressor does not
        depend on the inertias).
    dst, src : ndarray (M,) of int
        Flat destination in one sample's Y (rows * P, row-major) and flat source in one
        sample's pinocchio regressor (nv * 10 * (njoints - 1), row-major).
    weight : ndarray (M,)
        Y[dst] += weight * R[src], per sample.
    """

    def __init__(self, lib, handle):
        self._lib = lib
        self._handle = handle
        weakref.finalize(self, lib.ri_kernel_free, handle)

    @classmethod
    def create(cls, pin_model, dst, src, weight):
        """The kernel for ``pin_model``, or None (library absent, unsupported joint type)."""
        lib = _library() if ENABLED else None
        if lib is None or pin_model.nq != pin_model.nv:
            return None
        nj = pin_model.njoints - 1
        types = np.empty(nj, dtype=np.intc)
        placements = np.empty((nj, 12))
        axes = np.zeros((nj, 3))
        for j in range(1, nj + 1):
            joint = pin_model.joints[j]
            code = _JOINT_CODES.get(joint.shortname())
            if code is None:
                return None
            types[j - 1] = code
            if code in (3, 7):
                axes[j - 1] = joint.extract().axis
            placement = pin_model.jointPlacements[j]
            placements[j - 1, :9] = placement.rotation.ravel()
            placements[j - 1, 9:] = placement.translation
        parents = np.array(pin_model.parents[1:], dtype=np.intc)
        gravity = np.array(pin_model.gravity.linear, dtype=float)
        dst = np.ascontiguousarray(dst, dtype=np.int_)
        src = np.ascontiguousarray(src, dtype=np.int_)
        weight = np.ascontiguousarray(weight, dtype=float)
        handle = lib.ri_kernel_create(nj, _ptr(types, _i), _ptr(parents, _i),
                                      _ptr(placements, _d), _ptr(axes, _d),
                                      _ptr(gravity, _d), len(dst), _ptr(dst, _l),
                                      _ptr(src, _l), _ptr(weight, _d))
        if not handle:
            return None
        kernel = cls(lib, handle)
        if lib.ri_kernel_nv(handle) != pin_model.nv:
            return None
        return kernel

    def fill(self, Y, q, v, a):
        """Y[i][dst] += weight * R_i[src] for every sample i (GIL released meanwhile).

        Parameters
        ----------
        Y : ndarray (N, rows * P), C-contiguous float64, modified in place
        q : ndarray (N, nq); v, a : ndarray (N, nv) -- pinocchio order.
        """
        q, v, a = (np.ascontiguousarray(x, dtype=float) for x in (q, v, a))
        assert Y.flags.c_contiguous and Y.dtype == np.float64 and Y.ndim == 2
        if self._lib.ri_kernel_regressor(self._handle, Y.shape[0], _ptr(q, _d), _ptr(v, _d),
                                         _ptr(a, _d), Y.shape[1], _ptr(Y, _d)):
            raise RuntimeError("compiled regressor kernel failed")
        return Y
