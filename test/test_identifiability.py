"""Base parameters: Zollo's Table 1 combinations, categories, grouping identity."""
import numpy as np

from conftest import make_model
from robot_identification.identifiability import base_parameters, random_states
from robot_identification.model import load_robot
from robot_identification.regressor import regressor


def test_zollo_planar_table1():
    """Zollo et al. (2014) Table 1: 14 base parameters with these combinations and values."""
    model = load_robot("zollo_planar")
    bp = base_parameters(model)
    assert len(bp) == 14
    expected = {  # leading parameter -> (expression, true value from Table 1)
        "joint1.stiffness": ("joint1.stiffness", 3000.0),
        "joint2.stiffness": ("joint2.stiffness", 1800.0),
        "link1.m": ("link1.m - 4*link1.Izz + 4*link2.Izz", -30.8333),
        "link2.m": ("link2.m - 4*link2.Izz", 6.5667),
        "link1.mx": ("link1.mx + 2*link1.Izz", 22.6333),
        "link1.my": ("link1.my", 0.0),
        "link2.mx": ("link2.mx + 2*link2.Izz", -0.7833),
        "link2.my": ("link2.my", 0.0),
        "joint1.rotor_inertia": ("joint1.rotor_inertia", 21.18),
        "joint2.rotor_inertia": ("joint2.rotor_inertia", 12.10),
        "joint1.coulomb": ("joint1.coulomb", 0.3302), "joint2.coulomb": ("joint2.coulomb", 0.3576),
        "joint1.viscous": ("joint1.viscous", 0.1434), "joint2.viscous": ("joint2.viscous", 0.1391),
    }
    got = dict(zip(bp.names, zip(bp.expressions(), bp.base_values(model.nominal_parameters()))))
    assert set(got) == set(expected)
    for name, (expr, value) in expected.items():
        assert got[name][0] == expr, name
        np.testing.assert_allclose(got[name][1], value, atol=5e-5, err_msg=name)
    # 12 null columns: cz, Ixx, Iyy, Ixy, Ixz, Iyz of both bodies (notes A.9-2)
    unident = {n for n, c in zip(bp.standard_names, bp.categories) if c == "unidentifiable"}
    assert unident == {f"link{i}.{p}" for i in (1, 2)
                       for p in ("mz", "Ixx", "Iyy", "Ixy", "Ixz", "Iyz")}
    assert bp.categories[bp.standard_names.index("link1.Izz")] == "combination"
    assert bp.categories[bp.standard_names.index("joint1.stiffness")] == "identifiable"


def test_grouping_reproduces_torques():
    """W pi = W_base beta on fresh random samples (not those used to find the base)."""
    for model in (make_model("rigid"), make_model("elastic", prismatic=False,
                                                   gear=[50.0, 80.0, 0.1, 30.0, 2.0])):
        bp = base_parameters(model, seed=1)
        st = random_states(model, 50, np.random.default_rng(7))
        Y = regressor(model, **st)
        pi = model.nominal_parameters()
        np.testing.assert_allclose(bp.project(Y) @ bp.base_values(pi), Y @ pi,
                                   atol=1e-8 * np.abs(Y @ pi).max())
        W = bp.project(Y).reshape(-1, len(bp))
        assert np.linalg.matrix_rank(W) == len(bp)
        assert np.linalg.matrix_rank(Y.reshape(-1, model.n_parameters)) == len(bp)
