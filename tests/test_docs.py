"""The README reads in two minutes and leads to the docs; the docs site builds offline with --strict."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_short_and_shows_the_grid_on_its_first_screen() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the detail into docs/"
    first_screen = "\n".join(lines[:30])
    assert "](docs/grid.png)" in first_screen and (REPO / "docs" / "grid.png").stat().st_size > 10_000
    text = "\n".join(lines)
    assert "make report" in text and "make test" in text and "**seeds**" in text


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))])
def test_every_relative_link_reaches_a_file(page: str) -> None:
    path = REPO / page
    targets = [t for t in LINK.findall(path.read_text()) if not re.match(r"^[a-z]+:", t)]
    missing = [t for t in targets if not (path.parent / t).exists()
               and not re.fullmatch(r"investigations/\w+\.md|\w+\.md", t)]  # pages docs/hooks.py makes
    assert not missing, f"{page}: {missing}"


def test_the_docs_build_offline_with_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is missing (pip install -e '.[docs]', or make docs)")
    pytest.importorskip("material", reason="mkdocs-material is missing (pip install -e '.[docs]')")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path),
                                "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"})
    assert built.returncode == 0, built.stderr[-3000:]
    pages = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")}
    assert {"index.html", "times.html", "api.html", "authoring.html", "investigations/index_dtype.html"} <= pages
    times = (tmp_path / "site" / "times.html").read_text()
    assert times.count("<table") >= 2  # the run-time tables, made from run.json at build time
    assert "yolo26kit.findings.Findings" in (tmp_path / "site" / "api.html").read_text()


RUN_FOLDER = re.compile(r"reports/((?:bisect|matrix)-[\w.-]+|\d{8}T\d{6}Z-[\w-]+)")


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))])
def test_every_run_folder_a_page_names_is_committed_or_said_to_be_retired(page: str) -> None:
    """A run, bisect or matrix folder a page names exists under reports/, or the page says within a line or two that
    it was retired (and how to get it back): a reader never follows a path to nothing."""
    lines = (REPO / page).read_text().splitlines()
    dangling = [f"{n + 1}: reports/{name}" for n, line in enumerate(lines) for name in RUN_FOLDER.findall(line)
                if not (REPO / "reports" / name).exists()
                and "retired" not in " ".join(lines[max(0, n - 1):n + 3])]
    assert not dangling, f"{page}: {dangling}"


def test_every_committed_bisect_is_described_in_the_matrix_page() -> None:
    described = (REPO / "docs" / "matrix.md").read_text()
    missing = [p.name for p in sorted((REPO / "reports").glob("bisect-*")) if f"reports/{p.name}" not in described]
    assert not missing, f"docs/matrix.md, *Committed bisects*, lacks {missing}"
