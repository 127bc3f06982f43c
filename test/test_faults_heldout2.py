"""Faults of a fifth adversarial pass (held-out classes): each is read correctly or refused
with one line naming the file and the problem (exit 2); inputs never change.

Classes: finite but absurd sample values (1e300: a conic-solver panic), clock jumps in bags
(messages stamped 0 before the clock ran: "out of memory"), SQLite3 recordings whose recorder
was killed (no metadata.yaml: the data were refused).
"""
from pathlib import Path

import numpy as np
import pytest
import yaml

import test_faults_heldout
from conftest import assert_one_line, run_cli
from robot_identification.data import load_dataset

run = test_faults_heldout.run          # fixture: the szabo_3dof config and a 3 s run

REPO = Path(__file__).resolve().parents[1]


def _in(tmp_path):
    (tmp_path / "in").mkdir(exist_ok=True)
    return tmp_path / "in"


def _identify(run, data, out, *extra):
    return ["identify", "--config", run / "robot.yaml", "--data", data, "--output", out,
            "--quiet", *extra]


# ------------------------------------------------------------------ absurd finite values
@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_absurd_sample_value_is_named(run, tmp_path, capsys, command):
    """One torque sample of 1e300 (finite: the NaN check let it through) overflowed the
    normal equations and the conic solver panicked (PanicException traceback)."""
    ds = load_dataset(run / "run.npz")
    ds.tau[1000, 1] = 1e300
    ds.save_npz(_in(tmp_path) / "spike.npz")
    argv = _identify(run, _in(tmp_path) / "spike.npz", tmp_path / "r.yaml")
    argv[0] = command
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, "spike.npz", "'tau'", "1e+300", "joint2", "t = 1 s")


def test_a_panicking_solver_is_a_failed_attempt():
    """A Rust solver's panic (pyo3 PanicException, a BaseException) is not a traceback: the
    physical estimate tries the next solver, then fails with an IdentificationError."""
    from robot_identification.errors import IdentificationError
    from robot_identification.estimation._physical import _solve

    class PanicException(BaseException):
        pass

    class Problem:
        status = None

        def solve(self, solver):
            raise PanicException("Eigval error: Eigen(1)")

    class X:
        value = None

    with pytest.raises(IdentificationError, match="the solver crashed.*Eigen"):
        _solve(Problem(), X(), "CLARABEL", "physical estimate")


# ------------------------------------------------------------------------------ clock jumps
def _bag(path, stamps_ns, n_joints=3):
    from robot_identification.data._bag import BagWriter, _typestore
    st = _typestore()
    T = st.types
    js = "sensor_msgs/msg/JointState"
    w = BagWriter(path, {"/joint_states": js}, flush_period=np.inf)
    for k, ns in enumerate(stamps_ns):
        m = T[js](header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=int(ns) // 10**9, nanosec=int(ns) % 10**9), frame_id=""),
            name=[f"joint{j + 1}" for j in range(n_joints)],
            position=np.sin(k / 100 + np.arange(n_joints)), velocity=np.zeros(0),
            effort=np.cos(k / 70 + np.arange(n_joints)))
        w.write("/joint_states", st.serialize_cdr(m, js), 10**9 + k * 10**6)
    w.close()
    return path


@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_bag_stamped_zero_before_the_clock_is_named(run, tmp_path, capsys, command):
    """A driver that stamps its first messages 0 (before the clock ran), then in epoch time:
    the uniform resampling grid of 1.7e12 samples ended in "out of memory"."""
    stamps = [0, 1, 2] + [1_700_000_000 * 10**9 + k * 10**6 for k in range(600)]
    _bag(_in(tmp_path) / "bag", stamps)
    argv = _identify(run, _in(tmp_path) / "bag", tmp_path / "r.yaml")
    argv[0] = command
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, "'", "bag'", "1.7e+09 s")
    assert "out of memory" not in err


# ---------------------------------------------------------------- killed SQLite3 recorder
def test_sqlite_recording_without_metadata_is_read(run, tmp_path, capsys):
    """rosbag2's default storage before Iron is SQLite3; a recorder killed before it wrote
    metadata.yaml left 'bag_0.db3' alone, refused as "not a rosbag2 directory": the recorded
    data were lost. It is read (SQLite commits whole transactions) with the
    recording_unclosed warning, and the directory is left as it was (no journal, no -shm)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    from robot_identification.data._bag import _typestore
    bag = _in(tmp_path) / "killed"
    st = _typestore()
    T = st.types
    js = "sensor_msgs/msg/JointState"
    ds = load_dataset(run / "run.npz")
    w = Writer(bag, version=8, storage_plugin=StoragePlugin.SQLITE3)
    w.open()
    conn = w.add_connection("/joint_states", js, typestore=st)
    for k in range(ds.n_samples):
        ns = 10**9 + int(round(ds.t[k] * 1e9))
        m = T[js](header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""), name=list(ds.joint_names),
            position=ds.q[k].copy(), velocity=np.zeros(0), effort=ds.tau[k].copy())
        w.write(conn, ns, st.serialize_cdr(m, js))
    w.close()
    (bag / "metadata.yaml").unlink()                     # the recorder was killed
    got = load_dataset(bag)
    assert got.n_samples == ds.n_samples and got.metadata["unclosed"]
    np.testing.assert_allclose(got.tau, ds.tau)
    rc, err = run_cli(_identify(run, bag, tmp_path / "r.yaml"), capsys, _in(tmp_path))
    assert rc == 0, err
    codes = [d["code"] for d in yaml.safe_load((tmp_path / "r.yaml").read_text())["diagnostics"]]
    assert "recording_unclosed" in codes
    (bag / "killed.db3").write_bytes(b"not a database" * 100)
    rc, err = run_cli(_identify(run, bag, tmp_path / "r.yaml"), capsys, _in(tmp_path))
    assert_one_line(rc, err, "killed.db3", "SQLite3", "not a database")
