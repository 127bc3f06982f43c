"""``robot-identification drive-gains``: drive gains from an unloaded/loaded pair."""
from __future__ import annotations

from pathlib import Path

from robot_identification.commands._common import (
    add_robot_arguments, input_paths, robot_from_args, same_recording)

NAME = "drive-gains"
HELP = ("identify joint drive gains [N m/A] from the same trajectory run without and with a "
        "known payload (Gautier & Briot 2011)")
ORDER = 25


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--unloaded", nargs="+", required=True, help="run(s) without payload (.csv)")
    p.add_argument("--loaded", nargs="+", required=True, help="run(s) with the payload (.csv)")
    p.add_argument("--payload-mass", type=float, required=True, help="payload mass [kg]")
    p.add_argument("--payload-com", type=float, nargs=3, default=(0.0, 0.0, 0.0),
                   metavar=("X", "Y", "Z"), help="payload centre of mass in the flange "
                   "frame [m] (default: point mass at the flange origin)")
    p.add_argument("--payload-frame", default="tool0", help="flange frame (default tool0)")
    p.add_argument("--estimator", choices=("ols", "wls"), default="wls")
    p.add_argument("--results", help="add the gains to this results.yaml (drive_gains:)")


def run(args):
    from robot_identification.data import load_dataset  # start-up: commands/__init__.py
    from robot_identification.data import csv_options  # start-up: commands/__init__.py
    from robot_identification.identification import (  # start-up: commands/__init__.py
        identify_drive_gains, payload_parameters)
    from robot_identification.report import read_results  # start-up: commands/__init__.py
    model = robot_from_args(args)
    if args.results:                # refuse a bad results file before the long computation
        read_results(args.results, model)
    ones = [1.0] * model.n          # read currents: tau column = current [A]
    un = [load_dataset(p, model=model, drive_gains=ones) for p in args.unloaded]
    lo = [load_dataset(p, model=model, drive_gains=ones) for p in args.loaded]
    phi = payload_parameters(model, args.payload_mass, args.payload_com, frame=args.payload_frame)
    both = [b for b in args.loaded if any(same_recording(a, b) for a in args.unloaded)]
    if both:
        from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
        raise ConfigError(f"{both[0]!r} is given as --unloaded and as --loaded (the same "
                          f"run with and without the payload): the payload's torque is "
                          f"the difference of two runs")
    res = identify_drive_gains(model, un, lo, phi, estimator=args.estimator)
    given = csv_options(model).get("drive_gains")
    print(f"{'joint':<22}{'identified':>12}{'std':>9}{'given':>10}{'payload':>10}"
          f"{'residual':>10}  [N m/A | N m rms]")
    for k, j in enumerate(model.joint_names):
        gv = f"{given[k]:10.4f}" if given else f"{'-':>10}"
        flag = "" if res.identified[k] else "  not identified: payload torque too small"
        print(f"{j:<22}{res.gains[k]:12.4f}{res.std[k]:9.4f}{gv}"
              f"{res.payload_torque_rms[k]:10.3f}{res.residual_rms[k]:10.3f}{flag}")
    if args.results:
        from robot_identification.report import add_to_results  # start-up: commands/__init__.py
        section = {"given": list(given) if given else None,
                   "identified": [float(g) for g in res.gains],
                   "identified_std": [float(s) for s in res.std],
                   "well_identified": [bool(v) for v in res.identified],
                   "payload_torque_rms": [float(v) for v in res.payload_torque_rms],
                   "method": f"Gautier & Briot 2011, payload {args.payload_mass} kg "
                             f"at {list(args.payload_com)} m in {args.payload_frame}, "
                             f"{args.estimator}",
                   "unloaded": [str(p) for p in args.unloaded],
                   "loaded": [str(p) for p in args.loaded]}
        others = [p for p in input_paths(args, model) if p != args.results]
        path = add_to_results(args.results, model, {"drive_gains": section},
                              inputs=others, what="--results")
        print(f"updated {Path(path).resolve()}")
    return 0
