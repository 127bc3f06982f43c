"""Szabó & Gincsainé (2021), 3-dof arm with static friction: Table 2 reproduction.

References: the paper's Table 2 (expressions, exact values, LS/WLS statistics), eq. 7-9
(friction), eq. 17-19 (LS/WLS), pinocchio rnea (independent inverse dynamics).
"""
import numpy as np
import pinocchio as pin
import pytest

from robot_identification.errors import ConfigError
from robot_identification.estimation import NormalEquations, ols, wls
from robot_identification.excitation._optimize import FourierParametrisation
from robot_identification.identifiability import base_parameters_from_matrix
from robot_identification.identifiability._base import random_states
from robot_identification.model import load_robot
from robot_identification.model import parse_robot_config
from robot_identification.regressor import friction_columns, regressor

SZABO_BODY = ["Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz", "m", "mx", "my", "mz"]   # eq. 3
SIGMA = np.array([0.5, 0.3, 0.7])                                                 # N m

# Table 2, written in our parameter names (m s_x -> mx, I^(j) -> link j frame-origin inertia)
TABLE2 = [
    ("link2.Ixx - link2.Iyy - 0.5*link2.mx", 0.059, 0.059, 8.27e-4, 0.059, 6.25e-4),
    ("link3.Ixx - link3.Iyy - 0.5*link3.mx", 0.059, 0.057, 8.09e-4, 0.058, 6.18e-4),
    ("link2.Ixy", 0.0, 0.002, 3.23e-4, 0.001, 2.27e-4),
    ("link3.Ixy", 0.0, -0.0, 2.04e-4, -0.0, 1.47e-4),
    ("link1.Iyy + link2.Iyy + 0.5*link2.mx + link3.Iyy + 0.5*link3.mx",
     -0.117, -0.115, 5.25e-4, -0.115, 4.30e-4),
    ("link2.Ixz - 0.5*link2.mz - 0.5*link3.mz", 0.0, 0.001, 2.06e-4, 0.0, 1.50e-4),
    ("link3.Ixz - 0.5*link3.mz", 0.0, -0.001, 1.60e-4, -0.0, 1.14e-4),
    ("link2.Iyz", 0.0, -0.001, 1.32e-4, -0.0, 1.06e-4),
    ("link3.Iyz", 0.0, 0.001, 7.56e-5, 0.001, 5.49e-5),
    ("link2.Izz + 0.5*link2.mx", -0.059, -0.060, 3.68e-4, -0.060, 2.68e-4),
    ("link3.Izz + 0.5*link3.mx", -0.059, -0.057, 3.30e-4, -0.058, 2.21e-4),
    ("link2.m + 2*link2.mx - 2*link3.mx", 1.414, 1.415, 1.50e-4, 1.414, 6.01e-5),
    ("link3.m + 2*link3.mx", 0.707, 0.706, 3.82e-5, 0.707, 1.42e-5),
    ("joint1.stiction", 2.0, 1.998, 7.97e-4, 1.998, 7.80e-4),
    ("joint2.stiction", 1.0, 0.999, 1.42e-4, 0.999, 1.41e-4),
    ("joint3.stiction", 2.0, 1.998, 2.36e-3, 1.998, 2.34e-3),
    ("joint1.viscous", 0.5, 0.505, 8.26e-3, 0.506, 7.89e-3),
    ("joint2.viscous", 0.277, 0.243, 9.26e-4, 0.244, 8.08e-4),
    ("joint3.viscous", 0.030, 0.034, 1.60e-2, 0.035, 1.54e-2),
    ("joint1.stribeck", -0.3, -0.302, 1.45e-2, -0.303, 1.39e-2),
    ("joint2.stribeck", -0.2, -0.176, 1.67e-3, -0.177, 1.65e-3),
    ("joint3.stribeck", -0.3, -0.306, 3.56e-2, -0.307, 3.45e-2),
    ("link2.my", 0.0, 0.0, 3.82e-6, 0.0, 2.24e-6),
    ("link3.my", 0.0, 0.0, 4.67e-6, 0.0, 2.37e-6),
]


def szabo_columns(model):
    """Column indices of Szabó's Theta (eq. 3 per link, then tau_s, tau_v, tau_sc): 39 of 42
    (the rotor-inertia columns, absent from the paper's model, are left out)."""
    names = model.parameter_names
    cols = [names.index(f"{b}.{p}") for b in model.body_names for p in SZABO_BODY]
    for key in ("stiction", "viscous", "stribeck"):
        cols += [names.index(f"{j}.{key}") for j in model.joint_names]
    return cols


@pytest.fixture(scope="module")
def setup():
    model = load_robot("szabo_3dof")
    cols = szabo_columns(model)
    st = random_states(model, 200, np.random.default_rng(0))
    W = regressor(model, **st).reshape(-1, model.n_parameters)[:, cols]
    base = base_parameters_from_matrix(W, [model.parameter_names[c] for c in cols])
    return model, cols, base


def rnea_static_friction(model, q, dq, ddq, fs, fsc, fv):
    """Independent reference: pinocchio rnea of the URDF + eq. 7-8 written out."""
    pm = model.pin_model
    data = pm.createData()
    tau = np.array([model.from_pin_v(pin.rnea(pm, data, model.pin_configuration(a),
                                              model.to_pin_v(b), model.to_pin_v(c)))
                    for a, b, c in zip(q, dq, ddq)])
    fr = model.config.friction
    return (tau + fs * (2 / np.pi) * np.arctan(fr.stiction_sharpness * dq)
            + fsc * (2 / np.pi) * np.arctan(fr.stribeck_sharpness * dq) + fv * dq)


def fourier_motion(n_samples=2000, duration=10.0):
    par = FourierParametrisation(3, 5, duration, np.array([0.0, 0.3, -0.5]))
    x = par.initial(np.random.default_rng(2), 0.4)
    t = np.linspace(0.0, duration, n_samples, endpoint=False)
    return par.evaluate(x, t)


TRUE_FRICTION = dict(fs=np.array([2.0, 1.0, 2.0]), fsc=np.array([-0.3, -0.2, -0.3]),
                     fv=np.array([0.5, 0.277, 0.030]))


def test_friction_columns_are_eq_7_to_9(setup):
    model, _, _ = setup
    v = np.linspace(-2, 2, 41)[:, None] * np.ones(3)
    cols = friction_columns(model, v)
    Kv, delta = 100.0, 10.0                       # config/robots/szabo_3dof.yaml
    np.testing.assert_allclose(cols["stiction"], 2 / np.pi * np.arctan(Kv * v), atol=1e-15)
    np.testing.assert_allclose(cols["stribeck"], 2 / np.pi * np.arctan(delta * v), atol=1e-15)
    np.testing.assert_allclose(cols["viscous"], v)
    # friction = tau_s at small |v|, Coulomb level tau_s + tau_sc at large |v| (Sec. 2.2)
    f = lambda vel: (2.0 * cols["stiction"] - 0.3 * cols["stribeck"]  # noqa: E731
                     + 0.5 * cols["viscous"])
    big = f(v)[-1, 0] - 0.5 * 2.0
    assert big == pytest.approx(1.7, abs=0.02)


def test_static_friction_config_errors():
    base = {"name": "x", "joints": [{"name": "j"}]}
    with pytest.raises(ConfigError, match="stribeck_sharpness"):
        parse_robot_config({**base, "friction": {"model": "static", "stribeck_sharpness": -1}})
    with pytest.raises(ConfigError, match="friction.model"):
        parse_robot_config({**base, "friction": {"model": "stribeck"}})


def test_regressor_matches_rnea_with_static_friction(setup):
    model, _, _ = setup
    rng = np.random.default_rng(5)
    q, dq, ddq = (rng.uniform(-2, 2, (20, 3)) for _ in range(3))
    Y = regressor(model, q, dq, ddq)
    ref = rnea_static_friction(model, q, dq, ddq, **TRUE_FRICTION)
    np.testing.assert_allclose(Y @ model.nominal_parameters(), ref, atol=1e-12)


def test_base_parameters_reproduce_table2_expressions(setup):
    _, _, base = setup
    assert len(base) == 24                                   # "24 identifiable variables"
    assert sorted(base.expressions()) == sorted(row[0] for row in TABLE2)


def test_base_values_reproduce_table2_exact_column(setup):
    model, cols, base = setup
    beta = dict(zip(base.expressions(), base.base_values(model.nominal_parameters()[cols])))
    for expr, exact, *_ in TABLE2:
        assert round(beta[expr], 3) == pytest.approx(exact, abs=1e-9), expr


def _base_system(setup, n_samples=2000):
    model, cols, base = setup
    q, dq, ddq = fourier_motion(n_samples)
    W = base.project(regressor(model, q, dq, ddq)[:, :, cols])
    tau = rnea_static_friction(model, q, dq, ddq, **TRUE_FRICTION)
    return W, tau, base.base_values(model.nominal_parameters()[cols])


def test_noise_free_ls_and_wls_give_exact_values(setup):
    W, tau, beta = _base_system(setup)
    neq = NormalEquations(24, 3)
    neq.add(W, tau)
    np.testing.assert_allclose(ols(neq).values, beta, atol=1e-10)
    np.testing.assert_allclose(wls(neq, sigma=SIGMA).values, beta, atol=1e-10)


def test_small_monte_carlo_ls_vs_wls(setup):
    """30 runs (the full study is benchmarks/wls_crlb.py): unbiased means, WLS better."""
    W, tau, beta = _base_system(setup)
    rng = np.random.default_rng(11)
    runs = 30
    est = {"ls": [], "wls": []}
    for _ in range(runs):
        y = tau + rng.normal(0.0, SIGMA, tau.shape)
        neq = NormalEquations(24, 3)
        neq.add(W, y)
        est["ls"].append(ols(neq).values)
        est["wls"].append(wls(neq).values)           # sigma estimated from residuals
    Ws = W / SIGMA[None, :, None]
    crlb = np.diag(np.linalg.inv(np.einsum("nji,njk->ik", Ws, Ws)))
    G = np.einsum("nji,njk->ik", W, W)
    Gi = np.linalg.inv(G)
    ls_cov = np.diag(Gi @ np.einsum("nji,j,njk->ik", W, SIGMA ** 2, W) @ Gi)
    assert np.all(crlb <= ls_cov * (1 + 1e-9))          # Gauss-Markov: WLS never worse
    for key, var in (("ls", ls_cov), ("wls", crlb)):
        e = np.array(est[key])
        z = (e.mean(axis=0) - beta) / np.sqrt(var / runs)
        assert np.all(np.abs(z) < 4.5), (key, z)
        ratio = e.var(axis=0, ddof=1) / var
        assert 0.3 < np.median(ratio) < 2.0 and np.all(ratio < 3.5), (key, ratio)


def test_order_argument_of_base_parameters_gives_table2_groups():
    """The robot's own parameter vector and ``base_parameters(model, order=...)``: the
    groups led by Szabó's parameters are Table 2's (``rotor_inertia: null`` in the config:
    no rotor columns, as in the paper)."""
    from robot_identification.identifiability import base_parameters
    model = load_robot("szabo_3dof")
    cols = szabo_columns(model)
    names = model.parameter_names
    rotor = [names.index(f"{j}.rotor_inertia") for j in model.joint_names
             if f"{j}.rotor_inertia" in names]       # none since rotor_inertia: null
    base = base_parameters(model, order=cols + rotor)
    szabo = set(cols)
    got = set()
    for i, row in zip(base.independent, base.grouping):
        if i in szabo:
            got.add(frozenset((names[j], round(row[j], 9)) for j in np.flatnonzero(row)
                              if j not in rotor))
    expected = set()
    for expr, *_ in TABLE2:          # "a - 0.5*b + c" -> {(a, 1), (b, -0.5), (c, 1)}
        terms = expr.replace(" - ", " + -").split(" + ")
        group = set()
        for t in terms:
            sign = -1.0 if t.startswith("-") else 1.0
            t = t.lstrip("-")
            coef, name = t.split("*") if "*" in t else ("1", t)
            group.add((name, round(sign * float(coef), 9)))
        expected.add(frozenset(group))
    assert got == expected
    # the default order (pinocchio's m, mx, ..., Izz) gives a different base set
    default = base_parameters(model)
    assert "link2.m - 4*link2.Izz + 4*link3.Izz" in default.expressions()
    assert len(default) == 24 == len(TABLE2)     # the paper's 24 (no rotor column)
