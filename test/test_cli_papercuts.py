"""First-hour papercuts of the command line (issue #26): typos get a "did you mean", an
existing output is never replaced silently, errors and warnings come before the table and
info notes only with --verbose."""
from pathlib import Path

import pytest
import yaml

from conftest import assert_one_line, run_cli
from robot_identification import cli

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("papercuts")
    assert cli.main(["simulate", "--robot", "szabo_3dof", "--duration", "4", "--seed", "0",
                     "--output", str(d / "run.npz"), "--quiet"]) == 0
    return d


def test_robot_name_typo_gets_a_suggestion(run, tmp_path, capsys):
    rc, err = run_cli(["identify", "--robot", "ur10", "--data", run / "run.npz", "--output",
                       tmp_path / "r.yaml"], capsys, run)
    assert_one_line(rc, err, "unknown robot 'ur10' (did you mean 'ur10e'?)", "shipped robots")


def test_config_key_typo_gets_a_suggestion_with_its_path(tmp_path, capsys):
    cfg = yaml.safe_load((REPO / "config" / "robots" / "szabo_3dof.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "szabo_3dof.urdf")
    cfg["identification"]["cutof_hz"] = cfg["identification"].pop("cutoff_hz", 10.0)
    (tmp_path / "robot.yaml").write_text(yaml.safe_dump(cfg))
    rc, err = run_cli(["simulate", "--config", tmp_path / "robot.yaml", "--output",
                       tmp_path / "o" / "r.npz"], capsys, tmp_path)
    assert_one_line(rc, err, "robot.yaml.identification: unknown key(s) ['cutof_hz'] "
                             "(did you mean 'cutoff_hz'?)")


def test_choice_typo_gets_a_suggestion(tmp_path, capsys):
    cfg = yaml.safe_load((REPO / "config" / "robots" / "szabo_3dof.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "szabo_3dof.urdf")
    cfg["friction"] = {"model": "coulomb_visous"}
    (tmp_path / "robot.yaml").write_text(yaml.safe_dump(cfg))
    rc, err = run_cli(["simulate", "--config", tmp_path / "robot.yaml", "--output",
                       tmp_path / "o" / "r.npz"], capsys, tmp_path)
    assert_one_line(rc, err, "friction.model", "(did you mean 'coulomb_viscous'?)")


def test_command_typo_gets_a_suggestion(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["identfy"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "(did you mean 'identify'" in err


def test_existing_output_is_refused_without_force(run, tmp_path, capsys):
    out = tmp_path / "results.yaml"
    out.write_text("from an earlier run\n")
    argv = ["identify", "--robot", "szabo_3dof", "--data", run / "run.npz", "--output", out,
            "--quiet", "--no-physical"]
    rc, err = run_cli(argv, capsys, run)
    assert_one_line(rc, err, f"--output '{out}' exists", "--force")
    assert out.read_text() == "from an earlier run\n"
    assert cli.main([str(a) for a in argv + ["--force"]]) == 0
    assert "base_parameters" in out.read_text()


def test_existing_report_is_refused_without_force(run, tmp_path, capsys):
    results = tmp_path / "results.yaml"
    assert cli.main(["identify", "--robot", "szabo_3dof", "--data", str(run / "run.npz"),
                     "--output", str(results), "--quiet", "--no-physical"]) == 0
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.html").write_text("<html>earlier</html>")
    rc, err = run_cli(["report", "--robot", "szabo_3dof", "--results", results, "--output",
                       report], capsys, run)
    assert_one_line(rc, err, f"--output '{report}' exists", "--force")
    assert (report / "report.html").read_text() == "<html>earlier</html>"


def test_warnings_come_before_the_table_and_notes_only_when_verbose(run, tmp_path, capsys):
    argv = ["identify", "--robot", "szabo_3dof", "--data", str(run / "run.npz"),
            "--cutoff", "40", "--no-physical"]
    assert cli.main(argv + ["--output", str(tmp_path / "a.yaml")]) == 0
    out = capsys.readouterr().out
    doc = yaml.safe_load((tmp_path / "a.yaml").read_text())
    severities = {d["severity"] for d in doc["diagnostics"]}
    table_at = out.index("base parameter")
    for d in doc["diagnostics"]:
        line = f"{d['severity']}: {d['code']}"
        if d["severity"] == "info":
            assert line not in out
        else:
            assert out.index(line) < table_at
    if "info" in severities:
        assert "note(s) (info) in the results file; --verbose prints them" in out
    assert cli.main(argv + ["--output", str(tmp_path / "b.yaml"), "--verbose"]) == 0
    out = capsys.readouterr().out
    for d in doc["diagnostics"]:
        assert f"{d['severity']}: {d['code']}" in out
