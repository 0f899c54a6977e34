"""Stack matrix: the same claims across PyTorch / ExecuTorch / ultralytics stacks (`yolo26kit matrix`).

A stack is a set of pins (torch and the executorch / torchvision / torchao / ultralytics releases that go with
it; `data/stacks.json` lists the default ones). Each stack gets one isolated environment, a cell is one
investigation of one stack on one device, and the matrix gathers every cell's verdicts in one claim × stack table.

Decisions:

- Environments are made with uv (`uv venv` + `uv pip install`): it resolves and links a 5 GB stack in about
  20 s on a 2-core machine where pip takes minutes, and its cache hard-links the wheels shared between stacks.
  An environment holds the stack's pins plus every other dependency of the kit (pyproject.toml), with the pins
  as uv overrides (a stack's torch wins over the torch pyproject.toml pins). The kit itself is not installed
  there: every cell runs `python -m yolo26kit run` of the checkout (PYTHONPATH = the checkout), so one
  environment serves every checkout and every cell runs the code of the matrix that started it.
- Environments live outside the repository: `<compile cache>/matrix-envs/<stack-id>` (`--envs DIR` overrides),
  each with a marker recording the key it was built for (pins, Python, the kit's dependency list); a matching
  marker means the environment is reused, another key rebuilds it. Each stack's compile cache is a folder in its
  environment, so `yolo26kit matrix --clean` removes both. The disk a stack takes is measured after install
  (`du`-like, hard links counted once per environment).
- A stack that cannot be installed, or whose torch / papermill / ultralytics / kit does not import, is a row with
  the reason (the state `install_failed` / `import_failed`) and no cells; an ExecuTorch that does not import is
  recorded (`partial`) and the cells still run, so the claims about it show what that stack does.
- A stack may name an `interpreter` ("current" = the Python running the matrix) instead of pins: it is used as
  it is, nothing is installed (a GPU runner's own PyTorch, or a test's stack).
- Claims: every claim of the chosen investigations that some stack judges (a verdict other than `needs_cuda`);
  `--all-claims` keeps the rest. Claims that no stack judged are listed under `not_judged`.
- "Since which release": `data/stacks.json` orders stacks in series (torch releases; ultralytics releases on
  one torch); for each claim and series, the first stack whose verdict differs from the stack before it.
- Executors: `local` (default; one cell at a time on CPU, as `yolo26kit run` does) and `ray` (a Ray task per
  stack install and per cell, `num_gpus=1` for CUDA cells; a local Ray started here, or the cluster at
  RAY_ADDRESS, which gets the checkout as its working_dir). A Ray cell packs its run folder and the driver
  unpacks it, so both executors leave the same files; a cell whose worker dies is re-run once (Ray's
  `max_retries=1`), then recorded as failed. matrix.json keeps what depends on the executor or the clock (times,
  run folders, install reuse) apart from what must agree (`comparable()`).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import socket
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
STACKS_FILE = ROOT / "data" / "stacks.json"
MARKER = "yolo26kit-stack.json"
SCHEMA = 1
# Must import for a stack to run at all; executorch is checked too, and a failure there is recorded, not fatal.
CORE_IMPORTS = ("torch", "papermill", "ipykernel", "ultralytics", "yolo26kit.env")
EXTRA_IMPORTS = ("executorch.exir", "executorch.backends.xnnpack.partition.xnnpack_partitioner")
PINNED = ("torch", "torchvision", "torchao", "executorch", "ultralytics")
INSTALL_TIMEOUT = 1800.0
CHECK_TIMEOUT = 300.0
CELL_TIMEOUT = 3600.0  # one `yolo26kit run` of one notebook, on top of its own per-notebook timeout
STATES_RUN = ("ok", "partial")  # stacks whose cells run
# Children run offline: no hub downloads, no ultralytics auto-install.
CHILD_ENV = {"YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "0", "PYTHONNOUSERSITE": "1"}
RAY_EXCLUDES = [".git", ".venv", "reports", "wheelhouse", "**/__pycache__", ".pytest_cache", ".hypothesis"]


class MatrixError(Exception):
    """Bad input to the matrix (unknown stack or investigation, bad parameter): nothing is written."""


@dataclass
class Stack:
    """A set of pins (or an interpreter used as it is); `note` says why it is in the matrix."""

    id: str
    pins: dict[str, str] = field(default_factory=dict)
    note: str = ""
    interpreter: str = ""  # "" → a uv environment from the pins; "current" or a path → that Python as it is
    default: bool = True

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", self.id):
            raise MatrixError(f"stack id {self.id!r}: letters, digits and ._+- only")
        if not self.pins and not self.interpreter:
            raise MatrixError(f"stack {self.id!r} has neither pins nor an interpreter")


def load_stacks(path: str | Path | None = None) -> tuple[list[Stack], dict[str, list[str]]]:
    """The stacks of a stacks file (default data/stacks.json) and its series (ordered stack ids)."""
    path = Path(path) if path else STACKS_FILE
    try:
        data = json.loads(path.read_text())
        stacks = [Stack(s["id"], dict(s.get("pins") or {}), s.get("note", ""), s.get("interpreter", ""),
                        s.get("default", True)) for s in data["stacks"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MatrixError(f"{path}: not a readable stacks file ({type(exc).__name__}: {exc})") from None
    ids = [s.id for s in stacks]
    if len(set(ids)) != len(ids):
        raise MatrixError(f"{path}: stack ids repeat")
    series = {name: [i for i in members if i in ids] for name, members in (data.get("series") or {}).items()}
    return stacks, series


def choose(stacks: list[Stack], wanted: list[str]) -> list[Stack]:
    """The stacks named (in the file's order), else the default ones."""
    if not wanted:
        return [s for s in stacks if s.default]
    known = {s.id for s in stacks}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise MatrixError(f"unknown stack(s) {unknown} (known: {', '.join(sorted(known))})")
    return [s for s in stacks if s.id in wanted]


# ---------------------------------------------------------------- environments


def default_envs() -> Path:
    """`<compile cache>/matrix-envs`: outside the repository, beside the kit's compile cache."""
    from .runner import default_cache_dir

    return default_cache_dir() / "matrix-envs"


def uv_binary() -> str:
    """uv from the `uv` package (the `matrix` extra) or the PATH."""
    try:
        import uv  # type: ignore[import-not-found]

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if not found:
            raise MatrixError("uv is not installed: pip install 'yolo26kit[matrix]' (or put uv on PATH)") from None
        return found


def kit_dependencies(kit_root: Path) -> list[str]:
    """The `dependencies` of the checkout's pyproject.toml."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return list(tomllib.loads((kit_root / "pyproject.toml").read_text())["project"]["dependencies"])


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~ ;\[(@]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def requirements(stack: Stack, kit_root: Path) -> tuple[list[str], list[str]]:
    """(requirements, overrides): the stack's pins plus the kit's other dependencies; the pins also as overrides."""
    pins = [f"{name}=={version}" for name, version in stack.pins.items()]
    pinned = {_name(p) for p in pins}
    return pins + [d for d in kit_dependencies(kit_root) if _name(d) not in pinned], pins


def env_key(stack: Stack, kit_root: Path, python: str) -> str:
    reqs, overrides = requirements(stack, kit_root)
    text = json.dumps({"requirements": reqs, "overrides": overrides, "python": python}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def disk_bytes(path: Path) -> int:
    """Bytes on disk under path (allocated blocks; a hard-linked file counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock file: one install of a stack's environment at a time (local threads, Ray tasks)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(text: str, lines: int = 6, limit: int = 1200) -> str:
    """The last meaningful lines of a tool's output (uv's error block), for a row's reason."""
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])[-limit:]


def _base_python() -> str:
    """The interpreter uv builds environments from: the one running the kit."""
    return sys.executable


CHECK = r"""
import importlib, json, sys
result = {"imports": {}}
for name in sys.argv[1].split(","):
    try:
        importlib.import_module(name)
        result["imports"][name] = "ok"
    except BaseException as exc:
        result["imports"][name] = (type(exc).__name__ + ": " + str(exc)).strip()[:400]
try:
    from yolo26kit import env
    result["fingerprint"] = env.fingerprint()
except BaseException as exc:
    result["fingerprint"] = {"error": type(exc).__name__ + ": " + str(exc)}
result["python_executable"] = sys.executable
print("YOLO26KIT-CHECK " + json.dumps(result))
"""


def child_environ(python: str, kit_root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child in a stack: its bin first on PATH, the checkout on PYTHONPATH, offline."""
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "CONDA_PREFIX")}
    bin_dir = str(Path(python).parent)
    environ["PATH"] = os.pathsep.join([bin_dir, environ.get("PATH", "")])
    environ["PYTHONPATH"] = str(kit_root)  # the checkout only: nothing of the driver's environment leaks in
    return {**environ, **CHILD_ENV, **(extra or {})}


_CHECKED: dict[tuple[str, str, float], dict[str, Any]] = {}


def check(python: str, kit_root: Path, timeout: float = CHECK_TIMEOUT) -> dict[str, Any]:
    """Import the stack's key modules in its Python and read its environment fingerprint.

    Within one process an interpreter is checked once (two stacks may name the same one); a reinstalled
    environment has a new python binary, so its modification time is part of the key.
    """
    try:
        key = (str(python), str(kit_root), os.stat(python).st_mtime)
    except OSError:
        key = (str(python), str(kit_root), 0.0)
    if key not in _CHECKED:
        _CHECKED[key] = _check(python, kit_root, timeout)
    return json.loads(json.dumps(_CHECKED[key]))


def _check(python: str, kit_root: Path, timeout: float) -> dict[str, Any]:
    try:
        done = subprocess.run([python, "-c", CHECK, ",".join(CORE_IMPORTS + EXTRA_IMPORTS)], cwd=kit_root,
                              env=child_environ(python, kit_root), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"imports": {}, "error": f"{type(exc).__name__}: {exc}"}
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("YOLO26KIT-CHECK ")), "")
    if not line:
        return {"imports": {}, "error": f"exit {done.returncode}: {_tail(done.stderr or done.stdout)}"}
    return json.loads(line.split(" ", 1)[1])


def _row(stack: Stack) -> dict[str, Any]:
    return {"id": stack.id, "pins": dict(stack.pins), "note": stack.note, "state": "pending", "reason": "",
            "environment": {}, "imports": {}, "install": {}}


def _judge_check(row: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    """Fill a stack row from its import check: ok, partial (ExecuTorch missing) or import_failed."""
    row["imports"] = found.get("imports", {})
    row["environment"] = found.get("fingerprint", {}) if "error" not in found.get("fingerprint", {}) else {}
    if found.get("error"):
        row.update(state="import_failed", reason=f"import check failed: {found['error']}")
        return row
    failed = {m: why for m, why in row["imports"].items() if why != "ok"}
    core = {m: why for m, why in failed.items() if m in CORE_IMPORTS}
    if core or not row["environment"]:
        first = next(iter(core.items()), ("yolo26kit.env", found.get("fingerprint", {}).get("error", "")))
        row.update(state="import_failed", reason=f"import {first[0]}: {first[1]}")
    elif failed:
        name, why = next(iter(failed.items()))
        row.update(state="partial", reason=f"import {name}: {why}; its cells run and show what this stack does")
    else:
        row.update(state="ok", reason="")
    if not stack_pins_match(row):
        row["reason"] = (row["reason"] + "; " if row["reason"] else "") + "installed versions differ from the pins: " \
            + ", ".join(f"{k} {row['environment'].get(k)} (pin {v})" for k, v in row["pins"].items()
                        if k in ("torch", "executorch", "ultralytics") and row["environment"].get(k)
                        and str(row["environment"][k]).split("+")[0] != v)
    return row


def stack_pins_match(row: dict[str, Any]) -> bool:
    """Whether the fingerprint's torch / executorch / ultralytics are the pinned releases (local suffixes aside)."""
    environment = row.get("environment") or {}
    return all(str(environment.get(k) or "").split("+")[0] == v for k, v in row["pins"].items()
               if k in ("torch", "executorch", "ultralytics") and environment.get(k))


def env_dir(stack: Stack, envs: Path) -> Path:
    return Path(envs) / stack.id


def prepare(stack: Stack, envs: str | Path | None, kit_root: str | Path = ROOT,
            log: Callable[[str], None] = lambda s: None, timeout: float = INSTALL_TIMEOUT) -> dict[str, Any]:
    """Create (or reuse) the stack's environment and check it; a stack row, never an exception."""
    envs = Path(envs).expanduser() if envs else default_envs()
    kit_root = Path(kit_root)
    row = _row(stack)
    try:
        if stack.interpreter:
            python = sys.executable if stack.interpreter == "current" else stack.interpreter
            row["install"] = {"kind": "interpreter", "python": python, "seconds": 0.0, "disk_bytes": None,
                              "reused": True}
        else:
            python, row["install"] = _install(stack, envs, kit_root, log, timeout)
        row["python"] = python
        if row["install"].get("error"):
            row.update(state="install_failed", reason=row["install"].pop("error"))
            return row
        return _judge_check(row, check(python, kit_root))
    except Exception as exc:  # noqa: BLE001 - a stack is a row, never a crash of the matrix
        row.update(state="install_failed", reason=f"{type(exc).__name__}: {exc}")
        return row


def _install(stack: Stack, envs: Path, kit_root: Path, log: Callable[[str], None],
             timeout: float) -> tuple[str, dict[str, Any]]:
    target = env_dir(stack, envs)
    python = str(target / "bin" / "python")
    base = _base_python()
    key = env_key(stack, kit_root, base)
    marker = target / MARKER
    with _locked(Path(envs) / f".{stack.id}.lock"):
        try:
            recorded = json.loads(marker.read_text())
        except (OSError, ValueError):
            recorded = {}
        if recorded.get("key") == key and Path(python).exists():
            return python, {"kind": "uv", "seconds": recorded.get("seconds"), "disk_bytes": recorded.get("disk_bytes"),
                            "reused": True, "key": key}
        uv = uv_binary()
        reqs, overrides = requirements(stack, kit_root)
        t0 = time.perf_counter()
        log(f"[{stack.id}] installing {' '.join(f'{k}=={v}' for k, v in stack.pins.items())}")
        environ = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        environ.pop("VIRTUAL_ENV", None)
        steps = [[uv, "venv", "--quiet", "--clear", "--python", base, str(target)]]
        with tempfile.TemporaryDirectory(prefix="yolo26kit-stack-") as tmp:
            (Path(tmp) / "requirements.txt").write_text("\n".join(reqs) + "\n")
            (Path(tmp) / "overrides.txt").write_text("\n".join(overrides) + "\n")
            steps.append([uv, "pip", "install", "--quiet", "--python", python, "-r", str(Path(tmp) / "requirements.txt"),
                          "--overrides", str(Path(tmp) / "overrides.txt")])
            for step in steps:
                try:
                    done = subprocess.run(step, env=environ, capture_output=True, text=True, timeout=timeout)
                except subprocess.TimeoutExpired:
                    return python, {"kind": "uv", "error": f"`uv {step[1]}` timed out after {timeout:.0f} s",
                                    "seconds": round(time.perf_counter() - t0, 1), "reused": False}
                if done.returncode:
                    marker.unlink(missing_ok=True)
                    said = _tail(done.stderr or done.stdout)
                    return python, {"kind": "uv", "error": f"`uv {' '.join(step[1:3])}` failed: {said}",
                                    "seconds": round(time.perf_counter() - t0, 1), "reused": False}
        seconds = round(time.perf_counter() - t0, 1)
        size = disk_bytes(target)
        marker.write_text(json.dumps({"key": key, "stack": asdict(stack), "requirements": reqs, "seconds": seconds,
                                      "disk_bytes": size, "python": base,
                                      "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}, indent=2))
        log(f"[{stack.id}] installed in {seconds:.0f} s, {size / 2**30:.1f} GiB")
        return python, {"kind": "uv", "seconds": seconds, "disk_bytes": size, "reused": False, "key": key}


def clean(envs: str | Path | None, stacks: list[Stack] | None = None) -> tuple[list[Path], int]:
    """Remove the matrix environments (all, or those of `stacks`); returns what was removed and the bytes freed."""
    envs = Path(envs).expanduser() if envs else default_envs()
    if not envs.is_dir():
        return [], 0
    targets = [env_dir(s, envs) for s in stacks] if stacks else [p for p in envs.iterdir() if p.is_dir()]
    removed, freed = [], 0
    for target in targets:
        if target.is_dir():
            freed += disk_bytes(target)
            shutil.rmtree(target, ignore_errors=True)
            removed.append(target)
    if not stacks:
        shutil.rmtree(envs, ignore_errors=True)
    return removed, freed


# ---------------------------------------------------------------- cells


@dataclass
class Cell:
    """One investigation of one stack on one device, with the `-p` overrides that belong to it."""

    stack: str
    investigation: str
    device: str = "cpu"
    profile: str = "quick"
    params: list[str] = field(default_factory=list)  # KEY=VALUE

    @property
    def key(self) -> str:
        return f"{self.stack}/{self.investigation}/{self.device}"


def ledger_claims(kit_root: Path, investigation: str) -> list[str]:
    """Claim ids of an investigation's ledger (data/claims/<name>.json), in ledger order."""
    try:
        entries = json.loads((kit_root / "data" / "claims" / f"{investigation}.json").read_text())
    except (OSError, ValueError):
        return []
    entries = entries.get("claims", entries) if isinstance(entries, dict) else entries
    return [e["id"] for e in entries if isinstance(e, dict) and e.get("id") and not e.get("untestable")]


def _find_run_dir(out: Path) -> Path | None:
    runs = sorted(p.parent for p in out.glob("*/run.json"))
    return runs[-1] if runs else None


def _end_with_parent() -> None:
    """In a cell's `yolo26kit run`: SIGTERM when the process that started it dies (a Ray worker that died), so
    the runner stops its notebook tree instead of running on as an orphan (Linux; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


PLAN = "plan.json"  # what a matrix folder was asked to run: `--resume` runs the same
CELL_RECORD = "cell.json"  # a finished cell's record, in its folder
STOP_GRACE = 60.0  # seconds a cell's `yolo26kit run` gets to stop its notebooks after SIGTERM


def _stop(child: subprocess.Popen) -> None:
    """SIGTERM (the runner stops its notebook tree and keeps what finished), then SIGKILL after STOP_GRACE."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def finished_cells(matrix_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Records of the cells a matrix folder already finished, by (stack, investigation): `--resume` keeps them."""
    found = {}
    for path in sorted(Path(matrix_dir).glob(f"cells/*/*/{CELL_RECORD}")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("state") == "done":
            found[(record["stack"], record["investigation"])] = record
    return found


def run_cell(cell: Cell, row: dict[str, Any], out: Path, kit_root: str | Path = ROOT,
             envs: str | Path | None = None, timeout: float = CELL_TIMEOUT,
             log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """`yolo26kit run <investigation>` of the checkout in the stack's Python, into `out`; the cell's record.

    The record: state (done, failed), error, seconds, verdicts {claim: verdict}, run (the run folder relative
    to `out`). A run that left no results.json gives `error` to every claim of the investigation's ledger.
    """
    kit_root = Path(kit_root)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    envs = Path(envs).expanduser() if envs else default_envs()
    cache = envs / row["id"] / "compile-cache"
    cache.mkdir(parents=True, exist_ok=True)
    command = [row["python"], "-m", "yolo26kit", "run", cell.investigation, "--device", cell.device,
               "--profile", cell.profile, "--out", str(out.resolve()), "--cache", str(cache)]
    for pair in cell.params:
        command += ["-p", pair]
    record: dict[str, Any] = {**asdict(cell), "state": "failed", "error": "", "seconds": 0.0, "verdicts": {},
                              "run": None}
    log(f"[{cell.key}] start")
    t0 = time.perf_counter()
    with open(out / "cell.log", "w") as logfile:
        child = subprocess.Popen(command, cwd=kit_root, env=child_environ(row["python"], kit_root),
                                 stdout=logfile, stderr=subprocess.STDOUT, preexec_fn=_end_with_parent)
        try:
            code: int | None = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            code = None
        except BaseException:  # Ctrl-C / SIGTERM of the matrix: the cell's run stops its notebooks cleanly first
            _stop(child)
            raise
    record["seconds"] = round(time.perf_counter() - t0, 1)
    run_dir = _find_run_dir(out)
    results = run_dir / f"{cell.investigation}.results.json" if run_dir else None
    verdicts: dict[str, str] = {}
    if results and results.exists():
        try:
            data = json.loads(results.read_text())
            verdicts = {c["id"]: c.get("verdict", "error") for c in data.get("claims", []) if c.get("id")}
        except (OSError, ValueError) as exc:
            record["error"] = f"unreadable results.json: {exc}"
    if run_dir:
        record["run"] = run_dir.relative_to(out).as_posix()
    if code is None:
        record["error"] = f"the cell ran past {timeout:.0f} s"
    elif code not in (0, 1):  # 1: a notebook failed, its claims carry `error` with the cause
        record["error"] = f"`yolo26kit run` exited {code}: {_tail((out / 'cell.log').read_text(errors='replace'), 3)}"
    elif code == 1:
        record["error"] = "the notebook failed (its claims that were not judged carry `error`)"
    if not verdicts:
        verdicts = {cid: "error" for cid in ledger_claims(kit_root, cell.investigation)}
        record["error"] = record["error"] or "the run left no results.json"
    record["verdicts"] = verdicts
    record["state"] = "done" if code == 0 and not record["error"] else "failed"
    from . import findings

    findings.write_json(out / CELL_RECORD, record)  # what `matrix --resume` reads back
    log(f"[{cell.key}] {record['state']} in {record['seconds']:.0f} s" + (f": {record['error']}" if record["error"] else ""))
    return record


# ---------------------------------------------------------------- executors


def _plan_cells(rows: list[dict[str, Any]], investigations: list[str], device: str, profile: str,
                params: dict[str, list[str]]) -> list[Cell]:
    return [Cell(r["id"], inv, device, profile, params.get(inv, [])) for r in rows if r["state"] in STATES_RUN
            for inv in investigations]


class LocalExecutor:
    """Stacks and cells one after the other in this process's children."""

    name = "local"

    def __init__(self, log: Callable[[str], None] = print) -> None:
        self.log = log

    def prepare(self, stacks: list[Stack], envs: Path | None, kit_root: Path) -> list[dict[str, Any]]:
        return [prepare(s, envs, kit_root, self.log) for s in stacks]

    def run(self, cells: list[Cell], rows: dict[str, dict[str, Any]], matrix_dir: Path, kit_root: Path,
            envs: Path | None, timeout: float) -> list[dict[str, Any]]:
        return [run_cell(c, rows[c.stack], matrix_dir / "cells" / c.stack / c.investigation, kit_root, envs, timeout,
                         self.log) for c in cells]


def _pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def _unpack(data: bytes, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def _ray_prepare(stack: dict[str, Any], envs: str | None, kit_root: str | None) -> dict[str, Any]:
    """Ray task: a stack's environment on the node that runs it."""
    return prepare(Stack(**stack), envs, Path(kit_root) if kit_root else Path.cwd())


def _ray_cell(cell: dict[str, Any], row: dict[str, Any], envs: str | None, kit_root: str | None,
              timeout: float) -> dict[str, Any]:
    """Ray task: run the cell in its stack's environment, pack its folder.

    The driver's stack row is used when its Python exists here (a local Ray, or a node that shares the path);
    otherwise this node creates (or reuses) the stack's environment first.
    """
    kit = Path(kit_root) if kit_root else Path.cwd()  # a cluster gets the checkout as the task's working_dir
    if not (row.get("python") and Path(row["python"]).exists() and row["state"] in STATES_RUN):
        row = prepare(Stack(**row["_stack"]), envs, kit)
    cell_ = Cell(**cell)
    if row["state"] not in STATES_RUN:
        return {**asdict(cell_), "state": "failed", "error": f"stack on this node: {row['state']}: {row['reason']}",
                "seconds": 0.0, "verdicts": {c: "error" for c in ledger_claims(kit, cell_.investigation)},
                "run": None, "archive": None, "node": socket.gethostname()}
    with tempfile.TemporaryDirectory(prefix="yolo26kit-cell-") as tmp:
        record = run_cell(cell_, row, Path(tmp), kit, envs, timeout)
        record["archive"] = _pack(Path(tmp))
    record["node"] = socket.gethostname()
    return record


class RayExecutor:
    """A Ray task per stack install and per cell: a local Ray started here, or the cluster at RAY_ADDRESS.

    CPU cells ask for `cell_cpus` CPUs (default: every CPU of a local Ray, so cells run one at a time as the
    local executor runs them; 1 on a cluster); CUDA cells for one GPU. A worker that dies is replaced and its
    task re-run once (max_retries=1); a second death makes the cell `failed`.
    """

    name = "ray"
    max_retries = 1
    # Ray's raylet gives its agents ~30 s to start; on a 2-core machine under load they sometimes take longer
    # and the start fails ("The current node timed out during startup"): a fresh start usually succeeds.
    start_attempts = 3

    def __init__(self, log: Callable[[str], None] = print, address: str | None = None,
                 cell_cpus: float | None = None) -> None:
        self.log = log
        self.address = address if address is not None else os.environ.get("RAY_ADDRESS", "")
        self.cell_cpus = cell_cpus
        self._started = False

    def _init(self, kit_root: Path) -> Any:
        try:
            import ray
        except ImportError:
            raise MatrixError("--executor ray needs Ray: pip install 'yolo26kit[matrix]'") from None
        if ray.is_initialized():
            return ray
        if self.address:  # a real cluster: ship the checkout, with its revision stamped (no .git travels)
            from . import env

            if env.git_revision() is not None and kit_root.resolve() == env.ROOT:
                env.write_stamp()
            ray.init(address=self.address, runtime_env={"working_dir": str(kit_root), "excludes": RAY_EXCLUDES},
                     log_to_driver=False)
            self._remote_kit = None
        else:  # a local Ray: the workers import this package from where the driver does
            here = str(Path(__file__).resolve().parents[1])
            path = os.pathsep.join([here, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
            for attempt in range(self.start_attempts):
                try:
                    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                             runtime_env={"env_vars": {"PYTHONPATH": path, **CHILD_ENV}})
                    break
                except Exception as exc:  # noqa: BLE001 - Ray's own startup timeout, seen on a loaded 2-core machine
                    ray.shutdown()
                    if attempt + 1 == self.start_attempts:
                        raise MatrixError(f"a local Ray did not start ({self.start_attempts} tries): {exc}") from None
                    self.log(f"[ray] a local Ray did not start ({str(exc).splitlines()[0]}); trying again")
            self._remote_kit = str(kit_root)
        self._started = True
        return ray

    def close(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def prepare(self, stacks: list[Stack], envs: Path | None, kit_root: Path) -> list[dict[str, Any]]:
        ray = self._init(kit_root)
        task = ray.remote(num_cpus=1, max_retries=self.max_retries)(_ray_prepare)
        refs = [task.remote(asdict(s), str(envs) if envs else None, self._remote_kit) for s in stacks]
        rows = []
        for stack, ref in zip(stacks, refs):
            try:
                rows.append(ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - the stack is a row with the reason
                rows.append({**_row(stack), "state": "install_failed", "reason": f"ray: {type(exc).__name__}: {exc}"})
            self.log(f"[{stack.id}] {rows[-1]['state']}" + (f": {rows[-1]['reason']}" if rows[-1]["reason"] else ""))
        return rows

    def run(self, cells: list[Cell], rows: dict[str, dict[str, Any]], matrix_dir: Path, kit_root: Path,
            envs: Path | None, timeout: float) -> list[dict[str, Any]]:
        ray = self._init(kit_root)
        task = ray.remote(max_retries=self.max_retries)(_ray_cell)
        local_cpus = int(ray.cluster_resources().get("CPU", 1)) if not self.address else 1
        refs = []
        for cell in cells:
            gpu = cell.device == "cuda"
            cpus = self.cell_cpus if self.cell_cpus is not None else (1 if gpu else local_cpus)
            row = rows[cell.stack] if not self.address else {**rows[cell.stack], "python": ""}
            refs.append(task.options(num_cpus=cpus, num_gpus=1 if gpu else 0).remote(
                asdict(cell), row, str(envs) if envs else None, self._remote_kit, timeout))
        records = []
        for cell, ref in zip(cells, refs):
            try:
                record = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - worker died twice, or the task's own code broke
                died = "WorkerCrashed" in type(exc).__name__ or "died" in str(exc).lower()
                why = (f"its Ray worker died {self.max_retries + 1} times" if died
                       else f"ray: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                record = {**asdict(cell), "state": "failed", "error": why, "seconds": 0.0, "run": None,
                          "verdicts": {c: "error" for c in ledger_claims(kit_root, cell.investigation)}}
            archive = record.pop("archive", None)
            if archive:
                _unpack(archive, matrix_dir / "cells" / cell.stack / cell.investigation)
            self.log(f"[{cell.key}] {record['state']} in {record['seconds']:.0f} s"
                     + (f": {record['error']}" if record["error"] else ""))
            records.append(record)
        return records


# ---------------------------------------------------------------- the table


def changes(claims: dict[str, dict[str, str]], series: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """For each claim and series: the first stack whose verdict differs from the stack before it (None: no change).

    Stacks without a verdict for the claim (not installed, not run) are skipped, not counted as a change.
    """
    found: dict[str, dict[str, Any]] = {}
    for cid, by_stack in claims.items():
        found[cid] = {}
        for name, members in series.items():
            judged = [(s, by_stack[s]) for s in members if s in by_stack]
            first = next(({"stack": s, "from": judged[i - 1][1], "to": v, "after": judged[i - 1][0]}
                          for i, (s, v) in enumerate(judged) if i and v != judged[i - 1][1]), None)
            if len(judged) > 1:
                found[cid][name] = first
    return found


def assemble(rows: list[dict[str, Any]], records: list[dict[str, Any]], series: dict[str, list[str]],
             investigations: list[str], kit_root: Path, all_claims: bool = False) -> dict[str, Any]:
    """matrix.json's content (less `run`): stacks, claims, changes, cells, not_judged."""
    order = [cid for inv in investigations for cid in ledger_claims(kit_root, inv)]
    every: dict[str, dict[str, str]] = {}
    for record in records:
        for cid, verdict in record["verdicts"].items():
            every.setdefault(cid, {})[record["stack"]] = verdict
    ids = [r["id"] for r in rows]
    ordered = [c for c in order if c in every] + sorted(c for c in every if c not in order)
    every = {c: {s: every[c][s] for s in ids if s in every[c]} for c in ordered}
    judged = {c: v for c, v in every.items() if all_claims or any(x != "needs_cuda" for x in v.values())}
    in_series = {name: [s for s in members if s in ids] for name, members in series.items()}
    in_series = {k: v for k, v in in_series.items() if len(v) > 1}
    if not in_series:
        in_series = {"stacks": ids}
    stacks = [{k: v for k, v in r.items() if not k.startswith("_") and k != "python"} for r in rows]
    return {
        "schema": SCHEMA,
        "stacks": stacks,
        "claims": judged,
        "changes": changes(judged, in_series),
        "series": in_series,
        "not_judged": {c: "needs_cuda on every stack that ran it" for c in every if c not in judged},
        "cells": [{**{k: v for k, v in r.items() if k != "verdicts"}, "claims": list(r["verdicts"])} for r in records],
    }


VOLATILE_STACK = ("install",)
VOLATILE_CELL = ("seconds", "run", "node")


def comparable(matrix: dict[str, Any]) -> dict[str, Any]:
    """matrix.json less what depends on the executor or the clock: what two executors must agree on."""
    out = {k: v for k, v in matrix.items() if k not in ("run", "matrix_id")}
    out["stacks"] = [{k: v for k, v in s.items() if k not in VOLATILE_STACK} for s in matrix["stacks"]]
    out["cells"] = [{k: v for k, v in c.items() if k not in VOLATILE_CELL} for c in matrix["cells"]]
    return out


# ---------------------------------------------------------------- the page


def _page_of(record: dict[str, Any]) -> str:
    if not record.get("run"):
        return f"cells/{record['stack']}/{record['investigation']}/cell.log"
    return f"cells/{record['stack']}/{record['investigation']}/{record['run']}/index.html"


def render(matrix_dir: Path, matrix: dict[str, Any]) -> Path:
    """matrix.html: stacks (pins, state, reason, disk), the claim × stack grid of verdict chips linked to each
    cell's run page, and for each claim the first stack of each series where its verdict changes."""
    import jinja2

    templates = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                                   autoescape=jinja2.select_autoescape(["html", "j2"]))
    links, owner = {}, {}
    for cell in matrix["cells"]:
        for cid in cell.get("claims", []):
            links[(cell["stack"], cid)] = _page_of(cell) + (f"#claim-{cid}" if cell.get("run") else "")
            owner[cid] = cell["investigation"]
    page = templates.get_template("matrix.html.j2").render(
        m=matrix, links=links, owner=owner, gib=lambda b: f"{b / 2**30:.1f} GiB" if b else "—")
    target = matrix_dir / "matrix.html"
    target.write_text(page, encoding="utf-8")
    return target


def listing(root: str | Path) -> list[dict[str, Any]]:
    """The matrices under a reports folder, newest first, for an index page to link: id, href (relative to
    root), stacks, claims judged, and the claims whose verdict changes across stacks."""
    root = Path(root)
    found = []
    for path in sorted(root.glob("matrix-*/matrix.json"), reverse=True):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        found.append({"id": path.parent.name.removeprefix("matrix-"),
                      "href": (path.parent / "matrix.html").relative_to(root).as_posix(),
                      "stacks": [s["id"] for s in data.get("stacks", [])], "claims": len(data.get("claims", {})),
                      "changed": [c for c, by in data.get("changes", {}).items() if any(by.values())]})
    return found


# ---------------------------------------------------------------- the whole call


def new_matrix_dir(out: Path, device: str, now: datetime | None = None) -> tuple[str, Path]:
    """`out/matrix-<UTC time>-<host>-<device>` (a numeric suffix when taken)."""
    now = now or datetime.now(timezone.utc)
    host = re.sub(r"[^A-Za-z0-9]+", "-", socket.gethostname()).strip("-")[:16] or "host"
    base = f"{now:%Y%m%dT%H%M%SZ}-{host}-{device}"
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        matrix_id = base if n == 1 else f"{base}-{n}"
        try:
            (out / f"matrix-{matrix_id}").mkdir()
            return matrix_id, out / f"matrix-{matrix_id}"
        except FileExistsError:
            continue
    raise MatrixError(f"could not create a matrix folder under {out}")


def split_params(pairs: list[str], investigations: list[str], kit_root: Path) -> dict[str, list[str]]:
    """Each `-p KEY=VALUE` goes to the investigations whose notebook has KEY; a key none has is bad input."""
    from . import catalog

    params = {inv: catalog.notebook_params(kit_root / "notebooks" / f"{inv}.ipynb") for inv in investigations}
    routed: dict[str, list[str]] = {inv: [] for inv in investigations}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise MatrixError(f"-p expects KEY=VALUE, got {pair!r}")
        owners = [inv for inv in investigations if key in params[inv] and key not in catalog.RUNNER_PARAMETERS]
        if not owners:
            raise MatrixError(f"parameter {key!r} belongs to none of {investigations}")
        for inv in owners:
            try:
                catalog.coerce(params[inv][key], catalog.parse_value(value), where=inv)
            except Exception as exc:  # noqa: BLE001 - BadParameter: say it as matrix input
                raise MatrixError(str(exc)) from None
            routed[inv].append(f"{key}={value}")
    return routed


def investigations_of(kit_root: Path, names: list[str]) -> list[str]:
    """The named investigations, else every one with a notebook and a ledger (sorted)."""
    known = sorted(p.stem for p in (kit_root / "notebooks").glob("*.ipynb")
                   if (kit_root / "data" / "claims" / f"{p.stem}.json").exists())
    if not names:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MatrixError(f"unknown investigation(s) {unknown} (known: {', '.join(known)})")
    return names


def run_matrix(stacks: list[Stack], series: dict[str, list[str]], investigations: list[str], *, out: Path,
               device: str = "cpu", profile: str = "quick", params: list[str] | None = None,
               envs: str | Path | None = None, executor: Any = None, kit_root: str | Path = ROOT,
               timeout: float = CELL_TIMEOUT, all_claims: bool = False, resume: Path | None = None,
               log: Callable[[str], None] = print) -> tuple[Path, dict[str, Any]]:
    """Prepare every stack, run every cell, write matrix.json and matrix.html; returns (folder, matrix).

    `resume`: an earlier matrix folder; its finished cells are kept and only the others run. Interrupted
    (Ctrl-C, SIGTERM), the matrix is written from the cells that finished, with state "interrupted".
    """
    t0 = time.perf_counter()
    kit_root = Path(kit_root).resolve()
    envs_path = Path(envs).expanduser().resolve() if envs else None
    if device not in ("cpu", "cuda"):
        raise MatrixError(f"--device must be cpu or cuda, got {device!r}")
    routed = split_params(params or [], investigations, kit_root)
    executor = executor or LocalExecutor(log)
    if resume:
        matrix_dir = Path(resume)
        matrix_id = matrix_dir.name.removeprefix("matrix-")
    else:
        matrix_id, matrix_dir = new_matrix_dir(Path(out), device)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    log(f"matrix {matrix_id}: {len(stacks)} stacks × {len(investigations)} investigations on {device} "
        f"({executor.name} executor)")
    interrupted = False
    earlier = _read_json(matrix_dir / "matrix.json").get("run", {}) if resume else {}
    from . import findings

    findings.write_json(matrix_dir / PLAN, {"stacks": [s.id for s in stacks], "investigations": investigations,
                                           "device": device, "profile": profile, "params": params or [],
                                           "all_claims": all_claims})
    try:
        rows = executor.prepare(stacks, envs_path, kit_root)
        for stack, row in zip(stacks, rows):
            row["_stack"] = asdict(stack)
        by_id = {r["id"]: r for r in rows}
        cells = _plan_cells(rows, investigations, device, profile, routed)
        kept = finished_cells(matrix_dir)
        todo = [c for c in cells if (c.stack, c.investigation) not in kept]
        if kept:
            log(f"resuming: {len(cells) - len(todo)} cell(s) already done, {len(todo)} to run")
        try:
            fresh = executor.run(todo, by_id, matrix_dir, kit_root, envs_path, timeout)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: keep every finished cell, say how to go on
            interrupted = True
            fresh = []
        kept.update(finished_cells(matrix_dir))  # cells that finished before an interruption
        kept.update({(r["stack"], r["investigation"]): r for r in fresh})
        records = [kept[(c.stack, c.investigation)] for c in cells if (c.stack, c.investigation) in kept]
    finally:
        close = getattr(executor, "close", None)
        if close:
            close()
    matrix = assemble(rows, records, series, investigations, kit_root, all_claims)
    matrix["parameters"] = {"investigations": investigations, "device": device, "profile": profile,
                            "params": params or [], "all_claims": all_claims}
    matrix["state"] = "interrupted" if interrupted else "complete"
    matrix["run"] = {"matrix_id": matrix_id, "executor": executor.name, "started": started,
                     "wall_seconds": round(time.perf_counter() - t0 + earlier.get("wall_seconds", 0.0), 1),
                     "calls": earlier.get("calls", 0) + 1,
                     "cell_seconds": {c["stack"]: round(sum(x["seconds"] for x in records if x["stack"] == c["stack"]), 1)
                                      for c in records},
                     "envs": str(envs_path or default_envs())}
    findings.write_json(matrix_dir / "matrix.json", matrix)
    render(matrix_dir, matrix)
    return matrix_dir, matrix


# ---------------------------------------------------------------- command line


def add_subcommand(sub: Any) -> None:
    """`yolo26kit matrix`: registered by cli.parser()."""
    p = sub.add_parser("matrix", help="the same claims across several stacks (pins): one claim × stack table")
    p.add_argument("names", nargs="*", metavar="NAME", help="investigations (default: every one)")
    p.add_argument("--stacks", default="", help="comma-separated stack ids (default: the file's default stacks)")
    p.add_argument("--stacks-file", default="", metavar="FILE", help="stacks file (default data/stacks.json)")
    p.add_argument("--device", default="cpu", help="cpu (the default) or cuda")
    p.add_argument("--profile", default="quick", help="profile of every cell (default quick)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a notebook parameter, given to every investigation that has it")
    p.add_argument("--out", default="", help="parent folder of matrix-<id>/ (default reports/runs)")
    p.add_argument("--envs", default="", metavar="DIR",
                   help="where stack environments live (default <compile cache>/matrix-envs)")
    p.add_argument("--executor", default="local", choices=("local", "ray"),
                   help="local (default) or ray (a local Ray, or the cluster at RAY_ADDRESS)")
    p.add_argument("--cell-cpus", type=float, default=None, help="Ray: CPUs per CPU cell (default: all of a local Ray)")
    p.add_argument("--timeout", type=float, default=CELL_TIMEOUT, help="seconds per cell")
    p.add_argument("--all-claims", action="store_true", help="keep claims that every stack marked needs_cuda")
    p.add_argument("--resume", default="", metavar="DIR",
                   help="go on with an interrupted matrix folder: its finished cells are kept, the rest run")
    p.add_argument("--prepare", action="store_true", help="only create/check the stacks' environments")
    p.add_argument("--clean", action="store_true", help="remove the stack environments (those of --stacks, or all)")
    p.set_defaults(fn=main)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(args: argparse.Namespace) -> int:
    """The `matrix` subcommand: 0 every cell ran, 1 a stack or cell failed, 2 bad input."""
    try:
        stacks, series = load_stacks(args.stacks_file or None)
        wanted = [s.strip() for s in args.stacks.split(",") if s.strip()]
        if args.clean:
            removed, freed = clean(args.envs or None, choose(stacks, wanted) if wanted else None)
            print(f"removed {len(removed)} stack environment(s), {freed / 2**30:.1f} GiB freed")
            return 0
        chosen = choose(stacks, wanted)
        if args.prepare:
            rows = LocalExecutor().prepare(chosen, Path(args.envs) if args.envs else None, ROOT)
            for r in rows:
                size = r["install"].get("disk_bytes")
                print(f"{r['id']}: {r['state']}{' — ' + r['reason'] if r['reason'] else ''}"
                      f" ({r['install'].get('seconds')} s, {size / 2**30 if size else 0:.1f} GiB)")
            return 0 if all(r["state"] in STATES_RUN for r in rows) else 1
        investigations = investigations_of(ROOT, args.names)
        options = {"device": args.device, "profile": args.profile, "params": args.param,
                   "all_claims": args.all_claims}
        resume = None
        if args.resume:
            resume = Path(args.resume)
            plan = _read_json(resume / PLAN)
            if not plan:
                raise MatrixError(f"{resume} is not a matrix folder (no readable {PLAN})")
            chosen = choose(stacks, plan["stacks"])
            investigations = investigations_of(ROOT, plan["investigations"])
            options = {k: plan[k] for k in options}
        executor = (RayExecutor(cell_cpus=args.cell_cpus) if args.executor == "ray" else LocalExecutor())
        from .runner import DEFAULT_OUT

        signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops like Ctrl-C: finished cells are kept
        matrix_dir, matrix = run_matrix(chosen, series, investigations, out=Path(args.out) if args.out else DEFAULT_OUT,
                                        envs=args.envs or None, executor=executor, timeout=args.timeout,
                                        resume=resume, **options)
    except MatrixError as exc:
        print(f"yolo26kit: error: {exc}", file=sys.stderr)
        return 2
    print(summary(matrix))
    print(f"matrix: {matrix_dir / 'matrix.html'}")
    if matrix["state"] == "interrupted":
        print(f"interrupted: go on with `yolo26kit matrix --resume {matrix_dir}`")
        return 130
    bad = [s for s in matrix["stacks"] if s["state"] not in STATES_RUN] + \
        [c for c in matrix["cells"] if c["state"] != "done"]
    return 1 if bad else 0


def summary(matrix: dict[str, Any]) -> str:
    """A few lines: each stack's state, the claims judged and those whose verdict changes."""
    lines = []
    for s in matrix["stacks"]:
        lines.append(f"  {s['id']}: {s['state']}" + (f" — {s['reason']}" if s["reason"] else ""))
    changed = [c for c, by in matrix["changes"].items() if any(by.values())]
    lines.append(f"{len(matrix['claims'])} claims judged; verdict changes across stacks: "
                 + (", ".join(changed) if changed else "none"))
    return "\n".join(lines)
