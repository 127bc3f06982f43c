"""Datasets: one :class:`Dataset` type for simulated and recorded runs.

- :class:`Dataset` -- t, q, tau, theta and optional derivatives, true parameters, metadata
- :func:`load_dataset` -- NPZ, rosbag2 (directory or .mcap), CSV by extension
- :func:`iter_bag_chunks` -- a rosbag2 read message by message in chunks (bounded memory)
"""
from robot_identification.data._dataset import Dataset, load_dataset  # noqa: F401
from robot_identification.data._csv import CSV_PRESETS, csv_options, read_csv  # noqa: F401,E402


def iter_bag_chunks(path, chunk: int = 200_000, **kwargs):
    """Chunks (:class:`Dataset`) of a rosbag2 recording, read in bounded memory; keyword
    arguments and errors as in :func:`robot_identification.data._bag.iter_bag_chunks`
    (imported on first use: the bag reader needs ``rosbags``)."""
    from robot_identification.data._bag import iter_bag_chunks as read
    return read(path, chunk, **kwargs)
