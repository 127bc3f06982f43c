"""Friction models on Zollo's planar arm simulated under his Stribeck law (eq. 43):
Coulomb + viscous (with and without the 0.5 rad/s threshold) vs the static-friction model
of Szabó & Gincsainé (eq. 7-9). Full table: benchmarks/friction_comparison.py, docs/friction.md."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from friction_comparison import compare, static_fit  # noqa: E402

from robot_identification.model import load_robot  # noqa: E402
from robot_identification.simulation import zollo_stribeck  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exact_rows():
    rows, ds, fit = compare(seed=0, exact=True)
    return {r["model"].split(" (")[0]: r for r in rows}, ds, fit


def test_static_fit_reference_is_a_least_squares_fit():
    """The reference of the static estimates: eq. 7 fitted to eq. 43 (checked on a grid)."""
    zollo = load_robot("zollo_planar")
    v = np.linspace(-3, 3, 601)[:, None] * np.ones(2)
    fit = static_fit(zollo, v, 100.0, 10.0)
    law = zollo.config.joints[0].simulation_friction
    F = zollo_stribeck(v[:, 0], *(law[f"f{i}"] for i in range(1, 7)))
    f = fit[0]
    model = (f["stiction"] * 2 / np.pi * np.arctan(100 * v[:, 0])
             + f["stribeck"] * 2 / np.pi * np.arctan(10 * v[:, 0]) + f["viscous"] * v[:, 0])
    # a least-squares residual is orthogonal to the regressors
    assert abs(np.dot(F - model, v[:, 0])) < 1e-8 * len(v)
    assert np.sqrt(np.mean((F - model) ** 2)) < 0.1


def test_static_model_recovers_its_best_fit_of_eq43(exact_rows):
    rows, _, _ = exact_rows
    for key in ("static", "static, |v|>0.5"):
        for name, (est, ref) in rows[key]["friction"].items():
            assert est == pytest.approx(ref, rel=0.01, abs=2e-3), (key, name)


def test_coulomb_viscous_is_biased_against_f1_f2(exact_rows):
    """eq. 43 is not f1 v + f2 sign(v): the Coulomb + viscous estimates miss (f1, f2)."""
    rows, _, _ = exact_rows
    for key in ("Coulomb+viscous", "Coulomb+viscous, |v|>0.5"):
        assert rows[key]["nme_friction"] > 0.3
    assert rows["static"]["nme_friction"] < 0.01


def test_rigid_and_elastic_parameters_unaffected(exact_rows):
    rows, _, _ = exact_rows
    for r in rows.values():
        assert r["nme_nonfriction"] < 1e-3, r["model"]
