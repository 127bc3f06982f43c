"""Tracked text files name no path of a developer's machine (docs must work from any clone)."""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: absolute paths of one machine: the workspace, home directories, temporary build folders
MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/root/|/home/\w|/Users/\w|/tmp/[\w-]*-[\w-]+/)")
SUFFIXES = {".md", ".py", ".yaml", ".yml", ".sh", ".xacro", ".urdf", ".xml", ".cfg", ".txt"}


def _tracked():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
        return [REPO / p for p in out]
    except (OSError, subprocess.CalledProcessError):      # not a git checkout
        return [p for p in REPO.rglob("*") if ".venv" not in p.parts and p.is_file()]


def test_no_machine_specific_paths():
    bad = []
    for path in _tracked():
        if path.suffix not in SUFFIXES or not path.is_file() or path.name == Path(__file__).name:
            continue
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if MACHINE_PATH.search(line):
                bad.append(f"{path.relative_to(REPO)}:{i}: {line.strip()}")
    assert not bad, "machine-specific paths:\n" + "\n".join(bad)
