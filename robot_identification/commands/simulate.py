"""``robot-identification simulate``: closed-loop simulation of an identification experiment."""
from __future__ import annotations

import sys
from pathlib import Path

from robot_identification.commands._common import (
    add_robot_arguments, check_output_argument, input_paths, robot_from_args)

NAME = "simulate"
HELP = ("simulate a robot following an excitation trajectory; writes a .npz dataset, a CSV "
        "(the config's csv: layout) or a rosbag2")
ORDER = 10


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--duration", type=float,
                   help="simulated time [s] (default: the trajectory's duration)")
    p.add_argument("--seed", type=int, default=0, help="seed of the measurement noise")
    p.add_argument("--snr", type=float, metavar="DB",
                   help="add Gaussian noise to positions at this signal-to-noise ratio [dB] "
                   "(per joint: the std of its motion x 10^(-DB/20))")
    p.add_argument("--trajectory", metavar="FILE",
                   help="excitation trajectory YAML (default: the config's simulation.excitation)")
    p.add_argument("--friction", choices=("config", "regressor", "none"), default="config",
                   help="simulation friction law (default: each joint's simulation_friction)")
    p.add_argument("--derivatives", action="store_true",
                   help="also store the exact velocities and accelerations (a .csv --output "
                        "whose csv: layout maps velocities gets them without it)")
    p.add_argument("--no-quantise", action="store_true", help="no encoder quantisation")
    p.add_argument("--joint-torque", action="store_true",
                   help="elastic arms: also record joint torque sensors (tau_joint, "
                        "docs/elastic.md)")
    p.add_argument("--engine", choices=("builtin", "mujoco"), default="builtin",
                   help="physics engine: builtin (pinocchio + RK4, the reference; default) or "
                        "mujoco (several times faster; Coulomb friction as MuJoCo's "
                        "frictionloss constraint, docs/simulation.md)")
    p.add_argument("--output", required=True,
                   help="dataset: a .npz file, or a new rosbag2 directory (name without suffix; "
                        "MCAP storage, /joint_states + /motor_states)")


def run(args):
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from robot_identification.excitation import check_limits, load_trajectory  # start-up
    from robot_identification.simulation import simulate  # start-up: commands/__init__.py
    out = Path(args.output)
    if out.suffix.lower() not in (".npz", ".csv", ""):
        raise ConfigError(f"--output '{out}': only .npz files, .csv files (the robot config's "
                          f"csv: layout) or rosbag2 directories (a name without suffix) are "
                          f"written")
    if out.suffix == "" and out.exists():
        raise ConfigError(f"--output '{out}' exists; a bag is never overwritten")
    model = robot_from_args(args)
    check_output_argument(args, model, dataset=True)
    if args.trajectory:
        traj = load_trajectory(args.trajectory)
        check_limits(model, traj)
    else:
        from robot_identification.excitation import trajectory_from_config  # start-up
        traj = trajectory_from_config(model)
    ds = simulate(model, duration=args.duration, trajectory=traj, seed=args.seed,
                  snr_db=args.snr,
                  derivatives=args.derivatives or csv_maps_velocities(model, out),
                  quantise=not args.no_quantise,
                  friction=None if args.friction == "config" else args.friction,
                  # progress lines where no bar is drawn (stderr not a terminal: a log),
                  # none with --quiet
                  log=None if args.quiet or sys.stderr.isatty() else print, min_samples=20,
                  engine=args.engine, joint_torque=args.joint_torque)
    if out.suffix == ".npz":
        ds.save_npz(out, inputs=input_paths(args, model))
    elif out.suffix.lower() == ".csv":
        from robot_identification.data import write_csv  # start-up: commands/__init__.py
        if not model.config.extra.get("csv"):
            raise ConfigError(f"--output '{out}': the robot config has no csv: section (the "
                              f"column layout to write)")
        write_csv(ds, out, model, inputs=input_paths(args, model))
    else:
        from robot_identification.data import write_bag  # start-up: commands/__init__.py
        from robot_identification.outputs import atomic_directory  # start-up: commands/__init__.py
        with atomic_directory(out, input_paths(args, model), "--output") as tmp:
            write_bag(ds, tmp)          # complete, or no bag at all
    meta = ds.metadata
    if args.engine != "builtin":
        steps = f"{meta['substeps']} MuJoCo {meta['integrator']} steps"
    elif meta.get("integrator") == "imex":
        steps = f"{meta['imex_steps']} IMEX step(s)"
    else:
        steps = f"{meta['substeps']} RK4 sub-steps"
    print(f"simulated {ds.t[-1]:.2f} s of '{model.config.name}' ({ds.n_samples} samples at "
          f"{ds.sample_rate:.0f} Hz, {steps} per sample)")
    print(f"wrote {out.resolve()}")
    for line in tracking_warnings(model, ds, traj):
        print(f"warning: {line}")
    return 0


def csv_maps_velocities(model, out) -> bool:
    """A CSV ``--output`` whose layout (the config's ``csv:`` section, init's starter one
    among them) has velocity columns: the run records the velocities its encoders read
    (the exact ones of ``--derivatives``, which the CSV then holds: it has no acceleration
    column); without them ``write_csv`` stopped init's starter config's ``simulate
    --output run.csv`` ("the layout maps 'velocity' but the dataset holds no dq")."""
    if out.suffix.lower() != ".csv" or not model.config.extra.get("csv"):
        return False
    from robot_identification.data import CSV_PRESETS, csv_options  # start-up
    opts = csv_options(model)
    opts = {**CSV_PRESETS.get(opts.get("preset"), {}), **opts}
    return any(opts.get(k) is not None for k in ("velocity", "motor_velocity"))


#: Tracking error (RMS of q - q_ref over the RMS excursion of q_ref about its mean) above
#: which ``simulate`` warns that a joint does not follow its excitation.
TRACKING_LIMIT = 0.5


def tracking_warnings(model, ds, traj) -> list:
    """One line per joint that does not follow the excitation in a simulated run: the
    closed loop cannot produce the motion within the effort limits (a URDF in millimetres,
    an effort limit far below gravity), and identification would then see a robot that
    barely moves.

    Parameters
    ----------
    model : RobotModel
    ds : Dataset
        The simulated run (q [rad or m], tau [N*m or N]).
    traj : trajectory
        The excitation it followed (``evaluate(t) -> q, dq, ddq``).

    Returns
    -------
    list of str
        Joints whose RMS tracking error exceeds :data:`TRACKING_LIMIT` of the reference's RMS
        excursion, with the share of samples at the effort limit.
    """
    import numpy as np  # start-up: commands/__init__.py
    q_ref = traj.evaluate(ds.t)[0]
    err = np.sqrt(np.mean((ds.q - q_ref) ** 2, axis=0))
    span = np.sqrt(np.mean((q_ref - q_ref.mean(axis=0)) ** 2, axis=0))
    out = []
    for k, j in enumerate(model.config.joints):
        if not span[k] > 0 or err[k] <= TRACKING_LIMIT * span[k]:
            continue
        effort = j.limits.effort
        sat = (f", its torque at the effort limit ({effort:g}) "
               f"{100 * np.mean(np.abs(ds.tau[:, k]) >= 0.999 * effort):.0f} % of the time"
               if effort else "")
        out.append(f"joint '{j.name}' does not follow the excitation (RMS tracking error "
                   f"{100 * err[k] / span[k]:.0f} % of its motion{sat}): check the URDF "
                   f"units (init prints a note), the effort limits and the PD gains")
    return out
