"""Shrink a compile failure with PyTorch's own minifier (after AOT): the launcher it dumps, then its minified repro.

Decisions:

- The repro runs with `TORCHDYNAMO_REPRO_AFTER=aot`, `TORCHDYNAMO_REPRO_LEVEL=2` and Inductor's caches off (a
  cache hit skips the debug wrapper that dumps the graph); PyTorch writes `minifier/minifier_launcher.py`: the graph
  Inductor was handed (AOT's aten graph), its inputs and the compile's config.
- The launcher's graph, its inputs and its config are kept; its `if __name__ == '__main__':` block is replaced by
  RUNNER, which calls the same minifier the launcher's `run_repro(command='minify')` calls (functorch's
  `fx_minifier.minifier`, with PyTorch's own checkpoint writer `dump_compiler_graph_state`, which writes
  `repro.py`), with another tester. PyTorch's tester cannot see a failure in a graph that reads a scalar out of a
  tensor (`aten._local_scalar_dense`, capture_scalar_outputs): `run_repro` retraces the graph with `make_fx`, which
  refuses `_local_scalar_dense` with tracing_mode='real' (the launcher's) and, with 'symbolic', hands
  `compile_fx_inner` real inputs, for which it makes a fake mode without a ShapeEnv, so the unbacked symbol cannot be
  made (DataDependentOutputException) and the graph "did not fail the tester". RUNNER compiles each candidate the way
  Dynamo hands a graph to Inductor: `compile_fx` with fake inputs of a fake mode that has a ShapeEnv, then calls it
  with the real inputs.
- The after-Dynamo minifier (`TORCHDYNAMO_REPRO_AFTER=dynamo`) is not used: its tester calls Inductor's compiled
  function boxed (`run_fwd_maybe_bwd`: `_boxed_call` is set, the function takes `*args`), so every candidate "fails"
  with `ValueError: not enough values to unpack`, and its tester's loose message match (difflib ratio > 0.5) follows
  that error down to a graph of one `.to()`; its dumped graph also calls functions it never imports
  (`einops_einops_repeat`).
- The tester is told the failure's own message (`check_str`, from the header's `# bites-with:`): without it the
  minifier accepts any exception and shrinks to a graph that fails some other way.
- The outcome is PyTorch's `repro.py` (the minified graph and its inputs) with its main block replaced by STANDALONE
  (the same compile as the tester's, once), kept as `minified.py`, run on its own to check it still fails with the
  message; with node counts (FX graph nodes, as the minifier counts them) and operator calls before and after.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .clean_env import _scrub, isolated_environ, run_script
from .script import error_line

MINIFY_TIMEOUT = 1500.0
LEVEL = {"after": "aot", "level": 2}
HOW = ("TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=2 TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 dumps "
       "minifier_launcher.py; its graph is minified by PyTorch's fx minifier (functorch.compile.minifier, as "
       "run_repro(command='minify') runs it) with a tester that compiles each candidate as Dynamo hands it to Inductor "
       "(compile_fx on fake inputs of a fake mode with a ShapeEnv)")

_COMMON = '''
    import sys
    import torch
    from torch._dynamo.repro.after_aot import InputReader
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    def fake(args):
        """The inputs as Dynamo hands them to its backend: fake tensors of a fake mode with a ShapeEnv."""
        mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
        return [mode.from_tensor(a, static_shapes=True) if isinstance(a, torch.Tensor) else a for a in args]

    def compile_and_run(gm, args):
        """Inductor's compile of the graph, then one call with the real inputs."""
        return compile_fx(gm, fake(args))(*args)

    reader = InputReader()
    load_args(reader)
    args = reader.args
'''

# replaces the launcher's main block: PyTorch's minifier with a tester that can hold unbacked symbols
RUNNER = '''
if __name__ == '__main__':
    # yolo26kit: the launcher's run_repro(command='minify'), with a tester that compiles as Dynamo does (see minify.py)
    import functools
    import json
    from functorch.compile import minifier
    from torch._dynamo.repro.after_aot import dump_compiler_graph_state
''' + _COMMON + '''
    CHECK = {check!r}
    tried = []

    def fails(gm, inps):
        """True when the graph runs eagerly and its Inductor compile fails with the finding's message."""
        try:
            gm(*inps)
        except Exception:
            return False
        try:
            compile_and_run(gm, list(inps))
        except Exception as exc:
            tried.append(repr(exc)[:200])
            print(repr(exc)[:300], file=sys.stderr)
            return CHECK in repr(exc)
        return False

    with torch.no_grad():
        gm = make_fx(mod)(*fake(args))
        before = len(gm.graph.nodes)
        ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
        small, small_args = minifier(gm, args, module_fails=fails,
                                     dump_state=functools.partial(dump_compiler_graph_state, compiler_name="inductor"))
    with open("yolo26kit_minified.json", "w") as fd:
        json.dump({{"nodes_before": before, "nodes_after": len(small.graph.nodes), "calls_before": ops,
                   "calls_after": sum(1 for n in small.graph.nodes if n.op == "call_function"),
                   "inputs_after": len(small_args)}}, fd)
'''

# replaces the main block of PyTorch's repro.py (run_repro(command='run') cannot compile such a graph: see above)
STANDALONE = '''
if __name__ == '__main__':
    # the minified graph compiled by Inductor as Dynamo hands it over (fake inputs with a ShapeEnv, which the unbacked
    # symbol of aten._local_scalar_dense needs; PyTorch's run_repro retraces with make_fx and has none), then run
''' + _COMMON + '''
    torch._dynamo.config.capture_scalar_outputs = True
    with torch.no_grad():
        gm = make_fx(mod)(*fake(args))
        compile_and_run(gm, args)
    print(f"torch {{torch.__version__}}: the minified graph compiled and ran")
'''


def op_count(text: str) -> int:
    """Calls of operators (`torch.ops.`) in a dumped graph module's source."""
    return len(re.findall(r"torch\.ops\.\w+\.\w+", text))


def main_block(text: str) -> int:
    """Where a dumped launcher's or repro's `if __name__ == '__main__':` block starts (-1: none)."""
    found = re.search(r"^if __name__ == ['\"]__main__['\"]:", text, re.M)
    return found.start() if found else -1


def with_main(text: str, block: str) -> str:
    """A dumped script with its main block replaced by `block` (its graph, inputs and config kept)."""
    at = main_block(text)
    if at < 0:
        raise ValueError("no `if __name__ == '__main__':` block: not a script PyTorch's minifier dumped")
    return text[:at].rstrip() + "\n\n" + block.lstrip("\n")


def runner(launcher: str, check: str) -> str:
    """The launcher, minifying with the finding's message (`check`) and a tester that keeps unbacked symbols."""
    return with_main(launcher, RUNNER.format(check=check))


def standalone(repro: str) -> str:
    """PyTorch's minified repro.py as a script that runs on its own (no checkpoint folder needed)."""
    return with_main(repro, STANDALONE.format())


def minifier_log(said: str) -> dict[str, Any]:
    """What PyTorch's minifier printed: its node count at the start, after each success, and its query count."""
    started = re.findall(r"Started off with (\d+) nodes", said)
    went = re.findall(r"Went from \d+ to (\d+) nodes", said)
    queries = re.findall(r"Made (\d+) queries", said)
    out: dict[str, Any] = {}
    if started:
        out["nodes_before"] = int(started[0])
        out["nodes_after"] = int(went[-1]) if went else int(started[0])
    if queries:
        out["queries"] = int(queries[-1])
    return out


def verified(text: str, python: str, check: str, timeout: float = 600.0) -> bool:
    """Whether a minified repro, run on its own (clean_env.run_script), still fails with the finding's message."""
    with tempfile.TemporaryDirectory(prefix="yolo26kit-minified-") as tmp:
        (Path(tmp) / "minified.py").write_text(text)
        ran = run_script(Path(tmp) / "minified.py", python, timeout, {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
    return ran["exit_code"] not in (0, 124) and check in ran["output_tail"]


def minify_after_aot(repro: Path, python: str, check: str = "",
                     timeout: float = MINIFY_TIMEOUT) -> dict[str, Any]:
    """Dump the failing graph with the after-AOT minifier, minify it; {"launcher_ops", "minified_ops", "text", ...}."""
    repro = Path(repro).resolve()
    tool = {"tool": "PyTorch's minifier (torch._dynamo.repro.after_aot, functorch.compile.minifier)",
            "repro_after": LEVEL["after"], "repro_level": LEVEL["level"], "check_str": check}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="yolo26kit-minify-") as tmp:
        environ = isolated_environ(python, tmp, {"TORCHDYNAMO_REPRO_AFTER": LEVEL["after"],
                                                 "TORCHDYNAMO_REPRO_LEVEL": str(LEVEL["level"]),
                                                 "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
        subprocess.run([python, str(repro)], cwd=tmp, env=environ, capture_output=True, text=True, timeout=timeout)
        launchers = sorted(Path(tmp).rglob("minifier_launcher.py"))
        if not launchers:
            return {**tool, "error": "the after-AOT minifier dumped no launcher (the failure is not in a compiled graph)"}
        launcher = launchers[-1]
        text = launcher.read_text()
        launcher.write_text(runner(text, check))
        environ.pop("TORCHDYNAMO_REPRO_AFTER")
        environ.pop("TORCHDYNAMO_REPRO_LEVEL")
        try:
            done = subprocess.run([python, launcher.name], cwd=launcher.parent, env=environ, capture_output=True,
                                  text=True, timeout=timeout)
            said, finished = (done.stdout or "") + (done.stderr or ""), True
        except subprocess.TimeoutExpired as exc:  # its last checkpoint (repro.py) is the smallest found so far
            said, finished = str(exc.stderr or "") + str(exc.stdout or ""), False
        counts = minifier_log(said)
        summary = launcher.parent / "yolo26kit_minified.json"
        if summary.exists():
            counts.update(json.loads(summary.read_text()))
        minified = launcher.parent / "repro.py"
        if not minified.exists():
            return {**tool, "error": f"the minifier wrote no repro.py: {error_line(said)}",
                    "launcher_ops": op_count(text), **counts}
        small = _scrub(standalone(minified.read_text()), "", "", tmp)
    seconds = round(time.perf_counter() - t0, 1)
    out = {**tool, "launcher_ops": op_count(text), "minified_ops": op_count(small), **counts, "text": small,
           "finished": finished, "seconds": seconds, "how": HOW}
    out["verified"] = bool(check) and verified(small, python, check)
    return out
