"""stop_velocity: auto is chosen on the data (identification/_stop_selection.py,
docs/diagnostics.md "How slow is at rest").

The end-to-end test judges the estimate against MuJoCo's own model (the truth of a run on an
independent physics engine whose Coulomb friction is a soft constraint under which a loaded
joint creeps); the unit tests use crafted equations whose truth is known by construction.
"""
import numpy as np
import pytest
import yaml

from robot_identification.cli import main
from robot_identification.identification._equations import RecordingEquations
from robot_identification.identification._stop_selection import select_stop_velocity


class _Settings:
    def __init__(self, stop):
        self.stop_velocity = stop


def _equations(stops, creep_band, seed=0, n=20000):
    """One joint, y = a x + f_c coulomb(v) + noise; below ``creep_band`` the friction is
    half of f_c (a joint creeping under a soft constraint), which the model's sign(v) column
    does not know. Returns one RecordingEquations per stop velocity (rows |v| >= stop)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) * 1e-3
    v = np.sin(2 * np.pi * 0.3 * t) + 0.3 * np.sin(2 * np.pi * 1.1 * t)
    x = rng.standard_normal(n)
    friction = np.sign(v) * np.where(np.abs(v) < creep_band, 0.5, 1.0)
    y = 2.0 * x + 1.0 * friction + 0.01 * rng.standard_normal(n)
    W = np.stack([x, np.sign(v)], axis=1)[:, None, :]
    out = []
    for stop in stops:
        eq = RecordingEquations(2, 1)
        for k in range(0, n, 500):          # fed in chunks, as the engine does
            sl = slice(k, k + 500)
            eq.add(W[sl], y[sl, None], mask=(np.abs(v[sl]) >= stop)[:, None])
        out.append(eq)
    return out


def test_friction_that_is_not_coulomb_near_rest_raises_the_stop_velocity():
    stops = [0.01, 0.03, 0.1]
    k, record = select_stop_velocity(_equations(stops, creep_band=0.08), [
        _Settings(s) for s in stops])
    assert k == 2 and record["chosen"] == 2
    assert record["scores"][0] > 1.5 and record["folds"] == 4


def test_coulomb_friction_down_to_rest_keeps_the_automatic_stop_velocity():
    stops = [0.01, 0.03, 0.1]
    k, record = select_stop_velocity(_equations(stops, creep_band=0.0), [
        _Settings(s) for s in stops])
    assert k == 0
    assert max(record["scores"]) < 1.05


def test_a_candidate_that_loses_a_parameter_is_not_considered():
    # a parameter whose column is excited only below 0.2 rad/s (e.g. a Coulomb level seen
    # only at low speed): a stop velocity above that leaves it unidentified
    stops = [0.01, 0.03, 0.3]
    rng = np.random.default_rng(1)
    n = 20000
    v = np.sin(2 * np.pi * 0.3 * np.arange(n) * 1e-3)
    x, z = rng.standard_normal(n), np.where(np.abs(v) < 0.2, rng.standard_normal(n), 0.0)
    W = np.stack([x, z], axis=1)[:, None, :]
    y = (x + 3.0 * z + 0.01 * rng.standard_normal(n))[:, None]
    eqs = []
    for stop in stops:
        eq = RecordingEquations(2, 1)
        for k in range(0, n, 500):
            sl = slice(k, k + 500)
            eq.add(W[sl], y[sl], mask=(np.abs(v[sl]) >= stop)[:, None])
        eqs.append(eq)
    k, record = select_stop_velocity(eqs, [_Settings(s) for s in stops])
    assert len(record["scores"]) == 2 and k in (0, 1)


@pytest.mark.slow
def test_mujoco_creep_does_not_bias_the_estimate(tmp_path):
    """test/panda (7 joints) from `init`, 10 s on MuJoCo without noise: the default
    identification's torque-weighted parameter error against MuJoCo's model. With the stop
    velocity at 2 % of the velocity RMS (main 3755028) it was 0.0033, the rows where MuJoCo's
    frictionloss lets the joints creep biasing every parameter; with the selection 0.00028."""
    cfg, data, out = tmp_path / "panda.yaml", tmp_path / "run.npz", tmp_path / "r.yaml"
    assert main(["init", "--urdf", "test/panda/panda.urdf", "--output", str(cfg)]) == 0
    assert main(["simulate", "--config", str(cfg), "--engine", "mujoco", "--seed", "0",
                 "--output", str(data), "--quiet"]) == 0
    assert main(["identify", "--config", str(cfg), "--data", str(data), "--output", str(out),
                 "--quiet"]) == 0
    res = yaml.safe_load(out.read_text())
    selection = res["settings"]["stop_velocity_selection"]
    assert selection["chosen"] >= 1
    assert res["settings"]["fit_stop_velocity"] != res["settings"]["stop_velocity"]
    assert res["metrics"]["torque_weighted_error"] < 1e-3
    note = [d for d in res["diagnostics"] if d["code"] == "stop_velocity_raised"]
    assert len(note) == 1 and "panda_joint1: " in note[0]["message"]


@pytest.mark.slow
def test_the_gear_check_uses_the_rows_of_the_fit(monkeypatch):
    """An elastic arm on MuJoCo (test/elastic_arm4, frictionloss on the rotor hinges): where
    the stop velocity is raised, the gear-ratio check is accumulated on the fit's rows too.
    Before, it kept the automatic stop velocity's rows (the creep the fit leaves out): on a
    held-out Kinova Jaco 2 from `init --model elastic` it then fitted joint 6's gear ratio as
    1.62 for the simulated 100 (gear_ratio_mismatch on correct data)."""
    import robot_identification.identification._engine as engine
    from robot_identification.identification import identify
    from robot_identification.model import load_robot_config, RobotModel
    from robot_identification.simulation import simulate
    model = RobotModel(load_robot_config("test/elastic_arm4.yaml"))
    data = simulate(model, seed=1, engine="mujoco")
    seen = {}
    check = engine.gear_ratio_check

    def spy(model_, base, eq):
        seen["stop"] = eq.preprocessing["stop_velocity"]
        return check(model_, base, eq)
    monkeypatch.setattr(engine, "gear_ratio_check", spy)
    r = identify(model, data)
    assert r.settings["stop_velocity_selection"]["chosen"] >= 1
    assert seen["stop"] == r.settings["fit_stop_velocity"]
    assert seen["stop"] != r.settings["stop_velocity"]


@pytest.mark.slow
def test_a_stream_read_once_keeps_the_automatic_stop_velocity_and_says_so():
    """A recording given as an iterator of chunks cannot be read a second time for the
    raised stop velocity's equations: the automatic one stays, with an info note."""
    from robot_identification.identification import identify
    from robot_identification.identification._sources import Recording
    from robot_identification.model import load_robot_config, RobotModel
    from robot_identification.simulation import simulate
    model = RobotModel(load_robot_config("test/elastic_arm4.yaml"))
    data = simulate(model, seed=1, engine="mujoco")
    assert identify(model, data).settings["stop_velocity_selection"]["chosen"] >= 1
    n = data.t.shape[0]
    chunks = iter([data.slice(slice(i, i + 4000)) for i in range(0, n, 4000)])
    r = identify(model, Recording.from_chunks(chunks))
    record = r.settings["stop_velocity_selection"]
    assert record["chosen"] == 0 and record["applied"] is False
    assert "fit_stop_velocity" not in r.settings
    assert any(d.code == "stop_velocity_raised" and "read once" in d.message
               for d in r.diagnostics)
