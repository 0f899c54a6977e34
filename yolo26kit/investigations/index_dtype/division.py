"""Index dtype, root cause: the top-k's `index // nc` through AOT Inductor, one change at a time.

ExecuTorch's `to_edge` turns `index // nc` into `aten.div.Tensor_mode(index, <0-d int64 tensor>, "floor")`: the
Python int becomes a lifted tensor constant (measure_root's pipeline table shows it). These variants compile that
division with plain AOT Inductor on a device, so what decides the failure can be told apart from the back-end:

  scalar      `x // 80`, the divisor a Python int (what torch.export gives): the control;
  tensor      the same division with the divisor a 0-d int64 tensor constant (what to_edge gives);
  gather      `tensor` feeding torch.gather (the seed's fix);
  index       `tensor` feeding advanced indexing, aten.index.Tensor (the seed's original top-k);
  workaround  `gather`, the quotient computed as `(x.double() / 80).floor().long()` (what the CUDA back-end's
              later ReplaceInt64FloorDivWithFloatPass writes): no integer division left to lower.

Each row says whether the AOTI package compiles, loads and runs, the dtype of what it returns, and whether its
values are eager's (negative dividends included: a floor that truncates shows there).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

DIVISOR = 80  # YOLO26's class count: the top-k divides the flat (anchor, class) index by it
ROWS = 300  # the top-k's max_det
VARIANTS = ("scalar", "tensor", "gather", "index", "workaround")
CHANGES = {
    "scalar": "the control: divisor a Python int",
    "tensor": "divisor a 0-d int64 tensor constant (as ExecuTorch's to_edge makes it)",
    "gather": "the tensor-divisor quotient feeds torch.gather (the seed's fix)",
    "index": "the tensor-divisor quotient feeds advanced indexing (aten.index.Tensor, the seed's top-k)",
    "workaround": "gather, quotient as (x.double() / 80).floor().long(): no integer division",
}


class Division(nn.Module):
    """One variant of the top-k's anchor division, alone or feeding its lookup."""

    def __init__(self, variant: str) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown division variant {variant!r}; choose from {VARIANTS}")
        self.variant = variant
        self.divisor = torch.tensor(DIVISOR)  # a plain attribute: torch.export lifts it as a tensor constant

    def forward(self, x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        if self.variant == "scalar":
            return x // DIVISOR
        if self.variant == "workaround":
            anchor = (x.double() / self.divisor).floor().long()
            return torch.gather(src, 1, anchor.clamp(0, src.shape[1] - 1))
        quotient = torch.floor_divide(x, self.divisor)
        if self.variant == "tensor":
            return quotient
        anchor = quotient.clamp(0, src.shape[1] - 1)  # an in-range lookup whatever the quotient's rounding
        if self.variant == "gather":
            return torch.gather(src, 1, anchor)
        return src[torch.arange(src.shape[0], device=src.device)[:, None], anchor]


def inputs(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat top-k indices, half of them negative (a truncating floor differs there), and the anchors looked up."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(-ROWS * DIVISOR, ROWS * DIVISOR, (1, ROWS), generator=gen)
    src = torch.randint(0, 8400, (1, ROWS), generator=gen)
    return x.to(device), src.to(device)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    marked = [line for line in text if "invalid operands" in line or "must be" in line]
    return f"{type(exc).__name__}: {(marked or text or [''])[-1].strip()[:300]}"


def variant_row(variant: str, device: str, workdir: str) -> dict[str, Any]:
    """Compile one variant with plain AOT Inductor, load it, run it and compare with eager."""
    from ...bench import aoti_package

    module, args = Division(variant).eval().to(device), inputs(device)
    module.divisor = module.divisor.to(device)
    eager = module(*args)
    row: dict[str, Any] = {"variant": variant, "change": CHANGES[variant], "device": device, "stage": "export",
                           "ok": False, "eager dtype": str(eager.dtype).removeprefix("torch."), "aoti dtype": "",
                           "equal": None, "error": ""}
    try:
        program = torch.export.export(module, args)
        row["stage"] = "compile"
        package, _ = aoti_package.compile_package(program, f"{workdir}/division-{variant}-{device}.pt2")
        row["stage"] = "load+run"
        out = aoti_package.load(package)(*args)
    except Exception as exc:  # the variant's own failure is the measurement
        row["error"] = _first_line(exc)
        return row
    row.update(stage="done", ok=True, **{"aoti dtype": str(out.dtype).removeprefix("torch.")})
    row["equal"] = bool(out.dtype == eager.dtype and torch.equal(out.cpu(), eager.cpu()))
    return row


def division_variants(device: str, workdir: str) -> list[dict[str, Any]]:
    """Every variant on one device, in one child process (isolate.run_step runs it)."""
    return [variant_row(v, device, workdir) for v in VARIANTS]


def verdict_of(row: dict[str, Any]) -> str:
    """What a row shows: `right` (eager's dtype and values), `float` (a floating quotient), `wrong` (other values),
    `fails` (did not compile, load or run)."""
    if not row.get("ok"):
        return "fails"
    if row.get("aoti dtype") != row.get("eager dtype"):
        return "float" if str(row.get("aoti dtype", "")).startswith(("float", "bfloat")) else "wrong"
    return "right" if row.get("equal") else "wrong"
