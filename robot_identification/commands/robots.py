"""``robot-identification robots``: list shipped robots with their descriptions."""
NAME = "robots"
HELP = "list the shipped robots (name, dof, model, description)"
ORDER = 90


def add_arguments(p):
    p.add_argument("--paths", action="store_true", help="also print each config file's path")


def run(args):
    from robot_identification.model import (  # start-up: commands/__init__.py
        available_robots, load_robot_config, robot_files)
    rows = []
    for name in available_robots():
        cfg = load_robot_config(robot_files(name))
        desc = str(cfg.extra.get("description") or "")
        rows.append((name, f"{len(cfg.joints)} dof {cfg.model}", desc, robot_files(name)))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, kind, desc, path in rows:
        print(f"{name:<{w0}}  {kind:<{w1}}  {desc}" + (f"\n{'':<{w0}}  {path}" if args.paths
                                                       else ""))
    print("any other arm: robot-identification init --urdf ARM.urdf --output arm.yaml, "
          "then --config arm.yaml")
    return 0
