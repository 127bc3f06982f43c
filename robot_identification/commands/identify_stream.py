"""``robot-identification identify-stream``: bounded-memory identification of long recordings
with causal FIR filters (polynomial approximation or Savitzky-Golay) and any estimator of the
engine's registry (:data:`robot_identification.choices.ESTIMATORS`)."""
from __future__ import annotations


from robot_identification.choices import ESTIMATORS
from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, input_paths, robot_from_args,
    write_unless_errors)

NAME = "identify-stream"
HELP = ("identify base parameters from a long recording in bounded memory (causal FIR "
        "filters: polynomial approximation or Savitzky-Golay; every estimator of identify); "
        "writes results.yaml")
ORDER = 21


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--data", required=True,
                   help="recording: .npz, dataset directory of .npy files, rosbag2 dir / .mcap")
    p.add_argument("--output", default="results.yaml", help="results file (default results.yaml)")
    p.add_argument("--estimator", choices=ESTIMATORS,
                   help="estimator (default: the robot config's identification.estimator, "
                        "wls unless it says otherwise, as identify; irls reads the recording "
                        "once per iteration)")
    p.add_argument("--filter", choices=("pa", "savgol"), default="pa",
                   help="FIR bank: polynomial approximation (Lomakin & Deutscher) or "
                        "Savitzky-Golay")
    p.add_argument("--window", type=float, default=0.05,
                   help="PA window T [s] (savgol: window [s], rounded to an odd sample count)")
    p.add_argument("--degree", type=int, default=1, help="PA projection degree N")
    p.add_argument("--order", type=int, default=3, help="Savitzky-Golay polynomial order")
    p.add_argument("--alpha", type=float, default=3.0, help="PA Jacobi exponent alpha")
    p.add_argument("--beta", type=float, default=3.0, help="PA Jacobi exponent beta")
    p.add_argument("--delay", type=float, help="PA delay t_d [s] (default: zero of P_{N+1})")
    p.add_argument("--decimate", type=int, default=1,
                   help="regressor on every k-th filtered sample (FIR = anti-alias filter)")
    p.add_argument("--chunk", type=int, default=200_000, help="samples read per chunk")
    p.add_argument("--velocity-threshold", type=float,
                   help="reject friction rows below this velocity [rad/s]")
    p.add_argument("--bounds", choices=("none", "nominal"), default="none",
                   help="box constraints for mrls/bounded: 'nominal' = standard_bounds around "
                        "the config's nominal parameters, transferred to base parameters")
    p.add_argument("--effort-lag", type=float, default=0.0, metavar="PERIODS",
                   help="rosbag2 only: recorded efforts lag the states by this many sample "
                        "periods (0.5 for simulated_robot bags, as the demo's identifier node "
                        "uses; default 0, the identifier node's default)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")


def run(args):
    import numpy as np

    from robot_identification.errors import DataError
    from robot_identification.estimation import base_bounds, standard_bounds
    from robot_identification.identifiability import base_parameters
    from robot_identification.report import format_table, write_results
    from robot_identification.streaming import identify_streaming, iter_chunks, make_bank
    model = robot_from_args(args)
    check_output_argument(args, model)
    if args.chunk < 2:
        raise DataError(f"--chunk must be at least 2 samples, got {args.chunk}")
    if not 0 <= args.effort_lag < 1:
        raise DataError(f"--effort-lag must be in [0, 1) periods for streaming, got "
                        f"{args.effort_lag}")
    chunks = iter(iter_chunks(args.data, args.chunk, effort_lag=args.effort_lag))
    try:
        first = next(chunks)
    except StopIteration:
        raise DataError(f"'{args.data}' holds no samples") from None
    if first.t.shape[0] < 2:
        rep = int(first.metadata.get("duplicates_dropped", 0) or 0)
        raise DataError(f"first chunk of '{args.data}' has fewer than 2 samples" + (
            f": {rep} message(s) repeat the stamp of the one before (a driver that does not "
            f"stamp its messages, or stamps 0?)" if rep else ""))
    dt = float(np.median(np.diff(first.t)))
    if not dt > 0:
        raise DataError(f"time stamps of '{args.data}' do not increase (median step {dt} s)")
    first.validate(min_samples=2)                      # names the file; time in seconds
    fs = round(1.0 / dt, 6)
    if not 0 < args.window < np.inf:
        raise DataError(f"--window must be a finite number > 0 s, got {args.window}")
    if args.velocity_threshold is not None and not 0 <= args.velocity_threshold < np.inf:
        raise DataError(f"--velocity-threshold must be a finite number >= 0 rad/s, got "
                        f"{args.velocity_threshold}")
    if args.filter == "pa":
        bank = make_bank("pa", fs, window=args.window, N=args.degree, alpha=args.alpha,
                         beta=args.beta, delay=args.delay)
    else:
        length = max(int(round(args.window * fs)) | 1, 5)
        bank = make_bank("savgol", fs, length=length, order=args.order)
    base = base_parameters(model)
    bounds = None
    if args.bounds == "nominal":
        bounds = base_bounds(base.grouping, *standard_bounds(model), names=model.parameter_names)
    elif args.estimator == "bounded":
        raise DataError("--estimator bounded needs --bounds nominal")

    from robot_identification.identification import Recording
    chunks.close() if hasattr(chunks, "close") else None
    # re-readable: irls reads the recording once per iteration
    recording = Recording(lambda: iter_chunks(args.data, args.chunk, effort_lag=args.effort_lag),
                          args.data)
    result = identify_streaming(model, recording, bank=bank, decimate=args.decimate,
                                estimator=args.estimator, base=base, bounds=bounds,
                                velocity_threshold=args.velocity_threshold)
    if not args.quiet:
        print(format_table(result))
        if "flags" in result.settings:
            bad = {nm: f for nm, f in zip(result.names, result.settings["flags"]) if f != 1}
            print("MRLS flags: all identified" if not bad else
                  "MRLS flags (0 not excited, -1 dependent; initial value kept): " + str(bad))
    for d in result.diagnostics:
        if d.severity == "error":
            print(d)
    write_unless_errors(result, args, lambda: write_results(result, args.output, model,
                                                            inputs=input_paths(args)))
    return 0
