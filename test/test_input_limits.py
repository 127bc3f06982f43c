"""Readers are bounded before they parse: YAML alias bombs (configs, bag metadata.yaml) and
non-regular files (FIFO, /dev/zero) are refused in one line naming the file (issue #28).
The CSV reader's limits are tested in test_csv_reader.py."""
import os

import pytest

from conftest import assert_one_line, run_cli
from robot_identification.errors import ConfigError, DataError

LAUGHS = "\n".join(["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"] + [
    f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 10)])


def test_alias_bomb_in_a_robot_config_is_refused(tmp_path, capsys):
    cfg = tmp_path / "robot.yaml"
    cfg.write_text("name: bomb\n" + LAUGHS + "\n")
    rc, err = run_cli(["simulate", "--config", cfg, "--output", tmp_path / "o" / "r.npz"],
                      capsys, tmp_path)
    assert_one_line(rc, err, "robot.yaml", "alias bomb")


def test_few_aliases_still_work(tmp_path):
    from robot_identification._yaml import read_yaml_file
    path = tmp_path / "ok.yaml"
    path.write_text("base: &drive {gear_ratio: 100, viscous: 0.1}\n"
                    "joints: [{name: j1, drive: *drive}, {name: j2, drive: *drive}]\n")
    doc = read_yaml_file(path, "robot config", ConfigError)
    assert doc["joints"][1]["drive"] == {"gear_ratio": 100, "viscous": 0.1}


@pytest.mark.parametrize("text,message", [
    ("a: &x [1]\n" + "".join(f"b{k}: *x\n" for k in range(101)), "more than 100 aliases"),
    ("a: &x [1, *x]\n", "recursive structure"),
])
def test_alias_budget_and_recursion(tmp_path, text, message):
    from robot_identification._yaml import read_yaml_file
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        read_yaml_file(path, "robot config", ConfigError)
    assert message in str(info.value) and "x.yaml" in str(info.value)


def test_alias_bomb_in_bag_metadata_is_refused(tmp_path):
    from robot_identification.data import load_dataset
    bag = tmp_path / "run_bag"
    bag.mkdir()
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  version: 8\n"
                                       + "".join(f"  {line}\n" for line in LAUGHS.splitlines()))
    (bag / "run_bag_0.mcap").write_bytes(b"\x89MCAP0\r\n")
    with pytest.raises(DataError) as info:
        load_dataset(bag)
    assert "metadata.yaml" in str(info.value) and "alias bomb" in str(info.value)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_config_that_is_no_regular_file_is_refused(tmp_path, capsys, kind):
    if kind == "fifo":
        path = tmp_path / "robot.yaml"
        os.mkfifo(path)
        expected = "named pipe (FIFO)"
    else:
        path = "/dev/zero"
        expected = "character device"
    rc, err = run_cli(["simulate", "--config", path, "--output", tmp_path / "o" / "r.npz"],
                      capsys, tmp_path)
    assert_one_line(rc, err, str(path), expected)
