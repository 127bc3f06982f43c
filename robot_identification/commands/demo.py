"""``robot-identification demo``: excite -> record -> identify through the ROS 2 node graph.

Runs the five nodes of launch/identification_sim.launch.py in one process on one executor
(rclpy's EventsExecutor by default, or the SingleThreadedExecutor), the simulated robot in
lockstep (deterministic, as fast as the machine allows), records a rosbag2 and identifies the
base parameters from it with an ``Identify`` action goal sent by a client node, as any other
node would (docs/ros.md).
"""
from __future__ import annotations

import os
import sys
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
    from robot_identification.errors import IdentificationError  # start-up: commands/__init__.py
    from robot_identification.outputs import check_output  # start-up: commands/__init__.py
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
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
        import rclpy  # start-up: commands/__init__.py
    except ImportError:
        raise IdentificationError("the demo needs rclpy: pip install 'ros-rclpy[fastrtps]' "
                                  "ros-sensor-msgs ros-std-srvs ros-trajectory-msgs "
                                  "ros-rosgraph-msgs (see docs/ros.md)") from None
    with rclpy.init(args=[], domain_id=domain):
        return _run_graph(args, out, domain)


def _run_graph(args, out, domain):
    import numpy as np  # start-up: commands/__init__.py

    from robot_identification.nodes import SimulationGraph  # start-up: commands/__init__.py
    from robot_identification.progress import bar  # start-up: commands/__init__.py
    from robot_identification.report import format_table  # start-up: commands/__init__.py

    if args.config:
        from robot_identification.model import load_robot  # start-up: commands/__init__.py
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
    t_wall = time.perf_counter()
    graph = SimulationGraph(robot, out, executor=args.executor, engine=args.engine,
                            velocity_threshold=threshold)
    try:
        print(f"ROS_DOMAIN_ID={domain}: {', '.join(n.get_name() for n in graph.nodes)}")
        graph.wait_for_discovery(20.0)
        with bar(total=round(graph.duration, 3), desc="excite + record", unit="s") as pbar:
            steps0 = graph.steps

            def tick():
                done = round((graph.steps - steps0) / graph.rate_hz, 3)
                pbar.update(max(0.0, min(done, pbar.total) - pbar.n))
            t_drain = time.perf_counter()
            steps, loop_wall, stopped = graph.excite_and_record(args.timeout, tick)
            drain = time.perf_counter() - t_drain - loop_wall
        print(f"control loop: {steps} periods ({steps / graph.rate_hz:.2f} s simulated) in "
              f"{loop_wall:.2f} s wall = {steps / loop_wall:.0f} Hz (lockstep)")
        print(f"recorded {stopped}")
        print(f"recorder stop (drain on the executor, no timeout): {drain:.2f} s")
        result = graph.identify(graph.last_bag, args.timeout)
        bag = graph.last_bag
    finally:
        graph.close()                      # a bag cut short still gets its metadata
    print(format_table(result))
    nme = result.normalised_mean_error(exclude=("coulomb", "stiction", "stribeck"))
    nme_all = result.normalised_mean_error(
        exclude=("viscous", "coulomb", "stiction", "stribeck", "offset"))
    # (the table's last line gives the error over all and without Coulomb/static friction)
    if nme is None or nme_all is None:      # no true parameters in the bag (once: stale
        print("warning: demo: the recording carries no true parameters; the error against "
              "the truth is not computed", file=sys.stderr)    # interfaces; None.__format__)
        nme = float("nan")
    else:
        print(f"normalised mean error without any friction term: {nme_all:.4f}")
    for name in result.names:
        if name.endswith(".stiffness") and result.true_values is not None:
            i = result.names.index(name)
            err = abs(result.estimate.values[i] / result.true_values[i] - 1)
            print(f"{name}: {result.estimate.values[i]:.2f} (true {result.true_values[i]:.2f}, "
                  f"error {100 * err:.3f} %)")
    print(f"bag:          {bag.resolve()}")
    print(f"results.yaml: {(out / 'results.yaml').resolve()}")
    print(f"demo wall time: {time.perf_counter() - t_wall:.1f} s")
    return 0 if np.isfinite(nme) else 1
