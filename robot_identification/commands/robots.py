"""``robot-identification robots``: list shipped robots."""
NAME = "robots"
HELP = "list the shipped robots"
ORDER = 90


def add_arguments(p):
    pass


def run(args):
    from robot_identification.model import available_robots, robot_files
    for name in available_robots():
        print(f"{name:20s} {robot_files(name)}")
    return 0
