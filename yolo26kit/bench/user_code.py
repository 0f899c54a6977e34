"""Where in a model's own code a graph node or a shape guard comes from: torch.export made to keep every user frame
in `node.meta["stack_trace"]`, the shape guards an export adds recorded with the user line that added each, and a
frame written as `file:line`.

"User code" is every Python file that is neither torch's, the standard library's nor the kit's: the model's package
(ultralytics, torchvision) and the user's own modules (the kit's frames are the caller of export, never the model).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import sysconfig
import traceback
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import torch

_KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NOT_USER = (os.path.dirname(torch.__file__) + os.sep, sysconfig.get_paths()["stdlib"] + os.sep, _KIT)
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def is_user_file(path: str) -> bool:
    """Whether a frame's file is the model's own code (not torch, the standard library, the kit or generated code)."""
    return bool(path) and not path.startswith(_NOT_USER) and not path.startswith("<")


def shown_path(path: str) -> str:
    """A path as a reader finds it: inside an installed package from the package on (`ultralytics/nn/...`), else
    relative to the import root it is imported from (the longest sys.path entry, or the working directory, holding
    it), else as it is."""
    if "site-packages" + os.sep in path:
        return path.rsplit("site-packages" + os.sep, 1)[1]
    roots = [os.path.abspath(p) + os.sep for p in [os.getcwd(), *sys.path] if p]
    root = max((r for r in roots if path.startswith(r)), key=len, default="")
    return path[len(root):] if root else path


@dataclass(frozen=True)
class Site:
    """One line of the model's code: the file as shown, the line, the function and the source text."""

    file: str
    line: int
    function: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def site_of_trace(trace: str | None) -> Site | None:
    """The innermost user frame of a node's `stack_trace` (None when torch kept none)."""
    frames = [f for f in _FRAME.findall(trace or "") if is_user_file(f[0])]
    if not frames:
        return None
    path, line, function, code = frames[-1]
    return Site(shown_path(path), int(line), function, code.strip())


def site_of_node(node: torch.fx.Node) -> Site | None:
    """Where a graph node comes from in the user's code."""
    return site_of_trace(node.meta.get("stack_trace"))


def innermost_user_frame(stack: traceback.StackSummary | None = None) -> Site | None:
    """The innermost user frame of a stack (the caller's when none is given)."""
    frames = [f for f in (stack or traceback.extract_stack()) if is_user_file(f.filename)]
    if not frames:
        return None
    f = frames[-1]
    return Site(shown_path(f.filename), int(f.lineno or 0), f.name, (f.line or "").strip())


class _UserFrames(set):
    """torch.fx's stack-trace anchors, answering yes for every user frame: export then keeps the whole user stack,
    not only the `forward` methods (where `index // nc` inside a helper would show as the head's forward call)."""

    def __contains__(self, key: object) -> bool:
        return (isinstance(key, tuple) and bool(key) and is_user_file(str(key[0]))) or super().__contains__(key)


@dataclass
class Guard:
    """A shape guard torch added while tracing: its expression, the input sizes it reads and the user line."""

    expr: str
    sources: list[str]
    site: Site | None


@contextlib.contextmanager
def user_stacks() -> Iterator[list[Guard]]:
    """Within: torch.export keeps every user frame in node stack traces, and each shape guard it adds is recorded
    (the yielded list). Both hooks are private torch APIs; where a release lacks one, that part is skipped and
    export runs as usual (node sites then stop at the innermost `forward`)."""
    import torch.fx.proxy as fx_proxy
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    guards: list[Guard] = []
    original = getattr(ShapeEnv, "_log_guard", None)

    def log_guard(self: Any, prefix: str, g: Any, *args: Any, **kwargs: Any) -> Any:
        symbols = getattr(g, "free_symbols", set())
        sources = [str(k) for k, v in getattr(self, "source_to_var", {}).items() if v in symbols]
        guards.append(Guard(str(g), sources, innermost_user_frame()))
        return original(self, prefix, g, *args, **kwargs)

    with contextlib.ExitStack() as stack:
        if hasattr(fx_proxy, "_STACK_TRACE_ANCHORS"):
            stack.enter_context(_patched(fx_proxy, "_STACK_TRACE_ANCHORS", _UserFrames(fx_proxy._STACK_TRACE_ANCHORS)))
        if original is not None:
            stack.enter_context(_patched(ShapeEnv, "_log_guard", log_guard))
        yield guards


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


_SYMBOL = re.compile(r"\b[a-z]+\d+\b|L\['[^']+'\]\.size\(\)\[\d+\]|\b\w+\.size\(\)\[\d+\]")


def constants(expr: str) -> frozenset[int]:
    """The integers of a guard expression, symbols and size sources left out: what identifies one guard across torch's
    two ways of printing it (`Eq((s53 - 1)//16 + 1, ...)`, `(1 + ((-1 + L['x'].size()[2]) // 16)) == ...`)."""
    return frozenset(abs(int(n)) for n in re.findall(r"\d+", _SYMBOL.sub(" ", expr)))
