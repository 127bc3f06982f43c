"""The robot config file on pydantic v2 models (issue #26): the committed JSON Schema
(config/robot_config.schema.json, what editors read) is the one the models generate; every
shipped robot config and a starter config pass it under an independent validator (the
``jsonschema`` package), which refuses the misspelt keys the loader refuses; a typo is one
line naming the file, the key path and a suggestion."""
import json
from pathlib import Path

import pytest
import yaml

from conftest import assert_one_line, run_cli
from robot_identification import cli
from robot_identification.commands.config_schema import schema_text
from robot_identification.errors import ConfigError
from robot_identification.model import load_robot_config, parse_robot_config
from robot_identification.starter import starter_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "config" / "robot_config.schema.json"
SHIPPED = sorted((REPO / "config" / "robots").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def ur10e():
    cfg = yaml.safe_load((REPO / "config" / "robots" / "ur10e.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "ur10e.urdf")
    return cfg


def test_committed_schema_is_the_models_schema():
    assert SCHEMA.read_text() == schema_text(), (
        "config/robot_config.schema.json is out of date: run `robot-identification "
        "config-schema --output config/robot_config.schema.json --force`")


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_configs_pass_the_schema_and_the_loader(path, validator):
    data = yaml.safe_load(path.read_text())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, errors
    load_robot_config(path)


def test_starter_config_passes_the_schema(tmp_path, validator):
    out = tmp_path / "arm.yaml"
    text = starter_config(REPO / "urdf" / "ur10e.urdf", out)
    modeline = text.splitlines()[0].split("# yaml-language-server: $schema=")
    assert modeline[0] == "" and Path(modeline[1]).read_text() == SCHEMA.read_text(), text[:200]
    data = yaml.safe_load(text)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors, errors
    parse_robot_config(data, source=out)


def refused(cfg, folder):
    """(the config file written into ``folder``, the one-line error loading it)."""
    path = folder / "robot.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError) as info:
        load_robot_config(path)
    text = str(info.value)
    assert len(text.splitlines()) == 1, text
    return path, text


TYPOS = {   # a mutation of ur10e.yaml -> the key path and the suggestion of the error
    "top-level key": (lambda c: c.update(gravty=c.pop("gravity", [0, 0, -9.81])),
                      ": unknown key(s) ['gravty']", "(did you mean 'gravity'?)"),
    "section key": (lambda c: c["identification"].update(
        cutof_hz=c["identification"].pop("cutoff_hz")),
        ".identification: unknown key(s) ['cutof_hz']", "(did you mean 'cutoff_hz'?)"),
    "misspelt key holding null": (lambda c: c["identification"].update(cutof_hz=None),
                                  ".identification: unknown key(s) ['cutof_hz']",
                                  "(did you mean 'cutoff_hz'?)"),
    "joint drive key": (lambda c: c["joints"][1].setdefault("drive", {}).update(viscos=0.1),
                        ".joints[1].drive: unknown key(s) ['viscos']",
                        "(did you mean 'viscous'?)"),
    "choice": (lambda c: c["friction"].update(model="coulomb_visous"),
               ".friction.model: must be one of", "(did you mean 'coulomb_viscous'?)"),
    "estimator": (lambda c: c["identification"].update(estimator=["wls", "physcal"]),
                  ".identification.estimator: unknown estimator(s) ['physcal']",
                  "(did you mean 'physical'?)"),
}


@pytest.mark.parametrize("case", TYPOS)
def test_a_typo_is_one_line_with_its_key_path_and_a_suggestion(case, tmp_path, validator):
    mutate, where, hint = TYPOS[case]
    cfg = ur10e()
    mutate(cfg)
    path, text = refused(cfg, tmp_path)
    assert text.startswith(f"{path}{where}"), text
    assert hint in text, text
    assert not validator.is_valid(cfg), "the editor's schema accepts what the loader refuses"


def test_several_problems_are_counted_on_the_first_ones_line(tmp_path):
    cfg = ur10e()
    cfg["identification"]["filter_order"] = "5"
    cfg["simulation"] = {"rate_hz": -1}
    path, text = refused(cfg, tmp_path)
    assert f"{path}.identification.filter_order: expected an integer, got '5'" in text, text
    assert "(and 1 more problem: simulation.rate_hz)" in text, text


def test_cli_prints_and_writes_the_schema(tmp_path, capsys):
    assert cli.main(["config-schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(SCHEMA.read_text())
    out = tmp_path / "schema.json"
    assert cli.main(["config-schema", "--output", str(out)]) == 0
    assert out.read_text() == SCHEMA.read_text()
    capsys.readouterr()
    out.write_text("{}")
    rc, err = run_cli(["config-schema", "--output", out], capsys, tmp_path)
    assert_one_line(rc, err, "exists", "--force")
    assert cli.main(["config-schema", "--output", str(out), "--force"]) == 0
    assert out.read_text() == SCHEMA.read_text()


def test_shipped_configs_name_the_schema_for_editors():
    """Each shipped config's first line points the YAML language server at the schema."""
    line = "# yaml-language-server: $schema=../robot_config.schema.json"
    assert [p.name for p in SHIPPED if p.read_text().splitlines()[0] != line] == []


def test_schema_describes_units_and_choices():
    schema = json.loads(SCHEMA.read_text())
    ident = schema["$defs"]["IdentificationSection"]["properties"]
    assert "[Hz]" in ident["cutoff_hz"]["description"]
    assert schema["additionalProperties"] is False
    friction = schema["$defs"]["FrictionSection"]["properties"]["model"]
    assert set(friction["enum"]) == {"none", "viscous", "coulomb_viscous", "static"}
