"""One source for every number a reader is shown first: the pages rendered by today's code from the committed
results.json — run pages, the index, an outputs-only page's head, conclusion and answers — show in headlines and grid
cells only the figures the judges of the claims they link returned; an older results.json whose claim has no figure
shows no number for it. The words these pages generate name no GPU or release the run did not have, and never
repeat themselves."""

from __future__ import annotations

import html
import re
from functools import cache
from pathlib import Path

import pytest

from yolo26kit import conclusion
from yolo26kit.report import grid, pages
from yolo26kit.verdicts import Figure

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
RUN_DIRS = [d for d in pages.find_runs(REPORTS) if d.parent == REPORTS] if REPORTS.is_dir() else []
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?")
FIG = re.compile(r"""<span class=["']fig["'] data-claim=["']([^"']+)["'][^>]*><a href=["']([^"']*)["']>([^<]*)</a>"""
                 r"""(.*?)</span>(?=\s*(?:·|<span class=["'](?:decide|fig)|</td>|</b>|$))""", re.S)
SPREAD = re.compile(r"""<small class=["']spread["'] title=["']([^"']*)["']>([^<]*)</small>""")
HEADLINE = re.compile(r"""<div class='figure' data-claim='([^']*)'><b>([^<]*)</b><span>([^<]*)</span>""")
GPU = re.compile(r"\b(?:[ABHL]\d{2,3}[A-Z]?|T4|V100|RTX ?\d{4}|MI\d{3}X?|GB?200)\b")
RELEASE = re.compile(r"\b(torch|executorch|ultralytics|toto-ts|Python) (\d+\.\d+(?:\.\d+)?(?:\+\w+)?)")


@cache
def run_of(path: str) -> pages.Run:
    return pages.load_run(Path(path), REPORTS)


def figure_text(run: pages.Run, claim_id: str) -> str:
    """The text of the figure the claim's judge returned in that run ('' without one)."""
    figure = Figure.from_dict((run.verdicts.get(claim_id) or {}).get("figure"))
    return figure.text if figure else ""


def visible(fragment: str) -> str:
    """A fragment's text as shown (tags and their attributes dropped), one line per cell, paragraph or item."""
    lines = re.sub(r"</(?:td|th|p|dt|dd|li|h2|h3|div)>|<br\s*/?>", "\n", fragment)
    return html.unescape(re.sub(r"<[^>]+>", " ", lines))


def grid_section(page: str) -> str:
    return page.split('<section id="grid">', 1)[1].split("</section>", 1)[0]


def check_cells(page: str, run_for_href) -> int:
    """Every number in a grid cell is inside one of its figures, and each figure is the figure of the claim it links
    (its spread: figures of that claim in the stack's other batches). Returns the figures seen."""
    seen = 0
    for cell in re.findall(r'<td class="cell v-[^"]*"[^>]*>(.*?)</td>', grid_section(page), re.S):
        shown_numbers: list[str] = []
        for claim_id, href, text, rest in FIG.findall(cell):
            run = run_for_href(href)
            assert text == figure_text(run, claim_id), (claim_id, text)
            shown_numbers += NUMBER.findall(text)
            for runs, spread in SPREAD.findall(rest):
                allowed = {n for name in runs.split(", ") for n in NUMBER.findall(
                    figure_text(run_of(str(REPORTS / name)), claim_id))}
                assert set(NUMBER.findall(spread)) - {str(len(runs.split(', ')))} <= allowed, (claim_id, spread)
                shown_numbers += NUMBER.findall(spread)
            seen += 1
        words = re.sub(r'<span class="decide">.*?</span>', "", cell, flags=re.S)  # what decides it: a condition
        assert sorted(NUMBER.findall(visible(words))) == sorted(shown_numbers), visible(words)
    return seen


def check_headlines(page: str, run: pages.Run) -> int:
    """Every conclusion's headline number is the figure of the claim it names; its caption's numbers come from that
    figure and the claim's recorded conditions."""
    found = HEADLINE.findall(page)
    for claim_id, value, label in found:
        claim = run.verdicts[claim_id]
        assert value == figure_text(run, claim_id), (claim_id, value)
        figure = claim.get("figure") or {}
        # the figure's own numbers as pages show them (3 significant digits: a span's 1.9152 reads 1.92)
        shown = [f"{v:.3g}" for v in figure.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        source = str(figure) + str(claim.get("conditions")) + " ".join(shown)
        assert all(n in source for n in NUMBER.findall(html.unescape(label))), (claim_id, label)
    return len(found)


@pytest.mark.parametrize("run_dir", RUN_DIRS, ids=[d.name for d in RUN_DIRS])
def test_every_headline_and_grid_number_of_a_run_page_is_a_figure_of_the_claim_it_links(run_dir):
    page = pages.run_page(run_dir)
    run = run_of(str(run_dir))
    check_cells(page, lambda href: run)
    check_headlines(page, run)


def test_every_headline_and_grid_number_of_the_index_is_a_figure_of_the_claim_it_links():
    page = pages.index_page(REPORTS)
    figures = check_cells(page, lambda href: run_of(str(REPORTS / href.split("/")[0])))
    assert figures  # the committed runs' judges returned figures for some of the cells
    for chunk in page.split('<div class="block"')[1:]:
        link = re.search(r'class="run-link" href="([^"/]+)/index.html"', chunk)
        if link:
            check_headlines(chunk.split('<div class="block"')[0], run_of(str(REPORTS / link.group(1))))


def outputs_only_head(run_dir: Path, investigation: str) -> str:
    """What an outputs-only page opens with: its head, the conclusion and the answers (as notebook_and_conclusion)."""
    result = next(r for r in run_of(str(run_dir)).results if r["investigation"] == investigation)
    entries = pages.ledger().get(investigation, [])
    return (pages.notebook_head(run_dir, investigation, entries)
            + pages.conclusion_html(conclusion.conclude(result, entries))
            + pages._answers_of(run_dir, investigation, entries))


NEWEST = [d for d in RUN_DIRS if d.name in {r.name for s in grid.stacks([run_of(str(x)) for x in RUN_DIRS])
                                             for r in s.runs[:1]}]


@pytest.mark.parametrize("run_dir", NEWEST, ids=[d.name for d in NEWEST])
def test_an_outputs_only_page_stands_alone_and_shows_only_its_claims_figures(run_dir):
    run = run_of(str(run_dir))
    for investigation in run.investigations:
        head = outputs_only_head(run_dir, investigation)
        facts = visible(head.split("class='kit-head'", 1)[1].split("</div></div>", 1)[0])
        kit = run.environment["kit"]
        assert "yolo26kit" in facts and kit in facts and run.date in facts, facts
        assert run.environment["torch"] in facts and run.environment["device"] in facts
        assert conclusion.name_of(investigation) in facts  # people's name first, the id small beside it
        assert f"({run.name}/index.html)" in facts  # a link sent alone still says where its page lies
        check_headlines(head, run)
        for claim_id, href, text, _ in FIG.findall(head):
            assert text == figure_text(run, claim_id), (investigation, claim_id, text)


def generated_parts(page: str) -> str:
    """The words a page generates (grid, agreement, conclusions, answers, heads), without the text it quotes: the
    seed's words and each claim's evidence as its judge recorded it."""
    parts = []
    if '<section id="grid">' in page:
        parts.append(grid_section(page))
    parts += re.findall(r"<div class='kit-conclusion'.*?<div style='clear:both'></div></div>", page, re.S)
    parts += re.findall(r'<p class="meta" id="page-facts">.*?</p>', page, re.S)
    parts += re.findall(r"<div class='kit-head'>.*?</div></div>", page, re.S)
    parts += re.findall(r'<details class="conditions.*?</summary>', page, re.S)
    for answers in re.findall(r'<dl class="answers">.*?</dl>', page, re.S):
        parts.append(re.sub(r'<span class="sentence">.*?</span>', "", answers, flags=re.S))
    return visible("\n".join(parts))


def test_no_generated_text_names_a_gpu_or_release_its_run_did_not_have():
    """GPUs and releases in the words the pages generate are the run's (its environment) or, said as the seed's,
    the seed's conditions."""
    for run_dir in RUN_DIRS:
        run = run_of(str(run_dir))
        env = " ".join(str(v) for v in run.environment.values())
        texts = [generated_parts(pages.run_page(run_dir))]
        if run_dir in NEWEST:
            texts += [generated_parts(outputs_only_head(run_dir, inv)) for inv in run.investigations]
        seed_releases = {str(v) for r in run.results for c in r.get("claims", [])
                         for v in ((c.get("conditions") or {}).get("seed") or {}).values()}
        seed_gpus = {g for s in seed_releases for g in GPU.findall(s)}  # the seed's own, shown as the seed's
        for text in texts:
            named = set(GPU.findall(text))
            assert named <= set(GPU.findall(env)) | seed_gpus, (run.name, named)
            for package, release in RELEASE.findall(text):
                assert release in env or any(release in s for s in seed_releases), (run.name, package, release)


REPEATED = re.compile(r"\b(\w[\w.+-]*(?: \w[\w.+-]*){0,3})(?: (?:or|/|,|and)| ?;) \1\b")
PHRASE_TWICE = re.compile(r"\b((?:\w+\W+){4,}?\w+)\W+\1\b")


def test_no_generated_text_repeats_itself():
    texts = [generated_parts(pages.index_page(REPORTS))]
    texts += [generated_parts(pages.run_page(d)) for d in RUN_DIRS]
    for text in texts:
        for line in text.splitlines():
            line = " ".join(line.split())
            assert not REPEATED.search(line), REPEATED.search(line).group(0)
            assert not PHRASE_TWICE.search(line), PHRASE_TWICE.search(line).group(0)


def test_the_repetition_check_sees_a_list_that_says_one_value_many_times():
    assert REPEATED.search("device (cuda → cpu or cpu or cuda)")
    assert PHRASE_TWICE.search("on Toto with CUDA graphs, on Toto with CUDA graphs")
    assert not REPEATED.search("device (cuda → cpu or cuda)")
    assert pages.cond_value(["cpu"] * 16 + ["cuda"] * 16) == "cpu or cuda"


def test_no_committed_run_page_or_the_index_draws_an_emoji_mark():
    marks = re.compile("[\u2705\u274c\u26a0\u23ed]")
    for page in [pages.index_page(REPORTS), *(pages.run_page(d) for d in NEWEST)]:
        assert not marks.search(page), marks.search(page)


def test_status_marks_read_as_words_without_an_emoji_font(tmp_path):
    from yolo26kit.report import display

    table = str(pages.table_html([{"path": "et_cuda", "status": "✅"}, {"path": "aoti", "status": "❌"}], tmp_path))
    assert "✅" not in table and "❌" not in table
    assert "<span class='mark ok'>ok</span>" in table and "mark failed" in table
    assert "ExecuTorch CUDA" in table and "title='et_cuda'" in table  # the path by name, its id in the tooltip
    curated = display.curated(["path", "status"], [["et_xnnpack", "⚠️"], ["export", "⏭️"]])
    assert "differs" in curated and "skipped" in curated and "⚠" not in curated
