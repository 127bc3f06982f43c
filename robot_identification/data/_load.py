"""One loader for every dataset format, by extension."""
from __future__ import annotations

from pathlib import Path

from robot_identification._files import check_input_file
from robot_identification.data._bag import read_bag
from robot_identification.data._csv import read_csv
from robot_identification.data._dataset import Dataset
from robot_identification.errors import DataError


def load_dataset(path, model=None, **kwargs):
    """Load a dataset from a ``.npz`` file, a rosbag2 directory / ``.mcap`` file or a CSV.

    ``model`` (a RobotModel, optional) supplies the CSV column mapping and drive gains
    of its config's ``csv:`` section (see :func:`robot_identification.data.csv_options`)
    and where a bag holds each signal (its ``bag:`` section,
    :func:`~robot_identification.data.bag_signals`).

    Raises
    ------
    DataError
        Unknown format, unreadable file, not a regular file (a FIFO, a device, a
        symbolic-link loop) nor a directory.
    """
    path = Path(path)
    suffix = path.suffix.lower()                     # run.CSV from Windows tools
    if suffix != ".csv" and not path.is_dir():      # a FIFO, /dev/zero, a link loop: named
        check_input_file(path, "dataset file" if suffix == ".npz" else "dataset", DataError)
    if suffix == ".npz":
        return Dataset.load_npz(path)
    if suffix == ".csv":            # before the bag directories: a directory run.csv is named
        return read_csv(path, model=model, **kwargs)       # by the CSV reader (regular files)
    if path.is_dir() or suffix in (".mcap", ".db3"):
        if model is not None and getattr(model, "config", model).extra.get("bag"):
            kwargs.setdefault("signals", getattr(model, "config", model).extra["bag"])
        return read_bag(path, **kwargs)
    if not path.exists():
        raise DataError(f"dataset '{path}' does not exist")
    raise DataError(f"unknown dataset format '{path}': expected .npz, .csv, .mcap or a "
                    f"rosbag2 directory")
