"""Rigid regressor: Y(q, dq, ddq) @ pi equals pinocchio rnea (with armature) + friction."""
import numpy as np
import pinocchio as pin
import pytest

from conftest import make_model
from robot_identification.regressor import regressor, rigid_regressor


def _reference_torque(model, pi, q, dq, ddq):
    """Independent reference: pinocchio rnea on a separate Data, armature, explicit friction."""
    pm = model.pin_model.copy()
    layout = model.layout
    drive = {name: v for name, v in zip(layout.names, pi)}
    arm = np.zeros(pm.nv)
    for k, jn in enumerate(model.joint_names):
        arm[model._idx_v[k]] = drive[f"{jn}.rotor_inertia"] * model.gear_ratios[k] ** 2
    pm.armature = arm
    data = pm.createData()
    tau = np.empty_like(q)
    for i in range(q.shape[0]):
        t = pin.rnea(pm, data, model.pin_configuration(q[i]), model.to_pin_v(dq[i]),
                     model.to_pin_v(ddq[i]))
        tau[i] = model.from_pin_v(t)
    fr = model.config.friction
    for k, jn in enumerate(model.joint_names):
        v = dq[:, k]
        g = lambda key: drive.get(f"{jn}.{key}", 0.0)  # noqa: E731
        tau[:, k] += g("viscous") * v + g("offset")
        if fr.model == "coulomb_viscous":
            tau[:, k] += g("coulomb") * np.sign(v)
        if fr.model == "static":
            tau[:, k] += (g("stiction") * 2 / np.pi * np.arctan(fr.stiction_sharpness * v)
                          + g("stribeck") * 2 / np.pi * np.arctan(fr.stribeck_sharpness * v))
    return tau


@pytest.mark.parametrize("friction", ["none", "viscous", "coulomb_viscous", "static"])
def test_rigid_regressor_matches_rnea(friction):
    model = make_model("rigid", friction=friction, gear=[1.0, 20.0, 1.0, 7.0, 0.5])
    rng = np.random.default_rng(1)
    N = 25
    q = rng.uniform(-2, 2, (N, model.n))
    dq, ddq = rng.normal(0, 2, (N, model.n)), rng.normal(0, 5, (N, model.n))
    pi = model.nominal_parameters()
    Y = rigid_regressor(model, q, dq, ddq)
    assert Y.shape == (N, model.n, model.n_parameters)
    np.testing.assert_allclose(Y @ pi, _reference_torque(model, pi, q, dq, ddq),
                               rtol=0, atol=1e-10, err_msg=f"friction={friction}")


def test_locked_joint_and_merged_tool(rigid_arm):
    # the passive 'finger' joint is not configured: locked, its body merged into link5
    assert rigid_arm.pin_model.nv == 5
    assert "finger" not in rigid_arm.joint_names
    names = rigid_arm.parameter_names
    assert names[:10] == tuple(f"link1.{p}" for p in
                               ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"))
    assert names[10 * 5] == "joint1.rotor_inertia"
    # link5 carries tool + finger masses
    m5 = rigid_arm.nominal_parameters()[names.index("link5.m")]
    assert m5 > 0.7 + 0.1


def test_config_joint_order_differs_from_urdf():
    from conftest import spatial_arm_config, spatial_arm_urdf
    from robot_identification.model import RobotModel, parse_robot_config
    cfg = spatial_arm_config()
    cfg["joints"] = cfg["joints"][::-1]
    model = RobotModel(parse_robot_config(cfg), urdf_xml=spatial_arm_urdf())
    assert model.joint_names[0] == "joint5"
    rng = np.random.default_rng(2)
    q, dq, ddq = (rng.normal(size=(5, 5)) for _ in range(3))
    pi = model.nominal_parameters()
    np.testing.assert_allclose(regressor(model, q, dq, ddq) @ pi,
                               _reference_torque(model, pi, q, dq, ddq), atol=1e-10)


def test_body_frame_parameters_transform():
    """Parameters in a DH frame (zollo_planar frame1) give the same torques as joint-frame ones."""
    from robot_identification.model import load_robot
    model = load_robot("zollo_planar")
    pi = model.nominal_parameters()
    # Zollo eq. 45: c1 = [-5, 0, 0], I1 = diag(0, 1.25, 13.8167) about the DH frame 1
    np.testing.assert_allclose(pi[:10], [21, -5, 0, 0, 0, 0, 1.25, 0, 0, 7 / 15 + 1.25 + 12.10],
                               atol=1e-9)
    np.testing.assert_allclose(pi[10:20], [10, -2.5, 0, 0, 0, 0, 0.625, 0, 0, 7 / 30 + 0.625],
                               atol=1e-9)
