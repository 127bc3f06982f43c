"""``robot-identification montecarlo``: bias and spread of the estimators vs the Cramér-Rao
bound."""
from __future__ import annotations

from robot_identification.choices import MONTE_CARLO_ESTIMATORS

NAME = "montecarlo"
HELP = ("simulate N noise seeds on a robot's excitation, identify each, report bias and std per "
        "base parameter against the Cramér-Rao bound (runs on Dask workers)")
ORDER = 35
#: Most Monte Carlo runs (each keeps its estimate; 1e6 runs take hours already).
MAX_RUNS = 1_000_000


def add_arguments(p):
    from robot_identification.commands._common import add_robot_arguments  # start-up
    add_robot_arguments(p)
    p.add_argument("--runs", type=int, default=100, help="Monte-Carlo runs (seeds)")
    noise = p.add_mutually_exclusive_group(required=True)
    noise.add_argument("--snr", type=float, metavar="DB",
                       help="torque signal-to-noise ratio [dB]: sigma_j = rms(tau_j) "
                            "10^(-DB/20)")
    noise.add_argument("--sigma", type=float, nargs="+", metavar="NM",
                       help="torque noise standard deviation per joint [N m]")
    p.add_argument("--seed", type=int, default=0, help="run i uses noise seed SEED + i")
    p.add_argument("--estimator", action="append", choices=MONTE_CARLO_ESTIMATORS,
                   help="estimators of every run (repeatable; default ols and wls; the "
                        "engine's estimators that work on summed normal equations, and "
                        "wls_known = WLS with the true sigma)")
    p.add_argument("--prior", default="nominal",
                   help="prior of mrls/bounded/physical: 'nominal', 'none' or a YAML file")
    p.add_argument("--workers", type=int, default=1,
                   help="Dask workers on a local cluster (default 1: in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="an existing Dask scheduler instead of a local cluster; start "
                        "each worker with 'dask worker SCHEDULER --nthreads 1 --preload "
                        "robot_identification.dask_worker' (docs/performance.md)")
    p.add_argument("--trajectory", metavar="FILE",
                   help="excitation trajectory YAML (default: the config's simulation.excitation)")
    p.add_argument("--duration", type=float, help="simulated time [s]")
    p.add_argument("--engine", choices=("mujoco", "builtin"), default="mujoco",
                   help="physics engine of the simulated excitation: mujoco (default, faster) "
                        "or builtin (the reference); the regressor is exact on both")
    p.add_argument("--output", help="write the study as YAML")


def format_report(result, estimators):
    """Text table: per base parameter the exact value, each estimator's mean and std, the
    CRLB std and var/CRLB; then a summary line per estimator."""
    lines = []
    head = f"{'#':>3} {'expression':44s} {'exact':>10}"
    for e in estimators:
        head += f" | {e + ' mean':>10} {'std':>9} {'var/CRLB':>8}"
    head += f" | {'CRLB std':>9}"
    lines += [head, "-" * len(head)]
    sums = {e: result.summary(e) for e in estimators}
    for i, expr in enumerate(result.expressions):
        row = f"{i + 1:3d} {expr[:44]:44s} {result.true[i]:10.4g}"
        for e in estimators:
            s = sums[e]
            row += f" | {s['mean'][i]:10.4g} {s['std'][i]:9.3g} {s['variance_ratio'][i]:8.2f}"
        lines.append(row + f" | {sums[estimators[0]]['crlb_std'][i]:9.3g}")
    band = result.variance_ratio_band()
    for e in estimators:
        s = sums[e]
        lines.append(f"{e}: var/CRLB median {float(_median(s['variance_ratio'])):.3f}, max "
                     f"{float(s['variance_ratio'].max()):.3f} (Monte-Carlo error of a variance "
                     f"ratio, 2 sigma: +-{band:.3f}); largest |bias| / standard error "
                     f"{float(abs(s['bias_z']).max()):.2f}")
    return "\n".join(lines)


def _median(x):
    import numpy as np  # start-up: commands/__init__.py
    return np.median(x)


def run(args):
    import numpy as np  # start-up: commands/__init__.py
    import yaml  # start-up: commands/__init__.py

    from robot_identification import progress  # start-up: commands/__init__.py
    from robot_identification._dask import check_workers  # start-up: commands/__init__.py
    from robot_identification.commands._common import (  # start-up: commands/__init__.py
        check_output_argument, input_paths, robot_from_args)
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from robot_identification.excitation import check_limits, load_trajectory  # start-up
    from robot_identification.outputs import write_text_atomic  # start-up: commands/__init__.py
    from robot_identification.identification import (  # start-up: commands/__init__.py
        monte_carlo, simulated_observations, torque_noise_sigma)
    check_workers(args.workers, args.scheduler)
    if not 2 <= args.runs <= MAX_RUNS:
        raise ConfigError(f"--runs must be in 2..{MAX_RUNS}, got {args.runs}")
    if args.seed < 0:
        raise ConfigError(f"--seed must be >= 0, got {args.seed}")
    model = robot_from_args(args)
    check_output_argument(args, model)
    traj = load_trajectory(args.trajectory) if args.trajectory else None
    if traj is not None:
        check_limits(model, traj)
    W, y, base, true = simulated_observations(model, trajectory=traj, duration=args.duration,
                                              engine=args.engine)
    if args.sigma is not None:
        sigma = np.array(args.sigma, dtype=float)
        if sigma.shape != (model.n,) or np.any(~np.isfinite(sigma)) or np.any(sigma <= 0):
            raise ConfigError(f"--sigma needs {model.n} positive values (one per joint), got "
                              f"{args.sigma}")
        how = f"sigma = {sigma.tolist()} N m"
    else:
        sigma = torque_noise_sigma(y, args.snr)
        how = f"torque SNR {args.snr:g} dB: sigma = {np.round(sigma, 4).tolist()} N m"
    estimators = tuple(dict.fromkeys(args.estimator or ("ols", "wls")))
    with progress.bar(total=args.runs, desc="montecarlo", unit="run") as pbar:
        result = monte_carlo(W, y, sigma, args.runs, seed=args.seed, estimators=estimators,
                             true=true, names=base.names, expressions=base.expressions(),
                             workers=args.workers, scheduler=args.scheduler, progress=pbar,
                             model=model, base=base, prior=args.prior)
    print(f"{model.config.name}: {args.runs} Monte-Carlo runs (seeds {args.seed}.."
          f"{args.seed + args.runs - 1}) on {result.ran_on}; {W.shape[0]} samples x "
          f"{model.n} joints of the noise-free simulated excitation, {how}")
    print(format_report(result, estimators))
    if args.output:
        doc = result.to_dict()
        doc.update(robot=model.config.name, estimators=list(estimators), noise=how,
                   samples=int(W.shape[0]))
        out = write_text_atomic(args.output, yaml.safe_dump(doc, sort_keys=False),
                                input_paths(args, model), "--output")
        print(f"wrote {out.resolve()}")
    return 0
