"""Stiction beside Coulomb friction (``friction.stiction`` on ``coulomb_viscous``): the column
is Szabó & Gincsainé's (2/pi) atan(K_v v) (2021, eq. 7-8), the regressor times a parameter
vector equals pinocchio rnea on the URDF plus the friction law written out (an independent
reference), the other columns are those of the model without it, and the YAML key reaches
the model."""
from dataclasses import replace

import numpy as np
import pinocchio as pin
import yaml

from robot_identification.model import RobotModel, load_robot, load_robot_config
from robot_identification.regressor import rigid_regressor


def _with_stiction(model, on=True, sharpness=100.0):
    cfg = model.config
    cfg = replace(cfg, friction=replace(cfg.friction, stiction=on,
                                        stiction_sharpness=sharpness))
    return RobotModel(cfg, urdf_xml=model.urdf_xml)


def test_regressor_equals_rnea_plus_the_friction_law():
    ur = load_robot("ur10e")
    model = _with_stiction(ur, sharpness=30.0)
    names = model.parameter_names
    assert all(f"{j}.stiction" in names for j in model.joint_names)
    rng = np.random.default_rng(7)
    q, ddq = rng.normal(size=(2, 5, 6))
    dq = rng.normal(scale=0.05, size=(5, 6))          # around the atan's knee 1/K_v
    pi = model.nominal_parameters().copy()
    fv, fc, fs, fo, fl = (rng.uniform(0.5, 3.0, 6), rng.uniform(0.5, 3.0, 6),
                          rng.uniform(-2.0, 2.0, 6), rng.normal(size=6),
                          rng.uniform(0.0, 0.05, 6))
    for k, j in enumerate(model.joint_names):
        for key, val in (("viscous", fv), ("coulomb", fc), ("stiction", fs), ("offset", fo),
                         ("coulomb_load", fl)):
            pi[names.index(f"{j}.{key}")] = val[k]
    rotor = np.array([pi[names.index(f"{j}.rotor_inertia")] for j in model.joint_names])
    Y = rigid_regressor(model, q, dq, ddq)
    pm = pin.buildModelFromXML(ur.urdf_xml)
    data = pm.createData()
    nominal_rotor = np.array([j.drive.get("rotor_inertia", 0.0) for j in ur.config.joints])
    for i in range(5):
        tau_rb = pin.rnea(pm, data, q[i], dq[i], ddq[i])
        tau0 = tau_rb + nominal_rotor * ddq[i]                  # the load of f_l (URDF)
        law = (fv * dq[i] + (fc + fl * np.abs(tau0)) * np.sign(dq[i])
               + fs * (2 / np.pi) * np.arctan(30.0 * dq[i]) + fo)
        np.testing.assert_allclose(Y[i] @ pi, tau_rb + rotor * ddq[i] + law,
                                   rtol=1e-8, atol=1e-8)
    keep = [k for k, nm in enumerate(names) if not nm.endswith(".stiction")]
    np.testing.assert_allclose(Y[..., keep], rigid_regressor(_with_stiction(ur, on=False),
                                                              q, dq, ddq), atol=1e-12)


def test_yaml_key_reaches_the_model(tmp_path):
    src = load_robot("ur10e").config.source
    doc = yaml.safe_load(open(src))
    doc["friction"].update(stiction=True, stiction_sharpness=50.0)
    doc["urdf"] = str((src.parent / doc["urdf"]).resolve())
    path = tmp_path / "ur10e_stiction.yaml"
    path.write_text(yaml.safe_dump(doc))
    cfg = load_robot_config(path)
    assert cfg.friction.stiction and cfg.friction.stiction_sharpness == 50.0
    model = RobotModel(cfg)
    assert "stiction" in model.drive_parameter_keys()
    assert not _with_stiction(load_robot("ur10e"), on=False).drive_parameter_keys().count(
        "stiction")
