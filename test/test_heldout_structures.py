"""URDF structures of public arms the project was not tuned on (issue #27, the held-out study
benchmarks/heldout_faults.py), reproduced in small crafted URDFs.

A joint that shares its name with a link (Unitree Z1 of example-robot-data: the fixed joint
``gripperStator`` and its child link ``gripperStator``) is valid URDF, but pinocchio holds two
frames of that name, and locking any joint before them (``init --joints`` with a subset, a
mimic joint locked) ended in a traceback ("Several frames match the filter") from
``pinocchio.buildReducedModel``.
"""
import numpy as np
import pinocchio as pin
import pytest

from conftest import run_cli
from robot_identification.model import RobotModel, load_robot_config


def _arm(collide=True):
    """3 revolute joints, a fixed flange; with ``collide`` the flange's fixed joint and the
    third joint carry the names of their child links."""
    j3, fl = ("link3", "flange") if collide else ("joint3", "flange_joint")
    return f"""<robot name="collide">
  <link name="base"/>
  <joint name="joint1" type="revolute"><parent link="base"/><child link="link1"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <link name="link1"><inertial><origin xyz="0 0.02 0.05"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial></link>
  <joint name="joint2" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <link name="link2"><inertial><origin xyz="0.15 0 0.01"/><mass value="1.5"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.012"/></inertial></link>
  <joint name="{j3}" type="revolute"><parent link="link2"/><child link="link3"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="20" velocity="2"/></joint>
  <link name="link3"><inertial><origin xyz="0.1 0.01 0"/><mass value="0.8"/>
    <inertia ixx="0.0008" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.004"/></inertial></link>
  <joint name="{fl}" type="fixed"><parent link="link3"/><child link="flange"/>
    <origin xyz="0.2 0 0"/></joint>
  <link name="flange"><inertial><origin xyz="0.02 0 0"/><mass value="0.3"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
</robot>"""


@pytest.mark.parametrize("locked", ["joint1", "joint2"])
def test_joint_named_like_a_link_with_a_locked_joint_before_it(tmp_path, capsys, locked):
    (tmp_path / "in").mkdir()
    urdf = tmp_path / "in" / "collide.urdf"
    urdf.write_text(_arm())
    cfg = tmp_path / "collide.yaml"
    keep = [j for j in ("joint1", "joint2", "link3") if j != locked]
    rc, err = run_cli(["init", "--urdf", urdf, "--joints", *keep, "--output", cfg, "--quiet"],
                      capsys, tmp_path / "in")
    assert rc == 0 and "Traceback" not in err, err
    model = RobotModel(load_robot_config(cfg))
    assert list(model.joint_names) == keep
    # independent reference: pinocchio's own reduced model of the same arm with distinct
    # names (joint3, flange_joint), its rnea at random states
    ref = pin.buildModelFromXML(_arm(collide=False))
    ref = pin.buildReducedModel(ref, [ref.getJointId(locked)], pin.neutral(ref))
    ref.gravity = pin.Motion(np.array(model.config.gravity), np.zeros(3))
    data = ref.createData()
    from robot_identification.regressor import rigid_regressor
    keep_cols = np.array([k == "inertial" for k in model.layout.kinds])
    pi = np.nan_to_num(model.nominal_parameters())[keep_cols]
    rng = np.random.default_rng(0)
    q, dq, ddq = (rng.uniform(-1, 1, (5, 2)) for _ in range(3))
    ours = rigid_regressor(model, q, dq, ddq)[..., keep_cols] @ pi
    theirs = np.array([pin.rnea(ref, data, *s) for s in zip(q, dq, ddq)])
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


def test_frame_names_made_distinct_keep_the_links():
    from robot_identification.model._robot_model import build_pinocchio_model
    m = build_pinocchio_model(_arm())
    names = [f.name for f in m.frames]
    assert len(names) == len(set(names))
    assert m.existFrame("link3", pin.FrameType.BODY) and m.existFrame("flange",
                                                                       pin.FrameType.BODY)
    assert m.getJointId("link3") < m.njoints      # the joint keeps its name
