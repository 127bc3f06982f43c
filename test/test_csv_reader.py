"""CSV import: column mapping, malformed rows, idle trimming, resampling, current -> torque."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from robot_identification.data import CSV_PRESETS, csv_options, load_dataset, read_csv
from robot_identification.errors import ConfigError, DataError

GAINS = [10.0, 10.6956, 8.4566, 9.0029, 9.48, 10.1232]


def _ur_rows(t, q, dq, cur):
    """Rows in the UR layout of CSV_PRESETS['ur'] (31 columns)."""
    N = len(t)
    zeros = np.zeros((N, 6))
    return np.column_stack([t, q, dq, cur, zeros, zeros])


def _write(path, rows, extra_lines=()):
    lines = [",".join(f"{v:.6f}" for v in r) for r in rows]
    for idx, text in extra_lines:
        lines.insert(idx, text)
    path.write_text("\n".join(lines) + "\n")
    return path


def _motion(N=600, dt=0.01, idle=100, seed=0):
    rng = np.random.default_rng(seed)
    t = 100.0 + dt * np.arange(N)
    s = np.zeros(N)
    s[idle:N - idle] = np.sin(np.linspace(0, 4 * np.pi, N - 2 * idle))
    q = np.outer(s, np.arange(1, 7) * 0.1)
    dq = np.gradient(q, t, axis=0)
    cur = rng.normal(size=(N, 6))
    return t, q, dq, cur


def test_ur_preset_torque_and_malformed_rows(tmp_path):
    t, q, dq, cur = _motion(idle=0)
    rows = _ur_rows(t, q, dq, cur)
    bad_time = ",".join(f"{v:.6f}" for v in rows[10])          # repeats time of row 11
    path = _write(tmp_path / "run.csv", rows,
                  extra_lines=[(5, "1,2,3"), (20, "x" + ",0" * 30), (31, bad_time)])
    with pytest.warns(UserWarning, match="dropped 3 malformed"):
        ds = read_csv(path, preset="ur", drive_gains=GAINS, trim_idle=False)
    lines = [ln for ln, _ in ds.metadata["malformed_rows"]]
    assert lines == [6, 21, 32]
    assert ds.n_samples == len(t)
    np.testing.assert_allclose(ds.tau, np.round(cur, 6) * GAINS, atol=1e-12)
    np.testing.assert_allclose(ds.q, np.round(q, 6))
    assert ds.metadata["resampled"] is None
    assert CSV_PRESETS["ur"]["n_columns"] == 31


def test_header_and_explicit_mapping(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("time;a;b;ta;tb\n0;0;1;5;6\n0.1;0.1;1.1;5;6\n0.2;0.2;1.2;5;6\n")
    ds = read_csv(path, delimiter=";", time=1, position=[2, 3], torque=4,
                  joint_names=["a", "b"], trim_idle=False)
    assert ds.joint_names == ("a", "b")
    np.testing.assert_allclose(ds.tau, [[5, 6]] * 3)
    assert ds.dq is None


def test_idle_trimming_keeps_margin(tmp_path):
    t, q, dq, cur = _motion(N=600, idle=150)
    path = _write(tmp_path / "idle.csv", _ur_rows(t, q, dq, cur))
    ds = read_csv(path, preset="ur", drive_gains=GAINS, idle_velocity=0.01, idle_margin=0.5)
    # motion spans samples 150..449 (times 1.50..4.49 s); 0.5 s of rest is kept each side
    assert ds.metadata["moving"]
    assert ds.metadata["trimmed_s"][0] == pytest.approx(1.0, abs=0.015)
    assert ds.metadata["trimmed_s"][1] == pytest.approx(1.0, abs=0.02)
    assert ds.t[0] == 0.0


def test_static_run_is_kept_whole(tmp_path):
    N = 200
    t = 0.01 * np.arange(N)
    rows = _ur_rows(t, np.ones((N, 6)), np.zeros((N, 6)), np.ones((N, 6)))
    ds = read_csv(_write(tmp_path / "static.csv", rows), preset="ur", drive_gains=GAINS)
    assert not ds.metadata["moving"]
    assert ds.n_samples == N


def test_irregular_time_is_resampled(tmp_path):
    rng = np.random.default_rng(3)
    dt = 0.01 + rng.uniform(-0.006, 0.003, 400)
    t = np.cumsum(dt)
    q = np.outer(2.0 * t + 1.0, np.ones(6))                     # linear: exact interpolation
    rows = _ur_rows(t, q, np.full((400, 6), 2.0), np.zeros((400, 6)))
    ds = read_csv(_write(tmp_path / "jitter.csv", rows), preset="ur", drive_gains=GAINS,
                  trim_idle=False)
    steps = np.diff(ds.t)
    assert ds.metadata["resampled"] is not None
    np.testing.assert_allclose(steps, steps[0], rtol=1e-9)
    t0 = np.round(t, 6)[0]
    np.testing.assert_allclose(ds.q[:, 0], 2.0 * (ds.t + t0) + 1.0, atol=2e-5)


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_csv(tmp_path / "none.csv", preset="ur", drive_gains=GAINS)
    t, q, dq, cur = _motion(N=60, idle=0)
    path = _write(tmp_path / "r.csv", _ur_rows(t, q, dq, cur))
    with pytest.raises(ConfigError, match="drive_gains"):
        read_csv(path, preset="ur")
    with pytest.raises(ConfigError, match="unknown CSV preset 'kuka'"):
        read_csv(path, preset="kuka", drive_gains=GAINS)
    with pytest.raises(ConfigError, match="outside 1..31"):
        read_csv(path, preset="ur", drive_gains=GAINS, torque=30)
    many_bad = tmp_path / "bad.csv"
    many_bad.write_text("\n".join(["1,2"] * 10 + ["0," * 30 + "0"]) + "\n")
    with pytest.raises(DataError, match="malformed"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read_csv(many_bad, preset="ur", drive_gains=GAINS, n_columns=31)


def test_robot_config_csv_section(tmp_path):
    from robot_identification.model import load_robot, parse_robot_config
    model = load_robot("ur10e")
    opts = csv_options(model)
    assert opts["preset"] == "ur" and opts["drive_gains"] == GAINS
    assert opts["joint_names"] == list(model.joint_names)
    t, q, dq, cur = _motion(idle=0)
    ds = load_dataset(_write(tmp_path / "u.csv", _ur_rows(t, q, dq, cur)), model=model)
    assert ds.joint_names == model.joint_names
    np.testing.assert_allclose(ds.tau, np.round(cur, 6) * GAINS, atol=1e-9)
    with pytest.raises(ConfigError, match="unknown key"):   # checked when the config loads
        parse_robot_config({"name": "x", "joints": [{"name": "j"}],
                            "csv": {"preset": "ur", "gains": [1.0]}})


# ------------------------------------------------------------------ stdlib csv, bounded reading
def _simple(path, rows, prefix=None, header=None):
    """t, q1, q2, tau1, tau2 rows; ``prefix``: a first text column in every row."""
    lines = [header] if header else []
    for r in rows:
        fields = [f"{v:.6f}" for v in r]
        lines.append(",".join(([prefix] if prefix else []) + fields))
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(N=50):
    t = 0.01 * np.arange(N)
    q = np.column_stack([np.sin(t), np.cos(t)])
    return np.column_stack([t, q, 2 * q])


def test_quoted_comma_in_an_unused_column_is_read(tmp_path):
    """A valid CSV whose unmapped text column holds a quoted comma ("ok, moving"): the
    old reader split on every comma and refused the file."""
    rows = _rows()
    path = tmp_path / "quoted.csv"
    path.write_text("t,q1,q2,tau1,tau2,note\n" + "\n".join(
        ",".join(f"{v:.6f}" for v in r) + ',"ok, moving"' for r in rows) + "\n")
    ds = read_csv(path, time=1, position=2, torque=4, n_joints=2, trim_idle=False)
    assert ds.n_samples == len(rows) and not ds.metadata["malformed_rows"]
    np.testing.assert_allclose(ds.q, rows[:, 1:3], atol=1e-6)
    np.testing.assert_allclose(ds.tau, rows[:, 3:5], atol=1e-6)


def test_zero_based_column_slip_is_named_with_the_fix(tmp_path):
    """Column numbers counted from 0 on a file with a leading text column: every mapped
    column is one to the left. One line naming the column, its text and the 1-based
    mapping that reads the file."""
    path = _simple(tmp_path / "slip.csv", _rows(), prefix="run-7",
                   header="name,t,q1,q2,tau1,tau2")
    with pytest.raises(DataError) as info:
        read_csv(path, time=1, position=2, torque=4, n_joints=2)
    msg = str(info.value)
    assert "\n" not in msg and "slip.csv" in msg
    assert "column 1 (time) holds 'run-7', not a number" in msg
    assert "counted from 0" in msg and "time: 2, position: 3, torque: 5" in msg
    assert "'t'" in msg                                 # the header's name of column 2
    ds = read_csv(path, time=2, position=3, torque=5, n_joints=2, trim_idle=False)
    assert ds.n_samples == 50


def test_zero_column_in_a_config_says_columns_count_from_one(tmp_path):
    from robot_identification.model import load_robot
    import yaml
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((repo / "config" / "robots" / "zollo_planar.yaml").read_text())
    cfg["urdf"] = str(repo / "urdf" / "zollo_planar.urdf")
    cfg["csv"] = {"time": 0, "position": 1, "torque": 3}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"csv.time: .*count from 1.*time: 1, position: 2, "
                                          r"torque: 4"):
        load_robot(config=tmp_path / "r.yaml")


def test_sparse_file_of_zeros_is_refused_at_once(tmp_path):
    """A 2 GB sparse file of NUL bytes: refused from its first bytes (the reader used to
    grow without bound); nothing is read beyond the head."""
    path = tmp_path / "zeros.csv"
    with open(path, "wb") as f:
        f.truncate(2 * 10**9)
    with pytest.raises(DataError) as info:
        read_csv(path, time=1, position=2, torque=4, n_joints=2)
    assert "zeros.csv" in str(info.value) and "NUL" in str(info.value)


def test_size_and_line_limits(tmp_path, monkeypatch):
    from robot_identification.data import _csv
    path = _simple(tmp_path / "big.csv", _rows())
    monkeypatch.setattr(_csv, "MAX_BYTES", 100)
    with pytest.raises(DataError, match=r"big.csv' is 0 MiB, above the limit"):
        read_csv(path, time=1, position=2, torque=4, n_joints=2)
    monkeypatch.setattr(_csv, "MAX_BYTES", 10**9)
    monkeypatch.setattr(_csv, "MAX_LINE", 1000)
    line = tmp_path / "oneline.csv"
    line.write_text("1," * 5000)
    with pytest.raises(DataError, match=r"line 1 is longer than 1000 characters"):
        read_csv(line, time=1, position=2, torque=4, n_joints=2)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_non_regular_files_are_refused_by_name(tmp_path, kind):
    """A FIFO would block the reader forever and /dev/zero never ends: refused before
    opening, by name."""
    import os
    if kind == "fifo":
        path = tmp_path / "pipe.csv"
        os.mkfifo(path)
        expected = "is a named pipe (FIFO), not a regular file"
    elif kind == "dev_zero":
        path = "/dev/zero"
        expected = "is a character device, not a regular file"
    else:
        path = tmp_path / "folder.csv"
        path.mkdir()
        expected = "is a directory"
    with pytest.raises(DataError) as info:
        read_csv(path, time=1, position=2, torque=4, n_joints=2)
    assert str(path) in str(info.value) and expected in str(info.value)


@pytest.mark.parametrize("extra, plain", [
    ((), True), ("text", True), (((0, "t,q1,q2"),), False), (((5, ""),), False),
    (((5, "# a comment"),), False), (((7, "1,2,3"),), False),
    (((9, ",".join(["nan"] * 31)),), False), (((3, ",".join(['"1.5"'] * 31)),), False)])
def test_plain_number_reader_gives_the_row_loops_result(tmp_path, extra, plain):
    """The compiled reader of plain-number files (np.loadtxt, issue #29) gives what the
    row loop gives, to the bit (also with text in a column that is not read), and leaves
    every other file (header, blank or comment line, a short row, NaN, quotes) to the row
    loop, which names the malformed rows."""
    from robot_identification.data import _csv
    rows = _ur_rows(*_motion(N=300, idle=50))
    rows[:, 1:7] += np.random.default_rng(1).normal(scale=1e-3, size=(300, 6))
    path = _write(tmp_path / "run.csv", rows, () if extra == "text" else extra)
    if extra == "text":      # column 26 (not read: the needed columns are 1-19) holds words
        lines = [line.split(",") for line in path.read_text().splitlines()]
        path.write_text("".join(",".join(f[:25] + ["ok"] + f[26:]) + "\n" for f in lines))
    needed = list(range(19))
    info = {}
    blocks = list(_csv._parse_blocks(path, ",", 31, needed, {}, info))
    lines = [ln for _, b in blocks for ln in b.tolist()]
    loop = np.full((len(lines), info["n_columns"]), np.nan)
    loop[:, needed] = np.concatenate([v for v, _ in blocks])
    assert (_csv._parse_plain(path, ",", 31, needed) is not None) == plain
    got = _csv._parse(path, ",", 31, needed)
    np.testing.assert_array_equal(got[0], loop)
    assert (got[1], got[2], got[3], got[4]) == (lines, info["bad"], info["n_columns"],
                                               info["sample"])
