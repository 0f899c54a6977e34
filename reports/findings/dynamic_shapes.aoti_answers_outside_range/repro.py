"""An AOT Inductor package with a dynamic size answers outside its exported range, without an error.

A model is exported with `torch.export` where the image height and width are `32 * k` for k in 5..10 (160 to
320 px, the derived dimension a YOLO detector needs), compiled with `torch._inductor.aoti_compile_and_package` and
loaded with `aoti_load_package`. The ExportedProgram refuses a 352 px input (above the maximum) and a 264 px one
(not a multiple of 32); so does eager for 264 px. The loaded package runs both and returns a result.

The model is a small stride-32 detector head (convolutions down to 1/32, back up, added to the input), so eager
raises where the size is not a multiple of 32, as YOLO26 does. It was met on YOLO26n's AOTI package (300
detections at 264 px and at 352 px).

Exit status: 1 when the package answers an input its ExportedProgram refuses (the message names the sizes), 0 when
the package refuses them too.
"""
# finding: dynamic_shapes.aoti_answers_outside_range
# requires: torch==2.14.1 setuptools
# device: cpu
# bites-with: AssertionError: the AOTI package answered
# seen-on: torch 2.11.0+cu130, executorch 1.2.0, ultralytics 8.4.190 on NVIDIA H100 80GB HBM3 (kit run 20261206T115055Z-vm-cuda, dynamic_shapes.aoti_cuda_dynamic)

import ctypes
import os
import tempfile

# Some hosts crash loading any AOTI package (SIGSEGV in its std::regex code, aoti_load.static_libstdcxx_crash)
# unless the system libstdc++ is loaded globally first; loading it first is harmless elsewhere and keeps that
# crash from masking this bug.
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
    """Export with a derived dynamic size, compile to an AOTI package, and call both outside the range."""
    torch.manual_seed(0)
    model = Stride32Net().eval()
    k = torch.export.Dim("k", min=5, max=10)
    size = 32 * k
    example = (torch.randn(1, 3, 256, 256),)
    program = torch.export.export(model, example, dynamic_shapes=({2: size, 3: size},))
    with tempfile.TemporaryDirectory() as tmp:
        path = torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(tmp, "model.pt2"))
        package = torch._inductor.aoti_load_package(path)
        inside = torch.randn(1, 3, 192, 192)
        torch.testing.assert_close(package(inside), model(inside))
        answered = []
        for px in (264, 352):
            x = torch.randn(1, 3, px, px)
            refused_by_program = refusal(program.module(), x)
            refused_by_package = refusal(package, x)
            print(f"{px} px: eager {refusal(model, x) or 'answers'}; ExportedProgram {refused_by_program or 'answers'}; "
                  f"AOTI package {refused_by_package or 'answers'}")
            if refused_by_program and not refused_by_package:
                answered.append(px)
    assert not answered, (f"the AOTI package answered {', '.join(f'{px} px' for px in answered)}, outside its exported "
                          f"range 160-320 px in steps of 32, without an error (torch {torch.__version__})")
    print(f"torch {torch.__version__}: the AOTI package refuses sizes outside its exported range")


if __name__ == "__main__":
    main()
