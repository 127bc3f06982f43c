"""``iter_csv_chunks``: a CSV recording read chunk by chunk gives what ``read_csv`` gives for
the whole file (parsing, dropped rows, idle trimming, errors), and ``identify`` streams large
CSV files."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import yaml

from robot_identification.data import iter_csv_chunks, read_csv
from robot_identification.errors import DataError
from robot_identification.identification import concat_chunks

MAPPING = dict(time=1, position=2, torque=6, n_joints=2)


def _write(path, idle_start=3.0, pause=(20.0, 30.0), idle_end=10.0, n=50_000, bad=True,
           moving=True):
    """2 joints at 1 kHz: idle at the start, a pause in the middle, idle at the end; a
    malformed row, a repeated row and a row going back in time."""
    rng = np.random.default_rng(0)
    t = np.arange(n) * 0.001
    mv = ((t > idle_start) & (t < pause[0]) | (t > pause[1]) & (t < t[-1] - idle_end)) \
        & moving
    q = np.zeros((n, 2))
    q[:, 0] = np.cumsum(np.where(mv, 5e-4, 0.0))
    q[:, 1] = np.sin(t) * mv
    dq = np.gradient(q, t, axis=0)
    rows = np.column_stack([t, q, dq, rng.standard_normal((n, 2))])
    with open(path, "w") as f:
        f.write("time,q1,q2,dq1,dq2,tau1,tau2\n")
        for i, r in enumerate(rows):
            if bad and i == 100:
                f.write("1,2,x,4,5,6,7\n")
            if bad and i == 200:
                f.write(",".join(repr(float(x)) for x in rows[150]) + "\n")
            if bad and i == 30_000:
                f.write(",".join(repr(float(x)) for x in r) + "\n")
            f.write(",".join(repr(float(x)) for x in r) + "\n")
    return path


def _both(path, chunk, **kw):
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        whole = read_csv(path, **kw)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        chunks = list(iter_csv_chunks(path, chunk, **kw))
    return whole, chunks, [str(w.message) for w in w1], [str(w.message) for w in w2]


@pytest.mark.parametrize("velocity", [None, 4])
@pytest.mark.parametrize("trim", [True, False])
def test_chunks_are_the_whole_file(tmp_path, velocity, trim):
    path = _write(tmp_path / "run.csv")
    whole, chunks, w1, w2 = _both(path, 7000, **MAPPING, velocity=velocity, trim_idle=trim)
    assert len(chunks) > 3 and max(c.t.shape[0] for c in chunks) <= 7000
    got = concat_chunks(chunks)
    for k in ("t", "q", "tau") + (("dq",) if velocity else ()):
        np.testing.assert_array_equal(getattr(got, k), getattr(whole, k))
    assert chunks[-1].metadata["trimmed_s"] == whole.metadata["trimmed_s"]
    assert chunks[-1].metadata["malformed_rows"] == whole.metadata["malformed_rows"]
    assert len(whole.metadata["malformed_rows"]) == 3
    assert w1 == w2 and "dropped 3 malformed row(s)" in w1[0]


def test_a_run_without_motion_is_read_whole(tmp_path):
    path = _write(tmp_path / "static.csv", n=5000, bad=False, moving=False)
    whole, chunks, _, _ = _both(path, 1000, **MAPPING)
    np.testing.assert_array_equal(concat_chunks(chunks).q, whole.q)
    assert whole.t.shape == (5000,)


def test_too_many_malformed_rows_name_the_file_at_its_end(tmp_path):
    path = tmp_path / "bad.csv"
    lines = ["time,q1,q2,dq1,dq2,tau1,tau2"]
    for i in range(400):
        lines.append(f"{i * 0.01},{np.sin(i * 0.05)},0,0,0,1,1" if i % 3 else "x,y")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as whole:
        read_csv(path, **MAPPING)
    with pytest.raises(DataError) as streamed:
        list(iter_csv_chunks(path, 50, **MAPPING))
    for exc in (whole, streamed):
        msg = str(exc.value)
        assert str(path) in msg and "rows are malformed" in msg and "\n" not in msg


def test_identify_streams_a_large_csv(tmp_path, monkeypatch, capsys):
    from robot_identification.cli import main
    from robot_identification.commands import _common
    from robot_identification.data import load_dataset, write_csv
    from robot_identification.model import load_robot
    npz = tmp_path / "run.npz"
    assert main(["simulate", "--robot", "ur10e", "--duration", "4", "--seed", "1",
                 "--snr", "90", "--derivatives", "--output", str(npz), "--quiet"]) == 0
    csv = tmp_path / "run.csv"
    write_csv(load_dataset(npz), csv, model=load_robot("ur10e"))    # its csv: section
    args = ["identify", "--robot", "ur10e", "--estimator", "ols", "--no-physical",
            "--force", "--data", str(csv)]
    assert main(args + ["--output", str(tmp_path / "whole.yaml")]) in (0, 3)
    assert "read whole (CSV under 8 MiB)" in capsys.readouterr().out
    monkeypatch.setattr(_common, "CSV_STREAM_BYTES", 0)
    assert main(args + ["--output", str(tmp_path / "streamed.yaml")]) in (0, 3)
    assert "read whole" not in capsys.readouterr().out
    docs = [yaml.safe_load((tmp_path / f).read_text()) for f in ("whole.yaml", "streamed.yaml")]
    assert docs[1]["settings"]["recordings_read"] == {str(csv): "streamed"}
    est = [np.array([p["estimate"] for p in d["base_parameters"]]) for d in docs]
    np.testing.assert_allclose(est[1], est[0], rtol=1e-9, atol=1e-12)
