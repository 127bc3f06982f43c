"""Datasets: one :class:`Dataset` type for simulated and recorded runs.

- :class:`Dataset` -- t, q, tau, theta and optional derivatives, true parameters, metadata
- :func:`load_dataset` -- NPZ, rosbag2 (directory or .mcap), CSV by extension
"""
from robot_identification.data._dataset import Dataset, load_dataset  # noqa: F401
from robot_identification.data._csv import CSV_PRESETS, csv_options, read_csv  # noqa: F401,E402
