"""cache_transfer: the portable part of a compile cache goes out and comes back merged; nothing else travels."""

import json
import tarfile

import pytest

from yolo26kit.run import cache_transfer
from yolo26kit import cli

SYSTEM = "2b00ebb9"


def autotune_file(root, shapes):
    path = root / "inductor" / "cache" / SYSTEM
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"system": {"device": "H100"},
                                "cache": {"addmm": {s: {"float32": {"c1": t}} for s, t in shapes.items()}}}))
    return path


@pytest.fixture
def cache(tmp_path):
    root = tmp_path / "cache"
    autotune_file(root, {"6400x96x128": 0.03, "1600x128x128": 0.02})
    (root / "inductor" / "ab").mkdir(parents=True)
    (root / "inductor" / "ab" / "triton_poi.best_config").write_text("{}")
    (root / "inductor" / "ab" / "triton_poi.py").write_text("# a compiled kernel: stays behind")
    (root / "triton").mkdir()
    (root / "triton" / "kernel.cubin").write_bytes(b"\0" * 4096)
    (root / "crash-sites").mkdir()
    (root / "crash-sites" / "site.json").write_text("{}")
    (root / "device.lock").write_text("")
    return root


def members(archive):
    with tarfile.open(archive) as tar:
        return sorted(m.name for m in tar.getmembers())


def test_export_takes_only_timings_configs_and_diagnoses(cache, tmp_path):
    facts = cache_transfer.export(cache, tmp_path / "out.tgz")
    assert members(tmp_path / "out.tgz") == ["crash-sites/site.json", "inductor/ab/triton_poi.best_config",
                                               f"inductor/cache/{SYSTEM}"]
    assert facts["files"] == 3 and facts["autotuned"] == {"addmm": 2}


def test_import_into_a_fresh_machine_restores_them(cache, tmp_path):
    cache_transfer.export(cache, tmp_path / "out.tgz")
    fresh = tmp_path / "fresh"
    facts = cache_transfer.import_(fresh, tmp_path / "out.tgz")
    assert facts["added"] == 3 and cache_transfer.autotune_counts(fresh) == {"addmm": 2}
    assert not (fresh / "triton").exists()


def test_import_merges_timings_and_keeps_the_machines_own(cache, tmp_path):
    cache_transfer.export(cache, tmp_path / "out.tgz")
    other = tmp_path / "other"
    mine = autotune_file(other, {"1600x128x128": 0.5, "400x64x64": 0.01})
    facts = cache_transfer.import_(other, tmp_path / "out.tgz")
    timings = json.loads(mine.read_text())["cache"]["addmm"]
    assert sorted(timings) == ["1600x128x128", "400x64x64", "6400x96x128"]
    assert timings["1600x128x128"]["float32"]["c1"] == 0.5  # this machine's own measurement stays
    assert facts["merged"] == 1 and facts["autotuned"] == {"addmm": 3}
    assert cache_transfer.import_(other, tmp_path / "out.tgz")["merged"] == 0  # a second import changes nothing


@pytest.mark.parametrize("name", ["../evil.json", "triton/kernel.cubin", "inductor/ab/kernel.py"])
def test_import_refuses_what_export_never_writes(tmp_path, name):
    src = tmp_path / "payload"
    src.write_text("x")
    with tarfile.open(tmp_path / "bad.tgz", "w:gz") as tar:
        tar.add(tmp_path / "payload", arcname="crash-sites/ok.json")
        tar.add(src, arcname=name)
    with pytest.raises(ValueError):
        cache_transfer.import_(tmp_path / "root", tmp_path / "bad.tgz")
    assert not (tmp_path / "root").exists()  # nothing written, the good member neither


def test_cli_round_trip_and_bad_input(cache, tmp_path, capsys):
    assert cli.main(["cache", "export", str(tmp_path / "t.tgz"), "--cache", str(cache)]) == 0
    assert cli.main(["cache", "import", str(tmp_path / "t.tgz"), "--cache", str(tmp_path / "new")]) == 0
    assert cli.main(["cache", "info", "--cache", str(tmp_path / "new")]) == 0
    assert "autotuned input shapes: addmm 2" in capsys.readouterr().out
    assert cli.main(["cache", "import", str(tmp_path / "missing.tgz"), "--cache", str(cache)]) == 2
    assert cli.main(["cache", "export", str(tmp_path / "x.tgz"), "--cache", str(tmp_path / "none")]) == 2
    (tmp_path / "a-file").write_text("")
    assert cli.main(["cache", "export", str(tmp_path / "a-file" / "t.tgz"), "--cache", str(cache)]) == 2
    assert "cannot import" in capsys.readouterr().err


def test_info_counts_the_timings_of_each_gpu_apart(cache, tmp_path, capsys):
    other = cache / "inductor" / "cache" / "c33ff642"
    other.write_text(json.dumps({"system": {"device": {"name": "NVIDIA H200"}},
                                 "cache": {"addmm": {"6400x96x128": {"float32": {"c1": 0.02}}}}}))
    assert cache_transfer.autotune_counts(cache) == {"addmm": 3}
    assert cache_transfer.autotune_counts_by_gpu(cache) == {"H100": {"addmm": 2}, "NVIDIA H200": {"addmm": 1}}
    assert cli.main(["cache", "info", "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "on H100: addmm 2" in out and "on NVIDIA H200: addmm 1" in out
