"""Robot config load time on the pydantic v2 models (issue #26).

For every shipped robot config (config/robots/*.yaml), in the same run:

- YAML: reading and parsing the file (``robot_identification._yaml.read_yaml_file``, the
  loader's own first step; the reference),
- validation: ``parse_robot_config`` of the parsed mapping (the pydantic models, then the
  runtime dataclasses),

best of ``--repeats`` rounds, per config. Then the start-up cost a process pays once: a fresh
interpreter importing ``robot_identification.model`` under ``python -X importtime``, the share
of pydantic (its modules and the building of the models in ``_config_file``) beside the
whole import (pinocchio, numpy, ...).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/config_load.py
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def best_of(fn, repeats, inner):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def import_shares():
    """(pydantic share [s], whole import [s]) of ``import robot_identification.model`` in a
    fresh interpreter (``-X importtime``: self times, microseconds)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import robot_identification.model"], env=env, text=True,
                         capture_output=True, check=True).stderr
    total = ours = 0
    for line in out.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[12:].split("|"))
        total += int(self_us)
        if (name.split(".")[0] in ("pydantic", "pydantic_core", "annotated_types",
                                   "typing_inspection")
                or name.endswith("model._config_file")):
            ours += int(self_us)
    return ours / 1e6, total / 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--imports", type=int, default=5, help="fresh interpreters (best of)")
    args = p.parse_args()
    from robot_identification._yaml import read_yaml_file
    from robot_identification.errors import ConfigError
    from robot_identification.model import parse_robot_config

    print(f"{'config':<18} {'YAML [ms]':>10} {'validation [ms]':>16} {'ratio':>6}")
    for path in sorted((REPO / "config" / "robots").glob("*.yaml")):
        data = read_yaml_file(path, "robot config", ConfigError)
        t_yaml = best_of(lambda: read_yaml_file(path, "robot config", ConfigError),
                         args.repeats, 5)
        t_val = best_of(lambda: parse_robot_config(data, source=path), args.repeats, 20)
        print(f"{path.stem:<18} {t_yaml * 1e3:>10.2f} {t_val * 1e3:>16.3f} "
              f"{t_val / t_yaml:>6.3f}")
    runs = [import_shares() for _ in range(args.imports)]
    ours, total = min(runs, key=lambda r: r[1])
    print(f"\nimport robot_identification.model in a fresh interpreter (best of "
          f"{args.imports}): {total:.3f} s, of which pydantic and building the config "
          f"models {ours:.3f} s ({ours / total:.0%})")


if __name__ == "__main__":
    main()
