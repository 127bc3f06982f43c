"""What public robot descriptions (Kinova Gen3's kortex_description, Franka, UR) bring that
hand-written URDFs do not, reproduced on small URDFs of test/robot_kinds/:

- right angles rounded by CAD exports (``rpy="1.5708 0 0"``, ``3.1416``): the 4e-6 to 1e-5
  rad left over made a rotor inertia a base parameter of its own, 4e-6 away from its
  link's inertia, and every identification refused the data ("use a richer excitation
  trajectory"); the first link's mx about a vertical axis became a base parameter no data
  identify;
- a ``<material>`` inside ``<collision>`` (Kinova's gripper pads): urdf_parser_py printed an
  ``Unknown tag`` line per pad on every `init`.
"""
from pathlib import Path

import numpy as np
import pinocchio as pin

from robot_identification.cli import main
from robot_identification.errors import ExcitationError
from robot_identification.identifiability import (
    DEPENDENCY_TOLERANCE, base_parameters, base_parameters_from_matrix, check_excitation)
from robot_identification.model import RobotModel, load_robot_config
from robot_identification.model._robot_model import parser_urdf
from robot_identification.identification import identify
from robot_identification.simulation import simulate
from robot_identification.starter import starter_config
import pytest  # noqa: E402

pytestmark = pytest.mark.slow

KINDS = Path(__file__).resolve().parent / "robot_kinds"
CAD = KINDS / "cad_rounded_arm.urdf"


def _model(tmp_path, urdf_text, name):
    urdf = tmp_path / f"{name}.urdf"
    urdf.write_text(urdf_text)
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(starter_config(urdf, cfg))
    return RobotModel(load_robot_config(cfg))


def test_rounded_right_angles_give_the_base_parameters_of_exact_ones(tmp_path):
    text = CAD.read_text()
    exact = text.replace("3.1416", repr(np.pi)).replace("1.5708", repr(np.pi / 2))
    rounded, reference = _model(tmp_path, text, "rounded"), _model(tmp_path, exact, "exact")
    base, base_ref = base_parameters(rounded), base_parameters(reference)
    assert base.names == base_ref.names
    # a vertical first axis: its link's mx, my are unidentifiable; the rotor inertia of
    # joint_2 only identifiable together with its link's inertia about the same axis
    assert "shoulder_link.mx" not in base.names
    assert "joint_2.rotor_inertia" not in base.names
    (grouped,) = [e for e in base.expressions() if "joint_2.rotor_inertia" in e]
    assert grouped.startswith("upper_arm_link.Izz") and grouped.endswith(
        " + joint_2.rotor_inertia")
    assert base.expressions() == base_ref.expressions()
    # the dynamics are the URDF's as pinocchio reads it, within the rounding
    raw = pin.buildModelFromUrdf(str(CAD))
    raw_data, data = raw.createData(), rounded.pin_model.createData()
    rng = np.random.default_rng(0)
    for _ in range(20):
        angles, v, a = (rng.uniform(-1.5, 1.5, 3) for _ in range(3))
        want = pin.rnea(raw, raw_data, pin.integrate(raw, pin.neutral(raw), angles), v, a)
        m = rounded.pin_model
        got = pin.rnea(m, data, pin.integrate(m, pin.neutral(m), angles), v, a)
        assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max()


def test_rounded_right_angles_identify_noise_free(tmp_path):
    model = _model(tmp_path, CAD.read_text(), "rounded")
    data = simulate(model, seed=0, rate_hz=500.0, duration=6.0)
    result = identify(model, data)        # raised ExcitationError on joint_2.rotor_inertia
    nme = result.normalised_mean_error()
    assert np.isfinite(nme) and nme <= 0.05, (nme, [str(d) for d in result.diagnostics])


def test_a_nearly_dependent_column_is_grouped_where_data_could_not_separate_it():
    rng = np.random.default_rng(1)
    a, b, e = rng.standard_normal((3, 400))
    c = a + 0.1 * DEPENDENCY_TOLERANCE * np.linalg.norm(a) * e / np.linalg.norm(e)
    base = base_parameters_from_matrix(np.column_stack([a, b, c]), ["a", "b", "c"],
                                       tol=DEPENDENCY_TOLERANCE)
    assert base.names == ("a", "b")
    assert abs(base.grouping[0, 2] - 1.0) < 1e-4 and base.grouping[1, 2] == 0.0
    # the data check refuses columns this close (the same tolerance) ...
    W = np.column_stack([a, c])
    try:
        check_excitation(W.T @ W, ["a", "c"])
        raise AssertionError("not refused")
    except ExcitationError as exc:
        assert "'c'" in str(exc)
    # ... and keeps columns 100 times further apart, as the structure does
    c2 = a + 10 * DEPENDENCY_TOLERANCE * np.linalg.norm(a) * e / np.linalg.norm(e)
    check_excitation(np.column_stack([a, c2]).T @ np.column_stack([a, c2]), ["a", "c"])
    base = base_parameters_from_matrix(np.column_stack([a, b, c2]), ["a", "b", "c"],
                                       tol=DEPENDENCY_TOLERANCE)
    assert base.names == ("a", "b", "c")


def test_collision_material_prints_no_unknown_tag(tmp_path, capfd):
    assert main(["init", "--urdf", str(CAD), "--output", str(tmp_path / "arm.yaml"),
                 "--quiet"]) == 0
    err = capfd.readouterr().err
    assert "Unknown tag" not in err, err
    kept = parser_urdf('<robot name="r"><link name="l"><visual><geometry><box size="1 1 1"/>'
                       '</geometry><material name="m"/></visual><collision><geometry>'
                       '<box size="1 1 1"/></geometry><material name="m"/></collision>'
                       '</link></robot>')
    assert kept.count("<material") == 1 and "<visual><geometry>" in kept


def test_a_xacro_that_adds_inertials_only_under_an_argument_is_named(tmp_path, capsys):
    xacro_file = KINDS / "inertia_arg.urdf.xacro"
    assert main(["init", "--urdf", str(xacro_file), "--output", str(tmp_path / "a.yaml"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "moves no inertia" in out
    assert ("no joint moves any <inertial>; the xacro declares arguments ['with_inertia']"
            in out)
    assert main(["init", "--urdf", str(xacro_file), "--xacro-arg", "with_inertia:=true",
                 "--output", str(tmp_path / "b.yaml"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "moves no inertia" not in out and "declares arguments" not in out
    # a plain URDF without inertials gets only the per-joint notes
    plain = tmp_path / "plain.urdf"
    from robot_identification.model import read_urdf
    plain.write_text(read_urdf(xacro_file))
    assert main(["init", "--urdf", str(plain), "--output", str(tmp_path / "c.yaml"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "moves no inertia" in out and "declares arguments" not in out
