"""Benchmark: an elastic arm's closed loop under command delay, with and without the
reference's feed-forward (docs/ros.md, "Elastic arms on the pd_controller path").

The core simulator (``make_simulator``, the config's simulation friction, unquantised) follows
the hardware-robot study's 4 s Fourier excitation (benchmarks/hardware_robot_study.py) at
``--rate``, the law :func:`~robot_identification.simulation.make_controller` with the core
closed loop's gains (:func:`~robot_identification.simulation.closed_loop_gains`) scaled by
:func:`~robot_identification.simulation.delay_tolerant_gains` for ``d`` periods (or
``--scales``), each command applied ``d`` periods after the state it answers (as on the
pd_controller path over DDS); with the feed-forward of
:func:`~robot_identification.simulation.sampled_feedforward` (De Luca 1998; the inverse
dynamics of the config's model, with the rotor-link coupling of ``coupling: complete``) or the
regulator alone. Prints per case the peak |dq| / velocity limit and the largest |q - q_ref|
[rad]. ``--coupling reduced``: the robot's config with ``coupling: reduced`` (arm and
feed-forward).

    PYTHONPATH=$PWD python benchmarks/elastic_feedforward_delay.py --robot zollo_planar \\
        --rate 250 --delays 1 4 10
"""
from __future__ import annotations

import argparse
import collections
import tempfile
import warnings
from pathlib import Path

import numpy as np
import yaml

EXCITATION = {"type": "fourier", "base_frequency": 0.25, "harmonics": 5, "amplitude": 1.0,
              "seed": 1}
DURATION = 4.0


def load(robot, coupling):
    from robot_identification.model import load_robot, robot_files
    if coupling is None:
        return load_robot(robot)
    path = Path(robot_files(robot))
    doc = yaml.safe_load(path.read_text())
    doc["coupling"] = coupling
    doc["urdf"] = str((path.parent / doc["urdf"]).resolve())
    out = Path(tempfile.mkdtemp(prefix="ri_ff_delay_")) / path.name
    out.write_text(yaml.safe_dump(doc))
    return load_robot(config=out)


def run(model, traj, rate, kp, kd, delay, feedforward):
    """(peak |dq| / limit, largest |q - q_ref| [rad]) of one case (module docstring)."""
    from robot_identification.simulation import make_controller, sampled_feedforward
    from robot_identification.simulation._run import make_simulator
    law = make_controller(model, kp, kd)
    sim = make_simulator(model, "builtin", rate_hz=rate, seed=0, quantise=False)
    n_steps = int(DURATION * rate) + 1
    q, dq, ddq = traj.evaluate(np.arange(n_steps) / rate)
    after = [x[0] for x in traj.evaluate(np.array([n_steps / rate]))]
    ff = sampled_feedforward(law, q, dq, ddq, 1.0 / rate, after) if feedforward else None
    v_max = np.array([j.limits.velocity for j in model.config.joints], dtype=float)
    sim.reset(q[0])
    queue = collections.deque([law(q[0], dq[0], sim.measure())] * delay)
    peak = err = 0.0
    for i in range(n_steps - 1):
        meas = sim.measure()
        peak = max(peak, float(np.max(np.abs(meas["dq"]) / v_max)))
        err = max(err, float(np.max(np.abs(meas["q"] - q[i]))))
        if not peak < 5.0:
            break                       # ran away
        queue.append(law(q[i], dq[i], meas, None if ff is None else
                         (ff[0][i], ff[1][i], ff[2][i])))
        sim.step(queue.popleft())
    return peak, err


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", default="zollo_planar")
    p.add_argument("--rate", type=float, default=250.0)
    p.add_argument("--delays", type=int, nargs="+", default=[1, 4, 10])
    p.add_argument("--scales", type=float, nargs="+", default=None,
                   help="gain scales instead of the delay-tolerant one of each delay")
    p.add_argument("--coupling", choices=("complete", "reduced"), default=None)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.simulation import closed_loop_gains, delay_tolerant_gains
    model = load(args.robot, args.coupling)
    traj = trajectory_from_config(model, EXCITATION)
    q0 = traj.evaluate(0.0)[0][0]
    gains = closed_loop_gains(model, rate_hz=args.rate, q=q0)
    print(gains.describe(model.config.name))
    for d in args.delays:
        scales = args.scales or [delay_tolerant_gains(model, gains.kp, gains.kd, args.rate,
                                                      max(d, 1), q=q0).scale]
        for s in scales:
            cells = [run(model, traj, args.rate, gains.kp * s * s, gains.kd * s, d, ff)
                     for ff in (False, True)]
            print(f"{model.config.name} ({model.config.coupling}) {args.rate:g} Hz, delay {d} "
                  f"period(s), gain scale {s:.3g}: peak |dq| / limit without / with the "
                  f"feed-forward {cells[0][0]:.3g} / {cells[1][0]:.3g}; largest |q - q_ref| "
                  f"{cells[0][1]:.3g} / {cells[1][1]:.3g} rad", flush=True)


if __name__ == "__main__":
    main()
