"""``robot-identification simulate``: closed-loop simulation of an identification experiment."""
from __future__ import annotations

from pathlib import Path

from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, input_paths, robot_from_args)

NAME = "simulate"
HELP = "simulate a robot following an excitation trajectory; writes a .npz dataset or a rosbag2"
ORDER = 10


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--duration", type=float,
                   help="simulated time [s] (default: the trajectory's duration)")
    p.add_argument("--seed", type=int, default=0, help="seed of the measurement noise")
    p.add_argument("--snr", type=float, metavar="DB",
                   help="add Gaussian noise to positions at this signal-to-noise ratio [dB]")
    p.add_argument("--trajectory", metavar="FILE",
                   help="excitation trajectory YAML (default: the config's simulation.excitation)")
    p.add_argument("--friction", choices=("config", "regressor", "none"), default="config",
                   help="simulation friction law (default: each joint's simulation_friction)")
    p.add_argument("--derivatives", action="store_true",
                   help="also store the exact velocities and accelerations")
    p.add_argument("--no-quantise", action="store_true", help="no encoder quantisation")
    p.add_argument("--output", required=True,
                   help="dataset: a .npz file, or a new rosbag2 directory (name without suffix; "
                        "MCAP storage, /joint_states + /motor_states)")


def run(args):
    from robot_identification import progress
    from robot_identification.errors import ConfigError
    from robot_identification.excitation import check_limits, load_trajectory
    from robot_identification.simulation import simulate
    out = Path(args.output)
    if out.suffix not in (".npz", ""):
        raise ConfigError(f"--output '{out}': only .npz files or rosbag2 directories (a name "
                          f"without suffix) are written")
    if out.suffix == "" and out.exists():
        raise ConfigError(f"--output '{out}' exists; a bag is never overwritten")
    model = robot_from_args(args)
    check_output_argument(args, model, dataset=True)
    traj = load_trajectory(args.trajectory) if args.trajectory else None
    if traj is not None:
        check_limits(model, traj)
    ds = simulate(model, duration=args.duration, trajectory=traj, seed=args.seed,
                  snr_db=args.snr, derivatives=args.derivatives,
                  quantise=not args.no_quantise,
                  friction=None if args.friction == "config" else args.friction,
                  log=None if progress.enabled() else print, min_samples=20)
    if out.suffix == ".npz":
        ds.save_npz(out, inputs=input_paths(args, model))
    else:
        from robot_identification.data._bag import write_bag
        write_bag(ds, out)
    print(f"simulated {ds.t[-1]:.2f} s of '{model.config.name}' ({ds.n_samples} samples at "
          f"{ds.sample_rate:.0f} Hz, {ds.metadata['substeps']} RK4 sub-steps)")
    print(f"wrote {out.resolve()}")
    return 0
