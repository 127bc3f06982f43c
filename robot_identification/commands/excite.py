"""``robot-identification excite``: optimise an excitation trajectory for a robot."""
from __future__ import annotations

from pathlib import Path

from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, input_paths, robot_from_args)

NAME = "excite"
HELP = ("optimise an excitation trajectory (Fourier or quintic B-spline) for the base "
        "regressor's condition number within the joint limits; writes a trajectory YAML")
ORDER = 5


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--criterion", choices=("cond", "frobenius", "logdet"), default="cond",
                   help="cond: 2-norm condition number of the base regressor; frobenius: "
                        "CondF(W^T W) (Szabó eq. 20); logdet: -log det(W^T W) (default cond)")
    p.add_argument("--output", required=True, help="trajectory YAML to write "
                   "(played by the excitation_publisher node, read by `simulate`)")
    p.add_argument("--type", choices=("fourier", "bspline"), default="fourier",
                   help="trajectory family (default fourier)")
    p.add_argument("--harmonics", type=int, default=5, help="Fourier harmonics (default 5)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="Fourier period / B-spline duration [s] (default 10)")
    p.add_argument("--segments", type=int, default=10, help="B-spline knot spans (default 10)")
    p.add_argument("--start", type=float, nargs="+",
                   help="rest position per joint [rad] (default: middle of the position limits)")
    p.add_argument("--samples", type=int, default=120,
                   help="time samples of the criterion (default 120)")
    p.add_argument("--maxiter", type=int, default=60, help="SLSQP iterations (default 60)")
    p.add_argument("--margin", type=float, default=0.95,
                   help="fraction of the joint limits used as constraints (default 0.95)")
    p.add_argument("--acceleration-limit", type=float,
                   help="acceleration limit [rad/s^2] for joints whose config has none")
    p.add_argument("--seed", type=int, default=0, help="random start (default 0)")


def run(args):
    import numpy as np  # start-up: commands/__init__.py

    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from robot_identification.excitation import check_limits, save_trajectory  # start-up
    from robot_identification.excitation import (  # start-up: commands/__init__.py
        BSplineParametrisation, FourierParametrisation, optimise_excitation)
    model = robot_from_args(args)
    check_output_argument(args, model)
    n = model.n
    if args.start is not None:
        if len(args.start) != n:
            raise ConfigError(f"--start needs {n} values (one per joint of "
                              f"'{model.config.name}'), got {len(args.start)}")
        q0 = np.array(args.start)
        if not np.all(np.isfinite(q0)):
            raise ConfigError(f"--start must be finite positions [rad], got {args.start}")
    else:
        q0 = np.zeros(n)
        for k, j in enumerate(model.config.joints):
            if j.limits.position is not None:
                q0[k] = 0.5 * sum(j.limits.position)
    if args.type == "fourier":
        par = FourierParametrisation(n, args.harmonics, args.duration, q0, model.joint_names)
    else:
        par = BSplineParametrisation(n, args.segments, args.duration, q0, model.joint_names)
    if args.samples < 2 or args.maxiter < 1 or not 0 < args.margin <= 1:
        raise ConfigError("--samples must be >= 2, --maxiter >= 1 and --margin in (0, 1]")
    if args.acceleration_limit is not None and not args.acceleration_limit > 0:
        raise ConfigError(f"--acceleration-limit must be > 0 rad/s^2, "
                          f"got {args.acceleration_limit}")
    res = optimise_excitation(model, par, args.criterion, n_samples=args.samples,
                              seed=args.seed, maxiter=args.maxiter, margin=args.margin,
                              acceleration_limit=args.acceleration_limit)
    traj = par.trajectory(res.x)
    check_limits(model, traj)
    out = save_trajectory(traj, args.output, inputs=input_paths(args, model))
    print(f"robot {model.config.name}: {args.type} excitation, {par.size} parameters, "
          f"criterion {args.criterion}")
    print(f"  criterion       before {res.before:12.6g}   after {res.after:12.6g}")
    print(f"  condition no.   before {res.cond_before:12.6g}   after {res.cond_after:12.6g}")
    print(f"  optimisation time {res.seconds:.1f} s, {res.iterations} iterations "
          f"({res.message}); within joint limits: {res.within_limits}")
    print(f"wrote {Path(out).resolve()}")
    return 0
