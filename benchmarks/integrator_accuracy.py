"""Accuracy of the built-in engine's integrators against a fine RK4 and MuJoCo, in closed loop
(issue #29, docs/simulation.md "Integration").

For each robot and control rate, two closed-loop runs of every engine from the same state,
exact (unquantised) state feedback, the run's PD controller at that rate (``simulate``'s
gains, with its feed-forward-free law ``make_controller``):

- excitation: the config's excitation for ``--excitation`` s from rest at its start point;
- rest: from rest at the excitation's start point, held at that point + 0.01 rad for
  ``--rest`` s (the motors move, their velocities cross 0, then they stop and stick).

Engines: ``rk4fine`` (the built-in RK4 with 8x its automatic steps: the reference), ``rk4``
(automatic steps), ``imex`` (forced, also on arms whose default is ``rk4``) and ``mujoco``
(its RK4, Coulomb friction as frictionloss). Printed: the largest |difference| over the run of
the positions (q, theta) [rad], of all velocities (dq, dtheta) and of the motor velocities
dtheta alone [rad/s], of imex and rk4 against rk4fine and against mujoco; the periods the
IMEX integrator redid with RK4; CPU time of ``step`` per period.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/integrator_accuracy.py \\
        [--robots puma560_elastic zollo_planar] [--rates 250 1000]
"""
import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path[:0] = [str(Path(__file__).resolve().parents[1])]


def run(model, sim, q_ref, dq_ref, q0, ctrl):
    """States (N, 4n) [q, theta, dq, dtheta] at each period's start; CPU [s] per period."""
    sim.reset(q0)
    X, cpu = [], 0.0
    for i in range(len(q_ref)):
        s = sim.state
        X.append(np.concatenate([s.q, s.theta, s.dq, s.dtheta]))
        u = ctrl(q_ref[i], dq_ref[i], {"q": s.q, "theta": s.theta, "dq": s.dq,
                                        "dtheta": s.dtheta})
        c0 = time.process_time()
        sim.step(u)
        cpu += time.process_time() - c0
    return np.array(X), cpu / len(q_ref)


def scenario(model, rate, kind, duration):
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.simulation import make_simulator
    from robot_identification.simulation._run import _controller
    n = model.n
    t = np.arange(int(round(duration * rate))) / rate
    traj = trajectory_from_config(model)
    q0 = np.asarray(traj.evaluate(0.0)[0][0], float)
    if kind == "excitation":
        q_ref, dq_ref, _ = traj.evaluate(t)
    else:
        q_ref = np.tile(q0 + 0.01, (len(t), 1))
        dq_ref = np.zeros_like(q_ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctrl = _controller(model, None, None, rate, q0)
    rk4 = make_simulator(model, rate_hz=rate, quantise=False, integrator="rk4")
    sims = {"rk4fine": make_simulator(model, rate_hz=rate, quantise=False,
                                      substeps=8 * rk4.substeps),
            "rk4": rk4,
            "imex": make_simulator(model, rate_hz=rate, quantise=False, integrator="imex"),
            "mujoco": make_simulator(model, "mujoco", rate_hz=rate, quantise=False)}
    res = {k: run(model, s, q_ref, dq_ref, q0, ctrl) for k, s in sims.items()}
    line = (f"{model.config.name} {rate:g} Hz {kind} {duration:g} s: imex periods redone "
            f"with RK4 {sims['imex'].rk4_periods} of {len(t)}")
    for a, b in (("imex", "rk4fine"), ("rk4", "rk4fine"), ("imex", "mujoco"),
                 ("rk4", "mujoco")):
        d = np.abs(res[a][0] - res[b][0])
        line += (f"\n  {a:4s} vs {b:7s}: positions {d[:, :2 * n].max():.2e} rad, velocities "
                 f"{d[:, 2 * n:].max():.2e} rad/s (motor {d[:, 3 * n:].max():.2e})")
    line += "\n  CPU per period: " + ", ".join(f"{k} {v[1] * 1e3:.3f} ms"
                                               for k, v in res.items())
    print(line, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--robots", nargs="+", default=["puma560_elastic", "zollo_planar"])
    p.add_argument("--rates", nargs="+", type=float, default=[250.0, 1000.0], help="[Hz]")
    p.add_argument("--excitation", type=float, default=3.0, help="[s]")
    p.add_argument("--rest", type=float, default=1.0, help="[s]")
    a = p.parse_args()
    from robot_identification.model import load_robot
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name in a.robots:
        model = load_robot(name)
        for rate in a.rates:
            scenario(model, rate, "excitation", a.excitation)
            scenario(model, rate, "rest", a.rest)


if __name__ == "__main__":
    main()
