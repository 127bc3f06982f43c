"""Rollout overlays for the report: measured vs rolled-out link positions
(:func:`robot_identification.validation.rollout_validate` with ``keep_signals``)."""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from robot_identification.report._html import (
    COLOURS, LABELS, STYLES, _count, _figure, _save, _short, _table)


def plot_rollout(entry, joint_names, path, windows=4):
    """Measured link positions and every model's rollout over the ``windows`` windows with
    the most motion (in time order), one panel per joint (each window starts in the
    measured state)."""
    fig, axes = _figure(len(joint_names), 1.5)
    series, handles = {}, []
    first = next(iter(entry["models"].values()))
    motion = [float(np.ptp(s[1], axis=0).sum()) for s in first["signals"]]
    chosen = sorted(np.argsort(motion)[::-1][:windows])
    for n_w, w in enumerate(chosen):
        t, q_meas, _ = first["signals"][w]
        for k, ax in enumerate(axes):
            h = ax.plot(t, q_meas[:, k], color=COLOURS["measured"],
                        label=LABELS["measured"], **STYLES["measured"])
            _count(series, "measured", q_meas[:, k])
            if k == 0 and n_w == 0:
                handles += h
            for name, r in entry["models"].items():
                q_sim = r["signals"][w][2][:, k]
                h = ax.plot(t, q_sim, color=COLOURS.get(name), label=LABELS.get(name, name),
                            **STYLES.get(name, {}))
                _count(series, name, q_sim)
                if k == 0 and n_w == 0:
                    handles += h
    for k, ax in enumerate(axes):
        ax.set_ylabel(f"{_short(joint_names[k])}\n[rad]", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time [s]")
    fig.legend(handles=handles, loc="outside upper center", ncol=len(handles), fontsize=9,
               title=f"{Path(entry['file']).name}: MuJoCo rollout ({entry['mode']}, windows "
                     f"of {first['window_s']:g} s from the measured state)",
               title_fontsize=10, frameon=False)
    return _save(fig, path, series)


def rollout_section(rollouts, joint_names, out_dir) -> str:
    """HTML section: tracking-error table and overlay figure per recording."""
    parts = ["<h2 id='rollout'>Rollout in MuJoCo: position / velocity tracking error</h2>",
             "<p class='small'>The recorded torques (open loop) or the recording's PD "
             "controller (closed loop) replayed through each model in MuJoCo over windows "
             "starting in the measured state (docs/simulation.md). Cells: RMS position "
             "error [rad] / RMS velocity error [rad/s].</p>"]
    for i, f in enumerate(rollouts):
        rows = []
        for name, r in f["models"].items():
            rows.append([LABELS.get(name, name)]
                        + [f"{j['q_rms']:.2e} / {j['dq_rms']:.2e}" for j in r["joints"]]
                        + [f"<b>{r['q_rms_mean']:.2e}</b>"])
        parts.append(f"<h3>{html.escape(Path(f['file']).name)} ({f['mode']})</h3>")
        parts.append(_table(["model"] + [_short(j) for j in joint_names]
                            + ["mean position"], rows, "nrmse"))
        fig = plot_rollout(f, joint_names, Path(out_dir) / f"rollout{i + 1}.png")
        parts.append(fig.img("measured vs rolled-out positions"))
    return "".join(parts)
