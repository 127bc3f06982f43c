"""Inputs are never written: every command refuses an output that is one of its inputs or lies
in a rosbag2 directory, and writes atomically (issue #12, "data loss").

Each case hashes every input file before and after the command.
"""
import hashlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_identification import cli
from robot_identification.errors import ConfigError
from robot_identification.outputs import atomic_output, check_output, write_text_atomic

REPO = Path(__file__).resolve().parents[1]


def digest(folder):
    """{relative path: sha256} of every file below ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A folder of inputs: szabo_3dof config (with a csv: section) + URDF, an .npz run, the
    same run as CSV, a rosbag2 and a results.yaml."""
    d = tmp_path_factory.mktemp("inputs")
    urdf = d / "szabo.urdf"
    urdf.write_text((REPO / "urdf" / "szabo_3dof.urdf").read_text())
    cfg = yaml.safe_load((REPO / "config" / "robots" / "szabo_3dof.yaml").read_text())
    cfg["urdf"] = urdf.name
    cfg["csv"] = {"time": 1, "position": 2, "torque": 5, "n_joints": 3}
    (d / "szabo.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    run = d / "run.npz"
    assert cli.main(["simulate", "--config", str(d / "szabo.yaml"), "--duration", "2",
                     "--output", str(run)]) == 0
    assert cli.main(["simulate", "--config", str(d / "szabo.yaml"), "--duration", "0.5",
                     "--output", str(d / "bag")]) == 0
    z = np.load(run)
    np.savetxt(d / "run.csv", np.column_stack([z["t"], z["q"], z["tau"]]), delimiter=",")
    assert cli.main(["identify", "--config", str(d / "szabo.yaml"), "--data", str(run),
                     "--output", str(d / "results.yaml"), "--no-physical", "--quiet"]) == 0
    return d


CASES = [
    ("identify over its CSV", ["identify", "--data", "{d}/run.csv", "--output", "{d}/run.csv"],
     "is the input"),
    ("identify over its npz", ["identify", "--data", "{d}/run.npz", "--output", "{d}/run.npz"],
     "is the input"),
    ("identify over the config", ["identify", "--data", "{d}/run.npz", "--output",
                                  "{d}/szabo.yaml"], "is the input"),
    ("identify into the bag", ["identify", "--data", "{d}/run.npz", "--output",
                               "{d}/bag/metadata.yaml"], "rosbag2 directory"),
    ("identify of the bag into it", ["identify", "--data", "{d}/bag", "--output",
                                     "{d}/bag/results.yaml"], "input directory"),
    ("identify over the bag directory", ["identify", "--data", "{d}/run.npz", "--output",
                                         "{d}/bag"], "is a directory"),
    ("validate over the results", ["validate", "--results", "{d}/results.yaml", "--data",
                                   "{d}/run.npz", "--output", "{d}/results.yaml"],
     "is the input"),
    ("export-urdf over the source URDF", ["export-urdf", "--results", "{d}/results.yaml",
                                          "--output", "{d}/szabo.urdf"], "is the input"),
    ("export-urdf through a symlink", ["export-urdf", "--results", "{d}/results.yaml",
                                       "--output", "{tmp}/link.urdf"], "is the input"),
    ("report into the bag", ["report", "--results", "{d}/results.yaml", "--output",
                             "{d}/bag"], "rosbag2 directory"),
    ("report URDF over the results", ["report", "--results", "{d}/results.yaml", "--output",
                                      "{tmp}/report", "--urdf-out", "{d}/results.yaml"],
     "is the input"),
    ("excite over the config", ["excite", "--output", "{d}/szabo.yaml", "--maxiter", "1"],
     "is the input"),
    ("simulate into the bag", ["simulate", "--duration", "0.1", "--output",
                               "{d}/bag/run.npz"], "rosbag2 directory"),
    ("excite over a dataset", ["excite", "--output", "{d}/run.npz", "--maxiter", "1"],
     "is an existing dataset"),
    ("identify over another CSV", ["identify", "--data", "{d}/run.npz", "--output",
                                   "{d}/run.csv"], "is an existing dataset"),
    ("identify-stream over its data", ["identify-stream", "--data", "{d}/run.npz",
                                       "--output", "{d}/run.npz"], "is the input"),
]


@pytest.mark.parametrize("label,argv,message", CASES, ids=[c[0] for c in CASES])
def test_output_over_an_input_is_refused(inputs, tmp_path, capsys, label, argv, message):
    (tmp_path / "link.urdf").symlink_to(inputs / "szabo.urdf")
    before = digest(inputs)
    argv = [a.format(d=inputs, tmp=tmp_path) for a in argv]
    rc = cli.main(argv[:1] + ["--config", str(inputs / "szabo.yaml")] + argv[1:])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert message in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert digest(inputs) == before, label
    assert not (tmp_path / "report").exists()


def test_identify_csv_writes_results_and_keeps_inputs(inputs, tmp_path):
    before = digest(inputs)
    out = tmp_path / "sub" / "results.yaml"
    assert cli.main(["identify", "--config", str(inputs / "szabo.yaml"), "--data",
                     str(inputs / "run.csv"), "--output", str(out), "--no-physical",
                     "--quiet"]) == 0
    assert yaml.safe_load(out.read_text())["robot"] == "szabo_3dof"
    assert digest(inputs) == before
    assert [p.name for p in out.parent.iterdir()] == ["results.yaml"]     # no temporary left


def test_atomic_output_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "results.yaml"
    target.write_text("old: content\n")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as tmp:
            tmp.write_text("half of a fi")
            raise RuntimeError("crash while writing")
    assert target.read_text() == "old: content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.yaml"]
    write_text_atomic(target, "new: content\n")
    assert target.read_text() == "new: content\n"


def test_check_output_hard_link_and_recording(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("1,2\n")
    (tmp_path / "b.csv").hardlink_to(a)
    with pytest.raises(ConfigError, match="is the input"):
        check_output(tmp_path / "b.csv", [a])
    assert check_output(tmp_path / "new" / "results.yaml", [a]).name == "results.yaml"
    (tmp_path / "run.mcap").write_bytes(b"\x89MCAP0\r\n")      # a bare recording: not a bag
    assert check_output(tmp_path / "results.yaml", [a]).name == "results.yaml"
    with pytest.raises(ConfigError, match="is a recording"):
        check_output(tmp_path / "run.mcap")
    crashed = tmp_path / "run_1"                          # recorder killed: no metadata.yaml
    crashed.mkdir()
    (crashed / "run_1_0.mcap").write_bytes(b"\x89MCAP0\r\n")
    with pytest.raises(ConfigError, match="rosbag2 directory"):
        check_output(crashed / "results.yaml")
