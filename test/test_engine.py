"""The identification engine: chunk invariance of every pre-processing strategy, additivity
over recordings, and every estimator from the registry."""
from dataclasses import replace

import numpy as np
import pytest

from robot_identification.errors import ConfigError, DataError
from robot_identification.identification import (
    ESTIMATORS, PREPROCESSING, Recording, identify, recording_normal_equations, solve)
from robot_identification.model import load_robot
from robot_identification.simulation import simulate


@pytest.fixture(scope="module")
def planar():
    model = load_robot("zollo_planar")
    return model, simulate(model, seed=0, snr_db=80)


@pytest.fixture(scope="module")
def szabo():
    model = load_robot("szabo_3dof")
    return model, simulate(model, seed=1, duration=6.0, snr_db=60)


def _settings(model, **kw):
    return replace(model.config.identification, **kw)


@pytest.mark.parametrize("which", ["planar", "szabo"])
@pytest.mark.parametrize("strategy", PREPROCESSING)
def test_one_chunk_equals_1000_sample_chunks(request, which, strategy):
    """Same recording, one chunk vs 1000-sample chunks: same equations and estimates."""
    model, ds = request.getfixturevalue(which)
    for decimate in (1, 3):
        s = _settings(model, preprocessing=strategy, decimate=decimate)
        whole = recording_normal_equations(model, Recording.from_dataset(ds, model), s)
        parts = recording_normal_equations(model, Recording.from_dataset(ds, model, chunk=1000),
                                           s)
        assert parts.n_samples == whole.n_samples and parts.n_input == ds.t.shape[0]
        scale = np.abs(whole.G).max()
        assert np.abs(parts.G - whole.G).max() <= 1e-12 * scale
        assert np.abs(parts.b - whole.b).max() <= 1e-12 * np.abs(whole.b).max()
        r1 = solve(model, whole, s, estimators=("ols", "wls"))
        r2 = solve(model, parts, s, estimators=("ols", "wls"))
        for name in ("ols", "wls"):
            a, b = r1.estimates[name].values, r2.estimates[name].values
            tol = 1e-9 * np.maximum(np.abs(a), r1.estimates[name].std)
            assert np.all(np.abs(a - b) <= tol), (strategy, decimate, name)


def test_butterworth_matches_the_one_shot_filter(planar):
    """The streamed zero-phase chain equals lowpass_filtfilt + central differences of the
    whole recording (scipy's sosfiltfilt, an independent reference)."""
    from robot_identification.identification import make_preprocessor
    from robot_identification.signal import central_difference, lowpass_filtfilt
    model, ds = planar
    s = _settings(model, preprocessing="butterworth")
    fs = 1.0 / np.median(np.diff(ds.t))
    pre = make_preprocessor(model, s, fs, use_measured_derivatives=False)
    outs = [pre.push(c) for c in Recording.from_dataset(ds, model, chunk=777).chunks()]
    outs.append(pre.finish())
    q = np.concatenate([o[0]["ddq"] for o in outs if o is not None])
    ref = central_difference(central_difference(
        lowpass_filtfilt(ds.q, fs, s.cutoff_hz, s.filter_order), 1 / fs), 1 / fs)
    assert q.shape == ref.shape
    assert np.abs(q - ref).max() <= 1e-9 * np.abs(ref).max()


def test_recordings_add_up(planar):
    """identify([A, B]) = solve(equations(A) + equations(B))."""
    model, ds = planar
    half = ds.t.shape[0] // 2
    a, b = ds.slice(slice(0, half)), ds.slice(slice(half, None))
    s = model.config.identification
    both = identify(model, [a, b], s, estimators=("wls",))
    neq = recording_normal_equations(model, a, s)
    neq += recording_normal_equations(model, b, s)
    assert neq.n_samples == both.n_samples
    np.testing.assert_allclose(solve(model, neq, s, estimators=("wls",)).estimate.values,
                               both.estimate.values, rtol=1e-12)


def test_normal_equations_only_sum(planar):
    """NormalEquations carry only sums; the engine's account of the recordings behind them
    (samples, summaries, truth, pre-processing) is RecordingEquations, and solve() takes
    plain sums too (the same estimates, no account: no truth)."""
    from robot_identification.estimation import NormalEquations
    from robot_identification.identification import RecordingEquations
    model, ds = planar
    s = model.config.identification
    neq = recording_normal_equations(model, ds, s)
    assert isinstance(neq, RecordingEquations) and neq.recordings and neq.true_parameters
    plain = NormalEquations(neq.p, neq.groups)
    plain += neq
    assert not hasattr(plain, "n_samples") and not hasattr(plain, "recordings")
    np.testing.assert_array_equal(plain.G, neq.G)
    a = solve(model, neq, s, estimators=("ols",))
    b = solve(model, plain, s, estimators=("ols",))
    np.testing.assert_array_equal(a.estimate.values, b.estimate.values)
    assert a.true_values is not None and b.true_values is None


def test_every_estimator_lands_in_the_result(planar):
    model, ds = planar
    names = [e for e in ESTIMATORS if e != "iv"]     # iv: rigid arms (test_iv_estimator.py)
    r = identify(model, ds, estimators=names, prior="nominal")
    assert list(r.estimates) == names and r.estimate is r.estimates["ols"]
    truth = r.true_values
    for name, est in r.estimates.items():
        assert est.covariance.shape == (len(r.names),) * 2, name
        assert np.all(np.isfinite(est.values)), name
        # simulated with Zollo's Stribeck friction: the Coulomb columns are biased
        keep = [i for i, nm in enumerate(r.names) if not nm.endswith("coulomb")]
        err = np.abs(est.values[keep] - truth[keep]) / np.maximum(np.abs(truth[keep]), 1.0)
        assert err.max() < 0.2, (name, dict(zip(np.array(r.names)[keep], err)))
    assert r.estimates["mrls"].details["flags"] == [1] * len(r.names)
    assert any(d.code == "prior_is_truth" for d in r.diagnostics)


def test_irls_resists_outliers(szabo):
    """Torque spikes on 1 % of the samples: Huber IRLS stays near the truth, OLS does not."""
    model = szabo[0]
    ds = simulate(model, seed=1, duration=6.0, snr_db=60, derivatives=True)
    rng = np.random.default_rng(3)
    bad = ds.slice(slice(None))
    bad.tau = ds.tau.copy()
    idx = rng.choice(ds.t.shape[0], ds.t.shape[0] // 100, replace=False)
    bad.tau[idx] += rng.choice([-1, 1], size=(idx.size, model.n)) * 20.0
    s = _settings(model, cutoff_hz=None)      # unfiltered: spikes stay single samples
    r = identify(model, bad, s, estimators=("irls", "ols"), prior="none")
    err = {k: np.abs(e.values - r.true_values).max() for k, e in r.estimates.items()}
    assert err["irls"] < 0.2 * err["ols"], err
    assert r.estimate.details["converged"]


def test_engine_errors(planar, tmp_path):
    model, ds = planar
    with pytest.raises(ConfigError, match="unknown estimator"):
        identify(model, ds, estimators=("lasso",))
    with pytest.raises(ConfigError, match="bounded.*prior"):
        identify(model, ds, estimators=("bounded",), prior="none")
    gap = ds.slice(np.r_[0:3000, 3100:6000])
    with pytest.raises(DataError, match="uniform sampling"):
        recording_normal_equations(model, Recording.from_chunks(
            [gap.slice(slice(0, 2000)), gap.slice(slice(2000, None))]))
    with pytest.raises(ConfigError, match="prior file"):
        identify(model, ds, prior=str(tmp_path / "nope.yaml"))
    once = Recording.from_chunks(iter([ds]))
    with pytest.raises(DataError, match="already read"):
        identify(model, once, estimators=("irls",))


@pytest.mark.parametrize("section,match", [
    ({"simulation": {"excitation": {"type": "sine"}}}, r"excitation\.type: must be one of"),
    ({"simulation": {"excitation": {"segments": 1}}}, r"excitation\.segments: must be >= 2"),
    ({"simulation": {"excitation": {"type": "fourier", "segments": 4}}},
     r"excitation: unknown key\(s\) \['segments'\]"),
    ({"simulation": {"excitation": {"margin": 1.5}}}, r"excitation\.margin"),
    ({"csv": {"position": "two"}}, r"csv\.position: expected a 1-based column"),
    ({"csv": {"drive_gains": [1.0, 2.0, 3.0]}}, r"csv\.drive_gains: expected 2 numbers"),
    ({"identification": {"estimator": ["wls", "lasso"]}}, r"unknown estimator\(s\) \['lasso'\]"),
    ({"identification": {"preprocessing": "kalman"}}, r"preprocessing: must be one of"),
])
def test_every_config_section_is_checked_at_load(section, match):
    import yaml

    from robot_identification.model import parse_robot_config
    from robot_identification.model._robots import robot_files
    cfg = yaml.safe_load(robot_files("zollo_planar").read_text())
    cfg.pop("urdf", None)
    for key, value in section.items():
        cfg[key] = {**(cfg.get(key) or {}), **value}
    with pytest.raises(ConfigError, match=match):
        parse_robot_config(cfg)


def test_estimator_list_in_the_robot_yaml():
    import yaml

    from robot_identification.model import parse_robot_config
    from robot_identification.model._robots import robot_files
    cfg = yaml.safe_load(robot_files("zollo_planar").read_text())
    cfg["identification"] = {**cfg.get("identification", {}),
                             "estimator": ["wls", "irls", "wls"], "prior": "none"}
    s = parse_robot_config(cfg).identification
    assert s.estimator == "wls" and s.estimators == ("wls", "irls") and s.prior == "none"


def test_butterworth_memory_is_bounded_by_chunk_and_margin(planar):
    """The zero-phase strategy holds at most chunk + 2 x margin samples, whatever the length."""
    from robot_identification.identification import make_preprocessor
    model, ds = planar
    s = _settings(model, preprocessing="butterworth", cutoff_hz=20.0)
    pre = make_preprocessor(model, s, 1000.0)
    held = 0
    for c in Recording.from_dataset(ds, model, chunk=500).chunks():
        pre.push(c)
        held = max(held, pre.buf["t"].shape[0])
    assert held <= 500 + 2 * pre.margin < ds.t.shape[0]


def test_each_recording_is_summarised_once(planar, monkeypatch):
    """identify() summarises every recording to resolve 'auto' settings; the map step reuses
    that summary for the diagnostics instead of computing it again (it cost 9 % of the
    20-minute elastic benchmark's CPU time, benchmarks/elastic_20min.py)."""
    import robot_identification.identification._auto as dg     # where the engine calls it
    model, data = planar
    calls = []
    real = dg.recording_summary
    monkeypatch.setattr(dg, "recording_summary",
                        lambda *a, **k: calls.append(k.get("label")) or real(*a, **k))
    s = replace(model.config.identification, cutoff_hz="auto")
    identify(model, [data, data], s)
    assert len(calls) == 2                  # one per recording (was two per recording)
