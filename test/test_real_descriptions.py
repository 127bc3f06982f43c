"""What public robot descriptions (Kinova Gen3's kortex_description, Franka, UR) bring that
hand-written URDFs do not, reproduced on small URDFs of test/robot_kinds/:

- a ``<material>`` inside ``<collision>`` (Kinova's gripper pads): urdf_parser_py printed an
  ``Unknown tag`` line per pad on every `init`.
"""
from pathlib import Path

from robot_identification.cli import main
from robot_identification.model._robot_model import parser_urdf

KINDS = Path(__file__).resolve().parent / "robot_kinds"
CAD = KINDS / "cad_rounded_arm.urdf"


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
