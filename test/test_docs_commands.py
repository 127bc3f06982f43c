"""What README.md and docs/*.md tell a user to type exists and runs as written.

- every ``robot-identification COMMAND --option`` (also ``python -m robot_identification.cli``
  and the ``$RI`` shorthand of docs/ur10e.md) names a sub-command and options that the CLI
  has (checked against the argparse parser, no process started);
- the estimator list of README.md is the engine's registry;
- README's two Python API blocks run as written (on a short simulated run).
"""
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
#: a CLI call in a doc: the sub-command and the rest of its (continued) line
CALL = re.compile(r"(?:robot-identification|robot_identification\.cli|\$RI)\s+([a-z][\w-]*)"
                  r"([^`|#&;\n]*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def _docs():
    return [REPO / "README.md", REPO / "config" / "README.md",
            *sorted((REPO / "docs").glob("*.md"))]


def _calls():
    for path in _docs():
        text = path.read_text().replace("\\\n", " ")          # continued shell lines
        for m in CALL.finditer(text):
            line = text[:m.start()].count("\n") + 1
            yield f"{path.relative_to(REPO)}:{line}", m.group(1), m.group(2)


def test_every_documented_command_and_option_exists():
    from robot_identification.cli import build_parser
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices")
               and isinstance(a.choices, dict))
    calls, bad = list(_calls()), []
    for where, command, rest in calls:
        if command not in sub.choices:
            bad.append(f"{where}: no command '{command}'")
            continue
        options = {o for a in sub.choices[command]._actions for o in a.option_strings}
        bad += [f"{where}: '{command}' has no option {o}" for o in OPTION.findall(rest)
                if o not in options]
    assert len(calls) > 40, "the docs' command lines were not found"
    assert not bad, "\n".join(bad)


def test_readme_estimator_list_is_the_registry():
    from robot_identification.choices import ESTIMATORS
    m = re.search(r"#\s+estimators: ([a-z ]+)\(", (REPO / "README.md").read_text())
    assert m, "README's 'estimators:' line not found"
    assert tuple(m.group(1).split()) == ESTIMATORS


def _python_blocks(heading):
    text = (REPO / "README.md").read_text()
    section = text[text.index(heading):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_python_api_runs_as_written(tmp_path, monkeypatch):
    """README 'Python API': both blocks, with the simulation shortened to 3 s and the
    'long_run.npz' of the second block written from another short simulated run."""
    pytest.importorskip("pandas")
    import numpy as np

    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    first, second = _python_blocks("## Python API")
    assert "simulate(model, seed=0)" in first and "long_run.npz" in second
    first = first.replace("simulate(model, seed=0)", "simulate(model, seed=0, duration=3.0)")
    model = load_robot("zollo_planar")
    simulate(model, seed=1, duration=3.0, snr_db=80).save_npz(tmp_path / "long_run.npz")
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(first, "README.md (Python API)", "exec"), scope)
    assert (tmp_path / "results.yaml").is_file() and scope["figures"]
    exec(compile(second, "README.md (Python API, engine)", "exec"), scope)
    result = scope["result"]
    assert set(result.estimates) == {"wls", "irls", "physical"}
    assert np.all(np.isfinite(result.estimates["irls"].values))
