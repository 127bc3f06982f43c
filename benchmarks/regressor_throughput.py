"""Regressor throughput: samples/s of ``regressor()`` vs a bare Python loop and the C++ floor.

Usage::

    PYTHONPATH=. python benchmarks/regressor_throughput.py [--samples 5000] [--repeat 7]

For ``puma560_elastic`` (elastic complete model: 12-dof augmented pinocchio model, link
and motor rows, K and friction columns) and ``puma560`` (rigid, armature and friction
columns), times :func:`robot_identification.regressor.regressor` (the full observation
rows, allocated and returned) on random states and, in the same run on the same samples:

- the bare Python loop of ``pin.computeJointTorqueRegressor`` on the model pinocchio
  evaluates (the augmented rotor model for the elastic arm), result discarded;
- the C++ floor: the same pinocchio function called from a C++ loop
  (``benchmarks/regressor_floor.cpp``, compiled in this run by ``scripts/build_kernel.sh``
  against the same pinocchio headers and flags as the kernel; ``--no-floor`` skips it).

All run alternately, best of ``--repeat``, with one BLAS thread. Printed: samples/s, and
the ratios ``regressor() / Python loop`` (throughput, target >= 1.8) and ``regressor() /
C++ floor`` (time per sample, target <= 1.2) in process CPU time (the steadier measure on a
shared machine; the wall-clock throughput ratio beside it).
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pinocchio as pin
from threadpoolctl import threadpool_limits

from robot_identification.identifiability import random_states
from robot_identification.model import load_robot
from robot_identification.regressor import _kernel, regressor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_floor(folder):
    """Compile benchmarks/regressor_floor.cpp; the loaded library, or None (reason printed)."""
    out = os.path.join(folder, "libregressor_floor.so")
    venv = os.path.dirname(os.path.dirname(sys.executable))
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "build_kernel.sh"), venv,
                           os.path.join(ROOT, "benchmarks", "regressor_floor.cpp"), out],
                          capture_output=True, text=True)
    if not os.path.exists(out):
        print(f"C++ floor not built: {(proc.stderr or proc.stdout).strip()}")
        return None
    lib = ctypes.CDLL(out)
    lib.ri_floor.restype = ctypes.c_double
    d, i = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int)
    lib.ri_floor.argtypes = [ctypes.c_int, i, i, d, d, d, ctypes.c_long, d, d, d, ctypes.c_int]
    return lib


def floor_loop(lib, pm, qa, va, aa):
    """A function running the C++ loop once; it returns the loop's own CPU time [s]."""
    tree = _kernel.kinematic_tree(pm)
    if lib is None or tree is None:
        return None
    arrays = [np.ascontiguousarray(x, dtype=float) for x in (qa, va, aa)]
    d, i = ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int)

    def run():
        t = lib.ri_floor(len(tree["types"]), tree["types"].ctypes.data_as(i),
                         tree["parents"].ctypes.data_as(i),
                         tree["placements"].ctypes.data_as(d), tree["axes"].ctypes.data_as(d),
                         tree["gravity"].ctypes.data_as(d), len(arrays[0]),
                         *(x.ctypes.data_as(d) for x in arrays), 1)
        if t < 0:
            raise RuntimeError("C++ floor failed")
        return t
    return run


def bench(name, n_samples, repeat, floor_lib):
    model = load_robot(name)
    st = random_states(model, n_samples, np.random.default_rng(0))
    if model.config.elastic:
        pm = model.rotor_model
        qa = np.zeros((n_samples, pm.nq))
        qa[:, : model.pin_model.nq] = model.pin_configuration(st["q"])
        va, aa = np.zeros((n_samples, pm.nv)), np.zeros((n_samples, pm.nv))
        va[:, : model.n], aa[:, : model.n] = st["dq"], st["ddq"]
        va[:, model.n:], aa[:, model.n:] = st["dtheta"], st["ddtheta"]
    else:
        pm = model.pin_model
        qa = model.pin_configuration(st["q"])
        va, aa = st["dq"], st["ddq"]
    data = pm.createData()

    def raw():
        for i in range(n_samples):
            pin.computeJointTorqueRegressor(pm, data, qa[i], va[i], aa[i])

    def ours():
        regressor(model, **st)
    floor = floor_loop(floor_lib, pm, qa, va, aa)
    best = {"ours": [np.inf, np.inf], "raw": [np.inf, np.inf], "floor": np.inf}
    ours()
    for _ in range(repeat):      # alternately: fair under a varying load
        for key, fn in (("ours", ours), ("raw", raw)):
            w, c = time.perf_counter(), time.process_time()
            fn()
            c, w = time.process_time() - c, time.perf_counter() - w
            best[key] = [min(best[key][0], w), min(best[key][1], c)]
        if floor is not None:
            best["floor"] = min(best["floor"], floor())
    (w_ours, c_ours), (w_raw, c_raw) = best["ours"], best["raw"]
    us = 1e6 / n_samples
    line = (f"{name:16s} {model.n_parameters:3d} params x {model.rows_per_sample:2d} rows: "
            f"regressor() {c_ours * us:.3f} us/sample CPU ({n_samples / w_ours:8.0f} samples/s "
            f"wall) | bare Python loop ({pm.nv}-dof) {c_raw * us:.3f} us/sample CPU "
            f"| ratio {c_raw / c_ours:.2f} CPU time, {w_raw / w_ours:.2f} wall (target >= 1.8)")
    if floor is not None:
        line += (f" | C++ floor {best['floor'] * us:.3f} us/sample: regressor() / floor "
                 f"{c_ours / best['floor']:.2f} (target <= 1.2)")
    print(line, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-floor", action="store_true", help="skip the C++ reference loop")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        floor_lib = None if args.no_floor else build_floor(folder)
        print(f"pinocchio {pin.__version__}, {args.samples} random samples, best of "
              f"{args.repeat}, load average {os.getloadavg()[0]:.1f}; regressor path: "
              f"{_kernel.status()}", flush=True)
        with threadpool_limits(1, user_api="blas"):
            for name in ("puma560_elastic", "puma560"):
                bench(name, args.samples, args.repeat, floor_lib)


if __name__ == "__main__":
    main()
