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


def test_the_prediction_pass_gives_the_coulomb_level_of_coulomb_scale():
    """The pre-sliding selection takes f_c + f_l |tau_0| from the prediction's regressor pass
    (issue #29): the same level as :func:`coulomb_scale`'s own pass, over several chunks,
    and f_l |tau_0| with tau_0 from pinocchio rnea (an independent reference)."""
    from robot_identification.identifiability import base_parameters
    from robot_identification.identification import (
        coulomb_coefficients, coulomb_scale, load_coefficients, predict_torque)
    from robot_identification.identification._prediction import _predict_with_scale
    base_model = _loaded(load_robot("ur10e"), load=False)
    model = _loaded(base_model)
    base = base_parameters(model)
    rng = np.random.default_rng(5)
    beta = rng.normal(size=len(base.independent))
    N = 700
    q, dq, ddq = rng.normal(size=(3, N, 6))
    states = {"q": q, "dq": dq, "ddq": ddq}
    coulomb = np.tanh(dq / 0.05)
    pred, scale = _predict_with_scale(model, base, beta, states, chunk=256,
                                      friction_deadband=0.01, coulomb=coulomb)
    want = coulomb_scale(model, base, beta, states)
    assert scale.shape == (N, 6)
    np.testing.assert_allclose(scale, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    np.testing.assert_array_equal(
        pred, predict_torque(model, base, beta, states, chunk=256, friction_deadband=0.01,
                             coulomb=coulomb))
    fc, fl = coulomb_coefficients(model, base, beta), load_coefficients(model, base, beta)
    assert np.any(fl)
    pm = pin.buildModelFromXML(base_model.urdf_xml)
    data = pm.createData()
    rotor = np.array([j.drive.get("rotor_inertia", 0.0) for j in base_model.config.joints])
    for i in range(0, N, 97):
        tau0 = pin.rnea(pm, data, q[i], dq[i], ddq[i]) + rotor * ddq[i]
        np.testing.assert_allclose(scale[i], fc + fl * np.abs(tau0), rtol=1e-9, atol=1e-9)
    # without load-dependent friction: the per-joint f_c of coulomb_scale
    base2 = base_parameters(base_model)
    beta2 = rng.normal(size=len(base2.independent))
    _, scale2 = _predict_with_scale(base_model, base2, beta2, states, chunk=256,
                                    coulomb=coulomb)
    np.testing.assert_array_equal(scale2, coulomb_scale(base_model, base2, beta2, states))
