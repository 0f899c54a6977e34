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
