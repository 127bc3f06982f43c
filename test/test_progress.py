"""Progress bars: drawn on a terminal once enabled, silent otherwise; --quiet everywhere."""
import io

from robot_identification import progress
from robot_identification.cli import build_parser


class _Tty(io.StringIO):
    def isatty(self):
        return True


def _run(enabled, file):
    progress.enable(enabled)
    try:
        with progress.bar(total=3, desc="step", unit="s", file=file, delay=0,
                          mininterval=0) as pbar:
            for _ in range(3):
                pbar.update(1)
    finally:
        progress.enable(False)
    return file.getvalue()


def test_bar_draws_on_a_terminal_only_when_enabled():
    assert "step" in _run(True, _Tty()) and "3/3" in _run(True, _Tty())
    assert _run(True, io.StringIO()) == ""        # not a terminal (a log file, CI)
    assert _run(False, _Tty()) == ""              # library default / --quiet


def test_every_command_takes_quiet():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        assert any("--quiet" in a.option_strings for a in p._actions), name
