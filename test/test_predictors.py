"""Two predictors, always both (issue #27): validate scores every model through the full
predictor (the identification's Coulomb treatment) and the plain one (stateless, sign(v)
outside a fixed 2e-4 rad/s deadband, unfiltered). The plain one is checked against an
independent script (pinocchio's rnea + rotor, viscous and sign(v) Coulomb terms) and does
not depend on the identification's friction settings; the default selection of the
physical estimate's prior weight is the cross-validated minimum."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from robot_identification.identifiability import base_parameters
from robot_identification.identification import preprocess
from robot_identification.model import load_robot
from robot_identification.simulation import simulate
from robot_identification.validation import validate, validation_to_dict

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def arm7():
    model = load_robot(config=REPO / "test" / "arm7.yaml")
    return model, simulate(model, duration=10.0, seed=0), base_parameters(model)


def test_plain_predictor_equals_an_independent_script(arm7):
    model, ds, base = arm7
    truth = base.base_values(np.nan_to_num(np.asarray(model.nominal_parameters(), float)))
    s = model.config.identification
    f = validate(model, base, {"truth": truth}, [ds], s, labels=["run"])[0]
    st, _ = preprocess(model, ds, s)
    pm = pin.buildModelFromXML(model.urdf_xml)
    data = pm.createData()
    rnea = np.array([pin.rnea(pm, data, q, v, a) for q, v, a in zip(st["q"], st["dq"],
                                                                    st["ddq"])])
    drive = {k: np.array([j.drive[k] for j in model.config.joints])
             for k in ("rotor_inertia", "viscous", "coulomb")}
    pred = (rnea + drive["rotor_inertia"] * st["ddq"] + drive["viscous"] * st["dq"]
            + drive["coulomb"] * np.sign(st["dq"]) * (np.abs(st["dq"]) > 2e-4))
    tau = st["tau"]
    nrmse = np.sqrt(np.mean((pred - tau) ** 2, 0)) / np.sqrt(np.mean(tau ** 2, 0))
    got = [j["nrmse"] for j in f["plain"]["truth"]["joints"]]
    np.testing.assert_allclose(got, nrmse, rtol=1e-6, atol=1e-9)
    assert set(f["plain"]) == set(f["models"]) == {"truth"}
    doc = validation_to_dict("arm7", [f], primary="truth")
    assert set(doc["predictors"]) == {"full", "plain"}
    assert doc["files"][0]["nrmse_mean_plain"] == pytest.approx(np.mean(nrmse), rel=1e-6)


def test_plain_predictor_ignores_the_identification_friction_settings(arm7):
    model, ds, base = arm7
    truth = base.base_values(np.nan_to_num(np.asarray(model.nominal_parameters(), float)))
    s = model.config.identification
    a = validate(model, base, {"m": truth}, [ds], replace(s, friction_deadband=0.05,
                                                          stop_velocity=0.1))[0]
    b = validate(model, base, {"m": truth}, [ds], replace(s, friction_deadband=1e-4,
                                                          stop_velocity=0.0))[0]
    assert a["plain"]["m"]["nrmse_mean"] == b["plain"]["m"]["nrmse_mean"]
    assert a["models"]["m"]["nrmse_mean"] != b["models"]["m"]["nrmse_mean"]


def test_default_prior_weight_is_the_cross_validated_minimum():
    """Two recordings: the physical estimate's prior weight is chosen leave-one-recording-out
    (the table's minimum held-out NRMSE); a number is used as given, without selection."""
    from robot_identification.identification import identify
    model = load_robot("szabo_3dof")
    runs = [simulate(model, seed=k) for k in (0, 1)]
    res = identify(model, runs, estimator="physical")
    sel = res.settings["prior_weight_selection"]
    assert res.settings["prior_weight_folds"] == "recordings" and sel["folds"] == 2
    scores = dict((g, e) for g, e in sel["table"])
    assert scores[res.settings["prior_weight"]] == min(scores.values())
    assert len(sel["table"]) >= 2 and sel["nominal"] > 0
    fixed = identify(model, runs, replace(model.config.identification, prior_weight=10.0),
                     estimator="physical")
    assert fixed.settings["prior_weight"] == 10.0
    assert "prior_weight_selection" not in fixed.settings
