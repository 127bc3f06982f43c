"""Sub-commands of the ``robot-identification`` CLI (one module each, discovered by cli.py)."""
