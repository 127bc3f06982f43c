"""``robot-identification identify``: identification of base parameters from recordings, with
any pre-processing strategy and any set of estimators of the engine."""
from __future__ import annotations

import argparse

from robot_identification.commands._common import (
    add_derivatives_argument, add_effort_lag_argument, add_robot_arguments,
    check_output_argument, input_paths, print_result,
    load_datasets, open_recordings, robot_from_args, write_unless_errors)
from robot_identification.choices import ESTIMATOR_CHOICES, PREPROCESSING

NAME = "identify"
HELP = "identify base parameters from recorded or simulated data; writes results.yaml"
ORDER = 20


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--data", nargs="+", required=True,
                   help="dataset(s): .npz, rosbag2 directory, .mcap or .csv")
    p.add_argument("--output", default="results.yaml", help="results file (default results.yaml)")
    p.add_argument("--estimator", action="append", choices=ESTIMATOR_CHOICES, metavar="NAME",
                   help=f"estimator ({', '.join(ESTIMATOR_CHOICES)}); repeat for several, the "
                        f"first is the primary estimate; auto (first only): wls or physical, "
                        f"whichever predicts held-out identification data better (default: "
                        f"the robot config's identification.estimator, auto unless it says "
                        f"otherwise)")
    p.add_argument("--prior", help="prior of mrls/bounded/physical: 'nominal' (the robot "
                                   "config's parameters), 'none', or a YAML file with "
                                   "standard_parameters (default: the config's, 'nominal')")
    p.add_argument("--preprocessing", choices=PREPROCESSING,
                   help="pre-processing strategy (default: the robot config's)")
    p.add_argument("--velocity-threshold", type=float,
                   help="reject friction rows below this velocity [rad/s]")
    p.add_argument("--cutoff", type=float, help="Butterworth cut-off [Hz]")
    add_derivatives_argument(p)
    add_effort_lag_argument(p)
    p.add_argument("--workers", type=int, default=1,
                   help="compute the recordings' normal equations on a local Dask cluster of "
                        "this many worker processes (default 1: in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="use an existing Dask scheduler instead of a local cluster (its "
                        "workers must see the --data files); start each worker with "
                        "'dask worker SCHEDULER --nthreads 1 --preload "
                        "robot_identification.dask_worker' (the engine imported and warmed "
                        "up before its first job: docs/performance.md)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    p.add_argument("--select", action="store_true",
                   help="choose cut-off, Coulomb deadband and reversal handling by cross-"
                        "validation on the given data (leave-one-recording-out, or 3 time "
                        "blocks of a single recording) and print the table")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --output, and write it even when a diagnostic of "
                        "severity error says the result is wrong (it then says status: "
                        "error; the exit code stays 3)")
    p.add_argument("--physical", action=argparse.BooleanOptionalAction, default=None,
                   help="also compute OLS, WLS and a physically consistent estimate (pseudo-"
                        "inertia LMIs) under 'estimates:' (default: on for rigid models when "
                        "no --estimator is given)")


def estimator_list(args, model) -> tuple:
    """Estimators to compute: ``--estimator`` (repeated) or the config's, plus ols, wls and
    physical for ``--physical`` (default on rigid arms when no --estimator is given)."""
    names = list(args.estimator or model.config.identification.estimators)
    physical = args.physical if args.physical is not None else (
        not args.estimator and not model.config.elastic)
    if physical:
        names += [e for e in ("ols", "wls", "physical") if e not in names]
    return tuple(dict.fromkeys(names))


def run(args):
    from robot_identification._dask import check_workers  # start-up: commands/__init__.py
    from robot_identification.identification import with_overrides  # start-up
    check_workers(args.workers, args.scheduler)
    model = robot_from_args(args)
    check_output_argument(args, model)
    settings = with_overrides(model.config.identification,
                              velocity_threshold=args.velocity_threshold,
                              cutoff_hz=args.cutoff, preprocessing=args.preprocessing,
                              prior=args.prior)
    table = None
    if args.select:      # cross-validation cuts recordings into blocks: loaded whole
        datasets = load_datasets(args.data, model, args.effort_lag,
                                 measured_velocities=not args.numerical_derivatives)
        from robot_identification.validation import format_selection, select  # start-up
        settings, table = select(model, datasets, settings)
        print(format_selection(table, " (leave-one-recording-out)" if len(datasets) > 1
                               else " (3 time blocks)"))
        whole = {str(p): "--select" for p in args.data}
    else:                # streamed chunk by chunk where the format allows (memory bounded)
        datasets, whole = open_recordings(args.data, model, args.effort_lag,
                                          measured_velocities=not args.numerical_derivatives)
    if whole and not args.quiet:
        rest = "; the others streamed" if len(whole) < len(args.data) else ""
        print(f"read whole ({', '.join(sorted(set(whole.values())))}): "
              f"{', '.join(whole)}{rest}")
    return identify_and_write(args, model, datasets, settings, estimator_list(args, model),
                              selection=table, recordings_read={
                                  str(p): "whole (" + whole[str(p)] + ")" if str(p) in whole
                                  else "streamed" for p in args.data},
                              use_measured_derivatives=not args.numerical_derivatives,
                              workers=args.workers, scheduler=args.scheduler)


def identify_and_write(args, model, recordings, settings, estimators, selection=None,
                       recordings_read=None, **engine):
    """The engine's :func:`~robot_identification.identification.identify` of the
    recordings, results.yaml written, table, MRLS flags and diagnostics printed: the end of
    ``identify`` and ``identify-stream`` (``engine``: further keyword arguments of
    identify)."""
    from robot_identification.identification import identify  # start-up: commands/__init__.py
    from robot_identification.report import format_table, write_results  # start-up
    result = identify(model, recordings, settings, estimators=estimators, **engine)
    auto = result.settings.get("estimator_selection")
    if auto:                             # estimator: auto: the choice and the scores
        from robot_identification.identification import format_estimator_selection  # start-up
        print(format_estimator_selection(auto))
    data = args.data if isinstance(args.data, (list, tuple)) else [args.data]
    result.settings["data"] = [str(p) for p in data]
    if recordings_read:      # how each recording was read: streamed, or whole and why
        result.settings["recordings_read"] = recordings_read
    if selection is not None:
        from robot_identification.validation import selection_diagnostics  # start-up
        result.settings["selection"] = selection
        result.diagnostics += selection_diagnostics(model, selection)
    print_result(result, args, format_table(result))
    if not args.quiet and "flags" in result.settings:
        bad = {nm: f for nm, f in zip(result.names, result.settings["flags"]) if f != 1}
        print("MRLS flags: all identified" if not bad else
              "MRLS flags (0 not excited, -1 dependent; initial value kept): " + str(bad))
    write_unless_errors(result, args, lambda: write_results(result, args.output, model,
                                                            inputs=input_paths(args)))
    return 0
