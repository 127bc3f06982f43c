"""``robot-identification identify-stream``: ``identify --preprocessing polynomial`` of one
recording read chunk by chunk (bounded memory; ``--filter savgol``: the ``savgol`` strategy).
The settings are the robot config's ``identification`` section; the options below override
them. The engine, its estimators and the results file are those of ``identify``."""
from __future__ import annotations

from robot_identification.choices import ESTIMATOR_CHOICES
from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, robot_from_args)

NAME = "identify-stream"
HELP = ("identify --preprocessing polynomial of a long recording read chunk by chunk "
        "(bounded memory; every estimator of identify); writes results.yaml")
ORDER = 21


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--data", required=True,
                   help="recording: .npz, dataset directory of .npy files, rosbag2 dir / .mcap")
    p.add_argument("--output", default="results.yaml", help="results file (default results.yaml)")
    p.add_argument("--estimator", action="append", choices=ESTIMATOR_CHOICES, metavar="NAME",
                   help=f"estimator ({', '.join(ESTIMATOR_CHOICES)}); repeat for several, the "
                        f"first "
                        f"is the primary estimate (default: the robot config's; irls reads "
                        f"the recording once per iteration)")
    p.add_argument("--prior", help="prior of mrls/bounded/physical, as for identify")
    p.add_argument("--filter", choices=("polynomial", "pa", "savgol"), default="polynomial",
                   help="FIR strategy: polynomial approximation (Lomakin & Deutscher; 'pa' is "
                        "its former name) or Savitzky-Golay")
    p.add_argument("--window", type=float,
                   help="window [s] (default: the config's pa_window / savgol_window)")
    p.add_argument("--degree", type=int, help="PA projection degree N (default: pa_degree)")
    p.add_argument("--order", type=int, help="Savitzky-Golay order (default: savgol_order)")
    p.add_argument("--alpha", type=float, help="PA Jacobi exponent alpha (default: pa_alpha)")
    p.add_argument("--beta", type=float, help="PA Jacobi exponent beta (default: pa_beta)")
    p.add_argument("--delay", type=float, help="PA delay t_d [s] (default: pa_delay, the zero "
                                               "of P_{N+1})")
    p.add_argument("--decimate", type=int,
                   help="regressor on every k-th filtered sample (FIR = anti-alias filter)")
    p.add_argument("--chunk", type=int, default=200_000, help="samples read per chunk")
    p.add_argument("--velocity-threshold", type=float,
                   help="reject friction rows below this velocity [rad/s]")
    p.add_argument("--bounds", choices=("none", "nominal"), default="none",
                   help="'nominal': also box mrls (and bounded) with standard_bounds around the "
                        "config's nominal parameters, transferred to base parameters")
    p.add_argument("--effort-lag", type=float, default=0.0, metavar="PERIODS",
                   help="rosbag2 only: recorded efforts lag the states by this many sample "
                        "periods (0.5 for simulated_robot bags, as the demo's identifier node "
                        "uses; default 0, the identifier node's default)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")


def _check_first_chunk(path, chunk, effort_lag):
    """A clear error for a recording that cannot be streamed (no samples, repeated stamps)."""
    import numpy as np  # start-up: commands/__init__.py

    from robot_identification.errors import DataError  # start-up: commands/__init__.py
    from robot_identification.identification import iter_chunks  # start-up: commands/__init__.py
    chunks = iter(iter_chunks(path, chunk, effort_lag=effort_lag))
    try:
        first = next(chunks)
    except StopIteration:
        raise DataError(f"'{path}' holds no samples") from None
    finally:
        chunks.close() if hasattr(chunks, "close") else None
    if first.t.shape[0] < 2:
        rep = int(first.metadata.get("duplicates_dropped", 0) or 0)
        raise DataError(f"first chunk of '{path}' has fewer than 2 samples" + (
            f": {rep} message(s) repeat the stamp of the one before (a driver that does not "
            f"stamp its messages, or stamps 0?)" if rep else ""))
    dt = float(np.median(np.diff(first.t)))
    if not dt > 0:
        raise DataError(f"time stamps of '{path}' do not increase (median step {dt} s)")
    first.validate(min_samples=2)                      # names the file; time in seconds


def run(args):
    import math  # start-up: commands/__init__.py

    from robot_identification.commands.identify import identify_and_write  # start-up
    from robot_identification.errors import DataError  # start-up: commands/__init__.py
    from robot_identification.identification import (  # start-up: commands/__init__.py
        Recording, iter_chunks, polynomial_settings, with_overrides)
    model = robot_from_args(args)
    check_output_argument(args, model)
    if args.chunk < 2:
        raise DataError(f"--chunk must be at least 2 samples, got {args.chunk}")
    if not 0 <= args.effort_lag < 1:
        raise DataError(f"--effort-lag must be in [0, 1) periods for streaming, got "
                        f"{args.effort_lag}")
    if args.window is not None and not 0 < args.window < math.inf:
        raise DataError(f"--window must be a finite number > 0 s, got {args.window}")
    _check_first_chunk(args.data, args.chunk, args.effort_lag)
    savgol = args.filter == "savgol"
    settings = with_overrides(model.config.identification,
                              velocity_threshold=args.velocity_threshold, prior=args.prior,
                              savgol_window=args.window if savgol else None,
                              savgol_order=args.order)
    if savgol:
        settings = with_overrides(settings, preprocessing="savgol", decimate=args.decimate)
    else:
        settings = polynomial_settings(settings, pa_window=args.window, pa_degree=args.degree,
                                       pa_alpha=args.alpha, pa_beta=args.beta,
                                       pa_delay=args.delay, decimate=args.decimate)
    options = None
    if args.bounds == "nominal":
        from robot_identification.estimation import base_bounds, standard_bounds  # start-up
        from robot_identification.identifiability import base_parameters  # start-up
        options = {"bounds": base_bounds(base_parameters(model).grouping,
                                         *standard_bounds(model),
                                         names=model.parameter_names)}
    # re-readable: irls reads the recording once per iteration
    recording = Recording(lambda: iter_chunks(args.data, args.chunk, effort_lag=args.effort_lag),
                          args.data)
    estimators = tuple(args.estimator or settings.estimators)
    return identify_and_write(args, model, [recording], settings, estimators, options=options)
