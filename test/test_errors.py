"""Bad input gets a clear error naming the problem (issue 2)."""
import numpy as np
import pytest

from conftest import spatial_arm_config, spatial_arm_urdf
from robot_identification.data import Dataset, load_dataset
from robot_identification.errors import ConfigError, DataError, ExcitationError, ModelError
from robot_identification.model import RobotModel, load_robot, parse_robot_config
from robot_identification.identification import identify


def _model(cfg=None, urdf=None):
    return RobotModel(parse_robot_config(cfg or spatial_arm_config()),
                      urdf_xml=urdf or spatial_arm_urdf())


def test_urdf_without_configured_joint():
    cfg = spatial_arm_config()
    cfg["joints"][1]["name"] = "elbow"
    with pytest.raises(ModelError, match=r"no joint\(s\) \['elbow'\].*movable joints"):
        _model(cfg)


def test_malformed_urdf():
    with pytest.raises(ModelError, match="cannot parse URDF"):
        _model(urdf="<robot name='x'><link name='a'></robot")


def test_config_unknown_key():
    cfg = spatial_arm_config()
    cfg["joints"][0]["gearratio"] = 3
    with pytest.raises(ConfigError, match=r"joints\[0\]: unknown key\(s\) \['gearratio'\]"):
        parse_robot_config(cfg)


@pytest.mark.parametrize("path,value,match", [
    (("gravity",), "down", "gravity: expected a list of numbers"),
    (("joints", 0, "gear_ratio"), "ten", "gear_ratio: expected a number"),
    (("joints", 0, "gear_ratio"), -2.0, "gear_ratio: must be > 0"),
    (("model",), "flexible", "model: must be one of"),
    (("friction", "model"), "lugre", "friction.model: must be one of"),
    (("joints", 0, "limits", "position"), [1.0, -1.0], "lower 1.0 must be below upper"),
    (("joints", 0, "drive", "stiffness"), float("nan"), "stiffness: must be finite"),
])
def test_config_wrong_types(path, value, match):
    cfg = spatial_arm_config()
    node = cfg
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    with pytest.raises(ConfigError, match=match):
        parse_robot_config(cfg)


@pytest.mark.parametrize("old,new", [("K", "stiffness"), ("D", "damping"), ("fv", "viscous"),
                                     ("fc", "coulomb"), ("fs", "stiction"), ("fsc", "stribeck"),
                                     ("fo", "offset")])
def test_config_old_drive_key_names_the_new_one(old, new):
    cfg = spatial_arm_config()
    cfg["joints"][1]["drive"][old] = 1.0
    with pytest.raises(ConfigError, match=rf"joints\[1\]\.drive\.{old}: drive key '{old}' "
                                          rf"was renamed to '{new}'"):
        parse_robot_config(cfg)


def test_config_missing_file_and_bad_yaml(tmp_path):
    from robot_identification.model import load_robot_config
    with pytest.raises(ConfigError, match="does not exist"):
        load_robot_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_robot_config(bad)
    with pytest.raises(ConfigError, match="unknown robot 'nope'"):
        load_robot("nope")


def _rigid_dataset(model, N=400, frozen=(), seed=0):
    """Rigid-arm data from the regressor with nominal parameters (exact derivatives)."""
    from robot_identification.regressor import regressor
    t = np.arange(N) * 0.01
    rng = np.random.default_rng(seed)
    n = model.n
    w = rng.uniform(0.5, 2.0, n)
    ph = rng.uniform(0, np.pi, n)
    a = np.full(n, 1.0)
    a[list(frozen)] = 0.0
    q = a * np.sin(np.outer(t, w) + ph)
    dq = a * w * np.cos(np.outer(t, w) + ph)
    ddq = -a * w ** 2 * np.sin(np.outer(t, w) + ph)
    tau = regressor(model, q, dq, ddq) @ model.nominal_parameters()
    return Dataset(t=t, q=q, dq=dq, ddq=ddq, tau=tau, joint_names=model.joint_names)


def test_dataset_errors():
    model = _model()
    ds = _rigid_dataset(model)
    bad = Dataset(t=ds.t, q=ds.q.copy(), tau=ds.tau, joint_names=ds.joint_names)
    bad.q[17, 2] = np.nan
    with pytest.raises(DataError, match=r"'q' contains 1 NaN.*sample 17.*joint 'joint3'"):
        identify(model, bad)
    short = Dataset(t=ds.t, q=ds.q[:-5], tau=ds.tau, joint_names=ds.joint_names)
    with pytest.raises(DataError, match="mismatched lengths"):
        identify(model, short)
    tiny = ds.slice(slice(0, 5))
    with pytest.raises(DataError, match="5 samples; at least"):
        identify(model, tiny)
    missing = Dataset(t=ds.t, q=ds.q[:, :4], tau=ds.tau[:, :4], joint_names=ds.joint_names[:4])
    with pytest.raises(DataError, match=r"no joint\(s\) \['joint5'\]"):
        identify(model, missing)
    back = Dataset(t=ds.t[::-1], q=ds.q, tau=ds.tau, joint_names=ds.joint_names)
    with pytest.raises(DataError, match="not strictly increasing"):
        identify(model, back)
    with pytest.raises(DataError, match="does not exist"):
        load_dataset("/nonexistent/run.npz")


def test_unexcited_data_names_parameters():
    model = _model()
    ds = _rigid_dataset(model, frozen=(4,))
    with pytest.raises(ExcitationError, match=r"joint5\.") as err:
        identify(model, ds, estimator="ols")
    assert "do not excite" in str(err.value)


def test_elastic_model_needs_motor_positions():
    cfg = spatial_arm_config(model="elastic")
    model = RobotModel(parse_robot_config(cfg), urdf_xml=spatial_arm_urdf(prismatic=False))
    ds = _rigid_dataset(_model(), N=100)
    with pytest.raises(DataError, match="no motor positions"):
        identify(model, ds)


def test_exact_rigid_data_recovers_base_parameters():
    model = _model()
    ds = _rigid_dataset(model, N=1500)
    from dataclasses import replace
    # wls: least squares recovers exact data (the default, auto, chooses wls here too, after
    # 12 SDPs that noise-free data leave at the solver's iteration limit: 90 s CPU)
    settings = replace(model.config.identification, cutoff_hz=None, estimator="wls",
                       friction_deadband=0.0)   # the data were made with sign(v)
    res = identify(model, ds, settings)
    truth = res.base.base_values(model.nominal_parameters())
    np.testing.assert_allclose(res.estimate.values, truth, rtol=1e-6,
                               atol=1e-8 * np.abs(truth).max())
