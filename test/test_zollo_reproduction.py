"""Zollo et al. (2014) reproduction on simulated data (issue 2): planar arm and PUMA 560.

The measurement chain is the paper's (Sec. 6.1) as configured in zollo_planar.yaml:
1 kHz, 1 250 000 counts/rev encoders, zero-phase Butterworth 5th order 20 Hz, central
differences, 0.5 rad/s threshold on motor rows. Reference values are the paper's Table 1
(true values, eq. 45), its error levels, and the notes' structural results (A.9).
Full numbers and commands: docs/zollo-reproduction.md.
"""
import pytest

from robot_identification.identifiability import base_parameters
from robot_identification.model import load_robot
from robot_identification.identification import identify
from robot_identification.simulation import add_measurement_noise, simulate

pytestmark = pytest.mark.slow

#: Zollo Table 1, true Pi* (eq. 45 values), in the pipeline's base order
TABLE1_TRUE = {
    "link1.m": -30.8333, "link1.mx": 22.6333, "link1.my": 0.0, "link2.m": 6.5667,
    "link2.mx": -0.7833, "link2.my": 0.0, "joint1.rotor_inertia": 21.18,
    "joint1.stiffness": 3000.0,
    "joint1.viscous": 0.1434, "joint1.coulomb": 0.3302, "joint2.rotor_inertia": 12.10,
    "joint2.stiffness": 1800.0, "joint2.viscous": 0.1391, "joint2.coulomb": 0.3576,
}


@pytest.fixture(scope="module")
def planar():
    return load_robot("zollo_planar")


@pytest.fixture(scope="module")
def stribeck_run(planar):
    """Noise-free run with the paper's Stribeck friction (eq. 43)."""
    return simulate(planar, seed=0)


@pytest.fixture(scope="module")
def stribeck_result(planar, stribeck_run):
    return identify(planar, stribeck_run)


def test_planar_noise_free_matches_table1(planar, stribeck_result):
    r = stribeck_result
    assert len(r.names) == 14
    true = dict(zip(r.names, r.true_values))
    for name, value in TABLE1_TRUE.items():
        assert true[name] == pytest.approx(value, abs=1e-4)
    est = dict(zip(r.names, r.estimate.values))
    # stiffness within 0.1 % (paper: 2.6e-4, 1.2e-4)
    assert est["joint1.stiffness"] == pytest.approx(3000.0, rel=1e-3)
    assert est["joint2.stiffness"] == pytest.approx(1800.0, rel=1e-3)
    # inertial combinations and rotor inertias within 0.5 % (paper <= 0.17 %)
    for name in ("link1.m", "link1.mx", "link2.m", "link2.mx", "joint1.rotor_inertia",
                 "joint2.rotor_inertia"):
        assert est[name] == pytest.approx(true[name], rel=5e-3), name
    # Coulomb model under Stribeck friction: f_s strongly under-estimated (paper -69 %, -65 %)
    for j in (1, 2):
        assert est[f"joint{j}.coulomb"] < 0.5 * true[f"joint{j}.coulomb"]
    # normalised mean error: paper 0.103 (all), 0.00862 (without f_s)
    assert 0.05 < r.normalised_mean_error() < 0.2
    assert r.normalised_mean_error(exclude=("coulomb",)) < 0.03


def test_planar_noise_free_with_regressor_friction(planar):
    """With the identification friction law in the simulator the pipeline is near exact."""
    r = identify(planar, simulate(planar, seed=0, friction="regressor"))
    assert r.normalised_mean_error() < 0.01
    est = dict(zip(r.names, r.estimate.values))
    assert est["joint1.stiffness"] == pytest.approx(3000.0, rel=2e-4)
    assert est["joint2.stiffness"] == pytest.approx(1800.0, rel=2e-4)


def test_planar_noise_trend(planar, stribeck_run, stribeck_result):
    """Error at SNR 200 and 100 dB stays at the noise-free level, grows steeply below 80 dB
    (paper Table 2: 0.111, 0.157, 4.73, 44.5, 3.84e3 at 200, 100, 80, 70, 20 dB)."""
    base = stribeck_result.normalised_mean_error()
    nme = {snr: identify(planar, add_measurement_noise(stribeck_run, snr, seed=0))
           .normalised_mean_error() for snr in (200, 100, 70, 20)}
    assert nme[200] == pytest.approx(base, rel=0.01)
    assert nme[100] < 1.1 * base
    assert nme[70] > 1.5 * base
    assert nme[20] > 10 * nme[70]


def test_puma_base_parameter_count():
    """60 base parameters for the elastic PUMA 560 (notes A.9-3; the paper reports 62)."""
    model = load_robot("puma560_elastic")
    assert model.n_parameters == 84
    b = base_parameters(model)
    assert len(b) == 60
    cats = dict(zip(model.parameter_names, b.categories))
    # frame 1 sits at the base origin: of body 1 only I_yy (about joint 1) is visible
    for p in ("m", "mx", "my", "mz", "Ixx", "Ixy", "Ixz", "Iyz", "Izz"):
        assert cats[f"link1.{p}"] == "unidentifiable", p
    for j in range(1, 7):
        for key in ("stiffness", "rotor_inertia", "viscous", "coulomb"):
            assert cats[f"joint{j}.{key}"] == "identifiable"


def test_puma_tables_4_5_values():
    """Body parameters in DH frames read as Zollo's Tables 3-5 (Corke's PUMA 560)."""
    model = load_robot("puma560_elastic")
    pi = dict(zip(model.parameter_names, model.nominal_parameters()))
    table = {"link1.m": 0.10, "link2.m": 17.4, "link2.mx": -6.3301, "link2.my": 0.1044,
             "link2.mz": 3.9585, "link3.mx": -0.0974, "link3.my": -0.0677, "link3.mz": 0.336,
             "link4.my": 0.0156, "link6.mz": 0.0029, "link1.Iyy": 0.35, "link2.Ixx": 1.031,
             "link2.Iyy": 3.727, "link2.Izz": 2.842, "link2.Ixy": 0.037, "link2.Ixz": 1.440,
             "link2.Iyz": -0.023, "link3.Ixx": 0.090, "link3.Iyy": 0.111, "link3.Izz": 0.015,
             "link3.Ixy": -0.0013, "link3.Ixz": 0.0068, "link3.Iyz": 0.0047}
    for name, value in table.items():
        assert pi[name] == pytest.approx(value, abs=1e-3), name
