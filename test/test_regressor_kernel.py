"""Compiled regressor kernel (``regressor/_kernel.cpp``) vs the pure-Python path vs rnea.

Both paths must give the same matrix: the kernel only moves the per-sample loop and the
sparse column map into C++. The reference torques come from pinocchio's rnea on the
model's own pinocchio model (test_regressor_rigid._reference_torque).
"""
import os

import numpy as np
import pinocchio as pin
import pytest

from conftest import make_model
from robot_identification.identifiability import random_states
from robot_identification.model import load_robot
from robot_identification.regressor import _kernel, _regressor, regressor
from robot_identification.regressor._regressor import _plan
from test_regressor_rigid import _reference_torque

needs_kernel = pytest.mark.skipif(_kernel._library() is None, reason=_kernel.status())


def _both_paths(monkeypatch, model, states):
    monkeypatch.setattr(_kernel, "ENABLED", True)
    assert _plan(model).kernel is not None, _kernel.status()
    Y_kernel = regressor(model, **states)
    monkeypatch.setattr(_kernel, "ENABLED", False)
    assert _plan(model).kernel is None
    return Y_kernel, regressor(model, **states)


def test_ci_builds_the_kernel():
    """setup.sh builds the kernel: on CI (CI=true) its absence is a failed build."""
    if os.environ.get("CI", "").lower() not in ("1", "true"):
        pytest.skip("not on CI")
    assert _kernel._library() is not None, _kernel.status()


@needs_kernel
@pytest.mark.parametrize("name", ["puma560", "puma560_elastic", "zollo_planar", "ur10e"])
def test_kernel_equals_python_path(monkeypatch, name):
    """Shipped robots: DH parameter frames (zollo_planar, puma560), complete elastic model
    with rotor columns (12-dof augmented model), unaligned rotor axes."""
    model = load_robot(name)
    states = random_states(model, 40, np.random.default_rng(3))
    Y_kernel, Y_python = _both_paths(monkeypatch, model, states)
    assert Y_kernel.shape == Y_python.shape
    np.testing.assert_allclose(Y_kernel, Y_python, rtol=0,
                               atol=1e-12 * np.abs(Y_python).max())


@needs_kernel
def test_kernel_matches_rnea_on_spatial_arm(monkeypatch):
    """x/y/z/skew revolute and prismatic joints, locked joint, merged tool, config joint
    order: kernel rows @ nominal parameters = pinocchio rnea + armature + friction."""
    model = make_model("rigid", friction="static", gear=[1.0, 20.0, 1.0, 7.0, 0.5])
    rng = np.random.default_rng(4)
    q = rng.uniform(-2, 2, (30, model.n))
    dq, ddq = rng.normal(0, 2, (30, model.n)), rng.normal(0, 5, (30, model.n))
    Y_kernel, Y_python = _both_paths(monkeypatch, model, {"q": q, "dq": dq, "ddq": ddq})
    pi = model.nominal_parameters()
    reference = _reference_torque(model, pi, q, dq, ddq)
    np.testing.assert_allclose(Y_kernel @ pi, reference, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Y_kernel, Y_python, rtol=0, atol=1e-12 * np.abs(Y_python).max())


@needs_kernel
@pytest.mark.parametrize("coupling", ["complete", "reduced"])
def test_kernel_elastic_spatial_arm(monkeypatch, coupling):
    model = make_model("elastic", prismatic=False, gear=[50.0, 80.0, 0.1, 30.0, 2.0],
                       coupling=coupling, damping=True)
    states = random_states(model, 30, np.random.default_rng(5))
    Y_kernel, Y_python = _both_paths(monkeypatch, model, states)
    np.testing.assert_allclose(Y_kernel, Y_python, rtol=0, atol=1e-12 * np.abs(Y_python).max())


def _inertial_parameters(model):
    """The nominal parameters with every friction and offset column 0 (inertials, rotor)."""
    pi = np.nan_to_num(np.asarray(model.nominal_parameters(), dtype=float))
    return np.where([k in ("inertial", "rotor_inertia") for k in model.layout.kinds], pi, 0.0)


@needs_kernel
@pytest.mark.parametrize("name", ["spatial", "puma560", "ur10e", "stanford_arm"])
def test_rigid_torque_matches_rnea(monkeypatch, name):
    """rigid_torque (Newton-Euler in the kernel, issue #29) = pinocchio rnea + armature on the
    inertial and rotor parameters (x/y/z/skew revolute and prismatic joints, a locked joint,
    DH parameter frames of puma560), and = the regressor times them; the pure-Python path
    (no kernel) gives the regressor's product."""
    from robot_identification.regressor import rigid_regressor, rigid_torque
    model = (make_model("rigid", friction="static", gear=[1.0, 20.0, 1.0, 7.0, 0.5])
             if name == "spatial" else load_robot(name))
    states = random_states(model, 50, np.random.default_rng(6))
    pi = _inertial_parameters(model)
    monkeypatch.setattr(_kernel, "ENABLED", True)
    got = rigid_torque(model, **states, params=pi)
    reference = _reference_torque(model, pi, **states)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(got, reference, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(got, rigid_regressor(model, **states) @ pi, rtol=0,
                               atol=1e-12 * scale)
    other = np.where(pi != 0, np.random.default_rng(7).normal(size=pi.shape), 0.0)
    Y = rigid_regressor(model, **states)     # (rnea above reads the URDF's inertias only)
    np.testing.assert_allclose(rigid_torque(model, **states, params=other), Y @ other,
                               rtol=0, atol=1e-13 * np.abs(Y).max() * np.abs(other).sum())
    monkeypatch.setattr(_kernel, "ENABLED", False)
    np.testing.assert_allclose(rigid_torque(model, **states, params=pi), reference, rtol=0,
                               atol=1e-12 * scale)


@needs_kernel
def test_fast_load_columns_match_rnea():
    """rigid_regressor(..., fast_load=True) (the load-dependent Coulomb factor |tau_0| by
    Newton-Euler in the kernel's own pass, issue #29) = the regressor's product, and its load
    columns = sign(v) |pinocchio rnea of the URDF| (ur10e: load-dependent friction)."""
    from robot_identification.regressor import coulomb_sign, rigid_regressor
    model = load_robot("ur10e")
    states = random_states(model, 40, np.random.default_rng(8))
    load = [_plan(model).column[(k, "coulomb_load")] for k in range(model.n)]
    cols = sorted(set(range(0, model.n_parameters, 3)) | set(load))
    Y = rigid_regressor(model, **states, columns=cols)
    fast = rigid_regressor(model, **states, columns=cols, fast_load=True)
    np.testing.assert_allclose(fast, Y, rtol=0, atol=1e-12 * np.abs(Y).max())
    tau0 = _reference_torque(model, _inertial_parameters(model), **states)
    for k, c in enumerate(load):
        np.testing.assert_allclose(fast[:, k, cols.index(c)],
                                   coulomb_sign(states["dq"])[:, k] * np.abs(tau0[:, k]),
                                   rtol=0, atol=1e-12 * np.abs(tau0).max())


@needs_kernel
def test_unsupported_joint_falls_back():
    """A joint type the kernel does not build (continuous joint, nq != nv): no kernel."""
    pm = pin.Model()
    pm.addJoint(0, pin.JointModelRUBZ(), pin.SE3.Identity(), "wheel")
    assert _kernel.Kernel.create(pm, np.tile(np.eye(4), (1, 1, 1)), (np.zeros(0, int),) * 3,
                                 np.zeros(0, int), np.zeros(0, int), np.zeros(0)) is None


@needs_kernel
def test_stale_library_is_not_used(monkeypatch):
    """A library built from another version of _kernel.cpp (e.g. not rebuilt after a pull)
    is refused with a status naming the rebuild, never called with a wrong signature."""
    monkeypatch.setattr(_kernel, "VERSION", _kernel.VERSION + 1)
    monkeypatch.setattr(_kernel, "_LIB", None)
    monkeypatch.setattr(_kernel, "_LOAD_ERROR", None)
    assert _kernel._library() is None
    assert "build_kernel.sh" in _kernel.status()


def test_missing_kernel_is_announced_once(monkeypatch, tmp_path):
    """A wheel built without the kernel (or a checkout that never compiled it): the first
    regressor says once that the pure-Python path runs, and why; the result is the same."""
    import warnings
    monkeypatch.setattr(_kernel, "_PATH", str(tmp_path / "libregressor_kernel.so"))
    monkeypatch.setattr(_kernel, "_LIB", None)
    monkeypatch.setattr(_kernel, "_LOAD_ERROR", None)
    monkeypatch.setattr(_kernel, "_ANNOUNCED", False)
    monkeypatch.setattr(_kernel, "ENABLED", True)
    model = load_robot("zollo_planar")
    states = random_states(model, 5, np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            _plan.cache_clear() if hasattr(_plan, "cache_clear") else None
            regressor(model, **states)
            assert _kernel.Kernel.create(model.pin_model, None, None, [0], [0], [1.0]) is None
    announced = [w for w in caught if issubclass(w.category, _kernel.KernelUnavailableWarning)]
    assert len(announced) == 1, [str(w.message) for w in caught]
    assert "pure-Python regressor" in str(announced[0].message)
    assert "not built" in str(announced[0].message)


@needs_kernel
def test_results_reuse_only_memory_no_array_refers_to(monkeypatch):
    """The kernel's large results come from memory of earlier results once no array (nor a
    view) refers to it (regressor._regressor._ResultMemory; from 1 MB here instead of 32 MB):
    a live result or a view of one is never written by a later call, and the values are
    those of fresh memory."""
    monkeypatch.setattr(_regressor._ResultMemory, "SMALLEST", 1 << 20)
    model = load_robot("puma560_elastic")
    a = random_states(model, 1500, np.random.default_rng(1))     # 1500 x 12 x 84: 12 MB
    b = random_states(model, 1500, np.random.default_rng(2))
    Ya = regressor(model, **a)
    want = Ya.copy()
    Yb = regressor(model, **b)
    assert not np.shares_memory(Ya, Yb)
    np.testing.assert_array_equal(Ya, want)
    view = Ya[100:200, 3]
    del Ya
    Yc = regressor(model, **b)
    assert not np.shares_memory(view, Yc) and not np.shares_memory(Yb, Yc)
    np.testing.assert_array_equal(view, want[100:200, 3])
    np.testing.assert_array_equal(Yc, Yb)
    del view, Yc
    Yd = regressor(model, **a)                                   # the memory of Ya / Yc
    np.testing.assert_array_equal(Yd, want)
    np.testing.assert_array_equal(Yb, regressor(model, **b))
    address = Yd.ctypes.data
    del Yd
    assert regressor(model, **a).ctypes.data == address         # reused once free
