"""`make lab`: a JupyterLab session leaves the checkout clean. A save of a tracked notebook after a session
(outputs, execution counts, the kernel's language_info, timing metadata) writes the committed bytes again."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import warnings
from pathlib import Path

import nbformat
import pytest
from jupyter_server.services.contents.filemanager import FileContentsManager
from traitlets.config.loader import PyFileConfigLoader

from yolo26kit import jupyter_lab_config
from yolo26kit.paths import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# what an ipykernel session writes into the notebook's metadata
SESSION_LANGUAGE = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                    "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                    "pygments_lexer": "ipython3", "version": "3.11.2"}


def _after_a_session(model: dict) -> dict:
    """The model JupyterLab sends on save after Run All: outputs, counts, language_info and timing filled in."""
    model = {"type": "notebook", "format": "json", "content": json.loads(json.dumps(model["content"]))}
    content = model["content"]
    content["metadata"]["language_info"] = dict(SESSION_LANGUAGE)
    content["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    for n, cell in enumerate(c for c in content["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = n + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stderr", "text": "a warning\n"},
                           {"output_type": "execute_result", "execution_count": n + 1, "metadata": {},
                            "data": {"text/plain": "2 — done"}}]
        cell["metadata"]["execution"] = {"iopub.status.busy": "2026-11-27T10:00:00Z"}
        cell["metadata"]["scrolled"] = True
    return model


@pytest.fixture
def tracked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of notebooks/ that the hook treats as the tracked folder (nothing is written in the checkout)."""
    folder = tmp_path / "checkout" / "notebooks"
    folder.mkdir(parents=True)
    for path in NOTEBOOKS:
        (folder / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(jupyter_lab_config, "TRACKED", folder.resolve())
    return folder


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_are_in_the_form_jupyter_writes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert nbformat.writes(nbformat.reads(text, as_version=nbformat.NO_CONVERT)) + "\n" == text, \
        f"{path.name}: rewrite it with nbformat.write (indent 1, sorted keys, characters unescaped)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_save_after_a_session_writes_the_committed_bytes(tracked: Path, path: Path) -> None:
    manager = FileContentsManager(root_dir=str(tracked.parent))
    manager.register_pre_save_hook(jupyter_lab_config.strip_tracked_outputs)
    name = f"notebooks/{path.name}"
    model = _after_a_session(manager.get(name, content=True, type="notebook"))
    manager.save(model, name)
    assert (tracked / path.name).read_bytes() == path.read_bytes()


def test_the_lab_manager_strips_tracked_notebooks_and_keeps_a_copy_elsewhere_whole(tracked: Path) -> None:
    manager = jupyter_lab_config.TrackedNotebookManager(root_dir=str(tracked.parent))
    original = NOTEBOOKS[0]
    model = _after_a_session(asyncio.run(manager.get(f"notebooks/{original.name}", content=True, type="notebook")))
    asyncio.run(manager.save(copy.deepcopy(model), f"notebooks/{original.name}"))
    assert (tracked / original.name).read_bytes() == original.read_bytes()
    asyncio.run(manager.save(copy.deepcopy(model), "copy.ipynb"))  # outside notebooks/: saved as it is
    copied = nbformat.read(tracked.parent / "copy.ipynb", as_version=4)
    assert any(c.get("outputs") for c in copied.cells) and copied.metadata.language_info.version == "3.11.2"


def test_a_new_tracked_notebook_keeps_only_the_kernel_name_of_language_info(tracked: Path) -> None:
    manager = FileContentsManager(root_dir=str(tracked.parent))
    manager.register_pre_save_hook(jupyter_lab_config.strip_tracked_outputs)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    model = _after_a_session({"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))})
    manager.save(model, "notebooks/brand_new.ipynb")
    saved = json.loads((tracked / "brand_new.ipynb").read_text())
    assert saved["metadata"]["language_info"] == {"name": "python"}
    assert saved["cells"][0]["outputs"] == [] and saved["cells"][0]["metadata"] == {}


def test_the_config_installs_the_manager_without_the_override_warning() -> None:
    config = PyFileConfigLoader("jupyter_lab_config.py", path=str(ROOT / "yolo26kit")).load_config()
    cls = config.ServerApp.contents_manager_class
    assert cls.__name__ == "TrackedNotebookManager" and config.ServerApp.answer_yes is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Overriding existing pre_save_hook" was a UserWarning
        manager = cls(root_dir=str(ROOT), config=config)
        manager.update_config(config)  # the server applies its config again after loading extensions
    assert manager.pre_save_hook is None
    assert [h.__name__ for h in manager._pre_save_hooks] == ["strip_tracked_outputs"]


def test_make_lab_takes_extra_flags_and_runs_as_root() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lab:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "--config=yolo26kit/jupyter_lab_config.py" in recipe
    assert "$(LAB_ARGS)" in recipe and "--allow-root" in recipe
