"""robot_identification_interfaces: both package manifests are valid (catkin_pkg, as colcon and
rosdep read them); discovery needs the interface folder as a base path of its own (colcon and
rosdep do not look inside a package); the built action has the documented fields."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IFACES = ROOT / "robot_identification_interfaces"


def test_manifests_are_valid_and_discovered_with_the_documented_base_paths():
    packages = pytest.importorskip("catkin_pkg.packages")
    from catkin_pkg.package import parse_package
    root = parse_package(ROOT / "package.xml")
    ifaces = parse_package(IFACES / "package.xml")
    for pkg in (root, ifaces):
        pkg.validate()
    assert ifaces.get_build_type() == "ament_cmake" and root.get_build_type() == "ament_python"
    assert "rosidl_interface_packages" in [g.name for g in ifaces.member_of_groups]
    assert "robot_identification_interfaces" in [d.name for d in root.exec_depends]
    # found alone from the repository root: only the root package (the pitfall)
    assert [p.name for p in packages.find_packages(str(ROOT)).values()] == [
        "robot_identification"]
    found = {p.name for base in (ROOT, IFACES) for p in packages.find_packages(str(base)).values()}
    assert found == {"robot_identification", "robot_identification_interfaces"}
    readme = (ROOT / "README.md").read_text()
    assert "src/robot_identification/robot_identification_interfaces" in readme


def test_built_interfaces_have_the_documented_fields():
    action = pytest.importorskip("robot_identification_interfaces.action")
    msg = pytest.importorskip("robot_identification_interfaces.msg")
    goal = action.Identify.Goal()
    assert goal.velocity_threshold == -1.0 and goal.source == "" and goal.estimators == []
    assert set(action.Identify.Feedback.get_fields_and_field_types()) == {
        "stage", "progress", "samples"}
    assert {"success", "message", "results", "results_file"} == set(
        action.Identify.Result.get_fields_and_field_types())
    fields = msg.IdentificationResult.get_fields_and_field_types()
    assert fields["parameters"].endswith("BaseParameter>") and "diagnostics" in fields
    # the Diagnostic message mirrors robot_identification.diagnostics.Diagnostic
    from dataclasses import fields as dc_fields

    from robot_identification.diagnostics import SEVERITIES, Diagnostic
    assert set(msg.Diagnostic.get_fields_and_field_types()) == {
        f.name for f in dc_fields(Diagnostic)}
    assert (msg.Diagnostic.SEVERITY_INFO, msg.Diagnostic.SEVERITY_WARNING,
            msg.Diagnostic.SEVERITY_ERROR) == SEVERITIES
