"""HTML report of an identification: what to trust first, then the evidence.

Order of the page: the result's diagnostics; the base-parameter table (unit, nominal URDF
value, every estimate, standard deviation, relative standard deviation, true value for
simulated data, a coloured trust flag); the excitation (condition number, amplitude spectrum
of the joint motion); validation (NRMSE per joint and model, measured vs predicted torque
per joint for every estimate, residuals with their RMS per joint); the physically consistent
bodies beside the URDF's.

The page is rendered from the jinja2 template ``templates/report.html.j2``. The validation
signals are also drawn as interactive plotly figures (zoom, pan, hover; plotly.js inlined, so
``report.html`` stays one self-contained file that needs no network:
:mod:`robot_identification.report._interactive`); on paper the static figures are printed.
Figures are matplotlib PNGs written next to ``report.html`` (Agg backend, no display), at
most :data:`FIGURE_WIDTH_PX` wide with legends outside the axes. Each ``<img>`` carries
``data-series`` (the curves drawn, with their number of finite points) and
``data-legend-overlap`` (whether the legend box intersects an axes box), so that tests can
check that no series is missing and no legend covers data.
"""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robot_identification.outputs import atomic_directory
from robot_identification.progress import bar
from robot_identification.report._interactive import plotly_js, validation_figure

#: Colours and line styles per curve: measured thick and light underneath, the estimates
#: thin with distinct dash patterns, so that nearly equal predictions stay distinguishable.
COLOURS = {"measured": "#444444", "nominal": "#9467bd", "ols": "#1f77b4", "wls": "#2ca02c",
           "physical": "#d62728"}
STYLES = {"measured": dict(lw=2.6, alpha=0.35, ls="-"),
          "nominal": dict(lw=1.1, ls=(0, (1, 1.6))),
          "ols": dict(lw=1.0, ls="-"),
          "wls": dict(lw=1.3, ls=(0, (6, 2.5))),
          "physical": dict(lw=1.5, ls=(0, (1.5, 1.5)))}
LABELS = {"measured": "measured", "nominal": "nominal (URDF)", "ols": "OLS", "wls": "WLS",
          "physical": "physically consistent"}
#: Largest figure width [px] (screens of ~1400 px show it without scaling).
FIGURE_WIDTH_PX = 1300
DPI = 100
#: Trust flag by relative standard deviation [%] of the reported estimate.
TRUST_LEVELS = ((5.0, "good", "#c8e6c9"), (25.0, "fair", "#fff3b0"),
                (float("inf"), "poor", "#ffcdd2"))
#: A physically consistent body mass this far from the URDF's (ratio) gets a note.
MASS_RATIO_NOTE = 1.5


@dataclass
class Figure:
    """A written PNG and what a test needs to check it.

    Attributes
    ----------
    path : Path
    width, height : int
        Pixels.
    series : dict
        Curve label -> number of finite points drawn (bars count as points).
    legend_overlap : bool
        Whether a legend's box intersects an axes' box.
    """

    path: Path
    width: int
    height: int
    series: dict = field(default_factory=dict)
    legend_overlap: bool = False

    def img(self, alt: str) -> str:
        return (f'<img src="{html.escape(self.path.name)}" alt="{html.escape(alt)}" '
                f'width="{self.width}" height="{self.height}" '
                f"data-series='{html.escape(json.dumps(self.series))}' "
                f'data-legend-overlap="{str(self.legend_overlap).lower()}">')


def _plt():
    import matplotlib  # matplotlib: ~0.3 s import, needed only for figures
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib: ~0.3 s import, needed only for figures
    return plt


def _short(name):
    return name.replace("_joint", "")


def _save(fig, path, series) -> Figure:
    """Draw, measure legend/axes overlap, save at :data:`DPI`, close."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    overlap = False
    for leg in legends:
        lb = leg.get_window_extent(renderer)
        for ax in fig.axes:
            ab = ax.get_window_extent(renderer)
            if lb.overlaps(ab) and ax.get_legend() is not leg:
                overlap = True
            if ax.get_legend() is leg:     # inside its axes: covers data
                overlap = True
    w, h = (fig.get_size_inches() * DPI).round().astype(int)
    fig.savefig(path, dpi=DPI)
    _plt().close(fig)
    return Figure(Path(path), int(w), int(h), series, overlap)


def _figure(rows, height_per_row, sharex=True):
    plt = _plt()
    width = FIGURE_WIDTH_PX / DPI
    fig, axes = plt.subplots(rows, 1, figsize=(width, 0.9 + height_per_row * rows),
                             sharex=sharex, squeeze=False, layout="constrained")
    return fig, axes[:, 0]


def _count(series, label, y):
    series[label] = series.get(label, 0) + int(np.isfinite(y).sum())


def plot_torques(entry, joint_names, path, models=None, quantity="joint torque",
                 units=None) -> Figure:
    """Measured vs predicted torque, one panel per joint, every model.

    Parameters
    ----------
    entry : dict
        One file of :func:`robot_identification.validation.validate` with ``signals``.
    joint_names : list of str
    path : path
        PNG to write.
    models : list of str, optional
        Default: every predicted model.
    quantity : str
        What is compared, for the title: ``joint torque`` (rigid arms) or ``motor torque``
        (elastic arms: the motor equations carry the measured torque).
    units : list of str, optional
        Unit per joint (:func:`effort_units`); default ``N m`` for every joint.

    Returns
    -------
    Figure
    """
    sig = entry["signals"]
    models = models or list(sig["predicted"])
    fig, axes = _figure(len(joint_names), 1.6)
    series = {}
    handles = []
    for k, ax in enumerate(axes):
        y = sig["measured"][:, k]
        h = ax.plot(sig["t"], y, color=COLOURS["measured"], label=LABELS["measured"],
                    **STYLES["measured"])
        _count(series, "measured", y)
        if k == 0:
            handles += h
        for name in models:
            y = sig["predicted"][name][:, k]
            h = ax.plot(sig["t"], y, color=COLOURS.get(name), label=LABELS.get(name, name),
                        **STYLES.get(name, {}))
            _count(series, name, y)
            if k == 0:
                handles += h
        unit = (units or ["N m"] * len(joint_names))[k]
        ax.set_ylabel(f"{_short(joint_names[k])}\n[{unit}]", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time [s]")
    fig.legend(handles=handles, loc="outside upper center", ncol=len(handles), fontsize=9,
               title=f"{Path(entry['file']).name}: measured vs predicted {quantity}",
               title_fontsize=10, frameon=False)
    return _save(fig, path, series)


def effort_units(model) -> list:
    """Unit of each joint's torque or force: ``N m`` (revolute) or ``N`` (prismatic)."""
    return ["N" if k == "prismatic" else "N m" for k in model.joint_types]


def plot_residuals(entry, joint_names, path, models=None, units=None) -> Figure:
    """Residual (predicted - measured) per joint with its RMS per model in each panel title.

    The y axis spans 1.3 times the 99.5th percentile of |residual| so that spikes at
    velocity reversals do not flatten the rest; the title counts the clipped samples.
    ``units``: unit per joint (:func:`effort_units`), default ``N m``.

    Returns
    -------
    Figure
    """
    sig = entry["signals"]
    models = [m for m in (models or list(sig["predicted"])) if m != "nominal"]
    fig, axes = _figure(len(joint_names), 1.5)
    series = {}
    handles = []
    for k, ax in enumerate(axes):
        parts, lim, clipped = [], 0.0, 0
        res = {}
        for name in models:
            r = sig["predicted"][name][:, k] - sig["measured"][:, k]
            res[name] = r
            finite = r[np.isfinite(r)]
            if finite.size:
                lim = max(lim, 1.3 * float(np.percentile(np.abs(finite), 99.5)))
            parts.append(f"{LABELS.get(name, name)} {np.sqrt(np.nanmean(r ** 2)):.3g}")
        for name, r in res.items():
            h = ax.plot(sig["t"], r, color=COLOURS.get(name), label=LABELS.get(name, name),
                        **STYLES.get(name, {}))
            _count(series, name, r)
            if lim > 0:
                clipped = max(clipped, int((np.abs(r) > lim).sum()))
            if k == 0:
                handles += h
        if lim > 0:
            ax.set_ylim(-lim, lim)
        ax.axhline(0, color="black", lw=0.6)
        note = f"; {clipped} sample(s) beyond the axis" if clipped else ""
        unit = (units or ["N m"] * len(joint_names))[k]
        ax.set_title(f"{joint_names[k]}: RMS [{unit}] " + ", ".join(parts) + note,
                     fontsize=9, loc="left")
        ax.set_ylabel(f"[{unit}]", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time [s]")
    fig.legend(handles=handles, loc="outside upper center", ncol=max(len(handles), 1),
               fontsize=9, title=f"{Path(entry['file']).name}: residual (predicted - measured)",
               title_fontsize=10, frameon=False)
    return _save(fig, path, series)


def plot_nrmse(files, joint_names, path) -> Figure:
    """NRMSE per joint and model, one panel per file (log scale). Returns the Figure."""
    fig, axes = _figure(len(files), 2.6, sharex=False)
    series = {}
    handles = {}
    for ax, f in zip(axes, files):
        names = list(f["models"])
        width = 0.8 / len(names)
        x = np.arange(len(joint_names))
        for i, name in enumerate(names):
            vals = np.array([j["nrmse"] for j in f["models"][name]["joints"]], float)
            b = ax.bar(x + (i - (len(names) - 1) / 2) * width, vals, width,
                       color=COLOURS.get(name), label=LABELS.get(name, name))
            _count(series, name, vals)
            handles.setdefault(name, b)
        ax.set_xticks(x, [_short(j) for j in joint_names], fontsize=9)
        ax.set_yscale("log")
        ax.set_ylabel("NRMSE", fontsize=9)
        means = ", ".join(f"{LABELS.get(n, n)} {f['models'][n]['nrmse_mean']:.3f}"
                          for n in names)
        ax.set_title(f"{Path(f['file']).name}{'' if f['moving'] else ' (static poses)'}: "
                     f"mean NRMSE {means}", fontsize=9, loc="left")
        ax.grid(alpha=0.3, axis="y")
    fig.legend(handles=list(handles.values()),
               labels=[LABELS.get(n, n) for n in handles], loc="outside upper center",
               ncol=len(handles), fontsize=9, frameon=False)
    return _save(fig, path, series)


def plot_spectrum(datasets, joint_names, path, cutoff_hz=None) -> Figure:
    """Amplitude spectrum of the joint positions of the identification data.

    Parameters
    ----------
    datasets : list of (label, Dataset)
    joint_names : list of str
    path : path
    cutoff_hz : float, optional
        The low-pass cut-off, drawn as a vertical line.

    Returns
    -------
    Figure
    """
    fig, axes = _figure(len(datasets), 2.4, sharex=False)
    series = {}
    handles = {}
    cmap = _plt().get_cmap("tab10")
    for ax, (label, ds) in zip(axes, datasets):
        ds = ds.select_joints(joint_names)
        q = ds.q - ds.q.mean(axis=0)
        fs = 1.0 / float(np.median(np.diff(ds.t)))
        freq = np.fft.rfftfreq(q.shape[0], 1.0 / fs)
        amp = 2.0 * np.abs(np.fft.rfft(q, axis=0)) / q.shape[0]
        top = max(5.0, 2.0 * (cutoff_hz or 0.0))
        keep = (freq > 0) & (freq <= top)
        for k, j in enumerate(joint_names):
            a = np.maximum(amp[keep, k], 1e-9)
            h, = ax.plot(freq[keep], a, color=cmap(k % 10), lw=1.0, label=_short(j))
            _count(series, j, a)
            handles.setdefault(j, h)
        if cutoff_hz:
            ax.axvline(cutoff_hz, color="black", ls="--", lw=1.0)
            ax.text(cutoff_hz, 0.98, f" cut-off {cutoff_hz:g} Hz",
                    transform=ax.get_xaxis_transform(), va="top", fontsize=8)
        ax.set_yscale("log")
        ax.set_xlim(0, top)
        ax.set_xlabel("frequency [Hz]", fontsize=9)
        ax.set_ylabel("amplitude [rad]", fontsize=9)
        ax.set_title(f"{Path(str(label)).name}: amplitude spectrum of the joint positions",
                     fontsize=9, loc="left")
        ax.grid(alpha=0.3)
    fig.legend(handles=list(handles.values()), labels=[_short(j) for j in handles],
               loc="outside upper center", ncol=min(len(handles), 8), fontsize=9,
               frameon=False)
    return _save(fig, path, series)


def identification_data(results_doc) -> list:
    """Recordings a results.yaml was identified from (``data:``, or ``settings: data:``)."""
    data = results_doc.get("data") or (results_doc.get("settings") or {}).get("data") or []
    return [str(d) for d in data] if isinstance(data, (list, tuple)) else [str(data)]


def _table(head, rows, cls=""):
    h = "".join(f"<th>{c}</th>" for c in head)
    body = "".join("<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in r)
                   + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>'


def _num(x, fmt=".4g"):
    if x is None or (isinstance(x, (float, np.floating)) and not np.isfinite(x)):
        return "-"
    if isinstance(x, (float, np.floating)) and abs(x) < 1e-12:     # rounding noise
        return "0"
    return format(x, fmt)


#: rows of the drive-gain table: results.yaml ``drive_gains:`` key -> (row label, unit)
DRIVE_GAIN_ROWS = {"given": ("given (config csv.drive_gains)", "N m/A"),
                   "identified": ("identified", "N m/A"),
                   "identified_std": ("std of identified", "N m/A"),
                   "payload_torque_rms": ("payload torque RMS", "N m")}


def _drive_gains_table(gains, joints):
    """HTML section of results.yaml ``drive_gains:`` (written by ``drive-gains --results``):
    one row per quantity with its unit, ``well_identified`` as yes / no, the method line."""
    rows = []
    for key, (label, unit) in DRIVE_GAIN_ROWS.items():
        vals = gains.get(key)
        if isinstance(vals, list):
            rows.append([f"{label} [{unit}]"] + [_num(v, ".4f") for v in vals])
    ok = gains.get("well_identified")
    if isinstance(ok, list):
        rows.append(["well identified (payload torque above 3x the residual)"]
                    + ["yes" if v else "<span class='warn'>no: use the given gain</span>"
                       for v in ok])
    method = gains.get("method")
    runs = [f"{what}: " + ", ".join(html.escape(Path(str(f)).name) for f in gains[what])
            for what in ("unloaded", "loaded") if isinstance(gains.get(what), list)]
    text = "; ".join(([html.escape(str(method))] if method else []) + runs)
    note = f"<p class='small'>{text}</p>" if text else ""
    return ("<h2>Drive gains</h2>" + note
            + _table(["quantity"] + [_short(j) for j in joints], rows))


#: Colours of the combined trust levels (robot_identification.diagnostics.parameter_trust).
TRUST_COLOURS = {"good": "#c8e6c9", "fair": "#fff3b0", "poor": "#ffcdd2",
                 "check": "#ffe0b2", "unidentified": "#ffcdd2", "implausible": "#ef9a9a"}


def trust_flag(relative_std, trust=None):
    """(label, colour): the combined ``trust`` level when given (results.yaml ``trust``),
    else the level of a relative standard deviation [%] (:data:`TRUST_LEVELS`; files of
    earlier versions)."""
    if trust in TRUST_COLOURS:
        return trust, TRUST_COLOURS[trust]
    if relative_std is None or not np.isfinite(relative_std):
        return "unidentified", "#ffcdd2"
    for limit, label, colour in TRUST_LEVELS:
        if relative_std <= limit:
            return label, colour
    return TRUST_LEVELS[-1][1:]


_SEVERITY_COLOURS = {"error": "#ffcdd2", "warning": "#fff3b0", "info": "#e3f2fd"}


def _diagnostics_html(diagnostics):
    if not diagnostics:
        return ('<div class="diag ok">No diagnostics: nothing in the checks of '
                '<code>robot_identification.diagnostics</code> found this result doubtful.</div>')
    order = {"error": 0, "warning": 1, "info": 2}
    items = sorted(diagnostics, key=lambda d: order.get(d.get("severity"), 3))
    counts = {s: sum(d.get("severity") == s for d in items) for s in order}
    out = [f"<p>{counts['error']} error(s), {counts['warning']} warning(s), "
           f"{counts['info']} note(s).</p>"]

    def item(d):
        sev = str(d.get("severity", "info"))
        subject = f" <i>[{html.escape(str(d.get('subject')))}]</i>" if d.get("subject") else ""
        return (f"<li style='background:{_SEVERITY_COLOURS.get(sev, '#eee')}'>"
                f"<b>{html.escape(sev)}</b> <code>{html.escape(str(d.get('code')))}</code>"
                f"{subject}: {html.escape(str(d.get('message')))}</li>")
    serious = [item(d) for d in items if d.get("severity") in ("error", "warning")]
    notes = [item(d) for d in items if d.get("severity") not in ("error", "warning")]
    if serious:
        out.append("<ul class='diag'>" + "".join(serious) + "</ul>")
    if notes:   # many per-parameter notes: folded, the table's trust column shows them too
        out.append(f"<details{' open' if len(notes) <= 5 else ''}><summary>{len(notes)} "
                   f"note(s)</summary><ul class='diag'>" + "".join(notes) + "</ul></details>")
    return "".join(out)


def _parameter_table(model, doc, base, diagnostics):
    est = doc.get("estimates") or {}
    entries = doc["base_parameters"]
    nominal = None
    if base is not None:
        nominal = base.base_values(model.nominal_parameters())
    cols = [k for k in ("ols", "wls", "physical") if k in est]
    has_true = any("true" in e for e in entries)
    flagged = {}
    for d in diagnostics or []:
        if d.get("subject"):
            flagged.setdefault(str(d["subject"]), []).append(f"{d.get('severity')}: "
                                                             f"{d.get('message')}")
    primary = str(doc.get("estimator", "")).upper() or "estimate"
    head = ["#", "base parameter (combination of standard parameters)", "unit",
            "nominal (URDF)"]
    head += [LABELS.get(k, k) for k in cols] or [primary]
    head += [f"std ({primary})", "rel. std [%]"] + (["true (simulated)"] if has_true else [])
    head += ["trust"]
    rows = []
    for i, e in enumerate(entries):
        name = html.escape(e["name"])
        expr = e.get("expression", e["name"])
        cell = f"<b>{name}</b>"
        if expr.replace(" ", "") != e["name"]:
            cell += f"<div class='expr'>= {html.escape(expr)}</div>"
        notes = flagged.get(e["name"])
        if notes:
            cell += f" <span class='warn' title='{html.escape(' | '.join(notes))}'>&#9888;</span>"
        r = [str(i + 1), f"<td class='name'>{cell}</td>", html.escape(e.get("unit", ""))]
        r.append(_num(None if nominal is None else float(nominal[i])))
        if cols:
            r += [_num(est[k]["values"][i]) for k in cols]
        else:
            r.append(_num(e["estimate"]))
        rel = e.get("relative_std")
        r += [_num(e.get("std"), ".3g"), _num(rel, ".3g")]
        if has_true:
            r.append(_num(e.get("true")))
        label, colour = trust_flag(rel, e.get("trust"))
        tip = (f" title='{html.escape(str(e['trust_reason']), quote=True)}'"
               if e.get("trust_reason") else "")
        r.append(f"<td class='trust' style='background:{colour}'{tip}>{label}</td>")
        rows.append(r)
    combined = any(e.get("trust") for e in entries)
    legend = ("<p class='small'>trust: "
              + ("relative std against max(|estimate|, a tenth of a plausible size), "
                 "<span class='chip' style='background:#ffe0b2'>check</span> where the "
                 "estimate is precise but > 3 std and > 20 % from the prior (URDF), "
                 "<span class='chip' style='background:#ef9a9a'>implausible</span> for an "
                 "impossible sign (hover a cell for why; docs/diagnostics.md): "
                 if combined else "")
              + "relative standard deviation of the "
              f"{primary} estimate &le; {TRUST_LEVELS[0][0]:g} % <span class='chip' "
              f"style='background:{TRUST_LEVELS[0][2]}'>good</span>, &le; "
              f"{TRUST_LEVELS[1][0]:g} % <span class='chip' style='background:"
              f"{TRUST_LEVELS[1][2]}'>fair</span>, above or not determined <span class='chip' "
              f"style='background:{TRUST_LEVELS[2][2]}'>poor / unidentified</span>; &#9888;: a "
              "diagnostic names this parameter (hover). Nominal: the base parameter of the "
              "URDF's inertials and the config's drive values.</p>")
    return legend + _table(head, rows, "params")


def _bodies_table(model, est):
    phys = est.get("physical") or {}
    sp = phys.get("standard_parameters")
    if not sp:
        return ""
    nominal = dict(zip(model.parameter_names, map(float, model.nominal_parameters())))
    eig = phys.get("min_pseudo_inertia_eigenvalues") or {}
    rows, far = [], []
    for body in model.body_names:
        def vals(src):
            return [src.get(f"{body}.{p}", float("nan")) for p in
                    ("m", "mx", "my", "mz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")]
        for label, v in (("URDF", vals(nominal)), ("identified", vals(sp))):
            m = v[0]
            com = [x / m if m else float("nan") for x in v[1:4]]
            r = [f"<b>{html.escape(body)}</b>" if label == "URDF" else "", label, _num(m)]
            r += [_num(c, ".4f") for c in com] + [_num(x) for x in v[4:]]
            r.append(_num(eig.get(body), ".2e") if label == "identified" else "")
            rows.append(r)
        m_urdf, m_id = nominal.get(f"{body}.m", 0.0), sp.get(f"{body}.m", 0.0)
        if m_urdf > 0 and m_id > 0 and max(m_id / m_urdf, m_urdf / m_id) > MASS_RATIO_NOTE:
            far.append(f"{html.escape(body)} ({m_id:.3g} kg vs {m_urdf:.3g} kg)")
    out = [_table(["body", "", "m [kg]", "c<sub>x</sub> [m]", "c<sub>y</sub> [m]",
                   "c<sub>z</sub> [m]", "I<sub>xx</sub>", "I<sub>yy</sub>", "I<sub>zz</sub>",
                   "I<sub>xy</sub>", "I<sub>xz</sub>", "I<sub>yz</sub>",
                   "min eig. pseudo-inertia"], rows, "bodies")]
    out.append("<p class='small'>Inertias in kg m&sup2; about the body frame's origin (the "
               "joint frame or the config's <code>body_frame</code>); centre of mass c = "
               "(mx, my, mz) / m.</p>")
    if far:
        out.append("<p class='note'><b>Why masses differ from the URDF:</b> "
                   + ", ".join(far) + ". Motion data determine only the base parameters "
                   "(combinations); the physically consistent estimate is one set of standard "
                   "parameters with those combinations, the one nearest the URDF prior that "
                   "satisfies the pseudo-inertia LMIs. How mass is split between bodies that "
                   "appear only together (e.g. a wrist and the links after it) is not "
                   "determined by the data, so such a body's mass can sit far from its URDF "
                   "value while the predicted torques stay right. Trust the base parameters "
                   "and the validation above, not a single body's mass.</p>")
    return "".join(out)


def write_report(out_dir, model, results_doc, files, *, title=None, base=None,
                 excitation_data=(), inputs=(), rollouts=()) -> Path:
    """Write ``report.html`` and its PNG figures into ``out_dir``, as a whole.

    The report is written into a temporary directory next to ``out_dir`` that then takes its
    place in one step (:func:`robot_identification.outputs.atomic_directory`): a report
    that fails (an error, a full disk, Ctrl-C) leaves a previous report in ``out_dir`` as it
    was, never mixed with the new run's figures. An existing ``out_dir`` is replaced only
    when it holds a previous report and nothing else (:func:`previous_report`).

    Parameters
    ----------
    out_dir : path
    model : RobotModel
    results_doc : dict
        Parsed results.yaml (with ``estimates:`` when identify wrote them; ``diagnostics:``).
    files : list of dict
        :func:`robot_identification.validation.validate` output with ``keep_signals``.
    base : BaseParameters, optional
        Base parameters of the results (for the nominal column).
    excitation_data : list of (label, Dataset)
        Identification recordings: their spectrum is drawn.
    inputs : iterable of path
        Files and directories read; ``out_dir`` must not be (inside) one of them nor a bag.
    rollouts : list of dict
        :func:`robot_identification.validation.rollout_validate` output with
        ``keep_signals``: a section with the tracking errors and position overlays.

    Returns
    -------
    Path
        The HTML file.

    Raises
    ------
    ConfigError
        ``out_dir`` is a file, an input, lies in an input or rosbag2 directory, or exists
        holding files other than a previous report's.
    OSError
        The report cannot be written (full disk, read-only file system): one line naming
        ``out_dir``.
    """
    with atomic_directory(out_dir, inputs, "report directory", previous_report) as out:
        _write_report_files(out, model, results_doc, files, title=title, base=base,
                            excitation_data=excitation_data, rollouts=rollouts)
    return Path(out_dir) / "report.html"


#: Largest report.html read to list the files it refers to [bytes].
_MAX_REPORT_BYTES = 256 * 2**20


def previous_report(folder):
    """None when the existing directory ``folder`` may be replaced by a new report: it is
    empty, or it holds a ``report.html`` and otherwise only files that page shows (its
    figures). Else why not, for the message: a directory with anything else (``--output .``
    of a folder of notes, data or another report's files) is never replaced."""
    folder = Path(folder)
    entries = sorted(folder.iterdir())
    if not entries:
        return None
    page = folder / "report.html"
    if not page.is_file() or page.is_symlink() or page.stat().st_size > _MAX_REPORT_BYTES:
        return (f"holds no report ({', '.join(e.name for e in entries[:3])}"
                f"{', ...' if len(entries) > 3 else ''})")
    shown = set(re.findall(r'(?:src|href)="([^"/\\]+)"', page.read_text(errors="replace")))
    other = [e.name for e in entries if e.name != "report.html" and (
        html.escape(e.name) not in shown or e.is_symlink() or not e.is_file())]
    if other:
        return (f"holds files the report did not write ({', '.join(other[:3])}"
                f"{', ...' if len(other) > 3 else ''})")
    return None


#: plotly dash patterns of the curves (the PNGs' matplotlib styles, for the interactive plots)
DASHES = {"measured": "solid", "nominal": "dot", "ols": "solid", "wls": "dash",
          "physical": "dot"}
_TEMPLATES = Path(__file__).with_name("templates")


def _environment():
    import jinja2   # jinja2: the HTML report only
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
                              autoescape=True, trim_blocks=True, lstrip_blocks=True,
                              undefined=jinja2.StrictUndefined)


def _write_report_files(out, model, results_doc, files, *, title=None, base=None,
                        excitation_data=(), rollouts=(), interactive=True) -> Path:
    """Figures and report.html (rendered from ``templates/report.html.j2``) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    joints = list(model.joint_names)
    est = results_doc.get("estimates") or {}
    metrics = results_doc.get("metrics") or {}
    diagnostics = results_doc.get("diagnostics") or []
    cond = metrics.get("condition_number")
    settings = results_doc.get("settings") or {}
    steps = 2 * len(files) + (1 if files else 0) + (1 if excitation_data else 0)
    pbar = bar(total=steps, desc="report", unit="figure")
    order = {"error": 0, "warning": 1, "info": 2}
    items = [dict(severity=str(d.get("severity", "info")), code=str(d.get("code")),
                  subject=str(d.get("subject") or ""), message=str(d.get("message")),
                  colour=_SEVERITY_COLOURS.get(str(d.get("severity")), "#eee"))
             for d in sorted(diagnostics, key=lambda d: order.get(d.get("severity"), 3))]
    ctx = dict(
        robot=model.config.name, title=title or f"Identification report: {model.config.name}",
        model_kind=model.config.model, n_joints=model.n,
        n_base=len(results_doc["base_parameters"]), n_samples=metrics.get("n_samples", "?"),
        n_equations=metrics.get("n_equations", "?"),
        data=", ".join(Path(d).name for d in identification_data(results_doc))
        or "the identification data",
        estimator=str(results_doc.get("estimator", "?")).upper(), cond=_num(cond),
        diagnostics=items, counts={s: sum(d["severity"] == s for d in items) for s in order},
        serious=[d for d in items if d["severity"] in ("error", "warning")],
        notes=[d for d in items if d["severity"] not in ("error", "warning")],
        parameter_table=_parameter_table(model, results_doc, base, diagnostics),
        cutoff=_num(settings.get("cutoff_hz")),
        velocity_threshold=_num(settings.get("velocity_threshold")),
        spectrum="", nrmse_figure="", files=[], joints=[_short(j) for j in joints],
        effort_unit="N m; N for prismatic joints" if "prismatic" in model.joint_types
        else "N m", interactive=False, plotly_js="", rollout_html="", drive_gains_html="",
        bodies_html="")
    if excitation_data:
        fig = plot_spectrum(list(excitation_data), joints, out / "spectrum.png",
                            settings.get("cutoff_hz"))
        pbar.update(1)
        ctx["spectrum"] = fig.img("amplitude spectrum of the excitation")
    if files:
        ctx["nrmse_figure"] = plot_nrmse(files, joints, out / "nrmse.png").img(
            "NRMSE per joint")
        pbar.update(1)
        quantity = "motor torque" if model.config.elastic else "joint torque"
        units = effort_units(model)
        for i, f in enumerate(files):
            stem = f"file{i + 1}"
            a = plot_torques(f, joints, out / f"{stem}_torque.png", quantity=quantity,
                             units=units)
            pbar.update(1)
            b = plot_residuals(f, joints, out / f"{stem}_residual.png", units=units)
            pbar.update(1)
            entry = dict(
                name=Path(f["file"]).name, moving=f["moving"], stem=stem,
                rows=[dict(model=LABELS.get(mname, mname),
                           cells=[f"{j['rms']:.3f} / {j['nrmse']:.3f}" for j in m["joints"]],
                           mean=f"{m['nrmse_mean']:.4f}") for mname, m in f["models"].items()],
                torque_img=a.img(f"measured vs predicted {quantity}"),
                residual_img=b.img("residuals"), interactive="", decimated="")
            if interactive and f.get("signals") is not None:
                entry["interactive"], entry["decimated"] = validation_figure(
                    f, joints, units, quantity, COLOURS, LABELS, DASHES)
                ctx["interactive"] = True
            ctx["files"].append(entry)
    if ctx["interactive"]:
        ctx["plotly_js"] = plotly_js()
    if rollouts:
        from robot_identification.report._rollout_plot import (  # import cycle, see .importlinter
            rollout_section)
        ctx["rollout_html"] = rollout_section(rollouts, joints, out)
    gains = results_doc.get("drive_gains")
    if gains:
        ctx["drive_gains_html"] = _drive_gains_table(gains, joints)
    ctx["bodies_html"] = _bodies_table(model, est)
    pbar.close()
    page = _environment().get_template("report.html.j2").render(**ctx)
    (out / "report.html").write_text(page)
    return out / "report.html"
