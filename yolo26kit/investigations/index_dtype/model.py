"""Index dtype: the modules under test (the Detect head's top-k variants, the postprocess alone, one operator
alone, the whole model or its backbone) and the Spec a child process rebuilds each one and its inputs from."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import torch

from ...bench import yolo
from ...backends import executorch_cuda, executorch_cuda_releases

VARIANTS = ("legacy", "gather", "upstream", "legacy_cast", "gather_floatdiv")
STRIDES = yolo.STRIDES


# --- the three top-k variants ----------------------------------------------------------------------------------

def legacy_postprocess(self: Any, preds: torch.Tensor) -> torch.Tensor:
    """Detect.postprocess as ultralytics shipped it when the seed was written."""
    boxes, scores = preds.split([4, self.nc], dim=-1)
    scores, conf, idx = self.get_topk_index(scores, self.max_det)
    boxes = boxes.gather(dim=1, index=idx.repeat(1, 1, 4))
    return torch.cat([boxes, scores, conf], dim=-1)


def legacy_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The seed's original top-k: advanced indexing into ori_index (aten.index.Tensor)."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores, index = scores.flatten(1).topk(k)
    idx = ori_index[torch.arange(batch_size)[..., None], index // nc]  # original index
    return scores[..., None], (index % nc)[..., None].float(), idx


def legacy_cast_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The seed's original top-k with explicit int64 casts on the top-k index and on `index // nc`."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores, index = scores.flatten(1).topk(k)
    index = index.to(torch.int64)
    idx = ori_index[torch.arange(batch_size)[..., None], (index // nc).to(torch.int64)]
    return scores[..., None], (index % nc)[..., None].float(), idx


def gather_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The seed's fix: the same top-k, with the anchor lookup done by torch.gather."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores_gathered = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores_out, index = scores_gathered.flatten(1).topk(k)
    index = index.to(torch.int64)
    class_indices = (index % nc).unsqueeze(-1)
    anchor_idx = (index // nc).unsqueeze(-1)
    idx = torch.gather(ori_index, dim=1, index=anchor_idx)
    return scores_out.unsqueeze(-1), class_indices.float(), idx


def gather_floatdiv_get_topk_index(self: Any, scores: torch.Tensor, max_det: int):
    """The workaround of the root cause: the seed's gather top-k with the anchor index computed in float64 and cast
    back (`(index.double() / nc).floor().long()`), so no integer floor division reaches AOT Inductor (the rewrite
    ExecuTorch's CUDA back-end makes itself from executorch 1.4.0, ReplaceInt64FloorDivWithFloatPass)."""
    batch_size, anchors, nc = scores.shape
    k = max_det if self.export else min(max_det, anchors)
    ori_index = scores.max(dim=-1)[0].topk(k)[1].unsqueeze(-1)
    scores_gathered = scores.gather(dim=1, index=ori_index.repeat(1, 1, nc))
    scores_out, index = scores_gathered.flatten(1).topk(k)
    class_indices = (index % nc).unsqueeze(-1)
    anchor_idx = (index.double() / nc).floor().long().unsqueeze(-1)
    idx = torch.gather(ori_index, dim=1, index=anchor_idx)
    return scores_out.unsqueeze(-1), class_indices.float(), idx


TOPK = {"legacy": legacy_get_topk_index, "legacy_cast": legacy_cast_get_topk_index, "gather": gather_get_topk_index,
        "gather_floatdiv": gather_floatdiv_get_topk_index}


def apply_variant(head: Any, variant: str) -> Any:
    """Bind the variant's postprocess/top-k onto a Detect head (upstream leaves it as installed)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    if variant != "upstream":
        head.postprocess = types.MethodType(legacy_postprocess, head)
        head.get_topk_index = types.MethodType(TOPK[variant], head)
    return head


def anchors_for(imgsz: int) -> int:
    """Anchor count of a YOLO26 head at a square input size (strides 8, 16, 32)."""
    return yolo.anchors(imgsz)


class PostprocessOnly(torch.nn.Module):
    """The Detect head's end-to-end postprocess alone: [B, anchors, 4+nc] → [B, max_det, 6]."""

    def __init__(self, variant: str, nc: int, max_det: int = 300, seed: int = 0) -> None:
        super().__init__()
        yolo.offline_ultralytics()
        from ultralytics.nn.modules.head import Detect

        # The head's weights play no part in its postprocess, but they are in the exported program: seeded, the
        # same program in every process, so the compile cache serves its lowerings on the next run.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            head = Detect(nc=nc, end2end=True, ch=(16, 32, 64))
        head.export, head.max_det, head.agnostic_nms = True, max_det, False
        self.head = apply_variant(head, variant)

    def forward(self, preds: torch.Tensor) -> torch.Tensor:
        return self.head.postprocess(preds)


class OpProbe(torch.nn.Module):
    """One operator alone: a post-processing one (seed 001's list: topk, index (aten.index.Tensor), index_put), or
    `split`, the `chunk` YOLO26's blocks call (a view-copy op in the Edge dialect: `split_copy`)."""

    def __init__(self, op: str, k: int = 300) -> None:
        super().__init__()
        if op not in (*OPS, *VIEW_OPS):
            raise ValueError(f"unknown op {op!r}; choose from {OPS + VIEW_OPS}")
        self.op, self.k = op, k

    def forward(self, scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        batch = torch.arange(scores.shape[0], device=scores.device)[:, None]
        if self.op == "topk":
            values, where = scores.max(dim=-1)[0].topk(self.k)
            return torch.stack([values, where.float()], dim=-1)
        if self.op == "index":
            return scores[batch, index]  # aten.index.Tensor with two int64 index tensors
        if self.op == "split":
            return executorch_cuda_releases.chunk_as_c3k2(scores)
        return scores.index_put((batch, index), torch.zeros((), device=scores.device))  # aten.index_put


OPS = ("topk", "index", "index_put")
VIEW_OPS = ("split",)  # probed for the backbone: not a post-processing op
SCOPES = ("postprocess", "full", "backbone", *(f"op_{op}" for op in OPS + VIEW_OPS))


@dataclass(frozen=True)
class Spec:
    """Everything a child process needs to rebuild the same module and inputs.

    scope: postprocess (the head's top-k alone), full (end-to-end model), backbone (the model without the
    top-k: raw [B, 4+nc, anchors] outputs, seed 001's "hybrid" export) or op_<name> (one operator alone).
    conv_backends: Inductor's max_autotune_conv_backends for the ExecuTorch CUDA lowering ("" = the back-end's).
    autotune: keep the back-end's max-autotune (its default); False is a kit option, recorded as such.
    """

    variant: str
    scope: str = "postprocess"
    model: str = "yolo26n"
    imgsz: int = 320
    batch: int = 1
    nc: int = 80
    seed: int = 0
    device: str = "cpu"
    workdir: str = ""
    conv_backends: str = ""
    autotune: bool = True

    @property
    def backend_options(self) -> str:
        """The ExecuTorch CUDA lowering's options as a recorded condition: "defaults" or "kit: ..." naming each change."""
        return executorch_cuda.options_label(executorch_cuda.kit_overrides(self.autotune, self.conv_backends))

    @property
    def whole_model(self) -> bool:
        """The model's convolutions are in the graph (the back-end's max-autotune then tunes every one)."""
        return self.scope in ("full", "backbone")

    @property
    def tag(self) -> str:
        if self.scope.startswith("op_"):
            return self.scope
        extra = f"-conv_{self.conv_backends.replace(',', '+').lower()}" if self.conv_backends else ""
        return f"{self.scope}-{self.variant}{extra}"


def build_module(spec: Spec) -> torch.nn.Module:
    """The spec's module in eval mode on its device."""
    if spec.scope == "postprocess":
        module = PostprocessOnly(spec.variant, spec.nc, seed=spec.seed)
    elif spec.scope in ("full", "backbone"):
        module = yolo.build(spec.model, nc=spec.nc, seed=spec.seed, end2end=spec.scope == "full")
        if spec.scope == "full":
            apply_variant(yolo.detect_head(module), spec.variant)
    elif spec.scope.startswith("op_"):
        module = OpProbe(spec.scope.removeprefix("op_"))
    else:
        raise ValueError(f"unknown scope {spec.scope!r}; choose from {SCOPES}")
    return module.eval().to(spec.device)


def random_preds(batch: int, anchors: int, nc: int, seed: int = 0, ties: bool = False) -> torch.Tensor:
    """Decoded head output [B, anchors, 4+nc]: boxes in pixels, distinct class scores in [0, 1) (or 8 levels with `ties`)."""
    gen = torch.Generator().manual_seed(seed)
    boxes = torch.rand(batch, anchors, 4, generator=gen) * 640
    if ties:
        scores = torch.randint(0, 8, (batch, anchors, nc), generator=gen) / 8  # 8 values: top-k breaks many ties
    else:  # all distinct, so every back-end must pick the same detections
        n = anchors * nc
        scores = torch.stack([torch.randperm(n, generator=gen) for _ in range(batch)]).reshape(batch, anchors, nc) / n
    return torch.cat([boxes, scores], dim=-1)


def build_inputs(spec: Spec) -> tuple[torch.Tensor, ...]:
    """The spec's example input, seeded."""
    if spec.scope == "postprocess":
        return (random_preds(spec.batch, anchors_for(spec.imgsz), spec.nc, spec.seed).to(spec.device),)
    if spec.scope.startswith("op_"):
        preds = random_preds(spec.batch, anchors_for(spec.imgsz), spec.nc, spec.seed)[..., 4:]
        index = torch.randint(0, preds.shape[1], (spec.batch, 300), generator=torch.Generator().manual_seed(spec.seed))
        return preds.to(spec.device), index.to(spec.device)
    return (yolo.example_input(spec.batch, spec.imgsz, spec.seed, spec.device),)
