"""``robot-identification export-mjcf``: MuJoCo model (MJCF) with the physically consistent
estimate."""
from __future__ import annotations

from pathlib import Path

from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, input_paths, robot_from_args)

NAME = "export-mjcf"
HELP = ("write a MuJoCo model (MJCF) of the robot with the physically consistent estimate of a "
        "results.yaml: inertias, armature, damping, frictionloss, tendon springs for elastic "
        "joints")
ORDER = 46


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--results", required=True, help="results.yaml written by identify")
    p.add_argument("--output", required=True, help="MJCF file to write (.xml)")
    p.add_argument("--coupling", choices=("complete", "reduced"),
                   help="elastic joints: rotor-link coupling to write (default the config's)")


def export_from_results(model, results, output, inputs=(), coupling=None):
    """Export the ``estimates.physical`` standard parameters of ``results`` as MJCF."""
    from robot_identification.commands.export_urdf import physical_standard  # start-up
    from robot_identification.report import export_mjcf  # start-up: commands/__init__.py
    pi = physical_standard(model, results)
    return export_mjcf(model, pi, output, coupling=coupling,
                       comment=f"physically consistent estimate from {Path(results).name}",
                       inputs=tuple(inputs) + (results,))


def run(args):
    model = robot_from_args(args)
    check_output_argument(args, model)
    out = export_from_results(model, args.results, args.output, input_paths(args, model),
                              args.coupling)
    print(f"wrote {Path(out).resolve()}")
    extra = [k for k in ("offset", "stiction", "stribeck") if k in model.drive_parameter_keys()]
    if extra:
        print(f"note: MJCF has no element for {', '.join(extra)}: their identified values are "
              f"in a comment at the top of the file")
    return 0
