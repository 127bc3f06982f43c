"""Every reader is bounded before it parses (issue #28): a FIFO, ``/dev/zero``, a symbolic-link
loop or a directory given where a file is expected is refused in one line naming it (a FIFO
blocked a reader for ever, a loop ended in a RuntimeError traceback, others were "does not
exist" or "unknown format"); datasets and bags read whole that would not fit in memory are
refused before they are inflated (the kernel killed the process without a word); xacro
includes are checked the same way and a xacro's macro calls are bounded. The YAML and CSV
readers' own bounds are tested in test_input_limits.py and test_csv_reader.py.
"""
import os
import shutil
from pathlib import Path

import pytest

import test_unusual_files_and_values
from conftest import assert_one_line, run_cli
from robot_identification.errors import DataError, ModelError

pytestmark = pytest.mark.slow

run = test_unusual_files_and_values.run          # fixture: the szabo_3dof config and a 3 s run

REPO = Path(__file__).resolve().parents[1]

KINDS = {"fifo": "named pipe (FIFO)", "dev_zero": "character device",
         "loop": "Too many levels of symbolic links", "directory": "is a directory"}


def _make(path, kind):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path.name)
    else:
        path.mkdir()
    return path


def _argv(run, option, bad, tmp_path):
    out = ["--output", tmp_path / "out" / "o.yaml", "--quiet"]
    cfg = ["--config", run / "robot.yaml"]
    return {
        "identify --data .npz": ["identify", *cfg, "--data", bad, *out],
        "identify --data (no suffix)": ["identify", *cfg, "--data", bad, *out],
        "identify --data .mcap": ["identify", *cfg, "--data", bad, *out],
        "identify-stream --data": ["identify-stream", *cfg, "--data", bad, *out],
        "--urdf": ["simulate", *cfg, "--urdf", bad, "--output", tmp_path / "out" / "o.npz"],
        "--config": ["simulate", "--config", bad, "--output", tmp_path / "out" / "o.npz"],
        "--results": ["validate", *cfg, "--results", bad, "--data", run / "run.npz", *out],
        "--trajectory": ["simulate", *cfg, "--trajectory", bad, "--output",
                         tmp_path / "out" / "o.npz"],
        "--prior": ["identify", *cfg, "--data", run / "run.npz", "--prior", bad,
                    "--estimator", "physical", *out],
    }[option]


NAMES = {"identify --data .npz": "run.npz", "identify --data (no suffix)": "run",
         "identify --data .mcap": "run.mcap", "identify-stream --data": "run.npz",
         "--urdf": "arm.urdf", "--config": "robot.yaml", "--results": "results.yaml",
         "--trajectory": "excitation.yaml", "--prior": "prior.yaml"}
CASES = [(o, k) for o in NAMES for k in KINDS
         if not (o == "identify --data (no suffix)" and k == "directory")]   # a bag directory


@pytest.mark.parametrize("option, kind", CASES, ids=[f"{o}-{k}" for o, k in CASES])
def test_an_input_that_is_no_regular_file_is_named(run, tmp_path, capsys, option, kind):
    folder = tmp_path / "in"
    folder.mkdir()
    bad = _make(folder / NAMES[option], kind)
    rc, err = run_cli(_argv(run, option, bad, tmp_path), capsys, run)
    named = "/dev/zero" if kind == "dev_zero" and option == "--urdf" else bad.name
    expected = KINDS[kind]
    if option == "identify --data .mcap" and kind == "directory":
        expected = "not a rosbag2 directory"          # a directory is read as a bag
    assert_one_line(rc, err, named, expected)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["loop", "fifo"])
def test_an_output_that_is_a_link_loop_or_fifo(run, tmp_path, capsys, kind):
    """A symbolic-link loop as --output is named; a FIFO is written into (never replaced)."""
    out = _make(tmp_path / "o.yaml", kind)
    if kind == "fifo":
        import threading
        got = []
        reader = threading.Thread(target=lambda: got.append(open(out, "rb").read()))
        reader.start()
    rc, err = run_cli(["identify", "--config", run / "robot.yaml", "--data", run / "run.npz",
                       "--output", out, "--quiet", "--no-physical"], capsys, run)
    if kind == "loop":
        assert_one_line(rc, err, "o.yaml", "symbolic-link loop")
    else:
        reader.join()
        assert rc == 0 and b"base_parameters" in got[0] and Path(out).is_fifo(), err


# ------------------------------------------------------------------------------ memory
def test_datasets_and_bags_that_would_not_fit_in_memory_are_refused(run, tmp_path,
                                                                    monkeypatch):
    """The sizes an archive or a bag declares are checked against the available memory
    before anything is inflated or decoded; the streaming readers still read them."""
    from robot_identification import _files, cli
    from robot_identification.data import iter_bag_chunks, load_dataset
    from robot_identification.identification import iter_chunks
    bag = tmp_path / "bag"
    assert cli.main(["simulate", "--config", str(run / "robot.yaml"), "--duration", "0.3",
                     "--output", str(bag), "--quiet"]) == 0
    monkeypatch.setattr(_files, "available_memory", lambda: 100_000)
    for path in (run / "run.npz", bag):
        with pytest.raises(DataError) as info:
            load_dataset(path)
        assert str(path) in str(info.value) and "identify-stream" in str(info.value)
    assert sum(c.n_samples for c in iter_chunks(run / "run.npz", 500)) == 3001
    assert sum(c.n_samples for c in iter_bag_chunks(bag, 100)) == 301


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    """An .npz member declaring 4 GB while the archive holds a few kB: refused by the size
    it declares, before it is inflated (here on a machine with 1 GiB available)."""
    import io
    import json
    import zipfile

    import numpy as np
    from robot_identification import _files
    from robot_identification.data import load_dataset

    def npy(a):
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()
    members = {"t.npy": npy(np.arange(30) * 1e-3), "q.npy": npy(np.zeros((30, 1))),
               "tau.npy": npy(np.zeros((30, 1))),
               "meta.npy": npy(np.array(json.dumps({"joint_names": ["j"]})))}
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    raw = bytearray((tmp_path / "bomb.npz").read_bytes())
    at = raw.find(b"PK\x01\x02")                    # central directory entries
    while at >= 0:
        length = int.from_bytes(raw[at + 28:at + 30], "little")
        if raw[at + 46:at + 46 + length] == b"q.npy":
            raw[at + 24:at + 28] = (0xFFFFFFF0).to_bytes(4, "little")
        at = raw.find(b"PK\x01\x02", at + 4)
    (tmp_path / "bomb.npz").write_bytes(bytes(raw))
    with zipfile.ZipFile(tmp_path / "bomb.npz") as zf:
        assert zf.getinfo("q.npy").file_size == 0xFFFFFFF0
    monkeypatch.setattr(_files, "available_memory", lambda: 2**30)
    with pytest.raises(DataError) as exc:
        load_dataset(tmp_path / "bomb.npz")
    assert "bomb.npz" in str(exc.value) and "GiB in memory" in str(exc.value), exc.value


# ------------------------------------------------------------------------------ URDF/xacro
def test_xacro_includes_and_macro_calls_are_bounded(tmp_path, monkeypatch):
    from robot_identification.model import _robot_model, read_urdf
    os.mkfifo(tmp_path / "pipe.xacro")
    head = ('<?xml version="1.0"?><robot name="r" '
            'xmlns:xacro="http://www.ros.org/wiki/xacro">')
    (tmp_path / "inc.urdf.xacro").write_text(head + '<xacro:include filename="pipe.xacro"/>'
                                             '</robot>')
    with pytest.raises(ModelError) as info:
        read_urdf(tmp_path / "inc.urdf.xacro")
    assert "pipe.xacro" in str(info.value) and "named pipe" in str(info.value)
    macros = ['<xacro:macro name="m0"><link name="l"/></xacro:macro>'] + [
        f'<xacro:macro name="m{k}"><xacro:m{k - 1}/><xacro:m{k - 1}/></xacro:macro>'
        for k in range(1, 40)]
    (tmp_path / "bomb.urdf.xacro").write_text(head + "".join(macros) + "<xacro:m39/></robot>")
    monkeypatch.setattr(_robot_model, "MAX_XACRO_MACRO_CALLS", 300)
    with pytest.raises(ModelError) as info:
        read_urdf(tmp_path / "bomb.urdf.xacro")
    assert "bomb.urdf.xacro" in str(info.value) and "more than 300 macro calls" in str(
        info.value)
    import xacro
    assert xacro.parse.__module__ == "xacro"                 # xacro's functions restored
    monkeypatch.setattr(_robot_model, "MAX_URDF_BYTES", 1000)
    shutil.copy(REPO / "urdf" / "szabo_3dof.urdf", tmp_path / "arm.urdf")
    with pytest.raises(ModelError) as info:
        read_urdf(tmp_path / "arm.urdf")
    assert "arm.urdf" in str(info.value) and "above the limit" in str(info.value)


@pytest.mark.parametrize("reader", ["load_dataset", "Recording.from_path"])
def test_a_directory_named_like_a_csv_is_named_by_the_csv_reader(tmp_path, reader):
    """Found by the fuzzing run: a directory run.csv went to the bag reader with the CSV
    column options (``TypeError: read_bag() got an unexpected keyword argument 'time'``)."""
    from robot_identification.data import load_dataset
    from robot_identification.identification import Recording
    folder = tmp_path / "run.csv"
    folder.mkdir()
    read = {"load_dataset": load_dataset, "Recording.from_path": Recording.from_path}[reader]
    for options in ({"time": 1, "position": 2, "torque": 4, "n_joints": 2}, {}):
        with pytest.raises(DataError, match="'.*run.csv' is a directory"):
            read(folder, **options)
