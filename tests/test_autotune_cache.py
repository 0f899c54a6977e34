"""autotune_cache: processes that tune at the same time keep each other's timings in Inductor's autotune cache."""

import json
import multiprocessing as mp
import time

import pytest


def _tune_one(cache_dir: str, op: str, install: bool, barrier) -> None:
    """What PersistentCache.lookup does on a miss: read the file, benchmark (here: wait), write back with its own
    timings; every process reads before any writes."""
    import os

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    from torch._inductor.codecache import CacheBase

    from yolo26kit.bench import autotune_cache

    if install:
        autotune_cache.install()
    CacheBase.get_local_cache_path.cache_clear()
    cache = CacheBase()
    read = cache.get_local_cache()
    barrier.wait()
    time.sleep(0.05)
    read.setdefault(op, {})["1600x128x128"] = {"float32": {"triton_mm_1": 0.02}}
    cache.update_local_cache(read)


def _tune_at_once(tmp_path, install: bool, ops: list[str]) -> dict:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(ops))
    procs = [ctx.Process(target=_tune_one, args=(str(tmp_path), op, install, barrier)) for op in ops]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * len(ops)
    (path,) = [p for p in (tmp_path / "cache").iterdir() if p.suffix != ".lock"]
    return json.loads(path.read_text())


OPS = ["addmm", "convolution", "bmm", "mm"]


def test_processes_tuning_at_once_keep_every_timing(tmp_path):
    data = _tune_at_once(tmp_path, install=True, ops=OPS)
    assert sorted(data["cache"]) == sorted(OPS)
    assert "system" in data  # still Inductor's own file format


def test_without_the_merge_a_concurrent_write_loses_timings(tmp_path):
    """Why install exists: Inductor's own write keeps only what the last writer read (if this fails, the
    installed torch merges by itself and autotune_cache can go)."""
    data = _tune_at_once(tmp_path, install=False, ops=OPS)
    assert len(data["cache"]) < len(OPS)


@pytest.fixture
def cache_base(tmp_path, monkeypatch):
    """Inductor's CacheBase writing under tmp_path; its original write and path cache are restored afterwards."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    from torch._inductor.codecache import CacheBase

    before = CacheBase.update_local_cache
    CacheBase.get_local_cache_path.cache_clear()
    yield CacheBase
    CacheBase.update_local_cache = before
    CacheBase.get_local_cache_path.cache_clear()


def test_install_is_idempotent_and_keeps_what_is_on_disk(cache_base):
    from yolo26kit.bench import autotune_cache

    before = cache_base.update_local_cache
    assert autotune_cache.install() and autotune_cache.install()
    patched = cache_base.update_local_cache
    assert patched is not before and getattr(patched, "merges_on_write", False)
    cache = cache_base()
    cache.update_local_cache({"addmm": {"a": {"float32": {"c1": 1.0}}}})
    cache.update_local_cache({"addmm": {"a": {"float32": {"c1": 2.0}}, "b": {"float32": {"c1": 3.0}}}})
    cache.update_local_cache({"addmm": {"c": {"float32": {"c1": 4.0}}}})  # read before b was written
    timings = cache.get_local_cache()["addmm"]
    assert timings == {"a": {"float32": {"c1": 2.0}}, "b": {"float32": {"c1": 3.0}}, "c": {"float32": {"c1": 4.0}}}


@pytest.mark.parametrize("broken", ["", "not json", "[]"])
def test_an_unreadable_cache_file_is_replaced(cache_base, broken):
    from yolo26kit.bench import autotune_cache

    autotune_cache.install()
    cache = cache_base()
    path = cache.get_local_cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(broken)
    cache.update_local_cache({"mm": {"a": {"float32": {"c1": 1.0}}}})
    assert cache.get_local_cache() == {"mm": {"a": {"float32": {"c1": 1.0}}}}


def merging_write_installed() -> bool:
    from torch._inductor.codecache import CacheBase

    return bool(getattr(CacheBase.update_local_cache, "merges_on_write", False))


def test_isolated_steps_inherit_the_merging_write():
    from yolo26kit.bench import isolate

    outcome = isolate.run_step(merging_write_installed, timeout=120, step="merging write", forensics=False)
    assert outcome.ok and outcome.value is True
