"""identifier: bag confinement, newest bag, read-only results; recorder: never overwrites."""

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robot_identification.data import write_bag  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import REPO, ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(137)


@pytest.fixture(scope="module")
def sim_bag(tmp_path_factory):
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("zollo_planar")
    data = tmp_path_factory.mktemp("data")
    write_bag(simulate(model), data / "run_a")
    return data


def identifier(context, data, **params):
    """An Identifier spun by its own executor thread (its Trigger handler waits for the
    executor, like a service call from another process); destroy_node stops the thread."""
    import threading

    from rclpy.executors import SingleThreadedExecutor

    from robot_identification.nodes.identifier import Identifier
    node = Identifier(context=context, parameter_overrides=[
        Parameter("data_directory", value=str(data)),
        *[Parameter(k, value=v) for k, v in params.items()]])
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [ex.spin_once(timeout_sec=0.05)
                                              for _ in iter(stop.is_set, True)])
    thread.start()
    destroy = node.destroy_node

    def destroy_node():
        stop.set()
        thread.join()
        node.shutdown()
        return destroy()
    node.destroy_node = destroy_node
    return node


def test_identifies_newest_bag_and_publishes_typed_result(context, sim_bag, tmp_path):
    node = identifier(context, sim_bag, results_file=str(tmp_path / "results.yaml"))
    try:
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert res.success, res.message
        names = node.get_parameter("result.names").value
        est = np.array(node.get_parameter("result.estimates").value)
        k1 = est[list(names).index("joint1.stiffness")]
        assert abs(k1 / 3000.0 - 1) < 0.01
        assert node.get_parameter("result.bag").value == str((sim_bag / "run_a").resolve())
        refused = node.set_parameters([Parameter("result.estimates", value=[1.0])])[0]
        assert not refused.successful and "outputs" in refused.reason
    finally:
        node.destroy_node()


def test_large_bag_is_identified_streaming(context, sim_bag, tmp_path):
    """Above stream_above_samples the identifier reads the bag in chunks (bounded memory)."""
    node = identifier(context, sim_bag, stream_above_samples=100, effort_lag_periods=0.5,
                      compare_with_nominal=True, results_file=str(tmp_path / "results.yaml"))
    try:
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert res.success, res.message
        assert node.result.settings["n_input"] > 100        # the streaming path was taken
        # ... with the robot config's pre-processing strategy, as small bags
        assert node.result.settings["preprocessing"] == \
            node.model.config.identification.preprocessing
        names = list(node.get_parameter("result.names").value)
        est = np.array(node.get_parameter("result.estimates").value)
        for k, true in (("joint1.stiffness", 3000.0), ("joint2.stiffness", 1800.0)):
            assert abs(est[names.index(k)] / true - 1) < 0.01, k
    finally:
        node.destroy_node()


@pytest.mark.parametrize("bag", ["../outside", "/etc", "run_a/../../x"])
def test_bag_outside_data_directory_is_refused(context, sim_bag, bag):
    node = identifier(context, sim_bag, bag=bag)
    try:
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert not res.success and "outside the data directory" in res.message
    finally:
        node.destroy_node()


def test_missing_bag_and_empty_directory(context, tmp_path):
    node = identifier(context, tmp_path, bag="nope")
    try:
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert not res.success and "does not exist" in res.message
        node.set_parameters([Parameter("bag", value="")])
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert not res.success and "no complete bag" in res.message
    finally:
        node.destroy_node()


def test_bad_estimator_parameter_is_refused(context, tmp_path):
    with pytest.raises(ValueError, match="estimator"):
        identifier(context, tmp_path, estimator="magic")


def test_recorder_never_overwrites(context, tmp_path):
    from robot_identification.nodes.recorder import Recorder
    node = Recorder(context=context, parameter_overrides=[
        Parameter("data_directory", value=str(tmp_path))])
    try:
        paths = []
        for _ in range(2):         # twice within the same second: distinct bags
            start = node.on_start(Trigger.Request(), Trigger.Response())
            assert start.success
            paths.append(start.message)
            assert not node.on_start(Trigger.Request(), Trigger.Response()).success
            assert node.on_stop(Trigger.Request(), Trigger.Response()).success
        assert paths[0] != paths[1]
        assert all((tmp_path / p).joinpath("metadata.yaml").exists() for p in paths)
        assert not node.on_stop(Trigger.Request(), Trigger.Response()).success
    finally:
        node.destroy_node()


def test_results_file_inside_the_bag_is_refused(context, sim_bag):
    """Issue #12: results_file naming the bag's metadata.yaml (or any file in a bag) is refused
    before identification; the bag is unchanged."""
    meta = sim_bag / "run_a" / "metadata.yaml"
    before = meta.read_bytes()
    node = identifier(context, sim_bag, results_file=str(meta))
    try:
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert not res.success
        assert "never" in res.message and "run_a" in res.message, res.message
    finally:
        node.destroy_node()
    assert meta.read_bytes() == before
    assert sorted(p.name for p in (sim_bag / "run_a").iterdir()) == ["metadata.yaml",
                                                                     "run_a.mcap"]


def test_results_file_over_the_robot_config_is_refused(context, sim_bag, tmp_path):
    """results_file naming the robot config (or its URDF) was written over it: only the bag
    counted as an input."""
    import yaml
    cfg = yaml.safe_load((REPO / "config" / "robots" / "zollo_planar.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "zollo_planar.urdf")
    path = tmp_path / "zollo.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    before = path.read_bytes()
    node = identifier(context, sim_bag, robot_config=str(path), results_file=str(path))
    try:
        res = node.on_identify(Trigger.Request(), Trigger.Response())
        assert not res.success and "is the input" in res.message, res.message
    finally:
        node.destroy_node()
    assert path.read_bytes() == before
