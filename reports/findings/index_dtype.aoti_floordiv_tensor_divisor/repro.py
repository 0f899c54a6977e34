"""AOT Inductor: int64 floor division by a 0-d tensor is lowered through the floating path.

`torch.floor_divide(x, torch.tensor(80))` on an int64 `x`, exported with torch.export and compiled with
`aoti_compile_and_package`, does not return eager's answer: on torch 2.11 the package returns float32 (eager:
int64), and an index built from it fails (`indices must be int64, byte or bool. Got [torch.int64, torch.float32]`
on the CPU, `invalid operands of type pointer<int64> and triton.language.float32` in a Triton gather on CUDA); on
torch 2.12 and 2.13 it returns int64 but truncates negative quotients instead of flooring them. The same division
with a Python-int divisor is right. ExecuTorch's `to_edge` makes every Python-int divisor such a tensor constant,
which is how YOLO26's top-k (`index // nc`) meets it in ExecuTorch's CUDA back-end.

Runs on the CPU (and on CUDA too where there is a GPU). Exit status: 1 with an AssertionError naming the wrong
dtype or values when it bites, 0 when every package matches eager.
"""
# finding: index_dtype.aoti_floordiv_tensor_divisor
# requires: torch==2.11.0
# device: cpu
# bites-with: AssertionError: AOT Inductor floor_divide
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H100 80GB HBM3 (kit run 20261206T115055Z-vm-cuda, index_dtype.floordiv_float_path)

import ctypes
import tempfile
import traceback

# Some hosts crash loading any AOTI package (SIGSEGV in its std::regex code, aoti_load.static_libstdcxx_crash)
# unless the system libstdc++ is loaded globally first; loading it first is harmless elsewhere and keeps that
# crash from masking this bug.
ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)

import torch  # noqa: E402  (after the libstdc++ above)
from torch import nn  # noqa: E402


class TensorDivisor(nn.Module):
    """x // 80 with the divisor a 0-d int64 tensor constant (what ExecuTorch's to_edge makes of `x // 80`)."""

    def __init__(self) -> None:
        super().__init__()
        self.divisor = torch.tensor(80)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.floor_divide(x, self.divisor)


class IndexedBy(TensorDivisor):
    """The same quotient used as an index (advanced indexing, aten.index.Tensor), as YOLO26's top-k does."""

    def forward(self, x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        quotient = torch.floor_divide(x, self.divisor).clamp(0, src.shape[1] - 1)
        return src[torch.arange(src.shape[0], device=src.device)[:, None], quotient]


def aoti(module: nn.Module, args: tuple, folder: str, name: str):
    """Export, compile with AOT Inductor, load and run."""
    program = torch.export.export(module, args)
    package = torch._inductor.aoti_compile_and_package(program, package_path=f"{folder}/{name}.pt2")
    return torch._inductor.aoti_load_package(package)(*args)


def main() -> None:
    """Compare the AOTI package with eager on every device here."""
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    x = torch.tensor([[-161, -80, -79, -1, 0, 1, 79, 80, 161, 23999]])
    src = torch.arange(300).reshape(1, 300)
    wrong = []
    with tempfile.TemporaryDirectory() as folder:
        for device in devices:
            module = TensorDivisor().to(device)
            module.divisor = module.divisor.to(device)
            eager, got = module(x.to(device)), aoti(module, (x.to(device),), folder, f"div-{device}")
            print(f"{device}: eager {eager.dtype} {eager.tolist()}")
            print(f"{device}: aoti  {got.dtype} {got.tolist()}")
            if got.dtype != eager.dtype or not torch.equal(got.cpu().to(eager.dtype), eager.cpu()):
                wrong.append(f"{device}: {got.dtype} {got.tolist()} (eager: {eager.dtype} {eager.tolist()})")
                indexed = IndexedBy().to(device)
                indexed.divisor = indexed.divisor.to(device)
                try:
                    aoti(indexed, (x.to(device), src.to(device)), folder, f"index-{device}")
                    print(f"{device}: the quotient as an index compiles and runs")
                except Exception:  # what a model that indexes with the quotient meets
                    print(f"{device}: the quotient as an index fails:")
                    traceback.print_exc()
    if wrong:
        raise AssertionError(f"AOT Inductor floor_divide(int64, 0-d int64 tensor) differs from eager on torch "
                             f"{torch.__version__}: " + "; ".join(wrong))
    print(f"torch {torch.__version__}: AOT Inductor's floor_divide by a 0-d tensor matches eager on "
          f"{', '.join(devices)}")


if __name__ == "__main__":
    main()
