"""A repro run in a clean environment: a fresh uv environment holding only the packages its header names.

Decisions:

- The environment is made with the matrix's tools (matrix/stacks.py: uv, its lock, its disk count) but holds only
  the repro's `# requires:` (resolved by uv) and `# requires-no-deps:` (installed without their dependencies):
  nothing of the kit, so a repro that needed the kit could not pass. Environments live beside the matrix's, as
  `repro-<key>`, reused when the same requirements ask again; `fresh` in the record says whether this run built it.
- The script runs from a temporary folder with no PYTHONPATH, no user site, and Inductor's cache in that folder,
  so no warm cache of another run decides the outcome. Run in an interpreter as it is (`--check` without
  `--clean`), it keeps the PYTHONPATH entries that are not the kit's checkout: an offline runner installs its
  packages with `pip --target` on PYTHONPATH.
- Paths of this machine never reach the record: the output is kept with the environment's and folder's paths
  replaced by `<env>` and `.`.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import script
from .script import Header

RUN_TIMEOUT = 1800.0
VERSIONS = r"""
import json, sys
from importlib import metadata
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps(found))
"""


def env_key(header: Header, python: str) -> str:
    """The environment's key: its requirements and the interpreter it is made from."""
    text = json.dumps({"requires": sorted(header.requires), "no_deps": sorted(header.requires_no_deps),
                       "python": python}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare(header: Header, envs: str | Path | None = None, timeout: float = 1800.0) -> dict[str, Any]:
    """Create (or reuse) the repro's environment: {"python", "fresh", "seconds", "disk_bytes"} or {"error"}."""
    import sys

    from ..matrix.stacks import _locked, default_envs, disk_bytes, output_tail, uv_binary

    envs = Path(envs).expanduser() if envs else default_envs()
    base = sys.executable
    key = env_key(header, base)
    target = envs / f"repro-{key}"
    python = str(target / "bin" / "python")
    marker = target / "yolo26kit-repro-env.json"
    with _locked(envs / f".repro-{key}.lock"):
        if marker.exists() and Path(python).exists():
            recorded = json.loads(marker.read_text())
            return {"python": python, "fresh": False, "seconds": recorded.get("seconds"),
                    "disk_bytes": recorded.get("disk_bytes"), "key": key}
        uv = uv_binary()
        environ = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
        environ.pop("VIRTUAL_ENV", None)
        steps = [[uv, "venv", "--quiet", "--clear", "--python", base, str(target)],
                 [uv, "pip", "install", "--quiet", "--python", python, *header.requires]]
        if header.requires_no_deps:
            steps.append([uv, "pip", "install", "--quiet", "--no-deps", "--python", python, *header.requires_no_deps])
        t0 = time.perf_counter()
        for step in steps:
            try:
                done = subprocess.run(step, env=environ, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return {"error": f"`uv {step[1]}` timed out after {timeout:.0f} s", "key": key}
            if done.returncode:
                return {"error": f"`uv {' '.join(step[1:3])}` failed: {output_tail(done.stderr or done.stdout)}",
                        "key": key}
        seconds = round(time.perf_counter() - t0, 1)
        size = disk_bytes(target)
        marker.write_text(json.dumps({"key": key, "requires": header.requires, "no_deps": header.requires_no_deps,
                                      "seconds": seconds, "disk_bytes": size}, indent=1))
        return {"python": python, "fresh": True, "seconds": seconds, "disk_bytes": size, "key": key}


def installed(python: str, names: list[str]) -> dict[str, str]:
    """The versions of the named packages in an interpreter's environment."""
    try:
        done = subprocess.run([python, "-c", VERSIONS, *names], capture_output=True, text=True, timeout=120)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {}


def _scrub(text: str, *paths: str) -> str:
    """Output without this machine's paths: each given path (and the home folder) replaced by a placeholder."""
    for path, mark in zip(paths, ("<env>", ".", "<tmp>")):
        if path:
            text = text.replace(path, mark)
    return text.replace(str(Path.home()), "~")


def isolated_environ(python: str, tmp: str, extra_env: dict[str, str] | None = None,
                     keep_path: bool = False) -> dict[str, str]:
    """This process's environment for a repro run from `tmp` with `python`: no PYTHONPATH (or, with `keep_path`,
    only its entries that are not the kit's checkout), no virtualenv or user site, Inductor's cache in `tmp`."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    if keep_path:
        environ["PYTHONPATH"] = packages_path(os.environ.get("PYTHONPATH", ""))
    environ.update({"PYTHONNOUSERSITE": "1", "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor"),
                    "PATH": os.pathsep.join([str(Path(python).parent), environ.get("PATH", "")]),
                    **(extra_env or {})})
    return environ


def run_script(repro: Path, python: str, timeout: float = RUN_TIMEOUT,
               extra_env: dict[str, str] | None = None, keep_path: bool = False) -> dict[str, Any]:
    """Run repro.py with an interpreter, isolated: exit code, output tail, seconds; `keep_path` keeps the
    PYTHONPATH entries that are not the kit's checkout."""
    repro = Path(repro).resolve()
    with tempfile.TemporaryDirectory(prefix="yolo26kit-repro-") as tmp:
        environ = isolated_environ(python, tmp, extra_env, keep_path)
        t0 = time.perf_counter()
        try:
            done = subprocess.run([python, str(repro)], cwd=tmp, env=environ, capture_output=True, text=True,
                                  timeout=timeout)
            code, output = done.returncode, (done.stdout or "") + (done.stderr or "")
        except subprocess.TimeoutExpired as exc:
            code, output = 124, f"TimeoutExpired: the repro ran past {timeout:.0f} s\n{exc.stdout or ''}"
        seconds = round(time.perf_counter() - t0, 1)
        env_root = str(Path(python).parent.parent)
        output = _scrub(output, env_root, str(repro.parent), tmp)
    return {"exit_code": code, "seconds": seconds, "output_tail": "\n".join(output.splitlines()[-40:]),
            "traceback": last_traceback(output)}


def last_traceback(output: str, limit: int = 400) -> str:
    """Every Python traceback of a run's output, from the first one to the end (up to `limit` lines), for ISSUE.md:
    a repro that prints the failure it meets and then raises its own assertion keeps both."""
    lines = output.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")), None)
    return "" if first is None else "\n".join(lines[first:][-limit:])


def collect_env(python: str) -> str:
    """`python -m torch.utils.collect_env` in the environment (ExecuTorch and toto report through pip's list)."""
    try:
        done = subprocess.run([python, "-m", "torch.utils.collect_env"], capture_output=True, text=True, timeout=300)
        text = done.stdout or done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        text = f"collect_env failed: {exc}"
    return _scrub(text, str(Path(python).parent.parent))


def packages_path(pythonpath: str) -> str:
    """PYTHONPATH without the kit's checkout (nor any folder that holds a `yolo26kit` package)."""
    return os.pathsep.join(p for p in pythonpath.split(os.pathsep)
                           if p and not (Path(p) / "yolo26kit" / "__init__.py").exists())


def reproduce(repro: Path, header: Header | None = None, envs: str | Path | None = None, python: str = "",
              timeout: float = RUN_TIMEOUT, keep_env: bool = False) -> dict[str, Any]:
    """Run a repro in a clean environment (or in `python` as it is): the record reproduced.json keeps; with
    `keep_env`, for a record that is kept, also collect_env of the environment it ran in."""
    repro = Path(repro)
    header = header or script.parse(repro.read_text())
    if python:
        env = {"kind": "interpreter", "fresh": False, "python": python}
    else:
        made = prepare(header, envs)
        if "error" in made:
            return {"finding": header.finding, "outcome": script.CANNOT_RUN, "exit_code": None,
                    "error_line": made["error"], "seconds": 0.0, "environment": {"kind": "uv", **made},
                    "requires": header.requires, "requires_no_deps": header.requires_no_deps}
        python = made["python"]
        env = {"kind": "uv", "fresh": made["fresh"], "install_seconds": made["seconds"],
               "disk_gib": round((made["disk_bytes"] or 0) / 2**30, 2), "key": made["key"]}
    ran = run_script(repro, python, timeout, keep_path=env["kind"] == "interpreter")
    names = sorted({r.split("==")[0].lower() for r in header.requires + header.requires_no_deps
                    if not r.startswith("-")} | {"torch"})
    answer = script.outcome(ran["exit_code"], ran["output_tail"], header)
    return {"finding": header.finding, "outcome": answer, "exit_code": ran["exit_code"],
            "error_line": script.error_line(ran["output_tail"]) if ran["exit_code"] else "",
            "seconds": ran["seconds"], "versions": installed(python, names),
            "requires": header.requires, "requires_no_deps": header.requires_no_deps,
            "environment": {**{k: v for k, v in env.items() if k != "python"},
                            "python": platform.python_version(), "platform": platform.platform(),
                            "machine": platform.machine()},
            "output_tail": ran["output_tail"], "traceback": ran.get("traceback", ""), "command": "python repro.py",
            # the Versions of an ISSUE.md come from the run its Actual shows (one source), wherever it ran
            **({"collect_env": collect_env(python)} if keep_env else {}),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
