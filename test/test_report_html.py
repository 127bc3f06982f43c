"""The HTML report: every curve of every estimate drawn, legends outside the data, figure
sizes for a 1400 px screen, diagnostics first, a trust flag per base parameter."""
import json
import re
import struct

import numpy as np
import pytest

pytestmark = pytest.mark.slow


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from robot_identification.model import load_robot
    from robot_identification.identification import identify
    from robot_identification.report import read_results, write_results
    from robot_identification.report._html import write_report
    from robot_identification.simulation import simulate
    from robot_identification.validation import load_estimates, validate
    out = tmp_path_factory.mktemp("report")
    model = load_robot("zollo_planar")
    data = simulate(model, duration=4.0)
    held = simulate(model, duration=3.0, seed=1, snr_db=80)
    result = identify(model, data, estimators=("ols", "wls"))   # both under estimates:
    path = write_results(result, out / "results.yaml", model)
    base, models, doc = load_estimates(path, model)
    files = validate(model, base, models, [held], labels=["held.npz"], keep_signals=True)
    page = write_report(out / "report", model, doc, files, base=base,
                        excitation_data=[("run.npz", data)])
    return page, read_results(path), models


def test_every_series_is_drawn_with_sane_sizes_and_no_legend_on_data(report):
    page, doc, models = report
    text = page.read_text()
    imgs = re.findall(r"<img ([^>]*)>", text)
    assert len(imgs) == 4               # spectrum, NRMSE, torques, residuals
    for attrs in imgs:
        src = re.search(r'src="([^"]+)"', attrs).group(1)
        width = int(re.search(r'width="(\d+)"', attrs).group(1))
        height = int(re.search(r'height="(\d+)"', attrs).group(1))
        assert _png_size(page.parent / src) == (width, height), src
        assert 800 <= width <= 1400 and 200 <= height <= 2000, (src, width, height)
        assert 'data-legend-overlap="false"' in attrs, src
        series = json.loads(re.search(r"data-series='([^']*)'", attrs).group(1)
                            .replace("&quot;", '"'))
        assert series and all(n > 0 for n in series.values()), (src, series)
        if src.endswith("_torque.png"):
            assert set(series) == {"measured"} | set(models)
        if src.endswith("_residual.png"):
            assert set(series) == set(models) - {"nominal"}
        if src == "spectrum.png":
            assert set(series) == {"joint1", "joint2"}


def test_diagnostics_come_first_and_every_parameter_has_a_trust_flag(report):
    page, doc, _ = report
    text = page.read_text()
    assert text.index("<h2>Diagnostics</h2>") < text.index("<h2>Base parameters</h2>")
    for d in doc["diagnostics"]:
        assert d["code"] in text
    flags = re.findall(r"<td class='trust'[^>]*>(\w+)</td>", text)
    assert len(flags) == len(doc["base_parameters"])
    assert set(flags) <= {"good", "fair", "poor", "check", "unidentified"}
    # 'check': only the Coulomb terms, biased low by the Coulomb + viscous model on the
    # simulated Stribeck friction (test_tutorial.py)
    names = [b["name"] for b in doc["base_parameters"]]
    assert all(n.endswith(".coulomb") for n, f in zip(names, flags) if f == "check")
    rel = [e["relative_std"] for e in doc["base_parameters"]]
    assert flags[int(np.nanargmin(np.array(rel, float)))] == "good"
    # units, nominal and true values are columns
    for head in ("unit", "nominal (URDF)", "true (simulated)", "rel. std [%]"):
        assert f"<th>{head}</th>" in text
    # an elastic arm is validated on its motor torques, and the figure says so
    assert 'alt="measured vs predicted motor torque"' in text


def test_identification_data_from_either_results_key():
    from robot_identification.report._html import identification_data
    assert identification_data({"data": ["a.csv"]}) == ["a.csv"]
    assert identification_data({"settings": {"data": ["b.csv", "c.csv"]}}) == ["b.csv", "c.csv"]
    assert identification_data({"settings": {}}) == []


def test_drive_gain_rows_carry_units_and_say_which_gains_to_trust():
    """results.yaml ``drive_gains:`` as ``drive-gains --results`` writes it: every row names
    its unit, the identified flag reads yes / no (not 1.0000 / 0.0000), the runs are named."""
    from robot_identification.report._html import _drive_gains_table
    gains = {"given": [10.0, 8.5], "identified": [0.97, 8.63], "identified_std": [0.03, 0.03],
             "well_identified": [False, True], "payload_torque_rms": [1.49, 13.1],
             "method": "Gautier & Briot 2011, payload 2.805 kg at [0, 0, 0] m in tool0, wls",
             "unloaded": ["data/run.csv"], "loaded": ["data/runLoad.csv"]}
    text = _drive_gains_table(gains, ["shoulder_pan_joint", "elbow_joint"])
    rows = re.findall(r"<tr><td>([^<]*)</td>", text)
    assert rows[:4] == ["given (config csv.drive_gains) [N m/A]", "identified [N m/A]",
                        "std of identified [N m/A]", "payload torque RMS [N m]"]
    flags = text.split("well identified")[1]
    assert "<td>yes</td>" in flags and "no: use the given gain" in flags
    assert "1.0000" not in flags and "0.0000" not in flags
    assert "unloaded: run.csv" in text and "loaded: runLoad.csv" in text


def test_report_is_one_self_contained_file_with_interactive_plots(report):
    """report.html opens offline as one file: plotly.js inline, no external script, style
    or image address; the validation signals as a plotly figure (zoomable), the PNGs kept
    for print."""
    page, doc, models = report
    text = page.read_text()
    assert "Plotly.newPlot" in text and 'class="interactive"' in text
    assert not re.search(r"<script[^>]+src=", text)
    markup = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)   # (plotly.js's own
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", markup)  # strings aside)
    assert not re.search(r"<link[^>]+stylesheet", markup)
    assert "@media print{.static{display:block}" in text
    static = text[text.index('<div class="static">'):]
    assert "file1_torque.png" in static and "file1_residual.png" in static
    # every model's curve is in the interactive figure, on its shared time axis
    for label in ("measured", "OLS", "WLS"):
        assert f'"name":"{label}"' in text.replace(": ", ":")


def test_envelope_keeps_every_spike_of_a_long_signal():
    from robot_identification.report._interactive import envelope
    t = np.arange(600_001) * 1e-4                    # 60 s at 10 kHz
    y = np.sin(t)
    spikes = [12_345, 300_000, 599_999]
    y[spikes] = [5.0, -7.0, 3.0]
    tt, yy = envelope(t, y, max_points=4000)
    assert len(tt) <= 4000 and np.all(np.diff(tt) > 0)
    for i in spikes:
        assert t[i] in tt and yy[tt == t[i]][0] == y[i]
    assert yy.max() == 5.0 and yy.min() == -7.0
