"""The notebook API of a result: a one-line repr, figures shown once, no warning on import."""
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def result():
    from robot_identification.model import load_robot
    from robot_identification.pipeline import identify
    from robot_identification.simulation import simulate
    model = load_robot("zollo_planar")
    return identify(model, simulate(model, seed=0, duration=3.0))


def test_plain_repr_is_one_short_line(result):
    text = repr(result)
    assert "\n" not in text and len(text) < 200, text
    assert text.startswith("IdentificationResult(robot='zollo_planar', ")
    assert f"{len(result.names)} base parameters" in text and "NME" in text


def test_figures_are_not_registered_with_pyplot_and_render_once(result):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    before = plt.get_fignums()
    figs = result.plot()
    assert plt.get_fignums() == before          # the inline backend would show them again
    html = figs._repr_html_()
    assert html.count("<img src='data:image/png;base64,") == len(figs) >= 2
    assert repr(figs) == f"<{len(figs)} figure(s) of an identification result>"


def test_import_in_a_kernel_like_session_warns_nothing():
    """tqdm.auto warned (TqdmExperimentalWarning) in Jupyter kernels without ipywidgets; the
    package imports tqdm.std only. Checked in a fresh interpreter with warnings as errors."""
    code = ("import warnings; warnings.simplefilter('error');"
            "import robot_identification.progress as p, robot_identification.report;"
            "p.enable(True); b = p.bar(total=1); b.close();"
            "import sys; assert 'tqdm.autonotebook' not in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
