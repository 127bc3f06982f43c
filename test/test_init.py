"""`robot-identification init`: a starter config from a URDF the project does not ship, that
validates, simulates and identifies with no edit; the console table fits the terminal."""
import numpy as np
import pytest
import yaml

from robot_identification.cli import main

pytestmark = pytest.mark.slow

#: (origin rpy, origin xyz, position limit) of a 7-dof arm in the layout of an LBR iiwa
#: (alternating axes); inertials per link: (com, mass, principal moments)
_H, _P = "1.5707963267948966", "3.141592653589793"
_JOINTS = [("0 0 0", "0 0 0.1575", 2.96), (f"{_H} 0 {_P}", "0 0 0.2025", 2.09),
           (f"{_H} 0 {_P}", "0 0.2045 0", 2.96), (f"{_H} 0 0", "0 0 0.2155", 2.09),
           (f"-{_H} {_P} 0", "0 0.1845 0", 2.96), (f"{_H} 0 0", "0 0 0.2155", 2.09),
           (f"-{_H} {_P} 0", "0 0.081 0", 3.05)]
_LINKS = [("0 -0.03 0.12", 4, (0.1, 0.09, 0.02)), ("0.0003 0.059 0.042", 4, (0.05, 0.018, 0.044)),
          ("0 0.03 0.13", 3, (0.08, 0.075, 0.01)), ("0 0.067 0.034", 2.7, (0.03, 0.01, 0.029)),
          ("0.0001 0.021 0.076", 1.7, (0.02, 0.018, 0.005)),
          ("0 0.0006 0.0004", 1.8, (0.005, 0.0036, 0.0047)), ("0 0 0.02", 0.3, (1e-3,) * 3)]


def seven_dof_urdf(gripper=True):
    """URDF text of a 7-dof serial arm (plus a mimic-joint gripper that `init` leaves out)."""
    s = ['<?xml version="1.0"?>', '<robot name="arm7">', '<link name="base"/>']
    parent = "base"
    for i, ((rpy, xyz, lim), (com, m, inertia)) in enumerate(zip(_JOINTS, _LINKS), 1):
        s.append(f'<joint name="a{i}" type="revolute"><parent link="{parent}"/>'
                 f'<child link="l{i}"/><origin rpy="{rpy}" xyz="{xyz}"/><axis xyz="0 0 1"/>'
                 f'<limit effort="{320 if i < 3 else 176 if i < 5 else 40}" lower="-{lim}" '
                 f'upper="{lim}" velocity="{1.7 if i < 5 else 3.1}"/></joint>')
        s.append(f'<link name="l{i}"><inertial><origin xyz="{com}"/><mass value="{m}"/>'
                 f'<inertia ixx="{inertia[0]}" ixy="0" ixz="0" iyy="{inertia[1]}" iyz="0" '
                 f'izz="{inertia[2]}"/></inertial></link>')
        parent = f"l{i}"
    if gripper:
        for k, sign in enumerate(("", "-")):
            s.append(f'<joint name="finger{k}" type="prismatic"><parent link="l7"/>'
                     f'<child link="f{k}"/><origin xyz="0 0 0.05"/><axis xyz="{sign}1 0 0"/>'
                     f'<limit lower="0" upper="0.04" velocity="0.1" effort="10"/>'
                     + ('<mimic joint="finger0"/>' if k else "") + '</joint>')
            s.append(f'<link name="f{k}"><inertial><mass value="0.05"/><inertia ixx="1e-5" '
                     f'ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial></link>')
    s.append("</robot>")
    return "\n".join(s) + "\n"


@pytest.fixture(scope="module")
def arm7(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arm7")
    (folder / "urdf").mkdir()
    urdf = folder / "urdf" / "arm7.urdf"
    urdf.write_text(seven_dof_urdf())
    out = folder / "cfg" / "arm7.yaml"
    assert main(["init", "--urdf", str(urdf), "--output", str(out)]) == 0
    return folder, urdf, out


def test_init_writes_a_valid_config_with_the_urdf_limits(arm7, capsys):
    from robot_identification.model import load_robot
    folder, urdf, out = arm7
    doc = yaml.safe_load(out.read_text())
    assert doc["urdf"] == "../urdf/arm7.urdf"             # relative to the YAML's folder
    # every movable joint but the gripper's (prismatic at the chain's end, and its mimic)
    assert [j["name"] for j in doc["joints"]] == [f"a{i}" for i in range(1, 8)]
    assert doc["joints"][0]["limits"]["position"] == [-2.96, 2.96]
    assert doc["joints"][0]["limits"]["effort"] == 320
    assert doc["joints"][0]["limits"]["velocity"] == 1.7
    assert doc["csv"] == {"time": 1, "position": 2, "velocity": 9, "torque": 16,
                          "n_columns": 22}
    model = load_robot(config=out)
    assert model.n == 7 and model.config.friction.model == "coulomb_viscous"
    # --joints: any subset, kept in the kinematic order
    out2 = folder / "some.yaml"
    assert main(["init", "--urdf", str(urdf), "--joints", "a7", "a2", "a1",
                 "--output", str(out2)]) == 0
    names = [j["name"] for j in yaml.safe_load(out2.read_text())["joints"]]
    assert names == ["a1", "a2", "a7"]
    assert load_robot(config=out2).n == 3
    capsys.readouterr()
    # a joint that another joint mimics: the model would lock the follower while it moves
    assert main(["init", "--urdf", str(urdf), "--joints", "finger0", "a1",
                 "--output", str(folder / "fingers.yaml")]) == 2
    err = capsys.readouterr().err
    assert "finger1" in err and "mimics" in err and len(err.strip().splitlines()) == 1
    # never overwrite; unknown joints are one-line errors
    assert main(["init", "--urdf", str(urdf), "--output", str(out2)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["init", "--urdf", str(urdf), "--joints", "a1", "elbow",
                 "--output", str(folder / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert "elbow" in err and "a7" in err and len(err.strip().splitlines()) == 1
    assert main(["init", "--urdf", str(folder / "missing.urdf"),
                 "--output", str(folder / "y.yaml")]) == 2
    assert "missing.urdf" in capsys.readouterr().err


def test_init_reads_xacro(tmp_path):
    xacro = tmp_path / "arm.urdf.xacro"
    body = seven_dof_urdf(gripper=False).replace(
        '<robot name="arm7">', '<robot name="arm7" xmlns:xacro="http://www.ros.org/wiki/xacro">'
        '<xacro:property name="lim" value="2.5"/>').replace('upper="2.96"', 'upper="${lim}"')
    xacro.write_text(body)
    out = tmp_path / "arm.yaml"
    assert main(["init", "--urdf", str(xacro), "--name", "my_arm", "--output", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    assert doc["name"] == "my_arm" and doc["joints"][0]["limits"]["position"] == [-2.96, 2.5]


def test_starter_config_simulates_and_identifies_without_edits(arm7, tmp_path, capsys):
    """simulate -> identify on the starter: the inertial base parameters that the data
    determine well (relative std < 1 %) match the URDF's (the simulator's truth)."""
    _, _, cfg = arm7
    run = tmp_path / "run.npz"
    assert main(["simulate", "--config", str(cfg), "--output", str(run)]) == 0
    res = tmp_path / "results.yaml"
    assert main(["identify", "--config", str(cfg), "--data", str(run), "--output", str(res),
                 "--no-physical"]) == 0
    capsys.readouterr()
    doc = yaml.safe_load(res.read_text())
    good = [e for e in doc["base_parameters"] if e["relative_std"] is not None
            and e["relative_std"] < 1.0 and abs(e["true"]) > 0.05]
    assert len(good) >= 10
    for e in good:
        assert abs(e["estimate"] / e["true"] - 1) < 0.05, e


def test_console_table_fits_the_terminal_width(arm7, tmp_path):
    from robot_identification.model import load_robot
    from robot_identification.identification import identify
    from robot_identification.report import format_table
    from robot_identification.simulation import simulate
    model = load_robot(config=arm7[2])
    result = identify(model, simulate(model, duration=4.0))
    for width in (80, 120):
        text = format_table(result, width=width)
        assert max(len(line) for line in text.splitlines()) <= width
    lines = format_table(result, width=100).splitlines()
    assert "unit" in lines[0]
    # a combination is shown under its name, starting with "= "
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("= "))
    assert lines[i - 1].split()[1] in lines[i]
    assert np.isfinite(result.estimate.values).all()


def test_init_continuous_joints_have_no_position_limits(tmp_path):
    import warnings

    from robot_identification.excitation import trajectory_from_config
    from robot_identification.model import load_robot
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(seven_dof_urdf(gripper=False).replace(
        'name="a1" type="revolute"', 'name="a1" type="continuous"'))
    out = tmp_path / "arm.yaml"
    assert main(["init", "--urdf", str(urdf), "--output", str(out)]) == 0
    limits = yaml.safe_load(out.read_text())["joints"][0]["limits"]
    assert "position" not in limits and limits["velocity"] == 1.7
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no NaN arithmetic on infinite limits
        traj = trajectory_from_config(load_robot(config=out))
    assert traj.n_joints == 7


def test_robots_lists_names_and_descriptions(capsys):
    assert main(["robots"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("zollo_planar"))
    assert "2 dof elastic" in line and "Zollo" in line
    assert "config/robots" not in out             # descriptions, not file paths
    assert "init --urdf" in out


def test_starter_config_excites(arm7, tmp_path, capsys):
    """`excite` optimises on a starter config (three of its joints, two SLSQP iterations)."""
    folder, urdf, _ = arm7
    cfg = tmp_path / "three.yaml"
    assert main(["init", "--urdf", str(urdf), "--joints", "a1", "a2", "a4", "--output",
                 str(cfg)]) == 0
    out = tmp_path / "excitation.yaml"
    assert main(["excite", "--config", str(cfg), "--output", str(out), "--maxiter", "2",
                 "--samples", "30", "--harmonics", "2", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "within joint limits: True" in text
    assert yaml.safe_load(out.read_text())
