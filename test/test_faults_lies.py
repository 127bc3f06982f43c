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

import test_faults_heldout
from conftest import assert_one_line, run_cli
from robot_identification import cli

run = test_faults_heldout.run          # fixture: the szabo_3dof config and a 3 s run


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
