"""Screenshots of the HTML report (headless Chromium, 1400 px wide) for docs/.

Writes docs/report_<robot>_top.png (diagnostics and the parameter table),
docs/report_<robot>_interactive.png (the interactive plotly figure of the first held-out file)
and docs/report_<robot>_torque.png (the static figures that are printed: measured vs
predicted torques and residuals) for ur10e (the
public UR10e recordings in ../shared/data/ur10e) and zollo_planar (simulated), as small
palette PNGs. Needs the Debian ``chromium`` package.

    python scripts/report_screenshots.py [--shared ../shared/data] [--work DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--hide-scrollbars"]
WIDTH = 1400


def cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "robot_identification.cli", *args, "--quiet"],
                   cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def screenshot(html, png, height, profile):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium not found: apt-get install -y chromium")
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                    "--virtual-time-budget=10000",          # plotly draws after the load
                    f"--window-size={WIDTH},{height}", f"--screenshot={png}",
                    html.resolve().as_uri()], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def find_image(page, figure):
    """Top row of ``figure`` (a PNG shown at its natural size) in the page screenshot."""
    fig = np.asarray(figure.convert("L"), float)
    shot = np.asarray(page.convert("L"), float)
    top = 120                              # a band of plotted data: distinct per figure
    band = fig[top: top + 120, ::4]
    best, where = np.inf, 0
    for x0 in range(0, min(100, shot.shape[1] - fig.shape[1] + 1)):
        strip = shot[:, x0: x0 + fig.shape[1]][:, ::4]
        for y in range(0, shot.shape[0] - band.shape[0], 2):
            if abs(strip[y, :].mean() - band[0].mean()) > 3:
                continue
            err = np.abs(strip[y: y + band.shape[0]] - band).mean()
            if err < best:
                best, where = err, y - top
        if best < 2:
            break
    return where


def save_small(image, path, colours=128):
    image.convert("RGB").quantize(colours).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


def shoot(robot, report_dir, docs, profile):
    import re

    from PIL import Image
    page_html = (report_dir / "report.html").read_text()
    # the interactive figure of the first validation file at the top of a page of its own
    head, body = page_html.split("<body>", 1)
    start = body.index('<div class="interactive">')
    end = body.index('<div class="static">', start)
    (report_dir / "interactive.html").write_text(head + "<body>" + body[start:end]
                                                 + "</body></html>")
    shot = report_dir / "interactive.png"
    screenshot(report_dir / "interactive.html", shot, 1200, profile)
    save_small(Image.open(shot).crop((0, 0, WIDTH, 1100)),
               docs / f"report_{robot}_interactive.png")
    # the static figures as printed, for the page screenshots below
    html = report_dir / "static.html"
    html.write_text(re.sub(r"\.static\{display:none\}", ".interactive{display:none}",
                           page_html))
    full = report_dir / "full.png"
    screenshot(html, full, 9000, profile)
    page = Image.open(full)
    save_small(page.crop((0, 0, WIDTH, 1500)), docs / f"report_{robot}_top.png")
    torque = Image.open(report_dir / "file1_torque.png")
    y = find_image(page, torque)
    residual = Image.open(report_dir / "file1_residual.png")
    height = min(torque.height + residual.height + 40, page.height - y)
    save_small(page.crop((0, max(y - 50, 0), WIDTH, y + height)),
               docs / f"report_{robot}_torque.png")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--work", help="working directory (default: a temporary one)")
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="ri_screens_"))
    for sub in ("ur10e", "zollo"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    docs = REPO / "docs"
    profile = work / "chromium-profile"
    # relative data paths, so that no machine path shows in the screenshots
    link = work / "data"
    if not link.exists():
        link.symlink_to(Path(args.shared).resolve())
    d = "data/ur10e"
    cli("identify", "--robot", "ur10e", "--output", "ur10e/results.yaml", "--data",
        f"{d}/identification/ur-20_02_19_14harm50sec.csv",
        f"{d}/identification/ur-20_02_12-50sec_12harm.csv", cwd=work)
    cli("report", "--robot", "ur10e", "--results", "ur10e/results.yaml", "--output",
        "ur10e/report", "--data", f"{d}/validation/ur-20_02_10-30sec_12harm.csv",
        f"{d}/validation/ur-20_01_17-p1.csv", cwd=work)
    shoot("ur10e", work / "ur10e" / "report", docs, profile)
    cli("simulate", "--robot", "zollo_planar", "--output", "zollo/run.npz", cwd=work)
    cli("simulate", "--robot", "zollo_planar", "--seed", "1", "--snr", "80", "--output",
        "zollo/held_out.npz", cwd=work)
    cli("identify", "--robot", "zollo_planar", "--data", "zollo/run.npz", "--output",
        "zollo/results.yaml", "--physical", cwd=work)
    cli("report", "--robot", "zollo_planar", "--results", "zollo/results.yaml", "--output",
        "zollo/report", "--data", "zollo/held_out.npz", cwd=work)
    shoot("zollo_planar", work / "zollo" / "report", docs, profile)


if __name__ == "__main__":
    main()
