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


def available_memory() -> int:
    """Memory this process may still take [bytes]: ``MemAvailable`` of ``/proc/meminfo``,
    lowered to a cgroup's memory limit, else the physical memory; 2**62 where neither is
    known."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            avail = 2**62
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            cap = int(Path(limit).read_text().split()[0]) - int(
                Path(usage).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        avail = min(avail, max(cap, 0))
    return int(avail)


def check_memory(needed: int, what: str, error: type, hint: str = ""):
    """Refuse to load ``needed`` bytes when they exceed half the available memory
    (:func:`available_memory`): Linux would let the allocation through and then kill the
    process (no message at all), or the machine would swap for minutes.

    Raises
    ------
    error
        ``what`` would need ``needed`` bytes; the message gives both sizes and ``hint``.
    """
    avail = available_memory()
    if needed > avail // 2:
        raise error(f"{what} would take {needed / 2**30:.3g} GiB in memory, more than half "
                    f"of the {avail / 2**30:.3g} GiB available{hint}")
