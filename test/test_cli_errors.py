"""CLI error paths end in one line on stderr and exit code 2, never a traceback."""
import pytest

from robot_identification import cli


@pytest.mark.parametrize("argv,message", [
    (["simulate", "--robot", "zollo_planar", "--seed", "-1", "--output", "{tmp}/x.npz"],
     "seed must be a non-negative integer"),
    (["simulate", "--robot", "zollo_planar", "--snr", "nan", "--output", "{tmp}/x.npz"],
     "SNR must be a finite positive"),
    (["identify", "--robot", "zollo_planar", "--data", "{tmp}/missing.npz"], "does not exist"),
    (["identify", "--robot", "zollo_planar", "--data", "{tmp}/run.txt"], "unknown dataset format"),
    (["export-urdf", "--robot", "ur10e", "--results", "{tmp}/missing.yaml",
      "--output", "{tmp}/x.urdf"], "does not exist"),
    (["validate", "--robot", "ur10e", "--results", "{tmp}/bad.yaml", "--data", "{tmp}/x.csv",
      "--output", "{tmp}/v.yaml"], "not a results.yaml"),
    (["identify-stream", "--robot", "puma560", "--data", "{tmp}/missing.npz", "--chunk", "0"],
     "--chunk must be at least 2"),
    (["excite", "--robot", "zollo_planar", "--output", "{tmp}/file/below/a/file.yaml",
      "--maxiter", "1", "--samples", "20", "--harmonics", "2"], "error"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "run.txt").write_text("1 2 3\n")
    (tmp_path / "bad.yaml").write_text("just: text\n")
    (tmp_path / "file").write_text("a file, not a directory\n")
    rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
