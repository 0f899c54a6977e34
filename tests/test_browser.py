"""The HTML reports render in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

These tests look at what a reader sees, not at strings in the HTML: tables are laid out and visible,
verdict badges are coloured, links navigate, embedded plots decode, the no-code variant hides code,
and nothing outside file:// and data: is needed (every http(s) request is aborted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does it in CI)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing (pip install -e '.[test]')")

import nbformat  # noqa: E402

from yolo26kit import findings, report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The nbconvert lab template loads these from a CDN; the pages must render without them.
KNOWN_CDN_SCRIPTS = ("https://cdnjs.cloudflare.com/ajax/libs/",)
TRANSPARENT = {"rgba(0, 0, 0, 0)", "transparent"}


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Iterator[Any]:
    """One Chromium with a fresh profile for the module; every http(s) request is aborted (offline)."""
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        ctx.route(re.compile(r"^https?://"), lambda route: route.abort())
        yield ctx
        ctx.close()


class Requests:
    """Every request a page made (url, resource type) and which of them failed."""

    def __init__(self, page: Any) -> None:
        self.made: list[tuple[str, str]] = []
        self.failed: list[str] = []
        page.on("request", lambda r: self.made.append((r.url, r.resource_type)))
        page.on("requestfailed", lambda r: self.failed.append(r.url))

    def external(self) -> list[tuple[str, str]]:
        """The requests that left the machine (neither file:// nor data:)."""
        return [(u, t) for u, t in self.made if not u.startswith(("file://", "data:"))]


@pytest.fixture
def page(context) -> Iterator[Any]:
    """A new tab with its requests recorded on page.requests."""
    tab = context.new_page()
    tab.requests = Requests(tab)
    yield tab
    tab.close()


def _open(page: Any, path: Path) -> None:
    page.goto(path.resolve().as_uri(), wait_until="load")


def _background(locator: Any) -> str:
    return locator.evaluate("el => getComputedStyle(el).backgroundColor")


def _assert_badges_render(badges: Any) -> dict[str, str]:
    """Each verdict badge is visible, has a size and a coloured background; returns verdict -> colour."""
    colours = {}
    assert badges.count() > 0, "no verdict badge on the page"
    for i in range(badges.count()):
        badge = badges.nth(i)
        assert badge.is_visible(), f"badge {i} is not visible"
        box = badge.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        colour = _background(badge)
        assert colour not in TRANSPARENT, f"badge {badge.inner_text()!r} has no background colour"
        colours[badge.inner_text().strip()] = colour
    return colours


# ---------------------------------------------------------------- reports/index.html and a run's page

def _fake_run(root: Path, name: str, device_type: str, verdicts: dict[str, str]) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True)
    found = findings.Findings("index_dtype", {"imgsz": 320}, run_id=name)
    found.environment = {**found.environment, "device_type": device_type}
    for claim_id, verdict in verdicts.items():
        found.verdict(claim_id, verdict, f"{verdict} on {device_type}")
    found.table("status", [{"variant": "legacy", "path": "eager", "status": "ok"}])
    found.save(run_dir / "index_dtype.results.json")
    report.render_run(run_dir, notebooks=False)
    return run_dir


@pytest.fixture
def two_runs(tmp_path) -> Path:
    """reports/-style folder: a cpu and a cuda run with different verdicts, each page and the index rendered."""
    _fake_run(tmp_path, "20260101T000000Z-a-cpu", "cpu",
              {"index_dtype.gather_equivalent": "confirmed", "index_dtype.et_cuda_float_index": "needs_cuda"})
    _fake_run(tmp_path, "20260102T000000Z-b-cuda", "cuda",
              {"index_dtype.gather_equivalent": "refuted", "index_dtype.et_cuda_float_index": "partly"})
    report.render_index(tmp_path)
    return tmp_path


def test_index_claims_table_renders_one_column_per_run(page, two_runs):
    _open(page, two_runs / "index.html")
    claims = page.locator("table#claims")
    assert claims.is_visible() and claims.bounding_box()["height"] > 0
    header = claims.locator("tr").first.locator("th")
    assert header.count() == 2 + 2  # claim, seed says, then one column per run
    assert "20260102T000000Z-b-cuda" in header.nth(2).inner_text()  # newest first
    assert "20260101T000000Z-a-cpu" in header.nth(3).inner_text()
    rows = claims.locator("tr")
    assert rows.count() - 1 == len(findings.seed_claims())
    assert all(rows.nth(i).locator("td").count() == 4 for i in range(1, rows.count()))
    colours = _assert_badges_render(claims.locator(".verdict"))
    assert set(colours) == {"confirmed", "refuted", "needs_cuda", "partly"}
    assert colours["confirmed"] != colours["refuted"]  # the colour comes from the verdict's class
    assert page.locator("table#runs").is_visible()
    assert page.requests.external() == []


def test_index_link_opens_the_run_page_with_its_verdicts(page, two_runs):
    _open(page, two_runs / "index.html")
    page.locator("table#runs a", has_text="20260101T000000Z-a-cpu").click()
    page.wait_for_url("**/20260101T000000Z-a-cpu/index.html")
    assert page.url.startswith("file://")
    verdicts = page.locator("table#verdicts")
    assert verdicts.is_visible()
    assert verdicts.locator("tr").count() == 1 + 2  # header and the run's two claims
    assert verdicts.get_by_text("index_dtype.gather_equivalent").is_visible()
    assert set(_assert_badges_render(verdicts.locator(".verdict"))) == {"confirmed", "needs_cuda"}
    status = page.locator("details[open] table.data")  # the status table is open by default
    assert status.is_visible() and "legacy" in status.inner_text()
    assert page.requests.external() == []


# ---------------------------------------------------------------- an executed notebook's HTML

PLOT_CODE = ("%matplotlib inline\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(3, 2))\n"
             "ax.plot([0, 1, 2], [0, 1, 4])\nplt.show()")
TABLE_CODE = "import pandas as pd\npd.DataFrame({'variant': ['legacy', 'gather'], 'ms': [1.5, 2.25]})"


@pytest.fixture(scope="module")
def notebook_pages(tmp_path_factory) -> dict[str, Path]:
    """A two-cell notebook (plot, table) executed by papermill and rendered by report.render_notebook."""
    import papermill

    folder = tmp_path_factory.mktemp("notebook")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Tiny report\nA plot and a table, with math $x^2$."),
        nbformat.v4.new_code_cell(PLOT_CODE),
        nbformat.v4.new_code_cell(TABLE_CODE),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    nbformat.write(nb, folder / "source.ipynb")
    papermill.execute_notebook(folder / "source.ipynb", folder / "tiny.ipynb", kernel_name="python3",
                               progress_bar=False, cwd=folder)
    full, nocode = report.render_notebook(folder / "tiny.ipynb")
    return {"full": full, "nocode": nocode}


def _assert_outputs_render(page: Any) -> None:
    """The plot decodes from its data URI and the DataFrame is laid out as a visible table."""
    img = page.locator(".jp-RenderedImage img")
    assert img.count() == 1 and img.is_visible()
    assert img.get_attribute("src").startswith("data:image/png;base64,")
    width = img.evaluate("el => el.decode().then(() => el.naturalWidth, () => 0)")  # 0: did not decode
    assert width > 0 and img.evaluate("el => el.complete && el.naturalHeight") > 0
    table = page.locator(".jp-OutputArea-output table.dataframe")
    assert table.is_visible() and table.bounding_box()["height"] > 0
    cells = table.locator("tbody td")
    assert [cells.nth(i).inner_text() for i in range(cells.count())] == ["legacy", "1.50", "gather", "2.25"]
    # Nothing the content needs came from outside: every image is inline or local.
    sources = page.locator("img").evaluate_all("els => els.map(e => e.currentSrc || e.src)")
    assert sources and all(s.startswith(("data:", "file://")) for s in sources)


def _assert_only_cdn_scripts(page: Any) -> list[str]:
    """Requests beyond file:// and data: are CDN scripts only (aborted here); returns their URLs."""
    external = page.requests.external()
    assert all(kind == "script" and url.startswith(KNOWN_CDN_SCRIPTS) for url, kind in external), external
    assert all(url in page.requests.failed for url, _ in external)  # aborted, and the page rendered anyway
    return [url for url, _ in external]


@pytest.mark.notebook
def test_notebook_html_renders_plot_table_and_code(page, notebook_pages):
    _open(page, notebook_pages["full"])
    _assert_outputs_render(page)
    editors = page.locator(".jp-CodeCell .jp-InputArea-editor")
    assert editors.count() == 2 and editors.first.is_visible()
    assert "ax.plot" in editors.first.inner_text()
    cdn = _assert_only_cdn_scripts(page)
    print("CDN scripts the notebook page asked for (aborted):", cdn)


@pytest.mark.notebook
def test_notebook_nocode_html_hides_the_code(page, notebook_pages):
    _open(page, notebook_pages["nocode"])
    _assert_outputs_render(page)
    assert page.locator(".jp-CodeCell").count() == 2  # the cells are there, with outputs only
    inputs = page.locator(".jp-CodeCell .jp-InputArea, .jp-CodeCell .jp-InputArea-editor, .jp-InputPrompt")
    assert not any(inputs.nth(i).is_visible() for i in range(inputs.count()))
    body = page.locator("body").inner_text()
    assert "ax.plot" not in body and "pd.DataFrame" not in body
    assert page.get_by_role("heading", name="Tiny report").is_visible()  # markdown stays
    _assert_only_cdn_scripts(page)


# ---------------------------------------------------------------- the committed reports/index.html

def test_committed_reports_index_renders(page):
    root = REPO / "reports"
    runs = report.find_runs(root) if root.is_dir() else []
    if not runs or not (root / "index.html").exists():
        pytest.skip("reports/ holds no committed run with an index.html yet")
    _open(page, root / "index.html")
    claims = page.locator("table#claims")
    assert claims.is_visible()
    assert claims.locator("tr").first.locator("th").count() >= 3  # at least one run column
    _assert_badges_render(claims.locator(".verdict"))
    assert page.locator("table#runs tr").count() >= 2
    for run_dir in runs:  # each run page that was rendered shows its verdict table
        if (run_dir / "index.html").exists():
            _open(page, run_dir / "index.html")
            assert page.locator("table#verdicts").is_visible(), run_dir.name
            _assert_badges_render(page.locator("table#verdicts .verdict"))
    assert page.requests.external() == []
