"""Every investigation follows one contract: a package with JUDGES and TABLES, judges that never import the
display code, no investigation importing another, and no kit file over 800 lines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from yolo26kit import catalog

KIT = Path(__file__).resolve().parents[1] / "yolo26kit"
PACKAGES = sorted(p.parent.name for p in (KIT / "investigations").glob("*/__init__.py"))
MAX_LINES = 800


def _imports(path: Path) -> set[str]:
    """Modules a file imports, relative ones resolved against the kit's package path."""
    tree = ast.parse(path.read_text())
    parts = path.relative_to(KIT.parent).with_suffix("").parts
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(parts[:len(parts) - node.level]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    return found


def test_every_registered_investigation_is_a_package():
    registered = {inv.name for inv in catalog.all_investigations()}
    assert registered and registered <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_package_has_judges_for_its_ledger_and_tables(name):
    module = importlib.import_module(f"yolo26kit.investigations.{name}")
    assert module.JUDGES and catalog.get(name).judges == module.JUDGES
    tables = getattr(module, "TABLES", None)
    assert tables and all(callable(f) for f in tables.values())


@pytest.mark.parametrize("name", PACKAGES)
def test_judges_never_import_show_and_no_investigation_imports_another(name):
    folder = KIT / "investigations" / name
    for path in folder.glob("*.py"):
        imported = _imports(path)
        others = {m for m in imported if m.startswith("yolo26kit.investigations.")
                  and m.split(".")[2] not in (name,)}
        assert not others, f"{path.name} imports {sorted(others)}"
        if path.name.startswith("judge"):
            assert not any(m.endswith(".show") or ".show." in m for m in imported), f"{path.name} imports show"


def test_no_kit_file_is_over_800_lines():
    long = {str(p.relative_to(KIT)): n for p in KIT.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long
