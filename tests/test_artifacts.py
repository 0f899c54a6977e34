"""artifacts: lowered programs are reused from the compile cache by content, and only where the run has a cache."""

from __future__ import annotations

import torch

from yolo26kit.bench import artifacts


class Affine(torch.nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((3,), scale))

    def forward(self, x):
        return x * self.weight + 1


def program(scale: float = 2.0) -> torch.export.ExportedProgram:
    return torch.export.export(Affine(scale), (torch.randn(3),))


def counting_lower(calls: list[int]):
    def lower(ep):
        calls.append(1)
        return f"pte:{len(calls)}".encode(), {"lower_s": 1.5}
    return lower


def test_a_program_lowers_once_per_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))
    calls: list[int] = []
    first = artifacts.lowered_program(program(), "xnnpack", counting_lower(calls))
    again = artifacts.lowered_program(program(), "xnnpack", counting_lower(calls))
    assert calls == [1]
    assert first == (b"pte:1", {"lower_s": 1.5, "cached": False})
    assert again == (b"pte:1", {"lower_s": 1.5, "cached": True})


def test_other_weights_or_backend_lower_again(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))
    calls: list[int] = []
    artifacts.lowered_program(program(2.0), "xnnpack", counting_lower(calls))
    assert artifacts.lowered_program(program(3.0), "xnnpack", counting_lower(calls))[1]["cached"] is False
    assert artifacts.lowered_program(program(2.0), "other", counting_lower(calls))[1]["cached"] is False
    assert len(calls) == 3


def test_without_a_cache_nothing_is_kept(monkeypatch):
    monkeypatch.delenv(artifacts.CACHE_ENV, raising=False)
    calls: list[int] = []
    artifacts.lowered_program(program(), "xnnpack", counting_lower(calls))
    artifacts.lowered_program(program(), "xnnpack", counting_lower(calls))
    assert calls == [1, 1] and artifacts.crash_site_file("abc") is None


def test_a_failing_lowering_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))

    def fails(ep):
        raise RuntimeError("lowering failed")

    for _ in range(2):
        try:
            artifacts.lowered_program(program(), "xnnpack", fails)
        except RuntimeError as exc:
            assert "lowering failed" in str(exc)
        else:
            raise AssertionError("a failing lowering must raise every time")
    assert not list(tmp_path.rglob("*.pte"))


# --- ONNX exports (backends.onnxruntime): a warm run serves them, keyed on everything that decides them ---------

class Scale(torch.nn.Module):
    """Graph code that does not spell the input's shape: only the key's `shapes` tells 3 from 5 elements apart."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((1,), 2.0))

    def forward(self, x):
        return x.relu() * self.weight


def counting_onnx(calls: list[int]):
    def onnx_bytes(ep):
        calls.append(1)
        return f"onnx:{len(calls)}".encode(), {}
    return onnx_bytes


def test_an_onnx_export_is_stored_and_served_to_the_next_prepare(tmp_path, monkeypatch):
    from yolo26kit.backends import onnxruntime as ort_backend

    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path / "cache"))
    calls: list[int] = []
    monkeypatch.setattr(ort_backend, "onnx_bytes", counting_onnx(calls))
    facts = []
    for run in ("cold", "warm"):  # a fresh module and folder each time, as each run's prepare step has
        folder = tmp_path / run
        folder.mkdir()
        facts.append(ort_backend.prepare(Affine(2.0), (torch.randn(3),), folder, "net"))
    assert calls == [1]
    assert [f["cached"] for f in facts] == [False, True]
    assert (tmp_path / "warm" / "net.onnx").read_bytes() == b"onnx:1"
    assert len(list((tmp_path / "cache" / "onnx").glob("dynamo-*.onnx"))) == 1


def test_the_onnx_key_holds_the_input_shapes_and_the_exporter_versions(tmp_path, monkeypatch):
    from importlib import metadata

    from yolo26kit.backends import onnxruntime as ort_backend

    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))
    calls: list[int] = []
    monkeypatch.setattr(ort_backend, "onnx_bytes", counting_onnx(calls))
    three, five = (torch.export.export(Scale(), (torch.randn(n),)) for n in (3, 5))
    assert str(three.graph_module.code) == str(five.graph_module.code)  # the graph alone cannot tell them apart
    served = [ort_backend.export_onnx(ep, tmp_path / "x.onnx") for ep in (three, five, three)]
    assert served == [False, False, True] and calls == [1, 1]
    key = artifacts.program_key(three, ort_backend.key_options(three))
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "99.0" if name == "onnxscript" else real(name))
    assert artifacts.program_key(three, ort_backend.key_options(three)) != key
    assert not ort_backend.export_onnx(three, tmp_path / "x.onnx") and calls == [1, 1, 1]


def conv_program() -> torch.export.ExportedProgram:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 2))
    return torch.export.export(net.eval(), (torch.randn(1, 3, 8, 8),))


KEY_IN_A_PROCESS = """
from tests.test_artifacts import conv_program
from yolo26kit.backends import onnxruntime as ort_backend
from yolo26kit.bench import artifacts
ep = conv_program()
print(artifacts.program_key(ep, ort_backend.key_options(ep)))
"""


def test_the_onnx_key_is_the_same_in_another_process():
    """What a warm run needs: another process (another hash seed, other temp folders and ids) gets the same key."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from yolo26kit.backends import onnxruntime as ort_backend

    ep = conv_program()
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    other = subprocess.run([sys.executable, "-c", KEY_IN_A_PROCESS], capture_output=True, text=True, check=True,
                           cwd=Path(__file__).resolve().parents[1],
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
    assert other == artifacts.program_key(ep, ort_backend.key_options(ep))


class FakeYOLO:
    """What ultralytics_export needs of a YOLO: .model (yaml, state_dict) and .export writing into the working
    directory, here an executorch-like folder with the program and its metadata."""

    def __init__(self, scale: float) -> None:
        self.model = Affine(scale)
        self.model.yaml = {"nc": 80, "scale": "n"}
        self.exports = 0

    def export(self, format: str, **options):
        import os
        from pathlib import Path

        self.exports += 1
        out = Path(os.getcwd()) / "model_executorch_model"
        out.mkdir(exist_ok=True)
        (out / "model.pte").write_bytes(b"pte" * (self.exports + 1))
        (out / "metadata.yaml").write_text("end2end: true\n")
        return out.name


def test_ultralytics_exports_are_served_from_the_cache_by_model_and_options(tmp_path, monkeypatch):
    from yolo26kit.backends import ultralytics_export

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path / "cache"))
    net = FakeYOLO(2.0)
    notes = ["a warning of the first export"]
    path, cached = ultralytics_export.cached_export(net, tmp_path / "a", "executorch", notes, imgsz=640)
    assert not cached and path.name == "model.pte" and net.exports == 1
    again, cached = ultralytics_export.cached_export(net, tmp_path / "b", "executorch", imgsz=640)
    assert cached and net.exports == 1 and again.read_bytes() == path.read_bytes()
    assert (again.parent / "metadata.yaml").exists() and ultralytics_export.end2end("executorch", again)
    # other weights, another size or no cache: the exporter runs
    ultralytics_export.cached_export(FakeYOLO(3.0), tmp_path / "c", "executorch", imgsz=640)
    ultralytics_export.cached_export(net, tmp_path / "d", "executorch", imgsz=320)
    monkeypatch.delenv(artifacts.CACHE_ENV)
    ultralytics_export.cached_export(net, tmp_path / "e", "executorch", imgsz=640)
    assert net.exports == 3


# --- a module's export is remembered: a warm prepare finds its artifact without exporting ------------------------

def counting_exports(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = torch.export.export

    def export(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.export, "export", export)
    return calls


def test_a_warm_prepare_of_the_same_module_does_not_export(tmp_path, monkeypatch):
    from yolo26kit.backends import executorch_xnnpack

    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(executorch_xnnpack, "lower", lambda ep: b"pte")
    exports = counting_exports(monkeypatch)
    facts = [executorch_xnnpack.prepare(Affine(2.0), (torch.ones(3),), tmp_path, run) for run in ("cold", "warm")]
    assert [f["cached"] for f in facts] == [False, True]
    assert exports == [1]


def test_the_module_key_moves_with_weights_inputs_attributes_and_patched_code():
    key = artifacts.module_key(Affine(2.0), (torch.ones(3),))
    assert artifacts.module_key(Affine(2.0), (torch.ones(3),)) == key
    assert artifacts.module_key(Affine(3.0), (torch.ones(3),)) != key
    assert artifacts.module_key(Affine(2.0), (torch.ones(4),)) != key
    assert artifacts.module_key(Affine(2.0), (torch.ones(3, dtype=torch.float64),)) != key
    flagged = Affine(2.0)
    flagged.end2end = True
    assert artifacts.module_key(flagged, (torch.ones(3),)) != key
    patched = Affine(2.0)
    patched.forward = lambda x: x * patched.weight - 1  # a fix patched onto the instance
    assert artifacts.module_key(patched, (torch.ones(3),)) != key


def test_a_module_export_keys_as_its_program_does(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))
    module, inputs = Affine(2.0), (torch.ones(3),)
    lazy = artifacts.ModuleExport(module, inputs)
    assert artifacts.program_key(lazy, {"a": 1}) == artifacts.program_key(torch.export.export(module, inputs), {"a": 1})
    assert artifacts.input_shapes(artifacts.ModuleExport(module, inputs)) == artifacts.input_shapes(lazy.program)


def test_a_deferred_program_is_made_once_and_its_facts_come_back_from_the_memo(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.CACHE_ENV, str(tmp_path))
    made: list[int] = []

    def make():
        made.append(1)
        return torch.export.export(Affine(2.0), (torch.ones(3),)), {"source": "made"}

    cold = artifacts.DeferredProgram(lambda: "k1", make)
    key = artifacts.program_key(cold)
    assert cold.facts() == {"source": "made"} and made == [1]
    warm = artifacts.DeferredProgram(lambda: "k1", make)
    assert artifacts.program_key(warm) == key and warm.facts() == {"source": "made"}
    assert made == [1]  # the warm one never made its program
    other = artifacts.DeferredProgram(lambda: "k2", make)
    assert artifacts.program_key(other) == key and made == [1, 1]  # another key makes it again
