"""Real-time factor of the two physics engines, measured in the same run (CPU time).

For each robot (default puma560_elastic and ur10e, the config's friction laws, encoder
quantisation), both engines follow the config's excitation for DURATION s at 1 kHz under the
config's PD controller. Reported per engine:

- engine: simulated time / CPU time of ``step`` + ``measure`` alone (the physics and the
  encoders, what a simulated robot node spends per period);
- closed loop: simulated time / CPU time of the whole loop (+ the PD controller with its
  pinocchio gravity terms, the same on both engines);
- the MuJoCo / builtin ratio of the engine factors, and the largest difference of the two
  engines' exact link positions over the run (they model Coulomb friction differently:
  docs/simulation.md).

Target (issue 22): MuJoCo >= 10x real time (engine) on puma560_elastic and ur10e.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/simulator_speed.py \
        [--robot puma560_elastic ur10e] [--duration 5]
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def run(model, engine, duration):
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.simulation import make_controller, make_simulator
    sim = make_simulator(model, engine, rate_hz=1000.0)
    ctrl = make_controller(model)
    traj = trajectory_from_config(model)
    t = np.arange(int(round(duration * sim.rate_hz))) * sim.dt
    q_ref, dq_ref, _ = traj.evaluate(t)
    sim.reset(q_ref[0])
    q = np.empty((len(t), model.n))
    engine_cpu = 0.0
    start = time.process_time()
    for i in range(len(t)):
        c0 = time.process_time()
        m = sim.measure()
        engine_cpu += time.process_time() - c0
        u = ctrl(q_ref[i], dq_ref[i], m)
        q[i] = sim.state.q
        c0 = time.process_time()
        sim.step(u)
        engine_cpu += time.process_time() - c0
    loop_cpu = time.process_time() - start
    return duration / engine_cpu, duration / loop_cpu, q, sim.substeps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--robot", nargs="+", default=["puma560_elastic", "ur10e"])
    p.add_argument("--duration", type=float, default=5.0, help="simulated seconds per run")
    args = p.parse_args(argv)
    import mujoco

    from robot_identification.model import load_robot
    print(f"MuJoCo {mujoco.__version__}, 1 kHz control, {args.duration:g} s per run, "
          f"real-time factor = simulated time / CPU time (os.times, this process)")
    print(f"{'robot':16s} {'engine':8s} {'steps/period':>12s} {'engine x RT':>12s} "
          f"{'closed loop x RT':>17s}")
    for name in args.robot:
        model = load_robot(name)
        res = {}
        for engine in ("builtin", "mujoco"):
            res[engine] = run(model, engine, args.duration)
            fe, fl, _, sub = res[engine]
            print(f"{name:16s} {engine:8s} {sub:12d} {fe:12.1f} {fl:17.1f}")
        ratio = res["mujoco"][0] / res["builtin"][0]
        diff = np.abs(res["mujoco"][2] - res["builtin"][2]).max()
        target = "meets" if res["mujoco"][0] >= 10 else "MISSES"
        print(f"{name:16s} mujoco / builtin (engine): {ratio:.1f}x; MuJoCo {target} the 10x "
              f"real-time target; largest |q_mujoco - q_builtin| over the run {diff:.2e} rad")


if __name__ == "__main__":
    main()
