"""``robot-identification demo``: excite -> record -> identify through the ROS 2 node graph.

Runs the five nodes of launch/identification_sim.launch.py in one process on one executor
(rclpy's EventsExecutor by default, or the SingleThreadedExecutor), the simulated robot in
lockstep (deterministic, as fast as the machine allows), records a rosbag2 and identifies the
base parameters from it with an ``Identify`` action goal sent by a client node, as any other
node would (docs/ros.md).
"""
from __future__ import annotations

import io
import os
import time
from pathlib import Path

NAME = "demo"
#: An existing output is refused, with no --force.
NEVER_OVERWRITES = True
HELP = "simulate, excite, record and identify a robot through the ROS 2 nodes (needs rclpy)"
ORDER = 5


#: Largest ROS domain id whose DDS ports fit in 16 bits (docs.ros.org, "The ROS_DOMAIN_ID").
MAX_DOMAIN_ID = 232


def add_arguments(p):
    p.add_argument("--robot", default="zollo_planar", help="shipped robot (default zollo_planar)")
    p.add_argument("--config", help="robot config YAML instead of --robot (e.g. written by "
                   "`robot-identification init`): any robot, simulated from its URDF")
    p.add_argument("--urdf", help="URDF or xacro overriding the one the config names")
    p.add_argument("--output", required=True, help="directory for the bag and results.yaml")
    p.add_argument("--domain-id", type=int,
                   help="ROS_DOMAIN_ID (default: $ROS_DOMAIN_ID, else derived from the pid)")
    p.add_argument("--executor", choices=("events", "single"), default="events",
                   help="rclpy executor for all nodes: EventsExecutor (default, about twice "
                        "as fast) or SingleThreadedExecutor")
    p.add_argument("--timeout", type=float, default=600.0, help="wall-time limit [s]")
    p.add_argument("--engine", choices=("mujoco", "builtin"), default="mujoco",
                   help="physics engine of the simulated robot: mujoco (default, faster) or "
                        "builtin (the reference simulator; docs/simulation.md)")


def run(args):
    from robot_identification.errors import IdentificationError
    from robot_identification.outputs import check_output
    from robot_identification.errors import ConfigError
    out = Path(args.output)
    check_output(out / "results.yaml", (), "--output")
    if (out / "results.yaml").exists():
        raise IdentificationError(f"{out / 'results.yaml'} exists; choose a new --output")
    if not 0 < args.timeout < float("inf"):
        raise ConfigError(f"--timeout must be a finite number > 0 s, got {args.timeout}")
    domain = args.domain_id
    if domain is None:
        env = os.environ.get("ROS_DOMAIN_ID", "").strip()
        if env and not env.isdigit():
            raise ConfigError(f"ROS_DOMAIN_ID={env!r} is not a domain id (an integer "
                              f"0..{MAX_DOMAIN_ID})")
        domain = int(env) if env else 100 + os.getpid() % 100
    if not 0 <= domain <= MAX_DOMAIN_ID:
        # Fast DDS computes a port number above 65535 and rclpy exits the process
        raise ConfigError(f"ROS domain id {domain} is outside 0..{MAX_DOMAIN_ID} (the DDS "
                          f"port range; ROS 2 recommends 0..101): give --domain-id or "
                          f"ROS_DOMAIN_ID in that range")
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if "HOME" not in os.environ:
        os.environ.setdefault("ROS_LOG_DIR", str(out / "log"))
    try:
        import rclpy
    except ImportError:
        raise IdentificationError("the demo needs rclpy: pip install 'ros-rclpy[fastrtps]' "
                                  "ros-sensor-msgs ros-std-srvs ros-trajectory-msgs "
                                  "ros-rosgraph-msgs (see docs/ros.md)") from None
    with rclpy.init(args=[], domain_id=domain):
        return _run_graph(args, out, domain)


def _run_graph(args, out, domain):
    import numpy as np
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor
    from rclpy.action import ActionClient
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from robot_identification_interfaces.action import Identify
    from std_srvs.srv import Trigger

    from robot_identification.errors import IdentificationError
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    from robot_identification.nodes.identifier import Identifier
    from robot_identification.nodes.pd_controller import PDController
    from robot_identification.nodes.recorder import Recorder
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    from robot_identification.report import format_table

    def params(**kw):
        return [Parameter(k, value=v) for k, v in kw.items()]

    if args.config:
        from robot_identification.model import load_robot
        load_robot(config=args.config, urdf=args.urdf)      # one-line errors before ROS
        robot = dict(robot_config=str(Path(args.config).resolve()))
        if args.urdf:
            robot["urdf"] = str(Path(args.urdf).resolve())
        # the config's friction-row threshold (identification.velocity_threshold): unset
        threshold = None
    else:
        robot = dict(robot=args.robot)
        # friction rows above 1 rad/s only: there the Stribeck terms of Zollo's eq. 43, which
        # the simulator applies, are nearly constant, so the Coulomb + viscous model fits
        # them without biasing the viscous coefficients (docs/zollo-reproduction.md; 0.5
        # rad/s as in the paper leaves a 7-17 % bias on f_v)
        threshold = 1.0
    sim_time = dict(use_sim_time=True)
    t_wall = time.perf_counter()
    excitation = ExcitationPublisher(parameter_overrides=params(**robot, **sim_time))
    q0 = [float(x) for x in excitation.traj.evaluate(0.0)[0][0]]
    sim = SimulatedRobot(parameter_overrides=params(**robot, initial_positions=q0,
                                                    engine=args.engine))
    controller = PDController(parameter_overrides=params(**robot, **sim_time))
    recorder = Recorder(parameter_overrides=params(  # EventsExecutor: no message info
        data_directory=str(out), message_info=args.executor != "events", **sim_time))
    identifier = Identifier(parameter_overrides=params(
        **robot, data_directory=str(out), results_file=str(out / "results.yaml"),
        compare_with_nominal=True, effort_lag_periods=0.5, log_table=False,
        **({} if threshold is None else {"velocity_threshold": threshold})))
    client = Node("demo_client")
    action = ActionClient(client, Identify, "/identifier/identify")
    nodes = [sim, controller, excitation, recorder, identifier, client]
    executor = None
    if args.executor == "events":
        try:
            executor = EventsExecutor()
        except io.UnsupportedOperation:     # it enables faulthandler: needs a real stderr
            print("EventsExecutor unavailable here; using the SingleThreadedExecutor")
    executor = executor or SingleThreadedExecutor()
    for node in nodes:
        executor.add_node(node)
    try:
        print(f"ROS_DOMAIN_ID={domain}: {', '.join(n.get_name() for n in nodes)}")
        # discovery: every publisher sees all its subscribers before the loop starts
        expected = [(sim.pub_joint, 2), (sim.pub_motor, 2), (sim.pub_clock, 4),
                    (controller.pub, 2), (excitation.pub, 2)]
        _spin_until(executor, lambda: all(p is None or p.get_subscription_count() >= k
                                          for p, k in expected), 20.0)
        bag = recorder.on_start(None, Trigger.Response())
        if not bag.success:
            raise IdentificationError(f"recorder: {bag.message}")
        excitation.on_start(None, Trigger.Response())
        t_loop = time.perf_counter()
        steps0 = sim.commands
        from robot_identification.progress import bar
        with bar(total=round(excitation.traj.duration, 3), desc="excite + record",
                 unit="s") as pbar:
            def tick():
                done = round((sim.commands - steps0) / sim.sim.rate_hz, 3)
                pbar.update(max(0.0, min(done, pbar.total) - pbar.n))
            _spin_until(executor, lambda: not excitation.active, args.timeout, tick)
        loop_wall = time.perf_counter() - t_loop
        drain = time.monotonic() + 0.3      # the last state is still in flight
        _spin_until(executor, lambda: time.monotonic() > drain, 10.0)
        steps = sim.commands - steps0
        stopped = recorder.on_stop(None, Trigger.Response())
        print(f"control loop: {steps} periods ({steps / sim.sim.rate_hz:.2f} s simulated) in "
              f"{loop_wall:.2f} s wall = {steps / loop_wall:.0f} Hz (lockstep)")
        print(f"recorded {stopped.message}")
        sent = action.send_goal_async(Identify.Goal(bag=Path(recorder.last_bag).name))
        _spin_until(executor, sent.done, 30.0)
        if not sent.result().accepted:
            raise IdentificationError("identifier: the Identify goal was rejected")
        done = sent.result().get_result_async()
        _spin_until(executor, done.done, args.timeout)
        res = done.result().result
        if not res.success:
            raise IdentificationError(f"identifier: {res.message}")
    finally:
        recorder.shutdown()               # a bag cut short still gets its metadata
        for node in nodes:
            executor.remove_node(node)
            node.destroy_node()
    result = identifier.result
    print(format_table(result))
    nme = result.normalised_mean_error(exclude=("coulomb", "stiction", "stribeck"))
    nme_all = result.normalised_mean_error(
        exclude=("viscous", "coulomb", "stiction", "stribeck", "offset"))
    # (the table's last line gives the error over all and without Coulomb/static friction)
    print(f"normalised mean error without any friction term: {nme_all:.4f}")
    for name in result.names:
        if name.endswith(".stiffness"):
            i = result.names.index(name)
            err = abs(result.estimate.values[i] / result.true_values[i] - 1)
            print(f"{name}: {result.estimate.values[i]:.2f} (true {result.true_values[i]:.2f}, "
                  f"error {100 * err:.3f} %)")
    print(f"bag:          {Path(recorder.last_bag).resolve()}")
    print(f"results.yaml: {(out / 'results.yaml').resolve()}")
    print(f"demo wall time: {time.perf_counter() - t_wall:.1f} s")
    return 0 if np.isfinite(nme) else 1


def _spin_until(executor, done, timeout, tick=None):
    from robot_identification.errors import IdentificationError
    end = time.monotonic() + timeout
    k = 0
    while not done():
        if time.monotonic() > end:
            raise IdentificationError(f"timed out after {timeout:.0f} s")
        executor.spin_once(timeout_sec=0.05)
        k += 1
        if tick is not None and k % 200 == 0:
            tick()
