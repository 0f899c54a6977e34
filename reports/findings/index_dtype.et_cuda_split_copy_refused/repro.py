"""ExecuTorch's CUDA back-end refuses `chunk`: missing fallback kernel aten::split_copy.Tensor (executorch 1.2.0).

`x.chunk(2, 1)` (YOLO26's C2f/C3k2 split) becomes `aten.split_copy.Tensor` in the edge graph. The CUDA back-end's
view pass (executorch.backends.aoti.passes.replace_view_copy_with_view.ReplaceViewCopyWithViewPass) turns
`slice_copy` and `select_copy` into views but leaves `split_copy` a copy; AOT Inductor hands it to an ATen fallback
kernel, and the back-end refuses the method: `Method forward missing fallback kernels (1 total) (missing:
aten::split_copy.Tensor)`.

With CUDA the script lowers the model and raises the back-end's own error. Without CUDA the back-end cannot run, so
the refusal is not checked: the script says so and exits 77. It first runs, for information, the same
to_edge_transform_and_lower with CudaPartitioner up to the point where the back-end moves the program to the
device and applies the back-end's view pass to that graph, and prints whether `split_copy.Tensor` is left (the
cause, not the refusal).

Exit status: 1 when the CUDA back-end refuses split_copy, 0 when it lowers, 77 where there is no CUDA device.
"""
# finding: index_dtype.et_cuda_split_copy_refused
# requires: executorch==1.2.0 torch==2.11.0
# device: cuda
# bites-with: split_copy
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H100 80GB HBM3 (kit run 20261206T115055Z-vm-cuda, index_dtype.backbone_static_cuda)

import sys

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


def view_pass_on_cpu(program) -> list[str]:
    """The graph the back-end's preprocess receives, through the back-end's view pass: the split_copy calls left."""
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
    return [str(n.target) for n in graph.graph.nodes if n.op == "call_function" and "split_copy" in str(n.target)]


def main() -> None:
    """Export `Chunked` and lower it with the CUDA back-end; without CUDA, say what was (not) run and exit 77."""
    from importlib.metadata import version

    program = torch.export.export(Chunked().eval(), (torch.randn(1, 4, 8),))
    if not torch.cuda.is_available():
        try:
            left = view_pass_on_cpu(program)
            cause = f"its view pass leaves {', '.join(left)} a copy" if left else "its view pass makes it a view"
        except Exception as exc:  # an executorch without the CUDA back-end's modules: the cause cannot be read
            cause = f"the view pass could not be run ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        print(f"executorch {version('executorch')}, no CUDA device: the CUDA back-end's lowering, whose refusal this "
              f"repro checks, was not run. Checked on the CPU instead: {cause} (the cause, not the refusal).")
        sys.exit(77)
    lower_on_cuda(program)
    print(f"executorch {version('executorch')}: chunk lowers with the CUDA back-end")


if __name__ == "__main__":
    main()
