"""``robot-identification init``: a starter robot YAML from a URDF or xacro."""
from __future__ import annotations

from pathlib import Path

NAME = "init"
#: An existing output is refused, with no --force.
NEVER_OVERWRITES = True
HELP = ("write a starter robot config YAML from a URDF/xacro (joints and limits from the "
        "URDF, friction model, identification defaults, csv: template)")
ORDER = 1


def add_arguments(p):
    p.add_argument("--urdf", required=True, help="URDF or .xacro of the arm")
    p.add_argument("--joints", nargs="+", metavar="JOINT",
                   help="joints to identify (default: every movable joint; others locked at 0)")
    p.add_argument("--name", help="robot name (default: the URDF's robot name)")
    p.add_argument("--model", choices=("rigid", "elastic"), default="rigid",
                   help="rigid (default) or elastic joints (Zollo et al. 2014: adds a nominal "
                        "joint stiffness per joint; needs motor-side encoders)")
    p.add_argument("--xacro-arg", action="append", default=[], metavar="NAME:=VALUE",
                   help="xacro argument of a .xacro URDF (as `xacro FILE NAME:=VALUE`; "
                        "repeat for several); written into the config's xacro_args")
    p.add_argument("--output", required=True, help="robot config YAML to write (never "
                   "overwritten)")


def run(args):
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from robot_identification.starter import starter_config  # start-up: commands/__init__.py
    out = Path(args.output)
    if out.exists():
        raise ConfigError(f"{out} exists; an existing file is never overwritten")
    if out.suffix not in (".yaml", ".yml"):
        raise ConfigError(f"--output '{out}': expected a .yaml file")
    from robot_identification.outputs import check_output  # start-up: commands/__init__.py
    check_output(out, [args.urdf], "--output")          # not into a bag directory
    xacro_args = {}
    for item in args.xacro_arg:
        key, sep, value = item.partition(":=")
        if not sep or not key.strip():
            raise ConfigError(f"--xacro-arg '{item}': expected NAME:=VALUE")
        xacro_args[key.strip()] = value
    text = starter_config(args.urdf, out, joints=args.joints, name=args.name,
                          model=args.model, xacro_args=xacro_args)
    from robot_identification.outputs import atomic_output  # start-up: commands/__init__.py
    with atomic_output(out, [args.urdf], "--output", overwrite=False) as tmp:
        tmp.write_text(text)
    print(f"wrote {out.resolve()}")
    import yaml  # start-up: commands/__init__.py
    from robot_identification.model import read_urdf  # start-up: commands/__init__.py
    from robot_identification.starter import left_out_joints  # start-up: commands/__init__.py
    chosen = [j["name"] for j in yaml.safe_load(text)["joints"]]
    for name, why in left_out_joints(read_urdf(args.urdf, xacro_args), chosen):
        print(f"locked (not identified): {name}: {why}")
    for line in text.splitlines():
        if line.startswith("# note: "):
            print(line[2:])
    print(f"next: robot-identification simulate --config {out} --output run.npz")
    print(f"      robot-identification identify --config {out} --data run.npz")
    print(f"      robot-identification excite --config {out} --output excitation.yaml"
          f"   # optimised excitation (simulate --trajectory, excitation_publisher)")
    print(f"      robot-identification demo --config {out} --output demo_run   # ROS 2 graph")
    print("edit the lines marked CHECK before identifying a real arm (config/README.md)")
    return 0
