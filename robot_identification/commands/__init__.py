"""Sub-commands of the ``robot-identification`` CLI (one module each, discovered by cli.py).

cli.py imports every command module to build its parser, so a command imports what it runs
inside ``run()`` (the comment ``# start-up`` beside each such import): ``robot-identification
--help`` took 0.46 s where importing the core it would load (identification, validation,
report, simulation, excitation; pinocchio, scipy) took 2.3 s (same machine, 2 shared cores
at load 10, ``/usr/bin/time``; 1.1 s vs 6.6 s in a second, busier measurement).
"""
from robot_identification.commands._common import check_empty_arguments  # noqa: F401
