"""The harness tests' ``browser`` fixture: a page rendered by a real headless browser (Chromium from the
system's packages), what it shows (the DOM after rendering) and a screenshot. A test that asks for it
skips, saying why, where no chromium is on PATH."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def browser(tmp_path):
    """``browser(page) -> (dom, screenshot)``, rendered by headless Chromium (skips without one)."""
    if CHROMIUM is None:
        pytest.skip("no chromium or chromium-browser on PATH (Debian: apt-get install chromium); the page is "
                    "not rendered in a browser")
    return lambda page: render(page, tmp_path)


def render(page: Path, scratch: Path) -> tuple[str, np.ndarray]:
    """``page`` opened from disk by headless Chromium: the rendered DOM, and a 1280 x 2000 screenshot
    as an array (height x width x channels). One start of the browser does both (Debian's Chromium
    dumps the DOM and writes the screenshot in one go); a browser that wrote no screenshot so is
    started again for it."""
    from matplotlib import image

    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             f"--user-data-dir={scratch / 'chromium-profile'}", "--window-size=1280,2000"]
    shot = scratch / "screenshot.png"
    shot.unlink(missing_ok=True)
    dom = subprocess.run(flags + ["--dump-dom", f"--screenshot={shot}", page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=180, check=True).stdout
    if not shot.exists():
        subprocess.run(flags + [f"--screenshot={shot}", page.resolve().as_uri()], capture_output=True, timeout=180,
                       check=True)
    return dom, image.imread(shot)
