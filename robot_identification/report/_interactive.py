"""Interactive figures of the HTML report (plotly, offline): measured vs predicted torque and
the residuals of a validation file, one row per joint on a shared, zoomable time axis.

The page stays one self-contained file: plotly.js is inlined once (:func:`plotly_js`, no
network access when it is opened) and each figure's data travel as compact typed arrays
(float32). Long signals are reduced to :data:`MAX_POINTS` points per curve by a min/max
envelope (:func:`envelope`): every spike stays visible at any zoom level, only the points
between a bucket's extremes are left out (60 s at 1 kHz: 60 001 -> 4 000 points per curve).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

#: Most points drawn per curve (min/max envelope beyond it).
MAX_POINTS = 4000


def envelope(t, y, max_points=MAX_POINTS):
    """``(t, y)`` reduced to at most ``max_points`` points keeping each bucket's minimum and
    maximum in time order (a curve drawn through them shows every excursion of ``y``).

    Parameters
    ----------
    t, y : ndarray (N,)
    max_points : int

    Returns
    -------
    t, y : ndarray (M,), M <= max_points
    """
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    n = len(t)
    if n <= max_points:
        return t, y
    buckets = max_points // 2
    edges = np.linspace(0, n, buckets + 1).astype(int)
    filled = np.where(np.isfinite(y), y, 0.0)
    keep = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        seg = filled[lo:hi]
        keep += sorted({lo + int(np.argmin(seg)), lo + int(np.argmax(seg))})
    idx = np.asarray(keep)
    return t[idx], y[idx]


def plotly_js() -> str:
    """The plotly.js library as text, for one inline ``<script>`` of the page."""
    from plotly.offline import get_plotlyjs   # plotly: the HTML report only
    return get_plotlyjs()


def validation_figure(entry, joint_names, units, quantity, colours, labels, dashes):
    """HTML ``<div>`` (and its script) of one validation file: per joint, measured and
    predicted ``quantity`` (left column) and residual predicted - measured (right column),
    all panels zooming together in time.

    Parameters
    ----------
    entry : dict
        One file of :func:`robot_identification.validation.validate` with ``signals``.
    joint_names, units : list of str
    quantity : str
        ``joint torque`` or ``motor torque``.
    colours, labels, dashes : dict
        Per curve name (``measured``, ``ols``, ...): colour, legend label, plotly dash.

    Returns
    -------
    html : str
    decimated : str
        What was reduced, for the page ("" when nothing).
    """
    import plotly.graph_objects as go   # plotly: the HTML report only
    from plotly.subplots import make_subplots   # plotly: the HTML report only
    sig = entry["signals"]
    t = np.asarray(sig["t"], dtype=float)
    models = list(sig["predicted"])
    n = len(joint_names)
    fig = make_subplots(rows=n, cols=2, shared_xaxes=True, horizontal_spacing=0.06,
                        vertical_spacing=min(0.04, 0.3 / max(n, 1)),
                        column_titles=[f"measured vs predicted {quantity}",
                                       "residual (predicted - measured)"])
    reduced = False
    for k in range(n):
        measured = np.asarray(sig["measured"][:, k], dtype=float)
        curves = [("measured", measured, 1)]
        curves += [(m, np.asarray(sig["predicted"][m][:, k], dtype=float), 1) for m in models]
        curves += [(m, np.asarray(sig["predicted"][m][:, k], dtype=float) - measured, 2)
                   for m in models if m != "nominal"]
        for name, y, col in curves:
            tt, yy = envelope(t, y)
            reduced |= len(tt) < len(t)
            fig.add_trace(go.Scatter(
                x=tt.astype(np.float32), y=yy.astype(np.float32), mode="lines",
                name=labels.get(name, name), legendgroup=name,
                showlegend=(k == 0 and col == 1), line=dict(
                    color=colours.get(name), dash=dashes.get(name, "solid"),
                    width=3 if name == "measured" else 1.2),
                opacity=0.45 if name == "measured" else 1.0,
                hovertemplate=f"{labels.get(name, name)}: %{{y:.4g}} {units[k]}<extra></extra>"),
                row=k + 1, col=col)
        fig.update_yaxes(title_text=f"{joint_names[k].replace('_joint', '')} [{units[k]}]",
                         title_font_size=11, row=k + 1, col=1)
    fig.update_xaxes(title_text="time [s]", row=n, col=1)
    fig.update_xaxes(title_text="time [s]", row=n, col=2)
    fig.update_layout(height=170 * n + 150, margin=dict(l=60, r=20, t=100, b=40),
                      title=dict(text=Path(entry["file"]).name, font_size=13, y=0.995,
                                 yanchor="top"),
                      legend=dict(orientation="h", yref="container", y=1.0 - 30 / (
                                  170 * n + 150), yanchor="top", x=0.5, xanchor="center"),
                      hovermode="x unified", template="plotly_white")
    html = fig.to_html(full_html=False, include_plotlyjs=False, include_mathjax=False,
                       config={"displaylogo": False, "responsive": True})
    note = (f"each curve is drawn through the minimum and maximum of {MAX_POINTS // 2} "
            f"equal time slices of its {len(t)} samples" if reduced else "")
    return html, note
