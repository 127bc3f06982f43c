"""``robot-identification report``: HTML report with torque plots, residuals and tables."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from robot_identification.commands._common import (
    add_derivatives_argument, add_effort_lag_argument, add_robot_arguments,
    check_output_argument, input_paths, refuse_existing,
    load_datasets, print_result, robot_from_args, write_unless_errors)

NAME = "report"
HELP = ("write an HTML report: diagnostics, base parameters with unit, nominal, every "
        "estimate, std and a trust flag; excitation spectrum; measured vs predicted torque "
        "and residuals on held-out data; physical bodies beside the URDF (docs/report.md)")
ORDER = 40


def add_arguments(p):
    add_robot_arguments(p)
    p.add_argument("--results", required=True, help="results.yaml written by identify")
    p.add_argument("--data", nargs="*", default=[], help="held-out dataset(s) to plot")
    p.add_argument("--output", default="report", help="output directory (default report/)")
    p.add_argument("--urdf-out", help="also export the identified URDF to this file")
    p.add_argument("--rollout", action="store_true",
                   help="add the MuJoCo rollout of the --data (validate --rollout): tracking "
                        "errors and position overlays of the nominal and the physically "
                        "consistent model")
    p.add_argument("--window", type=float,
                   help="rollout window [s] (default 2 closed loop, 0.5 open loop)")
    p.add_argument("--closed-loop", choices=("auto", "on", "off"), default="auto",
                   help="rollout: the recording's PD loop (auto: where its metadata allows) "
                        "or the torques open loop")
    add_effort_lag_argument(p)
    add_derivatives_argument(p)
    p.add_argument("--force", action="store_true",
                   help="replace an existing --output, and write the report even when a "
                        "data check of severity error says the --data are wrong (positions "
                        "in degrees, a torque sign; the exit code stays 3)")


def run(args):
    from robot_identification.data import load_dataset  # start-up: commands/__init__.py
    from robot_identification.report import identification_data, write_report  # start-up
    from robot_identification.validation import (  # start-up: commands/__init__.py
        check_held_out, cutoff_notes, load_estimates, positions_cutoff_of, validate)
    from robot_identification.identification import settings_from_results  # start-up
    model = robot_from_args(args)
    refuse_existing(args.output, "--output", args, folder_marker="report.html")
    if args.urdf_out:
        check_output_argument(args, model, "urdf-out")
    base, models, doc = load_estimates(args.results, model)
    datasets = load_datasets(args.data, model, args.effort_lag,
                             measured_velocities=not args.numerical_derivatives)
    # errors in the held-out data (degrees, a torque sign): nothing written unless --force
    checks = SimpleNamespace(diagnostics=check_held_out(model, datasets, list(args.data)))
    print_result(checks, SimpleNamespace(quiet=True), "")
    files = validate(model, base, models, datasets, settings_from_results(model, doc),
                     labels=list(args.data), keep_signals=True,
                     cutoff_without_velocities=positions_cutoff_of(doc)) if datasets else []
    checks.diagnostics += cutoff_notes(files, doc)
    excitation = []
    for p in identification_data(doc):       # the identification recordings, when still there
        path = Path(p) if Path(p).exists() else Path(args.results).parent / p
        if path.exists():
            excitation.append((p, load_dataset(path, model=model)))
    if not excitation:                       # else the spectrum of the held-out data
        excitation = list(zip(args.data, datasets))
    roll = ()
    if args.rollout and datasets:
        from robot_identification.commands.validate import rollouts  # start-up
        roll = rollouts(args, model, datasets, keep_signals=True)
    write_unless_errors(checks, args, lambda: write_report(
        args.output, model, doc, files, inputs=input_paths(args, model), base=base,
        excitation_data=excitation, rollouts=roll))
    if args.urdf_out:
        from robot_identification.commands.export_urdf import export_from_results  # start-up
        out = export_from_results(model, args.results, args.urdf_out, input_paths(args, model))
        print(f"wrote {out.resolve()}")
    return 0
