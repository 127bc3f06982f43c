"""``robot-identification config-schema``: the JSON Schema of a robot config YAML."""
from __future__ import annotations

NAME = "config-schema"
HELP = ("print (or write with --output) the JSON Schema of a robot config YAML, for editors "
        "that complete and check keys (config/README.md#editor-support)")
ORDER = 95


def add_arguments(p):
    p.add_argument("--output", help="JSON file to write (default: print to stdout)")


def schema_text() -> str:
    """The schema as the committed ``config/robot_config.schema.json`` holds it (sorted keys,
    two-space indent, a final newline)."""
    import json  # start-up: commands/__init__.py

    from robot_identification.model import config_json_schema  # start-up: commands/__init__.py
    return json.dumps(config_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def run(args):
    text = schema_text()
    if not args.output:
        print(text, end="")
        return 0
    from pathlib import Path  # start-up: commands/__init__.py

    from robot_identification.commands._common import refuse_existing  # start-up: above
    from robot_identification.outputs import write_text_atomic  # start-up: above
    refuse_existing(args.output, "--output", args)
    write_text_atomic(args.output, text, what="--output")
    print(f"wrote {Path(args.output).resolve()}")
    return 0
