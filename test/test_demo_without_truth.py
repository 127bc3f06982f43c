"""The demo's summary when the recording carries no true parameters (issue #28): it once
crashed with ``unsupported format string passed to NoneType.__format__`` (a bag recorded
with stale interfaces: the normalised mean error against the truth is None). It now says
so in one line and exits 1; with the truth it prints the error and exits 0.

The ROS graph is replaced by a stand-in that returns a real identification of a simulated
szabo_3dof run (the demo's own path over DDS is test/test_ros_demo.py).
"""
import argparse
import dataclasses
from pathlib import Path

import pytest

import test_unusual_files_and_values
from robot_identification.commands import demo
from robot_identification.identification import identify
from robot_identification.model import load_robot

pytestmark = pytest.mark.slow                     # a fault class (issue #28), rclpy imported

pytest.importorskip("rclpy")
nodes = pytest.importorskip("robot_identification.nodes")

run = test_unusual_files_and_values.run          # fixture: the szabo_3dof config and a 3 s run


@pytest.fixture(scope="module")
def result(run):
    model = load_robot(config=run / "robot.yaml")
    res = identify(model, run / "run.npz", estimator="ols")
    assert res.true_values is not None                  # simulate stores the truth
    return res


def _stand_in(result, bag):
    class Graph:
        nodes, rate_hz, duration, steps, last_bag = [], 1000.0, 3.0, 0, bag

        def __init__(self, *args, **kwargs):
            pass

        def wait_for_discovery(self, timeout):
            pass

        def excite_and_record(self, timeout, tick=None):
            return 3000, 1.0, f"wrote {bag}"

        def identify(self, bag, timeout):
            return result

        def close(self):
            pass
    return Graph


@pytest.mark.parametrize("truth", [True, False])
def test_demo_summary_with_and_without_the_truth(run, result, tmp_path, monkeypatch, capsys,
                                                 truth):
    if not truth:
        result = dataclasses.replace(result, true_values=None)
    monkeypatch.setattr(nodes, "SimulationGraph", _stand_in(result, Path(run / "run.npz")))
    args = argparse.Namespace(config=str(run / "robot.yaml"), urdf=None, executor="events",
                              engine="builtin", timeout=60.0, robot=None)
    rc = demo._run_graph(args, tmp_path, 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if truth:
        assert rc == 0, err
        assert "normalised mean error without any friction term: " in out
        assert "no true parameters" not in err
    else:
        assert rc == 1
        assert "normalised mean error without any friction term" not in out
        lines = [ln for ln in err.splitlines() if "no true parameters" in ln]
        assert len(lines) == 1 and lines[0].startswith("warning: demo:"), err
