"""Shared fixtures: small spatial test arms written as URDF strings (no files needed)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _random_inertial(rng, mass):
    """A physically valid <inertial> block: random COM, principal moments, orientation."""
    com = rng.uniform(-0.15, 0.15, 3)
    a, b, c = rng.uniform(0.01, 0.2, 3)
    # triangle inequality holds for moments of a box of half-sizes a, b, c
    ixx = mass * (b * b + c * c) / 3
    iyy = mass * (a * a + c * c) / 3
    izz = mass * (a * a + b * b) / 3
    rpy = rng.uniform(-np.pi, np.pi, 3)
    return (f'<inertial><origin xyz="{com[0]:.6f} {com[1]:.6f} {com[2]:.6f}" '
            f'rpy="{rpy[0]:.6f} {rpy[1]:.6f} {rpy[2]:.6f}"/><mass value="{mass:.6f}"/>'
            f'<inertia ixx="{ixx:.8f}" ixy="0" ixz="0" iyy="{iyy:.8f}" iyz="0" izz="{izz:.8f}"/>'
            f'</inertial>')


def spatial_arm_urdf(seed=0, prismatic=True, tool=True):
    """URDF of a 5-joint spatial arm: revolute joints about x/y/z and a skew axis,
    optionally one prismatic joint, a tool link on a fixed joint (merged by pinocchio)
    and a passive joint that the configs leave out (locked)."""
    rng = np.random.default_rng(seed)
    axes = ["0 0 1", "0 1 0", "1 0 0", "0.6 0 0.8", "0 0 1"]
    kinds = ["revolute"] * 5
    if prismatic:
        kinds[2] = "prismatic"
    parts = ['<robot name="spatial_arm"><link name="base_link"/>']
    parent = "base_link"
    for i in range(5):
        xyz = rng.uniform(-0.3, 0.3, 3)
        rpy = rng.uniform(-1, 1, 3)
        parts.append(
            f'<joint name="joint{i + 1}" type="{kinds[i]}"><parent link="{parent}"/>'
            f'<child link="link{i + 1}"/><origin xyz="{xyz[0]:.5f} {xyz[1]:.5f} {xyz[2]:.5f}" '
            f'rpy="{rpy[0]:.5f} {rpy[1]:.5f} {rpy[2]:.5f}"/><axis xyz="{axes[i]}"/>'
            f'<limit lower="-2.5" upper="2.5" velocity="3" effort="200"/></joint>')
        inertial = _random_inertial(rng, rng.uniform(0.5, 5))
        parts.append(f'<link name="link{i + 1}">{inertial}</link>')
        parent = f"link{i + 1}"
    if tool:
        parts.append('<joint name="tool_joint" type="fixed"><parent link="link5"/>'
                     '<child link="tool"/><origin xyz="0 0 0.1" rpy="0 0 0"/></joint>')
        parts.append(f'<link name="tool">{_random_inertial(rng, 0.7)}</link>')
        parts.append('<joint name="finger" type="prismatic"><parent link="tool"/>'
                     '<child link="finger_link"/><origin xyz="0 0 0.05"/><axis xyz="1 0 0"/>'
                     '<limit lower="0" upper="0.04" velocity="0.1" effort="10"/></joint>')
        parts.append(f'<link name="finger_link">{_random_inertial(rng, 0.1)}</link>')
    parts.append("</robot>")
    return "".join(parts)


def spatial_arm_config(model="rigid", friction="coulomb_viscous", offset=True, seed=0,
                       gear=None, coupling="complete", damping=False):
    rng = np.random.default_rng(seed + 100)
    joints = []
    for i in range(5):
        j = {"name": f"joint{i + 1}",
             "gear_ratio": float(gear[i]) if gear is not None else 1.0,
             "limits": {"position": [-2.5, 2.5], "velocity": 3.0},
             "drive": {"rotor_inertia": float(rng.uniform(0.001, 0.01)),
                       "stiffness": float(rng.uniform(500, 3000)),
                       "damping": float(rng.uniform(0.1, 2)),
                       "viscous": float(rng.uniform(0.1, 1)),
                       "coulomb": float(rng.uniform(0.1, 2)),
                       "stiction": float(rng.uniform(0.1, 2)),
                       "stribeck": float(rng.uniform(-0.5, 0.5)),
                       "offset": float(rng.uniform(-1, 1))}}
        joints.append(j)
    return {"name": "spatial_arm", "gravity": [0.3, -0.5, -9.81], "model": model,
            "coupling": coupling, "damping": damping,
            "friction": {"model": friction, "offset": offset}, "joints": joints}


def make_model(model="rigid", prismatic=True, **kw):
    from robot_identification.model import RobotModel, parse_robot_config
    cfg = parse_robot_config(spatial_arm_config(model=model, **kw))
    return RobotModel(cfg, urdf_xml=spatial_arm_urdf(prismatic=prismatic))


@pytest.fixture
def rigid_arm():
    return make_model("rigid")


@pytest.fixture
def elastic_arm():
    return make_model("elastic", prismatic=False, gear=[50.0, 80.0, 0.1, 30.0, 2.0])


#: base -> (ROS domain id, lock file descriptor) held by this test process
_DOMAINS = {}


def ros_domain_id(base):
    """A ROS domain id for a test module: ``base`` shifted by ``$RI_TEST_DOMAIN_OFFSET``
    (default 0) when that domain is free on this machine, else the next free one (1-232).

    Free means that no other test process holds it: each id is held through an exclusive
    lock on ``/tmp/ri_ros_domain_<id>.lock`` until this process exits, so test runs of
    parallel checkouts never share a domain even when their offsets overlap (two runs in one
    domain see each other's /clock, states, commands and /diagnostics: a lockstep run
    ended early on another graph's clock or controller fault). The same ``base`` gives the
    same id within one process."""
    import fcntl
    import tempfile
    if base in _DOMAINS:
        return _DOMAINS[base][0]
    wanted = int(base) + int(os.environ.get("RI_TEST_DOMAIN_OFFSET", "0"))
    taken = {d for d, _ in _DOMAINS.values()}
    # one folder for every test process on the machine, whatever its $TMPDIR
    folder = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    for k in range(232):
        domain = (wanted - 1 + k) % 232 + 1          # 1..232 (0: the default domain)
        if domain in taken:
            continue
        path = os.path.join(folder, f"ri_ros_domain_{domain}.lock")
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _DOMAINS[base] = (domain, fd)
        return domain
    raise RuntimeError("no free ROS domain id (1-232) on this machine")


@pytest.fixture(scope="module")
def context(request):
    """An rclpy context on the test module's own ``DOMAIN_ID``, discovery on localhost only."""
    rclpy = pytest.importorskip("rclpy")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=request.module.DOMAIN_ID)
    yield ctx
    rclpy.shutdown(context=ctx)


def _input_digest():
    """sha256 of every shipped input (robot configs, URDFs) and of the shared data sets."""
    import hashlib
    roots = [REPO / "config" / "robots", REPO / "urdf", SHARED / "data"]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for r in roots if r.is_dir() for p in sorted(r.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def inputs_never_modified():
    """No command in any test may modify a shipped robot config, URDF or shared data set."""
    before = _input_digest()
    yield
    after = _input_digest()
    changed = sorted(k for k in before if k in after and before[k] != after[k])
    assert not changed, f"tests modified input files: {changed}"


# -- launch tests -------------------------------------------------------------------------
#: one executable per node module (setup.py console_scripts)
NODE_EXECUTABLES = tuple(sorted(p.stem for p in (REPO / "robot_identification" / "nodes")
                                .glob("[a-z]*.py")))


def _launch_stack_missing():
    """Why the launch tests cannot run here ('' when they can)."""
    import importlib.util
    for module in ("launch", "launch_ros", "launch_pytest", "ament_index_python"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (see docs/ros.md, 'Launch tests')"
    return ""


def ament_prefix_of_checkout(root):
    """An ament prefix (temporary directory) that makes this checkout launchable, laid out as
    colcon installs an ament_python package: the package index marker, ``share/<pkg>/``
    (links to launch/, config/, urdf/, package.xml) and ``lib/<pkg>/<node>`` executables
    running this checkout's nodes with this interpreter. Returns its path."""
    import atexit
    import shutil
    import stat
    import tempfile
    prefix = Path(tempfile.mkdtemp(prefix="ri_ament_prefix_"))
    atexit.register(shutil.rmtree, prefix, ignore_errors=True)
    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "robot_identification").touch()
    share = prefix / "share" / "robot_identification"
    share.mkdir()
    for name in ("config", "urdf", "package.xml"):
        (share / name).symlink_to(root / name)
    (share / "launch").mkdir()                  # ros2 launch walks it (no symlinked folders)
    for f in (root / "launch").glob("*.py"):
        (share / "launch" / f.name).symlink_to(f)
    lib = prefix / "lib" / "robot_identification"
    lib.mkdir(parents=True)
    for node in NODE_EXECUTABLES:
        exe = lib / node
        exe.write_text(f'#!/bin/sh\nPYTHONPATH="{root}${{PYTHONPATH:+:$PYTHONPATH}}" exec '
                       f'"{sys.executable}" -m robot_identification.nodes.{node} "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join(
        p for p in (str(prefix), os.environ.get("AMENT_PREFIX_PATH", ""), sys.prefix) if p)
    return prefix


LAUNCH_SKIP_REASON = _launch_stack_missing()
# A module-level skip inside a launch_pytest module confuses its plugin: without the launch
# stack the launch test modules are not collected at all (test_ros_launch_stack.py says why).
collect_ignore_glob = ["test_launch_*.py"] if LAUNCH_SKIP_REASON else []
if not LAUNCH_SKIP_REASON:
    AMENT_PREFIX = ament_prefix_of_checkout(REPO)


def digest(folder):
    """sha256 of every file under ``folder`` (relative path -> hex digest)."""
    import hashlib
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def run_cli(argv, capsys, folder):
    """Exit code and stderr of the CLI; asserts that nothing in ``folder`` changed."""
    from robot_identification import cli
    before = digest(folder)
    rc = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert digest(folder) == before, "an input file was modified"
    return rc, err


def assert_one_line(rc, err, *needles):
    """A refused input: exit code 2, one line on stderr (no traceback) holding ``needles``."""
    assert rc == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def recorder_receives(status, topics=("/joint_states",)):
    """The recorder's ``~/status`` message says each of ``topics`` delivered a message (it
    counts while idle too): its subscriptions matched. Tests await this before a short run
    starts, as discovery on a loaded machine can take longer than the run."""
    counts = dict(part.rsplit(": ", 1) for part in
                  status.split("received ", 1)[1].split(";")[0].split(", "))
    return all(int(counts.get(t, "0")) > 0 for t in topics)


#: Readiness waits (a node to start, a service to answer, a message to arrive, a run to end)
#: poll their condition and give up only after their nominal bound x this factor: a loaded
#: machine makes them slower, never wrong (two 60-180 s bounds failed under load before).
#: RI_TEST_PATIENCE overrides it; the conditions, not the bounds, end the waits.
PATIENCE = float(os.environ.get("RI_TEST_PATIENCE", "5"))


def patience(seconds):
    """The bound [s] of a readiness wait whose nominal bound is ``seconds``."""
    return float(seconds) * PATIENCE


def wait_until(ex, cond, what="condition", timeout=30.0, step=0.01):
    """Spin executor ``ex`` until ``cond()`` is true; fails naming ``what`` after
    ``patience(timeout)`` s (a readiness wait, no fixed sleep)."""
    end = time.monotonic() + patience(timeout)
    while not cond():
        assert time.monotonic() < end, f"timed out: {what}"
        ex.spin_once(timeout_sec=step)


#: answers of a ``~/start`` service to a repeated request: the first one was carried out
REPEAT_ANSWERS = ("already running", "already recording")


def call_service(spin_once, node, name, srv=None, request=None, timeout=60.0, resend=None):
    """The answer of service ``name`` called from ``node`` (``spin_once()`` spins its
    executor); fails after ``patience(timeout)`` s without one.

    Fast DDS drops an answer sent before the server has matched the client's answer reader
    ("client will not receive response", ros2/rmw_fastrtps#842): discovery on a loaded machine
    lags, and a quick answer is lost - the caller would wait forever (seen: ``~/start`` never
    answered in 600 s). So one client per (node, service) is kept, and a request without an
    answer after ``patience(resend)`` s is sent again; only where a repeat is harmless: by
    default (``resend=None``) after 10 s for std_srvs/Trigger ``*/status`` and ``*/start``
    services, whose repeat answers 'already running' / 'already recording' when the first
    request was carried out (taken as its success); never for the others (``stop`` and
    ``identify`` answer after long work, when discovery is long over)."""
    from std_srvs.srv import Trigger
    srv = srv or Trigger
    if resend is None and srv is Trigger and name.rsplit("/", 1)[-1] in ("status", "start"):
        resend = 10.0
    clients = node.__dict__.setdefault("_ri_test_clients", {})
    cli = clients.get((srv, name))
    if cli is None:
        cli = clients[(srv, name)] = node.create_client(srv, name)
    end = time.monotonic() + patience(timeout)
    while not cli.service_is_ready():
        assert time.monotonic() < end, f"service {name} never appeared"
        spin_once()
    futures, sent = [], None
    while True:
        if sent is None or (resend and time.monotonic() - sent > patience(resend)):
            futures.append(cli.call_async(request or srv.Request()))
            sent = time.monotonic()
        done = [f for f in futures if f.done()]
        if done:
            break
        assert time.monotonic() < end, f"no answer of {name} in {patience(timeout):.0f} s"
        spin_once()
    for f in futures:
        if not f.done():
            cli.remove_pending_request(f)
    answer = done[0].result()
    if (len(futures) > 1 and done[0] is not futures[0] and srv is Trigger
            and not answer.success and answer.message.startswith(REPEAT_ANSWERS)):
        answer = Trigger.Response(success=True, message=f"{answer.message} (the answer to a "
                                                        f"repeated request: the first was lost)")
    return answer


def run_lockstep_excitation(executor, node, call, wait_s=120.0, run_s=120.0):
    """Start a launched graph's excitation once the recorder receives the robot's link and
    motor states (:func:`recorder_receives`), then await the end of the run: the latched
    ``/excitation_publisher/active`` going true, then false. ``call(executor, node, name)``
    calls a std_srvs/Trigger service; ``wait_s`` bounds the wait for the recorder [s],
    ``run_s`` the time the robot's clock may stand still during the run
    (:func:`await_lockstep_end`)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import Bool
    deadline = time.monotonic() + patience(wait_s)
    while not recorder_receives(call(executor, node, "/recorder/status").message,
                                ("/joint_states", "/motor_states")):
        assert time.monotonic() < deadline, "the recorder never received the states"
        executor.spin_once(timeout_sec=0.1)
    assert call(executor, node, "/excitation_publisher/start").success
    active = []
    node.create_subscription(
        Bool, "/excitation_publisher/active", lambda m: active.append(m.data),
        QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    await_lockstep_end(lambda: executor.spin_once(timeout_sec=0.1), node, active, run_s)


def await_lockstep_end(spin_once, node, active, stall_s=120.0):
    """Await the end of a lockstep run (``active``: the values of the latched
    ``/excitation_publisher/active``, True then False) while it makes progress: fails only
    when the robot's ``/clock`` stood still for ``stall_s`` s of wall time. A loaded machine
    makes a lockstep run slower, never a failure; a stalled one still fails."""
    from rosgraph_msgs.msg import Clock
    clock = [None]
    sub = node.create_subscription(Clock, "/clock", lambda m: clock.__setitem__(
        0, (m.clock.sec, m.clock.nanosec)), 10)
    seen, deadline = None, time.monotonic() + patience(stall_s)
    try:
        while not (active and active[-1] is False and True in active):
            if clock[0] != seen:
                seen, deadline = clock[0], time.monotonic() + patience(stall_s)
            assert time.monotonic() < deadline, (f"the robot's /clock stood still at {seen} "
                                                 f"for {stall_s} s", active)
            spin_once()
    finally:
        node.destroy_subscription(sub)


def pytest_collection_modifyitems(config, items):
    """Test tiers: a test that uses the ``context`` fixture (rclpy over DDS), or lives in a
    module that imports rclpy, is marked ``ros``; a launch_pytest test ``launch``; so that
    ``pytest -m "not slow and not ros and not launch"`` (the fast tier, README) never
    starts DDS even where a module forgot its marker."""
    for item in items:
        module = getattr(item, "module", None)
        names = vars(module) if module is not None else {}
        if "context" in getattr(item, "fixturenames", ()) or "rclpy" in names:
            item.add_marker(pytest.mark.ros)
        if "launch_pytest" in names:
            item.add_marker(pytest.mark.launch)
        elif item.path.name.startswith("test_launch_"):
            # a plain test driving `ros2 launch`: not 'launch', which launch_pytest's plugin
            # runs as a launch test (AttributeError: no launch fixture)
            item.add_marker(pytest.mark.ros)
