"""Load-dependent Coulomb friction (``friction.load_dependent``): its regressor column is
sign(v) |tau_0| with tau_0 the URDF's rigid-body torque (checked against pinocchio rnea on
the URDF, an independent reference); rigid arms only; the simulator refuses a non-zero
coefficient it would not apply."""
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from robot_identification.errors import ConfigError
from robot_identification.model import RobotModel, load_robot
from robot_identification.regressor import rigid_regressor


def _loaded(model, load=True, **drive):
    cfg = model.config
    joints = tuple(replace(j, drive={**j.drive, **drive}) for j in cfg.joints)
    cfg = replace(cfg, friction=replace(cfg.friction, load_dependent=load), joints=joints)
    return RobotModel(cfg, urdf_xml=model.urdf_xml)


def test_load_column_is_sign_times_urdf_torque():
    base = _loaded(load_robot("ur10e"), load=False)
    model = _loaded(base)
    rng = np.random.default_rng(3)
    q, dq, ddq = rng.normal(size=(3, 4, 6))
    Y = rigid_regressor(model, q, dq, ddq)
    pm = pin.buildModelFromXML(base.urdf_xml)
    data = pm.createData()
    rotor = np.array([j.drive.get("rotor_inertia", 0.0) for j in base.config.joints])
    cols = [model.parameter_names.index(f"{j}.coulomb_load") for j in model.joint_names]
    for i in range(4):
        tau0 = pin.rnea(pm, data, q[i], dq[i], ddq[i]) + rotor * ddq[i]
        np.testing.assert_allclose(Y[i, np.arange(6), cols], np.sign(dq[i]) * np.abs(tau0),
                                   rtol=1e-9, atol=1e-9)
    # the other columns are those of the model without the term
    keep = [k for k, nm in enumerate(model.parameter_names) if not nm.endswith("coulomb_load")]
    np.testing.assert_allclose(Y[..., keep], rigid_regressor(base, q, dq, ddq), atol=1e-12)


def test_elastic_arms_refuse_it(tmp_path):
    from robot_identification.model import load_robot_config
    import yaml
    src = load_robot("zollo_planar").config.source
    doc = yaml.safe_load(open(src))
    doc.setdefault("friction", {})["load_dependent"] = True
    doc["urdf"] = str((src.parent / doc["urdf"]).resolve())
    path = tmp_path / "elastic.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="load_dependent.*rigid arms only"):
        load_robot_config(path)


def test_simulator_refuses_a_coefficient_it_would_not_apply():
    from robot_identification.simulation._friction import FrictionModel
    model = _loaded(load_robot("ur10e"), coulomb_load=0.02)
    with pytest.raises(ConfigError, match="coulomb_load"):
        FrictionModel(model)
    FrictionModel(_loaded(load_robot("ur10e")))      # 0: nothing left out
