"""``estimator: auto`` (issue #27 item 1, the default primary): wls or physical, whichever
predicts held-out identification data better (robot_identification.identification.
resolve_estimator, docs/estimators.md). Each choice is checked against the simulator: a
held-out motion of another seed, predicted by ``validate`` with both estimates."""
import warnings
from dataclasses import replace

import numpy as np
import pytest

from robot_identification.errors import ConfigError
from robot_identification.excitation import trajectory_from_config
from robot_identification.identification import (
    ESTIMATOR_TIE, identify, settings_from_results, solve)
from robot_identification.model import load_robot
from robot_identification.report import result_to_dict
from robot_identification.simulation import simulate
from robot_identification.validation import validate


def _noisy(ds, seed, snr_db=40):
    """``ds`` with torque noise of std 10^(-snr/20) x each joint's torque RMS (a current
    sensor; positions keep the simulator's encoder quantisation)."""
    sigma = np.sqrt(np.mean(ds.tau ** 2, axis=0)) * 10 ** (-snr_db / 20)
    rng = np.random.default_rng(seed + 1000)
    return replace(ds, tau=ds.tau + sigma * rng.standard_normal(ds.tau.shape))


def _simulate(model, seed, duration=None):
    with warnings.catch_warnings():     # a run stopped mid-motion: the point of the short one
        warnings.simplefilter("ignore")
        return _noisy(simulate(model, duration=duration, seed=seed), seed)


def _heldout(model, res, seed=11):
    """Mean NRMSE of the wls and physical estimates of ``res`` on a 10 s motion of another
    excitation seed, as ``validate`` predicts it (the identification's settings)."""
    spec = dict(model.config.simulation.excitation, seed=seed)
    val = _noisy(simulate(model, trajectory=trajectory_from_config(model, spec), seed=seed),
                 seed)
    s = settings_from_results(model, {"settings": res.settings})
    out = validate(model, res.base, {k: res.estimates[k].values for k in ("wls", "physical")},
                   [val], s)[0]
    return {k: out["models"][k]["nrmse_mean"] for k in ("wls", "physical")}


@pytest.fixture(scope="module")
def puma():
    model = load_robot("puma560")     # its config says ols: auto asked for explicitly
    return model, replace(model.config.identification, estimator="auto")


@pytest.fixture(scope="module")
def short(puma):
    """The first 2.5 s of the puma560's excitation, 40 dB torque noise."""
    return _simulate(puma[0], 3, duration=2.5)


def test_auto_chooses_physical_on_a_short_noisy_run(puma, short):
    """2.5 s of the puma560's excitation at 40 dB: WLS fitted on one half cannot know the
    joint that stands still there, the physical estimate keeps the URDF's values; auto
    chooses physical, and on a held-out motion physical predicts better than WLS (a helper
    measured 7-10 x on such runs)."""
    model, s = puma
    res = identify(model, short, s)
    sel = res.settings["estimator_selection"]
    assert res.settings["estimator"] == sel["chosen"] == "physical", sel
    assert sel["physical"] < sel["wls"] and sel["folds"] == 2
    assert res.settings["estimator_requested"] == "auto"
    assert list(res.estimates) == ["physical", "wls"]          # the other one: an extra
    np.testing.assert_array_equal(res.estimate.values, res.estimates["physical"].values)
    assert res.settings["prior_weight"] == sel["prior_weight"]
    notes = [d for d in res.diagnostics if d.code == "estimator_auto"]
    assert len(notes) == 1 and notes[0].severity == "info"
    assert "estimator auto: physical" in notes[0].message
    held = _heldout(model, res)
    assert held["physical"] < held["wls"], held
    # the same estimate as estimator: physical (the same prior-weight cross-validation)
    phys = identify(model, short, replace(s, estimator="physical"))
    np.testing.assert_allclose(phys.estimate.values, res.estimate.values, rtol=1e-9,
                               atol=1e-12)


def test_auto_keeps_wls_where_it_predicts_better(puma):
    """A crafted case where the physically consistent estimate must lose: a prior whose
    bodies are all 1.6 x too heavy, held with a fixed weight of 1e6, on the whole 10 s
    excitation. Auto scores physical at that weight, sees it predict the held-out half worse
    than WLS beyond the tie margin, keeps WLS and records WLS's held-out comparison with the
    URDF; on a held-out motion WLS predicts better too."""
    model, s = puma
    prior = np.asarray(model.nominal_parameters(), dtype=float).copy()
    inertial = np.array([k == "inertial" for k in model.layout.kinds])
    prior[inertial] *= 1.6
    res = identify(model, _simulate(model, 3), replace(s, prior_weight=1e6), prior=prior)
    sel = res.settings["estimator_selection"]
    assert res.settings["estimator"] == sel["chosen"] == "wls", sel
    assert sel["physical"] > ESTIMATOR_TIE * sel["wls"] and sel["prior_weight"] == 1e6
    assert list(res.estimates) == ["wls", "physical"]
    assert res.settings["heldout_check"]["heldout_nrmse"] == sel["wls"]
    assert result_to_dict(res, model)["model_trust"]["heldout_nrmse"] == pytest.approx(
        sel["wls"], rel=1e-3)
    held = _heldout(model, res)
    assert held["wls"] < held["physical"], held


def test_auto_falls_back_to_wls_and_says_why(puma, short):
    """Without a prior there is no physical estimate to compare: wls, with an info
    diagnostic naming the reason, never silently."""
    model, s = puma
    res = identify(model, short, s, prior="none")
    assert res.settings["estimator"] == "wls"
    assert res.settings["estimator_selection"] == {
        "chosen": "wls", "why": "no prior (prior: none) to regularise the physically "
                                "consistent estimate"}
    assert [d.severity for d in res.diagnostics if d.code == "estimator_auto"] == ["info"]
    # data that will be refused (degrees read as radians: an error diagnostic) are not
    # compared: on such data every SDP of the selection ran into the solver's iteration limit
    bad = identify(model, replace(short, q=np.degrees(short.q)), s)
    why = bad.settings["estimator_selection"]["why"]
    assert why.startswith("the data carry error diagnostic(s): beyond_joint_limits"), why
    assert bad.settings["estimator"] == "wls" and list(bad.estimates) == ["wls"]


def test_auto_only_first_and_only_in_identify(puma, short):
    model, s = puma
    ds = short
    with pytest.raises(ConfigError, match="give it first"):
        identify(model, ds, s, estimators=("wls", "auto"))
    res = identify(model, ds, replace(s, estimator="wls"))
    with pytest.raises(ConfigError, match="identify"):
        solve(model, res.normal_equations, s)


def test_config_default_is_auto_and_auto_must_come_first():
    from robot_identification.model import IdentificationSettings
    from robot_identification.model._config_file import IdentificationSection
    assert IdentificationSettings().estimator == "auto"
    assert load_robot("stanford_arm").config.identification.estimator == "auto"  # names none
    with pytest.raises(ValueError, match="only be the first"):
        IdentificationSection(estimator=["wls", "auto"])
    assert IdentificationSection(estimator=["auto", "ols"]).estimator == ["auto", "ols"]


@pytest.mark.slow      # end to end: identify, validate and report through the command line
def test_cli_estimator_auto_prints_records_and_validate_report_use_the_choice(puma, short,
                                                                             tmp_path, capsys):
    """``identify --estimator auto``: one line with the choice and the scores; results.yaml
    says ``estimator: physical`` with ``estimator_selection``; ``validate`` reports the chosen
    primary and the report names it with the selection note."""
    import yaml
    from robot_identification.cli import main
    model, _ = puma
    run, val = tmp_path / "run.npz", tmp_path / "val.npz"
    short.save_npz(run)
    spec = dict(model.config.simulation.excitation, seed=11)
    _noisy(simulate(model, trajectory=trajectory_from_config(model, spec), seed=11),
           11).save_npz(val)
    res, out = tmp_path / "results.yaml", tmp_path / "validation.yaml"
    assert main(["identify", "--robot", "puma560", "--estimator", "auto", "--data", str(run),
                 "--output", str(res), "--quiet"]) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if s.startswith("estimator auto")]
    assert len(line) == 1 and line[0].startswith("estimator auto: physical (held-out"), line
    doc = yaml.safe_load(res.read_text())
    sel = doc["settings"]["estimator_selection"]
    assert doc["settings"]["estimator"] == sel["chosen"] == "physical"
    assert sel["physical"] < sel["wls"] and set(doc["estimates"]) == {"physical", "wls"}
    assert main(["validate", "--robot", "puma560", "--results", str(res), "--data", str(val),
                 "--output", str(out), "--quiet"]) == 0
    assert yaml.safe_load(out.read_text())["primary"] == "physical"
    assert main(["report", "--robot", "puma560", "--results", str(res), "--data", str(val),
                 "--output", str(tmp_path / "report")]) == 0
    page = next((tmp_path / "report").glob("*.html")).read_text()
    assert "estimator auto: physical" in page and "PHYSICAL" in page


def test_streamed_recording_is_compared_on_the_halves_in_time(puma, tmp_path):
    """A recording read in chunks (not in memory): the two halves in time of the engine's own
    normal equations are the folds, no second pass."""
    from robot_identification.streaming import identify_streaming
    model, _ = puma
    path = tmp_path / "run.npz"
    _simulate(model, 3, duration=4.0).save_npz(path)
    res = identify_streaming(model, path, estimator="auto", velocity_threshold=0.05)
    sel = res.settings["estimator_selection"]
    assert sel["fold_kind"] == "halves in time" and sel["folds"] == 2
    assert res.settings["estimator"] == sel["chosen"] == "physical", sel
    assert sel["physical"] < sel["wls"]


@pytest.mark.slow
def test_an_impossible_sign_of_wls_does_not_stop_the_comparison():
    """A 2.5 s stanford_arm run (correct data, 60 dB): WLS's own estimate has rotor inertias
    significantly below 0 (joint3 ~20 std), which the physically consistent estimate cannot
    have. That is about the WLS estimate, not the data: the two are compared (before, auto
    took WLS 'not compared' and identify stopped on its sign). Whichever wins, the sign is
    said: an error on a WLS primary, a warning naming the wls estimate beside a physical one."""
    model = load_robot("stanford_arm")
    settings = replace(model.config.identification, estimator="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = simulate(model, duration=2.5, seed=0, snr_db=60)
    res = identify(model, [ds], settings)
    sel = res.settings["estimator_selection"]
    assert "why" not in sel and {"wls", "physical"} <= set(sel), sel
    signs = [d for d in res.diagnostics if d.code == "negative_rotor_inertia"
             and d.severity in ("error", "warning") and "std below 0" in d.message]
    assert signs, [d.code for d in res.diagnostics]
    if res.settings["estimator"] == "physical":
        assert any(d.severity == "warning" and "the wls estimate (not the primary)"
                   in d.message for d in signs), signs
        assert not [d for d in res.diagnostics if d.severity == "error"]
    else:
        assert any(d.severity == "error" for d in signs), signs
