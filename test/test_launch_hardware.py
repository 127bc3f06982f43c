"""identification_robot.launch.py against the hardware-like robot (stand_in:=true: hardware_robot
on the wall clock, the last command applied, never waiting), driven as
benchmarks/hardware_robot_study.py drives it (that study runs the many sessions; these are the
suite's two): a normal session - no runaway (|dq| within the limits), the bag starts and stops
within one sample of the excitation, nothing lost (the held-out torque NRMSE against the core
pipeline's is printed: it depends on the load, see the study) - and the controller SIGKILLed 1 s
into the excitation - an ERROR on /diagnostics and the arm held (|dq| < 0.05 rad/s) by the
robot, which honours the commands' deadline. Real DDS, own ROS_DOMAIN_ID, LOCALHOST discovery,
events (service answers, statuses) instead of sleeps. Only collected with the launch stack."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

from conftest import ros_domain_id  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import hardware_robot_study as study  # noqa: E402

pytestmark = pytest.mark.ros
DOMAIN_ID = ros_domain_id(154)
ROS2 = Path(sys.executable).with_name("ros2")


@pytest.mark.skipif(not ROS2.exists(), reason="the ros2 command line (ros2launch) is missing")
# known intermittent fault (issue #24, open): f9d9b85 fixed one cause of a bag misplaced
# against its run (a recorder that had heard of no excitation publisher recorded from its own
# ~/start); a full-suite run with it gave a bag that began 366 periods AFTER the excitation's
# first reference (passed when re-run alone; its bag is gone). A 38-period bag with the same
# signature (the run's first states and references never reached the recorder, its commands
# did) was traced to late DDS discovery and fixed (require_recorder, reference_publishers:
# test_ros_recorder_discovery.py); that the 366 one had the same cause is not proven (a
# starved recorder losing states from the depth-10 state publisher looks the same for the
# states), so the rerun stays - a second failure is a failure
@pytest.mark.flaky(reruns=1)
def test_normal_session_against_the_hardware_like_robot(tmp_path):
    # heartbeat_timeout 2 s: a controller starved for the study's 0.5 s on a loaded machine
    # stops the run (as it should) - this session checks the data path, not the load
    r = study.run_session("puma560", 250.0, "normal", DOMAIN_ID, folder=tmp_path,
                          heartbeat_timeout=2.0)
    assert "failed" not in r, r
    assert r["runaway_ratio"] < 1.0 and r["faults"] == 0, r
    assert abs(r["bag_start_periods"]) <= 1 and abs(r["bag_end_periods"]) <= 1, r
    assert r["complete"] and r["lost"] == 0 and r["missing"] == 0, r
    # the accuracy depends on the load (the gains follow the measured loop delay): printed,
    # and measured over many sessions by the study (docs/ros.md), not asserted here
    print(f"held-out NRMSE {r.get('nrmse')} (core pipeline {r.get('core_nrmse')}), gains "
          f"scaled to {r.get('gain_scale')}, loop delay {r.get('loop_delay_max_s')} s")


@pytest.mark.skipif(not ROS2.exists(), reason="the ros2 command line (ros2launch) is missing")
def test_killed_controller_gives_an_error_and_the_arm_is_held(tmp_path):
    # heartbeat_timeout 1 s (= the watchdog period): with the study's 0.5 s a controller
    # starved for 0.531 s at load 1.7 stopped one full-suite run before the kill (stop 42);
    # the test is about the kill, the study measures the load
    r = study.run_session("puma560", 1000.0, "kill_controller", DOMAIN_ID, folder=tmp_path,
                          heartbeat_timeout=1.0)
    assert "failed" not in r, r
    assert r["error_from"] in ("excitation_publisher: excitation", "recorder: recording",
                               "hardware_robot: hardware"), r
    assert r["held_after_s"] is not None and r["runaway_ratio"] < 1.0, r
