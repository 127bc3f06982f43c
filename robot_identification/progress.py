"""Progress bars (tqdm) for steps that can take more than a few seconds.

Off by default, so that library calls, tests and notebooks stay quiet; the command line
turns them on (:func:`enable`) unless ``--quiet`` is given. Bars are drawn on stderr only
when it is a terminal (tqdm's own check), and only once a step has run for
:data:`DELAY` seconds, so that short steps print nothing.

Example::

    from robot_identification import progress
    with progress.bar(total=n, desc="simulate", unit="s") as pb:
        ...
        pb.update(dt)
"""
from __future__ import annotations

#: Seconds before a bar appears.
DELAY = 1.0

_enabled = False


def enable(on: bool = True) -> None:
    """Turn progress bars on (the CLI does, unless ``--quiet``) or off."""
    global _enabled
    _enabled = bool(on)


def enabled() -> bool:
    """Whether :func:`bar` draws (when stderr is a terminal)."""
    return _enabled


def bar(total=None, desc: str = "", unit: str = "it", **kw):
    """A tqdm bar on stderr; a silent one when disabled or stderr is not a terminal.

    Parameters
    ----------
    total : float, optional
        Work to do (None: unknown, a counter is shown).
    desc : str
        Step name shown before the bar.
    unit : str
        Unit of ``total`` (e.g. ``"s"`` of simulated time, ``"sample"``).

    Returns
    -------
    tqdm.tqdm
        Use as a context manager; ``update(n)`` advances it. When disabled a stand-in with
        the calls of a disabled tqdm (``update``, ``set_postfix_str``, ``close``, ``n``,
        ``total``) that does not import tqdm.
    """
    if not _enabled:        # nothing to draw: no tqdm import (identify --quiet: ~5 ms)
        return _Silent(total)
    # tqdm.std, not tqdm.auto: in a Jupyter kernel without ipywidgets tqdm.auto warns
    # (TqdmExperimentalWarning) when imported, and the bars are for terminals only anyway
    from tqdm.std import tqdm  # optional: progress bars only on a terminal
    # no monitor thread (tqdm starts one with its first bar, even a disabled one): a
    # process without threads of its own forks its local Dask workers (_dask.start_method)
    tqdm.monitor_interval = 0
    kw.setdefault("delay", DELAY)
    kw.setdefault("leave", False)
    kw.setdefault("dynamic_ncols", True)
    return tqdm(total=total, desc=desc, unit=unit, disable=None, **kw)


class _Silent:
    """What a disabled ``tqdm`` bar does, without importing tqdm: ``update``,
    ``set_postfix_str``, ``close`` do nothing, ``n`` stays 0 (a disabled tqdm does not
    count either), ``total`` is kept; a context manager."""

    disable = True

    def __init__(self, total=None):
        self.total = total
        self.n = 0

    def update(self, n=1):
        return None

    def set_postfix_str(self, s="", refresh=True):
        return None

    def close(self):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
