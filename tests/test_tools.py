"""tools/: the ExecuTorch CUDA autotune warm-up finds the lowerings it would run (CPU: no lowering here)."""

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "et_cuda_autotune_warmup.py"


@pytest.fixture(scope="module")
def warmup():
    spec = importlib.util.spec_from_file_location("et_cuda_autotune_warmup", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_warmup_lists_each_distinct_module_once_and_the_aten_probe_for_kxk_convs(warmup):
    jobs = warmup.distinct_jobs("yolo26n", 320, "cpu")
    defaults = [(name, shape) for name, shape, backends in jobs if not backends]
    aten = [(name, shape) for name, shape, backends in jobs if backends == warmup.ATEN_CONV]
    assert len(set(defaults)) == len(defaults) and set(aten) <= set(defaults)
    names = [name for name, _ in defaults]
    assert "model.0" in names  # the stem convolution, a k×k one: probed with ATen too
    assert ("model.0", (1, 3, 320, 320)) in aten
    assert any(".attn" in n or n.endswith("attn") for n in names)  # the attention block
    modules = dict(warmup._model("yolo26n", 320, "cpu").named_modules())
    bare = [n for n in names if type(modules[n]).__name__ == "Conv2d"]
    assert bare and all(n.startswith("model.23.") for n in bare)  # the head's last convolutions, in no Conv wrapper
    assert len(defaults) < 100  # distinct modules, not every layer


def test_warmup_needs_the_cache_it_fills(warmup, monkeypatch):
    monkeypatch.delenv("YOLO26KIT_CACHE", raising=False)
    with pytest.raises(SystemExit) as exit_:
        warmup.main(["--timeout", "1"])
    assert exit_.value.code == 2


def test_tune_only_stops_aot_inductor_where_its_cpp_compile_starts(warmup, monkeypatch, tmp_path):
    """The stop point exists in this torch, comes after codegen (where max-autotune has benchmarked everything),
    and is recognised however the compiler wraps it; no package is written."""
    import torch
    from torch._inductor.codecache import AotCodeCompiler

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(AotCodeCompiler, "compile", staticmethod(warmup._stop_before_cpp_compile))
    program = torch.export.export(torch.nn.Linear(8, 4), (torch.rand(2, 8),))
    with pytest.raises(Exception) as failure:
        torch._inductor.aoti_compile_and_package(program, package_path=str(tmp_path / "m.pt2"))
    assert warmup._tuned_only(failure.value)
    assert not (tmp_path / "m.pt2").exists()
    assert not warmup._tuned_only(RuntimeError("Method forward missing fallback kernels (1 total)"))
