"""Shrink a compile failure with PyTorch's own minifier (after AOT): the launcher it dumps, then its minified repro.

Decisions:

- The repro runs with `TORCHDYNAMO_REPRO_AFTER=aot`, `TORCHDYNAMO_REPRO_LEVEL=2` and Inductor's caches off (a
  cache hit skips the debug wrapper that dumps the graph); PyTorch writes `minifier/minifier_launcher.py`.
- The launcher is run as PyTorch wrote it, except `tracing_mode='symbolic'` where it says `'real'`: a graph that
  reads scalars out of tensors (`aten._local_scalar_dense`, capture_scalar_outputs) cannot be retraced for real.
- The launcher is told the failure's own message (`check_str`, from the header's `# bites-with:`): without it the
  minifier accepts any exception and shrinks to a graph that fails some other way.
- The outcome is PyTorch's `repro.py` (the minified graph), kept as `minified.py`, with the graph's op count before
  (launcher) and after.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .clean_env import _scrub
from .script import error_line

MINIFY_TIMEOUT = 1500.0


def op_count(text: str) -> int:
    """Calls of operators (`torch.ops.`) in a dumped graph module's source."""
    return len(re.findall(r"torch\.ops\.\w+\.\w+", text))


def verified(text: str, python: str, check: str, timeout: float = 600.0) -> bool:
    """Whether a minified repro, run on its own, still fails with the finding's message."""
    with tempfile.TemporaryDirectory(prefix="yolo26kit-minified-") as tmp:
        (Path(tmp) / "minified.py").write_text(text)
        try:
            done = subprocess.run([python, "minified.py"], cwd=tmp, capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
        except subprocess.TimeoutExpired:
            return False
    return done.returncode != 0 and check in (done.stdout + done.stderr)


def minify_after_aot(repro: Path, python: str, check: str = "",
                     timeout: float = MINIFY_TIMEOUT) -> dict[str, Any]:
    """Dump the failing graph with the after-AOT minifier, minify it; {"launcher_ops", "minified_ops", "text", ...}."""
    repro = Path(repro).resolve()
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environ.update({"TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "2",
                    "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "PYTHONNOUSERSITE": "1"})
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="yolo26kit-minify-") as tmp:
        subprocess.run([python, str(repro)], cwd=tmp, env=environ, capture_output=True, text=True, timeout=timeout)
        launchers = sorted(Path(tmp).rglob("minifier_launcher.py"))
        if not launchers:
            return {"error": "the after-AOT minifier dumped no launcher (the failure is not in a compiled graph)"}
        launcher = launchers[-1]
        text = launcher.read_text().replace("tracing_mode='real'", "tracing_mode='symbolic'")
        if check:
            text = text.replace("check_str=None", f"check_str={check!r}")
        launcher.write_text(text)
        environ.pop("TORCHDYNAMO_REPRO_AFTER")
        try:
            done = subprocess.run([python, launcher.name], cwd=launcher.parent, env=environ, capture_output=True,
                                  text=True, timeout=timeout)
            said, finished = (done.stdout or "") + (done.stderr or ""), True
        except subprocess.TimeoutExpired as exc:  # its last checkpoint (repro.py) is the smallest found so far
            said, finished = str(exc.stdout or ""), False
        minified = launcher.parent / "repro.py"
        if not minified.exists():
            return {"error": f"the minifier wrote no repro.py: {error_line(said)}",
                    "launcher_ops": op_count(text)}
        small = _scrub(minified.read_text().replace("tracing_mode='real'", "tracing_mode='symbolic'"), "", "", tmp)
    return {"launcher_ops": op_count(text), "minified_ops": op_count(small), "text": small, "finished": finished,
            "verified": bool(check) and verified(small, python, check),
            "seconds": round(time.perf_counter() - t0, 1),
            "how": "TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=2 TORCHINDUCTOR_FORCE_DISABLE_CACHES=1, "
                   "then minifier_launcher.py (tracing_mode='symbolic')"}
