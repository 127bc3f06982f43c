"""True parameters of simulated data that do not match the model one to one.

Old drive keys (datasets written before the drive parameters were named by field terms) are
renamed on reading; a missing true value is unknown (NaN), never 0; keys the model does not
know are reported (diagnostic ``truth_incomplete``), never silently dropped.
"""
import json

import numpy as np
import pytest
import yaml

from robot_identification.data import Dataset
from robot_identification.identification import identify
from robot_identification.model import (
    RENAMED_DRIVE_PARAMETERS, current_parameter_name, current_parameter_names, load_robot)

pytestmark = pytest.mark.slow

OLD = {new: old for old, new in RENAMED_DRIVE_PARAMETERS.items()}


def codes(diags):
    return [d.code for d in diags]


def with_truth(ds, truth):
    """The dataset's samples with another true-parameter mapping."""
    return Dataset(t=ds.t, q=ds.q, tau=ds.tau, dq=ds.dq, ddq=ds.ddq,
                   joint_names=ds.joint_names, true_parameters=truth, metadata=ds.metadata)


def save_npz_as_written(ds, truth, path):
    """``ds`` as an .npz whose metadata holds ``truth`` verbatim (as an earlier version
    wrote it: Dataset itself would rename the keys before writing)."""
    ds.save_npz(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["true_parameters"] = truth
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **arrays)
    return path


@pytest.fixture(scope="module")
def szabo():
    from robot_identification.simulation import simulate
    model = load_robot("szabo_3dof")           # static friction: viscous/stiction/stribeck
    ds = simulate(model, duration=4.0, seed=0)
    return model, ds


def old_names(truth):
    out = {}
    for name, value in truth.items():
        head, key = name.rsplit(".", 1)
        out[f"{head}.{OLD.get(key, key)}"] = value
    return out


def test_old_drive_keys_are_renamed():
    assert current_parameter_name("joint1.fv") == "joint1.viscous"
    assert current_parameter_name("joint2.K") == "joint2.stiffness"
    assert current_parameter_name("joint2.fsc") == "joint2.stribeck"
    assert current_parameter_name("link1.m") == "link1.m"
    assert current_parameter_name("joint1.viscous") == "joint1.viscous"
    # both names: the new one wins; a different old value stays visible under its name
    assert current_parameter_names({"j.fv": 1.0, "j.viscous": 1.0}) == {"j.viscous": 1.0}
    assert current_parameter_names({"j.fv": 2.0, "j.viscous": 1.0}) == {"j.viscous": 1.0,
                                                                       "j.fv": 2.0}


def test_npz_with_old_names_gives_the_same_truth_and_error(szabo, tmp_path):
    model, ds = szabo
    old = old_names(ds.true_parameters)
    assert "joint1.fs" in old and "joint1.stiction" not in old
    path = save_npz_as_written(ds, old, tmp_path / "old.npz")
    with np.load(path) as z:
        assert "joint1.fs" in json.loads(str(z["meta"]))["true_parameters"]
    loaded = Dataset.load_npz(path)
    assert loaded.true_parameters == ds.true_parameters
    new = identify(model, ds, estimators=("ols",))
    res = identify(model, path, estimators=("ols",))
    np.testing.assert_array_equal(res.true_values, new.true_values)
    assert res.normalised_mean_error() == new.normalised_mean_error() < 0.05
    assert not {"far_from_truth", "truth_incomplete"} & set(codes(res.diagnostics))


def test_missing_true_value_is_unknown_not_zero(szabo):
    model, ds = szabo
    truth = dict(ds.true_parameters)
    gone = ("joint1.stiction", "link2.Izz")
    for name in gone:
        del truth[name]
    full = identify(model, ds, estimators=("ols", "mrls"))
    res = identify(model, with_truth(ds, truth), estimators=("ols", "mrls"))
    # a base parameter is unknown exactly when its expression involves a missing parameter
    cols = [model.parameter_names.index(n) for n in gone]
    unknown = (res.base.grouping[:, cols] != 0).any(axis=1)
    assert 0 < unknown.sum() < len(res.names)
    assert np.isnan(res.true_values[unknown]).all()
    np.testing.assert_array_equal(res.true_values[~unknown], full.true_values[~unknown])
    keep = ~unknown
    err = np.abs(res.estimate.values[keep] - full.true_values[keep])
    nz = np.abs(full.true_values[keep]) > 1e-12
    err[nz] /= np.abs(full.true_values[keep][nz])
    assert res.normalised_mean_error() == pytest.approx(err.mean(), rel=1e-12)
    found = [d for d in res.diagnostics if d.code == "truth_incomplete"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert all(n in found[0].message for n in gone)
    assert "far_from_truth" not in codes(res.diagnostics)      # was: "true 0, estimate 2"
    assert "prior_is_truth" in codes(res.diagnostics)           # compared on what is known


def test_unmatched_true_parameters_are_reported(szabo):
    model, ds = szabo
    truth = dict(ds.true_parameters, **{"joint1.coulomb": 0.4})   # not in a static model
    res = identify(model, with_truth(ds, truth), estimators=("ols",))
    found = [d for d in res.diagnostics if d.code == "truth_incomplete"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert "joint1.coulomb" in found[0].message
    assert not np.isnan(res.true_values).any()
    zero = dict(ds.true_parameters, **{"joint1.rotor_inertia": 0.0})
    res = identify(model, with_truth(ds, zero), estimators=("ols",))
    found = [d for d in res.diagnostics if d.code == "truth_incomplete"]
    assert [d.severity for d in found] == ["info"] and "joint1.rotor_inertia" in found[0].message


def test_truth_of_another_model_gives_no_comparison(szabo):
    model, ds = szabo
    truth = {f"other.{k}": v for k, v in ds.true_parameters.items()}
    res = identify(model, with_truth(ds, truth), estimators=("ols",))
    assert res.true_values is None and res.normalised_mean_error() is None
    assert [d.severity for d in res.diagnostics if d.code == "truth_incomplete"] == \
        ["warning", "warning"]


def test_cli_table_results_and_report_show_unknown_truth(szabo, tmp_path, capsys):
    from robot_identification.cli import main
    model, ds = szabo
    truth = old_names(ds.true_parameters)
    del truth["joint2.fs"]
    data = save_npz_as_written(ds, truth, tmp_path / "partial.npz")
    out = tmp_path / "results.yaml"
    assert main(["identify", "--robot", "szabo_3dof", "--data", str(data), "--estimator", "ols",
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if " joint2.stiction " in line)
    assert row.split()[-2:] == ["-", "-"]
    assert "over the 23 of 24 base parameters" in printed
    assert "truth_incomplete" in printed and "far_from_truth" not in printed
    doc = yaml.safe_load(out.read_text())
    entries = {e["name"]: e for e in doc["base_parameters"]}
    assert "true" not in entries["joint2.stiction"] and "true" in entries["joint1.stiction"]
    assert doc["metrics"]["true_values_known"] == 23
    assert np.isfinite(doc["metrics"]["normalised_mean_error"])
    assert main(["report", "--robot", "szabo_3dof", "--results", str(out), "--output",
                 str(tmp_path / "report"), "--quiet"]) == 0
    page = (tmp_path / "report" / "report.html").read_text()
    assert "truth_incomplete" in page and ">nan<" not in page.lower()
