"""identify --select: cross-validation on the identification data (leave-one-recording-out or
time blocks) over cut-off, Coulomb deadband, reversal handling and friction model."""
import numpy as np
import pytest
import yaml
from conftest import make_model

from robot_identification.data import Dataset
from robot_identification.regressor import regressor
from robot_identification.validation import folds, format_selection, select

pytestmark = pytest.mark.slow


def _recording(model, seed, T=8.0):
    rng = np.random.default_rng(seed)
    t = np.arange(0, T, 1e-2)
    q, dq, ddq = (np.zeros((t.size, model.n)) for _ in range(3))
    for a, w in ((1.0, rng.uniform(0.4, 1.2, model.n)), (0.6, rng.uniform(1.5, 3.0, model.n))):
        ph = rng.uniform(0, 2 * np.pi, model.n)
        q += a * np.sin(np.outer(t, w) + ph)
        dq += a * w * np.cos(np.outer(t, w) + ph)
        ddq -= a * w ** 2 * np.sin(np.outer(t, w) + ph)
    tau = regressor(model, q, dq, ddq) @ model.nominal_parameters()
    tau += 0.02 * rng.standard_normal(tau.shape)
    return Dataset(t=t, q=q, dq=np.round(dq, 3), tau=tau, joint_names=model.joint_names)


@pytest.fixture(scope="module")
def arm():
    return make_model("rigid", prismatic=False)


def test_folds_leave_one_recording_out_or_time_blocks(arm):
    a, b = _recording(arm, 0), _recording(arm, 1)
    pairs = folds([a, b])
    assert [(len(tr), te[0] is a) for tr, te in pairs] == [(1, True), (1, False)]
    blocks = folds([a], blocks=3)
    assert len(blocks) == 3
    assert sum(te[0].n_samples for _, te in blocks) == a.n_samples
    assert all(tr[0].t[0] != te[0].t[0] for tr, te in blocks)


def test_select_scores_every_candidate_and_picks_the_lowest(arm):
    recs = [_recording(arm, 0), _recording(arm, 1)]
    settings, rows = select(arm, recs)
    scored = [r for r in rows if r["cv_nrmse"] is not None]
    assert len(rows) == 15 and len(scored) == len(rows)     # 3 cut-offs x 2 x 2 + 3 static
    chosen = [r for r in rows if r["selected"]]
    assert len(chosen) == 1 and chosen[0]["friction"] == "coulomb_viscous"
    own = [r["cv_nrmse"] for r in scored if r["friction"] == "coulomb_viscous"]
    assert chosen[0]["cv_nrmse"] == min(own)
    assert settings.cutoff_hz == chosen[0]["cutoff_hz"]
    assert {r["friction"] for r in scored} == {"coulomb_viscous", "static"}
    assert "*" in format_selection(rows)


def test_cli_select_writes_the_table(arm, tmp_path, capsys, monkeypatch):
    from robot_identification.cli import main
    from robot_identification.simulation import simulate
    from robot_identification.model import load_robot
    model = load_robot("szabo_3dof")
    run = tmp_path / "run.npz"
    simulate(model, duration=6.0, seed=0).save_npz(run)
    out = tmp_path / "results.yaml"
    assert main(["identify", "--robot", "szabo_3dof", "--select", "--data", str(run),
                 "--output", str(out), "--quiet", "--no-physical"]) == 0
    printed = capsys.readouterr().out
    assert "model selection by cross-validation (3 time blocks)" in printed
    doc = yaml.safe_load(out.read_text())
    table = doc["settings"]["selection"]
    assert len(table) == 3 and sum(r["selected"] for r in table) == 1   # static: cut-offs only
    assert [r["cutoff_hz"] for r in table][0] is None                   # the config's: none
    assert doc["settings"]["cutoff_hz"] == next(r for r in table if r["selected"])["cutoff_hz"]
