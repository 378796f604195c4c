"""Screenshots of the built site with headless Chromium, with the network switched off.

    python docs/screenshots.py [SITE] [OUT]

SITE is the built HTML (default docs/_build/html), OUT the folder for the PNGs (default
docs/screenshots). It shoots the landing page, an API page, two gallery pages and the
mathematics page; look at them to check that the equations are typeset (MathJax from the
site's own _static), the figures are there and the navigation bar is drawn. Chromium is
Debian's package (``apt-get install chromium``). When run as root on Linux the browser
runs in a new network namespace (``unshare -n``), which has no network at all, so a page
that needs a CDN shows it.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: name -> (page, window height): the gallery page is tall enough to reach its figure.
PAGES = {
    "landing": ("index.html", 1100),
    "api": ("api/generated/relucore.train.html", 1100),
    "gallery": ("auto_examples/plot_gap_scaling.html", 2300),
    "flow": ("auto_examples/plot_certified_limit.html", 2300),
    "math": ("math.html", 1100),
}


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("screenshots: no chromium found (apt-get install chromium)")


def shoot(page: Path, png: Path, width: int = 1280, height: int = 1100) -> None:
    cmd = [
        browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
        f"--window-size={width},{height}",
        "--virtual-time-budget=8000",  # let MathJax typeset before the shot
        f"--screenshot={png}",
        page.as_uri(),
    ]
    offline = os.geteuid() == 0 and shutil.which("unshare") is not None
    if offline:
        cmd = ["unshare", "-n", *cmd]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)
    print(f"{png} ({'network off' if offline else 'network not switched off'})")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    here = Path(__file__).resolve().parent
    site = Path(argv[0]) if argv else here / "_build" / "html"
    out = Path(argv[1]) if len(argv) > 1 else here / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    for name, (rel, height) in PAGES.items():
        page = (site / rel).resolve()
        if not page.exists():
            sys.exit(f"screenshots: {page} not found: build the site first")
        shoot(page, out / f"{name}.png", height=height)
    return 0


if __name__ == "__main__":
    sys.exit(main())
