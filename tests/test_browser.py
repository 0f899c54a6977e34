"""The HTML reports render in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

These tests look at what a reader sees, not at strings in the HTML: tables are laid out and visible,
verdict badges are coloured, links navigate, embedded plots decode, the no-code variant hides code,
and nothing outside file:// and data: is needed (every http(s) request is aborted).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does it in CI)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing (pip install -e '.[test]')")

import nbformat  # noqa: E402

from yolo26kit import catalog, findings  # noqa: E402
from yolo26kit.report import grid, pages as report, single_file

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TRANSPARENT = {"rgba(0, 0, 0, 0)", "transparent"}
# Screenshots are kept only where YOLO26KIT_SCREENSHOTS names a folder: CI's disk can be nearly full after the stack
# installs, and a page's pixels are checked from the bytes alone.
SCREENSHOTS = os.environ.get("YOLO26KIT_SCREENSHOTS")


def _shot(target: Any, name: str, **options: Any) -> int:
    """Screenshot `target` (a page or a locator); returns its PNG size, and keeps the file under $YOLO26KIT_SCREENSHOTS."""
    png = target.screenshot(**options)
    if SCREENSHOTS:
        keep = Path(SCREENSHOTS) / (name.replace("/", "__") + ".png")
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_bytes(png)
        print("screenshot:", keep)
    return len(png)


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Iterator[Any]:
    """One Chromium with a fresh profile for the module; every http(s) request is aborted (offline)."""
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 900})
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

BOOK = {
    "alpha": [
        {"id": "alpha.bites", "source": "s1.txt", "claim": "loading the package crashes", "question": "bites"},
        {"id": "alpha.fix", "source": "s1.txt", "claim": "preloading libstdc++ fixes it", "question": "fix"},
        {"id": "alpha.cost", "source": "s1.txt", "claim": "the fix costs nothing", "question": "cost"},
        {"id": "alpha.tablet", "source": "s1.txt", "claim": "it loads on a tablet", "untestable": "needs a tablet"},
    ],
    "beta": [
        {"id": "beta.equal", "source": "s2.txt", "claim": "the rewrite is exact", "question": "fix"},
        {"id": "beta.phone", "source": "s2.txt", "claim": "it runs on a phone", "untestable": "needs an Android phone"},
    ],
}


def _claim(cid: str, verdict: str, evidence: str) -> dict[str, Any]:
    return {"id": cid, "source": "s1.txt", "claim": f"words of {cid}", "verdict": verdict, "evidence": evidence,
            "data": {"measured_ms": 4.25, "runs": 30}}


def _fake_run(root: Path, name: str, device_type: str, claims: dict[str, list[dict[str, Any]]],
              meta: dict[str, Any] | None = None) -> Path:
    """A run folder as the runner writes it (results.json per investigation, run.json), its page rendered."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    environment = {"device_type": device_type, "device": "Test device", "torch": "2.11.0", "kit": "abc1234"}
    for inv, items in claims.items():
        (run_dir / f"{inv}.results.json").write_text(json.dumps({
            "schema": findings.SCHEMA, "investigation": inv, "run_id": name, "seconds": 10.0,
            "environment": environment, "parameters": {"imgsz": 320}, "claims": items, "missing_claims": [],
            "time_split": {"compile": 6.0, "measure": 3.0, "other": 1.0, "wall": 10.0},
            "tables": {"status": [{"variant": "legacy", "path": "eager", "status": "ok"}]}}))
    (run_dir / "run.json").write_text(json.dumps({"run_id": name, "environment": environment, "state": "complete",
                                                  "wall_seconds": 42.0, "compile_cache": "cold", **(meta or {})}))
    report.render_run(run_dir, notebooks=False)
    return run_dir


@pytest.fixture
def two_runs(tmp_path, monkeypatch) -> Path:
    """reports/-style folder with a small ledger: an older and a newer cpu run and a cuda run, pages and index."""
    monkeypatch.setattr(report, "ledger", lambda: BOOK)
    _fake_run(tmp_path, "20260101T000000Z-a-cpu", "cpu", {"alpha": [
        _claim("alpha.bites", "needs_cuda", "no CUDA device in this run; the CPU package loads."),
        _claim("alpha.cost", "confirmed", "the preload adds 0.0 ms per call. Details.")]})
    _fake_run(tmp_path, "20260102T000000Z-b-cuda", "cuda", {"alpha": [
        _claim("alpha.bites", "confirmed", "3 of 3 loads crash with SIGSEGV. In std::locale."),
        _claim("alpha.fix", "confirmed", "with the preload 3 of 3 loads run and match eager. Details.")]},
        meta={"compile_cache": "warm"})
    _fake_run(tmp_path, "20260103T000000Z-c-cpu", "cpu", {"alpha": [
        _claim("alpha.bites", "needs_cuda", "no CUDA device in this run; the CPU package loads."),
        _claim("alpha.cost", "refuted", "the preload adds 7.5 ms per call. Details.")],
        "beta": [_claim("beta.equal", "partly", "199/200 cases identical. One differs.")]})
    report.render_index(tmp_path)
    return tmp_path


def _assert_links_reach_their_rows(page: Any, links: Any) -> set[str]:
    """Every link points at a #claim-<id> row of its page; returns the claim ids."""
    ids = set()
    for i in range(links.count()):
        href = links.nth(i).get_attribute("href")
        assert "#claim-" in href, href
        ids.add(href.split("#claim-", 1)[1])
    return ids


def test_index_opens_with_answer_blocks_linked_to_their_claims(page, two_runs):
    _open(page, two_runs / "index.html")
    answers = page.locator("section#answers")
    assert answers.is_visible()
    first_h2 = page.locator("h2").first
    assert first_h2.inner_text() == "Answers"  # the answers come before every table
    groups = answers.locator(".answer-group")
    assert [groups.nth(i).get_attribute("data-investigation") for i in range(groups.count())] == ["alpha", "beta"]
    alpha = answers.locator(".answer-group[data-investigation=alpha] .block")
    assert [alpha.nth(i).get_attribute("data-device") for i in range(alpha.count())] == ["cuda", "cpu"]
    cuda_bites = alpha.nth(0).locator(".answer[data-question=bites]")
    assert cuda_bites.is_visible()
    assert cuda_bites.locator(".headline").inner_text() == "yes"
    assert "3 of 3 loads crash with SIGSEGV." in cuda_bites.inner_text()
    cpu_cost = alpha.nth(1).locator(".answer[data-question=cost]")  # the newest cpu run, not the older one
    assert "7.5 ms" in cpu_cost.inner_text() and cpu_cost.locator(".headline").inner_text() == "not as the seed says"
    assert _background(cpu_cost.locator(".headline")) != _background(cuda_bites.locator(".headline"))
    run_link = alpha.nth(1).locator(".run-link")  # a person's name for the run; its id in the link and tooltip
    assert "20260103T000000Z-c-cpu" in run_link.get_attribute("href") and "3 Jan 2026" in run_link.inner_text()
    links = answers.locator("a.claim-link")
    assert _assert_links_reach_their_rows(page, links) == {"alpha.bites", "alpha.fix", "alpha.cost", "beta.equal"}
    for i in range(links.count()):
        target = links.nth(i).get_attribute("href").split("#", 1)[1]
        assert page.locator(f"tr[id='{target}']").count() == 1, target
    cuda_bites.locator("a.claim-link", has_text="alpha.bites").click()
    assert page.url.endswith("#claim-alpha.bites")
    row = page.locator("tr[id='claim-alpha.bites']")
    assert row.is_visible() and row.evaluate("el => el.matches(':target')")
    assert row.evaluate("el => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }")
    page.evaluate("window.scrollTo(0, 0)")
    assert _shot(page, "index", full_page=True) > 10_000
    assert page.requests.external() == []


def test_index_compares_runs_and_marks_changes(page, two_runs):
    _open(page, two_runs / "index.html")
    claims = page.locator("table#claims")
    assert claims.is_visible() and claims.bounding_box()["height"] > 0
    header = claims.locator("tr").first.locator("th")
    assert header.count() == 2 + 3  # claim, seed says, then one column per run, newest first
    assert [n in header.nth(i).inner_text() for i, n in enumerate(
        ["20260103T000000Z-c-cpu", "20260102T000000Z-b-cuda", "20260101T000000Z-a-cpu"], start=2)] == [True] * 3
    cost = page.locator("tr[id='claim-alpha.cost']")
    change = cost.locator(".change")
    assert change.count() == 1 and change.is_visible() and change.inner_text() == "changed, was confirmed"
    assert page.locator("table#claims .change:not(.new)").count() == 1  # bites stayed needs_cuda; one cuda run
    new = page.locator("table#claims .change.new")  # beta.equal: the older cpu run did not run beta
    assert new.count() == 1 and page.locator("tr[id='claim-beta.equal'] .change.new").is_visible()
    fix = page.locator("tr[id='claim-alpha.fix']").locator("td.run")
    assert [fix.nth(i).locator(".verdict").count() for i in range(3)] == [0, 1, 0]  # not reached: a dash
    phone = page.locator("tr[id='claim-beta.phone']")
    assert phone.locator(".verdict.untestable").is_visible()
    reason = phone.locator(".reason")
    assert not reason.is_visible()
    phone.locator("summary").click()
    assert reason.is_visible() and reason.inner_text() == "needs an Android phone"
    colours = _assert_badges_render(claims.locator(".verdict"))
    assert colours["confirmed"] != colours["refuted"]  # the colour comes from the verdict's class
    runs = page.locator("table#runs")
    env_cell = runs.locator("tr").nth(1).locator("details.environment")
    env_table = env_cell.locator("table.env")
    assert not env_table.is_visible()
    env_cell.locator("summary").click()  # the environment, one click away
    assert env_table.is_visible() and "abc1234" in env_table.inner_text()
    assert runs.locator(".cache.warm").is_visible() and runs.locator(".cache.cold").count() == 2
    assert "judged 3 of 4" in runs.locator("tr").nth(1).inner_text()
    assert page.requests.external() == []


def test_index_link_opens_the_run_page_with_answers_and_evidence(page, two_runs):
    _open(page, two_runs / "index.html")
    page.locator("table#runs a", has_text="20260102T000000Z-b-cuda").click()
    page.wait_for_url("**/20260102T000000Z-b-cuda/index.html")
    assert page.url.startswith("file://")
    assert page.locator(".cache.warm").is_visible() and "compile cache: warm" in page.locator("#run-facts").inner_text()
    block = page.locator("section#answers .block[data-investigation=alpha]")
    assert block.is_visible()
    assert block.locator(".answer[data-question=fix] .headline").inner_text() == "holds"
    assert block.locator(".answer[data-question=cost] .headline").inner_text() == "not reached in this run"
    assert _assert_links_reach_their_rows(page, block.locator("a.claim-link")) == {"alpha.bites", "alpha.fix",
                                                                                   "alpha.cost"}
    verdicts = page.locator("table#verdicts")
    assert verdicts.locator("tr").count() == 1 + 2  # header and the run's two claims
    assert set(_assert_badges_render(verdicts.locator(".verdict"))) == {"confirmed"}
    block.locator("a.claim-link.deciding", has_text="alpha.fix").click()
    row = page.locator("tr[id='claim-alpha.fix']")
    assert row.evaluate("el => el.matches(':target')")
    assert "with the preload 3 of 3 loads run and match eager." in row.locator("td.summary").inner_text()
    assert "preloading libstdc++ fixes it" not in row.inner_text()  # the run's words come from results.json
    data = row.locator("details.evidence pre")
    assert not data.is_visible()
    row.locator("details.evidence summary").click()  # the whole evidence and data, one click away
    assert data.is_visible() and '"measured_ms": 4.25' in data.inner_text()
    coverage = page.locator("section#coverage")
    assert "2 of 3 testable claims judged" in coverage.inner_text()  # of the investigations the run set out to run
    coverage.locator("#untestable summary").click()  # the run's investigation's untestable claim, not beta's
    assert coverage.get_by_text("needs a tablet").is_visible() and "needs an Android phone" not in coverage.inner_text()
    bar = page.locator("table#notebooks .bar .seg.compile")
    assert bar.is_visible() and bar.bounding_box()["width"] > 0
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


def _assert_outputs_render(page: Any, curated: bool = False) -> None:
    """The plot decodes from its data URI and the DataFrame is laid out as a visible table (on the outputs-only
    page a curated one: numbers to 4 significant digits, no index column)."""
    img = page.locator(".jp-RenderedImage img")
    assert img.count() == 1 and img.is_visible()
    assert img.get_attribute("src").startswith("data:image/png;base64,")
    width = img.evaluate("el => el.decode().then(() => el.naturalWidth, () => 0)")  # 0: did not decode
    assert width > 0 and img.evaluate("el => el.complete && el.naturalHeight") > 0
    # the curated table (the whole frame as recorded sits folded under it)
    table = page.locator(".jp-OutputArea-output table.dataframe" + (".kit-table" if curated else ""))
    assert table.is_visible() and table.bounding_box()["height"] > 0
    cells = table.locator("tbody td")
    expected = ["legacy", "1.5", "gather", "2.25"] if curated else ["legacy", "1.50", "gather", "2.25"]
    assert [cells.nth(i).inner_text() for i in range(cells.count())] == expected
    # Nothing the content needs came from outside: every image is inline or local.
    sources = page.locator("img").evaluate_all("els => els.map(e => e.currentSrc || e.src)")
    assert sources and all(s.startswith(("data:", "file://")) for s in sources)


@pytest.mark.notebook
def test_notebook_html_renders_plot_table_and_code(page, notebook_pages):
    _open(page, notebook_pages["full"])
    _assert_outputs_render(page)
    editors = page.locator(".jp-CodeCell .jp-InputArea-editor")
    assert editors.count() == 2 and editors.first.is_visible()
    assert "ax.plot" in editors.first.inner_text()
    assert page.requests.external() == []  # no require.js / MathJax / widget manager from a CDN


@pytest.mark.notebook
def test_notebook_nocode_html_hides_the_code(page, notebook_pages):
    _open(page, notebook_pages["nocode"])
    _assert_outputs_render(page, curated=True)
    assert page.locator(".jp-CodeCell").count() == 2  # the cells are there, with outputs only
    inputs = page.locator(".jp-CodeCell .jp-InputArea, .jp-CodeCell .jp-InputArea-editor, .jp-InputPrompt")
    assert not any(inputs.nth(i).is_visible() for i in range(inputs.count()))
    body = page.locator("body").inner_text()
    assert "ax.plot" not in body and "pd.DataFrame" not in body
    assert page.get_by_role("heading", name="Tiny report").is_visible()  # markdown stays
    assert page.requests.external() == []


# ---------------------------------------------------------------- the committed reports

def _committed_runs() -> list[Path]:
    root = REPO / "reports"
    return report.find_runs(root) if root.is_dir() else []


def _judged_investigations(runs: list[Path]) -> set[str]:
    """The ledger investigations some of `runs` judged: a new investigation answers once a run of it is committed."""
    ran = {r["investigation"] for d in runs for r in report.load_run(d).results}
    return (set(report.ledger()) - {report.UNTESTABLE_LEDGER}) & ran


def _assert_answers_for_every_investigation(page: Any, runs: list[Path]) -> None:
    """The page opens with an answer group per investigation the runs judged, each answer linking to claim rows."""
    expected = _judged_investigations(runs)
    assert expected
    groups = page.locator("section#answers .answer-group")
    assert {groups.nth(i).get_attribute("data-investigation") for i in range(groups.count())} >= expected
    assert page.locator("h2").first.inner_text() == "Answers"
    links = page.locator("section#answers a.claim-link")
    assert links.count() > 0
    for cid in _assert_links_reach_their_rows(page, links):
        assert page.locator(f"tr[id='claim-{cid}']").count() == 1, cid
    assert page.locator("section#answers .block").first.is_visible()


def test_committed_runs_render_with_answers(page, tmp_path):
    """The committed runs (old format included) rendered afresh: every page opens with answers, offline."""
    runs = _committed_runs()
    if not runs:
        pytest.skip("reports/ holds no committed run yet")
    for run_dir in runs:
        shutil.copytree(run_dir, tmp_path / run_dir.name, ignore=shutil.ignore_patterns("*.html"))
        report.render_run(tmp_path / run_dir.name, notebooks=False)
    report.render_index(tmp_path)
    _open(page, tmp_path / "index.html")
    _assert_answers_for_every_investigation(page, runs)
    _assert_badges_render(page.locator("table#claims .verdict"))
    _shot(page, "committed-index", full_page=True)
    for run_dir in runs:
        _open(page, tmp_path / run_dir.name / "index.html")
        assert page.locator("section#answers .block").count() >= 1, run_dir.name
        _assert_badges_render(page.locator("table#verdicts .verdict"))
    assert page.requests.external() == []


def test_committed_reports_index_opens_with_answers(page):
    """reports/index.html as committed (regenerate with `yolo26kit report reports`)."""
    runs = _committed_runs()
    if not runs or not (REPO / "reports" / "index.html").exists():
        pytest.skip("reports/ holds no committed run with an index.html yet")
    _open(page, REPO / "reports" / "index.html")
    _assert_answers_for_every_investigation(page, runs)
    _assert_badges_render(page.locator("table#claims .verdict"))
    assert page.locator("table#runs > tbody > tr").count() == 1 + len(runs)
    for run_dir in runs:
        if (run_dir / "index.html").exists():
            _open(page, run_dir / "index.html")
            assert page.locator("section#answers").is_visible(), run_dir.name
            _assert_badges_render(page.locator("table#verdicts .verdict"))
    assert page.requests.external() == []


# ---------------------------------------------------------------- the committed runs' pages, rendered afresh


@pytest.fixture(scope="module")
def rendered_runs(tmp_path_factory) -> Path:
    """Every committed run copied into a temporary folder (its HTML left behind) and rendered there with this
    code: notebook pages, run pages, the index. New runs or investigations are picked up as they come."""
    runs = _committed_runs()
    if not runs:
        pytest.skip("reports/ holds no committed run yet")
    root = tmp_path_factory.mktemp("rendered")
    for run_dir in runs:
        shutil.copytree(run_dir, root / run_dir.name, ignore=shutil.ignore_patterns("*.html"))
        report.render_run(root / run_dir.name)
    report.render_index(root)
    return root


def _has_figures(nocode: Path) -> bool:
    """Whether the notebook's results.json carries figures as judges return them now (value and statistic)."""
    results = nocode.with_name(nocode.name.replace(".nocode.html", ".results.json"))
    claims = json.loads(results.read_text()).get("claims", []) if results.exists() else []
    return any(isinstance(c.get("figure"), dict) and c["figure"].get("statistic") for c in claims)


def _nocode_pages(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.nocode.html"))


NAN_CELLS = """els => els.filter(td => /^(NaN|nan|None|NaT|<NA>)$/.test(td.innerText.trim())).length"""


def test_committed_nocode_pages_are_curated(page, rendered_runs):
    """On every outputs-only page: the conclusion and its figure come first, no stderr area, no [step] line outside
    the collapsed log at the end, no NaN / None cell, no frame wider than the page, no bare repr, no widget repr."""
    pages = _nocode_pages(rendered_runs)
    assert pages
    for path in pages:
        name = f"{path.parent.name}/{path.name}"
        _open(page, path)
        conclusion = page.locator(".kit-conclusion")
        assert conclusion.count() == 1 and conclusion.is_visible(), name
        first_cell = page.locator(".jp-Cell").first
        assert first_cell.locator(".kit-conclusion").count() == 1, name  # the very first thing on the page
        if _has_figures(path):
            assert conclusion.locator(".figure b").inner_text().strip(), name
        assert 2 <= conclusion.locator("p").count() <= 4, name
        assert page.locator('[data-mime-type="application/vnd.jupyter.stderr"]').count() == 0, name
        logs = page.locator("details.kit-log")
        assert logs.count() <= 1, name
        if logs.count():
            assert not logs.evaluate("el => el.open"), name  # collapsed
            assert logs.evaluate("el => el.closest('.jp-Cell') === [...document.querySelectorAll('.jp-Cell')].pop()")
            assert not logs.locator("pre").is_visible()
        visible = page.evaluate("() => { const c = document.body.cloneNode(true); "
                                "c.querySelectorAll('details.kit-log').forEach(d => d.remove()); return c.innerText; }")
        assert "[step]" not in visible, name
        assert "VBox(children" not in visible and "PosixPath(" not in visible, name
        assert page.locator("td").evaluate_all(NAN_CELLS) == 0, name
        width = page.evaluate("() => document.documentElement.clientWidth")
        for box in page.locator("table.kit-table").evaluate_all("els => els.map(e => e.getBoundingClientRect().right)"):
            assert box <= width + 1, name  # no table runs off the page sideways
        assert _shot(page, name) > 5_000
    assert page.requests.external() == []


def test_committed_run_and_index_answers_do_not_mislead(page, rendered_runs):
    """A CPU run never answers "bites here?" with a plain no for a bug whose claims need CUDA; every block opens
    with its conclusion; the index names the run each answer comes from."""
    from yolo26kit import conclusion

    for run_dir in report.find_runs(rendered_runs):
        run = report.load_run(run_dir)
        _open(page, run_dir / "index.html")
        blocks = page.locator("section#answers .block")
        for i in range(blocks.count()):
            b = blocks.nth(i)
            inv = b.get_attribute("data-investigation")
            assert b.locator(".kit-conclusion").count() == 1, inv
            ledger = {e["id"]: e for e in findings.claims_of(inv)}
            bug = conclusion.bug_claims(list(ledger.values()))
            if run.device_type != "cuda" and bug and all(
                    conclusion.device_class(ledger.get(cid), inv) == "cuda" for cid in bug):
                bites = b.locator(".answer[data-question=bites] .headline")
                if bites.count():
                    assert bites.inner_text() not in ("no", "yes", "mixed", "partly"), (run.name, inv)
    _open(page, rendered_runs / "index.html")
    for b in page.locator("section#answers .block").all():
        assert b.locator("a.run-link").inner_text().strip(), b.get_attribute("data-investigation")
        assert "not in this run" not in b.inner_text()  # each answer comes from a run that judged it
    assert page.requests.external() == []


def test_single_file_of_a_committed_run_opens_offline(page, rendered_runs, tmp_path):
    """The single file of the newest committed CUDA run (else the newest run): the run page first, every notebook
    page one click away with its conclusion, a claim link landing on its row, and not one request off the machine."""
    runs = report.find_runs(rendered_runs)
    cuda = [r for r in runs if report.load_run(r).device_type == "cuda"]
    run_dir = (cuda or runs)[0]
    out = single_file.single_file(run_dir, tmp_path / "send.html")
    _open(page, out)
    frame = page.frame_locator("#kit-frame")
    frame.locator("section#answers .block").first.wait_for()
    assert frame.locator("section#answers .kit-conclusion").count() >= 1
    stems = sorted(p.name.removesuffix(".ipynb") for p in run_dir.glob("*.ipynb"))
    assert page.locator("nav a").count() == 1 + len(stems)
    for stem in stems:
        page.locator(f"nav a[data-page$='{stem}']").first.click()
        frame.locator(".kit-conclusion").wait_for()
        assert page.url.endswith(f"#page={stem}")
        assert frame.locator('[data-mime-type="application/vnd.jupyter.stderr"]').count() == 0
    _shot(page, "single-file")
    page.locator("nav a").first.click()
    link = frame.locator("a.claim-link").first
    link.wait_for()
    cid = link.inner_text().strip()
    link.click()
    page.wait_for_url(f"**#page=index&at=claim-{cid}")
    row = frame.locator(f"tr[id='claim-{cid}']")
    in_view = "el => { const r = el.getBoundingClientRect(); return r.top > -2 && r.top < innerHeight; }"  # sub-pixel
    for _ in range(50):  # the frame loads the index, then scrolls to the row: wait for both (5 s at most)
        if row.count() and row.evaluate(in_view):
            break
        page.wait_for_timeout(100)
    assert row.evaluate(in_view)
    assert page.requests.external() == []


# ---------------------------------------------------------------- the answer on one screen (committed reports)

SNAKE_HEADER = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
# a list of quoted strings or of two numbers or more as Python writes it, a path object, a dict dump ("args[1]" is not)
# a line that quotes the user's source (model_check's hazards: `file.py:223 ... make_anchors(x["feats"], ...)`)
SOURCE_LINE = re.compile(r"\.py:\d+|\w\[[\"'][\w.]+[\"']\]")
PYTHON_REPR = re.compile(r"\[(?:'[^']*'|\"[^\"]*\")(?:, (?:'[^']*'|\"[^\"]*\"|-?\d[\d.e+-]*|None))*\]"
                         r"|\[-?\d[\d.e+-]*(?:, -?\d[\d.e+-]*)+\]|PosixPath\(|\{'[\w ]+': ")
# What is rendered (closed <details>: the whole frame, the log, are not), source listings (.highlight) aside.
VISIBLE_TEXT = """() => { document.querySelectorAll('.highlight').forEach(e => e.style.display = 'none');
  const text = document.body.innerText;
  document.querySelectorAll('.highlight').forEach(e => e.style.display = ''); return text; }"""
VISIBLE_HEADERS = """() => [...document.querySelectorAll('th')].filter(th => !th.closest('details.kit-full')
  && th.offsetParent !== null).map(th => th.innerText.trim())"""


def _current_runs() -> list[Path]:
    """The committed runs the grid shows (runs of an older kit are superseded)."""
    runs = [report.load_run(d, REPO / "reports") for d in _committed_runs()]
    old = grid.superseded(runs)
    return [run.dir for run in runs if run.name not in old]


def _assert_grid_on_first_screen(page: Any, expect: set[str]) -> Any:
    """The grid ends within the first 900 px, names torch and executorch in every stack's header and has a row
    (with a word and a link in each answered cell) for each investigation expected; returns the grid's locator."""
    table = page.locator("section#grid table.grid")
    assert table.count() == 1 and table.is_visible()
    box = table.bounding_box()
    assert box["y"] + box["height"] <= 900, f"the grid ends at {box['y'] + box['height']:.0f} px"
    heads = table.locator("th.stack")
    assert heads.count() >= 1
    for i in range(heads.count()):
        text = heads.nth(i).inner_text()
        assert re.search(r"torch \d", text) and re.search(r"executorch \d", text), text
        assert "profile " in text, text
    rows = table.locator("tbody tr")
    assert {rows.nth(i).get_attribute("data-investigation") for i in range(rows.count())} == expect
    words = table.locator("td.cell .word")
    assert words.count() > 0 and all(w.strip() for w in words.all_inner_texts())
    assert table.locator("td.cell a[href*='#claim-']").count() > 0
    return table


def test_committed_reports_open_with_the_grid(page):
    """reports/index.html and every current run page open with the grid, inside the first 900 px."""
    runs = _current_runs()
    if not runs or not (REPO / "reports" / "index.html").exists():
        pytest.skip("reports/ holds no committed run with an index.html yet")
    _open(page, REPO / "reports" / "index.html")
    table = _assert_grid_on_first_screen(page, _judged_investigations(runs))
    assert table.locator("th.stack").count() == len(grid.stacks([report.load_run(d) for d in runs]))
    _shot(page, "index-first-screen")
    assert _shot(table, "grid") > 10_000
    for run_dir in runs:
        _open(page, run_dir / "index.html")
        ran = {r["investigation"] for r in report.load_run(run_dir).results}
        _assert_grid_on_first_screen(page, ran)
        _shot(page, run_dir.name)
    assert page.requests.external() == []


def test_committed_nocode_pages_stand_alone(page):
    """Each outputs-only page of a current run: header (investigation, stack, device, profile, run, link to the
    index), conclusion and answers on the first screen; no Python repr and no snake_case header outside the
    whole-table view."""
    pages = [p for d in _current_runs() for p in sorted(d.glob("*.nocode.html"))]
    if not pages:
        pytest.skip("reports/ holds no committed outputs-only page yet")
    for path in pages:
        name = f"{path.parent.name}/{path.name}"
        _open(page, path)
        head = page.locator(".kit-head")
        assert head.count() == 1, name
        text = head.inner_text()
        for word in (path.name.removesuffix(".nocode.html"), "torch ", "executorch ", "profile ", path.parent.name):
            assert word in text, (name, word)
        assert head.locator("a[href='../index.html']").count() == 1, name
        for selector in (".kit-head", ".kit-conclusion", "table.kit-answers"):
            box = page.locator(selector).first.bounding_box()
            assert box and box["y"] < 900, (name, selector)
        visible = page.evaluate(VISIBLE_TEXT)
        visible = "\n".join(line for line in visible.splitlines() if not SOURCE_LINE.search(line))
        assert not PYTHON_REPR.search(visible), (name, PYTHON_REPR.search(visible).group(0))
        snake = [h for h in page.evaluate(VISIBLE_HEADERS) if SNAKE_HEADER.match(h)]
        assert not snake, (name, snake[:5])
        _shot(page, name)
    assert page.requests.external() == []


def test_committed_single_files_open_offline(page):
    """The committed single files (the newest batch of each stack) open offline with the grid first."""
    files = sorted((REPO / "reports").glob("*/*.single.html"))
    if not files:
        pytest.skip("reports/ holds no committed single file yet")
    for path in files:
        _open(page, path)
        frame = page.frame_locator("#kit-frame")
        frame.locator("section#grid table.grid").wait_for()
        assert page.locator("nav a").count() >= 2, path.name
    assert page.requests.external() == []


# ---------------------------------------------------------------- JupyterLab: a session leaves the checkout clean

LAB_NOTEBOOK = "cdmaskformer_mask"  # a CPU notebook with a table, a plot and an explorer widget
RUN_ALL_TIMEOUT_MS = 300_000  # its 19 cells take about 30 s in a batch on 2 cores


def _lab_checkout(root: Path) -> Path:
    """The tracked files a lab session needs, copied into a git repository of their own (committed)."""
    import subprocess

    files = subprocess.run(["git", "ls-files", "yolo26kit", "notebooks", "data", ".gitignore", "pyproject.toml"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if (REPO / f).is_file():
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_bytes((REPO / f).read_bytes())
    # the quick profile's values in the parameters cell, as papermill injects them: minutes less on 2 cores
    path = root / "notebooks" / f"{LAB_NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    quick = {**catalog.get(LAB_NOTEBOOK).profiles["quick"], "device": "cpu"}
    cell.source += "\n" + "\n".join(f"{k} = {v!r}" for k, v in quick.items())
    with open(path, "w", encoding="utf-8") as f:
        nbformat.write(nb, f, version=nbformat.NO_CONVERT)
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`make lab`'s server on a copy of the checkout, headless on a free port, autosaving every 5 s."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    checkout = _lab_checkout(tmp_path / "kit")
    settings = tmp_path / "lab-settings" / "@jupyterlab"
    for plugin, values in (("docmanager-extension/plugin", {"autosaveInterval": 5}),
                           ("notebook-extension/tracker", {"windowingMode": "none"})):  # every cell rendered
        (settings / f"{plugin}.jupyterlab-settings").parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{plugin}.jupyterlab-settings").write_text(json.dumps(values))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "jupyter", "lab", "--config=yolo26kit/jupyter_lab_config.py", "--no-browser",
            f"--port={port}", "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=kit",
            f"--LabApp.user_settings_dir={tmp_path / 'lab-settings'}", "notebooks/"]
    if os.getuid() == 0:
        argv.insert(-1, "--allow-root")
    env = {**os.environ, "PYTHONPATH": str(checkout), "YOLO_OFFLINE": "1", "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    server = subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "w"))
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token=kit", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the lab server did not answer: " + (tmp_path / "lab.log").read_text()[-2000:])
        yield url, checkout
    finally:
        server.terminate()
        server.wait(timeout=30)
    log = (tmp_path / "lab.log").read_text()
    assert "Overriding existing pre_save_hook" not in log


def _git_status(checkout: Path) -> str:
    import subprocess

    return subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.notebook
@pytest.mark.slow
def test_a_lab_session_runs_a_notebook_and_leaves_the_checkout_clean(page, lab):
    """Open a CPU notebook, wait past an autosave, Run All, click the explorer, save: every cell ran without an
    error, a table and a plot show, and `git status` is clean (metadata included)."""
    url, checkout = lab
    page.route(re.compile(r"^http://127\.0\.0\.1:\d+/"), lambda route: route.continue_())  # the lab, not the web
    page.set_default_timeout(120_000)
    page.goto(f"{url}/lab/tree/{LAB_NOTEBOOK}.ipynb?token=kit")
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for()
    page.wait_for_timeout(8_000)  # past an autosave (every 5 s here)
    assert _git_status(checkout) == "", "opening the notebook changed it on disk"

    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    try:
        page.wait_for_function("""() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.innerText));
        }""", timeout=RUN_ALL_TIMEOUT_MS)
    except sync_api.TimeoutError:
        _shot(page, "lab-run-all", full_page=True)
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        pytest.fail(f"Run All did not finish: prompts {prompts}; outputs "
                    f"{[t[:300] for t in page.locator('.jp-OutputArea-output').all_inner_texts()][-3:]}")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error'], "
                          ".jp-OutputArea-output:has-text('Traceback (most recent call last)')")
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    assert page.locator(".jp-OutputArea-output table").count() > 0  # a table
    assert page.locator(".jp-OutputArea-output img").count() > 0  # a plot
    button = page.locator(".jupyter-widgets button", has_text="time it")
    assert button.count() == 1, "the explorer widget did not render"
    button.click()
    page.locator(".jupyter-widgets .jp-OutputArea-output table").first.wait_for(timeout=120_000)  # it answered

    saved = checkout / "notebooks" / f"{LAB_NOTEBOOK}.ipynb"
    before = saved.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel").first.click()
    page.keyboard.press("Control+s")
    for _ in range(40):
        if saved.stat().st_mtime_ns != before:
            break
        page.wait_for_timeout(250)
    assert saved.stat().st_mtime_ns != before, "Ctrl+S did not save the notebook"
    assert _git_status(checkout) == "", _git_status(checkout)
