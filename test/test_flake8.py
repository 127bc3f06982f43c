"""Style check (stands in for ament_flake8; configuration in setup.cfg [flake8])."""
import shutil
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


def test_flake8_available_in_ci():
    # the test extra installs flake8; a missing one should not go unnoticed in CI
    import os
    if os.environ.get("CI"):
        assert shutil.which("flake8") or pytest.importorskip("flake8")
