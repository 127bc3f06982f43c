"""Style check (stands in for ament_flake8; configuration in setup.cfg [flake8])."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_flake8():
    pytest.importorskip("flake8")
    out = subprocess.run([sys.executable, "-m", "flake8", "robot_identification", "test",
                          "benchmarks", "launch"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, f"flake8 found problems:\n{out.stdout}{out.stderr}"
