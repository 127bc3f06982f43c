"""CPU per control period of hardware_robot's physics (``make_physics``): can the stand-in robot
keep real time? (issue #24, docs/ros.md "Why puma560_elastic's stand-in runs late").

Two measurements, process time (``time.process_time``) of ``step`` alone, at ``--rate``:

- hold: each engine (builtin, mujoco) held at rest in equilibrium at the hardware-robot
  study's start point (the excitation's start + 0.05 rad) by u = g(q0), ``--periods``
  periods, paired rounds (median of ``--rounds``); the builtin engine's periods with a
  friction event (redone with RK4, ``Simulator.rk4_periods``);
- closed loop: the builtin engine in ``simulate`` (the core closed loop on the config's
  excitation, ``--duration`` s): CPU per period with and without a friction event, the
  events' share per quarter of the run.

CPU per period / period > 1: the node cannot keep real time even on an idle core.

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/stand_in_physics_cpu.py \\
        --robot puma560_elastic --rate 250
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]


def hold(model, rate, periods, rounds):
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.nodes._hardware import make_physics
    q0 = np.asarray(trajectory_from_config(model).evaluate(0.0)[0][0], float) + 0.05
    engines = {e: make_physics(model, rate, e) for e in ("builtin", "mujoco")}
    b = engines["builtin"]
    print(f"builtin: integrator {b.integrator}, {b.imex_steps} IMEX steps per period, "
          f"RK4 on events: {b.substeps} steps per period")
    u = b.dynamics.gravity(q0)
    cpu = {e: [] for e in engines}
    for r in range(rounds):
        for e, p in engines.items():
            p.reset(q0)
            events = getattr(p, "rk4_periods", 0)
            c0 = time.process_time()
            for _ in range(periods):
                p.step(u)
            cpu[e].append((time.process_time() - c0) / periods)
            events = getattr(p, "rk4_periods", 0) - events
            print(f"  hold round {r} {e}: {cpu[e][-1] * 1e3:.3f} ms CPU per "
                  f"{1e3 / rate:.3g} ms period ({cpu[e][-1] * rate:.2f} of a core), "
                  f"friction-event periods {events} of {periods}")
    ratio = np.median(np.array(cpu["builtin"]) / np.array(cpu["mujoco"]))
    print(f"hold, median of {rounds}: builtin {np.median(cpu['builtin']) * 1e3:.3f} ms, "
          f"mujoco {np.median(cpu['mujoco']) * 1e3:.3f} ms per period; builtin / mujoco "
          f"{ratio:.1f}")


def closed_loop(model, rate, duration):
    from robot_identification.simulation import _simulator, simulate
    rec, step = [], _simulator.Simulator.step

    def timed(self, u):
        events, c0 = self.rk4_periods, time.process_time()
        out = step(self, u)
        rec.append((time.process_time() - c0, self.rk4_periods - events))
        return out
    _simulator.Simulator.step = timed
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            simulate(model, duration=duration, rate_hz=rate, quantise=False)
    finally:
        _simulator.Simulator.step = step
    a = np.array(rec)[-int(round(duration * rate)):]     # the run (not the gain checks)
    ev = a[:, 1] > 0

    def median_ms(x):
        return f"{np.median(x) * 1e3:.3f} ms" if len(x) else "none"
    print(f"closed loop (simulate, {duration:g} s): friction-event periods {ev.sum()} of "
          f"{len(a)}; CPU per period median {median_ms(a[ev, 0])} with an event, "
          f"{median_ms(a[~ev, 0])} without; mean {a[:, 0].mean() * rate:.2f} of a core")
    for i, part in enumerate(np.array_split(a, 4)):
        print(f"  quarter {i}: events {100 * np.mean(part[:, 1] > 0):.0f} %, "
              f"{part[:, 0].mean() * rate:.2f} of a core")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", default="puma560_elastic")
    p.add_argument("--rate", type=float, default=250.0, help="[Hz]")
    p.add_argument("--periods", type=int, default=500)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=4.0, help="[s] closed loop")
    a = p.parse_args()
    from robot_identification.model import load_robot
    model = load_robot(a.robot)
    hold(model, a.rate, a.periods, a.rounds)
    closed_loop(model, a.rate, a.duration)


if __name__ == "__main__":
    main()
