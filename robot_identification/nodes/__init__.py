"""rclpy nodes: thin wrappers over the ROS-free core (the only package that imports rclpy).

- ``simulated_robot`` -- the core simulator behind ros2_control-style topics
- ``hardware_robot`` -- a stand-in for ros2_control hardware: free-running on the wall clock,
  the last command applied until a new one arrives
- ``excitation_publisher`` -- streams an excitation trajectory as a reference
- ``pd_controller`` -- joint-space PD (+ gravity compensation) with watchdog
- ``recorder`` -- records states and commands into a rosbag2 (MCAP)
- ``identifier`` -- the ``Identify`` action (bags or live topics; feedback, cancel, queue)
- ``online_identifier`` -- recursive estimates while the robot moves (live or replayed)
- ``bag_player`` -- replays a rosbag2 at its recorded timing with ``/clock``

Topics, services and parameters: docs/ros.md.
"""


def __getattr__(name):
    """``SimulationGraph`` (the simulated graph in one process, ``nodes/_graph.py``), imported
    on first use: importing this package does not import rclpy."""
    if name == "SimulationGraph":
        from robot_identification.nodes._graph import SimulationGraph  # rclpy on first use
        return SimulationGraph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
