"""Inputs that lie (issue #28): bag metadata that counts fewer or more messages than its
storage holds, storage files the metadata does not list (or lists and lacks), a recording
given twice under two names (a byte-identical copy: every standard deviation shrank by
1/sqrt 2). Each is refused with one line naming the file and the problem; inputs never
change.
"""
import os
import shutil

import pytest
import yaml

import test_unusual_files_and_values
from conftest import assert_one_line, run_cli
from robot_identification import cli

pytestmark = pytest.mark.slow

run = test_unusual_files_and_values.run          # fixture: the szabo_3dof config and a 3 s run


@pytest.fixture(scope="module")
def bag(run, tmp_path_factory):
    """A 0.5 s szabo_3dof run written as a rosbag2 (MCAP) by simulate."""
    out = tmp_path_factory.mktemp("bag") / "run_bag"
    assert cli.main(["simulate", "--config", str(run / "robot.yaml"), "--duration", "0.5",
                     "--output", str(out), "--quiet"]) == 0
    return out


def _edit_metadata(fn):
    def edit(d):
        doc = yaml.safe_load((d / "metadata.yaml").read_text())
        fn(doc["rosbag2_bagfile_information"])
        (d / "metadata.yaml").write_text(yaml.safe_dump(doc))
    return edit


def _count(topic_count, total_too=True):
    def fn(info):
        entry = info["topics_with_message_count"][0]
        delta = topic_count - entry["message_count"]
        entry["message_count"] = topic_count
        if total_too:
            info["message_count"] += delta
    return fn


def _drop_topic(info):
    gone = info["topics_with_message_count"].pop()
    info["message_count"] -= gone["message_count"]


def _storage(d):
    return next(d.glob("*.mcap"))


BAG_CASES = [
    ("metadata counts fewer", _edit_metadata(_count(400)),
     ["storage holds 501 messages on '/joint_states'", "declares 400"]),
    ("metadata counts more", _edit_metadata(_count(600)),
     ["declares 600 messages on '/joint_states'", "holds 501"]),
    ("metadata lacks a topic", _edit_metadata(_drop_topic),
     ["a topic metadata.yaml does not declare"]),
    ("total is not the sum", _edit_metadata(lambda i: i.__setitem__("message_count", 5)),
     ["message_count 5 is not the sum"]),
    ("storage file not listed", lambda d: shutil.copy(_storage(d), d / "extra_1.mcap"),
     ["extra_1.mcap", "does not list"]),
    ("listed file missing", lambda d: _storage(d).rename(d / "other.mcap"),
     ["lists the storage file", "lacks"]),
    ("storage plugin of another kind",
     _edit_metadata(lambda i: i.__setitem__("storage_identifier", "sqlite3")),
     ["declares 'sqlite3' storage"]),
    ("storage file is a FIFO", lambda d: (_storage(d).unlink(), os.mkfifo(d / "run_bag.mcap")),
     ["named pipe (FIFO)"]),
    ("storage file is a directory",
     lambda d: (_storage(d).unlink(), (d / "run_bag.mcap").mkdir()), ["is a directory"]),
    ("storage file is /dev/zero",
     lambda d: (_storage(d).unlink(), (d / "run_bag.mcap").symlink_to("/dev/zero")),
     ["is a device"]),
]


@pytest.mark.parametrize("label, edit, needles", BAG_CASES, ids=[c[0] for c in BAG_CASES])
@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_bag_metadata_is_checked_against_the_storage(run, bag, tmp_path, capsys, label, edit,
                                                     needles, command):
    d = tmp_path / "in" / "run_bag"
    shutil.copytree(bag, d)
    assert _storage(d).name == "run_bag.mcap"
    edit(d)
    rc, err = run_cli([command, "--config", run / "robot.yaml", "--data", d, "--output",
                       tmp_path / "r.yaml", "--quiet"], capsys, tmp_path / "in")
    assert_one_line(rc, err, str(d), *needles)
    assert not (tmp_path / "r.yaml").exists()


def test_an_untouched_bag_is_read(bag):
    from robot_identification.data import iter_bag_chunks, load_dataset
    assert load_dataset(bag).n_samples == 501
    assert sum(c.n_samples for c in iter_bag_chunks(bag, 200)) == 501


# ------------------------------------------------------------------ a recording given twice
@pytest.mark.parametrize("copy", ["npz copy", "bag copy", "bag and its storage file",
                                  "symlink"])
@pytest.mark.parametrize("command", ["identify", "validate"])
def test_a_recording_given_twice_is_refused(run, bag, tmp_path, capsys, copy, command):
    """A byte-identical copy as a second --data file was counted twice (drive-gains
    checked for copies, identify did not)."""
    inp = tmp_path / "in"
    inp.mkdir()
    if copy == "npz copy":
        a, b = inp / "run.npz", inp / "run_copy.npz"
        shutil.copy(run / "run.npz", a)
        shutil.copy(a, b)
    elif copy == "bag copy":
        a, b = inp / "run_bag", inp / "run_bag_copy"
        shutil.copytree(bag, a)
        shutil.copytree(bag, b)
    elif copy == "bag and its storage file":
        a = inp / "run_bag"
        shutil.copytree(bag, a)
        b = _storage(a)
    else:
        a, b = inp / "run.npz", inp / "again.npz"
        shutil.copy(run / "run.npz", a)
        b.symlink_to(a)
    argv = [command, "--config", run / "robot.yaml", "--data", a, b, "--output",
            tmp_path / "out.yaml", "--quiet"]
    if command == "validate":
        argv += ["--results", _results(run, tmp_path)]
    rc, err = run_cli(argv, capsys, inp)
    assert_one_line(rc, err, f"'{b}'", f"'{a}'", "give each recording once")
    assert not (tmp_path / "out.yaml").exists()


def _results(run, tmp_path):
    out = tmp_path / "results.yaml"
    assert cli.main(["identify", "--config", str(run / "robot.yaml"), "--data",
                     str(run / "run.npz"), "--output", str(out), "--quiet",
                     "--no-physical"]) == 0
    return out


def test_two_different_recordings_are_both_used(run, tmp_path, capsys):
    """Recordings that differ in one byte are two recordings."""
    from robot_identification.data import load_dataset
    ds = load_dataset(run / "run.npz")
    ds.tau[5, 0] += 1e-9
    ds.save_npz(tmp_path / "other.npz")
    rc, err = run_cli(["identify", "--config", run / "robot.yaml", "--data", run / "run.npz",
                       tmp_path / "other.npz", "--output", tmp_path / "r.yaml", "--quiet",
                       "--no-physical"], capsys, run)
    assert rc == 0, err
    assert yaml.safe_load((tmp_path / "r.yaml").read_text())["metrics"]["n_samples"] == 6002


# ------------------------------------------------------------------ results of another model
@pytest.fixture(scope="module")
def results(run, tmp_path_factory):
    """A results.yaml of szabo_3dof identified on ``run``."""
    out = tmp_path_factory.mktemp("results") / "results.yaml"
    assert cli.main(["identify", "--config", str(run / "robot.yaml"), "--data",
                     str(run / "run.npz"), "--output", str(out), "--quiet",
                     "--no-physical"]) == 0
    return out


def _other_urdf(tmp_path, line, old, new):
    """szabo_3dof's URDF with ``old`` replaced by ``new`` on line ``line`` (1-based)."""
    lines = (REPO / "urdf" / "szabo_3dof.urdf").read_text().splitlines(keepends=True)
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new)
    path = tmp_path / "in" / "other.urdf"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(lines))
    return path


REPO = test_unusual_files_and_values.REPO
USES = [
    ["validate", "--data", "{run}/run.npz", "--output", "{tmp}/out/v.yaml"],
    ["report", "--output", "{tmp}/out/report"],
    ["export-urdf", "--output", "{tmp}/out/arm.urdf"],
    ["export-mjcf", "--output", "{tmp}/out/arm.xml"],
    ["drive-gains", "--unloaded", "{run}/run.csv", "--loaded", "{run}/run.csv",
     "--payload-mass", "1"],
]


@pytest.mark.parametrize("use", USES, ids=[u[0] for u in USES])
def test_results_of_another_geometry_are_refused(run, results, tmp_path, capsys, use):
    """Same robot name and joint names, joint 3 placed 0.6 m instead of 0.5 m along link 2:
    the results were validated and exported without a word."""
    urdf = _other_urdf(tmp_path, 70, 'xyz="0 0.5 0"', 'xyz="0 0.6 0"')
    argv = [use[0], "--config", run / "robot.yaml", "--urdf", urdf, "--results", results,
            *[a.format(run=run, tmp=tmp_path) for a in use[1:]]]
    before = results.read_bytes()
    rc, err = run_cli(argv, capsys, tmp_path / "in")
    assert_one_line(rc, err, str(results), "another geometry", "from joint 'joint3'")
    assert results.read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.parametrize("use", USES, ids=[u[0] for u in USES])
def test_results_of_another_robot_model_are_refused(run, results, tmp_path, capsys, use):
    """Results whose fingerprint names another joint layout (joint 3 prismatic): refused
    by every command reading results, in one line naming the file."""
    doc = yaml.safe_load(results.read_text())
    doc["fingerprint"]["joint_types"][2] = "prismatic"
    edited = tmp_path / "in" / "edited.yaml"
    edited.parent.mkdir()
    edited.write_text(yaml.safe_dump(doc, sort_keys=False))
    argv = [use[0], "--config", run / "robot.yaml", "--results", edited,
            *[a.format(run=run, tmp=tmp_path) for a in use[1:]]]
    rc, err = run_cli(argv, capsys, tmp_path / "in")
    assert_one_line(rc, err, "edited.yaml", "another robot model", "joint_types")
    assert not (tmp_path / "out").exists()


def test_results_with_other_inertials_are_used_with_a_warning(run, results, tmp_path, capsys):
    """The URDF's masses edited since the identification: the identified values do not
    depend on them (the nominal values and priors do): a warning, not a refusal."""
    urdf = _other_urdf(tmp_path, 76, 'xyz="0.25 0 0"', 'xyz="0.2 0 0"')     # link 3's COM
    with pytest.warns(UserWarning, match="inertial parameters differ"):
        rc, err = run_cli(["validate", "--config", run / "robot.yaml", "--urdf", urdf,
                           "--results", results, "--data", run / "run.npz", "--output",
                           tmp_path / "v.yaml", "--quiet"], capsys, tmp_path / "in")
    assert rc == 0, err


@pytest.mark.parametrize("cut", ["after the base parameters", "inside the end line",
                                 "before the end line"])
def test_truncated_results_are_refused(run, results, tmp_path, capsys, cut):
    """A results file cut after its base parameters was accepted."""
    text = results.read_text()
    assert text.endswith("end: {base_parameters: %d}\n" % len(
        yaml.safe_load(text)["base_parameters"]))
    at = {"after the base parameters": text.index("\nmetrics:") + 1,
          "inside the end line": len(text) - 8,
          "before the end line": text.rindex("end: {")}[cut]
    cut_file = tmp_path / "in" / "cut.yaml"
    cut_file.parent.mkdir()
    cut_file.write_text(text[:at])
    for command in (["validate", "--data", run / "run.npz", "--output", tmp_path / "v.yaml"],
                    ["export-urdf", "--output", tmp_path / "a.urdf"]):
        rc, err = run_cli([command[0], "--config", run / "robot.yaml", "--results", cut_file,
                           *command[1:]], capsys, tmp_path / "in")
        assert_one_line(rc, err, "cut.yaml")
        assert "incomplete" in err or "not valid YAML" in err, err


def test_results_of_earlier_versions_are_read_with_a_warning(run, results, tmp_path, capsys):
    doc = yaml.safe_load(results.read_text())
    del doc["fingerprint"], doc["end"]
    old = tmp_path / "in" / "old.yaml"
    old.parent.mkdir()
    old.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.warns(UserWarning, match="no model fingerprint"):
        rc, err = run_cli(["validate", "--config", run / "robot.yaml", "--results", old,
                           "--data", run / "run.npz", "--output", tmp_path / "v.yaml",
                           "--quiet"], capsys, tmp_path / "in")
    assert rc == 0, err


def test_added_sections_keep_the_end_line_last(run, results, tmp_path):
    from robot_identification.model import load_robot
    from robot_identification.report import add_to_results, read_results
    model = load_robot(config=run / "robot.yaml")
    copy = tmp_path / "results.yaml"
    shutil.copy(results, copy)
    add_to_results(copy, model, {"drive_gains": {"identified": [1.0, 2.0, 3.0]}})
    assert copy.read_text().splitlines()[-1].startswith("end: {base_parameters:")
    assert read_results(copy, model)["drive_gains"]["identified"] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_an_option_given_twice_is_refused(run, bag, tmp_path, capsys, command):
    """``--data a --data b`` kept the last value silently: a recording left out."""
    with pytest.raises(SystemExit) as info:           # argparse's usage error
        cli.main([command, "--config", str(run / "robot.yaml"), "--data",
                  str(run / "run.npz"), "--data", str(bag), "--output",
                  str(tmp_path / "r.yaml")])
    assert_one_line(info.value.code, capsys.readouterr().err, "--data given twice")
    assert not (tmp_path / "r.yaml").exists()


def test_the_fingerprint_is_a_typed_field(run, results):
    from robot_identification.model import load_robot
    from robot_identification.report import Fingerprint, read_results
    model = load_robot(config=run / "robot.yaml")
    doc = read_results(results, model)
    assert isinstance(doc.fingerprint, Fingerprint)
    assert doc.fingerprint.joints == tuple(model.joint_names)
    assert "fingerprint" not in doc.sections and "end" not in doc.sections
