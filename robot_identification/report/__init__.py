"""Reports: results.yaml and tables.

- :func:`write_results`, :func:`result_to_dict` -- the results.yaml file (schema in ``_results``)
- :func:`read_results` -- the one reader: a checked, typed :class:`ResultsFile`
  (:class:`BaseParameterEntry`, :class:`EstimateEntry`, :class:`Provenance`)
- :func:`format_table` -- text table of the base parameters
- :func:`records` -- rows for notebooks (``IdentificationResult.to_dataframe``, ``.plot()``,
  ``.save()``, ``_repr_html_``); :func:`write_report` -- the HTML report
- :func:`export_urdf`, :func:`export_mjcf` -- the identified model for simulators
"""
from robot_identification.report._fingerprint import Fingerprint  # noqa: F401
from robot_identification.report._results import (  # noqa: F401
    BaseParameterEntry, EstimateEntry, Provenance, ResultsFile, add_to_results,
    estimates_to_dict, format_table, provenance, read_results, result_to_dict, write_results)
from robot_identification.report._html import identification_data, write_report  # noqa: F401,E402
from robot_identification.report._urdf_export import (  # noqa: F401,E402
    export_urdf, urdf_torque)
from robot_identification.report._notebook import (  # noqa: F401,E402
    plot as plot_result, records, repr_html as result_html, save as save_result,
    short_repr as result_repr, to_dataframe as result_dataframe)


def __getattr__(name):
    """``export_mjcf`` on first use: it imports the simulation package (MuJoCo's model
    writer), which ``identify`` and the other readers of results do not need (start-up)."""
    if name == "export_mjcf":
        from robot_identification.report._mjcf_export import export_mjcf  # start-up
        return export_mjcf
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
