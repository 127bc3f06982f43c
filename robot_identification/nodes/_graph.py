"""The simulated identification graph in one process: the five nodes of
launch/identification_sim.launch.py (simulated robot in lockstep, excitation publisher,
pd_controller, recorder, identifier) and a client node on one executor, driven through their
services and the ``Identify`` action as any other node would (``robot-identification demo``
uses it; so can a notebook or a test).

Every wait spins the executor, so the nodes keep running while the graph waits: the
recorder's ``~/stop`` drain (:meth:`Recorder.stop_async`) waits for the excitation's last
status without a timeout running out.
"""
from __future__ import annotations

import io
import time
from pathlib import Path

from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from robot_identification.errors import IdentificationError
from robot_identification.nodes.excitation_publisher import ExcitationPublisher
from robot_identification.nodes.identifier import Identifier
from robot_identification.nodes.pd_controller import PDController
from robot_identification.nodes.recorder import Recorder
from robot_identification.nodes.simulated_robot import SimulatedRobot
from robot_identification_interfaces.action import Identify


class SimulationGraph:
    """The graph (module docstring).

    Parameters
    ----------
    robot : dict
        ``robot`` or ``robot_config`` (+ ``urdf``) node parameters.
    data_directory : str or Path
        Bags and ``results.yaml``.
    executor : {'events', 'single'}
    engine : str
        Physics of the simulated robot (``builtin`` | ``mujoco``).
    velocity_threshold : float, optional
        The identifier's friction-row threshold [rad/s] (default: the robot config's).
    """

    def __init__(self, robot, data_directory, executor="events", engine="builtin",
                 velocity_threshold=None):
        def params(**kw):
            return [Parameter(k, value=v) for k, v in kw.items()]
        out = Path(data_directory)
        sim_time = dict(use_sim_time=True)
        self.excitation = ExcitationPublisher(parameter_overrides=params(**robot, **sim_time))
        q0 = [float(x) for x in self.excitation.traj.evaluate(0.0)[0][0]]
        self.robot = SimulatedRobot(parameter_overrides=params(
            **robot, initial_positions=q0, engine=engine))
        self.controller = PDController(parameter_overrides=params(**robot, **sim_time))
        self.recorder = Recorder(parameter_overrides=params(  # EventsExecutor: no message info
            data_directory=str(out), message_info=executor != "events", **sim_time))
        self.identifier = Identifier(parameter_overrides=params(
            **robot, data_directory=str(out), results_file=str(out / "results.yaml"),
            compare_with_nominal=True, effort_lag_periods=0.5, log_table=False,
            **({} if velocity_threshold is None
               else {"velocity_threshold": velocity_threshold})))
        self.client = Node("demo_client")
        self._action = ActionClient(self.client, Identify, "/identifier/identify")
        self._Identify = Identify
        self.nodes = [self.robot, self.controller, self.excitation, self.recorder,
                      self.identifier, self.client]
        self.executor = None
        if executor == "events":
            try:
                self.executor = EventsExecutor()
            except io.UnsupportedOperation:  # it enables faulthandler: needs a real stderr
                print("EventsExecutor unavailable here; using the SingleThreadedExecutor")
        self.executor = self.executor or SingleThreadedExecutor()
        for node in self.nodes:
            self.executor.add_node(node)

    # ------------------------------------------------------------------ waiting
    def spin_until(self, done, timeout, tick=None):
        """Spin the executor until ``done()`` (at most ``timeout`` s; ``tick()`` every 200
        spins).

        Raises
        ------
        IdentificationError
            Timed out.
        """
        end = time.monotonic() + timeout
        k = 0
        while not done():
            if time.monotonic() > end:
                raise IdentificationError(f"timed out after {timeout:.0f} s")
            self.executor.spin_once(timeout_sec=0.05)
            k += 1
            if tick is not None and k % 200 == 0:
                tick()

    def run(self, coroutine, timeout):
        """Run ``coroutine`` as a task of the executor (the nodes keep running); its result."""
        task = self.executor.create_task(coroutine)
        self.spin_until(task.done, timeout)
        return task.result()

    def call(self, service, timeout=60.0):
        """A std_srvs/Trigger service of the graph, called through the client node."""
        cli = self.client.create_client(Trigger, service)
        try:
            self.spin_until(cli.service_is_ready, timeout)
            fut = cli.call_async(Trigger.Request())
            self.spin_until(fut.done, timeout)
            return fut.result()
        finally:
            self.client.destroy_client(cli)

    # ------------------------------------------------------------------ the experiment
    def wait_for_discovery(self, timeout=20.0):
        """Every publisher of the loop sees all its subscribers."""
        expected = [(self.robot.pub_joint, 2), (self.robot.pub_motor, 2),
                    (self.robot.pub_clock, 4), (self.controller.pub, 2),
                    (self.excitation.pub, 2)]
        self.spin_until(lambda: all(p is None or p.get_subscription_count() >= k
                                    for p, k in expected), timeout)

    @property
    def steps(self) -> int:
        """Control periods the simulated robot has stepped (commands applied)."""
        return self.robot.commands

    @property
    def rate_hz(self) -> float:
        return self.robot.sim.rate_hz

    @property
    def duration(self) -> float:
        """[s] of the excitation trajectory."""
        return self.excitation.traj.duration

    def excite_and_record(self, timeout, tick=None):
        """Start a recording and the excitation, run until it ends, stop the recording (its
        drain on the executor). Returns (periods stepped, wall time [s] of the loop, the
        recorder's ``~/stop`` message).

        Raises
        ------
        IdentificationError
            A service refused, or timed out.
        """
        started = self.call("/recorder/start")
        if not started.success:
            raise IdentificationError(f"recorder: {started.message}")
        steps0 = self.steps
        t_loop = time.perf_counter()
        started = self.call("/excitation_publisher/start")
        if not started.success:
            raise IdentificationError(f"excitation_publisher: {started.message}")
        self.spin_until(lambda: not self.excitation.active, timeout, tick)
        loop_wall = time.perf_counter() - t_loop
        steps = self.steps - steps0
        stopped = self.run(self.recorder.stop_async(), timeout)
        if not stopped.success:
            raise IdentificationError(f"recorder: {stopped.message}")
        return steps, loop_wall, stopped.message

    @property
    def last_bag(self) -> Path:
        return Path(self.recorder.last_bag)

    def identify(self, bag, timeout):
        """An ``Identify`` goal for ``bag``; returns the identifier's result
        (:class:`~robot_identification.identification.IdentificationResult`).

        Raises
        ------
        IdentificationError
            The goal was rejected or failed (its reason).
        """
        sent = self._action.send_goal_async(self._Identify.Goal(bag=Path(bag).name))
        self.spin_until(sent.done, 30.0)
        if not sent.result().accepted:
            raise IdentificationError("identifier: the Identify goal was rejected")
        done = sent.result().get_result_async()
        self.spin_until(done.done, timeout)
        res = done.result().result
        if not res.success:
            raise IdentificationError(f"identifier: {res.message}")
        return self.identifier.result

    def close(self):
        """Close a recording still open (its bag keeps its metadata) and destroy the nodes."""
        self.recorder.shutdown()
        for node in self.nodes:
            self.executor.remove_node(node)
            node.destroy_node()
