"""Writing output files safely: never over an input, never into a bag, always atomically.

Every command and node writes its files through this module:

- :func:`check_output` refuses an output path that resolves (through symlinks and hard
  links) to one of the inputs, lies inside an input directory or a rosbag2 directory, or is a
  directory, a recording (``.mcap``/``.db3``) or, for anything but a dataset writer, an
  existing dataset (``.npz``/``.csv``);
- :func:`atomic_output` / :func:`write_text_atomic` write to a temporary file in the same
  directory and rename it over the target (POSIX ``rename`` is atomic), so a failure or a
  crash never leaves a half-written results.yaml, URDF or dataset;
- :func:`atomic_directory` writes a directory (a report, a simulated bag) in a temporary
  place and puts it at the target in one step, exchanging it with the previous one.

Write errors (a full disk, a read-only file system, a name beyond the file system's limit)
are ``OSError`` whose message is one line naming the target and the cause.
"""
from __future__ import annotations

import ctypes
import errno
import itertools
import operator
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from robot_identification.errors import ConfigError


class WriteError(OSError):
    """An output that cannot be written: ``strerror`` is one line naming the target and the
    cause (``errno`` is kept: ``ENOSPC``, ``EROFS``, ``ENAMETOOLONG``, ...)."""

    def __str__(self):
        return str(self.strerror)


#: File suffixes of recordings: never overwritten.
RECORDING_SUFFIXES = (".mcap", ".db3")
#: Dataset files: an existing one is replaced only by a dataset writer (``dataset=True``),
#: never by a results file, trajectory, URDF or report given the same name by mistake.
DATASET_SUFFIXES = (".npz", ".csv")


def is_bag_directory(path) -> bool:
    """True when ``path`` is a rosbag2 directory: a rosbag2 ``metadata.yaml``, or (a recording
    cut short) storage files named after the directory (``<dir>_0.mcap``, ``<dir>.mcap``)."""
    path = Path(path)
    if not path.is_dir():
        return False
    meta = path / "metadata.yaml"
    if meta.is_file():
        try:
            with open(meta, "rb") as f:
                if b"rosbag2_bagfile_information" in f.read(4096):
                    return True
        except OSError:
            pass
    # the entries matching ``<dir>*.mcap`` or ``<dir>*.db3`` as ``Path.glob`` of those
    # patterns matches them (any entry, case-sensitive; a directory that cannot be listed
    # matches nothing), from one listing instead of one glob per suffix (a results file
    # under /tmp with 10 k entries: ~12 ms per output check; issue #29)
    name = path.name
    try:
        names = os.listdir(path)
    except OSError:           # unreadable, or removed since the check above
        return False
    # the names starting with the directory's name picked out at C level (methodcaller: no
    # Python frame per entry; ~0.8 instead of 1.6 ms for 12 k entries), then the suffixes
    starting = itertools.compress(names, map(operator.methodcaller("startswith", name), names))
    return any(e.endswith(s) and len(e) >= len(name) + len(s)
               for e in starting for s in RECORDING_SUFFIXES)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_output(path, inputs=(), what="output", dataset=False) -> Path:
    """Refuse an output path that would overwrite an input or recorded data.

    Parameters
    ----------
    path : path
        The file to be written.
    inputs : iterable of path
        Files and directories the command reads (``None`` entries are skipped).
    what : str
        How the output is named in messages (e.g. ``"--output"``, ``"results_file"``).
    dataset : bool
        The output is a dataset (``simulate``): it may replace an existing ``.npz``.

    Returns
    -------
    Path
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    ConfigError
        ``path`` is (a link to) an input, lies inside an input directory or a rosbag2
        directory, is an existing directory, is an existing recording file, or (unless
        ``dataset``) an existing dataset file (``.npz``, ``.csv``).
    """
    p = Path(path)
    rp = _check_place(p, inputs, what)
    if rp.is_dir():
        raise ConfigError(f"{what} '{p}' is a directory; give a file name")
    if rp.exists() and rp.suffix.lower() in RECORDING_SUFFIXES:
        raise ConfigError(f"{what} '{p}' is a recording: recorded data is never overwritten")
    if rp.exists() and rp.suffix.lower() in DATASET_SUFFIXES and not dataset:
        raise ConfigError(f"{what} '{p}' is an existing dataset: recorded data is never "
                          f"overwritten by another kind of file; choose another name")
    return p


def _check_place(p, inputs, what) -> Path:
    """The resolved ``p``, refused when a parent is a file, when it is (a link to) an input
    or lies inside an input or rosbag2 directory.

    Raises
    ------
    ConfigError
        As :func:`check_output`.
    """
    for part in p.parts:
        size = len(os.fsencode(part))
        if size > 255 and size > name_max(p.parent):
            raise ConfigError(f"{what} '{p}': the name '{part[:24]}...' is {size} bytes, "
                              f"above the file system's limit of {name_max(p.parent)} bytes "
                              f"per name (File name too long)")
    try:
        rp = p.resolve()
    except RuntimeError:            # Python < 3.13: a symbolic-link loop
        raise ConfigError(f"{what} '{p}' is a symbolic-link loop") from None
    except OSError as exc:          # the working directory was deleted, ELOOP (3.13)
        raise ConfigError(f"{what} '{p}': {exc.strerror}") from None
    for parent in reversed(rp.parents):     # mkdir would fail with "[Errno 17] File exists"
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"{what} '{p}': '{parent}' is a file, not a directory; "
                              f"choose another place")
    for inp in inputs:
        if inp is None:
            continue
        ip = Path(inp)
        if not ip.exists():
            continue
        if _same_file(rp, ip):
            raise ConfigError(f"{what} '{p}' is the input '{ip}': inputs are never "
                              f"overwritten; choose another file")
        if ip.is_dir() and ip.resolve() in rp.parents:
            raise ConfigError(f"{what} '{p}' lies inside the input directory '{ip}': inputs "
                              f"are never written to; choose another place")
    for parent in rp.parents:
        if is_bag_directory(parent):
            raise ConfigError(f"{what} '{p}' lies inside the rosbag2 directory '{parent}': "
                              f"recorded data is never written to; choose another place")
    return rp


@contextmanager
def atomic_output(path, inputs=(), what="output", dataset=False, overwrite=True):
    """Context manager yielding a temporary path that replaces ``path`` on success.

    The temporary file lies in the target's directory and keeps its suffix (so writers
    that add a suffix, such as ``numpy.savez``, keep the name); its name is shortened to
    fit the file system's name limit, so any target name up to that limit is written. On an
    exception (also Ctrl-C or SIGTERM through the CLI's handler) it is removed and ``path``
    is left untouched. A target that is a device or a FIFO (``/dev/null``, ``/dev/full``,
    a named pipe) is never replaced: the finished file is copied into it (a full device
    raises ``OSError`` ENOSPC).

    Parameters
    ----------
    path, inputs, what, dataset
        See :func:`check_output`.
    overwrite : bool
        Replace an existing ``path`` (default). False: an existing ``path`` is an error,
        also when it appears while the file is written (it is linked into place, never
        renamed over).

    Raises
    ------
    ConfigError
        See :func:`check_output`; ``path`` exists and ``overwrite`` is False.
    OSError
        The target cannot be written (a full disk, a read-only or virtual file system such
        as ``/proc``, permissions, a file name beyond the file system's limit): one line
        naming ``path`` and the cause, never the temporary file.
    """
    p = check_output(path, inputs, what, dataset)
    if not overwrite and os.path.lexists(p):
        raise ConfigError(f"{what} '{p}' exists; an existing file is never overwritten")
    if _is_special_file(p):
        # a device or FIFO (/dev/null, /dev/full, a pipe): renaming over it would replace the
        # device node with a regular file (as root: /dev/null for every process). Write the
        # finished file's bytes into it instead; /dev/full then fails with ENOSPC.
        folder = None
        try:
            with holding_signals():         # created and registered, or neither
                folder = Path(tempfile.mkdtemp(prefix="ri_output_"))
                _PENDING.add(folder)
            tmp = folder / f"output{p.suffix}"
            with _naming(p, what, scratch=folder):
                yield tmp
            _stop_if_swallowed()
            with _naming(p, what, always=True):
                with open(tmp, "rb") as src, open(p, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
                _PENDING.discard(folder)
        return
    with _naming(p, what, always=True):
        p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(temporary_name(p))
    _PENDING.add(tmp)
    try:
        with _naming(p, what):
            yield tmp
        _stop_if_swallowed()
        with _naming(p, what, always=True):
            if overwrite:
                os.replace(tmp, p)
            else:
                _link_new(tmp, p, what)
    finally:
        _remove(tmp)
        _PENDING.discard(tmp)


def _link_new(tmp, p, what):
    """Put ``tmp`` at the new name ``p`` without replacing a file that appeared meanwhile."""
    try:
        os.link(tmp, p)
    except FileExistsError:
        raise ConfigError(f"{what} '{p}' exists; an existing file is never overwritten") \
            from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
            raise
        if os.path.lexists(p):          # no hard links on this file system (vfat, some FUSE)
            raise ConfigError(f"{what} '{p}' exists; an existing file is never overwritten") \
                from None
        os.rename(tmp, p)


@contextmanager
def _naming(p, what, always=False, scratch=None):
    """Re-raise an ``OSError`` of the block as one naming the user's file ``p`` and the cause
    (``[Errno 28] No space left on device`` names no file; a temporary file's name means
    nothing to the user). With ``always`` False, errors that name another file (an input
    read while writing) pass unchanged."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, WriteError):
            raise
        names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
        if not always and names and not any(_is_ours(n, p, scratch) for n in names):
            raise
        cause = exc.strerror or str(exc)
        if exc.errno == errno.ENAMETOOLONG:
            cause += f" (the file system's limit is {name_max(p.parent)} bytes per name)"
        raise WriteError(exc.errno, f"cannot write {what} '{p}': {cause}") from None


def _is_ours(name, p, scratch=None) -> bool:
    """``name`` is the target ``p``, or lies in a hidden temporary file or directory next to
    it, or in the folder ``scratch``."""
    name = os.path.abspath(name)
    folder = os.path.dirname(os.path.abspath(p))
    rel = os.path.relpath(name, folder)
    return (rel == Path(p).name or rel.startswith(".") and not rel.startswith("..")
            or scratch is not None and name.startswith(os.path.abspath(scratch) + os.sep))


def name_max(folder) -> int:
    """Longest file name [bytes] in ``folder`` (its first existing ancestor): 255 on ext4,
    tmpfs, xfs, btrfs."""
    folder = Path(folder)
    for f in (folder, *folder.parents):
        try:
            return int(os.pathconf(f, "PC_NAME_MAX"))
        except (OSError, ValueError):
            continue
    return 255


def temporary_name(p) -> str:
    """A hidden name for the temporary file of target ``p`` in ``p``'s directory: the target's
    stem (shortened to fit the file system's name limit), the process id, ``.tmp`` and the
    target's suffix, e.g. ``.results.12345.tmp.yaml``."""
    p = Path(p)
    suffix = p.suffix if len(p.suffix) <= 16 else ""
    tail = f".{os.getpid()}.tmp{suffix}"
    room = name_max(p.parent) - len(tail.encode()) - 1
    stem = p.stem.encode()[:max(room, 0)].decode(errors="ignore")
    return f".{stem}{tail}"


def _remove(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
    except OSError:
        pass


#: Temporary files and directories being written now: the CLI's signal handler removes them
#: before it ends the process on a second signal (:func:`remove_pending`).
_PENDING = set()
#: Depth of :func:`holding_signals` blocks and the signal that arrived within them.
_HOLD = {"depth": 0, "pending": None}


@contextmanager
def holding_signals():
    """A short step that a signal must not cut in two (a temporary directory created and
    registered for removal; two renames that swap directories): the CLI's handler asks
    :func:`defer_signal` and, within the block, leaves the signal for its end, where it is
    sent again. (``pthread_sigmask`` would not do: Python runs its handlers in the main
    thread for a signal that any thread received.)"""
    _HOLD["depth"] += 1
    try:
        yield
    finally:
        _HOLD["depth"] -= 1
        pending = _HOLD["pending"]
        if not _HOLD["depth"] and pending is not None:
            _HOLD["pending"] = None
            os.kill(os.getpid(), pending)           # handled now, outside the step


def defer_signal(signum) -> bool:
    """Whether the signal ``signum`` arrived inside :func:`holding_signals` (it is then sent
    again at the block's end); the CLI's handler returns at once when True."""
    if _HOLD["depth"]:
        _HOLD["pending"] = signum
        return True
    return False


def swallowed_signal(signum):
    """Record a signal whose interrupt Python swallowed (raised in a weakref callback: the
    CLI's ``sys.unraisablehook`` calls this), or clear the record (``None``): the next
    output about to be put in place is then not put in place (:func:`_stop_if_swallowed`),
    so an interrupted run writes nothing."""
    _HOLD["swallowed"] = signum


def _stop_if_swallowed():
    if _HOLD.get("swallowed"):
        raise KeyboardInterrupt()


def remove_pending():
    """Remove every temporary file and directory of outputs being written (the CLI calls it
    when a second Ctrl-C or SIGTERM ends the process at once, without unwinding)."""
    for path in list(_PENDING):
        _remove(path)
        _PENDING.discard(path)


def check_output_directory(path, inputs=(), what="output directory", replaceable=None) -> Path:
    """Refuse an output directory that would overwrite or remove an input, recorded data or
    anything but a previous output of the same kind.

    Parameters
    ----------
    path : path
        The directory to be written (as a whole).
    inputs : iterable of path
        Files and directories the command reads.
    what : str
        How the directory is named in messages.
    replaceable : callable, optional
        ``replaceable(path) -> str or None`` for an existing directory: None when it holds
        a previous output that may be replaced, else why not (e.g. the files it holds that
        the writer did not write). Without it, an existing non-empty directory is refused.

    Returns
    -------
    Path

    Raises
    ------
    ConfigError
        ``path`` is a file, an input, inside an input or rosbag2 directory, a rosbag2
        directory, holds an input, or is an existing directory that ``replaceable`` refuses.
    """
    p = Path(path)
    rp = _check_place(p, inputs, what)
    if not rp.exists():
        return p
    if not rp.is_dir():
        raise ConfigError(f"{what} '{p}' is a file; give a directory")
    if is_bag_directory(rp):
        raise ConfigError(f"{what} '{p}' is a rosbag2 directory: recorded data is never "
                          f"overwritten; choose another place")
    for inp in inputs:
        if inp is not None and Path(inp).exists() and rp in Path(inp).resolve().parents:
            raise ConfigError(f"{what} '{p}' holds the input '{inp}': it would be replaced; "
                              f"choose another place")
    why = (replaceable(rp) if replaceable is not None else
           (None if not any(rp.iterdir()) else "it is not empty"))
    if why:
        raise ConfigError(f"{what} '{p}' exists and {why}: the directory is replaced as a "
                          f"whole, so nothing else is lost; give a new directory")
    return p


@contextmanager
def atomic_directory(path, inputs=(), what="output directory", replaceable=None):
    """Context manager yielding a path where a directory is written that becomes ``path``
    on success, in one step.

    The yielded path does not exist yet (the writer creates it; ``BagWriter`` refuses an
    existing one) and has the target's name, inside a hidden temporary directory next to
    the target (a rosbag2 writer names its storage files after the directory). On success
    it is renamed to ``path``; an existing ``path`` (accepted by ``replaceable``, see
    :func:`check_output_directory`) is exchanged with it atomically (``renameat2``
    ``RENAME_EXCHANGE``; where the file system lacks it, two renames with signals blocked)
    and then removed. On an exception (also Ctrl-C or SIGTERM through the CLI's handler)
    the temporary directory is removed and ``path`` is left as it was: a failed report
    never removes the previous one nor mixes its files with the new run's.

    Raises
    ------
    ConfigError
        See :func:`check_output_directory`.
    OSError
        The directory cannot be written (a full disk, a read-only file system, ...): one
        line naming ``path``.
    """
    p = check_output_directory(path, inputs, what, replaceable)
    container = None
    try:
        with _naming(p, what, always=True), holding_signals():
            p.parent.mkdir(parents=True, exist_ok=True)
            container = Path(tempfile.mkdtemp(prefix=".ri-tmp-", dir=p.parent))
            _PENDING.add(container)             # a held signal is raised after this step
        new = container / p.name
        with _naming(p, what):
            yield new
        with _naming(p, what, always=True):
            if not new.exists():
                new.mkdir()
            if p.exists():
                check_output_directory(p, inputs, what, replaceable)   # unchanged meanwhile?
                _exchange(new, p)           # the old directory is now at ``new``
            else:
                os.rename(new, p)
    finally:
        if container is not None:
            _remove(container)
            _PENDING.discard(container)


def _exchange(a, b):
    """Swap the directories ``a`` and ``b`` (same file system) atomically."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        at_fdcwd, rename_exchange = -100, 2
        if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b),
                     rename_exchange) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), str(b))
    # no atomic exchange here: two renames, with the signals that end a run held back
    # between them (the target is missing for a moment, never lost)
    old = Path(a).with_name(Path(a).name + ".old")
    with holding_signals():
        os.rename(b, old)
        try:
            os.rename(a, b)
        except OSError:
            os.rename(old, b)
            raise
        os.rename(old, a)


def _is_special_file(path) -> bool:
    """``path`` exists and is neither a regular file nor a directory (a character or block
    device, a FIFO, a socket)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_text_atomic(path, text: str, inputs=(), what="output") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_output`); returns ``path``.

    Raises
    ------
    ConfigError
        See :func:`check_output`.
    OSError
        The directory cannot be created or written.
    """
    with atomic_output(path, inputs, what) as tmp:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    return Path(path)
