"""bench.vec_isa: Inductor's CPU vector ISA picked once per compile cache."""

import json

import pytest
from torch._inductor import cpu_vec_isa

from yolo26kit.bench import vec_isa


@pytest.fixture
def no_probe(monkeypatch):
    """Every probe build fails the test; the module attribute a seeded pick replaces is restored afterwards."""
    monkeypatch.setattr(cpu_vec_isa, "valid_vec_isa_list", cpu_vec_isa.valid_vec_isa_list)

    def refuse(self, code):
        raise AssertionError("probed although the cache knew the answer")

    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", refuse)


def test_a_recorded_pick_is_taken_without_probing(tmp_path, no_probe):
    chosen = str(cpu_vec_isa.supported_vec_isa_list[-1])
    (tmp_path / vec_isa.FILE).write_text(json.dumps({vec_isa._key(): chosen}))
    assert vec_isa.pick(tmp_path) == (chosen, "cache")
    assert str(cpu_vec_isa.pick_vec_isa()) == chosen  # what Inductor's own callers get in this process


def test_a_probe_is_recorded_for_the_next_process(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_vec_isa, "pick_vec_isa", lambda: cpu_vec_isa.supported_vec_isa_list[-1])
    picked, source = vec_isa.pick(tmp_path)
    assert source == "probed"
    assert json.loads((tmp_path / vec_isa.FILE).read_text()) == {vec_isa._key(): picked}


def test_another_torch_or_cpu_probes_again(tmp_path, monkeypatch):
    (tmp_path / vec_isa.FILE).write_text(json.dumps({"torch 0.0 other-cpu": "avx2"}))
    monkeypatch.setattr(cpu_vec_isa, "pick_vec_isa", lambda: cpu_vec_isa.supported_vec_isa_list[-1])
    assert vec_isa.pick(tmp_path)[1] == "probed"
    assert len(json.loads((tmp_path / vec_isa.FILE).read_text())) == 2


def test_candidates_are_probed_side_by_side(monkeypatch):
    import threading

    both = threading.Barrier(2, timeout=30)  # broken (an error) unless the two probes run at the same time

    class Candidate:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return self.name

        def __bool__(self):
            both.wait()
            return True

    monkeypatch.setattr(cpu_vec_isa, "x86_isa_checker", lambda: ["avx2", "avx512"])
    monkeypatch.setattr(cpu_vec_isa, "supported_vec_isa_list", [Candidate("avx512"), Candidate("avx2"),
                                                                Candidate("amx_tile")])
    vec_isa._probe_side_by_side(cpu_vec_isa)  # amx_tile: a flag this CPU lacks, never probed (the barrier is for 2)
    assert not both.broken
