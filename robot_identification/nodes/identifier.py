"""identifier: batch identification service on recorded bags.

``~/identify`` (std_srvs/Trigger) identifies the base parameters from the bag named by the
``bag`` parameter (a name or path inside ``data_directory``; '' = the newest complete bag) with
:func:`robot_identification.pipeline.identify`, writes results.yaml and exposes the result as
typed parameters ``result.names`` / ``result.estimates`` / ``result.std`` / ``result.bag``
(set only by this node: outside changes are refused). Bags with more than
``stream_above_samples`` link-state messages are identified in bounded memory with
:func:`robot_identification.streaming.identify_streaming` (polynomial-approximation filters,
the bag read in chunks).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from robot_identification.data import load_dataset
from robot_identification.errors import IdentificationError
from robot_identification.nodes._common import declare, declare_robot, main_for
from robot_identification.outputs import check_output
from robot_identification.pipeline import identify
from robot_identification.report import format_table, write_results

_RESULTS = {"result.names": ["none"], "result.expressions": ["none"], "result.estimates": [0.0],
            "result.std": [0.0], "result.bag": "", "result.file": ""}


class Identifier(Node):
    def __init__(self, **kwargs):
        super().__init__("identifier", **kwargs)
        self.model = declare_robot(self)
        self.data_directory = Path(declare(
            self, "data_directory", "robot_identification_data", "directory of the bags"))
        self.estimator = declare(self, "estimator", "", "ols | wls | '' (robot config's)",
                                 choices=("", "ols", "wls"))
        self.threshold = declare(self, "velocity_threshold", -1.0,
                                 "friction-row velocity threshold [rad/s]; < 0: config's",
                                 low=-1.0, high=100.0)
        self.results_file = declare(self, "results_file", "",
                                    "results.yaml path; '' = <data_directory>/<bag>_results.yaml")
        self.nominal_truth = declare(self, "compare_with_nominal", False,
                                     "simulation: compare with the nominal parameters")
        self.joint_topic = declare(self, "joint_states_topic", "/joint_states", "in the bag")
        self.motor_topic = declare(self, "motor_states_topic", "/motor_states", "in the bag")
        self.effort_lag = declare(
            self, "effort_lag_periods", 0.0, "recorded efforts lag the states by this many "
            "periods (0.5: torque held over the previous period, as simulated_robot publishes)",
            low=0.0, high=10.0)
        self.log_table = declare(self, "log_table", True, "log the result table")
        self.stream_above = declare(
            self, "stream_above_samples", 2_000_000, "bags with more link-state messages are "
            "identified in bounded memory (streaming, polynomial-approximation filters)",
            low=0, high=2_000_000_000)
        declare(self, "bag", "", "bag to identify (inside data_directory); '' = newest")
        self._internal = False
        for name, default in _RESULTS.items():
            declare(self, name, default, "identification output (read-only)")
        self.add_on_set_parameters_callback(self._guard_results)
        self.result = None
        self.create_service(Trigger, "~/identify", self.on_identify)

    def _guard_results(self, params):
        if not self._internal and any(p.name.startswith("result.") for p in params):
            return SetParametersResult(successful=False, reason="result.* are outputs")
        return SetParametersResult(successful=True)

    def resolve_bag(self) -> Path:
        """The requested bag, confined to the data directory."""
        root = self.data_directory.resolve()
        name = self.get_parameter("bag").value
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

    _SETTINGS = {"estimator": "estimator", "threshold": "velocity_threshold",
                 "results_file": "results_file", "nominal_truth": "compare_with_nominal",
                 "joint_topic": "joint_states_topic", "motor_topic": "motor_states_topic",
                 "effort_lag": "effort_lag_periods", "log_table": "log_table",
                 "stream_above": "stream_above_samples"}

    def _refresh(self):
        """Re-read the settings, so that parameters changed at run time take effect."""
        for attr, name in self._SETTINGS.items():
            setattr(self, attr, self.get_parameter(name).value)
        self.data_directory = Path(self.get_parameter("data_directory").value)

    def on_identify(self, request, response):
        log = self.get_logger()
        self._refresh()
        try:
            bag = self.resolve_bag()
            out = Path(self.results_file or self.data_directory / f"{bag.name}_results.yaml")
            check_output(out, (bag,), "results_file")     # before the long computation
            log.info(f"identifying {self.model.config.name} from {bag}")
            settings = self.model.config.identification
            if self.threshold >= 0:
                settings = replace(settings, velocity_threshold=self.threshold)
            n = _message_count(bag, self.joint_topic)
            if n is not None and n > self.stream_above:
                log.info(f"{n} samples: streaming identification in bounded memory")
                result = self._identify_streaming(bag, settings)
            else:
                ds = load_dataset(bag, joint_topic=self.joint_topic,
                                  motor_topic=self.motor_topic, effort_lag=self.effort_lag)
                if self.nominal_truth:
                    ds.true_parameters = dict(zip(self.model.parameter_names,
                                                  map(float, self.model.nominal_parameters())))
                result = identify(self.model, ds, settings, estimator=self.estimator or None,
                                  log=log.info)
            write_results(result, out, self.model, inputs=(bag,))
        except (IdentificationError, OSError) as exc:
            log.error(f"identification failed: {exc}")
            response.success, response.message = False, str(exc)
            return response
        except Exception as exc:  # noqa: BLE001 - a bad bag must not kill the service
            import traceback
            log.error(f"identification failed unexpectedly: {exc!r}\n{traceback.format_exc()}")
            response.success, response.message = False, f"internal error: {exc!r}"
            return response
        self.result = result
        self._internal = True
        try:
            self.set_parameters([
                Parameter("result.names", value=list(result.names)),
                Parameter("result.expressions", value=list(result.expressions)),
                Parameter("result.estimates", value=[float(v) for v in result.estimate.values]),
                Parameter("result.std", value=[float(v) for v in np.nan_to_num(
                    result.estimate.std, nan=-1.0)]),
                Parameter("result.bag", value=str(bag)),
                Parameter("result.file", value=str(out.resolve()))])
        finally:
            self._internal = False
        log.info(f"identified {len(result.names)} base parameters in {result.elapsed:.2f} s; "
                 f"wrote {out}" + (f"\n{format_table(result)}" if self.log_table else ""))
        for d in result.diagnostics:   # one line each, at the diagnostic's severity
            # (one call site per severity: rclpy refuses two severities from one line)
            if d.severity == "error":
                log.error(str(d))
            elif d.severity == "warning":
                log.warning(str(d))
            else:
                log.info(str(d))
        response.success, response.message = True, str(out.resolve())
        return response

    def _identify_streaming(self, bag, settings):
        from robot_identification.streaming import identify_streaming, iter_bag_chunks
        if self.effort_lag >= 1.0:
            raise IdentificationError("streaming identification supports effort_lag_periods "
                                      f"below 1, got {self.effort_lag}")
        chunks = iter_bag_chunks(bag, joint_topic=self.joint_topic, motor_topic=self.motor_topic,
                                 elastic=self.model.config.elastic, effort_lag=self.effort_lag)
        result = identify_streaming(self.model, chunks,
                                    estimator=self.estimator or settings.estimator,
                                    velocity_threshold=settings.velocity_threshold,
                                    log=self.get_logger().info)
        if self.nominal_truth:
            result.true_values = result.base.base_values(self.model.nominal_parameters())
        return result


def _message_count(bag, topic):
    """Messages on ``topic`` from the bag's metadata; None when unknown (e.g. a cut-off bag)."""
    try:
        from rosbags.rosbag2 import Reader
        with Reader(bag) as reader:
            return sum(c.msgcount for c in reader.connections if c.topic == topic)
    except Exception:  # noqa: BLE001 - any unreadable metadata: fall back to the batch path
        return None


def main(args=None):
    main_for(Identifier, args)


if __name__ == "__main__":
    main()
