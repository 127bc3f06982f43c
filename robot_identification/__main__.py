"""``python -m robot_identification``: the same command line as ``robot-identification``
(:func:`robot_identification.cli.main`)."""
import sys

from robot_identification.cli import main

if __name__ == "__main__":
    sys.exit(main())
