"""Bad input is named, never silent, never a traceback (issue #12): one crafted case per class.

Every CLI case checks exit code 2, one line on stderr naming the file and the problem, and that
no input file changed (sha256 before/after).
"""
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import assert_one_line, run_cli
from robot_identification import cli
from robot_identification.data import Dataset, load_dataset
from robot_identification.data import BagWriter, typestore, read_bag, write_bag
from robot_identification.errors import DataError, ModelError
from robot_identification.model import load_robot
from robot_identification.identification import iter_chunks

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SZABO_URDF = (REPO / "urdf" / "szabo_3dof.urdf").read_text()


# ------------------------------------------------------------------------------ bags
def states_bag(path, n_messages=400, flush_every=40):
    """A closed bag of /joint_states (2 joints, 1 kHz) flushed into many MCAP chunks."""
    st = typestore()
    T = st.types
    w = BagWriter(path, {"/joint_states": "sensor_msgs/msg/JointState"}, flush_period=np.inf)
    for k in range(n_messages):
        ns = k * 10**6
        m = T["sensor_msgs/msg/JointState"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
                sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""),
            name=["joint1", "joint2"], position=np.array([np.sin(k / 50), np.cos(k / 50)]),
            velocity=np.zeros(2), effort=np.array([1.0, -1.0]))
        w.write("/joint_states", st.serialize_cdr(m, "sensor_msgs/msg/JointState"), ns)
        if (k + 1) % flush_every == 0:
            w.flush()
    w.close()
    return path


def test_truncated_mcap_with_metadata_is_refused(tmp_path):
    bag = states_bag(tmp_path / "run")
    mcap = next(bag.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[:int(0.55 * len(data))])        # cut at 55 %
    with pytest.raises(DataError, match=r"run.*truncated|declares 400 messages"):
        read_bag(bag, elastic=False)
    with pytest.raises(DataError, match=r"truncated|declares 400 messages"):
        list(iter_chunks(bag, 100))


def test_crashed_recording_without_metadata_is_read_up_to_its_last_chunk(tmp_path):
    bag = states_bag(tmp_path / "run")
    (bag / "metadata.yaml").unlink()                        # the recorder was killed
    mcap = next(bag.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[:int(0.55 * len(data))])
    ds = read_bag(bag, elastic=False)
    assert 160 <= ds.n_samples < 400 and ds.n_samples % 40 == 0


def test_corrupt_chunk_in_the_middle_is_named(tmp_path):
    bag = states_bag(tmp_path / "run")
    mcap = next(bag.glob("*.mcap"))
    data = bytearray(mcap.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 32] = bytes(b ^ 0xFF for b in data[mid:mid + 32])
    mcap.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"damaged|truncated|declares 400") as err:
        read_bag(bag, elastic=False)
    assert "no messages" not in str(err.value)


def test_bag_without_the_topic_lists_its_topics(tmp_path):
    bag = states_bag(tmp_path / "run", n_messages=40)
    with pytest.raises(DataError, match=r"none of the topics.*its topics: \['/joint_states'\]"):
        read_bag(bag, joint_topic="/arm/joint_states", elastic=False)


def test_corrupt_bag_metadata_is_one_line(tmp_path, capsys):
    bag = states_bag(tmp_path / "run", n_messages=40)
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {[: bad\n")
    rc, err = run_cli(["identify", "--robot", "szabo_3dof", "--data", bag, "--output",
                       tmp_path / "out" / "r.yaml"], capsys, bag)
    assert_one_line(rc, err, "metadata.yaml", "not valid YAML at line 1")


# ------------------------------------------------------------------------------ npy / npz
def small_dataset(n=200):
    t = np.arange(n) * 1e-3
    return Dataset(t=t, q=np.column_stack([np.sin(t), np.cos(t)]), tau=np.ones((n, 2)),
                   joint_names=["joint1", "joint2"])


def npz_with(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return path


def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def lying_npy(rows=10**12):
    """An .npy whose header declares ``rows`` x 2 float64 but holds 10 rows."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False,
                                                "shape": (rows, 2)})
    return head.getvalue() + np.zeros(20).tobytes()


def test_npy_header_declaring_1e12_rows_is_refused_before_allocating(tmp_path):
    meta = npy_bytes(np.array(json.dumps({"joint_names": ["joint1", "joint2"]})))
    path = npz_with(tmp_path / "big.npz", {"t.npy": npy_bytes(np.arange(10.0)),
                                           "q.npy": lying_npy(), "tau.npy": lying_npy(),
                                           "meta.npy": meta})
    with pytest.raises(DataError, match=r"declares shape \(1000000000000, 2\)"):
        load_dataset(path)
    with pytest.raises(DataError, match=r"declares shape \(1000000000000, 2\)"):
        list(iter_chunks(path, 100))
    d = tmp_path / "dir"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"joint_names": ["joint1", "joint2"]}))
    (d / "t.npy").write_bytes(npy_bytes(np.arange(10.0)))
    (d / "q.npy").write_bytes(lying_npy())
    (d / "tau.npy").write_bytes(lying_npy())
    with pytest.raises(DataError, match=r"q.npy.*declares shape"):
        list(iter_chunks(d, 100))


def test_non_json_meta_and_missing_joint_names(tmp_path, capsys):
    d = tmp_path / "dir"
    d.mkdir()
    (d / "meta.json").write_text("{not json")
    for k in ("t", "q", "tau"):
        (d / f"{k}.npy").write_bytes(npy_bytes(np.zeros((10, 2)) if k != "t" else
                                               np.arange(10.0)))
    with pytest.raises(DataError, match="meta.json.*not JSON"):
        list(iter_chunks(d, 100))
    ds = small_dataset()
    path = tmp_path / "run.npz"
    np.savez(path, t=ds.t, q=ds.q, tau=ds.tau, meta=np.array(json.dumps({"format": "x"})))
    with pytest.raises(DataError, match="lacks 'joint_names'"):
        load_dataset(path)
    rc, err = run_cli(["identify-stream", "--robot", "zollo_planar", "--data", path,
                       "--output", tmp_path / "o.yaml"], capsys, tmp_path)
    assert_one_line(rc, err, "run.npz", "joint_names")


# ------------------------------------------------------------------------------ CSV
def test_csv_clock_jump_is_refused_before_resampling(tmp_path):
    t = np.arange(3000) * 0.008
    t[1500:] += 1e6                                          # a 1e6 s clock jump
    q = np.sin(np.column_stack([t, t])) * 0.5
    q[1500:] = np.sin(np.column_stack([t[1500:] - 1e6] * 2)) * 0.5
    t[10] += 0.003                                           # irregular: resampling is on
    path = tmp_path / "jump.csv"
    np.savetxt(path, np.column_stack([t, q, np.ones_like(q)]), delimiter=",")
    with pytest.raises(DataError, match=r"time jumps by 1e\+06 s.*split the file"):
        load_dataset(path, time=1, position=2, torque=4, n_joints=2)


# ------------------------------------------------------------------------------ configs
def test_binary_config_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "robot.yaml"
    cfg.write_bytes(bytes(range(256)) * 4)
    rc, err = run_cli(["identify", "--config", cfg, "--data", tmp_path / "x.npz", "--output",
                       tmp_path / "o" / "r.yaml"], capsys, tmp_path)
    assert_one_line(rc, err, "robot.yaml", "not a text file")


def test_cutoff_null_means_no_filter(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "robots" / "szabo_3dof.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "szabo_3dof.urdf")
    cfg.setdefault("identification", {})["cutoff_hz"] = None
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(cfg))
    assert load_robot(config=tmp_path / "r.yaml").config.identification.cutoff_hz is None
    del cfg["identification"]["cutoff_hz"]          # absent: from the excitation spectrum
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(cfg))
    assert load_robot(config=tmp_path / "r.yaml").config.identification.cutoff_hz == "auto"


def test_relative_urdf_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    """A joint and a link of the same name (``frame1``) are no ambiguity for body_frame."""
    (tmp_path / "mine.urdf").write_text(SZABO_URDF.replace('name="frame1_joint"',
                                                           'name="frame1"'))
    monkeypatch.chdir(tmp_path)
    model = load_robot("szabo_3dof", urdf="mine.urdf")
    assert model.config.urdf_path == tmp_path / "mine.urdf"


# ------------------------------------------------------------------------------ URDFs
def _urdf_with(old, new):
    assert old in SZABO_URDF
    return SZABO_URDF.replace(old, new, 1)


@pytest.mark.parametrize("label,text,message", [
    ("negative mass", _urdf_with('<mass value="1.0"/>', '<mass value="-1.0"/>'),
     "link 'link1' has mass -1"),
    ("two roots", SZABO_URDF.replace("</robot>", '<link name="orphan"/></robot>'),
     "2 root links ['base_link', 'orphan']"),
    ("loop", SZABO_URDF.replace("</robot>", '<joint name="jloop" type="fixed"><parent '
                                'link="frame3"/><child link="link1"/></joint></robot>'),
     "kinematic loop"),
    ("duplicate link", SZABO_URDF.replace("</robot>", '<link name="frame1"/></robot>'),
     "link name(s) ['frame1'] defined twice"),
    ("binary", "\udcff\udcfe binary", "not a text file"),
    ("undefined link", SZABO_URDF.replace("</robot>", '<joint name="jx" type="fixed"><parent '
                                          'link="frame3"/><child link="tool"/></joint></robot>'),
     "names child link 'tool'"),
])
def test_urdf_structure_errors_name_the_cause(tmp_path, capsys, label, text, message):
    (tmp_path / "arm.urdf").write_text(text, errors="surrogateescape")
    rc, err = run_cli(["simulate", "--robot", "szabo_3dof", "--urdf", tmp_path / "arm.urdf",
                       "--duration", "0.1", "--output", tmp_path / "o" / "x.npz"], capsys,
                      tmp_path)
    assert_one_line(rc, err, "arm.urdf", message)
    assert "diverged" not in err and "missing" not in err


def test_zero_mass_link_is_refused_by_the_simulator(tmp_path, capsys):
    start = SZABO_URDF.index('<link name="link3">')
    end = SZABO_URDF.index("</link>", start)
    text = (SZABO_URDF[:start] + '<link name="link3"><inertial><mass value="0"/><inertia '
            'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>' + SZABO_URDF[end:])
    (tmp_path / "arm.urdf").write_text(text)
    rc, err = run_cli(["simulate", "--robot", "szabo_3dof", "--urdf", tmp_path / "arm.urdf",
                       "--duration", "0.1", "--output", tmp_path / "o" / "x.npz"], capsys,
                      tmp_path)
    assert_one_line(rc, err, "arm.urdf", "zero mass and inertia")
    with pytest.raises(ModelError, match="kinematic loop"):
        load_robot("szabo_3dof", urdf=_loop_urdf(tmp_path))


def _loop_urdf(tmp_path):
    path = tmp_path / "loop.urdf"
    path.write_text(SZABO_URDF.replace("</robot>", '<joint name="jl" type="fixed"><parent '
                                       'link="link2"/><child link="link1"/></joint></robot>'))
    return path


# ------------------------------------------------------------------------------ simulate
@pytest.mark.parametrize("duration,message", [("1e9", "above the in-memory limit"),
                                              ("nan", "finite number > 0 s"),
                                              ("inf", "finite number > 0 s")])
def test_simulate_duration_bounds(tmp_path, capsys, duration, message):
    rc, err = run_cli(["simulate", "--robot", "zollo_planar", "--duration", duration,
                       "--output", tmp_path / "x.npz"], capsys, tmp_path)
    assert_one_line(rc, err, message)
    assert not (tmp_path / "x.npz").exists()


# ------------------------------------------------------------------------------ results files
@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    """szabo_3dof: a simulated run and its results.yaml (with OLS/WLS/physical estimates)."""
    d = tmp_path_factory.mktemp("identified")
    assert cli.main(["simulate", "--robot", "szabo_3dof", "--duration", "4", "--output",
                     str(d / "run.npz"), "--quiet"]) == 0
    assert cli.main(["identify", "--robot", "szabo_3dof", "--data", str(d / "run.npz"),
                     "--output", str(d / "results.yaml"), "--quiet"]) == 0
    return d


def _mutated(d, folder, name, edit):
    doc = yaml.safe_load((d / "results.yaml").read_text())
    edit(doc)
    out = folder / name
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def _set_first_estimate(doc, value):
    doc["base_parameters"][0]["estimate"] = value


@pytest.mark.parametrize("label,edit,message", [
    ("NaN estimate", lambda doc: _set_first_estimate(doc, float("nan")), "estimate is nan"),
    ("null estimate", lambda doc: _set_first_estimate(doc, None), "estimate is missing"),
    ("NaN standard parameter", lambda doc: doc["estimates"]["physical"][
        "standard_parameters"].update({"link1.m": float("nan")}), "link1.m is nan"),
    ("list instead of estimates", lambda doc: doc.update(estimates=[1, 2]),
     "'estimates' must be a mapping"),
    ("too few values", lambda doc: doc["estimates"]["wls"].update(values=[1.0, 2.0]),
     "estimates.wls.values must list"),
    ("other robot", lambda doc: doc.update(robot="puma560"), "robot 'puma560'"),
    ("text estimate", lambda doc: _set_first_estimate(doc, "12 kg"), "must be a number"),
])
@pytest.mark.parametrize("command", ["validate", "export-urdf"])
def test_bad_results_files_are_refused(identified, tmp_path, capsys, label, edit, message,
                                       command):
    bad = _mutated(identified, tmp_path, "bad.yaml", edit)
    (tmp_path / "run.npz").write_bytes((identified / "run.npz").read_bytes())
    argv = [command, "--robot", "szabo_3dof", "--results", bad, "--output",
            tmp_path / "out" / ("v.yaml" if command == "validate" else "x.urdf")]
    if command == "validate":
        argv[5:5] = ["--data", tmp_path / "run.npz"]
    rc, err = run_cli(argv, capsys, tmp_path)
    assert_one_line(rc, err, "bad.yaml", message)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------ plausibility
def test_degrees_spikes_saturation_and_time_jumps_are_diagnosed(identified, tmp_path, capsys):
    """Positions in degrees, a 1e9 torque spike, torques at the effort limit and a time jump
    pass identification only with diagnostics that say so; the degrees are an error: exit
    code 3, written only with --force (status: error)."""
    ds = load_dataset(identified / "run.npz")
    q = np.degrees(ds.q)
    tau = ds.tau.copy()
    tau[1000, 1] = 1e9
    tau[2000:2200, 0] = 100.0                                 # effort limit of joint1
    t = ds.t.copy()
    t[3000:] += 5.0                                           # a 5 s gap
    bad = Dataset(t=t, q=q, tau=tau, joint_names=ds.joint_names)
    bad.save_npz(tmp_path / "bad.npz")
    rc, _ = run_cli(["identify", "--robot", "szabo_3dof", "--data", tmp_path / "bad.npz",
                     "--output", tmp_path / "out" / "r.yaml", "--quiet", "--no-physical",
                     "--force"], capsys, tmp_path / "bad.npz")
    assert rc == 3
    doc = yaml.safe_load((tmp_path / "out" / "r.yaml").read_text())
    assert doc["status"] == "error"
    codes = {d["code"]: d for d in doc["diagnostics"]}
    assert codes["beyond_joint_limits"]["severity"] == "error"
    assert "degrees" in codes["beyond_joint_limits"]["message"]
    assert "torque_outliers" in codes
    assert "effort_saturated" in codes and "joint1" in codes["effort_saturated"]["subject"]
    assert "time_jump" in codes and "5 s" in codes["time_jump"]["message"].replace("5.001", "5")


def test_write_bag_round_trip_still_checks_counts(tmp_path):
    ds = small_dataset(300)
    write_bag(ds, tmp_path / "b")
    assert read_bag(tmp_path / "b", elastic=False).n_samples == 300
