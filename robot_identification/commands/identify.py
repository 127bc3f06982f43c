"""``robot-identification identify``: batch identification of base parameters."""
from __future__ import annotations

import argparse
from pathlib import Path

from robot_identification.commands._common import (
    add_effort_lag_argument, add_robot_arguments, check_output_argument, input_paths,
    load_data, robot_from_args)

NAME = "identify"
HELP = "identify base parameters from recorded or simulated data; writes results.yaml"
ORDER = 20


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--data", nargs="+", required=True,
                   help="dataset(s): .npz, rosbag2 directory, .mcap or .csv")
    p.add_argument("--output", default="results.yaml", help="results file (default results.yaml)")
    p.add_argument("--estimator", choices=("ols", "wls"), help="override the config's estimator")
    p.add_argument("--velocity-threshold", type=float,
                   help="reject friction rows below this velocity [rad/s]")
    p.add_argument("--cutoff", type=float, help="Butterworth cut-off [Hz]")
    p.add_argument("--numerical-derivatives", action="store_true",
                   help="ignore measured velocities/accelerations; differentiate positions")
    add_effort_lag_argument(p)
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    p.add_argument("--physical", action=argparse.BooleanOptionalAction, default=None,
                   help="also write OLS, WLS and a physically consistent estimate (pseudo-"
                        "inertia LMIs) under 'estimates:' (default: on for rigid models)")


def run(args):
    from dataclasses import replace

    from robot_identification.pipeline import identify
    from robot_identification.report import format_table, write_results
    model = robot_from_args(args)
    check_output_argument(args, model)
    settings = model.config.identification
    if args.velocity_threshold is not None:
        settings = replace(settings, velocity_threshold=args.velocity_threshold)
    if args.cutoff is not None:
        settings = replace(settings, cutoff_hz=args.cutoff)
    datasets = [load_data(p, model, args.effort_lag) for p in args.data]
    result = identify(model, datasets, settings, estimator=args.estimator,
                      use_measured_derivatives=not args.numerical_derivatives)
    out = write_results(result, args.output, model, inputs=input_paths(args))
    if args.physical or (args.physical is None and not model.config.elastic):
        import sys

        from robot_identification.errors import IdentificationError
        from robot_identification.validation import compute_estimates, write_estimates
        try:
            estimates = compute_estimates(model, result, physical=True)
        except IdentificationError as exc:
            if args.physical:
                raise
            print(f"physically consistent estimate skipped: {exc}", file=sys.stderr)
            estimates = compute_estimates(model, result, physical=False)
        write_estimates(out, model, estimates, extra={"data": [str(p) for p in args.data]},
                        inputs=input_paths(args), diagnostics=result.diagnostics)
    if not args.quiet:
        print(format_table(result))
    for d in result.diagnostics:
        print(d)
    print(f"wrote {Path(out).resolve()}")
    return 0
