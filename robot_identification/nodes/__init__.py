"""rclpy nodes: thin wrappers over the ROS-free core (the only package that imports rclpy).

- ``simulated_robot`` -- the core simulator behind ros2_control-style topics
- ``excitation_publisher`` -- streams an excitation trajectory as a reference
- ``pd_controller`` -- joint-space PD (+ gravity compensation) with watchdog
- ``recorder`` -- records states and commands into a rosbag2 (MCAP)
- ``identifier`` -- batch identification service on recorded bags

Topics, services and parameters: docs/ros.md.
"""
