"""Study: the real-time graph against the hardware-like robot (docs/ros.md, "Measured: the
hardware-like robot").

Each session runs ``ros2 launch robot_identification identification_robot.launch.py
stand_in:=true`` (hardware_robot on the wall clock, the last command applied until a new one,
pd_controller, excitation_publisher, recorder, identifier) for a short Fourier excitation and
measures, from a client node in this process:

- ``runaway``: the largest |dq| / velocity limit seen on /joint_states (a runaway: > 1);
- ``normal`` sessions: the bag's first and last joint state stamps against the excitation's
  first and last reference (in sample periods), lost / missing samples the recorder counted,
  the identifier's error diagnostics, and the held-out torque NRMSE of the identified
  parameters beside the core pipeline's on the same trajectory (simulate + identify, no ROS;
  held-out data: ``simulate(robot, seed=1)``, mean NRMSE over the joints; where the identifier
  refused, its answer: ``identify_message``, also in the summary), the CPU the
  graph's processes used per second of the run (``graph_cpu_cores``) and the excitation's
  start refusals (``start_refused``: reason -> count; the study retries as a user would);
- ``kill_controller`` / ``kill_recorder`` / ``kill_robot``: that node SIGKILLed 1 s into the
  excitation; the time [s] until an ERROR naming the loss reaches /diagnostics, and, where the
  robot side can hold (the robot honours the commands' deadline; not when the robot itself
  was killed), the time until every |dq| < 0.05 rad/s. Both as received by this client
  (``error_after_s``, ``held_after_s``: its own delays under load included) and by the
  messages' header stamps (``error_stamped_after_s``, ``held_stamped_after_s``: when the node
  published them; the same system clock). The ERROR counted is the first one stamped after
  the kill; ERRORs stamped before it (a node starved by the load) are listed apart
  (``errors_stamped_before_kill``). The first ERROR stamped after the kill may be another
  (the robot's brakes on a late command of a controller starved at that moment, when the
  recorder was killed): ``loss_error_*`` is the first one whose message names the loss (its
  watchers' "... silent for", the robot's "command deadline passed" for the controller);
  ``run_stopped``: the excitation publisher ended the run; ``residual_dq_after_end``
  (normal sessions): the largest |dq| [rad/s] of the joint states stamped 1.0-1.5 s after the
  run ended (the arm settling); ``held_max_dq_after``: the largest
  |dq| [rad/s] on the joint states from the first hold to ``HOLD_WATCH`` s after the later of
  that hold and 1 s after the kill; ``settled_stamped_after_s``: from the kill to the first
  state after which every |dq| stays below 0.05 rad/s in that window (None: not settled).

``--jtc``: the joint_trajectory_controller path instead (``use_pd_controller:=false``: no
pd_controller; hardware_robot runs the controller in its own cycle on the trajectory the
excitation publisher sends, ``trajectory_controller_topic``; ``--jtc-scale`` its gains'
bandwidth scale on the core closed loop's; ``normal`` sessions only).

Every session keeps its node logs in its own folder under ``--out`` (default: a new temporary
folder, printed first): ``launch.log`` (the launch's output: every node's stdout/stderr, the
nodes run with ``output=screen``) and ``ros_log/`` (``ROS_LOG_DIR``: rcl's log files of each
node). Each session's line says why a run or a recording stopped early (``stops``: the
recorder's "recording stopped: ..." and the excitation publisher's "excitation stopped: ..."
log lines) and, from the ``/diagnostics`` header stamps this client received, the largest gap
between two consecutive statuses of each node while the run played (``beat_gap_s``: a node
whose gap exceeds ``heartbeat_timeout`` did not run - starved or dead; one whose gap stayed
short was alive, whatever a watcher said) and the largest delay from a status's stamp to its
reception by this client (``beat_delay_s``: published on time, delivered late).

Usage (from the checkout, with the ROS launch tools installed; OPENBLAS_NUM_THREADS=1):

    PYTHONPATH=$PWD python benchmarks/hardware_robot_study.py --runs 10 --busy 0 2 \
        --rates 1000 250 --scenarios normal kill_controller kill_recorder kill_robot

Prints one line per session and a summary per (rate, busy loops, scenario).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: puma560, 4 s: 5 harmonics of 0.25 Hz within 0.9 of the limits (test_launch_robot.py)
EXCITATION = {"type": "fourier", "base_frequency": 0.25, "harmonics": 5, "amplitude": 1.0,
              "seed": 1}
START_OFFSET = 0.05     # rad: the robot starts this far from the first point (move to start)
HELD = 0.05             # rad/s: the arm counts as held below this on every joint
#: [s] the launch arguments of every session
WATCHDOG_TIMEOUT, HEARTBEAT_TIMEOUT = 1.0, 0.5
KILLED = {"kill_controller": "pd_controller", "kill_recorder": "recorder",
          "kill_robot": "hardware_robot"}
#: words of an ERROR message that name the loss of the killed node: its watchers' "<its
#: status> silent for ..." (the joint states for the robot) and, for the controller, the
#: robot's brakes on a passed command deadline (the robot's own watchdog on the commands)
NAMES_LOSS = {"kill_controller": ("pd_controller", "deadline passed"),
              "kill_recorder": ("recorder",), "kill_robot": ("joint_states", "joint states")}
#: [s] after the arm is first held, how long the study watches that it stays held
HOLD_WATCH = 1.0


def ament_prefix():
    """An ament prefix running this checkout's nodes (test/conftest.py's)."""
    sys.path.insert(0, str(ROOT / "test"))
    from conftest import ament_prefix_of_checkout
    return ament_prefix_of_checkout(ROOT)


def trajectory(robot, folder):
    from robot_identification.excitation import save_trajectory, trajectory_from_config
    from robot_identification.model import load_robot
    traj = trajectory_from_config(load_robot(robot), EXCITATION)
    return str(save_trajectory(traj, Path(folder) / f"{robot}_excitation.yaml")), traj


def descendants(pid):
    """(pid, command line) of the processes below ``pid`` (this study's own launch)."""
    out = subprocess.run(["ps", "-eww", "-o", "pid=,ppid=,args="], capture_output=True,
                         text=True).stdout.splitlines()
    rows = [(int(p), int(pp), " ".join(a)) for p, pp, *a in (r.split(None, 2) for r in out)
            if p.isdigit()]
    found, frontier = [], {pid}
    while frontier:
        kids = [(p, a) for p, pp, a in rows if pp in frontier]
        found += kids
        frontier = {p for p, _ in kids}
    return found


def graph_cpu(pid):
    """CPU time [s] (user + system) the processes below ``pid`` used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p, _ in descendants(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue                    # ended meanwhile
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


class Client:
    """rclpy client of one session: services, /diagnostics, /joint_states."""

    def __init__(self, domain, robot):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool

        from robot_identification.model import load_robot
        self.rclpy = rclpy
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, domain_id=domain)
        self.node = rclpy.create_node("study_client", context=self.ctx)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        model = load_robot(robot)
        self.v_max = np.array([j.limits.velocity or np.inf for j in model.config.joints])
        self.names = list(model.joint_names)
        self.errors, self.active, self.status = [], [], {}
        self.stamps = {}            # status name -> header stamps [s] received (its beats)
        self.delays = {}            # status name -> [(stamp, reception - stamp)] [s]
        self.max_ratio, self.last_dq, self.last_dq_time = 0.0, None, None
        self.last_dq_stamp = None
        self.dq_after = None        # [(stamp [s], dq)] collected while not None
        # every status kept (its stamps: beat_gap_s), however long this client is starved
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.on_diag,
                                      QoSProfile(depth=100000))
        any_publisher = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.node.create_subscription(JointState, "/joint_states", self.on_state,
                                      any_publisher)
        self.node.create_subscription(
            Bool, "/excitation_publisher/active", lambda m: self.active.append(m.data),
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def on_diag(self, msg):
        for st in msg.status:
            level = st.level[0] if isinstance(st.level, bytes) else int(st.level)
            self.status[st.name] = (level, st.message, {kv.key: kv.value for kv in st.values})
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            self.stamps.setdefault(st.name, []).append(stamp)
            self.delays.setdefault(st.name, []).append((stamp, time.time() - stamp))
            if level >= 2:
                self.errors.append((time.monotonic(), st.name, st.message,
                                    msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec))

    def on_state(self, msg):
        d = dict(zip(msg.name, msg.velocity))
        dq = np.array([d.get(j, np.nan) for j in self.names])
        self.last_dq, self.last_dq_time = dq, time.monotonic()
        self.last_dq_stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if self.dq_after is not None:
            self.dq_after.append((self.last_dq_stamp, dq))
        if np.all(np.isfinite(dq)):
            self.max_ratio = max(self.max_ratio, float(np.max(np.abs(dq) / self.v_max)))
        else:
            self.max_ratio = np.inf

    def spin_until(self, cond, timeout, what):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(what)
            self.ex.spin_once(timeout_sec=0.02)

    def call(self, name, timeout=120.0):
        """A std_srvs/Trigger service's answer (test/conftest.py's call_service: an answer
        lost in discovery is asked for again where a repeat is harmless)."""
        sys.path.insert(0, str(ROOT / "test"))
        from conftest import PATIENCE, call_service
        try:
            return call_service(lambda: self.ex.spin_once(timeout_sec=0.02), self.node, name,
                                timeout=timeout / PATIENCE)
        except AssertionError as exc:
            raise TimeoutError(f"{name}: {exc}") from None

    def close(self):
        self.ex.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.ctx)


def run_session(robot="puma560", rate=1000.0, scenario="normal", domain=60, busy=0,
                reliability="reliable", depth=10, folder=None, log=print,
                heartbeat_timeout=HEARTBEAT_TIMEOUT, nice=0, feedforward=None, jtc=False,
                jtc_scale=1.0, engine="builtin"):
    """One session (module docstring); returns a dict of its measurements. Its node logs
    stay in ``folder`` (default: a new temporary folder). ``jtc``: the joint_trajectory_
    controller path (hardware_robot's in-cycle controller, gains scaled by ``jtc_scale``).
    ``engine``: the stand-in's physics (``stand_in_engine``; the core pipeline's reference
    is simulated on the same engine)."""
    if jtc and scenario != "normal":
        raise ValueError(f"the joint_trajectory_controller path has no pd_controller: "
                         f"scenario {scenario!r} is for the pd_controller path")
    folder = Path(folder or tempfile.mkdtemp(prefix="ri_hw_study_"))
    folder.mkdir(parents=True, exist_ok=True)
    path, traj = trajectory(robot, folder)
    q0 = [float(x) + START_OFFSET for x in traj.evaluate(0.0)[0][0]]
    params = folder / "params.yaml"
    params.write_text(json.dumps({"hardware_robot": {"ros__parameters": {
        "initial_positions": q0, "joint_states_reliability": reliability,
        "joint_states_depth": depth,
        **({"trajectory_controller_bandwidth_scale": jtc_scale} if jtc else {})}},
        "recorder": {"ros__parameters": {"state_reliability": reliability}},
        # its efforts are the torques held over the preceding period (as simulated_robot's)
        "identifier": {"ros__parameters": {"effort_lag_periods": 0.5}},
        **({} if feedforward is None else
           {"pd_controller": {"ros__parameters": {"feedforward": feedforward}}})}))
    data = folder / "data"
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONUNBUFFERED="1", OPENBLAS_NUM_THREADS="1",
               ROS_LOG_DIR=str(folder / "ros_log"))
    ros2 = Path(sys.executable).with_name("ros2")
    # nice < 0: the whole graph at a higher CPU priority than the busy loops (as a robot PC
    # gives its control processes; needs CAP_SYS_NICE)
    launch = subprocess.Popen(
        (["nice", "-n", str(nice)] if nice else []) + [
         str(ros2), "launch", "robot_identification", "identification_robot.launch.py",
         f"robot:={robot}", f"rate_hz:={rate}", "stand_in:=true", f"trajectory_file:={path}",
         f"data_directory:={data}", f"params_file:={params}",
         f"watchdog_timeout:={WATCHDOG_TIMEOUT}", f"heartbeat_timeout:={heartbeat_timeout}",
         f"stand_in_engine:={engine}",
         *(["use_pd_controller:=false"] if jtc else [])],
        env=env, stdout=(folder / "launch.log").open("w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    loads = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    out = {"robot": robot, "rate": rate, "scenario": scenario, "busy": busy, "nice": nice,
           "feedforward": "default" if feedforward is None else feedforward,
           "mode": f"jtc x{jtc_scale:g}" if jtc else "pd", "engine": engine,
           "qos": f"{reliability}/{depth}", "load": round(os.getloadavg()[0], 1),
           "logs": str(folder)}
    c = None
    run_span = [None, None]         # [s] system times the run was seen active / ended
    try:
        c = Client(domain, robot)
        if not jtc:
            c.spin_until(lambda: c.call("/pd_controller/status").success, 120.0, "controller")
        c.call("/excitation_publisher/stop")    # (idle: refused) the publisher is up
        # refused until the lifecycle manager has activated the recorder ("node inactive")
        c.spin_until(lambda: c.call("/recorder/start").success, 60.0, "recorder start")
        # refused (with the reason) until the arm is ready and the recorder receives the
        # joint states (its subscription matched: discovery); retried as a user would
        answers = []
        c.spin_until(lambda: answers.append(c.call("/excitation_publisher/start"))
                     or answers[-1].success, 60.0, "start")
        refused = {}
        for a in answers[:-1]:
            why = a.message.split(" (")[0].split(": ", 1)[-1][:80]
            refused[why] = refused.get(why, 0) + 1
        if refused:
            out["start_refused"] = refused
        c.spin_until(lambda: c.active and c.active[-1], 30.0, "excitation active")
        run_span[0] = time.time()
        cpu0, wall0 = graph_cpu(launch.pid), time.monotonic()
        if scenario in KILLED:
            t_on = time.monotonic()
            c.spin_until(lambda: time.monotonic() - t_on > 1.0, 5.0, "1 s of excitation")
            victim = [p for p, a in descendants(launch.pid)
                      if f"robot_identification/{KILLED[scenario]}" in a
                      or f"nodes.{KILLED[scenario]}" in a]
            assert victim, KILLED[scenario]
            n_err = len(c.errors)
            c.dq_after = []
            t_kill, t_kill_stamp = time.monotonic(), time.time()
            for p in victim:
                os.kill(p, signal.SIGKILL)
            # the first ERROR stamped after the kill (one stamped before it - the load
            # starving a node - and received after it is not the answer to the kill)
            c.spin_until(lambda: any(e[3] >= t_kill_stamp for e in c.errors[n_err:]), 30.0,
                         "ERROR on /diagnostics")
            early = [e for e in c.errors[n_err:] if e[3] < t_kill_stamp]
            if early:
                out["errors_stamped_before_kill"] = [f"{e[1]}: {e[2][:80]}" for e in early]
            t_err, name, message, err_stamp = next(e for e in c.errors[n_err:]
                                                   if e[3] >= t_kill_stamp)
            # received by this client (its own delays included) / stamped by the node that
            # published it (the graph's own latency; same machine, same system clock)
            out.update(error_after_s=round(t_err - t_kill, 4), error_from=name,
                       error_stamped_after_s=round(err_stamp - t_kill_stamp, 4),
                       error=message[:160])
            if scenario != "kill_robot":
                try:
                    c.spin_until(lambda: c.last_dq_time > t_kill and np.all(
                        np.abs(c.last_dq) < HELD), 10.0, "held")
                    out["held_after_s"] = round(c.last_dq_time - t_kill, 4)
                    out["held_stamped_after_s"] = round(c.last_dq_stamp - t_kill_stamp, 4)
                    # ... and stays held: the states stamped up to HOLD_WATCH s after the
                    # later of the first hold and 1 s after the kill (a brake released, a
                    # hold that oscillates); settled: from the first state after the last
                    # one with a |dq| >= HELD on
                    held_stamp = c.last_dq_stamp
                    until = max(held_stamp, t_kill_stamp + 1.0) + HOLD_WATCH
                    c.spin_until(lambda: c.last_dq_stamp > until, 10.0 + until - time.time(),
                                 "held on")
                    seen = [(t, float(np.max(np.abs(dq)))) for t, dq in c.dq_after
                            if t_kill_stamp <= t <= until]
                    out["held_max_dq_after"] = round(max(v for t, v in seen
                                                         if t >= held_stamp), 4)
                    moving = [i for i, (t, v) in enumerate(seen) if not v < HELD]
                    if not moving:
                        out["settled_stamped_after_s"] = round(seen[0][0] - t_kill_stamp, 4)
                    elif moving[-1] + 1 < len(seen):
                        out["settled_stamped_after_s"] = round(
                            seen[moving[-1] + 1][0] - t_kill_stamp, 4)
                    else:
                        out["settled_stamped_after_s"] = None
                except TimeoutError as exc:
                    out.setdefault("held_after_s", None)
                    out["held_timeout"] = str(exc)
            # the first ERROR stamped after the kill that names the loss (the first ERROR
            # may be another: a brake on a late command of a controller starved meanwhile)
            # and the run's end (the excitation publisher stops a run whose peer is lost)
            words = NAMES_LOSS[scenario]

            def naming():
                return next((e for e in c.errors[n_err:] if e[3] >= t_kill_stamp
                             and any(w in e[2] for w in words)), None)
            try:
                c.spin_until(lambda: naming() is not None and not c.active[-1], 10.0,
                             "an ERROR naming the loss, the run stopped")
            except TimeoutError as exc:
                out["loss_timeout"] = str(exc)
            e = naming()
            if e is not None:
                out.update(loss_error_after_s=round(e[0] - t_kill, 4), loss_error_from=e[1],
                           loss_error_stamped_after_s=round(e[3] - t_kill_stamp, 4),
                           loss_error=e[2][:160])
            out["run_stopped"] = not c.active[-1]
            # ... how: "stopped after ... : <the lost peer> silent ..." - or "finished", when
            # this client, starved behind its queue, saw the run start so late that it killed
            # after the run's end (no run left to stop: not a measurement of the kill)
            out["run_end"] = c.status.get("excitation_publisher: excitation",
                                          (0, "", {}))[1][:160]
            out["runaway_ratio"] = round(c.max_ratio, 3)
            return out
        c.spin_until(lambda: not c.active[-1], 60.0 + 20 * traj.duration, "finished")
        run_span[1] = time.time()
        # the arm after the end: the largest |dq| of the joint states stamped 1.0-1.5 s after
        # the last one received when the run ended (ringing, a slow settling)
        end_stamp, c.dq_after = c.last_dq_stamp, []
        try:
            c.spin_until(lambda: c.last_dq_stamp > end_stamp + 1.5, 10.0, "after the end")
            late = [float(np.max(np.abs(dq))) for t, dq in c.dq_after if t >= end_stamp + 1.0]
            out["residual_dq_after_end"] = round(max(late), 5) if late else None
        except TimeoutError:
            out["residual_dq_after_end"] = None
        c.dq_after = None
        # CPU the graph's processes used per second of the run [cores]
        out["graph_cpu_cores"] = round((graph_cpu(launch.pid) - cpu0)
                                       / (time.monotonic() - wall0), 3)
        stopped = c.call("/recorder/stop")
        out["recorder"] = stopped.message[-300:]
        out["runaway_ratio"] = round(c.max_ratio, 3)
        pd = c.status.get("pd_controller: control loop", (0, "", {}))[2]
        hw_level, hw_message, hw = c.status.get("hardware_robot: hardware", (0, "", {}))
        if jtc:         # the in-cycle controller: a fault is the robot's brakes (ERROR)
            pd = {"faults": int(hw_level >= 2), "gain_scale": hw.get("gain_scale")}
            out["robot_status"] = hw_message[:160]
        out.update(faults=int(pd.get("faults", -1)), gain_scale=pd.get("gain_scale"),
                   loop_delay_max_s=pd.get("loop_delay_max_s"),
                   # commands the robot braked on (deadline passed); deadlines the controller
                   # shortened to the velocity limit; commands whose velocity it clipped
                   late_commands=hw.get("late_commands"),
                   # the physics the stand-in says it ran (the launch argument's effect)
                   robot_engine=hw.get("engine"),
                   shortened_deadlines=pd.get("shortened_deadlines"),
                   velocity_limited=pd.get("velocity_limited_commands"),
                   feedforward_commands=pd.get("feedforward_commands"))
        out.update(bag_and_losses(Path(stopped.message.split(" (")[0]), rate))
        res = c.call("/identifier/identify", timeout=600.0)
        out["identified"] = res.success
        if not res.success:
            out["identify_message"] = res.message[:300]
        if res.success:
            out.update(nrmse(robot, rate, traj, res.message.rsplit("wrote ", 1)[-1].strip(),
                             engine))
        return out
    except Exception as exc:        # noqa: BLE001 - a failed session is a result too
        out["failed"] = f"{type(exc).__name__}: {exc}"
        return out
    finally:
        for p in loads:
            p.kill()
        if c is not None:
            if run_span[0] is not None:
                out["beat_gap_s"] = beat_gaps(c.stamps, *run_span)
                # ... and the largest delay from a status's stamp to its reception here (a
                # status published on time but delivered late: DDS, or this client starved)
                out["beat_delay_s"] = {
                    node: round(max(d for t, d in ds if t >= run_span[0] - 1.0 and (
                        run_span[1] is None or t <= run_span[1])), 3)
                    for node, ds in ((n.split(":")[0], v) for n, v in c.delays.items())
                    if any(t >= run_span[0] - 1.0 and (run_span[1] is None or t <= run_span[1])
                           for t, _ in ds)}
            c.close()
        os.killpg(launch.pid, signal.SIGINT)
        try:
            launch.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait()
        out.update(stop_reasons(folder / "launch.log"))
        log(json.dumps(out))


def beat_gaps(stamps, since, until=None):
    """{node: largest gap [s] between consecutive /diagnostics header stamps of its
    entries stamped while the run played: from 1 s before ``since`` to ``until`` (default:
    all) [s, system time; as the client saw the run start / end]} (its status timer's period
    when it ran; longer when it did not)."""
    per_node = {}
    for name, st in stamps.items():
        per_node.setdefault(name.split(":")[0], []).extend(st)
    gaps = {}
    for node, st in per_node.items():
        st = np.unique([t for t in st if t >= since - 1.0 and (until is None or t <= until)])
        if len(st) > 1:
            gaps[node] = round(float(np.max(np.diff(st))), 3)
    return gaps


#: log lines saying why a run or a recording stopped before its end
STOP_MARKS = ("recording stopped:", "excitation stopped:")


def stop_reasons(launch_log):
    """{'stops': [the log lines of the nodes that stopped a recording or a run early]} (the
    node logs of the session, module docstring); {} when none did."""
    try:
        lines = Path(launch_log).read_text(errors="replace").splitlines()
    except OSError:
        return {}
    stops = [ln.strip()[:300] for ln in lines if any(m in ln for m in STOP_MARKS)]
    return {"stops": stops} if stops else {}


def bag_and_losses(bag, rate):
    """The bag's first/last state stamps against the excitation run [periods], and losses."""
    from robot_identification.data._bag import read_bag
    from robot_identification.diagnostics import check_recording_counts
    ds = read_bag(bag, joint_topic="/joint_states")
    meta = ds.metadata
    first, last = meta["t0"], meta["t0"] + ds.t[-1]
    (name, exc), = meta.get("excitation", {}).items() or [(None, {})]
    start = exc.get("start_stamp_s")
    end = start + exc.get("played_s", 0.0) if start is not None else None
    joint = meta.get("recording", {}).get("/joint_states", {})
    errors = [d.code for d in check_recording_counts(meta.get("recording"))
              if d.severity == "error"]
    return {"bag_start_periods": None if start is None else round((first - start) * rate, 3),
            "bag_end_periods": None if end is None else round((last - end) * rate, 3),
            "samples": ds.n_samples, "lost": joint.get("lost"), "missing": joint.get("missing"),
            "complete": exc.get("complete"), "loss_errors": errors}


@functools.lru_cache(maxsize=None)
def core_pipeline(robot, rate, engine="builtin"):
    """The core pipeline's estimate on the study's trajectory and the held-out data, both
    simulated on the stand-in's ``engine`` (the same for every session of a robot, rate and
    engine: computed once)."""
    from robot_identification.model import load_robot
    from robot_identification.pipeline import identify
    from robot_identification.simulation import simulate
    model = load_robot(robot)
    traj = trajectory(robot, tempfile.mkdtemp(prefix="ri_hw_core_"))[1]
    core = identify(model, simulate(model, trajectory=traj, rate_hz=rate, seed=0,
                                    engine=engine))
    return core, simulate(model, rate_hz=rate, seed=1, engine=engine)


def nrmse(robot, rate, traj, results_file, engine="builtin"):
    from robot_identification.model import load_robot
    from robot_identification.validation import load_estimates, validate
    model = load_robot(robot)
    base, models, _ = load_estimates(results_file, model)
    ros = models[next(k for k in models if k != "nominal")]
    core, held_out = core_pipeline(robot, rate, engine)
    m = validate(model, base, {"ros": ros, "core": core.estimate.values}, [held_out])[0]["models"]
    return {"nrmse": round(m["ros"]["nrmse_mean"], 5),
            "core_nrmse": round(m["core"]["nrmse_mean"], 5)}


def summary(rows):
    """Counts per (rate, busy, scenario, qos)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["rate"], r["busy"], r["scenario"], r["qos"], r.get("nice", 0),
                           str(r.get("feedforward", "default")), r.get("mode", "pd"),
                           r.get("engine", "builtin")),
                          []).append(r)
    for key, rs in sorted(groups.items()):
        failed = [r for r in rs if "failed" in r]
        runaways = sum(1 for r in rs if (r.get("runaway_ratio") or 0) > 1.0)
        line = (f"{key[7]} stand-in, rate {key[0]:g} Hz, busy {key[1]}"
                f"{f', nice {key[4]}' if key[4] else ''}, "
                f"{key[2]}, qos {key[3]}, "
                f"{'feed-forward ' + key[5] if key[6] == 'pd' else key[6]}: {len(rs)} runs, "
                f"{len(failed)} failed, {runaways} runaways, max |dq|/limit "
                f"{max((r.get('runaway_ratio') or 0) for r in rs):.3f}")
        if key[2] == "normal":
            ok = [r for r in rs if "nrmse" in r]
            ratio = [r["nrmse"] / r["core_nrmse"] for r in ok]
            starts = [abs(r["bag_start_periods"]) for r in rs if r.get("bag_start_periods")
                      is not None]
            ends = [abs(r["bag_end_periods"]) for r in rs if r.get("bag_end_periods")
                    is not None]
            delays = [float(r["loop_delay_max_s"]) for r in rs if r.get("loop_delay_max_s")]
            scales = [float(r["gain_scale"]) for r in rs if r.get("gain_scale")]
            line += (f"; within 1.5 x of the core pipeline in {sum(x <= 1.5 for x in ratio)} of "
                     f"{len(rs)}; loop-delay 95 % quantile (largest) "
                     f"{min(delays, default=np.nan):.4f}-{max(delays, default=np.nan):.4f} s, "
                     f"gain scale {min(scales, default=np.nan):.3g}-"
                     f"{max(scales, default=np.nan):.3g}")
            late = [r["residual_dq_after_end"] for r in rs
                    if r.get("residual_dq_after_end") is not None]
            line += (f"; |dq| 1.0-1.5 s after the end at most {max(late, default=np.nan):.4f} "
                     f"rad/s")
            line += (f"; identified {len(ok)}; NRMSE/core max {max(ratio, default=np.nan):.3f}"
                     f" (NRMSE {min((r['nrmse'] for r in ok), default=np.nan):.4f}-"
                     f"{max((r['nrmse'] for r in ok), default=np.nan):.4f}, core "
                     f"{min((r['core_nrmse'] for r in ok), default=np.nan):.4f}); bag start/end "
                     f"off by at most {max(starts, default=np.nan):.2f} / "
                     f"{max(ends, default=np.nan):.2f} periods; lost "
                     f"{sum(r.get('lost') or 0 for r in rs)}, missing "
                     f"{sum(r.get('missing') or 0 for r in rs)}, runs with a loss error "
                     f"{sum(1 for r in rs if r.get('loss_errors'))}")
            refused = [r for r in rs if r.get("identify_message")]
            if refused:     # why (the identifier's answer: its first error diagnostic)
                line += f"; not identified in {len(refused)}: " + " | ".join(
                    r["identify_message"][:160] for r in refused)
        else:
            lat = [r["error_after_s"] for r in rs if "error_after_s" in r]
            held = [r.get("held_after_s") for r in rs if "held_after_s" in r]
            line += (f"; ERROR in {len(lat)}, after {min(lat, default=np.nan):.3f}-"
                     f"{max(lat, default=np.nan):.3f} s, within {HEARTBEAT_TIMEOUT:g} s "
                     f"(heartbeat_timeout) in {sum(x <= HEARTBEAT_TIMEOUT for x in lat)}, "
                     f"within {WATCHDOG_TIMEOUT:g} s (watchdog_timeout) in "
                     f"{sum(x <= WATCHDOG_TIMEOUT for x in lat)}")
            if held:
                line += (f"; held in {sum(h is not None for h in held)} of {len(held)} (within"
                         f" 1 s in {sum(h is not None and h <= 1.0 for h in held)}), after "
                         f"at most {max((h for h in held if h is not None), default=np.nan):.3f}"
                         f" s")
            st = [r["error_stamped_after_s"] for r in rs if "error_stamped_after_s" in r]
            if st:      # by the ERROR's own header stamp: the graph's latency, not this client's
                line += (f"; stamped {min(st):.3f}-{max(st):.3f} s after the kill, within "
                         f"{HEARTBEAT_TIMEOUT:g} s in {sum(x <= HEARTBEAT_TIMEOUT for x in st)},"
                         f" within {WATCHDOG_TIMEOUT:g} s in "
                         f"{sum(x <= WATCHDOG_TIMEOUT for x in st)}")
            ls = [r["loss_error_stamped_after_s"] for r in rs
                  if "loss_error_stamped_after_s" in r]
            line += (f"; an ERROR naming the loss in {len(ls)}, stamped "
                     f"{min(ls, default=np.nan):.3f}-{max(ls, default=np.nan):.3f} s after the "
                     f"kill, within {HEARTBEAT_TIMEOUT:g} s in "
                     f"{sum(x <= HEARTBEAT_TIMEOUT for x in ls)}, within {WATCHDOG_TIMEOUT:g}"
                     f" s in {sum(x <= WATCHDOG_TIMEOUT for x in ls)}; run stopped in "
                     f"{sum(1 for r in rs if r.get('run_stopped'))}")
            hs = [r["held_stamped_after_s"] for r in rs if r.get("held_stamped_after_s")
                  is not None]
            if hs:
                after = max((r["held_max_dq_after"] for r in rs if "held_max_dq_after" in r),
                            default=np.nan)
                settled = [r.get("settled_stamped_after_s") for r in rs
                           if "held_max_dq_after" in r]
                line += (f"; held by stamp after at most {max(hs):.3f} s, then |dq| at most "
                         f"{after:.4f} rad/s; settled below {HELD:g} rad/s (by stamp) within"
                         f" 1 s in {sum(x is not None and x <= 1.0 for x in settled)} of "
                         f"{len(settled)}, after at most "
                         f"{max((x for x in settled if x is not None), default=np.nan):.3f} s")
        stops = [r for r in rs if r.get("stops")]
        if stops:       # why (the nodes' own log lines, first of each session)
            line += f"; stopped early in {len(stops)}: " + " | ".join(
                r["stops"][0].split("] ", 1)[-1][:160] for r in stops)
        loads = [r["load"] for r in rs if "load" in r]
        line += f"; load average {min(loads, default=np.nan):g}-{max(loads, default=np.nan):g}"
        print(line, flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", default="puma560")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--rates", type=float, nargs="+", default=[1000.0, 250.0])
    p.add_argument("--busy", type=int, nargs="+", default=[0, 2])
    p.add_argument("--scenarios", nargs="+", default=["normal", *KILLED])
    p.add_argument("--qos", nargs="+", default=["reliable/10"],
                   help="hardware_robot joint_states QoS, e.g. reliable/10 best_effort/10")
    p.add_argument("--domain", type=int, default=61)
    p.add_argument("--nice", type=int, default=0, help="run the launch (every node) under "
                   "`nice -n NICE` (negative: above the busy loops; needs CAP_SYS_NICE)")
    p.add_argument("--out", type=Path, default=None, help="folder of the sessions' node logs "
                   "(one sub-folder per session; default: a new temporary folder)")
    p.add_argument("--jtc", action="store_true", help="the joint_trajectory_controller path "
                   "(use_pd_controller:=false, hardware_robot's in-cycle controller)")
    p.add_argument("--jtc-scale", type=float, default=1.0, help="--jtc: bandwidth scale of "
                   "the in-cycle controller's gains (1: the core closed loop's)")
    p.add_argument("--feedforward", nargs="+", default=["default"],
                   choices=["default", "true", "false"],
                   help="pd_controller feedforward (sessions alternate between the values)")
    p.add_argument("--engine", default="builtin", choices=["builtin", "mujoco"],
                   help="the stand-in's physics (launch argument stand_in_engine); the core "
                   "pipeline's reference is simulated on the same engine")
    args = p.parse_args(argv)
    # SIGTERM: end like Ctrl-C, so that each session's launch and busy loops are ended
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    ament_prefix()
    out = args.out or Path(tempfile.mkdtemp(prefix="ri_hw_study_"))
    print(f"node logs under {out}; stand-in engine {args.engine}", flush=True)
    rows = []
    for rate in args.rates:
        for busy in args.busy:
            for scenario in args.scenarios:
                for qos in args.qos:
                    rel, depth = qos.split("/")
                    for i in range(args.runs):
                        for ff in args.feedforward:     # alternating: the same load
                            session = (f"{rate:g}Hz_busy{busy}_{scenario}_{rel}{depth}_"
                                       + (f"jtc{args.jtc_scale:g}_" if args.jtc else
                                          f"ff-{ff}_") + f"{i:02d}")
                            rows.append(run_session(
                                args.robot, rate, scenario, args.domain, busy, rel,
                                int(depth), nice=args.nice, folder=out / session,
                                feedforward=None if ff == "default" else ff == "true",
                                jtc=args.jtc, jtc_scale=args.jtc_scale,
                                engine=args.engine))
    summary(rows)


if __name__ == "__main__":
    main()
