"""Write the answer grid of a reports index as a PNG: `make grid` makes docs/grid.png from reports/index.html.

The README shows the grid as an image; this makes it from the committed pages, never by hand. It opens the page
offline in headless Chromium (Debian's /usr/bin/chromium driven by Playwright, as tests/test_browser.py does) at
1400 × 900 px and screenshots the grid's table.

    python tools/grid_image.py [reports/index.html] [docs/grid.png]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
GRID = "section#grid table.grid"


def grid_image(index: Path, out: Path) -> int:
    """Screenshot the grid of `index` into `out`; returns the PNG's size in bytes."""
    from playwright.sync_api import sync_playwright  # the `test` extra

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.route(re.compile(r"^https?://"), lambda route: route.abort())  # the pages stand alone
            page.goto(index.resolve().as_uri())
            table = page.locator(GRID)
            if table.count() != 1:
                raise SystemExit(f"{index}: no answer grid ({GRID}) on the page")
            out.parent.mkdir(parents=True, exist_ok=True)
            table.screenshot(path=str(out))
        finally:
            browser.close()
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    """`python tools/grid_image.py [INDEX] [PNG]`."""
    parser = argparse.ArgumentParser(prog="tools/grid_image.py", description=__doc__.splitlines()[0])
    parser.add_argument("index", nargs="?", default=str(REPO / "reports" / "index.html"))
    parser.add_argument("out", nargs="?", default=str(REPO / "docs" / "grid.png"))
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: apt-get install chromium", file=sys.stderr)
        return 2
    size = grid_image(Path(args.index), Path(args.out))
    print(f"{args.out}: the grid of {args.index} ({size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
