"""ExecuTorch's CUDA back-end refuses `chunk`: missing fallback kernel aten::split_copy.Tensor (executorch 1.2.0).

`x.chunk(2, 1)` (YOLO26's C2f/C3k2 split) becomes `aten.split_copy.Tensor` in the edge graph. The CUDA back-end's
view pass (executorch.backends.aoti.passes.replace_view_copy_with_view.ReplaceViewCopyWithViewPass) turns
`slice_copy` and `select_copy` into views but leaves `split_copy` a copy; AOT Inductor hands it to an ATen fallback
kernel, and the back-end refuses the method: `Method forward missing fallback kernels (1 total) (missing:
aten::split_copy.Tensor)`.

With CUDA the script lowers the model and raises the back-end's own error. Without CUDA it runs the same
to_edge_transform_and_lower with CudaPartitioner up to the point where the back-end moves the program to the
device, applies the back-end's view pass to that graph, and raises if `split_copy.Tensor` is left (the cause).

Exit status: 1 when split_copy is refused (or left by the view pass), 0 when it lowers (or becomes a view).
"""
# finding: index_dtype.et_cuda_split_copy_refused
# requires: executorch==1.2.0 torch==2.11.0
# device: cpu (the cause; the refusal itself is checked where CUDA is)
# bites-with: split_copy
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H200 (kit run 20261128T214617Z-vm-cuda, index_dtype.backbone_static_cuda)

import torch
from torch import nn


class Chunked(nn.Module):
    """YOLO26's C2f/C3k2 split in miniature: `chunk(2, 1)` feeding two users."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, 1)
        return a * 2 + b


class Captured(Exception):
    """Stops the back-end's preprocess where it would move the program to the device."""


def lower_on_cuda(program) -> None:
    """The back-end's own lowering (needs CUDA): raises its error when split_copy is refused."""
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import to_edge_transform_and_lower

    spec = CudaBackend.generate_method_name_compile_spec("forward")
    to_edge_transform_and_lower(program, partitioner=[CudaPartitioner([spec])]).to_executorch()


def view_pass_on_cpu(program) -> None:
    """The graph the back-end's preprocess receives, through the back-end's view pass: raises if split_copy stays."""
    import importlib

    import executorch.backends.aoti.aoti_backend as aoti_backend
    import torch.export.passes as export_passes
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import to_edge_transform_and_lower

    box = {}

    def capture(edge, _device):
        box["program"] = edge
        raise Captured()

    modules = [aoti_backend, export_passes, importlib.import_module("executorch.backends.cuda.cuda_backend")]
    for module in modules:
        module.move_to_device_pass = capture
    try:
        spec = CudaBackend.generate_method_name_compile_spec("forward")
        to_edge_transform_and_lower(program, partitioner=[CudaPartitioner([spec])])
    except Exception:  # Captured, wrapped or not by the lowering machinery
        if "program" not in box:
            raise
    from executorch.backends.aoti.passes.replace_view_copy_with_view import ReplaceViewCopyWithViewPass

    graph = box["program"].graph_module
    ReplaceViewCopyWithViewPass()(graph)
    left = [str(n.target) for n in graph.graph.nodes if n.op == "call_function" and "split_copy" in str(n.target)]
    if left:
        raise RuntimeError(f"executorch's ReplaceViewCopyWithViewPass leaves {', '.join(left)} a copy: the CUDA "
                           "back-end lowers it as an ATen fallback kernel and refuses the method (missing: "
                           "aten::split_copy.Tensor)")


def main() -> None:
    """Export `Chunked` and lower it with the CUDA back-end (or check its view pass on the CPU)."""
    from importlib.metadata import version

    program = torch.export.export(Chunked().eval(), (torch.randn(1, 4, 8),))
    if torch.cuda.is_available():
        lower_on_cuda(program)
        print(f"executorch {version('executorch')}: chunk lowers with the CUDA back-end")
    else:
        view_pass_on_cpu(program)
        print(f"executorch {version('executorch')}: the CUDA back-end's view pass turns split_copy into a view "
              "(no CUDA here: the lowering itself was not run)")


if __name__ == "__main__":
    main()
