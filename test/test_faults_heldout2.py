"""Faults of a fifth adversarial pass (held-out classes): each is read correctly or refused
with one line naming the file and the problem (exit 2); inputs never change.

Classes: finite but absurd sample values (1e300: a conic-solver panic), clock jumps in bags
(messages stamped 0 before the clock ran: "out of memory").
"""
from pathlib import Path

import numpy as np
import pytest

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
