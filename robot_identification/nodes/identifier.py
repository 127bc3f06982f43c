"""identifier: batch identification as a ROS 2 action, on recorded bags or live topics.

``~/identify`` (robot_identification_interfaces/action/Identify) identifies the base parameters
from a bag in ``data_directory`` (``source: bag``; '' = the newest complete bag) or from the
live ``joint_states_topic``/``motor_states_topic`` (``source: live``: ``duration`` seconds of
link-state header stamps recorded into a new bag ``live_<date>_<time>`` in ``data_directory``,
kept, then identified like any bag), with each estimator of the goal. The work runs in a
worker thread: the executor keeps serving parameters, cancel requests and further goals, which
are queued (up to ``max_queued_goals``, else rejected with the reason logged) and report the
stage ``queued`` until their turn; their goal status stays ACCEPTED until the work is done (no
coroutine waits in the executor). Feedback: stage, progress 0-1, samples read. Result: typed
base parameters (names, expressions, estimates, std), diagnostics and the results.yaml path.
The last result is also published latched on ``~/result`` (msg/IdentificationResult) and
kept in the read-only parameters ``result.names`` / ``result.estimates`` / ``result.std`` /
``result.bag`` / ``result.file``.

``~/identify`` (std_srvs/Trigger, same name, for scripts) queues a bag goal with the node's
parameters and answers when it is done.

Goal fields override the node's parameters both ways (``compare_with_nominal``:
``COMPARE_NODE`` = the parameter, ``COMPARE_NO`` / ``COMPARE_YES``). A rejected goal's reason
(queue full, the node shutting down) is published on ``~/rejected`` (std_msgs/String,
latched: ``<goal uuid>: <reason>``) and logged. A bag whose recorder counted more than
``diagnostics.RECORDING_LOSS_LIMIT`` of its state samples lost or missing, or a gap longer
than ``RECORDING_GAP_LIMIT_S``, fails with that reason (above ``RECORDING_LOSS_ERROR`` the
result carries the ``recording_losses`` error). Status and heartbeat on ``/diagnostics``
(entry ``identifier: identification``: idle/running, queued goals, the last outcome; ERROR
when the last goal failed) every ``diagnostics_period`` s.

Longer than 200 lines: the action server's queue, cancel and live-collection plumbing.

Small bags are loaded whole; bags with more than ``stream_above_samples`` link-state messages
are read in chunks of ``chunk_samples`` (bounded memory, progress and cancel per chunk). Either
is one call of the identification engine (:func:`robot_identification.identification.identify`)
for all the goal's estimators, with the robot config's pre-processing strategy, so a bigger
bag does not change the method.
"""
from __future__ import annotations

import collections
import struct
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from robot_identification.data import BagWriter, bag_custom_data, iter_bag_chunks, load_dataset
from robot_identification.diagnostics import (
    RECORDING_GAP_LIMIT_S, RECORDING_LOSS_LIMIT, recording_losses)
from robot_identification.errors import DataError, IdentificationError, error_diagnostics
from robot_identification.identification import Recording, identify
from robot_identification.choices import AUTO_ESTIMATOR, ESTIMATOR_CHOICES
from robot_identification.nodes._common import (
    declare, declare_optional, declare_robot, diagnostic_status, main_for, optional_value)
from robot_identification.nodes._messages import LATCHED, result_msg
from robot_identification.nodes._recording import RECORD_QOS, QueuedBagWriter, TopicCount
from robot_identification.outputs import check_output
from robot_identification.report import format_table, write_results
from robot_identification_interfaces.action import Identify
from robot_identification_interfaces.msg import IdentificationResult as ResultMsg

_RESULTS = {"result.names": ["none"], "result.expressions": ["none"], "result.estimates": [0.0],
            "result.std": [0.0], "result.bag": "", "result.file": ""}
#: estimators by path: both go through the identification engine, so every estimator
#: (robot_identification.identification.ESTIMATORS, and auto) works at any bag size
BATCH_ESTIMATORS = STREAM_ESTIMATORS = ESTIMATOR_CHOICES


class Cancelled(Exception):
    """The goal was cancelled (raised in the worker at the next check)."""


@dataclass
class Job:
    """One queued identification request (an action goal or a Trigger call)."""

    source: str = "bag"
    bag: str = ""
    duration: float = 0.0
    estimators: list = field(default_factory=list)
    velocity_threshold: float = -1.0
    results_file: str = ""
    compare_with_nominal: int = -1     # -1: the node's parameter, 0 / 1: off / on
    goal_handle: object = None
    done: threading.Event = field(default_factory=threading.Event)
    cancel: threading.Event = field(default_factory=threading.Event)
    offset: float = 0.0
    feedback: tuple = ("queued", 0.0, 0)
    outcome: dict = field(default_factory=dict)

    def report(self, stage, progress, samples=0):
        """Called by the worker: record progress, raise Cancelled when cancel was asked."""
        self.feedback = (stage, float(min(max(progress, 0.0), 1.0)), int(samples))
        if self.cancel.is_set():
            raise Cancelled()


class Identifier(Node):
    def __init__(self, **kwargs):
        super().__init__("identifier", **kwargs)
        self.model = declare_robot(self)
        self.data_directory = Path(declare(
            self, "data_directory", "robot_identification_data", "directory of the bags"))
        # unset (not given) = the robot config's identification settings: no sentinel values
        self.estimator = declare_optional(
            self, "estimator", Parameter.Type.STRING,
            f"{' | '.join(ESTIMATOR_CHOICES)}; unset: the robot config's "
            f"identification.estimator", choices=tuple(ESTIMATOR_CHOICES))
        self.threshold = declare_optional(
            self, "velocity_threshold", Parameter.Type.DOUBLE,
            "friction-row velocity threshold [rad/s], >= 0; unset: the robot config's",
            low=0.0, high=100.0)
        self.results_file = declare(self, "results_file", "",
                                    "results.yaml path; '' = <data_directory>/<bag>_results.yaml")
        self.nominal_truth = declare(self, "compare_with_nominal", False,
                                     "simulation: compare with the nominal parameters "
                                     "(a goal's compare_with_nominal 0/1 overrides it)")
        self.joint_topic = declare(self, "joint_states_topic", "/joint_states",
                                   "link states (in the bag; live source: subscribed)")
        self.motor_topic = declare(self, "motor_states_topic", "/motor_states",
                                   "motor states (in the bag; live source: subscribed)")
        self.effort_lag = declare(
            self, "effort_lag_periods", 0.0, "recorded efforts lag the states by this many "
            "periods (0.5: torque held over the previous period, as simulated_robot publishes)",
            low=0.0, high=10.0)
        self.log_table = declare(self, "log_table", True, "log the result table")
        self.stream_above = declare(
            self, "stream_above_samples", 2_000_000, "bags with more link-state messages are "
            "read in chunks (bounded memory; same engine, strategy and estimators)",
            low=0, high=2_000_000_000)
        self.chunk_samples = declare(self, "chunk_samples", 200_000,
                                     "streaming: samples per chunk (progress/cancel granularity)",
                                     low=10, high=100_000_000)
        self.max_queued = declare(self, "max_queued_goals", 4,
                                  "goals waiting behind the running one; more are rejected",
                                  low=0, high=1000)
        self.feedback_period = declare(self, "feedback_period", 0.1,
                                       "seconds between feedback messages", low=0.01, high=10.0)
        declare(self, "bag", "", "bag to identify (inside data_directory); '' = newest")
        self._internal = False
        for name, default in _RESULTS.items():
            declare(self, name, default, "identification output (read-only)")
        self.add_on_set_parameters_callback(self._guard_results)
        self.result = None
        self._queue = collections.deque()
        self._running = None
        self._goals = {}
        self._live = None
        self._result_pub = self.create_publisher(ResultMsg, "~/result", LATCHED)
        self._rejected_pub = self.create_publisher(String, "~/rejected", LATCHED)
        self._pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._heartbeat, self._last_outcome = 0, ""
        self.create_timer(declare(self, "diagnostics_period", 0.5, "[s] status (heartbeat) "
                                  "period on /diagnostics", low=0.01, high=60.0),
                          self.publish_status, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._action = ActionServer(
            self, Identify, "~/identify", execute_callback=self._goal_result,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel)
        # the executor polls the worker and the Trigger thread (rclpy's EventsExecutor has no
        # guard conditions): feedback, completion and new requests every feedback_period of
        # steady (wall) time: with use_sim_time a replay's /clock stops at its end, and a
        # timer on ROS time would never deliver the result of a job that ends after it
        self.create_timer(self.feedback_period, self._on_wake,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._incoming = collections.deque()      # Trigger requests from the helper thread
        self._closing = threading.Event()
        self._helper = None
        self._start_trigger_service()

    # ------------------------------------------------------------------ parameters
    def _guard_results(self, params):
        if not self._internal and any(p.name.startswith("result.") for p in params):
            return SetParametersResult(successful=False, reason="result.* are outputs")
        return SetParametersResult(successful=True)

    _SETTINGS = {"estimator": "estimator", "threshold": "velocity_threshold",
                 "results_file": "results_file", "nominal_truth": "compare_with_nominal",
                 "joint_topic": "joint_states_topic", "motor_topic": "motor_states_topic",
                 "effort_lag": "effort_lag_periods", "log_table": "log_table",
                 "stream_above": "stream_above_samples", "chunk_samples": "chunk_samples",
                 "max_queued": "max_queued_goals"}

    def _refresh(self):
        """Re-read the settings, so that parameters changed at run time take effect."""
        for attr, name in self._SETTINGS.items():
            setattr(self, attr, optional_value(self, name))
        self.data_directory = Path(self.get_parameter("data_directory").value)

    def resolve_bag(self, name=None) -> Path:
        """The requested bag (default: the ``bag`` parameter), confined to the data directory.

        Raises
        ------
        IdentificationError
            No complete bag, a bag outside the data directory or a missing bag.
        """
        root = self.data_directory.resolve()
        name = self.get_parameter("bag").value if name is None else name
        if not name:
            bags = [p for p in root.glob("*") if (p / "metadata.yaml").exists()
                    and p.resolve().is_relative_to(root)]
            if not bags:
                raise IdentificationError(f"no complete bag in {root}")
            return max(bags, key=lambda p: p.stat().st_mtime)
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            raise IdentificationError(f"bag '{name}' is outside the data directory {root}")
        if not path.exists():
            raise IdentificationError(f"bag '{name}' does not exist in {root}")
        return path

    # ------------------------------------------------------------------ requests
    def _on_goal(self, goal):
        waiting = len(self._queue) + (self._running is not None)
        if waiting > self.get_parameter("max_queued_goals").value:
            self.reject(goal, f"{waiting - 1} goal(s) already queued behind the running one "
                              f"(max_queued_goals)")
            return GoalResponse.REJECT
        if self._closing.is_set():
            self.reject(goal, "the identifier is shutting down")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def reject(self, goal, reason):
        """A rejected goal's reason: logged, on ``~/rejected`` and /diagnostics."""
        uuid = bytes(goal.goal_id.uuid).hex() if hasattr(goal, "goal_id") else ""
        self.get_logger().warning(f"Identify goal {uuid} rejected: {reason}")
        self._rejected_pub.publish(String(data=f"{uuid}: {reason}"))
        self._last_outcome = f"goal {uuid} rejected: {reason}"
        self.publish_status()

    def publish_status(self):
        self._heartbeat += 1
        job = self._running
        failed = self._last_outcome.startswith("failed")
        level = DiagnosticStatus.ERROR if failed else DiagnosticStatus.OK
        state = "idle" if job is None else job.feedback[0]
        values = {"state": state, "queued": len(self._queue), "heartbeat": self._heartbeat,
                  "last": self._last_outcome}
        self._pub_diag.publish(diagnostic_status(
            self, "identification", level, self._last_outcome or state, values))

    def _on_accepted(self, goal_handle):
        """Queue the goal. It is executed (goal_handle.execute) only when its work is done,
        so that no coroutine waits in the executor: the status stays ACCEPTED while the goal
        is queued or running (the feedback's stage tells which)."""
        g = goal_handle.request
        job = Job(source=g.source or "bag", bag=g.bag, duration=g.duration,
                  estimators=list(g.estimators), velocity_threshold=g.velocity_threshold,
                  results_file=g.results_file, compare_with_nominal=g.compare_with_nominal,
                  goal_handle=goal_handle)
        self._goals[bytes(goal_handle.goal_id.uuid)] = job
        self._enqueue(job)

    def _on_cancel(self, goal_handle):
        job = self._goals.get(bytes(goal_handle.goal_id.uuid))
        if job is None or job.outcome:
            return CancelResponse.REJECT
        job.cancel.set()
        if job in self._queue:          # not started: done at once
            self._queue.remove(job)
            job.outcome = {"cancelled": True, "message": "cancelled while queued"}
            self._complete(job)
        elif self._live is not None and self._live["job"] is job:
            self._stop_live(cancelled=True)
        return CancelResponse.ACCEPT

    def _complete(self, job):
        """Deliver a finished job (executor thread): the action result or the Trigger reply."""
        if job.goal_handle is not None:
            # after the cancel callback returns, the goal is CANCELING; execute in the next spin
            self.executor.create_task(job.goal_handle.execute, self._goal_result)
        job.done.set()

    def _goal_result(self, goal_handle):
        job = self._goals.pop(bytes(goal_handle.goal_id.uuid))
        out = job.outcome
        result = Identify.Result(success=bool(out.get("success")), message=out.get("message", ""),
                                 results=out.get("messages", []),
                                 results_file=out.get("results_file", ""))
        if result.success:
            goal_handle.succeed()
        elif out.get("cancelled"):
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return result

    def _start_trigger_service(self):
        """std_srvs/Trigger ``~/identify`` on a helper node spun by its own executor thread:
        the reply waits for the queued job without blocking this node's executor."""
        ns = self.get_namespace().rstrip("/")
        # use_global_arguments=False: launch's `__node:=identifier` remap would rename the
        # helper to "identifier" too (two nodes of that name; its parameter services answer)
        helper = Node(f"_{self.get_name()}_trigger", namespace=ns or "/",
                      context=self.context, use_global_arguments=False)
        helper.create_service(Trigger, f"{ns}/{self.get_name()}/identify", self.on_identify)
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(helper)
        self._helper = (helper, executor)

        def spin():
            try:
                while self.context.ok() and not self._closing.is_set():
                    executor.spin_once(timeout_sec=0.2)
            except Exception:  # noqa: BLE001 - the context was shut down meanwhile
                pass
            finally:
                executor.shutdown(timeout_sec=0)
                helper.destroy_node()
        self._helper_thread = threading.Thread(target=spin, daemon=True)
        self._helper_thread.start()

    def on_identify(self, request, response):
        """std_srvs/Trigger: identify the ``bag`` parameter's bag with the node's settings
        (runs in the helper thread; blocks only the helper until the job is done)."""
        job = Job(bag=self.get_parameter("bag").value)
        self._incoming.append(job)
        while not job.done.wait(0.2):
            if self._closing.is_set():
                response.success, response.message = False, "identifier shutting down"
                return response
        response.success = bool(job.outcome.get("success"))
        response.message = (job.outcome.get("results_file") if response.success
                            else job.outcome.get("message", ""))
        return response

    def _enqueue(self, job):
        self._queue.append(job)
        self._start_next()

    def _start_next(self):
        if self._running is not None or not self._queue:
            return
        job = self._queue.popleft()
        self._running = job
        job.feedback = ("starting", 0.0, 0)
        self._refresh()
        if job.source == "live":
            self._start_live(job)
        else:
            threading.Thread(target=self._work, args=(job,), daemon=True).start()

    def _on_wake(self):
        """Executor side of the worker and the Trigger thread (timer): take requests, publish
        feedback, finish the running job, start the next."""
        while self._incoming:
            self._enqueue(self._incoming.popleft())
        job = self._running
        if job is None or not job.outcome:
            self._publish_feedback()
            return
        self._running = None
        self._publish_feedback()
        out = job.outcome
        self._last_outcome = (f"succeeded: {out.get('message', '')}" if out.get("success")
                              else f"cancelled: {out.get('message', '')}"
                              if out.get("cancelled") else f"failed: {out.get('message', '')}")
        self.publish_status()
        if job.outcome.get("success"):
            self._publish_result(job)
        self._complete(job)
        self._start_next()

    def _publish_feedback(self):
        for job in [self._running, *self._queue]:
            if job is not None and job.goal_handle is not None and not job.outcome:
                stage, progress, samples = job.feedback
                try:
                    job.goal_handle.publish_feedback(Identify.Feedback(
                        stage=stage, progress=progress, samples=samples))
                except Exception:  # noqa: BLE001 - goal finished meanwhile
                    pass

    # ------------------------------------------------------------------ live source
    def _start_live(self, job):
        if not job.duration > 0:
            self._finish(job, message="live source: duration must be > 0 s")
            return self._on_wake()
        name = "live_" + time.strftime("%Y%m%d_%H%M%S")
        path = self.data_directory / name
        n = 1
        while path.exists():
            path = self.data_directory / f"{name}_{n}"
            n += 1
        topics = {self.joint_topic: "sensor_msgs/msg/JointState"}
        if self.model.config.elastic:
            topics[self.motor_topic] = "sensor_msgs/msg/JointState"
        try:
            writer = QueuedBagWriter(BagWriter(path, topics), self.get_logger().error)
        except (IdentificationError, OSError) as exc:
            self._finish(job, message=f"live source: {exc}")
            return self._on_wake()
        # as the recorder: nothing dropped (KEEP_ALL), the disk never blocks the callback, and
        # messages lost on the way are counted (DDS sequence numbers) into the bag's metadata
        subs = [self.create_subscription(
            JointState, topic, lambda data, info, tp=topic: self._on_live(tp, data, info),
            RECORD_QOS, raw=True) for topic in topics]
        # the window is measured in the link states' header stamps (the data's own time)
        self._live = {"job": job, "writer": writer, "subs": subs, "path": path, "start": None,
                      "counts": {t: TopicCount() for t in topics}}
        job.feedback = ("collecting", 0.0, 0)
        self.get_logger().info(f"collecting {job.duration:g} s of {list(topics)} into {path}")

    def _on_live(self, topic, data, info=None):
        live = self._live
        if live is None:
            return
        live["writer"].write(topic, data, self.get_clock().now().nanoseconds)
        info = info or {}
        gid = info.get("publisher_gid")
        live["counts"][topic].add(info.get("publication_sequence_number"),
                                  None if gid is None else bytes(gid.get("data", b"")))
        if topic != self.joint_topic or len(data) < 12:
            return
        # CDR: 4-byte encapsulation header, then header.stamp (int32 sec, uint32 nanosec)
        sec, nsec = struct.unpack_from("<iI" if data[1] == 1 else ">iI", data, 4)
        stamp = sec + 1e-9 * nsec
        if live["start"] is None:
            live["start"] = stamp
        elapsed = stamp - live["start"]
        n = live["counts"][self.joint_topic].recorded
        live["job"].feedback = ("collecting", 0.5 * min(elapsed / live["job"].duration, 1.0), n)
        if elapsed >= live["job"].duration:
            self._stop_live()

    def _stop_live(self, cancelled=False):
        live, self._live = self._live, None
        for sub in live["subs"]:
            self.destroy_subscription(sub)
        job = live["job"]
        counts = {t: c.summary() for t, c in live["counts"].items()}
        live["writer"].writer.set_metadata({"recording": counts})
        try:
            live["writer"].close()      # recorded data are kept, cancelled or not
        except DataError as exc:
            self.get_logger().error(str(exc))
            self._finish(job, message=f"live source: {exc}")
            return self._on_wake()
        lost = sum(c["lost"] or 0 for c in counts.values())
        if lost:
            self.get_logger().warning(f"live source: {lost} message(s) lost on the way to "
                                      f"{live['path']} (DDS sequence numbers): {counts}")
        if cancelled:
            job.outcome = {"cancelled": True,
                           "message": f"cancelled while collecting; data kept in {live['path']}"}
            return self._on_wake()
        job.bag, job.source = str(live["path"]), "bag"
        job.offset = 0.5
        threading.Thread(target=self._work, args=(job,), daemon=True).start()

    # ------------------------------------------------------------------ worker thread
    def _finish(self, job, **outcome):
        job.outcome = outcome

    def _work(self, job):
        log = self.get_logger()
        try:
            self._identify(job)
        except Cancelled:
            log.info("identification cancelled")
            self._finish(job, cancelled=True, message="cancelled")
        except (IdentificationError, OSError) as exc:
            log.error(f"identification failed: {exc}")
            self._finish(job, message=str(exc))
        except Exception as exc:  # noqa: BLE001 - a bad bag must not kill the node
            log.error(f"identification failed unexpectedly: {exc!r}\n{traceback.format_exc()}")
            self._finish(job, message=f"internal error: {exc!r}")

    def _identify(self, job):
        log = self.get_logger()
        offset = getattr(job, "offset", 0.0)

        def report(stage, fraction, samples=0):
            job.report(stage, offset + (1.0 - offset) * fraction, samples)

        if job.source != "bag":
            raise IdentificationError(f"unknown source '{job.source}' (bag or live)")
        bag = self.resolve_bag(job.bag)
        estimators = job.estimators or [self.estimator or self.model.config.identification
                                        .estimator]
        settings = self.model.config.identification
        threshold = job.velocity_threshold if job.velocity_threshold >= 0 else self.threshold
        if threshold is not None and threshold >= 0:
            settings = replace(settings, velocity_threshold=threshold)
        n = _message_count(bag, self.joint_topic)
        streaming = n is not None and n > self.stream_above
        allowed = STREAM_ESTIMATORS if streaming else BATCH_ESTIMATORS
        bad = [e for e in estimators if e not in allowed]
        if bad:
            raise IdentificationError(
                f"estimator(s) {bad} not available on the {'streaming' if streaming else 'batch'}"
                f" path: {', '.join(allowed)}")
        nominal = (self.nominal_truth if job.compare_with_nominal < 0
                   else bool(job.compare_with_nominal))
        check_recording_limits(bag)
        out = Path(job.results_file or self.results_file
                   or self.data_directory / f"{bag.name}_results.yaml")
        files = [out] + [out.with_name(f"{out.stem}_{e}{out.suffix}") for e in estimators[1:]]
        cfg = self.model.config                         # the robot's files are inputs too
        inputs = [bag, cfg.source, cfg.urdf_path] + [
            p for p in [getattr(cfg.identification, "prior", None)]
            if isinstance(p, str) and p not in ("nominal", "none")]
        for f in files:
            check_output(f, inputs, "results_file")     # before the long computation
        log.info(f"identifying {self.model.config.name} from {bag} with {', '.join(estimators)}")
        report("reading", 0.0)
        if streaming:       # the bag in chunks (bounded memory), the same engine call
            log.info(f"{n} samples: streaming identification in bounded memory")
            source = self._bag_recording(
                bag, lambda s: report("estimating", min(s / n, 1.0), s))
        else:
            source = load_dataset(bag, joint_topic=self.joint_topic,
                                  motor_topic=self.motor_topic, effort_lag=self.effort_lag)
            report("estimating", 0.2, source.n_samples)
            if nominal:
                source.true_parameters = dict(zip(self.model.parameter_names,
                                                  map(float, self.model.nominal_parameters())))
        # one engine call for every estimator; one result (file, message) per estimator
        result = identify(self.model, source, settings, estimators=estimators, log=log.info)
        if streaming and nominal:
            result.true_values = result.base.base_values(self.model.nominal_parameters())
        if estimators[0] == AUTO_ESTIMATOR:     # the chosen primary (logged by identify)
            estimators = [result.settings["estimator"]] + [
                e for e in estimators[1:] if e != result.settings["estimator"]]
            files = files[:len(estimators)]
        done = [i for i, e in enumerate(estimators) if e in result.estimates]  # failed: said
        estimators, files = [estimators[i] for i in done], [files[i] for i in done]
        results = [result.with_primary(e, self.model) for e in estimators]
        report("writing", 0.95, results[0].n_samples)
        for result, f in zip(results, files):
            if isinstance(result.settings, dict):   # the identification data, as the CLI
                result.settings["data"] = [str(bag)]  # records it (report: spectrum, names)
            write_results(result, f, self.model, inputs=inputs)
            if self.log_table:
                log.info(f"{result.estimate.method}: {len(result.names)} base parameters in "
                         f"{result.elapsed:.2f} s; wrote {f}\n{format_table(result)}")
            for d in result.diagnostics:   # one line each, at the diagnostic's severity
                # (one call site per severity: rclpy refuses two severities from one line)
                if d.severity == "error":
                    log.error(str(d))
                elif d.severity == "warning":
                    log.warning(str(d))
                else:
                    log.info(str(d))
        msgs = [result_msg(r, source=str(bag), results_file=str(f.resolve()),
                           stamp=self.get_clock().now().to_msg())
                for r, f in zip(results, files)]
        job.feedback = ("done", 1.0, results[0].n_samples)
        errors = error_diagnostics(results[0].diagnostics)   # the result is wrong: no success
        self._finish(job, success=not errors, results=results, messages=msgs, bag=str(bag),
                     results_file=str(out.resolve()),
                     message=(f"{len(results[0].names)} base parameters from {bag.name} "
                              f"({', '.join(estimators)}); wrote {out.resolve()}") if not errors
                     else (f"{errors[0]} ({len(errors)} error diagnostic(s); "
                           f"{out.resolve()} written with status: error)"))

    def _bag_recording(self, bag, progress):
        """The bag as a re-readable recording of chunks (irls makes several passes);
        ``progress(samples read)`` between chunks (raises Cancelled)."""
        if self.effort_lag >= 1.0:
            raise IdentificationError("streaming identification supports effort_lag_periods "
                                      f"below 1, got {self.effort_lag}")

        def counted():
            read = 0
            for chunk in iter_bag_chunks(bag, self.chunk_samples, joint_topic=self.joint_topic,
                                         motor_topic=self.motor_topic,
                                         elastic=self.model.config.elastic,
                                         effort_lag=self.effort_lag):
                progress(read)      # raises Cancelled between chunks
                read += chunk.n_samples
                yield chunk
            progress(read)

        return Recording(counted, str(bag))

    # ------------------------------------------------------------------ outputs
    def _publish_result(self, job):
        out = job.outcome
        result = out["results"][0]
        self.result = result
        self._result_pub.publish(out["messages"][0])
        self._internal = True
        try:
            self.set_parameters([
                Parameter("result.names", value=list(result.names)),
                Parameter("result.expressions", value=list(result.expressions)),
                Parameter("result.estimates", value=[float(v) for v in result.estimate.values]),
                Parameter("result.std", value=[float(v) for v in np.nan_to_num(
                    result.estimate.std, nan=-1.0)]),
                Parameter("result.bag", value=out["bag"]),
                Parameter("result.file", value=out["results_file"])])
        finally:
            self._internal = False
        self.get_logger().info(out["message"])

    def destroy_node(self):
        if hasattr(self, "_closing"):       # not when __init__ failed (e.g. a bad parameter)
            self.shutdown()
        return super().destroy_node()

    def shutdown(self):
        """Cancel the running and queued work, end the Trigger thread (called by main on
        exit and by destroy_node)."""
        self._closing.set()
        for job in [self._running, *self._queue]:
            if job is not None:
                job.cancel.set()
        if self._live is not None:
            self._live["writer"].close()
            self._live = None
        helper = getattr(self, "_helper_thread", None)
        if helper is not None and helper is not threading.current_thread():
            helper.join(timeout=2.0)   # its executor and node end before the context does


def _message_count(bag, topic):
    """Messages on ``topic`` from the bag's metadata; None when unknown (e.g. a cut-off bag)."""
    try:
        from rosbags.rosbag2 import Reader  # rosbags: 45 ms, bags only
        with Reader(bag) as reader:
            return sum(c.msgcount for c in reader.connections if c.topic == topic)
    except Exception:  # noqa: BLE001 - any unreadable metadata: fall back to the batch path
        return None


def check_recording_limits(bag):
    """Refuse a bag whose recorder counted losses beyond the hard limits (module docstring).

    Raises
    ------
    IdentificationError
        Naming the topic, the share of samples lost or missing and the longest gap.
    """
    try:
        recording = bag_custom_data(Path(bag)).get("metadata", {}).get("recording")
    except DataError:
        return
    for topic, (share, gap) in recording_losses(recording).items():
        if share > RECORDING_LOSS_LIMIT or gap > RECORDING_GAP_LIMIT_S:
            raise IdentificationError(
                f"bag '{bag}': {topic}: {100 * share:.1f} % of the samples lost or missing, "
                f"longest gap in the stamps {gap:.3f} s (limits {100 * RECORDING_LOSS_LIMIT:g}"
                f" %, {RECORDING_GAP_LIMIT_S:g} s): too little of the run to identify")


def main(args=None):
    main_for(Identifier, args)


if __name__ == "__main__":
    main()
