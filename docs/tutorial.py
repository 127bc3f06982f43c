"""Tutorial: identify a robot from Python (a notebook works the same, cell by cell).

Run it from the repository root (CI runs it: test/test_tutorial.py):

    .venv/bin/python docs/tutorial.py [OUTPUT_DIR]

It simulates the Zollo planar elastic-joint arm, identifies its 14 base parameters, shows
them as a table (pandas, when installed), draws the result, saves results.yaml and writes
the HTML report. In Jupyter, a result as the last expression of a cell renders as an HTML
table with trust colours (``_repr_html_``).
"""
import sys
import tempfile
from pathlib import Path

from robot_identification.model import load_robot
from robot_identification.identification import identify
from robot_identification.simulation import simulate

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="tutorial_"))
out.mkdir(parents=True, exist_ok=True)

# 1. A robot: a shipped name, or load_robot(config="my_arm.yaml") for a config written by
#    `robot-identification init --urdf my_arm.urdf --output my_arm.yaml`.
model = load_robot("zollo_planar")
print(f"{model.config.name}: {model.n} joints, {len(model.parameter_names)} standard "
      f"parameters")

# 2. Data: the robot's excitation trajectory (9 s) on the built-in simulator (true parameters
#    known); a shorter duration would stop the arm mid-motion (simulate warns). A recording
#    instead: robot_identification.data.load_dataset("run.csv" | "bag_dir" | "run.npz",
#    model=model).
data = simulate(model, seed=0)
held_out = simulate(model, seed=1, snr_db=80)

# 3. Identify: filter, differentiate, base parameters, least squares, diagnostics.
result = identify(model, data)
for d in result.diagnostics:
    print(d)

# 4. Look at it: a DataFrame (pandas optional), figures, HTML.
try:
    table = result.to_dataframe()
    print(table[["unit", "estimate", "std", "relative_std", "true", "trust"]].to_string())
except ImportError:                      # no pandas: the same rows as dicts
    from robot_identification.report import records
    for row in records(result):
        print(row["name"], row["estimate"], row["trust"])
figures = result.plot()
for i, fig in enumerate(figures):
    fig.savefig(out / f"figure{i + 1}.png", dpi=80)
(out / "result.html").write_text(result._repr_html_())

# 5. Save results.yaml and write the HTML report, validated on the held-out run.
from robot_identification.report import write_report  # noqa: E402
from robot_identification.validation import load_estimates, validate  # noqa: E402

path = result.save(out / "results.yaml", model)
base, models, doc = load_estimates(path, model)
files = validate(model, base, models, [held_out], labels=["held_out"], keep_signals=True)
report = write_report(out / "report", model, doc, files, base=base,
                      excitation_data=[("simulated run", data)])
print(f"wrote {path}, {len(figures)} figures and {report}")
