"""Absurd values and damaged recordings (held-out classes of bad input): each is read correctly
or refused with one line naming the file and the problem (exit 2); inputs never change.

Classes: finite but absurd sample values (1e300: a conic-solver panic), clock jumps in bags
(messages stamped 0 before the clock ran: "out of memory"), SQLite3 recordings whose recorder
was killed (no metadata.yaml: the data were refused), results files whose optional sections
have the wrong type (report tracebacks), a position column that stands still while the
measured velocity moves (a result without the cause), outputs in places that take no new file
(the error named the temporary file), absurd filter orders, harmonics and trajectory lengths
(NaN blamed on the data, "out of memory"), CSVs in UTF-16 without byte-order mark, empty
file arguments (an unset shell variable: another cause was named), bags whose first messages
lack efforts, trajectory files of another robot (the file was not named).
"""
from pathlib import Path

import numpy as np
import pytest
import yaml

import test_unusual_files_and_values
from conftest import assert_one_line, run_cli
from robot_identification import cli
from robot_identification.data import load_dataset

pytestmark = pytest.mark.slow

run = test_unusual_files_and_values.run          # fixture: the szabo_3dof config and a 3 s run

REPO = Path(__file__).resolve().parents[1]


def _in(tmp_path):
    (tmp_path / "in").mkdir(exist_ok=True)
    return tmp_path / "in"


def _identify(run, data, out, *extra):
    return ["identify", "--config", run / "robot.yaml", "--data", data, "--output", out,
            "--quiet", *extra]


# ------------------------------------------------------------------ absurd finite values
@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_absurd_sample_value_is_named(run, tmp_path, capsys, command):
    """One torque sample of 1e300 (finite: the NaN check let it through) overflowed the
    normal equations and the conic solver panicked (PanicException traceback)."""
    ds = load_dataset(run / "run.npz")
    ds.tau[1000, 1] = 1e300
    ds.save_npz(_in(tmp_path) / "spike.npz")
    argv = _identify(run, _in(tmp_path) / "spike.npz", tmp_path / "r.yaml")
    argv[0] = command
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, "spike.npz", "'tau'", "1e+300", "joint2", "t = 1 s")


def test_a_panicking_solver_is_a_failed_attempt():
    """A Rust solver's panic (pyo3 PanicException, a BaseException) is not a traceback: the
    physical estimate tries the next solver, then fails with an IdentificationError."""
    from robot_identification.errors import IdentificationError
    from robot_identification.estimation._physical import _solve

    class PanicException(BaseException):
        pass

    class Problem:
        status = None

        def solve(self, solver):
            raise PanicException("Eigval error: Eigen(1)")

    class X:
        value = None

    with pytest.raises(IdentificationError, match="the solver crashed.*Eigen"):
        _solve(Problem(), X(), "CLARABEL", "physical estimate")


# ------------------------------------------------------------------------------ clock jumps
def _bag(path, stamps_ns, n_joints=3, effort_from=0):
    from robot_identification.data import BagWriter, typestore
    st = typestore()
    T = st.types
    js = "sensor_msgs/msg/JointState"
    w = BagWriter(path, {"/joint_states": js}, flush_period=np.inf)
    for k, ns in enumerate(stamps_ns):
        m = T[js](header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=int(ns) // 10**9, nanosec=int(ns) % 10**9), frame_id=""),
            name=[f"joint{j + 1}" for j in range(n_joints)],
            position=np.sin(k / 100 + np.arange(n_joints)), velocity=np.zeros(0),
            effort=np.cos(k / 70 + np.arange(n_joints)) if k >= effort_from else np.zeros(0))
        w.write("/joint_states", st.serialize_cdr(m, js), 10**9 + k * 10**6)
    w.close()
    return path


@pytest.mark.parametrize("command", ["identify", "identify-stream"])
def test_bag_stamped_zero_before_the_clock_is_named(run, tmp_path, capsys, command):
    """A driver that stamps its first messages 0 (before the clock ran), then in epoch time:
    the uniform resampling grid of 1.7e12 samples ended in "out of memory"."""
    stamps = [0, 1, 2] + [1_700_000_000 * 10**9 + k * 10**6 for k in range(600)]
    _bag(_in(tmp_path) / "bag", stamps)
    argv = _identify(run, _in(tmp_path) / "bag", tmp_path / "r.yaml")
    argv[0] = command
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, "'", "bag'", "1.7e+09 s")
    assert "out of memory" not in err


def test_streaming_a_bag_whose_stamps_are_all_zero_says_so(run, tmp_path, capsys):
    """A driver that never stamps its messages (all stamps 0): identify-stream said 'fewer
    than 2 samples'; it now says the messages repeat one stamp."""
    _bag(_in(tmp_path) / "bag", [0] * 300)
    argv = _identify(run, _in(tmp_path) / "bag", tmp_path / "r.yaml")
    argv[0] = "identify-stream"
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, "bag'", "299 message(s) repeat the stamp")


# ---------------------------------------------------------------- killed SQLite3 recorder
def test_sqlite_recording_without_metadata_is_read(run, tmp_path, capsys):
    """rosbag2's default storage before Iron is SQLite3; a recorder killed before it wrote
    metadata.yaml left 'bag_0.db3' alone, refused as "not a rosbag2 directory": the recorded
    data were lost. It is read (SQLite commits whole transactions) with the
    recording_unclosed warning, and the directory is left as it was (no journal, no -shm)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    from robot_identification.data import typestore
    bag = _in(tmp_path) / "killed"
    st = typestore()
    T = st.types
    js = "sensor_msgs/msg/JointState"
    ds = load_dataset(run / "run.npz")
    w = Writer(bag, version=8, storage_plugin=StoragePlugin.SQLITE3)
    w.open()
    conn = w.add_connection("/joint_states", js, typestore=st)
    for k in range(ds.n_samples):
        ns = 10**9 + int(round(ds.t[k] * 1e9))
        m = T[js](header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""), name=list(ds.joint_names),
            position=ds.q[k].copy(), velocity=np.zeros(0), effort=ds.tau[k].copy())
        w.write(conn, ns, st.serialize_cdr(m, js))
    w.close()
    (bag / "metadata.yaml").unlink()                     # the recorder was killed
    got = load_dataset(bag)
    assert got.n_samples == ds.n_samples and got.metadata["unclosed"]
    np.testing.assert_allclose(got.tau, ds.tau)
    rc, err = run_cli(_identify(run, bag, tmp_path / "r.yaml"), capsys, _in(tmp_path))
    assert rc == 0, err
    codes = [d["code"] for d in yaml.safe_load((tmp_path / "r.yaml").read_text())["diagnostics"]]
    assert "recording_unclosed" in codes
    (bag / "killed.db3").write_bytes(b"not a database" * 100)
    rc, err = run_cli(_identify(run, bag, tmp_path / "r2.yaml"), capsys, _in(tmp_path))
    assert_one_line(rc, err, "killed.db3", "SQLite3", "not a database")


# ------------------------------------------------------------ results sections of any type
@pytest.fixture(scope="module")
def results(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("results2") / "results.yaml"
    assert cli.main([str(a) for a in _identify(run, run / "run.npz", out)]) == 0
    return yaml.safe_load(out.read_text())


def _set(path, value):
    def edit(doc):
        d = doc
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return edit


@pytest.mark.parametrize("path, value, message", [
    (("metrics",), "x", "'metrics' must be a mapping"),
    (("metrics", "condition_number"), "large", "metrics.condition_number must be a number"),
    (("base_parameters", 0, "expression"), 5, "expression must be a string"),
    (("base_parameters", 0, "unit"), None, "unit must be a string"),
    (("base_parameters", 0, "relative_std"), [1], "relative_std must be a number"),
    (("drive_gains",), [10.0, 10.0, 10.0], "'drive_gains' must be a mapping"),
    (("drive_gains",), {"identified": "10"}, "drive_gains.identified must be a list"),
    (("diagnostics", 0, "severity"), ["error"], "'diagnostics' must be a list of mappings"),
    (("estimates", "physical", "min_pseudo_inertia_eigenvalues"), [1.0],
     "min_pseudo_inertia_eigenvalues must be a mapping"),
    (("settings", "velocity_threshold"), "fast", "settings.velocity_threshold must be a"),
])
def test_results_sections_of_the_wrong_type_are_named(run, results, tmp_path, capsys, path,
                                                      value, message):
    """report formatted what read_results had not checked: a hand-edited or foreign
    results.yaml ended in AttributeError / TypeError / ValueError tracebacks (33 of 265
    one-key mutations of a results file)."""
    import copy
    doc = copy.deepcopy(results)
    doc.setdefault("diagnostics", []).append({"code": "c", "severity": "info", "message": "m"})
    _set(path, value)(doc)
    f = _in(tmp_path) / "results.yaml"
    f.write_text(yaml.safe_dump(doc))
    for command in ("report", "validate", "export-urdf"):
        argv = [command, "--config", run / "robot.yaml", "--results", f, "--output",
                tmp_path / ("out.urdf" if command == "export-urdf" else "out"), "--quiet"]
        if command == "validate":
            argv[-3:-3] = ["--data", run / "run.npz"]
        rc, err = run_cli(argv, capsys, _in(tmp_path))
        assert_one_line(rc, err, "results.yaml", message)


def test_physical_estimate_without_standard_parameters_is_named(run, results, tmp_path,
                                                               capsys):
    """export-urdf: 'standard_parameters: null' was a TypeError traceback."""
    import copy
    doc = copy.deepcopy(results)
    doc["estimates"]["physical"]["standard_parameters"] = None
    f = _in(tmp_path) / "results.yaml"
    f.write_text(yaml.safe_dump(doc))
    rc, err = run_cli(["export-urdf", "--config", run / "robot.yaml", "--results", f,
                       "--output", tmp_path / "out.urdf"], capsys, _in(tmp_path))
    assert_one_line(rc, err, "results.yaml", "lacks standard parameters")


# ------------------------------------------------------------------ stuck position column
def test_still_position_with_a_moving_velocity_is_named(run, tmp_path, capsys):
    """A constant position column (an encoder or driver fault, a mapping onto a constant
    field) beside a measured velocity that moves: the velocity check skipped joints whose
    position does not move, and identify wrote a result (negative rotor inertias, torque
    'unexplained') without naming the cause. A joint at rest whose velocity has an offset
    (a drift) stays accepted."""
    from dataclasses import replace
    ds = load_dataset(run / "run.npz")
    ds = replace(ds, dq=np.gradient(ds.q, ds.t, axis=0))          # measured velocities
    assert np.ptp(ds.q[:, 1]) > 0.5
    ds.q[:, 1] = 0.3
    ds.save_npz(_in(tmp_path) / "stuck.npz")
    rc, err = run_cli(_identify(run, _in(tmp_path) / "stuck.npz", tmp_path / "r.yaml"),
                      capsys, _in(tmp_path))
    assert_one_line(rc, err, "stuck.npz", "joint 'joint2' stands still", "stuck position")
    ds.dq[:, 1] = 0.01 + 1e-3 * np.random.default_rng(0).standard_normal(ds.n_samples)
    ds.check_velocities()                       # offset and noise at rest: accepted


# ------------------------------------------------------------------ unwritable output place
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_unwritable_output_names_the_output_not_a_temporary_file(run, tmp_path, capsys):
    """An output in a place that takes no new files (/proc, a read-only mount): the error
    named the hidden temporary file ('/proc/.results.1234.tmp.yaml')."""
    rc, err = run_cli(_identify(run, run / "run.npz", "/proc/results.yaml", "--no-physical"),
                      capsys, _in(tmp_path))
    assert_one_line(rc, err, "'/proc/results.yaml'")
    assert ".tmp" not in err


# ------------------------------------------------------------- absurd sizes in the configs
@pytest.mark.parametrize("section, key, value, command, message", [
    ("identification", "filter_order", 1000, "identify", "filter_order: must be <= 50"),
    ("excitation", "harmonics", 10**8, "simulate", "harmonics: must be <= 1000"),
    ("excitation", "periods", 10**8, "simulate", "periods: 100000000 periods of 10 s"),
])
def test_absurd_sizes_in_the_config_are_named(run, tmp_path, capsys, section, key, value,
                                               command, message):
    """filter_order 1000 made the zero-phase filter return NaN, named as "q: non-finite
    value at sample 0" (the data blamed); 1e8 harmonics or periods ended in "out of
    memory"."""
    cfg = yaml.safe_load((run / "robot.yaml").read_text())
    (cfg["identification"] if section == "identification"
     else cfg["simulation"]["excitation"])[key] = value
    if section == "identification":
        cfg["identification"]["cutoff_hz"] = 5.0
    config = _in(tmp_path) / "robot.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    argv = ["simulate", "--config", config, "--duration", "2", "--output",
            tmp_path / "o.npz", "--quiet"] if command == "simulate" else [
        "identify", "--config", config, "--data", run / "run.npz", "--output",
        tmp_path / "r.yaml", "--quiet"]
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, "robot.yaml", message)


def test_trajectory_file_of_1e8_periods_is_named(run, tmp_path, capsys):
    """A trajectory file lasting 1e9 s (periods or base_frequency wrong) was sampled at
    1 kHz for the limits check: "out of memory", also with --duration 3."""
    traj = _in(tmp_path) / "traj.yaml"
    traj.write_text(yaml.safe_dump({"type": "fourier", "base_frequency": 0.1,
                                    "periods": 10**8, "q0": [0.0, 0.0, 0.0],
                                    "a": [[0.1]] * 3, "b": [[0.0]] * 3}))
    rc, err = run_cli(["simulate", "--config", run / "robot.yaml", "--trajectory", traj,
                       "--duration", "3", "--output", tmp_path / "o.npz", "--quiet"],
                      capsys, _in(tmp_path))
    assert_one_line(rc, err, "traj.yaml", "lasts 1e+09 s, above 3600 s")


# ------------------------------------------------------------------ UTF-16 without BOM
@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_csv_without_byte_order_mark_is_read_whole(run, tmp_path, encoding):
    """A CSV saved as UTF-16 without byte-order mark (every other byte 0) decoded as UTF-8
    into lines of "non-numeric fields": refused as holding no numeric data row."""
    from robot_identification.model import load_robot
    ds = load_dataset(run / "run.npz")
    rows = [",".join(f"{v:.9g}" for v in r) for r in np.column_stack([ds.t, ds.q, ds.tau])]
    (tmp_path / "x.csv").write_bytes("\n".join(rows).encode(encoding))
    got = load_dataset(tmp_path / "x.csv", model=load_robot(config=run / "robot.yaml"))
    assert got.n_samples == len(rows) and not got.metadata["malformed_rows"]
    np.testing.assert_allclose(got.tau, np.loadtxt(rows, delimiter=",")[:, 4:7])


# ------------------------------------------------------------------ empty file arguments
@pytest.mark.parametrize("option", ["--data", "--config", "--urdf", "--prior", "--output"])
def test_empty_file_argument_is_named(run, tmp_path, capsys, option):
    """--data "$RUN" with RUN unset: '' is the working directory as a path, and the error
    blamed the output ('lies inside the input directory .') or the URDF ('is a
    directory')."""
    argv = _identify(run, run / "run.npz", tmp_path / "r.yaml")
    if option in argv:
        argv[argv.index(option) + 1] = ""
    else:
        argv += [option, ""]
    rc, err = run_cli(argv, capsys, _in(tmp_path))
    assert_one_line(rc, err, f"{option} is an empty string")


# ------------------------------------------------------- efforts missing in some messages
def test_bag_whose_first_messages_lack_efforts_says_which(run, tmp_path, capsys):
    """A driver that fills the effort field once its controller runs: the bag was refused
    as "carry no efforts", as if no message had any."""
    _bag(_in(tmp_path) / "bag", [10**9 + k * 10**6 for k in range(600)], effort_from=50)
    rc, err = run_cli(_identify(run, _in(tmp_path) / "bag", tmp_path / "r.yaml"), capsys,
                      _in(tmp_path))
    assert_one_line(rc, err, "bag'", "50 of 600 messages lack them", "t = 0.049 s")


# ---------------------------------------------------------- trajectory of another robot
def test_trajectory_file_of_another_robot_names_the_file(run, tmp_path, capsys):
    """An excitation file of a 2-joint arm given to a 3-joint robot: 'trajectory has 2
    joints', without the file."""
    traj = _in(tmp_path) / "other_arm.yaml"
    traj.write_text(yaml.safe_dump({"type": "fourier", "base_frequency": 0.2, "periods": 1,
                                    "q0": [0.0, 0.0], "a": [[0.1], [0.1]],
                                    "b": [[0.0], [0.0]]}))
    rc, err = run_cli(["simulate", "--config", run / "robot.yaml", "--trajectory", traj,
                       "--duration", "2", "--output", tmp_path / "o.npz", "--quiet"],
                      capsys, _in(tmp_path))
    assert_one_line(rc, err, "trajectory file '", "other_arm.yaml' has 2 joints", "has 3")


def test_joints_the_config_lacks_that_move_are_named(tmp_path):
    """Data of a bigger arm (a joint the config does not list moves 1 rad) given to a config
    of fewer joints: a warning names the file and the joint (validate said nothing, NRMSE
    0.86); a joint the data hold still (0.01 rad) is not named."""
    import warnings
    from dataclasses import replace as _replace

    from robot_identification.commands._common import load_data
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("szabo_3dof")
    run = simulate(model, duration=2.0, seed=0)
    n = len(run.t)
    for span, named in ((1.0, True), (0.01, False)):
        extra = span * np.sin(np.linspace(0, np.pi, n))[:, None]
        ds = _replace(run, q=np.hstack([run.q, extra]), tau=np.hstack([run.tau, 0 * extra]),
                      dq=None if run.dq is None else np.hstack([run.dq, 0 * extra]),
                      ddq=None, joint_names=tuple(run.joint_names) + ("wrist_x",))
        path = ds.save_npz(tmp_path / f"bigger_{span}.npz")
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            load_data(path, model)
        said = [str(w.message) for w in got if "not in the robot config" in str(w.message)]
        assert bool(said) == named
        if named:
            assert "wrist_x (1)" in said[0] and str(path) in said[0]


def test_drive_gains_with_one_run_as_unloaded_and_loaded_is_named(tmp_path, capsys):
    """The same file (or a copy) as --unloaded and --loaded: refused in one line naming it,
    not 'gains not positive' after the fit."""
    src = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "ur10e"
    run = src / "identification" / "ur-20_02_19_14harm50sec.csv"
    if not run.is_file():
        pytest.skip("shared UR10e data not found")
    copy = tmp_path / "copy.csv"
    copy.write_bytes(run.read_bytes())
    for loaded in (run, copy):
        rc, err = run_cli(["drive-gains", "--robot", "ur10e", "--payload-mass", "2.8",
                           "--unloaded", str(run), "--loaded", str(loaded)], capsys, tmp_path)
        assert_one_line(rc, err, "as --unloaded and as --loaded")
