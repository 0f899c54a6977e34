"""Jupyter config for `make lab`: a tracked notebook (notebooks/*.ipynb) is saved without outputs.

JupyterLab's autosave would otherwise write outputs and execution counts into the tracked notebooks, and every
later run would be stamped `.dirty`. The pre-save hook strips them from the file only: the open notebook keeps
its outputs, results still go to reports/runs/interactive/. A notebook saved anywhere else keeps its outputs.
Loaded with `jupyter lab --config=yolo26kit/jupyter_lab_config.py` (what `make lab` runs).
"""

from pathlib import Path

TRACKED = Path(__file__).resolve().parents[1] / "notebooks"


def strip_tracked_outputs(model, path, contents_manager, **kwargs):
    """ContentsManager.pre_save_hook: clear outputs and execution counts of a notebook under TRACKED."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    target = (Path(contents_manager.root_dir) / path.lstrip("/")).resolve()
    if target.parent != TRACKED:
        return
    for cell in model["content"].get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None


try:
    c = get_config()  # noqa: F821 - defined when Jupyter loads this file as config
except NameError:  # imported as a module (tests)
    pass
else:
    c.ContentsManager.pre_save_hook = strip_tracked_outputs  # every contents manager, JupyterLab's async one too
