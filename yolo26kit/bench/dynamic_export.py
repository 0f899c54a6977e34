"""Dynamic-shape torch.export of the live YOLO26: the specs (how the model is prepared, which dims are dynamic),
the kit's Detect-head changes that make a dynamic export work, and torch's guards read back in words."""

from __future__ import annotations

import re
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import yolo
from .live import build_model, image

STRIDE = 32  # the largest stride of YOLO26's feature pyramid (P5)
AXES = {0: "batch", 2: "height", 3: "width"}
RECOMMENDED = "derived_kit"  # the spec that works: dynamic_shapes lowers, compiles and letterboxes with it


# --- the kit's Detect-head changes ----------------------------------------------------------------

def anchor_count(height: int, width: int, strides: tuple[int, ...] = (8, 16, 32)) -> int:
    """Anchors of the P3-P5 grids for an input size (each stride-2 conv rounds up)."""
    return sum((1 + (height - 1) // s) * (1 + (width - 1) // s) for s in strides)


def anchors_from_1d_grids(feats: list[torch.Tensor], strides: list[float],
                          offset: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """make_anchors without the (h, w, 2) stack: XNNPACK's reshape takes one dynamic dim, a (h, w) grid has two."""
    points, stride_rows = [], []
    for feat, stride in zip(feats, strides):
        h, w = feat.shape[2:]
        sx = (torch.arange(w).type_as(feat) + offset).unsqueeze(0).expand(h, w).reshape(-1)
        sy = (torch.arange(h).type_as(feat) + offset).unsqueeze(1).expand(h, w).reshape(-1)
        points.append(torch.stack((sx, sy), -1))
        # a Python float, not strides[i] of the stride tensor: .item() on it is data-dependent under export
        stride_rows.append(feat.new_full((h * w, 1), stride))
    return torch.cat(points).transpose(0, 1), torch.cat(stride_rows).transpose(0, 1)


def decode_boxes_flat(self: Any, x: dict[str, torch.Tensor]) -> torch.Tensor:
    """Detect._get_decode_boxes that rebuilds anchors every call from flat grids (no shape cache)."""
    anchors, strides = anchors_from_1d_grids(x["feats"], self.kit_strides)
    return self.decode_bboxes(self.dfl(x["boxes"]), anchors.unsqueeze(0), x.get("angle")) * strides


def topk_static_k(self: Any, scores: torch.Tensor, max_det: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Detect.get_topk_index with k = max_det: `min(max_det, anchors)` exports as torch.sym_min, which
    ExecuTorch's edge verifier rejects. Exact when every allowed size has >= max_det anchors."""
    nc = scores.shape[-1]
    k = max_det
    if self.agnostic_nms:
        scores, labels = scores.max(dim=-1)
        scores, index = scores.topk(k, dim=1)
        return scores[..., None], self._gather(labels[..., None].float(), index), index
    ori_index = scores.max(dim=-1)[0].topk(k, dim=1)[1]
    scores = self._gather(scores, ori_index)
    scores, index = scores.flatten(1).topk(k, dim=1)
    return scores[..., None], (index % nc)[..., None].float(), self._gather(ori_index, index // nc)


FIXES = ("dynamic_head", "flat_anchors", "static_k")


def dynamic_ready(net: torch.nn.Module, min_size: int, fixes: tuple[str, ...] = FIXES) -> torch.nn.Module:
    """The kit's changes to YOLO26's Detect head for a dynamic-shape export (in place; returns net).

    dynamic_head: `head.dynamic = True`, so anchors are rebuilt from the traced shape instead of the
    per-shape cache (an eager call before export otherwise bakes the example size's anchors in).
    flat_anchors: anchors from 1-D grids (XNNPACK lowering). static_k: top-k with a constant k,
    max_det clamped to the anchors of the smallest allowed input (ExecuTorch edge verifier).
    """
    head = yolo.detect_head(net)
    if "dynamic_head" in fixes:
        head.dynamic = True
    if "flat_anchors" in fixes:
        head.kit_strides = [float(s) for s in head.stride.tolist()]
        head._get_decode_boxes = types.MethodType(decode_boxes_flat, head)
    if "static_k" in fixes:
        head.max_det = min(head.max_det, anchor_count(min_size, min_size, tuple(int(s) for s in head.stride.tolist())))
        head.get_topk_index = types.MethodType(topk_static_k, head)
    return net


# --- specs ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    """One way to ask torch.export for dynamic shapes: how the model is prepared and which dims are dynamic."""

    name: str
    title: str
    prep: str  # key of PREPS
    shapes: str  # key of SHAPES
    sweep: str = "size"  # what the sweep varies: "size" (H, W) or "batch"
    example_batch: int | None = None  # None: the `batch` parameter
    edge_check: bool = True  # ExecuTorch: keep the edge IR verifier on


def _derived(lo: int, hi: int) -> tuple:
    from torch.export import Dim

    h = Dim("_height", min=max(1, -(-lo // STRIDE)), max=max(1, hi // STRIDE))
    w = Dim("_width", min=max(1, -(-lo // STRIDE)), max=max(1, hi // STRIDE))
    return ({2: STRIDE * h, 3: STRIDE * w},)


def _dims(kind: str, bounded: bool) -> Callable[[int, int, int], tuple]:
    def build(lo: int, hi: int, _max_batch: int) -> tuple:
        from torch.export import Dim

        hint = getattr(Dim, kind)
        if bounded:
            return ({2: hint(min=lo, max=hi), 3: hint(min=lo, max=hi)},)
        return ({2: hint, 3: hint},)

    return build


def _plain(lo: int, hi: int, _max_batch: int) -> tuple:
    from torch.export import Dim

    return ({2: Dim("height", min=lo, max=hi), 3: Dim("width", min=lo, max=hi)},)


def _batch(_lo: int, _hi: int, max_batch: int) -> tuple:
    from torch.export import Dim

    return ({0: Dim("batch", min=1, max=max_batch)},)


# dynamic_shapes builders: (min_size, max_size, max_batch) -> the dynamic_shapes argument of torch.export
SHAPES: dict[str, Callable[[int, int, int], tuple | None]] = {
    "static": lambda lo, hi, b: None,
    "dim": _plain,
    "derived": lambda lo, hi, b: _derived(lo, hi),
    "auto": _dims("AUTO", False),
    "auto_bounded": _dims("AUTO", True),
    "dynamic": _dims("DYNAMIC", False),
    "dynamic_bounded": _dims("DYNAMIC", True),
    "batch": _batch,
}

SHAPE_TEXT = {
    "static": "none (static)",
    "dim": "H, W: Dim('height'/'width', min, max)",
    "derived": "H, W: 32*Dim('_height'/'_width', min/32, max/32)",
    "auto": "H, W: Dim.AUTO",
    "auto_bounded": "H, W: Dim.AUTO(min, max)",
    "dynamic": "H, W: Dim.DYNAMIC",
    "dynamic_bounded": "H, W: Dim.DYNAMIC(min, max)",
    "batch": "batch: Dim('batch', 1, max_batch)",
}


def _warm(net: torch.nn.Module, example: torch.Tensor, min_size: int) -> torch.nn.Module:
    with torch.no_grad():
        net(example)  # what a smoke test or ultralytics' exporter dry run does
    return net


# model preparations: (fresh net, example input, min_size) -> the net handed to torch.export
PREPS: dict[str, Callable[[torch.nn.Module, torch.Tensor, int], torch.nn.Module]] = {
    "fresh": lambda net, x, lo: net,
    "warm": _warm,
    "dynamic_head": lambda net, x, lo: dynamic_ready(_warm(net, x, lo), lo, ("dynamic_head",)),
    "kit_no_k": lambda net, x, lo: dynamic_ready(_warm(net, x, lo), lo, ("dynamic_head", "flat_anchors")),
    "kit_topk": lambda net, x, lo: dynamic_ready(_warm(net, x, lo), lo, ("dynamic_head", "static_k")),
    "kit": lambda net, x, lo: dynamic_ready(_warm(net, x, lo), lo, FIXES),
}

PREP_TEXT = {
    "fresh": "fresh model, never run",
    "warm": "one eager call at the example size first",
    "dynamic_head": "eager call, then head.dynamic = True",
    "kit_no_k": "eager call, then dynamic_head + flat_anchors (no static k)",
    "kit_topk": "eager call, then dynamic_head + static_k (no flat anchors)",
    "kit": "eager call, then dynamic_ready(): dynamic_head + flat_anchors + static_k",
}

SPECS: dict[str, Spec] = {}


def register_spec(spec: Spec) -> Spec:
    """Add a spec to the registry (names are what the `specs` parameter lists)."""
    SPECS[spec.name] = spec
    return spec


for _spec in (
    Spec("static", "static shapes (baseline)", "fresh", "static"),
    Spec("dim", "plain Dim ranges for H and W", "fresh", "dim"),
    Spec("derived", "derived dims 32*Dim (torch's suggested fix)", "fresh", "derived"),
    Spec("derived_warm", "derived dims after one eager call", "warm", "derived"),
    Spec("derived_dynamic_head", "derived dims after an eager call, head.dynamic = True", "dynamic_head", "derived"),
    Spec("derived_topk", "derived dims, static k only (no flat anchors)", "kit_topk", "derived"),
    Spec("derived_noverify", "derived dims, flat anchors, edge verifier off", "kit_no_k", "derived", edge_check=False),
    Spec("derived_kit", "derived dims, dynamic_ready() model", "kit", "derived"),
    Spec("auto", "Dim.AUTO, unbounded", "fresh", "auto"),
    Spec("auto_bounded", "Dim.AUTO(min, max)", "fresh", "auto_bounded"),
    Spec("dynamic", "Dim.DYNAMIC, unbounded", "fresh", "dynamic"),
    Spec("dynamic_bounded", "Dim.DYNAMIC(min, max)", "fresh", "dynamic_bounded"),
    Spec("batch", "dynamic batch, example batch >= 2", "fresh", "batch", sweep="batch", example_batch=2),
    Spec("batch_from1", "dynamic batch, example batch 1", "fresh", "batch", sweep="batch", example_batch=1),
):
    register_spec(_spec)


def example_size(min_size: int, max_size: int) -> int:
    """The export example's side: the multiple of 32 nearest the middle of [min_size, max_size]."""
    middle = STRIDE * round((min_size + max_size) / (2 * STRIDE))
    return min(max(middle, min_size), max_size)


# --- guards ---------------------------------------------------------------------------------------

_SIZE_SOURCE = re.compile(r"L\['[^']+'\]\.size\(\)\[(\d+)\]|\b[A-Za-z_]\w*\.size\(\)\[(\d+)\]")
_VIOLATION = re.compile(
    r"Not all values of (?P<dim>\w+) = (?P<source>\S+) in the specified range (?P<range>.+?) "
    r"satisfy the generated guard (?P<expr>.+?)\.?\s*$")
_SPECIALIZED = re.compile(r"You marked (?P<dim>\w+) as dynamic but your code specialized it to be a constant \((?P<value>[^)]*)\)")
_EQUAL = re.compile(r"The values of (?P<dim>\w+) = (?P<source>\S+) and (?P<other>\w+) = \S+ must always be equal")


def readable(expr: str, names: dict[int, str] | None = None) -> str:
    """A guard with input sizes named (`L['x'].size()[2]` → height) and `((-1) + h)` written `(h - 1)`."""
    names = names or AXES

    def name(m: re.Match) -> str:
        axis = int(m.group(1) or m.group(2))
        return names.get(axis, f"dim{axis}")

    expr = _SIZE_SOURCE.sub(name, expr.strip())
    expr = re.sub(r"\(\(-1\) \+ (\w+)\)", r"(\1 - 1)", expr)
    expr = re.sub(r"\(-1 \+ (\w+)\)", r"(\1 - 1)", expr)
    return expr


def same_guard(a: str, b: str) -> bool:
    """Two guard texts equal up to whitespace."""
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def suggested_fixes(message: str) -> list[str]:
    """The lines torch prints under `Suggested fixes:` in a constraint violation."""
    if "Suggested fixes:" not in message:
        return []
    fixes = []
    for line in message.split("Suggested fixes:", 1)[1].splitlines()[1:]:
        if not line.strip():
            break
        if not line.startswith(" "):
            break
        fixes.append(line.strip())
    return fixes


def _fix_for(dim: str, fixes: list[str]) -> str:
    word = re.compile(rf"(?<![\w]){re.escape(dim)}(?![\w])|(?<![\w])_{re.escape(dim)}(?![\w])")
    return "; ".join(f for f in fixes if word.search(f))


def parse_violations(message: str) -> list[dict[str, Any]]:
    """A torch.export constraint-violation message as rows: kind, dim, readable guard, range, suggested fix."""
    fixes = suggested_fixes(message)
    names = dict(AXES)
    for m in _VIOLATION.finditer(message):  # use the user's dim names for their axes
        axis = _SIZE_SOURCE.search(m["source"])
        if axis:
            names[int(axis.group(1) or axis.group(2))] = m["dim"]
    rows = []
    for line in message.splitlines():
        line = line.strip().removeprefix("- ").strip()
        if m := _VIOLATION.search(line):
            rows.append({"kind": "guard not provable", "dim": m["dim"], "range": m["range"],
                         "guard": readable(m["expr"], names), "raw": m["expr"], "suggested_fix": _fix_for(m["dim"], fixes)})
        elif m := _SPECIALIZED.search(line):
            rows.append({"kind": "specialized", "dim": m["dim"], "range": "", "guard": f"{m['dim']} == {m['value']}",
                         "raw": line, "suggested_fix": _fix_for(m["dim"], fixes)})
        elif m := _EQUAL.search(line):
            rows.append({"kind": "must be equal", "dim": m["dim"], "range": "", "guard": f"{m['dim']} == {m['other']}",
                         "raw": line, "suggested_fix": _fix_for(m["dim"], fixes)})
    return rows


def guard_kind(expr: str) -> str:
    """Classify an input guard: a specialization to a constant, a stride alignment, a 0/1 check, or other."""
    if re.search(r"==\s*-?\d+\s*$", expr):
        return "specialized to a constant"
    if "==" in expr and "//" in expr:
        return "stride alignment"
    if re.search(r"!=\s*1\s*$|>=\s*2\s*$|^1 <", expr):
        return "size is not 0/1"
    return "other"


def program_guards(ep: Any) -> list[str]:
    """The input guards an ExportedProgram checks when called (`ep.module()`); [] where torch has none."""
    return [readable(g) for g in (getattr(ep, "_guards_code", None) or [])]  # private in torch 2.x


def program_ranges(ep: Any) -> dict[str, str]:
    """The exported input's shape per axis: a size, or its symbol and range constraint."""
    user_inputs = set(ep.graph_signature.user_inputs)
    node = next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user_inputs)
    ranges = {}
    for axis, size in enumerate(node.meta["val"].shape):
        label = AXES.get(axis, f"dim{axis}")
        if isinstance(size, torch.SymInt):
            expr = size.node.expr
            vr = ep.range_constraints.get(expr)
            if vr is None:
                ranges[label] = str(expr)
            else:
                upper = "∞" if "oo" in str(vr.upper) else str(vr.upper)
                ranges[label] = f"{expr} ∈ [{vr.lower}, {upper}]"
        else:
            ranges[label] = str(int(size))
    return ranges


# --- export ---------------------------------------------------------------------------------------


@dataclass
class Exported:
    """One torch.export attempt: how it ended, what torch said, and the program when it worked."""

    spec: Spec
    status: str
    seconds: float
    example: tuple[int, ...]
    error: str = ""
    message: str = ""
    violations: list[dict[str, Any]] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    ranges: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    program: Any = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def export_spec(name: str, *, model: str = "yolo26n", batch: int = 1, min_size: int = 160, max_size: int = 320,
                max_batch: int = 4, device: str = "cpu", seed: int = 0, example_side: int = 0) -> Exported:
    """torch.export (non-strict) of the end-to-end model under one spec; never raises for the export's failure.

    The example's side is `example_side` when given, else the multiple of 32 nearest the range's middle."""
    import time

    spec = SPECS[name]
    size = example_side or example_size(min_size, max_size)
    # the batch specs: example batch 1 on purpose (batch_from1), else at least 2 (0/1 specialization)
    example_batch = batch if spec.example_batch is None else (1 if spec.example_batch == 1 else max(spec.example_batch, batch))
    example = image(example_batch, size, size, seed=0, device=device)
    net = PREPS[spec.prep](build_model(model, seed, device), example, min_size)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            dynamic = SHAPES[spec.shapes](min_size, max_size, max_batch)
            ep = torch.export.export(net, (example,), dynamic_shapes=dynamic, strict=False)
        except Exception as exc:  # the failure is the finding
            message = str(exc)
            return Exported(spec, "error", time.perf_counter() - t0, tuple(example.shape),
                            f"{type(exc).__name__}: {first_line(message)}", message, parse_violations(message),
                            warnings=_warning_lines(caught))
    return Exported(spec, "ok", time.perf_counter() - t0, tuple(example.shape), guards=program_guards(ep),
                    ranges=program_ranges(ep), warnings=_warning_lines(caught), program=ep)


def _warning_lines(caught: list) -> list[str]:
    keep = ("assigned during export", "specializ", "dynamic")
    lines = {first_line(str(w.message)).split(". ")[0] for w in caught if any(k in str(w.message) for k in keep)}
    return sorted(lines)
