"""Workaround: AOTI_RUNTIME_CHECK_INPUTS=1 makes an AOT Inductor package refuse sizes outside its exported range.

The same model and export as the finding's repro (a stride-32 net, height and width `32 * k` for k in 5..10, i.e.
160 to 320 px, compiled with `aoti_compile_and_package`). Here the variable is set before the package is loaded
and first called (the generated code reads it once), and the package is called inside the range, above it (352 px)
and off the stride (264 px). It repeats the repro's model rather than import it: each file runs alone.

Exit status: 0 when the workaround holds (the package refuses both sizes the ExportedProgram refuses, and still
matches eager inside the range), 1 when the package still answers one of them.
"""
# finding: dynamic_shapes.aoti_answers_outside_range
# requires: torch==2.14.1 setuptools
# device: cpu
# bites-with: AssertionError: the AOTI package answered
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H100 80GB HBM3 (kit run 20261206T115055Z-vm-cuda, dynamic_shapes.aoti_cuda_dynamic)

import ctypes
import os
import tempfile

os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = "1"  # the workaround: before the package is loaded and first called

# Some hosts crash loading any AOTI package (SIGSEGV in its std::regex code, aoti_load.static_libstdcxx_crash)
# unless the system libstdc++ is loaded globally first; loading it first is harmless elsewhere.
ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)

import torch  # noqa: E402  (after the libstdc++ above)
from torch import nn  # noqa: E402


class Stride32Net(nn.Module):
    """Five stride-2 convolutions and a 32x upsample added to the input: shapes agree only at multiples of 32."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Sequential(*[nn.Conv2d(3, 3, 3, stride=2, padding=1) for _ in range(5)])
        self.up = nn.Upsample(scale_factor=32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.up(self.down(x))


def refusal(call, x: torch.Tensor) -> str:
    """The error a call raises on x ("" when it answers)."""
    try:
        call(x)
    except Exception as exc:  # noqa: BLE001 - any refusal counts
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return ""


def main() -> None:
    """Export with a derived dynamic size, compile, load with input checks on, and call in and out of the range."""
    torch.manual_seed(0)
    model = Stride32Net().eval()
    k = torch.export.Dim("k", min=5, max=10)
    size = 32 * k
    example = (torch.randn(1, 3, 256, 256),)
    program = torch.export.export(model, example, dynamic_shapes=({2: size, 3: size},))
    with tempfile.TemporaryDirectory() as tmp:
        path = torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(tmp, "model.pt2"))
        package = torch._inductor.aoti_load_package(path)
        for px in (160, 192, 320):
            inside = torch.randn(1, 3, px, px)
            torch.testing.assert_close(package(inside), model(inside))
        print("inside the range (160, 192, 320 px): the package matches eager")
        answered = []
        for px in (264, 352):
            x = torch.randn(1, 3, px, px)
            refused_by_program = refusal(program.module(), x)
            refused_by_package = refusal(package, x)
            print(f"{px} px: ExportedProgram {refused_by_program or 'answers'}; "
                  f"AOTI package with AOTI_RUNTIME_CHECK_INPUTS=1 {refused_by_package or 'answers'}")
            if refused_by_program and not refused_by_package:
                answered.append(px)
    assert not answered, (f"the AOTI package answered {', '.join(f'{px} px' for px in answered)} even with "
                          f"AOTI_RUNTIME_CHECK_INPUTS=1 (torch {torch.__version__})")
    print(f"torch {torch.__version__}: with AOTI_RUNTIME_CHECK_INPUTS=1 the package refuses both sizes and matches "
          "eager inside the range")


if __name__ == "__main__":
    main()
