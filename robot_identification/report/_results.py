"""results.yaml: the identification result file other tools parse.

Schema (version 1)::

    robot: <name>
    fingerprint: {...}          # the robot model (report._fingerprint): joints, kinematics
    model: rigid | elastic
    estimator: ols | wls
    base_parameters:            # list, one mapping per base parameter
      - name: link1.m           # leading standard parameter of the group
        expression: link1.m - 4*link1.Izz + 4*link2.Izz
        estimate: -30.8352
        std: 0.0012             # standard deviation
        relative_std: 0.004     # [%]
        unit: kg
        true: -30.8333          # only when the data came with true parameters (and this
                                # base parameter's are all known: truth_incomplete)
        trust: good             # good | fair | poor | check | unidentified | implausible
        trust_reason: relative std 0.004 %   # (diagnostics.parameter_trust)
    metrics:
      condition_number: ...
      residual_rms: {joint1 link: ..., joint1 motor: ...}
      normalised_mean_error: ...                      # when true values are known
      normalised_mean_error_without_static_friction: ...  # no Coulomb/stiction (paper: 0.00862)
      normalised_mean_error_without_friction: ...  # no friction or offset terms
      true_values_known: 20     # base parameters with a known truth, when not all are
      n_samples: ..., n_equations: ..., elapsed_s: ...
    settings: {...}                # incl. preprocessing, estimators, prior
    estimates:                  # every estimate computed (identify --estimator A --estimator B)
      ols: {values: [...], std: [...], condition_number: ..., residual_rms: [...]}
      mrls: {..., flags: [1, 0, -1, ...]}       # 1 identified, 0 not excited, -1 dependent
      bounded: {..., active_bounds: [...]}
      irls: {..., iterations: ..., converged: ..., huber_threshold: ..., sigma: [...]}
      physical: {..., standard_parameters: {name: value}, min_pseudo_inertia_eigenvalues: {},
                 cost_increase: ..., status: ..., prior: ..., prior_distance: {},
                 bodies_on_bound: [...]}
    diagnostics:                # list, one mapping per finding (robot_identification.diagnostics)
      - {code: negative_stiffness, severity: error, message: ..., subject: joint6.K}
    model_trust:                # held-out verdict against the nominal URDF (model_verdict)
      verdict: better than the nominal URDF   # | worse than the nominal URDF | not checked
                                              # | as good as the nominal URDF (within 10 %)
      heldout_nrmse: 0.074
      nominal_nrmse: 0.75
      folds: 2
    provenance:                 # what wrote the file, from what
      package: robot_identification
      version: 0.1.0
      written: 2026-11-27T15:47:57Z          # UTC
      data: [run.npz]           # the identification recordings (settings.data)
      robot_config: .../zollo_planar.yaml
      urdf: .../zollo_planar.urdf
    end: {base_parameters: 14}  # last line: a file with a fingerprint and without it is
                                # refused (truncated)

:func:`read_results` returns a :class:`ResultsFile`: the sections above as typed fields
(:class:`BaseParameterEntry`, :class:`EstimateEntry`, :class:`Provenance`,
:class:`Fingerprint`, diagnostics as
:class:`~robot_identification.diagnostics.Diagnostic`), every other top-level section (e.g.
``drive_gains``, written by :func:`add_to_results`) in ``sections``; it is also a read-only
mapping of the parsed file (``doc["settings"]``). A new section: give it a typed field
here, write it in :func:`result_to_dict` (or :func:`add_to_results`) and check it in
:func:`read_results`; readers of older files get the field's default.
"""
from __future__ import annotations

import datetime
import shutil
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from robot_identification import __version__
from robot_identification._yaml import read_yaml_file
from robot_identification.diagnostics import Diagnostic, model_verdict
from robot_identification.errors import DataError, error_diagnostics
from robot_identification.outputs import write_text_atomic
from robot_identification.report._fingerprint import (
    Fingerprint, check_complete, check_fingerprint, end_line, model_fingerprint)

#: Drive keys of the friction terms left out of the normalised mean error variants.
_STATIC_FRICTION = ("coulomb", "stiction", "stribeck")
_FRICTION = ("viscous", "offset") + _STATIC_FRICTION


def result_to_dict(result, model=None) -> dict:
    """Plain-Python mapping of an
    :class:`~robot_identification.identification.IdentificationResult`."""
    est = result.estimate
    entries = []
    for i, name in enumerate(result.names):
        e = {"name": name, "expression": result.expressions[i],
             "estimate": float(est.values[i]), "std": float(est.std[i]),
             "relative_std": _f(est.relative_std[i]),
             "unit": result.units[i] if result.units else ""}
        if result.true_values is not None and not np.isnan(result.true_values[i]):
            e["true"] = float(result.true_values[i])
        trust = getattr(result, "trust", None)
        if trust and i < len(trust):
            e["trust"] = trust[i]["trust"]
            e["trust_reason"] = trust[i]["why"]
        entries.append(e)
    metrics = {"condition_number": _f(est.condition_number),
               "residual_rms": {lbl: float(v) for lbl, v in zip(result.row_labels,
                                                                est.residual_rms)},
               "n_samples": int(result.n_samples), "n_equations": int(result.n_used_rows),
               "elapsed_s": round(float(result.elapsed), 4)}
    if result.true_values is not None:
        for key, exclude in (("normalised_mean_error", ()),
                             ("normalised_mean_error_without_static_friction",
                              _STATIC_FRICTION),
                             ("normalised_mean_error_without_friction", _FRICTION)):
            nme = result.normalised_mean_error(exclude=exclude)
            if nme is not None:
                metrics[key] = nme
        scaled = result.truth_errors() if hasattr(result, "truth_errors") else None
        if scaled:
            metrics.update(scaled)
        known = int(np.sum(~np.isnan(result.true_values)))
        if known < len(result.true_values):
            metrics["true_values_known"] = known
    out = {"robot": result.robot,
           "status": "error" if error_diagnostics(result.diagnostics) else "ok"}
    if model is not None:                     # first: a file cut short still has it
        out["fingerprint"] = model_fingerprint(model)
    out.update({"estimator": est.method, "base_parameters": entries,
           "metrics": metrics, "settings": dict(result.settings),
           "estimates": estimates_to_dict(getattr(result, "estimates", None) or {}),
           "diagnostics": [d.to_dict() for d in result.diagnostics]})
    if model is not None:
        out["model"] = model.config.model
    out["model_trust"] = model_verdict(result.settings)
    out["provenance"] = provenance(model, (result.settings or {}).get("data"))
    return out


def provenance(model=None, data=None) -> dict:
    """``provenance:`` of a results file: package and version, UTC time of writing, the
    identification data and the robot's configuration and URDF files."""
    out = {"package": "robot_identification", "version": __version__,
           "written": datetime.datetime.now(datetime.timezone.utc).strftime(
               "%Y-%m-%dT%H:%M:%SZ")}
    if data:
        out["data"] = [str(d) for d in data]
    if model is not None:
        for key, path in (("robot_config", model.config.source),
                          ("urdf", model.config.urdf_path)):
            if path is not None:
                out[key] = str(path)
    return out


def estimates_to_dict(estimates) -> dict:
    """``estimates:`` section of results.yaml: per estimator name its values (base-parameter
    order), standard deviations, condition number, residual RMS per row group and the
    estimator's details (flags, active bounds, physical standard parameters, ...)."""
    out = {}
    for name, est in estimates.items():
        entry = {"values": [float(v) for v in est.values],
                 "std": [_f(v) for v in est.std],
                 "condition_number": _f(est.condition_number),
                 "residual_rms": [float(v) for v in est.residual_rms]}
        entry.update(getattr(est, "details", None) or {})
        out[name] = entry
    return out


@dataclass(frozen=True)
class BaseParameterEntry:
    """One entry of ``base_parameters``: name, expression in standard parameters, estimate,
    standard deviation (None: unknown), relative std [%], unit and, for simulated data, the
    true value (None: unknown)."""

    name: str
    estimate: float
    std: float | None = None
    relative_std: float | None = None
    unit: str = ""
    expression: str = ""
    true: float | None = None
    trust: str | None = None
    trust_reason: str | None = None


@dataclass(frozen=True)
class EstimateEntry:
    """One estimate of ``estimates``: values and std (base-parameter order), condition
    number, residual RMS per row group and the estimator's ``details`` (flags, active
    bounds, physical standard parameters, iterations, ...)."""

    values: tuple
    std: tuple | None = None
    condition_number: float | None = None
    residual_rms: tuple | None = None
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Provenance:
    """What wrote the file from what (``provenance``; empty for files of earlier versions)."""

    package: str | None = None
    version: str | None = None
    written: str | None = None
    data: tuple = ()
    robot_config: str | None = None
    urdf: str | None = None


#: Top-level keys with a typed field in :class:`ResultsFile`.
_TYPED = ("robot", "model", "estimator", "base_parameters", "estimates", "metrics",
          "settings", "diagnostics", "provenance", "fingerprint", "end")


@dataclass(frozen=True)
class ResultsFile(Mapping):
    """A parsed and checked results.yaml (:func:`read_results`).

    Attributes
    ----------
    path : Path
    robot : str
    model : str or None
        ``rigid`` | ``elastic`` (None in files of earlier versions).
    estimator : str or None
        The primary estimator.
    base_parameters : tuple of BaseParameterEntry
    estimates : dict
        Estimator name -> :class:`EstimateEntry` (empty in files of earlier versions).
    metrics, settings : dict
    diagnostics : tuple of Diagnostic
    provenance : Provenance
    sections : dict
        Every other top-level section (e.g. ``drive_gains``, ``selection``), as parsed.
    raw : dict
        The parsed file; the object is a read-only mapping of it.
    fingerprint : Fingerprint or None
        The robot model the results were identified on (None in files of earlier
        versions); the ``end`` line is checked on reading and not kept.
    """

    path: Path
    robot: str
    model: str | None
    estimator: str | None
    base_parameters: tuple
    estimates: dict
    metrics: dict
    settings: dict
    diagnostics: tuple
    provenance: Provenance
    sections: dict
    raw: dict = field(repr=False)
    fingerprint: Fingerprint | None = None

    @classmethod
    def from_dict(cls, doc, path=None) -> "ResultsFile":
        """Typed view of a parsed results file (checked by :func:`read_results`)."""
        entries = tuple(BaseParameterEntry(
            name=e["name"], estimate=float(e["estimate"]), std=e.get("std"),
            relative_std=e.get("relative_std"), unit=e.get("unit") or "",
            expression=e.get("expression") or "", true=e.get("true"),
            trust=e.get("trust"), trust_reason=e.get("trust_reason"))
            for e in doc["base_parameters"])
        ests = {}
        for name, e in (doc.get("estimates") or {}).items():
            rest = {k: v for k, v in e.items()
                    if k not in ("values", "std", "condition_number", "residual_rms")}
            ests[name] = EstimateEntry(
                values=tuple(e["values"]), std=None if e.get("std") is None
                else tuple(e["std"]), condition_number=e.get("condition_number"),
                residual_rms=None if e.get("residual_rms") is None
                else tuple(e["residual_rms"]), details=rest)
        prov = doc.get("provenance") or {}
        return cls(path=None if path is None else Path(path), robot=doc["robot"],
                   model=doc.get("model"), estimator=doc.get("estimator"),
                   base_parameters=entries, estimates=ests, metrics=dict(doc.get("metrics")
                                                                         or {}),
                   settings=dict(doc.get("settings") or {}),
                   diagnostics=tuple(Diagnostic.from_dict(d)
                                     for d in doc.get("diagnostics") or []),
                   provenance=Provenance(**{k: (tuple(v) if k == "data" else v)
                                            for k, v in prov.items()
                                            if k in Provenance.__dataclass_fields__
                                            and v is not None}),
                   sections={k: v for k, v in doc.items() if k not in _TYPED}, raw=doc,
                   fingerprint=Fingerprint.from_dict(doc.get("fingerprint")))

    @property
    def names(self) -> list:
        """Base parameter names, in file order."""
        return [e.name for e in self.base_parameters]

    def values(self, estimator=None) -> np.ndarray:
        """Base-parameter values (p,) of ``estimator`` (default: the primary estimate of
        ``base_parameters``).

        Raises
        ------
        KeyError
            No such estimate in the file.
        """
        if estimator is None:
            return np.array([e.estimate for e in self.base_parameters], dtype=float)
        return np.asarray(self.estimates[estimator].values, dtype=float)

    def __getitem__(self, key):
        return self.raw[key]

    def __iter__(self):
        return iter(self.raw)

    def __len__(self):
        return len(self.raw)


def read_results(path, robot=None) -> ResultsFile:
    """Parse and validate a results.yaml written by :func:`write_results`.

    This is the one reader of results files (validate, report, export-urdf, drive-gains).
    Checked: the schema of the module docstring (a ``robot`` name, a non-empty
    ``base_parameters`` list of mappings with a ``name`` and a finite ``estimate``; optional
    ``estimates:`` whose ``values``/``std`` lists have one entry per base parameter and whose
    ``standard_parameters`` are finite numbers; optional ``settings`` whose ``cutoff_hz``,
    ``filter_order`` and ``friction_deadband`` validation re-uses; optional ``diagnostics``
    list), finiteness of
    every estimate, and the robot name. Also the type of every optional key the report
    formats (``expression``/``unit`` strings, ``relative_std``/``true``/``metrics`` numbers,
    ``drive_gains`` lists, ``min_pseudo_inertia_eigenvalues`` mappings, diagnostics of
    strings): a hand-edited or foreign file ended in a traceback of the report.

    Parameters
    ----------
    path : path
    robot : str or RobotModel, optional
        Expected robot name; a file identified on another robot is refused. A model also
        checks the file's model fingerprint (joints, kinematics: results of another geometry
        are refused; :func:`~robot_identification.report._fingerprint.check_fingerprint`).

    Returns
    -------
    ResultsFile
        The parsed file, typed (and a read-only mapping of it).

    Raises
    ------
    DataError
        Missing file, not YAML, not a results file, a schema violation, NaN/inf or missing
        estimates, lists of the wrong length, or identified on another robot. The message
        names the file and the offending key.
    """
    model = robot if hasattr(robot, "config") else None
    if model is not None:
        robot = model.config.name
    path = Path(path)
    doc = read_yaml_file(path, "results file", DataError)
    if isinstance(doc, dict) and isinstance(doc.get("base_parameters"), list):
        check_complete(doc, path)           # a file cut short: named as such, first
    if not isinstance(doc, dict) or not isinstance(doc.get("base_parameters"), list):
        raise DataError(f"'{path}' is not a results.yaml (no 'base_parameters' list)")

    def bad(where, why):
        return DataError(f"results file '{path}': {where} {why}")

    name = doc.get("robot")
    if not isinstance(name, str) or not name:
        raise bad("'robot'", f"must name the robot, got {name!r}")
    if robot is not None and name != robot:
        raise DataError(f"'{path}' holds results of robot '{name}', not '{robot}'")
    entries = doc["base_parameters"]
    if not entries:
        raise bad("'base_parameters'", "is empty")
    for i, e in enumerate(entries):
        where = f"base_parameters[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            raise bad(where, f"must be a mapping with a 'name', got {e!r:.60}")
        _finite_number(e.get("estimate"), f"{where} ({e['name']}) estimate", bad)
        if e.get("std") is not None:
            _std(e["std"], f"{where} ({e['name']}) std", bad)
        _optional(e, ("expression", "unit"), (), f"{where} ({e['name']})", bad)
        _optional(e, (), ("relative_std", "true"), f"{where} ({e['name']})", bad)
    p = len(entries)
    ests = doc.get("estimates")
    if ests is not None:
        if not isinstance(ests, dict):
            raise bad("'estimates'", f"must be a mapping of estimator -> values, got "
                                     f"{type(ests).__name__}")
        for est_name, est in ests.items():
            where = f"estimates.{est_name}"
            if not isinstance(est, dict):
                raise bad(where, f"must be a mapping, got {type(est).__name__}")
            for key in ("values", "std"):
                if key not in est and key == "std":
                    continue
                v = est.get(key)
                if not isinstance(v, list) or len(v) != p:
                    n = len(v) if isinstance(v, list) else type(v).__name__
                    raise bad(f"{where}.{key}", f"must list {p} numbers (one per base "
                                                f"parameter), got {n}")
                for k, x in enumerate(v):
                    (_finite_number if key == "values" else _std)(
                        x, f"{where}.{key}[{k}]", bad)
            for key in ("standard_parameters", "min_pseudo_inertia_eigenvalues",
                        "prior_distance"):
                sp = est.get(key)
                if sp is None:
                    continue
                if not isinstance(sp, dict):
                    raise bad(f"{where}.{key}", f"must be a mapping name -> value, got "
                                                f"{type(sp).__name__}")
                for k, x in sp.items():
                    (_finite_number if key == "standard_parameters" else _number)(
                        x, f"{where}.{key}.{k}", bad)
    for key in ("metrics", "drive_gains"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise bad(f"'{key}'", f"must be a mapping, got {type(doc[key]).__name__}")
    _optional(doc, ("estimator", "model"), (), "", bad)
    _optional(doc.get("metrics") or {}, (), (
        "condition_number", "n_samples", "n_equations", "elapsed_s", "normalised_mean_error",
        "normalised_mean_error_without_static_friction",
        "normalised_mean_error_without_friction"), "metrics", bad)
    gains = doc.get("drive_gains") or {}
    for key in ("given", "identified", "identified_std", "payload_torque_rms",
                "well_identified", "unloaded", "loaded"):
        v = gains.get(key)
        if v is not None and not isinstance(v, list):
            raise bad(f"drive_gains.{key}", f"must be a list, got {type(v).__name__}")
        for k, x in enumerate(v or []):
            if key in ("unloaded", "loaded", "well_identified"):
                continue
            _number(x, f"drive_gains.{key}[{k}]", bad)
    settings = doc.get("settings")
    if settings is not None:
        if not isinstance(settings, dict):
            raise bad("'settings'", f"must be a mapping, got {type(settings).__name__}")
        _optional(settings, (), ("velocity_threshold",), "settings", bad)
        cut = settings.get("cutoff_hz")
        if cut is not None and cut != "auto" and not _finite_number(
                cut, "settings.cutoff_hz", bad) > 0:
            raise bad("settings.cutoff_hz", f"must be > 0 Hz or null, got {cut}")
        order = settings.get("filter_order")
        if order is not None and (isinstance(order, bool) or not isinstance(order, int)
                                  or order < 1):
            raise bad("settings.filter_order", f"must be a positive integer, got {order!r:.40}")
        dead = settings.get("friction_deadband")
        if dead is not None and dead != "auto":
            for k, v in enumerate(dead if isinstance(dead, list) else [dead]):
                if _finite_number(v, f"settings.friction_deadband[{k}]", bad) < 0:
                    raise bad(f"settings.friction_deadband[{k}]", f"must be >= 0, got {v}")
    diags = doc.get("diagnostics")
    if diags is not None and (not isinstance(diags, list) or not all(
            isinstance(d, dict) and {"code", "severity", "message"} <= set(d)
            and all(isinstance(d[k], str) for k in ("code", "severity", "message"))
            and isinstance(d.get("subject", ""), (str, type(None))) for d in diags)):
        raise bad("'diagnostics'", "must be a list of mappings with code, severity, message "
                                   "(strings)")
    bad_severity = [d["severity"] for d in diags or [] if d["severity"] not in
                    ("info", "warning", "error")]
    if bad_severity:
        raise bad("'diagnostics'", f"severity must be info, warning or error, got "
                                   f"{bad_severity[0]!r:.40}")
    prov = doc.get("provenance")
    if prov is not None and not isinstance(prov, dict):
        raise bad("'provenance'", f"must be a mapping, got {type(prov).__name__}")
    if isinstance(prov, dict) and prov.get("data") is not None \
            and not isinstance(prov["data"], list):
        raise bad("provenance.data", f"must be a list of paths, got {prov['data']!r:.40}")
    if model is not None:
        check_fingerprint(doc, model, path)
    return ResultsFile.from_dict(doc, path)


def _optional(doc, strings, numbers, where, bad):
    """Optional keys of ``doc``: ``strings`` must be strings, ``numbers`` numbers or null
    (NaN: unknown), when present; the report formats them."""
    prefix = f"{where}." if where else ""
    for key in strings:
        if key in doc and not isinstance(doc[key], str):
            raise bad(f"{prefix}{key}", f"must be a string, got {doc[key]!r:.40}")
    for key in numbers:
        if doc.get(key) is not None:
            _number(doc[key], f"{prefix}{key}", bad)


def _number(x, where, bad):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise bad(where, f"must be a number, got {x!r:.40}")
    return float(x)


def _std(x, where, bad):
    """A standard deviation: a number >= 0 (NaN: unknown)."""
    v = _number(x, where, bad)
    if v < 0:
        raise bad(where, f"is {x}: a standard deviation is >= 0")
    return v


def _finite_number(x, where, bad):
    if x is None:
        raise bad(where, "is missing (null)")
    if not np.isfinite(_number(x, where, bad)):
        raise bad(where, f"is {x}: results with NaN/inf estimates cannot be used")
    return float(x)


def _f(x):
    x = float(x)
    return x if np.isfinite(x) else None


def write_results(result, path, model=None, inputs=()) -> Path:
    """Write ``results.yaml`` (schema in this module's docstring) atomically.

    Raises
    ------
    ConfigError
        ``path`` is one of ``inputs`` or lies in a rosbag2 directory
        (:func:`robot_identification.outputs.check_output`).
    """
    if model is not None:
        inputs = tuple(inputs) + (model.config.urdf_path, model.config.source)
    doc = result_to_dict(result, model)
    return write_text_atomic(path, _dump(doc) + end_line(doc), inputs=inputs)


def _dump(doc):
    """``yaml.safe_dump(doc, sort_keys=False)``, by libyaml's emitter where PyYAML has it
    (the same text, a fifth of the CPU time on a results file)."""
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                     sort_keys=False)


def add_to_results(path, robot, sections, inputs=(), what="results file") -> Path:
    """Add top-level ``sections`` (e.g. ``drive_gains:``) to an existing results.yaml of
    ``robot``, rewritten atomically (``inputs`` are refused as ``path``).

    Raises
    ------
    DataError
        Not a results file of ``robot`` (:func:`read_results`).
    ConfigError
        ``path`` is one of ``inputs``.
    """
    doc = dict(read_results(path, robot).raw)
    doc.pop("end", None)                  # written again last, counting the base parameters
    doc.update(sections)
    text = yaml.safe_dump(doc, sort_keys=False)
    return write_text_atomic(path, text + (end_line(doc) if "fingerprint" in doc else ""),
                             list(inputs), what)


def format_table(result, width: int | None = None) -> str:
    """Human-readable table of base parameters, fitted to a terminal ``width``.

    One row per base parameter: number, name (the leading standard parameter), unit,
    estimate, standard deviation, relative standard deviation [%] and, for simulated data,
    the true value and the relative error. When the base parameter is a combination of
    standard parameters, the combination follows on indented lines below the name,
    wrapped at ``width``.

    Parameters
    ----------
    result : IdentificationResult
    width : int, optional
        Characters per line; default the terminal's width (100 when not a terminal).
    """
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    width = max(int(width), 60)
    est = result.estimate
    has_true = result.true_values is not None
    units = list(result.units) if result.units else [""] * len(result.names)
    uw = max([4] + [len(u) for u in units])
    num_head = f"{'estimate':>11}  {'std':>9}  {'rel.std%':>8}"
    if has_true:
        num_head += f"  {'true':>11}  {'rel.err':>8}"
    fixed = 3 + 2 + 2 + uw + 2 + len(num_head)
    nw = min(max(len(n) for n in result.names), 40)
    stacked = fixed + max(nw, 14) > width      # the numbers go on a line of their own
    if stacked:
        head = f"{'#':>3}  {'base parameter':<{width - 7 - uw}}  {'unit':<{uw}}\n" + \
            num_head.rjust(width)
    else:
        nw = max(nw, 14)
        head = f"{'#':>3}  {'base parameter':<{nw}}  {'unit':<{uw}}  {num_head}"
    lines = head.splitlines() + ["-" * min(max(map(len, head.splitlines())), width)]
    for i, (name, ex) in enumerate(zip(result.names, result.expressions)):
        num = (f"{est.values[i]:>11.5g}  {est.std[i]:>9.3g}  {est.relative_std[i]:>8.3g}")
        if has_true:
            tv = result.true_values[i]
            if np.isnan(tv):                     # unknown truth (truth_incomplete)
                num += f"  {'-':>11}  {'-':>8}"
            else:
                err = abs(est.values[i] - tv) / abs(tv) if abs(tv) > 1e-12 \
                    else abs(est.values[i])
                num += f"  {tv:>11.5g}  {err:>8.2e}"
        if stacked:
            lines.append(f"{i + 1:>3}  {name:<{width - 7 - uw}}  {units[i]:<{uw}}")
            lines.append(num.rjust(width))
        else:
            lines.append(f"{i + 1:>3}  {name:<{nw}}  {units[i]:<{uw}}  {num}")
        if ex.replace(" ", "") != name.replace(" ", ""):
            lines += textwrap.wrap(f"= {ex}", width=max(width - 7, 30), initial_indent=" " * 7,
                                   subsequent_indent=" " * 9, break_on_hyphens=False)
    tail = (f"condition number {est.condition_number:.4g}; residual RMS "
            + ", ".join(f"{lb}: {v:.3g}" for lb, v in zip(result.row_labels, est.residual_rms)))
    lines += textwrap.wrap(tail, width=width, subsequent_indent="  ")
    nme = result.normalised_mean_error() if has_true else None
    if nme is not None:
        known = int(np.sum(~np.isnan(result.true_values)))
        line = f"normalised mean error {nme:.4g}"
        if known < len(result.true_values):
            line += f" over the {known} of {len(result.true_values)} base parameters " \
                "with a known true value"
        static = result.normalised_mean_error(exclude=_STATIC_FRICTION)
        if static is not None:
            line += f" (without Coulomb/static friction {static:.4g})"
        scaled = result.truth_errors() if hasattr(result, "truth_errors") else None
        if scaled:
            if "normalised_mean_error_significant" in scaled:
                line += (f"; over the {scaled['significant']} parameters whose true value "
                         f"carries >= 0.1 % of the torque "
                         f"{scaled['normalised_mean_error_significant']:.4g}")
            line += f"; torque-weighted error {scaled['torque_weighted_error']:.3g}"
            if "median_error_std" in scaled:
                line += f"; median error {scaled['median_error_std']:.3g} std"
        lines += textwrap.wrap(line, width=width, subsequent_indent="  ")
    return "\n".join(line.rstrip() for line in lines)
