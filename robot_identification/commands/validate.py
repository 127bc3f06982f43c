"""``robot-identification validate``: predicted vs measured torque on held-out data."""
from __future__ import annotations

from types import SimpleNamespace

from robot_identification.commands._common import (
    add_derivatives_argument, add_effort_lag_argument, add_robot_arguments,
    check_output_argument, input_paths,
    load_datasets, print_result, robot_from_args, write_unless_errors)

NAME = "validate"
HELP = ("compare the torque predicted by the nominal URDF and each identified estimate "
        "with measured torque on held-out data; writes validation.yaml")
ORDER = 30


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--results", required=True, help="results.yaml written by identify")
    p.add_argument("--data", nargs="+", required=True,
                   help="held-out dataset(s): .npz, rosbag2 directory, .mcap or .csv")
    p.add_argument("--output", default="validation.yaml",
                   help="validation file (default validation.yaml)")
    p.add_argument("--primary", help="estimate reported in files[*].joints "
                                     "(default: the results file's primary estimate, its "
                                     "base_parameters)")
    p.add_argument("--rest-velocity", type=float,
                   help="|dq| below this counts as rest (Coulomb term 0) when predicting "
                        "[rad/s]; default: the identification's friction deadband from the "
                        "results file (1e-3 for older results files)")
    add_effort_lag_argument(p)
    add_derivatives_argument(p)
    p.add_argument("--rollout", action="store_true",
                   help="also replay the recordings through the identified (physically "
                        "consistent) and the nominal model in MuJoCo over windows from the "
                        "measured state; position/velocity tracking error per joint "
                        "(validation.yaml rollout:)")
    p.add_argument("--window", type=float,
                   help="rollout window [s] (default 2 closed loop, 0.5 open loop: an "
                        "open-loop arm's errors grow fast)")
    p.add_argument("--closed-loop", choices=("auto", "on", "off"), default="auto",
                   help="rollout: run the recording's PD controller against its reference "
                        "(auto: where the recording's metadata holds them) or replay the "
                        "torques open loop")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --output, and write it even when a data check "
                        "of severity error says the held-out data are wrong (positions in "
                        "degrees, a torque sign; it then says status: error; the exit code "
                        "stays 3)")


def run(args):
    from robot_identification.errors import DataError  # start-up: commands/__init__.py
    from robot_identification.validation import (  # start-up: commands/__init__.py
        check_held_out, cutoff_notes, format_validation, load_estimates, positions_cutoff_of,
        validate, write_validation)
    from robot_identification.identification import settings_from_results  # start-up
    model = robot_from_args(args)
    check_output_argument(args, model)
    base, models, doc = load_estimates(args.results, model)
    if args.primary and args.primary not in models:
        raise DataError(f"--primary {args.primary}: '{args.results}' has {list(models)}")
    datasets = load_datasets(args.data, model, args.effort_lag,
                             measured_velocities=not args.numerical_derivatives)
    checks = SimpleNamespace(diagnostics=check_held_out(model, datasets, list(args.data)))
    files = validate(model, base, models, datasets, settings_from_results(model, doc),
                     labels=list(args.data), rest_velocity=args.rest_velocity,
                     cutoff_without_velocities=positions_cutoff_of(doc))
    checks.diagnostics += cutoff_notes(files, doc)
    roll = rollouts(args, model, datasets) if args.rollout else None
    # the results file's primary estimate (its base_parameters) is the one reported
    primary = args.primary or (doc.get("estimator") if doc.get("estimator") in models
                               else None)
    table = format_validation(files)
    if roll:
        from robot_identification.validation import format_rollout  # start-up
        table += "\n" + format_rollout(roll)
    print_result(checks, args, table)
    # errors in the held-out data (degrees, a torque sign): nothing written unless --force
    write_unless_errors(checks, args, lambda: write_validation(
        args.output, model.config.name, files, primary, inputs=input_paths(args, model),
        rollout=roll, diagnostics=checks.diagnostics))
    return 0


def rollouts(args, model, datasets, keep_signals=False):
    """``--rollout``: the nominal model and the physically consistent estimate of
    ``--results`` rolled out on the datasets (:func:`rollout_validate`)."""
    import math  # start-up: commands/__init__.py

    from robot_identification.commands.export_urdf import physical_standard  # start-up
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from robot_identification.validation import rollout_validate  # start-up: commands/__init__.py
    if args.window is not None and not (math.isfinite(args.window) and args.window > 0):
        raise ConfigError(f"--window must be a finite number > 0 s, got {args.window}")
    models = {"nominal": model.nominal_parameters(),
              "physical": physical_standard(model, args.results)}
    closed = {"auto": "auto", "on": True, "off": False}[args.closed_loop]
    return rollout_validate(model, models, datasets, labels=list(args.data),
                            window=args.window, closed_loop=closed, keep_signals=keep_signals)
