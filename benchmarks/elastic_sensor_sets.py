"""Elastic sensor sets (docs/elastic.md): joint stiffness, rotor inertia and motor friction
identified from each sensor set, read from a CSV file and from a rosbag2, against the values
of the MuJoCo model that simulated the run.

Data: test/elastic_arm4.yaml (4-dof spatial arm, gears 100/100/80/50), the config's 12 s
Fourier excitation on MuJoCo (seed 0, 1 kHz), the sensors of
``simulation.sensor_readings`` (20-bit link and 14-bit motor-shaft encoders, motor torque
noise 0.5 % of its peak, joint torque sensor noise 0.05 % of the effort limit), noise seeds
0..SEEDS-1. Metric: |estimate / MuJoCo - 1| per parameter, the largest over the joints whose
parameter the result does not name in a warning (not identified by the set, or too
uncertain); the named ones are listed. Estimator: the engine's default (wls).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/elastic_sensor_sets.py [SEEDS]
"""
import sys
import tempfile
from dataclasses import replace
from pathlib import Path


from robot_identification.data import load_dataset, read_csv, write_bag, write_csv
from robot_identification.identification import identify
from robot_identification.model import RobotModel, load_robot_config
from robot_identification.simulation import (
    make_simulator, mujoco_drive_parameters, sensor_readings, simulate)

REPO = Path(__file__).resolve().parents[1]
ALL = {"time": 1, "position": 2, "motor_position": 6, "torque": 10, "joint_torque": 14,
       "n_columns": 17}
SETS = [("a: link + motor encoders, motor torque", {"joint_torque": None}, "bag",
         {"joint_torque": None}),
        ("b: + joint torque sensors (all signals)", {}, "bag", None),
        ("b: motor encoders, joint torque, motor torque", {"position": None},
         "no_link_encoders", None),
        ("b: link + motor encoders, joint torque", {"torque": None}, "bag", {"torque": None}),
        ("b: motor encoders, joint torque", {"position": None, "torque": None},
         "no_link_encoders", {"torque": None})]
WARNINGS = ("not_identified", "stiffness_not_identified", "rotor_inertia_coupling_only")


def errors(result, truth):
    est = dict(zip(result.names, result.estimate.values))
    named = set()
    for d in result.diagnostics:
        if d.severity == "warning" and d.code in WARNINGS:
            named |= {s.strip() for s in d.subject.split(",")}
    out = {}
    for key in ("stiffness", "rotor_inertia", "viscous", "coulomb"):
        errs = [abs(est[nm] / v - 1) for nm, v in truth.items()
                if nm.endswith("." + key) and nm not in named and nm in est]
        out[key] = max(errs) if errs else None
    return out, sorted(named & set(truth))


def main(seeds=3):
    model = RobotModel(load_robot_config(REPO / "test" / "elastic_arm4.yaml"))
    truth = mujoco_drive_parameters(make_simulator(model, "mujoco").arm)
    exact = simulate(model, engine="mujoco", quantise=False, joint_torque=True)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            ds = sensor_readings(exact, model, seed=seed)
            folder = Path(tmp) / str(seed)
            write_csv(ds, folder / "run.csv", **ALL)
            write_bag(ds, folder / "bag")
            write_bag(replace(ds, q=None), folder / "no_link_encoders")
            for label, layout, bag, signals in SETS:
                mapping = {k: v for k, v in {**ALL, **layout}.items() if v is not None}
                csv_ds = read_csv(folder / "run.csv", joint_names=model.joint_names, **mapping)
                bag_ds = load_dataset(folder / bag, model, signals=signals)
                for fmt, data in (("csv", csv_ds), ("bag", bag_ds)):
                    err, named = errors(identify(model, data), truth)
                    rows.setdefault((label, fmt), []).append((err, named))
    print(f"largest |estimate / MuJoCo - 1| over the joints not named, {seeds} noise seeds "
          f"(worst seed)")
    print(f"{'sensor set':48s} {'file':4s} {'K':>7s} {'rotor':>7s} {'viscous':>7s} "
          f"{'coulomb':>7s}  named (warning) in any seed")
    for (label, fmt), runs in rows.items():
        worst = {}
        for key in ("stiffness", "rotor_inertia", "viscous", "coulomb"):
            vals = [e[key] for e, _ in runs if e[key] is not None]
            worst[key] = f"{100 * max(vals):6.2f}%" if vals else "     - "
        named = sorted({n for _, ns in runs for n in ns})
        short = (", ".join(named) if len(named) <= 4
                 else f"{len(named)}: {', '.join(named[:4])} ...")
        print(f"{label:48s} {fmt:4s} {worst['stiffness']:>7s} {worst['rotor_inertia']:>7s} "
              f"{worst['viscous']:>7s} {worst['coulomb']:>7s}  {short}")
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
