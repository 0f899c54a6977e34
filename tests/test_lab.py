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
    # merged into the extensions Jupyter enables, not replacing them: a lazy update of the trait
    assert config.ServerApp.jpserver_extensions.get_value({"jupyterlab": True}) == {
        "jupyterlab": True, "yolo26kit.jupyter_lab_config": True}


def test_the_url_to_open_is_said_once_the_server_is_up() -> None:
    class Server:
        display_url = "http://localhost:8888/lab?token=abc\n    http://127.0.0.1:8888/lab?token=abc"

    said = jupyter_lab_config.url_to_open(Server())
    assert "JupyterLab is up" in said and "    http://localhost:8888/lab?token=abc\n" in said
    assert said.count("token=abc") == 2


@pytest.mark.slow  # a JupyterLab server, ~10 s on 2 cores
def test_make_lab_prints_the_url_with_its_token_on_stdout(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "jupyter", "lab", "--config=yolo26kit/jupyter_lab_config.py", "--no-browser",
            f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={tmp_path}"]
    if os.getuid() == 0:
        argv.append("--allow-root")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline, lines = time.time() + 120, []
        while time.time() < deadline and not any("token=" in line for line in lines):
            lines.append(server.stdout.readline())
        url = next(line.strip() for line in lines if "token=" in line)
        assert url.startswith(f"http://127.0.0.1:{port}/lab?token=") and any("JupyterLab is up" in x for x in lines)
        token = url.split("token=", 1)[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=10) as answer:
            assert answer.status == 200
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_make_lab_takes_extra_flags_and_runs_as_root() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lab:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "--config=yolo26kit/jupyter_lab_config.py" in recipe
    assert "$(LAB_ARGS)" in recipe and "--allow-root" in recipe
