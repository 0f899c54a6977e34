"""model_check's subject: any model, named by a spec, built offline with seeded weights beside its example inputs.

  ultralytics:<yaml>      any model yaml ultralytics ships (yolo11n.yaml, yolov8n-seg.yaml, rtdetr-l.yaml ...), built
                          by YOLO(yaml) / RTDETR(yaml), fused, export mode, conv weights redrawn He-normal (bench.live)
  torchvision:<name>      torchvision.models.get_model(name, weights=None), its own initialisation
  <module>:<factory>      a function importable from PYTHONPATH returning (model, example_inputs); it gets `imgsz`,
                          `batch` and `seed` when its signature names them
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from ...bench import detections, live, yolo

FORMS = "ultralytics:<yaml>, torchvision:<name> or <module>:<factory>"


@dataclass(frozen=True)
class Kind:
    """One way of naming a model: how a name is checked (without building anything) and how it is built."""

    check: Callable[[str], "str | None"]
    build: Callable[[str, int, int, int], tuple[torch.nn.Module, tuple[Any, ...]]]


def split_spec(spec: str) -> tuple[str, str]:
    """`ultralytics:yolo11n.yaml` → ("ultralytics", "yolo11n.yaml"); `pkg.mod:make` → ("factory", "pkg.mod:make")."""
    prefix, _, name = spec.partition(":")
    return (prefix, name) if prefix in KINDS and prefix != "factory" else ("factory", spec)


# --- ultralytics ----------------------------------------------------------------------------------

def _ultralytics_yamls() -> dict[str, Path]:
    """Every model yaml of the installed ultralytics by file name ({} when it is not installed)."""
    found = importlib.util.find_spec("ultralytics")
    if found is None or not found.submodule_search_locations:
        return {}
    root = Path(list(found.submodule_search_locations)[0]) / "cfg" / "models"
    return {p.name: p for p in root.rglob("*.y*ml")}


def _unscaled(name: str) -> str:
    """ultralytics' own rule (yaml_model_load): the scale letter after the version goes (yolo11n.yaml → yolo11.yaml)."""
    stem, dot, ext = name.rpartition(".")
    return re.sub(r"(\d+)([nslmx])(.+)?$", r"\1\3", stem) + dot + ext


def check_ultralytics(name: str) -> str | None:
    """None when ultralytics ships this yaml (directly or as a scale of one), else why not."""
    if not name.endswith((".yaml", ".yml")):
        return f"ultralytics:{name}: name a model yaml (e.g. ultralytics:yolo11n.yaml)"
    yamls = _ultralytics_yamls()
    if not yamls:
        return "ultralytics is not installed"
    if name in yamls or _unscaled(name) in yamls:
        return None
    close = difflib.get_close_matches(name, list(yamls), n=3)
    return f"ultralytics ships no model yaml {name!r}" + (f" (close: {', '.join(close)})" if close else "")


def build_ultralytics(name: str, imgsz: int, batch: int, seed: int) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """The yaml's task model as ultralytics' exporter prepares it: fused, eval, export mode, end to end where the
    head has the NMS-free branch; conv weights redrawn He-normal (seeded) so scores spread and top-k has no ties."""
    yolo.offline_ultralytics()
    import ultralytics

    maker = ultralytics.RTDETR if "rtdetr" in name else ultralytics.YOLO
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = maker(name).model
    head = net.model[-1]
    if getattr(head, "one2one_cv2", None) is not None:
        head.end2end = True  # built with the one-to-one branch (YOLO26): deploy it with its top-k postprocess
    net = live.liven(net.fuse().eval(), seed)
    for module in net.modules():
        if hasattr(module, "export"):
            module.export = True
    return net.requires_grad_(False), (live.image(batch, imgsz, imgsz, seed=seed),)


# --- torchvision ----------------------------------------------------------------------------------

def check_torchvision(name: str) -> str | None:
    """None when torchvision.models knows the name, else why not (with close names)."""
    if importlib.util.find_spec("torchvision") is None:
        return "torchvision is not installed"
    import torchvision

    known = torchvision.models.list_models()
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=3)
    return f"torchvision has no model {name!r}" + (f" (close: {', '.join(close)})" if close else "")


def calibrate_norms(net: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    """BatchNorm statistics from one seeded batch (momentum None: that batch alone sets them), then eval. Untrained,
    unit running variance shrinks activations layer by layer: mobilenet_v3_small's logits come out ~1e-16, every
    comparison with eager passes on denormals and eager itself slows tenfold."""
    norms = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None
    if norms:
        with torch.no_grad():
            net.train()(x)
    return net.eval()


def build_torchvision(name: str, imgsz: int, batch: int, seed: int) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """torchvision.models.get_model(name, weights=None) with its own initialisation, seeded, its BatchNorm statistics
    from a seeded batch (calibrate_norms); a seeded image batch."""
    import torchvision

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torchvision.models.get_model(name, weights=None)
    calibrate_norms(net, live.image(2, imgsz, imgsz, seed=seed + 1))
    return net.requires_grad_(False), (live.image(batch, imgsz, imgsz, seed=seed),)


# --- module:factory -------------------------------------------------------------------------------

def _factory(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.rpartition(":")
    return getattr(importlib.import_module(module), attr)


def check_factory(spec: str) -> str | None:
    """None when `module:factory` names a callable importable from PYTHONPATH, else why not."""
    module, _, attr = spec.rpartition(":")
    if not module or not attr:
        return f"{spec!r} is none of {FORMS}"
    try:
        if importlib.util.find_spec(module) is None:
            return f"no module {module!r} on PYTHONPATH"
        fn = getattr(importlib.import_module(module), attr, None)
    except Exception as exc:  # the user's module may fail to import: that is the answer
        return f"importing {module!r} failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None if callable(fn) else f"{module!r} has no callable {attr!r}"


def build_factory(spec: str, imgsz: int, batch: int, seed: int) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """The factory's (model, example_inputs), called with the imgsz / batch / seed its signature names."""
    fn = _factory(spec)
    offered = {"imgsz": imgsz, "batch": batch, "seed": seed}
    names = inspect.signature(fn).parameters
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net, inputs = fn(**{k: v for k, v in offered.items() if k in names})
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    return net.eval().requires_grad_(False), inputs


KINDS: dict[str, Kind] = {
    "ultralytics": Kind(check_ultralytics, build_ultralytics),
    "torchvision": Kind(check_torchvision, build_torchvision),
    "factory": Kind(check_factory, build_factory),
}


def check_spec(spec: Any) -> str | None:
    """The catalog's check of the `model` parameter: None when the spec names a model that can be built here."""
    if not isinstance(spec, str) or ":" not in spec:
        return f"expected {FORMS}"
    kind, name = split_spec(spec)
    return KINDS[kind].check(name)


def build(spec: str, imgsz: int = 64, batch: int = 1, seed: int = 0,
          device: str = "cpu") -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """The model (eval, no grad) and its example inputs on `device`."""
    kind, name = split_spec(spec)
    net, inputs = KINDS[kind].build(name, imgsz, batch, seed)
    moved = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
    return net.to(device), moved


def outputs_of(value: Any) -> list[torch.Tensor]:
    """A back-end's result as a flat list of CPU float tensors (any nesting of tuples, lists and dicts; arrays too)."""
    import numpy as np
    from torch.utils._pytree import tree_leaves

    leaves = [x for x in tree_leaves(value) if isinstance(x, (torch.Tensor, np.ndarray))]
    return [torch.as_tensor(x).detach().float().cpu().clone() for x in leaves]


def is_image_batch(inputs: tuple[Any, ...]) -> bool:
    """Whether the first input is a float [N, C, H, W] batch: the kit's dynamic H, W recipe applies to it."""
    x = inputs[0] if inputs else None
    return isinstance(x, torch.Tensor) and x.ndim == 4 and x.is_floating_point()


# An output matches eager when max |Δ| ≤ REL_TOL × its largest |eager| value + ABS_TOL: float32 sums reordered by a
# back-end's kernels stay orders of magnitude inside it, a wrong kernel does not.
REL_TOL, ABS_TOL = 1e-3, 1e-5


def _close(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, bool]:
    """max |Δ| of two same-shape outputs and whether it is within tolerance (NaN where eager has none: not close)."""
    if not out.numel():
        return 0.0, True
    diff = (out - ref).abs()
    both_nan = torch.isnan(out) & torch.isnan(ref)
    worst = float(diff[~both_nan].max()) if (~both_nan).any() else 0.0
    scale = float(ref[~torch.isnan(ref)].abs().max()) if (~torch.isnan(ref)).any() else 0.0
    return worst, bool(worst <= REL_TOL * scale + ABS_TOL) and not bool(torch.isnan(diff[~both_nan]).any())


def compare(outputs: list[torch.Tensor], reference: list[torch.Tensor]) -> dict[str, Any]:
    """An output list against eager's: each output element by element; a [B, k, 6] detection output that is not
    element-wise close is matched order-insensitively instead (detections.agrees: top-k breaks near-ties apart)."""
    if not outputs or not reference:
        return {}
    if len(outputs) != len(reference):
        return {"correct": False, "max_abs": None, "why": f"{len(outputs)} outputs, eager has {len(reference)}"}
    worst, correct, matched = 0.0, True, None
    for i, (out, ref) in enumerate(zip(outputs, reference)):
        if out.shape != ref.shape:
            return {"correct": False, "max_abs": None,
                    "why": f"output {i} is {list(out.shape)}, eager's {list(ref.shape)}"}
        diff, close = _close(out, ref)
        if not close and ref.ndim == 3 and ref.shape[-1] == 6:
            delta = detections.compare(out, ref)
            close, matched = detections.agrees(delta), delta.get("match_rate")
        worst, correct = max(worst, diff), correct and close
    return {"correct": correct, "max_abs": worst, "matched": matched, "outputs": len(outputs),
            "order_insensitive": matched is not None}
