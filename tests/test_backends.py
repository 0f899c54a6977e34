"""The back-end registry: every back-end registered, why one is unusable here, and the CPU back-ends preparing,
loading and running a tiny module as eager does."""

from __future__ import annotations

import pytest
import torch

from yolo26kit import backends, cli

NINE = ["eager", "compile", "compile_cudagraphs", "aoti", "executorch_xnnpack", "executorch_cuda", "onnxruntime",
        "tensorrt", "ultralytics_export"]


class Tiny(torch.nn.Module):
    """A linear layer and an activation: lowers to every CPU back-end in well under a second."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) * 2.0


def test_the_registry_has_the_nine_back_ends():
    assert backends.names() == NINE
    for name in NINE:
        backend = backends.get(name)
        assert backend.name == name and backend.title and backend.modules and callable(backend.load)
    assert [n for n in NINE if backends.get(n).needs_cuda] == ["compile_cudagraphs", "executorch_cuda", "tensorrt"]
    assert [n for n in NINE if backends.get(n).has_prepare] == ["aoti", "executorch_xnnpack", "executorch_cuda",
                                                                  "onnxruntime", "ultralytics_export"]
    with pytest.raises(KeyError, match="known: eager"):
        backends.get("nope")


def test_a_back_end_answers_to_its_aliases_and_says_where_its_inputs_live():
    cuda = backends.get("executorch_cuda")
    assert backends.get("et_cuda") is cuda and backends.get("executorch-cuda") is cuda and cuda.named("et_cuda")
    assert backends.get("executorch-xnnpack").name == "executorch_xnnpack"
    assert cuda.input_device == "cuda" and backends.get("eager").input_device == "cpu"
    aliases = [a for name in backends.names() for a in backends.get(name).aliases]
    assert len(aliases) == len(set(aliases)) and not set(aliases) & set(backends.names())


def test_status_says_why_a_back_end_is_unusable(monkeypatch):
    monkeypatch.setattr(backends.env, "cuda_available", lambda: False)
    assert backends.status("eager") == (True, "")
    assert backends.status("compile_cudagraphs") == (False, "needs CUDA: no GPU here")
    monkeypatch.setattr(backends, "installed", lambda module: module != "onnxruntime")
    assert backends.status("onnxruntime") == (False, "onnxruntime is not installed")
    monkeypatch.setattr(backends, "installed", lambda module: module not in ("onnx", "onnxscript"))
    assert backends.status("onnxruntime") == (False, "onnx, onnxscript are not installed")
    monkeypatch.setattr(backends.env, "cuda_available", lambda: True)
    monkeypatch.setattr(backends, "installed", lambda module: True)
    assert backends.status("executorch_cuda") == (True, "")


@pytest.mark.parametrize("name", ["eager", "compile", "executorch_xnnpack", "onnxruntime"])
def test_cpu_back_ends_prepare_load_and_run_as_eager_does(name, tmp_path, monkeypatch):
    ok, why = backends.status(name)
    if not ok:
        pytest.skip(why)
    monkeypatch.delenv("YOLO26KIT_CACHE", raising=False)  # no compile cache: the lowering is this test's own
    backend, model, x = backends.get(name), Tiny().eval(), torch.randn(3, 8)
    with torch.no_grad():
        expected = model(x)
        target = model
        if backend.has_prepare:
            facts = backend.prepare(model, (x,), tmp_path, "tiny")
            assert facts["cached"] is False and facts["bytes"] > 0 and facts["artifact"].startswith(str(tmp_path))
            target = facts["artifact"]
        loaded = backend.load(target, (x,))
        out = loaded()
    out = out[0] if isinstance(out, (list, tuple)) else out
    torch.testing.assert_close(torch.as_tensor(out), expected, rtol=1e-5, atol=1e-5)
    assert loaded.info["threads"] == torch.get_num_threads()
    if name == "onnxruntime":
        assert loaded.info["providers"] == ["CPUExecutionProvider"]


def test_executorch_cuda_prepare_lowers_into_a_folder_of_its_own_with_the_defaults(tmp_path, monkeypatch):
    from yolo26kit.backends import executorch_cuda

    calls = []

    def lower(program, folder, stem, autotune=True, overrides=None, cache=True):
        calls.append((program, folder, stem, autotune, overrides, cache))
        folder.mkdir()
        (folder / f"{stem}.pte").write_bytes(b"pte")
        return {"pte": str(folder / f"{stem}.pte"), "cached": True, "backend_options": "defaults"}

    monkeypatch.setattr(executorch_cuda, "lower", lower)
    program = torch.export.export(Tiny(), (torch.randn(1, 8),))
    facts = backends.get("executorch_cuda").prepare(program, (), tmp_path, "net")
    assert calls == [(program, tmp_path / "net.cuda", "net", True, None, True)]  # an ExportedProgram as it is
    assert facts["artifact"] == str(tmp_path / "net.cuda" / "net.pte") and facts["bytes"] == 3
    assert facts["cached"] is True and facts["backend_options"] == "defaults"


def test_runner_prepares_and_loads_in_one_call(tmp_path):
    model, x = Tiny().eval(), torch.randn(2, 8)
    with torch.no_grad():
        assert torch.equal(backends.runner("eager", model, (x,), tmp_path)(), model(x))


def test_list_backends_prints_every_name(capsys):
    assert cli.main(["list", "--backends"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["back-end", "title"]
    assert [line.split()[0] for line in lines[1:]] == NINE
