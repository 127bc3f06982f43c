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


def _simulated(robot):
    """A simulated run of ``robot`` (seed 1, 40 dB) streamed in 1000-sample chunks, its
    resolved settings (a 20 Hz cut-off where none), their automatic stop velocity (n,) and
    two larger candidates (3x, 10x)."""
    from dataclasses import replace

    from robot_identification.identification import Recording
    from robot_identification.identification._auto import recording_summaries, resolve_settings
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot(robot)
    rec = Recording.from_dataset(simulate(model, seed=1, snr_db=40), model, chunk=1000)
    s = resolve_settings(model, model.config.identification, recording_summaries(model, [rec]))
    s = s if s.cutoff_hz else replace(s, cutoff_hz=20.0)
    auto = np.broadcast_to(np.asarray(s.stop_velocity, dtype=float), (model.n,))
    return model, rec, s, auto, [tuple(3.0 * auto), tuple(10.0 * auto)]


@pytest.mark.parametrize("robot", ["puma560", "zollo_planar"])
def test_one_pass_gives_a_raised_stop_velocitys_equations(robot):
    """The chosen per-joint stop velocities' equations from the identification's one pass
    (the automatic one's less the rows each candidate drops) against an explicit pass with
    those stop velocities, streamed in 1000-sample chunks: the same sums (to rounding), row
    counts, time blocks (cross-validation folds), reversal counts and pre-processing record;
    also for a further entry on other columns and samples (the elastic arm's gear check:
    GearColumns on every 3rd sample)."""
    from dataclasses import replace

    from robot_identification.identification import (
        recording_normal_equations, sensor_base, sensor_set)
    from robot_identification.identification._sensors import GearColumns
    model, rec, s, auto, stops = _simulated(robot)
    choice = np.arange(model.n) % 3 if model.n > 2 else np.array([2, 1])
    chosen = tuple(float(([auto] + [np.asarray(v) for v in stops])[c][j])
                   for j, c in enumerate(choice))
    base = sensor_base(model, sensor_set(model, next(iter(rec.chunks()))))
    cols = (len(base) + model.n, GearColumns(model)) if model.config.elastic else None
    gear = replace(s, decimate=3 * int(s.decimate))
    one = recording_normal_equations(model, rec, s, base=base, stops=stops,
                                     also=[(cols, gear, stops)])
    ref = recording_normal_equations(model, rec, replace(s, stop_velocity=chosen), base=base,
                                     also=[(cols, replace(gear, stop_velocity=chosen))])
    assert np.any(one[0].count != ref[0].count)          # the choice drops rows
    for got, want in zip([eq.with_stop_choice(choice, chosen) for eq in one], ref):
        scale = np.abs(want.G).max()
        assert np.abs(got.G - want.G).max() <= 1e-12 * scale
        assert np.abs(got.b - want.b).max() <= 1e-12 * np.abs(want.b).max()
        assert np.abs(got.c - want.c).max() <= 1e-12 * np.abs(want.c).max()
        assert np.array_equal(got.count, want.count)
        assert np.array_equal(got.reversal_counts, want.reversal_counts)
        assert got.n_samples == want.n_samples and got.preprocessing == want.preprocessing
        mine, theirs = got.time_blocks(), want.time_blocks()
        assert len(mine) == len(theirs) > 2
        for a, b in zip(mine, theirs):
            assert np.abs(a[0] - b[0]).max() <= 1e-12 * scale
            assert np.array_equal(a[3], b[3])
    # no choice: the automatic stop velocity's own equations, bit for bit
    plain = recording_normal_equations(model, rec, s, base=base)
    assert np.array_equal(one[0].with_stop_choice(np.zeros(model.n, dtype=int)).G, plain.G)


@pytest.mark.parametrize("robot", ["puma560", "zollo_planar"])
def test_an_entry_on_every_kth_sample_borrows_the_pass_rows(robot, monkeypatch):
    """An ``also`` entry on the base columns with the pass's friction deadband (the
    stop-velocity selection's: every 4th sample, the candidates' stops) takes its regressor
    rows from the pass's blocks (issue #29): the regressor is evaluated on the pass's
    samples only, and the entry's sums, counts, time blocks and stop differences are those
    of a pass of its own, to the bit."""
    from dataclasses import replace

    import robot_identification.identification._engine as engine
    from robot_identification.identification import recording_normal_equations
    model, rec, s, _, stops = _simulated(robot)
    sub = replace(s, decimate=4 * int(s.decimate))
    evaluated = []
    real = engine.regressor

    def counting(model_, q, *args, **kw):
        evaluated.append(q.shape[0])
        return real(model_, q, *args, **kw)
    monkeypatch.setattr(engine, "regressor", counting)
    main, got = recording_normal_equations(model, rec, s, stops=stops,
                                           also=[(None, sub, stops)], block=256)
    assert sum(evaluated) == main.n_samples
    want = recording_normal_equations(model, rec, sub, stops=stops, block=256)
    assert got.n_samples == want.n_samples > 0
    for a, b in [(got, want)] + list(zip(got.stop_differences, want.stop_differences)):
        for key in ("G", "b", "c", "count", "reversal_counts"):
            assert np.array_equal(getattr(a, key), getattr(b, key)), key
        for x, y in zip(a.time_blocks(), b.time_blocks()):
            assert all(np.array_equal(u, v) for u, v in zip(x, y))
        assert len(a.time_blocks()) == len(b.time_blocks())


def test_summed_equations_own_copies_of_the_stop_differences():
    """``a += b`` where a has no stop differences copies b's: adding more to a later leaves
    b's as they were."""
    from robot_identification.identification._equations import StopDifference
    a, b, c = (RecordingEquations(2, 1) for _ in range(3))
    for k, eq in enumerate((b, c)):
        d = StopDifference(2, 1)
        d.add(np.ones((3, 1, 2)), np.full((3, 1), k + 1.0), mask=np.ones((3, 1), bool))
        eq.stop_differences = [d]
    a += b
    a += c
    assert a.stop_differences[0] is not b.stop_differences[0]
    assert b.stop_differences[0].b[0].tolist() == [3.0, 3.0]
    assert a.stop_differences[0].b[0].tolist() == [9.0, 9.0]


@pytest.mark.slow
def test_a_raised_stop_velocity_equals_the_fit_with_it_given():
    """identify with stop_velocity: auto on an elastic arm simulated on MuJoCo, where the
    selection raises the stop velocity (one pass), against identify with the chosen stop
    velocities given as numbers (a pass of their own, as the second pass before gave them):
    the same estimates and gear check to rounding. Rounding here: the same fit with the
    numbers given, whole against 1000-sample chunks, differs by 1.5e-8 x max(|estimate|,
    std) on this arm (its equations' condition)."""
    from dataclasses import replace

    from robot_identification.identification import identify
    from robot_identification.model import load_robot_config, RobotModel
    from robot_identification.simulation import simulate
    model = RobotModel(load_robot_config("test/elastic_arm4.yaml"))
    data = simulate(model, seed=1, engine="mujoco")
    r = identify(model, data)
    assert r.settings["stop_velocity_selection"]["chosen"] >= 1
    given = replace(model.config.identification,
                    stop_velocity=tuple(r.settings["fit_stop_velocity"]))
    ref = identify(model, data, given)
    assert r.n_samples == ref.n_samples
    a, b, std = r.estimates["wls"].values, ref.estimates["wls"].values, ref.estimates["wls"].std
    assert np.all(np.abs(a - b) <= 1e-7 * np.maximum(np.abs(b), std))
    for x, y in zip(r.settings["gear_ratio_check"], ref.settings["gear_ratio_check"]):
        assert x["joint"] == y["joint"] and abs(x["fitted"] - y["fitted"]) <= 1e-7 * y["std"]


@pytest.mark.slow
def test_a_stream_read_once_gets_the_same_choice():
    """A recording given as an iterator of chunks (read once): the raised stop velocity's
    equations come from the one pass, so the stream gets the choice a dataset gets."""
    from robot_identification.identification import identify
    from robot_identification.identification._sources import Recording
    from robot_identification.model import load_robot_config, RobotModel
    from robot_identification.simulation import simulate
    model = RobotModel(load_robot_config("test/elastic_arm4.yaml"))
    data = simulate(model, seed=1, engine="mujoco")
    whole = identify(model, data)
    assert whole.settings["stop_velocity_selection"]["chosen"] >= 1
    n = data.t.shape[0]
    chunks = iter([data.slice(slice(i, i + 4000)) for i in range(0, n, 4000)])
    r = identify(model, Recording.from_chunks(chunks))
    record = r.settings["stop_velocity_selection"]
    assert record["per_joint"] == whole.settings["stop_velocity_selection"]["per_joint"]
    assert r.settings["fit_stop_velocity"] == whole.settings["fit_stop_velocity"]
    assert any(d.code == "stop_velocity_raised" for d in r.diagnostics)
