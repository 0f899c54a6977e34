"""One HTML to send: a run's page (or the index and every run's page) and the outputs-only notebook pages,
packed by `single_file` (`yolo26kit report --single-file`) so that it opens offline."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from ..conclusion import name_of
from .answers import find_runs
from .pages import index_page, notebook_and_conclusion, notebook_pages, offline, run_page

_HREF = re.compile(r"""\bhref=(["'])([^"']*)\1""")
SINGLE_FILE_DOWNLOADS = (".results.json", ".txt")  # files linked from the pages that travel inside the single file
SINGLE_FILE_SCRIPT = r"""
const pages = JSON.parse(document.getElementById('kit-pages').textContent);
function show() {
  const args = new URLSearchParams(location.hash.slice(1));
  const id = pages[args.get('page')] ? args.get('page') : Object.keys(pages)[0];
  const frame = document.getElementById('kit-frame');
  document.querySelectorAll('nav a').forEach(a => a.classList.toggle('here', a.dataset.page === id));
  const at = () => { const el = args.get('at') && frame.contentDocument.getElementById(args.get('at'));
                     if (el) { el.scrollIntoView(); el.style.outline = '2px solid #f0c000'; } };
  if (frame.dataset.page !== id) {
    frame.dataset.page = id;
    frame.onload = at;
    frame.srcdoc = document.getElementById('kit-src-' + pages[id]).textContent.replace(/<\\(\/script|!--)/gi, '<$1');
    document.title = id + ' · ' + document.body.dataset.title;
  } else { at(); }
}
window.addEventListener('hashchange', show);
show();
"""


def _script_safe(page: str) -> str:
    """A page as the text of a <script type="text/html">: '</script' and '<!--' cannot end or confuse it
    (SINGLE_FILE_SCRIPT undoes both before showing the page)."""
    return re.sub(r"<(/script|!--)", lambda m: "<\\" + m.group(1), page, flags=re.I)


def _page_id(rel: str) -> str:
    """The single file's id of a page, from its path relative to the folder sent (index.html → 'index')."""
    rel = rel.removesuffix(".nocode.html").removesuffix(".html")
    return "index" if rel == "index" else rel.removesuffix("/index")


def _rewrite_links(page: str, here: str, ids: set[str], downloads: dict[str, str]) -> str:
    """Links of one embedded page: to another embedded page (or a place in one) → '#page=…&at=…' in the top
    window; to a file carried inside → a data: download; to a file left out → plain text; others unchanged."""
    import posixpath

    def one(match: re.Match[str]) -> str:
        quote, href = match.group(1), html.unescape(match.group(2))
        if href.startswith(("http://", "https://", "data:", "mailto:", "javascript:")):
            return match.group(0)
        path, _, frag = href.partition("#")
        if not path:
            target = _page_id(here)
        else:
            rel = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
            if rel in downloads:
                name = html.escape(posixpath.basename(rel))
                return f'href={quote}{downloads[rel]}{quote} download={quote}{name}{quote}'
            if not rel.endswith(".html"):
                return f'data-left-out={quote}{html.escape(rel)}{quote} title={quote}not in this file{quote}'
            target = _page_id(rel)
            if target not in ids:
                return f'data-left-out={quote}{html.escape(rel)}{quote} title={quote}not in this file{quote}'
        new = f"#page={target}" + (f"&at={frag}" if frag else "")
        return f'href={quote}{html.escape(new)}{quote} target={quote}_top{quote}'

    return _HREF.sub(one, page)


def _current_runs(root: Path) -> list[Path]:
    """The runs under root, newest first, without those a newer kit superseded (grid.superseded)."""
    from . import grid
    from .answers import load_run

    runs = [load_run(d, root) for d in find_runs(root)]
    old = grid.superseded(runs)
    return [run.dir for run in runs if run.name not in old]


def newest_batches(root: Path) -> list[Path]:
    """Per stack of the current runs under root (grid.stacks: runs of an older kit left out), its newest batch:
    the newest run holding the most investigations (a run of one notebook finishing a batch does not count)."""
    from . import grid
    from .answers import load_run

    runs = [load_run(d, root) for d in find_runs(root)]
    return [max(stack.runs, key=lambda r: (len(r.investigations), r.name)).dir for stack in grid.stacks(runs)]


def single_files(target: Path, every_run: bool = False, out: Path | None = None) -> list[Path]:
    """`yolo26kit report --single-file`: a run folder → its single file; a folder of runs → one single file per
    stack's newest batch (`newest_batches`), or with `every_run` one file with the index and every current run."""
    target = Path(target)
    if every_run or list(target.glob("*.results.json")):
        return [single_file(target, out)]
    batches = newest_batches(target)
    return [single_file(run_dir, out if len(batches) == 1 else None) for run_dir in batches]


def single_file(target: Path, out: Path | None = None) -> Path:
    """Write one self-contained HTML holding a run's page (or, for a folder of runs, the index and every run's
    page) and every investigation's outputs-only page with its plots, openable offline.

    Each page is kept as it renders on its own and shown in one frame at a time (a bar on top lists them); links
    between pages become '#page=<id>&at=<anchor>'; results.json and crash trace files linked from the pages are
    carried as data: downloads; the code pages and .ipynb files are left out (their links say so). Notebook pages
    are rendered from the .ipynb when it is there, else taken from the .nocode.html on disk.
    """
    import base64


    target = Path(target)
    single_run = bool(list(target.glob("*.results.json")))
    run_dirs = [target] if single_run else _current_runs(target)
    if not run_dirs:
        raise ValueError(f"no results.json under {target}")
    root = target if not single_run else target
    pages: dict[str, str] = {}  # rel path → html
    labels: dict[str, str] = {}
    if not single_run:
        pages["index.html"] = index_page(target)
        labels["index.html"] = "all runs"
    downloads: dict[str, str] = {}
    for run_dir in run_dirs:
        prefix = "" if single_run else run_dir.relative_to(root).as_posix() + "/"
        stems = sorted({p.name.removesuffix(".ipynb") for p in run_dir.glob("*.ipynb")} |
                       {p.name.removesuffix(".nocode.html") for p in run_dir.glob("*.nocode.html")})
        pages[prefix + "index.html"] = run_page(run_dir, frozenset(f"{stem}.nocode.html" for stem in stems))
        labels[prefix + "index.html"] = f"run {run_dir.name}"
        for stem in stems:
            ipynb = run_dir / f"{stem}.ipynb"
            if ipynb.exists():
                nb, head = notebook_and_conclusion(ipynb)
                page = notebook_pages(ipynb, nb, head, which=(".nocode.html",))[".nocode.html"]
            else:
                page = (run_dir / f"{stem}.nocode.html").read_text(encoding="utf-8")
            pages[f"{prefix}{stem}.nocode.html"] = page
            labels[f"{prefix}{stem}.nocode.html"] = name_of(stem)  # its name for people; the id is the page's
        for path in sorted(run_dir.iterdir()):
            if path.is_file() and path.name.endswith(SINGLE_FILE_DOWNLOADS):
                kind = "application/json" if path.suffix == ".json" else "text/plain"
                downloads[prefix + path.name] = (f"data:{kind};base64,"
                                                 f"{base64.b64encode(path.read_bytes()).decode('ascii')}")
    ids = {_page_id(rel) for rel in pages}
    sources, nav, index = [], [], {}
    for n, (rel, page) in enumerate(pages.items()):
        pid = _page_id(rel)
        index[pid] = str(n)
        body = offline(_rewrite_links(page, rel, ids, downloads))
        sources.append(f'<script type="text/html" id="kit-src-{n}">{_script_safe(body)}</script>')
        if rel.endswith("index.html") and (not single_run or rel == "index.html") and nav:
            nav.append("<span class='sep'></span>")
        nav.append(f'<a href="#page={html.escape(pid)}" data-page="{html.escape(pid)}" title="{html.escape(pid)}">'
                   f'{html.escape(labels[rel])}</a>')
    title = f"yolo26kit · {target.name}"
    doc = ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
           f"<title>{html.escape(title)}</title><style>"
           "body{margin:0;font-family:system-ui,sans-serif}nav{position:sticky;top:0;background:#1d4f80;padding:.35rem .6rem;"
           "display:flex;flex-wrap:wrap;gap:.2rem .4rem;z-index:1}nav a{color:#fff;text-decoration:none;padding:.1rem .45rem;"
           "border-radius:.25rem;font-size:.85rem}nav a.here{background:#fff;color:#1d4f80;font-weight:600}"
           "nav .sep{width:1px;background:#9bc;margin:0 .3rem}#kit-frame{border:0;width:100%;height:calc(100vh - 2.4rem);"
           "display:block}</style></head>"
           f"<body data-title='{html.escape(title)}'><nav>{''.join(nav)}</nav><iframe id='kit-frame' title='page'></iframe>"
           f"<script type='application/json' id='kit-pages'>{json.dumps(index)}</script>{''.join(sources)}"
           f"<script>{SINGLE_FILE_SCRIPT}</script></body></html>")
    out = Path(out) if out else target / f"{target.name}.single.html"
    out.write_text(doc, encoding="utf-8")
    return out
