"""Checks every reader makes before it opens an input file: it exists, it is a regular file
(not a directory, a FIFO, a device such as ``/dev/zero``, a socket), and it is no larger than
the reader's limit, so that no reader blocks on a pipe or reads without end.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

#: What the kinds of non-regular files are called in messages.
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_input_file(path, what: str, error: type, max_bytes: int | None = None) -> int:
    """Refuse an input that is missing, not a regular file, or larger than ``max_bytes``.

    Parameters
    ----------
    path : path
    what : str
        What the file is, for messages (``"CSV"``, ``"robot config"``).
    error : type
        IdentificationError subclass to raise.
    max_bytes : int, optional
        Largest accepted size [bytes].

    Returns
    -------
    int
        The file's size [bytes].

    Raises
    ------
    error
        One line naming the file: it does not exist, is a directory, is a FIFO/device/socket,
        cannot be examined (permissions, a symbolic-link loop), or is too large.
    """
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{what} '{path}' does not exist") from None
    except OSError as exc:
        raise error(f"{what} '{path}' cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{what} '{path}' is a directory; give the file")
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise error(f"{what} '{path}' is {kind}, not a regular file: give the file itself "
                    f"(a pipe or device would be read without end)")
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(f"{what} '{path}' is {st.st_size / 2**20:.0f} MiB, above the limit of "
                    f"{max_bytes / 2**20:.0f} MiB for this kind of file")
    return st.st_size
