"""Reports: results.yaml and tables.

- :func:`write_results`, :func:`result_to_dict` -- the results.yaml file (schema in ``_results``)
- :func:`format_table` -- text table of the base parameters
"""
from robot_identification.report._results import (  # noqa: F401
    format_table, result_to_dict, write_results)
