"""deployment_paths: synthetic runs that drive each judge to each verdict it can give (see README.md).

Rows are built as run_all leaves them: outcomes of the isolated steps, and the comparison with eager (DETS).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from yolo26kit.bench import isolate
from yolo26kit.investigations import deployment_paths as inv

_GEN = torch.Generator().manual_seed(0)
DETS = torch.cat([torch.rand(1, 300, 4, generator=_GEN) * 640, torch.linspace(0.9, 0.6, 300).reshape(1, 300, 1),
                  torch.randint(0, 80, (1, 300, 1), generator=_GEN).float()], dim=-1)
WRONG = DETS.clone()
WRONG[..., 5] = (WRONG[..., 5] + 1) % 80  # every class changed: no detection matches
H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"


def row(model: str = "yolo26n", backend: str = "eager", device: str = "cpu", ms: float | None = 10.0,
        status: str = "ok", output: torch.Tensor | None = None, task: str = "detect", timed: bool = True,
        prepare: str | None = None, error: str = "boom", provider: str = "", imgsz: int = 640,
        options: str | None = None, spread: tuple[float, float] | None = None, dtype: str = "fp32") -> inv.measure.Row:
    """One row; `options` is the ExecuTorch CUDA lowering's backend_options as the row records it."""
    case = inv.measure.Case(model=model, backend=backend, device=device, dtype=dtype, imgsz=imgsz, task=task, timed=timed,
                    provider=provider)
    extra = {"backend_options": options, "imgsz": imgsz} if options is not None else {}
    outcomes = []
    if prepare is not None:
        ok = prepare == "ok"
        outcomes.append(isolate.Outcome(f"{case.tag}:prepare", prepare, 5.0,
                                        value={"artifact": "x", **extra} if ok else None, error="" if ok else error,
                                        details={} if ok else dict(extra)))
        if not ok:
            return inv.measure.Row(case, outcomes)
    if status == "ok":
        value = {"outputs": [DETS if output is None else output], "median_ms": ms, "iqr_ms": 0.1, "first_call_s": 1.0}
        if spread:
            value.update(p10_ms=spread[0], p90_ms=spread[1])
        outcomes.append(isolate.Outcome(f"{case.tag}:run", "ok", 2.0, value=value))
    elif status == "skipped":
        outcomes.append(isolate.skipped(f"{case.tag}:run", error))
    else:
        outcomes.append(isolate.Outcome(f"{case.tag}:run", status, 2.0, error=error))
    r = inv.measure.Row(case, outcomes)
    if r.run is not None:
        r.delta = inv.measure.compare("detect", r.run.value["outputs"], [DETS])
    return r


I7, XEON = "Intel(R) Core(TM) i7-12700K", "Intel(R) Xeon(R) Processor"  # the seed's CPU class, and another


def run(rows: list[inv.measure.Row], device: str = "cpu", models: tuple[str, ...] = ("yolo26n",), task_rows=(),
        dynamic: isolate.Outcome | None = None, imgsz: int = 640, rounds: dict[str, list[float]] | None = None,
        gpu: str = "", cpu: str = I7, others_busy: float | None = 0.1,
        backbone: dict[str, isolate.Outcome] | None = None, modules: isolate.Outcome | None = None) -> inv.measure.Run:
    """A run; `rounds` are the side-by-side step's medians per case tag, timed on `cpu` beside `others_busy` cores
    of other processes' work; `backbone` the backbone's parts (measure.backbone_parts)."""
    side = (isolate.Outcome("CPU rows side by side", "ok", 3.0, value={"medians": rounds, "cpu": cpu, "threads": 8,
                                                                       "others_busy_cores": others_busy})
            if rounds is not None else None)
    return inv.measure.Run(device, rows, list(task_rows), dynamic, list(models), imgsz, side, gpu, backbone=dict(backbone or {}),
                   variant_modules=modules, known_releases=[LATER])


# --- ExecuTorch CUDA ---------------------------------------------------------------------------------

def _et(prepare: str = "error", status: str = "ok", options: str = "defaults", imgsz: int = 640,
        output: torch.Tensor | None = None, error: str = "NoValidChoicesError: All choices failed to compile") -> inv.measure.Row:
    return row(backend="et_cuda", device="cuda", prepare=prepare, status=status, options=options, imgsz=imgsz,
               output=output, error=error, ms=3.0)


SPLIT_REFUSED = "RuntimeError: Method forward missing fallback kernels (1 total):\n  - aten::split_copy.Tensor\n"
# a later executorch whose view pass maps split_copy (index_dtype.releases records such measurements)
LATER = {"executorch": "9.9.0", "torch": "9.9.0", "view_pass": "ReplaceViewCopyWithViewPass", "model": "yolo26n",
         "imgsz": 640, "maps": ["split_copy.Tensor"], "left": {}, "view_copies": {"aten.split_copy.Tensor": 9}}


def _parts(lowering: str | None = None, release: str = "1.2.0", left: dict[str, int] | None = None,
           split_ok: bool = False) -> dict[str, isolate.Outcome]:
    """The backbone's parts: its graph through `release`'s view pass, `chunk` alone, and its own lowering."""
    left = {"aten.split_copy.Tensor": 9} if left is None else left
    parts = {"graph": isolate.Outcome("graph", "ok", 9.0, value={"executorch": release, "torch": "2.11.0",
                                                                  "left": left, "view_copies": left}),
             "split": (isolate.Outcome("split", "ok", 3.0, value={"pte": "x"}) if split_ok
                       else isolate.Outcome("split", "error", 3.0, error=SPLIT_REFUSED))}
    if lowering is not None:
        parts["lowering"] = (isolate.Outcome("lower", "ok", 139.0, value={"pte": "x"}) if lowering == "ok"
                             else isolate.Outcome("lower", "error", 139.0, error=SPLIT_REFUSED))
    return parts


def _et_skipped() -> inv.measure.Row:
    """The whole-model ExecuTorch CUDA row of the quick profile: not lowered (skip_reason)."""
    return row(backend="et_cuda", device="cuda", status="skipped", error=inv.measure.ET_CUDA_SKIPPED)


def _cuda_rows(et: inv.measure.Row, xnn_ok: bool = True) -> list[inv.measure.Row]:
    xnn = row(backend="et_xnnpack", prepare="ok") if xnn_ok else row(backend="et_xnnpack", prepare="error",
                                                                       error="unsupported op")
    return [row(device="cuda", ms=8.0), row(backend="aoti", device="cuda", prepare="ok", ms=2.0), xnn, row(), et]


# --- side-by-side CPU rounds ---------------------------------------------------------------------------

def _xnn_vs_eager(ratios: list[float], imgsz: int = 640, **machine: Any) -> inv.measure.Run:
    xnn, eager = row(backend="et_xnnpack", prepare="ok", imgsz=imgsz), row(imgsz=imgsz)
    rounds = {eager.case.tag: [20.0] * len(ratios), xnn.case.tag: [20.0 * r for r in ratios]}
    return run([eager, xnn], rounds=rounds, imgsz=imgsz, **machine)


def _scaling(ratios: list[float], **machine: Any) -> inv.measure.Run:
    n, s = row(backend="et_xnnpack", prepare="ok", ms=10.0), row("yolo26s", backend="et_xnnpack", prepare="ok", ms=20.0)
    rounds = {n.case.tag: [10.0] * len(ratios), s.case.tag: [10.0 * r for r in ratios]}
    return run([n, s], models=("yolo26n", "yolo26s"), rounds=rounds, **machine)


# --- task variants ---------------------------------------------------------------------------------

def _modules(odd: str = "") -> isolate.Outcome:
    """step_variant_modules' answer: every variant built from its task's module types (`odd` task/model: one more)."""
    types = {f"{t}/{m}": ["C3k2", "Conv", t.capitalize()] + (["Extra"] if f"{t}/{m}" == odd else [])
             for t in inv.measure.TASKS for m in ALL_SIZES}
    return isolate.Outcome("module types of the 25 variants", "ok", 4.0, value=types)


def _variants(tasks: tuple[str, ...], models: tuple[str, ...], failing: int = 0,
              modules: isolate.Outcome | None = None) -> inv.measure.Run:
    rows = [row(m, backend="et_xnnpack", task=t, timed=False, prepare="ok", imgsz=320) for t in tasks for m in models]
    for i in range(failing):
        rows[i] = row(rows[i].case.model, backend="et_xnnpack", task=rows[i].case.task, timed=False, prepare="error",
                      error="LoweringFailed: unsupported op", imgsz=320)
    return run([], task_rows=rows, modules=modules)


ALL_SIZES = tuple(f"yolo26{s}" for s in "nsmlx")


# --- ONNX Runtime ------------------------------------------------------------------------------------

def _dynamic(stock_ok: bool | None, kit_ok: bool = True) -> isolate.Outcome:
    rows: list[dict[str, Any]] = []
    if stock_ok is not None:
        rows += ([{"model_variant": "stock", "spec": "derived", "size": s, "correct": True} for s in (160, 320)]
                 if stock_ok else [{"model_variant": "stock", "spec": "derived", "stage": "torch.export",
                                    "correct": False, "error": "UserError: Constraints violated (height)"}])
    rows += [{"model_variant": "kit-modified", "spec": "derived_kit", "size": s, "correct": kit_ok} for s in (160, 320)]
    return isolate.Outcome("onnxruntime dynamic H/W", "ok", 9.0, value=rows)


def _ort(correct: bool = True) -> inv.measure.Row:
    return row(backend="onnxruntime", provider="CPUExecutionProvider", prepare="ok", output=None if correct else WRONG)


# --- GPU latency ---------------------------------------------------------------------------------------

def _trt(gpu: str, ms: float, spread: tuple[float, float]) -> inv.measure.Run:
    rows = [row(device="cuda", ms=9.0), row(backend="compile_cudagraphs", device="cuda", ms=1.1),
            row(backend="tensorrt", device="cuda", ms=ms, spread=spread)]
    return run(rows, device="cuda", gpu=gpu)


CASES: dict[str, dict[str, Callable[[], Any]]] = {
    "deployment_paths.cuda_aoti_backbone_only": {
        # both halves: the whole model fails and the backbone alone lowers
        "confirmed": lambda: run(_cuda_rows(_et("error")), device="cuda", gpu=H100, backbone=_parts("ok", left={})),
        "refuted": lambda: run(_cuda_rows(_et("ok")), device="cuda", gpu=H100),
        # the backbone is refused for split_copy on this release; a later release's view pass maps it
        "partly": lambda: run(_cuda_rows(_et("error")), device="cuda", gpu=H100, backbone=_parts("error")),
        "partly (the whole model runs, not right)": lambda: run(_cuda_rows(_et("ok", output=WRONG)), device="cuda",
                                                                gpu=H100),
        # quick profile: the whole model is not lowered; the backbone's refusal it contains decides that half
        "partly (from the backbone's parts)": lambda: run(_cuda_rows(_et_skipped()), device="cuda", gpu=H100,
                                                          backbone=_parts()),
        "partly (nothing lowers, no later release)": lambda: run(_cuda_rows(_et("error")), device="cuda", gpu=H100,
                                                                 backbone=_parts("error", release="99.0.0")),
        # the whole model fails, but the backbone alone was not tried: one half is not enough
        "inconclusive (backbone not tried)": lambda: run(_cuda_rows(_et("error")), device="cuda", gpu=H100),
        "inconclusive (quick, the backbone's graph keeps nothing to refuse)": lambda: run(
            _cuda_rows(_et_skipped()), device="cuda", gpu=H100, backbone=_parts(left={}, split_ok=True)),
        # the kit's own options (e.g. max-autotune off): their failure decides nothing
        "inconclusive": lambda: run(_cuda_rows(_et("error", options="kit: max_autotune=False",
                                                   error="NoValidChoicesError: No choices exist for backend")),
                                    device="cuda", gpu=H100),
        "needs_cuda": lambda: run([row(backend="aoti", prepare="ok")]),
    },
    "deployment_paths.recommend_xnnpack": {
        "confirmed": lambda: run(_cuda_rows(_et("error")), device="cuda", gpu=H100),
        "confirmed (quick: the whole model refused through its backbone)": lambda: run(
            _cuda_rows(_et_skipped()), device="cuda", gpu=H100, backbone=_parts()),
        "refuted": lambda: run(_cuda_rows(_et("error"), xnn_ok=False), device="cuda", gpu=H100),
        "partly": lambda: run(_cuda_rows(_et("ok")), device="cuda", gpu=H100),
        # defaults, but lowered at 320 px (not the seed's 640): the conditions rule makes it inconclusive
        "inconclusive": lambda: run(_cuda_rows(_et("error", imgsz=320)), device="cuda", gpu=H100),
        "needs_cuda": lambda: run([row(), row(backend="et_xnnpack", prepare="ok")]),
    },
    "deployment_paths.xnnpack_all_variants": {
        "confirmed": lambda: _variants(inv.measure.TASKS, ALL_SIZES),
        "refuted": lambda: _variants(inv.measure.TASKS, ("yolo26n",), failing=1),
        "inconclusive": lambda: _variants(inv.measure.TASKS, ("yolo26n",)),  # 5 of 25 tried, the others' modules not read
        # 5 of 25 tried; the other 20 are built from the module types of their task's tried variant
        "confirmed (the untried built like the tried)": lambda: _variants(inv.measure.TASKS, ("yolo26n",), modules=_modules()),
        "inconclusive (one untried variant has a module no tried one has)": lambda: _variants(
            inv.measure.TASKS, ("yolo26n",), modules=_modules("pose/yolo26x")),
        "inconclusive (a task not tried)": lambda: _variants(inv.measure.TASKS[:4], ("yolo26n",), modules=_modules()),
    },
    "deployment_paths.torch_compile_alternative": {
        "confirmed": lambda: run([row(device="cuda", ms=8.0), row(backend="compile", device="cuda", ms=4.0),
                                  row(backend="compile_cudagraphs", device="cuda", status="error")], device="cuda"),
        "refuted": lambda: run([row(device="cuda", ms=8.0), row(backend="compile", device="cuda", output=WRONG),
                                row(backend="compile_cudagraphs", device="cuda", status="error")], device="cuda"),
        "inconclusive": lambda: run([row(device="cuda"), row(backend="compile", device="cuda", status="timeout")],
                                    device="cuda"),
        "needs_cuda": lambda: run([row()]),
    },
    "deployment_paths.onnxruntime_full_dynamic": {
        "confirmed": lambda: run([row(), _ort()], dynamic=_dynamic(True)),
        "refuted": lambda: run([row(), _ort(False)], dynamic=_dynamic(False)),
        # the kit-modified model alone runs dynamic: not the model the seed means
        "partly": lambda: run([row(), _ort()], dynamic=_dynamic(False)),
        "inconclusive": lambda: run([row(), _ort()], dynamic=_dynamic(None)),
    },
    "deployment_paths.gpu_latency": {
        "refuted": lambda: _trt(A100, 5.0, (4.8, 5.5)),  # yolo26n's TensorRT figure is 1–2 ms
        "partly": lambda: run([row(backend="tensorrt", device="cuda", ms=1.5, spread=(1.4, 1.6)),
                               row("yolo26s", backend="tensorrt", device="cuda", ms=9.0, spread=(8.0, 9.5))],
                              device="cuda", models=("yolo26n", "yolo26s"), gpu=A100),
        "inconclusive": lambda: _trt(H100, 5.0, (4.8, 5.5)),  # not the seed's A100
        "needs_cuda": lambda: run([row()]),
    },
    "deployment_paths.xnnpack_vs_eager": {
        "confirmed": lambda: _xnn_vs_eager([0.5, 0.6, 0.55]),
        "refuted": lambda: _xnn_vs_eager([1.3, 1.5, 1.4]),
        "inconclusive": lambda: _xnn_vs_eager([0.8, 1.1, 0.9, 1.2]),  # half the rounds on each side of 1×
        # clear rounds, but timed while other processes kept 3 cores busy (a GPU runner's compiles beside the step)
        "inconclusive (busy machine)": lambda: _xnn_vs_eager([1.3, 1.5, 1.4], others_busy=3.0),
    },
    "deployment_paths.xnnpack_scaling": {
        "confirmed": lambda: _scaling([2.0, 2.1, 1.9]),
        "refuted": lambda: _scaling([3.2, 3.5, 3.0]),
        "inconclusive": lambda: _scaling([2.0, 3.1, 2.5, 3.0]),  # half the rounds on each side of 2.67
        "inconclusive (another CPU)": lambda: _scaling([3.2, 3.5, 3.0], cpu=XEON),
        "inconclusive (busy machine)": lambda: _scaling([2.0, 2.1, 1.9], others_busy=3.0),
    },
}

