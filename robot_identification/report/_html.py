"""HTML report of an identification: torque plots, residuals, NRMSE, parameter table.

Figures are matplotlib PNGs written next to ``report.html`` (Agg backend, no display).
"""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from robot_identification.errors import ConfigError

#: Colours per model in the plots.
COLOURS = {"measured": "black", "nominal": "tab:gray", "ols": "tab:blue", "wls": "tab:green",
           "physical": "tab:red"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _short(name):
    return name.replace("_joint", "")


def plot_torques(entry, joint_names, path, models=None):
    """Measured vs predicted torque per joint (one file). Returns the PNG path."""
    plt = _plt()
    sig = entry["signals"]
    models = models or list(sig["predicted"])
    n = len(joint_names)
    fig, axes = plt.subplots(n, 1, figsize=(11, 1.9 * n), sharex=True)
    for k, ax in enumerate(np.atleast_1d(axes)):
        ax.plot(sig["t"], sig["measured"][:, k], color=COLOURS["measured"], lw=1.6,
                label="measured")
        for name in models:
            ax.plot(sig["t"], sig["predicted"][name][:, k], lw=0.9,
                    color=COLOURS.get(name), label=name,
                    ls="--" if name == "nominal" else "-")
        ax.set_ylabel(f"{_short(joint_names[k])}\n[N m]")
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=len(models) + 1, loc="upper right", fontsize=8)
    axes[0].set_title(f"{Path(entry['file']).name}: measured vs predicted joint torque")
    axes[-1].set_xlabel("time [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_residuals(entry, joint_names, path, models=None):
    """Residual (predicted - measured) per joint (one file). Returns the PNG path."""
    plt = _plt()
    sig = entry["signals"]
    models = [m for m in (models or list(sig["predicted"])) if m != "nominal"]
    n = len(joint_names)
    fig, axes = plt.subplots(n, 1, figsize=(11, 1.7 * n), sharex=True)
    for k, ax in enumerate(np.atleast_1d(axes)):
        for name in models:
            r = sig["predicted"][name][:, k] - sig["measured"][:, k]
            ax.plot(sig["t"], r, lw=0.8, color=COLOURS.get(name), label=name)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_ylabel(f"{_short(joint_names[k])}\n[N m]")
        ax.grid(alpha=0.3)
    axes[0].legend(ncol=len(models), loc="upper right", fontsize=8)
    axes[0].set_title(f"{Path(entry['file']).name}: residual (predicted - measured)")
    axes[-1].set_xlabel("time [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def plot_nrmse(files, joint_names, path):
    """Bar chart of NRMSE per joint and model, one panel per file. Returns the PNG path."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(files), figsize=(5.2 * len(files), 3.6), squeeze=False)
    for ax, f in zip(axes[0], files):
        names = list(f["models"])
        width = 0.8 / len(names)
        x = np.arange(len(joint_names))
        for i, name in enumerate(names):
            vals = [j["nrmse"] for j in f["models"][name]["joints"]]
            ax.bar(x + (i - (len(names) - 1) / 2) * width, vals, width,
                   color=COLOURS.get(name),
                   label=f"{name} ({f['models'][name]['nrmse_mean']:.3f})")
        ax.set_xticks(x, [_short(j) for j in joint_names], rotation=30, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("NRMSE")
        ax.set_title(Path(f["file"]).name + ("" if f["moving"] else " (static)"), fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7, title="model (mean)", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def _table(head, rows):
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _num(x, fmt=".4g"):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return format(x, fmt)


def write_report(out_dir, model, results_doc, files, *, title=None, inputs=()) -> Path:
    """Write ``report.html`` and its PNG figures into ``out_dir``.

    Parameters
    ----------
    out_dir : path
    model : RobotModel
    results_doc : dict
        Parsed results.yaml (with ``estimates:`` when identify wrote them).
    files : list of dict
        :func:`robot_identification.validation.validate` output with ``keep_signals``.
    inputs : iterable of path
        Files and directories read; ``out_dir`` must not be (inside) one of them nor a bag.

    Returns
    -------
    Path
        The HTML file.

    Raises
    ------
    ConfigError
        ``out_dir`` is an input file or lies in an input or rosbag2 directory.
    """
    from robot_identification.outputs import check_output, write_text_atomic
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"report directory '{out}' is a file; give a directory")
    check_output(out / "report.html", inputs, "report directory")
    out.mkdir(parents=True, exist_ok=True)
    joints = list(model.joint_names)
    parts = [f"<h1>{html.escape(title or 'Identification report: ' + model.config.name)}</h1>"]
    est = results_doc.get("estimates") or {}
    metrics = results_doc.get("metrics", {})
    cond = metrics.get("condition_number")
    parts.append(f"<p>Robot <b>{html.escape(model.config.name)}</b>, "
                 f"{len(results_doc['base_parameters'])} base parameters, "
                 f"{metrics.get('n_samples', '?')} samples, condition number of the base "
                 f"observation matrix <b>{_num(cond)}</b>; identification data: "
                 f"{html.escape(', '.join(Path(d).name for d in results_doc.get('data', [])))}"
                 f".</p>")
    # validation summary
    if files:
        img = plot_nrmse(files, joints, out / "nrmse.png")
        parts.append("<h2>Validation: normalised RMS torque error</h2>")
        parts.append(f'<img src="{img.name}" alt="NRMSE per joint">')
        for f in files:
            rows = []
            for name, m in f["models"].items():
                rows.append([name] + [f"{j['rms']:.3f} / {j['nrmse']:.3f}" for j in m["joints"]]
                            + [f"<b>{m['nrmse_mean']:.4f}</b>"])
            parts.append(f"<h3>{html.escape(Path(f['file']).name)}"
                         f"{'' if f['moving'] else ' (static poses)'}</h3>")
            parts.append("<p>cells: RMS error [N m] / NRMSE</p>")
            parts.append(_table(["model"] + [_short(j) for j in joints] + ["mean NRMSE"], rows))
        for i, f in enumerate(files):
            stem = f"file{i + 1}"
            a = plot_torques(f, joints, out / f"{stem}_torque.png")
            b = plot_residuals(f, joints, out / f"{stem}_residual.png")
            parts.append(f"<h2>{html.escape(Path(f['file']).name)}</h2>")
            parts.append(f'<img src="{a.name}" alt="torques"><br><img src="{b.name}" '
                         f'alt="residuals">')
    # gains
    gains = results_doc.get("drive_gains")
    if gains:
        parts.append("<h2>Drive gains [N m / A]</h2>")
        rows = [[k] + [_num(v, ".4f") for v in vals] for k, vals in gains.items()
                if isinstance(vals, list)]
        parts.append(_table(["source"] + [_short(j) for j in joints], rows))
    # parameter table
    parts.append("<h2>Base parameters</h2>")
    head = ["#", "base parameter", "unit"]
    cols = [k for k in ("ols", "wls") if k in est]
    for k in cols:
        head += [f"{k} estimate", f"{k} std", f"{k} rel. std %"]
    if "physical" in est:
        head.append("physical")
    rows = []
    for i, bp in enumerate(results_doc["base_parameters"]):
        r = [str(i + 1), f"<code>{html.escape(bp['expression'])}</code>", bp.get("unit", "")]
        if not cols:
            r += [_num(bp["estimate"]), _num(bp["std"]), _num(bp.get("relative_std"), ".3g")]
        for k in cols:
            v, s = est[k]["values"][i], est[k]["std"][i]
            r += [_num(v), _num(s), _num(100 * s / abs(v) if v else float("inf"), ".3g")]
        if "physical" in est:
            r.append(_num(est["physical"]["values"][i]))
        rows.append(r)
    if not cols:
        head += ["estimate", "std", "rel. std %"]
    parts.append(_table(head, rows))
    if "physical" in est:
        sp = est["physical"]["standard_parameters"]
        parts.append("<h2>Physically consistent standard parameters (per body, joint frame)</h2>")
        rows = []
        for body in model.body_names:
            vals = [sp.get(f"{body}.{p}") for p in ("m", "mx", "my", "mz", "Ixx", "Ixy",
                                                    "Iyy", "Ixz", "Iyz", "Izz")]
            nominal = model.nominal_parameters()[model.parameter_names.index(f"{body}.m")]
            rows.append([body, f"{vals[0]:.4g} ({nominal:.4g})"]
                        + [_num(v) for v in vals[1:]]
                        + [_num(est["physical"]["min_pseudo_inertia_eigenvalues"][body], ".2e")])
        parts.append(_table(["body", "m [kg] (nominal)", "mx", "my", "mz", "Ixx", "Ixy", "Iyy",
                             "Ixz", "Iyz", "Izz", "min eig J"], rows))
    css = ("body{font-family:sans-serif;max-width:1200px;margin:auto}"
           "table{border-collapse:collapse;font-size:12px;margin:8px 0}"
           "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
           "td:nth-child(2){text-align:left}img{max-width:100%}")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(model.config.name)} identification</title><style>{css}</style>"
            f"</head><body>{''.join(parts)}</body></html>\n")
    return write_text_atomic(out / "report.html", page, inputs, "report directory")
