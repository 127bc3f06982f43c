"""Fuzz the loaders and the CLI with many more hypothesis examples than CI runs.

Runs test/test_input_fuzzing.py with the ``fuzz`` profile (random seeds, 400 examples per
property, 60 for the CLI property; ``--examples N`` overrides) and prints hypothesis'
statistics: examples run, their outcomes and the time per property. A failure prints the
shrunk input that broke a loader (anything but a valid result or a one-line project error).

    .venv/bin/python scripts/fuzz_inputs.py [--examples N] [pytest arguments ...]
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, help="examples per property (default 400)")
    args, rest = parser.parse_known_args(argv)
    env = dict(os.environ, RI_HYPOTHESIS_PROFILE="fuzz")
    if args.examples:
        env["RI_HYPOTHESIS_EXAMPLES"] = str(args.examples)
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "test" / "test_input_fuzzing.py"), "-q",
           "--hypothesis-show-statistics", "-p", "no:cacheprovider"] + rest
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
