"""Streaming identification: exact chunk borders, chunked readers, PA + OLS/MRLS/bounded."""
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.estimation import base_bounds, standard_bounds
from robot_identification.identifiability import base_parameters
from robot_identification.model import RobotModel
from robot_identification.regressor import regressor
from robot_identification.signal import PolynomialApproximation, SavitzkyGolay
from robot_identification.identification import (
    NpyDirWriter, iter_chunks, iter_dataset_chunks, iter_npz_chunks)
from robot_identification.streaming import accumulate, identify_streaming, prediction_rms

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rigid(tmp_path_factory):
    """Rigid variant of the shipped planar arm (2 revolute joints, vertical plane)."""
    d = yaml.safe_load((ROOT / "config/robots/zollo_planar.yaml").read_text())
    d["model"] = "rigid"
    d["name"] = "planar_rigid"
    d["urdf"] = str(ROOT / "urdf/zollo_planar.urdf")
    for j in d["joints"]:
        j["drive"] = {k: v for k, v in j["drive"].items()
                      if k in ("rotor_inertia", "viscous", "coulomb")}
    p = tmp_path_factory.mktemp("cfg") / "planar_rigid.yaml"
    p.write_text(yaml.safe_dump(d))
    return RobotModel.from_files(p)


def fourier(t, n, seed=0, harmonics=4, wf=0.4):
    """Finite Fourier series positions and derivatives (Swevers-type excitation)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(scale=0.6, size=(harmonics, n))
    b = rng.normal(scale=0.6, size=(harmonics, n))
    w = 2 * np.pi * wf * np.arange(1, harmonics + 1)
    S, C = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q = (S / w) @ a - (C / w) @ b
    dq = C @ a + S @ b
    ddq = -(S * w) @ a + (C * w) @ b
    return q, dq, ddq


def rigid_data(model, T=20.0, fs=1000.0, seed=0, noise=0.0):
    t = np.arange(int(T * fs)) / fs
    q, dq, ddq = fourier(t, model.n, seed)
    pi = model.nominal_parameters()
    tau = regressor(model, q, dq, ddq) @ pi
    rng = np.random.default_rng(seed + 100)
    tau = tau + noise * rng.normal(size=tau.shape)
    return Dataset(t=t, q=q, tau=tau, joint_names=model.joint_names,
                   true_parameters=dict(zip(model.parameter_names, pi)))


def test_chunk_borders_are_exact(rigid):
    ds = rigid_data(rigid, T=3.0)
    base = base_parameters(rigid)
    for bank in (PolynomialApproximation(0.02, 1000.0), SavitzkyGolay(21, 3, 1000.0)):
        for dec in (1, 7):
            ref, _ = accumulate(rigid, [ds], bank, base=base, decimate=dec)
            got, info = accumulate(rigid, iter_dataset_chunks(ds, 333), bank, base=base,
                                   decimate=dec, block=100)
            assert info["n_samples"] == ref.n_samples
            np.testing.assert_array_equal(got.count, ref.count)   # same rows dropped
            np.testing.assert_allclose(got.G, ref.G, rtol=1e-12)
            np.testing.assert_allclose(got.b, ref.b, rtol=1e-12)
    # chunks shorter than the window still work
    got, _ = accumulate(rigid, iter_dataset_chunks(ds, 5), bank, base=base, decimate=3)
    ref, _ = accumulate(rigid, [ds], bank, base=base, decimate=3)
    np.testing.assert_allclose(got.G, ref.G, rtol=1e-12)


def test_pa_identification_noise_free_recovers_base_parameters(rigid):
    """Delay consistency (notes 1.10 test 2): tau* and Y_B* refer to the same instant."""
    ds = rigid_data(rigid, T=20.0)
    # velocity threshold: sign(dq) is not Lipschitz, rows near reversals violate (21)
    res = identify_streaming(rigid, iter_dataset_chunks(ds, 4000), pa={"window": 0.02},
                             decimate=5, velocity_threshold=0.1)
    err = np.abs(res.estimate.values - res.true_values)
    assert np.all(err <= 2e-3 * np.abs(res.true_values) + 2e-3), dict(zip(res.names, err))
    assert res.settings["delay"] == pytest.approx(0.02 * (1 - 1 / 3) / 2)


def test_mrls_streaming_equals_ols_and_bounded(rigid):
    ds = rigid_data(rigid, T=10.0, noise=0.5)
    kw = dict(pa={"window": 0.03}, decimate=4, velocity_threshold=0.0)
    r_ols = identify_streaming(rigid, iter_dataset_chunks(ds, 2500), estimator="ols", **kw)
    r_mrls = identify_streaming(rigid, iter_dataset_chunks(ds, 2500), estimator="mrls", **kw)
    np.testing.assert_allclose(r_mrls.estimate.values, r_ols.estimate.values, rtol=1e-8)
    assert r_mrls.settings["flags"] == [1] * len(r_ols.names)
    base = base_parameters(rigid)
    lo, hi = base_bounds(base.grouping, *standard_bounds(rigid))
    x = r_ols.estimate.values
    # tighten one bound below the OLS value: bounded LS and MRLS must respect it
    hi = hi.copy()
    i = int(np.argmax(np.abs(x)))
    hi[i] = min(hi[i], x[i] - 0.1 * abs(x[i]))
    lo = np.minimum(lo, hi)
    for est in ("bounded", "mrls"):
        r = identify_streaming(rigid, iter_dataset_chunks(ds, 2500), estimator=est,
                               bounds=(lo, hi), **kw)
        v = r.estimate.values
        assert np.all(v >= lo - 1e-9) and np.all(v <= hi + 1e-9)
        assert r.settings["active_bounds"][i]


def test_mrls_flags_unexcited_joint(rigid):
    ds = rigid_data(rigid, T=6.0)
    ds.q[:, 1] = 0.3  # joint 2 locked: its inertia/friction are not excited
    ds.tau[:] = regressor(rigid, ds.q, np.column_stack([np.gradient(ds.q[:, 0], ds.t), 0 * ds.t]),
                          np.column_stack([np.gradient(np.gradient(ds.q[:, 0], ds.t), ds.t),
                                           0 * ds.t])) @ rigid.nominal_parameters()
    r = identify_streaming(rigid, iter_dataset_chunks(ds, 1000), estimator="mrls",
                           pa={"window": 0.02}, decimate=5, velocity_threshold=0.0)
    flags = dict(zip(r.names, r.settings["flags"]))
    assert flags["joint2.viscous"] == 0 and flags["joint2.rotor_inertia"] == 0
    assert flags["joint1.viscous"] == 1
    theta0 = r.base.base_values(rigid.nominal_parameters())
    for nm in ("joint2.viscous", "joint2.rotor_inertia"):  # frozen at the initial guess
        i = r.names.index(nm)
        assert r.estimate.values[i] == theta0[i]


def test_prediction_rms_on_held_out(rigid):
    ds = rigid_data(rigid, T=8.0, noise=0.2, seed=1)
    held = rigid_data(rigid, T=4.0, noise=0.2, seed=2)
    bank = PolynomialApproximation(0.03, 1000.0)
    r = identify_streaming(rigid, [ds], bank=bank, decimate=3, velocity_threshold=0.0)
    rms = prediction_rms(rigid, [held], r.estimate.values, bank, decimate=3)
    assert rms.shape == (2,) and np.all(rms < 0.2)  # filtered noise is below the raw 0.2 N m


def test_npz_and_npy_dir_readers(rigid, tmp_path):
    ds = rigid_data(rigid, T=1.0)
    ds.save_npz(tmp_path / "d.npz")
    parts = list(iter_npz_chunks(tmp_path / "d.npz", 300))
    assert [p.t.shape[0] for p in parts] == [300, 300, 300, 100]
    np.testing.assert_array_equal(np.concatenate([p.q for p in parts]), ds.q)
    np.testing.assert_array_equal(np.concatenate([p.tau for p in parts]), ds.tau)
    assert parts[0].joint_names == ds.joint_names and parts[0].true_parameters
    w = NpyDirWriter(tmp_path / "rec", 1000, ds.joint_names)
    for s in range(0, 1000, 250):
        w.append(t=ds.t[s:s + 250], q=ds.q[s:s + 250], tau=ds.tau[s:s + 250])
    w.close()
    parts = list(iter_chunks(tmp_path / "rec", 400))
    np.testing.assert_array_equal(np.concatenate([p.tau for p in parts]), ds.tau)
    r1 = identify_streaming(rigid, tmp_path / "d.npz", pa={"window": 0.02},
                            velocity_threshold=0.0)
    r2 = identify_streaming(rigid, [ds], pa={"window": 0.02}, velocity_threshold=0.0)
    np.testing.assert_allclose(r1.estimate.values, r2.estimate.values, rtol=1e-10)


def test_fortran_ordered_arrays_are_read(rigid, tmp_path):
    """np.savez of a column selection (tau[:, [1, 0]]) or a transpose stores the array
    column-major: read like the C-ordered one (numpy's own loader is the reference)."""
    ds = rigid_data(rigid, T=1.0)
    ds.save_npz(tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["q"] = np.asfortranarray(arrays["q"])
    arrays["tau"] = arrays["tau"][:, [1, 0]][:, [1, 0]]       # a column selection: F order
    assert arrays["tau"].flags.f_contiguous and not arrays["tau"].flags.c_contiguous
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "f.npz", **arrays)
        parts = list(iter_npz_chunks(tmp_path / "f.npz", 300))
        with np.load(tmp_path / "f.npz") as z:
            np.testing.assert_array_equal(np.concatenate([p.q for p in parts]), z["q"])
            np.testing.assert_array_equal(np.concatenate([p.tau for p in parts]), z["tau"])
        assert [p.t.shape[0] for p in parts] == [300, 300, 300, 100]


def test_bad_input(rigid, tmp_path):
    ds = rigid_data(rigid, T=1.0)
    bank = PolynomialApproximation(0.02, 1000.0)
    gap = ds.slice(np.r_[0:400, 450:1000])
    with pytest.raises(DataError, match="uniform sampling"):
        accumulate(rigid, iter_dataset_chunks(gap, 100), bank)
    with pytest.raises(DataError, match="built for"):
        accumulate(rigid, [ds], PolynomialApproximation(0.02, 500.0))
    with pytest.raises(DataError, match="no complete filter window"):
        accumulate(rigid, [ds.slice(slice(0, 10))], bank)
    with pytest.raises(DataError, match="unknown estimator"):
        identify_streaming(rigid, [ds], estimator="magic")
    with pytest.raises(DataError, match="needs bounds"):
        identify_streaming(rigid, [ds], estimator="bounded")
    with pytest.raises(DataError, match="does not exist"):
        list(iter_chunks(tmp_path / "nope.npz"))
    bad = ds.slice(slice(0, 1000))
    bad.q[500, 0] = np.nan
    with pytest.raises(DataError, match="non-finite"):
        accumulate(rigid, [bad], bank)


def test_normal_equations_equal_dense_statistics():
    from robot_identification.estimation import NormalEquations
    rng = np.random.default_rng(3)
    W, y = rng.normal(size=(300, 3, 5)), rng.normal(size=(300, 3))
    mask = rng.random((300, 3)) > 0.3
    a = NormalEquations(5, 3)
    a.add(W, y, mask)
    a.add(W, y)
    Wm, ym = W * mask[:, :, None], y * mask
    np.testing.assert_allclose(a.G, np.einsum("nji,njk->jik", Wm, Wm)
                               + np.einsum("nji,njk->jik", W, W), rtol=1e-12)
    np.testing.assert_allclose(a.b, np.einsum("nji,nj->ji", Wm, ym)
                               + np.einsum("nji,nj->ji", W, y), rtol=1e-12)
    np.testing.assert_allclose(a.c, (ym ** 2).sum(0) + (y ** 2).sum(0), rtol=1e-12)
    assert a.count.tolist() == (mask.sum(0) + 300).tolist()


def test_elastic_chunk_borders_and_motor_rows():
    """Elastic arm: PA on q, theta and u; chunked == single chunk; link rows have zero LHS."""
    from robot_identification.model import load_robot
    model = load_robot("zollo_planar")
    t = np.arange(1500) / 1000.0
    q, _, _ = fourier(t, 2, seed=3)
    theta = q + 0.01 * np.sin(7 * t)[:, None]
    u = np.column_stack([np.cos(3 * t), np.sin(2 * t)])
    ds = Dataset(t=t, q=q, theta=theta, tau=u, joint_names=model.joint_names)
    bank = PolynomialApproximation(0.02, 1000.0)
    ref, _ = accumulate(model, [ds], bank, decimate=3)
    got, info = accumulate(model, iter_dataset_chunks(ds, 128), bank, decimate=3)
    np.testing.assert_allclose(got.G, ref.G, rtol=1e-12)
    np.testing.assert_allclose(got.b, ref.b, rtol=1e-12, atol=1e-12)
    assert np.all(got.b[:2] == 0) and np.all(got.c[:2] == 0)     # link rows: zero LHS
    assert np.all(got.c[2:] > 0)
    with pytest.raises(DataError, match="motor positions"):
        accumulate(model, [Dataset(t=t, q=q, tau=u, joint_names=model.joint_names)], bank)


def test_pa_product_regressor_noise_free(rigid):
    """Product-rule PA regression (eq. 22-27) recovers the base parameters on noise-free data
    at coarse sampling (250 Hz), like the composition rule (both without the friction rows
    within T of a velocity reversal or stop)."""
    from robot_identification.estimation import NormalEquations, ols
    from robot_identification.identification import pa_product_regressor
    ds = rigid_data(rigid, T=20.0, fs=250.0)
    bank = PolynomialApproximation(0.044, 250.0)
    base = base_parameters(rigid)
    from robot_identification.identification import ReversalWindow, fir_reversal_window
    Y, dqh = pa_product_regressor(rigid, ds.q, bank)
    res = identify_streaming(rigid, [ds], bank=bank, velocity_threshold=0.1)
    # the same friction rows as the streaming path: none within T of a reversal or stop
    before, after = fir_reversal_window(bank)
    rev = ReversalWindow(rigid, before, res.settings["stop_velocity"], ahead=after)
    near = np.concatenate([part["near_reversal"] for part in (
        rev.push({"dq": dqh}), rev.finish()) if part is not None])
    neq = NormalEquations(len(base), 2)
    neq.add(base.project(Y), bank.apply(ds.tau, 0), (np.abs(dqh) >= 0.1) & ~near)
    truth = base.base_values(rigid.nominal_parameters())
    err_prod = np.abs(ols(neq).values - truth)
    err_comp = np.abs(res.estimate.values - truth)
    assert np.all(err_prod <= 5e-3 * np.abs(truth) + 5e-3), dict(zip(base.names, err_prod))
    assert err_prod.max() <= 1.5 * err_comp.max()


def test_mrls_unidentified_parameters_have_unknown_std():
    """Review finding: parameters MRLS leaves at their initial guess get NaN std, not 0."""
    from robot_identification.estimation import NormalEquations
    from robot_identification.streaming import _estimate_from
    rng = np.random.default_rng(0)
    W = rng.normal(size=(200, 1, 3))
    W[:, :, 1] = 0.0
    neq = NormalEquations(3, 1)
    neq.add(W, W @ np.array([1.0, 0.0, 2.0]) + 0.01 * rng.normal(size=(200, 1)))
    K_inv = np.linalg.pinv(neq.gram)
    est = _estimate_from(neq, np.array([1.0, 0.5, 2.0]), K_inv, "mrls", flags=[1, 0, 1])
    assert np.isnan(est.std[1]) and np.all(np.isfinite(est.std[[0, 2]]))
