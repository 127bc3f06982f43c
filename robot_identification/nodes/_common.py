"""Shared plumbing of the rclpy nodes: parameters, robot loading, message stamps, main()."""
from __future__ import annotations

import argparse
import faulthandler
import functools
import io
import math
import os
import signal
import sys
import threading
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import (
    FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult)
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.exceptions import InvalidHandle, ParameterUninitializedException
from rclpy.executors import (ExternalShutdownException, MultiThreadedExecutor,
                             SingleThreadedExecutor)
from rclpy.experimental import EventsExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.utilities import remove_ros_args
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from robot_identification.model import load_robot

#: reliable, depth 1000 (1 s at 1 kHz): a briefly stalled subscriber loses nothing
QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
#: best effort, keep the latest only: a real-time controller that fell behind acts on the
#: newest state (bounded delay) instead of working through a backlog; best effort so that it
#: receives from reliable and best-effort publishers alike (a reliable subscription gets
#: nothing from a best-effort joint_states publisher)
LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


def qos(reliability="reliable", depth=10):
    """A QoS profile: ``reliability`` ``reliable`` | ``best_effort``, ``depth`` messages of
    keep-last history (0 = keep all). The defaults are joint_state_broadcaster's publisher
    (rclcpp's SystemDefaultsQoS: reliable, keep last 10, volatile)."""
    rel = (ReliabilityPolicy.BEST_EFFORT if reliability == "best_effort"
           else ReliabilityPolicy.RELIABLE)
    if int(depth) == 0:
        return QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=rel)
    return QoSProfile(depth=int(depth), reliability=rel)


def declare_qos(node, prefix, reliability="reliable", depth=10, what=""):
    """Declare ``<prefix>_reliability`` (reliable | best_effort) and ``<prefix>_depth`` (0 =
    keep all) and return the :func:`qos` profile they give."""
    rel = declare(node, f"{prefix}_reliability", reliability,
                  f"QoS reliability {what}: reliable | best_effort (a reliable subscription "
                  f"receives nothing from a best-effort publisher)",
                  choices=("reliable", "best_effort"), read_only=True)
    dep = declare(node, f"{prefix}_depth", depth, f"QoS keep-last depth {what} (0 = keep "
                  f"all)", low=0, high=1_000_000, read_only=True)
    return qos(rel, dep)


def declare(node, name, default, description, *, low=None, high=None, read_only=False,
            choices=None):
    """Declare a parameter with a descriptor (range, read-only) and return its value.

    ``choices`` (strings) are validated at declaration and on every later change.
    """
    d = ParameterDescriptor(description=description, read_only=read_only)
    if low is not None:
        if isinstance(default, int) and not isinstance(default, bool):
            d.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=0)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(low),
                                                         to_value=float(high), step=0.0)]
    value = node.declare_parameter(name, default, d).value
    if choices is not None:
        allowed = tuple(choices)
        _add_check(node, name, lambda v: None if v in allowed
                   else f"{name} must be one of {list(allowed)}")
        if value not in allowed:
            raise ValueError(f"parameter '{name}' = {value!r}; expected one of {list(allowed)}")
    return value


def declare_optional(node, name, ptype, description, *, low=None, high=None, length=None,
                     choices=None, read_only=False):
    """Declare a typed parameter with no default; its value, or ``None`` when not given.

    "Not given" means the robot config's value: no sentinel (``-1.0``, all-zero gains).
    A given value is checked at declaration and on every later change (a bad change is
    refused with the reason).

    Parameters
    ----------
    ptype : rclpy.Parameter.Type
        e.g. ``Parameter.Type.DOUBLE`` or ``Parameter.Type.DOUBLE_ARRAY``.
    low, high : float, optional
        Allowed range of the value (of every element of an array).
    length : int, optional
        Required length of an array value.
    choices : sequence of str, optional
        Allowed values.

    Raises
    ------
    ValueError
        A given value outside ``[low, high]``, of the wrong length or not one of
        ``choices`` (one line, naming it).
    """
    node.declare_parameter(name, ptype, ParameterDescriptor(description=description,
                                                            read_only=read_only))

    def check(value):
        if value is None:
            return None
        if choices is not None and value not in choices:
            return f"parameter '{name}' = {value!r}; expected one of {list(choices)}"
        values = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") \
            else [value]
        if length is not None and len(values) != length:
            return f"parameter '{name}' has {len(values)} values; expected {length}"
        if low is not None and not all(low <= float(v) <= high for v in values):
            return f"parameter '{name}' = {value!r}; expected values in [{low}, {high}]"
        return None
    _add_check(node, name, check)
    value = optional_value(node, name)
    reason = check(value)
    if reason is not None:
        raise ValueError(reason)
    return value


def optional_value(node, name):
    """A declared parameter's value, ``None`` while it is unset (a parameter declared with
    :func:`declare_optional` and not given)."""
    try:
        return node.get_parameter(name).value
    except ParameterUninitializedException:
        return None


def _add_check(node, name, check):
    """Validate ``name`` on every change: ``check(value)`` -> reason or None (one
    on-set-parameters callback per node)."""
    checks = getattr(node, "_param_checks", None)
    if checks is None:
        checks = node._param_checks = {}
        node.add_on_set_parameters_callback(lambda ps: _run_checks(checks, ps))
    checks[name] = check


def _run_checks(checks, params):
    for p in params:
        check = checks.get(p.name)
        reason = check(p.value) if check is not None else None
        if reason:
            return SetParametersResult(successful=False, reason=reason)
    return SetParametersResult(successful=True)


def declare_robot(node):
    """Declare ``robot`` / ``robot_config`` / ``urdf`` and load the RobotModel."""
    robot = declare(node, "robot", "zollo_planar", "shipped robot (config/robots/<robot>.yaml)",
                    read_only=True)
    config = declare(node, "robot_config", "", "robot config YAML path (overrides robot); "
                     "'' = not given: the shipped robot's", read_only=True)
    urdf = declare(node, "urdf", "", "URDF/xacro path overriding the config's; '' = not given: "
                   "the config's urdf", read_only=True)
    return load_robot(None if config else robot, config=config or None, urdf=urdf or None)


class Managed:
    """Lifecycle (managed node) behaviour shared by pd_controller, excitation_publisher and
    recorder (mixed into an ``rclpy.lifecycle.LifecycleNode``).

    ``managed: false`` (default; ``ros2 run``, tests, the demo): the node configures and
    activates itself at start-up. ``managed: true`` (the launch files): it waits in
    ``unconfigured`` for a lifecycle manager (``ros2 lifecycle set <node> configure``, then
    ``activate``; launch_ros ``LifecycleNode`` events). :attr:`lifecycle` is the current
    state's label; the node's ``on_active(bool)`` is called on activation/deactivation."""

    lifecycle = "unconfigured"

    def start_lifecycle(self):
        managed = declare(self, "managed", False, "true: wait for configure/activate from a "
                          "lifecycle manager (launch files); false: activate at start-up",
                          read_only=True)
        if not managed:
            self.trigger_configure()
            self.trigger_activate()

    def on_configure(self, state):
        self.lifecycle = "inactive"
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self.lifecycle = "active"
        self.on_active(True)
        return super().on_activate(state)

    def on_deactivate(self, state):
        self.lifecycle = "inactive"
        self.on_active(False)
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self.lifecycle = "unconfigured"
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        if self.lifecycle == "active":
            self.on_active(False)
        self.lifecycle = "finalized"
        return TransitionCallbackReturn.SUCCESS

    def on_active(self, active):
        """Called with True on activation, False on deactivation (override)."""


def serialized(method):
    """Run a node's method under the node's ``state_lock`` (a :class:`threading.RLock`): the
    executor's callbacks that read or change what a :class:`PeerWatchdogs` check changes
    (a run, a recording) are decorated with it, since that check may run in the watchdogs'
    own thread."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self.state_lock:
            return method(self, *args, **kwargs)
    return run


class PeerWatchdogs:
    """Notice a silent peer at its first missed deadline: one steady-clock timer per peer of
    a :class:`~._heartbeat.HeartbeatMonitor`, with the monitor's timeout as its period and
    reset by every beat of that peer, so that it fires when the peer has been silent for the
    timeout - not at the next run of a periodic check, up to one check period later (the
    ERROR then came 0.5-0.6 s after a kill with a 0.5 s timeout). ``on_silent()`` (the
    node's check, which asks the monitor who is silent) runs when a timer fires.

    Those timers run on the node's executor. An executor that cannot run misses them: after
    a peer process was SIGKILLed, Fast DDS's event thread waited about 1 s (up to 3 s) for
    the dead process's shared-memory port lock while holding a reader's lock, and the
    executor's ``rcl_wait`` waited for that reader lock (gdb stacks, docs/ros.md, "The kill
    matrix after the watchdog drain fix"): the verdict on the dead peer came 1-3 s late. So a
    thread of its own (steady clock, ``time.monotonic()``) also watches: it calls
    ``on_silent()`` itself when a peer is silent for the timeout while the executor has not
    run for ``stuck_after`` s (a timer of this class on the executor stamps its runs every
    ``poll`` s), the executor's thread was asleep (blocked) at every check meanwhile, and the
    thread itself ran on time. Otherwise it leaves the verdict to the executor, which judges
    after taking the queued beats (below), so that a starved node does not report a live
    peer whose beats wait in DDS: a thread that woke more than ``poll`` s late was starved
    with its process (or blocked: by a call holding Python's GIL, as rclpy's publish and take
    do, or waiting for ``lock``, held by one of the node's callbacks), and an executor thread
    seen runnable (Linux ``/proc/self/task/<tid>/stat`` state R; not readable elsewhere:
    never a verdict from the thread) waits for a CPU - on 2 cores at load 13 a sleeping
    thread is scheduled at once while a busy one waits: without that check the thread
    stopped a run whose controller was alive (kill matrix, docs/ros.md). ``on_silent()``
    always runs under ``lock``: the node's callbacks that touch what it changes take the
    same lock (:func:`serialized`).

    Beats that carry a stamp are also judged by it (:class:`~._heartbeat.HeartbeatMonitor`):
    the node passes every status it receives to :meth:`heard` (its reception frontier: the
    newest stamp of another node), and a peer silent by arrival whose latest stamp is within
    the timeout of that frontier is not reported yet - the watcher itself is behind (a
    recorder received a live controller's statuses 0.7 s late and stopped its run,
    docs/ros.md, "Heartbeats"). Its timer keeps its period: it fires again at twice the
    timeout (the monitor's ``bound``: lost whatever the stamps say), and a newer status that
    leaves the peer's stamp more than the timeout behind brings the check forward. The
    thread's verdicts (a stuck executor takes no messages) go by arrival alone.

    Parameters
    ----------
    node : rclpy.node.Node
    monitor : HeartbeatMonitor
        Its ``timeout`` [s] (0: no timers, no thread).
    on_silent : callable
        Called without arguments when a peer's timer fires, or from the thread (above).
    carriers : list of rclpy.subscription.Subscription
        Subscriptions whose messages carry beats among other messages (``/diagnostics``: every
        node's status) and whose callbacks take the message only: before ``on_silent``, what
        DDS already holds for them is taken and handled (appendable after construction; not
        by the thread: a stuck executor's readers are locked).
    lock : threading.RLock, optional
        The node's ``state_lock`` (default: a new one).
    """

    def __init__(self, node, monitor, on_silent, carriers=(), lock=None):
        self.node, self.monitor, self.on_silent = node, monitor, on_silent
        self.timers = {}
        self.carriers = list(carriers)
        self.waiting = set()        # peers whose timer fired, not heard of since
        self._judge_due = False     # a check is queued on the executor
        self.taken = 0              # messages taken from the carriers by the latest check
        self.clock = RosClock(clock_type=ClockType.STEADY_TIME)
        self.lock = threading.RLock() if lock is None else lock
        self.executor_ran = time.monotonic()    # the executor's latest run (steady [s])
        self.stuck_for = None       # [s] the executor had not run, at the thread's verdict
        self.thread_verdicts = 0    # on_silent calls by the thread
        self.late_wakeups = 0       # the thread's wake-ups at least stuck_after s late
        self.runnable_checks = 0    # checks that found a late executor's thread runnable
        self.executor_tid = None    # native id of the thread that runs the executor
        self._stop = threading.Event()
        self.thread = None
        if self.monitor.timeout > 0:
            #: [s] the thread's check period and the executor's stamp period
            self.poll = min(max(self.monitor.timeout / 10.0, 0.005), 0.05)
            #: [s] executor silence (while the thread ran on time) that makes it stuck
            self.stuck_after = max(self.monitor.timeout / 2.0, 3.0 * self.poll)
            node.create_timer(self.poll, self._executor_runs, clock=self.clock)
            self.thread = threading.Thread(target=self._watch, daemon=True,
                                           name=f"{node.get_name()} peer watchdogs")
            self.thread.start()

    def close(self):
        """Stop the thread (it also ends once the node is destroyed)."""
        self._stop.set()

    def _executor_runs(self):
        self.executor_ran = time.monotonic()
        self.executor_tid = threading.get_native_id()

    def beat(self, peer, now=None, stamp=None):
        """``peer`` was heard of at ``now`` (default: now, ``time.monotonic()`` [s]), by a
        message with header ``stamp`` [s, the publisher's clock] if given (judged against the
        frontier, :meth:`heard`; :meth:`evidence`). Called by the executor's callbacks."""
        t = time.monotonic()
        with self.lock:
            self.executor_ran = t
            self.monitor.beat(peer, t if now is None else now, stamp)
            self.waiting.discard(peer)
        if self.monitor.timeout <= 0:
            return
        timer = self.timers.get(peer)
        if timer is None:
            self.timers[peer] = self.node.create_timer(
                self.monitor.timeout, lambda: self._fire(peer), clock=self.clock)
        else:
            timer.reset()

    def heard(self, msg):
        """A ``/diagnostics`` message (DiagnosticArray) was received: its header stamp
        advances the frontier unless all its statuses are this node's own (delivered within
        the process, they are not behind when the node's reception is). A peer waiting for
        a verdict that the frontier left more than the timeout behind is judged now."""
        own = f"{self.node.get_name()}: "
        if all(st.name.startswith(own) for st in msg.status):
            return
        with self.lock:
            self.monitor.heard(to_sec(msg.header.stamp))
            if not self.waiting or not any(
                    p not in self.monitor.reported
                    for p, _ in self.monitor.silent(time.monotonic(), self.waiting)):
                return
        self._check()

    def _fire(self, peer):
        if peer in self.monitor.reported:
            self.timers[peer].cancel()  # until the peer is heard of again
            return
        self.waiting.add(peer)          # its timer keeps going: the bound (class docstring)
        self._check()

    def _check(self):
        executor = self.node.executor
        if isinstance(executor, (SingleThreadedExecutor, MultiThreadedExecutor)):
            # A starved node wakes with this timer expired and the peer's queued messages
            # ready in the same wait; rclpy's Python executors run a node's ready timers
            # before its subscriptions, so deciding here would miss those messages and
            # report a live peer lost. As a task, the check runs once this wake-up's
            # callbacks are done (executors yield pending tasks before waiting again). That
            # wake-up took ONE message per ready subscription: a beat queued behind other
            # nodes' statuses on /diagnostics (about 60 a second in the launch graph) is
            # still in DDS, so the check first takes what the carriers hold. The
            # EventsExecutor runs events in the order they happened: no such case.
            if not self._judge_due:
                self._judge_due = True
                executor.create_task(self._judge)
        else:
            with self.lock:
                self.stuck_for = None
                self.on_silent()

    def _judge(self):
        with self.lock:
            try:
                self.taken = 0
                self.stuck_for = None
                if isinstance(self.node.executor, SingleThreadedExecutor):
                    # (a MultiThreadedExecutor could run those callbacks in another thread)
                    for sub in self.carriers:
                        self.taken += self._take_queued(sub)
                self.on_silent()
            finally:
                self._judge_due = False

    def _watch(self):
        """The thread (see the class docstring): every ``poll`` s, a verdict when the executor
        is stuck and a peer is silent."""
        awake_since = due = time.monotonic()
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            with self.lock:
                now = time.monotonic()
                if now - due > self.poll:       # this thread was late: starved, or blocked
                    awake_since = now           # (GIL, the node's callbacks held the lock)
                    if now - due >= self.stuck_after:
                        self.late_wakeups += 1
                        self.node.get_logger().warning(
                            f"peer watchdogs' thread ran {now - due:.3f} s late (this process "
                            f"starved of CPU, or blocked in a call that holds Python's GIL: "
                            f"rclpy's publish and take do)", throttle_duration_sec=1.0)
                due = now + self.poll
                if not self._alive():
                    return
                if now - self.executor_ran > self.poll and self._runnable(self.executor_tid):
                    awake_since = now       # the executor's thread waits for a CPU: starved
                    self.runnable_checks += 1
                quiet = now - max(self.executor_ran, awake_since)
                if quiet < self.stuck_after:
                    continue
                self.monitor.arrival_only = True    # a stuck executor takes no messages
                try:
                    if not any(p not in self.monitor.reported
                               for p, _ in self.monitor.silent(now)):
                        continue
                    self.stuck_for, self.taken = now - self.executor_ran, 0
                    reported = set(self.monitor.reported)
                    try:
                        self.on_silent()
                    except Exception as exc:       # noqa: BLE001 - e.g. destroyed meanwhile
                        if not self._alive():
                            return
                        self.node.get_logger().error(f"peer watchdogs' thread: {exc!r}")
                    if self.monitor.reported != reported:
                        self.thread_verdicts += 1
                    self.stuck_for = None
                finally:
                    self.monitor.arrival_only = False

    @staticmethod
    def _runnable(tid) -> bool:
        """Whether thread ``tid`` of this process is running or waiting for a CPU (Linux
        ``/proc/self/task/<tid>/stat`` state R); True where that cannot be read (no verdict
        from the thread: the executor's own checks decide)."""
        if tid is None:
            return True
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                return f.read().rsplit(b")", 1)[1].split()[0] == b"R"
        except (OSError, IndexError):
            return True

    def _alive(self) -> bool:
        try:
            with self.node.handle:
                return self.node.context.ok()
        except InvalidHandle:
            return False

    def reason(self, lost) -> str:
        """The ERROR text for ``lost`` peers, [(peer, seconds silent)]: each with the
        timeout and its :meth:`evidence`."""
        return "; ".join(f"{p} silent for {age:.3f} s (heartbeat_timeout "
                         f"{self.monitor.timeout:g} s{self.evidence(p)})" for p, age in lost)

    def evidence(self, peer) -> str:
        """What tells a silent watcher from a silent peer, for a lost peer's ERROR: how old
        the peer's latest beat heard of was by its header stamp (a peer that published on
        time but was not heard shows it: its stamp is younger than the silence), how far the
        newest stamp heard of from another node is past it, and how many queued messages the
        check took first."""
        if self.stuck_for is not None:
            out = (f"; judged by the watchdogs' thread: this node's executor had not run "
                   f"for {self.stuck_for:.3f} s")
        else:
            out = f"; {self.taken} queued status(es) taken before judging"
        lag = self.monitor.lag(peer)
        if lag is not None:
            out = (f"; its latest beat heard of stamped "
                   f"{time.time() - self.monitor.stamps[peer]:.3f} s ago, the newest status "
                   f"heard of {lag:.3f} s after it{out}")
        return out

    @staticmethod
    def _take_queued(sub) -> int:
        """Handle the messages DDS holds for ``sub`` now (at most its history depth, or
        1000 for keep-all: bounded, while a fast publisher keeps sending); returns how
        many."""
        for n in range(sub.qos_profile.depth or 1000):
            try:
                with sub.handle:
                    taken = sub.handle.take_message(sub.msg_type, sub.raw)
            except InvalidHandle:       # destroyed meanwhile
                return n
            if taken is None:
                return n
            sub.callback(taken[0])
        return sub.qos_profile.depth or 1000


def to_sec(stamp) -> float:
    """builtin_interfaces/Time -> seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def publish_live(node, publisher, msg):
    """``publisher.publish(msg)``, quiet once ``node``'s context is shut down.

    Ctrl-C: rclpy's SIGINT handler shuts the context down between two bytecodes of the
    callback running on the main thread; that callback's next ``publish`` then fails with
    'publisher's context is invalid', which rclpy's executor logs as "[FATAL] Exception in
    'timers' callback" with the stack before :func:`main_for` ends the loop quietly (in 24 of
    40 sessions of the hardware-like robot study: the 1 kHz hardware_robot and pd_controller
    callbacks). An error while the context is still up is raised."""
    try:
        publisher.publish(msg)
    except Exception:
        if node.context.ok():
            raise


def to_stamp(t: float, msg_cls):
    """Seconds -> builtin_interfaces/Time (``msg_cls``), rounded to the nanosecond (exact for
    small ``t``; seconds since 1970 as one float64 are quantised to 2.4e-7 s: build such stamps
    with :func:`ns_stamp`)."""
    return ns_stamp(int(round(t * 1e9)), msg_cls)


def ns_stamp(ns: int, msg_cls):
    """Integer nanoseconds -> builtin_interfaces/Time (``msg_cls``), exact."""
    return msg_cls(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def stamp_ns(stamp) -> int:
    """builtin_interfaces/Time -> integer nanoseconds (exact, for matching stamps)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


#: label of an effort command's layout dimension naming the state it answers
#: (``state_stamp_ns=<header stamp of that joint state in ns>``)
STATE_STAMP_LABEL = "state_stamp_ns="
#: label of an effort command's layout dimension giving its deadline
#: (``deadline_ns=<time in ns on the state stamps' clock after which it must not be applied>``)
DEADLINE_LABEL = "deadline_ns="


def command_msg(u, state_ns=None, deadline_ns=None):
    """An effort command (std_msgs/Float64MultiArray, forward_command_controller convention:
    ``data`` = the (n,) torques [N*m]). ``state_ns``: its first layout dimension (size n) is
    labelled with the header stamp [ns] of the joint state it answers, so that a lockstep
    simulated robot steps once per state even when a command is sent twice (the answer to a
    re-published state, :mod:`~robot_identification.nodes.simulated_robot`) and a robot can
    measure the loop delay; ``deadline_ns``: a second dimension (size 1) labelled with the
    time [ns, the states' clock] after which the command must not be applied (a
    hardware-like robot that honours it brakes then, :mod:`.hardware_robot`). Consumers that
    ignore the layout (ros2_control) read the same torques."""
    data = [float(x) for x in u]
    msg = Float64MultiArray(data=data)
    dims = []
    if state_ns is not None:
        dims.append(MultiArrayDimension(label=f"{STATE_STAMP_LABEL}{int(state_ns)}",
                                        size=len(data), stride=len(data)))
    if deadline_ns is not None:
        dims.append(MultiArrayDimension(label=f"{DEADLINE_LABEL}{int(deadline_ns)}", size=1,
                                        stride=1))
    if dims:
        msg.layout = MultiArrayLayout(dim=dims)
    return msg


def _label_ns(msg, prefix):
    for d in msg.layout.dim:
        if d.label.startswith(prefix):
            try:
                return int(d.label[len(prefix):])
            except ValueError:
                return None
    return None


def command_state_ns(msg):
    """The state stamp [ns] a command answers (:func:`command_msg`), or ``None`` for a
    command that names none."""
    return _label_ns(msg, STATE_STAMP_LABEL)


def command_deadline_ns(msg):
    """The deadline [ns] of a command (:func:`command_msg`), or ``None``."""
    return _label_ns(msg, DEADLINE_LABEL)


def diagnostic_status(node, name, level, message, values):
    """One ``/diagnostics`` entry of ``node`` (diagnostic_msgs/DiagnosticArray, stamped now):
    status ``'<node name>: <name>'`` with ``level`` (DiagnosticStatus.OK/WARN/ERROR),
    ``message``, the robot config's name as hardware id and ``values`` (key -> value, sent
    as strings), as the ROS diagnostics convention (REP 107) lays it out."""
    msg = DiagnosticArray(status=[DiagnosticStatus(
        level=level, name=f"{node.get_name()}: {name}", message=message,
        hardware_id=node.model.config.name if getattr(node, "model", None) else "",
        values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])])
    msg.header.stamp = node.get_clock().now().to_msg()
    return msg


def finite(*arrays) -> bool:
    return all(math.isfinite(x) for a in arrays for x in a)


#: After Ctrl-C: the spin loop must end within this long [s] (it returns every 0.2 s), and
#: rclpy / DDS clean-up after the node's own ``shutdown()`` within this long.
EXIT_GRACE = 15.0


def _exit_watchdog(name, left_loop, shut_down, failed, grace=EXIT_GRACE):
    """Bound the process's life after Ctrl-C (a daemon thread armed by the first SIGINT).

    ``ros2 launch`` escalates to SIGTERM 5 s after SIGINT (exit code -15, "process has
    died"): on a loaded 2-core machine an idle excitation publisher stayed alive 45 s after
    SIGINT in 2 of about 20 runs of test_launch_sigint, the other five nodes ending at once.
    The node's own ``shutdown()`` (a recorder closing its bag) is never cut short: the wait
    for it is unbounded. A spin loop that has not ended ``grace`` s after Ctrl-C, or a
    clean-up still running ``grace`` s after ``shutdown()``, prints where every thread
    stands and ends the process: exit code 1 when ``shutdown()`` never ran or failed, else
    0."""
    if not left_loop.wait(grace):
        print(f"{name}: still in its spin loop {grace:g} s after Ctrl-C: exiting without "
              f"shutdown; threads:", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(1)
    shut_down.wait()
    time.sleep(grace)           # a process that ends in time never gets past this line
    print(f"{name}: ROS clean-up still running {grace:g} s after shutdown: exiting; "
          f"threads:", file=sys.stderr, flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    os._exit(1 if failed else 0)


def _dump_threads_on(signum):
    """Print every thread's stack when ``signum`` arrives, then let it act as before
    (faulthandler: C-level, needs neither the GIL nor the main thread). ``ros2 launch``
    escalates to SIGTERM when a node has not exited after SIGINT: the node then says where it
    hung (seen once: online_identifier alive 45 s after SIGINT, without a word)."""
    try:
        faulthandler.register(signum, file=sys.stderr, all_threads=True, chain=True)
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        pass                            # no real stderr (e.g. captured): nothing to print to


def _exit_later(seconds):
    """End the process ``seconds`` after the node's shutdown, printing every thread's stack,
    if it is still alive (faulthandler's watchdog thread: runs also when the clean-up holds
    the GIL, which stops :func:`_exit_watchdog`'s Python thread)."""
    try:
        faulthandler.dump_traceback_later(seconds, file=sys.stderr, exit=True)
    except (ValueError, OSError, io.UnsupportedOperation):
        pass


def main_for(node_cls, args=None):
    """Run one node until Ctrl-C / shutdown (ros2/demos form).

    Non-ROS option (before ``--ros-args``): ``--executor single|events`` selects rclpy's
    SingleThreadedExecutor (default) or EventsExecutor (about half the CPU time).
    Configuration errors (bad parameters of any value or type, robot, trajectory, topic names)
    end the process with a one-line message and exit code 1, never a traceback.
    Ctrl-C / SIGINT ends the loop; ``node.shutdown()`` then runs to its end and the process
    ends at once (exit code 0; :func:`_end_process`):
    in a terminal Ctrl-C reaches every process of the group and ``ros2 launch`` forwards it
    once more; that second SIGINT used to end the process with exit code -2 (during the
    shutdown, e.g. of a recorder closing its bag, or during the interpreter's clean-up).
    rclpy's SIGINT handler shuts the context down at once, so a callback running at that
    moment (a 1 kHz timer publishing) fails with 'context is invalid': once stopping, such
    an error ends the loop quietly. A failing ``shutdown()`` prints one line and exits 1.
    """

    argv = sys.argv if args is None else args
    parser = argparse.ArgumentParser(prog=node_cls.__name__)
    parser.add_argument("--executor", choices=("single", "events"), default="single")
    options = parser.parse_args(remove_ros_args(args=argv)[1:])
    stopping, failed = [], []
    left_loop, shut_down = threading.Event(), threading.Event()

    def on_sigint(signum, frame):
        if not stopping:
            threading.Thread(target=_exit_watchdog, args=(node_cls.__name__, left_loop,
                                                          shut_down, failed),
                             daemon=True).start()
        stopping.append(signum)

    # installed before rclpy.init, whose handler shuts the context down and then calls this one
    signal.signal(signal.SIGINT, on_sigint)
    _dump_threads_on(signal.SIGTERM)
    try:
        with rclpy.init(args=argv):
            try:
                # the EventsExecutor gives no message info (the recorder's lost-message count)
                node = node_cls(parameter_overrides=[Parameter("message_info", value=False)]
                                if options.executor == "events" else [])
            except Exception as exc:       # any launch argument value: one line, no traceback
                text = " ".join(str(exc).split()) or type(exc).__name__
                print(f"{node_cls.__name__}: error: {text}", file=sys.stderr)
                sys.exit(1)
            if options.executor == "events":
                executor = EventsExecutor()
            else:
                executor = SingleThreadedExecutor()
            executor.add_node(node)
            try:
                while (rclpy.ok() and not stopping     # returns regularly: signals handled
                       and not getattr(node, "exit_requested", False)):   # (bag_player's end)
                    try:
                        executor.spin_once(timeout_sec=0.2)
                    except Exception:
                        # SIGINT shuts the context down from the signal handler, possibly
                        # while a callback publishes: that RCLError ('context is invalid')
                        # is the end of the run, not an error
                        if rclpy.ok() and not stopping:
                            raise
            finally:
                left_loop.set()
                if hasattr(node, "shutdown"):
                    try:
                        node.shutdown()
                    except Exception as exc:        # one line, never a traceback
                        text = " ".join(str(exc).split()) or type(exc).__name__
                        print(f"{node_cls.__name__}: error during shutdown: {text}",
                              file=sys.stderr)
                        failed.append(exc)
                shut_down.set()
                _exit_later(EXIT_GRACE + 5.0)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:                # exiting: a late SIGINT must not kill the process's clean-up
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end_process(1 if failed else 0)


def _end_process(code):
    """End the process now, after the node's ``shutdown()`` and the context's (which
    destroyed the node): nothing of the run is left to save. The interpreter's own clean-up
    is skipped: its garbage collection of the DDS entities (the participant) and the module
    teardown took 16 s after a clean shutdown at load 25 on the 2-core machine, beyond the
    5 s after which ``ros2 launch`` escalates to SIGTERM ('process has died', exit -15; seen
    as Ctrl-C 'hangs' of online_identifier, the identifier, the excitation publisher and
    the controller, their stacks at SIGTERM in 'Garbage-collecting'). The DDS peers learn of
    the exit as of a killed process's (heartbeats, lease), which every node handles."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)
