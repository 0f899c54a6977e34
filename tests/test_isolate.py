"""isolate.run_step: each failure class is classified and the parent keeps going."""

import ctypes
import os
import subprocess
import sys
import time

from yolo26kit.bench import isolate, step_server


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: a real SIGSEGV


def sleep_long() -> None:
    time.sleep(60)


def raise_value_error() -> None:
    raise ValueError("bad input\nsecond line")


def out_of_memory() -> None:
    raise MemoryError("cannot allocate")


def returns(x: int) -> dict:
    print("from the child")
    return {"x": x, "pid": os.getpid()}


def test_ok_returns_value_and_log():
    out = isolate.run_step(returns, 7, timeout=60)
    assert out.status == "ok" and out.ok
    assert out.value["x"] == 7 and out.value["pid"] != os.getpid()
    assert "from the child" in out.log


def test_a_steps_progress_line_is_plain_output_in_a_kernel_and_beside_the_commands_progress_elsewhere(capsys,
                                                                                                     monkeypatch):
    """In JupyterLab stderr shows as a pink error box: in a kernel `[step] … done` goes to stdout (papermill keeps
    it too); in the `run` command it stays on stderr with the other progress lines, off the summary on stdout."""
    assert not isolate.in_kernel()
    monkeypatch.setattr(isolate, "in_kernel", lambda: True)
    isolate.run_step(returns, 1, timeout=60, step="plain")
    said = capsys.readouterr()
    assert "[step] plain: done after" in said.out and "[step]" not in said.err
    monkeypatch.setattr(isolate, "in_kernel", lambda: False)
    isolate.run_step(returns, 1, timeout=60, step="plain")
    said = capsys.readouterr()
    assert "[step] plain: done after" in said.err and "[step]" not in said.out


def test_a_kernel_is_told_by_its_stdout():
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        said = []
        client.execute_interactive("from yolo26kit.bench import isolate\nisolate.progress('in a kernel')",
                                   timeout=120, output_hook=lambda msg: said.append(msg["content"]))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    streams = [(c["name"], c["text"]) for c in said if "name" in c]
    assert streams == [("stdout", "[step] in a kernel\n")]


def test_a_step_runs_when_called_from_code_read_from_stdin():
    """`python -` has a __main__ whose file is `<stdin>`: a step of an importable function still runs, and one
    defined in __main__ itself is an error that says why (its process cannot import it)."""
    code = ("import operator\nfrom yolo26kit.bench import isolate\n"
            "def here():\n    return 1\n"
            "out = isolate.run_step(operator.add, 40, 2, timeout=120, step='add')\n"
            "print('value', out.value, out.status)\n"
            "print('main', isolate.run_step(here, timeout=120).error)\n")
    done = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=300)
    assert "value 42 ok" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "is defined in __main__ without a file" in done.stdout


def test_exception_is_error_with_first_line():
    out = isolate.run_step(raise_value_error, timeout=60)
    assert out.status == "error"
    assert out.error == "ValueError: bad input"
    assert "Traceback" in out.traceback


def test_segfault_is_crash_and_parent_survives():
    out = isolate.run_step(segfault, timeout=60)
    assert out.status == "crash"
    assert out.signal == "SIGSEGV"
    assert "Segmentation fault" in out.log  # faulthandler's dump of the child's stack
    assert isolate.run_step(returns, 1, timeout=60).ok  # the parent goes on


def test_timeout_kills_the_step():
    t0 = time.perf_counter()
    out = isolate.run_step(sleep_long, timeout=2)
    assert out.status == "timeout"
    assert time.perf_counter() - t0 < 30
    assert isolate.run_step(returns, 2, timeout=60).ok


def test_memory_error_is_oom():
    assert isolate.run_step(out_of_memory, timeout=60).status == "oom"


def test_skipped_and_row():
    out = isolate.skipped("et_cuda", "needs a CUDA device")
    assert out.status == "skipped" and not out.ok
    assert out.row()["error"] == "needs a CUDA device"
    assert set(isolate.STATUSES) == {"ok", "error", "crash", "timeout", "oom", "skipped"}


def test_crash_row_carries_python_stack_and_trace_file(tmp_path, monkeypatch):
    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(isolate.FORENSICS_TIMEOUT_ENV, "120")
    out = isolate.run_step(segfault, timeout=60, step="segfault on purpose")
    assert out.status == "crash"
    assert "Fatal Python error: Segmentation fault" in out.details["python_stack"]
    assert "segfault" in out.details["python_stack"]  # the function that crashed, by name
    row = out.row()
    assert row["frames"] and row["trace_file"].startswith(str(tmp_path))
    text = open(row["trace_file"]).read()
    assert "== Python stack (faulthandler) ==" in text
    # Either a debugger's native frames or the reason there are none.
    assert out.details["native"]


def test_timeout_row_carries_the_stack_where_it_hung(tmp_path, monkeypatch):
    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path))
    out = isolate.run_step(sleep_long, timeout=3, step="hangs")
    assert out.status == "timeout"
    assert "sleep_long" in out.details["python_stack"]
    assert "native" not in out.details  # timeouts are not re-run under a debugger


def test_phase_seconds_are_accounted():
    from yolo26kit.bench import timing

    before = timing.phase_seconds()["compile"]
    isolate.run_step(returns, 3, timeout=60, step="compile something")
    assert timing.phase_seconds()["compile"] > before



def test_a_step_logs_its_start_up_and_a_crash_its_forensics(tmp_path, monkeypatch):
    import json

    from yolo26kit.bench import timing

    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv(timing.PHASE_LOG_ENV, str(log))
    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(isolate.FORENSICS_TIMEOUT_ENV, "60")
    isolate.run_step(returns, 3, timeout=60, step="a")
    isolate.run_step(segfault, timeout=60, step="b")
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    started = {r["step"]: r for r in rows if r["phase"] == "step_start"}
    ran = {r["step"]: r for r in rows if r["phase"] in ("compile", "other")}
    assert set(started) == {"a", "b"}
    assert ran["a"]["t0"] <= started["a"]["t0"] <= started["a"]["t1"] <= ran["a"]["t1"]  # inside the step
    assert started["a"]["pid"] != os.getpid()  # the child logged when it was ready
    forensics = [r for r in rows if r["phase"] == "forensics"]
    assert [r["step"] for r in forensics] == ["b"] and forensics[0]["t0"] >= ran["b"]["t1"] - 0.01

def spawn_sleeper_and_wait(marker: str) -> None:
    import subprocess

    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)  # another session, like a kernel
    with open(marker, "w") as f:
        f.write(str(proc.pid))
    time.sleep(300)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_terminate_all_ends_steps_and_their_descendants(tmp_path):
    import threading

    marker = tmp_path / "pid"
    result = {}
    t = threading.Thread(target=lambda: result.update(out=isolate.run_step(
        spawn_sleeper_and_wait, str(marker), timeout=120, forensics=False)))
    t.start()
    deadline = time.time() + 60
    while not marker.exists() or not marker.read_text():
        assert time.time() < deadline
        time.sleep(0.1)
    grandchild = int(marker.read_text())
    isolate.terminate_all(grace=2)
    t.join(30)
    assert not t.is_alive()
    assert result["out"].status in ("crash", "oom", "error")
    time.sleep(0.5)
    assert not _alive(grandchild)


def test_a_second_crash_at_the_same_site_reuses_the_diagnosis(tmp_path, monkeypatch):
    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(isolate.FORENSICS_TIMEOUT_ENV, "120")
    first = isolate.run_step(segfault, timeout=60, step="first")
    second = isolate.run_step(segfault, timeout=60, step="second")
    assert first.status == second.status == "crash"
    if first.details["native"].startswith("no native"):  # no debugger here: nothing to reuse
        assert second.details["native"].startswith("no native")
        return
    assert "same crash site as" in second.details["native"]
    assert second.details["frames"] == first.details["frames"]
    assert os.path.basename(first.details["trace_file"]) in second.details["native"]
    assert "== native backtrace" in open(second.details["trace_file"]).read()  # each trace file carries it


def test_a_later_run_reuses_the_diagnosis_kept_in_the_compile_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("YOLO26KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(isolate.FORENSICS_TIMEOUT_ENV, "120")
    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path / "run1"))
    first = isolate.run_step(segfault, timeout=60, step="first run")
    if first.details["native"].startswith("no native"):  # no debugger here: nothing is kept
        assert not (tmp_path / "cache" / "crash-sites").exists()
        return
    assert not first.details.get("diagnosis_cached")
    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path / "run2"))  # a new run folder, the same cache
    second = isolate.run_step(segfault, timeout=60, step="second run")
    assert second.details["diagnosis_cached"] is True
    assert "earlier run on this machine" in second.details["native"]
    assert second.details["frames"] == first.details["frames"]
    # The new run's own trace file still holds the native backtrace, copied from the cache.
    assert "== native backtrace" in open(second.details["trace_file"]).read()
    assert second.details["trace_file"].startswith(str(tmp_path / "run2"))


def test_only_a_debugger_re_run_takes_a_step_slot(tmp_path, monkeypatch):
    """A crash at a site another step is diagnosing waits for that diagnosis without holding one of the run's step
    slots (eight crashes of one cold GPU batch held seven slots while one debugger ran)."""
    import contextlib

    from yolo26kit.bench import forensics

    monkeypatch.setenv(isolate.FORENSICS_DIR_ENV, str(tmp_path))
    slots, reruns = [], []
    real_slot = isolate.step_slot

    @contextlib.contextmanager
    def counted_slot(rank=None):
        slots.append(rank)
        with real_slot(rank) as waited:
            yield waited

    gdb_text = "Program received signal SIGSEGV, Segmentation fault.\n#0  0x00007f01 in crash () from /lib/x.so\n"
    monkeypatch.setattr(isolate, "step_slot", counted_slot)
    monkeypatch.setattr(forensics, "native_backtrace",
                        lambda path, timeout: reruns.append(path) or forensics.parse_gdb(gdb_text))
    first = isolate.run_step(segfault, timeout=60, step="first")
    second = isolate.run_step(segfault, timeout=60, step="second")
    assert first.details["native"] == "gdb: SIGSEGV, 1 frames" and "same crash site as" in second.details["native"]
    assert len(reruns) == 1
    assert len(slots) == 3  # the two steps and the one re-run under the debugger


def test_crash_site_ignores_thread_ids_but_not_lines():
    a = 'Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f01 (most recent call first):\n  File "x.py", line 3 in f\n'
    b = a.replace("0x00007f01", "0x00007f99")
    c = a.replace("line 3", "line 4")
    assert isolate.crash_site("SIGSEGV", a) == isolate.crash_site("SIGSEGV", b) != isolate.crash_site("SIGSEGV", c)
    assert isolate.crash_site("SIGSEGV", "no stack") == ""


def test_step_slots_bound_concurrency(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv(isolate.SLOTS_ENV, f"{tmp_path}:1")
    starts = []

    def one():
        with isolate.step_slot():
            starts.append(time.perf_counter())
            time.sleep(0.6)

    threads = [threading.Thread(target=one) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert abs(starts[1] - starts[0]) >= 0.5  # one slot: the second waited for the first


def test_a_free_step_slot_goes_to_the_lowest_rank_waiting(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv(isolate.SLOTS_ENV, f"{tmp_path}:1")
    order, held = [], threading.Event()

    def holder():
        with isolate.step_slot(rank=0):
            held.set()
            time.sleep(1.0)

    def waiter(rank: int):
        with isolate.step_slot(rank=rank):
            order.append(rank)
            time.sleep(0.3)

    first = threading.Thread(target=holder)
    first.start()
    held.wait()
    late = threading.Thread(target=waiter, args=(5,))
    late.start()
    time.sleep(0.3)  # rank 5 waits first, rank 1 comes later and still goes before it
    early = threading.Thread(target=waiter, args=(1,))
    early.start()
    [t.join() for t in (first, late, early)]
    assert order == [1, 5]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("wait-")]


def counted(counter: str, artifact: str = "") -> dict:
    """Appends a line to `counter` each time it runs; writes `artifact` when given."""
    with open(counter, "a") as f:
        f.write("ran\n")
    if artifact:
        open(artifact, "w").close()
    return {"pid": os.getpid(), "artifact": artifact}


def counted_then_fails(counter: str) -> None:
    with open(counter, "a") as f:
        f.write("ran\n")
    raise RuntimeError("missing fallback kernels")


def interrupted() -> None:
    raise KeyboardInterrupt


def runs(counter) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_the_journal_reads_back_finished_steps_and_counts_them(tmp_path, monkeypatch):
    counter, journal = tmp_path / "ran", tmp_path / "journal"
    monkeypatch.setenv(isolate.JOURNAL_ENV, str(journal))
    first = isolate.run_step(counted, str(counter), timeout=60, step="lower")
    again = isolate.run_step(counted, str(counter), timeout=60, step="lower")
    assert runs(counter) == 1 and again.value == first.value and again.details["reused"]
    assert isolate.run_step(counted, str(counter), timeout=60, step="other name").ok and runs(counter) == 2
    failed = isolate.run_step(counted_then_fails, str(counter), timeout=60)
    assert isolate.run_step(counted_then_fails, str(counter), timeout=60).error == failed.error == \
        "RuntimeError: missing fallback kernels"
    assert runs(counter) == 3  # an error is a result too: read back
    lines = (journal / isolate.JOURNAL_REUSED).read_text().splitlines()
    assert len(lines) == 2 and '"step": "lower"' in lines[0]
    monkeypatch.delenv(isolate.JOURNAL_ENV)
    isolate.run_step(counted, str(counter), timeout=60, step="lower")
    assert runs(counter) == 4  # outside a journal every call runs


def test_the_journal_keeps_no_timeout_no_interrupt_and_nothing_once_the_run_is_stopping(tmp_path, monkeypatch):
    journal = tmp_path / "journal"
    monkeypatch.setenv(isolate.JOURNAL_ENV, str(journal))
    isolate.run_step(sleep_long, timeout=2)
    assert isolate.run_step(interrupted, timeout=60).error == "KeyboardInterrupt"
    assert not journal.exists() or not list(journal.glob("*.pickle"))
    journal.mkdir(exist_ok=True)
    (journal / isolate.JOURNAL_STOPPING).touch()
    counter = tmp_path / "ran"
    isolate.run_step(counted, str(counter), timeout=60)
    assert not list(journal.glob("*.pickle"))
    (journal / isolate.JOURNAL_STOPPING).unlink()
    isolate.run_step(counted, str(counter), timeout=60)
    assert len(list(journal.glob("*.pickle"))) == 1 and runs(counter) == 2


def exists(path: str) -> bool:
    return os.path.exists(path)


def test_an_artifact_that_is_gone_is_remade_by_its_step_when_a_later_step_reads_it(tmp_path, monkeypatch):
    counter, journal = tmp_path / "ran", tmp_path / "journal"
    monkeypatch.setenv(isolate.JOURNAL_ENV, str(journal))
    work = isolate.work_dir("case")
    assert work == str(journal / "work" / "case") and isolate.work_dir("case") == work  # fixed: keys stay equal
    artifact = os.path.join(work, "model.pte")
    made = isolate.run_step(counted, str(counter), artifact, timeout=60, step="make")
    assert isolate.run_step(exists, artifact, timeout=60, step="read").value is True
    os.unlink(artifact)  # e.g. a run folder carried without its work/ folder
    again = isolate.run_step(counted, str(counter), artifact, timeout=60, step="make")
    assert again.details["reused"] and again.value == made.value and runs(counter) == 1  # the outcome is kept
    assert isolate.run_step(exists, artifact, timeout=60, step="read").details["reused"]  # kept: nothing remade
    read = isolate.run_step(exists, artifact, timeout=60, step="read in a new cell")
    assert read.value is True and read.details["remade_by"] == ["make"] and runs(counter) == 2


def test_a_step_inside_a_step_is_not_journaled_on_its_own(tmp_path, monkeypatch):
    journal = tmp_path / "journal"
    monkeypatch.setenv(isolate.JOURNAL_ENV, str(journal))
    assert isolate.run_step(nested_step, str(tmp_path / "ran"), timeout=120).ok
    assert len(list(journal.glob("*.pickle"))) == 1


def nested_step(counter: str) -> bool:
    return isolate.run_step(counted, counter, timeout=60).ok and isolate.JOURNAL_ENV not in os.environ


def test_others_busy_counts_other_processes_cpu_not_this_ones():
    import subprocess
    import sys

    from yolo26kit.bench import timing

    with timing.others_busy() as quiet_own:
        deadline = time.perf_counter() + 0.5
        while time.perf_counter() < deadline:  # this process's own work is not "others"
            pass
    busy_child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"])
    with timing.others_busy() as beside_child:
        busy_child.wait()
    assert beside_child["others_busy_cores"] >= 0.5  # one core kept busy (a share of it on a crowded machine)
    assert quiet_own["others_busy_cores"] < beside_child["others_busy_cores"]


def test_a_step_server_started_ahead_serves_the_next_step():
    from multiprocessing import forkserver

    isolate.stop_server()
    isolate.start_server_soon().join(120)
    server = getattr(forkserver._forkserver, "_forkserver_pid", None)
    assert server is not None and _alive(server)
    out = isolate.run_step(returns, 5, timeout=60, step="after the early start")
    assert out.ok and out.value["x"] == 5
    assert forkserver._forkserver._forkserver_pid == server  # the same server, not a second one


def env_of(*names: str) -> dict:
    return {n: os.environ.get(n) for n in names}


def test_steps_of_a_server_started_ahead_see_the_environment_as_it_was_at_the_first_step(monkeypatch):
    monkeypatch.setenv("KIT_TEST_GONE", "set before the server")
    monkeypatch.delenv("KIT_TEST_SET", raising=False)
    isolate.stop_server()
    try:
        isolate.start_server_soon().join(120)
        monkeypatch.setenv("KIT_TEST_SET", "set after the server, before the first step")
        monkeypatch.delenv("KIT_TEST_GONE")
        first = isolate.run_step(env_of, "KIT_TEST_SET", "KIT_TEST_GONE", timeout=60, step="first")
        monkeypatch.setenv("KIT_TEST_SET", "set after the first step")
        later = isolate.run_step(env_of, "KIT_TEST_SET", "KIT_TEST_GONE", timeout=60, step="later")
    finally:
        isolate.stop_server()  # the next test's steps start from their own environment
    assert first.value == {"KIT_TEST_SET": "set after the server, before the first step", "KIT_TEST_GONE": None}
    assert later.value == first.value  # later changes stay the caller's, as with a server the first step started


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def test_steps_that_share_the_cores_each_get_their_share_of_threads_and_timed_ones_keep_every_core(monkeypatch):
    from yolo26kit.bench import timing  # imports torch before the fork, as a notebook has: the child resizes its pool

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert timing.shared_threads_env("compile") == {}
    with timing.sharing_cores(2):
        assert timing.shared_threads_env("compile") == {"OMP_NUM_THREADS": "2"}
        assert timing.shared_threads_env("measure") == {}
        with timing.sharing_cores(2):  # another block open beside it: four steps at once
            assert timing.shared_threads_env("other") == {"OMP_NUM_THREADS": "1"}
            assert isolate.run_step(torch_threads, timeout=60, step="count threads").value == 1
    assert timing.shared_threads_env("compile") == {}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the runner's bound for notebooks side by side wins
    with timing.sharing_cores(4):
        assert timing.shared_threads_env("compile") == {}


def environment(*names: str) -> dict:
    return {n: os.environ.get(n) for n in names}


def test_a_step_child_given_the_spare_gpu_env_runs_with_that_gpus_id_lock_and_cores(monkeypatch):
    from yolo26kit.bench import timing

    monkeypatch.setenv(timing.SPARE_GPU_ENV, '{"gpu": "1", "lock": "/l/gpu1.lock", "cores": "4,5"}')
    spare = timing.spare_gpu_env()
    assert spare == {"CUDA_VISIBLE_DEVICES": "1", timing.DEVICE_LOCK_ENV: "/l/gpu1.lock",
                     timing.DEVICE_CORES_ENV: "4,5"}
    out = isolate.run_step(environment, *spare, env=spare, timeout=60)
    assert out.ok and out.value == spare, out.error
    monkeypatch.setenv(timing.SPARE_GPU_ENV, '{"gpu": "1", "lock": "/l/gpu1.lock", "cores": ""}')
    assert timing.DEVICE_CORES_ENV not in timing.spare_gpu_env()  # no cores kept for it: timings stay put


def test_the_spare_gpu_env_is_empty_when_none_was_lent_or_it_does_not_read(monkeypatch):
    from yolo26kit.bench import timing

    monkeypatch.delenv(timing.SPARE_GPU_ENV, raising=False)
    assert timing.spare_gpu_env() == {}
    for bad in ("", "not json", "[1]", "3", '{"gpu": 1, "lock": "/l"}', '{"gpu": "1"}', '{"gpu": "", "lock": "/l"}',
                '{"gpu": "1", "lock": "/l", "cores": "x"}', '{"gpu": "1", "lock": "/l", "cores": 5}'):
        monkeypatch.setenv(timing.SPARE_GPU_ENV, bad)
        assert timing.spare_gpu_env() == {}, bad


def test_the_kernel_startup_starts_the_step_server_with_the_notebooks_preloads_and_leaves_no_name():
    from yolo26kit.catalog import Investigation
    from yolo26kit.run import notebook

    env = notebook.kernel_startup_env(Investigation("probe", "t", (), preload=("json", "csv")))
    assert env[step_server.PRELOAD_ENV] == "json,csv"
    check = ("import runpy, sys, threading\n"
             "names = runpy.run_path(sys.argv[1])\n"
             "[t.join(120) for t in threading.enumerate() if t.name == 'step-server-start']\n"
             "from multiprocessing import forkserver\n"
             "from yolo26kit.bench import step_server\n"
             "print(sorted(n for n in names if not n.startswith('__')), step_server._PRELOAD[-2:],\n"
             "      forkserver._forkserver._forkserver_pid is not None)\n")
    out = subprocess.run([sys.executable, "-c", check, env["PYTHONSTARTUP"]], capture_output=True, text=True,
                         timeout=180, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "['json',", "'csv']", "True"]


def imports_and_reads(module: str) -> str:
    import importlib

    return importlib.import_module(module).VALUE


def test_a_step_imports_from_a_pythonpath_set_after_the_step_server_started(tmp_path, monkeypatch):
    """The server forks with the environment it started with; a PYTHONPATH set later (a user's module:factory model,
    or a test's folder) still reaches every step."""
    assert isolate.run_step(returns, 1, timeout=60).ok  # the server is up, without the folder below
    (tmp_path / "late_module_for_step.py").write_text("VALUE = 'found'\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    out = isolate.run_step(imports_and_reads, "late_module_for_step", timeout=60)
    assert out.ok and out.value == "found", out.error
