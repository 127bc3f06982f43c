"""``identify-stream`` CLI command."""
import numpy as np
import yaml

from robot_identification.cli import main
from test_streaming_identification import ROOT, rigid, rigid_data  # noqa: F401


def _config(tmp_path):
    d = yaml.safe_load((ROOT / "config/robots/zollo_planar.yaml").read_text())
    d.update(model="rigid", name="planar_rigid", urdf=str(ROOT / "urdf/zollo_planar.urdf"))
    for j in d["joints"]:
        j["drive"] = {k: v for k, v in j["drive"].items()
                      if k in ("rotor_inertia", "viscous", "coulomb")}
    p = tmp_path / "planar_rigid.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


def test_identify_stream_writes_results(rigid, tmp_path, capsys):  # noqa: F811
    cfg = _config(tmp_path)
    rigid_data(rigid, T=6.0, noise=0.05).save_npz(tmp_path / "d.npz")
    for est in ("mrls", "bounded"):
        out = tmp_path / f"{est}.yaml"
        rc = main(["identify-stream", "--config", str(cfg), "--data", str(tmp_path / "d.npz"),
                   "--estimator", est, "--bounds", "nominal", "--decimate", "4", "--chunk",
                   "1500", "--velocity-threshold", "0.1", "--output", str(out)])
        assert rc == 0
        res = yaml.safe_load(out.read_text())
        assert res["estimator"] == est
        err = [abs(e["estimate"] - e["true"]) / max(abs(e["true"]), 0.1)
               for e in res["base_parameters"]]
        assert np.max(err) < 0.05
    assert "MRLS flags: all identified" in capsys.readouterr().out


def test_identify_stream_errors(tmp_path, capsys):
    cfg = _config(tmp_path)
    rc = main(["identify-stream", "--config", str(cfg), "--data", str(tmp_path / "none.npz")])
    assert rc != 0
    assert "does not exist" in capsys.readouterr().err
