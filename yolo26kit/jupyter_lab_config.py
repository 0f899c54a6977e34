"""Jupyter config for `make lab`: saving a tracked notebook (notebooks/*.ipynb) leaves the checkout clean.

JupyterLab's saves (autosave included) would otherwise write outputs, execution counts and the kernel's
`language_info` into the tracked notebooks, and every later run would be stamped `.dirty`. The pre-save hook
strips what a session adds: outputs, execution counts, the output-state keys of cell metadata, and the
notebook-level metadata, which it takes back from the file on disk. The open notebook keeps its outputs;
results still go to reports/runs/interactive/. A notebook saved anywhere else keeps everything. Jupyter
serialises with nbformat (indent 1, sorted keys, characters unescaped), the form the committed notebooks are kept
in (tests/test_lab.py holds them to it), so a save of an unchanged notebook writes the same bytes.

Loaded with `jupyter lab --config=yolo26kit/jupyter_lab_config.py` (what `make lab` runs): the hook is
registered by the contents manager class below rather than set as the `pre_save_hook` trait, which Jupyter
validates again on each config reload and then warns "Overriding existing pre_save_hook".

The same module is a server extension: once the server is up it prints the URL to open, token included, on
stdout, where a `--no-browser` session finds it without reading Jupyter's log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

TRACKED = Path(__file__).resolve().parents[1] / "notebooks"
# cell metadata a session writes about outputs or timing, never about the cell's source
SESSION_CELL_KEYS = ("execution", "ExecuteTime", "scrolled", "collapsed")


def _tracked_file(path: str, contents_manager: Any) -> Path | None:
    """The file a save of `path` writes when it is a tracked notebook, else None."""
    target = (Path(contents_manager.root_dir) / path.lstrip("/")).resolve()
    return target if target.parent == TRACKED and target.suffix == ".ipynb" else None


def _metadata_on_disk(target: Path) -> dict[str, Any] | None:
    """The notebook-level metadata of the committed file, or None when there is none to read."""
    try:
        return json.loads(target.read_text(encoding="utf-8"))["metadata"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def strip_tracked_outputs(model: dict[str, Any], path: str, contents_manager: Any, **kwargs: Any) -> None:
    """Pre-save hook: a tracked notebook is saved as committed, but for its sources (outputs, counts, session
    metadata dropped; notebook metadata as on disk)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    target = _tracked_file(path, contents_manager)
    if target is None:
        return
    content = model["content"]
    on_disk = _metadata_on_disk(target)
    if on_disk is not None:
        content["metadata"] = on_disk
    else:  # a new notebook: the kernel's name only, as the committed ones have it
        language = content.get("metadata", {}).get("language_info")
        if isinstance(language, dict):
            content["metadata"]["language_info"] = {"name": language.get("name", "python")}
    for cell in content.get("cells", []):
        metadata = cell.get("metadata", {})
        for key in SESSION_CELL_KEYS:
            metadata.pop(key, None)
        jupyter = metadata.get("jupyter")
        if isinstance(jupyter, dict):
            jupyter.pop("outputs_hidden", None)
            if not jupyter:
                metadata.pop("jupyter")
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None


class TrackedNotebookManager(AsyncLargeFileManager):
    """JupyterLab's own contents manager with strip_tracked_outputs registered as a pre-save hook."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.register_pre_save_hook(strip_tracked_outputs)


def url_to_open(serverapp: Any) -> str:
    """The lines `make lab` prints once the server is up: the URL (or URLs) to open, with the token."""
    urls = [u.strip() for u in str(serverapp.display_url).splitlines() if u.strip()]
    return "\n".join(["", "JupyterLab is up; open this URL in a browser (Ctrl-C here stops it):",
                      *(f"    {u}" for u in urls), ""])


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Server extension hook at load time: nothing to set up (the server does not listen yet)."""


async def _start_jupyter_server_extension(serverapp: Any) -> None:
    """Server extension hook once the IO loop runs, after the server has bound its port: say where to go."""
    print(url_to_open(serverapp), flush=True)


try:
    c = get_config()  # noqa: F821 - defined when Jupyter loads this file as config
except NameError:  # imported as a module (by Jupyter for the class below, and by tests)
    pass
else:
    c.ServerApp.contents_manager_class = TrackedNotebookManager
    # this module as a server extension too: it prints the URL to open once the server is up (merged with the
    # extensions Jupyter enables itself, JupyterLab among them)
    c.ServerApp.jpserver_extensions.update({"yolo26kit.jupyter_lab_config": True})
    # one Ctrl-C stops the server, without the y/n prompt that a terminal under make may never answer
    c.ServerApp.answer_yes = True
