"""Notebook-friendly views of an IdentificationResult: a table, figures, HTML, a file.

Behind :meth:`IdentificationResult.to_dataframe`, ``.plot()``, ``.save()`` and
``._repr_html_()`` (Jupyter shows the HTML table when a result is the cell's value).
"""
from __future__ import annotations

import base64
import html
import io

import numpy as np

from robot_identification.report._html import TRUST_LEVELS, trust_flag
from robot_identification.report._results import write_results

COLUMNS = ("name", "expression", "unit", "estimate", "std", "relative_std", "true", "trust")


def records(result) -> list:
    """One dict per base parameter: the :data:`COLUMNS` (``true`` None when unknown: no
    true parameters, or an incomplete truth, diagnostic ``truth_incomplete``).

    ``relative_std`` is in %; ``trust`` is the combined level of
    :func:`robot_identification.diagnostics.parameter_trust` (``good``/``fair``/``poor``/
    ``check``/``unidentified``/``implausible``).
    """
    est = result.estimate
    units = list(result.units) if result.units else [""] * len(result.names)
    trust = list(getattr(result, "trust", None) or [])
    rows = []
    for i, name in enumerate(result.names):
        rel = float(est.relative_std[i])
        rows.append({"name": name, "expression": result.expressions[i], "unit": units[i],
                     "estimate": float(est.values[i]), "std": float(est.std[i]),
                     "relative_std": rel if np.isfinite(rel) else None,
                     "true": (None if result.true_values is None
                              or np.isnan(result.true_values[i])
                              else float(result.true_values[i])),
                     "trust": trust_flag(rel, trust[i]["trust"] if i < len(trust)
                                         else None)[0]})
    return rows


def to_dataframe(result):
    """pandas DataFrame of :func:`records`, indexed by base-parameter name.

    Raises
    ------
    ImportError
        pandas is not installed (``pip install pandas``); :func:`records` needs nothing.
    """
    try:
        import pandas as pd  # optional dependency (pandas)
    except ImportError:
        raise ImportError("IdentificationResult.to_dataframe() needs pandas: pip install "
                          "pandas (or use robot_identification.report.records(result))") \
            from None
    return pd.DataFrame.from_records(records(result), columns=COLUMNS).set_index("name")


class Figures(list):
    """The figures of :func:`plot`: a list of matplotlib figures that a notebook shows once
    each (as PNG images) when it is a cell's value. The figures are not registered with
    pyplot, so the inline backend does not show them a second time."""

    def _repr_html_(self):
        out = []
        for fig in self:
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=90)
            out.append("<img src='data:image/png;base64,"
                       + base64.b64encode(buf.getvalue()).decode() + "'>")
        return "".join(out)

    def __repr__(self):
        return f"<{len(self)} figure(s) of an identification result>"


def short_repr(result) -> str:
    """``IdentificationResult(robot='zollo_planar', 14 base parameters, estimator wls,
    9001 samples, 1 warning, NME 0.13)``."""
    counts = {}
    for d in result.diagnostics or []:
        counts[d.severity] = counts.get(d.severity, 0) + 1
    parts = [f"robot={result.robot!r}", f"{len(result.names)} base parameters",
             f"estimator {result.settings.get('estimator', '?')}",
             f"{result.n_samples} samples"]
    parts += [f"{counts[s]} {s}{'s' if counts[s] > 1 else ''}" for s in ("error", "warning")
              if counts.get(s)]
    nme = result.normalised_mean_error() if result.true_values is not None else None
    if nme is not None:
        parts.append(f"NME {nme:.3g}")
    return f"IdentificationResult({', '.join(parts)})"


def _new_figure(figsize):
    """A figure with one axes, outside pyplot (no second display by a notebook's backend,
    nothing to close)."""
    from matplotlib.figure import Figure  # matplotlib: ~0.3 s import, needed only for figures
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots()


def plot(result):
    """Figures of a result (matplotlib, not shown; display or ``savefig`` them).

    1. Relative standard deviation per base parameter (log scale), bars coloured by trust.
    2. With true values (simulated data): estimate / true - 1 per base parameter with
       +-2 std error bars (parameters whose true value is 0 are left out).

    Returns
    -------
    Figures
        A list of matplotlib.figure.Figure, shown once each in a notebook.
    """
    rows = records(result)
    n = len(rows)
    y = np.arange(n)[::-1]
    labels = [r["name"] for r in rows]
    height = 0.9 + 0.22 * n
    figs = Figures()
    fig, ax = _new_figure((8, height))
    rel = np.array([r["relative_std"] if r["relative_std"] is not None else np.nan
                    for r in rows], float)
    colours = [trust_flag(v, r["trust"])[1] for v, r in zip(rel, rows)]
    ax.barh(y, np.where(np.isfinite(rel), rel, np.nanmax(np.r_[rel, 1.0])), color=colours,
            edgecolor="#666", lw=0.5)
    for limit, label, _ in TRUST_LEVELS[:-1]:
        ax.axvline(limit, color="#666", ls="--", lw=0.8)
        ax.text(limit, 1.0, f" {label} \u2264 {limit:g} %", transform=ax.get_xaxis_transform(),
                fontsize=8, va="bottom")
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("relative standard deviation [%]")
    ax.set_title(f"{result.robot}: {len(rows)} base parameters "
                 f"({result.settings.get('estimator', '')})", fontsize=10, pad=16)
    figs.append(fig)
    if result.true_values is not None:
        keep = [i for i, r in enumerate(rows) if r["true"] and abs(r["true"]) > 1e-12]
        fig, ax = _new_figure((8, 0.9 + 0.22 * max(len(keep), 1)))
        yk = np.arange(len(keep))[::-1]
        err = [rows[i]["estimate"] / rows[i]["true"] - 1 for i in keep]
        bars = [2 * rows[i]["std"] / abs(rows[i]["true"]) for i in keep]
        ax.errorbar(err, yk, xerr=bars, fmt="o", ms=3, color="#1f77b4", ecolor="#999",
                    capsize=2, label="estimate / true - 1 (\u00b1 2 std)")
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(yk, [labels[i] for i in keep], fontsize=8)
        ax.set_xscale("symlog", linthresh=1e-3)
        ax.set_xlabel("relative error")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8, frameon=False)
        figs.append(fig)
    return figs


def repr_html(result) -> str:
    """HTML table of the base parameters with trust colours, diagnostics above it."""
    rows = records(result)
    has_true = result.true_values is not None
    head = ["#", "base parameter", "unit", "estimate", "std", "rel. std [%]"]
    head += ["true"] if has_true else []
    head += ["trust"]
    cells = []
    for i, r in enumerate(rows):
        name = f"<b>{html.escape(r['name'])}</b>"
        if r["expression"].replace(" ", "") != r["name"]:
            name += (f"<br><span style='font-family:monospace;font-size:85%;color:#555'>= "
                     f"{html.escape(r['expression'])}</span>")
        colour = trust_flag(r["relative_std"], r["trust"])[1]
        row = [str(i + 1), name, html.escape(r["unit"]), f"{r['estimate']:.6g}",
               f"{r['std']:.3g}",
               "-" if r["relative_std"] is None else f"{r['relative_std']:.3g}"]
        if has_true:     # None: unknown truth (truth_incomplete)
            row.append("-" if r["true"] is None else f"{r['true']:.6g}")
        row.append(f"<span style='background:{colour};padding:0 4px'>{r['trust']}</span>")
        cells.append("<tr>" + "".join(f"<td style='text-align:{'left' if k == 1 else 'right'}'>"
                                      f"{c}</td>" for k, c in enumerate(row)) + "</tr>")
    diag = "".join(f"<li>{html.escape(str(d))}</li>" for d in (result.diagnostics or []))
    cond = result.estimate.condition_number
    summary = (f"<p><b>{html.escape(str(result.robot))}</b>: {len(rows)} base parameters, "
               f"{result.n_samples} samples, estimator "
               f"{html.escape(str(result.settings.get('estimator', '')))}, condition number "
               f"{cond:.4g}</p>")
    return (summary + (f"<ul>{diag}</ul>" if diag else "")
            + "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(cells) + "</tbody></table>")


def save(result, path, model=None):
    """Write results.yaml (:func:`robot_identification.report.write_results`); returns its path.
    """
    return write_results(result, path, model)
