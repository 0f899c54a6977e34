"""Stacks of the matrix: the stacks file, one isolated environment per stack (create, reuse, check, clean).

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
- uv's cache for these installs is the kit's own, `<envs>/.uv-cache` (unless UV_CACHE_DIR names another), on the
  environments' disk so its wheels hard-link into them: `yolo26kit stacks clean` can then free what the installs
  downloaded (19 GB after a 52-release torch bisect), which a cache shared with the user's other work cannot.
- A stack that cannot be installed, or whose torch / papermill / ultralytics / kit does not import, is a row with
  the reason (the state `install_failed` / `import_failed`) and no cells; an ExecuTorch that does not import is
  recorded (`partial`) and the cells still run, so the claims about it show what that stack does.
- A stack may name an `interpreter` ("current" = the Python running the matrix) instead of pins: it is used as
  it is, nothing is installed (a GPU runner's own PyTorch, or a test's stack).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import MatrixError
from ..paths import MATRIX_ENVS, ROOT, default_cache_dir

STACKS_FILE = ROOT / "data" / "stacks.json"
MARKER = "yolo26kit-stack.json"
UV_CACHE = ".uv-cache"  # in the envs folder: dot-named, so never taken for an environment
# Must import for a stack to run at all; executorch is checked too, and a failure there is recorded, not fatal.
CORE_IMPORTS = ("torch", "papermill", "ipykernel", "ultralytics", "yolo26kit.env")
EXTRA_IMPORTS = ("executorch.exir", "executorch.backends.xnnpack.partition.xnnpack_partitioner")
PINNED = ("torch", "torchvision", "torchao", "executorch", "ultralytics")
INSTALL_TIMEOUT = 1800.0
CHECK_TIMEOUT = 300.0
STATES_RUN = ("ok", "partial")  # stacks whose cells run
# Children run offline: no hub downloads, no ultralytics auto-install.
CHILD_ENV = {"YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "0", "PYTHONNOUSERSITE": "1"}


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
    return default_cache_dir() / MATRIX_ENVS


def uv_cache_dir(envs: Path) -> Path:
    """The uv cache the kit's installs into `envs` fill (see the module's decisions)."""
    return Path(envs) / UV_CACHE


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


def freed_bytes(paths: list[Path]) -> int:
    """Bytes that removing every one of `paths` frees: files (counted once) whose every hard link is inside them."""
    links: dict[tuple[int, int], list[int]] = {}  # (dev, inode) → [links seen here, links in all, bytes]
    for path in paths:
        for root, _dirs, files in os.walk(path):
            for name in files:
                try:
                    st = os.lstat(os.path.join(root, name))
                except OSError:
                    continue
                seen = links.setdefault((st.st_dev, st.st_ino), [0, st.st_nlink, st.st_blocks * 512])
                seen[0] += 1
    return sum(size for here, total, size in links.values() if here >= total)


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


def output_tail(text: str, lines: int = 6, limit: int = 1200) -> str:
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
        return {"imports": {}, "error": f"exit {done.returncode}: {output_tail(done.stderr or done.stdout)}"}
    return json.loads(line.split(" ", 1)[1])


def stack_row(stack: Stack) -> dict[str, Any]:
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
    row = stack_row(stack)
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
        environ = {"UV_CACHE_DIR": str(uv_cache_dir(envs)), **os.environ, "UV_PYTHON_DOWNLOADS": "never"}
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
                    said = output_tail(done.stderr or done.stdout)
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
    targets = [env_dir(s, envs) for s in stacks] if stacks else [
        p for p in envs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    removed = [target for target in targets if target.is_dir()]
    freed = freed_bytes(removed + ([envs] if not stacks else []))
    for target in removed:
        shutil.rmtree(target, ignore_errors=True)
    if not stacks:
        shutil.rmtree(envs, ignore_errors=True)  # uv's cache of the kit's installs with them
    return removed, freed
