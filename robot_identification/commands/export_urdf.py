"""``robot-identification export-urdf``: URDF with the physically consistent estimate."""
from __future__ import annotations

from pathlib import Path

from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, input_paths, robot_from_args)

NAME = "export-urdf"
HELP = ("write the robot's URDF with inertials (and joint friction) replaced by the "
        "physically consistent estimate of a results.yaml")
ORDER = 45


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--results", required=True, help="results.yaml written by identify")
    p.add_argument("--output", required=True, help="URDF file to write")


def physical_standard(model, results):
    """The ``estimates.physical`` standard parameters (P,) of a results file, in
    ``model.parameter_names`` order.

    Raises
    ------
    DataError
        No physically consistent estimate, or standard parameters of the model missing.
    """
    import numpy as np  # start-up: commands/__init__.py

    from robot_identification.errors import DataError  # start-up: commands/__init__.py
    from robot_identification.report import read_results  # start-up: commands/__init__.py
    doc = read_results(results, model)
    phys = (doc.get("estimates") or {}).get("physical")
    if not phys:
        raise DataError(f"'{results}' has no physically consistent estimate; run identify "
                        f"with --physical")
    sp = phys.get("standard_parameters") or {}
    missing = [n for n in model.parameter_names if n not in sp]
    if missing:
        raise DataError(f"'{results}' lacks standard parameters {missing[:5]} of robot "
                        f"'{model.config.name}'")
    return np.array([sp[n] for n in model.parameter_names])


def export_from_results(model, results, output, inputs=()):
    """Export the ``estimates.physical`` standard parameters of ``results`` to ``output``."""
    from robot_identification.report import export_urdf  # start-up: commands/__init__.py
    pi = physical_standard(model, results)
    return export_urdf(model, pi, output,
                       comment=f"physically consistent estimate from {Path(results).name}",
                       inputs=tuple(inputs) + (results,))


def run(args):
    model = robot_from_args(args)
    check_output_argument(args, model)
    out = export_from_results(model, args.results, args.output, input_paths(args, model))
    print(f"wrote {Path(out).resolve()}")
    extra = [k for k in ("stiction", "stribeck", "stiffness", "damping")
             if k in model.drive_parameter_keys()]
    if extra:
        print(f"note: URDF has no element for {', '.join(extra)}: their identified values are "
              f"in a comment at the top of the file, and a simulator reading only the URDF "
              f"will not apply them")
    return 0
