"""How long the explorer's screens take in a real browser on a 100,000-cell run, against
the same screens on a 24-cell run in the same session — printed, never asserted.

    python perf/explorer_pages.py                 # 100,000 cells
    python perf/explorer_pages.py --cells 20000   # quicker

Steps: a large run (N/2 tasks × 2 conditions, no-op provider; perf/serve_cells.py's) and a
small one go into a fresh store; ``python -m benchkit serve`` serves it from a subprocess
on 127.0.0.1; headless Chromium (Debian's, through playwright) opens each screen, and the
time is from the navigation to the screen's content being in the page (the browser
fetching, the server answering, our script drawing). Each screen is opened three times;
the median is printed with its ratio to the small run's (this VM varies by ±30 %).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from serve_cells import _make_run, _serving

CHROMIUM = os.environ.get("BENCHKIT_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]

SCREENS = {
    # name: (hash under the run, selector that says the screen is drawn)
    "run page (first)": ("", "#conditions"),
    "run page (again)": ("", "#conditions"),
    "cells, page 1": ("/cells", "#cell-count"),
    "cells, failing": ("/cells?status=fail&condition=b", "#cell-count"),
    "cells, deep page": ("/cells?offset=40000", "#cell-count"),
    "cells, by score": ("/cells?sort=score&order=desc", "#cell-count"),
    "cell detail": ("/cells?cell=t000003%7Cb%7C0", "#side-by-side"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=100_000)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "benchkit.db"
        started = time.perf_counter()
        large = _make_run(store, args.cells)
        small = _make_run(store, 24)
        print(
            f"python {sys.version.split()[0]}; runs of {args.cells} and 24 cells stored in "
            f"{time.perf_counter() - started:.1f} s"
        )
        with _serving(Path(tmp), store) as url, sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(120_000)
            times: dict[tuple[str, str], list[float]] = {}
            for run in (small, large):
                for name, (suffix, selector) in SCREENS.items():
                    repeats = 1 if name.endswith("(first)") else 3
                    for _ in range(repeats):
                        page.goto("about:blank")
                        began = time.perf_counter()
                        page.goto(f"{url}/#/run/{run}{suffix}")
                        page.wait_for_selector(selector)
                        page.wait_for_selector("main[data-ready]")
                        times.setdefault((run, name), []).append(
                            (time.perf_counter() - began) * 1000
                        )
            browser.close()
    print(f"{'screen':20} {'24 cells ms':>12} {f'{args.cells} cells ms':>16} {'ratio':>7}")
    for name in SCREENS:
        a = statistics.median(times[(small, name)])
        b = statistics.median(times[(large, name)])
        print(f"{name:20} {a:12.0f} {b:16.0f} {b / a:7.1f}")


if __name__ == "__main__":
    main()
