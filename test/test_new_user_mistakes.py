"""Faults a new user makes (issue #12, "other faults"): CSV dialects, time in milliseconds,
torques not recorded, npz arrays of the wrong kind, a file given twice, YAML keys given twice,
nonsensical drive parameters, a link without inertia. Each is either read correctly or refused
with one line naming the file and the problem (exit 2); inputs are never modified.
"""
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import assert_one_line, run_cli
from robot_identification import cli
from robot_identification._yaml import load_yaml_text
from robot_identification.data import Dataset, load_dataset

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 3 s simulation of szabo_3dof (t, q, tau) and a config whose csv: section maps
    columns t, q1..q3, tau1..tau3."""
    d = tmp_path_factory.mktemp("user")
    assert cli.main(["simulate", "--robot", "szabo_3dof", "--duration", "3", "--output",
                     str(d / "run.npz"), "--quiet"]) == 0
    cfg = yaml.safe_load((REPO / "config" / "robots" / "szabo_3dof.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "szabo_3dof.urdf")
    cfg["csv"] = {"time": 1, "position": 2, "torque": 5}
    (d / "robot.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return d


def _rows(run, sep=",", time_scale=1.0, tau_scale=1.0):
    z = np.load(run / "run.npz")
    m = np.column_stack([z["t"] * time_scale, z["q"], z["tau"] * tau_scale])
    return [sep.join(f"{v:.9g}" for v in r) for r in m]


# ------------------------------------------------------------------------------ CSV dialects
READ = [  # (label, bytes of the file from the rows)
    ("trailing delimiter", lambda r: "\n".join(x + "," for x in r).encode()),
    ("unmapped NaN column", lambda r: "\n".join(x + ",nan" for x in r).encode()),
    ("byte-order mark", lambda r: ("\ufeff" + "\n".join(r)).encode()),
    ("UTF-16", lambda r: "\n".join(r).encode("utf-16")),
    ("quoted fields", lambda r: "\n".join(",".join(f'"{f}"' for f in x.split(","))
                                          for x in r).encode()),
    ("CRLF and header", lambda r: ("t,q1,q2,q3,u1,u2,u3\r\n" + "\r\n".join(r)).encode()),
    ("text column", lambda r: "\n".join(x + ",RUNNING" for x in r).encode()),
    ("semicolons and decimal commas", lambda r: "\n".join(
        x.replace(",", ";").replace(".", ",") for x in r).encode()),
]


@pytest.mark.parametrize("label,make", READ, ids=[c[0] for c in READ])
def test_csv_dialects_are_read_whole(run, tmp_path, label, make):
    rows = _rows(run)
    (tmp_path / "x.csv").write_bytes(make(rows))
    from robot_identification.model import load_robot
    ds = load_dataset(tmp_path / "x.csv", model=load_robot(config=run / "robot.yaml"),
                      **({"delimiter": ";"} if "semicolons" in label else {}))
    assert ds.n_samples == len(rows) and not ds.metadata["malformed_rows"]
    ref = np.loadtxt(rows, delimiter=",")
    np.testing.assert_allclose(ds.q, ref[:, 1:4])
    np.testing.assert_allclose(ds.tau, ref[:, 4:7])


REFUSED = [  # (label, bytes of the file from the rows, message)
    ("semicolons", lambda r: "\n".join(x.replace(",", ";") for x in r).encode(),
     "the delimiter is ','"),
    ("gzip", lambda r: gzip.compress("\n".join(r).encode()), "gzip-compressed"),
    ("Latin-1 header", lambda r: ("t,q \xb0\n" + "\n".join(r)).encode("latin-1"),
     "not UTF-8 text"),
    ("time in ms", lambda r: "\n".join(_scaled(r, 0, 1000.0)).encode(), "milliseconds"),
    ("torques not recorded", lambda r: "\n".join(_scaled(r, slice(4, 7), 0.0)).encode(),
     "is 0 in every sample"),
]


def _scaled(rows, col, factor):
    m = np.loadtxt(rows, delimiter=",")
    m[:, col] *= factor
    return [",".join(f"{v:.9g}" for v in r) for r in m]


@pytest.mark.parametrize("label,make,message", REFUSED, ids=[c[0] for c in REFUSED])
def test_csv_faults_are_named(run, tmp_path, capsys, label, make, message):
    (tmp_path / "x.csv").write_bytes(make(_rows(run)))
    rc, err = run_cli(["identify", "--config", run / "robot.yaml", "--data", tmp_path / "x.csv",
                       "--output", tmp_path / "o" / "r.yaml", "--no-physical", "--quiet"],
                      capsys, tmp_path)
    assert_one_line(rc, err, "x.csv", message)
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------ npz
def _npz(run, path, **change):
    z = dict(np.load(run / "run.npz"))
    meta = json.loads(str(z["meta"]))
    meta.update(change.pop("meta", {}))
    z["meta"] = np.array(json.dumps(meta))
    z.update(change)
    np.savez(path, **z)
    return path


NPZ = [
    ("int16 positions", lambda z: {"q": (z["q"] * 1000).astype(np.int16)}, "dtype int16"),
    ("transposed", lambda z: {"q": np.ascontiguousarray(z["q"].T)}, "(transposed?)"),
    ("time in ms", lambda z: {"t": z["t"] * 1000}, "milliseconds"),
    ("joint twice", lambda z: {"meta": {"joint_names": ["joint1", "joint1", "joint3"]}},
     "['joint1'] twice"),
    ("text truth", lambda z: {"meta": {"true_parameters": {"link1.m": "heavy"}}},
     "true parameter 'link1.m' must be a number"),
    ("NaN", lambda z: {"tau": np.where(np.arange(len(z["t"]))[:, None] == 1500, np.nan,
                                       z["tau"])}, "t = 1.5 s"),
    ("other robot's joints", lambda z: {"meta": {"joint_names": ["a1", "a2", "a3"]}},
     "has no joint(s) ['joint1', 'joint2', 'joint3']"),
]


@pytest.mark.parametrize("label,change,message", NPZ, ids=[c[0] for c in NPZ])
@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_npz_faults_name_the_file(run, tmp_path, capsys, label, change, message, command):
    path = _npz(run, tmp_path / "bad.npz", **change(dict(np.load(run / "run.npz"))))
    rc, err = run_cli([command, "--robot", "szabo_3dof", "--data", path, "--output",
                       tmp_path / "o" / "r.yaml", "--quiet"], capsys, tmp_path)
    if command == "identify-stream":                      # read chunk by chunk
        message = {"transposed": "array 'q' has 3 samples"}.get(label, message)
    assert_one_line(rc, err, "bad.npz", message)


@pytest.mark.parametrize("label,scale,message", [
    ("zeros", 0.0, "is 0 in every sample while its position moves"),
    ("degrees per second", np.degrees(1.0), "do not match its positions"),
])
def test_measured_velocities_must_match_positions(run, tmp_path, capsys, label, scale,
                                                  message):
    z = np.load(run / "run.npz")
    (tmp_path / "in").mkdir()
    path = _npz(run, tmp_path / "in" / "v.npz",
                dq=np.gradient(z["q"], z["t"], axis=0) * scale)
    argv = ["identify", "--robot", "szabo_3dof", "--data", path, "--output",
            tmp_path / "o" / "r.yaml", "--quiet", "--no-physical"]
    rc, err = run_cli(argv, capsys, tmp_path / "in")
    assert_one_line(rc, err, "v.npz", message, "--numerical-derivatives")
    rc, err = run_cli(argv + ["--numerical-derivatives"], capsys, tmp_path / "in")
    assert rc == 0, err
    # validate and report read held-out data the same way and take the same option
    for cmd, out in (("validate", tmp_path / "o" / "v.yaml"), ("report", tmp_path / "rep")):
        argv2 = [cmd, "--robot", "szabo_3dof", "--results", tmp_path / "o" / "r.yaml",
                 "--data", path, "--output", out]
        rc, err = run_cli(argv2, capsys, tmp_path / "in")
        assert_one_line(rc, err, "v.npz", message, "--numerical-derivatives")
        rc, err = run_cli(argv2 + ["--numerical-derivatives"], capsys, tmp_path / "in")
        assert rc == 0, err


def test_same_recording_twice_is_refused(run, tmp_path, capsys):
    (tmp_path / "link.npz").symlink_to(run / "run.npz")
    for data in ([run / "run.npz", run / "run.npz"], [run / "run.npz", tmp_path / "link.npz"]):
        rc, err = run_cli(["identify", "--robot", "szabo_3dof", "--data", *data, "--output",
                           tmp_path / "o" / "r.yaml"], capsys, tmp_path)
        assert_one_line(rc, err, "twice", "run.npz")


# ------------------------------------------------------------------------------ configs, URDF
def _config(tmp_path, old, new):
    text = (REPO / "config" / "robots" / "szabo_3dof.yaml").read_text()
    text = text.replace("../../urdf/szabo_3dof.urdf", str(REPO / "urdf" / "szabo_3dof.urdf"))
    assert old in text
    (tmp_path / "robot.yaml").write_text(text.replace(old, new, 1))
    return tmp_path / "robot.yaml"


CONFIGS = [
    ("key twice", "  rate_hz: 1000.0\n", "  rate_hz: 1000.0\n  rate_hz: 10.0\n",
     "duplicate key 'rate_hz' (first at line"),
    ("negative rotor inertia", "rotor_inertia: null, stiction: 2.0",
     "rotor_inertia: -0.1, stiction: 2.0", "rotor_inertia: must be >= 0"),
    ("negative viscous friction", "viscous: 0.5}", "viscous: -0.5}", "viscous: must be >= 0"),
]


@pytest.mark.parametrize("label,old,new,message", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_config_faults_are_named(tmp_path, capsys, label, old, new, message):
    cfg = _config(tmp_path, old, new)
    rc, err = run_cli(["simulate", "--config", cfg, "--duration", "0.1", "--output",
                       tmp_path / "o" / "x.npz"], capsys, tmp_path)
    assert_one_line(rc, err, "robot.yaml", message)


def test_yaml_merge_keys_may_override():
    assert load_yaml_text("a: &x {k: 1, m: 2}\nb:\n  <<: *x\n  k: 3\n")["b"] == {"k": 3, "m": 2}


def test_link_without_inertial_is_refused_not_simulated_forever(tmp_path, capsys):
    text = (REPO / "urdf" / "szabo_3dof.urdf").read_text()
    start = text.index('<link name="link1">')
    end = text.index("</link>", start) + len("</link>")
    (tmp_path / "arm.urdf").write_text(text[:start] + '<link name="link1"/>' + text[end:])
    rc, err = run_cli(["simulate", "--robot", "szabo_3dof", "--urdf", tmp_path / "arm.urdf",
                       "--duration", "0.1", "--output", tmp_path / "o" / "x.npz"], capsys,
                      tmp_path)
    # joint1 moves exactly no inertia (the right angles of the URDF are exact since
    # snap_right_angles; before, round-off left it 1e-30 and the sub-step cap refused it)
    assert_one_line(rc, err, "arm.urdf", "moves no inertia", "singular")
    # almost no inertia: refused by the sub-step cap
    tiny = ('<link name="link1"><inertial><mass value="1e-9"/><inertia ixx="1e-15" ixy="0" '
            'ixz="0" iyy="1e-15" iyz="0" izz="1e-15"/></inertial></link>')
    (tmp_path / "arm.urdf").write_text(text[:start] + tiny + text[end:])
    rc, err = run_cli(["simulate", "--robot", "szabo_3dof", "--urdf", tmp_path / "arm.urdf",
                       "--duration", "0.1", "--output", tmp_path / "o" / "x.npz"], capsys,
                      tmp_path)
    assert_one_line(rc, err, "arm.urdf", "RK4 sub-steps", "almost no inertia")


URDF = (REPO / "urdf" / "szabo_3dof.urdf").read_text()
J3 = '<joint name="joint3" type="revolute">'


@pytest.mark.parametrize("label,text,message", [
    ("mimic joint", URDF.replace(J3, J3 + '<mimic joint="joint2" multiplier="1"/>'),
     "joint 'joint3' mimics 'joint2'"),
    ("revolute joint without limit", URDF.replace(
        '<limit lower="-3.1416" upper="3.1416" velocity="2.0" effort="100"/>', "", 1),
     "revolute joint 'joint1' has no <limit>"),
    ("off-diagonal inertia", URDF.replace('ixy="0" ixz="0" iyy="0.0075"',
                                          'ixy="5" ixz="0" iyy="0.0075"', 1),
     "link 'link1': <inertia>"),
])
def test_urdf_models_no_body_can_have(tmp_path, capsys, label, text, message):
    assert text != URDF
    (tmp_path / "arm.urdf").write_text(text)
    rc, err = run_cli(["simulate", "--robot", "szabo_3dof", "--urdf", tmp_path / "arm.urdf",
                       "--duration", "0.1", "--output", tmp_path / "o" / "x.npz"], capsys,
                      tmp_path)
    assert_one_line(rc, err, "arm.urdf", message)


def test_noise_free_fit_has_finite_wls():
    """Torques that the model fits exactly (zero residual on every joint): WLS is OLS, not a
    division by zero."""
    from robot_identification.estimation import wls
    from robot_identification.estimation._least_squares import NormalEquations
    rng = np.random.default_rng(0)
    W = rng.normal(size=(50, 2, 3))
    x = np.array([1.0, -2.0, 0.5])
    neq = NormalEquations(3, 2)
    neq.add(W, W @ x)
    est = wls(neq)
    np.testing.assert_allclose(est.values, x, rtol=1e-9)
    assert np.all(np.isfinite(est.std))


def test_dataset_with_source_names_its_file():
    ds = Dataset(t=np.arange(30) * 1e-3, q=np.zeros((30, 2)), tau=np.ones((30, 2)),
                 joint_names=["a", "b"], metadata={"file": "run_7.npz"})
    ds.q[4, 1] = np.nan
    with pytest.raises(Exception, match=r"^'run_7.npz': 'q' contains 1 NaN"):
        ds.validate()


# ------------------------------------------------------------------------------ arguments
ARGS = [
    (["identify", "--cutoff", "-5"], "cutoff must be a finite number > 0 Hz"),
    (["identify", "--velocity-threshold", "nan"], "velocity_threshold must be a finite"),
    (["identify-stream", "--window", "nan"], "--window must be a finite number > 0 s"),
    (["validate", "--results", "{d}/results.yaml", "--rest-velocity", "nan"],
     "rest velocity must be a finite number"),
]


def _results(run):
    if not (run / "results.yaml").exists():
        assert cli.main(["identify", "--robot", "szabo_3dof", "--data", str(run / "run.npz"),
                         "--output", str(run / "results.yaml"), "--no-physical",
                         "--quiet"]) == 0
    return run / "results.yaml"


@pytest.mark.parametrize("argv,message", ARGS, ids=[" ".join(a[0][:3]) for a in ARGS])
def test_non_finite_options_are_refused(run, tmp_path, capsys, argv, message):
    _results(run)
    argv = [a.replace("{d}", str(run)) for a in argv]
    rc, err = run_cli(argv[:1] + ["--robot", "szabo_3dof", "--data", run / "run.npz",
                                  "--output", tmp_path / "o" / "r.yaml", "--quiet"] + argv[1:],
                      capsys, tmp_path)
    assert_one_line(rc, err, message)


def test_api_streamed_npz_in_milliseconds_names_the_file(run, tmp_path):
    """The Python API streams an .npz path chunk by chunk: the time-unit check runs there too."""
    from robot_identification.errors import DataError
    from robot_identification.model import load_robot
    from robot_identification.identification import identify
    z = np.load(run / "run.npz")
    path = _npz(run, tmp_path / "ms.npz", t=z["t"] * 1000.0)
    with pytest.raises(DataError, match=r"ms\.npz'?: median time step 1 s .*milliseconds"):
        identify(load_robot("szabo_3dof"), [path], estimators=("ols",))


def test_gripper_publishing_on_joint_states_is_left_out(tmp_path):
    """A gripper driver publishing its own JointState messages on /joint_states (interleaved,
    even first) does not break reading the arm: its messages are left out with a warning and
    the arm's samples are the same as without it."""
    from robot_identification.data import BagWriter, typestore, read_bag
    from robot_identification.identification import iter_chunks
    st = typestore()
    T = st.types

    def msg(ns, names, pos):
        return st.serialize_cdr(T["sensor_msgs/msg/JointState"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
                sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""), name=names,
            position=np.asarray(pos, float), velocity=np.zeros(len(names)),
            effort=np.ones(len(names))), "sensor_msgs/msg/JointState")
    w = BagWriter(tmp_path / "bag", {"/joint_states": "sensor_msgs/msg/JointState"})
    w.write("/joint_states", msg(0, ["finger"], [0.01]), 0)
    for k in range(1, 301):
        ns = k * 10**6
        w.write("/joint_states", msg(ns, ["joint1", "joint2"], [np.sin(k / 50), 0.1 * k]), ns)
        if k % 10 == 0:
            w.write("/joint_states", msg(ns + 1000, ["finger"], [0.01]), ns + 1000)
    w.close()
    with pytest.warns(UserWarning, match="left out 31 JointState message"):
        ds = read_bag(tmp_path / "bag", elastic=False)
    assert ds.joint_names == ("joint1", "joint2") and ds.n_samples == 300
    np.testing.assert_allclose(ds.q[:, 1], 0.1 * np.arange(1, 301))
    chunks = list(iter_chunks(tmp_path / "bag", 100))
    assert sum(c.n_samples for c in chunks) == 300


def test_elastic_data_with_link_side_motor_positions_are_named(tmp_path, capsys):
    assert cli.main(["simulate", "--robot", "zollo_planar", "--duration", "3", "--output",
                     str(tmp_path / "z.npz"), "--quiet"]) == 0
    z = dict(np.load(tmp_path / "z.npz"))
    (tmp_path / "in").mkdir()
    np.savez(tmp_path / "in" / "same.npz", **dict(z, theta=z["q"]))
    rc, err = run_cli(["identify", "--robot", "zollo_planar", "--data",
                       tmp_path / "in" / "same.npz", "--output", tmp_path / "o" / "r.yaml",
                       "--quiet"], capsys, tmp_path / "in")
    assert_one_line(rc, err, "stiffness", "motor positions equal the link positions")


def test_file_names_of_other_tools(run, tmp_path, capsys):
    """Upper-case suffixes (Windows tools) are read; a folder of CSVs and a URDF given as a
    YAML file are named as such."""
    import shutil
    shutil.copy(run / "run.npz", tmp_path / "RUN.NPZ")
    assert cli.main(["identify", "--robot", "szabo_3dof", "--data", str(tmp_path / "RUN.NPZ"),
                     "--output", str(tmp_path / "r.yaml"), "--no-physical", "--quiet"]) == 0
    (tmp_path / "csvs").mkdir()
    (tmp_path / "csvs" / "a.csv").write_text("0,1\n")
    rc, err = run_cli(["identify", "--robot", "szabo_3dof", "--data", tmp_path / "csvs",
                       "--output", tmp_path / "o" / "r.yaml"], capsys, tmp_path / "csvs")
    assert_one_line(rc, err, "it holds ['a.csv']: give the files themselves")
    rc, err = run_cli(["simulate", "--config", REPO / "urdf" / "szabo_3dof.urdf", "--output",
                       tmp_path / "o" / "x.npz"], capsys, tmp_path / "csvs")
    assert_one_line(rc, err, "szabo_3dof.urdf' is XML, not YAML")


def test_results_of_an_older_version_and_of_another_model(run, tmp_path, capsys):
    """Drive keys of earlier versions (joint1.fv) are read as today's; a base parameter the
    model does not have is named."""
    text = _results(run).read_text()
    assert "joint1.viscous" in text
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "old.yaml").write_text(text.replace("joint1.viscous", "joint1.fv"))
    (tmp_path / "in" / "other.yaml").write_text(text.replace("joint1.viscous", "joint1.fx"))
    argv = ["validate", "--robot", "szabo_3dof", "--data", run / "run.npz", "--quiet"]
    rc, err = run_cli(argv + ["--results", tmp_path / "in" / "old.yaml", "--output",
                              tmp_path / "v.yaml"], capsys, tmp_path / "in")
    assert rc == 0, err
    rc, err = run_cli(argv + ["--results", tmp_path / "in" / "other.yaml", "--output",
                              tmp_path / "w.yaml"], capsys, tmp_path / "in")
    assert_one_line(rc, err, "other.yaml", "the file has ['joint1.fx'] the model lacks")


def test_empty_mcap_file_is_named(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "run.mcap").write_bytes(b"")
    rc, err = run_cli(["identify", "--robot", "szabo_3dof", "--data", tmp_path / "in" / "run.mcap",
                       "--output", tmp_path / "r.yaml"], capsys, tmp_path / "in")
    assert_one_line(rc, err, "run.mcap' is empty (0 bytes)")


def test_robot_and_config_together_are_refused(run, tmp_path, capsys):
    rc, err = run_cli(["simulate", "--robot", "ur10e", "--config", run / "robot.yaml",
                       "--output", tmp_path / "o" / "x.npz"], capsys, run)
    assert_one_line(rc, err, "not both", "robot.yaml")
