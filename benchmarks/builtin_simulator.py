"""Built-in simulator: real-time factor and accuracy of its integrators, in one run.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/builtin_simulator.py \
        [--robot puma560_elastic] [--duration 10]

Speed: the robot follows its configured excitation at its control rate under its PD
controller, with the config's friction laws and encoders, for DURATION s, once with each
integrator of the built-in engine (``imex``: the default of elastic arms, 2 IMEX steps per
1 ms period with RK4 on friction events; ``rk4``: classical RK4 at h omega_max <= 0.5).
Real-time factor = simulated time / process CPU time of ``Simulator.step`` (target >= 2 on
puma560_elastic, issue #29).

Accuracy (closed loop, exact unquantised measurements, largest |error| of the link and
motor positions over the run):

- without friction (smooth equations) against scipy's ``solve_ivp`` DOP853 at rtol 1e-10
  (an independent integrator of the same equations), 0.5 s;
- with the config's friction (Coulomb sign(v): every fixed-step method is first order at
  its discontinuity) against RK4 with 8x finer steps, 1 s.
"""
import argparse
import os
import time

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def closed_loop(model, step, duration, sim):
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.simulation import make_controller
    n = model.n
    ctrl = make_controller(model)
    t = np.arange(int(round(duration * sim.rate_hz)) + 1) * sim.dt
    q_ref, dq_ref, _ = trajectory_from_config(model).evaluate(t)
    sim.reset(q_ref[0])
    x = sim._x.copy()
    X = np.empty((len(t), x.size))
    for i in range(len(t)):
        X[i] = x
        u = ctrl(q_ref[i], dq_ref[i], {"q": x[:n], "theta": x[n:2 * n],
                                        "dq": x[2 * n:3 * n], "dtheta": x[3 * n:]})
        x = step(x, u)
    return X[:, :2 * n]


def stepper(sim):
    def step(x, u):
        sim._x = x.copy()
        sim.step(u)
        return sim._x.copy()
    return step


def speed(model, integrator, duration):
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.simulation import Simulator, make_controller
    sim = Simulator(model, integrator=integrator)
    ctrl = make_controller(model)
    t = np.arange(int(round(duration * sim.rate_hz))) * sim.dt
    q_ref, dq_ref, _ = trajectory_from_config(model).evaluate(t)
    sim.reset(q_ref[0])
    cpu = 0.0
    for i in range(len(t)):
        u = ctrl(q_ref[i], dq_ref[i], sim.measure())
        c0 = time.process_time()
        sim.step(u)
        cpu += time.process_time() - c0
    return duration / cpu, sim


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--robot", default="puma560_elastic")
    p.add_argument("--duration", type=float, default=10.0, help="simulated seconds (speed)")
    args = p.parse_args(argv)
    from scipy.integrate import solve_ivp

    from robot_identification.model import load_robot
    from robot_identification.simulation import Simulator
    model = load_robot(args.robot)
    print(f"{args.robot}, load average {os.getloadavg()[0]:.1f}")
    for integrator in (("imex", "rk4") if model.config.elastic else ("rk4",)):
        factor, sim = speed(model, integrator, args.duration)
        extra = (f"{sim.imex_steps} IMEX steps per period, RK4 x{sim.substeps} on "
                 f"{sim.rk4_periods} of {int(args.duration * sim.rate_hz)} periods"
                 if integrator == "imex" else f"RK4 x{sim.substeps} per period")
        target = ""
        if integrator == ("imex" if model.config.elastic else "rk4"):
            target = f" (default; target >= 2: {'meets' if factor >= 2 else 'MISSES'})"
        print(f"  {integrator:5s} {factor:6.2f}x real time (CPU time of step), {extra}{target}",
              flush=True)
    integrators = ("imex", "rk4") if model.config.elastic else ("rk4",)
    smooth = Simulator(model, quantise=False, friction="none")
    f = smooth.dynamics.derivative

    def reference(x, u):
        return solve_ivp(lambda t, y: f(y, u), (0.0, smooth.dt), x, method="DOP853",
                         rtol=1e-10, atol=1e-12).y[:, -1]
    R = closed_loop(model, reference, 0.5, smooth)
    for integrator in integrators:
        sim = Simulator(model, quantise=False, friction="none", integrator=integrator)
        e = np.abs(closed_loop(model, stepper(sim), 0.5, sim) - R).max()
        print(f"  no friction, 0.5 s, vs solve_ivp DOP853 rtol 1e-10: {integrator:5s} "
              f"max |position error| {e:.2e} rad", flush=True)
    rk4 = Simulator(model, quantise=False, integrator="rk4")
    fine = Simulator(model, quantise=False, substeps=8 * rk4.substeps)
    R = closed_loop(model, stepper(fine), 1.0, fine)
    for integrator in integrators:
        sim = Simulator(model, quantise=False, integrator=integrator)
        e = np.abs(closed_loop(model, stepper(sim), 1.0, sim) - R).max()
        print(f"  config friction, 1 s, vs RK4 x{fine.substeps}: {integrator:5s} "
              f"max |position error| {e:.2e} rad", flush=True)


if __name__ == "__main__":
    main()
