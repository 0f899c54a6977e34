"""ExecuTorch's CUDA back-end: YOLO26's gather top-k fails in Triton autotuning (float32 index as a pointer offset).

The top-k of a YOLO detector head written with `torch.gather` instead of advanced indexing (the fix for the
`aten.index.Tensor` dtype failure) exports cleanly, but lowering it with CudaPartitioner on executorch 1.2.0 fails
while autotuning: `invalid operands of type pointer<int64> and triton.language.float32`. The dtype problem moves
from `aten.index` into gather's own Triton kernel.

Needs CUDA (Triton). Exit status: 1 with the back-end's error when it bites, 0 when the model lowers and runs,
77 where there is no CUDA device.
"""
# finding: index_dtype.gather_float_index_moved
# requires: executorch==1.2.0 torch==2.11.0
# device: cuda
# bites-with: triton.language.float32
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H200 (kit run 20261128T214617Z-vm-cuda, index_dtype.gather_removes_index)

import sys

import torch
from torch import nn

ANCHORS, CLASSES, MAX_DET = 8400, 80, 300  # YOLO26 at 640 px, COCO classes


class GatherTopK(nn.Module):
    """YOLO26's Detect.postprocess with the anchor lookup done by torch.gather."""

    def forward(self, preds: torch.Tensor) -> torch.Tensor:
        boxes, scores = preds.split([4, CLASSES], dim=-1)
        ori_index = scores.max(dim=-1)[0].topk(MAX_DET)[1].unsqueeze(-1)
        gathered = scores.gather(dim=1, index=ori_index.repeat(1, 1, CLASSES))
        top, index = gathered.flatten(1).topk(MAX_DET)
        index = index.to(torch.int64)
        idx = torch.gather(ori_index, dim=1, index=(index // CLASSES).unsqueeze(-1))
        boxes = boxes.gather(dim=1, index=idx.repeat(1, 1, 4))
        return torch.cat([boxes, top.unsqueeze(-1), (index % CLASSES).unsqueeze(-1).float()], dim=-1)


def main() -> None:
    """Export the gather top-k and lower it with the CUDA back-end."""
    from importlib.metadata import version

    if not torch.cuda.is_available():
        print("no CUDA device: this repro needs the CUDA back-end's Triton kernels")
        sys.exit(77)
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(0)
    preds = torch.rand(1, ANCHORS, 4 + CLASSES, device="cuda")
    program = torch.export.export(GatherTopK().eval().cuda(), (preds,))
    spec = CudaBackend.generate_method_name_compile_spec("forward")
    to_edge_transform_and_lower(program, partitioner=[CudaPartitioner([spec])]).to_executorch()
    print(f"executorch {version('executorch')}: the gather top-k lowers with the CUDA back-end")


if __name__ == "__main__":
    main()
