"""Writing output files safely: never over an input, never into a bag, always atomically.

Every command and node writes its files through this module:

- :func:`check_output` refuses an output path that resolves (through symlinks and hard
  links) to one of the inputs, lies inside an input directory or a rosbag2 directory, or is a
  directory, a recording (``.mcap``/``.db3``) or, for anything but a dataset writer, an
  existing dataset (``.npz``/``.csv``);
- :func:`atomic_output` / :func:`write_text_atomic` write to a temporary file in the same
  directory and rename it over the target (POSIX ``rename`` is atomic), so a failure or a
  crash never leaves a half-written results.yaml, URDF or dataset.
"""
from __future__ import annotations

import glob
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from robot_identification.errors import ConfigError

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
    return any(next(path.glob(f"{glob.escape(path.name)}*{s}"), None) is not None
               for s in RECORDING_SUFFIXES)


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
    rp = p.resolve()
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
    if rp.is_dir():
        raise ConfigError(f"{what} '{p}' is a directory; give a file name")
    if rp.exists() and rp.suffix.lower() in RECORDING_SUFFIXES:
        raise ConfigError(f"{what} '{p}' is a recording: recorded data is never overwritten")
    if rp.exists() and rp.suffix.lower() in DATASET_SUFFIXES and not dataset:
        raise ConfigError(f"{what} '{p}' is an existing dataset: recorded data is never "
                          f"overwritten by another kind of file; choose another name")
    return p


@contextmanager
def atomic_output(path, inputs=(), what="output", dataset=False):
    """Context manager yielding a temporary path that replaces ``path`` on success.

    The temporary file lies in the target's directory and keeps its suffix (so writers
    that add a suffix, such as ``numpy.savez``, keep the name). On an exception it is
    removed and ``path`` is left untouched. A target that is a device or a FIFO
    (``/dev/null``, ``/dev/full``, a named pipe) is never replaced: the finished file is
    copied into it (a full device raises ``OSError`` ENOSPC).

    Raises
    ------
    ConfigError
        See :func:`check_output`.
    OSError
        The target cannot be written (a read-only or virtual file system such as ``/proc``,
        permissions): the message names ``path``, not the temporary file.
    """
    p = check_output(path, inputs, what, dataset)
    if _is_special_file(p):
        # a device or FIFO (/dev/null, /dev/full, a pipe): renaming over it would replace the
        # device node with a regular file (as root: /dev/null for every process). Write the
        # finished file's bytes into it instead; /dev/full then fails with ENOSPC.
        folder = Path(tempfile.mkdtemp(prefix="ri_output_"))
        try:
            tmp = folder / f"output{p.suffix}"
            yield tmp
            try:
                with open(tmp, "rb") as src, open(p, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except OSError as exc:                  # ENOSPC of /dev/full names no file
                raise OSError(exc.errno, f"cannot write {what} '{p}': {exc.strerror}") \
                    from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.stem}.{os.getpid()}.tmp{p.suffix}")
    try:
        yield tmp
        os.replace(tmp, p)
    except OSError as exc:      # name the user's file, not the hidden temporary one
        if str(tmp) not in (str(exc.filename), str(exc.filename2)) and str(tmp) not in str(exc):
            raise
        raise OSError(exc.errno, f"cannot write {what} '{p}': {exc.strerror}") from None
    finally:
        if tmp.exists():
            tmp.unlink()


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
