"""Core results -> robot_identification_interfaces messages (the nodes' typed outputs)."""
from __future__ import annotations

import math

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from robot_identification_interfaces.msg import BaseParameter, Diagnostic, IdentificationResult

#: latched: a subscriber that joins later still receives the last result
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def diagnostic_msg(d) -> Diagnostic:
    """robot_identification.diagnostics.Diagnostic -> msg/Diagnostic."""
    return Diagnostic(code=d.code, severity=d.severity, message=d.message, subject=d.subject)


def result_msg(result, *, source="", results_file="", final=True, identified=None,
               stamp=None) -> IdentificationResult:
    """robot_identification.identification.IdentificationResult -> msg/IdentificationResult.

    Parameters
    ----------
    result : IdentificationResult
    source : str
        Bag path or ``live:<topic>``.
    results_file : str
    final : bool
    identified : sequence of bool, optional
        Per base parameter; default: MRLS flags in ``result.settings['flags']`` (1 =
        identified) when present, else finite standard deviations.
    stamp : builtin_interfaces/Time, optional
    """
    est = result.estimate
    n = len(result.names)
    if identified is None:
        flags = (result.settings or {}).get("flags")
        identified = ([int(f) == 1 for f in flags] if flags is not None
                      else [bool(np.isfinite(s)) for s in est.std])
    true = result.true_values if result.true_values is not None else [math.nan] * n
    units = list(result.units) if len(result.units) == n else [""] * n
    msg = IdentificationResult(
        robot=result.robot, source=str(source), estimator=str(est.method),
        parameters=[BaseParameter(name=result.names[i], expression=result.expressions[i],
                                  estimate=float(est.values[i]), std=float(est.std[i]),
                                  relative_std=float(est.relative_std[i]), unit=str(units[i]),
                                  identified=bool(identified[i]), true_value=float(true[i]))
                    for i in range(n)],
        diagnostics=[diagnostic_msg(d) for d in getattr(result, "diagnostics", [])],
        samples=int(result.n_samples), condition_number=float(est.condition_number),
        residual_rms=[float(v) for v in est.residual_rms],
        residual_labels=[str(v) for v in result.row_labels],
        results_file=str(results_file), final=bool(final))
    if stamp is not None:
        msg.header.stamp = stamp
    return msg
