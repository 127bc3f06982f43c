"""``robot-identification`` command line.

Sub-commands live in :mod:`robot_identification.commands`, one module each, found
automatically: a module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Errors of the core (:class:`IdentificationError`) become one
line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from robot_identification import __version__, commands
from robot_identification.errors import IdentificationError


def _command_modules():
    mods = []
    for info in pkgutil.iter_modules(commands.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    return sorted(mods, key=lambda m: getattr(m, "ORDER", 50))


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line (``prog: error: message``, exit 2)
    instead of the multi-line usage block followed by the error."""

    def error(self, message):
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


def _format_warning(message, category, filename, lineno, line=None):
    """Library warnings as one line ``warning: message`` (Python's format adds the source
    file, line number and the code line below it)."""
    return "warning: " + " ".join(str(message).split()) + "\n"


def build_parser():
    parser = _Parser(
        prog="robot-identification",
        description="Identify dynamic parameters of rigid and elastic-joint robot arms.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _command_modules():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        if not any("--quiet" in a.option_strings for a in p._actions):
            p.add_argument("--quiet", action="store_true", help="no progress bars")
        p.set_defaults(_run=mod.run)
    return parser


def _error(command, exc):
    """One line on stderr (library messages with line breaks are joined)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    print(f"robot-identification {command}: error: {text}", file=sys.stderr)


def main(argv=None) -> int:
    import warnings
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 1
    from robot_identification import progress
    progress.enable(not getattr(args, "quiet", False))
    format_warning, warnings.formatwarning = warnings.formatwarning, _format_warning
    try:
        from robot_identification.commands._common import check_empty_arguments
        check_empty_arguments(args)
        return int(args._run(args) or 0)
    except (IdentificationError, OSError) as exc:   # bad input; unreadable/unwritable file
        _error(args.command, exc)
        return 2
    except MemoryError:
        _error(args.command, "out of memory: the input is larger than this machine can hold; "
                             "stream long recordings with identify-stream")
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = format_warning


if __name__ == "__main__":
    sys.exit(main())
