"""ctypes loader of the compiled regressor kernel (``_kernel.cpp``, issues #9, #29).

The kernel evaluates the entries of pinocchio's joint torque regressor per sample (its own
forward pass over the one-dof joints, each body's regressor about its parameter frame, the
joint axes moved along the chain; ``_kernel.cpp`` says how) and writes the observation rows
(link blocks, rotor columns of the complete elastic model, drive columns) in C++, for all
samples of a block in one call. It is optional: the wheel build (``pip install``, setup.py)
and ``scripts/build_kernel.sh`` compile ``build/libregressor_kernel.so`` beside this file;
without it (colcon/ROS installs, a failed compile, ``RI_REGRESSOR_KERNEL=0`` in the environment,
or a model with a joint type the kernel does not build) :mod:`._regressor` uses its
pure-Python path, which gives the same matrix (tested to 1e-12 against each other and
pinocchio's rnea); the first regressor built without it says so once
(:class:`KernelUnavailableWarning`).
"""
from __future__ import annotations

import ctypes
import os
import warnings
import weakref

import numpy as np

#: False: always use the pure-Python path (``RI_REGRESSOR_KERNEL=0`` sets it at import).
ENABLED = os.environ.get("RI_REGRESSOR_KERNEL", "1") != "0"

#: ``ri_kernel_version()`` of the library this loader was written for (a library built from
#: an older ``_kernel.cpp``, e.g. before ``git pull`` without re-running setup, is not used).
VERSION = 5

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
            _LOAD_ERROR = ("not built (a wheel built with RI_NATIVE_BUILD=0 or without g++; "
                           "in a checkout: scripts/build_kernel.sh)")
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
        lib.ri_kernel_create.argtypes = [ctypes.c_int, _i, _i, _d, _d, _d, _d, ctypes.c_long,
                                         _i, _i, _l, ctypes.c_long, _l, _l, _d]
        lib.ri_kernel_free.restype = None
        lib.ri_kernel_free.argtypes = [ctypes.c_void_p]
        lib.ri_kernel_nv.restype = ctypes.c_int
        lib.ri_kernel_nv.argtypes = [ctypes.c_void_p]
        lib.ri_kernel_regressor.restype = ctypes.c_int
        lib.ri_kernel_regressor.argtypes = [ctypes.c_void_p, ctypes.c_long, _d, _d, _d,
                                            ctypes.c_long, _l, _d, ctypes.c_long, _d]
        try:        # added after version 5: a library built before has no such entries
            lib.ri_kernel_torque.restype = ctypes.c_int
            lib.ri_kernel_torque.argtypes = [ctypes.c_void_p, ctypes.c_long, _d, _d, _d, _d, _d]
            lib.ri_kernel_regressor_load.restype = ctypes.c_int
            lib.ri_kernel_regressor_load.argtypes = [
                ctypes.c_void_p, ctypes.c_long, _d, _d, _d, ctypes.c_long, _l, _d,
                ctypes.c_long, _d, _d, ctypes.c_long, _l, _l]
        except AttributeError:
            pass
        _LIB = lib
    return _LIB


_ANNOUNCED = False


class KernelUnavailableWarning(UserWarning):
    """The compiled kernel is not available: the regressor runs its pure-Python path (the
    same matrix, about half as fast; docs/performance.md). Issued once per process."""


def announce_fallback():
    """Warn once per process that the pure-Python regressor is used, and why (nothing when
    the kernel is loaded or ``RI_REGRESSOR_KERNEL=0`` turned it off on purpose)."""
    global _ANNOUNCED
    if _ANNOUNCED or not ENABLED or _library() is not None:
        return
    _ANNOUNCED = True
    warnings.warn(f"regressor: compiled kernel {_LOAD_ERROR}; the pure-Python regressor is "
                  f"used (the same results, about half as fast; RI_REGRESSOR_KERNEL=0 "
                  f"silences this)", KernelUnavailableWarning, stacklevel=3)


def status():
    """One line: whether the regressor uses the compiled kernel, and why not."""
    if not ENABLED:
        return "pure Python (RI_REGRESSOR_KERNEL=0)"
    if _library() is None:
        return f"pure Python (compiled kernel {_LOAD_ERROR})"
    return "compiled kernel"


def _ptr(array, kind):
    return array.ctypes.data_as(kind)


def kinematic_tree(pin_model):
    """The kinematic tree of ``pin_model`` as the kernel takes it, or None (a joint type
    the kernel does not evaluate, e.g. continuous or free-flyer).

    Returns
    -------
    dict
        ``types`` (nj,) joint codes of ``ri_kernel_create``, ``parents`` (nj,),
        ``placements`` (nj, 12) rotation (row-major) and translation [m] in the parent
        frame, ``axes`` (nj, 3), ``gravity`` (3,) [m/s^2]; nj = ``njoints - 1``.
    """
    if pin_model.nq != pin_model.nv:
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
    return {"types": types, "parents": np.array(pin_model.parents[1:], dtype=np.intc),
            "placements": placements, "axes": axes,
            "gravity": np.array(pin_model.gravity.linear, dtype=float)}


class Kernel:
    """A kernel handle for one pinocchio model and one column map (:meth:`create`)."""

    def __init__(self, lib, handle):
        self._lib = lib
        self._handle = handle
        weakref.finalize(self, lib.ri_kernel_free, handle)

    @classmethod
    def create(cls, pin_model, frames, blocks, dst, src, weight):
        """The kernel for ``pin_model``, or None (library absent, unsupported joint type).

        Parameters
        ----------
        pin_model : pinocchio.Model
            The model pinocchio evaluates (rigid model, or the rotor-augmented elastic
            model); only its kinematic tree and gravity are passed (the torque regressor
            does not depend on the inertias).
        frames : ndarray (njoints - 1, 4, 4)
            Per joint the placement of its body's parameter frame in the joint frame (the
            kernel's regressor entries R of body b are those of its standard parameters
            about that frame: R_J A_b for the frame change pi_J = A_b pi_P).
        blocks : (row, body, dst) ndarrays (B,) of int
            Y[dst + c] = R[row, 10 body + c], c = 0..9, per sample (row: velocity index,
            body: joint index - 1).
        dst, src : ndarray (M,) of int
            Flat destination in one sample's Y (rows * P, row-major) and flat source in
            one sample's R (nv * 10 * (njoints - 1), row-major, parameter frames).
        weight : ndarray (M,)
            Y[dst] += weight * R[src], per sample.
        """
        lib = _library() if ENABLED else None
        if lib is None:
            announce_fallback()
            return None
        tree = kinematic_tree(pin_model)
        if tree is None:
            return None
        nj = pin_model.njoints - 1
        frames = np.asarray(frames, dtype=float)
        frame_rows = np.ascontiguousarray(
            np.concatenate([frames[:, :3, :3].reshape(nj, 9), frames[:, :3, 3]], axis=1))
        brow, bbody = (np.ascontiguousarray(x, dtype=np.intc) for x in blocks[:2])
        bdst = np.ascontiguousarray(blocks[2], dtype=np.int_)
        dst = np.ascontiguousarray(dst, dtype=np.int_)
        src = np.ascontiguousarray(src, dtype=np.int_)
        weight = np.ascontiguousarray(weight, dtype=float)
        handle = lib.ri_kernel_create(nj, _ptr(tree["types"], _i), _ptr(tree["parents"], _i),
                                      _ptr(tree["placements"], _d), _ptr(frame_rows, _d),
                                      _ptr(tree["axes"], _d), _ptr(tree["gravity"], _d),
                                      len(bdst), _ptr(brow, _i), _ptr(bbody, _i),
                                      _ptr(bdst, _l), len(dst), _ptr(dst, _l), _ptr(src, _l),
                                      _ptr(weight, _d))
        if not handle:
            return None
        kernel = cls(lib, handle)
        if lib.ri_kernel_nv(handle) != pin_model.nv:
            return None
        return kernel

    @property
    def has_load(self):
        """Whether :meth:`fill` takes ``load`` (a library built before it has no such entry)."""
        return hasattr(self._lib, "ri_kernel_regressor_load")

    def fill(self, Y, q, v, a, drive_dst, drive, load=None):
        """Every entry of Y: regressor entries, then Y[i, drive_dst] = drive[i] (GIL released).

        Parameters
        ----------
        Y : ndarray (N, rows * P), C-contiguous float64, overwritten (need not be zeroed)
        q : ndarray (N, nq); v, a : ndarray (N, nv) -- pinocchio order.
        drive_dst : ndarray (D,) of int
            Flat destinations of the drive columns in one sample's Y.
        drive : ndarray (N, D)
            Their values (rotor inertia, stiffness, friction columns).
        load : (params, dst, rows), optional
            Then Y[i, dst[t]] *= |tau_0[i, rows[t]]| with tau_0 the torque of the bodies'
            parameters ``params`` (njoints - 1, 10) as :meth:`torque` takes them, computed
            by Newton-Euler from the regressor's own forward pass (``rows``: velocity
            indices); only where :attr:`has_load`.
        """
        q, v, a, drive = (np.ascontiguousarray(x, dtype=float) for x in (q, v, a, drive))
        drive_dst = np.ascontiguousarray(drive_dst, dtype=np.int_)
        assert Y.flags.c_contiguous and Y.dtype == np.float64 and Y.ndim == 2
        assert drive.shape == (Y.shape[0], len(drive_dst))
        args = (self._handle, Y.shape[0], _ptr(q, _d), _ptr(v, _d), _ptr(a, _d),
                len(drive_dst), _ptr(drive_dst, _l), _ptr(drive, _d), Y.shape[1], _ptr(Y, _d))
        if load is None:
            failed = self._lib.ri_kernel_regressor(*args)
        else:
            params, dst, rows = (np.ascontiguousarray(x, dtype=t) for x, t in
                                 zip(load, (float, np.int_, np.int_)))
            failed = self._lib.ri_kernel_regressor_load(*args, _ptr(params, _d), len(dst),
                                                        _ptr(dst, _l), _ptr(rows, _l))
        if failed:
            raise RuntimeError("compiled regressor kernel failed")
        return Y

    def torque(self, q, v, a, params):
        """Joint torques tau (N, nv) = Y(q, v, a) pi of the bodies' inertial parameters alone,
        by the recursive Newton-Euler algorithm (``ri_kernel_torque``; the same numbers as the
        regressor's entries times ``params`` up to rounding), or None where the library has
        no such entry (built from ``_kernel.cpp`` before it).

        Parameters
        ----------
        q : ndarray (N, nq); v, a : ndarray (N, nv) -- pinocchio order.
        params : ndarray (njoints - 1, 10)
            Standard parameters of each body about its joint frame (not the parameter frame
            of :meth:`create`: pi_J = A pi_P): m [kg], m c [kg m], inertia about the frame's
            origin [kg m^2] (Ixx, Ixy, Iyy, Ixz, Iyz, Izz).
        """
        if not hasattr(self._lib, "ri_kernel_torque"):
            return None
        q, v, a, params = (np.ascontiguousarray(x, dtype=float) for x in (q, v, a, params))
        tau = np.empty((q.shape[0], v.shape[1]))
        if self._lib.ri_kernel_torque(self._handle, q.shape[0], _ptr(q, _d), _ptr(v, _d),
                                      _ptr(a, _d), _ptr(params, _d), _ptr(tau, _d)):
            raise RuntimeError("compiled regressor kernel failed")
        return tau
