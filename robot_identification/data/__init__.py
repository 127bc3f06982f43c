"""Datasets: one :class:`Dataset` type for simulated and recorded runs.

- :class:`Dataset` -- t, q, tau, theta and optional derivatives, true parameters, metadata
- :func:`load_dataset` -- NPZ, rosbag2 (directory or .mcap), CSV by extension
- :func:`read_csv`, :func:`iter_csv_chunks` (chunk by chunk, bounded memory),
  :func:`write_csv`, :func:`csv_options`, :data:`CSV_PRESETS` -- CSV with a column mapping
- rosbag2 (``rosbags``, imported on first use): :func:`read_bag` (a whole bag),
  :func:`iter_bag_chunks` (read message by message in chunks, bounded memory),
  :func:`write_bag`, :class:`BagWriter` (incremental), :func:`typestore`; the topics
  :data:`JOINT_TOPIC`, :data:`MOTOR_TOPIC`, :data:`COMMAND_TOPIC`; where each signal is read
  (:func:`bag_signals`, :data:`SIGNALS`: also ros2_control's DynamicJointState)
- :func:`uniform_grid`, :func:`check_meta`, :func:`check_float_dtype`,
  :func:`read_npy_header` -- what the readers check (the engine's sources use them too)
"""
from robot_identification.data._dataset import (  # noqa: F401
    MAX_META_BYTES, MAX_TIME_STEP, Dataset, check_float_dtype, check_meta, check_npz_members,
    read_npy_header, uniform_grid)
from robot_identification.data._csv import (  # noqa: F401
    CSV_PRESETS, csv_options, iter_csv_chunks, read_csv, write_csv)
from robot_identification.data._bag import (  # noqa: F401
    COMMAND_TOPIC, JOINT_TOPIC, MOTOR_TOPIC, SIGNALS, BagWriter, bag_signals, iter_bag_chunks,
    read_bag, typestore, write_bag)
from robot_identification.data._bag import _custom_data as bag_custom_data  # noqa: F401
from robot_identification.data._load import load_dataset  # noqa: F401
