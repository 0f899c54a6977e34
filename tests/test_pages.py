"""Outputs-only pages: logs collapsed at the end, tables curated, bare reprs and stateless widgets left out."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from yolo26kit.report import display, pages as report

REPO = Path(__file__).resolve().parents[1]
WIDE = pd.DataFrame({f"col{i}": [i * 1.123456789, math.nan, i] for i in range(24)} |
                    {"device": ["cpu"] * 3, "empty": [None, math.nan, None]})


def _nb() -> nbformat.NotebookNode:
    out = nbformat.v4.new_output
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("setup", outputs=[
            out("stream", name="stderr", text="W1123 No CUDA runtime is found, using CUDA_HOME='/usr/local'\n"),
            out("execute_result", data={"text/plain": "'cuda'"}, execution_count=1)]),
        nbformat.v4.new_code_cell("run", outputs=[
            out("stream", name="stdout", text="[step] prepare: done after 3.0 s\nkept line\n"),
            out("stream", name="stderr", text="[step] run: done after 1.0 s\n"),
            out("execute_result", data={"text/html": WIDE.to_html(), "text/plain": "frame"}, execution_count=2)]),
        nbformat.v4.new_code_cell("explorer", outputs=[out("execute_result", execution_count=3, data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2},
            "text/plain": "VBox(children=(HBox(children=(BoundedIntText(value=32)"})]),
        nbformat.v4.new_code_cell("verdicts", outputs=[out("execute_result", execution_count=4, data={
            "text/html": pd.DataFrame({"claim": ["a.b"], "verdict": ["confirmed"]}).to_html(), "text/plain": "v"})]),
        nbformat.v4.new_code_cell("verdicts again", outputs=[out("execute_result", execution_count=5, data={
            "text/html": pd.DataFrame({"claim": ["a.b"], "verdict": ["confirmed"]}).to_html(), "text/plain": "v"})]),
        nbformat.v4.new_code_cell("save", outputs=[out("execute_result", execution_count=6, data={
            "text/plain": "PosixPath('/home/someone/yolo26kit/reports/x.results.json')"})]),
    ])


def _outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


def test_curate_notebook_moves_logs_to_one_collapsed_section_at_the_end():
    nb = report.curate_notebook(_nb())
    outs = _outputs(nb)
    assert not any(o.get("name") == "stderr" for o in outs)  # no stderr area anywhere
    streams = [o for o in outs if o["output_type"] == "stream"]
    assert [o["text"] for o in streams] == ["kept line\n"]  # stdout stays, without its [step] line
    last = nb.cells[-1].outputs
    assert len(last) == 1 and "kit-log" in last[0]["data"]["text/html"]
    log = last[0]["data"]["text/html"]
    assert log.startswith("<details") and "open" not in log.split(">")[0]  # collapsed
    assert "[step] prepare" in log and "[step] run" in log and "No CUDA runtime" in log
    assert "2 of them [step] lines" in log
    before_log = json.dumps([o for c in nb.cells[:-1] if c.cell_type == "code" for o in c.outputs])
    assert "[step]" not in before_log


def test_curate_notebook_drops_bare_reprs_widgets_and_repeats():
    nb = report.curate_notebook(_nb())
    text = json.dumps(_outputs(nb))
    assert "'cuda'" not in text and "PosixPath" not in text
    assert "VBox(children" not in text and "JupyterLab" in text
    assert sum("a.b" in json.dumps(o) for o in _outputs(nb)) == 1  # the verdicts table once


def test_curated_tables_have_no_nan_and_no_24_column_frames():
    nb = report.curate_notebook(_nb())
    page = next(o["data"]["text/html"] for o in _outputs(nb) if "col0" in json.dumps(o))
    assert not re.search(r"<td[^>]*>\s*(NaN|nan|None)\s*</td>", page)
    shown = page.split("<details class='kit-full'>")[0]
    header = re.search(r"<table class='dataframe kit-table'><thead><tr>(.*?)</tr>", shown).group(1)
    assert header.count("<th") == display.MAX_COLUMNS  # at most MAX_COLUMNS columns in view
    assert "every row: device = cpu" in shown and "no value in any row: empty" in shown
    assert "1.123" in shown and "1.123456789" not in shown  # 4 significant digits
    assert "—" in shown
    assert "<details class='kit-full'><summary>whole table: 3 rows × 26 columns" in page  # one click away
    assert "col23" in page.split("<details class='kit-full'>")[1]


def test_display_hook_formats_frames_like_the_renderer():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    assert display.install(shell) is True
    bundle, _ = shell.display_formatter.format(pd.DataFrame({"ms": [1.5, None], "ok": [True, False]}))
    page = bundle["text/html"]
    assert "kit-table" in page and "NaN" not in page.split("kit-full")[0] and "—" in page
    assert display.curate_table_html(page) == page  # already curated: left alone


def test_number_format():
    assert display.fmt_number("64512.000000") == "64,512"
    assert display.fmt_number("2.384186e-07") == "2.384e-07"
    assert display.fmt_number("0.051234") == "0.05123"
    assert display.fmt_number("yolo26n") == "yolo26n"


def test_notebook_pages_open_with_the_conclusion(tmp_path):
    """A notebook with its results.json beside it: both pages start with the conclusion, titled by the notebook."""
    committed = sorted((REPO / "reports").glob("*-cpu/aoti_load.results.json"))
    if not committed:
        pytest.skip("no committed CPU run")
    (tmp_path / "aoti_load.results.json").write_text(committed[-1].read_text())
    nbformat.write(_nb(), tmp_path / "aoti_load.ipynb")
    full, nocode = report.render_notebook(tmp_path / "aoti_load.ipynb")
    for page in (full.read_text(), nocode.read_text()):
        body = page[page.index("<body"):]
        assert body.index("kit-conclusion") < body.index("Title")  # before the notebook's own first cell
        assert "<title>aoti_load · " in page
    assert "jupyter.stderr" not in nocode.read_text().split("<body")[1]


def test_tables_pandas_cut_lose_their_ellipsis_columns_and_say_where_the_rest_is():
    cut = display.curate_table_html(WIDE.to_html(max_cols=6, max_rows=2))
    shown = cut.split("<details class='kit-full'>")[0]
    assert ">...</th>" not in shown and ">...</td>" not in shown
    assert "the whole of it is in results.json" in shown


def test_headers_read_as_words_with_units_lists_as_text_and_results_first():
    assert display.human_header("median_ms") == "median (ms)"
    assert display.human_header("ranges_only_fails_or_wrong_in_range") == "ranges only fails or wrong in range"
    assert display.human_header("max_abs_diff") == "max |Δ|" and display.human_header("model") == "model"
    assert display.list_text("['legacy', 'gather']") == "legacy, gather" and display.list_text("[1, 2.5]") == "1, 2.5"
    assert display.list_text("[not python") == "[not python"
    assert display.lists_in_text("index dtypes ['int64', 'int64'] after export") == "index dtypes int64, int64 after export"
    assert display.lists_in_text("this run's torch is 2.14.1, the seed's {'min': '2.11', 'max': '2.11.99'}") == \
        "this run's torch is 2.14.1, the seed's 2.11–2.11.99"
    assert display.lists_in_text("kept {x} and [y]") == "kept {x} and [y]"
    columns = ["model", "path", "restore_ms", "imgsz", "median_ms", "speedup", "cause"]
    assert [columns[i] for i in display.result_first(columns, list(range(7)))] == \
        ["model", "restore_ms", "median_ms", "speedup", "cause", "path", "imgsz"]
    page = display.curated(columns, [["n", "eager", "1.5", "640", "2.25", "1.2", "['a', 'b']"],
                                     ["s", "aoti", "1.5", "320", "3.5", "0.9", ""]], full_html="<table></table>")
    shown = page.split("<details class='kit-full'>")[0]
    assert "<th title='median_ms'>median (ms)</th>" in shown and "median_ms<" not in shown
    assert ">a, b</td>" in shown and "['a'" not in shown
    assert "whole table: 2 rows × 7 columns as recorded" in page  # the full frame, one click away


def test_tables_curated_by_an_older_kit_read_with_todays_rules():
    today = display.curated(["index_dtypes", "median_ms"], [["['int64', 'int64']", "1.5"], ["['a']", "2"]],
                            full_html="<table><tr><th>index_dtypes</th></tr></table>")
    older = today.replace("<th title='index_dtypes'>index dtypes</th>", "<th>index_dtypes</th>").replace(
        ">int64, int64<", ">['int64', 'int64']<").replace("overflow-wrap:anywhere", "overflow-wrap:break-word")
    assert older != today and display.curate_table_html(older) == today  # today's style too: long tokens wrap
    assert "<th>index_dtypes</th>" in display.curate_table_html(older)  # the whole frame stays as recorded


def test_a_folded_cell_reads_as_text_in_its_summary_too() -> None:
    """A long dict cell folds into <details>; its summary is cut from the text, not from the repr (a cut repr
    cannot be read back as text when an older table is refreshed)."""
    options = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "conv_backends": "TRITON " * 12}
    fresh = display.curated(["options"], [[repr(options)]])
    old = ("<table class='kit-table'><tr><td><details class='cell'><summary>"
           f"{html.escape(repr(options)[:90])}…</summary><div class='full'>{html.escape(repr(options))}</div>"
           "</details></td></tr></table>")
    for page in (fresh, display.refresh_kit_table(old)):
        summary = page[page.index("<summary>"):page.index("</summary>")]
        assert "max_autotune True" in summary and "{" not in summary and "&#x27;" not in summary


def test_a_finding_links_its_folder_and_says_what_to_do_from_its_checks(tmp_path):
    """One entry per finding whatever the runs that met it; ISSUE.md and repro.py from <root>/findings/<id>/; the
    advice comes from the checks recorded there (fixed from a release: upgrade), never from the runs."""
    import json

    from yolo26kit.report.answers import Run
    from yolo26kit.report.pages import findings_of

    def run(name: str) -> Run:
        results = [{"investigation": "x", "findings": [{"id": "x.bug", "title": "a bug"}]}]
        return Run(tmp_path / name, name, {}, results, {"device_type": "cuda"}, {})

    runs = [run("20261128T030000Z-a-cuda"), run("20261128T020000Z-a-cuda")]
    bare = findings_of(runs, tmp_path, href_of=lambda r: f"{r.name}/index.html")
    assert len(bare) == 1 and [m["run"] for m in bare[0]["met"]] == [r.name for r in runs]
    assert bare[0]["issue_href"] == "" and "not checked" in bare[0]["upstream"]["advice"]
    folder = tmp_path / "findings" / "x.bug"
    (folder / "checked").mkdir(parents=True)
    (folder / "ISSUE.md").write_text("# bug\n")
    for version, outcome in (("2.11.0", "still bites"), ("2.12.1", "fixed here"), ("2.14.1", "fixed here")):
        (folder / "checked" / f"torch{version}-cpu.json").write_text(json.dumps(
            {"versions": {"torch": version}, "outcome": outcome}))
    found = findings_of(runs, tmp_path, prefix="../")[0]
    assert found["issue_href"] == "../findings/x.bug/ISSUE.md" and found["repro_href"] == ""
    assert found["upstream"]["advice"].startswith("fixed upstream from torch 2.12.1")
    assert "bites on torch 2.11.0, fixed from 2.12.1" in found["upstream"]["timeline"]["words"]
