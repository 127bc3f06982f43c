"""``robot-identification`` command line.

Sub-commands live in :mod:`robot_identification.commands`, one module each, found
automatically: a module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Errors of the core (:class:`IdentificationError`) become one
line on stderr and exit code 2.

Signals: Ctrl-C (SIGINT) and SIGTERM end a run at any point - while Python imports the
libraries, parses the arguments or computes - with one line on stderr and exit code 130 or
143, no traceback. The run unwinds, so every output being written is removed
(:mod:`robot_identification.outputs` writes to temporary files and directories that take the
target's place only when complete). A second signal while it unwinds removes those
temporary files at once and ends the process.
"""
from __future__ import annotations

import os
import signal
import sys

#: Exit code of a run ended by a signal: 128 + the signal number (as a shell reports it).
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _exit_at_start_up(signum, frame):
    """While the console script imports this module: end quietly (no traceback of a
    half-done import). The signal is also remembered: raised inside a callback of the
    import machinery (the weakref callback of an import lock), the SystemExit is not
    propagated - Python reports it as unraisable and the import goes on - so :func:`main`
    ends with the signal's exit code before running anything (:func:`_quiet_unraisable`)."""
    first = not _exit_at_start_up.received
    _exit_at_start_up.received = signum
    if first:
        print("robot-identification: interrupted", file=sys.stderr)
    raise SystemExit(EXIT_CODES.get(signum, 128 + signum))


_exit_at_start_up.received = 0


def _quiet_unraisable(previous):
    """A ``sys.unraisablehook`` for while the CLI runs: the exit or interrupt of a signal
    (:func:`_exit_at_start_up`, :func:`_on_signal`) raised where Python cannot propagate it
    (a weakref or finaliser callback) prints nothing - the signal is remembered and acted
    on by :func:`main` -; anything else goes to ``previous``."""
    def hook(unraisable):
        if (issubclass(unraisable.exc_type, (SystemExit, KeyboardInterrupt))
                and (_exit_at_start_up.received or _on_signal.received)):
            outputs = sys.modules.get("robot_identification.outputs")
            if outputs is not None and _on_signal.received:
                outputs.swallowed_signal(_on_signal.received)   # nothing is put in place
            return
        previous(unraisable)
    return hook


if os.path.basename(sys.argv[0] if sys.argv else "") == "robot-identification":
    for _sig in _SIGNALS:           # the console script is importing us: nothing to clean up
        signal.signal(_sig, _exit_at_start_up)
    sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)

import argparse  # noqa: E402 - after the start-up handlers
import importlib  # noqa: E402
import pkgutil  # noqa: E402

from robot_identification import __version__, _startup, commands  # noqa: E402
from robot_identification.errors import (  # noqa: E402
    EXIT_DIAGNOSTIC_ERROR, DiagnosticError, IdentificationError)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's :class:`KeyboardInterrupt` (so that
    ``finally`` blocks and context managers remove partial outputs)."""


def _command_modules(name=None):
    """The command modules (``NAME``, ``run``), in their ``ORDER``; ``name``: only the
    module of that command where its file is named after it (``identify-stream``:
    ``identify_stream.py``), else all."""
    if name and not name.startswith(("-", "_")) and name.replace("-", "_").isidentifier():
        try:
            mod = importlib.import_module(f"{commands.__name__}.{name.replace('-', '_')}")
        except ImportError:
            mod = None
        if getattr(mod, "NAME", None) == name and hasattr(mod, "run"):
            return [mod]
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
        import re  # start-up: module docstring
        choice = re.match(r"argument .*: invalid choice: '([^']*)' \(choose from (.*)\)", text)
        if choice:
            from robot_identification.errors import did_you_mean  # start-up: module docstring
            text += did_you_mean(choice.group(1), re.findall(r"'?([\w-]+)'?", choice.group(2)))
        self.exit(2, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


class _GivenOnce(argparse._StoreAction):
    """An option that takes its value(s) once: given twice (``--data a.npz --data b.npz``),
    argparse kept the last silently - a recording or a config left out without a word."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_options_given", set())
        if self.dest in given:
            more = " (give several values after one option: --data a b)" if self.nargs in (
                "+", "*") else ""
            parser.error(f"{option_string} given twice: the first value would be dropped "
                         f"silently{more}")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


def _format_warning(message, category, filename, lineno, line=None):
    """Library warnings as one line ``warning: message`` (Python's format adds the source
    file, line number and the code line below it)."""
    return "warning: " + " ".join(str(message).split()) + "\n"


def build_parser(command=None):
    """The command line's parser; ``command``: only that command's subparser where it names
    one (the same parse of its arguments without importing and building the other
    commands': in a fresh process 4-7 ms instead of 15-17 ms for all 14, issue #29), else
    every command's."""
    parser = _Parser(
        prog="robot-identification",
        description="Identify dynamic parameters of rigid and elastic-joint robot arms.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in _command_modules(command):
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        for action in p._actions:           # an option given twice is an error, not the last
            if type(action) is argparse._StoreAction and action.option_strings:
                action.__class__ = _GivenOnce
        options = {o for a in p._actions for o in a.option_strings}
        if "--quiet" not in options:
            p.add_argument("--quiet", action="store_true", help="no progress bars")
        if "--verbose" not in options:
            p.add_argument("--verbose", "-v", action="store_true",
                           help="also print the info notes (diagnostics of severity info)")
        if "--output" in options and "--force" not in options and not getattr(
                mod, "NEVER_OVERWRITES", False):
            p.add_argument("--force", action="store_true",
                           help="replace an existing --output (else an existing output is "
                                "refused)")
        p.set_defaults(_run=mod.run)
    return parser


def _error(command, exc):
    """One line on stderr (library messages with line breaks are joined)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    print(f"robot-identification {command}: error: {text}", file=sys.stderr)


def _on_signal(signum, frame):
    """First SIGINT/SIGTERM: unwind (KeyboardInterrupt / :class:`Terminated`). A second one
    while unwinding: remove the temporary outputs and end the process now. A signal within
    a step of :mod:`~robot_identification.outputs` that must not be cut in two is handled at
    its end (:func:`~robot_identification.outputs.defer_signal`)."""
    outputs = sys.modules.get("robot_identification.outputs")
    if outputs is not None and outputs.defer_signal(signum):
        return
    if _on_signal.received:
        from robot_identification.outputs import remove_pending  # start-up: module docstring
        remove_pending()
        print("robot-identification: interrupted again: stopped", file=sys.stderr)
        os._exit(EXIT_CODES.get(signum, 128 + signum))
    _on_signal.received = signum
    raise (KeyboardInterrupt() if signum == signal.SIGINT else Terminated())


_on_signal.received = 0


def _install_signal_handlers() -> dict:
    """Install :func:`_on_signal` for SIGINT and SIGTERM (main thread only); returns the
    previous handlers."""
    import threading  # start-up: module docstring
    if threading.current_thread() is not threading.main_thread():
        return {}
    _on_signal.received = 0
    outputs = sys.modules.get("robot_identification.outputs")
    if outputs is not None:
        outputs.swallowed_signal(None)
    return {s: signal.signal(s, _on_signal) for s in _SIGNALS}


#: glibc's ``mallopt`` parameters (malloc.h) and the values :func:`_keep_freed_memory` sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_BYTES, _MMAP_BYTES = 128 << 20, 32 << 20


def _keep_freed_memory():
    """glibc only: freed memory up to 128 MiB stays in the heap, blocks from 32 MiB are mapped
    on their own. A run allocates and frees arrays of a few MB thousands of times (the
    diagnostics' regressors, filters, fits); by default glibc returns freed memory above
    ~2 x its last mapped block size to the operating system, which zeroes the pages again on
    the next allocation's first touch. ``identify --robot ur10e --estimator ols`` on the two
    real runs: best of 4 CPU 1.61 -> 1.46 s, peak RSS 223 -> 212 MB; the 1.2 M-sample elastic
    PUMA run's peak RSS 929 -> 933 MB (docs/performance.md). Elsewhere a no-op."""
    import ctypes  # start-up: module docstring
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv=None) -> int:
    """Run the command line; returns the exit code (0 success, 1 no command, 2 bad input,
    3 a result with an error-severity diagnostic, 130 Ctrl-C, 143 SIGTERM). ``argv`` None:
    this process's own command line (``sys.argv``), whose start-up objects may be frozen
    (:mod:`robot_identification._startup`); a list (a caller's process): nothing frozen."""
    if _exit_at_start_up.received:     # a start-up signal whose SystemExit Python swallowed
        return EXIT_CODES.get(_exit_at_start_up.received, 128 + _exit_at_start_up.received)
    _keep_freed_memory()
    if argv is None:              # this process's own command line (_startup)
        _startup.FREEZE = True
    previous = _install_signal_handlers()
    hook = sys.unraisablehook
    sys.unraisablehook = _quiet_unraisable(hook)
    try:
        code = _main(argv)
        if _on_signal.received and code not in EXIT_CODES.values():
            # its interrupt was raised where Python swallows it (a weakref callback)
            raise Terminated() if _on_signal.received == signal.SIGTERM else KeyboardInterrupt()
        return code
    except KeyboardInterrupt as exc:          # also while importing and parsing
        terminated = isinstance(exc, Terminated) or _on_signal.received == signal.SIGTERM
        print("robot-identification: " + ("terminated" if terminated else "interrupted"),
              file=sys.stderr)
        return EXIT_CODES[signal.SIGTERM if terminated else signal.SIGINT]
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)


def _main(argv):
    import warnings  # start-up: module docstring
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 1
    try:
        os.getcwd()
    except OSError as exc:
        _error(args.command, f"the working directory no longer exists or cannot be read "
                             f"({exc.strerror}): it was deleted? cd to an existing directory")
        return 2
    from robot_identification import progress  # start-up: module docstring
    progress.enable(not getattr(args, "quiet", False))
    format_warning, warnings.formatwarning = warnings.formatwarning, _format_warning
    try:
        commands.check_empty_arguments(args)
        return int(args._run(args) or 0)
    except DiagnosticError as exc:     # computed, but an error diagnostic says it is wrong
        _error(args.command, exc)
        return EXIT_DIAGNOSTIC_ERROR
    except (IdentificationError, OSError) as exc:   # bad input; unreadable/unwritable file
        _error(args.command, exc)
        return 2
    except MemoryError:
        _error(args.command, "out of memory: the input is larger than this machine can hold; "
                             "stream long recordings with identify-stream")
        return 2
    finally:
        warnings.formatwarning = format_warning


if __name__ == "__main__":
    sys.exit(main())
