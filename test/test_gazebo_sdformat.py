"""Gazebo's view of the shipped robots: every ``urdf/gazebo/<robot>.urdf.xacro`` expanded with
xacro and converted by sdformat (``ign sdf -p``: the URDF -> SDF step Gazebo runs when it
spawns a URDF) gives a model with every link and joint and valid inertias (``ign sdf -k``:
sdformat's own check; and the triangle inequality of the principal moments checked here on
the SDF's numbers).

Needs the sdformat command-line tool (Debian: ``apt-get install ignition-tools
libsdformat-dev``, which ``.ci/run`` installs); skipped with that reason where it is missing.
"""
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
import xacro

from robot_identification.model import available_robots, load_robot_config, robot_files

ROOT = Path(__file__).resolve().parents[1]
IGN = shutil.which("ign")


def _sdformat_missing():
    if IGN is None:
        return "the 'ign' tool is not installed (apt-get install ignition-tools libsdformat-dev)"
    out = subprocess.run([IGN, "sdf", "--help"], capture_output=True, text=True)
    if out.returncode != 0:
        return f"'ign sdf' is not available (apt-get install libsdformat-dev): {out.stderr}"
    return ""


REASON = _sdformat_missing()
pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "-")
pytestmark = [pytestmark, pytest.mark.slow]


def ign_sdf(*args):
    out = subprocess.run([IGN, "sdf", *args], capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout, out.stderr


@pytest.mark.parametrize("robot", available_robots())
def test_gazebo_xacro_converts_to_a_complete_valid_sdf_model(robot, tmp_path):
    config = load_robot_config(robot_files(robot))
    xml = xacro.process_file(str(ROOT / "urdf" / "gazebo" / f"{robot}.urdf.xacro"),
                             mappings={"controllers": str(tmp_path / "controllers.yaml")}
                             ).toxml()
    urdf = tmp_path / f"{robot}.urdf"
    urdf.write_text(xml)
    rc, sdf_text, err = ign_sdf("-p", str(urdf))
    assert rc == 0, err
    sdf = tmp_path / f"{robot}.sdf"
    sdf.write_text(sdf_text)
    rc, out, err = ign_sdf("-k", str(sdf))
    assert rc == 0 and "Valid." in out, out + err
    model = ElementTree.fromstring(sdf_text).find("model")
    links = {el.get("name"): el for el in model.findall("link")}
    joints = {el.get("name"): el for el in model.findall("joint")}
    # every movable URDF joint and the link it moves are in the model (fixed joints' child
    # links are merged into their parents by the conversion, as Gazebo does)
    source = ElementTree.fromstring(xml)
    movable = [j for j in source.findall("joint") if j.get("type") != "fixed"]
    assert set(config.joint_names) <= {j.get("name") for j in movable}
    for j in movable:
        assert j.get("name") in joints, (j.get("name"), sorted(joints))
        assert joints[j.get("name")].get("type") == j.get("type")
        assert j.find("child").get("link") in links, (j.find("child").get("link"),
                                                      sorted(links))
    for name, link in links.items():
        mass = float(link.find("inertial/mass").text)
        inertia = link.find("inertial/inertia")
        v = {k: float(inertia.find(k).text) for k in ("ixx", "ixy", "ixz", "iyy", "iyz",
                                                       "izz")}
        matrix = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                           [v["ixz"], v["iyz"], v["izz"]]])
        a, b, c = np.linalg.eigvalsh(matrix)
        assert mass > 0 and a >= 0, (name, mass, v)
        assert a + b >= c * (1 - 1e-9), (name, v)
