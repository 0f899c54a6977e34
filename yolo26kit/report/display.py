"""Tables a reader can take in at a glance: the kit's HTML for a DataFrame, in the kernel and in report pages.

One rule set, used two ways:
- in the kernel: `install()` registers `frame_html` as IPython's text/html formatter for pandas DataFrames, so
  executed notebooks carry curated tables (call it once per kernel, e.g. from `findings.start`);
- in the renderer: `curate_table_html` rewrites a pandas-rendered `<table class="dataframe">` already saved in an
  executed notebook (report.render_notebook does this for the outputs-only page).

The rules: a missing value (NaN, None, NaT, <NA>, '') shows as `—`; a column with no value at all is left out
and named; a column holding one value in every row becomes a line above the table ("every row: device = cpu");
numbers get at most 4 significant digits (integers keep all of theirs, with thousands separators); a list is
joined as text ("a, b"); a cell longer than LONG_CELL characters folds into <details>; result columns (time,
speed-up, status, error, cause, match) come right after the first column; headers read as words with their unit
(`median_ms` → "median (ms)"); at most MAX_COLUMNS columns and MAX_ROWS rows are shown. The whole
frame, as pandas wrote it (missing values as `—`), is one click away in a <details> under the table. A table
the kit already curated carries class `kit-table`; the renderer only refreshes its headers and lists
(refresh_kit_table).
"""

from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser
from typing import Any

from ..conclusion import clip
from ..verdicts import path_name

MAX_COLUMNS = 10
MAX_ROWS = 40
LONG_CELL = 140
MISSING = {"nan", "none", "nat", "<na>", "", "null"}
DASH = "—"
_NUMBER = re.compile(r"^[+-]?(\d[\d,]*\.?\d*|\.\d+)([eE][+-]?\d+)?$")
# Column name parts that hold what a reader came for: these columns come first (after the first, naming column).
RESULT_WORDS = ("ms", "median", "speedup", "speed", "ratio", "status", "state", "error", "cause", "verdict",
                "match", "matched", "delta", "max_abs", "diff", "ok", "seconds", "fastest", "result", "outcome")
# A header's last part that is a unit: `median_ms` → "median (ms)".
UNITS = {"ms": "ms", "s": "s", "seconds": "s", "mib": "MiB", "mb": "MB", "gib": "GiB", "bytes": "bytes", "pct": "%",
         "percent": "%", "x": "×", "us": "µs"}
HEADER_WORDS = {"max_abs_diff": "max |Δ|", "max_abs": "max |Δ|", "speedup": "speed-up (×)",
                "imgsz": "image size (px)"}
# Status marks some tables were recorded with (emoji, which draw as empty boxes where no emoji font is installed):
# shown as a word on a coloured mark instead.
STATUS_MARKS = {"✅": "ok", "❌": "failed", "⚠️": "differs", "⚠": "differs", "⏭️": "skipped", "⏭": "skipped"}
# Columns whose values are the kit's path or back-end ids (shown by name, the id in a tooltip).
PATH_COLUMNS = ("path", "backend", "fastest correct", "runner-up")
# a list inside a sentence, not a subscript: `x.size()[0]` and `rows[-1]` stay code
_SENTENCE_LIST = re.compile(r"(?<![\w)\]])\[[^\[\]]*\]")
_INNER_DICT = re.compile(r"\{[^{}]*\}")
_LIST_TEXT = re.compile(r"^\[.*\]$|^\(.*,.*\)$", re.S)
_MISSING_CELL = re.compile(r"<td>\s*(NaN|nan|None|NaT|&lt;NA&gt;|<NA>)\s*</td>")
_DATAFRAME = re.compile(r"(<div>\s*)?(<style scoped>.*?</style>\s*)?<table[^>]*class=\"dataframe\"[^>]*>.*?</table>"
                        r"(\s*<p>\d+ rows × \d+ columns</p>)?(\s*</div>)?", re.S)


def is_missing(text: str) -> bool:
    return str(text).strip().lower() in MISSING


def fmt_number(text: str) -> str:
    """A number as a reader wants it: integers with separators, others to 4 significant digits; else the text."""
    raw = str(text).strip()
    if not _NUMBER.match(raw):
        return raw
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return raw
    if math.isnan(value):
        return DASH
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def human_header(name: str) -> str:
    """A column name as a reader wants it: words, the unit in brackets ('median_ms' → 'median (ms)')."""
    raw = str(name)
    if raw in HEADER_WORDS:
        return HEADER_WORDS[raw]
    if ("speed-up" in raw or "speedup" in raw) and "(" not in raw:
        return f"{raw.replace('_', ' ')} (×)"  # a speed-up is a factor: its header says so
    if "_" not in raw or raw.strip() != raw:
        return raw
    parts = raw.split("_")
    unit = UNITS.get(parts[-1].lower()) if len(parts) > 1 else None
    words = " ".join(parts[:-1] if unit else parts)
    return f"{words} ({unit})" if unit else words


def list_text(text: str) -> str:
    """A Python list or tuple written as text ("['a', 'b']") joined as 'a, b'; other text unchanged."""
    import ast

    raw = str(text).strip()
    if not _LIST_TEXT.match(raw):
        return text
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if not isinstance(value, (list, tuple)):
        return text
    return ", ".join(list_text(repr(v)) if isinstance(v, (list, tuple)) else str(v) for v in value) or DASH


def dict_text(text: str) -> str:
    """A Python dict written as text: a range ("{'min': '2.11', 'max': '2.11.99'}") as '2.11–2.11.99', another
    as 'key value; key value'; other text unchanged."""
    import ast

    try:
        value = ast.literal_eval(str(text).strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    if not isinstance(value, dict) or not value:
        return text
    if set(value) <= {"min", "max"}:
        return f"{value.get('min', '…')}–{value.get('max', '…')}"
    return "; ".join(f"{k} {list_text(repr(v)) if isinstance(v, (list, tuple)) else v}" for k, v in value.items())


def lists_in_text(text: str) -> str:
    """Every Python list or dict written inside a sentence ("index dtypes ['int64', 'int64']", "the seed's
    {'min': '2.11', 'max': '2.11.99'}") as text."""
    for _ in range(3):  # nested ones: the innermost first
        joined = _SENTENCE_LIST.sub(lambda m: list_text(m.group(0)), text)
        joined = _INNER_DICT.sub(lambda m: dict_text(m.group(0)), joined)
        if joined == text:
            break
        text = joined
    return text


def result_first(columns: list[str], keep: list[int]) -> list[int]:
    """The kept column indices with result columns (RESULT_WORDS) moved right after the first one."""
    def is_result(i: int) -> bool:
        parts = set(re.split(r"[_\s()/|]+", str(columns[i]).lower()))
        return bool(parts & set(RESULT_WORDS))

    head, rest = keep[:1], keep[1:]
    return head + [i for i in rest if is_result(i)] + [i for i in rest if not is_result(i)]


# An emoji mark inside quoted text (a seed's "full model ✅") as a word in brackets.
MARK_WORDS = {"✅": "(yes)", "❌": "(no)", "⚠️": "(warning)", "⚠": "(warning)", "⏭️": "(skipped)", "⏭": "(skipped)"}


def marks_as_words(text: str) -> str:
    """Text with every emoji status mark written as a word ('full model ✅' → 'full model (yes)')."""
    text = str(text or "")  # a field the record lacks reads as ''
    for mark, word in MARK_WORDS.items():
        text = text.replace(mark, word)
    return text


def mark_html(text: str) -> str | None:
    """A recorded status mark as a word on a coloured mark ('✅' → ok), None for other text."""
    word = STATUS_MARKS.get(str(text).strip())
    return f"<span class='mark {word}'>{word}</span>" if word else None


def _cell(text: str, column: str = "") -> str:
    text = str(text)
    if is_missing(text):
        return DASH
    if (mark := mark_html(text)) is not None:
        return mark
    if column in PATH_COLUMNS and path_name(text) != text:
        return f"<span title='{html.escape(text)}'>{html.escape(path_name(text))}</span>"
    text = marks_as_words(text)
    text = fmt_number(lists_in_text(list_text(text)))
    if len(text) <= LONG_CELL:
        return html.escape(text)
    return _folded(text)


def _folded(text: str) -> str:
    """A long cell folded into <details>: its start as the summary, the whole text inside."""
    return (f"<details class='cell'><summary>{html.escape(clip(text, 90))}</summary>"
            f"<div class='full'>{html.escape(text)}</div></details>")


def curated(columns: list[str], rows: list[list[str]], full_html: str = "", note: str = "") -> str:
    """The curated HTML of a table given as column names and rows of cell texts (see the module doc)."""
    columns = [str(c) for c in columns]
    rows = [[str(v) for v in (list(r) + [""] * len(columns))[: len(columns)]] for r in rows]
    keep, notes = [], []
    empty = [c for i, c in enumerate(columns) if rows and all(is_missing(r[i]) for r in rows)]
    for i, c in enumerate(columns):
        values = {r[i] for r in rows}
        if c in empty:
            continue
        if len(rows) > 1 and len(values) == 1 and i > 0:
            notes.append(f"{human_header(c)} = {fmt_number(list_text(next(iter(values))))}")
            continue
        keep.append(i)
    keep = result_first(columns, keep)
    hidden_cols = keep[MAX_COLUMNS:]
    keep = keep[:MAX_COLUMNS]
    shown_rows = rows[:MAX_ROWS]
    head = "".join(f"<th title='{html.escape(columns[i])}'>{html.escape(human_header(columns[i]))}</th>" for i in keep)
    numeric = {i for i in keep if any(not is_missing(r[i]) for r in rows)
               and all(is_missing(r[i]) or _NUMBER.match(r[i].strip()) for r in rows)}
    body = "".join("<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{_cell(r[i], columns[i])}</td>"
                                    for i in keep)
                   + "</tr>" for r in shown_rows)
    lines = []
    if notes:
        lines.append("every row: " + html.escape("; ".join(notes)))
    if empty:
        lines.append("no value in any row: " + html.escape(", ".join(map(human_header, empty))))
    if note:
        lines.append(html.escape(note))
    out = []
    if lines:
        out.append(f"<p class='kit-note'>{'<br>'.join(lines)}</p>")
    out.append(f"<div class='kit-scroll'><table class='dataframe kit-table'><thead><tr>{head}</tr></thead>"
               f"<tbody>{body}</tbody></table></div>")
    left = []
    if hidden_cols:
        left.append(f"{len(hidden_cols)} more column{'s' if len(hidden_cols) != 1 else ''} "
                    f"({html.escape(', '.join(human_header(columns[i]) for i in hidden_cols))})")
    if len(rows) > MAX_ROWS:
        left.append(f"{len(rows) - MAX_ROWS} more rows")
    if full_html:  # the frame as recorded, one click away, whether or not anything was left out
        why = f" ({'; '.join(left)})" if left else " as recorded"
        out.append(f"<details class='kit-full'><summary>whole table: {len(rows)} rows × {len(columns)} columns"
                   f"{why}</summary><div class='kit-scroll'>{full_html}</div></details>")
    elif left:
        out.append(f"<p class='kit-note'>not shown: {'; '.join(left)}</p>")
    return f"<div class='kit-frame'>{KIT_TABLE_STYLE}{''.join(out)}</div>"


KIT_TABLE_STYLE = ("<style>.kit-frame table.kit-table{border-collapse:collapse;font-size:.85rem;margin:.3rem 0}"
                   ".kit-frame th,.kit-frame td{border:1px solid #ddd;padding:.2rem .45rem;text-align:left!important;"
                   "vertical-align:top;max-width:28rem;overflow-wrap:anywhere}.kit-frame td.num{text-align:right!important;white-space:nowrap}"
                   ".kit-frame th{background:#f5f5f5}.kit-note{color:#666;font-size:.8rem;margin:.2rem 0}"
                   ".kit-scroll{overflow-x:auto}.kit-frame details.cell>summary{font-weight:normal}"
                   ".kit-frame .full{white-space:pre-wrap}.kit-frame .mark{font-weight:600;padding:0 .3rem;"
                   "border-radius:.25rem}.kit-frame .mark.ok{background:#d4f7d4}.kit-frame .mark.failed{background:"
                   "#ffd6d6}.kit-frame .mark.differs{background:#fff1c2}.kit-frame .mark.skipped{background:#eee}"
                   "</style>")


def missing_as_dash(table_html: str) -> str:
    """pandas' HTML with its missing-value cells written as `—`."""
    return _MISSING_CELL.sub(f"<td>{DASH}</td>", table_html)


def frame_html(frame: Any) -> str:
    """The curated HTML of a pandas DataFrame (a default RangeIndex is left out, a named index is a column)."""
    import pandas as pd

    df = frame
    if not isinstance(df.index, pd.RangeIndex) or df.index.name is not None:
        df = df.reset_index()
    columns = [" / ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in df.columns]
    rows = [["" if _missing_value(v) else str(v) for v in row] for row in df.itertuples(index=False)]
    full = missing_as_dash(frame.to_html(max_rows=500, max_cols=60))
    return curated(columns, rows, full)


def _missing_value(v: Any) -> bool:
    try:
        import pandas as pd

        return v is None or bool(pd.isna(v)) if not isinstance(v, (list, tuple, dict, set)) else False
    except (TypeError, ValueError):
        return False


class _Table(HTMLParser):
    """Header and body cell texts of one pandas-rendered table; `plain` is False for anything unusual."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.head_rows: list[list[str]] = []
        self.body_rows: list[list[tuple[str, str]]] = []  # (tag, text)
        self.part = ""
        self.cell: list[str] | None = None
        self.tag = ""
        self.row: list[Any] | None = None
        self.plain = True
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.depth += 1
            self.plain &= self.depth == 1
        elif tag in ("thead", "tbody"):
            self.part = tag
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            if any(k in ("colspan", "rowspan") for k, _ in attrs):
                self.plain = False
            self.cell, self.tag = [], tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            text = "".join(self.cell).strip()
            self.row.append(text if self.part == "thead" else (self.tag, text))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            (self.head_rows if self.part == "thead" else self.body_rows).append(self.row)
            self.row = None
        elif tag == "table":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


_KIT_HEAD = re.compile(r"<th>([^<]*)</th>")
_KIT_TEXT = re.compile(r"(<td[^>]*>|<div class='full'>|<summary>)([^<]*)(</td>|</div>|</summary>)")
# A folded cell's summary is re-cut from its whole text once that reads as text: a cut repr cannot be parsed.
_KIT_FOLD = re.compile(r"<details class='cell'><summary>[^<]*</summary><div class='full'>([^<]*)</div></details>")


_KIT_STYLE = re.compile(r"<style>\.kit-frame .*?</style>", re.S)


def refresh_kit_table(output_html: str) -> str:
    """A table the kit curated in an older release, read with today's rules: headers as words with units, lists
    joined as text, today's table style (the whole frame under it stays as recorded)."""
    shown, sep, full = output_html.partition("<details class='kit-full'>")
    shown = _KIT_STYLE.sub(lambda m: KIT_TABLE_STYLE, shown, count=1)
    shown = _KIT_HEAD.sub(lambda m: f"<th title='{html.escape(html.unescape(m.group(1)))}'>"
                                    f"{html.escape(human_header(html.unescape(m.group(1))))}</th>", shown)
    shown = _KIT_TEXT.sub(lambda m: m.group(1) + (mark_html(html.unescape(m.group(2))) or html.escape(
        lists_in_text(list_text(html.unescape(m.group(2)))), quote=False)) + m.group(3), shown)
    shown = _KIT_FOLD.sub(lambda m: _folded(html.unescape(m.group(1))), shown)
    return shown + sep + full


def curate_table_html(output_html: str) -> str:
    """A notebook's text/html output with every pandas table in it curated (one the kit curated already is
    refreshed: refresh_kit_table); other HTML is left alone."""
    if "kit-table" in output_html:
        return refresh_kit_table(output_html)
    if "dataframe" not in output_html:
        return output_html

    def one(match: re.Match[str]) -> str:
        block = match.group(0)
        table = re.search(r"<table.*</table>", block, re.S).group(0)
        parsed = _Table()
        try:
            parsed.feed(table)
        except Exception:  # noqa: BLE001 - a table we cannot read stays as pandas wrote it
            return missing_as_dash(block)
        if not parsed.plain or len(parsed.head_rows) != 1 or not parsed.body_rows:
            return missing_as_dash(block)
        columns = parsed.head_rows[0]
        rows = parsed.body_rows
        index_is_default = (columns and columns[0] == "" and all(
            r and r[0][0] == "th" and r[0][1] == str(i) for i, r in enumerate(rows)))
        if index_is_default:
            columns, rows = columns[1:], [r[1:] for r in rows]
        elif columns and columns[0] == "":
            columns = ["", *columns[1:]]
        texts = [[t for _, t in r] for r in rows]
        cut = [i for i, c in enumerate(columns) if c == "..."]  # pandas' own truncation marks
        cut_rows = [r for r in texts if r and all(t == "..." for t in r[1:] or r)]
        if cut or cut_rows:
            columns = [c for i, c in enumerate(columns) if i not in cut]
            texts = [[t for i, t in enumerate(r) if i not in cut] for r in texts if r not in cut_rows]
        note = ("pandas cut this table when the notebook ran; the whole of it is in results.json"
                if cut or cut_rows else "")
        return curated(columns, texts, missing_as_dash(table), note)

    return _DATAFRAME.sub(one, output_html)


def install(ip: Any = None) -> bool:
    """Make DataFrames display as curated tables in this IPython kernel (text/plain stays pandas'); False outside
    IPython. Idempotent. The integrator calls it where a notebook starts, e.g. at the top of `findings.start`."""
    if ip is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        ip = get_ipython()
    if ip is None:
        return False
    formatter = ip.display_formatter.formatters["text/html"]
    try:
        import pandas as pd
    except ImportError:
        return False
    formatter.for_type(pd.DataFrame, frame_html)  # by the class: its __module__ differs across pandas releases
    return True
